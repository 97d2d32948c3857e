//! The data side of compaction: a rough token estimate and where to cut a path so that the recent
//! part is kept verbatim and the older part can be summarized. Writing the summary (a model call)
//! is the harness's job; it then appends a `compaction` entry with [`crate::SessionFile::compact`].
//!
//! The cut follows pi's `findCutPoint` (walk back from the newest message until the budget of
//! recent tokens is spent, then cut at the next user or assistant message), with one guarantee
//! more: it never lands between a tool call and its result.

use std::collections::HashSet;

use reins_ai::{Content, Message};

use crate::format::{Entry, EntryKind};
use crate::message::MessageRecord;

/// Where to cut, as entry ids of the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutPoint {
    /// The first entry kept verbatim (`firstKeptEntryId` of the compaction entry).
    pub first_kept_entry_id: String,
    /// When the cut falls inside a turn (the kept part starts at an assistant message), the entry
    /// where that turn began: the entries from there to the cut are its prefix, to be summarized
    /// apart from the older history.
    pub split_turn_start_id: Option<String>,
}

/// Characters / 4, rounded up, over what the model reads of a message (images count 1,200).
pub fn estimate_tokens(message: &Message) -> u64 {
    let content: &[Content] = match message {
        Message::User(user) => &user.content,
        Message::Assistant(assistant) => &assistant.content,
        Message::ToolResult(result) => &result.content,
    };
    let chars: usize = content
        .iter()
        .map(|block| match block {
            Content::Text { text } => text.chars().count(),
            Content::Thinking { thinking, .. } => thinking.chars().count(),
            Content::ToolCall(call) => call.name.chars().count() + call.arguments.to_string().chars().count(),
            Content::Image { .. } => 4800,
        })
        .sum();
    chars.div_ceil(4) as u64
}

pub fn estimate_context_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(estimate_tokens).sum()
}

/// Chooses the cut for compacting `path` (the entries from the root to the leaf, in order) so that
/// about `keep_recent_tokens` of the newest messages stay. Only entries after the previous
/// compaction's kept boundary are candidates. `None` when there is nothing to cut: the path ends
/// in a compaction or holds no message that can start the kept part.
pub fn find_cut_point(path: &[Entry], keep_recent_tokens: u64) -> Option<CutPoint> {
    if matches!(path.last()?.kind, EntryKind::Compaction { .. }) {
        return None;
    }
    let start = boundary_start(path);
    let roles: Vec<Option<String>> = path.iter().map(|entry| entry.message().map(|record| record.role)).collect();
    let cut_points = valid_cut_points(path, &roles, start);
    let mut cut = *cut_points.first()?;
    let mut spent = 0;
    for index in (start..path.len()).rev() {
        let Some(message) = path[index].message().and_then(MessageRecord::into_message) else { continue };
        spent += estimate_tokens(&message);
        if spent >= keep_recent_tokens {
            if let Some(&at) = cut_points.iter().find(|&&at| at >= index) {
                cut = at;
            }
            break;
        }
    }
    // Settings and other non-message entries right before the cut travel with the kept part.
    while cut > start {
        let previous = &path[cut - 1];
        if matches!(previous.kind, EntryKind::Compaction { .. } | EntryKind::Message(_)) {
            break;
        }
        cut -= 1;
    }
    let starts_turn = |index: usize| {
        matches!(path[index].kind, EntryKind::BranchSummary { .. } | EntryKind::CustomMessage { .. })
            || matches!(roles[index].as_deref(), Some("user" | "bashExecution"))
    };
    let split_turn_start_id = if roles[cut].as_deref() == Some("user") {
        None
    } else {
        (start..=cut).rev().find(|&index| starts_turn(index)).map(|index| path[index].id.clone())
    };
    Some(CutPoint { first_kept_entry_id: path[cut].id.clone(), split_turn_start_id })
}

/// Where the entries not yet summarized begin: the previous compaction's first kept entry, else the
/// entry after it, else the root.
fn boundary_start(path: &[Entry]) -> usize {
    let Some(previous) = path.iter().rposition(|entry| matches!(entry.kind, EntryKind::Compaction { .. })) else {
        return 0;
    };
    let EntryKind::Compaction { first_kept_entry_id, .. } = &path[previous].kind else { return 0 };
    path.iter().position(|entry| entry.id == *first_kept_entry_id).unwrap_or(previous + 1)
}

/// Indices where the kept part may start: user-like and assistant messages, branch summaries and
/// custom messages, but never while a tool call before them still waits for a result after them.
fn valid_cut_points(path: &[Entry], roles: &[Option<String>], start: usize) -> Vec<usize> {
    let answered: HashSet<String> = path[start..]
        .iter()
        .filter_map(|entry| entry.message())
        .filter_map(|record| (record.role == "toolResult").then_some(record.tool_call_id?))
        .collect();
    let mut waiting: HashSet<String> = HashSet::new();
    let mut points = Vec::new();
    for index in start..path.len() {
        let can_start = matches!(path[index].kind, EntryKind::BranchSummary { .. } | EntryKind::CustomMessage { .. })
            || matches!(
                roles[index].as_deref(),
                Some("user" | "assistant" | "custom" | "bashExecution" | "branchSummary" | "compactionSummary")
            );
        if can_start && waiting.is_empty() {
            points.push(index);
        }
        let Some(record) = path[index].message() else { continue };
        match record.role.as_str() {
            "assistant" => {
                if let Some(Message::Assistant(assistant)) = record.into_message() {
                    waiting
                        .extend(assistant.tool_calls().map(|call| call.id.clone()).filter(|id| answered.contains(id)));
                }
            }
            "toolResult" => {
                if let Some(id) = &record.tool_call_id {
                    waiting.remove(id);
                }
            }
            _ => {}
        }
    }
    points
}
