//! What the surfaces share of their wire, so that it is one thing: the JSON of agent events and
//! of listings that the language server's `reins/event` and `reins.*` answers carry and that
//! `reins run --json` and `reins sessions … --json` print. A surface adds only its own shapes
//! (LSP edits and diagnostics, ACP's schema types, the terminal's text).
//!
//! The core types carry no serde: a field renamed in the core cannot change these shapes, and the
//! `protocol-docs/` examples, which a test runs against the server, pin them.

mod events;
mod listings;

pub use events::*;
pub use listings::*;
