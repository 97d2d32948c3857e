//! The server: accepts connections on 127.0.0.1, answers each chat-completions (OpenAI) or
//! messages (Anthropic) request with the next scripted reply, and records every request.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::cache::{CacheUsage, PrefixCache};
use crate::http::{self, HttpRequest};
use crate::render::{self, RequestShape, StreamEvent};
use crate::reply::{Fault, Reply, ScriptedUsage};
use crate::request;
use crate::{render_anthropic, render_responses};

/// A running scripted server; dropping it stops the server and closes its connections.
pub struct ScriptedServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    accept_task: JoinHandle<()>,
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body; `Null` when there was none or it was not JSON.
    pub body: Value,
    /// The body's bytes as they came (for byte counts and byte-for-byte prefix comparisons).
    pub raw_body: Vec<u8>,
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    /// Every request as it came. A body is read as JSON only when a test asks for it: in a
    /// benchmark, reading each into a `Value` here was half of this server's CPU, and the bench
    /// counts the server's CPU in the client's overhead.
    requests: Mutex<Vec<Arc<HttpRequest>>>,
    /// Anthropic's prompt cache, when the server plays it, and what each request read and wrote.
    prefix_cache: Mutex<Option<(PrefixCache, Vec<CacheUsage>)>>,
}

/// Whether the connection can carry another request after a response.
enum AfterResponse {
    KeepOpen,
    Close,
}

impl ScriptedServer {
    /// Starts a server on 127.0.0.1 with a free port.
    ///
    /// # Panics
    /// When no local port can be bound; this is test support, and a test cannot go on without it.
    pub async fn start(replies: Vec<Reply>) -> ScriptedServer {
        match Self::start_on(0, replies).await {
            Ok(server) => server,
            Err(error) => panic!("scripted-llm: cannot bind 127.0.0.1: {error}"),
        }
    }

    /// Starts a server on 127.0.0.1:`port` (0 picks a free one).
    pub async fn start_on(port: u16, replies: Vec<Reply>) -> io::Result<ScriptedServer> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared { script: Mutex::new(replies.into()), ..Shared::default() });
        let accept_task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(ScriptedServer { address, shared, accept_task })
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL a client appends `/chat/completions` to.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        let requests: Vec<Arc<HttpRequest>> = lock(&self.shared.requests).clone();
        requests.iter().map(|request| RecordedRequest::from(&**request)).collect()
    }

    /// The recorded chat-completions requests only.
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.requests().into_iter().filter(|request| request.path.ends_with("/chat/completions")).collect()
    }

    /// `http://127.0.0.1:PORT`, the base URL an Anthropic client appends `/v1/messages` to (the
    /// Anthropic SDKs' `ANTHROPIC_BASE_URL` has no version segment).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The recorded Anthropic Messages API requests only.
    pub fn messages_requests(&self) -> Vec<RecordedRequest> {
        self.requests().into_iter().filter(|request| request.path.ends_with("/v1/messages")).collect()
    }

    /// Appends a reply to the script while the server runs.
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.script).push_back(reply);
    }

    /// From now on, Messages API requests go through a simulated prompt cache ([`PrefixCache`]):
    /// a reply without scripted usage reports the tokens read from it and written to it.
    pub fn simulate_prefix_cache(&self) {
        lock(&self.shared.prefix_cache).get_or_insert_with(Default::default);
    }

    /// What each Messages API request read from and wrote to the simulated cache, in order.
    pub fn cache_usage(&self) -> Vec<CacheUsage> {
        lock(&self.shared.prefix_cache).as_ref().map(|(_, usage)| usage.clone()).unwrap_or_default()
    }

    /// Replies not yet played (a repeated reply counts once).
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        // Aborting the accept task drops its JoinSet, which aborts every connection task.
        self.accept_task.abort();
    }
}

impl From<&HttpRequest> for RecordedRequest {
    fn from(request: &HttpRequest) -> RecordedRequest {
        RecordedRequest {
            method: request.method.clone(),
            path: request.path.clone(),
            headers: request.headers.clone(),
            body: json(&request.body),
            raw_body: request.body.clone(),
        }
    }
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, Arc::clone(&shared)));
                }
                // Out of descriptors or similar: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            // Reap finished connections so the set does not grow without bound in benchmarks.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (read_half, mut writer) = stream.into_split();
    let mut reader = BufReader::new(read_half);
    // Read errors and write errors both end the connection; the client sees a closed socket.
    while let Ok(Some(request)) = http::read_request(&mut reader).await {
        let wants_close = request.header("connection").is_some_and(|value| value.eq_ignore_ascii_case("close"));
        let request = Arc::new(request);
        lock(&shared.requests).push(Arc::clone(&request));
        match respond(&mut writer, &shared, &request).await {
            Ok(AfterResponse::KeepOpen) if !wants_close => {}
            _ => return,
        }
    }
}

/// A body read as JSON; `Null` when there is none or it is not JSON.
fn json(body: &[u8]) -> Value {
    if body.is_empty() { Value::Null } else { serde_json::from_slice(body).unwrap_or(Value::Null) }
}

async fn respond(writer: &mut OwnedWriteHalf, shared: &Shared, request: &HttpRequest) -> io::Result<AfterResponse> {
    let path = request.path.split('?').next().unwrap_or("");
    match (request.method.as_str(), path) {
        ("POST", path) if path.ends_with("/chat/completions") => match next_reply(shared, &request.body) {
            Some(reply) => play(writer, &reply, &request.body).await,
            None => {
                let body = render::error_body("script exhausted", "server_error");
                write_json(writer, 500, &[], &body).await
            }
        },
        ("POST", path) if path.ends_with("/responses") => match next_reply(shared, &request.body) {
            Some(reply) => play_responses(writer, &reply, &json(&request.body)).await,
            None => write_json(writer, 500, &[], &render::error_body("script exhausted", "server_error")).await,
        },
        ("POST", path) if path.ends_with("/v1/messages") => match next_reply(shared, &request.body) {
            Some(reply) => {
                let body = json(&request.body);
                play_anthropic(writer, &through_cache(shared, reply, &body), &body).await
            }
            None => write_json(writer, 500, &[], &render_anthropic::error_body(500, "script exhausted")).await,
        },
        ("GET", path) if path.ends_with("/models") => {
            let body = json!({
                "object": "list",
                "data": [{ "id": "scripted", "object": "model", "created": 0, "owned_by": "scripted-llm" }],
            });
            write_json(writer, 200, &[], &body).await
        }
        _ => {
            let message = format!("no route for {} {}", request.method, request.path);
            write_json(writer, 404, &[], &render::error_body(&message, "invalid_request_error")).await
        }
    }
}

/// Takes the next reply that fits the request (see [`Reply::when`]), counting down a repeated one.
fn next_reply(shared: &Shared, request_body: &[u8]) -> Option<Reply> {
    let mut script = lock(&shared.script);
    // The body as text (compact, whatever spacing the client sent) only when a reply asks for
    // something in it.
    let body = script.iter().any(|reply| reply.when.is_some()).then(|| json(request_body).to_string());
    let fits = |reply: &Reply| match (&reply.when, &body) {
        (Some(text), Some(body)) => body.contains(text.as_str()),
        _ => true,
    };
    let index = script.iter().position(fits)?;
    let reply = script.get_mut(index)?;
    if reply.repeat > 1 {
        reply.repeat -= 1;
        return Some(reply.clone());
    }
    script.remove(index)
}

/// The reply with the usage the simulated prompt cache gives the request, when the server plays
/// one and the script does not set the usage itself.
fn through_cache(shared: &Shared, mut reply: Reply, request_body: &Value) -> Reply {
    let mut cache = lock(&shared.prefix_cache);
    let Some((cache, log)) = cache.as_mut() else { return reply };
    if reply.usage.is_some() || reply.fault.is_some() || reply.error.is_some() {
        return reply;
    }
    let usage = cache.request(request_body);
    log.push(usage);
    let shape = RequestShape { model: String::new(), include_usage: true, prompt_chars: 0 };
    reply.usage = Some(ScriptedUsage {
        prompt_tokens: usage.prompt_tokens(),
        completion_tokens: render::usage(&reply, &shape).completion_tokens,
        cached_tokens: usage.cache_read,
        cache_write_tokens: usage.cache_write,
    });
    reply
}

/// Which API a reply answers, for faults whose shape depends on it.
#[derive(Clone, Copy, PartialEq)]
enum Api {
    OpenAi,
    Anthropic,
}

/// Waits the reply's delay, then plays its fault or its HTTP error (in `api`'s shape) when it has
/// one; `None` when the reply is a real answer, to be played by the caller.
async fn play_failure(writer: &mut OwnedWriteHalf, reply: &Reply, api: Api) -> Option<io::Result<AfterResponse>> {
    sleep_ms(reply.delay_ms).await;
    if let Some(fault) = &reply.fault {
        return Some(play_fault(writer, fault, api).await);
    }
    let error = reply.error.as_ref()?;
    let body = error.body.clone().unwrap_or_else(|| match api {
        Api::OpenAi => {
            let kind = if error.status == 429 { "rate_limit_error" } else { "server_error" };
            render::error_body(&error.message, kind)
        }
        Api::Anthropic => render_anthropic::error_body(error.status, &error.message),
    });
    let headers: Vec<(&str, String)> =
        error.retry_after.map(|seconds| ("Retry-After", seconds.to_string())).into_iter().collect();
    Some(write_json(writer, error.status, &headers, &body).await)
}

/// Plays a reply to a Chat Completions request (`POST …/chat/completions`).
async fn play(writer: &mut OwnedWriteHalf, reply: &Reply, request_body: &[u8]) -> io::Result<AfterResponse> {
    if let Some(failed) = play_failure(writer, reply, Api::OpenAi).await {
        return failed;
    }
    let (shape, stream) = request::chat_shape(request_body);
    if !stream {
        return write_json(writer, 200, &[], &render::completion(reply, &shape)).await;
    }
    let events = render::stream_events(reply, &shape).into_iter().map(|event| match event {
        StreamEvent::Chunk(value) => (None, value.to_string()),
        StreamEvent::Done => (None, "[DONE]".to_string()),
    });
    write_sse(writer, reply, events.collect()).await
}

/// Plays a reply to an OpenAI Responses API request (`POST …/responses`); HTTP errors and faults
/// are the Chat Completions ones, as OpenAI's are.
async fn play_responses(writer: &mut OwnedWriteHalf, reply: &Reply, request_body: &Value) -> io::Result<AfterResponse> {
    if let Some(failed) = play_failure(writer, reply, Api::OpenAi).await {
        return failed;
    }
    let shape = RequestShape {
        model: request_body.get("model").and_then(Value::as_str).unwrap_or("scripted").to_string(),
        include_usage: true,
        prompt_chars: render_responses::prompt_chars(request_body),
    };
    if request_body.get("stream").and_then(Value::as_bool) != Some(true) {
        return write_json(writer, 200, &[], &render_responses::response(reply, &shape)).await;
    }
    let events = render_responses::stream_events(reply, &shape)
        .into_iter()
        .map(|(name, data)| (Some(name), data.to_string()))
        .collect();
    write_sse(writer, reply, events).await
}

/// Plays a reply to an Anthropic Messages API request (`POST …/v1/messages`).
async fn play_anthropic(writer: &mut OwnedWriteHalf, reply: &Reply, request_body: &Value) -> io::Result<AfterResponse> {
    if let Some(failed) = play_failure(writer, reply, Api::Anthropic).await {
        return failed;
    }
    let system_chars = request_body.get("system").map_or(0, |system| system.to_string().len());
    let shape = RequestShape {
        model: request_body.get("model").and_then(Value::as_str).unwrap_or("scripted").to_string(),
        include_usage: true,
        prompt_chars: render::prompt_chars(request_body) + system_chars,
    };
    if request_body.get("stream").and_then(Value::as_bool) != Some(true) {
        return write_json(writer, 200, &[], &render_anthropic::message(reply, &shape)).await;
    }
    let events = render_anthropic::stream_events(reply, &shape)
        .into_iter()
        .map(|(name, data)| (Some(name), data.to_string()))
        .collect();
    write_sse(writer, reply, events).await
}

/// Writes `events` (an optional `event:` name and the `data:` text) as a chunked SSE body,
/// misbehaving as the reply asks: delays, keep-alive comments, odd line ends, a cut.
async fn write_sse(
    writer: &mut OwnedWriteHalf,
    reply: &Reply,
    events: Vec<(Option<&str>, String)>,
) -> io::Result<AfterResponse> {
    let headers = [
        ("Content-Type", "text/event-stream".to_string()),
        ("Cache-Control", "no-cache".to_string()),
        ("Transfer-Encoding", "chunked".to_string()),
    ];
    // Frames are gathered and sent together until a delay separates them: written one by one,
    // back to back, each few hundred bytes made the client's read contend with the server's
    // write for the socket (a provider's tokens come milliseconds apart, never like that).
    let mut pending: Vec<u8> = Vec::new();
    http::write_head(&mut pending, 200, &headers).await?;
    let line_end = if reply.crlf { "\r\n" } else { "\n" };
    let separator = if reply.no_space { ":" } else { ": " };
    for (sent, (name, payload)) in events.into_iter().enumerate() {
        if reply.cut_after_chunks == Some(sent) {
            // Closing without the last chunk leaves the chunked body incomplete: a real cut.
            send(writer, &mut pending).await?;
            return Ok(AfterResponse::Close);
        }
        if sent > 0 && reply.chunk_delay_ms > 0 {
            send(writer, &mut pending).await?;
            sleep_ms(reply.chunk_delay_ms).await;
        }
        if reply.keep_alive {
            http::write_chunk(&mut pending, format!(": keep-alive{line_end}{line_end}").as_bytes()).await?;
        }
        let mut frame = String::new();
        if let Some(name) = name {
            frame.push_str(&format!("event{separator}{name}{line_end}"));
        }
        frame.push_str(&format!("data{separator}{payload}{line_end}{line_end}"));
        http::write_chunk(&mut pending, frame.as_bytes()).await?;
    }
    http::write_last_chunk(&mut pending).await?;
    send(writer, &mut pending).await?;
    Ok(AfterResponse::KeepOpen)
}

/// Writes out and empties what `pending` gathered.
async fn send(writer: &mut OwnedWriteHalf, pending: &mut Vec<u8>) -> io::Result<()> {
    writer.write_all(pending).await?;
    pending.clear();
    writer.flush().await
}

/// Misbehaves as `fault` says. A write failing means the client hung up, which ends the fault.
async fn play_fault(writer: &mut OwnedWriteHalf, fault: &Fault, api: Api) -> io::Result<AfterResponse> {
    let sse_head = [
        ("Content-Type", "text/event-stream".to_string()),
        ("Cache-Control", "no-cache".to_string()),
        ("Transfer-Encoding", "chunked".to_string()),
    ];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(Fault::MAX_SECONDS);
    match fault {
        Fault::ResetBeforeHeaders => return Ok(AfterResponse::Close),
        Fault::StallBeforeHeaders => tokio::time::sleep_until(deadline).await,
        Fault::StallAfterHeaders => {
            http::write_head(writer, 200, &sse_head).await?;
            writer.flush().await?;
            tokio::time::sleep_until(deadline).await;
        }
        Fault::KeepAliveOnly { every_ms } => {
            http::write_head(writer, 200, &sse_head).await?;
            let ping: &[u8] = match api {
                Api::OpenAi => b": ping\n\n",
                Api::Anthropic => b"event: ping\ndata: {\"type\": \"ping\"}\n\n",
            };
            while tokio::time::Instant::now() < deadline {
                http::write_chunk(writer, ping).await?;
                sleep_ms((*every_ms).max(1)).await;
            }
        }
        Fault::Endless { every_ms } => {
            http::write_head(writer, 200, &sse_head).await?;
            let shape = RequestShape { model: "scripted".to_string(), ..RequestShape::default() };
            let (opening, delta) = match api {
                Api::OpenAi => {
                    let role = render::stream_events(&Reply::default(), &shape).swap_remove(0);
                    let role = match role {
                        StreamEvent::Chunk(value) => value,
                        StreamEvent::Done => Value::Null,
                    };
                    let mut delta = role.clone();
                    delta["choices"][0]["delta"] = json!({"content": "endless "});
                    (vec![format!("data: {role}\n\n")], format!("data: {delta}\n\n"))
                }
                Api::Anthropic => {
                    let opening = render_anthropic::stream_events(&Reply::text("x"), &shape)
                        .into_iter()
                        .take_while(|(name, _)| *name != "content_block_delta")
                        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
                        .collect();
                    let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "endless "}});
                    (opening, format!("event: content_block_delta\ndata: {delta}\n\n"))
                }
            };
            for event in opening {
                http::write_chunk(writer, event.as_bytes()).await?;
            }
            while tokio::time::Instant::now() < deadline {
                http::write_chunk(writer, delta.as_bytes()).await?;
                sleep_ms(*every_ms).await;
            }
        }
        Fault::Repeat { chunk, every_ms } => {
            http::write_head(writer, 200, &sse_head).await?;
            while tokio::time::Instant::now() < deadline {
                http::write_chunk(writer, chunk.as_bytes()).await?;
                sleep_ms(*every_ms).await;
            }
        }
        Fault::Body { status, content_type, body } => {
            http::write_full(writer, *status, &[], content_type, body.as_bytes()).await?;
            return Ok(AfterResponse::KeepOpen);
        }
    }
    Ok(AfterResponse::Close)
}

async fn write_json(
    writer: &mut OwnedWriteHalf,
    status: u16,
    headers: &[(&str, String)],
    body: &Value,
) -> io::Result<AfterResponse> {
    http::write_full(writer, status, headers, "application/json", body.to_string().as_bytes()).await?;
    Ok(AfterResponse::KeepOpen)
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// Locks a mutex, ignoring poisoning: the data (a script, a log) stays usable after a panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
