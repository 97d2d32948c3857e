//! Stream events and content blocks as one-line JSON in the pi agent's shape, for the test
//! snapshots of the crate's unit tests and its integration tests (both include this file). The
//! core types carry no serde: the protocol layers build their own JSON.
#![allow(dead_code)]

use super::{Content, StreamEvent};

fn quoted(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

pub fn stream_event(event: &StreamEvent) -> String {
    match event {
        StreamEvent::Text { index, delta } => format!(r#"{{"kind":"text","index":{index},"delta":{}}}"#, quoted(delta)),
        StreamEvent::Thinking { index, delta } => {
            format!(r#"{{"kind":"thinking","index":{index},"delta":{}}}"#, quoted(delta))
        }
        StreamEvent::ToolCall { index, id, name, arguments_delta } => format!(
            r#"{{"kind":"tool_call","index":{index},"id":{},"name":{},"argumentsDelta":{}}}"#,
            quoted(id),
            quoted(name),
            quoted(arguments_delta)
        ),
        StreamEvent::Retry { attempt, max_retries, delay_ms, reason } => format!(
            r#"{{"kind":"retry","attempt":{attempt},"maxRetries":{max_retries},"delayMs":{delay_ms},"reason":{}}}"#,
            quoted(reason)
        ),
    }
}

pub fn contents(blocks: &[Content]) -> String {
    let blocks: Vec<String> = blocks
        .iter()
        .map(|block| match block {
            Content::Text { text } => format!(r#"{{"type":"text","text":{}}}"#, quoted(text)),
            Content::Thinking { thinking, signature: None } => {
                format!(r#"{{"type":"thinking","thinking":{}}}"#, quoted(thinking))
            }
            Content::Thinking { thinking, signature: Some(signature) } => {
                format!(r#"{{"type":"thinking","thinking":{},"signature":{}}}"#, quoted(thinking), quoted(signature))
            }
            Content::ToolCall(call) => format!(
                r#"{{"type":"toolCall","id":{},"name":{},"arguments":{}}}"#,
                quoted(&call.id),
                quoted(&call.name),
                call.arguments
            ),
            Content::Image { data, mime_type } => {
                format!(r#"{{"type":"image","data":{},"mimeType":{}}}"#, quoted(data), quoted(mime_type))
            }
        })
        .collect();
    format!("[{}]", blocks.join(","))
}
