//! Session files on disk: where they live, how they are listed and found, and the one writer per
//! file.
//!
//! Files live at `<sessions_dir>/<encoded cwd>/<timestamp>_<uuid>.jsonl`, the cwd encoded as pi
//! encodes it, so a reins store pointed at pi's sessions directory sees pi's sessions.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::disk::open_regular;
use crate::error::SessionError;
use crate::format::Header;
use crate::session_file::{Durability, SessionFile};
use crate::summary::{SessionSummary, summarize};
use crate::time::{new_session_id, now_iso};

/// The sessions of all workspaces, under one directory.
#[derive(Debug, Clone)]
pub struct SessionStore {
    sessions_dir: PathBuf,
}

impl SessionStore {
    pub fn new(sessions_dir: impl Into<PathBuf>) -> SessionStore {
        SessionStore { sessions_dir: sessions_dir.into() }
    }

    pub fn sessions_dir(&self) -> &Path {
        &self.sessions_dir
    }

    /// The directory holding the sessions of workspace `cwd`: `/home/a/p` → `--home-a-p--`.
    pub fn dir_for(&self, cwd: &Path) -> PathBuf {
        self.sessions_dir.join(encode_cwd(cwd))
    }

    /// Creates and locks a new session file for `cwd`, its header written and synced.
    pub fn create(&self, cwd: &Path, parent_session: Option<&Path>) -> Result<SessionFile, SessionError> {
        let header = Header::new(
            new_session_id(),
            now_iso(),
            cwd.to_string_lossy().into_owned(),
            parent_session.map(|path| path.to_string_lossy().into_owned()),
        );
        SessionFile::create(&self.dir_for(cwd), header, Durability::Sync, |_| Ok(()))
    }

    /// The sessions of `cwd`, most recently modified first. Files that are not sessions are skipped.
    /// The session files of workspace `cwd`, by name.
    pub fn files(&self, cwd: &Path) -> Result<Vec<PathBuf>, SessionError> {
        session_files(&self.dir_for(cwd))
    }

    pub fn list(&self, cwd: &Path) -> Result<Vec<SessionSummary>, SessionError> {
        let dir = self.dir_for(cwd);
        let mut sessions: Vec<SessionSummary> =
            session_files(&dir)?.iter().filter_map(|path| summarize(path).ok()).collect();
        sessions.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| b.path.cmp(&a.path)));
        Ok(sessions)
    }

    /// The most recently modified session file of `cwd`, whatever it holds: a caller that
    /// continues it must say so when it cannot be read rather than pick an older one or start
    /// over. Nothing is opened here (a FIFO or a device must not be touched).
    pub fn most_recent(&self, cwd: &Path) -> Result<Option<PathBuf>, SessionError> {
        let mut newest: Option<(SystemTime, PathBuf)> = None;
        for path in session_files(&self.dir_for(cwd))? {
            // A dangling symlink has no target to date; its own time stands in.
            let Ok(meta) = std::fs::metadata(&path).or_else(|_| std::fs::symlink_metadata(&path)) else { continue };
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if newest.as_ref().is_none_or(|(time, best)| (modified, &path) > (*time, best)) {
                newest = Some((modified, path));
            }
        }
        Ok(newest.map(|(_, path)| path))
    }

    /// Finds a session by path, or by its id (or an unambiguous prefix of it) among the sessions of
    /// `cwd` first and then of every workspace. The id is read from each file's header, so a file
    /// is found whatever it is called.
    pub fn find(&self, id_or_path: &str, cwd: &Path) -> Result<PathBuf, SessionError> {
        let as_path = Path::new(id_or_path);
        // Anything at that path is what was meant; opening it says what is wrong with it.
        if std::fs::symlink_metadata(as_path).is_ok_and(|meta| !meta.is_dir()) {
            return Ok(as_path.to_path_buf());
        }
        self.find_id(id_or_path, cwd)
    }

    /// The session file of an id or id prefix, among the store's files only (never a path):
    /// `cwd`'s sessions first, then every workspace's.
    pub fn find_id(&self, id: &str, cwd: &Path) -> Result<PathBuf, SessionError> {
        let id_or_path = id;
        let mut dirs = vec![self.dir_for(cwd)];
        if let Ok(read) = std::fs::read_dir(&self.sessions_dir) {
            dirs.extend(read.filter_map(Result::ok).map(|entry| entry.path()).filter(|path| path.is_dir()));
        }
        for dir in dirs {
            let ids: Vec<(PathBuf, String)> = session_files(&dir)?
                .into_iter()
                .filter_map(|path| Some((session_id(&path)?, path)))
                .map(|(id, path)| (path, id))
                .collect();
            // An exact id wins over ids it is a prefix of.
            let exact: Vec<PathBuf> =
                ids.iter().filter(|(_, id)| id == id_or_path).map(|(path, _)| path.clone()).collect();
            let matches = if exact.is_empty() {
                ids.into_iter().filter(|(_, id)| id.starts_with(id_or_path)).map(|(path, _)| path).collect()
            } else {
                exact
            };
            match matches.len() {
                0 => continue,
                1 => return Ok(matches.into_iter().next().unwrap_or_default()),
                n => {
                    return Err(SessionError::Invalid(format!(
                        "{n} sessions in {} start with {id_or_path:?}; give more of the id",
                        dir.display()
                    )));
                }
            }
        }
        Err(SessionError::NotFound { query: id_or_path.to_string(), dir: self.dir_for(cwd) })
    }

    /// Opens (and locks) a session by path or id, as [`SessionStore::find`] finds it.
    pub fn open(&self, id_or_path: &str, cwd: &Path) -> Result<SessionFile, SessionError> {
        SessionFile::open(&self.find(id_or_path, cwd)?)
    }
}

/// pi's directory name for a workspace: the leading separator dropped, `/`, `\` and `:` turned into
/// `-`, wrapped in `--`.
pub fn encode_cwd(cwd: &Path) -> String {
    let text = cwd.to_string_lossy();
    let trimmed = text.strip_prefix(['/', '\\']).unwrap_or(&text);
    let encoded: String = trimmed.chars().map(|c| if matches!(c, '/' | '\\' | ':') { '-' } else { c }).collect();
    format!("--{encoded}--")
}

/// `2024-12-03T14:00:00.000Z` → `2024-12-03T14-00-00-000Z`, as pi names files.
pub(crate) fn file_name(header: &Header) -> String {
    format!("{}_{}.jsonl", header.timestamp.replace([':', '.'], "-"), header.id)
}

/// The id of the session in `path`, from its header whatever the file is called; from the name
/// (`<time>_<id>.jsonl`) when the header cannot be read.
fn session_id(path: &Path) -> Option<String> {
    header_id(path).or_else(|| {
        let stem = path.file_stem()?.to_str()?;
        Some(stem.split_once('_').map_or(stem, |(_, id)| id).to_string())
    })
}

/// Reads the header line only (at most 1 MiB, as pi bounds it), of regular files only.
fn header_id(path: &Path) -> Option<String> {
    use std::io::{BufRead, BufReader, Read};
    let file = open_regular(path, OpenOptions::new().read(true)).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(1 << 20)).read_until(b'\n', &mut line).ok()?;
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line);
    Header::parse(std::str::from_utf8(line).ok()?.trim()).ok().map(|header| header.id)
}

fn session_files(dir: &Path) -> Result<Vec<PathBuf>, SessionError> {
    Ok(session_entries(dir)?.into_iter().map(|(path, _)| path).collect())
}

/// [`session_files`], each with whether it is a symbolic link (as the directory says: no `stat`).
pub(crate) fn session_entries(dir: &Path) -> Result<Vec<(PathBuf, bool)>, SessionError> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(SessionError::io(dir, error)),
    };
    let mut files: Vec<(PathBuf, bool)> = read
        .filter_map(Result::ok)
        .map(|entry| (entry.path(), entry.file_type().is_ok_and(|kind| kind.is_symlink())))
        .filter(|(path, _)| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    Ok(files)
}

/// Opens `path` for appending (and reading), without locking it.
/// A new file is made 0600, and an old one readable to others is made so (see [`crate::private`]).
pub(crate) fn open_for_append(path: &Path, create_new: bool) -> Result<File, SessionError> {
    let file = open_regular(path, crate::private::options().read(true).append(true).create_new(create_new))?;
    crate::private::close_file(&file);
    Ok(file)
}

/// Takes the writer lock of an open session file, or says that another process holds it.
pub(crate) fn lock_file(file: &File, path: &Path) -> Result<(), SessionError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(SessionError::Locked { path: path.to_path_buf() }),
        Err(std::fs::TryLockError::Error(error)) => Err(SessionError::io(path, error)),
    }
}
