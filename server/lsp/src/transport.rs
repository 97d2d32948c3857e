//! The wire in front of the LSP framework: reads the client's frames with
//! [`reins_jsonrpc::FrameReader`] (in the read loop the ACP layer runs too) and passes on only messages the framework can decode,
//! answering the rest itself.
//!
//! tower-lsp-server's reader stops for good at the first message it cannot decode (its framed
//! stream ends after an error, and the server exits), so nothing reaches it unchecked: a body that
//! is not JSON gets `-32700`, a value that is not a JSON-RPC message (or has an id the framework
//! cannot take, such as `1.5`) `-32600` with its id, a stray response is dropped, bad header bytes
//! and oversized frames are skipped with an error answer. Our answers and the framework's go out
//! through one writer, whole frames at a time, and an answer to bad input always goes out before
//! the answers to the messages after it.
//!
//! It also keeps the lifecycle the framework does not: `shutdown`'s params are dropped (the
//! spec says it has none; the framework would refuse it yet shut down), and the exit code is 1
//! when `exit` came without a successful `shutdown` before it.

use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use reins_jsonrpc::{
    Admission, FrameReader, Incoming, Inspected, Item, MAX_FRAME_BYTES, Reader, error_answer, frame, inspect,
};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Request, Response};

use crate::lock;

/// How much is read from the client at a time.
const READ_BYTES: usize = 64 * 1024;

/// What the client said about ending: whether `shutdown` succeeded and `exit` came.
#[derive(Debug, Default)]
pub struct Lifecycle {
    /// Ids of `shutdown` requests passed on, until the framework answers one.
    shutdown_ids: Mutex<Vec<Value>>,
    shut_down: AtomicBool,
    exited: AtomicBool,
}

impl Lifecycle {
    /// 1 when `exit` came without a successful `shutdown` first (the LSP spec), else 0.
    pub fn exit_code(&self) -> ExitCode {
        match self.exited.load(Ordering::SeqCst) && !self.shut_down.load(Ordering::SeqCst) {
            true => ExitCode::from(1),
            false => ExitCode::SUCCESS,
        }
    }

    /// Notes a framework answer to a `shutdown` request.
    fn saw_output(&self, body: &[u8]) {
        let mut ids = lock(&self.shutdown_ids);
        if ids.is_empty() {
            return;
        }
        let Ok(answer) = serde_json::from_slice::<Value>(body) else { return };
        if let Some(at) = ids.iter().position(|id| answer.get("id") == Some(id)) {
            ids.remove(at);
            if answer.get("result").is_some() {
                self.shut_down.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// Copies valid frames from `input` to `to_framework`, and sends error answers for the rest to
/// `errors`. Returns when the input ends or the framework stops reading.
pub async fn filter_input(
    input: impl AsyncRead + Unpin,
    mut to_framework: impl AsyncWrite + Unpin,
    errors: mpsc::UnboundedSender<Value>,
    lifecycle: &Lifecycle,
) {
    let mut items = Incoming::new(input, FrameReader::default());
    while let Some(item) = items.next().await {
        match admit(item, lifecycle) {
            Admission::Pass(body) => {
                let sent = to_framework.write_all(&frame(&body)).await.and(to_framework.flush().await);
                if sent.is_err() {
                    return; // the framework is gone (after `exit`)
                }
            }
            Admission::Answer(answer) => {
                tracing::warn!("refused a message from the client: {}", answer["error"]["message"]);
                if errors.send(answer).is_err() {
                    return;
                }
            }
            Admission::Drop(reason) => tracing::warn!("dropped a message from the client: {reason}"),
        }
    }
}

/// Writes the framework's frames and our error answers to `output`, whole frames at a time, until
/// the framework's output ends. Error answers waiting go first: they answer input that came
/// before whatever the framework is answering.
pub async fn merge_output(
    mut from_framework: impl AsyncRead + Unpin,
    mut errors: mpsc::UnboundedReceiver<Value>,
    mut output: impl AsyncWrite + Unpin,
    lifecycle: &Lifecycle,
) {
    let mut reader = FrameReader::new(usize::MAX);
    let mut chunk = vec![0; READ_BYTES];
    loop {
        let bodies: Vec<Vec<u8>> = tokio::select! {
            biased;
            Some(answer) = errors.recv() => vec![answer.to_string().into_bytes()],
            read = from_framework.read(&mut chunk) => match read {
                Ok(0) | Err(_) => break,
                Ok(read) => reader
                    .feed(&chunk[..read])
                    .into_iter()
                    .filter_map(|item| match item {
                        Item::Body(body) => Some(body),
                        _ => None,
                    })
                    .collect(),
            },
        };
        for body in bodies {
            lifecycle.saw_output(&body);
            if output.write_all(&frame(&body)).await.is_err() || output.flush().await.is_err() {
                return;
            }
        }
    }
}

/// Decides what becomes of one item read from the client.
pub fn admit(item: Item, lifecycle: &Lifecycle) -> Admission<Vec<u8>> {
    reins_jsonrpc::admit(item, MAX_FRAME_BYTES, |body| admit_body(body, lifecycle))
}

fn admit_body(body: Vec<u8>, lifecycle: &Lifecycle) -> Admission<Vec<u8>> {
    match inspect(&body) {
        Inspected::Request { method, id, mut message } => {
            let body = match method.as_str() {
                "shutdown" if message.get("params").is_some_and(|params| !params.is_null()) => {
                    message.remove("params");
                    Value::Object(message).to_string().into_bytes()
                }
                _ => body,
            };
            // What the framework cannot decode would end its reading; nothing above should let
            // such a message through, so this only guards against the two disagreeing.
            if let Err(err) = serde_json::from_slice::<Request>(&body) {
                let id = id.unwrap_or(Value::Null);
                return Admission::Answer(error_answer(id, -32600, &format!("the request cannot be decoded: {err}")));
            }
            match (method.as_str(), id) {
                ("shutdown", Some(id)) => lock(&lifecycle.shutdown_ids).push(id),
                ("exit", _) => lifecycle.exited.store(true, Ordering::SeqCst),
                _ => {}
            }
            Admission::Pass(body)
        }
        Inspected::Response { id, .. } => match serde_json::from_slice::<Response>(&body) {
            Ok(_) => Admission::Pass(body),
            Err(err) => Admission::Drop(format!("the response to {id} cannot be decoded: {err}")),
        },
        Inspected::Refused { answer } => Admission::Answer(answer),
        Inspected::Stray { reason } => Admission::Drop(reason),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(id: Value, method: &str, params: Value) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string().into_bytes()
    }

    fn verdict(item: Item) -> String {
        match admit(item, &Lifecycle::default()) {
            Admission::Pass(body) => format!("pass {}", String::from_utf8_lossy(&body)),
            Admission::Answer(answer) => format!("answer {} id={}", answer["error"]["code"], answer["id"]),
            Admission::Drop(_) => "drop".to_string(),
        }
    }

    #[test]
    fn shutdown_loses_its_params_and_is_tracked() {
        let lifecycle = Lifecycle::default();
        let verdict = admit(Item::Body(request(json!(3), "shutdown", json!({"x": 1}))), &lifecycle);
        assert_eq!(verdict, Admission::Pass(br#"{"jsonrpc":"2.0","id":3,"method":"shutdown"}"#.to_vec()));
        lifecycle.saw_output(br#"{"jsonrpc":"2.0","id":3,"result":null}"#);
        admit(Item::Body(br#"{"jsonrpc":"2.0","method":"exit"}"#.to_vec()), &lifecycle);
        assert_eq!(lifecycle.exit_code(), ExitCode::SUCCESS);
    }

    #[test]
    fn exit_without_a_successful_shutdown_is_code_1() {
        let lifecycle = Lifecycle::default();
        admit(Item::Body(request(json!(1), "shutdown", Value::Null)), &lifecycle);
        // Refused (not initialized): not shut down.
        lifecycle.saw_output(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"no"}}"#);
        assert_eq!(lifecycle.exit_code(), ExitCode::SUCCESS, "no exit yet");
        admit(Item::Body(br#"{"jsonrpc":"2.0","method":"exit","params":null}"#.to_vec()), &lifecycle);
        assert_eq!(lifecycle.exit_code(), ExitCode::from(1));
    }

    #[test]
    fn oversized_frames_and_garbage_are_answered_with_what_can_be_read() {
        let head = br#"{"jsonrpc":"2.0","id":"big-1","method":"x","params":{"text":"aaaa"#.to_vec();
        assert_eq!(verdict(Item::Oversized { length: 1 << 27, head }), r#"answer -32600 id="big-1""#);
        let head = br#"{"jsonrpc":"2.0","method":"x","params":{"text":"aaaa"#.to_vec();
        assert_eq!(verdict(Item::Oversized { length: 1 << 27, head }), "answer -32600 id=null");
        let head = br#"{"jsonrpc":"2.0","id":4,"result":{"text":"aaaa"#.to_vec();
        assert_eq!(verdict(Item::Oversized { length: 1 << 27, head }), "drop");
        assert_eq!(verdict(Item::Skipped { bytes: 3, reason: "x".into() }), "answer -32700 id=null");
        assert_eq!(verdict(Item::Body(request(json!(1.5), "x", json!({})))), "answer -32600 id=1.5");
        assert_eq!(verdict(Item::Body(br#"{"jsonrpc":"2.0","id":1.5,"result":1}"#.to_vec())), "drop");
    }
}
