//! Starting the user's MCP servers in the harness: the configured ones, shared by every session and
//! rebuilt when the settings change them, joined in each session with the session's own (which a
//! client sets, as ACP's `session/new` does). Servers start with the environment tools get — no
//! provider keys — plus what their config passes.

use std::path::PathBuf;
use std::sync::Arc;

use reins_mcp::{MAX_RESTARTS, Options, ServerConfig, Servers};

use crate::mcp_pool::{self, PoolKey};
use reins_settings::Settings;

/// Where warnings go that are no agent event: an MCP server could not start, or stopped; a
/// thinking level the session's model cannot take (said once). The CLI prints them on stderr;
/// the language server shows them with `window/showMessage`.
pub type Warn = Arc<dyn Fn(&str) + Send + Sync>;

/// The configured servers of `settings`, for a workspace at `roots`. Nothing starts until a
/// session needs tools (or a listing asks).
pub fn configured_servers(settings: &Settings, roots: Vec<PathBuf>, warn: Warn) -> Arc<Servers> {
    servers(settings.mcp_servers.clone(), settings, roots, warn)
}

/// A set of `configs` started as `settings` say servers start.
pub(crate) fn servers(
    configs: Vec<ServerConfig>,
    settings: &Settings,
    roots: Vec<PathBuf>,
    warn: Warn,
) -> Arc<Servers> {
    if configs.is_empty() {
        return Servers::empty();
    }
    let base_env = settings.tool_env(std::env::vars_os());
    let starting_wait = settings.mcp_startup_wait;
    let token_dir = settings.mcp_token_dir();
    let key = PoolKey { configs: configs.clone(), roots: roots.clone(), base_env: base_env.clone() };
    // The same servers already in use are joined, not started twice (see `mcp_pool`).
    mcp_pool::shared(key, &warn, |listeners| {
        let options = Options {
            base_env,
            roots,
            notify: Arc::new(move |notice| {
                tracing::info!(server = %notice.server, "{}", notice.message);
                mcp_pool::tell(&listeners, &notice.message);
            }),
            max_restarts: MAX_RESTARTS,
            starting_wait,
            token_dir: Some(token_dir),
        };
        Servers::new(configs, options)
    })
}
