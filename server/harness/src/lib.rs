//! The product runtime shared by the LSP server and the CLI: the settings in force (read by
//! `reins-settings`, re-exported here), the provider router, the system prompt,
//! approval policy, live sessions kept on disk, compaction, and errors with stable codes.

mod approval;
mod attachment;
mod checkpoint;
mod commands;
mod compaction;
mod date;
mod diagnostics;
mod error;
mod export;
mod frontmatter;
mod hooks;
mod mcp_pool;
mod mcp_start;
mod process;
mod project_root;
mod prompt;
mod router;
mod runtime;
mod sessions;
mod skill_read;
mod skills;
mod stops;
mod summary;
mod templates;
mod tokio_runtime;
mod worktrees;

pub use attachment::{Attachment, fence_for, quote_attachment, with_attachments};
pub use commands::{BUILTIN_COMMANDS, CommandKind, Expanded, Locations, Resources, SlashCommand, describe_resources};
pub use compaction::Compacted;
pub use date::today;
pub use diagnostics::{MAX_TOLD, NEW_PROBLEMS};
pub use error::HarnessError;
pub use export::ExportFormat;
pub use mcp_start::{Warn, configured_servers};
pub use process::{protect_process, raise_open_files_limit};
pub use project_root::project_root;
pub use prompt::{CONTEXT_FILE_NAMES, ContextFile, PromptInputs, build_system_prompt};
pub use router::Router;
pub use runtime::{
    CheckedOut, Checkout, Executed, Harness, HarnessEvent, HarnessEventSink, HarnessOptions, Landing, LateContent,
    Parent, PickedCheckout, Resumed, RunId, RunStarted, SUBAGENT_ENTRY, SentRequest, SessionId, SessionUsage,
    TASK_TOOL, TODO_ENTRY, ThinkingSet, ToolsSet,
};
pub use sessions::{SessionInfo, SessionPage, SessionTreeView, TreeNode};
pub use skills::{AllowedTools, Scope, Skill, Skills, Warning};
pub use stops::{REFUSAL_STOP, budget_stop};
pub use summary::{FileActivity, render_transcript};
pub use templates::{Template, Templates};
pub use tokio_runtime::start_runtime;
pub use worktrees::{Merged, Worktree, WorktreeAgent, WorktreeChange};
// What a checkout does to each file, as the checkpoints crate works it out.
pub use reins_checkpoints::{
    CommandRan, ConflictInfo, Direction, FileChangeRecord, FileOutcome, Status, UNTRACKED_WARNING, Written,
};
// The approval policy and the approver are the review core's; the settings carry the policy.
pub use reins_review::{ApprovalPolicy, ApprovalRequest, Approver, Policy, Verdict};
// The settings are a crate of their own; the surfaces reach them through the harness.
pub use reins_settings::{
    Api, AuthKeys, BUILTIN_TOOLS, CompactionSettings, ConfigDiagnostic, ConfigLayer, DEFAULT_BASE_URL,
    DEFAULT_HOOK_TIMEOUT_SECS, DEFAULT_MODEL, DiagnosticsSettings, EditFormatChoice, FALLBACK_PROVIDER, FileTrust,
    HookConfig, HookEvent, KEY_COMMAND_TIMEOUT, KeySource, KeyState, LayerKind, ListedModel, LiveSettings, ModelEntry,
    ProviderInfo, READ_ONLY_TOOLS, Registry, Settings, Source, TRUSTED_FILES, ToolSet, is_trusted, mask,
    read_auth_file, run_key_command, trust, user_home,
};
