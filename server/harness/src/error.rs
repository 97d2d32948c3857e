//! Errors with stable codes: clients switch on `code()`, people read the message.

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("a run is already in progress in this session; wait for it, steer it, or cancel it")]
    Busy,
    /// A session file could not be read, written or locked; the message names the file.
    #[error("{0}")]
    Session(String),
    #[error("compaction failed: {0}")]
    Compaction(String),
    #[error("branch summary failed: {0}")]
    BranchSummary(String),
    #[error("{0}")]
    Auth(String),
    #[error("{0}")]
    InvalidState(String),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    Provider(String),
}

impl HarnessError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            HarnessError::Busy => "busy",
            HarnessError::Session(_) => "session",
            HarnessError::Compaction(_) => "compaction",
            HarnessError::BranchSummary(_) => "branch_summary",
            HarnessError::Auth(_) => "auth",
            HarnessError::InvalidState(_) => "invalid_state",
            HarnessError::InvalidArgument(_) => "invalid_argument",
            HarnessError::Provider(_) => "provider",
        }
    }
}
