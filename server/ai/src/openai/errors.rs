//! Reading failures out of Chat Completions responses: error bodies of non-2xx answers and
//! `{"error": …}` payloads inside a stream, classified into [`ProviderErrorKind`]s.

use serde_json::Value;

use super::wire::{ErrorBody, parse_lenient};
use crate::message::{ProviderError, ProviderErrorKind};

/// The most of a non-JSON error body quoted in a message.
const MAX_QUOTED_BODY: usize = 500;

/// The error for a non-success response with `body`.
pub fn http_error(status: u16, body: &[u8]) -> ProviderError {
    let parsed: Option<ErrorBody> = parse_lenient(body).ok();
    let code = parsed.as_ref().and_then(|parsed| parsed.error.as_ref()).and_then(|error| error.get("code")).cloned();
    let message = parsed
        .and_then(|parsed| parsed.error.as_ref().and_then(message_of).or(parsed.message))
        .unwrap_or_else(|| quote_body(status, body));
    let kind = if status == 401 || status == 403 {
        ProviderErrorKind::Auth
    } else if is_context_overflow(&message, code.as_ref()) {
        ProviderErrorKind::ContextOverflow
    } else {
        ProviderErrorKind::Http
    };
    ProviderError { kind, status: Some(status), message }
}

/// The error for an `{"error": …}` payload that arrived inside a stream.
pub fn payload_error(error: &Value) -> ProviderError {
    let message = message_of(error).unwrap_or_else(|| error.to_string());
    let kind = if is_context_overflow(&message, error.get("code")) {
        ProviderErrorKind::ContextOverflow
    } else {
        ProviderErrorKind::Stream
    };
    ProviderError::new(kind, format!("the server reported an error mid-stream: {message}"))
}

/// `error.message`, or the error itself when a server sends a bare string.
fn message_of(error: &Value) -> Option<String> {
    match error {
        Value::String(message) => Some(message.clone()),
        Value::Object(fields) => fields.get("message").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// Servers word this differently: OpenAI "maximum context length is N tokens", llama.cpp "the
/// request exceeds the available context size", vLLM "…longer than the model's context length".
fn is_context_overflow(message: &str, code: Option<&Value>) -> bool {
    if code.and_then(Value::as_str) == Some("context_length_exceeded") {
        return true;
    }
    let message = message.to_lowercase();
    let mentions_context = message.contains("context length")
        || message.contains("context size")
        || message.contains("context window")
        || message.contains("maximum context");
    let says_too_big = message.contains("exceed")
        || message.contains("too long")
        || message.contains("longer than")
        || message.contains("maximum");
    (mentions_context && says_too_big) || message.contains("prompt is too long")
}

fn quote_body(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return format!("HTTP {status} with an empty body");
    }
    crate::shorten(text, MAX_QUOTED_BODY).into_owned()
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use serde_json::json;

    use super::*;

    fn check_http(status: u16, body: &str, expected: Expect) {
        let error = http_error(status, body.as_bytes());
        expected.assert_eq(&format!("{:?} {:?}: {}", error.kind, error.status, error.message));
    }

    #[test]
    fn openai_error_body() {
        check_http(
            500,
            r#"{"error": {"message": "The server had an error", "type": "server_error", "code": null}}"#,
            expect![[r#"Http Some(500): The server had an error"#]],
        );
    }

    #[test]
    fn unauthorized_and_forbidden_are_auth() {
        check_http(
            401,
            r#"{"error": {"message": "Incorrect API key"}}"#,
            expect![[r#"Auth Some(401): Incorrect API key"#]],
        );
        check_http(403, "", expect![[r#"Auth Some(403): HTTP 403 with an empty body"#]]);
    }

    #[test]
    fn context_overflow_by_message_or_code() {
        check_http(
            400,
            r#"{"error": {"message": "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."}}"#,
            expect![[
                r#"ContextOverflow Some(400): This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."#
            ]],
        );
        check_http(
            400,
            r#"{"error": {"message": "the request exceeds the available context size, try increasing it"}}"#,
            expect![[
                r#"ContextOverflow Some(400): the request exceeds the available context size, try increasing it"#
            ]],
        );
        check_http(
            400,
            r#"{"error": {"message": "too big", "code": "context_length_exceeded"}}"#,
            expect![[r#"ContextOverflow Some(400): too big"#]],
        );
    }

    #[test]
    fn odd_bodies_still_give_a_message() {
        check_http(502, "<html>Bad Gateway</html>", expect![[r#"Http Some(502): <html>Bad Gateway</html>"#]]);
        check_http(500, r#"{"error": "model not loaded"}"#, expect![[r#"Http Some(500): model not loaded"#]]);
        check_http(404, r#"{"message": "no such model"}"#, expect![[r#"Http Some(404): no such model"#]]);
    }

    #[test]
    fn payload_error_is_a_stream_error() {
        let error = payload_error(&json!({"message": "overloaded", "type": "server_error"}));
        expect![[r#"Stream: the server reported an error mid-stream: overloaded"#]]
            .assert_eq(&format!("{:?}: {}", error.kind, error.message));
    }
}
