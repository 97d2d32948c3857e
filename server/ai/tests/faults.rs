//! The provider fault matrix: every way a server was seen to misbehave, scripted on 127.0.0.1 and
//! played to both providers. Each fault must end in a retry that succeeds or a clean error that
//! says what happened, within its bound, keeping whatever content had arrived.

use std::time::{Duration, Instant};

use expect_test::{Expect, expect};
use reins_ai::{
    Anthropic, ApiKey, AssistantMessage, ClientOptions, Content, Message, Model, OpenAiCompatible, Prices, Provider,
    Request,
};
use scripted_llm::{Fault, RecordedRequest, Reply, ScriptedServer};
use tokio_util::sync::CancellationToken;

/// The idle timeout of the matrix: every silence or keep-alive-only fault ends soon after it.
const IDLE: Duration = Duration::from_millis(400);
/// No fault may take longer than this (retries included). It tells a hang from an answer, not
/// speed: on a loaded 2-core machine a 32k-event stream alone took over 5 s.
const BOUND: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, Debug)]
enum Api {
    OpenAi,
    Anthropic,
}

/// A retry's delay is capped at 20 ms, whatever Retry-After says, so the matrix stays fast.
fn options() -> ClientOptions {
    ClientOptions {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: IDLE,
        max_retries: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
        final_refusal_urls: Vec::new(),
    }
}

fn request(api: Api, server: &ScriptedServer) -> Request {
    let base_url = match api {
        Api::OpenAi => server.base_url(),
        Api::Anthropic => server.anthropic_base_url(),
    };
    Request {
        model: Model {
            id: "scripted-model".into(),
            provider: "scripted".into(),
            base_url,
            context_window: 100_000,
            // Small, so that the endless stream reaches the output cap (4096 tokens at least) soon.
            max_output: 1000,
            prices: Prices::default(),
            reasoning: false,
            compat: Default::default(),
        },
        system_prompt: "You are a test.".into(),
        messages: vec![Message::user("hello")].into(),
        tools: Vec::new().into(),
        max_tokens: None,
        thinking: None,
    }
}

/// Plays `replies` to one request of `api`: the message, the requests the server got, how long.
async fn play(api: Api, replies: Vec<Reply>) -> (AssistantMessage, Vec<RecordedRequest>, Duration) {
    let server = ScriptedServer::start(replies).await;
    let request = request(api, &server);
    let sink = |_| {};
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let message = match api {
        Api::OpenAi => OpenAiCompatible::new(ApiKey::new("sk-test"), options()).stream(&request, &sink, &cancel).await,
        Api::Anthropic => Anthropic::new(ApiKey::new("sk-test"), options()).stream(&request, &sink, &cancel).await,
    };
    (message, server.requests(), started.elapsed())
}

/// `requests: stop [error kind: message] [text (length)]`, ports redacted.
fn summary(message: &AssistantMessage, requests: usize) -> String {
    let mut line = format!("{requests} requests, stop={:?}", message.stop_reason);
    if let Some(error) = &message.error {
        let status = error.status.map(|status| format!(" {status}")).unwrap_or_default();
        line.push_str(&format!(", {:?}{status}: {}", error.kind, error.message));
    }
    for block in &message.content {
        if let Content::Text { text } = block {
            let shown: String = text.chars().take(24).collect();
            line.push_str(&format!(", text {shown:?} ({} bytes)", text.len()));
        }
    }
    redact_port(&line)
}

/// Plays each fault (built per API) to both providers and checks the table of outcomes.
async fn check(fault: impl Fn(Api) -> Vec<Reply>, expected: Expect) {
    let mut lines = Vec::new();
    for api in [Api::OpenAi, Api::Anthropic] {
        let (message, requests, took) = play(api, fault(api)).await;
        let summary = summary(&message, requests.len());
        assert!(took < BOUND, "{api:?} took {took:?}: {summary}");
        lines.push(format!("{api:?}: {summary}"));
    }
    expected.assert_eq(&lines.join("\n"));
}

fn fault(fault: Fault) -> Reply {
    Reply::fault(fault)
}

fn ok() -> Reply {
    Reply::text("fine")
}

#[tokio::test]
async fn keep_alives_alone_do_not_hold_off_the_idle_timeout() {
    check(
        |_| vec![fault(Fault::KeepAliveOnly { every_ms: 50 })],
        expect![[r#"
            OpenAi: 1 requests, stop=Error, Timeout: http://127.0.0.1:PORT/v1/chat/completions sent only keep-alives, no content, for 0.4 s (the idle timeout)
            Anthropic: 1 requests, stop=Error, Timeout: http://127.0.0.1:PORT/v1/messages sent only keep-alives, no content, for 0.4 s (the idle timeout)"#]],
    )
    .await;
}

#[tokio::test]
async fn events_that_carry_nothing_do_not_hold_off_the_idle_timeout() {
    check(
        |api| {
            let chunk = match api {
                Api::OpenAi => r#"data: {"choices":[{"index":0,"delta":{}}]}"#.to_string() + "\n\n",
                Api::Anthropic => "event: heartbeat\ndata: {\"type\": \"heartbeat\"}\n\n".to_string(),
            };
            vec![fault(Fault::Repeat { chunk, every_ms: 50 })]
        },
        expect![[r#"
            OpenAi: 1 requests, stop=Error, Timeout: http://127.0.0.1:PORT/v1/chat/completions sent only keep-alives, no content, for 0.4 s (the idle timeout)
            Anthropic: 1 requests, stop=Error, Timeout: http://127.0.0.1:PORT/v1/messages sent only keep-alives, no content, for 0.4 s (the idle timeout)"#]],
    )
    .await;
}

#[tokio::test]
async fn usage_alone_does_not_hold_off_the_idle_timeout() {
    // A usage count once a second kept `reins run` waiting for ever (issue 24, item 8).
    check(
        |api| {
            let chunk = match api {
                Api::OpenAi => {
                    r#"data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}"#
                        .to_string()
                        + "\n\n"
                }
                Api::Anthropic => {
                    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":1}}\n\n"
                        .to_string()
                }
            };
            vec![fault(Fault::Repeat { chunk, every_ms: 50 })]
        },
        expect![[r#"
            OpenAi: 1 requests, stop=Error, Timeout: http://127.0.0.1:PORT/v1/chat/completions sent only keep-alives, no content, for 0.4 s (the idle timeout)
            Anthropic: 1 requests, stop=Error, Timeout: http://127.0.0.1:PORT/v1/messages sent only keep-alives, no content, for 0.4 s (the idle timeout)"#]],
    )
    .await;
}

#[tokio::test]
async fn endless_events_that_add_no_text_are_cut_at_the_event_cap() {
    check(
        |api| {
            let chunk = match api {
                Api::OpenAi => {
                    r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]}}]}"#.to_string() + "\n\n"
                }
                Api::Anthropic => {
                    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n".to_string()
                }
            };
            vec![fault(Fault::Repeat { chunk: chunk.repeat(64), every_ms: 0 })]
        },
        expect![[r#"
            OpenAi: 1 requests, stop=Error, Stream: http://127.0.0.1:PORT/v1/chat/completions sent over 32768 events without finishing, far past the 1000-token output limit asked for; stopped reading
            Anthropic: 1 requests, stop=Error, Stream: http://127.0.0.1:PORT/v1/messages sent over 32768 events without finishing, far past the 1000-token output limit asked for; stopped reading"#]],
    )
    .await;
}

#[tokio::test]
async fn a_line_that_never_ends_is_cut_and_quoted() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let chunk = "data: ".to_string() + &"x".repeat(4096);
        let (message, requests, took) = play(api, vec![fault(Fault::Repeat { chunk, every_ms: 1 })]).await;
        assert!(took < BOUND, "{api:?} took {took:?}");
        let summary = summary(&message, requests.len());
        assert!(
            summary.starts_with("1 requests, stop=Error, Stream: http://127.0.0.1:PORT/")
                && summary.contains(" sent over 65 KB that do not end an event; stopped reading. It answered with Content-Type text/event-stream, ")
                && summary.contains(r#" bytes: "data: xxxxxxxx"#),
            "{api:?}: {summary}"
        );
    }
}

#[tokio::test]
async fn an_endless_stream_is_cut_at_the_output_cap_keeping_the_text() {
    // The request asked for the model's output limit, which the server ignores.
    for api in [Api::OpenAi, Api::Anthropic] {
        let (_, requests, _) = play(api, vec![ok()]).await;
        assert_eq!(requests[0].body["max_tokens"], 1000, "{api:?}");
    }
    check(
        |_| vec![fault(Fault::Endless { every_ms: 0 })],
        expect![[r#"
            OpenAi: 1 requests, stop=Error, Stream: http://127.0.0.1:PORT/v1/chat/completions sent over 65 KB of output without finishing, far past the 1000-token output limit asked for; stopped reading, text "endless endless endless " (65544 bytes)
            Anthropic: 1 requests, stop=Error, Stream: http://127.0.0.1:PORT/v1/messages sent over 65 KB of output without finishing, far past the 1000-token output limit asked for; stopped reading, text "endless endless endless " (65544 bytes)"#]],
    )
    .await;
}

#[tokio::test]
async fn a_success_status_without_an_event_stream_says_what_came() {
    let body = |content_type: &str, body: &str| {
        fault(Fault::Body { status: 200, content_type: content_type.into(), body: body.into() })
    };
    let html = "<!DOCTYPE html><html><head><title>Sign in to the network</title></head><body>…</body></html>";
    check(
        |_| vec![body("text/html; charset=utf-8", html)],
        expect![[r#"
            OpenAi: 1 requests, stop=Error, Protocol: http://127.0.0.1:PORT/v1/chat/completions answered with Content-Type text/html; charset=utf-8, 94 bytes: "<!DOCTYPE html><html><head><title>Sign in to the network</title></head><body>…</body></html>" instead of a stream of completion events
            Anthropic: 1 requests, stop=Error, Protocol: http://127.0.0.1:PORT/v1/messages answered with Content-Type text/html; charset=utf-8, 94 bytes: "<!DOCTYPE html><html><head><title>Sign in to the network</title></head><body>…</body></html>" instead of a stream of completion events"#]],
    )
    .await;
    check(
        |_| vec![body("application/json", r#"{"error":{"message":"no such model"}}"#)],
        expect![[r#"
            OpenAi: 1 requests, stop=Error, Protocol: http://127.0.0.1:PORT/v1/chat/completions answered with Content-Type application/json, 37 bytes: "{\"error\":{\"message\":\"no such model\"}}" instead of a stream of completion events
            Anthropic: 1 requests, stop=Error, Protocol: http://127.0.0.1:PORT/v1/messages answered with Content-Type application/json, 37 bytes: "{\"error\":{\"message\":\"no such model\"}}" instead of a stream of completion events"#]],
    )
    .await;
    check(
        |_| vec![body("text/event-stream", "")],
        expect![[r#"
            OpenAi: 1 requests, stop=Error, Protocol: http://127.0.0.1:PORT/v1/chat/completions answered with an empty body instead of a stream of completion events
            Anthropic: 1 requests, stop=Error, Protocol: http://127.0.0.1:PORT/v1/messages answered with an empty body instead of a stream of completion events"#]],
    )
    .await;
}

#[tokio::test]
async fn rate_limits_and_overload_are_retried_honouring_retry_after() {
    check(
        |_| vec![Reply::http_error(429, "slow down").with_retry_after(30), Reply::http_error(529, "overloaded"), ok()],
        expect![[r#"
            OpenAi: 3 requests, stop=Stop, text "fine" (4 bytes)
            Anthropic: 3 requests, stop=Stop, text "fine" (4 bytes)"#]],
    )
    .await;
}

#[tokio::test]
async fn server_errors_are_retried_and_then_reported() {
    check(
        |_| vec![Reply::http_error(502, "bad gateway"), ok()],
        expect![[r#"
            OpenAi: 2 requests, stop=Stop, text "fine" (4 bytes)
            Anthropic: 2 requests, stop=Stop, text "fine" (4 bytes)"#]],
    )
    .await;
    check(
        |_| vec![Reply::http_error(503, "down"); 3],
        expect![[r#"
            OpenAi: 3 requests, stop=Error, Http 503: down
            Anthropic: 3 requests, stop=Error, Http 503: down"#]],
    )
    .await;
}

#[tokio::test]
async fn a_reset_before_the_headers_is_retried() {
    check(
        |_| vec![fault(Fault::ResetBeforeHeaders), ok()],
        expect![[r#"
            OpenAi: 2 requests, stop=Stop, text "fine" (4 bytes)
            Anthropic: 2 requests, stop=Stop, text "fine" (4 bytes)"#]],
    )
    .await;
}

#[tokio::test]
async fn a_cut_mid_stream_keeps_the_text_and_is_not_retried() {
    check(
        |api| {
            // Past the role chunk (OpenAI) or message_start, ping and block start (Anthropic).
            let events = match api {
                Api::OpenAi => 3,
                Api::Anthropic => 5,
            };
            vec![Reply::text("partial answer").with_chunk_chars(4).with_cut_after_chunks(events), ok()]
        },
        expect![[r#"
            OpenAi: 1 requests, stop=Error, Stream: the stream from http://127.0.0.1:PORT/v1/chat/completions broke: error decoding response body: error reading a body from connection: unexpected EOF during chunk size line, text "partial " (8 bytes)
            Anthropic: 1 requests, stop=Error, Stream: the stream from http://127.0.0.1:PORT/v1/messages broke: error decoding response body: error reading a body from connection: unexpected EOF during chunk size line, text "partial " (8 bytes)"#]],
    )
    .await;
}

#[tokio::test]
async fn stalls_before_and_after_the_headers_end_at_the_idle_timeout() {
    check(
        |_| vec![fault(Fault::StallBeforeHeaders)],
        expect![[r#"
            OpenAi: 1 requests, stop=Error, Timeout: http://127.0.0.1:PORT/v1/chat/completions sent nothing for 0.4 s (the idle timeout)
            Anthropic: 1 requests, stop=Error, Timeout: http://127.0.0.1:PORT/v1/messages sent nothing for 0.4 s (the idle timeout)"#]],
    )
    .await;
    check(
        |_| vec![fault(Fault::StallAfterHeaders)],
        expect![[r#"
            OpenAi: 1 requests, stop=Error, Timeout: http://127.0.0.1:PORT/v1/chat/completions sent nothing for 0.4 s (the idle timeout)
            Anthropic: 1 requests, stop=Error, Timeout: http://127.0.0.1:PORT/v1/messages sent nothing for 0.4 s (the idle timeout)"#]],
    )
    .await;
}

fn redact_port(text: &str) -> String {
    let marker = "127.0.0.1:";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at + marker.len()]);
        rest = rest[at + marker.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push_str("PORT");
    }
    out.push_str(rest);
    out
}
