//! Sets of servers, and the join that gives one session its tools.

use std::sync::{Arc, Mutex, PoisonError};

use reins_agent::Tool;
use tokio::task::JoinSet;

use crate::Options;
use crate::config::ServerConfig;
use crate::names::assign_names;
use crate::server::{Server, ServerState, ServerTool};
use crate::tool::McpTool;

/// Servers started together: the configured ones, or one session's own.
pub struct Servers {
    servers: Vec<Arc<Server>>,
}

/// A session's servers: the configured ones joined with the session's own, which shadow
/// configured ones of the same name.
pub struct SessionServers {
    global: Arc<Servers>,
    own: Arc<Servers>,
    cache: Mutex<ToolCache>,
}

/// The tools last handed out, and the (server, generation) pairs they were built from, so that
/// the agent gets the same tools (and sends the same specs) until something changes.
#[derive(Default)]
struct ToolCache {
    key: Vec<(usize, u64)>,
    tools: Vec<Arc<dyn Tool>>,
}

/// A server as `reins mcp list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    pub name: String,
    pub origin: String,
    /// The command line or URL, without secrets.
    pub transport: String,
    pub state: ServerState,
    /// The tools offered to the model (disabled ones left out); empty unless the server is up.
    pub tools: Vec<ToolInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    /// The name the model sees: `mcp__server__tool`.
    pub name: String,
    /// The server's name for it.
    pub tool: String,
    pub description: String,
}

impl Servers {
    /// A set of `configs`; nothing starts yet. Of two servers with one name, the later wins.
    pub fn new(configs: Vec<ServerConfig>, options: Options) -> Arc<Self> {
        let options = Arc::new(options);
        let mut servers: Vec<Arc<Server>> = Vec::with_capacity(configs.len());
        for config in configs {
            servers.retain(|server| server.name() != config.name);
            servers.push(Arc::new(Server::new(config, options.clone())));
        }
        Arc::new(Self { servers })
    }

    pub fn empty() -> Arc<Self> {
        Arc::new(Self { servers: Vec::new() })
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Starts every server not started yet, concurrently, each within its startup timeout, and
    /// returns when each is ready or has failed.
    pub async fn start(&self) {
        tools_of(&self.servers).await;
    }

    /// Stops every server and its processes; none starts again.
    pub async fn stop(&self) {
        let mut stopping = JoinSet::new();
        for server in &self.servers {
            let server = server.clone();
            stopping.spawn(async move { server.stop().await });
        }
        stopping.join_all().await;
    }
}

impl SessionServers {
    pub fn new(global: Arc<Servers>, own: Arc<Servers>) -> Self {
        Self { global, own, cache: Mutex::default() }
    }

    /// The configured servers alone.
    pub fn global(global: Arc<Servers>) -> Self {
        Self::new(global, Servers::empty())
    }

    /// The configured servers this session joins.
    pub fn configured(&self) -> &Arc<Servers> {
        &self.global
    }

    /// The session's own servers (to stop them when the session ends).
    pub fn own(&self) -> &Arc<Servers> {
        &self.own
    }

    /// The tools for the model's next turn. Starts servers not started yet (and restarts ones
    /// that stopped, within their budget), concurrently, and lists again the tools of servers
    /// that said they changed.
    pub async fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let servers = self.servers();
        let lists = tools_of(&servers).await;
        let key: Vec<(usize, u64)> =
            servers.iter().map(|server| (Arc::as_ptr(server) as usize, server.generation())).collect();
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.key != key || cache.tools.is_empty() {
            let tools = named(&servers, &lists)
                .into_iter()
                .map(|(server, tool, name)| Arc::new(McpTool::new(name, server.clone(), tool)) as Arc<dyn Tool>)
                .collect();
            *cache = ToolCache { key, tools };
        }
        cache.tools.clone()
    }

    /// Each server's state and offered tools, without starting any.
    pub fn status(&self) -> Vec<ServerStatus> {
        let servers = self.servers();
        let lists: Vec<Arc<[ServerTool]>> =
            servers.iter().map(|server| server.listed_tools().unwrap_or_else(|| Arc::from([]))).collect();
        let mut statuses: Vec<ServerStatus> = servers
            .iter()
            .map(|server| ServerStatus {
                name: server.name().to_string(),
                origin: server.config.origin.clone(),
                transport: server.config.transport.describe(),
                state: server.state(),
                tools: Vec::new(),
            })
            .collect();
        for (server, tool, name) in named(&servers, &lists) {
            if let Some(status) = statuses.iter_mut().find(|status| status.name == server.name()) {
                status.tools.push(ToolInfo { name, tool: tool.name.clone(), description: tool.description.clone() });
            }
        }
        statuses
    }

    /// The servers in effect: the configured ones not shadowed, then the session's own.
    fn servers(&self) -> Vec<Arc<Server>> {
        let shadowed = |server: &Arc<Server>| self.own.servers.iter().any(|own| own.name() == server.name());
        self.global.servers.iter().filter(|server| !shadowed(server)).chain(&self.own.servers).cloned().collect()
    }
}

/// The tools of each server, in order, asked of all at once.
async fn tools_of(servers: &[Arc<Server>]) -> Vec<Arc<[ServerTool]>> {
    let mut asking = JoinSet::new();
    for (index, server) in servers.iter().enumerate() {
        let server = server.clone();
        asking.spawn(async move { (index, server.tools().await) });
    }
    let mut lists: Vec<Arc<[ServerTool]>> = vec![Arc::from([]); servers.len()];
    while let Some(joined) = asking.join_next().await {
        match joined {
            Ok((index, tools)) => lists[index] = tools,
            Err(err) => tracing::error!("starting an MCP server failed: {err}"),
        }
    }
    lists
}

/// The offered tools of `servers` with their public names, in order.
fn named<'a>(
    servers: &'a [Arc<Server>],
    lists: &'a [Arc<[ServerTool]>],
) -> Vec<(&'a Arc<Server>, &'a ServerTool, String)> {
    let offered: Vec<(&Arc<Server>, &ServerTool)> = servers
        .iter()
        .zip(lists)
        .flat_map(|(server, tools)| {
            tools.iter().filter(|tool| server.config.offers(&tool.name)).map(move |tool| (server, tool))
        })
        .collect();
    let pairs: Vec<(&str, &str)> = offered.iter().map(|(server, tool)| (server.name(), tool.name.as_str())).collect();
    let names = assign_names(&pairs);
    offered.into_iter().zip(names).map(|((server, tool), name)| (server, tool, name)).collect()
}
