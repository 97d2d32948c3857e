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
use serde_json::value::RawValue;

/// The request body of `POST /chat/completions`.
#[derive(Debug, Serialize)]
pub struct ChatRequest<'a> {
    pub model: &'a str,
    /// Each [`WireMessage`], encoded once and sent again on later turns (see
    /// `request::Encoded`).
    pub messages: Vec<&'a RawValue>,
    pub stream: bool,
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Instead of `max_tokens` where the model's `compat` asks for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u64>,
    /// The [`WireTool`]s, encoded once for as long as the list stays the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<&'a RawValue>,
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
    pub arguments: ArgumentsText<'a>,
}

/// Tool-call arguments as the JSON string the API wants. Every past call goes out again with
/// every request, so an object is written straight into the body, never to a string first.
#[derive(Debug)]
pub enum ArgumentsText<'a> {
    /// Text that was not JSON, sent back as it came.
    Raw(&'a str),
    /// An object, written as its compact JSON text.
    Json(&'a Value),
}

impl Serialize for ArgumentsText<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ArgumentsText::Raw(text) => serializer.serialize_str(text),
            // `Value`'s `Display` is its compact JSON; serde_json escapes it into the string as
            // it is written.
            ArgumentsText::Json(value) => serializer.collect_str(value),
        }
    }
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

/// Reads a JSON text into one of the incoming structs, every field [`lenient`].
///
/// A chunk comes for every token, so the text is read straight into the struct. A field of the
/// wrong type that is a scalar is read past whole and reads as absent; one that is an object or
/// a list stops the parser where it stands, the read fails, and the text is read again through a
/// [`Value`], where every field is whole in itself.
pub fn parse_lenient<T: serde::de::DeserializeOwned>(text: &[u8]) -> serde_json::Result<T> {
    serde_json::from_slice(text).or_else(|_| T::deserialize(serde_json::from_slice::<Value>(text)?))
}

/// Reads a value as `Some` when it has the expected type and `None` otherwise (including `null`).
/// Sound only through [`parse_lenient`]: a failed read must leave the input where a whole one
/// would, or fail the read of the whole text. `null` is read as an option's: nearly every chunk
/// has a `"finish_reason": null`, and a failed read formats an error message.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer).ok().flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each field of the wrong type, scalar or compound, at each depth, reads as absent and the
    /// rest of the chunk is kept, the same as when the chunk is read through a `Value`.
    #[test]
    fn wrong_types_read_as_absent_and_keep_the_rest_of_the_chunk() {
        let chunks = [
            r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":null}],"usage":{"prompt_tokens":3}}"#,
            r#"{"choices":[{"delta":{"content":5,"reasoning":"r"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"delta":{"content":{"a":[1,{"b":2}]},"reasoning":"r"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"delta":{"content":["x"],"reasoning":"r"},"finish_reason":["stop"]}],"usage":{"prompt_tokens":3}}"#,
            r#"{"choices":{"delta":{}},"usage":{"prompt_tokens":"3","completion_tokens":4}}"#,
            r#"{"choices":[7,{"delta":{"content":"b"}}],"usage":[1]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":"0","id":["a"],"function":{"name":1,"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":{"index":0}}}],"usage":{"prompt_tokens":-1,"completion_tokens":1.5}}"#,
            r#"{"choices":"none","usage":{"prompt_tokens_details":{"cached_tokens":[2]},"prompt_tokens":9}}"#,
        ];
        let read: Vec<String> = chunks
            .iter()
            .map(|text| {
                let direct: ChatChunk = parse_lenient(text.as_bytes()).expect("valid JSON is read");
                let value: Value = serde_json::from_str(text).expect("valid JSON");
                let through_value = ChatChunk::deserialize(value).expect("a Value reads whole");
                let direct = format!("{:?} {:?}", direct.choices, direct.usage);
                assert_eq!(direct, format!("{:?} {:?}", through_value.choices, through_value.usage), "{text}");
                direct
            })
            .collect();
        expect_test::expect![[r#"
            Some([Choice { delta: Some(Delta { content: Some("hi"), reasoning_content: None, reasoning: None, tool_calls: None }), finish_reason: None }]) Some(WireUsage { prompt_tokens: Some(3), completion_tokens: None, prompt_tokens_details: None })
            Some([Choice { delta: Some(Delta { content: None, reasoning_content: None, reasoning: Some("r"), tool_calls: None }), finish_reason: Some("stop") }]) None
            Some([Choice { delta: Some(Delta { content: None, reasoning_content: None, reasoning: Some("r"), tool_calls: None }), finish_reason: Some("stop") }]) None
            Some([Choice { delta: Some(Delta { content: None, reasoning_content: None, reasoning: Some("r"), tool_calls: None }), finish_reason: None }]) Some(WireUsage { prompt_tokens: Some(3), completion_tokens: None, prompt_tokens_details: None })
            None Some(WireUsage { prompt_tokens: None, completion_tokens: Some(4), prompt_tokens_details: None })
            None Some(WireUsage { prompt_tokens: Some(1), completion_tokens: None, prompt_tokens_details: None })
            Some([Choice { delta: Some(Delta { content: None, reasoning_content: None, reasoning: None, tool_calls: Some([ToolCallDelta { index: None, id: None, function: Some(FunctionDelta { name: None, arguments: Some(String("{}")) }) }]) }), finish_reason: None }]) None
            Some([Choice { delta: Some(Delta { content: None, reasoning_content: None, reasoning: None, tool_calls: None }), finish_reason: None }]) Some(WireUsage { prompt_tokens: None, completion_tokens: None, prompt_tokens_details: None })
            None Some(WireUsage { prompt_tokens: Some(9), completion_tokens: None, prompt_tokens_details: Some(PromptTokensDetails { cached_tokens: None }) })"#]]
        .assert_eq(&read.join("\n"));
    }

    #[test]
    fn text_that_is_not_json_is_an_error() {
        assert!(parse_lenient::<ChatChunk>(br#"{"choices":[{"delta":{"content":"hi"}}"#).is_err());
        assert!(parse_lenient::<ChatChunk>(br#"{"choices":[]} trailing"#).is_err());
    }
}
