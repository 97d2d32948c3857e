//! The Anthropic Messages API mode: `POST /v1/messages` answered with named SSE events.

use expect_test::{Expect, expect};
use serde_json::{Value, json};

use super::raw_request;
use crate::{Reply, ScriptedServer};

fn messages_body(stream: bool) -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 100,
        "stream": stream,
        "system": [{ "type": "text", "text": "sys" }],
        "messages": [{ "role": "user", "content": [{ "type": "text", "text": "hi" }] }],
    })
}

/// Plays one reply to a streaming messages request and checks the SSE body.
async fn check_stream(reply: Reply, expected: Expect) {
    let server = ScriptedServer::start(vec![reply]).await;
    let response = raw_request(&server, "POST", "/v1/messages", Some(messages_body(true))).await;
    assert!(response.head.starts_with("HTTP/1.1 200 OK"), "{}", response.head);
    assert!(response.complete, "the body should end with the last chunk");
    assert_eq!(server.messages_requests().len(), 1);
    assert!(server.chat_requests().is_empty());
    expected.assert_eq(&response.body);
}

#[tokio::test]
async fn streams_redacted_thinking_thinking_text_and_tool_use_with_cache_usage() {
    check_stream(
        Reply::text("Hi")
            .with_thinking("hm")
            .with_thinking_signature("sig1")
            .with_redacted_thinking("opaque")
            .with_tool_call("toolu_1", "read", json!({"p": 1}))
            .with_chunk_chars(4)
            .with_usage(100, 7, 30)
            .with_cache_write(20),
        expect![[r#"
            event: message_start
            data: {"type":"message_start","message":{"id":"msg_scripted","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":50,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":1}}}

            event: ping
            data: {"type":"ping"}

            event: content_block_start
            data: {"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"opaque"}}

            event: content_block_stop
            data: {"type":"content_block_stop","index":0}

            event: content_block_start
            data: {"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}

            event: content_block_delta
            data: {"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm"}}

            event: content_block_delta
            data: {"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"sig1"}}

            event: content_block_stop
            data: {"type":"content_block_stop","index":1}

            event: content_block_start
            data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}

            event: content_block_delta
            data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Hi"}}

            event: content_block_stop
            data: {"type":"content_block_stop","index":2}

            event: content_block_start
            data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}

            event: content_block_delta
            data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"p\""}}

            event: content_block_delta
            data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":":1}"}}

            event: content_block_stop
            data: {"type":"content_block_stop","index":3}

            event: message_delta
            data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}}

            event: message_stop
            data: {"type":"message_stop"}

        "#]],
    )
    .await;
}

#[tokio::test]
async fn an_overloaded_error_event_replaces_the_message_end() {
    check_stream(
        Reply::text("ab").with_chunk_chars(2).with_typed_stream_error("overloaded_error", "Overloaded"),
        expect![[r#"
            event: message_start
            data: {"type":"message_start","message":{"id":"msg_scripted","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":15,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}

            event: ping
            data: {"type":"ping"}

            event: content_block_start
            data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

            event: content_block_delta
            data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ab"}}

            event: content_block_stop
            data: {"type":"content_block_stop","index":0}

            event: error
            data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}

        "#]],
    )
    .await;
}

#[tokio::test]
async fn finish_reasons_become_stop_reasons() {
    let mut seen = Vec::new();
    for reply in [
        Reply::text("x"),
        Reply::text("x").with_finish_reason("length"),
        Reply::text("x").with_finish_reason("refusal"),
    ] {
        let server = ScriptedServer::start(vec![reply]).await;
        let response = raw_request(&server, "POST", "/v1/messages", Some(messages_body(true))).await;
        let delta = response.body.lines().find(|line| line.contains(r#""type":"message_delta""#));
        seen.push(delta.unwrap_or("none").to_string());
    }
    expect![[r#"
        data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}
        data: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":1}}
        data: {"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null},"usage":{"output_tokens":1}}"#]]
    .assert_eq(&seen.join("\n"));
}

#[tokio::test]
async fn errors_have_anthropic_bodies_and_retry_after() {
    let server = ScriptedServer::start(vec![
        Reply::http_error(529, "Overloaded").with_retry_after(3),
        Reply::http_error(401, "invalid x-api-key"),
    ])
    .await;
    let mut seen = Vec::new();
    for _ in 0..2 {
        let response = raw_request(&server, "POST", "/v1/messages", Some(messages_body(true))).await;
        let status = response.head.lines().next().unwrap_or("").to_string();
        let retry_after = response.head.lines().find(|line| line.starts_with("Retry-After")).unwrap_or("-").to_string();
        seen.push(format!("{status} | {retry_after} | {}", response.body));
    }
    expect![[r#"
        HTTP/1.1 529 Overloaded | Retry-After: 3 | {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}
        HTTP/1.1 401 Unauthorized | - | {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#]]
    .assert_eq(&seen.join("\n"));
}

#[tokio::test]
async fn non_streaming_request_gets_a_whole_message() {
    let server =
        ScriptedServer::start(vec![Reply::text("hi there").with_tool_call("toolu_1", "ls", json!({"path": "."}))])
            .await;
    let response = raw_request(&server, "POST", "/v1/messages", Some(messages_body(false))).await;
    expect![[r#"{"id":"msg_scripted","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"hi there"},{"type":"tool_use","id":"toolu_1","name":"ls","input":{"path":"."}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":15,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}}"#]]
    .assert_eq(&response.body);
}
