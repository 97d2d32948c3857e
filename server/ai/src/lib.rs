//! The model boundary: provider-neutral messages, models, and providers that stream them.
//!
//! Nothing here knows about tools' behaviour, sessions or editors; a provider turns a [`Request`]
//! into [`StreamEvent`]s and one [`AssistantMessage`].

mod message;
mod model;
mod openai;
mod provider;
mod retry;
mod sse;

pub use message::{
    AssistantMessage, Content, Cost, Message, ProviderError, ProviderErrorKind, StopReason, Timestamp, ToolCall,
    ToolResultMessage, Usage, UserMessage, now_ms,
};
pub use model::{Model, Prices};
pub use openai::{ClientOptions, OpenAiCompatible};
pub use provider::{ApiKey, EventSink, Provider, Request, StreamEvent, ToolSpec};
