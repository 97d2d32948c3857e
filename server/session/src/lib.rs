//! Conversation sessions as branching JSONL trees on disk, in the v3 session format of the pi
//! coding agent (so a session written by one tool opens in the other).
//!
//! A file is a header and one entry per line; entries point at their parent, so a file is a tree
//! and the current position is a leaf. [`SessionStore`] finds and creates files, [`SessionFile`]
//! is the one locked writer of a file, [`SessionTree`] indexes a file in memory and builds the
//! [`SessionContext`] sent to the model for any leaf. [`format`] is the on-disk contract.

mod compaction;
mod context;
mod disk;
mod error;
pub mod format;
mod index;
mod message;
mod migrate;
mod outline;
mod private;
mod session_file;
mod store;
mod summary;
mod time;
mod tree;
mod usage;
mod watch;

pub use compaction::{CompactionPlan, CutPoint, estimate_context_tokens, estimate_tokens, find_cut_point};
pub use context::{INTERRUPTED_RESULT, ModelRef, SessionContext, repair_tool_pairs};
pub use disk::{MAX_ENTRY_BYTES, MAX_SESSION_BYTES, open_regular};
pub use error::SessionError;
pub use format::{Entry, EntryKind, EntryTag, Header};
pub use index::{INDEX_FILE, IndexSave, SessionIndex};
pub use message::{
    BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, BlockRecord, COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX,
    ContentField, MessageRecord, UsageRecord,
};
pub use outline::TreeOutline;
pub use session_file::{Durability, SessionFile};
pub use store::{SessionStore, encode_cwd};
pub use summary::{SessionSummary, summarize};
pub use tree::{EntryRef, SessionTree};
pub use usage::CallUsage;
