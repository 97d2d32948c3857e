//! The wire in front of the ACP SDK: newline-delimited JSON-RPC on stdin/stdout, read with
//! [`reins_jsonrpc::LineReader`] (in the read loop the LSP layer runs too) so that no line the client sends — not UTF-8, not JSON, not a
//! JSON-RPC message, an id of an odd type, 64 MiB without a newline — reaches the SDK unchecked.
//! Those get their error answer here (with the id echoed where there is one) and the connection
//! goes on. Our answers and the SDK's lines go out through one writer, a line at a time, so
//! stdout never carries anything but whole protocol lines.

use std::io;

use futures::{Sink, Stream};
use reins_jsonrpc::{Admission, Incoming, Inspected, Item, LineReader, MAX_LINE_BYTES, inspect};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The two ends the SDK's `Lines` transport takes: the lines it reads, and the sink it writes to.
/// The writer and reader run as tasks until the input ends (the lines stream ends then too).
pub fn connect(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> (
    impl Sink<String, Error = io::Error> + Send + 'static,
    impl Stream<Item = io::Result<String>> + Send + 'static,
    tokio::task::JoinHandle<()>,
) {
    let (out_tx, out_rx) = mpsc::unbounded_channel::<String>();
    let (in_tx, in_rx) = mpsc::unbounded_channel::<String>();
    let answers = out_tx.clone();
    tokio::spawn(read_input(input, in_tx, answers));
    let writer = tokio::spawn(write_output(out_rx, output));
    let sink = futures::sink::unfold(out_tx, |out_tx, line: String| async move {
        out_tx.send(line).map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed"))?;
        Ok::<_, io::Error>(out_tx)
    });
    let lines = futures::stream::unfold(in_rx, |mut in_rx| async move {
        let line = in_rx.recv().await?;
        Some((Ok(line), in_rx))
    });
    (sink, lines, writer)
}

/// Reads the client's lines, passing valid messages on and answering the rest, until the input
/// ends or the SDK stops reading.
async fn read_input(
    input: impl AsyncRead + Unpin,
    to_sdk: mpsc::UnboundedSender<String>,
    answers: mpsc::UnboundedSender<String>,
) {
    let mut items = Incoming::new(input, LineReader::default());
    while let Some(item) = items.next().await {
        let sent = match admit(item) {
            Admission::Pass(line) => to_sdk.send(line).is_ok(),
            Admission::Answer(answer) => {
                tracing::warn!("refused a message from the client: {}", answer["error"]["message"]);
                answers.send(answer.to_string()).is_ok()
            }
            Admission::Drop(reason) => {
                tracing::warn!("dropped a message from the client: {reason}");
                true
            }
        };
        if !sent {
            return;
        }
    }
}

/// Writes each line, with its newline, until every sender is gone.
async fn write_output(mut lines: mpsc::UnboundedReceiver<String>, mut output: impl AsyncWrite + Unpin) {
    while let Some(mut line) = lines.recv().await {
        // A line holds one message; a stray newline inside one would break the framing.
        if line.contains('\n') {
            line = line.replace('\n', "");
        }
        line.push('\n');
        if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

/// Decides what becomes of one item read from the client.
pub fn admit(item: Item) -> Admission<String> {
    reins_jsonrpc::admit(item, MAX_LINE_BYTES, |body| match inspect(&body) {
        // `inspect` parsed it as JSON, so it is UTF-8.
        Inspected::Request { .. } | Inspected::Response { .. } => {
            Admission::Pass(String::from_utf8_lossy(&body).into_owned())
        }
        Inspected::Refused { answer } => Admission::Answer(answer),
        Inspected::Stray { reason } => Admission::Drop(reason),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn verdict(line: &[u8]) -> String {
        match admit(Item::Body(line.to_vec())) {
            Admission::Pass(line) => format!("pass {line}"),
            Admission::Answer(answer) => format!("answer {} id={}", answer["error"]["code"], answer["id"]),
            Admission::Drop(_) => "drop".to_string(),
        }
    }

    #[test]
    fn bad_lines_are_answered_and_good_ones_pass() {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}).to_string();
        assert_eq!(verdict(request.as_bytes()), format!("pass {request}"));
        assert_eq!(verdict(b"{not json"), "answer -32700 id=null");
        assert_eq!(verdict(b"\xff\xfe"), "answer -32700 id=null");
        assert_eq!(verdict(b"[1, 2]"), "answer -32600 id=null");
        assert_eq!(verdict(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#), "answer -32600 id=1.5");
        assert_eq!(verdict(br#"{"jsonrpc":"2.0","id":"a","method":7}"#), r#"answer -32600 id="a""#);
        assert_eq!(verdict(br#"{"jsonrpc":"2.0","id":{},"result":1}"#), "drop");
        let head = br#"{"jsonrpc":"2.0","id":"big","method":"session/prompt","params":{"x":"aaa"#.to_vec();
        let answer = admit(Item::Oversized { length: 1 << 27, head });
        assert!(matches!(answer, Admission::Answer(answer) if answer["id"] == "big"));
    }
}
