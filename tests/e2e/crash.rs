//! Crash trials: `reins run` killed with SIGKILL at random moments — while the model streams,
//! while a tool runs, while the session is written — again and again on one session. After each
//! kill the session file must be whole (every line a JSON entry; at most a torn last line, which
//! reins skips), must still hold every turn whose `turn_end` the process printed (the save point
//! comes before the event) and the prompt whose `message_end` it printed, and must go on: the
//! next run continues it, and a run left to finish sends every tool call with its result.
//!
//! `REINS_CRASH_TRIALS` sets the number of kills (a few here; `scripts/bench` runs 200) and
//! `REINS_CRASH_SEED` the pseudo-random sequence (printed, so that a failure can be replayed).

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{reins_command, reins_home, reins_run, workspace};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Tool-call turns in each run's script, before the final answer.
const TURNS: usize = 6;

/// What one killed run showed before it died.
#[derive(Default)]
struct Seen {
    /// The prompt's `message_end` was printed: the prompt must be on disk.
    prompt: Option<String>,
    /// Tool-call ids of every turn whose `turn_end` was printed: each with its result on disk.
    calls: Vec<String>,
}

/// Tallies over all trials.
#[derive(Default, Debug)]
struct Tally {
    trials: usize,
    killed_before_the_prompt_was_saved: usize,
    killed_mid_run: usize,
    finished_before_the_kill: usize,
    torn_last_lines: usize,
    /// Turns reported saved (their `turn_end` printed), each checked after every later kill.
    completed_turns: usize,
    lost_turns: usize,
    corrupt_files: usize,
}

/// A small xorshift generator: the trials replay exactly from their seed.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound.max(1)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_never_corrupts_its_session_or_loses_a_completed_turn() {
    let trials: usize = std::env::var("REINS_CRASH_TRIALS").ok().and_then(|n| n.parse().ok()).unwrap_or(12);
    let seed: u64 =
        std::env::var("REINS_CRASH_SEED").ok().and_then(|n| n.parse().ok()).unwrap_or(0x9e37_79b9_7f4a_7c15);
    eprintln!("crash trials: {trials}, seed {seed}");
    let tally = run_trials(trials, seed).await;
    eprintln!(
        "crash trials: {} kills ({} before the prompt was saved, {} mid-run, {} after the run ended): \
         {} corrupt files, {} of {} completed turns lost, {} torn last lines skipped",
        tally.trials,
        tally.killed_before_the_prompt_was_saved,
        tally.killed_mid_run,
        tally.finished_before_the_kill,
        tally.corrupt_files,
        tally.lost_turns,
        tally.completed_turns,
        tally.torn_last_lines,
    );
    assert_eq!((tally.corrupt_files, tally.lost_turns), (0, 0), "{tally:?}");
    assert!(tally.killed_mid_run > 0 || trials < 4, "no kill landed inside a run: {tally:?}");
}

async fn run_trials(trials: usize, seed: u64) -> Tally {
    let dir = workspace(&[("notes.txt", "one\ntwo\nthree\nfour\nfive\n")]);
    let mut random = Random(seed | 1);
    let mut tally = Tally::default();
    let mut saved_calls: BTreeSet<String> = BTreeSet::new();
    let mut saved_prompts: Vec<String> = Vec::new();
    let started = Instant::now();
    let mut run_length = Duration::from_millis(300);
    for trial in 0..trials {
        let script: Vec<Reply> = (0..TURNS)
            .map(|turn| {
                Reply::tool_call(
                    format!("t{trial}c{turn}"),
                    "read",
                    json!({"path": "notes.txt", "offset": 1 + turn % 4}),
                )
                .with_chunk_chars(8)
                .with_chunk_delay_ms(2)
            })
            .chain([Reply::text("All read, nothing to change.").with_chunk_chars(4).with_chunk_delay_ms(2)])
            .collect();
        let server = ScriptedServer::start(script).await;
        let prompt = format!("trial {trial}: read the notes");
        let mut args = vec!["run", "--json", "--yes"];
        if trial > 0 {
            args.push("--continue");
        }
        args.push(&prompt);
        // Anywhere from the start to a little past the end of a whole run (as long as the last
        // one that was not killed took).
        let kill_after = Duration::from_millis(random.below(run_length.as_millis() as u64 * 11 / 10));
        let begun = Instant::now();
        let (seen, finished) = run_and_kill(&server, dir.path(), &args, kill_after).await;
        if finished {
            run_length = begun.elapsed();
        }
        tally.trials += 1;
        match (&seen.prompt, finished) {
            (_, true) => tally.finished_before_the_kill += 1,
            (None, false) => tally.killed_before_the_prompt_was_saved += 1,
            (Some(_), false) => tally.killed_mid_run += 1,
        }
        saved_prompts.extend(seen.prompt);
        saved_calls.extend(seen.calls);

        // The file is whole, and holds everything that was reported saved.
        let file = session_file(dir.path());
        let check = check_file(&file);
        tally.torn_last_lines += usize::from(check.torn_last_line);
        if check.corrupt_lines > 0 {
            tally.corrupt_files += 1;
            eprintln!("trial {trial}: {} corrupt lines in {}", check.corrupt_lines, file.display());
        }
        tally.completed_turns = saved_calls.len();
        for call in &saved_calls {
            if !check.results.contains(call) {
                tally.lost_turns += 1;
                eprintln!("trial {trial}: the turn of {call} was reported saved but is not in the file");
            }
        }
        for prompt in &saved_prompts {
            assert!(check.prompts.contains(prompt), "trial {trial}: the prompt {prompt:?} was lost");
        }
        // reins itself reads it.
        let tree = support::reins(None, dir.path(), &["sessions", "tree", &file.display().to_string(), "--json"]).await;
        assert_eq!(tree.code, Some(0), "trial {trial}: sessions tree failed: {}", tree.stderr);

        // Every fourth trial, and after the last, the session is left to finish a run: the model
        // gets every tool call with its result, interrupted ones included.
        if trial % 4 == 3 || trial + 1 == trials {
            // A server of its own: the killed run may have left replies of its script unplayed.
            let server = ScriptedServer::start(vec![Reply::text("resumed")]).await;
            let resumed = reins_run(&server, dir.path(), &["--continue", "--yes", "go on"]).await;
            assert_eq!(
                (resumed.code, resumed.stdout.as_str()),
                (Some(0), "resumed\n"),
                "trial {trial}: {}",
                resumed.stderr
            );
            let request = server.chat_requests().pop().unwrap();
            let messages = request.body["messages"].as_array().unwrap().clone();
            let calls: Vec<&str> = messages
                .iter()
                .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
                .filter_map(|call| call["id"].as_str())
                .collect();
            let results: BTreeSet<&str> = messages.iter().filter_map(|m| m["tool_call_id"].as_str()).collect();
            assert!(calls.iter().all(|call| results.contains(call)), "trial {trial}: a call without its result");
            saved_prompts.push("go on".into());
        }
    }
    eprintln!("crash trials: {trials} in {:.1} s", started.elapsed().as_secs_f64());
    tally
}

/// Runs `reins ARGS`, reading its events, and kills it (SIGKILL) `after` from the start unless
/// it ended before; what it reported saved, and whether it finished.
async fn run_and_kill(server: &ScriptedServer, dir: &Path, args: &[&str], after: Duration) -> (Seen, bool) {
    let mut child = reins_command(Some(&server.base_url()), dir, args).spawn().expect("spawn reins");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let deadline = tokio::time::Instant::now() + after;
    let mut seen = Seen::default();
    let mut finished = false;
    loop {
        let line = match tokio::time::timeout_at(deadline, lines.next_line()).await {
            Err(_) => break,
            Ok(Ok(Some(line))) => line,
            Ok(_) => {
                finished = true;
                break;
            }
        };
        let Ok(event) = serde_json::from_str::<Value>(&line) else { continue };
        match event["type"].as_str() {
            Some("message_end") if event["message"]["role"] == "user" => {
                let text = &event["message"]["content"];
                let text = text.as_str().map(str::to_string).or_else(|| text[0]["text"].as_str().map(str::to_string));
                seen.prompt = text;
            }
            Some("turn_end") => seen.calls.extend(
                event["message"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|block| block["type"] == "toolCall")
                    .filter_map(|block| block["id"].as_str().map(str::to_string)),
            ),
            _ => {}
        }
    }
    // The process group: setsid made reins its leader, and a tool it runs is in it too.
    if let Some(pid) = child.id() {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
    }
    let _ = child.kill().await;
    (seen, finished)
}

/// The one session file of the workspace at `dir`.
fn session_file(dir: &Path) -> PathBuf {
    let root = reins_home(dir).join("sessions");
    let files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .flat_map(|workspace| std::fs::read_dir(workspace.path()).unwrap().flatten().map(|file| file.path()))
        .collect();
    assert_eq!(files.len(), 1, "one session, continued by every trial: {files:?}");
    files.into_iter().next().unwrap()
}

/// What a session file holds, read line by line as another program would.
struct FileCheck {
    corrupt_lines: usize,
    torn_last_line: bool,
    /// Tool-call ids with a result.
    results: BTreeSet<String>,
    /// User prompts (text).
    prompts: BTreeSet<String>,
}

fn check_file(path: &Path) -> FileCheck {
    let bytes = std::fs::read(path).unwrap();
    let mut check =
        FileCheck { corrupt_lines: 0, torn_last_line: false, results: BTreeSet::new(), prompts: BTreeSet::new() };
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    for (index, line) in lines.iter().enumerate() {
        if line.is_empty() {
            continue;
        }
        let entry: Value = match serde_json::from_slice(line) {
            Ok(Value::Object(entry)) if entry.get("type").is_some_and(Value::is_string) => Value::Object(entry),
            // A line cut by the kill: only ever the last, without its line end.
            _ if index + 1 == lines.len() => {
                check.torn_last_line = true;
                continue;
            }
            _ => {
                check.corrupt_lines += 1;
                continue;
            }
        };
        let message = &entry["message"];
        match message["role"].as_str() {
            Some("toolResult") => {
                check.results.extend(message["toolCallId"].as_str().map(str::to_string));
            }
            Some("user") => {
                let content = &message["content"];
                let text =
                    content.as_str().map(str::to_string).or_else(|| content[0]["text"].as_str().map(str::to_string));
                check.prompts.extend(text);
            }
            _ => {}
        }
    }
    check
}

/// A checkout writes every new content to a temporary file beside its file, syncs them with its
/// journal, commits the journal, and only then renames them into place: killed (SIGKILL) once
/// the temporary files are there, every file is before or after, the journal is there whenever
/// some files have changed and others not, and the same command run again finishes the job (or
/// starts it again, when the kill came before the commit), leaving no temporary file behind.
/// (Kills at random moments are in tests/e2e/checkpoints.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_killed_inside_its_batch_of_writes_finishes_when_run_again() {
    const ATTEMPTS: usize = 8;
    let dir = workspace(&[]);
    let root = dir.path();
    // As many as one reply may write (a model's output is bounded), in one batch.
    let count = 50;
    let body = |n: usize| format!("file {n}\n{}", "content that takes a while to write\n".repeat(100));
    let mut reply = Reply::text("");
    for n in 0..count {
        reply =
            reply.with_tool_call(format!("w{n}"), "write", json!({"path": format!("f{n:02}.txt"), "content": body(n)}));
    }
    let server = ScriptedServer::start(vec![reply, Reply::text("wrote them")]).await;
    let run = reins_run(&server, root, &["--yes", "write them"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let tree = tree_of(root).await;
    let nodes = tree["nodes"].as_array().unwrap();
    let start = nodes.iter().find(|node| node["role"] == "user").unwrap()["parentId"].as_str().unwrap().to_string();
    let end = nodes.iter().find(|node| node["preview"] == "wrote them").unwrap()["id"].as_str().unwrap().to_string();
    let written: std::collections::BTreeMap<String, String> =
        (0..count).map(|n| (format!("f{n:02}.txt"), body(n))).collect();
    let journal = session_file(root).with_extension("checkout");

    let mut midway = 0;
    for attempt in 0..ATTEMPTS {
        // Back to before the files, then forward again under the kill: the forward checkout writes.
        checkout_files(root, &start).await;
        assert!(workspace_files(root).is_empty());
        let mut child = reins_command(None, root, &["sessions", "checkout", &end, "--yes"]).spawn().unwrap();
        let began = Instant::now();
        let staged = loop {
            // Names only, as fast as it can: a temporary file is there for a few milliseconds.
            let staged = std::fs::read_dir(root)
                .unwrap()
                .flatten()
                .any(|entry| entry.file_name().to_string_lossy().starts_with(".reins-checkout-"));
            if staged || began.elapsed() > Duration::from_secs(20) || child.try_wait().ok().flatten().is_some() {
                break staged;
            }
            std::thread::yield_now();
        };
        if let Some(pid) = child.id() {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
        }
        let _ = child.wait().await;
        let now = workspace_files(root);
        for (path, text) in now.iter().filter(|(path, _)| !path.starts_with(".reins-checkout-")) {
            assert_eq!(written.get(path), Some(text), "attempt {attempt}: {path} is neither before nor after");
        }
        let changed = now.keys().filter(|path| path.starts_with('f')).count();
        if (1..count).contains(&changed) {
            assert!(journal.is_dir(), "attempt {attempt}: the kill came midway, so the journal is there");
        }
        midway += usize::from(staged && changed < count);
        checkout_files(root, &end).await;
        assert_eq!(workspace_files(root), written, "attempt {attempt}: run again, the checkout finished");
        assert!(!journal.exists(), "attempt {attempt}: the finished checkout removed its journal");
        assert_eq!(tree_of(root).await["leaf"], end.as_str(), "attempt {attempt}");
    }
    eprintln!("batched checkout kills midway: {midway} of {ATTEMPTS}");
    assert!(midway > 0, "no kill landed inside the batch in {ATTEMPTS} attempts");
}

/// `reins sessions tree --json`.
async fn tree_of(root: &Path) -> Value {
    let run = support::reins(None, root, &["sessions", "tree", "--json"]).await;
    serde_json::from_str(&run.stdout).unwrap_or_else(|err| panic!("not JSON ({err}): {}", run.stdout))
}

/// `reins sessions checkout ENTRY --yes`, which must succeed.
async fn checkout_files(root: &Path, entry: &str) {
    let run = support::reins(None, root, &["sessions", "checkout", entry, "--yes"]).await;
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
}

/// The workspace's top-level files (the reins home left out), name → text.
fn workspace_files(root: &Path) -> std::collections::BTreeMap<String, String> {
    std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .map(|entry| {
            let text = String::from_utf8_lossy(&std::fs::read(entry.path()).unwrap_or_default()).into_owned();
            (entry.file_name().to_string_lossy().into_owned(), text)
        })
        .collect()
}
