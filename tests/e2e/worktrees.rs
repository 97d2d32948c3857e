//! End-to-end tests of agents on worktrees (`reins run --worktree`): the real binary, a scripted
//! model server, a real git repository in a temp dir, and a scripted typist changing the user's
//! files while three agents work at once.

mod support;

use std::path::Path;
use std::time::Duration;

use scripted_llm::{Fault, Reply, ScriptedServer};
use serde_json::json;
use support::{reins_home, reins_run, workspace};

fn sh(dir: &Path, script: &str) {
    let status = std::process::Command::new("sh").arg("-c").arg(script).current_dir(dir).status().unwrap();
    assert!(status.success(), "{script}");
}

/// A repository with a.txt and b.txt committed and an uncommitted change to a.txt's last line.
fn repository() -> tempfile::TempDir {
    let dir = workspace(&[
        ("a.txt", "one\ntwo\nthree\nfour\nfive\n"),
        ("b.txt", "b\n"),
        (".gitignore", ".reins-home-for-test\n"),
    ]);
    sh(dir.path(), "git init -q && git add . && git -c user.name=t -c user.email=t@t commit -qm init");
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\nfour\nfive!\n").unwrap();
    dir
}

fn worktree_records(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(reins_home(dir).join("worktrees")) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect()
}

fn edit(agent: &str, old: &str, new: &str) -> Reply {
    let edits = json!([{"oldText": old, "newText": new}]);
    Reply::tool_call(format!("call_{agent}"), "edit", json!({"path": "a.txt", "edits": edits})).when(agent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_agents_on_worktrees_land_their_changes_around_the_users_typing() {
    let dir = repository();
    // Each agent changes one line of a.txt, then answers after a while (so the typist types
    // meanwhile, and the three finish one after the other); the third also rewrites b.txt.
    let server = ScriptedServer::start(vec![
        edit("agent-one", "one", "ONE"),
        Reply::text("one done").with_delay_ms(5000).when("agent-one"),
        edit("agent-two", "two", "TWO"),
        Reply::text("two done").with_delay_ms(6000).when("agent-two"),
        Reply::tool_call("call_b", "write", json!({"path": "b.txt", "content": "agent b\n"})).when("agent-three"),
        edit("agent-three", "three", "THREE"),
        Reply::text("three done").with_delay_ms(7000).when("agent-three"),
    ])
    .await;
    let args = ["agent-one", "agent-two", "agent-three"].map(|prompt| ["--worktree", "--yes", prompt]);
    let runs = args.iter().map(|args| reins_run(&server, dir.path(), args));
    let typist = async {
        // Once the three worktrees are there, the user types at the end of a.txt and rewrites b.txt.
        // Counted as seen, not as there at once: on a slow machine the first may be done and gone
        // before the third is made, and the typist must not wait for ever then (the asserts say it).
        let mut seen = std::collections::HashSet::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while seen.len() < 3 && std::time::Instant::now() < deadline {
            seen.extend(worktree_records(dir.path()));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\nfour\nfive!\nsix\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "user b\n").unwrap();
    };
    let (runs, ()) = tokio::join!(futures::future::join_all(runs), typist);

    for run in &runs {
        assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    }
    // Every agent's line, the user's uncommitted change and what they typed meanwhile.
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "ONE\nTWO\nTHREE\nfour\nfive!\nsix\n");
    // The user rewrote b.txt too: the third agent's version is not written over it, and named.
    assert_eq!(std::fs::read_to_string(dir.path().join("b.txt")).unwrap(), "user b\n");
    assert!(runs[2].stderr.contains("not applied, b.txt"), "{}", runs[2].stderr);
    // The first two are done with and removed; the third keeps its worktree for b.txt.
    let kept = worktree_records(dir.path());
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(runs[2].stderr.contains("is kept at"), "{}", runs[2].stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_agents_worktree_and_session_survive() {
    let dir = repository();
    let server = ScriptedServer::start(vec![
        edit("agent-four", "one", "ONE"),
        Reply::fault(Fault::StallAfterHeaders).when("agent-four"),
    ])
    .await;
    let mut child =
        support::reins_command(Some(&server.base_url()), dir.path(), &["run", "--worktree", "--yes", "agent-four"])
            .spawn()
            .unwrap();
    let worktree = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if server.chat_requests().len() >= 2
                && let Some(record) = worktree_records(dir.path()).first()
            {
                return record.with_extension("");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the agent edited its worktree");
    // kill -9 of reins (setsid execs it in place: the child is reins itself).
    let pid = child.id().unwrap();
    sh(dir.path(), &format!("kill -9 {pid}"));
    let _ = child.wait().await;

    assert_eq!(std::fs::read_to_string(worktree.join("a.txt")).unwrap(), "ONE\ntwo\nthree\nfour\nfive!\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\ntwo\nthree\nfour\nfive!\n");
    let sessions = reins_home(dir.path()).join("sessions");
    let files = walk(&sessions);
    assert!(files.iter().any(|file| std::fs::read_to_string(file).unwrap().contains("agent-four")), "{files:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_git_a_worktree_agent_is_refused_with_the_reason() {
    let dir = workspace(&[("a.txt", "one\n")]);
    let server = ScriptedServer::start(Vec::new()).await;
    let run = reins_run(&server, dir.path(), &["--worktree", "--yes", "go"]).await;
    assert_eq!(run.code, Some(1), "stderr: {}", run.stderr);
    assert!(run.stderr.contains("needs git"), "{}", run.stderr);
    assert!(server.chat_requests().is_empty());
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .flat_map(|entry| if entry.path().is_dir() { walk(&entry.path()) } else { vec![entry.path()] })
        .collect()
}
