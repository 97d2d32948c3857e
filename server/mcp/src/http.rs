//! The HTTP client of streamable HTTP servers: rmcp's reqwest client, except that an answer
//! with an error status is an error that says the status and how the body begins.
//!
//! rmcp reads the body of any answer that is not 202 as MCP: a 500 at `initialize` read as
//! "data did not match any variant of untagged enum JsonRpcMessage", and a 500 on `tools/call`
//! reached the model as "the connection closed". What the server said is what the user needs.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{EVENT_STREAM_MIME_TYPE, HEADER_SESSION_ID, JSON_MIME_TYPE};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

/// How much of an error answer's body is quoted.
const BODY_QUOTED: usize = 300;

#[derive(Clone)]
pub(crate) struct HttpClient(reqwest::Client);

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
    reqwest::Client::builder()
        .default_headers(map)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map(HttpClient)
        .map_err(|err| format!("cannot set up an HTTP client: {err}"))
}

/// The error an answer with an error status becomes: its status, and its body's first bytes.
async fn status_error(response: reqwest::Response) -> StreamableHttpError<reqwest::Error> {
    let status = response.status();
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while body.len() <= BODY_QUOTED
        && let Some(Ok(chunk)) = chunks.next().await
    {
        body.extend_from_slice(&chunk);
    }
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(describe_status(status, &body)))
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

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    /// rmcp's, with the status checked before the body is read as MCP.
    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut request = self.0.post(uri.as_ref()).header(ACCEPT, [EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE].join(", "));
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        if let Some(session_id) = session_id {
            request = request.header(HEADER_SESSION_ID, session_id.as_ref());
        }
        let response = request.json(&message).send().await.map_err(StreamableHttpError::Client)?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED
            && let Some(header) = response.headers().get(WWW_AUTHENTICATE).and_then(|value| value.to_str().ok())
        {
            return Err(StreamableHttpError::AuthRequired(AuthRequiredError {
                www_authenticate_header: header.to_string(),
            }));
        }
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !status.is_success() {
            return Err(status_error(response).await);
        }
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
                    Err(_) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                        "{} is not a JSON-RPC message",
                        describe_status(status, &body)
                    )))),
                }
            }
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
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0.delete_session(uri, session_id, auth_token).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.0.get_stream(uri, session_id, last_event_id, auth_token).await
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
