//! The `Provider` trait: one request in, a stream of events and one assistant message out.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::message::{AssistantMessage, Message};
use crate::model::{Model, ThinkingLevel};

/// Everything a provider needs for one model call.
#[derive(Debug, Clone)]
pub struct Request {
    pub model: Model,
    pub system_prompt: String,
    pub messages: Messages,
    /// Shared, as the messages are: the agent builds the list once and sends it with every call,
    /// and a copy of the request copies no tool.
    pub tools: Arc<Vec<ToolSpec>>,
    /// Output limit for this call; `None` takes the model's `max_output`.
    pub max_tokens: Option<u64>,
    /// How hard a reasoning model thinks; `None` leaves it to the provider's default (Anthropic:
    /// `medium`; OpenAI-compatible: the server's own, nothing is sent).
    pub thinking: Option<ThinkingLevel>,
}

/// The conversation a request carries, each message shared: a copy of the request (the one a
/// session keeps for `last_request`) copies no message, and the agent's next request shares the
/// messages of this one, so a turn copies only the messages that are new since the last.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Messages(Arc<[Arc<Message>]>);

impl Messages {
    pub fn iter(&self) -> <&Messages as IntoIterator>::IntoIter {
        self.into_iter()
    }

    /// The messages as the shared values they are: a provider may recognise one it sent before.
    pub fn shared(&self) -> &[Arc<Message>] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn last(&self) -> Option<&Message> {
        self.0.last().map(|message| &**message)
    }

    /// Adds a message at the end, for a request built by hand: it copies the list of shared
    /// messages, not the messages.
    pub fn push(&mut self, message: Message) {
        self.0 = self.0.iter().cloned().chain([Arc::new(message)]).collect();
    }
}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a Message;
    type IntoIter = std::iter::Map<std::slice::Iter<'a, Arc<Message>>, fn(&Arc<Message>) -> &Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|message| &**message)
    }
}

impl From<Vec<Message>> for Messages {
    fn from(messages: Vec<Message>) -> Messages {
        Messages(messages.into_iter().map(Arc::new).collect())
    }
}

impl From<Vec<Arc<Message>>> for Messages {
    fn from(messages: Vec<Arc<Message>>) -> Messages {
        Messages(messages.into())
    }
}

impl Request {
    /// The output limit in tokens: the request's own, else the model's (0: none known).
    pub fn output_limit(&self) -> u64 {
        self.max_tokens.unwrap_or(self.model.max_output)
    }
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// Incremental output while a message streams. `index` is the content block's position in the
/// final [`AssistantMessage::content`].
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    Text {
        index: usize,
        delta: String,
    },
    Thinking {
        index: usize,
        delta: String,
    },
    /// A tool call's name arrives first (with its id), then its arguments in pieces.
    ToolCall {
        index: usize,
        id: String,
        name: String,
        arguments_delta: String,
    },
    /// The call failed before any content came and will be tried again in `delay_ms`: retry
    /// `attempt` of at most `max_retries`. Nothing of the message; a sign of life while it waits.
    Retry {
        attempt: u32,
        max_retries: u32,
        delay_ms: u64,
        reason: String,
    },
}

/// Receives [`StreamEvent`]s as they arrive. Called from the provider's task; must not block.
pub type EventSink<'a> = &'a (dyn Fn(StreamEvent) + Send + Sync);

#[async_trait]
pub trait Provider: Send + Sync {
    /// Streams one assistant message. Never fails: errors, cancellation and cut streams end in a
    /// message whose `stop_reason` is `error` or `aborted`, holding whatever content arrived.
    async fn stream(&self, request: &Request, on_event: EventSink<'_>, cancel: &CancellationToken) -> AssistantMessage;
}

/// An API key that never shows itself in `Debug` or `Display`, so it cannot leak into logs.
#[derive(Clone, Default)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "ApiKey(<none>)" } else { "ApiKey(<redacted>)" })
    }
}
