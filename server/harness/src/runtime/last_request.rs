//! The request a session last sent to its model, for a user debugging a prompt: each session's
//! provider is wrapped so its turns leave their request behind, and it is shown as the provider's
//! own encoder makes the body (the headers, which carry the key, left out; any key of the
//! settings that the URL or a message quotes is redacted).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use reins_ai::{Anthropic, AssistantMessage, EventSink, OpenAiCompatible, Provider, Request};
use reins_settings::Api;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Harness, lock};
use crate::error::HarnessError;

/// The last request of one session, as its model call left it.
pub(crate) type RequestSlot = Arc<Mutex<Option<Request>>>;

/// A session's provider: every call goes to `inner`, its request kept in `slot` first.
pub(crate) struct Recording {
    pub inner: Arc<dyn Provider>,
    pub slot: RequestSlot,
}

/// A request as it went to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct SentRequest {
    pub url: String,
    /// The JSON body.
    pub body: Value,
}

#[async_trait]
impl Provider for Recording {
    async fn stream(&self, request: &Request, on_event: EventSink<'_>, cancel: &CancellationToken) -> AssistantMessage {
        // Cheap: the copy shares the request's messages and tools (see `Request`), so keeping it
        // costs no copy of the conversation on every call.
        *lock(&self.slot) = Some(request.clone());
        self.inner.stream(request, on_event, cancel).await
    }
}

impl Harness {
    /// The request the session's agent last sent to the model; `None` before its first turn.
    pub fn last_request(&self, session_id: &str) -> Result<Option<SentRequest>, HarnessError> {
        let session = self.session(session_id)?;
        let Some(request) = lock(&session.last_request).clone() else { return Ok(None) };
        let settings = self.settings();
        let api = settings.registry.provider(&request.model.provider).map_or(Api::OpenAi, |info| info.api);
        let (url, body) = match api {
            Api::Anthropic => Anthropic::wire_request(&request),
            Api::OpenAi => OpenAiCompatible::wire_request(&request),
        };
        let keys = settings.known_keys();
        Ok(Some(SentRequest { url: redact_text(url, &keys), body: redact(body, &keys) }))
    }
}

/// `value` with every occurrence of a key in its strings replaced by `<redacted>`.
fn redact(value: Value, keys: &[&str]) -> Value {
    match value {
        Value::String(text) => Value::String(redact_text(text, keys)),
        Value::Array(items) => Value::Array(items.into_iter().map(|item| redact(item, keys)).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(name, item)| (name, redact(item, keys))).collect()),
        other => other,
    }
}

/// `text` with every key replaced by `<redacted>`; keys under 8 characters are left, as they
/// would match ordinary words (an empty key matches everywhere).
fn redact_text(text: String, keys: &[&str]) -> String {
    keys.iter()
        .filter(|key| key.len() >= 8)
        .fold(text, |text, key| if text.contains(key) { text.replace(key, "<redacted>") } else { text })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{redact, redact_text};

    #[test]
    fn keys_in_any_string_of_the_body_are_redacted_and_short_ones_left() {
        let body = json!({"messages": [{"role": "user", "content": "my key is sk-secret-123, see"}], "model": "m"});
        let keys = ["sk-secret-123", "", "m"];
        assert_eq!(
            redact(body, &keys),
            json!({"messages": [{"role": "user", "content": "my key is <redacted>, see"}], "model": "m"})
        );
    }

    #[test]
    fn a_key_in_the_url_is_redacted() {
        let url = "https://user:sk-secret-123@example.com/v1?key=sk-other-4567/chat/completions".to_string();
        assert_eq!(
            redact_text(url, &["sk-secret-123", "sk-other-4567"]),
            "https://user:<redacted>@example.com/v1?key=<redacted>/chat/completions"
        );
    }
}
