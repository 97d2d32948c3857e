//! End-to-end tests of sessions: `reins run --continue/--session/--fork`, `reins sessions`, and
//! what a killed process leaves on disk.

mod support;

use std::time::Duration;

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{reins, reins_command, reins_home, reins_run, transcript, workspace};
use tokio::io::{AsyncBufReadExt, BufReader};

fn sessions_json(run: &support::Run) -> Value {
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", run.stdout))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_remembers_the_previous_exchange() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![
        Reply::text("Nice to meet you, ACai."),
        Reply::text("Your name is ACai and your lucky number is 7."),
    ])
    .await;
    let first = reins_run(&server, dir.path(), &["--continue", "my name is ACai, my lucky number is 7"]).await;
    assert_eq!(first.code, Some(0), "stderr: {}", first.stderr);
    let second = reins_run(&server, dir.path(), &["--continue", "what is my name and lucky number?"]).await;
    assert_eq!(second.code, Some(0), "stderr: {}", second.stderr);
    assert_eq!(second.stdout, "Your name is ACai and your lucky number is 7.\n");

    let requests = server.chat_requests();
    expect_test::expect![[r#"
        system: <system prompt>
        user: "my name is ACai, my lucky number is 7"
        assistant: "Nice to meet you, ACai."
        user: "what is my name and lucky number?""#]]
    .assert_eq(&transcript(&requests[1].body));

    let list = sessions_json(&reins(None, dir.path(), &["sessions", "list", "--json"]).await);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["firstMessage"], "my name is ACai, my lucky number is 7");
    assert!(list[0]["entryCount"].as_u64().unwrap() >= 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_tree_without_an_id_shows_the_most_recent_session() {
    let dir = workspace(&[]);
    let empty = reins(None, dir.path(), &["sessions", "tree"]).await;
    assert_eq!(empty.code, Some(1));
    // Sessions are kept per workspace: the message names the one looked in.
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(empty.stderr, format!("reins: there are no sessions in this workspace ({}) yet\n", root.display()));
    let list = reins(None, dir.path(), &["sessions", "list"]).await;
    assert_eq!(list.stdout, format!("no sessions in this workspace ({}) yet\n", root.display()));

    let server = ScriptedServer::start(vec![Reply::text("A"), Reply::text("B"), Reply::text("A again")]).await;
    let tree_shows = |first_message: &'static str| {
        let dir = dir.path();
        async move {
            let tree = sessions_json(&reins(None, dir, &["sessions", "tree", "--json"]).await);
            let user = tree["nodes"].as_array().unwrap().iter().find(|node| node["role"] == "user").unwrap().clone();
            assert_eq!(user["preview"], first_message, "{tree:#}");
            let text = reins(None, dir, &["sessions", "tree"]).await;
            assert_eq!(text.code, Some(0), "{}", text.stderr);
            assert!(text.stdout.starts_with(tree["sessionId"].as_str().unwrap()), "{}", text.stdout);
            tree["sessionId"].as_str().unwrap().to_string()
        }
    };
    assert_eq!(reins_run(&server, dir.path(), &["first session"]).await.code, Some(0));
    let first = tree_shows("first session").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(reins_run(&server, dir.path(), &["second session"]).await.code, Some(0));
    let second = tree_shows("second session").await;
    assert_ne!(first, second);
    // Most recent means last written, not last created.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(reins_run(&server, dir.path(), &["--session", &first, "the first again"]).await.code, Some(0));
    assert_eq!(tree_shows("first session").await, first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_starts_from_an_earlier_entry_and_keeps_the_original() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("A1"), Reply::text("A2"), Reply::text("A2 on the fork")]).await;
    assert_eq!(reins_run(&server, dir.path(), &["Q1"]).await.code, Some(0));
    assert_eq!(reins_run(&server, dir.path(), &["--continue", "Q2"]).await.code, Some(0));

    let list = sessions_json(&reins(None, dir.path(), &["sessions", "list", "--json"]).await);
    let original = list[0]["id"].as_str().unwrap().to_string();
    let tree = sessions_json(&reins(None, dir.path(), &["sessions", "tree", &original, "--json"]).await);
    let nodes = tree["nodes"].as_array().unwrap();
    let answer_one = nodes.iter().find(|n| n["role"] == "assistant" && n["preview"] == "A1").unwrap();
    let entry = answer_one["id"].as_str().unwrap();
    assert_eq!(tree["leaf"], nodes.last().unwrap()["id"]);

    let forked = reins_run(&server, dir.path(), &["--session", &original, "--fork", entry, "Q2 again"]).await;
    assert_eq!(forked.code, Some(0), "stderr: {}", forked.stderr);
    expect_test::expect![[r#"
        system: <system prompt>
        user: "Q1"
        assistant: "A1"
        user: "Q2 again""#]]
    .assert_eq(&transcript(&server.chat_requests()[2].body));

    let list = sessions_json(&reins(None, dir.path(), &["sessions", "list", "--json"]).await);
    assert_eq!(list.as_array().unwrap().len(), 2);
    let fork = list.as_array().unwrap().iter().find(|s| s["id"] != original.as_str()).unwrap();
    assert!(fork["parentSession"].as_str().unwrap().ends_with(".jsonl"));
    // The original still ends where it ended.
    let tree = sessions_json(&reins(None, dir.path(), &["sessions", "tree", &original, "--json"]).await);
    let leaf = tree["leaf"].as_str().unwrap();
    let leaf_node = tree["nodes"].as_array().unwrap().iter().find(|n| n["id"] == leaf).unwrap();
    assert_eq!(leaf_node["preview"], "A2");
}

/// Issue 28, item 4: `--fork` at one of the user's messages starts before it, the prompt taking
/// its place (never two user messages in a row), and says so with the message's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_at_a_user_message_redoes_it() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("A1"), Reply::text("A2"), Reply::text("smaller")]).await;
    assert_eq!(reins_run(&server, dir.path(), &["Q1"]).await.code, Some(0));
    assert_eq!(reins_run(&server, dir.path(), &["--continue", "Tidy up calc.py"]).await.code, Some(0));
    let tree = sessions_json(&reins(None, dir.path(), &["sessions", "tree", "--json"]).await);
    let nodes = tree["nodes"].as_array().unwrap();
    let asked = nodes.iter().find(|n| n["role"] == "user" && n["preview"] == "Tidy up calc.py").unwrap();

    let forked =
        reins_run(&server, dir.path(), &["--fork", asked["id"].as_str().unwrap(), "try again but smaller"]).await;
    assert_eq!(forked.code, Some(0), "stderr: {}", forked.stderr);
    expect_test::expect![[r#"
        system: <system prompt>
        user: "Q1"
        assistant: "A1"
        user: "try again but smaller""#]]
    .assert_eq(&transcript(&server.chat_requests()[2].body));
    assert!(forked.stderr.contains("forked before your message \"Tidy up calc.py\""), "{}", forked.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_session_keeps_nothing_and_a_locked_session_is_refused() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![
        Reply::text("ephemeral"),
        Reply::text("kept"),
        Reply::text("slow answer").with_delay_ms(1500),
    ])
    .await;
    assert_eq!(reins_run(&server, dir.path(), &["--no-session", "hi"]).await.code, Some(0));
    assert!(!reins_home(dir.path()).join("sessions").exists());

    assert_eq!(reins_run(&server, dir.path(), &["hi"]).await.code, Some(0));
    let list = sessions_json(&reins(None, dir.path(), &["sessions", "list", "--json"]).await);
    let id = list[0]["id"].as_str().unwrap().to_string();

    // A first process holds the session while the model is slow; a second one must not append.
    let mut holder = reins_command(Some(&server.base_url()), dir.path(), &["run", "--session", &id, "take your time"])
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let second = reins_run(&server, dir.path(), &["--session", &id, "me too"]).await;
    assert_eq!(second.code, Some(1));
    assert!(second.stderr.contains("another") || second.stderr.contains("lock"), "{}", second.stderr);
    assert!(holder.wait().await.unwrap().success());
}

/// Kills `reins run` at many points of a long run; every file must still open, and hold every
/// turn whose `turn_end` the process had printed (the save point comes before the event).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_loses_at_most_the_turn_in_progress() {
    let dir = workspace(&[("notes.txt", "one\ntwo\nthree\n")]);
    let turns = 12;
    // A fixed pseudo-random sequence of kill times, so a failure can be replayed.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for attempt in 0..16u64 {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let script: Vec<Reply> = (0..turns)
            .map(|turn| {
                Reply::tool_call(
                    format!("c{attempt}_{turn}"),
                    "read",
                    json!({"path": "notes.txt", "offset": 1 + turn % 3}),
                )
                .with_chunk_delay_ms(3)
            })
            .chain([Reply::text("done")])
            .collect();
        let server = ScriptedServer::start(script).await;
        let mut child = reins_command(Some(&server.base_url()), dir.path(), &["run", "--json", "--yes", "read it"])
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        // Even attempts kill right after the k-th save point (plus a few ms); odd ones at a
        // random moment of the run, wherever it is: mid-stream, mid-tool or mid-flush.
        let kill_after = attempt as usize / 2 % turns;
        let kill_at = tokio::time::Instant::now() + Duration::from_millis(5 + (seed >> 33) % 600);
        let mut lines = BufReader::new(stdout).lines();
        let mut turn_ends = 0;
        let mut session_messages = 0;
        loop {
            let line = if attempt % 2 == 1 {
                match tokio::time::timeout_at(kill_at, lines.next_line()).await {
                    Ok(line) => line,
                    Err(_) => break,
                }
            } else {
                lines.next_line().await
            };
            let Ok(Some(line)) = line else { break };
            let event: Value = serde_json::from_str(&line).unwrap();
            if event["type"] == "turn_end" {
                turn_ends += 1;
                session_messages = 1 + 2 * turn_ends; // the prompt, then a call and a result per turn
                if attempt % 2 == 0 && turn_ends > kill_after {
                    tokio::time::sleep(Duration::from_millis(attempt % 4 * 7)).await;
                    break;
                }
            }
        }
        child.start_kill().unwrap();
        let _ = child.wait().await;

        let list = sessions_json(&reins(None, dir.path(), &["sessions", "list", "--json"]).await);
        let newest = &list[0];
        let tree = sessions_json(
            &reins(None, dir.path(), &["sessions", "tree", newest["path"].as_str().unwrap(), "--json"]).await,
        );
        let messages = tree["nodes"].as_array().unwrap().iter().filter(|n| n["kind"] == "message").count();
        assert!(
            messages >= session_messages,
            "attempt {attempt}: {messages} messages on disk, {session_messages} saved"
        );

        // The file still opens for writing and can be continued.
        server.push(Reply::text("resumed"));
        let resumed = reins_run(&server, dir.path(), &["--session", newest["id"].as_str().unwrap(), "go on"]).await;
        assert_eq!(resumed.code, Some(0), "attempt {attempt}: {}", resumed.stderr);
        let last_request = server.chat_requests().pop().unwrap();
        let body = &last_request.body["messages"];
        let calls = body.as_array().unwrap().iter().filter(|m| m["tool_calls"].is_array()).count();
        let results = body.as_array().unwrap().iter().filter(|m| m["role"] == "tool").count();
        assert_eq!(calls, results, "attempt {attempt}: every call has its result");
    }
}

/// `reins ARGS`, failed when it takes more than 20 s (what these tests cover used to hang).
async fn reins_within(base_url: Option<&str>, dir: &std::path::Path, args: &[&str]) -> support::Run {
    tokio::time::timeout(Duration::from_secs(20), reins(base_url, dir, args))
        .await
        .unwrap_or_else(|_| panic!("reins {args:?} hung"))
}

/// The session files of the workspace at `dir`.
fn session_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let root = reins_home(dir).join("sessions");
    let Ok(workspaces) = std::fs::read_dir(&root) else { return Vec::new() };
    let mut files: Vec<_> = workspaces
        .flatten()
        .flat_map(|workspace| std::fs::read_dir(workspace.path()).unwrap().flatten().map(|file| file.path()))
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifos_and_devices_among_the_sessions_neither_hang_nor_hide_the_good_ones() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("A1")]).await;
    assert_eq!(reins_run(&server, dir.path(), &["Q1"]).await.code, Some(0));
    let good = session_files(dir.path()).remove(0);
    let sessions = good.parent().unwrap();
    let fifo = sessions.join("2099-01-01T00-00-00-000Z_fifo.jsonl");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::os::unix::fs::symlink("/dev/zero", sessions.join("2098-01-01T00-00-00-000Z_zero.jsonl")).unwrap();

    let list = sessions_json(&reins_within(None, dir.path(), &["sessions", "list", "--json"]).await);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["path"], good.display().to_string());
    for target in [fifo.display().to_string(), "2099".to_string()] {
        let tree = reins_within(None, dir.path(), &["sessions", "tree", &target]).await;
        assert_eq!(tree.code, Some(1), "{}", tree.stdout);
    }
    let tree = reins_within(None, dir.path(), &["sessions", "tree", &fifo.display().to_string()]).await;
    assert!(tree.stderr.contains("is a FIFO, not a session file"), "{}", tree.stderr);
    let opened = reins_within(Some(&server.base_url()), dir.path(), &["run", "--session", "fifo", "Q2"]).await;
    assert!(opened.stderr.contains("is a FIFO"), "{}", opened.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_stops_and_says_why_when_the_newest_session_cannot_be_read() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("A1")]).await;
    assert_eq!(reins_run(&server, dir.path(), &["Q1"]).await.code, Some(0));
    let good = session_files(dir.path()).remove(0);
    let newest = good.parent().unwrap().join("2099-01-01T00-00-00-000Z_newest.jsonl");
    type Make<'a> = &'a dyn Fn(&std::path::Path);
    let cases: [(&str, Make); 5] = [
        ("empty", &|path| std::fs::write(path, "").unwrap()),
        ("no header", &|path| std::fs::write(path, "{\"type\":\"message\",\"id\":\"a\"}\n").unwrap()),
        ("a directory", &|path| std::fs::create_dir(path).unwrap()),
        ("a dangling symlink", &|path| std::os::unix::fs::symlink("/nonexistent/x.jsonl", path).unwrap()),
        ("a FIFO", &|path| assert!(std::process::Command::new("mkfifo").arg(path).status().unwrap().success())),
    ];
    for (case, make) in cases {
        make(&newest);
        let run = reins_within(Some(&server.base_url()), dir.path(), &["run", "--continue", "Q2"]).await;
        assert_eq!(run.code, Some(1), "{case}: {}", run.stdout);
        assert!(run.stderr.contains("cannot continue the most recent session"), "{case}: {}", run.stderr);
        assert!(run.stderr.contains(&newest.display().to_string()), "{case}: {}", run.stderr);
        assert_eq!(session_files(dir.path()).len(), 2, "{case}: no new session was started");
        assert_eq!(server.chat_requests().len(), 1, "{case}: nothing was sent");
        let _ = std::fs::remove_file(&newest).or_else(|_| std::fs::remove_dir(&newest));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_cycle_is_shown_with_a_warning_and_sent_once() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("A1"), Reply::text("A2")]).await;
    assert_eq!(reins_run(&server, dir.path(), &["Q1"]).await.code, Some(0));
    let path = session_files(dir.path()).remove(0);
    // The first entry's parent becomes the last one: every entry of the file is on a cycle.
    let text = std::fs::read_to_string(&path).unwrap();
    let last_id =
        serde_json::from_str::<Value>(text.lines().last().unwrap()).unwrap()["id"].as_str().unwrap().to_string();
    let first_id =
        serde_json::from_str::<Value>(text.lines().nth(1).unwrap()).unwrap()["id"].as_str().unwrap().to_string();
    let text = text.replacen(
        &format!(r#""id":"{first_id}","parentId":null"#),
        &format!(r#""id":"{first_id}","parentId":"{last_id}""#),
        1,
    );
    std::fs::write(&path, text).unwrap();

    let tree = reins_within(None, dir.path(), &["sessions", "tree", &path.display().to_string()]).await;
    assert_eq!(tree.code, Some(0), "{}", tree.stderr);
    assert!(tree.stderr.contains("a cycle"), "{}", tree.stderr);
    assert!(tree.stdout.contains("user: Q1") && tree.stdout.contains("assistant: A1"), "{}", tree.stdout);

    let run = reins_within(Some(&server.base_url()), dir.path(), &["run", "--continue", "Q2"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    expect_test::expect![[r#"
        system: <system prompt>
        user: "Q1"
        assistant: "A1"
        user: "Q2""#]]
    .assert_eq(&transcript(&server.chat_requests()[1].body));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_survives_a_kill_before_the_first_answer() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("too late").with_delay_ms(30_000)]).await;
    let mut child = reins_command(Some(&server.base_url()), dir.path(), &["run", "--json", "remember this prompt"])
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let wait_for_prompt = async {
        while let Ok(Some(line)) = lines.next_line().await {
            let event: Value = serde_json::from_str(&line).unwrap();
            if event["type"] == "message_end" && event["message"]["role"] == "user" {
                return;
            }
        }
        panic!("no message_end for the prompt");
    };
    tokio::time::timeout(Duration::from_secs(20), wait_for_prompt).await.unwrap();
    child.start_kill().unwrap(); // SIGKILL
    let _ = child.wait().await;

    let list = sessions_json(&reins_within(None, dir.path(), &["sessions", "list", "--json"]).await);
    assert_eq!(list[0]["firstMessage"], "remember this prompt", "{list}");
}

/// A pi 1.6 fixture (server/session/tests/fixtures/pi-1.6) copied into `dir`.
fn pi_1_6_fixture(dir: &std::path::Path, name: &str) -> (std::path::PathBuf, Value) {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../session/tests/fixtures/pi-1.6");
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::copy(fixtures.join(format!("{name}.jsonl")), &path).unwrap();
    let context =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join(format!("{name}.context.json"))).unwrap());
    (path, context.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pi_1_6_session_continues_with_its_context_edits_and_its_tools() {
    let dir = workspace(&[]);
    let (path, pi_request) = pi_1_6_fixture(dir.path(), "active-tools");
    let server = ScriptedServer::start(vec![Reply::text("reins answers")]).await;
    let run =
        reins_run(&server, dir.path(), &["--session", &path.display().to_string(), "answer with fewer tools"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let request = &server.chat_requests()[0].body;
    // What pi sent for its last turn, then pi's answer and the new prompt.
    let mut pi_messages = vec![json!({"role": "system", "content": "pi's own"})];
    pi_messages.extend(pi_request["messages"].as_array().unwrap().iter().cloned());
    pi_messages.push(json!({"role": "assistant", "content": "Answer with fewer tools."}));
    pi_messages.push(json!({"role": "user", "content": "answer with fewer tools"}));
    let pi_body = json!({ "messages": pi_messages });
    assert_eq!(transcript(request), transcript(&pi_body));
    let tools: Vec<&str> =
        request["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["read", "ls"], "the tools pi's system messages left active");
}
