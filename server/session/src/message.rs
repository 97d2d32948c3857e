//! The `message` object of a `message` entry as pi writes it, and its explicit conversion to and
//! from reins' in-memory [`reins_ai::Message`].
//!
//! The shapes differ in small ways: pi's user content may be a plain string, its assistant has
//! `api` and `errorMessage` where reins has a structured `error`, its thinking block says
//! `thinkingSignature`, and it has roles reins does not (`custom`, `bashExecution`, summaries),
//! which reach the model as user text. These structs are flat (no tagged enums, no flatten) so
//! that reading a long path stays fast; the raw line is what keeps unknown fields on disk.

use reins_ai::{
    AssistantMessage, Content, Cost, Message, ProviderError, ProviderErrorKind, StopReason, ToolCall,
    ToolResultMessage, Usage, UserMessage,
};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// pi's wording for summaries sent to the model, kept identical so both tools send the same text.
pub const COMPACTION_SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// A message as stored on disk. Fields a role does not use are `None`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRecord {
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentField>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The provider's own stop reason where `stopReason` does not say it all (pi 1.6); reins
    /// writes `refusal` here beside pi's `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    // `custom` and `bashExecution` roles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
    // `branchSummary` and `compactionSummary` roles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<u64>,
}

/// pi allows user (and custom) content to be a plain string.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ContentField {
    Text(String),
    Blocks(Vec<BlockRecord>),
}

/// One content block, flat: `kind` says which of the optional fields are meaningful.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockRecord {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// Usage as pi writes it; every field may be missing in older files.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UsageRecord {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    pub cost: CostRecord,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CostRecord {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: f64,
}

impl<'de> Deserialize<'de> for ContentField {
    // By hand rather than `untagged`, which would buffer every block before trying each variant.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl<'de> Visitor<'de> for FieldVisitor {
            type Value = ContentField;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<ContentField, E> {
                Ok(ContentField::Text(text.to_string()))
            }
            fn visit_string<E: de::Error>(self, text: String) -> Result<ContentField, E> {
                Ok(ContentField::Text(text))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ContentField, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(block) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(ContentField::Blocks(blocks))
            }
        }
        deserializer.deserialize_any(FieldVisitor)
    }
}

impl MessageRecord {
    /// The message the model sees for this record, or `None` when it sends nothing (a bash run
    /// excluded from context, a role nobody knows).
    pub fn to_message(&self) -> Option<Message> {
        self.clone().into_message()
    }

    /// As [`MessageRecord::to_message`], without copying the content.
    pub fn into_message(self) -> Option<Message> {
        let timestamp = self.timestamp.unwrap_or(0);
        let message = match self.role.as_str() {
            "user" => Message::User(UserMessage { content: content_of(self.content), timestamp }),
            "assistant" => Message::Assistant(self.into_assistant()),
            "toolResult" => Message::ToolResult(ToolResultMessage {
                tool_call_id: self.tool_call_id.unwrap_or_default(),
                tool_name: self.tool_name.unwrap_or_default(),
                content: content_of(self.content),
                is_error: self.is_error.unwrap_or(false),
                details: self.details,
                timestamp,
            }),
            "custom" | "hookMessage" => user_message(content_of(self.content), timestamp),
            "bashExecution" if self.exclude_from_context != Some(true) => {
                user_message(vec![Content::text(self.bash_text())], timestamp)
            }
            "branchSummary" => user_message(
                vec![Content::text(branch_summary_text(self.summary.as_deref().unwrap_or_default()))],
                timestamp,
            ),
            "compactionSummary" => user_message(
                vec![Content::text(compaction_summary_text(self.summary.as_deref().unwrap_or_default()))],
                timestamp,
            ),
            _ => return None,
        };
        Some(message)
    }

    /// The on-disk form of a reins message.
    pub fn from_message(message: &Message) -> MessageRecord {
        match message {
            Message::User(user) => MessageRecord {
                role: "user".into(),
                content: Some(blocks_field(&user.content)),
                timestamp: Some(user.timestamp),
                ..MessageRecord::default()
            },
            Message::Assistant(assistant) => MessageRecord {
                role: "assistant".into(),
                content: Some(blocks_field(&assistant.content)),
                provider: Some(assistant.provider.clone()),
                model: Some(assistant.model.clone()),
                usage: Some(UsageRecord::from(&assistant.usage)),
                stop_reason: Some(stop_reason_name(assistant.stop_reason).into()),
                error_message: match assistant.stop_reason {
                    StopReason::Refusal => Some(REFUSAL_MESSAGE.into()),
                    _ => assistant.error.as_ref().map(|error| error.message.clone()),
                },
                raw_stop_reason: (assistant.stop_reason == StopReason::Refusal).then(|| "refusal".into()),
                timestamp: Some(assistant.timestamp),
                ..MessageRecord::default()
            },
            Message::ToolResult(result) => MessageRecord {
                role: "toolResult".into(),
                tool_call_id: Some(result.tool_call_id.clone()),
                tool_name: Some(result.tool_name.clone()),
                content: Some(blocks_field(&result.content)),
                details: result.details.clone(),
                // A tool that called a model itself (a subagent's `task`) says what that cost in
                // its details' `usage`; the file keeps it where pi 1.6 keeps a tool's own usage.
                usage: result
                    .details
                    .as_ref()
                    .and_then(|details| details.get("usage"))
                    .and_then(|usage| serde_json::from_value(usage.clone()).ok()),
                is_error: Some(result.is_error),
                timestamp: Some(result.timestamp),
                ..MessageRecord::default()
            },
        }
    }

    /// The text of a user or assistant message, blocks joined with spaces (for listings).
    pub fn plain_text(&self) -> String {
        match &self.content {
            Some(ContentField::Text(text)) => text.clone(),
            Some(ContentField::Blocks(blocks)) => blocks
                .iter()
                .filter(|b| b.kind == "text")
                .filter_map(|b| b.text.as_deref())
                .collect::<Vec<_>>()
                .join(" "),
            None => String::new(),
        }
    }

    fn into_assistant(self) -> AssistantMessage {
        let stop_reason = match self.stop_reason.as_deref() {
            Some("length") => StopReason::Length,
            Some("toolUse") => StopReason::ToolUse,
            Some("error") if is_refusal(self.raw_stop_reason.as_deref()) => StopReason::Refusal,
            Some("error") => StopReason::Error,
            Some("aborted") => StopReason::Aborted,
            _ => StopReason::Stop,
        };
        // pi keeps only the text of an error; its kind is not on disk. A refusal is no failure.
        let error = self.error_message.filter(|_| stop_reason != StopReason::Refusal).map(|message| {
            let kind =
                if stop_reason == StopReason::Aborted { ProviderErrorKind::Aborted } else { ProviderErrorKind::Http };
            ProviderError::new(kind, message)
        });
        AssistantMessage {
            content: content_of(self.content),
            provider: self.provider.unwrap_or_default(),
            model: self.model.unwrap_or_default(),
            usage: self.usage.as_ref().map(Usage::from).unwrap_or_default(),
            stop_reason,
            error,
            timestamp: self.timestamp.unwrap_or(0),
        }
    }

    // Mirrors pi's `bashExecutionToText`, so both tools send the same words.
    fn bash_text(&self) -> String {
        let mut text = format!("Ran `{}`\n", self.command.as_deref().unwrap_or_default());
        match self.output.as_deref() {
            Some(output) if !output.is_empty() => text.push_str(&format!("```\n{output}\n```")),
            _ => text.push_str("(no output)"),
        }
        if self.cancelled == Some(true) {
            text.push_str("\n\n(command cancelled)");
        } else if let Some(code) = self.exit_code.filter(|code| *code != 0) {
            text.push_str(&format!("\n\nCommand exited with code {code}"));
        }
        text
    }
}

impl ContentField {
    pub fn into_content(self) -> Vec<Content> {
        match self {
            ContentField::Text(text) => vec![Content::text(text)],
            ContentField::Blocks(blocks) => blocks.into_iter().filter_map(BlockRecord::into_content).collect(),
        }
    }
}

impl BlockRecord {
    fn into_content(self) -> Option<Content> {
        let block = match self.kind.as_str() {
            "text" => Content::text(self.text.unwrap_or_default()),
            "thinking" => {
                Content::Thinking { thinking: self.thinking.unwrap_or_default(), signature: self.thinking_signature }
            }
            "toolCall" => Content::ToolCall(ToolCall {
                id: self.id.unwrap_or_default(),
                name: self.name.unwrap_or_default(),
                arguments: self.arguments.unwrap_or(Value::Object(Default::default())),
            }),
            "image" => {
                Content::Image { data: self.data.unwrap_or_default(), mime_type: self.mime_type.unwrap_or_default() }
            }
            _ => return None,
        };
        Some(block)
    }

    fn from_content(content: &Content) -> BlockRecord {
        match content {
            Content::Text { text } => {
                BlockRecord { kind: "text".into(), text: Some(text.clone()), ..Default::default() }
            }
            Content::Thinking { thinking, signature } => BlockRecord {
                kind: "thinking".into(),
                thinking: Some(thinking.clone()),
                thinking_signature: signature.clone(),
                ..Default::default()
            },
            Content::ToolCall(call) => BlockRecord {
                kind: "toolCall".into(),
                id: Some(call.id.clone()),
                name: Some(call.name.clone()),
                arguments: Some(call.arguments.clone()),
                ..Default::default()
            },
            Content::Image { data, mime_type } => BlockRecord {
                kind: "image".into(),
                data: Some(data.clone()),
                mime_type: Some(mime_type.clone()),
                ..Default::default()
            },
        }
    }
}

impl From<&UsageRecord> for Usage {
    fn from(usage: &UsageRecord) -> Usage {
        Usage {
            input: usage.input,
            output: usage.output,
            cache_read: usage.cache_read,
            cache_write: usage.cache_write,
            total_tokens: usage.total_tokens,
            cost: Cost {
                input: usage.cost.input,
                output: usage.cost.output,
                cache_read: usage.cost.cache_read,
                cache_write: usage.cost.cache_write,
                total: usage.cost.total,
            },
        }
    }
}

impl From<&Usage> for UsageRecord {
    fn from(usage: &Usage) -> UsageRecord {
        UsageRecord {
            input: usage.input,
            output: usage.output,
            cache_read: usage.cache_read,
            cache_write: usage.cache_write,
            total_tokens: usage.total_tokens,
            cost: CostRecord {
                input: usage.cost.input,
                output: usage.cost.output,
                cache_read: usage.cost.cache_read,
                cache_write: usage.cost.cache_write,
                total: usage.cost.total,
            },
        }
    }
}

pub fn compaction_summary_text(summary: &str) -> String {
    format!("{COMPACTION_SUMMARY_PREFIX}{summary}{COMPACTION_SUMMARY_SUFFIX}")
}

pub fn branch_summary_text(summary: &str) -> String {
    format!("{BRANCH_SUMMARY_PREFIX}{summary}{BRANCH_SUMMARY_SUFFIX}")
}

fn content_of(field: Option<ContentField>) -> Vec<Content> {
    field.map(ContentField::into_content).unwrap_or_default()
}

pub(crate) fn user_message(content: Vec<Content>, timestamp: u64) -> Message {
    Message::User(UserMessage { content, timestamp })
}

fn blocks_field(content: &[Content]) -> ContentField {
    ContentField::Blocks(content.iter().map(BlockRecord::from_content).collect())
}

fn stop_reason_name(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ToolUse => "toolUse",
        // pi has no word for a refusal: its providers record one as an error, and so does reins,
        // with `rawStopReason` saying which.
        StopReason::Error | StopReason::Refusal => "error",
        StopReason::Aborted => "aborted",
    }
}

/// The `errorMessage` of a refusal, which pi shows.
const REFUSAL_MESSAGE: &str = "The model refused to answer.";

/// Whether a provider's raw stop reason (`rawStopReason`, as reins and pi 1.6 write it) is a refusal.
fn is_refusal(raw: Option<&str>) -> bool {
    matches!(raw, Some("refusal" | "content_filter" | "sensitive"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assistant(stop_reason: StopReason) -> Message {
        Message::Assistant(AssistantMessage {
            content: vec![Content::Text { text: "I can't".into() }],
            stop_reason,
            ..AssistantMessage::default()
        })
    }

    #[test]
    fn a_refusal_is_written_as_pi_writes_one_and_read_back_as_a_refusal() {
        let record = MessageRecord::from_message(&assistant(StopReason::Refusal));
        let json = serde_json::to_value(&record).unwrap();
        assert_eq!(
            (&json["stopReason"], &json["rawStopReason"], &json["errorMessage"]),
            (&Value::from("error"), &Value::from("refusal"), &Value::from(REFUSAL_MESSAGE))
        );
        let back = serde_json::from_value::<MessageRecord>(json).unwrap().into_message();
        assert_eq!(back, Some(assistant(StopReason::Refusal)));

        // pi 1.6's Anthropic refusal, with its explanation; a plain error stays an error.
        let pi = r#"{"role":"assistant","content":[],"stopReason":"error","rawStopReason":"refusal","errorMessage":"policy"}"#;
        let read = serde_json::from_str::<MessageRecord>(pi).unwrap().into_message();
        let Some(Message::Assistant(read)) = read else { panic!("{read:?}") };
        assert_eq!((read.stop_reason, read.error), (StopReason::Refusal, None));
        let pi = r#"{"role":"assistant","content":[],"stopReason":"error","errorMessage":"overloaded"}"#;
        let read = serde_json::from_str::<MessageRecord>(pi).unwrap().into_message();
        let Some(Message::Assistant(read)) = read else { panic!("{read:?}") };
        assert_eq!(read.stop_reason, StopReason::Error);
    }
}
