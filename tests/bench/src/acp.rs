//! ACP: how soon an ACP client (Zed, JetBrains, CodeCompanion) gets answers from `reins acp`,
//! beside pi's ACP adapter `pi-acp` running the pi coding agent 1.6 against the same scripted
//! model server, measured the same way in the same run: spawn → `initialize` answered,
//! `session/new` answered, and `session/prompt` → the first `agent_message_chunk` (and → the
//! stop reason). pi-acp comes from tests/acp/install.sh, pi 1.6 (and Node 22) from
//! tests/pi-interop/install.sh, as for the pi peer.
//!
//! pi-acp starts `pi --mode rpc` at `session/new`, so its spawn → initialize does not include
//! pi's start; its `session/new` does. Both clients are the same newline-delimited JSON-RPC
//! client below, which advertises no client capabilities (files come from the disk).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::ms;
use crate::peer::Pi;

/// Fresh processes per agent; the figures are their medians.
const SAMPLES: usize = 7;
/// Longer than this for one message is stuck, not slow.
const MESSAGE_TIMEOUT: Duration = Duration::from_secs(60);
/// The answer of every prompt; streamed in 3-char chunks like every scripted reply.
const ANSWER: &str = "Hello from the scripted model.";
/// Targets for reins: an editor's agent panel is ready, and the answer starts, without a wait
/// anyone could notice (the language server's initialize target is the same).
const MAX_INITIALIZE: Duration = Duration::from_millis(10);
const MAX_FIRST_CHUNK: Duration = Duration::from_millis(10);

/// One agent's medians.
struct Figures {
    initialize: Duration,
    new_session: Duration,
    first_chunk: Duration,
    prompt: Duration,
}

/// How to start one agent: program, arguments, environment, and what to write before each run.
struct Agent {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// How it is pointed at each run's model server.
    model: ModelConfig,
}

enum ModelConfig {
    /// The server's base URL in this environment variable.
    Env(&'static str),
    /// pi's `models.json` (the pi that pi-acp runs, and its sandbox).
    Pi(Box<Pi>),
}

impl ModelConfig {
    fn apply(&self, server: &ScriptedServer, command: &mut tokio::process::Command) -> Result<(), String> {
        match self {
            ModelConfig::Env(name) => {
                command.env(name, server.base_url());
                Ok(())
            }
            ModelConfig::Pi(pi) => pi.configure(server),
        }
    }
}

/// Measures and prints; true when a target was missed.
pub async fn measure(reins: &Path) -> bool {
    let workspace = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(err) => {
            println!("\nacp not measured: cannot make a workspace: {err}");
            return true;
        }
    };
    let ours = figures_of(&reins_agent(reins, workspace.path()), workspace.path()).await;
    let peer = match pi_acp_agent().await {
        Ok(agent) => figures_of(&agent, workspace.path()).await,
        Err(why) => Err(why),
    };

    println!(
        "\nacp (one newline-delimited JSON-RPC client; fresh process per sample; medians of {SAMPLES}; load average {})",
        crate::load_average()
    );
    let ours = match ours {
        Ok(ours) => ours,
        Err(why) => {
            println!("  reins acp not measured: {why}");
            if let Ok(peer) = &peer {
                println!(
                    "  pi-acp: initialize {:.2} ms, session/new {:.2} ms, first chunk {:.2} ms, end_turn {:.2} ms",
                    ms(peer.initialize),
                    ms(peer.new_session),
                    ms(peer.first_chunk),
                    ms(peer.prompt)
                );
            }
            return true;
        }
    };
    let row = |name: &str, reins: Duration, pi: Option<Duration>| match pi {
        Some(pi) => println!(
            "  {name:<34} {:>9.2} ms   pi-acp {:>9.2} ms   {:>7.1}x",
            ms(reins),
            ms(pi),
            ms(pi) / ms(reins).max(f64::MIN_POSITIVE)
        ),
        None => println!("  {name:<34} {:>9.2} ms", ms(reins)),
    };
    let peer_ok = peer.as_ref().ok();
    row("spawn -> initialize answered", ours.initialize, peer_ok.map(|p| p.initialize));
    row("session/new answered", ours.new_session, peer_ok.map(|p| p.new_session));
    row("session/prompt -> first chunk", ours.first_chunk, peer_ok.map(|p| p.first_chunk));
    row("session/prompt -> end_turn", ours.prompt, peer_ok.map(|p| p.prompt));
    match &peer {
        Ok(_) => println!("  (ratios: pi-acp / reins; higher means reins answers sooner)"),
        Err(why) => println!("  pi-acp not measured: {why}"),
    }
    let checks = [
        (format!("initialize within {} ms of spawn", MAX_INITIALIZE.as_millis()), ours.initialize <= MAX_INITIALIZE),
        (
            format!("first chunk within {} ms of the prompt", MAX_FIRST_CHUNK.as_millis()),
            ours.first_chunk <= MAX_FIRST_CHUNK,
        ),
    ];
    for (name, ok) in &checks {
        println!("  [{}] {name}", if *ok { "ok" } else { "MISSED" });
    }
    checks.iter().any(|(_, ok)| !ok)
}

fn reins_agent(reins: &Path, workspace: &Path) -> Agent {
    let home = workspace.join(".reins-home");
    Agent {
        name: "reins acp",
        program: reins.to_path_buf(),
        args: vec!["acp".into()],
        env: vec![
            ("OPENAI_API_KEY".into(), "bench".into()),
            ("REINS_MODEL".into(), "scripted-model".into()),
            ("REINS_HOME".into(), home.display().to_string()),
        ],
        model: ModelConfig::Env("OPENAI_BASE_URL"),
    }
}

/// pi-acp under Node 22 with pi 1.6 on PATH, sandboxed as the pi peer is (its HOME and agent dir
/// are throwaway, `PI_OFFLINE=1`); `quietStartup` keeps pi-acp from asking npm for a newer pi.
async fn pi_acp_agent() -> Result<Agent, String> {
    let pi = Pi::install("1.6.0").await?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../acp/install.sh");
    let output = std::process::Command::new("bash")
        .arg(script)
        .stdin(Stdio::null())
        .output()
        .map_err(|err| format!("cannot run tests/acp/install.sh: {err}"))?;
    if !output.status.success() {
        return Err(format!("tests/acp/install.sh failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    let prefix = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    // pi's own environment (PATH with its node first, HOME, PI_CODING_AGENT_DIR, …), with pi's
    // directory on PATH too: pi-acp starts `pi`.
    let base = pi.command(Path::new("/"), &[]);
    let mut env: Vec<(String, String)> = base
        .get_envs()
        .filter_map(|(key, value)| Some((key.to_str()?.to_string(), value?.to_str()?.to_string())))
        .collect();
    let pi_dir = Path::new(base.get_program()).parent().ok_or("pi has no directory")?.display().to_string();
    for (key, value) in &mut env {
        if key == "PATH" {
            *value = format!("{value}:{pi_dir}");
        }
    }
    let agent_dir = env.iter().find(|(key, _)| key == "PI_CODING_AGENT_DIR").ok_or("pi has no agent dir")?.1.clone();
    let settings = json!({"defaultProvider": "scripted", "defaultModel": "scripted-model", "quietStartup": true});
    std::fs::write(Path::new(&agent_dir).join("settings.json"), settings.to_string()).map_err(|err| err.to_string())?;
    Ok(Agent {
        name: "pi-acp",
        // Found on the PATH above (a command's own PATH is where its program is looked up).
        program: PathBuf::from("node"),
        args: vec![prefix.join("node_modules/pi-acp/dist/index.js").display().to_string()],
        env,
        model: ModelConfig::Pi(Box::new(pi)),
    })
}

async fn figures_of(agent: &Agent, workspace: &Path) -> Result<Figures, String> {
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        samples.push(sample(agent, workspace).await.map_err(|why| format!("{}: {why}", agent.name))?);
    }
    let median = |pick: fn(&Figures) -> Duration| {
        let mut values: Vec<Duration> = samples.iter().map(pick).collect();
        values.sort();
        values[values.len() / 2]
    };
    Ok(Figures {
        initialize: median(|f| f.initialize),
        new_session: median(|f| f.new_session),
        first_chunk: median(|f| f.first_chunk),
        prompt: median(|f| f.prompt),
    })
}

/// One fresh agent process: initialize, a new session, one prompt answered with [`ANSWER`].
async fn sample(agent: &Agent, workspace: &Path) -> Result<Figures, String> {
    let server = ScriptedServer::start(vec![Reply::text(ANSWER)]).await;
    let mut command = tokio::process::Command::new(&agent.program);
    agent.model.apply(&server, &mut command)?;
    command
        .args(&agent.args)
        .current_dir(workspace)
        .envs(agent.env.iter().cloned())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);

    let start = Instant::now();
    let mut client = Client::spawn(command)?;
    client.request("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await?;
    let initialize = start.elapsed();

    let start = Instant::now();
    let session = client.request("session/new", json!({"cwd": workspace, "mcpServers": []})).await?;
    let new_session = start.elapsed();
    let session_id = session["sessionId"].as_str().ok_or(format!("session/new answered {session}"))?.to_string();

    let start = Instant::now();
    let prompt = json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "say hello"}]});
    let id = client.send("session/prompt", prompt).await?;
    let (mut first_chunk, mut text) = (None, String::new());
    let answer = loop {
        let message = client.next_message().await?;
        if message["method"] == "session/update"
            && message["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        {
            first_chunk.get_or_insert_with(|| start.elapsed());
            text.push_str(message["params"]["update"]["content"]["text"].as_str().unwrap_or_default());
        }
        if message["id"] == id && message.get("method").is_none() {
            break message;
        }
    };
    let prompt = start.elapsed();
    if answer["result"]["stopReason"] != "end_turn" {
        return Err(format!("session/prompt answered {answer}"));
    }
    // A run that did not stream the whole answer cannot look fast.
    if text.trim() != ANSWER {
        return Err(format!("the agent streamed {text:?}, expected {ANSWER:?}"));
    }
    let first_chunk = first_chunk.ok_or("no agent_message_chunk")?;
    client.child.kill().await.ok();
    Ok(Figures { initialize, new_session, first_chunk, prompt })
}

/// A newline-delimited JSON-RPC client over an agent's stdio. Requests from the agent are
/// answered with "method not found": it was told the client has no capabilities.
struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: i64,
}

impl Client {
    fn spawn(mut command: tokio::process::Command) -> Result<Client, String> {
        let program = command.as_std().get_program().to_string_lossy().into_owned();
        let mut child = command.spawn().map_err(|err| format!("cannot start {program}: {err}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        Ok(Client { child, stdin, stdout, next_id: 0 })
    }

    async fn send(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        Ok(id)
    }

    async fn write(&mut self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.map_err(|err| format!("cannot write to the agent: {err}"))
    }

    /// The result of one request; notifications that come first are read past.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.send(method, params).await?;
        loop {
            let message = self.next_message().await?;
            if message["id"] == id && message.get("method").is_none() {
                return match message.get("error") {
                    Some(error) => Err(format!("{method} failed: {error}")),
                    None => Ok(message["result"].clone()),
                };
            }
        }
    }

    /// The next message from the agent that is not a request to the client.
    async fn next_message(&mut self) -> Result<Value, String> {
        loop {
            let line = tokio::time::timeout(MESSAGE_TIMEOUT, self.stdout.next_line())
                .await
                .map_err(|_| format!("nothing from the agent within {MESSAGE_TIMEOUT:?}"))?
                .map_err(|err| format!("cannot read the agent's stdout: {err}"))?
                .ok_or("the agent closed its stdout")?;
            let message: Value = serde_json::from_str(&line)
                .map_err(|err| format!("the agent printed a non-JSON line ({err}): {line}"))?;
            if message.get("method").is_some() && message.get("id").is_some() {
                let error = json!({"code": -32601, "message": "the bench client offers no methods"});
                self.write(&json!({"jsonrpc": "2.0", "id": message["id"], "error": error})).await?;
                continue;
            }
            return Ok(message);
        }
    }
}
