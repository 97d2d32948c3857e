//! The product runtime shared by the LSP server and the CLI: settings, the system prompt,
//! approval policy, live sessions kept on disk, compaction, and errors with stable codes.

mod approval;
mod error;
mod prompt;
mod runtime;
mod sessions;
mod settings;
mod summary;

pub use approval::{ApprovalGate, ApprovalPolicy, Approver, Policy};
pub use error::HarnessError;
pub use prompt::{CONTEXT_FILE_NAMES, ContextFile, PromptInputs, build_system_prompt};
pub use runtime::{
    Compacted, CompactionSettings, Harness, HarnessEvent, HarnessEventSink, HarnessOptions, RunId, RunStarted,
    SessionId,
};
pub use sessions::{SessionInfo, SessionTreeView, TreeNode};
pub use settings::{DEFAULT_BASE_URL, DEFAULT_MODEL, Settings};
pub use summary::{FileActivity, render_transcript};
