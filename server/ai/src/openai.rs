//! The OpenAI-compatible Chat Completions provider (OpenAI, DeepSeek, Ollama, llama.cpp, vLLM,
//! OpenRouter): one streaming `POST {base_url}/chat/completions` per model call.
//!
//! Transient failures before the response body starts (429, 5xx, connection errors) are retried;
//! once content has arrived nothing is retried, and a broken stream ends the message with
//! `stop_reason: error` holding what came. The API key goes only into the `Authorization` header:
//! it is never logged, and any error text that echoes it is redacted.

mod assemble;
mod errors;
mod request;
mod wire;

use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use tokio_util::bytes::Bytes;
use tokio_util::sync::CancellationToken;

use self::assemble::{Assembler, Step};
use crate::message::{AssistantMessage, ProviderError, ProviderErrorKind};
use crate::provider::{ApiKey, EventSink, Provider, Request};
use crate::retry::{self, Backoff};
use crate::sse::SseParser;

/// A Chat Completions client; one per API key, shared by all calls.
#[derive(Debug)]
pub struct OpenAiCompatible {
    api_key: ApiKey,
    options: ClientOptions,
    /// `Err` holds why the HTTP client could not be built; every call then reports it.
    client: Result<reqwest::Client, String>,
}

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

impl OpenAiCompatible {
    pub fn new(api_key: ApiKey, options: ClientOptions) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {}", error_chain(&error)));
        Self { api_key, options, client }
    }

    /// Sends the request (retrying transient failures) and reads the stream into `assembler`.
    async fn call(
        &self,
        url: &str,
        body: Bytes,
        assembler: &mut Assembler<'_>,
        cancel: &CancellationToken,
    ) -> Result<(), ProviderError> {
        let (mut response, first) = self.open_stream(url, body, cancel).await?;
        let mut parser = SseParser::default();
        let mut next = first;
        loop {
            let Some(bytes) = next else {
                if let Some(event) = parser.finish()
                    && let Step::Failed(error) = assembler.on_event(&event)
                {
                    return Err(error);
                }
                return match assembler.is_complete() {
                    true => Ok(()),
                    false => Err(ProviderError::new(
                        ProviderErrorKind::Stream,
                        format!("the stream from {url} ended before the answer was complete"),
                    )),
                };
            };
            for event in parser.feed(&bytes) {
                match assembler.on_event(&event) {
                    Step::Continue => {}
                    Step::Done => return Ok(()),
                    Step::Failed(error) => return Err(error),
                }
            }
            next = match self.read_chunk(&mut response, url, cancel).await {
                Ok(next) => next,
                // The answer is whole once a finish reason came; only the usage chunk is lost.
                Err(error) if error.kind == ProviderErrorKind::Stream && assembler.is_complete() => {
                    tracing::warn!(url, "stream broke after the finish reason: {}", error.message);
                    return Ok(());
                }
                Err(error) => return Err(error),
            };
        }
    }

    /// Makes attempts until one yields a successful response and the first piece of its body.
    async fn open_stream(
        &self,
        url: &str,
        body: Bytes,
        cancel: &CancellationToken,
    ) -> Result<(reqwest::Response, Option<Bytes>), ProviderError> {
        let client =
            self.client.as_ref().map_err(|message| ProviderError::new(ProviderErrorKind::Connection, message))?;
        let options = &self.options;
        let mut backoff = Backoff::new(options.max_retries, options.base_delay, options.max_delay);
        let mut attempt = 1;
        loop {
            let failure = match self.attempt(client, url, body.clone(), cancel).await {
                Ok(opened) => return Ok(opened),
                Err(failure) => failure,
            };
            let delay = match failure.retryable {
                true => backoff.next_delay(failure.retry_after),
                false => None,
            };
            let Some(delay) = delay else { return Err(failure.error) };
            tracing::warn!(
                url,
                attempt,
                status = failure.error.status,
                delay_ms = delay.as_millis() as u64,
                "model call failed, retrying: {}",
                redact(&failure.error.message, &self.api_key),
            );
            if !retry::sleep_unless_cancelled(delay, cancel).await {
                return Err(aborted());
            }
            attempt += 1;
        }
    }

    async fn attempt(
        &self,
        client: &reqwest::Client,
        url: &str,
        body: Bytes,
        cancel: &CancellationToken,
    ) -> Result<(reqwest::Response, Option<Bytes>), Failure> {
        let mut builder = client.post(url).header(CONTENT_TYPE, "application/json").body(body);
        if !self.api_key.is_empty() {
            builder = builder.bearer_auth(self.api_key.expose());
        }
        let idle = self.options.idle_timeout;
        let sent = tokio::select! {
            _ = cancel.cancelled() => return Err(Failure::fatal(aborted())),
            sent = tokio::time::timeout(idle, builder.send()) => sent,
        };
        let mut response = match sent {
            Err(_) => return Err(Failure::fatal(timeout_error(url, idle))),
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
            let error = errors::http_error(status, &body);
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

#[async_trait]
impl Provider for OpenAiCompatible {
    async fn stream(&self, request: &Request, on_event: EventSink<'_>, cancel: &CancellationToken) -> AssistantMessage {
        let url = format!("{}/chat/completions", request.model.base_url.trim_end_matches('/'));
        tracing::debug!(url, model = request.model.id, messages = request.messages.len(), "chat completions request");
        let mut assembler = Assembler::new(on_event);
        let outcome = match serde_json::to_vec(&request::chat_request(request)) {
            Ok(body) => self.call(&url, Bytes::from(body), &mut assembler, cancel).await,
            Err(error) => {
                Err(ProviderError::new(ProviderErrorKind::Protocol, format!("cannot encode the request: {error}")))
            }
        };
        let mut message = assembler.into_message(&request.model, outcome.err());
        if let Some(error) = &mut message.error {
            error.message = redact(&error.message, &self.api_key);
            tracing::debug!(url, kind = ?error.kind, status = error.status, "model call failed: {}", error.message);
        }
        message
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

/// Servers sometimes echo the key in an error message ("Incorrect API key provided: sk-…").
fn redact(text: &str, api_key: &ApiKey) -> String {
    if api_key.is_empty() { text.to_string() } else { text.replace(api_key.expose(), "<redacted>") }
}
