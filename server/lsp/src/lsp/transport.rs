//! The wire in front of the LSP framework: reads `Content-Length` frames from the client and
//! passes on only well-formed JSON-RPC messages, answering the rest itself.
//!
//! tower-lsp-server's reader stops for good at the first message it cannot decode (its framed
//! stream ends after an error), so one bad frame would leave the server deaf. Here a malformed
//! body gets a `-32700` parse error, a JSON value that is not a JSON-RPC message a `-32600`
//! invalid request, and the next message is served as usual. Our answers and the framework's go
//! out through one writer, whole frames at a time.

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Frames larger than this are refused rather than buffered (a broken or hostile client).
const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// What one frame read from the client turned out to be.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A well-formed message, to pass on.
    Message(Vec<u8>),
    /// An error answer for the client.
    Refused(Value),
}

/// Copies valid frames from `input` to `to_framework`, and sends error answers for the others to
/// `errors`. Returns when the input ends.
pub async fn filter_input(
    input: impl AsyncRead + Unpin,
    mut to_framework: impl AsyncWrite + Unpin,
    errors: mpsc::UnboundedSender<Value>,
) {
    let mut reader = BufReader::new(input);
    loop {
        let frame = match read_frame(&mut reader).await {
            Ok(Some(body)) => check(body),
            Ok(None) => break,
            Err(err) => {
                tracing::warn!("reading from the client failed: {err}");
                break;
            }
        };
        match frame {
            Frame::Message(body) => {
                let framed = frame_bytes(&body);
                if to_framework.write_all(&framed).await.is_err() || to_framework.flush().await.is_err() {
                    break;
                }
            }
            Frame::Refused(answer) => {
                if errors.send(answer).is_err() {
                    break;
                }
            }
        }
    }
}

/// Writes the framework's frames and our error answers to `output`, whole frames at a time, until
/// the framework's output ends.
pub async fn merge_output(
    from_framework: impl AsyncRead + Unpin,
    mut errors: mpsc::UnboundedReceiver<Value>,
    mut output: impl AsyncWrite + Unpin,
) {
    let mut reader = BufReader::new(from_framework);
    loop {
        let body = tokio::select! {
            frame = read_frame(&mut reader) => match frame {
                Ok(Some(body)) => body,
                _ => break,
            },
            Some(answer) = errors.recv() => answer.to_string().into_bytes(),
        };
        if output.write_all(&frame_bytes(&body)).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
}

/// Decides whether a body is a JSON-RPC message the framework can take.
pub fn check(body: Vec<u8>) -> Frame {
    let value: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(err) => {
            return Frame::Refused(error_answer(Value::Null, -32700, &format!("the message is not valid JSON: {err}")));
        }
    };
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let is_request = value.get("method").is_some_and(Value::is_string);
    let is_response = !id.is_null() && (value.get("result").is_some() || value.get("error").is_some());
    let valid_id = matches!(id, Value::Null | Value::Number(_) | Value::String(_));
    if value.get("jsonrpc") != Some(&json!("2.0")) || !(is_request || is_response) || !valid_id {
        let id = if valid_id { id } else { Value::Null };
        return Frame::Refused(error_answer(
            id,
            -32600,
            "not a JSON-RPC 2.0 message: expected an object with \"jsonrpc\": \"2.0\" and a method (or a result)",
        ));
    }
    Frame::Message(body)
}

fn error_answer(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": {"code": "invalid_argument"}}})
}

fn frame_bytes(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The next frame's body; `None` at the end of the stream. Header lines other than
/// `Content-Length` are ignored; a header block without it is skipped.
async fn read_frame(reader: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<Option<Vec<u8>>> {
    loop {
        let mut length = None;
        let mut saw_header = false;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await? == 0 {
                return Ok(None);
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if saw_header {
                    break;
                }
                continue;
            }
            saw_header = true;
            if let Some((name, value)) = line.split_once(':')
                && name.trim().eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let Some(length) = length else {
            tracing::warn!("skipped a frame without a valid Content-Length header");
            continue;
        };
        if length > MAX_FRAME_BYTES {
            return Err(std::io::Error::other(format!("a frame of {length} bytes is too large")));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await?;
        return Ok(Some(body));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(body: &str) -> String {
        match check(body.as_bytes().to_vec()) {
            Frame::Message(_) => "pass".to_string(),
            Frame::Refused(answer) => format!("{} id={}", answer["error"]["code"], answer["id"]),
        }
    }

    #[test]
    fn only_json_rpc_messages_pass() {
        assert_eq!(verdict(r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#), "pass");
        assert_eq!(verdict(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#), "pass");
        assert_eq!(verdict(r#"{"jsonrpc":"2.0","id":4,"result":null}"#), "pass");
        assert_eq!(verdict("{not json"), "-32700 id=null");
        assert_eq!(verdict(r#"{"jsonrpc":"2.0","id":7}"#), "-32600 id=7");
        assert_eq!(verdict(r#"[1,2]"#), "-32600 id=null");
        assert_eq!(verdict(r#"{"id":8,"method":"x"}"#), "-32600 id=8");
    }

    #[tokio::test]
    async fn frames_are_read_past_unknown_headers_and_garbage() {
        let input = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}X-Junk: 1\r\n\r\nContent-Length: 4\r\n\r\nnull";
        let mut reader = BufReader::new(&input[..]);
        assert_eq!(read_frame(&mut reader).await.unwrap(), Some(b"{}".to_vec()));
        assert_eq!(read_frame(&mut reader).await.unwrap(), Some(b"null".to_vec()));
        assert_eq!(read_frame(&mut reader).await.unwrap(), None);
    }
}
