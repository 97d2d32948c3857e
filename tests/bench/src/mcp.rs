//! MCP: what a call of an MCP server's tool adds over a call of a built-in tool, and reins's
//! memory with three servers connected — against the reference server
//! `@modelcontextprotocol/server-everything` (installed by tests/mcp/install.sh), each as a ratio
//! to its peer measured in the same run: the built-in `read` call, and reins with no server.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::lsp::Client;
use crate::{median_of, ms};

/// Lines of the file the `read` loop reads.
const CALLS: usize = 50;
/// Turns of a loop, one tool call each.
const TURNS: usize = 150;
/// Targets: an MCP call adds at most this over a built-in one (reins's part; the server's own
/// time is in it too), and three connected servers add at most this to reins's RSS.
const MAX_ADDED_PER_CALL: Duration = Duration::from_millis(3);
const MAX_ADDED_RSS_KIB: u64 = 12 * 1024;

/// Measures and prints; true when a target was missed.
pub async fn measure(reins: &Path) -> bool {
    match run(reins).await {
        Ok(failed) => failed,
        Err(why) => {
            println!("\nmcp not measured: {why}");
            false
        }
    }
}

async fn run(reins: &Path) -> Result<bool, String> {
    let everything = install()?;
    let workspace = tempfile::tempdir().map_err(|e| e.to_string())?;
    let lines: String = (1..=CALLS).map(|n| format!("line {n}\n")).collect();
    std::fs::write(workspace.path().join("lines.txt"), lines).map_err(|e| e.to_string())?;
    let home = workspace.path().join(".reins-home");
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    let stdio = |name: &str| {
        format!(
            "[mcp_servers.{name}]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            everything.display().to_string()
        )
    };
    std::fs::write(home.join("config.toml"), stdio("everything")).map_err(|e| e.to_string())?;

    // Both tools' loops start the same server. A call's cost is timed from the first call's start
    // to the run's end, read off the events as they come: the start of reins and of the server
    // drop out.
    let read = |n: usize| {
        Reply::tool_call(format!("c{n}"), "read", json!({"path": "lines.txt", "offset": n % CALLS + 1, "limit": 1}))
    };
    let echo =
        |n: usize| Reply::tool_call(format!("c{n}"), "mcp__everything__echo", json!({"message": format!("call {n}")}));
    let read_call = median_of(5, || per_call(reins, workspace.path(), read)).await;
    let mcp_call = median_of(5, || per_call(reins, workspace.path(), echo)).await;
    // Signed: an MCP call may cost less than a `read`, which reads and numbers a file.
    let added_ms = ms(mcp_call) - ms(read_call);

    // Memory: `reins lsp` with three servers started (two over stdio, one over streamable HTTP),
    // and with none, each after `reins.mcp.list`.
    let port =
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
    let mut http = tokio::process::Command::new("node")
        .arg(&everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the HTTP server: {e}"))?;
    wait_for_port(port).await?;
    let three = format!("{}{}[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\n", stdio("one"), stdio("two"));
    let with_three = lsp_rss_kib(reins, &three, 3).await?;
    let with_none = lsp_rss_kib(reins, "", 0).await?;
    let _ = http.kill().await;
    let added_rss = with_three.saturating_sub(with_none);

    println!(
        "\nmcp (server-everything {}; per call: {TURNS}-turn loops timed from their first call, medians of 5)",
        everything_version()
    );
    println!("  built-in call (read)       {:>9.3} ms per turn", ms(read_call));
    println!("  MCP call (echo, stdio)     {:>9.3} ms per turn", ms(mcp_call));
    println!("  added by an MCP call       {added_ms:>+9.3} ms   ({:.2}x a built-in call)", ratio(mcp_call, read_call));
    println!("  reins lsp RSS, no server   {:>9.1} MiB", with_none as f64 / 1024.0);
    println!(
        "  reins lsp RSS, 3 servers   {:>9.1} MiB   (+{:.1} MiB, {:.2}x)",
        with_three as f64 / 1024.0,
        added_rss as f64 / 1024.0,
        with_three as f64 / with_none.max(1) as f64
    );
    let checks = [
        (format!("an MCP call adds under {} ms", MAX_ADDED_PER_CALL.as_millis()), added_ms <= ms(MAX_ADDED_PER_CALL)),
        (format!("three servers add under {} MiB", MAX_ADDED_RSS_KIB / 1024), added_rss <= MAX_ADDED_RSS_KIB),
    ];
    for (name, ok) in &checks {
        println!("  [{}] {name}", if *ok { "ok" } else { "MISSED" });
    }
    let missed = checks.iter().any(|(_, ok)| !ok);
    // …/node_modules/@modelcontextprotocol/server-everything/dist/index.js
    let node_modules = everything.ancestors().nth(4).ok_or("no node_modules above server-everything")?;
    let tools_missed = match crate::mcp_tools::measure(reins, node_modules).await {
        Ok(missed) => missed,
        Err(why) => {
            println!("\nmcp tools not measured: {why}");
            false
        }
    };
    Ok(missed || tools_missed)
}

fn install() -> Result<PathBuf, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/install.sh");
    let output =
        std::process::Command::new("bash").arg(script).output().map_err(|e| format!("cannot run install.sh: {e}"))?;
    if !output.status.success() {
        return Err(format!("tests/mcp/install.sh failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    let prefix = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    Ok(prefix.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
}

fn everything_version() -> String {
    let Ok(path) = install() else { return "?".into() };
    let package = path.parent().and_then(Path::parent).map(|dir| dir.join("package.json"));
    let text = package.and_then(|path| std::fs::read_to_string(path).ok()).unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["version"].as_str().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// One `reins run` of `TURNS` turns, each calling the tool `call(n)` gives, then an answer: the
/// time from the first call's start to the run's end, per turn.
async fn per_call(reins: &Path, workspace: &Path, call: impl Fn(usize) -> Reply) -> Duration {
    let mut script: Vec<Reply> = (1..=TURNS).map(call).collect();
    script.push(Reply::text("Done."));
    let server = ScriptedServer::start(script).await;
    let child = tokio::process::Command::new(reins)
        .args(["run", "--json", "--yes", "--no-session", "--max-turns", "200", "go"])
        .current_dir(workspace)
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("REINS_MODEL", "scripted-model")
        .env("REINS_HOME", workspace.join(".reins-home"))
        // What is timed is the calls: the server is in the first request, however slow to start.
        .env("REINS_MCP_STARTUP_WAIT", "60")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let Ok(mut child) = child else { return Duration::ZERO };
    let Some(stdout) = child.stdout.take() else { return Duration::ZERO };
    let mut lines = BufReader::new(stdout).lines();
    let (mut first, mut end, mut failed) = (None, None, 0);
    while let Ok(Some(line)) = lines.next_line().await {
        let event: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        match event["type"].as_str() {
            Some("tool_execution_start") if first.is_none() => first = Some(Instant::now()),
            Some("tool_execution_end") if event["isError"] == true => failed += 1,
            Some("agent_end") => end = Some(Instant::now()),
            _ => {}
        }
    }
    let _ = child.wait().await;
    if failed > 0 {
        eprintln!("bench: {failed} calls failed");
    }
    match (first, end) {
        (Some(first), Some(end)) => (end - first) / TURNS as u32,
        _ => Duration::ZERO,
    }
}

/// The resident memory of `reins lsp` (itself, not its servers) once `reins.mcp.list` has
/// started the servers of `config` and found `ready` of them ready.
async fn lsp_rss_kib(reins: &Path, config: &str, ready: usize) -> Result<u64, String> {
    let workspace = tempfile::tempdir().map_err(|e| e.to_string())?;
    let home = workspace.path().join(".reins-home");
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    std::fs::write(home.join("config.toml"), config).map_err(|e| e.to_string())?;
    let mut client = Client::spawn(reins, workspace.path(), "http://127.0.0.1:9/v1")?;
    client.initialize(workspace.path()).await?;
    let listed =
        client.request("workspace/executeCommand", json!({"command": "reins.mcp.list", "arguments": [{}]})).await?;
    let up = listed["servers"].as_array().map_or(0, |servers| servers.iter().filter(|s| s["state"] == "ready").count());
    if up != ready {
        return Err(format!("{up} of {ready} servers started: {listed}"));
    }
    // Let what starting them allocated settle, then read the figure.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid = client.child.id().ok_or("the server is gone")?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
    let rss = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no VmRSS")?;
    let _ = client.request("shutdown", serde_json::Value::Null).await;
    let _ = client.child.kill().await;
    Ok(rss)
}

async fn wait_for_port(port: u16) -> Result<(), String> {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("server-everything did not listen on {port}"))
}

fn ratio(a: Duration, b: Duration) -> f64 {
    if b.is_zero() { f64::NAN } else { a.as_secs_f64() / b.as_secs_f64() }
}
