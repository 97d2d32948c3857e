//! Provider-neutral conversation types.
//!
//! These are what the agent loop keeps in its context and what every provider translates to and
//! from its own wire format. They carry no serde: each protocol layer builds its JSON from them
//! (the LSP layer's `to_proto`, following the pi agent's message shapes), and the session file
//! has its own records (`reins_session::MessageRecord`).

use serde_json::Value;

/// Milliseconds since the Unix epoch.
pub type Timestamp = u64;

/// The current time as a [`Timestamp`].
pub fn now_ms() -> Timestamp {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
}

#[derive(Debug, Clone, PartialEq)]
pub struct UserMessage {
    pub content: Vec<Content>,
    pub timestamp: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct AssistantMessage {
    pub content: Vec<Content>,
    pub provider: String,
    pub model: String,
    pub usage: Usage,
    pub stop_reason: StopReason,
    /// Set when `stop_reason` is `error` (or `aborted`): what went wrong, for a person.
    pub error: Option<ProviderError>,
    pub timestamp: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<Content>,
    pub is_error: bool,
    /// Structured data for UIs (a diff, an exit code); never sent to the model.
    pub details: Option<Value>,
    pub timestamp: Timestamp,
}

/// One block of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        /// Opaque provider data that must be sent back with the block (Anthropic signatures).
        signature: Option<String>,
    },
    ToolCall(ToolCall),
    Image {
        /// Base64-encoded bytes.
        data: String,
        mime_type: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The parsed arguments. When the model sent JSON that could not be parsed even after repair,
    /// this is a string holding the raw text, and the agent answers with an error result.
    pub arguments: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopReason {
    /// The model finished its answer.
    #[default]
    Stop,
    /// The output limit cut the message off.
    Length,
    /// The model wants tool results before it goes on.
    ToolUse,
    /// The model, or the provider's content filter, declined to answer; the content may be partial.
    Refusal,
    /// The provider failed; `AssistantMessage::error` says how.
    Error,
    /// The run was cancelled.
    Aborted,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Usage {
    /// Prompt tokens not served from the cache.
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    pub cost: Cost,
}

/// Cost in US dollars.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: f64,
}

/// A failure at the model boundary, as the user and the harness see it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ProviderError {
    pub kind: ProviderErrorKind,
    /// HTTP status, when the server answered with one.
    pub status: Option<u16>,
    /// The server's own message where it sent one, else ours. Never holds the API key.
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderErrorKind {
    /// The server answered with a non-success status.
    Http,
    /// 401/403: the key is missing or wrong.
    Auth,
    /// The prompt does not fit the model's context window.
    ContextOverflow,
    /// The server could not be reached.
    Connection,
    /// This process has too many files open (its limit of open files is reached), so no
    /// request went out: nothing is wrong with the server.
    OpenFiles,
    /// The server went silent for longer than the idle timeout.
    Timeout,
    /// The stream broke or carried an error payload after it had started.
    Stream,
    /// The response could not be understood.
    Protocol,
    /// The run was cancelled.
    Aborted,
}

impl ProviderError {
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        Self { kind, status: None, message: message.into() }
    }

    fn describe(&self) -> String {
        match self.status {
            Some(status) => format!("provider error (HTTP {status}): {}", self.message),
            None => format!("provider error: {}", self.message),
        }
    }
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Message::User(UserMessage { content: vec![Content::text(text)], timestamp: now_ms() })
    }
}

impl Content {
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }
}

impl AssistantMessage {
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|c| match c {
            Content::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// All text blocks joined, without thinking.
    pub fn text(&self) -> String {
        join_text(&self.content)
    }
}

impl ToolCall {
    /// The size of the arguments as JSON text (`arguments.to_string()`), measured without
    /// writing it out: the estimates before each model call measure every past call again.
    pub fn arguments_size(&self) -> TextSize {
        let mut size = TextSize::default();
        // Writing to a counter fails never; a value that cannot be written counts as empty.
        let _ = serde_json::to_writer(&mut size, &self.arguments);
        size
    }
}

/// The length of a text, in bytes and in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextSize {
    pub bytes: usize,
    pub chars: usize,
}

impl std::io::Write for TextSize {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes += buf.len();
        // Each character has one byte that is not a continuation byte, wherever the writes split.
        self.chars += buf.iter().filter(|&&byte| byte & 0xC0 != 0x80).count();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl ToolResultMessage {
    pub fn text(&self) -> String {
        join_text(&self.content)
    }
}

fn join_text(content: &[Content]) -> String {
    let mut out = String::new();
    for block in content {
        if let Content::Text { text } = block {
            out.push_str(text);
        }
    }
    out
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_arguments_size_is_that_of_their_json_text() {
        let calls =
            [json!({}), json!({"path": "ä/日本.txt", "quote": "\"\n\u{1}", "n": [1, 2.5, null]}), json!("{raw")];
        for arguments in calls {
            let text = arguments.to_string();
            let call = ToolCall { id: "c".into(), name: "read".into(), arguments };
            assert_eq!(call.arguments_size(), TextSize { bytes: text.len(), chars: text.chars().count() }, "{text}");
        }
    }
}
