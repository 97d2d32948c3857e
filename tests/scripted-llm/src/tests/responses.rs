//! The OpenAI Responses API mode: `POST /v1/responses` answered with named SSE events (Codex).

use expect_test::{Expect, expect};
use serde_json::{Value, json};

use super::raw_request;
use crate::{Reply, ScriptedServer};

fn responses_body(stream: bool) -> Value {
    json!({
        "model": "gpt-test",
        "stream": stream,
        "instructions": "sys",
        "input": [{ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "hi" }] }],
    })
}

/// Plays one reply to a streaming responses request and checks the SSE body.
async fn check_stream(reply: Reply, expected: Expect) {
    let server = ScriptedServer::start(vec![reply]).await;
    let response = raw_request(&server, "POST", "/v1/responses", Some(responses_body(true))).await;
    assert!(response.head.starts_with("HTTP/1.1 200 OK"), "{}", response.head);
    assert!(response.head.contains("text/event-stream"), "{}", response.head);
    assert!(response.complete, "the body should end with the last chunk");
    assert_eq!(server.remaining(), 0);
    expected.assert_eq(&response.body);
}

#[tokio::test]
async fn streams_reasoning_text_and_a_function_call_then_completes_with_usage() {
    check_stream(
        Reply::text("Hi!")
            .with_thinking("hm")
            .with_tool_call("call_1", "exec_command", json!({"cmd": "ls"}))
            .with_chunk_chars(2)
            .with_usage(100, 7, 30),
        expect![[r#"
            event: response.created
            data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_scripted","object":"response","created_at":0,"status":"in_progress","model":"gpt-test","output":[]}}

            event: response.in_progress
            data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_scripted","object":"response","created_at":0,"status":"in_progress","model":"gpt-test","output":[]}}

            event: response.output_item.added
            data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"reasoning","id":"rs_scripted","summary":[]}}

            event: response.reasoning_summary_text.delta
            data: {"type":"response.reasoning_summary_text.delta","sequence_number":3,"item_id":"rs_scripted","output_index":0,"summary_index":0,"delta":"hm"}

            event: response.output_item.done
            data: {"type":"response.output_item.done","sequence_number":4,"output_index":0,"item":{"type":"reasoning","id":"rs_scripted","summary":[{"type":"summary_text","text":"hm"}]}}

            event: response.output_item.added
            data: {"type":"response.output_item.added","sequence_number":5,"output_index":1,"item":{"type":"message","id":"msg_scripted","role":"assistant","status":"in_progress","content":[]}}

            event: response.content_part.added
            data: {"type":"response.content_part.added","sequence_number":6,"item_id":"msg_scripted","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}

            event: response.output_text.delta
            data: {"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_scripted","output_index":1,"content_index":0,"delta":"Hi"}

            event: response.output_text.delta
            data: {"type":"response.output_text.delta","sequence_number":8,"item_id":"msg_scripted","output_index":1,"content_index":0,"delta":"!"}

            event: response.output_text.done
            data: {"type":"response.output_text.done","sequence_number":9,"item_id":"msg_scripted","output_index":1,"content_index":0,"text":"Hi!"}

            event: response.output_item.done
            data: {"type":"response.output_item.done","sequence_number":10,"output_index":1,"item":{"type":"message","id":"msg_scripted","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hi!","annotations":[]}]}}

            event: response.output_item.added
            data: {"type":"response.output_item.added","sequence_number":11,"output_index":2,"item":{"type":"function_call","id":"fc_0","call_id":"call_1","name":"exec_command","arguments":"","status":"in_progress"}}

            event: response.function_call_arguments.delta
            data: {"type":"response.function_call_arguments.delta","sequence_number":12,"item_id":"fc_0","output_index":2,"delta":"{\""}

            event: response.function_call_arguments.delta
            data: {"type":"response.function_call_arguments.delta","sequence_number":13,"item_id":"fc_0","output_index":2,"delta":"cm"}

            event: response.function_call_arguments.delta
            data: {"type":"response.function_call_arguments.delta","sequence_number":14,"item_id":"fc_0","output_index":2,"delta":"d\""}

            event: response.function_call_arguments.delta
            data: {"type":"response.function_call_arguments.delta","sequence_number":15,"item_id":"fc_0","output_index":2,"delta":":\""}

            event: response.function_call_arguments.delta
            data: {"type":"response.function_call_arguments.delta","sequence_number":16,"item_id":"fc_0","output_index":2,"delta":"ls"}

            event: response.function_call_arguments.delta
            data: {"type":"response.function_call_arguments.delta","sequence_number":17,"item_id":"fc_0","output_index":2,"delta":"\"}"}

            event: response.output_item.done
            data: {"type":"response.output_item.done","sequence_number":18,"output_index":2,"item":{"type":"function_call","id":"fc_0","call_id":"call_1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","status":"completed"}}

            event: response.completed
            data: {"type":"response.completed","sequence_number":19,"response":{"id":"resp_scripted","object":"response","created_at":0,"status":"completed","model":"gpt-test","output":[{"type":"reasoning","id":"rs_scripted","summary":[{"type":"summary_text","text":"hm"}]},{"type":"message","id":"msg_scripted","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hi!","annotations":[]}]},{"type":"function_call","id":"fc_0","call_id":"call_1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","status":"completed"}],"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":30},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":107}}}

        "#]],
    )
    .await;
}

#[tokio::test]
async fn a_stream_error_ends_the_stream_with_response_failed() {
    let mut reply = Reply::text("Hi");
    reply.stream_error = Some(json!({ "type": "server_error", "message": "overloaded" }));
    check_stream(reply, expect![[r#"
        event: response.created
        data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_scripted","object":"response","created_at":0,"status":"in_progress","model":"gpt-test","output":[]}}

        event: response.in_progress
        data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_scripted","object":"response","created_at":0,"status":"in_progress","model":"gpt-test","output":[]}}

        event: response.output_item.added
        data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"message","id":"msg_scripted","role":"assistant","status":"in_progress","content":[]}}

        event: response.content_part.added
        data: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_scripted","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}

        event: response.output_text.delta
        data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_scripted","output_index":0,"content_index":0,"delta":"Hi"}

        event: response.output_text.done
        data: {"type":"response.output_text.done","sequence_number":5,"item_id":"msg_scripted","output_index":0,"content_index":0,"text":"Hi"}

        event: response.output_item.done
        data: {"type":"response.output_item.done","sequence_number":6,"output_index":0,"item":{"type":"message","id":"msg_scripted","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hi","annotations":[]}]}}

        event: response.failed
        data: {"type":"response.failed","sequence_number":7,"response":{"id":"resp_scripted","object":"response","created_at":0,"status":"failed","model":"gpt-test","output":[],"error":{"code":"server_error","message":"overloaded"}}}

    "#]]).await;
}

#[tokio::test]
async fn a_request_that_does_not_stream_gets_the_whole_response() {
    let server = ScriptedServer::start(vec![Reply::tool_call("call_7", "read", json!({"path": "a"}))]).await;
    let response = raw_request(&server, "POST", "/v1/responses", Some(responses_body(false))).await;
    assert!(response.head.starts_with("HTTP/1.1 200 OK"), "{}", response.head);
    let body: Value = serde_json::from_str(&response.body).unwrap();
    expect![[r#"
        {
          "id": "resp_scripted",
          "object": "response",
          "created_at": 0,
          "status": "completed",
          "model": "gpt-test",
          "output": [
            {
              "type": "function_call",
              "id": "fc_0",
              "call_id": "call_7",
              "name": "read",
              "arguments": "{\"path\":\"a\"}",
              "status": "completed"
            }
          ],
          "usage": {
            "input_tokens": 21,
            "input_tokens_details": {
              "cached_tokens": 0
            },
            "output_tokens": 3,
            "output_tokens_details": {
              "reasoning_tokens": 0
            },
            "total_tokens": 24
          }
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&body).unwrap());
}

#[tokio::test]
async fn an_exhausted_script_is_a_server_error() {
    let server = ScriptedServer::start(Vec::new()).await;
    let response = raw_request(&server, "POST", "/v1/responses", Some(responses_body(true))).await;
    assert!(response.head.starts_with("HTTP/1.1 500"), "{}", response.head);
    assert!(response.body.contains("script exhausted"), "{}", response.body);
}
