//! What a client shows of a session it opens again: the conversation as it happened (answers
//! cut short by a cancel or a failure included, which the model's context leaves out), the
//! model in force, and how much of its window the context takes.

use reins_ai::{Message, Model, StopReason};
use reins_session::estimate_tokens;

use super::{Harness, lock, session_error};
use crate::error::HarnessError;

impl Harness {
    /// The messages on the session's current path as recorded, oldest first: every user
    /// message, every answer however it ended, every tool result. Not kept on disk: the
    /// conversation as the model sees it.
    pub fn transcript(&self, session_id: &str) -> Result<Vec<Message>, HarnessError> {
        let session = self.session(session_id)?;
        let Some(file) = &session.file else { return Ok(session.agent.messages()) };
        let file = lock(file);
        let tree = file.tree();
        let Some(leaf) = tree.leaf() else { return Ok(Vec::new()) };
        let entries = tree.path_entries(leaf).map_err(session_error)?;
        Ok(entries.iter().filter_map(|entry| entry.message()?.into_message()).collect())
    }

    /// The model the session's next turn goes to.
    pub fn session_model(&self, session_id: &str) -> Result<Model, HarnessError> {
        Ok(self.session(session_id)?.agent.model())
    }

    /// Tokens the session's context takes now (see [`context_tokens`]).
    pub fn context_tokens(&self, session_id: &str) -> Result<u64, HarnessError> {
        Ok(context_tokens(&self.session(session_id)?.agent.messages()))
    }
}

/// Tokens a context of `messages` takes: what the provider counted for the last answer that
/// counted any (prompt, cache and answer), and an estimate of what came after it. Answers cut
/// short by a cancel or a failure count nothing (they are not sent again), so a cancelled turn
/// does not make the figure drop to nothing.
pub fn context_tokens(messages: &[Message]) -> u64 {
    let counted = |message: &Message| match message {
        Message::Assistant(answer) if !matches!(answer.stop_reason, StopReason::Aborted | StopReason::Error) => {
            let usage = &answer.usage;
            Some(usage.input + usage.cache_read + usage.cache_write + usage.output).filter(|&tokens| tokens > 0)
        }
        _ => None,
    };
    let last = messages.iter().rposition(|message| counted(message).is_some());
    let (base, after) = match last {
        Some(at) => (counted(&messages[at]).unwrap_or(0), &messages[at + 1..]),
        None => (0, messages),
    };
    let left_out = |message: &&Message| matches!(message, Message::Assistant(answer) if matches!(answer.stop_reason, StopReason::Aborted | StopReason::Error));
    base + after.iter().filter(|message| !left_out(message)).map(estimate_tokens).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use reins_ai::{AssistantMessage, Content, Usage};

    use super::*;

    fn answer(stop_reason: StopReason, input: u64, output: u64) -> Message {
        Message::Assistant(AssistantMessage {
            content: vec![Content::text("abcd")],
            usage: Usage { input, output, ..Usage::default() },
            stop_reason,
            ..AssistantMessage::default()
        })
    }

    #[test]
    fn the_context_is_the_last_counted_answer_plus_an_estimate_of_what_came_after() {
        let user = || Message::user("12345678");
        assert_eq!(context_tokens(&[]), 0);
        assert_eq!(context_tokens(&[user()]), 2, "nothing counted yet: all estimated");
        assert_eq!(context_tokens(&[user(), answer(StopReason::Stop, 100, 20)]), 120);
        // A cancelled answer counts nothing; the prompt before it stays in the context.
        let cancelled = [user(), answer(StopReason::Stop, 100, 20), user(), answer(StopReason::Aborted, 0, 0)];
        assert_eq!(context_tokens(&cancelled), 122);
        let failed = [user(), answer(StopReason::Stop, 100, 20), user(), answer(StopReason::Error, 0, 0)];
        assert_eq!(context_tokens(&failed), 122);
    }
}
