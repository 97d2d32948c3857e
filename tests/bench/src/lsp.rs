//! The language server's responsiveness: `initialize` right after spawn, and the latency of
//! `textDocument/codeAction` and `reins.session.list` while a run streams text deltas faster than
//! 5,000 a second. Targets: initialize within 10 ms of spawn; p99 under 5 ms for both requests.
//!
//! A tiny JSON-RPC client lives here (the bench crate does not depend on the test client):
//! requests go out one at a time, and server notifications and requests are read past.

use std::collections::HashSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// Latency samples per request kind.
const SAMPLES: usize = 300;
/// Chars per scripted answer: each char is one delta, one every millisecond or so.
const ANSWER_CHARS: usize = 4_000;
/// Runs streaming at once (in their own sessions): together over 5,000 deltas a second.
const CONCURRENT_RUNS: usize = 16;

pub(crate) struct Client {
    pub(crate) child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
    /// Text deltas seen (in coalesced notifications), for the achieved rate.
    delta_chars: usize,
    /// The runs whose `agent_end` was read.
    pub(crate) ended: HashSet<String>,
}

/// Runs the LSP measurements and prints them; true when a target was missed.
pub async fn measure(reins: &Path) -> bool {
    match run(reins).await {
        Ok(failed) => failed,
        Err(why) => {
            println!("\nlsp not measured: {why}");
            true
        }
    }
}

async fn run(reins: &Path) -> Result<bool, String> {
    let workspace = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(workspace.path().join("a.rs"), "fn a() {\n    1\n}\n").map_err(|e| e.to_string())?;

    let mut initialize_times = Vec::new();
    for _ in 0..11 {
        let start = Instant::now();
        let mut client = Client::spawn(reins, workspace.path(), "http://127.0.0.1:9/v1")?;
        client.initialize(workspace.path()).await?;
        initialize_times.push(start.elapsed());
        client.child.kill().await.ok();
    }
    initialize_times.sort();
    let initialize = initialize_times[initialize_times.len() / 2];

    let answer: String = "x".repeat(ANSWER_CHARS);
    let server = ScriptedServer::start(vec![Reply {
        repeat: 1000,
        chunk_delay_ms: 1,
        ..Reply::text(answer).with_chunk_chars(1)
    }])
    .await;
    let mut client = Client::spawn(reins, workspace.path(), &server.base_url())?;
    client.initialize(workspace.path()).await?;
    let uri = format!("file://{}", workspace.path().join("a.rs").display());
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "rust", "version": 1, "text": "fn a() {\n    1\n}\n"}}),
        )
        .await?;

    let started = Instant::now();
    let mut code_action = Vec::new();
    let mut session_list = Vec::new();
    let mut runs = 0;
    while code_action.len() < SAMPLES {
        if code_action.len() % 100 == 0 {
            // Fresh sessions keep runs streaming (a busy session would refuse another send).
            for _ in 0..CONCURRENT_RUNS {
                let send = json!({"command": "reins.chat.send", "arguments": [{"text": "stream"}]});
                client.request("workspace/executeCommand", send).await?;
                runs += 1;
            }
        }
        let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}});
        let t = Instant::now();
        client
            .request(
                "textDocument/codeAction",
                json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": []}}),
            )
            .await?;
        code_action.push(t.elapsed());
        let t = Instant::now();
        client.request("workspace/executeCommand", json!({"command": "reins.session.list", "arguments": [{}]})).await?;
        session_list.push(t.elapsed());
    }
    let elapsed = started.elapsed();
    let rate = client.delta_chars as f64 / elapsed.as_secs_f64();
    client.child.kill().await.ok();

    let p99 = |samples: &mut Vec<Duration>| {
        samples.sort();
        samples[(samples.len() * 99 / 100).min(samples.len() - 1)]
    };
    let (code_action_p99, session_list_p99) = (p99(&mut code_action), p99(&mut session_list));
    println!("\nlsp ({runs} runs streaming; {rate:.0} deltas/s reached the client, coalesced):");
    println!("  initialize after spawn    {:>8.2} ms", ms(initialize));
    println!("  codeAction p99            {:>8.2} ms", ms(code_action_p99));
    println!("  reins.session.list p99    {:>8.2} ms", ms(session_list_p99));
    let checks = [
        ("initialize within 10 ms of spawn", ms(initialize) < 10.0),
        ("codeAction p99 under 5 ms while streaming", ms(code_action_p99) < 5.0),
        ("reins.session.list p99 under 5 ms while streaming", ms(session_list_p99) < 5.0),
        ("the stream ran at 5,000 deltas/s or more", rate >= 5_000.0),
    ];
    for (name, ok) in checks {
        println!("  [{}] {name}", if ok { "ok" } else { "MISSED" });
    }
    Ok(checks.iter().any(|(_, ok)| !ok))
}

impl Client {
    pub(crate) fn spawn(reins: &Path, workspace: &Path, base_url: &str) -> Result<Self, String> {
        Self::spawn_with(reins, workspace, base_url, &[])
    }

    /// [`Client::spawn`] with `env` set on top.
    pub(crate) fn spawn_with(
        reins: &Path,
        workspace: &Path,
        base_url: &str,
        env: &[(&str, &Path)],
    ) -> Result<Self, String> {
        let mut child = tokio::process::Command::new(reins)
            .arg("lsp")
            .envs(env.iter().copied())
            .current_dir(workspace)
            .env("OPENAI_BASE_URL", base_url)
            .env("REINS_HOME", workspace.join(".reins-home"))
            .env("REINS_MODEL", "scripted-model")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", reins.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("no stdio".into());
        };
        Ok(Self { child, stdin, stdout: BufReader::new(stdout), next_id: 1, delta_chars: 0, ended: HashSet::new() })
    }

    pub(crate) async fn initialize(&mut self, root: &Path) -> Result<Value, String> {
        let uri = format!("file://{}", root.display());
        let result = self
            .request(
                "initialize",
                json!({"processId": null, "rootUri": uri, "capabilities": {"window": {"workDoneProgress": true}}}),
            )
            .await?;
        self.notify("initialized", json!({})).await?;
        Ok(result)
    }

    pub(crate) async fn notify(&mut self, method: &str, params: Value) -> Result<(), String> {
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    /// Sends a request and reads until its answer, answering the server's own requests.
    pub(crate) async fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        loop {
            let message = tokio::time::timeout(Duration::from_secs(30), self.read())
                .await
                .map_err(|_| format!("no answer to {method}"))??;
            if message.get("method").is_some() {
                self.read_past(&message).await?;
                continue;
            }
            if message["id"] == id {
                return match message.get("error") {
                    Some(error) => Err(format!("{method} failed: {error}")),
                    None => Ok(message["result"].clone()),
                };
            }
        }
    }

    /// Reads until the `agent_end` of `run_id` (or finds it read already).
    pub(crate) async fn wait_for_end(&mut self, run_id: &str) -> Result<(), String> {
        while !self.ended.contains(run_id) {
            let message = tokio::time::timeout(Duration::from_secs(30), self.read())
                .await
                .map_err(|_| format!("run {run_id} did not end"))??;
            if message.get("method").is_some() {
                self.read_past(&message).await?;
            }
        }
        Ok(())
    }

    /// Answers a server request; counts a notification's text deltas and notes its run's end.
    async fn read_past(&mut self, message: &Value) -> Result<(), String> {
        if let Some(server_id) = message.get("id") {
            return self.write(&json!({"jsonrpc": "2.0", "id": server_id, "result": null})).await;
        }
        let event = &message["params"]["event"];
        if event["type"] == "message_update" {
            self.delta_chars += event["delta"]["delta"].as_str().map_or(0, |d| d.chars().count());
        } else if event["type"] == "agent_end"
            && let Some(run_id) = message["params"]["runId"].as_str()
        {
            self.ended.insert(run_id.to_string());
        }
        Ok(())
    }

    pub(crate) async fn write(&mut self, message: &Value) -> Result<(), String> {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.stdin.write_all(frame.as_bytes()).await.map_err(|e| e.to_string())?;
        self.stdin.flush().await.map_err(|e| e.to_string())
    }

    pub(crate) async fn read(&mut self) -> Result<Value, String> {
        let mut length = 0;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).await.map_err(|e| e.to_string())? == 0 {
                return Err("the server closed its output".into());
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("Content-Length:") {
                length = value.trim().parse().map_err(|_| "bad Content-Length".to_string())?;
            }
        }
        let mut body = vec![0; length];
        self.stdout.read_exact(&mut body).await.map_err(|e| e.to_string())?;
        serde_json::from_slice(&body).map_err(|e| e.to_string())
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
