//! Servers as the agent meets them: real MCP servers over stdio and streamable HTTP, their tools
//! called through the agent's `Tool` trait, and what happens when servers misbehave.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reins_ai::Content;
use reins_mcp::{Declared, Declaring, ServerConfig, ServerState, Servers, SessionServers, Transport};
use serde_json::json;
use support::*;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_over_stdio() {
    let harness = Harness::new();
    let session = harness.session(vec![everything("everything")]);
    let tools = session.tools(&Declaring::default()).await;
    for name in ["mcp__everything__echo", "mcp__everything__get-sum", "mcp__everything__get-tiny-image"] {
        assert!(names(&tools).contains(&name.to_string()), "{name} in {:?}", names(&tools));
    }
    let echo = find(&tools, "mcp__everything__echo");
    assert_eq!(echo.spec().parameters["properties"]["message"]["type"], "string");

    let output = call(&echo, json!({"message": "hello"})).await.unwrap();
    assert_eq!(text(&output), "Echo: hello");
    assert_eq!(output.details, Some(json!({"mcp": {"server": "everything", "tool": "echo"}})));

    let sum = call(&find(&tools, "mcp__everything__get-sum"), json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(text(&sum), "The sum of 2 and 3 is 5.");

    let image = call(&find(&tools, "mcp__everything__get-tiny-image"), json!({})).await.unwrap();
    assert!(
        image.content.iter().any(
            |block| matches!(block, Content::Image { mime_type, data } if mime_type == "image/png" && !data.is_empty())
        ),
        "{:?}",
        image.content
    );

    let structured =
        call(&find(&tools, "mcp__everything__get-structured-content"), json!({"location": "New York"})).await.unwrap();
    assert!(text(&structured).contains("\"temperature\""), "{}", text(&structured));

    // Arguments that do not match the schema reach the model as an error result.
    let refused = call(&find(&tools, "mcp__everything__get-sum"), json!({"a": "two"})).await.unwrap_err();
    assert!(refused.0.to_lowercase().contains("invalid"), "{refused}");

    let status = session.status();
    assert_eq!((status[0].name.as_str(), &status[0].state), ("everything", &ServerState::Ready));
    assert!(status[0].tools.iter().any(|tool| tool.name == "mcp__everything__echo" && tool.tool == "echo"));
    assert!(harness.notices().is_empty(), "{:?}", harness.notices());
    session.own().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filesystem_server_says_each_thing_once_and_no_base64() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "alpha line\n").unwrap();
    let binary: Vec<u8> = (0..300 * 1024).map(|i: u32| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(root.join("b.bin"), binary).unwrap();
    std::fs::write(root.join("c.png"), b"\x89PNG\r\n\x1a\n0000").unwrap();
    let harness = Harness::new();
    let session = harness.session(vec![filesystem("fs", &root)]);
    let tools = session.tools(&Declaring::default()).await;
    let path = |name: &str| root.join(name).display().to_string();

    // Its structuredContent repeats the text: the model reads the file once.
    let output = call(&find(&tools, "mcp__fs__read_text_file"), json!({"path": path("a.txt")})).await.unwrap();
    assert_eq!(output.content, [Content::text("alpha line\n")]);

    // A binary file is described, never sent as base64 text.
    let output = call(&find(&tools, "mcp__fs__read_media_file"), json!({"path": path("b.bin")})).await.unwrap();
    assert_eq!(output.content.len(), 1, "{:?}", text(&output));
    assert!(text(&output).ends_with("300 KiB of binary data not shown to the model]"), "{}", text(&output));

    // An image is an image part, and nothing else.
    let output = call(&find(&tools, "mcp__fs__read_media_file"), json!({"path": path("c.png")})).await.unwrap();
    assert_eq!(output.content, [Content::Image { data: "iVBORw0KGgowMDAw".into(), mime_type: "image/png".into() }]);
    session.own().stop().await;
}

/// The protocol version a server agreed on, once it is up.
async fn negotiated(config: ServerConfig) -> Option<String> {
    let harness = Harness::new();
    let session = harness.session(vec![config]);
    session.start().await;
    let status = session.status();
    assert_eq!(status[0].state, ServerState::Ready, "{status:?}");
    session.own().stop().await;
    status[0].protocol.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_protocol_is_negotiated_and_older_servers_keep_theirs() {
    let record = tempfile::NamedTempFile::new().unwrap();
    // A server of 2025-03-26 refuses `server/discover` and answers `initialize` with its own.
    let mut old = test_server("old", record.path());
    set_env(&mut old, &[("PROTOCOL_VERSION", "2025-03-26")]);
    // The TypeScript SDK's newest has the handshake; the Python SDK speaks 2026-07-28.
    let checks = [
        (old, "2025-03-26"),
        (test_server("ts", record.path()), "2025-11-25"),
        (python_server("time", "mcp-server-time", &[]), "2026-07-28"),
    ];
    for (config, expected) in checks {
        let name = config.name.clone();
        assert_eq!(negotiated(config).await.as_deref(), Some(expected), "{name}");
    }
    // Over streamable HTTP, where an older server refuses `server/discover` with an HTTP 400.
    let (_server, url) = http_test_server(&[]).await;
    assert_eq!(negotiated(ServerConfig::http("web", url)).await.as_deref(), Some("2025-11-25"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_servers_and_the_memory_server_serve_their_tools() {
    let harness = Harness::new();
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git").args(args).current_dir(repo.path()).output().unwrap();
        assert!(status.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&status.stderr));
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.path().join("new.txt"), "new\n").unwrap();
    let graph = tempfile::tempdir().unwrap();
    let repo_path = repo.path().display().to_string();
    let session = harness.session(vec![
        python_server("git", "mcp-server-git", &["--repository", &repo_path]),
        python_server("time", "mcp-server-time", &["--local-timezone", "UTC"]),
        memory("memory", &graph.path().join("memory.jsonl")),
    ]);
    // Python starts slowly on a loaded machine: wait for them all rather than the first request's while.
    session.start().await;
    let states: Vec<_> = session.status().into_iter().map(|status| (status.name, status.state)).collect();
    assert!(states.iter().all(|(_, state)| *state == ServerState::Ready), "{states:?}");
    let tools = session.tools(&Declaring::default()).await;

    let status = call(&find(&tools, "mcp__git__git_status"), json!({"repo_path": repo_path})).await.unwrap();
    assert!(text(&status).contains("new.txt"), "{}", text(&status));

    let converted = call(
        &find(&tools, "mcp__time__convert_time"),
        json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    )
    .await
    .unwrap();
    assert!(text(&converted).contains("Asia/Tokyo") && text(&converted).contains("21:00"), "{}", text(&converted));

    let entities = json!({"entities": [{"name": "reins", "entityType": "project", "observations": ["speaks MCP"]}]});
    call(&find(&tools, "mcp__memory__create_entities"), entities).await.unwrap();
    let graph = call(&find(&tools, "mcp__memory__read_graph"), json!({})).await.unwrap();
    assert!(text(&graph).contains("speaks MCP"), "{}", text(&graph));
    assert!(harness.notices().is_empty(), "{:?}", harness.notices());
    session.own().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_over_streamable_http() {
    let port = free_port();
    let mut server = tokio::process::Command::new("node")
        .arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_for_port(port).await;

    let harness = Harness::new();
    let servers =
        Servers::new(vec![ServerConfig::http("web", format!("http://127.0.0.1:{port}/mcp"))], harness.options());
    let session = SessionServers::global(servers.clone());
    let tools = session.tools(&Declaring::default()).await;
    let output = call(&find(&tools, "mcp__web__echo"), json!({"message": "over http"})).await.unwrap();
    assert_eq!(text(&output), "Echo: over http");
    assert_eq!(session.status()[0].state, ServerState::Ready);
    servers.stop().await;
    server.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_headers_and_the_bearer_token_are_sent() {
    let port = free_port();
    let mut server = tokio::process::Command::new("node")
        .arg(repo_root().join("tests/mcp/test-server.mjs"))
        .arg("http")
        .env("PORT", port.to_string())
        .env("MCP_NODE_MODULES", prefix().join("node_modules"))
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_for_port(port).await;

    let mut config = ServerConfig::http("t", format!("http://127.0.0.1:{port}/mcp"));
    if let Transport::Http { bearer_token, headers, .. } = &mut config.transport {
        *bearer_token = Some(reins_ai::ApiKey::new("tok-123"));
        headers.push(("X-Team".into(), "core".into()));
    }
    let harness = Harness::new();
    let session = harness.session(vec![config]);
    let tools = session.tools(&Declaring::default()).await;
    let output = call(&find(&tools, "mcp__t__headers"), json!({})).await.unwrap();
    let headers: serde_json::Value = serde_json::from_str(&text(&output)).unwrap();
    assert_eq!((headers["authorization"].as_str(), headers["x-team"].as_str()), (Some("Bearer tok-123"), Some("core")));
    session.own().stop().await;
    server.kill().await.unwrap();
}

/// The test server over streamable HTTP, with `env`; killed when dropped.
async fn http_test_server(env: &[(&str, &str)]) -> (tokio::process::Child, String) {
    let port = free_port();
    let server = tokio::process::Command::new("node")
        .arg(repo_root().join("tests/mcp/test-server.mjs"))
        .arg("http")
        .env("PORT", port.to_string())
        .env("MCP_NODE_MODULES", prefix().join("node_modules"))
        .envs(env.iter().copied())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_for_port(port).await;
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_error_statuses_are_told_with_the_start_of_the_body() {
    let harness = Harness::new();
    let (_server, url) = http_test_server(&[("FAIL_INITIALIZE", "1")]).await;
    let session = harness.session(vec![ServerConfig::http("broken", url.as_str())]);
    assert!(session.tools(&Declaring::default()).await.is_empty());
    let ServerState::Failed(reason) = &session.status()[0].state else { panic!("{:?}", session.status()) };
    assert_eq!(
        *reason,
        format!(r#"cannot connect to {url}: HTTP 500 Internal Server Error: {{"error":"database is down"}}"#)
    );

    // On a call, the model reads it, and the server is still there for the next call.
    let (_server, url) = http_test_server(&[]).await;
    let session = harness.session(vec![ServerConfig::http("t", url)]);
    let tools = session.tools(&Declaring::default()).await;
    let error = call(&find(&tools, "mcp__t__http500"), json!({})).await.unwrap_err();
    assert_eq!(
        error.0,
        r#"the MCP server `t` answered the call with HTTP 500 Internal Server Error: {"error":"database is down"}"#
    );
    assert_eq!(super_call(&tools, "mcp__t__echo", json!({"text": "still"})).await, "echo: still");
    session.own().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_gets_only_the_environment_it_is_given() {
    let harness = Harness::new();
    let record = tempfile::NamedTempFile::new().unwrap();
    let mut config = test_server("t", record.path());
    set_env(&mut config, &[("TOKEN", "from-config")]);
    let session = harness.session(vec![config]);
    let tools = session.tools(&Declaring::default()).await;
    let output = call(&find(&tools, "mcp__t__env"), json!({})).await.unwrap();
    let env: serde_json::Value = serde_json::from_str(&text(&output)).unwrap();
    let mut names: Vec<&str> = env.as_object().unwrap().keys().map(String::as_str).collect();
    names.sort();
    // PATH is the only ordinary variable of the base environment; the rest is the server's own.
    // DATABASE_URL and STRIPE_SK hold secrets and are not passed.
    assert_eq!(names, ["MCP_NODE_MODULES", "PATH", "RECORD_FILE", "TOKEN"]);
    assert!(!env.to_string().contains("hunter2"), "{env}");
    assert_eq!(env["TOKEN"], "from-config");
    session.own().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_answers_junk_on_stdout_and_is_error() {
    let harness = Harness::new();
    let record = tempfile::NamedTempFile::new().unwrap();
    let session = harness.session(vec![test_server("t", record.path())]);
    let tools = session.tools(&Declaring::default()).await;

    // A stray line on stdout does not end the connection.
    let output = call(&find(&tools, "mcp__t__junk"), json!({})).await.unwrap();
    assert_eq!(text(&output), "after the junk");
    let output = call(&find(&tools, "mcp__t__echo"), json!({"text": "still here"})).await.unwrap();
    assert_eq!(text(&output), "echo: still here");

    // Empty content is valid, though rmcp's typed result refuses it.
    let output = call(&find(&tools, "mcp__t__empty"), json!({})).await.unwrap();
    assert_eq!(text(&output), "(the tool returned no content)");

    let error = call(&find(&tools, "mcp__t__fail"), json!({})).await.unwrap_err();
    assert_eq!(error.0, "it went wrong on purpose");

    // Arguments are checked against the tool's inputSchema before the server sees them.
    let error = call(&find(&tools, "mcp__t__echo"), json!({})).await.unwrap_err();
    assert_eq!(error.0, r#"invalid arguments: "text" is a required property"#);
    let error = call(&find(&tools, "mcp__t__echo"), json!({"text": 5})).await.unwrap_err();
    assert_eq!(error.0, r#"invalid arguments: text: 5 is not of type "string""#);

    let error = call(&find(&tools, "mcp__t__echo"), json!([1, 2])).await.unwrap_err();
    assert_eq!(error.0, "invalid arguments: expected a JSON object matching the tool's schema, found an array");
    session.own().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_changed_refreshes_the_tools_for_the_next_turn() {
    let record = tempfile::NamedTempFile::new().unwrap();
    check_tools_list_changed(test_server("t", record.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_changed_over_http_refreshes_the_tools_for_the_next_turn() {
    // The server sends the notification on its own event stream, in no order with the answer.
    let (_server, url) = http_test_server(&[]).await;
    check_tools_list_changed(ServerConfig::http("t", url)).await;
}

async fn check_tools_list_changed(config: ServerConfig) {
    let harness = Harness::new();
    let session = harness.session(vec![config]);
    let before = session.tools(&Declaring::default()).await;
    assert!(!names(&before).contains(&"mcp__t__late".to_string()));
    // The same tools, the same objects, while nothing changes.
    let again = session.tools(&Declaring::default()).await;
    assert!(before.iter().zip(&again).all(|(a, b)| Arc::ptr_eq(a, b)));

    // The server announces the change before it answers: the very next list has the tool, every
    // time (rmcp handles the notification on a task of its own, which used to lose the race).
    for round in 0..30 {
        let name = format!("late{round}");
        call(&find(&before, "mcp__t__add_tool"), json!({"name": name})).await.unwrap();
        let after = session.tools(&Declaring::default()).await;
        assert!(names(&after).contains(&format!("mcp__t__{name}")), "round {round}: {:?}", names(&after));
    }
    session.own().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_mid_call_is_restarted_on_the_next_call_within_a_budget() {
    let harness = Harness::new();
    let record = tempfile::NamedTempFile::new().unwrap();
    let mut options = harness.options();
    options.max_restarts = 1;
    let session = SessionServers::global(Servers::new(vec![test_server("t", record.path())], options));
    let tools = session.tools(&Declaring::default()).await;

    let error = call(&find(&tools, "mcp__t__crash"), json!({})).await.unwrap_err();
    assert!(
        error.0.starts_with("the MCP server `t` stopped during the call (the server exited with status 7"),
        "{error}"
    );
    assert!(error.0.contains("crashing on purpose") && error.0.contains("restarted on the next call"), "{error}");

    // The next call starts it again.
    let output = call(&find(&tools, "mcp__t__echo"), json!({"text": "back"})).await.unwrap();
    assert_eq!(text(&output), "echo: back");
    assert_eq!(
        harness.notices(),
        [
            "MCP server `t` stopped: the server exited with status 7; its stderr ends with: test server on stdio | crashing on purpose; it will be restarted when next needed"
        ]
    );

    // Its one restart is used: after the next crash it stays down.
    call(&find(&tools, "mcp__t__crash"), json!({})).await.unwrap_err();
    let error = call(&find(&tools, "mcp__t__echo"), json!({"text": "again"})).await.unwrap_err();
    assert!(error.0.contains("is not available") && error.0.contains("gave up after 1 restarts"), "{error}");
    assert!(matches!(&session.status()[0].state, ServerState::Failed(reason) if reason.contains("gave up")));
    assert!(session.tools(&Declaring::default()).await.is_empty(), "a server given up offers no tools");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_tells_the_server() {
    let harness = Harness::new();
    let record = tempfile::NamedTempFile::new().unwrap();
    let session = harness.session(vec![test_server("t", record.path())]);
    let tools = session.tools(&Declaring::default()).await;
    let sleep = find(&tools, "mcp__t__sleep");

    let cancel = CancellationToken::new();
    let started = Instant::now();
    let call = {
        let (sleep, cancel) = (sleep.clone(), cancel.clone());
        tokio::spawn(async move { call_with(&sleep, json!({"seconds": 30}), cancel, &|_| {}).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.cancel();
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error.0, "cancelled");
    let path = record.path().to_path_buf();
    eventually("the server saw the cancellation", || {
        std::fs::read_to_string(&path).unwrap_or_default().starts_with("cancelled ")
    })
    .await;

    // A call whose future is dropped (the agent's timeout) is cancelled the same way.
    let _ = tokio::time::timeout(
        Duration::from_millis(300),
        call_with(&sleep, json!({"seconds": 30}), CancellationToken::new(), &|_| {}),
    )
    .await;
    eventually("the server saw the second cancellation", || {
        std::fs::read_to_string(&path).unwrap_or_default().lines().count() == 2
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));

    // The server is fine afterwards.
    let output = super_call(&tools, "mcp__t__echo", json!({"text": "ok"})).await;
    assert_eq!(output, "echo: ok");
    session.own().stop().await;
}

async fn super_call(tools: &[Arc<dyn reins_agent::Tool>], name: &str, arguments: serde_json::Value) -> String {
    text(&call(&find(tools, name), arguments).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_extends_a_calls_timeout_and_silence_ends_it() {
    let harness = Harness::new();
    let record = tempfile::NamedTempFile::new().unwrap();
    let mut reporting = everything("everything");
    reporting.tool_timeout = Duration::from_secs(1);
    let mut silent = test_server("t", record.path());
    silent.tool_timeout = Duration::from_secs(1);
    let session = harness.session(vec![reporting, silent]);
    let tools = session.tools(&Declaring::default()).await;
    // Three seconds in all, with progress every quarter of a second: never a second of silence.
    let long = find(&tools, "mcp__everything__trigger-long-running-operation");
    let output = call(&long, json!({"duration": 3, "steps": 12})).await.unwrap();
    assert!(text(&output).starts_with("Long running operation completed"), "{}", text(&output));
    // Three seconds without a word: stopped after one, and the server told.
    let started = Instant::now();
    let err = call(&find(&tools, "mcp__t__sleep"), json!({"seconds": 3})).await.unwrap_err();
    assert_eq!(err.0, "the tool `mcp__t__sleep` timed out after 1 s and was stopped");
    assert!(started.elapsed() < Duration::from_millis(2500), "{:?}", started.elapsed());
    session.own().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notifications_become_updates() {
    let harness = Harness::new();
    let session = harness.session(vec![everything("everything")]);
    let tools = session.tools(&Declaring::default()).await;
    let updates = Arc::new(Mutex::new(Vec::new()));
    let sink = updates.clone();
    let on_update = move |text: &str| sink.lock().unwrap().push(text.to_string());
    let output = call_with(
        &find(&tools, "mcp__everything__trigger-long-running-operation"),
        json!({"duration": 0.3, "steps": 3}),
        CancellationToken::new(),
        &on_update,
    )
    .await
    .unwrap();
    assert!(text(&output).starts_with("Long running operation completed"), "{}", text(&output));
    // The last one may lose the race with the answer; those before it arrive in order.
    let updates = updates.lock().unwrap().clone();
    assert!(updates.len() >= 2, "{updates:?}");
    assert_eq!(updates[..2], ["progress 1/3", "progress 2/3"]);
    session.own().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_cannot_start_are_named_with_the_reason_and_the_rest_goes_on() {
    let harness = Harness::new();
    let record = tempfile::NamedTempFile::new().unwrap();
    let slow = |name: &str| {
        let mut slow = ServerConfig::stdio(name, "sleep", vec!["30".into()]);
        slow.startup_timeout = Duration::from_secs(2);
        slow
    };
    let configs = vec![
        ServerConfig::stdio("missing", "reins-no-such-mcp-server", Vec::new()),
        slow("slow"),
        slow("slow2"),
        slow("slow3"),
        ServerConfig::stdio("dies", "sh", vec!["-c".into(), "echo 'config file not found' >&2; exit 3".into()]),
        ServerConfig::http("nobody", format!("http://127.0.0.1:{}/mcp", free_port())),
        test_server("good", record.path()),
    ];
    let started = Instant::now();
    let session = harness.session(configs);
    let tools = session.tools(&Declaring::default()).await;
    // Concurrently: one slow server's timeout is the whole wait, not three.
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(names(&tools).iter().all(|name| name.starts_with("mcp__good__")), "{:?}", names(&tools));

    let states: Vec<String> = session
        .status()
        .iter()
        .map(|status| match &status.state {
            ServerState::Failed(reason) => format!("{}: failed: {reason}", status.name),
            state => format!("{}: {state:?}", status.name),
        })
        .collect();
    let states = states.join("\n");
    assert!(
        states.contains(
            "missing: failed: cannot start `reins-no-such-mcp-server`: it was not found; is it installed and on PATH?"
        ),
        "{states}"
    );
    assert!(
        states.contains("slow: failed: it did not answer `initialize` within 2 s (startup_timeout_sec)"),
        "{states}"
    );
    assert!(
        states.contains("dies: failed: the server exited with status 3; its stderr ends with: config file not found"),
        "{states}"
    );
    assert!(states.contains("nobody: failed: cannot connect to http://127.0.0.1:"), "{states}");
    assert!(states.contains("good: Ready"), "{states}");
    let notices = harness.notices();
    assert_eq!(notices.len(), 6, "{notices:?}");
    assert!(notices.iter().any(|notice| notice.starts_with("MCP server `missing` could not be started: cannot start")));
    assert!(notices.iter().all(|notice| notice.ends_with("going on without its tools")), "{notices:?}");

    // A failed server is not retried every turn: no new warnings.
    session.tools(&Declaring::default()).await;
    assert_eq!(harness.notices().len(), 6);
    session.own().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_kills_the_whole_process_group_and_so_does_dropping() {
    let harness = Harness::new();
    let record = tempfile::NamedTempFile::new().unwrap();
    let script = repo_root().join("tests/mcp/test-server.mjs");
    // A shell that stays the parent: the server is its child, in the group reins made.
    let wrapped = |name: &str| {
        let mut config = ServerConfig::stdio(
            name,
            "sh",
            vec!["-c".into(), format!("node '{}' stdio; echo exited", script.display())],
        );
        set_env(&mut config, &test_env(record.path()));
        config
    };

    let servers = Servers::new(vec![wrapped("a")], harness.options());
    let session = SessionServers::global(servers.clone());
    let tools = session.tools(&Declaring::default()).await;
    let pid: i32 = super_call(&tools, "mcp__a__pid", json!({})).await.parse().unwrap();
    assert!(alive(pid));
    servers.stop().await;
    eventually("the stopped server's process is gone", || !alive(pid)).await;
    assert_eq!(session.status()[0].state, ServerState::Stopped);
    assert!(call(&find(&tools, "mcp__a__echo"), json!({"text": "x"})).await.unwrap_err().0.contains("was stopped"));

    let session = harness.session(vec![wrapped("b")]);
    let tools = session.tools(&Declaring::default()).await;
    let pid: i32 = super_call(&tools, "mcp__b__pid", json!({})).await.parse().unwrap();
    drop(tools);
    drop(session);
    eventually("the dropped server's process is gone", || !alive(pid)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_joins_its_own_servers_with_the_configured_ones() {
    let harness = Harness::new();
    let record = tempfile::NamedTempFile::new().unwrap();
    let global =
        Servers::new(vec![test_server("shared", record.path()), test_server("docs", record.path())], harness.options());
    let mut own_docs = everything("docs");
    own_docs.origin = "session/new".into();
    let own = Servers::new(vec![own_docs], harness.options());
    let session = SessionServers::new(global.clone(), own.clone(), Declared::unrecorded());
    let tools = names(&session.tools(&Declaring::default()).await);
    // The session's `docs` shadows the configured one.
    assert!(
        tools.contains(&"mcp__shared__echo".to_string()) && tools.contains(&"mcp__docs__get-sum".to_string()),
        "{tools:?}"
    );
    assert!(!tools.contains(&"mcp__docs__crash".to_string()), "{tools:?}");
    let origins: Vec<(String, String)> = session.status().into_iter().map(|s| (s.name, s.origin)).collect();
    assert_eq!(origins, [("shared".to_string(), String::new()), ("docs".to_string(), "session/new".to_string())]);

    // Another session of the same configured servers shares their processes.
    let other = SessionServers::global(global.clone());
    let shared = find(&other.tools(&Declaring::default()).await, "mcp__shared__pid");
    let mine = find(&session.tools(&Declaring::default()).await, "mcp__shared__pid");
    assert_eq!(text(&call(&shared, json!({})).await.unwrap()), text(&call(&mine, json!({})).await.unwrap()));

    // Ending the session stops its own servers only.
    session.own().stop().await;
    assert_eq!(
        SessionServers::new(global.clone(), own, Declared::unrecorded()).status()[1].state,
        ServerState::Stopped
    );
    assert_eq!(other.status().iter().filter(|s| s.state == ServerState::Ready).count(), 2);
    global.stop().await;
}

async fn wait_for_port(port: u16) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing listens on port {port}");
}
