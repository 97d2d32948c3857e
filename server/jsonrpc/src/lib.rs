//! The JSON-RPC 2.0 wire that `reins lsp` (and, next, `reins acp`) read from an untrusted
//! client: [`FrameReader`] cuts a byte stream into `Content-Length` frames and resynchronises
//! after anything that is not one; [`inspect`] says what a frame's body is as a JSON-RPC
//! message, and what to answer when it is not one.
//!
//! No I/O and no async here: the protocol layers feed bytes in and act on what comes out, so the
//! same code runs under the fuzzers. Nothing a client sends can make these panic, allocate
//! without bound or stop reading.

mod frames;
mod message;

pub use frames::{FrameReader, Item, MAX_FRAME_BYTES, MAX_HEADER_BYTES, frame};
pub use message::{Inspected, Peek, error_answer, inspect, is_usable_id, peek};
