//! The model boundary: provider-neutral messages, models, and providers that stream them.
//!
//! Nothing here knows about tools' behaviour, sessions or editors; a provider turns a [`Request`]
//! into [`StreamEvent`]s and one [`AssistantMessage`].

mod anthropic;
mod http_client;
mod message;
mod model;
mod openai;
mod provider;
mod replay;
mod retry;
mod sse;
#[cfg(test)]
#[path = "../tests/support/json.rs"]
mod test_json;
mod text;
mod transport;
mod visible;

pub use anthropic::{Anthropic, REDACTED_THINKING_PREFIX};
pub use http_client::{http_client, install_tls};
pub use message::{
    AssistantMessage, Content, Cost, Message, ProviderError, ProviderErrorKind, StopReason, TextSize, Timestamp,
    ToolCall, ToolResultMessage, Usage, UserMessage, now_ms,
};
pub use model::{Compat, Efforts, Model, Prices, ThinkingLevel, takes_images};
pub use openai::OpenAiCompatible;
pub use provider::{ApiKey, EventSink, Messages, Provider, Request, StreamEvent, ToolSpec};
pub use replay::{Wire, replay};
pub use sse::{SseEvent, SseParser};
pub use text::{cut_bytes, cut_bytes_from_end, cut_chars, first_line, shorten};
pub use transport::ClientOptions;
pub use visible::{visible, visible_line};
