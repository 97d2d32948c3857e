//! A scripted OpenAI-compatible (and Anthropic) server on 127.0.0.1 for tests, demos and benchmarks.
//!
//! [`ScriptedServer`] answers `POST …/chat/completions` by playing the next [`Reply`] of its
//! script (streamed as chunked SSE, or as one JSON completion when the request does not stream),
//! answers `POST …/v1/messages` with the same replies in the Anthropic Messages API format and
//! `POST …/responses` in the OpenAI Responses API format (Codex's), answers `GET …/models`, and
//! records every request. HTTP is hand-rolled so that the wire can misbehave on purpose: cut
//! mid-body, stall, send keep-alive comments or error payloads, reset the connection, stream
//! without end or answer with something that is not a stream ([`Fault`]).
//! It can also play Anthropic's prompt cache ([`PrefixCache`]): Messages API answers then report
//! the tokens a real server would have read from the cache and written to it.

mod cache;
/// Shared with the other test servers (tests/oauth-server).
pub mod http;
mod render;
mod render_anthropic;
mod render_responses;
mod reply;
mod request;
mod server;

#[cfg(test)]
mod tests;

pub use cache::{CacheUsage, PrefixCache};
pub use reply::{Fault, HttpError, Reply, ScriptedToolCall, ScriptedUsage};
pub use server::{RecordedRequest, ScriptedServer};
