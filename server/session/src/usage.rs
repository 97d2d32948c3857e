//! What a session cost: the tokens and dollars of every model call it records, on every branch —
//! assistant messages, and (pi 1.6) the summaries behind compactions and branch summaries, tools
//! that called a model, and `usage` entries (cache warming and the like).

use reins_ai::Usage;
use serde::Deserialize;

use crate::format::EntryTag;
use crate::message::UsageRecord;
use crate::tree::SessionTree;

/// The fields of a line that carry usage; everything else is skipped unread.
#[derive(Deserialize, Default)]
#[serde(default)]
struct UsageLine {
    message: Option<UsageMessage>,
    usage: Option<UsageRecord>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct UsageMessage {
    role: String,
    usage: Option<UsageRecord>,
}

impl SessionTree {
    /// The usage of every model call recorded in the file. A line that cannot be read counts
    /// nothing; the others still count.
    pub fn total_usage(&self) -> Usage {
        let mut total = Usage::default();
        for index in 0..self.len() as u32 {
            let tag = self.tag(index);
            if !matches!(tag, EntryTag::Message | EntryTag::Compaction | EntryTag::BranchSummary | EntryTag::Usage) {
                continue;
            }
            let Ok(line) = serde_json::from_slice::<UsageLine>(self.line_bytes(index)) else { continue };
            let usage = match (tag, line.message) {
                // A tool result's usage is the model work the tool did itself (pi 1.6).
                (EntryTag::Message, Some(message)) if matches!(message.role.as_str(), "assistant" | "toolResult") => {
                    message.usage
                }
                (EntryTag::Message, _) => None,
                _ => line.usage,
            };
            if let Some(usage) = usage {
                total.add(&Usage::from(&usage));
            }
        }
        total
    }
}
