//! Compaction in the harness: when the context nears the model's window (before a run and
//! between turns), on request, and once after a provider says the context is too long. The
//! model writes the summary ([`crate::summary`]); the session file records it.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use reins_agent::{AgentContext, Gate, Hooks, Proposal, RunOutcome};
use reins_ai::{Message, Model, Provider, ProviderErrorKind, ToolCall, ToolResultMessage};
use reins_session::{SessionFile, estimate_context_tokens, estimate_tokens};
use reins_settings::CompactionSettings;
use tokio_util::sync::CancellationToken;

use crate::approval::ApprovalGate;
use crate::diagnostics::Feedback;
use crate::error::HarnessError;
use crate::hooks::HookRunner;
use crate::runtime::{SessionTools, agent_context, lock, session_error};
use crate::summary::{FileActivity, ask_compaction, compaction_transcript};
use reins_settings::LiveSettings;

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// Whether `context`, whose messages come to `message_tokens`, plus `extra_tokens` comes within
/// `reserve_tokens` of the model's window.
pub(crate) fn near_window(context: &AgentContext, message_tokens: u64, extra_tokens: u64, reserve_tokens: u64) -> bool {
    let tokens = message_tokens + context.system_prompt.len() as u64 / 4 + extra_tokens;
    tokens + reserve_tokens >= context.model.context_window
}

/// The token estimate of each message of the context, kept with the message it was made for:
/// the context is measured before every turn, and only its new messages need measuring.
#[derive(Default)]
pub(crate) struct Estimates(Mutex<Vec<(Arc<Message>, u64)>>);

impl Estimates {
    /// The estimate of all of `messages`.
    pub fn of(&self, messages: &[Arc<Message>]) -> u64 {
        let mut kept = lock(&self.0);
        let same = kept.iter().zip(messages).take_while(|((kept, _), message)| Arc::ptr_eq(kept, message)).count();
        kept.truncate(same);
        kept.extend(messages[same..].iter().map(|message| (message.clone(), estimate_tokens(message))));
        kept.iter().map(|(_, tokens)| tokens).sum()
    }
}

/// The approval gate, plus automatic compaction between turns and the after-edit feedback.
pub(crate) struct SessionHooks {
    pub gate: ApprovalGate,
    /// Refreshed before each turn: an MCP server's changed tool list applies from the next one.
    pub tools: Arc<SessionTools>,
    pub auto_compact: Option<AutoCompact>,
    pub feedback: Feedback,
    /// The user's `[[hooks]]`.
    pub hooks: HookRunner,
    /// The files each allowed call will change, by call id: `after_edit` hooks get them.
    pub edits: Mutex<std::collections::HashMap<String, Vec<std::path::PathBuf>>>,
}

pub(crate) struct AutoCompact {
    pub file: Arc<Mutex<SessionFile>>,
    pub provider: Arc<dyn Provider>,
    /// Read at each turn: a change of `compaction` applies from the next turn.
    pub settings: LiveSettings,
    /// The session's token for the harness's own model calls (see `LiveSession::cancel`).
    pub cancel: Arc<Mutex<CancellationToken>>,
    pub estimates: Estimates,
}

#[async_trait]
impl Hooks for SessionHooks {
    async fn before_tool_calls(&self, turn: u32, calls: &[ToolCall]) {
        self.feedback.turn_starts(turn, calls).await;
    }

    async fn before_tool_call(&self, call: &ToolCall, proposal: Option<&Proposal>, cancel: &CancellationToken) -> Gate {
        // The user's hooks first: a call they block is never put to the user.
        if let Some(reason) = self.hooks.before_tool(call).await {
            return Gate::Block { reason };
        }
        let look = self.tools.look(&call.name, &call.arguments);
        let gate = self.gate.before_tool_call(call, &look, proposal, cancel).await;
        let allowed = match &gate {
            Gate::Allow => proposal,
            Gate::AllowChanged { proposal, .. } => Some(proposal),
            Gate::Block { .. } => None,
        };
        if let Some(proposal) = allowed.filter(|proposal| !proposal.file_changes().is_empty()) {
            self.feedback.before_change(call, proposal, cancel).await;
            let files =
                proposal.file_changes().iter().filter(|change| !change.delete).map(|change| change.path.clone());
            lock(&self.edits).insert(call.id.clone(), files.collect());
        }
        gate
    }

    async fn after_tool_call(&self, call: &ToolCall, result: &mut ToolResultMessage) {
        // Formatters run before the feedback reads what the edit broke.
        let edited = lock(&self.edits).remove(&call.id).unwrap_or_default();
        if !result.is_error && !edited.is_empty() {
            self.hooks.after_edit(call, &edited).await;
        }
        self.hooks.after_tool(call, result).await;
        self.feedback.after_call(call, result).await;
    }

    async fn prepare_next_turn(&self, context: &mut AgentContext) {
        context.tools = self.tools.current(&context.model).await;
        let Some(auto) = &self.auto_compact else { return };
        let settings = auto.settings.get().compaction.clone();
        if !settings.auto || !near_window(context, auto.estimates.of(&context.messages), 0, settings.reserve_tokens) {
            return;
        }
        let cancel = lock(&auto.cancel).clone();
        let compacted =
            compact_and_reload(&auto.file, auto.provider.as_ref(), &context.model, &settings, &cancel).await;
        match compacted {
            Ok((_, messages)) => context.messages = messages.into_iter().map(Arc::new).collect(),
            Err(err) => tracing::warn!("automatic compaction failed; going on without it: {err}"),
        }
    }
}

/// Compacts the session at its leaf — the model summarizes what lies before the cut point, and a
/// `compaction` entry makes that summary stand in for it — and reloads its context: answers what
/// the compaction did and the messages the agent goes on with.
pub(crate) async fn compact_and_reload(
    file: &Mutex<SessionFile>,
    provider: &dyn Provider,
    model: &Model,
    settings: &CompactionSettings,
    cancel: &CancellationToken,
) -> Result<(Compacted, Vec<Message>), HarnessError> {
    // The path is read a line at a time, and only the newest of the messages to summarize that
    // fit the request are held: a session of a million entries costs no more than a short one.
    let (transcript, details, cut, tokens_before) = {
        let mut file = lock(file);
        file.flush().map_err(session_error)?;
        let tree = file.tree();
        if tree.leaf().is_none() {
            return Err(HarnessError::Compaction("the session is empty".into()));
        }
        let nothing = || HarnessError::Compaction("there is nothing to compact yet".into());
        let plan = tree.plan_compaction(settings.keep_recent_tokens).ok_or_else(nothing)?;
        let mut files = FileActivity::default();
        let mut count = 0;
        for message in tree.summarized_messages(&plan) {
            files.add(&message);
            count += 1;
        }
        if count == 0 {
            return Err(nothing());
        }
        let previous = plan.previous_summary.as_deref();
        let transcript = compaction_transcript(model, previous, &files, tree.summarized_messages(&plan).rev(), count);
        (transcript, files.to_details(), plan.cut, tree.context_tokens())
    };
    let summary = ask_compaction(provider, model, transcript, cancel).await?;
    let mut file = lock(file);
    file.compact(summary, &cut.first_kept_entry_id, tokens_before, Some(details)).map_err(session_error)?;
    file.flush().map_err(session_error)?;
    let messages = agent_context(&file, model).messages;
    let tokens_after = estimate_context_tokens(&messages);
    Ok((Compacted { tokens_before, tokens_after }, messages))
}

/// The messages on the current branch that `target` is not an ancestor of: what navigating to
/// `target` leaves behind.
pub(crate) fn branch_messages(tree: &reins_session::SessionTree, target: &str) -> Result<Vec<Message>, HarnessError> {
    let Some(leaf) = tree.leaf() else { return Ok(Vec::new()) };
    let kept: std::collections::HashSet<&str> = tree.path_to_root(target).map_err(session_error)?.into_iter().collect();
    let mut left: Vec<Message> = Vec::new();
    for id in tree.path_to_root(leaf).map_err(session_error)? {
        if kept.contains(id) {
            break;
        }
        if let Some(message) = tree.entry(id).ok().and_then(|entry| entry.message()).and_then(|r| r.into_message()) {
            left.push(message);
        }
    }
    left.reverse();
    Ok(left)
}

pub(crate) fn overflowed(outcome: &RunOutcome) -> bool {
    outcome.messages.iter().rev().any(|message| {
        matches!(message, Message::Assistant(assistant)
            if assistant.error.as_ref().is_some_and(|error| error.kind == ProviderErrorKind::ContextOverflow))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_follow_the_context_when_messages_are_added_and_replaced() {
        let estimates = Estimates::default();
        let message = |text: &str| Arc::new(Message::user(text));
        let mut context = vec![message(&"a".repeat(40)), message(&"b".repeat(80))];
        assert_eq!(
            estimates.of(&context),
            estimate_context_tokens(&[Message::clone(&context[0]), Message::clone(&context[1])])
        );
        assert_eq!(estimates.of(&context), 30);
        context.push(message(&"c".repeat(4)));
        assert_eq!(estimates.of(&context), 31);
        // Compaction puts a summary where the conversation was.
        context[0] = message("summary");
        assert_eq!(estimates.of(&context), 2 + 20 + 1);
        assert_eq!(estimates.of(&context[..1]), 2);
    }
}
