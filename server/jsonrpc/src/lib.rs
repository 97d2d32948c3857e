//! The JSON-RPC 2.0 wire that `reins lsp` (and, next, `reins acp`) read from an untrusted
//! client: [`FrameReader`] cuts a byte stream into `Content-Length` frames (LSP) and
//! resynchronises after anything that is not one, [`LineReader`] cuts it into lines
//! (newline-delimited JSON-RPC: ACP, MCP over stdio); [`inspect`] says what a frame's body or a
//! line is as a JSON-RPC message, and what to answer when it is not one.
//!
//! The readers do no I/O: the protocol layers feed bytes in and act on what comes out, so the
//! same code runs under the fuzzers. Nothing a client sends can make these panic, allocate
//! without bound or stop reading. [`Incoming`] is the one read loop around them that both layers
//! run on a client's input, and [`admit`] what they answer to an item that is not a message.

mod frames;
mod incoming;
mod lines;
mod message;

pub use frames::{FrameReader, Item, MAX_FRAME_BYTES, MAX_HEADER_BYTES, frame};
pub use incoming::{Admission, Incoming, admit};
pub use lines::{LineReader, MAX_LINE_BYTES, line};
pub use message::{Inspected, Peek, error_answer, inspect, is_usable_id, peek};

/// What both readers do: take bytes as they arrive, in pieces of any size, and hand out
/// [`Item`]s; the pieces' boundaries never change the items.
pub trait Reader {
    /// Adds bytes read from the input.
    fn push(&mut self, bytes: &[u8]);
    /// The next complete item, or `None` until more bytes are pushed.
    fn next_item(&mut self) -> Option<Item>;
    /// Ends the input: what is left unread (a frame or line cut short) as one
    /// [`Item::Skipped`], or `None` if nothing is.
    fn finish(&mut self) -> Option<Item>;

    /// Pushes `bytes` and takes every item they complete.
    fn feed(&mut self, bytes: &[u8]) -> Vec<Item> {
        self.push(bytes);
        std::iter::from_fn(|| self.next_item()).collect()
    }

    /// Every item of an input that arrives as `pieces`, its end included.
    fn read_all(&mut self, pieces: &[&[u8]]) -> Vec<Item> {
        let mut items: Vec<Item> = pieces.iter().flat_map(|piece| self.feed(piece)).collect();
        items.extend(self.finish());
        items
    }
}

/// Items one a line for the tests' snapshots: bodies as text, oversized ones and skips sized.
#[cfg(test)]
fn render(items: Vec<Item>) -> Vec<String> {
    items
        .into_iter()
        .map(|item| match item {
            Item::Body(body) => format!("body {}", String::from_utf8_lossy(&body)),
            Item::Oversized { length, head } => format!("oversized {length}, head {}", head.len()),
            Item::Skipped { bytes, reason } => format!("skipped {bytes}: {reason}"),
        })
        .collect()
}
