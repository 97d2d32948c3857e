//! A failed model call in the user's words: what went wrong and what to do about it.

use reins_ai::{ProviderError, ProviderErrorKind};

/// Explains a provider failure, adding what the user can do about it. `base_url` names the
/// endpoint; `configured` says whether the user chose it (or it is the built-in default).
pub fn provider_failure(error: &ProviderError, base_url: &str, configured: bool) -> String {
    match error.kind {
        ProviderErrorKind::Auth => {
            format!("{error}. Check the API key for {base_url} (OPENAI_API_KEY or the provider's key variable).")
        }
        ProviderErrorKind::Connection if !configured => format!(
            "no model server answers at {base_url} (the default, a local Ollama). Start one there, or \
             set OPENAI_BASE_URL (with /v1), OPENAI_API_KEY and REINS_MODEL to use another \
             OpenAI-compatible provider."
        ),
        ProviderErrorKind::Connection => format!(
            "{error}. Start the model server there, or set the right address (baseUrl in the \
             editor's settings, OPENAI_BASE_URL, or base_url in config.toml)."
        ),
        // The server died or broke off mid-answer: what to do first, then the cause without
        // the rest of its chain (the log has it whole).
        ProviderErrorKind::Stream if error.message.starts_with("the stream from ") => {
            let cause: Vec<&str> = error.message.splitn(3, ": ").take(2).collect();
            format!(
                "the model server stopped mid-answer (what arrived is kept); check that it is still \
                 running, then send again ({})",
                cause.join(": ")
            )
        }
        _ => error.to_string(),
    }
}
