//! Checkout figures: a session whose path records 200 file changes over 50 files (each 400-line
//! file created, then edited 3 times), checked out to before all of them and back with the
//! real binary (`reins sessions checkout ENTRY --yes`), each direction the median of several
//! runs; and the plan with its merges alone, in process. The peer, measured in the same run, is
//! git moving the same 50 files between the same two states (`git checkout`), as the ratio.
//! Targets: a whole checkout, process start included, under 200 ms, and within 3× of git's time
//! for the same change set in the same run, each way.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reins_ai::Message;
use reins_checkpoints::{FILE_CHANGE, FileChangeRecord, Files, Landed, Plan, SideStore, replay};
use reins_session::{EntryKind, SessionStore};

const FILES: usize = 50;
const EDITS_PER_FILE: usize = 3;
const LINES: usize = 400;
const RUNS: usize = 7;
const TARGET: Duration = Duration::from_millis(200);
/// At most this many times git's time for the same files, measured in the same run.
const TARGET_RATIO: f64 = 3.0;

/// Prints the figures and their target; true when the target is missed.
pub fn measure(reins: &Path) -> bool {
    match run(reins) {
        Ok(missed) => missed,
        Err(why) => {
            println!("\ncheckpoints not measured: {why}");
            true
        }
    }
}

fn run(reins: &Path) -> Result<bool, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let workspace =
        dir.path().join("w").canonicalize().or_else(|_| {
            std::fs::create_dir_all(dir.path().join("w")).and_then(|()| dir.path().join("w").canonicalize())
        });
    let workspace = workspace.map_err(|e| e.to_string())?;
    let home = dir.path().join("home");
    let (start, end, changes) = write_session(&workspace, &home)?;
    let final_state = snapshot(&workspace)?;

    // The plan and its merges in process: what the editor's `files: true` does before proposing.
    let tree = reins_session::SessionTree::load(&session_file(&home, &workspace)?).map_err(|e| e.to_string())?;
    let mut in_process = Vec::new();
    for _ in 0..RUNS {
        let began = Instant::now();
        let plan = Plan::between(&tree, tree.leaf(), &start).map_err(|e| e.to_string())?;
        let resolved = plan.recorded_paths().into_iter().map(|p| (p.to_string(), Ok(workspace.join(p)))).collect();
        let current = plan
            .recorded_paths()
            .into_iter()
            .map(|p| (workspace.join(p), std::fs::read(workspace.join(p)).ok()))
            .collect();
        let store = SideStore::default();
        let outcomes = replay(&plan, Files { resolved, current, store: &store });
        in_process.push(began.elapsed());
        if outcomes.len() != FILES || plan.steps.len() != changes {
            return Err(format!("the plan has {} steps over {} files", plan.steps.len(), outcomes.len()));
        }
    }

    // The whole command, both ways, checked after each run.
    let (mut back, mut forth) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        back.push(checkout(reins, &workspace, &home, &start)?);
        if !snapshot(&workspace)?.is_empty() {
            return Err("checking out the start left files behind".into());
        }
        forth.push(checkout(reins, &workspace, &home, &end)?);
        if snapshot(&workspace)? != final_state {
            return Err("checking out the end did not restore every file".into());
        }
    }

    // The peer: git moving the same files between the same two states.
    let git = git_peer(&final_state, dir.path());

    let ms = |samples: &mut Vec<Duration>| {
        samples.sort();
        samples[samples.len() / 2].as_secs_f64() * 1000.0
    };
    let (plan_ms, back_ms, forth_ms) = (ms(&mut in_process), ms(&mut back), ms(&mut forth));
    println!("\ncheckpoints ({changes} recorded changes over {FILES} files of {LINES} lines)");
    println!("  plan + merges, in process  {plan_ms:>9.2} ms");
    println!("  checkout, undo all         {back_ms:>9.2} ms  (reins sessions checkout, whole process)");
    println!("  checkout, redo all         {forth_ms:>9.2} ms");
    let ratios = match &git {
        Ok((git_back, git_forth)) => {
            let ratios = (back_ms / git_back, forth_ms / git_forth);
            println!("  git checkout, same files   {git_back:>9.2} ms / {git_forth:>9.2} ms (peer)");
            println!("  ratio reins / git          {:>9.1}x / {:.1}x (undo / redo)", ratios.0, ratios.1);
            Some(ratios)
        }
        Err(why) => {
            println!("  git not measured: {why}");
            None
        }
    };
    let fast = back_ms < TARGET.as_secs_f64() * 1000.0 && forth_ms < TARGET.as_secs_f64() * 1000.0;
    let near_git = ratios.is_some_and(|(back, forth)| back <= TARGET_RATIO && forth <= TARGET_RATIO);
    let mark = |ok: bool| if ok { "ok" } else { "MISSED" };
    println!("\ncheckpoints targets:");
    println!("  [{}] a checkout of 200 changes over 50 files under 200 ms", mark(fast));
    println!("  [{}] undo and redo each within {TARGET_RATIO}x of git's time for the same files", mark(near_git));
    Ok(!(fast && near_git))
}

/// A session for `workspace` in `home` recording each file's creation and its edits, the files
/// left as the last change left them. Returns the entry before every change, the last entry, and
/// how many changes were recorded.
fn write_session(workspace: &Path, home: &Path) -> Result<(String, String, usize), String> {
    let store = SessionStore::new(home.join("sessions"));
    let mut file = store.create(workspace, None).map_err(|e| e.to_string())?;
    let start = file.append_message(&Message::user("change every file")).map_err(|e| e.to_string())?;
    let side = SideStore::of_session(file.path());
    let mut texts: Vec<Option<String>> = vec![None; FILES];
    let mut changes = 0;
    // Round by round: each file created, then edited in turn, so changes to a file interleave.
    for round in 0..=EDITS_PER_FILE {
        for (n, text) in texts.iter_mut().enumerate() {
            let before = text.clone();
            let after = match &before {
                None => (0..LINES).map(|line| format!("file {n} line {line}: some content\n")).collect::<String>(),
                Some(old) => {
                    let line = round * LINES / (EDITS_PER_FILE + 1);
                    old.replacen(
                        &format!("file {n} line {line}: "),
                        &format!("file {n} line {line} (edit {round}): "),
                        1,
                    )
                }
            };
            let landed = Landed {
                path: format!("src/f{n:02}.rs"),
                moved_to: None,
                before: before.map(String::into_bytes),
                after: Some(after.clone().into_bytes()),
            };
            let record = FileChangeRecord::new("call", "edit", &[landed], &side).map_err(|e| e.to_string())?;
            let kind = EntryKind::Custom { custom_type: FILE_CHANGE.into(), data: Some(record.to_value()) };
            file.append(kind).map_err(|e| e.to_string())?;
            *text = Some(after);
            changes += 1;
        }
    }
    let end = file.append_message(&Message::user("done")).map_err(|e| e.to_string())?;
    file.flush().map_err(|e| e.to_string())?;
    std::fs::create_dir_all(workspace.join("src")).map_err(|e| e.to_string())?;
    for (n, text) in texts.iter().enumerate() {
        std::fs::write(workspace.join(format!("src/f{n:02}.rs")), text.as_deref().unwrap_or_default())
            .map_err(|e| e.to_string())?;
    }
    Ok((start, end, changes))
}

fn session_file(home: &Path, workspace: &Path) -> Result<std::path::PathBuf, String> {
    let store = SessionStore::new(home.join("sessions"));
    store.most_recent(workspace).map_err(|e| e.to_string())?.ok_or_else(|| "no session was written".to_string())
}

/// One `reins sessions checkout ENTRY --yes`, timed.
fn checkout(reins: &Path, workspace: &Path, home: &Path, entry: &str) -> Result<Duration, String> {
    let began = Instant::now();
    let run = Command::new(reins)
        .args(["sessions", "checkout", entry, "--yes"])
        .current_dir(workspace)
        .env("REINS_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        // Its hint for the user ("checked out before your message …") is kept out of the
        // bench's report; it is shown when the checkout fails.
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| e.to_string())?;
    let took = began.elapsed();
    if !run.status.success() {
        let said = String::from_utf8_lossy(&run.stderr);
        return Err(format!("reins sessions checkout {entry} failed: {}: {}", run.status, said.trim()));
    }
    Ok(took)
}

/// The workspace's `src` files, path → text.
fn snapshot(workspace: &Path) -> Result<Vec<(String, String)>, String> {
    let Ok(entries) = std::fs::read_dir(workspace.join("src")) else { return Ok(Vec::new()) };
    let mut files: Vec<(String, String)> = entries
        .flatten()
        .map(|entry| {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            (entry.file_name().to_string_lossy().into_owned(), text)
        })
        .collect();
    files.sort();
    Ok(files)
}

/// git checking out the empty state and the final state of the same files: the medians, in ms.
fn git_peer(final_state: &[(String, String)], dir: &Path) -> Result<(f64, f64), String> {
    let repo = dir.join("git");
    std::fs::create_dir_all(repo.join("src")).map_err(|e| e.to_string())?;
    let git = |args: &[&str]| -> Result<(), String> {
        let status = Command::new("git")
            .args(["-c", "user.name=bench", "-c", "user.email=bench@example.com"])
            .args(args)
            .current_dir(&repo)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("git: {e}"))?;
        if status.success() { Ok(()) } else { Err(format!("git {args:?} failed")) }
    };
    git(&["init", "-q"])?;
    std::fs::write(repo.join("README"), "bench\n").map_err(|e| e.to_string())?;
    git(&["add", "."])?;
    git(&["commit", "-q", "-m", "start"])?;
    git(&["tag", "start"])?;
    for (name, text) in final_state {
        std::fs::write(repo.join("src").join(name), text).map_err(|e| e.to_string())?;
    }
    git(&["add", "."])?;
    git(&["commit", "-q", "-m", "end"])?;
    git(&["tag", "end"])?;
    let (mut back, mut forth) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let began = Instant::now();
        git(&["checkout", "-q", "start"])?;
        back.push(began.elapsed());
        let began = Instant::now();
        git(&["checkout", "-q", "end"])?;
        forth.push(began.elapsed());
    }
    let ms = |samples: &mut Vec<Duration>| {
        samples.sort();
        samples[samples.len() / 2].as_secs_f64() * 1000.0
    };
    Ok((ms(&mut back), ms(&mut forth)))
}
