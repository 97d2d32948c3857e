//! Nothing a command starts outlives reins. For `reins lsp` and `reins acp` (`reins run` is in
//! `escapes.rs`), the model's bash command leaves `sleep`s in the background — plainly, with
//! `nohup`, with `setsid`, through a double fork — and one in the foreground; then reins ends in
//! each way it can (SIGTERM, SIGHUP, SIGKILL, its stdin closed, the protocol's own exit), and
//! every sleep must end with it.

mod support;

use support::processes::{child_of, wait_for, wait_until_gone};

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;
use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{reins_command, reins_home, workspace};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const WAIT: Duration = Duration::from_secs(20);

/// How reins is made to end.
#[derive(Debug, Clone, Copy)]
enum Ending {
    Signal(Signal),
    StdinClosed,
    /// LSP `shutdown` and `exit`; for ACP, the client's end of stdin (ACP has no exit).
    Exit,
}

/// Which protocol reins speaks.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Face {
    Lsp,
    Acp,
}

/// Four `sleep`s no other test starts, and the command that starts them.
fn sleeps(mark: u32) -> (Vec<String>, String) {
    let sleeps: Vec<String> = (1..=4).map(|n| format!("sleep 500.{mark}{n}")).collect();
    let command = format!(
        "{0} > /dev/null 2>&1 & nohup {1} > /dev/null 2>&1 & (setsid sh -c '{2} & :' > /dev/null 2>&1 &); \
         setsid {3} > /dev/null 2>&1; sleep 600",
        sleeps[0], sleeps[1], sleeps[2], sleeps[3]
    );
    (sleeps, command)
}

/// Starts `reins lsp` or `reins acp` in a workspace whose config lets bash run unasked, has
/// the model start the sleeps, ends reins with `ending`, and checks that every sleep ended.
async fn check(face: Face, ending: Ending, mark: u32) {
    let dir = workspace(&[]);
    let home = reins_home(dir.path());
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), "[approval]\nbash = \"auto\"\n").unwrap();
    let (sleeps, command) = sleeps(mark);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "bash", json!({"command": command, "timeout": 600})),
        Reply::text("never"),
    ])
    .await;
    let subcommand = if face == Face::Lsp { "lsp" } else { "acp" };
    let args: &[&str] = if face == Face::Lsp { &["lsp", "--stdio"] } else { &["acp"] };
    let mut child = reins_command(Some(&server.base_url()), dir.path(), args)
        // The workspace is the session's cwd, which `reins acp` refuses as the home directory itself.
        .env("HOME", dir.path().join(".home"))
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    match face {
        Face::Lsp => start_lsp_run(&mut stdin, &mut lines, dir.path()).await,
        Face::Acp => start_acp_run(&mut stdin, &mut lines, dir.path()).await,
    }
    // Keep reading what reins writes, so it never blocks on a full pipe.
    let drain = tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let pids = wait_for(&sleeps).await;
    match ending {
        Ending::Signal(signal) => {
            let id = child.id().unwrap() as i32;
            let comm = std::fs::read_to_string(format!("/proc/{id}/comm")).unwrap_or_default();
            let reins = if comm.trim() == "setsid" { child_of(id).expect("reins runs under setsid") } else { id };
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(reins), signal).unwrap();
        }
        Ending::StdinClosed => drop(stdin),
        Ending::Exit if face == Face::Lsp => {
            send_frame(&mut stdin, json!({"jsonrpc": "2.0", "id": 90, "method": "shutdown"})).await;
            send_frame(&mut stdin, json!({"jsonrpc": "2.0", "method": "exit"})).await;
        }
        Ending::Exit => drop(stdin),
    }
    tokio::time::timeout(WAIT, child.wait()).await.expect("reins ended").unwrap();
    drain.abort();
    for (pid, line) in pids.iter().zip(&sleeps) {
        assert!(wait_until_gone(*pid).await, "{line} outlived reins {subcommand} after {ending:?}");
    }
}

/// `initialize` (waiting for its answer), `initialized` and `reins.chat.send`, as LSP frames.
async fn start_lsp_run(
    stdin: &mut tokio::process::ChildStdin,
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    root: &Path,
) {
    let root_uri = format!("file://{}", root.display());
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"processId": null, "rootUri": root_uri, "capabilities": {}}});
    send_frame(stdin, initialize).await;
    // Frames end without a newline: read bytes until the answer is in.
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains(r#""id":1}"#) {
        let mut chunk = [0u8; 4096];
        let read = tokio::time::timeout(WAIT, lines.get_mut().read(&mut chunk)).await.unwrap().unwrap();
        assert!(read > 0, "reins lsp ended before it answered initialize");
        seen.extend_from_slice(&chunk[..read]);
    }
    send_frame(stdin, json!({"jsonrpc": "2.0", "method": "initialized", "params": {}})).await;
    let send = json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
        "params": {"command": "reins.chat.send", "arguments": [{"text": "go"}]}});
    send_frame(stdin, send).await;
}

async fn send_frame(stdin: &mut tokio::process::ChildStdin, message: Value) {
    let body = message.to_string();
    stdin.write_all(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).await.unwrap();
    stdin.flush().await.unwrap();
}

/// `initialize`, `session/new` and `session/prompt`, as ACP lines.
async fn start_acp_run(
    stdin: &mut tokio::process::ChildStdin,
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    root: &Path,
) {
    let mut exchange = async |request: Value| -> Value {
        stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
        loop {
            let line = tokio::time::timeout(WAIT, lines.next_line()).await.unwrap().unwrap().expect("a line");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == request["id"] {
                return message;
            }
        }
    };
    exchange(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})).await;
    let cwd = root.display().to_string();
    let new = exchange(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": cwd, "mcpServers": []}}))
    .await;
    let session = new["result"]["sessionId"].as_str().expect("a session").to_string();
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}});
    stdin.write_all(format!("{prompt}\n").as_bytes()).await.unwrap();
    stdin.flush().await.unwrap();
}

macro_rules! endings {
    ($($name:ident: $face:expr, $ending:expr, $mark:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            check($face, $ending, $mark).await;
        }
    )*};
}

endings! {
    lsp_sigterm: Face::Lsp, Ending::Signal(Signal::SIGTERM), 1;
    lsp_sighup: Face::Lsp, Ending::Signal(Signal::SIGHUP), 2;
    lsp_sigkill: Face::Lsp, Ending::Signal(Signal::SIGKILL), 3;
    lsp_stdin_closed: Face::Lsp, Ending::StdinClosed, 4;
    lsp_shutdown_and_exit: Face::Lsp, Ending::Exit, 5;
    acp_sigterm: Face::Acp, Ending::Signal(Signal::SIGTERM), 6;
    acp_sighup: Face::Acp, Ending::Signal(Signal::SIGHUP), 7;
    acp_sigkill: Face::Acp, Ending::Signal(Signal::SIGKILL), 8;
    acp_stdin_closed: Face::Acp, Ending::StdinClosed, 9;
}
