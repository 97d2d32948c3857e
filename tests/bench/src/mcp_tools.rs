//! Many MCP tools: the first request's bytes with a server of 300 tools (tests/mcp/test-server.mjs
//! with `MANY_TOOLS`, tools the size of real ones) declared directly and deferred behind
//! `tool_search`, and the model calls it takes to reach a deferred tool; and what a server that
//! never answers `initialize` adds to a `reins run`.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};

/// How many tools the server offers.
const TOOLS: usize = 300;
/// Target: the MCP part of the first request with the tools deferred, in bytes.
const MAX_DEFERRED_BYTES: usize = 10 * 1024;
/// reins's own wait for servers starting, in seconds (`reins_mcp::STARTING_WAIT`).
const DEFAULT_WAIT: &str = "1.5";
/// Target: what a server that never answers adds to a run.
const MAX_HUNG_COST: Duration = Duration::from_secs(2);

/// Measures and prints; true when a target was missed. `node_modules` holds the MCP SDK.
pub async fn measure(reins: &Path, node_modules: &Path) -> Result<bool, String> {
    let workspace = tempfile::tempdir().map_err(|e| e.to_string())?;
    let server = |extra: &str| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/test-server.mjs");
        format!(
            "[mcp_servers.big]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
             env = {{ MCP_NODE_MODULES = {:?}, MANY_TOOLS = \"{TOOLS}\" }}\n{extra}\n\
             [approval]\n\"mcp__*\" = \"auto\"\n",
            script.display().to_string(),
            node_modules.display().to_string()
        )
    };
    let hello = || vec![Reply::text("Hello.")];
    let none = first_request(reins, workspace.path(), "", hello()).await?;
    let direct = first_request(reins, workspace.path(), &server("exposure = \"direct\""), hello()).await?;
    let deferred = first_request(reins, workspace.path(), &server(""), hello()).await?;

    // The model searches, then calls what it found.
    let reach = vec![
        Reply::tool_call("c1", "tool_search", json!({"query": "archive invoice", "limit": 1})),
        Reply::tool_call("c2", "mcp__big__archive_invoice", json!({"id": "42"})),
        Reply::text("Done."),
    ];
    let asked = requests(reins, workspace.path(), &server(""), reach).await?;
    let declared_in = asked.iter().position(|request| declares(request, "mcp__big__archive_invoice"));
    let ran = asked.last().is_some_and(|request| request.to_string().contains("ran archive_invoice"));
    let calls = match (declared_in, ran) {
        // The requests before the one that declares it each made one call (the search); the
        // tool's own call is the last.
        (Some(index), true) => index + 1,
        _ => return Err(format!("the deferred tool was not reached: declared in {declared_in:?}, ran: {ran}")),
    };

    // A server that never answers `initialize`, with the default startup timeout (10 s): what
    // it adds to a one-turn run, medians of 3.
    let hung = "[mcp_servers.hung]\ncommand = \"sleep\"\nargs = [\"600\"]\n";
    let mut alone = Vec::new();
    let mut with_hung = Vec::new();
    for _ in 0..3 {
        alone.push(timed(asked_with(reins, workspace.path(), "", hello(), DEFAULT_WAIT)).await?);
        with_hung.push(timed(asked_with(reins, workspace.path(), hung, hello(), DEFAULT_WAIT)).await?);
    }
    alone.sort();
    with_hung.sort();
    let hung_cost = with_hung[1].saturating_sub(alone[1]);

    let beyond = |bytes: usize| bytes.saturating_sub(none);
    println!("\nmcp tools ({TOOLS} tools of one server, the first request's bytes)");
    println!("  built-in tools only        {none:>9} B");
    println!("  {TOOLS} tools declared        {direct:>9} B   (+{} B)", beyond(direct));
    println!("  {TOOLS} tools deferred        {deferred:>9} B   (+{} B)", beyond(deferred));
    println!("  calls to reach a deferred tool {calls:>5}   (tool_search, then the tool)");
    println!(
        "  a run, no server           {:>9.3} s\n  a run, a server that hangs {:>9.3} s   (+{:.3} s)",
        alone[1].as_secs_f64(),
        with_hung[1].as_secs_f64(),
        hung_cost.as_secs_f64()
    );
    let checks = [
        (
            format!("deferred, the first request adds under {} KB", MAX_DEFERRED_BYTES / 1024),
            beyond(deferred) < MAX_DEFERRED_BYTES,
        ),
        (format!("a server that never answers adds under {} s", MAX_HUNG_COST.as_secs()), hung_cost < MAX_HUNG_COST),
    ];
    for (name, ok) in &checks {
        println!("  [{}] {name}", if *ok { "ok" } else { "MISSED" });
    }
    Ok(checks.iter().any(|(_, ok)| !ok))
}

/// How long `run` took, with its answer dropped.
async fn timed<T>(run: impl Future<Output = Result<T, String>>) -> Result<Duration, String> {
    let started = Instant::now();
    run.await?;
    Ok(started.elapsed())
}

/// Whether `request` declares the tool `name`.
fn declares(request: &Value, name: &str) -> bool {
    request["tools"].as_array().into_iter().flatten().any(|tool| tool["function"]["name"] == name)
}

/// The bytes of the first model request of a run with `config`.
async fn first_request(reins: &Path, workspace: &Path, config: &str, script: Vec<Reply>) -> Result<usize, String> {
    let requests = requests(reins, workspace, config, script).await?;
    requests.first().map(|request| request.to_string().len()).ok_or_else(|| "the model was not asked".to_string())
}

/// The model requests of one `reins run` with `config` as the user's config.toml.
async fn requests(reins: &Path, workspace: &Path, config: &str, script: Vec<Reply>) -> Result<Vec<Value>, String> {
    asked_with(reins, workspace, config, script, "60").await
}

/// [`requests`], waiting `wait` seconds (as `REINS_MCP_STARTUP_WAIT` says) for servers starting.
async fn asked_with(
    reins: &Path,
    workspace: &Path,
    config: &str,
    script: Vec<Reply>,
    wait: &str,
) -> Result<Vec<Value>, String> {
    let home = workspace.join(".reins-home");
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    std::fs::write(home.join("config.toml"), config).map_err(|e| e.to_string())?;
    let server = ScriptedServer::start(script).await;
    let status = tokio::process::Command::new(reins)
        .args(["run", "--no-session", "go"])
        .current_dir(workspace)
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("REINS_MODEL", "scripted-model")
        .env("REINS_HOME", &home)
        // The tools' figures want the server in the first request; the hanging one, a plain run.
        .env("REINS_MCP_STARTUP_WAIT", wait)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .status()
        .await
        .map_err(|e| format!("cannot run reins: {e}"))?;
    if !status.success() {
        return Err(format!("reins run failed: {status}"));
    }
    Ok(server.chat_requests().into_iter().map(|request| request.body).collect())
}
