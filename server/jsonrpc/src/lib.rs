//! The JSON-RPC 2.0 wire that `reins lsp` (and, next, `reins acp`) read from an untrusted
//! client: [`FrameReader`] cuts a byte stream into `Content-Length` frames (LSP) and
//! resynchronises after anything that is not one, [`LineReader`] cuts it into lines
//! (newline-delimited JSON-RPC: ACP, MCP over stdio); [`inspect`] says what a frame's body or a
//! line is as a JSON-RPC message, and what to answer when it is not one.
//!
//! No I/O and no async here: the protocol layers feed bytes in and act on what comes out, so the
//! same code runs under the fuzzers. Nothing a client sends can make these panic, allocate
//! without bound or stop reading.

mod frames;
mod lines;
mod message;

pub use frames::{FrameReader, Item, MAX_FRAME_BYTES, MAX_HEADER_BYTES, frame};
pub use lines::{LineReader, MAX_LINE_BYTES, line};
pub use message::{Inspected, Peek, error_answer, inspect, is_usable_id, peek};
