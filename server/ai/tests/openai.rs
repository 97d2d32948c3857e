//! The OpenAI-compatible provider against the scripted server: streaming, retries, failures,
//! cancellation and the request body, each over real HTTP on 127.0.0.1.

#[path = "support/json.rs"]
mod json;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use expect_test::{Expect, expect};
use reins_ai::{
    ApiKey, AssistantMessage, ClientOptions, Content, Message, Model, OpenAiCompatible, Prices, Provider, Request,
    StreamEvent, ToolCall, ToolResultMessage, ToolSpec,
};
use scripted_llm::{Reply, ScriptedServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const CANARY_KEY: &str = "sk-canary-7f3a9c1e5b";

fn model(base_url: &str) -> Model {
    Model {
        id: "scripted-model".into(),
        provider: "scripted".into(),
        base_url: base_url.into(),
        context_window: 100_000,
        max_output: 4096,
        prices: Prices { input: 2.0, output: 8.0, cache_read: 0.5, cache_write: 0.0 },
        reasoning: false,
        compat: Default::default(),
    }
}

fn request(base_url: &str) -> Request {
    Request {
        model: model(base_url),
        system_prompt: "You are a test.".into(),
        messages: vec![Message::user("hello")].into(),
        tools: Vec::new().into(),
        max_tokens: None,
        thinking: None,
    }
}

/// Retries that do not slow the tests down.
fn fast_options() -> ClientOptions {
    ClientOptions {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        max_retries: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
        final_refusal_urls: Vec::new(),
    }
}

fn provider(options: ClientOptions) -> OpenAiCompatible {
    OpenAiCompatible::new(ApiKey::new(CANARY_KEY), options)
}

/// Streams `request` and collects the events alongside the message.
async fn stream_with(
    provider: &OpenAiCompatible,
    request: &Request,
    cancel: &CancellationToken,
) -> (AssistantMessage, Vec<StreamEvent>) {
    let events = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| events.lock().unwrap().push(event);
    let message = provider.stream(request, &sink, cancel).await;
    (message, events.into_inner().unwrap())
}

/// Plays `replies` to one default request; returns the message and how many chat requests came.
async fn play(replies: Vec<Reply>, options: ClientOptions) -> (AssistantMessage, usize) {
    let server = ScriptedServer::start(replies).await;
    let (message, _) = stream_with(&provider(options), &request(&server.base_url()), &CancellationToken::new()).await;
    (message, server.chat_requests().len())
}

/// The message as one line per fact: stop reason, error, then each content block.
fn summary(message: &AssistantMessage) -> String {
    let mut lines = vec![format!("stop={:?}", message.stop_reason)];
    if let Some(error) = &message.error {
        lines.push(format!("error={:?} status={:?}: {}", error.kind, error.status, error.message));
    }
    for block in &message.content {
        lines.push(match block {
            Content::Text { text } => format!("text {text:?}"),
            Content::Thinking { thinking, .. } => format!("thinking {thinking:?}"),
            Content::ToolCall(call) => format!("tool_call {} {} {}", call.id, call.name, call.arguments),
            Content::Image { mime_type, .. } => format!("image {mime_type}"),
        });
    }
    redact_port(&lines.join("\n"))
}

async fn check(replies: Vec<Reply>, options: ClientOptions, expected_requests: usize, expected: Expect) {
    let (message, requests) = play(replies, options).await;
    assert_eq!(requests, expected_requests, "chat requests made\n{}", summary(&message));
    expected.assert_eq(&summary(&message));
}

#[tokio::test]
async fn streams_thinking_text_and_priced_usage_with_events_per_delta() {
    let server = ScriptedServer::start(vec![
        Reply::text("Hello, world").with_thinking("Greet them.").with_chunk_chars(4).with_usage(1000, 50, 400),
    ])
    .await;
    let (message, events) =
        stream_with(&provider(fast_options()), &request(&server.base_url()), &CancellationToken::new()).await;
    expect![[r#"
        stop=Stop
        thinking "Greet them."
        text "Hello, world""#]]
    .assert_eq(&summary(&message));
    let rendered: Vec<String> = events.iter().map(json::stream_event).collect();
    expect![[r#"
        {"kind":"thinking","index":0,"delta":"Gree"}
        {"kind":"thinking","index":0,"delta":"t th"}
        {"kind":"thinking","index":0,"delta":"em."}
        {"kind":"text","index":1,"delta":"Hell"}
        {"kind":"text","index":1,"delta":"o, w"}
        {"kind":"text","index":1,"delta":"orld"}"#]]
    .assert_eq(&rendered.join("\n"));
    let usage = &message.usage;
    assert_eq!((usage.input, usage.output, usage.cache_read, usage.total_tokens), (600, 50, 400, 1050));
    // 600 × $2 + 50 × $8 + 400 × $0.5 per million tokens.
    assert!((usage.cost.total - 0.0018).abs() < 1e-12, "{:?}", usage.cost);
    assert_eq!((message.provider.as_str(), message.model.as_str()), ("scripted", "scripted-model"));
}

#[tokio::test]
async fn tool_calls_reusing_index_zero_become_separate_calls() {
    check(
        vec![
            Reply::tool_call("call_a", "read", json!({"path": "a.rs"}))
                .with_tool_call("call_b", "ls", json!({"path": "."}))
                .with_reused_index_zero(),
        ],
        fast_options(),
        1,
        expect![[r#"
            stop=ToolUse
            tool_call call_a read {"path":"a.rs"}
            tool_call call_b ls {"path":"."}"#]],
    )
    .await;
}

#[tokio::test]
async fn malformed_tool_call_arguments_are_kept_raw() {
    check(
        vec![Reply::default().with_raw_tool_call("c1", "edit", r#"{"path": "a.rs", "old"#)],
        fast_options(),
        1,
        expect![[r#"
            stop=ToolUse
            tool_call c1 edit "{\"path\": \"a.rs\", \"old""#]],
    )
    .await;
}

#[tokio::test]
async fn wire_quirks_do_not_change_the_answer() {
    check(
        vec![Reply::text("é✓ fine").with_chunk_chars(1).with_keep_alive().with_crlf().with_no_space()],
        fast_options(),
        1,
        expect![[r#"
            stop=Stop
            text "é✓ fine""#]],
    )
    .await;
}

#[tokio::test]
async fn length_finish_is_a_length_stop() {
    check(
        vec![Reply::text("cut sh").with_finish_reason("length")],
        fast_options(),
        1,
        expect![[r#"
            stop=Length
            text "cut sh""#]],
    )
    .await;
}

#[tokio::test]
async fn rate_limit_is_retried_then_succeeds() {
    check(
        vec![Reply::http_error(429, "slow down").with_retry_after(0), Reply::text("ok")],
        fast_options(),
        2,
        expect![[r#"
            stop=Stop
            text "ok""#]],
    )
    .await;
}

#[tokio::test]
async fn server_errors_exhaust_the_retries() {
    check(
        vec![Reply::http_error(500, "boom").with_repeat(3)],
        fast_options(),
        3,
        expect![[r#"
            stop=Error
            error=Http status=Some(500): boom"#]],
    )
    .await;
}

#[tokio::test]
async fn unauthorized_is_an_auth_error_and_not_retried() {
    check(
        vec![Reply::http_error(401, "Invalid API key").with_repeat(3)],
        fast_options(),
        1,
        expect![[r#"
            stop=Error
            error=Auth status=Some(401): Invalid API key"#]],
    )
    .await;
}

#[tokio::test]
async fn context_overflow_is_recognised() {
    check(
        vec![Reply::http_error(400, "This model's maximum context length is 8192 tokens.")],
        fast_options(),
        1,
        expect![[r#"
            stop=Error
            error=ContextOverflow status=Some(400): This model's maximum context length is 8192 tokens."#]],
    )
    .await;
}

#[tokio::test]
async fn cut_stream_keeps_the_partial_text_and_is_not_retried() {
    // Events: the role chunk, "ab", "cd", then the socket closes inside the chunked body.
    let replies = vec![Reply::text("abcdefgh").with_chunk_chars(2).with_cut_after_chunks(3), Reply::text("never")];
    let (message, requests) = play(replies, fast_options()).await;
    assert_eq!(requests, 1);
    // After "broke:" comes hyper's wording, which depends on where in a chunk the cut fell.
    let summary = summary(&message);
    let (head, _) = summary.split_once(" broke: ").unwrap();
    expect![[r#"
        stop=Error
        error=Stream status=None: the stream from http://127.0.0.1:PORT/v1/chat/completions"#]]
    .assert_eq(head);
    assert!(summary.ends_with("\ntext \"abcd\""), "{summary}");
}

#[tokio::test]
async fn error_payload_mid_stream_ends_in_a_stream_error() {
    check(
        vec![Reply::text("partial").with_stream_error("model overloaded")],
        fast_options(),
        1,
        expect![[r#"
            stop=Error
            error=Stream status=None: the server reported an error mid-stream: model overloaded
            text "partial""#]],
    )
    .await;
}

#[tokio::test]
async fn silence_past_the_idle_timeout_is_a_timeout() {
    let options = ClientOptions { idle_timeout: Duration::from_millis(100), ..fast_options() };
    let (message, requests) = play(vec![Reply::text("late").with_delay_ms(2000)], options.clone()).await;
    assert_eq!(requests, 1, "a timeout is not retried");
    let error = message.error.unwrap();
    assert_eq!((message.stop_reason, error.kind), (reins_ai::StopReason::Error, reins_ai::ProviderErrorKind::Timeout));
    // Mid-stream silence too: the first event arrives at once, then the server stalls.
    let (message, _) = play(vec![Reply::text("abcdef").with_chunk_chars(2).with_chunk_delay_ms(400)], options).await;
    assert_eq!(message.error.map(|error| error.kind), Some(reins_ai::ProviderErrorKind::Timeout));
}

#[tokio::test]
async fn cancellation_aborts_a_waiting_request_and_a_retry_sleep() {
    for reply in [Reply::text("slow").with_delay_ms(10_000), Reply::http_error(503, "busy").with_retry_after(10)] {
        let server = ScriptedServer::start(vec![reply, Reply::text("never")]).await;
        let options = ClientOptions { max_delay: Duration::from_secs(60), ..fast_options() };
        let cancel = CancellationToken::new();
        let canceller = {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                cancel.cancel();
            })
        };
        let started = Instant::now();
        let (message, _) = stream_with(&provider(options), &request(&server.base_url()), &cancel).await;
        canceller.await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(5), "cancel took {:?}", started.elapsed());
        expect![[r#"
            stop=Aborted
            error=Aborted status=None: the model call was cancelled"#]]
        .assert_eq(&summary(&message));
    }
}

#[tokio::test]
async fn connection_refused_names_the_url() {
    // A port that was free a moment ago and has no listener now.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let (message, _) = stream_with(&provider(fast_options()), &request(&base_url), &CancellationToken::new()).await;
    let error = message.error.unwrap();
    assert_eq!(error.kind, reins_ai::ProviderErrorKind::Connection);
    assert!(error.message.contains(&format!("{base_url}/chat/completions")), "{}", error.message);
}

#[tokio::test]
async fn a_refused_connection_is_retried_until_the_server_is_up() {
    // Nothing listens on the port at first; the server comes up while the client backs off.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let starting = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(60)).await;
        ScriptedServer::start_on(port, vec![Reply::text("up now")]).await.unwrap()
    });
    let options = ClientOptions {
        max_retries: 6,
        base_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(400),
        ..fast_options()
    };
    let (message, _) = stream_with(&provider(options), &request(&base_url), &CancellationToken::new()).await;
    let server = starting.await.unwrap();
    assert_eq!(message.text(), "up now", "{:?}", message.error);
    assert_eq!(server.chat_requests().len(), 1);
}

/// Where the options say a refusal is final (the default local endpoint), it is not retried;
/// elsewhere it is.
#[tokio::test]
async fn a_refused_connection_at_a_final_refusal_url_is_not_retried() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let retries = |options: ClientOptions| {
        let request = request(&base_url);
        async move {
            let (message, events) = stream_with(&provider(options), &request, &CancellationToken::new()).await;
            assert_eq!(message.error.map(|error| error.kind), Some(reins_ai::ProviderErrorKind::Connection));
            events.iter().filter(|event| matches!(event, StreamEvent::Retry { .. })).count()
        }
    };
    let final_here = ClientOptions { final_refusal_urls: vec![base_url.clone()], ..fast_options() };
    assert_eq!(retries(final_here).await, 0);
    let elsewhere = ClientOptions { final_refusal_urls: vec!["http://127.0.0.1:11434/v1".into()], ..fast_options() };
    assert_eq!(retries(elsewhere).await, 2);
}

/// A server on `http://` that answers every request with a redirect to `location`; counts the
/// requests it had.
async fn redirecting_server(location: &'static str) -> (String, Arc<Mutex<usize>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let count = Arc::new(Mutex::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            *counted.lock().unwrap() += 1;
            let mut buffer = [0u8; 65536];
            let _ = stream.read(&mut buffer).await;
            let answer = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    (base_url, count)
}

/// The client for `http://` trusts no certificate (it is built without loading them): a
/// redirect to `https://` fails at once and says which address to use.
#[tokio::test]
async fn a_redirect_from_http_to_https_fails_at_once_naming_the_address() {
    let (base_url, requests) = redirecting_server("https://127.0.0.1:9/v1/chat/completions").await;
    let (message, events) =
        stream_with(&provider(fast_options()), &request(&base_url), &CancellationToken::new()).await;
    let error = message.error.unwrap();
    assert_eq!(error.kind, reins_ai::ProviderErrorKind::Connection);
    assert!(
        error
            .message
            .contains("redirected to https://127.0.0.1:9/v1/chat/completions: use that address as the base URL"),
        "{}",
        error.message
    );
    assert!(!events.iter().any(|event| matches!(event, StreamEvent::Retry { .. })), "it was retried");
    assert_eq!(*requests.lock().unwrap(), 1);
}

/// A redirect to another `http://` address is followed.
#[tokio::test]
async fn a_redirect_between_http_addresses_is_followed() {
    let server = ScriptedServer::start(vec![Reply::text("moved")]).await;
    let target: &'static str = format!("{}/chat/completions", server.base_url()).leak();
    let (base_url, requests) = redirecting_server(target).await;
    let (message, _) = stream_with(&provider(fast_options()), &request(&base_url), &CancellationToken::new()).await;
    assert_eq!(message.text(), "moved", "{:?}", message.error);
    assert_eq!(*requests.lock().unwrap(), 1);
}

#[tokio::test]
async fn an_unusable_base_url_fails_at_once_without_retries() {
    let started = std::time::Instant::now();
    let options =
        ClientOptions { base_delay: Duration::from_secs(5), max_delay: Duration::from_secs(5), ..fast_options() };
    let (message, _) = stream_with(&provider(options), &request("not a url"), &CancellationToken::new()).await;
    let error = message.error.unwrap();
    assert!(error.message.contains("not a usable URL"), "{}", error.message);
    assert!(started.elapsed() < Duration::from_secs(5), "it was retried");
}

#[tokio::test]
async fn request_body_carries_system_tools_tool_results_and_stream_options() {
    let server = ScriptedServer::start(vec![Reply::text("done")]).await;
    let mut request = request(&server.base_url());
    request.max_tokens = Some(256);
    request.tools = vec![ToolSpec {
        name: "read".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }]
    .into();
    request.messages.push(Message::Assistant(AssistantMessage {
        content: vec![
            Content::Thinking { thinking: "private".into(), signature: None },
            Content::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a.rs"}),
            }),
        ],
        stop_reason: reins_ai::StopReason::ToolUse,
        ..AssistantMessage::default()
    }));
    request.messages.push(Message::ToolResult(ToolResultMessage {
        tool_call_id: "call_1".into(),
        tool_name: "read".into(),
        content: vec![Content::text("fn main() {}")],
        is_error: false,
        details: None,
        timestamp: 0,
    }));
    stream_with(&provider(fast_options()), &request, &CancellationToken::new()).await;
    let recorded = server.chat_requests().remove(0);
    assert_eq!(recorded.header("authorization"), Some(format!("Bearer {CANARY_KEY}").as_str()));
    assert_eq!(recorded.header("content-type"), Some("application/json"));
    expect![[r#"
        {
          "model": "scripted-model",
          "messages": [
            {
              "role": "system",
              "content": "You are a test."
            },
            {
              "role": "user",
              "content": "hello"
            },
            {
              "role": "assistant",
              "content": null,
              "tool_calls": [
                {
                  "id": "call_1",
                  "type": "function",
                  "function": {
                    "name": "read",
                    "arguments": "{\"path\":\"a.rs\"}"
                  }
                }
              ]
            },
            {
              "role": "tool",
              "tool_call_id": "call_1",
              "content": "fn main() {}"
            }
          ],
          "stream": true,
          "stream_options": {
            "include_usage": true
          },
          "max_tokens": 256,
          "tools": [
            {
              "type": "function",
              "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": {
                  "type": "object",
                  "properties": {
                    "path": {
                      "type": "string"
                    }
                  },
                  "required": [
                    "path"
                  ]
                }
              }
            }
          ]
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&recorded.body).unwrap());
}

/// A `Write` target for tracing output that the test reads back.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_api_key_never_shows_in_errors_debug_output_or_logs() {
    let logs = LogBuffer::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    // The server echoes the key, as some APIs do in "incorrect API key" messages.
    let echo = format!("Incorrect API key provided: {CANARY_KEY}");
    let provider = provider(fast_options());
    let replies = vec![Reply::http_error(503, echo.clone()).with_retry_after(0), Reply::http_error(401, echo)];
    let server = ScriptedServer::start(replies).await;
    let (message, _) = stream_with(&provider, &request(&server.base_url()), &CancellationToken::new()).await;

    let error = message.error.clone().unwrap();
    assert_eq!(error.message, "Incorrect API key provided: <redacted>");
    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("retrying"), "the retry warning should be logged:\n{logs}");
    for (what, text) in [
        ("error message", error.to_string()),
        ("message debug", format!("{message:?}")),
        ("provider debug", format!("{provider:?}")),
        ("logs", logs),
    ] {
        assert!(!text.contains(CANARY_KEY), "{what} leaks the key:\n{text}");
    }
}

/// Puts `PORT` where the scripted server's port varies, so snapshots stay stable.
fn redact_port(text: &str) -> String {
    let marker = "127.0.0.1:";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at + marker.len()]);
        rest = &rest[at + marker.len()..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        out.push_str("PORT");
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

#[tokio::test]
async fn each_retry_is_announced_before_its_wait() {
    let server = ScriptedServer::start(vec![Reply::http_error(503, "busy").with_repeat(2), Reply::text("ok")]).await;
    let (message, events) =
        stream_with(&provider(fast_options()), &request(&server.base_url()), &CancellationToken::new()).await;
    assert_eq!(message.stop_reason, reins_ai::StopReason::Stop);
    let retries: Vec<String> = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::Retry { attempt, max_retries, reason, .. } => {
                Some(format!("{attempt}/{max_retries} {reason}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 2, "{retries:?}");
    assert!(retries[0].starts_with("1/2 ") && retries[1].starts_with("2/2 "), "{retries:?}");
    assert!(retries[0].contains("busy"), "{retries:?}");
}
