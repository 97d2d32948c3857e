//! `[[hooks]]` end to end: the real `reins run` against the scripted model, hooks as shell
//! commands that read the event on stdin.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};

use support::{reins_home, reins_run, workspace};

/// Blocks any bash command that mentions `rm -rf`, saying why on stderr.
const GUARD: &str = r#"
[[hooks]]
event = "before_tool"
matcher = "bash"
command = "if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here; use git clean -n first' >&2; exit 2; fi"
"#;

/// Upper-cases each file an edit changed (the first of `files` in the event: enough for one).
const FORMATTER: &str = r#"
[[hooks]]
event = "after_edit"
matcher = "edit|write|apply_patch"
command = "f=$(sed 's/.*\"files\":\\[\"\\([^\"]*\\)\".*/\\1/'); tr a-z A-Z < \"$f\" > \"$f.tmp\" && mv \"$f.tmp\" \"$f\""
"#;

const HANGS: &str = r#"
[[hooks]]
event = "before_tool"
command = "sleep 60"
timeout = 1
"#;

fn tool_result(body: &Value) -> String {
    let last = body["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool", "{last}");
    last["content"].as_str().map(str::to_string).unwrap_or_else(|| last["content"].to_string())
}

fn config(dir: &Path, text: &str) {
    let home = reins_home(dir);
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_before_tool_hook_blocks_a_command_and_the_model_gets_its_reason() {
    let dir = workspace(&[("build/out.o", "object")]);
    config(dir.path(), GUARD);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "bash", json!({"command": "rm -rf build"})),
        Reply::tool_call("c2", "bash", json!({"command": "echo kept"})),
        Reply::text("done"),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--yes", "--no-session", "clean up"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let requests = server.chat_requests();
    let blocked = tool_result(&requests[1].body);
    assert!(blocked.contains("rm -rf is not allowed here; use git clean -n first"), "{blocked}");
    assert!(dir.path().join("build/out.o").exists(), "the command did not run");
    assert!(tool_result(&requests[2].body).contains("kept"), "other commands run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_after_edit_hook_formats_the_file_and_the_next_read_sees_it() {
    let dir = workspace(&[("a.txt", "hello\n")]);
    config(dir.path(), FORMATTER);
    let server = ScriptedServer::start(vec![
        Reply::tool_call(
            "c1",
            "edit",
            json!({"path": "a.txt", "edits": [{"oldText": "hello", "newText": "hello world"}]}),
        ),
        Reply::tool_call("c2", "read", json!({"path": "a.txt"})),
        Reply::text("done"),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--yes", "--no-session", "edit it"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "HELLO WORLD\n");
    let read = tool_result(&server.chat_requests()[2].body);
    assert!(read.contains("HELLO WORLD"), "{read}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_hangs_is_killed_at_its_timeout_and_the_run_goes_on() {
    let dir = workspace(&[]);
    config(dir.path(), HANGS);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "bash", json!({"command": "echo went-on"})),
        Reply::text("done"),
    ])
    .await;
    let started = Instant::now();
    let run = reins_run(&server, dir.path(), &["--yes", "--no-session", "go"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    assert!(tool_result(&server.chat_requests()[1].body).contains("went-on"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_projects_hooks_take_no_effect() {
    let dir = workspace(&[(".reins/config.toml", GUARD), ("build/out.o", "object")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "bash", json!({"command": "rm -rf build"})),
        Reply::text("done"),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--yes", "--no-session", "clean up"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!dir.path().join("build").exists(), "the untrusted project's hook did not block it");
    assert!(!tool_result(&server.chat_requests()[1].body).contains("not allowed"));
}
