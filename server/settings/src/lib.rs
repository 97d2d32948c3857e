//! The settings in force and where each came from: the config files (the user's, a trusted
//! project's, `.mcp.json`), the environment, the editor's settings and the auth file, laid over
//! each other into one [`Settings`]; the model registry; API keys; which workspaces are trusted.
//! Below the harness and knowing nothing of it: the harness holds the live value and reads it.

mod auth;
mod compaction;
mod config;
mod diagnostics;
mod failure;
mod home;
mod live_settings;
mod models;
mod registry;
mod settings;
mod tool_set;
mod trust;

pub use auth::{AuthKeys, KEY_COMMAND_TIMEOUT, mask, read_auth_file, run_key_command};
pub use compaction::CompactionSettings;
pub use config::{
    ConfigDiagnostic, ConfigLayer, DEFAULT_HOOK_TIMEOUT_SECS, EditFormatChoice, HookConfig, HookEvent, LayerKind,
    Source,
};
pub use diagnostics::DiagnosticsSettings;
pub use home::user_home;
pub use live_settings::LiveSettings;
pub use models::{KeyState, ListedModel};
pub use registry::{Api, FALLBACK_PROVIDER, ModelEntry, ProviderInfo, Registry};
pub use settings::{DEFAULT_BASE_URL, DEFAULT_MODEL, KeySource, Settings};
pub use tool_set::{BUILTIN_TOOLS, READ_ONLY_TOOLS, ToolSet};
pub use trust::{FileTrust, TRUSTED_FILES, is_trusted, trust};
