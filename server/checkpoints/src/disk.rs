//! Checking out on disk so that a kill at any moment leaves every file before or after, never
//! half-written, and running the checkout again finishes the job.
//!
//! The order: (1) each new content is written to a temporary file beside its file, and a journal
//! naming them, with the hash each file has now and is to have, is written in a staging
//! directory (`<session>.checkout-new/`); all of them are synced together and the staging
//! directory is renamed to `<session>.checkout/`, which commits the journal. (2) Each temporary
//! file takes its file's place by a rename (or the file is deleted) — unless the file changed
//! since the plan, in which case it is left alone. (3) The caller moves the session's leaf and
//! saves it. (4) The renames, the deletions and the leaf are made durable together and the
//! journal is removed. A journal found when a checkout starts is one that was interrupted: it is
//! finished first (steps 2 to 4 again, each file skipped if it already holds its new content).
//! A staging directory found then is a checkout killed before it committed: nothing was changed,
//! and its temporary files are removed.
//!
//! A checkout writes each new content once and syncs three times whatever the number of files,
//! each time every file of a step together ([`sync_together`]: one `syncfs` per filesystem on
//! Linux): the temporary files with the journal; the journal's name; the renames, deletions and
//! the session's new leaf. A sync of each file was a commit of the filesystem's journal and a
//! flush of the disk's cache each (50 files: 6–47× git's time). Every temporary file is durable
//! before the journal that names it is committed, and the journal before any file changes, so a
//! power cut too leaves each file before or after; the journal is removed only once all is
//! durable, so a power cut before that finishes the checkout again at the next one.

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::durable::sync_together;
use crate::replay::FileOutcome;
use crate::store::{sha256_hex, sha256_of_file};

const JOURNAL_FILE: &str = "journal.json";
/// Version 1 journals kept every new content in this file of the journal.
const CONTENTS_FILE: &str = "contents";
/// Names the temporary files a checkout writes next to the files it changes.
const TEMP_PREFIX: &str = ".reins-checkout-";
/// 2: new contents in temporary files beside their files (1: in the journal's contents file).
const VERSION: u32 = 2;
/// Temporary files open at once while a checkout writes: a bound on descriptors, far above a
/// usual checkout.
const BATCH: usize = 256;
/// At most this many threads put files in place (see [`Journal::apply`]).
const MAX_THREADS: usize = 4;
/// A thread of its own is worth it from this many files on.
const MIN_SHARE: usize = 8;

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
    /// The temporary file beside `path` that holds its new content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp: Option<PathBuf>,
    /// Version 1: where its new content is in the journal's contents file (offset, length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

/// Where a checkout's journal is written before it is committed: `<dir>/<name>.checkout-new`.
fn staging_dir(session: &Path) -> PathBuf {
    session.with_extension("checkout-new")
}

impl Journal {
    /// Writes and commits the journal of a checkout of `session` to `target` that writes the
    /// files of `outcomes` that change, with their new contents beside them; `inside` confirms
    /// a file's directory is inside the workspace before anything is written there.
    pub fn write(
        session: &Path,
        target: &str,
        outcomes: &[FileOutcome],
        inside: &dyn Fn(&Path) -> bool,
    ) -> io::Result<Journal> {
        let (dir, staging) = (journal_dir(session), staging_dir(session));
        discard_staging(&staging, inside);
        std::fs::create_dir(&staging)?;
        let id = unique_id();
        let mut files = Vec::new();
        let mut contents: Vec<&[u8]> = Vec::new();
        for outcome in outcomes.iter().filter(|outcome| outcome.writes()) {
            let parent = outcome.path.parent().filter(|parent| inside(parent));
            let temp = match (&outcome.result, parent) {
                (Some(bytes), Some(parent)) => {
                    contents.push(bytes);
                    Some(parent.join(format!("{TEMP_PREFIX}{id}-{}", contents.len())))
                }
                _ => None,
            };
            files.push(JournalFile {
                path: outcome.path.clone(),
                shown: outcome.shown.clone(),
                from: outcome.current.as_deref().map(|bytes| known_or_hash(&outcome.current_sha256, bytes)),
                to: outcome.result.as_deref().map(|bytes| known_or_hash(&outcome.result_sha256, bytes)),
                temp,
                content: None,
            });
        }
        let journal =
            Journal { version: VERSION, target: target.to_string(), files, dir: dir.clone(), interrupted: false };
        // Named before they are written: a checkout killed now has its temporary files removed
        // by the next one.
        let mut file = std::fs::File::create(staging.join(JOURNAL_FILE))?;
        file.write_all(serde_json::to_string(&journal).map_err(io::Error::other)?.as_bytes())?;
        let staged_dir = std::fs::File::open(&staging)?;
        if let Err(err) = journal.write_temporaries(&contents, &[&file, &staged_dir]) {
            discard_staging(&staging, inside);
            return Err(err);
        }
        // The rename commits the journal: before it, nothing was changed. Its name is durable
        // before any file changes.
        if let Err(err) = std::fs::rename(&staging, &dir) {
            discard_staging(&staging, inside);
            return Err(err);
        }
        let parent = dir.parent().unwrap_or(Path::new("."));
        if let Err(err) = std::fs::File::open(parent).and_then(|parent| parent.sync_all()) {
            discard_staging(&dir, inside);
            return Err(err);
        }
        Ok(journal)
    }

    /// Writes the temporary files of the journal's files, `contents` in their order, and makes
    /// them durable with `with`: one sync for up to [`BATCH`] files.
    fn write_temporaries(&self, contents: &[&[u8]], with: &[&std::fs::File]) -> io::Result<()> {
        let temps: Vec<(&JournalFile, &Path)> =
            self.files.iter().filter_map(|file| Some((file, file.temp.as_deref()?))).collect();
        let mut made: HashSet<&Path> = HashSet::new();
        let mut batches = temps.chunks(BATCH).zip(contents.chunks(BATCH)).peekable();
        while let Some((batch, contents)) = batches.next() {
            let mut open = Vec::with_capacity(batch.len() + with.len());
            for ((file, temp), bytes) in batch.iter().zip(contents) {
                if let Some(parent) = temp.parent()
                    && made.insert(parent)
                {
                    std::fs::create_dir_all(parent)?;
                }
                open.push(write_temporary(&file.path, temp, bytes)?);
            }
            let mut together: Vec<&std::fs::File> = open.iter().collect();
            if batches.peek().is_none() {
                together.extend(with);
            }
            sync_together(&together)?;
        }
        if temps.is_empty() {
            sync_together(with)?;
        }
        Ok(())
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

    /// Puts each file that still holds what it held when the checkout was planned in its new
    /// place; `inside` confirms a path is still inside the workspace before anything is
    /// written there.
    ///
    /// The files are shared among a few threads, as many on one core as on four: removing a
    /// file whose blocks a sync has allocated takes the filesystem ~75 µs, mostly waiting on the
    /// disk (which the threads' waits overlap), and an undo may remove hundreds. Each file is
    /// independent of the others (each has its own temporary file, and a directory emptied by
    /// one is removed only when empty).
    pub fn apply(&self, inside: &(dyn Fn(&Path) -> bool + Sync)) -> Vec<Written> {
        if self.interrupted && self.version < 2 {
            self.remove_leftovers(inside);
        }
        // Version 1: the new contents are in the journal's contents file.
        let contents = match self.version {
            1 => Some(std::fs::File::open(self.dir.join(CONTENTS_FILE))),
            _ => None,
        };
        let one = |file: &JournalFile| {
            let contents = contents.as_ref().map(|contents| contents.as_ref().map_err(|err| err.to_string()));
            let written = self.put(file, contents, inside).unwrap_or_else(|err| Written::Failed(err.to_string()));
            // A temporary file that did not take its file's place is not left behind.
            if let Some(temp) = &file.temp
                && temp.parent().is_some_and(inside)
            {
                let _ = std::fs::remove_file(temp);
            }
            written
        };
        let share = self.files.len().div_ceil(MAX_THREADS).max(MIN_SHARE);
        let one = &one;
        let written = std::thread::scope(|scope| {
            let mut shares = self.files.chunks(share);
            let first = shares.next().unwrap_or_default();
            let others: Vec<_> = shares
                .map(|files| (files.len(), scope.spawn(move || files.iter().map(one).collect::<Vec<_>>())))
                .collect();
            let mut written: Vec<Written> = first.iter().map(one).collect();
            for (count, thread) in others {
                let lost = || vec![Written::Failed("the thread writing it stopped".to_string()); count];
                written.extend(thread.join().unwrap_or_else(|_| lost()));
            }
            written
        });
        let deleted = self
            .files
            .iter()
            .zip(&written)
            .filter(|(file, written)| file.to.is_none() && matches!(written, Written::Done | Written::AlreadyDone));
        remove_emptied_dirs(deleted.map(|(file, _)| file.path.as_path()), inside);
        written
    }

    /// Puts one file in its new place, or says why not.
    fn put(
        &self,
        file: &JournalFile,
        contents: Option<Result<&std::fs::File, String>>,
        inside: &dyn Fn(&Path) -> bool,
    ) -> io::Result<Written> {
        if !inside(&file.path) {
            return Ok(Written::Failed("it is outside the workspace".to_string()));
        }
        let now = sha256_of_file(&file.path)?;
        if now == file.to {
            return Ok(Written::AlreadyDone);
        }
        if now != file.from {
            return Ok(Written::ChangedMeanwhile);
        }
        let damaged = || Ok(Written::Failed("the journal's copy of its new content is damaged".to_string()));
        match (&file.temp, file.content, contents) {
            (None, None, _) if file.to.is_none() => match std::fs::remove_file(&file.path) {
                Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
                _ => {}
            },
            (Some(temp), _, None) => {
                // Written and synced by this process, or read back after a kill: checked then,
                // and only a plain file (never a link put in its place) takes the file's place.
                let plain = || std::fs::symlink_metadata(temp).is_ok_and(|meta| meta.file_type().is_file());
                if self.interrupted && (!plain() || read(temp)?.is_none_or(|bytes| Some(sha256_hex(&bytes)) != file.to))
                {
                    return damaged();
                }
                std::fs::rename(temp, &file.path)?;
            }
            (None, Some((offset, len)), Some(contents)) => {
                use std::os::unix::fs::FileExt;
                let contents = contents.map_err(io::Error::other)?;
                let mut bytes = vec![0; usize::try_from(len).map_err(io::Error::other)?];
                contents.read_exact_at(&mut bytes, offset)?;
                if file.to.as_deref() != Some(sha256_hex(&bytes).as_str()) {
                    return damaged();
                }
                let temp = file.path.with_file_name(format!("{TEMP_PREFIX}{}", unique_id()));
                let written = write_temporary(&file.path, &temp, &bytes)?;
                written.sync_all()?;
                std::fs::rename(&temp, &file.path)?;
            }
            _ => return Ok(Written::Failed("the journal keeps no new content for it".to_string())),
        }
        Ok(Written::Done)
    }

    /// Removes the temporary files a killed version 1 checkout left next to the files it was
    /// writing.
    fn remove_leftovers(&self, inside: &(dyn Fn(&Path) -> bool + Sync)) {
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

/// Removes a journal that is not to be carried out, with the temporary files it names (nothing
/// else was changed yet): one a killed checkout left in staging, or one whose commit failed.
fn discard_staging(staging: &Path, inside: &dyn Fn(&Path) -> bool) {
    if let Ok(text) = std::fs::read_to_string(staging.join(JOURNAL_FILE))
        && let Ok(journal) = serde_json::from_str::<Journal>(&text)
    {
        for temp in journal.files.iter().filter_map(|file| file.temp.as_deref()) {
            let ours =
                temp.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with(TEMP_PREFIX));
            if ours && temp.parent().is_some_and(inside) {
                let _ = std::fs::remove_file(temp);
            }
        }
    }
    if staging.is_dir() {
        let _ = std::fs::remove_dir_all(staging);
    }
}

/// The hash the replay knew for `bytes`, else theirs.
fn known_or_hash(known: &Option<String>, bytes: &[u8]) -> String {
    known.clone().unwrap_or_else(|| sha256_hex(bytes))
}

/// A name part no other checkout has: the temporary files of two sessions' checkouts in one
/// directory never meet.
fn unique_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u128(now.as_nanos());
    }
    format!("{:016x}", hasher.finish())
}

/// Removes the directories above deleted files that they leave empty (as the agent's creation
/// of the files made them), up to but not including a workspace root: a directory is removed
/// only when it and its parent are inside the workspace. Each directory is tried once, after
/// its files, deepest first (one failing `rmdir` per deleted file was most of an undo's calls).
fn remove_emptied_dirs<'a>(deleted: impl Iterator<Item = &'a Path>, inside: &dyn Fn(&Path) -> bool) {
    let mut dirs: Vec<&Path> = deleted.flat_map(|path| path.ancestors().skip(1)).collect();
    dirs.sort_by(|a, b| b.components().count().cmp(&a.components().count()).then(a.cmp(b)));
    dirs.dedup();
    let mut kept: HashSet<&Path> = HashSet::new();
    for dir in dirs {
        let below_a_root = dir.parent().is_some_and(inside) && inside(dir);
        // `remove_dir` removes only an empty directory (and no symlink to one); a directory
        // left is not empty, nor is any above it.
        if kept.contains(dir) || !below_a_root || dir.is_symlink() || std::fs::remove_dir(dir).is_err() {
            kept.extend(dir.ancestors());
        }
    }
}

/// The file's bytes, `None` when it does not exist.
pub fn read(path: &Path) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let size = file.metadata().map_or(0, |meta| meta.len());
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // Through `Take`: `File`'s own `read_to_end` asks the size and position again to size a
    // buffer that is sized already (a checkout reads every file it writes).
    Read::by_ref(&mut file).take(u64::MAX).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Writes `bytes` to the new file `temp` beside `path`, with the permissions `path` has (if it
/// exists), for a rename to put in its place: the file is then either as it was or as it is to
/// be. The caller syncs it before the rename.
fn write_temporary(path: &Path, temp: &Path, bytes: &[u8]) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let permissions = std::fs::metadata(path).ok().map(|meta| meta.permissions());
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o666).open(temp)?;
    file.write_all(bytes)?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions)?;
    }
    Ok(file)
}
