//! The product runtime shared by the LSP server and the CLI: settings (config files, the
//! environment, editor settings), the model registry and the provider router, the system prompt,
//! approval policy, live sessions kept on disk, compaction, and errors with stable codes.

mod approval;
mod attachment;
mod auth;
mod checkpoint;
mod commands;
mod compaction;
mod config;
mod date;
mod diagnostics;
mod error;
mod export;
mod frontmatter;
mod home;
mod hooks;
mod live_settings;
mod mcp;
mod mcp_pool;
mod models;
mod process;
mod prompt;
mod registry;
mod router;
mod runtime;
mod sessions;
mod settings;
mod skill_read;
mod skills;
mod stops;
mod summary;
mod templates;
mod tokio_runtime;
mod tool_set;
mod trust;
mod worktrees;

pub use attachment::{Attachment, fence_for, quote_attachment, with_attachments};
pub use auth::{AuthKeys, KEY_COMMAND_TIMEOUT, mask, read_auth_file, run_key_command};
pub use commands::{BUILTIN_COMMANDS, CommandKind, Expanded, Locations, Resources, SlashCommand, describe_resources};
pub use compaction::{Compacted, CompactionSettings};
pub use config::{ConfigDiagnostic, ConfigLayer, EditFormatChoice, LayerKind, Source};
pub use date::today;
pub use diagnostics::{FeedbackSettings, MAX_TOLD, NEW_PROBLEMS};
pub use error::HarnessError;
pub use export::ExportFormat;
pub use home::user_home;
pub use hooks::{DEFAULT_HOOK_TIMEOUT_SECS, HookConfig, HookEvent};
pub use live_settings::LiveSettings;
pub use mcp::{Warn, configured_servers};
pub use models::{KeyState, ListedModel};
pub use process::{protect_process, raise_open_files_limit};
pub use prompt::{CONTEXT_FILE_NAMES, ContextFile, PromptInputs, build_system_prompt};
pub use registry::{Api, FALLBACK_PROVIDER, ModelEntry, ProviderInfo, Registry};
pub use router::Router;
pub use runtime::{
    CheckedOut, Checkout, Executed, Harness, HarnessEvent, HarnessEventSink, HarnessOptions, Landing, LateContent,
    Parent, Resumed, RunId, RunStarted, SUBAGENT_ENTRY, SessionId, SessionUsage, TASK_TOOL, ThinkingSet, ToolsSet,
};
pub use sessions::{SessionInfo, SessionPage, SessionTreeView, TreeNode};
pub use settings::{DEFAULT_BASE_URL, DEFAULT_MODEL, KeySource, Settings};
pub use skills::{AllowedTools, Scope, Skill, Skills, Warning};
pub use stops::{REFUSAL_STOP, budget_stop};
pub use summary::{FileActivity, render_transcript};
pub use templates::{Template, Templates};
pub use tokio_runtime::start_runtime;
pub use tool_set::{BUILTIN_TOOLS, READ_ONLY_TOOLS, ToolSet};
pub use trust::{FileTrust, TRUSTED_FILES, is_trusted, trust};
pub use worktrees::{Merged, Worktree, WorktreeAgent, WorktreeChange};
// What a checkout does to each file, as the checkpoints crate works it out.
pub use reins_checkpoints::{
    CommandRan, ConflictInfo, Direction, FileChangeRecord, FileOutcome, Status, UNTRACKED_WARNING, Written,
};
// The approval policy and the approver are the review core's; the settings carry the policy.
pub use reins_review::{ApprovalPolicy, ApprovalRequest, Approver, Policy, Verdict};
