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
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reins_ai::{Cost, Usage};
use serde::{Deserialize, Serialize};

use crate::summary::{SessionSummary, summarize};

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

/// The index of one session directory, as read and kept up to date by listings.
#[derive(Debug, Default)]
pub struct SessionIndex {
    dir: PathBuf,
    entries: HashMap<String, IndexEntry>,
    /// Entries changed since the index was read or written.
    changed: bool,
    /// When this process last wrote the index.
    saved_at: Option<Instant>,
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
        SessionIndex { dir: dir.to_path_buf(), entries, changed: false, saved_at: None }
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
            match summarize(path) {
                Ok(summary) => {
                    self.changed = true;
                    self.entries.insert(name.to_string(), IndexEntry::of(&summary, stamp));
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
        let recently = self.saved_at.is_some_and(|at| at.elapsed() < SAVE_EVERY);
        if !self.changed || recently || !self.dir.is_dir() {
            return;
        }
        let file = IndexFile { version: VERSION, sessions: self.entries.clone() };
        let path = self.dir.join(INDEX_FILE);
        let written = serde_json::to_vec(&file).map_err(std::io::Error::other).and_then(|bytes| {
            let temp = self.dir.join(format!(".{INDEX_FILE}.{}", std::process::id()));
            let write = |bytes: &[u8]| {
                use std::io::Write;
                crate::private::options().write(true).create(true).truncate(true).open(&temp)?.write_all(bytes)
            };
            write(&bytes).and_then(|()| std::fs::rename(&temp, &path)).inspect_err(|_| {
                let _ = std::fs::remove_file(&temp);
            })
        });
        match written {
            Ok(()) => {
                self.changed = false;
                self.saved_at = Some(Instant::now());
            }
            Err(err) => tracing::warn!("could not write the session index {}: {err}", path.display()),
        }
    }
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
