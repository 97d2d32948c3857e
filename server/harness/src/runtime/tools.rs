//! A session's tools: the built-in ones, and its MCP servers' — the configured servers, shared
//! by every session, joined with the session's own (which a client sets, as ACP's `session/new`
//! does; they shadow configured ones of the same name). The servers start when a run first needs
//! them — or earlier, in the background, when the language server asks ([`Harness::start_mcp_servers`])
//! or a session gets its own — and every turn takes their tools as they are then, so
//! `tools/list_changed` and restarts apply from the next turn. The configured set is rebuilt when
//! the settings change it; all stop with the harness.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use reins_agent::Tool;
use reins_ai::Model;
use reins_mcp::{Declared, Declaring, ServerConfig, ServerStatus, Servers, SessionServers, defer_above};
use reins_session::{EntryKind, EntryTag, SessionFile};

use super::{Harness, lock};
use crate::checkpoint::{FileRecorder, recorded};
use crate::error::HarnessError;
use crate::mcp_start;
use reins_settings::LiveSettings;
use reins_settings::Settings;
use reins_settings::ToolSet;

/// The configured servers, and the workspace roots they were built for.
pub(super) struct ConfiguredServers {
    pub(super) servers: Arc<Servers>,
    pub(super) roots: Vec<PathBuf>,
}

pub(crate) struct SessionTools {
    /// Every built-in tool; changed with the model when it takes the other edit dialect.
    builtin: Mutex<Vec<Arc<dyn Tool>>>,
    mcp: Mutex<Arc<SessionServers>>,
    /// Records the session's MCP calls that may change files (see `crate::checkpoint`).
    recorder: Option<Arc<FileRecorder>>,
    /// The tool set in force (the session's own, else the settings'); `None` offers every tool.
    offered: Mutex<Option<ToolSet>>,
    /// Where the share of the context window past which MCP tools are deferred is read.
    settings: LiveSettings,
}

/// The custom entry that records the deferred MCP tools `tool_search` found, so that the
/// session declares them again when it is opened again: `{"tools": [NAME, …]}`.
pub(crate) const TOOLS_FOUND: &str = "reins.tools_found";

impl SessionTools {
    /// `file` is the session's, where the tools `tool_search` finds are recorded.
    pub(crate) fn new(
        builtin: Vec<Arc<dyn Tool>>,
        configured: Arc<Servers>,
        recorder: Option<Arc<FileRecorder>>,
        offered: Option<ToolSet>,
        file: Option<&Arc<Mutex<SessionFile>>>,
        settings: LiveSettings,
    ) -> Self {
        let declared = declared_of(file);
        let mcp = Mutex::new(Arc::new(SessionServers::new(configured, Servers::empty(), declared)));
        Self { builtin: Mutex::new(builtin), mcp, recorder, offered: Mutex::new(offered), settings }
    }

    /// Every built-in tool, offered or not.
    pub(crate) fn builtin(&self) -> Vec<Arc<dyn Tool>> {
        lock(&self.builtin).clone()
    }

    pub(crate) fn set_builtin(&self, tools: Vec<Arc<dyn Tool>>) {
        *lock(&self.builtin) = tools;
    }

    /// From the next turn, offers the tools `set` names (`None`: all).
    pub(crate) fn set_offered(&self, set: Option<ToolSet>) {
        *lock(&self.offered) = set;
    }

    /// Whether the set in force offers the tool named `name`.
    pub(crate) fn offers(&self, name: &str) -> bool {
        lock(&self.offered).as_ref().is_none_or(|set| set.offers(name))
    }

    /// The built-in tools the set in force offers.
    pub(crate) fn offered_builtin(&self) -> Vec<Arc<dyn Tool>> {
        self.offered_of(self.builtin())
    }

    fn offered_of(&self, mut tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
        if let Some(set) = &*lock(&self.offered) {
            tools.retain(|tool| set.offers(tool.name()));
        }
        tools
    }

    /// The tools for the model's next turn with `model`: the built-in ones, then the MCP
    /// servers' (started first if they are not yet), those the set in force offers — past the
    /// threshold of `[tools] mcp_deferred_above`, the MCP tools declared and `tool_search`.
    pub(crate) async fn current(&self, model: &Model) -> Vec<Arc<dyn Tool>> {
        let servers = self.servers();
        let defer_above = defer_above(model.context_window, self.settings.get().mcp_deferred_above);
        let offers = |name: &str| self.offers(name);
        let mut mcp = servers.tools(&Declaring { defer_above, offers: &offers }).await;
        if let Some(recorder) = &self.recorder {
            mcp = recorded(mcp, recorder);
        }
        let mut tools = self.offered_builtin();
        tools.extend(mcp);
        tools
    }

    fn servers(&self) -> Arc<SessionServers> {
        lock(&self.mcp).clone()
    }

    /// Starts the session's servers in the background, so a first run finds them ready.
    pub(crate) fn start_in_background(&self) {
        let servers = self.servers();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { servers.start().await });
        }
    }

    /// Joins the session's own servers with `configured`.
    fn rejoin(&self, configured: Arc<Servers>) {
        let mut mcp = lock(&self.mcp);
        *mcp = Arc::new(SessionServers::new(configured, mcp.own().clone(), mcp.declared().clone()));
    }

    /// Replaces the session's own servers; answers the previous ones.
    fn set_own(&self, own: Arc<Servers>) -> Arc<Servers> {
        let mut mcp = lock(&self.mcp);
        let previous = mcp.own().clone();
        *mcp = Arc::new(SessionServers::new(mcp.configured().clone(), own, mcp.declared().clone()));
        previous
    }
}

impl Harness {
    /// The configured MCP servers of `settings`.
    pub(super) fn configured_servers(&self, settings: &Settings) -> Arc<Servers> {
        mcp_start::servers(settings.mcp_servers.clone(), settings, self.roots(), self.options.warn.clone())
    }

    fn roots(&self) -> Vec<PathBuf> {
        self.options.workspace.roots()
    }

    /// Puts the configured servers of `settings` in force when they differ from `previous`'s (or
    /// the workspace moved, as at `initialize`): every session joins the new set, and the old one
    /// stops (a call in flight finishes first).
    pub(super) fn reconfigure_servers(&self, settings: &Settings, previous: &Settings) {
        let roots = self.roots();
        let old = {
            let mut current = lock(&self.mcp);
            if settings.mcp_servers == previous.mcp_servers && current.roots == roots {
                return;
            }
            let servers = self.configured_servers(settings);
            std::mem::replace(&mut *current, ConfiguredServers { servers, roots })
        };
        let configured = lock(&self.mcp).servers.clone();
        for session in lock(&self.sessions).values() {
            session.toolbox.rejoin(configured.clone());
        }
        stop_in_background(old.servers);
    }

    /// Starts the configured MCP servers in the background, so that a first run finds them ready
    /// (the language server calls this once the editor is connected; servers that new settings
    /// bring start when first needed).
    pub fn start_mcp_servers(&self) {
        let servers = lock(&self.mcp).servers.clone();
        if servers.is_empty() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { servers.start().await });
        }
    }

    /// Gives a session MCP servers of its own (ACP's `session/new` and `session/load` carry
    /// them), on top of the configured ones; a server of the same name as a configured one
    /// shadows it in this session. Replaces the servers set before, which stop. They start at
    /// once in the background, and stop with the harness.
    pub fn set_session_servers(&self, session_id: &str, servers: Vec<ServerConfig>) -> Result<(), HarnessError> {
        let session = self.session(session_id)?;
        let settings = self.settings();
        let own = mcp_start::servers(servers, &settings, self.roots(), self.options.warn.clone());
        let previous = session.toolbox.set_own(own);
        session.toolbox.start_in_background();
        stop_in_background(previous);
        Ok(())
    }

    /// The MCP servers of a session (or, without one, the configured ones): each started first,
    /// as a run would, then listed with its state and the tools it offers.
    pub async fn mcp_servers(&self, session_id: Option<&str>) -> Result<Vec<ServerStatus>, HarnessError> {
        let servers = match session_id {
            Some(session_id) => self.session(session_id)?.toolbox.servers(),
            None => Arc::new(SessionServers::global(lock(&self.mcp).servers.clone())),
        };
        servers.start().await;
        Ok(servers.status())
    }

    /// Stops every MCP server (the configured ones and the sessions' own) and their processes.
    /// Call before exiting; dropping the harness kills them too, without waiting.
    pub async fn shutdown(&self) {
        let mut sets = vec![lock(&self.mcp).servers.clone()];
        sets.extend(lock(&self.sessions).values().map(|session| session.toolbox.servers().own().clone()));
        for set in sets {
            set.stop().await;
        }
        self.stop_language_servers().await;
    }
}

/// The session's declared MCP tools: those found before, as `file` recorded them on the path to
/// its leaf; new finds are recorded there.
fn declared_of(file: Option<&Arc<Mutex<SessionFile>>>) -> Arc<Declared> {
    let Some(file) = file else { return Declared::unrecorded() };
    let found = found_on_path(&lock(file));
    let file = file.clone();
    Declared::new(found, move |names| {
        let data = serde_json::json!({ "tools": names });
        let mut file = lock(&file);
        let kind = EntryKind::Custom { custom_type: TOOLS_FOUND.to_string(), data: Some(data) };
        if let Err(err) = file.append(kind).and_then(|_| file.flush()) {
            tracing::error!("could not record the tools found in {}: {err}", file.path().display());
        }
    })
}

/// The tools the `reins.tools_found` entries on the path to the leaf name, in order.
fn found_on_path(file: &SessionFile) -> Vec<String> {
    let tree = file.tree();
    let Some(leaf) = file.leaf() else { return Vec::new() };
    let Ok(mut path) = tree.path_to_root(leaf) else { return Vec::new() };
    path.reverse();
    let mut found: Vec<String> = Vec::new();
    for id in path {
        if tree.get(id).is_none_or(|entry| entry.tag != EntryTag::Custom) {
            continue;
        }
        let Ok(entry) = tree.entry(id) else { continue };
        let EntryKind::Custom { custom_type, data: Some(data) } = entry.kind else { continue };
        if custom_type != TOOLS_FOUND {
            continue;
        }
        let names = data["tools"].as_array().into_iter().flatten().filter_map(|name| name.as_str());
        for name in names {
            if !found.iter().any(|known| known == name) {
                found.push(name.to_string());
            }
        }
    }
    found
}

/// Stops `servers` unless another harness or session shares them (they stop when the last
/// holder lets go).
fn stop_in_background(servers: Arc<Servers>) {
    if servers.is_empty() || crate::mcp_pool::held_elsewhere(&servers) {
        return;
    }
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move { servers.stop().await });
    }
}
