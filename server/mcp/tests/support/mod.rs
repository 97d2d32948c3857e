//! Real MCP servers for the tests: the reference servers `@modelcontextprotocol/server-everything`,
//! `server-filesystem` and `server-memory`, `tests/mcp/test-server.mjs` (on the same official
//! SDK), and the Python reference servers `mcp-server-git` and `mcp-server-time`, installed with
//! npm and pip by `tests/mcp/install.sh` on first use.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reins_agent::{Tool, ToolContext, ToolError, ToolOutput};
use reins_ai::Content;
use reins_mcp::{Notice, Options, ServerConfig, Servers, SessionServers, Transport};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where install.sh put the npm packages.
pub fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let output = std::process::Command::new("bash")
            .arg(repo_root().join("tests/mcp/install.sh"))
            .output()
            .expect("run tests/mcp/install.sh");
        assert!(output.status.success(), "tests/mcp/install.sh failed: {}", String::from_utf8_lossy(&output.stderr));
        PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
    })
}

pub fn everything_js() -> PathBuf {
    prefix().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// The reference server over stdio.
pub fn everything(name: &str) -> ServerConfig {
    ServerConfig::stdio(name, "node", vec![everything_js().display().to_string(), "stdio".into()])
}

/// The reference filesystem server over stdio, allowed into `root`.
pub fn filesystem(name: &str, root: &Path) -> ServerConfig {
    let js = prefix().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    ServerConfig::stdio(name, "node", vec![js.display().to_string(), root.display().to_string()])
}

/// The reference knowledge-graph server over stdio, keeping its graph in `file`.
pub fn memory(name: &str, file: &Path) -> ServerConfig {
    let js = prefix().join("node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    let mut config = ServerConfig::stdio(name, "node", vec![js.display().to_string()]);
    set_env(&mut config, &[("MEMORY_FILE_PATH", file.display().to_string())]);
    config
}

/// A Python reference server (`mcp-server-git`, `mcp-server-time`) over stdio, with `args`.
/// Importing its SDK takes seconds on a loaded machine, so it has a minute to start.
pub fn python_server(name: &str, program: &str, args: &[&str]) -> ServerConfig {
    let program = prefix().join("python/bin").join(program);
    let mut config =
        ServerConfig::stdio(name, program.display().to_string(), args.iter().map(|arg| arg.to_string()).collect());
    config.startup_timeout = Duration::from_secs(60);
    config
}

/// The test server over stdio; cancellations it sees are appended to `record`.
pub fn test_server(name: &str, record: &Path) -> ServerConfig {
    let mut config = ServerConfig::stdio(
        name,
        "node",
        vec![repo_root().join("tests/mcp/test-server.mjs").display().to_string(), "stdio".into()],
    );
    set_env(&mut config, &test_env(record));
    config
}

/// What the test server needs from its config: where the SDK is, where to record.
pub fn test_env(record: &Path) -> [(&'static str, String); 2] {
    [
        ("MCP_NODE_MODULES", prefix().join("node_modules").display().to_string()),
        ("RECORD_FILE", record.display().to_string()),
    ]
}

pub fn set_env(config: &mut ServerConfig, vars: &[(&str, impl AsRef<str>)]) {
    if let Transport::Stdio { env, .. } = &mut config.transport {
        env.extend(vars.iter().map(|(name, value)| (name.to_string(), value.as_ref().to_string())));
    }
}

/// What the servers were started with, and the warnings they gave.
pub struct Harness {
    pub notices: Arc<Mutex<Vec<Notice>>>,
}

impl Harness {
    pub fn new() -> Self {
        Self { notices: Arc::default() }
    }

    /// reins's environment as the harness hands it over (provider keys taken out): PATH (to find
    /// node), and secrets whose names do not look secret, which no server may see.
    pub fn options(&self) -> Options {
        let notices = self.notices.clone();
        Options {
            base_env: vec![
                ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
                ("DATABASE_URL".into(), "postgres://app:hunter2@db/app".into()),
                ("STRIPE_SK".into(), "sk_live_hunter2".into()),
            ],
            roots: vec![std::env::temp_dir()],
            notify: Arc::new(move |notice| notices.lock().unwrap().push(notice)),
            // Each test asks for tools as a run would, and wants its servers in them.
            starting_wait: Duration::from_secs(60),
            ..Options::default()
        }
    }

    pub fn session(&self, configs: Vec<ServerConfig>) -> SessionServers {
        SessionServers::global(Servers::new(configs, self.options()))
    }

    pub fn notices(&self) -> Vec<String> {
        self.notices.lock().unwrap().iter().map(|notice| notice.message.clone()).collect()
    }
}

pub fn names(tools: &[Arc<dyn Tool>]) -> Vec<String> {
    tools.iter().map(|tool| tool.name().to_string()).collect()
}

pub fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|tool| tool.name() == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", names(tools)))
}

/// Runs a tool as the agent would: prepare, then execute.
pub async fn call(tool: &Arc<dyn Tool>, arguments: Value) -> Result<ToolOutput, ToolError> {
    call_with(tool, arguments, CancellationToken::new(), &|_| {}).await
}

pub async fn call_with(
    tool: &Arc<dyn Tool>,
    arguments: Value,
    cancel: CancellationToken,
    on_update: &(dyn Fn(&str) + Send + Sync),
) -> Result<ToolOutput, ToolError> {
    let prepared = tool.prepare(&arguments).await?;
    let cx = ToolContext { tool_call_id: "call_1", cancel, on_update };
    tool.execute(prepared, None, cx).await
}

/// The text blocks of a result, joined.
pub fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Waits until `check` holds, for up to five seconds.
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..100 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Whether a process of this id exists (and is not a zombie).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.split(") ").nth(1).is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
