//! The HTTP side every streaming provider shares: one `POST` whose SSE body feeds an assembler.
//!
//! Transient failures before the answer starts (429, 5xx, 529, connection errors, and errors the
//! assembler reports as retryable before any content) are retried with backoff; once content has
//! arrived nothing is retried, and a broken stream ends the call with an error while the assembler
//! keeps what came. The API key goes only into the headers the provider builds: it is never
//! logged, and any error text that echoes it is redacted.
//!
//! Two bounds keep a misbehaving server from holding a run forever: the idle timeout counts from
//! the last piece of content, so keep-alive comments and pings do not extend it, and a stream
//! that goes on far past the call's output limit is cut. A success status whose body is not an
//! event stream (an HTML page, a JSON body, nothing) is reported as what it is.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use tokio::time::Instant;
use tokio_util::bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::message::{AssistantMessage, Content, ProviderError, ProviderErrorKind, StopReason, Usage, now_ms};
use crate::model::Model;
use crate::provider::{ApiKey, EventSink, StreamEvent};
use crate::retry::{self, Backoff};
use crate::sse::{SseEvent, SseParser};

#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub connect_timeout: Duration,
    /// The longest wait for the response head, and then between two pieces of content (not a
    /// limit on the whole response). Keep-alive comments and pings do not count as content.
    pub idle_timeout: Duration,
    /// Retries after the first attempt, for transient failures only.
    pub max_retries: u32,
    /// The first retry's delay before jitter; later ones double.
    pub base_delay: Duration,
    /// Caps every retry delay, including one asked for by `Retry-After`.
    pub max_delay: Duration,
    /// Base URLs where a refused connection is final, not retried: the default local endpoint,
    /// where nothing listening means no server was installed or started, which the seconds of
    /// the retries do not change.
    pub final_refusal_urls: Vec<String>,
}

/// An HTTP client with its key and options; one per provider instance, shared by all calls.
#[derive(Debug)]
pub(crate) struct Transport {
    api_key: ApiKey,
    options: ClientOptions,
    /// The clients for `https://` and for `http://` URLs, each built at its first call: loading
    /// the system's certificates takes milliseconds (a directory of them is read file by file),
    /// and a local server on `http://` needs none. `Err` holds why a client could not be built;
    /// every call that needs it then reports it.
    secure: OnceLock<Result<reqwest::Client, String>>,
    plain: OnceLock<Result<reqwest::Client, String>>,
}

/// One streaming call: where, with which headers and body, and how to read an error response.
/// A model call as a provider prepares it; encoding failures are carried to the message.
pub(crate) struct Outgoing<'a> {
    pub url: &'a str,
    /// Told of each retry ([`StreamEvent::Retry`]).
    pub on_event: EventSink<'a>,
    pub body: serde_json::Result<Vec<u8>>,
    pub headers: Result<HeaderMap, ProviderError>,
    /// The error for a non-success status and its body.
    pub http_error: fn(u16, &[u8]) -> ProviderError,
    /// The output limit the request asks for, in tokens (0: none); the stream is cut well past it.
    pub output_limit: u64,
}

pub(crate) struct Call<'a> {
    pub url: &'a str,
    /// Everything but the body's framing, including the provider's auth header.
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The error for a non-success status and its body.
    pub http_error: fn(u16, &[u8]) -> ProviderError,
    /// How far the stream may run before it is cut.
    pub cap: OutputCap,
}

/// Bounds on one answer, well past what a server that honours the output limit sends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutputCap {
    /// The output limit asked for, in tokens (0: none).
    limit: u64,
    /// Bytes of content: text, thinking, tool-call arguments, and a line not yet ended.
    bytes: usize,
    /// Events that carried something.
    events: usize,
}

/// What the transport does after the assembler took an event.
#[derive(Debug)]
pub(crate) enum Step {
    /// Content (or anything else that shows the answer is moving).
    Continue,
    /// An event that carries nothing, such as Anthropic's `ping`: it does not hold off the idle
    /// timeout.
    KeepAlive,
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
    /// Bytes of content so far: text, thinking and tool-call arguments.
    fn output_len(&self) -> usize;
    /// The message: what arrived, with `error` (if the call failed) deciding the stop reason.
    fn into_message(self, model: &Model, error: Option<ProviderError>) -> AssistantMessage;
}

/// A token is about four bytes of text and rarely over eight; a stream past this many bytes per
/// token of its output limit is not honouring the limit.
const CAP_BYTES_PER_TOKEN: usize = 16;
/// Servers send about one event per token, a few per token at most (a character each).
const CAP_EVENTS_PER_TOKEN: usize = 8;
/// The cap never assumes a smaller limit than this, so short limits leave room for structure.
const CAP_MIN_TOKENS: u64 = 4096;
/// The limit the cap assumes when the request has none: larger than any model's.
const CAP_UNKNOWN_TOKENS: u64 = 256 * 1024;
/// Redirects followed, as reqwest's default policy does.
const MAX_REDIRECTS: usize = 10;
/// How much of a body that is not an event stream is kept to quote in the error.
const HEAD_BYTES: usize = 200;

/// What a response body has shown so far, for errors that say what came.
struct BodyWatch {
    content_type: Option<String>,
    /// The first bytes of the body.
    head: Vec<u8>,
    bytes: usize,
    /// Events dispatched, and those of them that carried content.
    events: usize,
    content_events: usize,
    /// Whether something arrived since the last content that carried none (comments, pings).
    keep_alives: bool,
    /// When the last content came (or the response head, before any).
    last_content: Instant,
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
            final_refusal_urls: Vec::new(),
        }
    }
}

impl Transport {
    pub fn new(api_key: ApiKey, options: ClientOptions) -> Self {
        Self { api_key, options, secure: OnceLock::new(), plain: OnceLock::new() }
    }

    /// The client for `url`. The one for `http://` trusts no certificate, so it follows a
    /// redirect only to another `http://` URL and says where a server sent it otherwise.
    fn client(&self, url: &str) -> Result<&reqwest::Client, ProviderError> {
        let plain = url.get(..7).is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
            && !proxied_over_tls(|name| std::env::var(name).ok());
        let cell = if plain { &self.plain } else { &self.secure };
        let client = cell.get_or_init(|| {
            let builder = match plain {
                false => crate::http_client(),
                true => crate::http_client().tls_certs_only([]).redirect(plain_redirects()),
            };
            builder
                .connect_timeout(self.options.connect_timeout)
                .build()
                .map_err(|error| format!("cannot build the HTTP client: {}", error_chain(&error)))
        });
        client.as_ref().map_err(|message| ProviderError::new(ProviderErrorKind::Connection, message.clone()))
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
        let Outgoing { url, on_event, body, headers, http_error, output_limit } = outgoing;
        let outcome = match (body, headers) {
            (Ok(body), Ok(headers)) => {
                let cap = OutputCap::for_limit(output_limit);
                let call = Call { url, headers, body: Bytes::from(body), http_error, cap };
                self.stream(&call, &mut assembler, on_event, cancel).await
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

    /// Makes attempts (retrying transient failures, each announced to `on_event`) until one
    /// streams into `assembler` to its end.
    pub async fn stream(
        &self,
        call: &Call<'_>,
        assembler: &mut impl Assemble,
        on_event: EventSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<(), ProviderError> {
        let client = self.client(call.url)?;
        let options = &self.options;
        let mut backoff = Backoff::new(options.max_retries, options.base_delay, options.max_delay);
        let mut attempt = 1;
        loop {
            let failure = match self.attempt(client, call, cancel).await {
                Ok((response, first)) => match self.read_stream(response, first, call, assembler, cancel).await {
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
            // Said to the user through the retry event; a log line would say it twice.
            tracing::info!(
                url = call.url,
                attempt,
                status = failure.error.status,
                delay_ms = delay.as_millis() as u64,
                "model call failed, retrying: {}",
                self.redact(&failure.error.message),
            );
            on_event(StreamEvent::Retry {
                attempt,
                max_retries: options.max_retries,
                delay_ms: delay.as_millis() as u64,
                reason: self.redact(&failure.error.message),
            });
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
        call: &Call<'_>,
        assembler: &mut impl Assemble,
        cancel: &CancellationToken,
    ) -> Result<(), Failure> {
        let url = call.url;
        let idle = self.options.idle_timeout;
        let mut watch = BodyWatch::new(&response);
        let mut parser = SseParser::default();
        let mut next = first;
        loop {
            let Some(bytes) = next else {
                if let Some(event) = parser.finish() {
                    match assembler.on_event(&event) {
                        Step::Failed(error) => return Err(Failure::fatal(error)),
                        Step::Retry(error) => return Err(Failure::retryable(error, None)),
                        Step::Continue | Step::KeepAlive | Step::Done => {}
                    }
                }
                return match assembler.is_complete() {
                    true => Ok(()),
                    false => Err(Failure::fatal(watch.ended_early(url))),
                };
            };
            watch.saw_bytes(&bytes);
            let comments = parser.comments();
            let events = parser.feed(&bytes);
            watch.keep_alives |= parser.comments() > comments;
            for event in events {
                watch.events += 1;
                match assembler.on_event(&event) {
                    Step::Continue => watch.saw_content(),
                    Step::KeepAlive => watch.keep_alives = true,
                    Step::Done => return Ok(()),
                    Step::Failed(error) => return Err(Failure::fatal(error)),
                    Step::Retry(error) => return Err(Failure::retryable(error, None)),
                }
            }
            if let Some(error) = call.cap.exceeded(url, assembler.output_len(), parser.pending_len(), &watch) {
                return Err(Failure::fatal(error));
            }
            next = match self.read_chunk(&mut response, url, watch.last_content + idle, cancel).await {
                Ok(next) => next,
                Err(error) if error.kind == ProviderErrorKind::Timeout => {
                    return Err(Failure::fatal(watch.silence(url, idle)));
                }
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
            // A redirect refused (see `plain_redirects`) is refused again on every attempt.
            Ok(Err(error)) if error.is_redirect() => {
                let message = format!("could not reach {url}: {}", error_chain(&error));
                return Err(Failure::fatal(ProviderError::new(ProviderErrorKind::Connection, message)));
            }
            Ok(Err(error)) if too_many_open_files(&error) => {
                return Err(Failure::fatal(open_files_error(url)));
            }
            Ok(Err(error)) => {
                let message = format!("could not reach {url}: {}", error_chain(&error));
                let failed = ProviderError::new(ProviderErrorKind::Connection, message);
                let final_refusal = self.options.final_refusal_urls.iter().any(|base| url.starts_with(base.as_str()));
                return Err(match final_refusal && is_refused(&error) {
                    true => Failure::fatal(failed),
                    false => Failure::retryable(failed, None),
                });
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
        match self.read_chunk(&mut response, url, Instant::now() + idle, cancel).await {
            Ok(first) => Ok((response, first)),
            Err(error) if error.kind == ProviderErrorKind::Stream => Err(Failure::retryable(error, None)),
            Err(error) => Err(Failure::fatal(error)),
        }
    }

    /// The next piece of the body; `None` at its end. Fails when `deadline` passes, the connection
    /// breaks, or the call is cancelled.
    async fn read_chunk(
        &self,
        response: &mut reqwest::Response,
        url: &str,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Option<Bytes>, ProviderError> {
        tokio::select! {
            _ = cancel.cancelled() => Err(aborted()),
            read = tokio::time::timeout_at(deadline, response.chunk()) => match read {
                Err(_) => Err(timeout_error(url, self.options.idle_timeout)),
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
            let deadline = Instant::now() + self.options.idle_timeout;
            match self.read_chunk(&mut response, url, deadline, cancel).await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(error) if error.kind == ProviderErrorKind::Stream => break, // keep what came
                Err(error) => return Err(error),
            }
        }
        Ok(body)
    }
}

impl BodyWatch {
    fn new(response: &reqwest::Response) -> Self {
        let content_type =
            response.headers().get(CONTENT_TYPE).map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        Self {
            content_type,
            head: Vec::new(),
            bytes: 0,
            events: 0,
            content_events: 0,
            keep_alives: false,
            last_content: Instant::now(),
        }
    }

    fn saw_bytes(&mut self, bytes: &[u8]) {
        let keep = bytes.len().min(HEAD_BYTES.saturating_sub(self.head.len()));
        self.head.extend_from_slice(&bytes[..keep]);
        self.bytes += bytes.len();
    }

    fn saw_content(&mut self) {
        self.content_events += 1;
        self.keep_alives = false;
        self.last_content = Instant::now();
    }

    /// "Content-Type text/html, 1234 bytes: <!DOCTYPE html>…", or "an empty body".
    fn what_came(&self) -> String {
        if self.bytes == 0 {
            return "an empty body".to_string();
        }
        let kind = match &self.content_type {
            Some(content_type) => format!("Content-Type {content_type}"),
            None => "no Content-Type".to_string(),
        };
        let mut head = String::from_utf8_lossy(&self.head).into_owned();
        if self.bytes > self.head.len() {
            head.push('…');
        }
        format!("{kind}, {} bytes: {head:?}", self.bytes)
    }

    /// The error for a body that ended before the answer was whole.
    fn ended_early(&self, url: &str) -> ProviderError {
        match self.events {
            0 => ProviderError::new(
                ProviderErrorKind::Protocol,
                format!("{url} answered with {} instead of a stream of completion events", self.what_came()),
            ),
            _ => ProviderError::new(
                ProviderErrorKind::Stream,
                format!("the stream from {url} ended before the answer was complete"),
            ),
        }
    }

    /// The error for a body that went without content for the idle timeout.
    fn silence(&self, url: &str, idle: Duration) -> ProviderError {
        let seconds = idle.as_secs_f64();
        let message = match (self.content_events, self.bytes, self.keep_alives) {
            (0, 0, _) => format!("{url} sent nothing for {seconds:.1} s (the idle timeout)"),
            (_, _, true) => format!("{url} sent only keep-alives, no content, for {seconds:.1} s (the idle timeout)"),
            (0, _, false) => format!(
                "{url} sent no complete event for {seconds:.1} s (the idle timeout); it answered with {}",
                self.what_came()
            ),
            _ => format!("{url} sent no complete event for {seconds:.1} s (the idle timeout)"),
        };
        ProviderError::new(ProviderErrorKind::Timeout, message)
    }
}

impl OutputCap {
    fn for_limit(limit: u64) -> Self {
        let tokens = match limit {
            0 => CAP_UNKNOWN_TOKENS,
            limit => limit.max(CAP_MIN_TOKENS),
        };
        let tokens = usize::try_from(tokens).unwrap_or(usize::MAX);
        Self {
            limit,
            bytes: tokens.saturating_mul(CAP_BYTES_PER_TOKEN),
            events: tokens.saturating_mul(CAP_EVENTS_PER_TOKEN),
        }
    }

    /// The error that cuts the stream, once `output` bytes of content, `pending` bytes of an
    /// event not yet ended or the events seen go past the cap.
    fn exceeded(&self, url: &str, output: usize, pending: usize, watch: &BodyWatch) -> Option<ProviderError> {
        let limit = match self.limit {
            0 => "with no output limit asked for".to_string(),
            limit => format!("far past the {limit}-token output limit asked for"),
        };
        let message = if output > self.bytes {
            format!("{url} sent over {} KB of output without finishing, {limit}; stopped reading", self.bytes / 1000)
        } else if watch.content_events > self.events {
            format!("{url} sent over {} events without finishing, {limit}; stopped reading", self.events)
        } else if pending > self.bytes {
            format!(
                "{url} sent over {} KB that do not end an event; stopped reading. It answered with {}",
                self.bytes / 1000,
                watch.what_came()
            )
        } else {
            return None;
        };
        Some(ProviderError::new(ProviderErrorKind::Stream, message))
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

/// Whether `error` comes of this process's limit of open files (EMFILE) or the system's
/// (ENFILE): then the request never left, and the server is not to blame.
fn too_many_open_files(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(cause) = next {
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && matches!(io.raw_os_error(), Some(libc_errno::EMFILE | libc_errno::ENFILE))
        {
            return true;
        }
        next = cause.source();
    }
    false
}

fn open_files_error(url: &str) -> ProviderError {
    let message = format!(
        "too many open files: reins reached its limit of open files, so it could not connect to {url}. \
         Close sessions or MCP servers you do not need, or raise the limit (ulimit -n) and restart reins."
    );
    ProviderError::new(ProviderErrorKind::OpenFiles, message)
}

/// The error numbers of running out of file descriptors, as Linux and the BSDs number them.
mod libc_errno {
    pub const ENFILE: i32 = 23;
    pub const EMFILE: i32 = 24;
}

/// The error and its causes, `: `-joined: reqwest's own message alone rarely says what failed.
/// Whether a connection failed because nothing listens at the address.
fn is_refused(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused) {
            return true;
        }
        cause = error.source();
    }
    false
}

/// Whether the environment sends `http://` requests through a proxy reached over TLS, which
/// needs the certificates after all (reqwest reads these variables).
fn proxied_over_tls(var: impl Fn(&str) -> Option<String>) -> bool {
    ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
        .into_iter()
        .filter_map(var)
        .any(|proxy| proxy.trim().get(..8).is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://")))
}

/// Redirects as reqwest follows them by default (up to ten), but only between `http://` URLs.
fn plain_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        match attempt.url().scheme() {
            "http" => attempt.follow(),
            _ => {
                let to = attempt.url().to_string();
                attempt.error(format!("the server redirected to {to}: use that address as the base URL"))
            }
        }
    })
}

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

/// How much of a stream event an error message quotes, in characters.
pub(crate) const QUOTED_EVENT_CHARS: usize = 200;

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

#[cfg(test)]
mod tests {
    use super::proxied_over_tls;

    #[test]
    fn only_a_proxy_reached_over_tls_needs_the_certificates_for_http() {
        let with =
            |name: &'static str, value: &'static str| move |asked: &str| (asked == name).then(|| value.to_string());
        assert!(!proxied_over_tls(|_| None));
        assert!(!proxied_over_tls(with("HTTP_PROXY", "http://proxy:3128")));
        assert!(!proxied_over_tls(with("HTTPS_PROXY", "https://proxy:3128")), "not used for http://");
        assert!(proxied_over_tls(with("http_proxy", " HTTPS://proxy:3128")));
        assert!(proxied_over_tls(with("ALL_PROXY", "https://proxy")));
    }
}
