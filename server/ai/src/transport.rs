//! The HTTP side every streaming provider shares: one `POST` whose SSE body feeds an assembler.
//!
//! Transient failures before the answer starts (429, 5xx, 529, connection errors, and errors the
//! assembler reports as retryable before any content) are retried with backoff; once content has
//! arrived nothing is retried, and a broken stream ends the call with an error while the assembler
//! keeps what came. The API key goes only into the headers the provider builds: it is never
//! logged, and any error text that echoes it is redacted.

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use tokio_util::bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::message::{AssistantMessage, Content, ProviderError, ProviderErrorKind, StopReason, Usage, now_ms};
use crate::model::Model;
use crate::provider::ApiKey;
use crate::retry::{self, Backoff};
use crate::sse::{SseEvent, SseParser};

#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub connect_timeout: Duration,
    /// The longest silence between two pieces of a response (not a limit on the whole response).
    pub idle_timeout: Duration,
    /// Retries after the first attempt, for transient failures only.
    pub max_retries: u32,
    /// The first retry's delay before jitter; later ones double.
    pub base_delay: Duration,
    /// Caps every retry delay, including one asked for by `Retry-After`.
    pub max_delay: Duration,
}

/// An HTTP client with its key and options; one per provider instance, shared by all calls.
#[derive(Debug)]
pub(crate) struct Transport {
    api_key: ApiKey,
    options: ClientOptions,
    /// `Err` holds why the HTTP client could not be built; every call then reports it.
    client: Result<reqwest::Client, String>,
}

/// One streaming call: where, with which headers and body, and how to read an error response.
/// A model call as a provider prepares it; encoding failures are carried to the message.
pub(crate) struct Outgoing<'a> {
    pub url: &'a str,
    pub body: serde_json::Result<Vec<u8>>,
    pub headers: Result<HeaderMap, ProviderError>,
    /// The error for a non-success status and its body.
    pub http_error: fn(u16, &[u8]) -> ProviderError,
}

pub(crate) struct Call<'a> {
    pub url: &'a str,
    /// Everything but the body's framing, including the provider's auth header.
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The error for a non-success status and its body.
    pub http_error: fn(u16, &[u8]) -> ProviderError,
}

/// What the transport does after the assembler took an event.
#[derive(Debug)]
pub(crate) enum Step {
    Continue,
    /// The answer is complete: stop reading.
    Done,
    Failed(ProviderError),
    /// A transient failure that lost nothing because no content had arrived, such as Anthropic's
    /// `overloaded_error` as the first event: retried like a 529. The assembler has reset itself.
    Retry(ProviderError),
}

/// Turns SSE events into a provider's answer.
pub(crate) trait Assemble {
    fn on_event(&mut self, event: &SseEvent) -> Step;
    /// Whether the answer is known to be whole, so a stream that ends or breaks now lost nothing.
    fn is_complete(&self) -> bool;
    /// The message: what arrived, with `error` (if the call failed) deciding the stop reason.
    fn into_message(self, model: &Model, error: Option<ProviderError>) -> AssistantMessage;
}

/// How one attempt failed, and whether another may succeed.
struct Failure {
    error: ProviderError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl Transport {
    pub fn new(api_key: ApiKey, options: ClientOptions) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {}", error_chain(&error)));
        Self { api_key, options, client }
    }

    pub fn api_key(&self) -> &ApiKey {
        &self.api_key
    }

    /// `text` with the API key replaced, for messages that may echo it.
    pub fn redact(&self, text: &str) -> String {
        match self.api_key.is_empty() {
            true => text.to_string(),
            false => text.replace(self.api_key.expose(), "<redacted>"),
        }
    }

    /// One model call, start to end: sends the encoded `body` with `headers` to `url`, streams
    /// the answer into `assembler`, and returns its message, any error in it redacted.
    pub async fn call<A: Assemble>(
        &self,
        outgoing: Outgoing<'_>,
        mut assembler: A,
        model: &Model,
        cancel: &CancellationToken,
    ) -> AssistantMessage {
        let Outgoing { url, body, headers, http_error } = outgoing;
        let outcome = match (body, headers) {
            (Ok(body), Ok(headers)) => {
                let call = Call { url, headers, body: Bytes::from(body), http_error };
                self.stream(&call, &mut assembler, cancel).await
            }
            (Err(error), _) => {
                Err(ProviderError::new(ProviderErrorKind::Protocol, format!("cannot encode the request: {error}")))
            }
            (_, Err(error)) => Err(error),
        };
        let mut message = assembler.into_message(model, outcome.err());
        if let Some(error) = &mut message.error {
            error.message = self.redact(&error.message);
            tracing::debug!(url, kind = ?error.kind, status = error.status, "model call failed: {}", error.message);
        }
        message
    }

    /// Makes attempts (retrying transient failures) until one streams into `assembler` to its end.
    pub async fn stream(
        &self,
        call: &Call<'_>,
        assembler: &mut impl Assemble,
        cancel: &CancellationToken,
    ) -> Result<(), ProviderError> {
        let client =
            self.client.as_ref().map_err(|message| ProviderError::new(ProviderErrorKind::Connection, message))?;
        let options = &self.options;
        let mut backoff = Backoff::new(options.max_retries, options.base_delay, options.max_delay);
        let mut attempt = 1;
        loop {
            let failure = match self.attempt(client, call, cancel).await {
                Ok((response, first)) => match self.read_stream(response, first, call.url, assembler, cancel).await {
                    Ok(()) => return Ok(()),
                    Err(failure) => failure,
                },
                Err(failure) => failure,
            };
            let delay = match failure.retryable {
                true => backoff.next_delay(failure.retry_after),
                false => None,
            };
            let Some(delay) = delay else { return Err(failure.error) };
            tracing::warn!(
                url = call.url,
                attempt,
                status = failure.error.status,
                delay_ms = delay.as_millis() as u64,
                "model call failed, retrying: {}",
                self.redact(&failure.error.message),
            );
            if !retry::sleep_unless_cancelled(delay, cancel).await {
                return Err(aborted());
            }
            attempt += 1;
        }
    }

    /// Reads the SSE body into `assembler`, starting with the already read `first` piece.
    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        first: Option<Bytes>,
        url: &str,
        assembler: &mut impl Assemble,
        cancel: &CancellationToken,
    ) -> Result<(), Failure> {
        let mut parser = SseParser::default();
        let mut next = first;
        loop {
            let Some(bytes) = next else {
                if let Some(event) = parser.finish() {
                    match assembler.on_event(&event) {
                        Step::Failed(error) => return Err(Failure::fatal(error)),
                        Step::Retry(error) => return Err(Failure::retryable(error, None)),
                        Step::Continue | Step::Done => {}
                    }
                }
                return match assembler.is_complete() {
                    true => Ok(()),
                    false => Err(Failure::fatal(ProviderError::new(
                        ProviderErrorKind::Stream,
                        format!("the stream from {url} ended before the answer was complete"),
                    ))),
                };
            };
            for event in parser.feed(&bytes) {
                match assembler.on_event(&event) {
                    Step::Continue => {}
                    Step::Done => return Ok(()),
                    Step::Failed(error) => return Err(Failure::fatal(error)),
                    Step::Retry(error) => return Err(Failure::retryable(error, None)),
                }
            }
            next = match self.read_chunk(&mut response, url, cancel).await {
                Ok(next) => next,
                // The answer is whole once its stop reason came; only trailing events are lost.
                Err(error) if error.kind == ProviderErrorKind::Stream && assembler.is_complete() => {
                    tracing::warn!(url, "stream broke after the stop reason: {}", error.message);
                    return Ok(());
                }
                Err(error) => return Err(Failure::fatal(error)),
            };
        }
    }

    async fn attempt(
        &self,
        client: &reqwest::Client,
        call: &Call<'_>,
        cancel: &CancellationToken,
    ) -> Result<(reqwest::Response, Option<Bytes>), Failure> {
        let url = call.url;
        let builder = client.post(url).headers(call.headers.clone()).body(call.body.clone());
        let idle = self.options.idle_timeout;
        let sent = tokio::select! {
            _ = cancel.cancelled() => return Err(Failure::fatal(aborted())),
            sent = tokio::time::timeout(idle, builder.send()) => sent,
        };
        let mut response = match sent {
            Err(_) => return Err(Failure::fatal(timeout_error(url, idle))),
            // A URL that cannot be built will not get better by trying again.
            Ok(Err(error)) if error.is_builder() => {
                let message =
                    format!("{url} is not a usable URL: {}; check the configured base URL", error_chain(&error));
                return Err(Failure::fatal(ProviderError::new(ProviderErrorKind::Connection, message)));
            }
            Ok(Err(error)) => {
                let message = format!("could not reach {url}: {}", error_chain(&error));
                return Err(Failure::retryable(ProviderError::new(ProviderErrorKind::Connection, message), None));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(retry::parse_retry_after);
            let body = self.read_error_body(response, url, cancel).await.map_err(Failure::fatal)?;
            let error = (call.http_error)(status, &body);
            return Err(match retry::is_retryable_status(status) {
                true => Failure::retryable(error, retry_after),
                false => Failure::fatal(error),
            });
        }
        // A connection that breaks before the first byte of the body lost nothing: retry it.
        match self.read_chunk(&mut response, url, cancel).await {
            Ok(first) => Ok((response, first)),
            Err(error) if error.kind == ProviderErrorKind::Stream => Err(Failure::retryable(error, None)),
            Err(error) => Err(Failure::fatal(error)),
        }
    }

    /// The next piece of the body; `None` at its end. Fails on silence, a broken connection, cancel.
    async fn read_chunk(
        &self,
        response: &mut reqwest::Response,
        url: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<Bytes>, ProviderError> {
        let idle = self.options.idle_timeout;
        tokio::select! {
            _ = cancel.cancelled() => Err(aborted()),
            read = tokio::time::timeout(idle, response.chunk()) => match read {
                Err(_) => Err(timeout_error(url, idle)),
                Ok(Err(error)) => Err(ProviderError::new(
                    ProviderErrorKind::Stream,
                    format!("the stream from {url} broke: {}", error_chain(&error)),
                )),
                Ok(Ok(chunk)) => Ok(chunk),
            },
        }
    }

    async fn read_error_body(
        &self,
        mut response: reqwest::Response,
        url: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, ProviderError> {
        // An error body is small; past this it is not worth reading (or quoting).
        const MAX_ERROR_BODY: usize = 64 * 1024;
        let mut body = Vec::new();
        while body.len() < MAX_ERROR_BODY {
            match self.read_chunk(&mut response, url, cancel).await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(error) if error.kind == ProviderErrorKind::Stream => break, // keep what came
                Err(error) => return Err(error),
            }
        }
        Ok(body)
    }
}

impl Failure {
    fn retryable(error: ProviderError, retry_after: Option<Duration>) -> Self {
        Self { error, retryable: true, retry_after }
    }

    fn fatal(error: ProviderError) -> Self {
        Self { error, retryable: false, retry_after: None }
    }
}

fn aborted() -> ProviderError {
    ProviderError::new(ProviderErrorKind::Aborted, "the model call was cancelled")
}

fn timeout_error(url: &str, idle: Duration) -> ProviderError {
    let message = format!("{url} sent nothing for {:.1} s (the idle timeout)", idle.as_secs_f64());
    ProviderError::new(ProviderErrorKind::Timeout, message)
}

/// The error and its causes, `: `-joined: reqwest's own message alone rarely says what failed.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

/// The first 200 characters of a stream event, for error messages that quote it.
pub(crate) fn shorten(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The message a stream ends in. `error` (a cut, a timeout, a cancel) decides the stop reason;
/// otherwise `stop` maps the provider's reason, told whether tool calls arrived.
pub(crate) fn finished_message(
    content: Vec<Content>,
    model: &Model,
    usage: Usage,
    error: Option<ProviderError>,
    stop: impl FnOnce(bool) -> Result<StopReason, ProviderError>,
) -> AssistantMessage {
    let has_tool_calls = content.iter().any(|block| matches!(block, Content::ToolCall(_)));
    let (stop_reason, error) = match error {
        Some(error) if error.kind == ProviderErrorKind::Aborted => (StopReason::Aborted, Some(error)),
        Some(error) => (StopReason::Error, Some(error)),
        None => match stop(has_tool_calls) {
            Ok(reason) => (reason, None),
            Err(error) => (StopReason::Error, Some(error)),
        },
    };
    AssistantMessage {
        content,
        provider: model.provider.clone(),
        model: model.id.clone(),
        usage,
        stop_reason,
        error,
        timestamp: now_ms(),
    }
}
