//! The user's MCP servers, through rmcp: each server's tools become ordinary agent tools named
//! `mcp__server__tool`, so that the agent's policies, approval, events and session recording
//! apply to them unchanged.
//!
//! A [`Servers`] is a set of servers started together: the configured ones, shared by every
//! session, or the ones a client gave one session (ACP `session/new`). A [`SessionServers`] joins
//! the two for one session and hands the agent its tools. Nothing here reads config files or the
//! environment: the harness resolves a [`ServerConfig`] and passes it in.

mod announced;
mod arguments;
mod config;
mod connection;
mod content;
mod exposure;
mod guard;
mod http;
mod login;
mod names;
mod oauth;
mod probe;
mod resources;
mod schema;
mod server;
mod set;
mod stdio;
mod token_file;
mod tool;
mod tool_search;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use config::{DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, ServerConfig, Transport};
pub use exposure::{Declared, Exposure, defer_above};
/// Also what ends a language server's process group with reins (`reins-langserver`).
pub use guard::fork_guard;
pub use login::{LOGIN_WAIT, login};
pub use names::{MAX_NAME_LEN, assign_names, public_name};
pub use oauth::login_advice;
pub use resources::{LIST_RESOURCE_TEMPLATES, LIST_RESOURCES, READ_RESOURCE};
pub use schema::normalize_input_schema;
pub use server::{STARTING_WAIT, ServerState};
pub use set::{Declaring, ServerStatus, Servers, SessionServers, ToolInfo};
pub use token_file::TokenFile;
pub use tool::{McpTool, look};
pub use tool_search::TOOL_SEARCH;

/// How often a server that stopped after it was ready is started again before it is given up.
pub const MAX_RESTARTS: u32 = 3;

/// What every server of a set shares.
pub struct Options {
    /// reins's environment without provider keys (the harness scrubs it). A stdio server gets
    /// only its ordinary variables (`PATH`, `HOME`, the locale…), then its own `env`.
    pub base_env: Vec<(OsString, OsString)>,
    /// The workspace roots: offered to servers as MCP roots; the first is a stdio server's
    /// working directory unless it has its own.
    pub roots: Vec<PathBuf>,
    /// Where warnings go: a server could not start, or stopped.
    pub notify: Arc<dyn Fn(Notice) + Send + Sync>,
    pub max_restarts: u32,
    /// How long a request for tools waits for a server that is starting, once per start.
    pub starting_wait: Duration,
    /// Where the OAuth tokens of `reins mcp login` are kept (`<reins home>/auth`); an HTTP
    /// server without a fixed token uses the one stored for it. `None`: none are used.
    pub token_dir: Option<PathBuf>,
}

/// A warning about one server, for the user (stderr in `reins run`, `window/showMessage` in
/// the LSP server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub server: String,
    /// A sentence that names the server and says what happened.
    pub message: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            base_env: Vec::new(),
            roots: Vec::new(),
            notify: Arc::new(|_| {}),
            max_restarts: MAX_RESTARTS,
            starting_wait: STARTING_WAIT,
            token_dir: None,
        }
    }
}
