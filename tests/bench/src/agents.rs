//! More than one agent: peak RSS and wall time of `reins run` whose answer starts 1, 3 and 10
//! subagents at once (each a 10-turn tool loop against the scripted model, which answers at
//! once), as memory per agent and harness time per child turn; and the time to make a worktree
//! agent's worktree of a 10,000-file repository against `git worktree add` itself (target:
//! within 2x, the rest being the user's uncommitted changes brought in and committed as base).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use reins_harness::Worktree;
use scripted_llm::{Reply, ScriptedServer};
use serde_json::json;

use crate::peak_rss_kib_of;

const CHILD_TURNS: usize = 10;
const AGENTS: [usize; 3] = [1, 3, 10];
const REPO_FILES: usize = 10_000;
const WORKTREE_RUNS: usize = 5;

/// Prints the figures and their targets; true when a target is missed.
pub async fn measure(reins: &Path) -> bool {
    println!("\nagents at once (subagents of one run, {CHILD_TURNS} tool turns each)");
    let mut baseline_kib = None;
    for count in AGENTS {
        match one_family(reins, count).await {
            Ok((kib, wall)) => {
                let base = *baseline_kib.get_or_insert(kib);
                let per_agent = (kib.saturating_sub(base)) as f64 / 1024.0 / (count.max(2) - 1) as f64;
                let per_turn = wall.as_secs_f64() * 1000.0 / (count * (CHILD_TURNS + 1)) as f64;
                let extra =
                    if count == AGENTS[0] { String::new() } else { format!(", {per_agent:.2} MB per agent over 1") };
                println!(
                    "  {count:>2} agents                 peak RSS {:>7.1} MB, {per_turn:>6.2} ms per child turn{extra}",
                    kib as f64 / 1024.0
                );
            }
            Err(why) => println!("  {count:>2} agents                 not measured: {why}"),
        }
    }
    worktree_creation()
}

/// Peak RSS and wall time of one `reins run` whose model starts `count` subagents at once.
async fn one_family(reins: &Path, count: usize) -> Result<(u64, Duration), String> {
    let dir = tempfile::tempdir().map_err(|err| err.to_string())?;
    let lines: String = (1..=CHILD_TURNS).map(|n| format!("line {n}\n")).collect();
    std::fs::write(dir.path().join("lines.txt"), lines).map_err(|err| err.to_string())?;
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).map_err(|err| err.to_string())?;
    // Children's model calls count against the parent's `max_turns`: ten children of ten turns
    // each go past the default, so the family gets room for all of them.
    std::fs::write(home.join("config.toml"), format!("[limits]\nmax_subagents = {count}\nmax_turns = 1000\n"))
        .map_err(|err| err.to_string())?;
    let mut script = vec![(0..count).fold(Reply::default(), |reply, n| {
        reply.with_tool_call(format!("t{n}"), "task", json!({"prompt": format!("job-{n}-of-the-bench")}))
    })];
    for n in 0..count {
        for turn in 0..CHILD_TURNS {
            let read = json!({"path": "lines.txt", "offset": turn + 1, "limit": 1});
            script.push(Reply::tool_call(format!("c{n}-{turn}"), "read", read).when(format!("job-{n}-of-the-bench")));
        }
        script.push(Reply::text(format!("child {n} done")).when(format!("job-{n}-of-the-bench")));
    }
    script.push(Reply::text("all done"));
    let server = ScriptedServer::start(script).await;
    let mut command = std::process::Command::new(reins);
    command
        .args(["run", "--json", "--yes", "--no-session", "split the work"])
        .current_dir(dir.path())
        .env("REINS_HOME", &home)
        .env("HOME", dir.path())
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("REINS_MODEL", "scripted");
    let start = Instant::now();
    let kib = peak_rss_kib_of(&command).await?;
    let wall = start.elapsed();
    if server.remaining() != 0 {
        return Err(format!("{} scripted replies were not asked for", server.remaining()));
    }
    Ok((kib, wall))
}

/// Worktree creation for a 10,000-file repository, `git worktree add` beside reins's.
fn worktree_creation() -> bool {
    let Ok(dir) = tempfile::tempdir() else { return true };
    let repo = dir.path().join("repo");
    if let Err(why) = big_repository(&repo) {
        println!("  worktree of {REPO_FILES} files      not measured: {why}");
        return true;
    }
    // The two are timed in turns, git then reins, so that both meet the same page cache and the
    // same writeback of the 10,000 files the run before removed.
    let (mut git_runs, mut reins_runs) = (Vec::new(), Vec::new());
    for run in 0..WORKTREE_RUNS {
        let target = dir.path().join("plain").display().to_string();
        let start = Instant::now();
        let _ = git(&repo, &["worktree", "add", "--detach", "--quiet", &target, "HEAD"]);
        git_runs.push(start.elapsed());
        let _ = git(&repo, &["worktree", "remove", "--force", &target]);
        let start = Instant::now();
        let worktree = Worktree::create(&repo, &dir.path().join("data"), &format!("w{run}"));
        reins_runs.push(start.elapsed());
        if let Ok(worktree) = worktree {
            let _ = worktree.remove();
        }
    }
    let (git_add, reins_make) = (median(git_runs), median(reins_runs));
    let ratio = reins_make.as_secs_f64() / git_add.as_secs_f64().max(1e-9);
    println!(
        "  worktree of {REPO_FILES} files      {:>7.1} ms (git worktree add: {:.1} ms, {ratio:.2}x)",
        ms(reins_make),
        ms(git_add)
    );
    let ok = ratio <= 2.0;
    println!("\nagents targets:\n  [{}] worktree within 2x of git worktree add", if ok { "ok" } else { "MISSED" });
    !ok
}

/// A repository of `REPO_FILES` small files in 100 directories, committed, with a few of them
/// changed and one file untracked (what a user has in progress).
fn big_repository(repo: &Path) -> Result<(), String> {
    for n in 0..REPO_FILES {
        let dir = repo.join(format!("d{:02}", n % 100));
        std::fs::create_dir_all(&dir).map_err(|err| err.to_string())?;
        std::fs::write(dir.join(format!("f{n}.txt")), format!("file {n}\n")).map_err(|err| err.to_string())?;
    }
    git(repo, &["init", "-q"])?;
    git(repo, &["add", "."])?;
    git(repo, &["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "files"])?;
    for n in 0..10 {
        std::fs::write(repo.join(format!("d{:02}/f{n}.txt", n % 100)), "changed\n").map_err(|err| err.to_string())?;
    }
    std::fs::write(repo.join("new.txt"), "untracked\n").map_err(|err| err.to_string())
}

fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|err| err.to_string())?;
    if status.success() { Ok(()) } else { Err(format!("git {} failed", args.join(" "))) }
}

/// The median of `WORKTREE_RUNS` samples (blocking: git runs as a plain child process).
fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
