//! The data side of compaction: a rough token estimate and where to cut a path so that the recent
//! part is kept verbatim and the older part can be summarized. Writing the summary (a model call)
//! is the harness's job; it then appends a `compaction` entry with [`crate::SessionFile::compact`].
//!
//! The cut follows pi's `findCutPoint` (walk back from the newest message until the budget of
//! recent tokens is spent, then cut at the next user or assistant message), with one guarantee
//! more: it never lands between a tool call and its result.

use std::collections::HashSet;

use reins_ai::{Content, Message};

use crate::format::{Entry, EntryKind, EntryTag};
use crate::message::MessageRecord;
use crate::tree::SessionTree;

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

/// A compaction of the path at the current leaf, worked out from the tree a line at a time (a
/// path of a million entries is never held parsed).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPlan {
    pub cut: CutPoint,
    /// The summary of the latest compaction on the path, which the new one folds in.
    pub previous_summary: Option<String>,
    /// The entries whose messages the new summary covers: from the previous compaction's first
    /// kept entry (else the root) to the cut.
    summarized: Vec<u32>,
}

impl SessionTree {
    /// The compaction of the path at the current leaf that keeps about `keep_recent_tokens` of
    /// its newest messages ([`find_cut_point`]); `None` when there is nothing to cut.
    pub fn plan_compaction(&self, keep_recent_tokens: u64) -> Option<CompactionPlan> {
        let path = self.path_indices(self.leaf_index()?);
        let entries: Vec<CutEntry> = path
            .iter()
            .map(|&index| {
                let kind = CutKind::of_tag(self.tag(index));
                let record = if kind == CutKind::Message { self.fields(index).message } else { None };
                CutEntry::new(kind, record)
            })
            .collect();
        let position = |id: &str| path.iter().position(|&index| self.id_at(index) == id);
        let latest = path.iter().rposition(|&index| self.tag(index) == EntryTag::Compaction);
        let previous = latest.map(|at| (at, self.fields(path[at])));
        let boundary = previous
            .as_ref()
            .map_or(0, |(at, fields)| fields.first_kept_entry_id.as_deref().and_then(position).unwrap_or(at + 1));
        let (cut, split) = find_cut(&entries, boundary, keep_recent_tokens)?;
        let (previous_summary, first_kept) =
            previous.map_or((None, None), |(_, fields)| (fields.summary, fields.first_kept_entry_id));
        let start = first_kept.as_deref().and_then(position).unwrap_or(0);
        Some(CompactionPlan {
            cut: CutPoint {
                first_kept_entry_id: self.id_at(path[cut]).to_string(),
                split_turn_start_id: split.map(|index| self.id_at(path[index]).to_string()),
            },
            previous_summary,
            summarized: path[start..cut.max(start)].to_vec(),
        })
    }

    /// The messages `plan` summarizes, oldest first, each read from its line when it is reached.
    pub fn summarized_messages<'a>(
        &'a self,
        plan: &'a CompactionPlan,
    ) -> impl DoubleEndedIterator<Item = Message> + 'a {
        plan.summarized
            .iter()
            .filter(|&&index| self.tag(index) == EntryTag::Message)
            .filter_map(|&index| self.fields(index).message?.into_message())
    }
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
            Content::ToolCall(call) => call.name.chars().count() + call.arguments_size().chars,
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
    let start = boundary_start(path);
    let entries: Vec<CutEntry> =
        path.iter().map(|entry| CutEntry::new(CutKind::of(&entry.kind), entry.message())).collect();
    let (cut, split) = find_cut(&entries, start, keep_recent_tokens)?;
    Some(CutPoint {
        first_kept_entry_id: path[cut].id.clone(),
        split_turn_start_id: split.map(|index| path[index].id.clone()),
    })
}

/// What choosing a cut needs of one entry of the path, read from it once: a path of a million
/// entries is walked as these, not as parsed entries.
pub(crate) struct CutEntry {
    kind: CutKind,
    /// The role of a `message` entry's message.
    role: Option<Role>,
    /// The estimate of the message it sends the model, if any.
    tokens: Option<u64>,
    /// An assistant message's tool call ids.
    calls: Vec<String>,
    /// The call a tool result answers.
    answers: Option<String>,
}

/// The kinds of entry the cut tells apart.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum CutKind {
    Message,
    Compaction,
    BranchSummary,
    CustomMessage,
    Other,
}

impl CutKind {
    fn of(kind: &EntryKind) -> CutKind {
        match kind {
            EntryKind::Message(_) => CutKind::Message,
            EntryKind::Compaction { .. } => CutKind::Compaction,
            EntryKind::BranchSummary { .. } => CutKind::BranchSummary,
            EntryKind::CustomMessage { .. } => CutKind::CustomMessage,
            _ => CutKind::Other,
        }
    }

    pub(crate) fn of_tag(tag: EntryTag) -> CutKind {
        match tag {
            EntryTag::Message => CutKind::Message,
            EntryTag::Compaction => CutKind::Compaction,
            EntryTag::BranchSummary => CutKind::BranchSummary,
            EntryTag::CustomMessage => CutKind::CustomMessage,
            _ => CutKind::Other,
        }
    }
}

/// The message roles the cut tells apart.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
    ToolResult,
    Custom,
    BashExecution,
    BranchSummary,
    CompactionSummary,
    Other,
}

impl CutEntry {
    /// An entry of `kind` whose message record (for a `message` entry) is `record`.
    pub(crate) fn new(kind: CutKind, record: Option<MessageRecord>) -> CutEntry {
        let mut entry = CutEntry { kind, role: None, tokens: None, calls: Vec::new(), answers: None };
        let Some(record) = record else { return entry };
        let role = match record.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "toolResult" => Role::ToolResult,
            "custom" => Role::Custom,
            "bashExecution" => Role::BashExecution,
            "branchSummary" => Role::BranchSummary,
            "compactionSummary" => Role::CompactionSummary,
            _ => Role::Other,
        };
        entry.role = Some(role);
        if role == Role::ToolResult {
            entry.answers = record.tool_call_id.clone();
        }
        if let Some(message) = record.into_message() {
            entry.tokens = Some(estimate_tokens(&message));
            if let Message::Assistant(assistant) = &message {
                entry.calls = assistant.tool_calls().map(|call| call.id.clone()).collect();
            }
        }
        entry
    }
}

/// [`find_cut_point`] over the entries of a path read as [`CutEntry`]s, `start` being where the
/// entries not yet summarized begin: the index of the first kept entry and, when the cut falls
/// inside a turn, that of the entry where the turn began.
pub(crate) fn find_cut(path: &[CutEntry], start: usize, keep_recent_tokens: u64) -> Option<(usize, Option<usize>)> {
    if path.last()?.kind == CutKind::Compaction {
        return None;
    }
    let cut_points = valid_cut_points(path, start);
    let mut cut = *cut_points.first()?;
    let mut spent = 0;
    for index in (start..path.len()).rev() {
        let Some(tokens) = path[index].tokens else { continue };
        spent += tokens;
        if spent >= keep_recent_tokens {
            if let Some(&at) = cut_points.iter().find(|&&at| at >= index) {
                cut = at;
            }
            break;
        }
    }
    // Settings and other non-message entries right before the cut travel with the kept part.
    while cut > start {
        if matches!(path[cut - 1].kind, CutKind::Compaction | CutKind::Message) {
            break;
        }
        cut -= 1;
    }
    let starts_turn = |index: usize| {
        matches!(path[index].kind, CutKind::BranchSummary | CutKind::CustomMessage)
            || matches!(path[index].role, Some(Role::User | Role::BashExecution))
    };
    let split =
        if path[cut].role == Some(Role::User) { None } else { (start..=cut).rev().find(|&index| starts_turn(index)) };
    Some((cut, split))
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
fn valid_cut_points(path: &[CutEntry], start: usize) -> Vec<usize> {
    let answered: HashSet<&str> = path[start..].iter().filter_map(|entry| entry.answers.as_deref()).collect();
    let mut waiting: HashSet<&str> = HashSet::new();
    let mut points = Vec::new();
    for (index, entry) in path.iter().enumerate().skip(start) {
        let can_start = matches!(entry.kind, CutKind::BranchSummary | CutKind::CustomMessage)
            || matches!(
                entry.role,
                Some(
                    Role::User
                        | Role::Assistant
                        | Role::Custom
                        | Role::BashExecution
                        | Role::BranchSummary
                        | Role::CompactionSummary
                )
            );
        if can_start && waiting.is_empty() {
            points.push(index);
        }
        match entry.role {
            Some(Role::Assistant) => {
                waiting.extend(entry.calls.iter().map(String::as_str).filter(|id| answered.contains(id)));
            }
            Some(Role::ToolResult) => {
                if let Some(id) = entry.answers.as_deref() {
                    waiting.remove(id);
                }
            }
            _ => {}
        }
    }
    points
}
