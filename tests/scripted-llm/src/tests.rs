//! Tests of the server over a raw TCP client, so what is checked is exactly what goes on the wire.

use expect_test::{Expect, expect};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{Reply, ScriptedServer};

/// The Anthropic mode, over the same raw client.
mod anthropic;
mod responses;

/// A raw HTTP exchange: the response head and its (de-chunked) body.
struct RawResponse {
    head: String,
    body: String,
    /// Whether a chunked body ended with its last chunk (false: the server cut it).
    complete: bool,
}

/// Sends one request with `Connection: close` and reads the response to the end of the stream.
async fn raw_request(server: &ScriptedServer, method: &str, path: &str, body: Option<Value>) -> RawResponse {
    let mut stream = TcpStream::connect(server.address()).await.unwrap();
    let body = body.map(|value| value.to_string()).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        let (body, complete) = dechunk(rest);
        RawResponse { head: head.to_string(), body, complete }
    } else {
        RawResponse { head: head.to_string(), body: rest.to_string(), complete: true }
    }
}

fn dechunk(mut rest: &str) -> (String, bool) {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size, 16).unwrap();
        if size == 0 {
            return (body, true);
        }
        body.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    (body, false)
}

fn chat_body(stream: bool) -> Value {
    json!({
        "model": "m",
        "stream": stream,
        "stream_options": { "include_usage": true },
        "messages": [{ "role": "user", "content": "hi" }],
    })
}

/// Plays one reply to a streaming request and checks the SSE body.
async fn check_stream(reply: Reply, expected: Expect) {
    let server = ScriptedServer::start(vec![reply]).await;
    let response = raw_request(&server, "POST", "/v1/chat/completions", Some(chat_body(true))).await;
    assert!(response.head.starts_with("HTTP/1.1 200 OK"), "{}", response.head);
    assert!(response.complete, "the body should end with the last chunk");
    expected.assert_eq(&response.body);
}

#[tokio::test]
async fn streams_text_in_pieces_with_usage_and_done() {
    check_stream(
        Reply::text("Hello").with_chunk_chars(2).with_usage(10, 2, 4),
        expect![[r#"
            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"He"},"finish_reason":null}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"ll"},"finish_reason":null}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"o"},"finish_reason":null}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4}}}

            data: [DONE]

        "#]],
    )
    .await;
}

#[tokio::test]
async fn streams_thinking_and_tool_calls_reusing_index_zero() {
    check_stream(
        Reply::tool_call("a", "read", json!({"p": 1}))
            .with_tool_call("", "ls", json!({}))
            .with_thinking("hm")
            .with_reasoning_field()
            .with_reused_index_zero()
            .with_chunk_chars(4),
        expect![[r#"
            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"reasoning":"hm"},"finish_reason":null}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read","arguments":""}}]},"finish_reason":null}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"p\""}}]},"finish_reason":null}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":null}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"ls","arguments":""}}]},"finish_reason":null}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":null}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

            data: {"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4,"prompt_tokens_details":{"cached_tokens":0}}}

            data: [DONE]

        "#]],
    )
    .await;
}

#[tokio::test]
async fn wire_quirks_keep_alive_no_space_error_payload_and_crlf() {
    check_stream(
        Reply::text("x").with_keep_alive().with_no_space().with_stream_error("overloaded"),
        expect![[r#"
            : keep-alive

            data:{"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

            : keep-alive

            data:{"id":"chatcmpl-scripted","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}

            : keep-alive

            data:{"error":{"message":"overloaded","type":"server_error"}}

        "#]],
    )
    .await;
    // The snapshot cannot show `\r`, so line ends get their own check.
    let server = ScriptedServer::start(vec![Reply::text("x").with_crlf()]).await;
    let response = raw_request(&server, "POST", "/v1/chat/completions", Some(chat_body(true))).await;
    assert!(response.body.ends_with("data: [DONE]\r\n\r\n"), "{:?}", response.body);
}

#[tokio::test]
async fn error_reply_has_status_retry_after_and_openai_body() {
    let server = ScriptedServer::start(vec![Reply::http_error(429, "slow down").with_retry_after(7)]).await;
    let response = raw_request(&server, "POST", "/v1/chat/completions", Some(chat_body(true))).await;
    expect![[r#"
        HTTP/1.1 429 Too Many Requests
        Content-Type: application/json
        Content-Length: 71
        Retry-After: 7
        {"error":{"message":"slow down","type":"rate_limit_error","code":null}}"#]]
    .assert_eq(&format!("{}\n{}", response.head.replace("\r\n", "\n"), response.body));
}

#[tokio::test]
async fn cut_closes_the_socket_after_n_events_without_finishing_the_body() {
    let server =
        ScriptedServer::start(vec![Reply::text("abcdefghij").with_chunk_chars(1).with_cut_after_chunks(3)]).await;
    let response = raw_request(&server, "POST", "/v1/chat/completions", Some(chat_body(true))).await;
    assert!(!response.complete, "a cut body must not end with the last chunk");
    assert_eq!(response.body.matches("data: ").count(), 3, "{}", response.body);
    assert!(!response.body.contains("[DONE]"));
}

#[tokio::test]
async fn exhausted_script_answers_500_and_repeat_plays_a_reply_again() {
    let server = ScriptedServer::start(vec![Reply::text("again").with_repeat(2)]).await;
    let statuses: Vec<String> = {
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let response = raw_request(&server, "POST", "/v1/chat/completions", Some(chat_body(false))).await;
            statuses.push(format!("{} {}", &response.head[9..12], response.body.contains("again")));
        }
        let response = raw_request(&server, "POST", "/v1/chat/completions", Some(chat_body(false))).await;
        assert!(response.body.contains("script exhausted"), "{}", response.body);
        statuses
    };
    assert_eq!(statuses, ["200 true", "200 true", "500 false"]);
}

#[tokio::test]
async fn non_streaming_request_gets_a_json_completion() {
    let server =
        ScriptedServer::start(vec![Reply::text("hi there").with_tool_call("c1", "ls", json!({"path": "."}))]).await;
    let response = raw_request(&server, "POST", "/v1/chat/completions", Some(chat_body(false))).await;
    let completion: Value = serde_json::from_str(&response.body).unwrap();
    expect![[r#"{"role":"assistant","content":"hi there","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}"}}]}"#]]
        .assert_eq(&completion["choices"][0]["message"].to_string());
    assert_eq!(completion["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn records_requests_and_lists_models() {
    let server = ScriptedServer::start(vec![Reply::text("ok")]).await;
    let models = raw_request(&server, "GET", "/v1/models", None).await;
    assert!(models.body.contains(r#""id":"scripted""#), "{}", models.body);
    raw_request(&server, "POST", "/v1/chat/completions", Some(chat_body(true))).await;
    let requests = server.requests();
    let summary: Vec<String> = requests
        .iter()
        .map(|request| {
            format!(
                "{} {} auth={:?} model={}",
                request.method,
                request.path,
                request.header("Authorization"),
                request.body["model"]
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            "GET /v1/models auth=Some(\"Bearer k\") model=null",
            "POST /v1/chat/completions auth=Some(\"Bearer k\") model=\"m\""
        ]
    );
    assert_eq!(server.chat_requests().len(), 1);
}

#[tokio::test]
async fn push_appends_to_a_running_script() {
    let server = ScriptedServer::start(Vec::new()).await;
    server.push(Reply::text("late"));
    let response = raw_request(&server, "POST", "/v1/chat/completions", Some(chat_body(false))).await;
    assert!(response.body.contains("late"), "{}", response.body);
}

#[test]
fn replies_deserialize_from_a_camel_case_script() {
    let replies: Vec<Reply> = serde_json::from_str(
        r#"[
            {"text": "hi", "chunkChars": 1, "cutAfterChunks": 2, "finishReason": "length"},
            {"toolCalls": [{"id": "c", "name": "read", "rawArguments": "{bad"}], "reuseIndexZero": true},
            {"error": {"status": 503, "message": "busy", "retryAfter": 1}, "repeat": 3}
        ]"#,
    )
    .unwrap();
    let expected = vec![
        Reply::text("hi").with_chunk_chars(1).with_cut_after_chunks(2).with_finish_reason("length"),
        Reply::default().with_raw_tool_call("c", "read", "{bad").with_reused_index_zero(),
        Reply::http_error(503, "busy").with_retry_after(1).with_repeat(3),
    ];
    assert_eq!(replies, expected);
}
