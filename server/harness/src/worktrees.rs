//! Worktree agents: an agent that works on a git worktree of its own, made from the user's HEAD
//! plus their uncommitted changes (tracked and untracked), in reins's data folder — so it edits
//! freely and touches nothing of the user's — and whose whole change comes back at the end as
//! one proposal against the user's files as they are then, each file a three-way merge (the
//! review core's) of what the agent did onto what the user did meanwhile.
//!
//! The worktree's first commit, `base`, holds the user's files as they were when it was made: the
//! agent's change is `base` → the worktree now, the user's is `base` → their files now. A small
//! record beside the worktree (`<data>/worktrees/<id>.json`) names the repository and `base`, so a
//! worktree outlives a killed reins and can be listed and reviewed later.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use reins_review::{Conflict, rebase};
use serde::{Deserialize, Serialize};

use crate::error::HarnessError;

/// A worktree reins made for an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Worktree {
    pub id: String,
    /// Where the agent works.
    pub dir: PathBuf,
    /// The top of the user's repository.
    pub repo: PathBuf,
    /// The commit holding the user's files as they were when the worktree was made.
    pub base: String,
    /// The process that made it (and runs its agent).
    pub pid: u32,
}

/// A worktree agent as a listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorktreeAgent {
    pub worktree: Worktree,
    /// Its process is alive.
    pub running: bool,
    /// The files it changed so far.
    pub changed: Vec<String>,
    /// US dollars its sessions spent (filled in by the harness, which knows the sessions).
    pub cost: f64,
}

/// A file the agent changed: its text at `base` and in the worktree (`None`: absent).
#[derive(Debug, Clone, PartialEq)]
pub struct WorktreeChange {
    /// Relative to the repository's top.
    pub path: String,
    pub base: Option<String>,
    pub after: Option<String>,
    /// The agent left a symbolic link or another file that is not a regular one here: it is
    /// never read through (a link could point at anything the sandbox hides) nor carried over.
    pub not_a_file: bool,
}

/// What the agent's change to one file makes of the user's file now.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    pub path: String,
    /// The user's file now (`None`: absent).
    pub current: Option<String>,
    /// The file with both changes (`Ok(None)`: deleted), or where the two meet.
    pub result: Result<Option<String>, Conflict>,
}

/// The record kept beside a worktree (a file format: kept apart from [`Worktree`]).
#[derive(Serialize, Deserialize)]
struct Record {
    id: String,
    dir: PathBuf,
    repo: PathBuf,
    base: String,
    #[serde(default)]
    pid: u32,
}

/// The environment of every git command: the user's hooks and identity stay out of it.
const GIT_CONFIG: [&str; 6] =
    ["-c", "user.name=reins", "-c", "user.email=reins@localhost", "-c", "core.hooksPath=/dev/null"];

impl Worktree {
    /// Makes a worktree of the repository holding `cwd` under `data_dir/worktrees`. Fails with a
    /// clear `invalid_state` error outside a git repository or in one without a commit.
    pub fn create(cwd: &Path, data_dir: &Path, id: &str) -> Result<Worktree, HarnessError> {
        let repo = git(cwd, &["rev-parse", "--show-toplevel"]).map_err(|_| {
            HarnessError::InvalidState(format!(
                "an agent on a worktree needs git, and {} is not in a git repository; run it without --worktree, or `git init` and commit first",
                cwd.display()
            ))
        })?;
        let repo = PathBuf::from(repo.trim_end());
        git(&repo, &["rev-parse", "--verify", "HEAD"]).map_err(|_| {
            HarnessError::InvalidState(format!("{} has no commit yet; a worktree starts from HEAD", repo.display()))
        })?;
        let root = data_dir.join("worktrees");
        std::fs::create_dir_all(&root).map_err(|err| io_error(&root, err))?;
        let dir = root.join(id);
        let shown = dir.display().to_string();
        let turn = worktree_turn(&root);
        git(&repo, &["worktree", "add", "--detach", "--quiet", &shown, "HEAD"]).map_err(HarnessError::InvalidState)?;
        drop(turn);
        let pid = std::process::id();
        let made = Worktree { id: id.to_string(), dir: dir.clone(), repo: repo.clone(), base: String::new(), pid };
        match made.bring_uncommitted() {
            Ok(base) => {
                let worktree = Worktree { base, ..made };
                worktree.save(&root)?;
                Ok(worktree)
            }
            Err(err) => {
                let _ = made.remove();
                Err(err)
            }
        }
    }

    /// Copies the user's uncommitted changes in (the tracked ones as a patch, untracked files as
    /// they are) and commits the result as the base; answers its id.
    fn bring_uncommitted(&self) -> Result<String, HarnessError> {
        let patch = git_bytes(&self.repo, &["diff", "HEAD", "--binary"]).map_err(HarnessError::InvalidState)?;
        if !patch.is_empty() {
            git_with_input(&self.dir, &["apply", "--binary", "--whitespace=nowarn", "-"], &patch)
                .map_err(HarnessError::InvalidState)?;
        }
        let untracked = git_bytes(&self.repo, &["ls-files", "--others", "--exclude-standard", "-z"])
            .map_err(HarnessError::InvalidState)?;
        for path in untracked.split(|byte| *byte == 0).filter(|path| !path.is_empty()) {
            let path = String::from_utf8_lossy(path).into_owned();
            let (from, to) = (self.repo.join(&path), self.dir.join(&path));
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|err| io_error(parent, err))?;
            }
            std::fs::copy(&from, &to).map_err(|err| io_error(&from, err))?;
        }
        git(&self.dir, &["add", "-A"]).map_err(HarnessError::InvalidState)?;
        git(&self.dir, &["commit", "--quiet", "--allow-empty", "--no-verify", "-m", "reins: the user's files"])
            .map_err(HarnessError::InvalidState)?;
        Ok(git(&self.dir, &["rev-parse", "HEAD"]).map_err(HarnessError::InvalidState)?.trim().to_string())
    }

    fn save(&self, root: &Path) -> Result<(), HarnessError> {
        let record = Record {
            id: self.id.clone(),
            dir: self.dir.clone(),
            repo: self.repo.clone(),
            base: self.base.clone(),
            pid: self.pid,
        };
        let path = root.join(format!("{}.json", self.id));
        let text = serde_json::to_string_pretty(&record).unwrap_or_default();
        std::fs::write(&path, text).map_err(|err| io_error(&path, err))
    }

    /// The worktrees kept under `data_dir` for the repository at `repo` (all when `None`),
    /// running or finished, in the order they were made (ids sort by time).
    pub fn list(data_dir: &Path, repo: Option<&Path>) -> Vec<Worktree> {
        let root = data_dir.join("worktrees");
        let Ok(entries) = std::fs::read_dir(&root) else { return Vec::new() };
        let mut found: Vec<Worktree> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "json"))
            .filter_map(|entry| serde_json::from_slice::<Record>(&std::fs::read(entry.path()).ok()?).ok())
            .filter(|record| record.dir.is_dir())
            .map(|record| Worktree {
                id: record.id,
                dir: record.dir,
                repo: record.repo,
                base: record.base,
                pid: record.pid,
            })
            .filter(|worktree| repo.is_none_or(|repo| worktree.repo == repo))
            .collect();
        found.sort_by(|a, b| a.id.cmp(&b.id));
        found
    }

    /// The worktree agents of the repository holding `cwd`, running or finished, with the files
    /// each changed (none outside a git repository).
    pub fn agents(data_dir: &Path, cwd: &Path) -> Vec<WorktreeAgent> {
        let Ok(repo) = git(cwd, &["rev-parse", "--show-toplevel"]) else { return Vec::new() };
        let repo = PathBuf::from(repo.trim_end());
        Worktree::list(data_dir, Some(&repo))
            .into_iter()
            .map(|worktree| {
                let running = alive(worktree.pid);
                let changed = worktree.changed_paths().unwrap_or_default();
                WorktreeAgent { worktree, running, changed, cost: 0.0 }
            })
            .collect()
    }

    /// The paths the agent changed since `base`, without touching the worktree's index (its
    /// agent may be at work).
    fn changed_paths(&self) -> Result<Vec<String>, String> {
        let tracked = git_bytes(&self.dir, &["diff", "--name-only", "--no-renames", "-z", &self.base])?;
        let untracked = git_bytes(&self.dir, &["ls-files", "--others", "--exclude-standard", "-z"])?;
        let mut paths: Vec<String> = tracked
            .split(|byte| *byte == 0)
            .chain(untracked.split(|byte| *byte == 0))
            .filter(|path| !path.is_empty())
            .map(|path| String::from_utf8_lossy(path).into_owned())
            .collect();
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// The files the agent changed since `base`, in path order.
    pub fn changes(&self) -> Result<Vec<WorktreeChange>, HarnessError> {
        git(&self.dir, &["add", "-A"]).map_err(HarnessError::InvalidState)?;
        let names = git_bytes(&self.dir, &["diff", "--cached", "--name-only", "--no-renames", "-z", &self.base])
            .map_err(HarnessError::InvalidState)?;
        let mut changes = Vec::new();
        for path in names.split(|byte| *byte == 0).filter(|path| !path.is_empty()) {
            let path = String::from_utf8_lossy(path).into_owned();
            let base = git_bytes(&self.dir, &["show", &format!("{}:{path}", self.base)]).ok();
            let (after, not_a_file) = match read_regular(&self.dir, &path) {
                Read::File(bytes) => (Some(bytes), false),
                Read::Gone => (None, false),
                Read::NotAFile => (None, true),
            };
            let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
            changes.push(WorktreeChange { path, base: base.map(text), after: after.map(text), not_a_file });
        }
        Ok(changes)
    }

    /// The agent's change carried onto the user's files as they are now: per file, the
    /// three-way merge of base → agent onto base → user; where both changed the same lines, the
    /// conflict names them and the user's file is left as it is.
    pub fn merge(&self) -> Result<Vec<Merged>, HarnessError> {
        self.merge_onto(&|path: &Path| {
            std::fs::read(path).ok().map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        })
    }

    /// [`Worktree::merge`] onto the user's files as `current` reads them (an editor's open
    /// buffers before the disk); `current` gets the path in the user's repository.
    pub fn merge_onto(&self, current: &dyn Fn(&Path) -> Option<String>) -> Result<Vec<Merged>, HarnessError> {
        let changes = self.changes()?;
        Ok(changes
            .into_iter()
            .map(|change| {
                let current = current(&self.repo.join(&change.path));
                let result = merge_file(&change, current.as_deref());
                Merged { path: change.path, current, result }
            })
            .collect())
    }

    /// Removes the worktree and its record (what the agent did is gone with it).
    pub fn remove(&self) -> Result<(), HarnessError> {
        let shown = self.dir.display().to_string();
        let turn = self.dir.parent().and_then(worktree_turn);
        let removed = git(&self.repo, &["worktree", "remove", "--force", &shown]);
        if removed.is_err() && self.dir.exists() {
            std::fs::remove_dir_all(&self.dir).map_err(|err| io_error(&self.dir, err))?;
            let _ = git(&self.repo, &["worktree", "prune"]);
        }
        drop(turn);
        if let Some(root) = self.dir.parent() {
            let _ = std::fs::remove_file(root.join(format!("{}.json", self.id)));
        }
        Ok(())
    }
}

/// What is at a path the agent changed.
enum Read {
    File(Vec<u8>),
    Gone,
    NotAFile,
}

/// Reads `path` in the worktree `dir` only if it is a regular file inside it: no symbolic link
/// at its end or on its way (checked again on the open file, in case one was swapped in).
fn read_regular(dir: &Path, path: &str) -> Read {
    use std::io::Read as _;
    use std::os::unix::fs::MetadataExt;
    let full = dir.join(path);
    let stat = match std::fs::symlink_metadata(&full) {
        Ok(stat) => stat,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Read::Gone,
        Err(_) => return Read::NotAFile,
    };
    let inside = |parent: &Path| match (parent.canonicalize(), dir.canonicalize()) {
        (Ok(parent), Ok(dir)) => parent.starts_with(dir),
        _ => false,
    };
    if !stat.file_type().is_file() || !full.parent().is_some_and(inside) {
        return Read::NotAFile;
    }
    let Ok(mut file) = std::fs::File::open(&full) else { return Read::NotAFile };
    match file.metadata() {
        Ok(opened) if opened.dev() == stat.dev() && opened.ino() == stat.ino() => {}
        _ => return Read::NotAFile,
    }
    let mut bytes = Vec::new();
    match file.read_to_end(&mut bytes) {
        Ok(_) => Read::File(bytes),
        Err(_) => Read::NotAFile,
    }
}

/// One file's merge: the agent's change onto the user's file now.
fn merge_file(change: &WorktreeChange, current: Option<&str>) -> Result<Option<String>, Conflict> {
    let conflict = |description: &str| Conflict { lines: 0..0, description: format!("{}: {description}", change.path) };
    if change.not_a_file {
        return Err(conflict("the agent left a symbolic link or special file here, which is not carried over"));
    }
    if current == change.base.as_deref() {
        return Ok(change.after.clone());
    }
    if current == change.after.as_deref() {
        return Ok(change.after.clone());
    }
    match (change.base.as_deref(), change.after.as_deref(), current) {
        (Some(base), Some(after), Some(current)) => rebase(base, after, current).map(Some).map_err(|mut conflict| {
            conflict.description = format!("{}: {}", change.path, conflict.description);
            conflict
        }),
        (None, Some(_), Some(_)) => Err(conflict("you created this file too, with other text")),
        (Some(_), None, Some(_)) => Err(conflict("the agent deleted this file, which you changed")),
        (Some(_), Some(_), None) => Err(conflict("the agent changed this file, which you deleted")),
        // Both deleted it, or neither had it: nothing to do.
        _ => Ok(change.after.clone()),
    }
}

/// Whether process `pid` runs: it exists and is not a zombie (killed, not yet waited for).
fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // The state follows the command name, which is in parentheses and may hold anything.
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
    pid != 0 && !matches!(state, Some('Z' | 'X') | None)
}

/// How long an agent waits for its turn at git's list of worktrees before it goes ahead without
/// it: a large checkout takes a while, a holder that never lets go must not stop every agent.
const WORKTREE_TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Held while git changes a repository's list of worktrees. `git worktree add` reads the admin
/// files of every worktree and fails on one that another `add` is still writing ("failed to read
/// .git/worktrees/…/commondir"), so agents started together, in one process or several, take
/// turns; the lock goes with the file, and with the process if it dies. `None` (logged) when the
/// turn cannot be had: the race it avoids is rare, and a wait for ever or a refusal is worse.
fn worktree_turn(root: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = root.join(".git-worktree.lock");
    // Never through a symlink, and never waiting on a FIFO put in the file's place.
    let opened = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(&path);
    let file = match opened {
        Ok(file) => file,
        Err(err) => {
            tracing::warn!("{}: {err}; adding the worktree without waiting for others", path.display());
            return None;
        }
    };
    let deadline = std::time::Instant::now() + WORKTREE_TURN_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Some(file),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let waited = WORKTREE_TURN_WAIT.as_secs();
                tracing::warn!("{} is held after {waited} s; going ahead without it", path.display());
                return None;
            }
            Err(std::fs::TryLockError::Error(err)) => {
                tracing::warn!("{}: {err}; going ahead without it", path.display());
                return None;
            }
        }
    }
}

fn io_error(path: &Path, err: std::io::Error) -> HarnessError {
    HarnessError::InvalidState(format!("{}: {err}", path.display()))
}

/// Runs git in `dir`; its output, or what it said on failure.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    git_bytes(dir, args).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

fn git_bytes(dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    git_with_input(dir, args, &[])
}

fn git_with_input(dir: &Path, args: &[&str], input: &[u8]) -> Result<Vec<u8>, String> {
    let mut child = Command::new("git")
        .args(GIT_CONFIG)
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(if input.is_empty() { Stdio::null() } else { Stdio::piped() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("could not run git: {err}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input).map_err(|err| format!("git {}: {err}", args.join(" ")))?;
    }
    let output = child.wait_with_output().map_err(|err| format!("git {}: {err}", args.join(" ")))?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(format!("git {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, script: &str) {
        let status = Command::new("sh").arg("-c").arg(script).current_dir(dir).status().unwrap();
        assert!(status.success(), "{script}");
    }

    /// The turn is a lock two openers cannot both hold; a FIFO or a symlink put in the lock
    /// file's place is neither waited on nor followed, and the agent goes ahead without a turn.
    #[test]
    fn a_turn_is_exclusive_and_a_planted_fifo_or_symlink_does_not_hold_it_up() {
        let root = tempfile::tempdir().unwrap();
        let held = worktree_turn(root.path()).expect("a free turn is taken");
        let other = std::fs::File::open(root.path().join(".git-worktree.lock")).unwrap();
        assert!(matches!(other.try_lock(), Err(std::fs::TryLockError::WouldBlock)));
        drop(held);
        assert!(other.try_lock().is_ok(), "the turn ends with its file");
        drop(other);

        let lock = root.path().join(".git-worktree.lock");
        std::fs::remove_file(&lock).unwrap();
        sh(root.path(), "mkfifo .git-worktree.lock");
        let started = std::time::Instant::now();
        assert!(worktree_turn(root.path()).is_none(), "a FIFO is not a turn");
        std::fs::remove_file(&lock).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("planted"), &lock).unwrap();
        assert!(worktree_turn(root.path()).is_none(), "a symlink is not followed");
        assert!(!outside.path().join("planted").exists(), "nothing is made at its target");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "neither is waited on");
    }

    /// A repository with a.txt and b.txt committed, a.txt changed and c.txt untracked.
    fn repo() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        sh(
            &repo,
            "git init -q && printf 'one\\ntwo\\nthree\\nfour\\nfive\\n' > a.txt && printf 'b\\n' > b.txt && git add . \
             && git -c user.name=t -c user.email=t@t commit -qm init && printf 'one\\ntwo\\nthree\\nfour\\nfive!\\n' > a.txt \
             && printf 'c\\n' > c.txt",
        );
        let data = tmp.path().join("data");
        (tmp, repo, data)
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn a_worktree_holds_the_users_head_and_uncommitted_changes_and_outlives_its_maker() {
        let (_tmp, repo, data) = repo();
        let worktree = Worktree::create(&repo, &data, "w1").unwrap();
        assert!(worktree.dir.starts_with(data.join("worktrees")));
        assert_eq!(read(&worktree.dir.join("a.txt")), "one\ntwo\nthree\nfour\nfive!\n");
        assert_eq!(read(&worktree.dir.join("c.txt")), "c\n");
        assert!(worktree.changes().unwrap().is_empty(), "nothing is the agent's yet");
        // The user's repository is as it was: same HEAD, same uncommitted change.
        sh(
            &repo,
            "git diff --quiet HEAD -- b.txt && ! git diff --quiet HEAD -- a.txt && test -z \"$(git log --oneline | sed 1d)\"",
        );
        // What a new process finds (after a kill -9 of this one).
        assert_eq!(Worktree::list(&data, Some(&worktree.repo)), std::slice::from_ref(&worktree));
        std::fs::write(worktree.dir.join("b.txt"), "agent b\n").unwrap();
        std::fs::write(worktree.dir.join("e.txt"), "e\n").unwrap();
        let agents = Worktree::agents(&data, &repo);
        assert_eq!(agents.len(), 1);
        assert!(agents[0].running, "this process made it");
        assert_eq!(agents[0].changed, ["b.txt", "e.txt"]);
        worktree.remove().unwrap();
        assert!(!worktree.dir.exists());
        assert!(Worktree::list(&data, None).is_empty());
    }

    #[test]
    fn the_agents_change_merges_onto_what_the_user_changed_meanwhile() {
        let (_tmp, repo, data) = repo();
        let worktree = Worktree::create(&repo, &data, "w1").unwrap();
        // The agent changes the first line of a.txt and all of b.txt, adds d.txt, deletes c.txt.
        std::fs::write(worktree.dir.join("a.txt"), "ONE\ntwo\nthree\nfour\nfive!\n").unwrap();
        std::fs::write(worktree.dir.join("b.txt"), "agent b\n").unwrap();
        std::fs::write(worktree.dir.join("d.txt"), "d\n").unwrap();
        std::fs::remove_file(worktree.dir.join("c.txt")).unwrap();
        // Meanwhile the user types at the end of a.txt and rewrites b.txt.
        std::fs::write(repo.join("a.txt"), "one\ntwo\nthree\nfour\nfive!\nsix\n").unwrap();
        std::fs::write(repo.join("b.txt"), "user b\n").unwrap();

        let merged = worktree.merge().unwrap();

        let shown: Vec<String> = merged
            .iter()
            .map(|file| match &file.result {
                Ok(Some(text)) => format!("{}: {text:?}", file.path),
                Ok(None) => format!("{}: deleted", file.path),
                Err(conflict) => format!("{}: conflict: {}", file.path, conflict.description),
            })
            .collect();
        expect_test::expect![[r#"
            [
                "a.txt: \"ONE\\ntwo\\nthree\\nfour\\nfive!\\nsix\\n\"",
                "b.txt: conflict: b.txt: the file changed after the edit was proposed: the user changed line 1 of the current text, where the edit changes line 1 of the text it was made from",
                "c.txt: deleted",
                "d.txt: \"d\\n\"",
            ]
        "#]]
        .assert_debug_eq(&shown);
    }

    #[test]
    fn a_link_the_agent_leaves_is_a_conflict_and_is_never_read_through() {
        let (tmp, repo, data) = repo();
        let secret = tmp.path().join("secret.txt");
        std::fs::write(&secret, "the key\n").unwrap();
        let worktree = Worktree::create(&repo, &data, "w1").unwrap();
        std::os::unix::fs::symlink(&secret, worktree.dir.join("leak.txt")).unwrap();
        std::fs::remove_file(worktree.dir.join("b.txt")).unwrap();
        std::os::unix::fs::symlink(&secret, worktree.dir.join("b.txt")).unwrap();
        let merged = worktree.merge().unwrap();
        for path in ["b.txt", "leak.txt"] {
            let one = merged.iter().find(|merged| merged.path == path).unwrap();
            let conflict = one.result.clone().unwrap_err();
            assert!(conflict.description.contains("symbolic link"), "{conflict:?}");
        }
        assert!(!format!("{merged:?}").contains("the key"), "{merged:?}");
    }

    #[test]
    fn outside_git_says_that_worktrees_need_it() {
        let tmp = tempfile::tempdir().unwrap();
        let err = Worktree::create(tmp.path(), &tmp.path().join("data"), "w1").unwrap_err();
        assert_eq!(err.code(), "invalid_state");
        assert!(err.to_string().contains("needs git"), "{err}");
    }
}
