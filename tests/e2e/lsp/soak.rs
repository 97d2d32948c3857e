//! An editor's day in a minute (issue 34): hundreds of turns over a hundred sessions through
//! `reins lsp`, going back to older sessions as a user does, with big bash output. What the
//! server holds — descriptors, open session files, bash's full-output files — stays flat once
//! warm, whatever the number of sessions; the bench's soak (`reins-bench soak`) gives the figures.

use std::os::unix::process::CommandExt as _;
use std::path::Path;

use lsp_client::LspClient;
use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};

use super::{WAIT, reins_lsp};

const SESSIONS: usize = 80;
/// Turns in each new session; every new session past the tenth also sends one to the session
/// ten back, long released by then.
const TURNS: usize = 3;
/// Sessions after which the server counts as warm.
const WARM: usize = 20;

/// What the server holds, read from `/proc` and its temporary directory.
#[derive(Debug, Clone, Copy)]
struct Held {
    fds: usize,
    session_files: usize,
    output_files: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptors_sessions_and_output_files_stay_flat_over_hundreds_of_turns() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\nbeta\n").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // Left by a reins that died: a pid that cannot be running, the highest possible plus one.
    let pid_max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    let abandoned = tmp.path().join(format!("reins-output-{}-dead", pid_max + 1));
    std::fs::create_dir_all(&abandoned).unwrap();
    std::fs::write(abandoned.join("bash-1.log"), "old output").unwrap();
    let server = ScriptedServer::start(Vec::new()).await;
    let mut command = reins_lsp(dir.path(), &["--stdio"]);
    command.env("TMPDIR", tmp.path());
    // Started with a soft limit of open files under the hard one, as a desktop starts programs.
    // SAFETY: `setrlimit` is async-signal-safe, as a `pre_exec` closure must be.
    unsafe {
        command.as_std_mut().pre_exec(|| {
            let mut limit = nix::libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            nix::libc::getrlimit(nix::libc::RLIMIT_NOFILE, &mut limit);
            limit.rlim_cur = limit.rlim_max.min(256);
            nix::libc::setrlimit(nix::libc::RLIMIT_NOFILE, &limit);
            Ok(())
        });
    }
    let client = LspClient::spawn(command).unwrap();
    let options = json!({"baseUrl": server.base_url(), "model": "scripted-model", "approval": {"bash": "auto"}});
    client.initialize_with(dir.path(), options, &["utf-16"], json!({})).await.unwrap();
    let pid = client.pid().unwrap();
    let (soft, hard) = open_files_limit(pid);
    assert_eq!(soft, hard, "the soft limit of open files is raised to the hard one");
    for _ in 0..100 {
        if !abandoned.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!abandoned.exists(), "what a dead reins left is removed at start");

    let mut sessions: Vec<Value> = Vec::new();
    let mut warm = None;
    let mut turn = 0;
    for n in 0..SESSIONS {
        let created = client.command("reins.session.new", json!({})).await.unwrap();
        sessions.push(created["sessionId"].clone());
        for _ in 0..TURNS {
            send_turn(&client, &server, &sessions[n], turn).await;
            turn += 1;
        }
        if n >= 10 {
            send_turn(&client, &server, &sessions[n - 10], turn).await;
            turn += 1;
        }
        if n + 1 == WARM {
            warm = Some(held(pid, tmp.path()));
        }
    }
    let warm = warm.unwrap();
    let end = held(pid, tmp.path());
    eprintln!("soak: {turn} turns over {SESSIONS} sessions; warm {warm:?}, at the end {end:?}");
    assert!(end.fds <= warm.fds + 2, "descriptors grew: {warm:?} → {end:?}");
    assert!(end.session_files <= warm.session_files.max(10), "session files held grew: {warm:?} → {end:?}");
    assert!(end.output_files <= warm.output_files.max(20), "bash output files grew: {warm:?} → {end:?}");

    // Every session is still there, released ones included, and the oldest goes on.
    let list = client.command("reins.session.list", json!({})).await.unwrap();
    assert_eq!(list["sessions"].as_array().unwrap().len(), SESSIONS);
    send_turn(&client, &server, &sessions[0], turn).await;
    let messages = client.command("reins.session.messages", json!({"sessionId": sessions[0]})).await.unwrap();
    let texts: Vec<String> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect())
        .collect();
    assert_eq!((texts[0].as_str(), texts.last().unwrap().clone()), ("turn 0", format!("answer {turn}")));
    assert_eq!(client.shutdown().await, Some(0));
}

/// One turn of the kind `turn` picks (a text answer, bash with big output, a read) in `session`,
/// to its end.
async fn send_turn(client: &LspClient, server: &ScriptedServer, session: &Value, turn: usize) {
    match turn % 3 {
        0 => {}
        1 => server.push(Reply::tool_call("c1", "bash", json!({"command": "seq 1 30000"}))),
        _ => server.push(Reply::tool_call("c1", "read", json!({"path": "a.txt"}))),
    }
    server.push(Reply::text(format!("answer {turn}")));
    let started = client
        .command("reins.chat.send", json!({"sessionId": session, "text": format!("turn {turn}")}))
        .await
        .unwrap_or_else(|err| panic!("turn {turn}: {err}"));
    let run_id = started["runId"].clone();
    client
        .wait_for(WAIT, |n| {
            n["method"] == "reins/event"
                && n["params"]["runId"] == run_id
                && n["params"]["event"]["type"] == "agent_end"
        })
        .await
        .unwrap_or_else(|err| panic!("turn {turn} did not end: {err}"));
}

fn held(pid: u32, tmp: &Path) -> Held {
    let fds: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().flatten().collect();
    let session_files = fds
        .iter()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|target| target.extension().is_some_and(|ext| ext == "jsonl"))
        .count();
    let output_files = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("reins-output-"))
        .map(|entry| std::fs::read_dir(entry.path()).map_or(0, Iterator::count))
        .sum();
    Held { fds: fds.len(), session_files, output_files }
}

/// The soft and hard limits of open files of process `pid`.
fn open_files_limit(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits.lines().find(|line| line.starts_with("Max open files")).unwrap();
    let mut values = line["Max open files".len()..].split_whitespace();
    (values.next().unwrap().to_string(), values.next().unwrap().to_string())
}
