//! Sets of servers, and the join that gives one session its tools.

use std::sync::{Arc, Mutex, PoisonError};

use reins_agent::Tool;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::Options;
use crate::config::ServerConfig;
use crate::exposure::{Candidate, Declared, Exposure};
use crate::names::assign_names;
use crate::resources::{ListResourceTemplates, ListResources, ReadResource, ResourceServers};
use crate::server::{Server, ServerState, ServerTool};
use crate::tool::McpTool;
use crate::tool_search::{Entry, TOOL_SEARCH, ToolSearch};

/// Servers started together: the configured ones, or one session's own.
pub struct Servers {
    servers: Vec<Arc<Server>>,
}

/// A session's servers: the configured ones joined with the session's own, which shadow
/// configured ones of the same name.
pub struct SessionServers {
    global: Arc<Servers>,
    own: Arc<Servers>,
    declared: Arc<Declared>,
    cache: Mutex<ToolCache>,
}

/// The servers' tools last built, and the (server, generation) pairs they were built from, so
/// that a turn does not build 300 tools (and compile their schemas) again for nothing.
#[derive(Default)]
struct ToolCache {
    key: Vec<(usize, u64)>,
    tools: Vec<Arc<McpTool>>,
}

/// What the session asks for when it takes the tools of a request.
pub struct Declaring<'a> {
    /// Past how many tokens of MCP tool declarations the tools of servers without an `exposure`
    /// are deferred; `None`: never.
    pub defer_above: Option<u64>,
    /// Whether the session's tool set offers the tool of this public name.
    pub offers: &'a (dyn Fn(&str) -> bool + Sync),
}

/// A server as `reins mcp list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    pub name: String,
    pub origin: String,
    /// The command line or URL, without secrets.
    pub transport: String,
    pub state: ServerState,
    /// Whether a login (`reins mcp login NAME`) is stored for it.
    pub logged_in: bool,
    /// The MCP protocol version agreed on (`2025-11-25`), while the server is up.
    pub protocol: Option<String>,
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

impl Default for Declaring<'_> {
    /// Every tool offered, none deferred unless its server says so.
    fn default() -> Self {
        Self { defer_above: None, offers: &every }
    }
}

fn every(_: &str) -> bool {
    true
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
        tools_of(&self.servers, false).await;
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
    /// `declared` is the session's: what it declared and found so far.
    pub fn new(global: Arc<Servers>, own: Arc<Servers>, declared: Arc<Declared>) -> Self {
        Self { global, own, declared, cache: Mutex::default() }
    }

    /// The configured servers alone, for a listing.
    pub fn global(global: Arc<Servers>) -> Self {
        Self::new(global, Servers::empty(), Declared::unrecorded())
    }

    /// What the session declared and found.
    pub fn declared(&self) -> &Arc<Declared> {
        &self.declared
    }

    /// The configured servers this session joins.
    pub fn configured(&self) -> &Arc<Servers> {
        &self.global
    }

    /// The session's own servers (to stop them when the session ends).
    pub fn own(&self) -> &Arc<Servers> {
        &self.own
    }

    /// The tools for the model's next turn: the MCP tools declared (see `exposure`), and
    /// `tool_search` when some are deferred. Starts servers not started yet (and restarts ones
    /// that stopped, within their budget), concurrently, and lists again the tools of servers
    /// that said they changed. A server still starting is waited for briefly, once (see
    /// [`crate::STARTING_WAIT`]); its tools join when it is ready.
    pub async fn tools(&self, declaring: &Declaring<'_>) -> Vec<Arc<dyn Tool>> {
        let servers = self.servers();
        let lists = tools_of(&servers, true).await;
        let key: Vec<(usize, u64)> =
            servers.iter().map(|server| (Arc::as_ptr(server) as usize, server.generation())).collect();
        let tools = {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if cache.key != key || cache.tools.is_empty() {
                let tools = named(&servers, &lists)
                    .into_iter()
                    .map(|(server, tool, name)| Arc::new(McpTool::new(name, server.clone(), tool)))
                    .collect();
                *cache = ToolCache { key, tools };
            }
            cache.tools.clone()
        };
        let resources: Vec<Arc<Server>> = servers.iter().filter(|server| server.offers_resources()).cloned().collect();
        self.declare(tools, resource_tools(resources), declaring)
    }

    /// Starts every server not started yet and waits until each is ready or has failed.
    pub async fn start(&self) {
        tools_of(&self.servers(), false).await;
    }

    /// Of `tools` (the servers' offered ones, in order) and the resource tools (for
    /// `resources`, the servers in force that offer them), those to declare, in the session's
    /// order, with `tool_search` over the deferred rest. The resource tools count as their
    /// servers' tools: deferred when every one of those servers' tools is.
    fn declare(
        &self,
        mut tools: Vec<Arc<McpTool>>,
        mut resources: Vec<(Arc<dyn Tool>, ResourceServers)>,
        declaring: &Declaring<'_>,
    ) -> Vec<Arc<dyn Tool>> {
        tools.retain(|tool| (declaring.offers)(tool.name()));
        resources.retain(|(tool, _)| (declaring.offers)(tool.name()));
        let total: u64 = tools.iter().map(|tool| tool.tokens()).sum();
        let past = declaring.defer_above.is_some_and(|limit| total > limit);
        let server_deferred = |exposure: Option<Exposure>| match exposure {
            Some(Exposure::Direct) => false,
            Some(Exposure::Deferred) => true,
            None => past,
        };
        let deferred = |tool: &McpTool| server_deferred(tool.exposure());
        let resources_deferred =
            |servers: &ResourceServers| servers.0.iter().all(|server| server_deferred(server.config.exposure));
        let mut candidates: Vec<Candidate> =
            tools.iter().map(|tool| Candidate { name: tool.name(), deferred: deferred(tool) }).collect();
        candidates.extend(
            resources
                .iter()
                .map(|(tool, servers)| Candidate { name: tool.name(), deferred: resources_deferred(servers) }),
        );
        let names = self.declared.declare(&candidates, TOOL_SEARCH);
        let mut catalogue: Vec<Entry> = tools
            .iter()
            .filter(|tool| deferred(tool))
            .map(|tool| Entry {
                name: tool.name().to_string(),
                server: tool.server().to_string(),
                tool: tool.tool().to_string(),
                description: tool.description().to_string(),
            })
            .collect();
        catalogue.extend(resources.iter().filter(|(_, servers)| resources_deferred(servers)).map(|(tool, servers)| {
            Entry {
                name: tool.name().to_string(),
                server: servers.names(),
                tool: tool.name().to_string(),
                description: tool.spec().description,
            }
        }));
        let mut search = (!catalogue.is_empty()).then(|| ToolSearch::new(catalogue, self.declared.clone()));
        names
            .iter()
            .filter_map(|name| match name.as_str() {
                TOOL_SEARCH => search.take().map(|search| Arc::new(search) as Arc<dyn Tool>),
                name => {
                    tools.iter().find(|tool| tool.name() == name).map(|tool| tool.clone() as Arc<dyn Tool>).or_else(
                        || resources.iter().find(|(tool, _)| tool.name() == name).map(|(tool, _)| tool.clone()),
                    )
                }
            })
            .collect()
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
                logged_in: server.token_file().is_some_and(|file| file.exists()),
                protocol: server.protocol(),
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

/// The resource tools over `servers` (those in force that offer resources), if there are any.
fn resource_tools(servers: Vec<Arc<Server>>) -> Vec<(Arc<dyn Tool>, ResourceServers)> {
    if servers.is_empty() {
        return Vec::new();
    }
    let servers = ResourceServers(servers.into());
    vec![
        (Arc::new(ListResources(servers.clone())) as Arc<dyn Tool>, servers.clone()),
        (Arc::new(ListResourceTemplates(servers.clone())) as Arc<dyn Tool>, servers.clone()),
        (Arc::new(ReadResource(servers.clone())) as Arc<dyn Tool>, servers),
    ]
}

/// The tools of each server, in order, asked of all at once. When `brief`, a server that is
/// starting is waited for only as its [`Server::patience`] says; the start goes on in the
/// background, and until it ends the server offers nothing.
async fn tools_of(servers: &[Arc<Server>], brief: bool) -> Vec<Arc<[ServerTool]>> {
    let asked: Vec<_> = servers
        .iter()
        .map(|server| {
            let patience = if brief { server.patience() } else { None };
            let server = server.clone();
            // Spawned, not joined in a set: a start outlives the request that began it.
            (patience, tokio::spawn(async move { server.tools().await }))
        })
        .collect();
    let asked_at = Instant::now();
    let mut lists: Vec<Arc<[ServerTool]>> = Vec::with_capacity(servers.len());
    for (patience, answer) in asked {
        let answer = match patience {
            None => Ok(answer.await),
            Some(wait) => tokio::time::timeout_at(asked_at + wait, answer).await,
        };
        lists.push(match answer {
            Ok(Ok(tools)) => tools,
            Ok(Err(err)) => {
                tracing::error!("starting an MCP server failed: {err}");
                Arc::from([])
            }
            Err(_) => Arc::from([]),
        });
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
