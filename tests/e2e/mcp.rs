//! End-to-end tests of MCP servers in `reins run`: the real binary, the scripted model calling a
//! tool of the reference server `@modelcontextprotocol/server-everything` (installed with npm by
//! tests/mcp/install.sh) over stdio and streamable HTTP, and the ways servers fail.

mod support;

use std::path::Path;
use std::time::Duration;

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{CANARY_KEY, Run, reins_home, reins_run, reins_run_in_terminal, transcript, workspace};
use tokio::io::{AsyncBufReadExt, BufReader};

fn everything_js() -> String {
    support::mcp_prefix()
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string()
}

/// A `[mcp_servers.everything]` table for the reference server over stdio, with `extra` lines.
fn everything_stdio(extra: &str) -> String {
    format!("[mcp_servers.everything]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\n{extra}\n", everything_js())
}

/// Writes the user's config.toml of the test workspace.
fn config(dir: &Path, text: &str) {
    let home = reins_home(dir);
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), text).unwrap();
}

/// A config with server `name` run by `sh -c script`, its tools approved.
fn shell_server(dir: &Path, name: &str, script: &str, extra: &str) {
    config(
        dir,
        &format!(
            "[mcp_servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n{extra}\n[approval]\n\"mcp__*\" = \"auto\"\n"
        ),
    );
}

/// Runs `reins run --json PROMPT`, calling `at_start` once the first tool call has started and
/// a moment has passed; answers what reins printed on stderr and its exit code.
async fn run_acting_mid_call(
    server: &ScriptedServer,
    dir: &Path,
    prompt: &str,
    at_start: impl FnOnce(u32),
) -> (Option<i32>, String) {
    let mut child = support::reins_command(Some(&server.base_url()), dir, &["run", "--json", prompt]).spawn().unwrap();
    let reins = child.id().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut at_start = Some(at_start);
    while let Ok(Some(line)) = lines.next_line().await {
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "tool_execution_start"
            && let Some(act) = at_start.take()
        {
            tokio::time::sleep(Duration::from_millis(300)).await;
            act(reins);
        }
    }
    assert!(at_start.is_none(), "no call started");
    let output = child.wait_with_output().await.unwrap();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

fn kill(signal: &str, pid: &str) {
    let status = std::process::Command::new("kill").args([signal, pid]).status().unwrap();
    assert!(status.success(), "kill {signal} {pid}");
}

/// The reference server over streamable HTTP on a free port; killed when dropped.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
}

impl HttpServer {
    async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = tokio::process::Command::new("node")
            .args([everything_js().as_str(), "streamableHttp"])
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Self { child, url: format!("http://127.0.0.1:{port}/mcp") };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("server-everything did not listen on {port}");
    }
}

/// The tool message the model got for `call_id`, from the requests it was sent in.
fn tool_result(server: &ScriptedServer, call_id: &str) -> String {
    let requests = server.chat_requests();
    let last = requests.last().expect("the model was called");
    let messages = last.body["messages"].as_array().unwrap();
    let message = messages.iter().find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id);
    message
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .unwrap_or_else(|| panic!("no result for {call_id}"))
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// A model that calls `tool` with `arguments`, then answers.
async fn model_calling(tool: &str, arguments: Value) -> ScriptedServer {
    ScriptedServer::start(vec![Reply::tool_call("call_1", tool, arguments), Reply::text("Done.")]).await
}

/// A run and its MCP tool call as the model saw it, over either transport: the tool is offered
/// with its description and schema, the call lands, its result reaches the model, the session
/// records it, and continuing the session sends it to the model again as it was.
async fn check_a_call_and_its_replay(config_text: &str) {
    let dir = workspace(&[]);
    config(dir.path(), &format!("{config_text}\n[approval]\n\"mcp__everything__*\" = \"auto\"\n"));
    let server = model_calling("mcp__everything__echo", json!({"message": "hello over MCP"})).await;
    let run = reins_run(&server, dir.path(), &["--json", "say hello through the server"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stderr, "", "a working server makes no noise");

    let requests = server.chat_requests();
    let echo = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == "mcp__everything__echo")
        .expect("the tool was offered")
        .clone();
    assert_eq!(echo["function"]["description"], "Echoes back the input string");
    assert_eq!(echo["function"]["parameters"]["properties"]["message"]["type"], "string");
    assert!(tool_names(&requests[0].body).contains(&"read".to_string()), "the built-in tools are still there");
    assert_eq!(tool_result(&server, "call_1"), "Echo: hello over MCP");
    let end = run.events().into_iter().find(|event| event["type"] == "tool_execution_end").unwrap();
    assert_eq!((end["toolName"].as_str(), end["isError"].as_bool()), (Some("mcp__everything__echo"), Some(false)));

    let sessions: Vec<String> = support::files_containing(&reins_home(dir.path()), "Echo: hello over MCP");
    assert_eq!(sessions.len(), 1, "the session file records the result: {sessions:?}");

    // Continuing the session replays the call and its result to the model exactly.
    let again = ScriptedServer::start(vec![Reply::text("Still here.")]).await;
    let run = reins_run(&again, dir.path(), &["--continue", "and again"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let first = requests[1].body["messages"].as_array().unwrap().clone();
    let replayed = again.chat_requests()[0].body["messages"].as_array().unwrap().clone();
    assert_eq!(replayed[1..4], first[1..4], "user, call and result as they were sent");
    assert_eq!(
        transcript(&again.chat_requests()[0].body).lines().nth(3),
        Some("tool: \"Echo: hello over MCP\" [for call_1]")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_of_the_reference_server_over_stdio() {
    check_a_call_and_its_replay(&everything_stdio("")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_of_the_reference_server_over_streamable_http() {
    let http = HttpServer::start().await;
    check_a_call_and_its_replay(&format!("[mcp_servers.everything]\nurl = \"{}\"\n", http.url)).await;
    drop(http.child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_and_structured_content_reach_the_model() {
    let dir = workspace(&[]);
    config(dir.path(), &format!("{}\n[approval]\n\"mcp__*\" = \"auto\"\n", everything_stdio("")));
    let server = ScriptedServer::start(vec![
        Reply::tool_call("call_1", "mcp__everything__get-tiny-image", json!({})).with_tool_call(
            "call_2",
            "mcp__everything__get-structured-content",
            json!({"location": "Chicago"}),
        ),
        Reply::text("Seen."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["look"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let last = server.chat_requests().last().unwrap().body.clone();
    let images = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|message| message["content"].as_array().cloned().unwrap_or_default())
        .filter(|part| part["type"] == "image_url")
        .count();
    assert_eq!(images, 1, "the image follows the tool results: {last}");
    assert!(tool_result(&server, "call_2").contains("\"temperature\""), "{}", tool_result(&server, "call_2"));
    // The text blocks around the image are paragraphs of their own.
    assert!(
        tool_result(&server, "call_1").contains("requested:\n\nThe image above is"),
        "{}",
        tool_result(&server, "call_1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_approval_a_call_is_refused_and_the_model_is_told() {
    let dir = workspace(&[]);
    config(dir.path(), &everything_stdio(""));
    let server = model_calling("mcp__everything__echo", json!({"message": "may I?"})).await;
    let run = reins_run(&server, dir.path(), &["try it"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(
        tool_result(&server, "call_1"),
        "mcp__everything__echo needs the user's approval, which could not be asked (no terminal); the user can rerun with --yes"
    );

    // `--yes` approves it.
    let server = model_calling("mcp__everything__echo", json!({"message": "now?"})).await;
    let run = reins_run(&server, dir.path(), &["--yes", "try it"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(tool_result(&server, "call_1"), "Echo: now?");

    // A glob in the config denies it.
    config(dir.path(), &format!("{}\n[approval]\n\"mcp__everything__ech?\" = \"deny\"\n", everything_stdio("")));
    let server = model_calling("mcp__everything__echo", json!({"message": "denied"})).await;
    reins_run(&server, dir.path(), &["try it"]).await;
    assert_eq!(
        tool_result(&server, "call_1"),
        "the user's settings do not allow the `mcp__everything__echo` tool; do not try it again"
    );

    // `--yes` turns ask into auto, never deny into anything: for MCP tools and bash alike.
    config(
        dir.path(),
        &format!("{}\n[approval]\n\"mcp__everything__ech?\" = \"deny\"\nbash = \"deny\"\n", everything_stdio("")),
    );
    let server = ScriptedServer::start(vec![
        Reply::tool_call("call_1", "mcp__everything__echo", json!({"message": "denied"})).with_tool_call(
            "call_2",
            "bash",
            json!({"command": "touch made-by-bash"}),
        ),
        Reply::text("Done."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--yes", "try it"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    for (call, tool) in [("call_1", "mcp__everything__echo"), ("call_2", "bash")] {
        assert_eq!(
            tool_result(&server, call),
            format!("the user's settings do not allow the `{tool}` tool; do not try it again")
        );
    }
    assert!(!dir.path().join("made-by-bash").exists(), "the denied command did not run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_terminal_the_user_is_asked_and_a_no_reaches_the_model() {
    let dir = workspace(&[]);
    config(dir.path(), &everything_stdio(""));
    let server = ScriptedServer::start(vec![
        Reply::tool_call("call_1", "mcp__everything__echo", json!({"message": "first"})),
        Reply::tool_call("call_2", "mcp__everything__get-sum", json!({"a": 2, "b": 3})),
        Reply::text("Done."),
    ])
    .await;
    let screen = reins_run_in_terminal(&server, dir.path(), "use the server", &["y", "n", "no sums today"]).await;
    assert!(
        screen.contains("MCP server `everything`, tool `echo`, with:") && screen.contains("\"message\": \"first\""),
        "{screen}"
    );
    assert_eq!(screen.matches("Call it? [y/N]").count(), 2, "{screen}");
    let requests = server.chat_requests();
    let messages = requests[2].body["messages"].to_string();
    assert!(messages.contains("Echo: first"), "{messages}");
    assert!(messages.contains("the user rejected this mcp__everything__get-sum call: no sums today"), "{messages}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_exist_is_a_warning_and_the_run_goes_on() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    config(dir.path(), &format!("{}\n[mcp_servers.ghost]\ncommand = \"reins-no-such-server\"\n", everything_stdio("")));
    let server = ScriptedServer::start(vec![
        Reply::tool_call("call_1", "mcp__ghost__anything", json!({})),
        Reply::tool_call("call_2", "read", json!({"path": "a.txt"})),
        Reply::text("Read it."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--yes", "go"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let warning = "reins: warning: MCP server `ghost` could not be started: cannot start `reins-no-such-server`: it \
                   was not found; is it installed and on PATH?; going on without its tools\n";
    assert!(run.stderr.starts_with(warning), "{}", run.stderr);
    assert_eq!(run.stderr.matches("reins: warning:").count(), 1, "{}", run.stderr);
    let tools = tool_names(&server.chat_requests()[0].body);
    assert!(
        tools.iter().any(|name| name == "mcp__everything__echo")
            && !tools.iter().any(|name| name.starts_with("mcp__ghost"))
    );
    assert!(tool_result(&server, "call_1").starts_with("unknown tool `mcp__ghost__anything`"));
    assert_eq!(tool_result(&server, "call_2"), "alpha\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_times_out_is_cancelled_on_the_server() {
    let dir = workspace(&[]);
    let log = dir.path().join("server-stdin.log");
    // The server's stdin is logged on its way in, to see the cancellation arrive.
    let script = format!("tee -a '{}' | node '{}' stdio", log.display(), everything_js());
    shell_server(dir.path(), "slow", &script, "tool_timeout_sec = 1");
    let server = model_calling("mcp__slow__trigger-long-running-operation", json!({"duration": 20, "steps": 2})).await;
    let started = std::time::Instant::now();
    let run = reins_run(&server, dir.path(), &["wait"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert_eq!(
        tool_result(&server, "call_1"),
        "the tool `mcp__slow__trigger-long-running-operation` timed out after 1 s and was stopped"
    );
    let sent = std::fs::read_to_string(&log).unwrap();
    assert!(sent.contains("\"method\":\"notifications/cancelled\""), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_mid_call_is_named_and_restarted_on_the_next_call() {
    let dir = workspace(&[]);
    let pid_file = dir.path().join("server.pid");
    // `exec` keeps the pid the file names: the test kills that process in the middle of a call.
    let script = format!("echo $$ > '{}'; exec node '{}' stdio", pid_file.display(), everything_js());
    shell_server(dir.path(), "everything", &script, "");
    let long = json!({"duration": 30, "steps": 30});
    let server = ScriptedServer::start(vec![
        Reply::tool_call("call_1", "mcp__everything__trigger-long-running-operation", long),
        Reply::tool_call("call_2", "mcp__everything__echo", json!({"message": "back"})),
        Reply::text("Recovered."),
    ])
    .await;
    let (code, stderr) = run_acting_mid_call(&server, dir.path(), "go", |_| {
        kill("-KILL", std::fs::read_to_string(&pid_file).unwrap().trim());
    })
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        tool_result(&server, "call_1"),
        "the MCP server `everything` stopped during the call (the server was killed by SIGKILL); it will be \
         restarted on the next call"
    );
    assert_eq!(tool_result(&server, "call_2"), "Echo: back");
    assert!(
        stderr.contains(
            "reins: warning: MCP server `everything` stopped: the server was killed by SIGKILL; it will be restarted \
             when next needed"
        ),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_get_no_provider_keys_and_are_gone_when_reins_exits() {
    let dir = workspace(&[]);
    let pid_file = dir.path().join("server.pid");
    let script = format!("echo $$ > '{}'; exec node '{}' stdio", pid_file.display(), everything_js());
    shell_server(dir.path(), "everything", &script, "env = { GREETING = \"hi\" }");
    let server = model_calling("mcp__everything__get-env", json!({})).await;
    let run: Run = reins_run(&server, dir.path(), &["--json", "what is your environment?"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let env: Value = serde_json::from_str(&tool_result(&server, "call_1")).unwrap();
    assert_eq!(env["GREETING"], "hi");
    assert!(env.get("OPENAI_API_KEY").is_none() && !env.to_string().contains(CANARY_KEY), "{env}");
    assert!(env.get("PATH").is_some(), "the rest of the environment is there");

    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let alive =
        |pid: i32| std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "));
    assert!(!alive(pid), "the server's process is gone once reins has exited");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_changed_offers_the_new_tool_from_the_next_turn() {
    let dir = workspace(&[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/test-server.mjs");
    let modules = support::mcp_prefix().join("node_modules");
    config(
        dir.path(),
        &format!(
            "[mcp_servers.t]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\nenv = {{ MCP_NODE_MODULES = {:?} }}\n\n\
             [approval]\n\"mcp__*\" = \"auto\"\n",
            script.display().to_string(),
            modules.display().to_string()
        ),
    );
    let server = ScriptedServer::start(vec![
        Reply::tool_call("call_1", "mcp__t__add_tool", json!({"name": "late"})),
        Reply::tool_call("call_2", "mcp__t__late", json!({})),
        Reply::text("Done."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["add a tool and use it"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let requests = server.chat_requests();
    assert!(!tool_names(&requests[0].body).contains(&"mcp__t__late".to_string()));
    assert!(tool_names(&requests[1].body).contains(&"mcp__t__late".to_string()), "offered from the next turn");
    assert_eq!(tool_result(&server, "call_2"), "ran late", "the server ran the new tool");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_reins_run_cancels_the_call_on_the_server() {
    let dir = workspace(&[]);
    let log = dir.path().join("server-stdin.log");
    let script = format!("tee -a '{}' | node '{}' stdio", log.display(), everything_js());
    shell_server(dir.path(), "slow", &script, "");
    let server = model_calling("mcp__slow__trigger-long-running-operation", json!({"duration": 30, "steps": 30})).await;
    let (code, stderr) =
        run_acting_mid_call(&server, dir.path(), "wait", |reins| kill("-INT", &reins_pid(reins))).await;
    assert_eq!(code, Some(130), "{stderr}");
    let sent = std::fs::read_to_string(&log).unwrap();
    assert!(sent.contains("\"method\":\"notifications/cancelled\""), "{sent}");
}

/// The process id of reins, started as `started`: `setsid` execs reins when it may, and runs it
/// as its child when it must fork.
fn reins_pid(started: u32) -> String {
    let comm = std::fs::read_to_string(format!("/proc/{started}/comm")).unwrap();
    if comm.trim() == "setsid" {
        let children = std::fs::read_to_string(format!("/proc/{started}/task/{started}/children")).unwrap();
        children.split_whitespace().next().expect("reins runs under setsid").to_string()
    } else {
        started.to_string()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_reins_leaves_none_of_a_servers_processes_behind() {
    let dir = workspace(&[]);
    let pid_file = dir.path().join("child.pid");
    // The server starts a process of its own, as npx starts node.
    let script = format!("sleep 300 & echo $! > '{}'; exec node '{}' stdio", pid_file.display(), everything_js());
    shell_server(dir.path(), "slow", &script, "");
    let server = model_calling("mcp__slow__trigger-long-running-operation", json!({"duration": 30, "steps": 30})).await;
    run_acting_mid_call(&server, dir.path(), "wait", |reins| kill("-KILL", &reins_pid(reins))).await;
    let child: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let alive =
        |pid: i32| std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "));
    for _ in 0..100 {
        if !alive(child) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = std::process::Command::new("kill").args(["-KILL", &child.to_string()]).status();
    panic!("the server's own process {child} outlived the SIGKILLed reins");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reins_mcp_list_shows_each_server_and_fails_when_one_does() {
    let dir = workspace(&[]);
    config(
        dir.path(),
        &format!(
            "{}\n[mcp_servers.ghost]\ncommand = \"reins-no-such-server\"\n",
            everything_stdio("enabled_tools = [\"echo\"]")
        ),
    );
    let run = support::reins(None, dir.path(), &["mcp", "list", "--json"]).await;
    assert_eq!(run.code, Some(1), "a server failed: {}", run.stderr);
    assert_eq!(run.stderr, "");
    let listed: Value = serde_json::from_str(&run.stdout).unwrap();
    let origin = reins_home(dir.path()).join("config.toml").display().to_string();
    assert_eq!(
        listed,
        json!({"servers": [
            {"name": "everything", "origin": origin, "transport": format!("node {} stdio", everything_js()), "state": "ready", "reason": null,
             "loggedIn": false, "protocol": "2025-11-25", "tools": [{"name": "mcp__everything__echo", "tool": "echo", "description": "Echoes back the input string"}]},
            {"name": "ghost", "origin": origin, "transport": "reins-no-such-server", "state": "failed",
             "reason": "cannot start `reins-no-such-server`: it was not found; is it installed and on PATH?", "loggedIn": false, "protocol": null, "tools": []}
        ]})
    );
    let human = support::reins(None, dir.path(), &["mcp", "list"]).await;
    assert!(
        human.stdout.contains(
            "  state  ready, MCP 2025-11-25\n  tools  1\n    mcp__everything__echo  Echoes back the input string\n"
        ),
        "{}",
        human.stdout
    );
}

/// A `[mcp_servers.NAME]` table for tests/mcp/test-server.mjs over stdio, with `env` (a TOML
/// inline table's entries) and `extra` lines.
fn test_server_table(name: &str, env: &str, extra: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/test-server.mjs");
    let modules = support::mcp_prefix().join("node_modules");
    format!(
        "[mcp_servers.{name}]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\nenv = {{ MCP_NODE_MODULES = {:?}{env} }}\n{extra}\n",
        script.display().to_string(),
        modules.display().to_string()
    )
}

/// The bytes of a request's MCP tool declarations, `tool_search` included.
fn mcp_declaration_bytes(request: &Value) -> usize {
    let tools = request["tools"].as_array().unwrap();
    let mcp = |name: &str| name.starts_with("mcp__") || name == "tool_search";
    tools
        .iter()
        .filter(|tool| mcp(tool["function"]["name"].as_str().unwrap_or("")))
        .map(|tool| tool.to_string().len())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_tools_are_found_through_tool_search_and_stay_declared() {
    let dir = workspace(&[]);
    config(
        dir.path(),
        &format!("{}\n[approval]\n\"mcp__*\" = \"auto\"\n", test_server_table("big", ", MANY_TOOLS = \"300\"", "")),
    );
    let server = ScriptedServer::start(vec![
        Reply::tool_call("call_1", "tool_search", json!({"query": "archive invoice", "limit": 1})),
        Reply::tool_call("call_2", "mcp__big__archive_invoice", json!({"id": "42"})),
        Reply::text("Done."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["archive invoice 42"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let requests = server.chat_requests();
    let first = tool_names(&requests[0].body);
    assert!(first.contains(&"tool_search".to_string()) && first.contains(&"read".to_string()), "{first:?}");
    assert!(first.iter().all(|name| !name.starts_with("mcp__big__")), "no big tool declared: {first:?}");
    let bytes = mcp_declaration_bytes(&requests[0].body);
    assert!(bytes < 10_000, "the first request carries {bytes} bytes beyond the built-in tools");
    assert!(
        tool_result(&server, "call_1").starts_with("Found 1 tool, declared from your next request on"),
        "{}",
        tool_result(&server, "call_1")
    );
    // The tool found is declared from the next request on, after all the others: the prefix holds.
    let second = tool_names(&requests[1].body);
    assert_eq!(second[..first.len()], first[..], "what was declared keeps its place");
    assert_eq!(second[first.len()..], ["mcp__big__archive_invoice".to_string()]);
    assert_eq!(tool_result(&server, "call_2"), "ran archive_invoice", "the server ran the tool found");

    // The session recorded the find: continued, it declares the tool again, at the end.
    let again = ScriptedServer::start(vec![Reply::text("Still here.")]).await;
    let run = reins_run(&again, dir.path(), &["--continue", "and again"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(tool_names(&again.chat_requests()[0].body), second, "the same tools in the same order");

    // `exposure = "direct"` declares them all, however many.
    config(dir.path(), &test_server_table("big", ", MANY_TOOLS = \"300\"", "exposure = \"direct\""));
    let direct = ScriptedServer::start(vec![Reply::text("Hello.")]).await;
    let run = reins_run(&direct, dir.path(), &["hello"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let names = tool_names(&direct.chat_requests()[0].body);
    assert_eq!(names.iter().filter(|name| name.starts_with("mcp__big__")).count(), 311, "{names:?}");
    assert!(!names.contains(&"tool_search".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_costs_a_run_little_and_a_slow_one_joins_when_ready() {
    let dir = workspace(&[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/test-server.mjs");
    let modules = support::mcp_prefix().join("node_modules");
    let slow = format!("sleep 4; exec node '{}' stdio", script.display());
    config(
        dir.path(),
        &format!(
            "[mcp_servers.hung]\ncommand = \"sleep\"\nargs = [\"600\"]\nstartup_timeout_sec = 60\n\n\
             [mcp_servers.slow]\ncommand = \"sh\"\nargs = [\"-c\", {slow:?}]\nenv = {{ MCP_NODE_MODULES = {:?} }}\n\
             startup_timeout_sec = 60\n\n[approval]\n\"mcp__*\" = \"auto\"\nbash = \"auto\"\n",
            modules.display().to_string()
        ),
    );
    let server = ScriptedServer::start(vec![
        Reply::tool_call("call_1", "bash", json!({"command": "sleep 8"})),
        Reply::tool_call("call_2", "mcp__slow__echo", json!({"text": "late"})),
        Reply::text("Done."),
    ])
    .await;
    let started = std::time::Instant::now();
    // The wait of a plain run (the other tests wait longer).
    let command = support::reins_command(Some(&server.base_url()), dir.path(), &["run", "wait, then echo"])
        .env("REINS_MCP_STARTUP_WAIT", "1.5")
        .output();
    let output = command.await.unwrap();
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    // 8 s of the command, and neither server's 60 s startup timeout.
    assert!(took < Duration::from_secs(30), "the run took {took:?}");
    let requests = server.chat_requests();
    let first = tool_names(&requests[0].body);
    assert!(first.iter().all(|name| !name.starts_with("mcp__")), "no server was ready: {first:?}");
    let second = tool_names(&requests[1].body);
    assert_eq!(second[..first.len()], first[..], "the built-in tools keep their place");
    assert!(second.contains(&"mcp__slow__echo".to_string()), "the slow server joined: {second:?}");
    assert!(!second.iter().any(|name| name.starts_with("mcp__hung__")));
    assert_eq!(tool_result(&server, "call_2"), "echo: late");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_that_say_they_change_nothing_run_unasked_only_when_the_user_says_so() {
    let dir = workspace(&[]);
    let script = Reply::tool_call("call_1", "mcp__t__echo", json!({"text": "read only"}));
    let other = Reply::tool_call("call_2", "mcp__t__pid", json!({}));
    let refused = "needs the user's approval, which could not be asked (no terminal); the user can rerun with --yes";

    // By default a hint is only a hint: both are asked about (and, with no terminal, refused).
    config(dir.path(), &test_server_table("t", "", ""));
    let server = ScriptedServer::start(vec![script.clone(), other.clone(), Reply::text("Done.")]).await;
    let run = reins_run(&server, dir.path(), &["go"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(tool_result(&server, "call_1"), format!("mcp__t__echo {refused}"));

    // `mcp_read_only = "auto"`: the tool whose server says `readOnlyHint` runs; the other is asked.
    config(dir.path(), &format!("{}\n[approval]\nmcp_read_only = \"auto\"\n", test_server_table("t", "", "")));
    let server = ScriptedServer::start(vec![script.clone(), other, Reply::text("Done.")]).await;
    let run = reins_run(&server, dir.path(), &["go"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(tool_result(&server, "call_1"), "echo: read only");
    assert_eq!(tool_result(&server, "call_2"), format!("mcp__t__pid {refused}"));

    // `deny` wins over the hint.
    config(
        dir.path(),
        &format!(
            "{}\n[approval]\nmcp_read_only = \"auto\"\n\"mcp__t__echo\" = \"deny\"\n",
            test_server_table("t", "", "")
        ),
    );
    let server = ScriptedServer::start(vec![script, Reply::text("Done.")]).await;
    reins_run(&server, dir.path(), &["go"]).await;
    assert_eq!(
        tool_result(&server, "call_1"),
        "the user's settings do not allow the `mcp__t__echo` tool; do not try it again"
    );
}
