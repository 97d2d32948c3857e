//! The harness and MCP servers: a session's own servers (what ACP's `session/new` gives) join the
//! configured ones for that session only, shadowing one of the same name; listing and shutdown.
//! Real servers: tests/mcp/test-server.mjs on the official SDK, and the scripted model server.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use reins_ai::Content;
use reins_harness::{ApprovalRequest, Approver, Harness, HarnessOptions, LiveSettings, Settings, Verdict};
use reins_mcp::{ServerConfig, ServerState, Transport};
use reins_tools::FsWorkspace;
use scripted_llm::{Reply, ScriptedServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let output = std::process::Command::new("bash").arg(repo().join("tests/mcp/install.sh")).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
    })
}

/// The test server under `name`, as a client would give it.
fn test_server(name: &str) -> ServerConfig {
    let script = repo().join("tests/mcp/test-server.mjs").display().to_string();
    let mut config = ServerConfig::stdio(name, "node", vec![script, "stdio".into()]);
    if let Transport::Stdio { env, .. } = &mut config.transport {
        env.push(("MCP_NODE_MODULES".into(), prefix().join("node_modules").display().to_string()));
    }
    config.origin = "session/new".into();
    config
}

struct Yes;

#[async_trait]
impl Approver for Yes {
    async fn decide(&self, _: ApprovalRequest<'_>, _: &CancellationToken) -> Verdict {
        Verdict::Accept { changed: None, allow_for_session: false }
    }
}

fn harness(
    dir: &Path,
    model: &ScriptedServer,
    configured: Vec<ServerConfig>,
    warnings: Arc<Mutex<Vec<String>>>,
) -> Arc<Harness> {
    let home = dir.join("home").display().to_string();
    let url = model.base_url();
    let mut settings = Settings::from_env(|name| match name {
        "REINS_HOME" => Some(home.clone()),
        "OPENAI_BASE_URL" => Some(url.clone()),
        "REINS_MODEL" => Some("scripted".into()),
        _ => None,
    });
    settings.mcp_servers = configured;
    // The first request has the servers in it however loaded the machine.
    settings.mcp_startup_wait = std::time::Duration::from_secs(60);
    Harness::new(HarnessOptions {
        settings: LiveSettings::new(settings),
        workspace: Arc::new(FsWorkspace::new(vec![dir.to_path_buf()]).unwrap()),
        provider: None,
        approver: Arc::new(Yes),
        diagnostics: None,
        events: Arc::new(|_| {}),
        date: "2026-12-01".into(),
        persist: false,
        warn: Arc::new(move |message: &str| warnings.lock().unwrap().push(message.to_string())),
    })
}

fn offered(model: &ScriptedServer, request: usize) -> Vec<String> {
    let body = &model.chat_requests()[request].body;
    let mut names: Vec<String> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
        .collect();
    names.retain(|name| name.starts_with("mcp__") && name.ends_with("__echo"));
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_own_servers_join_the_configured_ones_for_that_session_only() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedServer::start(vec![
        Reply::tool_call("c1", "mcp__mine__echo", json!({"text": "own"})),
        Reply::text("ok"),
        Reply::text("ok"),
    ])
    .await;
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let harness = harness(dir.path(), &model, vec![test_server("shared"), test_server("docs")], warnings.clone());

    let acp = harness.new_session(None, None).unwrap();
    let mut shadow = test_server("docs");
    shadow.disabled_tools = vec!["echo".into()];
    harness.set_session_servers(&acp, vec![test_server("mine"), shadow]).unwrap();
    let outcome = harness.send(&acp, vec![Content::text("use your servers")]).unwrap().done.await.unwrap();
    assert_eq!(outcome.reason, reins_agent::TurnEndReason::FinalAnswer);
    assert_eq!(
        offered(&model, 0),
        ["mcp__shared__echo", "mcp__mine__echo"],
        "the session's docs shadows the configured one"
    );
    let messages = model.chat_requests()[1].body["messages"].to_string();
    assert!(messages.contains("echo: own"), "{messages}");

    let other = harness.new_session(None, None).unwrap();
    harness.send(&other, vec![Content::text("hello")]).unwrap().done.await.unwrap();
    assert_eq!(
        offered(&model, 2),
        ["mcp__shared__echo", "mcp__docs__echo"],
        "another session sees the configured ones"
    );

    let listed = harness.mcp_servers(Some(&acp)).await.unwrap();
    let states: Vec<(String, String, bool)> =
        listed.iter().map(|s| (s.name.clone(), s.origin.clone(), s.state == ServerState::Ready)).collect();
    assert_eq!(
        states,
        [
            ("shared".to_string(), "session/new".to_string(), true),
            ("mine".to_string(), "session/new".to_string(), true),
            ("docs".to_string(), "session/new".to_string(), true)
        ]
    );
    assert!(harness.mcp_servers(Some("no-such-session")).await.is_err());

    harness.shutdown().await;
    let after = harness.mcp_servers(Some(&acp)).await.unwrap();
    assert!(after.iter().all(|s| s.state == ServerState::Stopped), "{after:?}");
    assert!(warnings.lock().unwrap().is_empty(), "{:?}", warnings.lock().unwrap());
}
