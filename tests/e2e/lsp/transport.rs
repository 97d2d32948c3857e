//! The wire under hostile input: odd ids, broken headers, oversized frames and the lifecycle, sent
//! as raw bytes to the real `reins lsp`. Whatever comes, the server answers what it can, drops
//! only what it must, and serves the next request.

use expect_test::{Expect, expect};
use lsp_client::LspClient;
use serde_json::{Value, json};

use super::start;

/// Sends `raw` (framing included), then an ordinary request, and renders every answer the server
/// sent in between — its answers to `raw` — one per line as `code id: message`. Panics unless the
/// ordinary request is answered: the server must still be listening.
async fn answers_to(client: &LspClient, raw: &[u8]) -> String {
    let before = client.received().len();
    client.send_raw(raw).await;
    let probe = client.request("reins/debug/documentText", json!({"uri": "file:///probe"})).await.unwrap_err();
    assert!(probe.message.contains("is not open"), "the server stopped answering: {probe}");
    let answers: Vec<Value> = client.received()[before..]
        .iter()
        .map(|body| serde_json::from_str::<Value>(body).unwrap())
        .filter(|frame| frame.get("method").is_none())
        .collect();
    let (last, answers) = answers.split_last().unwrap();
    assert!(last["error"]["message"].as_str().unwrap().contains("probe"), "{last}");
    answers
        .iter()
        .map(|answer| {
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            format!("{} {}: {message}", answer["error"]["code"], answer["id"])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

async fn check(raw: &[u8], expected: Expect) {
    let lsp = start(&[], vec![], json!({})).await;
    expected.assert_eq(&answers_to(&lsp.client, raw).await);
    assert_eq!(lsp.client.shutdown().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_with_odd_ids_are_refused_and_stray_responses_dropped() {
    let ids = [
        "1.5",
        "1e3",
        "18446744073709551616",
        "9223372036854775808",
        "-9223372036854775809",
        "true",
        "[1]",
        "{\"a\":1}",
        "null",
        "\"a-string\"",
    ];
    let mut raw = Vec::new();
    for id in ids {
        raw.extend(frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"reins/noSuchMethod"}}"#)));
    }
    // Responses to requests the server never sent: dropped without an answer.
    for id in ["1.5", "18446744073709551616", "true", "null", "424242"] {
        raw.extend(frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)));
    }
    raw.extend(frame(r#"{"jsonrpc":"2.0","id":1e3,"error":{"code":-1,"message":"no"}}"#));
    check(
        &raw,
        expect![[r#"
            -32600 1.5: the id 1.5 is neither an integer from -2^63 to 2^63-1 nor a string
            -32600 1000.0: the id 1000.0 is neither an integer from -2^63 to 2^63-1 nor a string
            -32600 1.8446744073709552e+19: the id 1.8446744073709552e+19 is neither an integer from -2^63 to 2^63-1 nor a string
            -32600 9223372036854775808: the id 9223372036854775808 is neither an integer from -2^63 to 2^63-1 nor a string
            -32600 -9.223372036854776e+18: the id -9.223372036854776e+18 is neither an integer from -2^63 to 2^63-1 nor a string
            -32600 null: the id true is neither an integer from -2^63 to 2^63-1 nor a string
            -32600 null: the id [1] is neither an integer from -2^63 to 2^63-1 nor a string
            -32600 null: the id {"a":1} is neither an integer from -2^63 to 2^63-1 nor a string
            -32601 null: Method not found
            -32601 "a-string": Method not found"#]],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_headers_are_skipped_up_to_the_next_valid_frame() {
    let body = r#"{"jsonrpc":"2.0","id":"lost","method":"reins/noSuchMethod"}"#;
    let cases: Vec<Vec<u8>> = vec![
        format!("Content-Length: abc\r\n\r\n{body}").into_bytes(),
        format!("Content-Length: 10\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes(),
        format!("Content-Length: 20\r\n\r\n{body}").into_bytes(),
        format!("X-Unknown: 1\r\n\r\n{body}").into_bytes(),
        [&b"Content-Length: 5\xff\xfe\r\n\r\n"[..], body.as_bytes()].concat(),
        format!("Content-Length: 99999999999999999999999\r\n\r\n{body}").into_bytes(),
    ];
    let lsp = start(&[], vec![], json!({})).await;
    let mut transcript = Vec::new();
    for case in cases {
        transcript.push(format!(
            "{}\n{}",
            String::from_utf8_lossy(&case).escape_debug(),
            answers_to(&lsp.client, &case).await
        ));
    }
    expect![[r#"
        Content-Length: abc\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":\"lost\",\"method\":\"reins/noSuchMethod\"}
        -32700 null: skipped 82 bytes that were not a message: Content-Length "abc" is not a byte count
        Content-Length: 10\r\nContent-Length: 59\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":\"lost\",\"method\":\"reins/noSuchMethod\"}
        -32700 null: skipped 20 bytes that were not a message: two different Content-Length headers
        -32601 "lost": Method not found
        Content-Length: 20\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":\"lost\",\"method\":\"reins/noSuchMethod\"}
        -32700 null: the message is not valid JSON: EOF while parsing a string at line 1 column 20
        -32700 null: skipped 39 bytes that were not a message: "\":\"lost\",\"method\":\"reins/noSuchMethod\"}C"… is not a header line
        X-Unknown: 1\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":\"lost\",\"method\":\"reins/noSuchMethod\"}
        -32700 null: skipped 75 bytes that were not a message: a header block without Content-Length
        Content-Length: 5��\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":\"lost\",\"method\":\"reins/noSuchMethod\"}
        -32700 null: skipped 82 bytes that were not a message: "Content-Length: 5��" is not a header line
        Content-Length: 99999999999999999999999\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":\"lost\",\"method\":\"reins/noSuchMethod\"}
        -32700 null: skipped 102 bytes that were not a message: Content-Length "99999999999999999999999" is not a byte count"#]]
    .assert_eq(&transcript.join("\n"));
    assert_eq!(lsp.client.shutdown().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_over_64_mib_is_skipped_with_an_error_for_its_id() {
    let head = r#"{"jsonrpc":"2.0","id":77,"method":"workspace/executeCommand","params":{"command":"reins.chat.send","arguments":[{"text":""#;
    let mut body = head.as_bytes().to_vec();
    body.resize(64 * 1024 * 1024 + 1, b'a');
    body.extend_from_slice(br#""}]}}"#);
    let mut raw = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    raw.extend_from_slice(&body);
    check(&raw, expect!["-32600 77: the message is 67108870 bytes, over the limit of 64 MiB; it was skipped"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_with_params_shuts_down_and_exit_without_shutdown_is_code_1() {
    let lsp = start(&[], vec![], json!({})).await;
    assert_eq!(lsp.client.request("shutdown", json!({"unexpected": true})).await, Ok(Value::Null));
    // After a shutdown every request is refused (the spec's InvalidRequest).
    let after = lsp.client.command("reins.session.new", json!({})).await.unwrap_err();
    assert_eq!(after.code, -32600, "{after}");
    assert_eq!(lsp.client.exit().await, Some(0));

    let lsp = start(&[], vec![], json!({})).await;
    assert_eq!(lsp.client.exit().await, Some(1));
}
