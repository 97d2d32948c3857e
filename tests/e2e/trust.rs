//! The escape suite's classes that are not about the sandbox (issue 24): crafted session files
//! that must not hang or loop `reins` (a duplicated entry id that names itself as its parent, a
//! `parentSession` that is a FIFO), checkout records that lie about their text, model streams
//! that keep a run waiting with usage-only events, and ACP working directories.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use support::{reins_command, workspace};

/// What a run of `reins ARGS` printed, or `None` when it was still running after `limit`.
async fn reins_within(dir: &Path, args: &[&str], limit: Duration) -> Option<support::Run> {
    reins_within_on(None, dir, args, limit).await
}

/// [`reins_within`] with the model server at `base_url`.
async fn reins_within_on(base_url: Option<&str>, dir: &Path, args: &[&str], limit: Duration) -> Option<support::Run> {
    let output = reins_command(base_url, dir, args).output();
    let output = tokio::time::timeout(limit, output).await.ok()?.expect("run reins");
    Some(support::Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// A session file of these entries (each `(type, id, parentId, extra fields)`) under `dir`.
fn session_file(dir: &Path, name: &str, parent_session: Option<&str>, entries: &[serde_json::Value]) -> String {
    let mut header = serde_json::json!({
        "type": "session", "version": 3, "id": name, "timestamp": "2026-12-01T13:00:19.363Z",
        "cwd": dir.display().to_string(),
    });
    if let Some(parent) = parent_session {
        header["parentSession"] = parent.into();
    }
    let mut text = format!("{header}\n");
    for entry in entries {
        text.push_str(&format!("{entry}\n"));
    }
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn message(id: &str, parent: Option<&str>, role: &str, text: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "message", "id": id, "parentId": parent, "timestamp": "2026-12-01T13:00:20.000Z",
        "message": {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 0},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicated_id_that_names_itself_as_parent_does_not_loop_the_tree() {
    let dir = workspace(&[]);
    let path = session_file(
        dir.path(),
        "dup",
        None,
        &[
            message("a1", None, "user", "hello"),
            message("b2", Some("a1"), "assistant", "hi"),
            message("a1", Some("a1"), "user", "again"),
        ],
    );
    let started = Instant::now();
    let run = reins_within(dir.path(), &["sessions", "tree", &path], Duration::from_secs(20)).await;
    let run = run.unwrap_or_else(|| panic!("`reins sessions tree` still ran after {:?}", started.elapsed()));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // Every entry once, and nothing more.
    assert_eq!(run.stdout.lines().count(), 4, "{}", run.stdout);
    for text in ["hello", "hi", "again"] {
        assert_eq!(run.stdout.matches(text).count(), 1, "{text} in {}", run.stdout);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_session_that_is_a_fifo_blocks_neither_a_run_nor_a_checkout() {
    let dir = workspace(&[("a.txt", "one\n")]);
    let fifo = dir.path().join("parent.jsonl");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    let path = session_file(
        dir.path(),
        "child",
        Some(&fifo.display().to_string()),
        &[message("u1", None, "user", "hello"), message("a1", Some("u1"), "assistant", "hi")],
    );
    let server = ScriptedServer::start(vec![
        Reply::tool_call(
            "call_1",
            "edit",
            serde_json::json!({"path": "a.txt", "edits": [{"oldText": "one", "newText": "two"}]}),
        ),
        Reply::text("Edited."),
    ])
    .await;
    let limit = Duration::from_secs(30);
    let args = ["run", "--session", &path, "--yes", "change one to two"];
    let run = reins_within_on(Some(&server.base_url()), dir.path(), &args, limit).await;
    let run = run.expect("`reins run --session` with a FIFO parent still ran after 30 s");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "two\n", "{}\n{}", run.stdout, run.stderr);
    // The rest of the turn was written: the edit's checkpoint and the answer.
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("reins.file_change") && written.contains("Edited."), "{written}");

    let args = ["sessions", "checkout", "a1", "--session", &path, "--yes"];
    let checkout = reins_within(dir.path(), &args, limit).await;
    let checkout = checkout.expect("`reins sessions checkout` with a FIFO parent still ran after 30 s");
    assert_eq!(checkout.code, Some(0), "{}", checkout.stderr);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\n");
}

/// `reins acp` answers, one request a line: the answer (result or error) to each.
async fn acp_answers(server: &ScriptedServer, dir: &Path, requests: &[serde_json::Value]) -> Vec<serde_json::Value> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = reins_command(Some(&server.base_url()), dir, &["acp"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("start reins acp");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answers = Vec::new();
    for request in requests {
        stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
        // Notifications (session/update) come before the answer.
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await;
            let line = line.expect("an answer in time").unwrap().expect("a line");
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            if message.get("id") == request.get("id") {
                answers.push(message);
                break;
            }
        }
    }
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_refuses_the_root_and_home_as_workspaces_and_loads_only_stored_sessions_of_their_project() {
    // `reins_command` makes the temp dir HOME.
    let dir = workspace(&[("a/x.txt", "a\n"), ("b/x.txt", "b\n")]);
    let home = dir.path().canonicalize().unwrap();
    let (a, b) = (home.join("a"), home.join("b"));
    let crafted = home.join("evil.jsonl");
    let header = serde_json::json!({"type": "session", "version": 3, "id": crafted, "timestamp": "2026-12-01T13:00:19.363Z", "cwd": a});
    std::fs::write(&crafted, format!("{header}\n")).unwrap();
    let server = ScriptedServer::start(vec![Reply::text("Hello.")]).await;
    let request = |id: u64, method: &str, params: serde_json::Value| serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let answers = acp_answers(
        &server,
        dir.path(),
        &[
            request(0, "initialize", serde_json::json!({"protocolVersion": 1})),
            request(1, "session/new", serde_json::json!({"cwd": "/", "mcpServers": []})),
            request(2, "session/new", serde_json::json!({"cwd": home, "mcpServers": []})),
            request(3, "session/new", serde_json::json!({"cwd": a, "mcpServers": []})),
        ],
    )
    .await;
    let error = |answer: &serde_json::Value| answer["error"]["message"].as_str().unwrap_or("").to_string();
    assert!(
        error(&answers[1]).contains("is the root directory") && error(&answers[1]).contains("a folder inside"),
        "{}",
        answers[1]
    );
    assert!(
        error(&answers[2]).contains("is your home directory") && error(&answers[2]).contains("a folder inside"),
        "{}",
        answers[2]
    );
    let session = answers[3]["result"]["sessionId"].as_str().expect("a session in a project folder").to_string();

    let answers = acp_answers(
        &server,
        dir.path(),
        &[
            request(0, "initialize", serde_json::json!({"protocolVersion": 1})),
            request(1, "session/prompt", serde_json::json!({"sessionId": "none", "prompt": []})),
        ],
    )
    .await;
    assert!(answers[1].get("error").is_some());
    // Its file is written at the first prompt.
    let answers = acp_answers(
        &server,
        dir.path(),
        &[
            request(0, "initialize", serde_json::json!({"protocolVersion": 1})),
            request(1, "session/load", serde_json::json!({"sessionId": session, "cwd": a, "mcpServers": []})),
            request(
                2,
                "session/prompt",
                serde_json::json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
            ),
        ],
    )
    .await;
    assert!(answers[1].get("result").is_some() && answers[2].get("result").is_some(), "{answers:?}");

    let answers = acp_answers(
        &server,
        dir.path(),
        &[
            request(0, "initialize", serde_json::json!({"protocolVersion": 1})),
            // Project A's session with B as its working directory.
            request(1, "session/load", serde_json::json!({"sessionId": session, "cwd": b, "mcpServers": []})),
            // A file whose header id is its own path: not a session of the store.
            request(2, "session/load", serde_json::json!({"sessionId": crafted, "cwd": a, "mcpServers": []})),
        ],
    )
    .await;
    let wrong_project = error(&answers[1]);
    assert!(wrong_project.contains(&a.display().to_string()) && wrong_project.contains("cwd"), "{}", answers[1]);
    assert!(error(&answers[2]).contains("not a session id"), "{}", answers[2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_goes_out_beyond_the_context_window() {
    let dir = workspace(&[]);
    // About 200,000 tokens, over the 128,000 of a model reins does not know.
    let huge = "word ".repeat(160_000);
    let path = session_file(
        dir.path(),
        "huge",
        None,
        &[message("u1", None, "user", &huge), message("a1", Some("u1"), "assistant", "noted")],
    );
    let server = ScriptedServer::start(vec![Reply::text("A summary."), Reply::text("Fine.")]).await;
    let args = ["run", "--session", &path, "go on"];
    let run = reins_within_on(Some(&server.base_url()), dir.path(), &args, Duration::from_secs(60)).await;
    let run = run.expect("`reins run` finished");
    let sizes: Vec<usize> = server.chat_requests().iter().map(|request| request.body.to_string().len()).collect();
    // 128,000 tokens of four characters, and some room for the JSON around them.
    assert!(sizes.iter().all(|&size| size < 600_000), "requests of {sizes:?} bytes; {}", run.stderr);
    assert!(run.code == Some(0) || run.stderr.contains("context window"), "{}", run.stderr);
}
