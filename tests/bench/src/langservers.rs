//! What the language-server tools cost: the bytes `lsp` and `rename` add to every request, the
//! latency the `lsp` tool adds over the language server's own answer (pyright), and reins's own
//! memory while two servers it started (pyright and clangd) run. The servers come from
//! tests/langservers/install.sh (npm and Debian).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// `lsp` calls whose latency is measured, each a turn of its own.
const CALLS: usize = 20;
/// The bytes the navigation tool may add to a request.
const MAX_ADDED_BYTES: usize = 600;
/// The latency the tool may add over the server's answer.
const MAX_ADDED_MS: f64 = 2.0;

const SHAPES_PY: &str = "class Greeter:\n    def greet(self, name):\n        return 'Hello, ' + name\n";
const APP_PY: &str = "from shapes import Greeter\n\nprint(Greeter().greet('a'))\n";
const MAIN_C: &str = "int area(int w, int h) { return w * h; }\nint main(void) { return area(2, 3); }\n";

/// Prints the figures; true when a target is missed.
pub async fn measure(reins: &Path) -> bool {
    let bin = match install() {
        Ok(bin) => bin,
        Err(why) => {
            println!("\nlanguage servers not measured: {why}");
            return true;
        }
    };
    println!("\nlanguage servers (lsp, rename; pyright {}, clangd)", bin.display());
    let mut missed = false;
    match request_bytes(reins, &bin).await {
        Ok((with, without, tools)) => {
            let added = with.saturating_sub(without);
            println!("  first request, tools offered / not   {with:>8} / {without} bytes: {added} added");
            for (name, bytes) in &tools {
                println!("  the definition of {name:<20} {bytes:>8} bytes");
            }
            let lsp = tools.iter().find(|(name, _)| name == "lsp").map_or(usize::MAX, |(_, bytes)| *bytes);
            let ok = lsp < MAX_ADDED_BYTES;
            println!("  [{}] the navigation tool adds {lsp} bytes (target < {MAX_ADDED_BYTES})", verdict(ok));
            missed |= !ok;
        }
        Err(why) => {
            println!("  request bytes not measured: {why}");
            missed = true;
        }
    }
    match latency(reins, &bin).await {
        Ok((tool, server)) => {
            let added = tool - server;
            println!("  references, tool call / server answer {tool:>8.2} / {server:.2} ms (medians of {CALLS})");
            let ok = added < MAX_ADDED_MS;
            println!("  [{}] the tool adds {added:.2} ms (target < {MAX_ADDED_MS} ms)", verdict(ok));
            missed |= !ok;
        }
        Err(why) => {
            println!("  latency not measured: {why}");
            missed = true;
        }
    }
    match memory(reins, &bin).await {
        Ok((with, without)) => {
            println!("  reins's own RSS, two servers running / no server {with:>6} / {without} KiB");
        }
        Err(why) => {
            println!("  memory not measured: {why}");
            missed = true;
        }
    }
    missed
}

fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "MISSED" }
}

/// The directory of the npm servers' commands.
fn install() -> Result<PathBuf, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../langservers/install.sh");
    let output = std::process::Command::new("bash").arg(script).output().map_err(|err| err.to_string())?;
    if !output.status.success() {
        return Err(format!("install.sh failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()).join("node_modules/.bin"))
}

/// A workspace with a small Python project and a C file.
fn project() -> Result<tempfile::TempDir, String> {
    let dir = tempfile::tempdir().map_err(|err| err.to_string())?;
    for (name, text) in [("shapes.py", SHAPES_PY), ("app.py", APP_PY), ("main.c", MAIN_C)] {
        std::fs::write(dir.path().join(name), text).map_err(|err| err.to_string())?;
    }
    Ok(dir)
}

/// `reins run --json ARGS` in `dir` with the servers on `PATH` and `env`.
fn command(reins: &Path, dir: &Path, bin: &Path, server: &ScriptedServer, args: &[&str]) -> tokio::process::Command {
    let home = dir.join(".reins-home");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut command = tokio::process::Command::new(reins);
    command
        .arg("run")
        .arg("--json")
        .arg("--yes")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", path)
        .env("HOME", dir)
        .env("REINS_HOME", home)
        .env("OPENAI_API_KEY", "sk-bench")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("REINS_MODEL", "scripted-model")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

/// The first request's bytes for "hi" in the project, with the tools and with them turned off,
/// and the bytes of each tool's definition in it.
async fn request_bytes(reins: &Path, bin: &Path) -> Result<(usize, usize, Vec<(String, usize)>), String> {
    let dir = project()?;
    let mut sizes = Vec::new();
    let mut tools = Vec::new();
    for off in [false, true] {
        let home = dir.path().join(".reins-home");
        std::fs::create_dir_all(&home).map_err(|err| err.to_string())?;
        let config =
            if off { "[lsp_servers.pyright]\nenabled = false\n[lsp_servers.clangd]\nenabled = false\n" } else { "" };
        std::fs::write(home.join("config.toml"), config).map_err(|err| err.to_string())?;
        let server = ScriptedServer::start(vec![Reply::text("Hello.")]).await;
        let output = command(reins, dir.path(), bin, &server, &["hi"]).output().await.map_err(|err| err.to_string())?;
        if !output.status.success() {
            return Err(format!("reins run failed: {}", String::from_utf8_lossy(&output.stderr)));
        }
        let request = server.chat_requests().into_iter().next().ok_or("no request")?;
        sizes.push(request.raw_body.len());
        if !off {
            for tool in request.body["tools"].as_array().into_iter().flatten() {
                let name = tool["function"]["name"].as_str().unwrap_or_default();
                if name == "lsp" || name == "rename" {
                    tools.push((name.to_string(), tool.to_string().len()));
                }
            }
        }
    }
    Ok((sizes[0], sizes[1], tools))
}

/// Median time of an `lsp references` call as the client reads its events, and median time of
/// pyright's answer as reins measured it (its debug log).
async fn latency(reins: &Path, bin: &Path) -> Result<(f64, f64), String> {
    // A function per call: the agent refuses to repeat an identical call.
    let dir = tempfile::tempdir().map_err(|err| err.to_string())?;
    let functions: String = (0..=CALLS).map(|n| format!("def f{n}():\n    return {n}\n\n\n")).collect();
    let calls: String = (0..=CALLS).map(|n| format!("f{n}()\n")).collect();
    std::fs::write(dir.path().join("functions.py"), functions).map_err(|err| err.to_string())?;
    std::fs::write(dir.path().join("app.py"), format!("from functions import *\n\n{calls}"))
        .map_err(|err| err.to_string())?;
    let mut replies: Vec<Reply> = (0..=CALLS)
        .map(|n| {
            let line = 4 * n + 1;
            let arguments =
                json!({"operation": "references", "path": "functions.py", "line": line, "symbol": format!("f{n}")});
            Reply::tool_call(format!("c{n}"), "lsp", arguments)
        })
        .collect();
    replies.push(Reply::text("Done."));
    let server = ScriptedServer::start(replies).await;
    let mut child = command(reins, dir.path(), bin, &server, &["go"])
        .env("REINS_LOG", "reins_langserver::timing=debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| err.to_string())?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let log = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut answers = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(micros) = line.split("textDocument/references answered in ").nth(1) {
                let digits: String = micros.chars().take_while(char::is_ascii_digit).collect();
                answers.extend(digits.parse::<f64>().ok().map(|us| us / 1000.0));
            }
        }
        answers
    });
    let mut lines = BufReader::new(stdout).lines();
    let mut started = None;
    let mut tools = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(event) = serde_json::from_str::<Value>(&line) else { continue };
        match event["type"].as_str() {
            Some("tool_execution_start") => started = Some(Instant::now()),
            Some("tool_execution_end") => tools.extend(started.take().map(|at| at.elapsed())),
            _ => {}
        }
    }
    let _ = child.wait().await;
    let mut answers = log.await.map_err(|err| err.to_string())?;
    // The first call starts the server and loads the project: not a navigation's latency.
    if tools.len() < 2 || answers.len() < 2 {
        return Err(format!("{} tool calls and {} answers measured", tools.len(), answers.len()));
    }
    let mut tools: Vec<f64> = tools[1..].iter().map(|time: &Duration| time.as_secs_f64() * 1000.0).collect();
    answers.remove(0);
    Ok((median(&mut tools), median(&mut answers)))
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// reins's own resident memory (its process alone, not the servers') once an `lsp` call on a
/// Python and on a C file started pyright and clangd, and in a run that started none.
async fn memory(reins: &Path, bin: &Path) -> Result<(u64, u64), String> {
    let mut figures = Vec::new();
    for with_servers in [true, false] {
        let dir = project()?;
        let mut replies = Vec::new();
        if with_servers {
            let python = json!({"operation": "hover", "path": "app.py", "line": 3, "symbol": "greet"});
            let c = json!({"operation": "hover", "path": "main.c", "line": 2, "symbol": "area"});
            replies.push(Reply::tool_call("m1", "lsp", python));
            replies.push(Reply::tool_call("m2", "lsp", c));
        } else {
            replies.push(Reply::tool_call("m1", "read", json!({"path": "app.py"})));
        }
        // The answer waits, so the servers run (and reins idles) while the memory is read.
        replies.push(Reply::text("Done.").with_delay_ms(1500));
        let server = ScriptedServer::start(replies).await;
        let mut child = command(reins, dir.path(), bin, &server, &["go"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| err.to_string())?;
        let pid = child.id().ok_or("no pid")?;
        let mut peak = 0;
        while child.try_wait().map_err(|err| err.to_string())?.is_none() {
            peak = peak.max(rss_kib(pid).unwrap_or(0));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        figures.push(peak);
    }
    Ok((figures[0], figures[1]))
}

/// A process's resident set (`VmRSS`), in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
