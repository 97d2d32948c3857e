//! The one error type of this crate: every failure names the file (and the line where there is one)
//! so a person can find it. The harness reports all of them with the stable code `session`.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: {reason}")]
    Format { path: PathBuf, line: usize, reason: String },
    #[error(
        "{path} is being written by another reins process (a run is going there); try again when it is done, or fork the session"
    )]
    Locked { path: PathBuf },
    #[error("{path} is {kind}, not a session file; move it out of the sessions directory")]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{path} is {bytes} bytes, more than the 1 GiB reins reads as a session; fork or move it")]
    TooLarge { path: PathBuf, bytes: u64 },
    #[error("{path}: no entry with id {id:?}")]
    UnknownEntry { path: PathBuf, id: String },
    #[error("no session {query:?} in {dir}; `reins sessions list` shows the sessions of this workspace")]
    NotFound { query: String, dir: PathBuf },
    #[error("{0}")]
    Invalid(String),
    /// The most recent session could not be opened, so nothing was continued.
    #[error(
        "cannot continue the most recent session: {0}. Nothing was continued and no new session was started; open another session by id (`reins sessions list` shows them), or move that file away"
    )]
    NotContinued(Box<SessionError>),
}

impl SessionError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        SessionError::Io { path: path.to_path_buf(), source }
    }

    pub(crate) fn format(path: &Path, line: usize, reason: impl Into<String>) -> Self {
        SessionError::Format { path: path.to_path_buf(), line, reason: reason.into() }
    }
}
