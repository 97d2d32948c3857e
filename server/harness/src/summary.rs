//! Summaries written by the model: compaction (the older part of a long conversation, replaced by
//! a structured summary) and branch summaries (what was done on a branch the user is leaving).

use std::borrow::Borrow;
use std::collections::BTreeSet;

use reins_ai::{Content, Message, Model, Provider, Request, StopReason, ThinkingLevel};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::HarnessError;

const COMPACTION_INSTRUCTIONS: &str = "\
You are summarizing the earlier part of a coding session between a user and an AI coding agent, \
so that the agent can continue the work with only this summary and the most recent messages. \
Write a concise, factual summary in Markdown with exactly these sections:

## Goal
What the user wants, in their terms.
## Constraints
Requirements, preferences and rules the user stated.
## Progress
What has been done and what state things are in.
## Decisions
Choices made and why, including approaches rejected.
## Next steps
What remains, in order.
## Files
Files read and files modified, with one line each on why they matter.

Keep exact names of files, functions, commands and error messages. Do not invent anything.";

const BRANCH_INSTRUCTIONS: &str = "\
The user is leaving this branch of a coding session to continue from an earlier point. Summarize \
what was tried and learned on the branch in a few short Markdown bullet points — goal, what was \
done, results, open problems, files touched — so that the work is not lost. Be factual and brief.";

/// Files the summarized messages read and changed, by tool call.
#[derive(Debug, Default, PartialEq)]
pub struct FileActivity {
    pub read: BTreeSet<String>,
    pub modified: BTreeSet<String>,
}

impl FileActivity {
    pub fn of(messages: &[Message]) -> Self {
        let mut activity = FileActivity::default();
        messages.iter().for_each(|message| activity.add(message));
        activity
    }

    /// Adds the files one message's tool calls read and changed.
    pub fn add(&mut self, message: &Message) {
        let Message::Assistant(assistant) = message else { return };
        for call in assistant.tool_calls() {
            if call.name == "apply_patch" {
                let input = call.arguments.get("input").and_then(Value::as_str).unwrap_or_default();
                self.modified.extend(reins_tools::patch_paths(input));
                continue;
            }
            let Some(path) = call.arguments.get("path").and_then(Value::as_str) else { continue };
            match call.name.as_str() {
                "read" => self.read.insert(path.to_string()),
                "edit" | "write" => self.modified.insert(path.to_string()),
                _ => false,
            };
        }
    }

    /// The files as the summary request lists them, in at most `room` bytes: a long session
    /// touches hundreds of thousands of files, and the request must stay within the window. The
    /// changed files come first; what does not fit is counted.
    fn listing(&self, room: usize) -> String {
        if self.read.is_empty() && self.modified.is_empty() {
            return String::new();
        }
        const FRAME: &str = "\n<files>\nread: \nmodified: \n</files>\n";
        let mut room = room.saturating_sub(FRAME.len());
        let modified = joined_within(&self.modified, &mut room);
        let read = joined_within(&self.read, &mut room);
        format!("\n<files>\nread: {read}\nmodified: {modified}\n</files>\n")
    }

    pub fn to_details(&self) -> Value {
        json!({ "readFiles": self.read, "modifiedFiles": self.modified })
    }
}

/// `names` joined by ", " as far as `room` bytes go (taken from it), then how many are left out.
fn joined_within(names: &BTreeSet<String>, room: &mut usize) -> String {
    const MORE: usize = " (and 18446744073709551615 more)".len();
    let mut text = String::new();
    for (shown, name) in names.iter().enumerate() {
        let separator = if text.is_empty() { "" } else { ", " };
        if separator.len() + name.len() + MORE > *room {
            let more = format!(" (and {} more)", names.len() - shown);
            *room = room.saturating_sub(more.len());
            text.push_str(&more);
            break;
        }
        *room -= separator.len() + name.len();
        text.push_str(separator);
        text.push_str(name);
    }
    text
}

/// What a compaction summary request to `model` carries: the previous summary, the newest of the
/// `count` messages to summarize that fit (`newest_first` yields them newest first, so that only
/// those are read) and the files they touched.
pub(crate) fn compaction_transcript<M: Borrow<Message>>(
    model: &Model,
    previous_summary: Option<&str>,
    files: &FileActivity,
    newest_first: impl Iterator<Item = M>,
    count: usize,
) -> String {
    let mut text = String::new();
    if let Some(previous) = previous_summary {
        text.push_str("<previous-summary>\n");
        text.push_str(previous);
        text.push_str("\n</previous-summary>\n\n");
    }
    let files_text = files.listing(transcript_budget(model) / 4);
    let budget = transcript_budget(model).saturating_sub(text.len() + files_text.len());
    text.push_str(&newest_transcript(newest_first, count, budget));
    text.push_str(&files_text);
    text
}

/// Asks the model for a compaction summary of `transcript` ([`compaction_transcript`]).
pub(crate) async fn ask_compaction(
    provider: &dyn Provider,
    model: &Model,
    transcript: String,
    cancel: &CancellationToken,
) -> Result<String, HarnessError> {
    ask(provider, model, COMPACTION_INSTRUCTIONS, transcript, cancel).await.map_err(HarnessError::Compaction)
}

/// Asks the model to summarize the branch being left.
pub async fn branch_summary(
    provider: &dyn Provider,
    model: &Model,
    messages: &[Message],
    cancel: &CancellationToken,
) -> Result<String, HarnessError> {
    ask(provider, model, BRANCH_INSTRUCTIONS, fitting_transcript(messages, transcript_budget(model)), cancel)
        .await
        .map_err(HarnessError::BranchSummary)
}

async fn ask(
    provider: &dyn Provider,
    model: &Model,
    instructions: &str,
    transcript: String,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let request = Request {
        model: model.clone(),
        system_prompt: instructions.to_string(),
        messages: vec![Message::user(format!("<conversation>\n{transcript}</conversation>\n\nWrite the summary now."))]
            .into(),
        tools: Vec::new().into(),
        max_tokens: Some(summary_max_tokens(model)),
        // A summary restates; thinking would only eat into its small output limit.
        thinking: Some(ThinkingLevel::Off),
    };
    let answer = provider.stream(&request, &|_| {}, cancel).await;
    match answer.stop_reason {
        StopReason::Error | StopReason::Aborted => Err(answer
            .error
            .map(|error| error.to_string())
            .unwrap_or_else(|| "the model call for the summary did not finish".into())),
        StopReason::Refusal => Err("the model refused to write the summary".into()),
        _ if answer.text().trim().is_empty() => Err("the model returned an empty summary".into()),
        _ => Ok(answer.text().trim().to_string()),
    }
}

/// The bytes of transcript a summary request to `model` may carry: its window, less room for the
/// answer (at most half a small window, so a small window still gets a transcript) and for the
/// words around the transcript, at four bytes a token (the estimate that keeps a run's requests
/// within the window).
pub(crate) fn transcript_budget(model: &Model) -> usize {
    const AROUND: u64 = 256;
    let answer = summary_max_tokens(model).min(model.context_window / 2);
    let tokens = model.context_window.saturating_sub(answer + AROUND);
    usize::try_from(tokens).unwrap_or(usize::MAX).saturating_mul(4)
}

/// The answer a summary may take.
fn summary_max_tokens(model: &Model) -> u64 {
    model.max_output.min(8192)
}

/// [`render_transcript`] of the newest of `messages` that fit in `budget` bytes, after a note of
/// how many older ones were left out: a summary request never goes beyond the model's window,
/// however long the conversation (a session of a million messages cannot be sent whole).
fn fitting_transcript(messages: &[Message], budget: usize) -> String {
    newest_transcript(messages.iter().rev(), messages.len(), budget)
}

/// [`fitting_transcript`] of `count` messages that `newest_first` yields newest first; it reads
/// no further than what fits.
fn newest_transcript<M: Borrow<Message>>(newest_first: impl Iterator<Item = M>, count: usize, budget: usize) -> String {
    let mut newest: Vec<String> = Vec::new();
    let mut used = 0;
    for message in newest_first {
        let mut text = String::new();
        render_message(&mut text, message.borrow());
        // Room for the note, whose number is at most 20 digits.
        if used + text.len() + 100 > budget {
            break;
        }
        used += text.len();
        newest.push(text);
    }
    let left_out = count.saturating_sub(newest.len());
    let mut out = String::with_capacity(used + 100);
    if left_out > 0 {
        out.push_str(&format!("[{left_out} earlier messages are left out: they do not fit the model's window]\n\n"));
    }
    for text in newest.iter().rev() {
        out.push_str(text);
    }
    out
}

/// The conversation as plain text, tool calls and results included (results cut short: the
/// summary needs what happened, not every byte).
pub fn render_transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        render_message(&mut out, message);
    }
    out
}

fn render_message(out: &mut String, message: &Message) {
    match message {
        Message::User(user) => {
            out.push_str("[user]\n");
            push_blocks(out, &user.content, usize::MAX);
        }
        Message::Assistant(assistant) => {
            out.push_str("[assistant]\n");
            push_blocks(out, &assistant.content, usize::MAX);
        }
        Message::ToolResult(result) => {
            let status = if result.is_error { "error" } else { "ok" };
            out.push_str(&format!("[tool result: {} ({status})]\n", result.tool_name));
            push_blocks(out, &result.content, 2000);
        }
    }
    out.push('\n');
}

fn push_blocks(out: &mut String, blocks: &[Content], max_chars: usize) {
    for block in blocks {
        match block {
            Content::Text { text } => {
                let (kept, cut) = reins_ai::cut_chars(text, max_chars);
                out.push_str(kept);
                if cut {
                    out.push_str("\n[…]");
                }
                out.push('\n');
            }
            Content::ToolCall(call) => out.push_str(&format!("(calls {} {})\n", call.name, call.arguments)),
            Content::Thinking { .. } | Content::Image { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use reins_ai::{AssistantMessage, ToolCall, ToolResultMessage};

    use super::*;

    fn conversation() -> Vec<Message> {
        let call = |id: &str, name: &str, path: &str| {
            Content::ToolCall(ToolCall { id: id.into(), name: name.into(), arguments: json!({ "path": path }) })
        };
        vec![
            Message::user("fix the bug"),
            Message::Assistant(AssistantMessage {
                content: vec![Content::text("Looking."), call("1", "read", "src/a.rs"), call("2", "edit", "src/b.rs")],
                ..AssistantMessage::default()
            }),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "1".into(),
                tool_name: "read".into(),
                content: vec![Content::text("x".repeat(2500))],
                is_error: false,
                details: None,
                timestamp: 0,
            }),
        ]
    }

    #[test]
    fn file_activity_comes_from_tool_calls() {
        let activity = FileActivity::of(&conversation());
        assert_eq!(activity.to_details(), json!({"readFiles": ["src/a.rs"], "modifiedFiles": ["src/b.rs"]}));
    }

    #[test]
    fn the_files_list_fits_its_room_changed_files_first() {
        let activity = FileActivity {
            read: (0..100_000).map(|n| format!("src/read_{n:06}.rs")).collect(),
            modified: ["src/b.rs".to_string(), "src/a.rs".to_string()].into(),
        };
        let listing = activity.listing(1000);
        assert!(listing.len() <= 1000, "{} bytes", listing.len());
        assert!(listing.contains("modified: src/a.rs, src/b.rs\n"), "{listing}");
        assert!(listing.contains("read: src/read_000000.rs, src/read_000001.rs, "), "{listing}");
        let shown = listing.matches("src/read_").count();
        assert!(listing.contains(&format!(" (and {} more)\n", 100_000 - shown)), "{listing}");
        // Room for everything: the whole list, nothing counted.
        let small = FileActivity::of(&conversation());
        assert_eq!(small.listing(1000), "\n<files>\nread: src/a.rs\nmodified: src/b.rs\n</files>\n");
        assert_eq!(FileActivity::default().listing(1000), "");
    }

    #[test]
    fn transcript_shows_calls_and_clips_results() {
        let transcript = render_transcript(&conversation());
        assert!(
            transcript
                .starts_with("[user]\nfix the bug\n\n[assistant]\nLooking.\n(calls read {\"path\":\"src/a.rs\"})\n")
        );
        assert!(transcript.contains("[tool result: read (ok)]\n"));
        assert!(transcript.contains(&format!("{}\n[…]\n", "x".repeat(2000))));
        assert!(!transcript.contains(&"x".repeat(2001)));
    }

    #[test]
    fn a_transcript_keeps_the_newest_messages_that_fit() {
        let messages: Vec<Message> = (0..1000).map(|n| Message::user(format!("message {n:04}"))).collect();
        // Each renders as "[user]\nmessage 0000\n\n": 21 bytes.
        let whole = render_transcript(&messages);
        assert_eq!(fitting_transcript(&messages, whole.len() + 100), whole);
        let cut = fitting_transcript(&messages, 21 * 10 + 100);
        assert!(cut.starts_with("[990 earlier messages are left out"), "{cut}");
        assert!(cut.ends_with(&render_transcript(&messages[990..])), "{cut}");
        assert!(cut.len() <= 21 * 10 + 100);
        // No room: nothing is sent but the note.
        assert!(fitting_transcript(&messages, 0).starts_with("[1000 earlier messages"));
    }
}
