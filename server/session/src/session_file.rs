//! An open session: its tree in memory and the file behind it.
//!
//! Appends are queued in memory and written by [`SessionFile::flush`] in one write and one sync, in
//! the order they were made, so a crash loses at most what was not flushed yet and never tears an
//! earlier line. The OS lock is the writer lock: held from [`SessionFile::hold`] to
//! [`SessionFile::release`] (a run), or just for one flush, never while a session is merely open.
//! Whoever takes it first reads what another process appended since, so an editor and a terminal
//! can take turns on one conversation.

use std::fs::File;
use std::io::{IoSlice, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use reins_ai::Message;
use serde_json::{Map, Value};

use crate::context::SessionContext;
use crate::disk::read_all;
use crate::error::SessionError;
use crate::format::{Entry, EntryKind, EntryTag, Header};
use crate::message::MessageRecord;
use crate::store::{file_name, lock_file, open_for_append};
use crate::time::{new_entry_id, now_iso};
use crate::tree::SessionTree;

mod fork;

pub struct SessionFile {
    tree: SessionTree,
    file: File,
    /// Bytes of the tree's appended lines already in the file.
    flushed: usize,
    /// The file's length after the last good write, to undo a failed one.
    file_len: u64,
    /// The file's last line has no newline yet.
    needs_newline: bool,
    durability: Durability,
    /// This handle holds the writer lock ([`SessionFile::hold`]).
    held: bool,
}

/// How far [`SessionFile::flush`] makes its lines durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Write and sync to the disk: survives a crash of the machine. The default.
    #[default]
    Sync,
    /// Write only: survives a crash or kill of the process (the OS holds the data), not a power
    /// loss; a flush costs microseconds instead of a disk sync.
    Write,
}

impl SessionFile {
    /// Opens an existing session file, without locking it. A torn last line is left out (and cut
    /// off at the first write: until the lock is held it may be another process's line in the
    /// making); an older version is migrated in memory, and the file rewritten at the first write.
    pub fn open(path: &Path) -> Result<SessionFile, SessionError> {
        let file = open_for_append(path, false)?;
        let bytes = read_all(path, &file)?;
        let file_len = bytes.len() as u64;
        let tree = SessionTree::from_bytes(path, bytes)?;
        let needs_newline = tree.load.needs_newline && tree.load.torn_at.is_none();
        Ok(SessionFile { tree, file, flushed: 0, file_len, needs_newline, durability: Durability::Sync, held: false })
    }

    /// With the lock held and the file as this handle read it: cuts off a torn last line, or
    /// rewrites an older version as the version 3 this handle holds (queued entries included).
    fn repair(&mut self, path: &Path) -> Result<(), SessionError> {
        if self.tree.load.migrated {
            tracing::info!("{}: migrating the session to version 3", path.display());
            let text = self.tree.to_jsonl();
            self.file = rewrite(path, &text)?;
            self.file_len = text.len() as u64;
            self.tree = SessionTree::from_bytes(path, text.into_bytes())?;
            self.flushed = 0;
            self.needs_newline = false;
        } else if let Some(torn_at) = self.tree.load.torn_at.take() {
            self.file
                .set_len(torn_at as u64)
                .and_then(|()| self.file.sync_data())
                .map_err(|error| SessionError::io(path, error))?;
            self.file_len = torn_at as u64;
        }
        Ok(())
    }

    /// Takes the writer lock for a run (or any series of writes) until [`SessionFile::release`],
    /// after reading what another process appended since this handle last read the file: `true`
    /// when it did (the tree, its leaf and its context changed). While another process holds the
    /// lock, fails with [`SessionError::Locked`].
    pub fn hold(&mut self) -> Result<bool, SessionError> {
        if self.held {
            return Ok(false);
        }
        lock_file(&self.file, self.tree.path())?;
        self.held = true;
        let caught_up = self.catch_up();
        if caught_up.is_err() {
            self.unlock();
        }
        caught_up
    }

    /// Writes what is queued and lets other processes write again.
    pub fn release(&mut self) -> Result<(), SessionError> {
        if !self.held {
            return self.flush();
        }
        let written = self.write_pending();
        self.unlock();
        written
    }

    /// Whether this handle holds the writer lock.
    pub fn is_held(&self) -> bool {
        self.held
    }

    fn unlock(&mut self) {
        let _ = self.file.unlock();
        self.held = false;
    }

    /// With the lock held: brings the tree up to the file on disk — what other processes
    /// appended, a file replaced under us (a migration renames a new file into place), a torn
    /// last line cut off, an old version rewritten — and puts the entries queued here after it.
    /// `true` when another process had changed the file.
    fn catch_up(&mut self) -> Result<bool, SessionError> {
        let path = self.tree.path().to_path_buf();
        let mut changed = false;
        if !names_this_file(&path, &self.file) {
            let file = open_for_append(&path, false)?;
            lock_file(&file, &path)?;
            self.file = file;
            changed = true;
        }
        let len = self.file.metadata().map_err(|error| SessionError::io(&path, error))?.len();
        changed |= len != self.file_len;
        if !changed {
            self.repair(&path)?;
            return Ok(false);
        }
        let queued = self.tree.pending_lines(self.flushed);
        (&self.file).seek(SeekFrom::Start(0)).map_err(|error| SessionError::io(&path, error))?;
        let bytes = read_all(&path, &self.file)?;
        let mut file_len = bytes.len() as u64;
        let mut tree = SessionTree::from_bytes(&path, bytes)?;
        if tree.load.migrated {
            tracing::info!("{}: migrating the session to version 3", path.display());
            self.file = rewrite(&path, &tree.to_jsonl())?;
            file_len = self.file.metadata().map_err(|error| SessionError::io(&path, error))?.len();
            tree = SessionTree::from_bytes(&path, tree.to_jsonl().into_bytes())?;
        } else if let Some(torn_at) = tree.load.torn_at {
            self.file
                .set_len(torn_at as u64)
                .and_then(|()| self.file.sync_data())
                .map_err(|error| SessionError::io(&path, error))?;
            file_len = torn_at as u64;
        }
        self.needs_newline = tree.load.needs_newline && tree.load.torn_at.is_none();
        tree.load = Default::default();
        for line in &queued {
            tree.push_line(&line.bytes, &line.id, line.parent_id.as_deref(), line.tag, line.target_id.as_deref())?;
        }
        self.tree = tree;
        self.flushed = 0;
        self.file_len = file_len;
        Ok(changed)
    }

    /// Writes a new file in `dir` for `tree` (its header and entries), synced and locked.
    /// The new file is synced unless `durability` says to only write it.
    pub(crate) fn create(
        dir: &Path,
        header: Header,
        durability: Durability,
        build: impl FnOnce(&mut SessionTree) -> Result<(), SessionError>,
    ) -> Result<SessionFile, SessionError> {
        let mut tree = SessionTree::empty(dir.join(file_name(&header)), header);
        build(&mut tree)?;
        SessionFile::write_new(tree, durability)
    }

    /// Writes a new file at `tree`'s path holding its header and entries, in one write, and
    /// returns it locked. The file is synced unless `durability` says to only write it.
    pub(crate) fn write_new(tree: SessionTree, durability: Durability) -> Result<SessionFile, SessionError> {
        let path = tree.path().to_path_buf();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        crate::private::create_dir(&dir).map_err(|error| SessionError::io(&dir, error))?;
        let mut header_line = tree.header().to_line().into_bytes();
        header_line.push(b'\n');
        // Nobody else knows the new file yet: it needs no lock.
        let mut file = open_for_append(&path, true)?;
        // The lines are written from where they are (a fork shares its source's bytes) rather than
        // from one copy of what may be tens of megabytes; the file is new and nobody reads it
        // before this returns.
        let mut parts = vec![header_line.as_slice()];
        parts.extend(tree.base_runs());
        parts.push(tree.tail());
        let file_len: usize = parts.iter().map(|part| part.len()).sum();
        write_all_parts(&mut file, &parts).map_err(|error| SessionError::io(&path, error))?;
        if durability == Durability::Sync {
            file.sync_data().map_err(|error| SessionError::io(&path, error))?;
            sync_dir(&dir);
        }
        let flushed = tree.tail().len();
        Ok(SessionFile {
            tree,
            file,
            flushed,
            file_len: file_len as u64,
            needs_newline: false,
            durability,
            held: false,
        })
    }

    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    pub fn tree(&self) -> &SessionTree {
        &self.tree
    }

    pub fn path(&self) -> &Path {
        self.tree.path()
    }

    pub fn id(&self) -> &str {
        &self.tree.header().id
    }

    pub fn leaf(&self) -> Option<&str> {
        self.tree.leaf()
    }

    /// The context at the current leaf.
    pub fn context(&self) -> Result<SessionContext, SessionError> {
        self.tree.context()
    }

    /// Queues an entry as a child of the current leaf, which moves to it. Returns its id.
    pub fn append(&mut self, kind: EntryKind) -> Result<String, SessionError> {
        let parent = self.tree.leaf().map(str::to_string);
        self.append_at(kind, parent.as_deref(), Map::new())
    }

    /// Queues an entry as a child of `parent` (`None`: a new root) with `extra` fields.
    pub fn append_at(
        &mut self,
        kind: EntryKind,
        parent: Option<&str>,
        extra: Map<String, Value>,
    ) -> Result<String, SessionError> {
        let id = new_entry_id(|id| self.tree.contains(id));
        let entry = Entry { id: id.clone(), parent_id: parent.map(str::to_string), timestamp: now_iso(), kind, extra };
        self.tree.push(&entry)?;
        Ok(id)
    }

    pub fn append_message(&mut self, message: &Message) -> Result<String, SessionError> {
        let parent = self.tree.leaf().map(str::to_string);
        let id = new_entry_id(|id| self.tree.contains(id));
        let record = MessageRecord::from_message(message);
        let line = Entry::message_line(&id, parent.as_deref(), &now_iso(), &record);
        self.tree.push_line(line.as_bytes(), &id, parent.as_deref(), EntryTag::Message, None)?;
        Ok(id)
    }

    /// Writes every queued entry, in order, with one write and one sync. Without the writer lock
    /// held, takes it for this write (after what another process appended).
    pub fn flush(&mut self) -> Result<(), SessionError> {
        if self.held || self.tree.tail()[self.flushed..].is_empty() {
            return self.write_pending();
        }
        self.hold()?;
        self.release()
    }

    /// Writes the queued entries; the lock is held.
    fn write_pending(&mut self) -> Result<(), SessionError> {
        let pending = &self.tree.tail()[self.flushed..];
        if pending.is_empty() {
            return Ok(());
        }
        let path = self.tree.path().to_path_buf();
        let result = if self.needs_newline {
            let mut bytes = Vec::with_capacity(pending.len() + 1);
            bytes.push(b'\n');
            bytes.extend_from_slice(pending);
            self.file.write_all(&bytes)
        } else {
            self.file.write_all(pending)
        }
        .and_then(|()| match self.durability {
            Durability::Sync => self.file.sync_data(),
            Durability::Write => Ok(()),
        });
        if let Err(error) = result {
            // Cut back to the last good line so a later flush does not land after a torn one.
            let _ = self.file.set_len(self.file_len);
            return Err(SessionError::io(&path, error));
        }
        self.file_len += (pending.len() + usize::from(self.needs_newline)) as u64;
        self.flushed = self.tree.tail().len();
        self.needs_newline = false;
        Ok(())
    }

    /// Moves the position to `entry_id` and flushes. With a summary of the branch being left, a
    /// `branch_summary` entry is appended there (and becomes the leaf); without, a `leaf` entry
    /// records the move so that it survives a reload.
    pub fn navigate(&mut self, entry_id: &str, summary: Option<String>) -> Result<(), SessionError> {
        self.tree.index_of(entry_id)?;
        match summary {
            Some(summary) => {
                let kind = EntryKind::BranchSummary { from_id: entry_id.to_string(), summary };
                self.append_at(kind, Some(entry_id), Map::new())?;
            }
            None if self.tree.leaf() == Some(entry_id) => return Ok(()),
            None => {
                let kind = EntryKind::Leaf { target_id: entry_id.to_string() };
                self.append_at(kind, Some(entry_id), Map::new())?;
            }
        }
        self.flush()
    }

    /// Sets (or with `None`, clears) the label of `entry_id`.
    pub fn label(&mut self, entry_id: &str, label: Option<&str>) -> Result<String, SessionError> {
        self.tree.index_of(entry_id)?;
        self.append(EntryKind::Label { target_id: entry_id.to_string(), label: label.map(str::to_string) })
    }

    /// Names the session (an empty name clears it).
    pub fn set_name(&mut self, name: &str) -> Result<String, SessionError> {
        self.append(EntryKind::SessionInfo { name: Some(name.trim().to_string()) })
    }

    /// Appends a compaction entry: the model's `summary` replaces everything before
    /// `first_kept_entry_id` in the contexts built below it.
    pub fn compact(
        &mut self,
        summary: String,
        first_kept_entry_id: &str,
        tokens_before: u64,
        details: Option<Value>,
    ) -> Result<String, SessionError> {
        self.tree.index_of(first_kept_entry_id)?;
        let mut extra = Map::new();
        if let Some(details) = details {
            extra.insert("details".into(), details);
        }
        let kind =
            EntryKind::Compaction { summary, first_kept_entry_id: first_kept_entry_id.to_string(), tokens_before };
        let parent = self.tree.leaf().map(str::to_string);
        self.append_at(kind, parent.as_deref(), extra)
    }
}

impl Drop for SessionFile {
    fn drop(&mut self) {
        if let Err(error) = self.flush() {
            tracing::warn!("{error}; the last entries of the session were not saved");
        }
    }
}

impl std::fmt::Debug for SessionFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionFile").field("tree", &self.tree).field("flushed", &self.flushed).finish()
    }
}

/// Replaces `path` with `text` through a synced temporary file and a rename (so a crash leaves the
/// old or the new file, never half of one) and returns the new file, locked (the caller holds the
/// lock of the old one).
fn rewrite(path: &Path, text: &str) -> Result<File, SessionError> {
    let temporary: PathBuf = path.with_extension("jsonl.migrating");
    let write = || -> std::io::Result<()> {
        let mut file = crate::private::options().write(true).create(true).truncate(true).open(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    };
    write().map_err(|error| SessionError::io(path, error))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir);
    }
    let file = open_for_append(path, false)?;
    lock_file(&file, path)?;
    Ok(file)
}

/// Whether `path` still names the file `file` has open (not a file renamed into its place).
fn names_this_file(path: &Path, file: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(path), file.metadata()) {
            (Ok(at_path), Ok(open)) => (at_path.dev(), at_path.ino()) == (open.dev(), open.ino()),
            _ => true,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (path, file);
        true
    }
}

/// Writes `parts` one after the other with as few system calls as the OS allows.
fn write_all_parts(file: &mut File, parts: &[&[u8]]) -> std::io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> =
        parts.iter().filter(|part| !part.is_empty()).map(|part| IoSlice::new(part)).collect();
    let mut remaining = slices.as_mut_slice();
    while !remaining.is_empty() {
        match file.write_vectored(remaining) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(written) => IoSlice::advance_slices(&mut remaining, written),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Makes a new or renamed file's directory entry durable; best effort (not every OS allows it).
fn sync_dir(dir: &Path) {
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}
