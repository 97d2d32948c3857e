//! Chat Completions wire structs: what goes out (strict, minimal) and what comes back (lenient).
//!
//! Servers that call themselves OpenAI-compatible differ in the details — `null` where a list is
//! expected, `usage: {}`, `reasoning` instead of `reasoning_content`, arguments as an object — so
//! every incoming field is optional and any value of the wrong type reads as absent rather than
//! failing the whole chunk.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer};
use serde::{Deserialize as DeserializeDerive, Serialize};
use serde_json::Value;

/// The request body of `POST /chat/completions`.
#[derive(Debug, Serialize)]
pub struct ChatRequest<'a> {
    pub model: &'a str,
    pub messages: Vec<WireMessage<'a>>,
    pub stream: bool,
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Instead of `max_tokens` where the model's `compat` asks for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<WireTool<'a>>,
    /// `minimal` … `high`, for models whose `compat` says they take it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub struct StreamOptions {
    pub include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    /// The system prompt for models that want it under this role.
    Developer {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// `null` when the message only calls tools.
        content: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

/// Plain text where possible: some local servers accept nothing else.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum UserContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<ContentPart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
pub struct ImageUrl {
    /// A `data:` URL with the base64 bytes.
    pub url: String,
}

#[derive(Debug, Serialize)]
pub struct WireToolCall<'a> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: WireFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
pub struct WireFunctionCall<'a> {
    pub name: &'a str,
    /// The arguments object serialized as a JSON string, as the API wants it.
    pub arguments: Cow<'a, str>,
}

#[derive(Debug, Serialize)]
pub struct WireTool<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
pub struct WireFunction<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub parameters: &'a Value,
}

/// One streamed `chat.completion.chunk` (or an error payload).
#[derive(Debug, Default, DeserializeDerive)]
#[serde(default)]
pub struct ChatChunk {
    #[serde(deserialize_with = "lenient")]
    pub choices: Option<Vec<Choice>>,
    #[serde(deserialize_with = "lenient")]
    pub usage: Option<WireUsage>,
    /// Some servers report failures mid-stream as `{"error": {...}}`.
    pub error: Option<Value>,
}

#[derive(Debug, Default, DeserializeDerive)]
#[serde(default)]
pub struct Choice {
    #[serde(deserialize_with = "lenient")]
    pub delta: Option<Delta>,
    #[serde(deserialize_with = "lenient")]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, DeserializeDerive)]
#[serde(default)]
pub struct Delta {
    #[serde(deserialize_with = "lenient")]
    pub content: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub reasoning_content: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub reasoning: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Default, DeserializeDerive)]
#[serde(default)]
pub struct ToolCallDelta {
    #[serde(deserialize_with = "lenient")]
    pub index: Option<usize>,
    #[serde(deserialize_with = "lenient")]
    pub id: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Default, DeserializeDerive)]
#[serde(default)]
pub struct FunctionDelta {
    #[serde(deserialize_with = "lenient")]
    pub name: Option<String>,
    /// Normally a string fragment; a few servers send the whole object.
    pub arguments: Option<Value>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, DeserializeDerive)]
#[serde(default)]
pub struct WireUsage {
    #[serde(deserialize_with = "lenient")]
    pub prompt_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub completion_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, DeserializeDerive)]
#[serde(default)]
pub struct PromptTokensDetails {
    #[serde(deserialize_with = "lenient")]
    pub cached_tokens: Option<u64>,
}

/// The error object of an error response or payload: `{"error": {"message", "type", "code"}}`.
#[derive(Debug, Default, DeserializeDerive)]
#[serde(default)]
pub struct ErrorBody {
    pub error: Option<Value>,
    /// Some servers put the message at the top level.
    #[serde(deserialize_with = "lenient")]
    pub message: Option<String>,
}

/// Reads a value as `Some` when it has the expected type and `None` otherwise (including `null`).
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}
