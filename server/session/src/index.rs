//! A small index of one workspace's sessions, so that a listing need not read every session
//! file: what a listing shows of each file (id, name, first message, entry count, times, usage),
//! stamped with the file's modification time and length. The files stay the truth — pi writes
//! sessions too, and so may another reins — so an entry whose stamp no longer matches its file is
//! read again from the file, one for a file that is gone is dropped, and an index that is
//! missing, unreadable or of another version is rebuilt. It lives beside the session files as
//! `reins-index.json` (pi lists only `*.jsonl`), written whole to a temporary file and renamed
//! into place, so a reader never sees half of one.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reins_ai::{Cost, Usage};
use serde::{Deserialize, Serialize};

use crate::error::SessionError;
use crate::store::session_entries;
use crate::summary::{ReadMark, SessionSummary, summarize_from};
use crate::watch::{Changes, DirWatch};

/// The index's file name, in a workspace's session directory.
pub const INDEX_FILE: &str = "reins-index.json";
const VERSION: u32 = 1;
/// The most characters of a first message the index keeps: more than any listing shows.
const FIRST_MESSAGE_CHARS: usize = 1000;
/// The least time between two writes of the index by one process. A session that streams
/// changes its file at every save point, and a listing would otherwise write the whole index (a
/// thousand sessions: half a megabyte) each time, while an editor asks for it; an entry the file
/// lacks meanwhile is only read again from its session file by the next reader.
const SAVE_EVERY: Duration = Duration::from_secs(5);
/// The most changed files, and bytes to read in them, that [`SessionIndex::sync_if_cheap`]
/// reads: a turn's save points, not a directory of new sessions.
const CHEAP_FILES: usize = 8;
const CHEAP_BYTES: u64 = 256 << 10;

/// The index of one session directory, as read and kept up to date by listings.
#[derive(Debug, Default)]
pub struct SessionIndex {
    dir: PathBuf,
    entries: HashMap<String, IndexEntry>,
    /// Entries changed since the index was read or written.
    changed: bool,
    /// When this process last wrote the index.
    saved_at: Option<Instant>,
    /// What changed in the directory since the last [`SessionIndex::sync`].
    watch: DirWatch,
    /// The session files that are symbolic links, read again at each sync.
    linked: HashSet<String>,
    /// Files the watch named that a [`SessionIndex::sync_if_cheap`] left for the next sync.
    pending: HashSet<String>,
    /// The watch could not say what changed when a [`SessionIndex::sync_if_cheap`] asked: the
    /// next sync reads the whole directory.
    unknown: bool,
}

/// The index file: its version and an entry per session file, by file name.
#[derive(Debug, Serialize, Deserialize)]
struct IndexFile {
    version: u32,
    sessions: HashMap<String, IndexEntry>,
}

/// What a listing shows of one file, and the stamp of the file it was read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexEntry {
    /// Nanoseconds since the Unix epoch.
    modified_ns: u64,
    len: u64,
    id: String,
    cwd: String,
    name: Option<String>,
    first_user_message: Option<String>,
    entry_count: usize,
    parent_session: Option<String>,
    usage: UsageRecord,
    /// Where this process's reading of the file stopped, so that a file that grew is read on
    /// from there (see [`ReadMark`]); not written: another process reads the file whole once.
    #[serde(skip)]
    mark: Option<ReadMark>,
}

/// [`Usage`] as the index stores it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageRecord {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    total_tokens: u64,
    cost_input: f64,
    cost_output: f64,
    cost_cache_read: f64,
    cost_cache_write: f64,
    cost_total: f64,
}

impl SessionIndex {
    /// The index of the session directory `dir`, empty when it has none yet or it cannot be read.
    pub fn load(dir: &Path) -> SessionIndex {
        let path = dir.join(INDEX_FILE);
        let entries = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<IndexFile>(&bytes) {
                Ok(file) if file.version == VERSION => file.sessions,
                Ok(_) => HashMap::new(),
                Err(err) => {
                    tracing::info!("{}: {err}; rebuilding the index from the session files", path.display());
                    HashMap::new()
                }
            },
            Err(_) => HashMap::new(),
        };
        SessionIndex {
            dir: dir.to_path_buf(),
            entries,
            changed: false,
            saved_at: None,
            watch: DirWatch::default(),
            linked: HashSet::new(),
            pending: HashSet::new(),
            unknown: false,
        }
    }

    /// The directory this index is of.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The summaries of `files` (session files of this directory), as [`SessionIndex::refresh`]
    /// brings them up to date.
    pub fn summaries(&mut self, files: &[PathBuf]) -> Vec<SessionSummary> {
        self.refresh(files);
        files.iter().filter_map(|path| self.summary(path.file_name()?.to_str()?)).collect()
    }

    /// Brings the index up to date with its directory, re-reading only what changed: the files
    /// the directory's watch names (see [`crate::watch`]) and those that are symbolic links
    /// (whose target the watch cannot see), or — the first time, and whenever the watch cannot
    /// say — every file, as [`SessionIndex::refresh`] does. A listing of a thousand unchanged
    /// sessions then costs one `read` of the watch, not a `readdir` and a thousand `stat`s; a
    /// session that any process created, wrote, renamed or deleted shows so at once.
    pub fn sync(&mut self) -> Result<(), SessionError> {
        match self.watch.changes(&self.dir) {
            Changes::Named(names) if !self.unknown => {
                for name in self.changed_names(names) {
                    self.update(&name);
                }
            }
            _ => {
                self.unknown = false;
                self.pending.clear();
                let entries = session_entries(&self.dir)?;
                let name = |path: &PathBuf| Some(path.file_name()?.to_str()?.to_string());
                self.linked = entries.iter().filter(|(_, link)| *link).filter_map(|(path, _)| name(path)).collect();
                let files: Vec<PathBuf> = entries.into_iter().map(|(path, _)| path).collect();
                self.refresh(&files);
            }
        }
        Ok(())
    }

    /// [`SessionIndex::sync`] when it is cheap: the index was synced before and the watch names at most
    /// [`CHEAP_FILES`] changed files with at most [`CHEAP_BYTES`] to read in all (a file that
    /// only grew is read on from where its last reading stopped). Answers whether it synced;
    /// when not, what the watch said waits for the next [`SessionIndex::sync`]. A listing that
    /// syncs cheaply can answer on the caller's thread.
    pub fn sync_if_cheap(&mut self) -> bool {
        if self.entries.is_empty() || self.unknown {
            return false;
        }
        let Changes::Named(names) = self.watch.changes(&self.dir) else {
            self.unknown = true;
            return false;
        };
        let names = self.changed_names(names);
        let bytes: u64 = names.iter().map(|name| self.bytes_to_read(name)).sum();
        if names.len() > CHEAP_FILES || bytes > CHEAP_BYTES {
            self.pending = names;
            return false;
        }
        for name in &names {
            self.update(name);
        }
        true
    }

    /// The session files among `names` (from the watch), with those left pending and the
    /// symbolic links, which the watch cannot see change.
    fn changed_names(&mut self, mut names: HashSet<String>) -> HashSet<String> {
        names.retain(|name| Path::new(name).extension().is_some_and(|ext| ext == "jsonl"));
        names.extend(self.pending.drain());
        names.extend(self.linked.iter().cloned());
        names
    }

    /// About how many bytes bringing the entry of `name` up to date reads: what follows its
    /// mark when the file has one, else the whole file (0 for a file that is gone).
    fn bytes_to_read(&self, name: &str) -> u64 {
        let Ok(meta) = std::fs::metadata(self.dir.join(name)) else { return 0 };
        let stamp = (nanos(meta.modified().unwrap_or(UNIX_EPOCH)), meta.len());
        let entry = self.entries.get(name);
        if entry.is_some_and(|entry| (entry.modified_ns, entry.len) == stamp) {
            return 0;
        }
        let read = entry.and_then(|entry| entry.mark.as_ref()).map_or(0, ReadMark::offset);
        meta.len().saturating_sub(read)
    }

    /// Brings the entry of the file `name` up to date: read again when its stamp changed,
    /// dropped when it is gone or cannot be read.
    fn update(&mut self, name: &str) {
        let path = self.dir.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => self.linked.insert(name.to_string()),
            _ => self.linked.remove(name),
        };
        let Ok(meta) = std::fs::metadata(&path) else {
            self.changed |= self.entries.remove(name).is_some();
            return;
        };
        let stamp = (nanos(meta.modified().unwrap_or(UNIX_EPOCH)), meta.len());
        if self.entries.get(name).is_some_and(|entry| (entry.modified_ns, entry.len) == stamp) {
            return;
        }
        self.changed = true;
        match read_entry(&path, self.entries.get(name), stamp) {
            Ok(entry) => {
                self.entries.insert(name.to_string(), entry);
            }
            Err(err) => {
                self.entries.remove(name);
                tracing::warn!("{err}; the session is left out of the list");
            }
        }
    }

    /// Brings the index up to date with `files` (session files of this directory): an entry
    /// whose stamp no longer matches its file is read again from the file, a new file is read,
    /// and entries of other files are dropped. Only stamps are compared, in place, so a listing
    /// of a thousand unchanged sessions costs a thousand `stat`s and no copies. A file that
    /// cannot be read is left out, with a warning.
    pub fn refresh(&mut self, files: &[PathBuf]) {
        let mut names: HashSet<&str> = HashSet::with_capacity(files.len());
        for path in files {
            let Some(name) = path.file_name().and_then(|name| name.to_str()) else { continue };
            let Ok(meta) = std::fs::metadata(path) else { continue };
            let stamp = (nanos(meta.modified().unwrap_or(UNIX_EPOCH)), meta.len());
            if self.entries.get(name).is_some_and(|entry| (entry.modified_ns, entry.len) == stamp) {
                names.insert(name);
                continue;
            }
            match read_entry(path, self.entries.get(name), stamp) {
                Ok(entry) => {
                    self.changed = true;
                    self.entries.insert(name.to_string(), entry);
                    names.insert(name);
                }
                Err(err) => tracing::warn!("{err}; the session is left out of the list"),
            }
        }
        let before = self.entries.len();
        self.entries.retain(|name, _| names.contains(name.as_str()));
        self.changed |= self.entries.len() != before;
    }

    /// The file names of the indexed sessions, newest first: by modification time in
    /// milliseconds (as listings show it), then by name, the later first. Only names are
    /// sorted; [`SessionIndex::summary`] gives the sessions a page shows.
    pub fn newest_first(&self) -> Vec<(u64, &str)> {
        let mut order: Vec<(u64, &str)> =
            self.entries.iter().map(|(name, entry)| (entry.modified_ns / 1_000_000, name.as_str())).collect();
        order.sort_unstable_by(|a, b| b.cmp(a));
        order
    }

    /// The summary of the session file `name` of this directory, as last indexed.
    pub fn summary(&self, name: &str) -> Option<SessionSummary> {
        let entry = self.entries.get(name)?;
        let modified = UNIX_EPOCH + Duration::from_nanos(entry.modified_ns);
        Some(entry.summary(self.dir.join(name), modified))
    }

    /// Writes the index when it changed since it was read or last written, at most once every
    /// [`SAVE_EVERY`] (the first time at once). A failure is only logged: the next listing reads
    /// the files again.
    pub fn save(&mut self) {
        if let Some(save) = self.take_save() {
            save.write();
        }
    }

    /// What [`SessionIndex::save`] would write now, to be written by [`IndexSave::write`] where
    /// the caller likes: a listing answers first and writes after (half a megabyte for a
    /// thousand sessions). The index counts as saved from here.
    pub fn take_save(&mut self) -> Option<IndexSave> {
        let recently = self.saved_at.is_some_and(|at| at.elapsed() < SAVE_EVERY);
        if !self.changed || recently || !self.dir.is_dir() {
            return None;
        }
        self.changed = false;
        self.saved_at = Some(Instant::now());
        let file = IndexFile { version: VERSION, sessions: self.entries.clone() };
        Some(IndexSave { dir: self.dir.clone(), file })
    }
}

/// A copy of an index to be written (see [`SessionIndex::take_save`]).
#[derive(Debug)]
pub struct IndexSave {
    dir: PathBuf,
    file: IndexFile,
}

impl IndexSave {
    /// Writes the index whole to a temporary file of its own and renames it into place. A
    /// failure is only logged: a stale or missing index is read again from the files.
    pub fn write(self) {
        /// Saves of this process, so that two at once never share a temporary file.
        static SAVES: AtomicU64 = AtomicU64::new(0);
        let path = self.dir.join(INDEX_FILE);
        let written = serde_json::to_vec(&self.file).map_err(std::io::Error::other).and_then(|bytes| {
            let save = SAVES.fetch_add(1, Ordering::Relaxed);
            let temp = self.dir.join(format!(".{INDEX_FILE}.{}.{save}", std::process::id()));
            let write = |bytes: &[u8]| {
                use std::io::Write;
                crate::private::options().write(true).create(true).truncate(true).open(&temp)?.write_all(bytes)
            };
            write(&bytes).and_then(|()| std::fs::rename(&temp, &path)).inspect_err(|_| {
                let _ = std::fs::remove_file(&temp);
            })
        });
        if let Err(err) = written {
            tracing::warn!("could not write the session index {}: {err}", path.display());
        }
    }
}

/// The entry of the session file `path` with the stamp `stamp`: read on from where `earlier` (its
/// entry before) stopped when the file only grew, else read whole.
fn read_entry(path: &Path, earlier: Option<&IndexEntry>, stamp: (u64, u64)) -> Result<IndexEntry, SessionError> {
    let earlier = earlier.and_then(|entry| Some((entry.summary(path.to_path_buf(), UNIX_EPOCH), entry.mark.as_ref()?)));
    let (summary, mark) = summarize_from(path, earlier)?;
    Ok(IndexEntry { mark, ..IndexEntry::of(&summary, stamp) })
}

impl IndexEntry {
    fn of(summary: &SessionSummary, (modified_ns, len): (u64, u64)) -> IndexEntry {
        let usage = &summary.usage;
        IndexEntry {
            modified_ns,
            len,
            id: summary.id.clone(),
            cwd: summary.cwd.clone(),
            name: summary.name.clone(),
            first_user_message: summary
                .first_user_message
                .as_ref()
                .map(|text| text.chars().take(FIRST_MESSAGE_CHARS).collect()),
            entry_count: summary.entry_count,
            parent_session: summary.parent_session.clone(),
            usage: UsageRecord {
                input: usage.input,
                output: usage.output,
                cache_read: usage.cache_read,
                cache_write: usage.cache_write,
                total_tokens: usage.total_tokens,
                cost_input: usage.cost.input,
                cost_output: usage.cost.output,
                cost_cache_read: usage.cost.cache_read,
                cost_cache_write: usage.cost.cache_write,
                cost_total: usage.cost.total,
            },
            mark: None,
        }
    }

    fn summary(&self, path: PathBuf, modified: SystemTime) -> SessionSummary {
        let usage = &self.usage;
        SessionSummary {
            id: self.id.clone(),
            path,
            cwd: self.cwd.clone(),
            name: self.name.clone(),
            first_user_message: self.first_user_message.clone(),
            entry_count: self.entry_count,
            modified,
            parent_session: self.parent_session.clone(),
            usage: Usage {
                input: usage.input,
                output: usage.output,
                cache_read: usage.cache_read,
                cache_write: usage.cache_write,
                total_tokens: usage.total_tokens,
                cost: Cost {
                    input: usage.cost_input,
                    output: usage.cost_output,
                    cache_read: usage.cost_cache_read,
                    cache_write: usage.cost_cache_write,
                    total: usage.cost_total,
                },
            },
        }
    }
}

fn nanos(time: SystemTime) -> u64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}
