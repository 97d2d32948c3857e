//! What a session cost: the tokens and dollars of every model call it records, on every branch —
//! assistant messages, and (pi 1.6) the summaries behind compactions and branch summaries, tools
//! that called a model, and `usage` entries (cache warming and the like) — and call by call along
//! one path.

use reins_ai::Usage;
use serde::Deserialize;

use crate::error::SessionError;
use crate::format::EntryTag;
use crate::message::UsageRecord;
use crate::tree::SessionTree;

/// One model call recorded in a session.
#[derive(Debug, Clone, PartialEq)]
pub struct CallUsage {
    /// The entry that records it.
    pub entry_id: String,
    /// ISO 8601, as the entry's.
    pub timestamp: String,
    /// What the call was for: `assistant` (a turn), `compaction` and `branch_summary` (their
    /// summaries), `tool` (a tool's own model work) or a `usage` entry's kind.
    pub kind: String,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub usage: Usage,
}

/// The fields of a line that carry usage; everything else is skipped unread.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct UsageLine {
    timestamp: String,
    message: Option<UsageMessage>,
    usage: Option<UsageRecord>,
    kind: Option<String>,
    provider: Option<String>,
    model: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct UsageMessage {
    role: String,
    usage: Option<UsageRecord>,
    provider: Option<String>,
    model: Option<String>,
}

impl SessionTree {
    /// The usage of every model call recorded in the file. A line that cannot be read counts
    /// nothing; the others still count.
    pub fn total_usage(&self) -> Usage {
        let mut total = Usage::default();
        for index in 0..self.len() as u32 {
            if let Some(call) = self.call_usage(index) {
                total.add(&call.usage);
            }
        }
        total
    }

    /// The model calls on the path from the root to `leaf` (the current leaf when `None`), in
    /// order: what the conversation as it stands cost, turn by turn.
    pub fn path_usage(&self, leaf: Option<&str>) -> Result<Vec<CallUsage>, SessionError> {
        let leaf = match leaf {
            Some(id) => Some(self.index_of(id)?),
            None => self.leaf_index(),
        };
        let path = leaf.map(|leaf| self.path_indices(leaf)).unwrap_or_default();
        Ok(path.into_iter().filter_map(|index| self.call_usage(index)).collect())
    }

    fn call_usage(&self, index: u32) -> Option<CallUsage> {
        let call = line_call(self.tag(index), self.line_bytes(index))?;
        Some(CallUsage { entry_id: self.id_at(index).to_string(), ..call })
    }
}

/// The model call the line of an entry of kind `tag` records, its `entry_id` left empty for the
/// caller; `None` for a line that records none or cannot be read.
pub(crate) fn line_call(tag: EntryTag, line: &[u8]) -> Option<CallUsage> {
    if !matches!(tag, EntryTag::Message | EntryTag::Compaction | EntryTag::BranchSummary | EntryTag::Usage) {
        return None;
    }
    let line = serde_json::from_slice::<UsageLine>(line).ok()?;
    let (kind, usage, provider, model) = match (tag, line.message) {
        // A tool result's usage is the model work the tool did itself (pi 1.6).
        (EntryTag::Message, Some(message)) if matches!(message.role.as_str(), "assistant" | "toolResult") => {
            let kind = if message.role == "assistant" { "assistant" } else { "tool" };
            (kind.to_string(), message.usage?, message.provider, message.model)
        }
        (EntryTag::Message, _) => return None,
        (EntryTag::Compaction, _) => ("compaction".to_string(), line.usage?, line.provider, line.model),
        (EntryTag::BranchSummary, _) => ("branch_summary".to_string(), line.usage?, line.provider, line.model),
        _ => (line.kind.unwrap_or_else(|| "usage".into()), line.usage?, line.provider, line.model),
    };
    Some(CallUsage {
        entry_id: String::new(),
        timestamp: line.timestamp,
        kind,
        provider,
        model,
        usage: Usage::from(&usage),
    })
}
