//! `[compaction]`: when the harness compacts a conversation.

/// When the conversation is compacted, in estimated tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionSettings {
    /// Compact automatically when the context comes within `reserve_tokens` of the window.
    pub auto: bool,
    pub reserve_tokens: u64,
    /// How much of the newest conversation a compaction keeps verbatim.
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self { auto: true, reserve_tokens: 16_384, keep_recent_tokens: 20_000 }
    }
}
