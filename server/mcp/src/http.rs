//! The HTTP client of streamable HTTP servers: rmcp's reqwest client, except that an answer
//! with an error status is an error that says the status and how the body begins.
//!
//! rmcp reads the body of any answer that is not 202 as MCP: a 500 at `initialize` read as
//! "data did not match any variant of untagged enum JsonRpcMessage", and a 500 on `tools/call`
//! reached the model as "the connection closed". What the server said is what the user needs.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use rmcp::ErrorData;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{EVENT_STREAM_MIME_TYPE, HEADER_SESSION_ID, JSON_MIME_TYPE};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

/// How much of an error answer's body is quoted.
const BODY_QUOTED: usize = 300;
/// How much of an error answer's body is read: enough for a JSON-RPC error.
const ERROR_BODY_READ: usize = 64 * 1024;

#[derive(Clone)]
pub(crate) struct HttpClient(reqwest::Client);

impl HttpClient {
    /// The reqwest client itself, for a request outside the protocol (the login's probe).
    pub(crate) fn inner(&self) -> &reqwest::Client {
        &self.0
    }
}

/// A client that sends `headers` (values marked sensitive, so they stay out of logs) with each
/// request.
pub(crate) fn http_client(headers: &[(String, String)]) -> Result<HttpClient, String> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
        let mut value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header `{name}` is not a valid HTTP header value"))?;
        value.set_sensitive(true);
        map.insert(header, value);
    }
    reins_ai::http_client()
        .default_headers(map)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map(HttpClient)
        .map_err(|err| format!("cannot set up an HTTP client: {err}"))
}

/// The error an answer with an error status becomes: its status, and its body's first bytes.
fn status_error(status: StatusCode, body: &[u8]) -> StreamableHttpError<reqwest::Error> {
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(describe_status(status, body)))
}

/// "HTTP 500 Internal Server Error: {"error":"database is down"}", the body cut at
/// [`BODY_QUOTED`] bytes and kept on one line.
fn describe_status(status: StatusCode, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let (kept, cut) = reins_ai::cut_bytes(text.trim(), BODY_QUOTED);
    let quoted: String = kept.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    match (quoted.is_empty(), cut) {
        (true, _) => format!("HTTP {status} with an empty body"),
        (false, false) => format!("HTTP {status}: {quoted}"),
        (false, true) => format!("HTTP {status}: {quoted}…"),
    }
}

/// What an HTTP server answered instead of MCP, if that is why sending to it failed: an error
/// status (with the start of its body) or a body that is not JSON-RPC.
pub(crate) fn http_answer(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(StreamableHttpError::<reqwest::Error>::UnexpectedServerResponse(told)) = error.downcast_ref() {
            return Some(told.to_string());
        }
        cause = error.source();
    }
    None
}

/// The error an answer with an error status becomes, unless it is the answer the protocol
/// expects: a JSON-RPC error to the request, or a legacy server's refusal of `server/discover`
/// (which an older server answers with a 4xx of its own making, and which tells the client to
/// fall back to `initialize`, as rmcp's own client does).
async fn error_answer(
    response: reqwest::Response,
    message: &ClientJsonRpcMessage,
    session_attached: bool,
) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
    let status = response.status();
    let session_id = response.headers().get(HEADER_SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while body.len() <= ERROR_BODY_READ
        && let Some(Ok(chunk)) = chunks.next().await
    {
        body.extend_from_slice(&chunk);
    }
    let ClientJsonRpcMessage::Request(request) = message else {
        return Err(status_error(status, &body));
    };
    let error = match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
        Ok(ServerJsonRpcMessage::Error(error)) => Some(error),
        _ => None,
    };
    let discovering = matches!(request.request, ClientRequest::DiscoverRequest(_));
    if discovering
        && !session_attached
        && status.is_client_error()
        && !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
    {
        let error = error.map(|error| error.error).unwrap_or_else(|| {
            ErrorData::invalid_request(format!("server/discover refused: {}", describe_status(status, &body)), None)
        });
        return Ok(StreamableHttpPostResponse::Json(
            ServerJsonRpcMessage::error(error, Some(request.id.clone())),
            None,
        ));
    }
    match error {
        Some(error) if error.id.as_ref() == Some(&request.id) => {
            Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(error), session_id))
        }
        _ => Err(status_error(status, &body)),
    }
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    /// rmcp's, with the status checked before the body is read as MCP.
    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut request = self.0.post(uri.as_ref()).header(ACCEPT, [EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE].join(", "));
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        // The protocol's own headers (`MCP-Protocol-Version`, and from 2026-07-28 `Mcp-Method`…).
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        let session_attached = session_id.is_some();
        if let Some(session_id) = session_id {
            request = request.header(HEADER_SESSION_ID, session_id.as_ref());
        }
        let response = request.json(&message).send().await.map_err(StreamableHttpError::Client)?;
        let status = response.status();
        let challenge = response.headers().get(WWW_AUTHENTICATE).and_then(|value| value.to_str().ok());
        match (status, challenge) {
            (StatusCode::UNAUTHORIZED, Some(header)) => {
                return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(header.to_string())));
            }
            (StatusCode::FORBIDDEN, Some(header)) => {
                let error = InsufficientScopeError::new(header.to_string(), None);
                return Err(StreamableHttpError::InsufficientScope(error));
            }
            _ => {}
        }
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_attached {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !status.is_success() {
            return error_answer(response, &message, session_attached).await;
        }
        // A notification or a response awaits nothing: whatever a server answers it with is fine.
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        let session_id = response.headers().get(HEADER_SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_string);
        let content_type = response.headers().get(CONTENT_TYPE).map(|value| value.as_bytes().to_vec());
        match content_type {
            Some(kind) if kind.starts_with(EVENT_STREAM_MIME_TYPE.as_bytes()) => {
                let events = SseStream::from_bytes_stream(response.bytes_stream()).boxed();
                Ok(StreamableHttpPostResponse::Sse(events, session_id))
            }
            Some(kind) if kind.starts_with(JSON_MIME_TYPE.as_bytes()) => {
                let body = response.bytes().await.map_err(StreamableHttpError::Client)?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(message) => Ok(StreamableHttpPostResponse::Json(message, session_id)),
                    Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                    Err(_) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                        "{} is not a JSON-RPC message",
                        describe_status(status, &body)
                    )))),
                }
            }
            _ if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
            kind => Err(StreamableHttpError::UnexpectedContentType(
                kind.map(|kind| String::from_utf8_lossy(&kind).into_owned()),
            )),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0.delete_session(uri, session_id, auth_token, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.0.get_stream(uri, session_id, last_event_id, auth_token, custom_headers).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_told_with_the_start_of_its_body() {
        let status = StatusCode::INTERNAL_SERVER_ERROR;
        assert_eq!(
            describe_status(status, br#"{"error":"database is down"}"#),
            r#"HTTP 500 Internal Server Error: {"error":"database is down"}"#
        );
        assert_eq!(describe_status(StatusCode::BAD_GATEWAY, b"  \n"), "HTTP 502 Bad Gateway with an empty body");
        let long = format!("<html>\n<body>{}</body>", "x".repeat(1000));
        let told = describe_status(status, long.as_bytes());
        assert!(told.starts_with("HTTP 500 Internal Server Error: <html> <body>xxx") && told.ends_with("x…"), "{told}");
        assert!(told.len() < BODY_QUOTED + 50, "{}", told.len());
    }
}
