//! Checking out on disk so that a kill at any moment leaves every file before or after, never
//! half-written, and running the checkout again finishes the job.
//!
//! The order: (1) a journal, `<session>.checkout/`, holds each file's new content and the hash
//! the file has now; it is written (and synced) in a temporary directory and renamed into place,
//! which commits it. (2) Each file is written through a temporary file in its own directory and a
//! rename (or deleted) — unless it changed since the plan, in which case it is left alone. (3) The
//! caller moves the session's leaf and saves it. (4) The renames, the deletions and the leaf are
//! made durable together and the journal is removed. A journal found when a checkout starts is
//! one that was interrupted: it is finished first (steps 2 to 4 again, each file skipped if it
//! already holds its new content).
//!
//! A checkout syncs three times whatever the number of files, each time every file of a step
//! together ([`sync_together`]: one `syncfs` per filesystem on Linux): the journal's files; the
//! temporary files with the journal's rename (before any file takes a new content, the journal
//! that finishes the job is durable); the renames, deletions and the session's new leaf. A sync
//! of each file was a commit of the filesystem's journal and a flush of the disk's cache each
//! (50 files: 6–47× git's time; a sync of each after all were written still 4.6–8.4×). Every
//! temporary file is still durable before its rename, so a power cut too leaves each file before
//! or after, and the journal is removed only once all is durable, so a power cut before that
//! finishes the checkout again at the next one.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::durable::sync_together;
use crate::replay::FileOutcome;
use crate::store::sha256_hex;

const JOURNAL_FILE: &str = "journal.json";
const CONTENTS_FILE: &str = "contents";
/// Names the temporary files a checkout writes next to the files it changes.
const TEMP_PREFIX: &str = ".reins-checkout-";
const VERSION: u32 = 1;
/// Temporary files open at once while a checkout writes: a bound on descriptors, far above a
/// usual checkout.
const BATCH: usize = 256;

/// A checkout in progress: what each file is to become.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    version: u32,
    /// The entry the leaf moves to.
    pub target: String,
    pub files: Vec<JournalFile>,
    #[serde(skip)]
    dir: PathBuf,
    /// Read back from disk: an interrupted checkout, which may have left temporary files.
    #[serde(skip)]
    interrupted: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalFile {
    /// Absolute, inside the workspace.
    pub path: PathBuf,
    pub shown: String,
    /// SHA-256 of the file when the checkout was planned; `None`: it did not exist.
    pub from: Option<String>,
    /// SHA-256 of its new content; `None`: it is deleted.
    pub to: Option<String>,
    /// Where its new content is in the journal's contents file: offset and length.
    pub content: Option<(u64, u64)>,
}

/// How writing one file went.
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// Written (or deleted).
    Done,
    /// It already held its new content (a checkout run again after an interruption).
    AlreadyDone,
    /// It changed after the checkout was planned, so it was left as it is.
    ChangedMeanwhile,
    Failed(String),
}

/// `<dir>/<name>.jsonl` → `<dir>/<name>.checkout`.
pub fn journal_dir(session: &Path) -> PathBuf {
    session.with_extension("checkout")
}

impl Journal {
    /// Writes and commits the journal of a checkout of `session` to `target` that writes the
    /// files of `outcomes` that change.
    pub fn write(session: &Path, target: &str, outcomes: &[FileOutcome]) -> io::Result<Journal> {
        let dir = journal_dir(session);
        let parent = dir.parent().unwrap_or(Path::new("."));
        let staging = tempfile::Builder::new().prefix(".checkout-").tempdir_in(parent)?;
        // Every new content in one file, each at its offset: one sync instead of one per file.
        let mut contents = std::io::BufWriter::new(std::fs::File::create(staging.path().join(CONTENTS_FILE))?);
        let mut offset = 0;
        let mut files = Vec::new();
        for outcome in outcomes.iter().filter(|outcome| outcome.writes()) {
            let content = match &outcome.result {
                Some(bytes) => {
                    contents.write_all(bytes)?;
                    offset += bytes.len() as u64;
                    Some((offset - bytes.len() as u64, bytes.len() as u64))
                }
                None => None,
            };
            files.push(JournalFile {
                path: outcome.path.clone(),
                shown: outcome.shown.clone(),
                from: outcome.current.as_deref().map(sha256_hex),
                to: outcome.result.as_deref().map(sha256_hex),
                content,
            });
        }
        let contents = contents.into_inner().map_err(|err| err.into_error())?;
        let journal =
            Journal { version: VERSION, target: target.to_string(), files, dir: dir.clone(), interrupted: false };
        let mut file = std::fs::File::create(staging.path().join(JOURNAL_FILE))?;
        file.write_all(serde_json::to_string(&journal).map_err(io::Error::other)?.as_bytes())?;
        // Both files and their names durable in one sync before the rename names them.
        let staged_dir = std::fs::File::open(staging.path())?;
        sync_together(&[&contents, &file, &staged_dir])?;
        // The rename commits the journal: before it, nothing was changed. It is made durable
        // with the temporary files, before any file changes ([`Journal::apply`]).
        std::fs::rename(staging.keep(), &dir)?;
        Ok(journal)
    }

    /// The journal of an interrupted checkout of `session`, if there is one.
    pub fn pending(session: &Path) -> io::Result<Option<Journal>> {
        let dir = journal_dir(session);
        let text = match std::fs::read_to_string(dir.join(JOURNAL_FILE)) {
            Ok(text) => text,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                // A directory without its journal never committed; nothing was written from it.
                if dir.is_dir() {
                    std::fs::remove_dir_all(&dir)?;
                }
                return Ok(None);
            }
            Err(err) => return Err(err),
        };
        let mut journal: Journal = serde_json::from_str(&text)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {err}", dir.display())))?;
        if journal.version > VERSION {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: written by a newer reins; finish it with that one", dir.display()),
            ));
        }
        journal.dir = dir;
        journal.interrupted = true;
        Ok(Some(journal))
    }

    /// Writes each file that still holds what it held when the checkout was planned; `inside`
    /// confirms a path is still inside the workspace before anything is written there.
    pub fn apply(&self, inside: &dyn Fn(&Path) -> bool) -> Vec<Written> {
        if self.interrupted {
            self.remove_leftovers(inside);
        }
        let contents = match std::fs::File::open(self.dir.join(CONTENTS_FILE)) {
            Ok(contents) => contents,
            Err(err) => return self.files.iter().map(|_| Written::Failed(err.to_string())).collect(),
        };
        // Where the journal was renamed into place: its name durable before any file changes.
        let committed = self.dir.parent().and_then(|parent| std::fs::File::open(parent).ok());
        let mut written = Vec::with_capacity(self.files.len());
        for (n, batch) in self.files.chunks(BATCH).enumerate() {
            let mut staged: Vec<io::Result<Staged>> =
                batch.iter().map(|file| self.stage(file, &contents, inside)).collect();
            // Every temporary file durable before any takes its file's place, in one sync.
            let mut temps: Vec<&std::fs::File> = staged
                .iter()
                .filter_map(|staged| match staged {
                    Ok(Staged::Write(temp, _)) => Some(temp.as_file()),
                    _ => None,
                })
                .collect();
            if n == 0 {
                temps.extend(committed.as_ref());
            }
            if let Err(err) = sync_together(&temps) {
                for staged in staged.iter_mut().filter(|staged| matches!(staged, Ok(Staged::Write(..)))) {
                    *staged = Err(io::Error::new(err.kind(), err.to_string()));
                }
            }
            for (file, staged) in batch.iter().zip(staged) {
                let outcome = staged.and_then(|staged| finish(staged, file, inside));
                written.push(outcome.unwrap_or_else(|err| Written::Failed(err.to_string())));
            }
        }
        written
    }

    /// Decides what becomes of one file and, when it is to be written, writes its new content
    /// to a temporary file beside it (not yet synced).
    fn stage(
        &self,
        file: &JournalFile,
        contents: &std::fs::File,
        inside: &dyn Fn(&Path) -> bool,
    ) -> io::Result<Staged> {
        if !inside(&file.path) {
            return Ok(Staged::Settled(Written::Failed("it is outside the workspace".to_string())));
        }
        let now = read(&file.path)?.map(|bytes| sha256_hex(&bytes));
        if now == file.to {
            if file.to.is_none() {
                remove_emptied_dirs(&file.path, inside);
            }
            return Ok(Staged::Settled(Written::AlreadyDone));
        }
        if now != file.from {
            return Ok(Staged::Settled(Written::ChangedMeanwhile));
        }
        let Some((offset, len)) = file.content else { return Ok(Staged::Delete) };
        use std::os::unix::fs::FileExt;
        let mut bytes = vec![0; usize::try_from(len).map_err(io::Error::other)?];
        contents.read_exact_at(&mut bytes, offset)?;
        if file.to.as_deref() != Some(sha256_hex(&bytes).as_str()) {
            return Ok(Staged::Settled(Written::Failed(
                "the journal's copy of its new content is damaged".to_string(),
            )));
        }
        Ok(Staged::Write(write_temporary(&file.path, &bytes)?, file.path.clone()))
    }

    /// Removes the temporary files a killed checkout left next to the files it was writing.
    fn remove_leftovers(&self, inside: &dyn Fn(&Path) -> bool) {
        let mut dirs: Vec<&Path> = self.files.iter().filter_map(|file| file.path.parent()).collect();
        dirs.sort();
        dirs.dedup();
        for dir in dirs.into_iter().filter(|dir| inside(dir)) {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            for entry in entries.flatten() {
                let ours = entry.file_name().to_str().is_some_and(|name| name.starts_with(TEMP_PREFIX));
                if ours && entry.file_type().is_ok_and(|kind| kind.is_file()) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }

    /// Once the leaf has moved (`session` saved without a sync of its own): makes the renames,
    /// the deletions and the session durable in one sync, then removes the journal, which
    /// completes the checkout. Should the sync fail, the journal stays, and the next checkout
    /// finishes this one again.
    pub fn finish(self, session: &Path) -> io::Result<()> {
        let mut dirs: Vec<&Path> = self.files.iter().filter_map(|file| file.path.parent()).collect();
        dirs.sort();
        dirs.dedup();
        // A directory a deletion removed is gone, and its parent's entry is what is synced.
        let mut open: Vec<std::fs::File> =
            dirs.into_iter().filter_map(|dir| dir.ancestors().find_map(|dir| std::fs::File::open(dir).ok())).collect();
        open.push(std::fs::File::open(session)?);
        sync_together(&open.iter().collect::<Vec<_>>())?;
        std::fs::remove_dir_all(&self.dir)
    }
}

/// What is left to do for one file once its batch's temporary files are written.
enum Staged {
    /// Nothing: already done, changed meanwhile, or refused.
    Settled(Written),
    /// The temporary file holding its new content takes its place.
    Write(tempfile::NamedTempFile, PathBuf),
    Delete,
}

/// Renames a staged file into place or deletes it.
fn finish(staged: Staged, file: &JournalFile, inside: &dyn Fn(&Path) -> bool) -> io::Result<Written> {
    match staged {
        Staged::Settled(written) => return Ok(written),
        Staged::Write(temp, path) => {
            temp.persist(&path).map_err(|err| err.error)?;
        }
        Staged::Delete => {
            match std::fs::remove_file(&file.path) {
                Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
                _ => {}
            }
            remove_emptied_dirs(&file.path, inside);
        }
    }
    Ok(Written::Done)
}

/// Removes the directories above a deleted file that it leaves empty (as the agent's creation of
/// the file made them), up to but not including a workspace root: a directory is removed only
/// when it and its parent are inside the workspace.
fn remove_emptied_dirs(deleted: &Path, inside: &dyn Fn(&Path) -> bool) {
    let mut at = deleted.parent();
    while let Some(dir) = at {
        let below_a_root = dir.parent().is_some_and(inside) && inside(dir);
        // `remove_dir` removes only an empty directory (and no symlink to one).
        if !below_a_root || dir.is_symlink() || std::fs::remove_dir(dir).is_err() {
            return;
        }
        at = dir.parent();
    }
}

/// The file's bytes, `None` when it does not exist.
pub fn read(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// Writes `bytes` to a temporary file in `path`'s directory, with the permissions `path` has (if
/// it exists), for a rename to put in its place: the file is then either as it was or as it is
/// to be. The caller syncs it before the rename.
fn write_temporary(path: &Path, bytes: &[u8]) -> io::Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::PermissionsExt;
    let parent = path.parent().ok_or_else(|| io::Error::other("has no parent directory"))?;
    std::fs::create_dir_all(parent)?;
    let permissions = std::fs::metadata(path).ok().map(|meta| meta.permissions());
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(parent)?;
    temp.write_all(bytes)?;
    if let Some(permissions) = permissions {
        temp.as_file().set_permissions(permissions)?;
    }
    Ok(temp)
}
