//! The Anthropic Messages API provider against the scripted server: streaming, prompt caching,
//! retries, failures, cancellation and the request body, each over real HTTP on 127.0.0.1.

#[path = "support/json.rs"]
mod json;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use expect_test::{Expect, expect};
use reins_ai::{
    Anthropic, ApiKey, AssistantMessage, ClientOptions, Content, Message, Model, Prices, Provider, ProviderErrorKind,
    Request, StopReason, StreamEvent, ToolCall, ToolResultMessage, ToolSpec,
};
use scripted_llm::{Reply, ScriptedServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const CANARY_KEY: &str = "sk-ant-canary-5d2e8b7f41";

fn model(base_url: &str) -> Model {
    Model {
        id: "claude-scripted".into(),
        provider: "anthropic".into(),
        base_url: base_url.into(),
        context_window: 200_000,
        max_output: 8192,
        prices: Prices { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 },
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

fn provider(options: ClientOptions) -> Anthropic {
    Anthropic::new(ApiKey::new(CANARY_KEY), options)
}

/// Streams `request` and collects the events alongside the message.
async fn stream_with(
    provider: &Anthropic,
    request: &Request,
    cancel: &CancellationToken,
) -> (AssistantMessage, Vec<StreamEvent>) {
    let events = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| events.lock().unwrap().push(event);
    let message = provider.stream(request, &sink, cancel).await;
    (message, events.into_inner().unwrap())
}

/// Plays `replies` to one default request; returns the message and how many messages requests came.
async fn play(replies: Vec<Reply>, options: ClientOptions) -> (AssistantMessage, usize) {
    let server = ScriptedServer::start(replies).await;
    let request = request(&server.anthropic_base_url());
    let (message, _) = stream_with(&provider(options), &request, &CancellationToken::new()).await;
    (message, server.messages_requests().len())
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
            Content::Thinking { thinking, signature } => format!("thinking {thinking:?} signature={signature:?}"),
            Content::ToolCall(call) => format!("tool_call {} {} {}", call.id, call.name, call.arguments),
            Content::Image { mime_type, .. } => format!("image {mime_type}"),
        });
    }
    redact_port(&lines.join("\n"))
}

fn rendered_events(events: &[StreamEvent]) -> String {
    events.iter().map(json::stream_event).collect::<Vec<_>>().join("\n")
}

async fn check(replies: Vec<Reply>, expected_requests: usize, expected: Expect) {
    let (message, requests) = play(replies, fast_options()).await;
    assert_eq!(requests, expected_requests, "messages requests made\n{}", summary(&message));
    expected.assert_eq(&summary(&message));
}

#[tokio::test]
async fn streams_text_with_an_event_per_delta() {
    let server = ScriptedServer::start(vec![Reply::text("Hello, world").with_chunk_chars(5)]).await;
    let request = request(&server.anthropic_base_url());
    let (message, events) = stream_with(&provider(fast_options()), &request, &CancellationToken::new()).await;
    expect![[r#"
        stop=Stop
        text "Hello, world""#]]
    .assert_eq(&summary(&message));
    expect![[r#"
        {"kind":"text","index":0,"delta":"Hello"}
        {"kind":"text","index":0,"delta":", wor"}
        {"kind":"text","index":0,"delta":"ld"}"#]]
    .assert_eq(&rendered_events(&events));
    assert_eq!((message.provider.as_str(), message.model.as_str()), ("anthropic", "claude-scripted"));
}

#[tokio::test]
async fn thinking_keeps_its_signature_and_redacted_thinking_is_kept_for_the_next_request() {
    let server = ScriptedServer::start(vec![
        Reply::text("42")
            .with_redacted_thinking("opaque-data")
            .with_thinking("Think hard.")
            .with_thinking_signature("sig-abc")
            .with_chunk_chars(6),
        Reply::text("again"),
    ])
    .await;
    let provider = provider(fast_options());
    let mut request = request(&server.anthropic_base_url());
    let (message, events) = stream_with(&provider, &request, &CancellationToken::new()).await;
    expect![[r#"
        stop=Stop
        thinking "" signature=Some("redacted_thinking:opaque-data")
        thinking "Think hard." signature=Some("sig-abc")
        text "42""#]]
    .assert_eq(&summary(&message));
    expect![[r#"
        {"kind":"thinking","index":1,"delta":"Think "}
        {"kind":"thinking","index":1,"delta":"hard."}
        {"kind":"text","index":2,"delta":"42"}"#]]
    .assert_eq(&rendered_events(&events));

    // Both go back, as the API requires for the model that wrote them.
    request.messages.push(Message::Assistant(message));
    request.messages.push(Message::user("why?"));
    stream_with(&provider, &request, &CancellationToken::new()).await;
    let body = &server.messages_requests()[1].body;
    expect![[r#"{"role":"assistant","content":[{"type":"redacted_thinking","data":"opaque-data"},{"type":"thinking","thinking":"Think hard.","signature":"sig-abc"},{"type":"text","text":"42"}]}"#]]
    .assert_eq(&body["messages"][1].to_string());
}

#[tokio::test]
async fn two_tool_calls_assemble_their_input_json_deltas() {
    let server = ScriptedServer::start(vec![
        Reply::text("Reading both.")
            .with_tool_call("toolu_a", "read", json!({"path": "a.rs"}))
            .with_tool_call("toolu_b", "ls", json!({"path": "."}))
            .with_chunk_chars(8),
    ])
    .await;
    let request = request(&server.anthropic_base_url());
    let (message, events) = stream_with(&provider(fast_options()), &request, &CancellationToken::new()).await;
    expect![[r#"
        stop=ToolUse
        text "Reading both."
        tool_call toolu_a read {"path":"a.rs"}
        tool_call toolu_b ls {"path":"."}"#]]
    .assert_eq(&summary(&message));
    expect![[r#"
        {"kind":"text","index":0,"delta":"Reading "}
        {"kind":"text","index":0,"delta":"both."}
        {"kind":"tool_call","index":1,"id":"toolu_a","name":"read","argumentsDelta":""}
        {"kind":"tool_call","index":1,"id":"toolu_a","name":"read","argumentsDelta":"{\"path\":"}
        {"kind":"tool_call","index":1,"id":"toolu_a","name":"read","argumentsDelta":"\"a.rs\"}"}
        {"kind":"tool_call","index":2,"id":"toolu_b","name":"ls","argumentsDelta":""}
        {"kind":"tool_call","index":2,"id":"toolu_b","name":"ls","argumentsDelta":"{\"path\":"}
        {"kind":"tool_call","index":2,"id":"toolu_b","name":"ls","argumentsDelta":"\".\"}"}"#]]
    .assert_eq(&rendered_events(&events));
}

#[tokio::test]
async fn malformed_tool_input_is_kept_raw() {
    check(
        vec![Reply::default().with_raw_tool_call("toolu_1", "edit", r#"{"path": "a.rs", "old"#)],
        1,
        expect![[r#"
            stop=ToolUse
            tool_call toolu_1 edit "{\"path\": \"a.rs\", \"old""#]],
    )
    .await;
}

#[tokio::test]
async fn usage_counts_cache_reads_and_writes_and_prices_them() {
    // 10 000 prompt tokens: 6 000 read from the cache, 3 000 written to it, 1 000 uncached.
    let reply = Reply::text("ok").with_usage(10_000, 500, 6_000).with_cache_write(3_000);
    let (message, _) = play(vec![reply], fast_options()).await;
    let usage = &message.usage;
    expect![[r#"input=1000 output=500 cache_read=6000 cache_write=3000 total=10500"#]].assert_eq(&format!(
        "input={} output={} cache_read={} cache_write={} total={}",
        usage.input, usage.output, usage.cache_read, usage.cache_write, usage.total_tokens
    ));
    // Per million tokens: 1 000 × $3 + 500 × $15 + 6 000 × $0.30 + 3 000 × $3.75.
    let expected = (1_000.0 * 3.0 + 500.0 * 15.0 + 6_000.0 * 0.3 + 3_000.0 * 3.75) / 1e6;
    assert!((usage.cost.total - expected).abs() < 1e-12, "{:?}", usage.cost);
    assert!((usage.cost.cache_write - 0.01125).abs() < 1e-12, "{:?}", usage.cost);
}

#[tokio::test]
async fn stop_reasons_map_to_reins_stop_reasons() {
    let mut seen = Vec::new();
    for reason in ["end_turn", "stop_sequence", "length", "refusal", "weird"] {
        let (message, _) = play(vec![Reply::text("x").with_finish_reason(reason)], fast_options()).await;
        let error = message.error.map(|error| format!(" {:?}: {}", error.kind, error.message)).unwrap_or_default();
        seen.push(format!("{reason}: {:?}{error}", message.stop_reason));
    }
    expect![[r#"
        end_turn: Stop
        stop_sequence: Stop
        length: Length
        refusal: Refusal
        weird: Error Protocol: the provider stopped with an unknown stop_reason "weird""#]]
    .assert_eq(&seen.join("\n"));
}

#[tokio::test]
async fn an_error_event_mid_stream_keeps_the_partial_content() {
    check(
        vec![Reply::text("partial").with_typed_stream_error("overloaded_error", "Overloaded"), Reply::text("never")],
        1,
        expect![[r#"
            stop=Error
            error=Stream status=None: the server reported an error mid-stream: Overloaded (overloaded_error)
            text "partial""#]],
    )
    .await;
}

#[tokio::test]
async fn an_overloaded_error_before_any_content_is_retried() {
    check(
        vec![Reply::default().with_typed_stream_error("overloaded_error", "Overloaded"), Reply::text("fine")],
        2,
        expect![[r#"
            stop=Stop
            text "fine""#]],
    )
    .await;
}

#[tokio::test]
async fn overloaded_529_is_retried_then_succeeds() {
    check(
        vec![Reply::http_error(529, "Overloaded"), Reply::text("ok")],
        2,
        expect![[r#"
            stop=Stop
            text "ok""#]],
    )
    .await;
}

#[tokio::test]
async fn rate_limit_honours_retry_after_and_retries_run_out() {
    // Retry-After: 0 instead of the 20 ms backoff cap would make no visible difference, so the
    // wait is asked to be long and must be capped at `max_delay`.
    let started = Instant::now();
    check(
        vec![Reply::http_error(429, "rate limited").with_retry_after(60).with_repeat(3)],
        3,
        expect![[r#"
            stop=Error
            error=Http status=Some(429): rate limited"#]],
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(5), "Retry-After must be capped: {:?}", started.elapsed());
}

#[tokio::test]
async fn unauthorized_is_an_auth_error_and_not_retried() {
    check(
        vec![Reply::http_error(401, "invalid x-api-key").with_repeat(3)],
        1,
        expect![[r#"
            stop=Error
            error=Auth status=Some(401): invalid x-api-key"#]],
    )
    .await;
}

#[tokio::test]
async fn prompt_too_long_is_a_context_overflow() {
    check(
        vec![Reply::http_error(400, "prompt is too long: 210000 tokens > 200000 maximum")],
        1,
        expect![[r#"
            stop=Error
            error=ContextOverflow status=Some(400): prompt is too long: 210000 tokens > 200000 maximum"#]],
    )
    .await;
}

#[tokio::test]
async fn cut_stream_keeps_the_partial_text_and_is_not_retried() {
    // Events: message_start, ping, the text block's start, "ab", "cd", then the socket closes.
    let replies = vec![Reply::text("abcdefgh").with_chunk_chars(2).with_cut_after_chunks(5), Reply::text("never")];
    let (message, requests) = play(replies, fast_options()).await;
    assert_eq!(requests, 1);
    let summary = summary(&message);
    let (head, _) = summary.split_once(" broke: ").unwrap();
    expect![[r#"
        stop=Error
        error=Stream status=None: the stream from http://127.0.0.1:PORT/v1/messages"#]]
    .assert_eq(head);
    assert!(summary.ends_with("\ntext \"abcd\""), "{summary}");
}

#[tokio::test]
async fn silence_past_the_idle_timeout_is_a_timeout() {
    let options = ClientOptions { idle_timeout: Duration::from_millis(100), ..fast_options() };
    let (message, _) = play(vec![Reply::text("abcdef").with_chunk_chars(2).with_chunk_delay_ms(400)], options).await;
    assert_eq!(
        (message.stop_reason, message.error.map(|error| error.kind)),
        (StopReason::Error, Some(ProviderErrorKind::Timeout))
    );
}

#[tokio::test]
async fn cancellation_aborts_the_call() {
    let server = ScriptedServer::start(vec![Reply::text("slow").with_delay_ms(10_000)]).await;
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        })
    };
    let request = request(&server.anthropic_base_url());
    let (message, _) = stream_with(&provider(fast_options()), &request, &cancel).await;
    canceller.await.unwrap();
    expect![[r#"
        stop=Aborted
        error=Aborted status=None: the model call was cancelled"#]]
    .assert_eq(&summary(&message));
}

#[tokio::test]
async fn request_body_caches_system_and_last_user_message_merges_tool_results_and_lists_tools() {
    let server = ScriptedServer::start(vec![Reply::text("done")]).await;
    let mut request = request(&server.anthropic_base_url());
    request.model.reasoning = true;
    request.max_tokens = Some(16_000);
    request.tools = vec![ToolSpec {
        name: "read".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }]
    .into();
    let call = |id: &str, path: &str| {
        Content::ToolCall(ToolCall { id: id.into(), name: "read".into(), arguments: json!({ "path": path }) })
    };
    let result = |id: &str, text: &str, is_error: bool| {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![Content::text(text)],
            is_error,
            details: None,
            timestamp: 0,
        })
    };
    request.messages.push(Message::Assistant(AssistantMessage {
        content: vec![
            Content::Thinking { thinking: "Two files.".into(), signature: Some("sig-1".into()) },
            call("toolu_1", "a.rs"),
            call("toolu_2", "missing.rs"),
        ],
        provider: "anthropic".into(),
        model: "claude-scripted".into(),
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    }));
    request.messages.push(result("toolu_1", "fn main() {}", false));
    request.messages.push(result("toolu_2", "error: no such file", true));
    stream_with(&provider(fast_options()), &request, &CancellationToken::new()).await;

    let recorded = server.messages_requests().remove(0);
    assert_eq!(recorded.path, "/v1/messages");
    assert_eq!(recorded.header("x-api-key"), Some(CANARY_KEY));
    assert_eq!(recorded.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(recorded.header("content-type"), Some("application/json"));
    assert_eq!(recorded.header("authorization"), None);
    expect![[r#"
        {
          "model": "claude-scripted",
          "max_tokens": 16000,
          "stream": true,
          "system": [
            {
              "type": "text",
              "text": "You are a test.",
              "cache_control": {
                "type": "ephemeral"
              }
            }
          ],
          "messages": [
            {
              "role": "user",
              "content": [
                {
                  "type": "text",
                  "text": "hello"
                }
              ]
            },
            {
              "role": "assistant",
              "content": [
                {
                  "type": "thinking",
                  "thinking": "Two files.",
                  "signature": "sig-1"
                },
                {
                  "type": "tool_use",
                  "id": "toolu_1",
                  "name": "read",
                  "input": {
                    "path": "a.rs"
                  }
                },
                {
                  "type": "tool_use",
                  "id": "toolu_2",
                  "name": "read",
                  "input": {
                    "path": "missing.rs"
                  }
                }
              ]
            },
            {
              "role": "user",
              "content": [
                {
                  "type": "tool_result",
                  "tool_use_id": "toolu_1",
                  "content": [
                    {
                      "type": "text",
                      "text": "fn main() {}"
                    }
                  ],
                  "is_error": false
                },
                {
                  "type": "tool_result",
                  "tool_use_id": "toolu_2",
                  "content": [
                    {
                      "type": "text",
                      "text": "error: no such file"
                    }
                  ],
                  "is_error": true,
                  "cache_control": {
                    "type": "ephemeral"
                  }
                }
              ]
            }
          ],
          "tools": [
            {
              "name": "read",
              "description": "Read a file.",
              "input_schema": {
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
          ],
          "thinking": {
            "type": "enabled",
            "budget_tokens": 8192
          }
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&recorded.body).unwrap());
}

#[tokio::test]
async fn max_tokens_defaults_to_the_models_max_output() {
    let server = ScriptedServer::start(vec![Reply::text("done")]).await;
    stream_with(&provider(fast_options()), &request(&server.anthropic_base_url()), &CancellationToken::new()).await;
    let body = &server.messages_requests()[0].body;
    assert_eq!((body["max_tokens"].as_u64(), body.get("thinking")), (Some(8192), None));
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

    // The server echoes the key, as an "invalid x-api-key" message might.
    let echo = format!("invalid x-api-key: {CANARY_KEY}");
    let provider = provider(fast_options());
    let replies = vec![Reply::http_error(529, echo.clone()).with_retry_after(0), Reply::http_error(401, echo)];
    let server = ScriptedServer::start(replies).await;
    let (message, _) = stream_with(&provider, &request(&server.anthropic_base_url()), &CancellationToken::new()).await;

    let error = message.error.clone().unwrap();
    assert_eq!(error.message, "invalid x-api-key: <redacted>");
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
