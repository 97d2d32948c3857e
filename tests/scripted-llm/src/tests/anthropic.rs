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
            data: {"message":{"content":[],"id":"msg_scripted","model":"claude-test","role":"assistant","stop_reason":null,"stop_sequence":null,"type":"message","usage":{"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"input_tokens":50,"output_tokens":1}},"type":"message_start"}

            event: ping
            data: {"type":"ping"}

            event: content_block_start
            data: {"content_block":{"data":"opaque","type":"redacted_thinking"},"index":0,"type":"content_block_start"}

            event: content_block_stop
            data: {"index":0,"type":"content_block_stop"}

            event: content_block_start
            data: {"content_block":{"signature":"","thinking":"","type":"thinking"},"index":1,"type":"content_block_start"}

            event: content_block_delta
            data: {"delta":{"thinking":"hm","type":"thinking_delta"},"index":1,"type":"content_block_delta"}

            event: content_block_delta
            data: {"delta":{"signature":"sig1","type":"signature_delta"},"index":1,"type":"content_block_delta"}

            event: content_block_stop
            data: {"index":1,"type":"content_block_stop"}

            event: content_block_start
            data: {"content_block":{"text":"","type":"text"},"index":2,"type":"content_block_start"}

            event: content_block_delta
            data: {"delta":{"text":"Hi","type":"text_delta"},"index":2,"type":"content_block_delta"}

            event: content_block_stop
            data: {"index":2,"type":"content_block_stop"}

            event: content_block_start
            data: {"content_block":{"id":"toolu_1","input":{},"name":"read","type":"tool_use"},"index":3,"type":"content_block_start"}

            event: content_block_delta
            data: {"delta":{"partial_json":"{\"p\"","type":"input_json_delta"},"index":3,"type":"content_block_delta"}

            event: content_block_delta
            data: {"delta":{"partial_json":":1}","type":"input_json_delta"},"index":3,"type":"content_block_delta"}

            event: content_block_stop
            data: {"index":3,"type":"content_block_stop"}

            event: message_delta
            data: {"delta":{"stop_reason":"tool_use","stop_sequence":null},"type":"message_delta","usage":{"output_tokens":7}}

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
            data: {"message":{"content":[],"id":"msg_scripted","model":"claude-test","role":"assistant","stop_reason":null,"stop_sequence":null,"type":"message","usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":15,"output_tokens":1}},"type":"message_start"}

            event: ping
            data: {"type":"ping"}

            event: content_block_start
            data: {"content_block":{"text":"","type":"text"},"index":0,"type":"content_block_start"}

            event: content_block_delta
            data: {"delta":{"text":"ab","type":"text_delta"},"index":0,"type":"content_block_delta"}

            event: content_block_stop
            data: {"index":0,"type":"content_block_stop"}

            event: error
            data: {"error":{"message":"Overloaded","type":"overloaded_error"},"type":"error"}

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
        data: {"delta":{"stop_reason":"end_turn","stop_sequence":null},"type":"message_delta","usage":{"output_tokens":1}}
        data: {"delta":{"stop_reason":"max_tokens","stop_sequence":null},"type":"message_delta","usage":{"output_tokens":1}}
        data: {"delta":{"stop_reason":"refusal","stop_sequence":null},"type":"message_delta","usage":{"output_tokens":1}}"#]]
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
        HTTP/1.1 529 Overloaded | Retry-After: 3 | {"error":{"message":"Overloaded","type":"overloaded_error"},"type":"error"}
        HTTP/1.1 401 Unauthorized | - | {"error":{"message":"invalid x-api-key","type":"authentication_error"},"type":"error"}"#]]
    .assert_eq(&seen.join("\n"));
}

#[tokio::test]
async fn non_streaming_request_gets_a_whole_message() {
    let server =
        ScriptedServer::start(vec![Reply::text("hi there").with_tool_call("toolu_1", "ls", json!({"path": "."}))])
            .await;
    let response = raw_request(&server, "POST", "/v1/messages", Some(messages_body(false))).await;
    expect![[r#"{"content":[{"text":"hi there","type":"text"},{"id":"toolu_1","input":{"path":"."},"name":"ls","type":"tool_use"}],"id":"msg_scripted","model":"claude-test","role":"assistant","stop_reason":"tool_use","stop_sequence":null,"type":"message","usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":15,"output_tokens":5}}"#]]
    .assert_eq(&response.body);
}
