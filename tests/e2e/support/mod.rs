//! Helpers shared by the end-to-end tests: run the real binary against a scripted server in a
//! temp workspace, and read what it printed and what the server received.
#![allow(dead_code)]

pub mod processes;

use std::path::Path;
use std::process::Stdio;

use scripted_llm::ScriptedServer;
use serde_json::Value;

/// Where tests/mcp/install.sh put the MCP reference server and its SDK (installed on first use).
pub fn mcp_prefix() -> &'static Path {
    static PREFIX: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/install.sh");
        let output = std::process::Command::new("bash").arg(script).output().expect("run tests/mcp/install.sh");
        assert!(output.status.success(), "tests/mcp/install.sh failed: {}", String::from_utf8_lossy(&output.stderr));
        std::path::PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
    })
}

/// A key that must never show up in anything reins prints.
pub const CANARY_KEY: &str = "sk-canary-7f3a9c1e55d04b2b";

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as JSON lines; panics if any line is not JSON.
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}")))
            .collect()
    }

    pub fn event_types(&self) -> String {
        self.events().iter().map(|e| e["type"].as_str().unwrap_or("?").to_string()).collect::<Vec<_>>().join("\n")
    }
}

/// Runs `reins run ARGS` in `workspace` against `server`, with no controlling terminal (setsid),
/// so approvals cannot block on a prompt.
pub async fn reins_run(server: &ScriptedServer, workspace: &Path, args: &[&str]) -> Run {
    reins_run_with(Some(&server.base_url()), workspace, args).await
}

pub async fn reins_run_with(base_url: Option<&str>, workspace: &Path, args: &[&str]) -> Run {
    let mut full = vec!["run"];
    full.extend_from_slice(args);
    reins(base_url, workspace, &full).await
}

/// Runs `reins ARGS` to the end; asserts the API key shows nowhere in what it printed.
pub async fn reins(base_url: Option<&str>, workspace: &Path, args: &[&str]) -> Run {
    let output = reins_command(base_url, workspace, args).output().await.expect("run reins");
    let run = Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(!run.stdout.contains(CANARY_KEY) && !run.stderr.contains(CANARY_KEY), "the API key leaked");
    run
}

/// `reins ARGS` in `workspace`, with no controlling terminal (setsid, so approvals cannot block
/// on a prompt), a clean environment and `REINS_HOME` inside the workspace.
pub fn reins_command(base_url: Option<&str>, workspace: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("setsid");
    command
        .arg("--wait")
        .arg(env!("CARGO_BIN_EXE_reins"))
        .args(args)
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", workspace)
        .env("REINS_HOME", reins_home(workspace))
        .env("OPENAI_API_KEY", CANARY_KEY)
        .env("REINS_MODEL", "scripted-model")
        // A test's MCP servers are in its first request however loaded the machine (one test
        // sets the wait of a plain run).
        .env("REINS_MCP_STARTUP_WAIT", "60")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(url) = base_url {
        command.env("OPENAI_BASE_URL", url);
    }
    command
}

pub fn reins_home(workspace: &Path) -> std::path::PathBuf {
    workspace.join(".reins-home-for-test")
}

pub fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    dir
}

/// The messages of a recorded request, as `role: summary` lines.
pub fn transcript(body: &Value) -> String {
    let mut lines = Vec::new();
    for message in body["messages"].as_array().unwrap() {
        let role = message["role"].as_str().unwrap();
        let mut line = format!("{role}:");
        if role == "system" {
            line.push_str(" <system prompt>");
        } else if let Some(text) = message["content"].as_str() {
            line.push_str(&format!(" {text:?}"));
        } else if let Some(parts) = message["content"].as_array() {
            for part in parts {
                line.push_str(&format!(" {:?}", part["text"].as_str().unwrap_or("<non-text>")));
            }
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            line.push_str(&format!(
                " call {} {}({})",
                call["id"].as_str().unwrap(),
                call["function"]["name"].as_str().unwrap(),
                call["function"]["arguments"].as_str().unwrap()
            ));
        }
        if let Some(id) = message["tool_call_id"].as_str() {
            line.push_str(&format!(" [for {id}]"));
        }
        lines.push(line);
    }
    lines.join("\n")
}

/// Every file under `dir` whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if String::from_utf8_lossy(&std::fs::read(&path).unwrap()).contains(needle) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// Ctrl-C typed at a terminal: its line discipline sends SIGINT to the program in front.
pub const CTRL_C: &str = "\x03";
/// Ctrl-\\ typed at a terminal: SIGQUIT.
pub const CTRL_BACKSLASH: &str = "\x1c";

/// Runs `reins run PROMPT` under a pseudo-terminal, typing `answers` as [`reins_in_terminal`].
pub async fn reins_run_in_terminal(
    server: &ScriptedServer,
    dir: &std::path::Path,
    prompt: &str,
    answers: &[&str],
) -> String {
    reins_in_terminal(Some(&server.base_url()), dir, &["run", prompt], answers).await.0
}

/// Runs `reins ARGS` under a pseudo-terminal (`script` from util-linux), typing `answers` a line
/// at a time once each question (`? [y/N]`, a hunk's `? [y,n,a,d,c,?]` or `? [y,n,c,?]`, a reason or a comment) shows, as a person at the terminal would;
/// an answer at a hunk's prompt (one key) and one that is a control character ([`CTRL_C`]) are
/// typed as they are, without Enter.
/// What the terminal showed, and the exit status.
pub async fn reins_in_terminal(
    base_url: Option<&str>,
    dir: &std::path::Path,
    args: &[&str],
    answers: &[&str],
) -> (String, Option<i32>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let quoted: Vec<String> = args.iter().map(|arg| format!("'{}'", arg.replace('\'', ""))).collect();
    // `exec`: reins itself is the program in front, which a signal typed at the terminal reaches
    // (not a shell that would die of it first).
    let command_line = format!("exec {} {}", env!("CARGO_BIN_EXE_reins"), quoted.join(" "));
    let mut command = tokio::process::Command::new("script");
    command
        .args(["-qec", &command_line, "/dev/null"])
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("REINS_HOME", reins_home(dir))
        .env("OPENAI_API_KEY", CANARY_KEY)
        .env("REINS_MODEL", "scripted-model")
        // A test's MCP servers are in its first request however loaded the machine (one test
        // sets the wait of a plain run).
        .env("REINS_MCP_STARTUP_WAIT", "60")
        .env("TERM", "dumb")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(url) = base_url {
        command.env("OPENAI_BASE_URL", url);
    }
    let mut child = command.spawn().expect("script (util-linux) runs");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut screen = String::new();
    let mut buffer = [0u8; 4096];
    let mut answers = answers.iter();
    let mut asked = 0;
    loop {
        let read = tokio::time::timeout(std::time::Duration::from_secs(20), stdout.read(&mut buffer)).await;
        let Ok(Ok(n)) = read else { panic!("the terminal went quiet: {screen}") };
        if n == 0 {
            break;
        }
        screen.push_str(&String::from_utf8_lossy(&buffer[..n]));
        // Each question ends with a prompt; answer it once it shows.
        let questions = ["? [y/N]", "? [y,n,c,?]", "? [y,n,a,d,c,?]", "Reason for the model", "Comment for the model"]
            .iter()
            .map(|question| screen.matches(question).count())
            .sum::<usize>();
        // A hunk's prompt reads one key (stdin is a terminal): its answer is typed without Enter.
        let last_prompt_reads_a_key =
            ["? [y,n,c,?]", "? [y,n,a,d,c,?]"].iter().filter_map(|prompt| screen.rfind(prompt)).max().is_some_and(
                |at| {
                    ["? [y/N]", "Reason for the model", "Comment for the model"]
                        .iter()
                        .filter_map(|prompt| screen.rfind(prompt))
                        .all(|other| other < at)
                },
            );
        while asked < questions {
            asked += 1;
            if let Some(answer) = answers.next() {
                let typed = match answer.chars().all(char::is_control) || last_prompt_reads_a_key {
                    true => answer.to_string(),
                    false => format!("{answer}\n"),
                };
                stdin.write_all(typed.as_bytes()).await.unwrap();
            }
        }
    }
    let status = child.wait().await.ok().and_then(|status| status.code());
    assert!(!screen.contains(CANARY_KEY));
    (screen, status)
}
