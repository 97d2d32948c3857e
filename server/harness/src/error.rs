//! Errors with stable codes: clients switch on `code()`, people read the message.

use reins_ai::{ProviderError, ProviderErrorKind};

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

    /// Classifies a provider failure, adding what the user can do about it. `base_url` names the
    /// endpoint; `configured` says whether the user chose it (or it is the built-in default).
    pub fn from_provider(error: &ProviderError, base_url: &str, configured: bool) -> Self {
        match error.kind {
            ProviderErrorKind::Auth => HarnessError::Auth(format!(
                "{error}. Check the API key for {base_url} (OPENAI_API_KEY or the provider's key variable)."
            )),
            ProviderErrorKind::Connection if !configured => HarnessError::Provider(format!(
                "no model server answers at {base_url} (the default, a local Ollama). Start one there, or \
                 set OPENAI_BASE_URL (with /v1), OPENAI_API_KEY and REINS_MODEL to use another \
                 OpenAI-compatible provider."
            )),
            ProviderErrorKind::Connection => HarnessError::Provider(format!(
                "{error}. Start the model server there, or set the right address (baseUrl in the \
                 editor's settings, OPENAI_BASE_URL, or base_url in config.toml)."
            )),
            // The server died or broke off mid-answer: what to do first, then the cause without
            // the rest of its chain (the log has it whole).
            ProviderErrorKind::Stream if error.message.starts_with("the stream from ") => {
                let cause: Vec<&str> = error.message.splitn(3, ": ").take(2).collect();
                HarnessError::Provider(format!(
                    "the model server stopped mid-answer (what arrived is kept); check that it is still \
                     running, then send again ({})",
                    cause.join(": ")
                ))
            }
            _ => HarnessError::Provider(error.to_string()),
        }
    }
}
