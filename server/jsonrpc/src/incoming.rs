//! The read loop both protocol layers run on a client's input: a chunk at a time through a
//! [`Reader`], item by item, and what to do with an item that is not a message body. Each layer
//! judges the bodies itself (LSP checks what its framework can decode, ACP what its SDK can).

use std::collections::VecDeque;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::{Item, Reader, error_answer, peek};

/// How much is read from the client at a time.
const READ_BYTES: usize = 64 * 1024;

/// A client's input as [`Item`]s.
pub struct Incoming<I, R> {
    input: I,
    reader: R,
    chunk: Vec<u8>,
    ready: VecDeque<Item>,
    ended: bool,
}

/// What becomes of one item read from the client.
#[derive(Debug, PartialEq)]
pub enum Admission<T> {
    /// Pass this message on to the protocol's framework.
    Pass(T),
    /// Send this error answer instead.
    Answer(Value),
    /// Drop it, logging why (a response is never answered).
    Drop(String),
}

impl<I: AsyncRead + Unpin, R: Reader> Incoming<I, R> {
    pub fn new(input: I, reader: R) -> Self {
        Incoming { input, reader, chunk: vec![0; READ_BYTES], ready: VecDeque::new(), ended: false }
    }

    /// The next item, or `None` once the input has ended and every item is out. A read error
    /// ends the input as its end would (what was cut short comes out as [`Item::Skipped`]).
    pub async fn next(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            if self.ended {
                return None;
            }
            let read = match self.input.read(&mut self.chunk).await {
                Ok(read) => read,
                Err(err) => {
                    tracing::warn!("reading from the client failed: {err}");
                    0
                }
            };
            if read == 0 {
                self.ended = true;
                self.ready.extend(self.reader.finish());
            } else {
                self.ready.extend(self.reader.feed(&self.chunk[..read]));
            }
        }
    }
}

/// Decides what becomes of one item: a body is judged by `admit_body`; an item over `limit`
/// bytes is answered with the id its head shows (a response is dropped: it is never answered);
/// bytes that were not a message are answered `-32700`.
pub fn admit<T>(item: Item, limit: usize, admit_body: impl FnOnce(Vec<u8>) -> Admission<T>) -> Admission<T> {
    match item {
        Item::Body(body) => admit_body(body),
        Item::Oversized { length, head } => {
            let peeked = peek(&head);
            if peeked.response {
                return Admission::Drop(format!("a response of {length} bytes, over the limit of {limit}"));
            }
            let id = peeked.id.filter(|id| id.is_number() || id.is_string()).unwrap_or(Value::Null);
            let message =
                format!("the message is {length} bytes, over the limit of {} MiB; it was skipped", limit >> 20);
            Admission::Answer(error_answer(id, -32600, &message))
        }
        Item::Skipped { bytes, reason } => {
            let message = format!("skipped {bytes} bytes that were not a message: {reason}");
            Admission::Answer(error_answer(Value::Null, -32700, &message))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LineReader;

    #[tokio::test]
    async fn items_come_out_in_order_and_a_cut_line_at_the_end_is_skipped() {
        let input: &[u8] = b"{\"a\":1}\n{\"b\":2}\n{\"c\":";
        let mut incoming = Incoming::new(input, LineReader::default());
        let mut items = Vec::new();
        while let Some(item) = incoming.next().await {
            items.push(item);
        }
        assert_eq!(
            crate::render(items),
            ["body {\"a\":1}", "body {\"b\":2}", "skipped 5: the input ended inside a line"]
        );
        assert!(incoming.next().await.is_none());
    }
}
