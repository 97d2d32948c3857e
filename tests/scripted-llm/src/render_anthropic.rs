//! Turns a [`Reply`] into Anthropic Messages API payloads: the named SSE events of a streamed
//! message, a whole message, or an error body. Pure functions; the server decides how to write them.
//!
//! The same scripts serve both wire formats, so OpenAI-flavoured fields are translated: finish
//! reasons become stop reasons, `prompt_tokens` (which includes the cached part) is split into
//! `input_tokens`, `cache_read_input_tokens` and `cache_creation_input_tokens`.

use serde_json::{Value, json};

use crate::render::{RequestShape, pieces, tool_call_id, usage};
use crate::reply::{Reply, ScriptedUsage};

/// The signature sent with a thinking block when the script names none.
const DEFAULT_SIGNATURE: &str = "scripted-signature";

/// One streamed event: its `event:` name and its `data:` object.
pub type NamedEvent = (&'static str, Value);

/// Every SSE event of a streamed reply, in order, ending with `message_stop` (or the error event).
pub fn stream_events(reply: &Reply, shape: &RequestShape) -> Vec<NamedEvent> {
    let usage = usage(reply, shape);
    let mut message = message_head(shape);
    message["usage"] = start_usage(usage);
    let mut events = vec![("message_start", json!({ "type": "message_start", "message": message }))];
    events.push(("ping", json!({ "type": "ping" })));
    for (index, block) in blocks(reply).into_iter().enumerate() {
        events.extend(block_events(index, block, reply.chunk_chars));
    }
    if let Some(error) = &reply.stream_error {
        events.push(("error", json!({ "type": "error", "error": error_object(error) })));
        return events;
    }
    events.push((
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": { "stop_reason": stop_reason(reply), "stop_sequence": Value::Null },
            "usage": { "output_tokens": usage.completion_tokens },
        }),
    ));
    events.push(("message_stop", json!({ "type": "message_stop" })));
    events
}

/// The reply as one non-streamed `message` object.
pub fn message(reply: &Reply, shape: &RequestShape) -> Value {
    let usage = usage(reply, shape);
    let content: Vec<Value> = blocks(reply)
        .into_iter()
        .map(|block| match block {
            Block::RedactedThinking(data) => json!({ "type": "redacted_thinking", "data": data }),
            Block::Thinking { thinking, signature } => {
                json!({ "type": "thinking", "thinking": thinking, "signature": signature })
            }
            Block::Text(text) => json!({ "type": "text", "text": text }),
            Block::ToolUse { id, name, input_json } => {
                let input: Value = serde_json::from_str(&input_json).unwrap_or(Value::String(input_json));
                json!({ "type": "tool_use", "id": id, "name": name, "input": input })
            }
        })
        .collect();
    let mut message = message_head(shape);
    message["content"] = Value::Array(content);
    message["stop_reason"] = stop_reason(reply);
    let mut wire_usage = start_usage(usage);
    wire_usage["output_tokens"] = json!(usage.completion_tokens);
    message["usage"] = wire_usage;
    message
}

/// An Anthropic error body; the error type follows the status as the real API's does.
pub fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({ "type": "error", "error": { "type": kind, "message": message } })
}

/// A content block of the reply, in stream order.
enum Block {
    RedactedThinking(String),
    Thinking { thinking: String, signature: String },
    Text(String),
    ToolUse { id: String, name: String, input_json: String },
}

fn blocks(reply: &Reply) -> Vec<Block> {
    let mut blocks = Vec::new();
    if let Some(data) = &reply.redacted_thinking {
        blocks.push(Block::RedactedThinking(data.clone()));
    }
    if !reply.thinking.is_empty() {
        let signature = reply.thinking_signature.clone().unwrap_or_else(|| DEFAULT_SIGNATURE.to_string());
        blocks.push(Block::Thinking { thinking: reply.thinking.clone(), signature });
    }
    if !reply.text.is_empty() {
        blocks.push(Block::Text(reply.text.clone()));
    }
    for (position, call) in reply.tool_calls.iter().enumerate() {
        blocks.push(Block::ToolUse {
            id: tool_call_id(&call.id, position),
            name: call.name.clone(),
            input_json: call.arguments_text(),
        });
    }
    blocks
}

/// `content_block_start`, the deltas in `chunk_chars` pieces, `content_block_stop`.
fn block_events(index: usize, block: Block, chunk_chars: usize) -> Vec<NamedEvent> {
    let delta = |delta: Value| {
        ("content_block_delta", json!({ "type": "content_block_delta", "index": index, "delta": delta }))
    };
    let (start, deltas): (Value, Vec<NamedEvent>) = match block {
        Block::RedactedThinking(data) => (json!({ "type": "redacted_thinking", "data": data }), Vec::new()),
        Block::Thinking { thinking, signature } => {
            let mut deltas: Vec<NamedEvent> = pieces(&thinking, chunk_chars)
                .into_iter()
                .map(|piece| delta(json!({ "type": "thinking_delta", "thinking": piece })))
                .collect();
            deltas.push(delta(json!({ "type": "signature_delta", "signature": signature })));
            (json!({ "type": "thinking", "thinking": "", "signature": "" }), deltas)
        }
        Block::Text(text) => (
            json!({ "type": "text", "text": "" }),
            pieces(&text, chunk_chars)
                .into_iter()
                .map(|piece| delta(json!({ "type": "text_delta", "text": piece })))
                .collect(),
        ),
        Block::ToolUse { id, name, input_json } => (
            json!({ "type": "tool_use", "id": id, "name": name, "input": {} }),
            pieces(&input_json, chunk_chars)
                .into_iter()
                .map(|piece| delta(json!({ "type": "input_json_delta", "partial_json": piece })))
                .collect(),
        ),
    };
    let mut events =
        vec![("content_block_start", json!({ "type": "content_block_start", "index": index, "content_block": start }))];
    events.extend(deltas);
    events.push(("content_block_stop", json!({ "type": "content_block_stop", "index": index })));
    events
}

fn message_head(shape: &RequestShape) -> Value {
    json!({
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": shape.model,
        "content": [],
        "stop_reason": Value::Null,
        "stop_sequence": Value::Null,
    })
}

/// The usage of `message_start`: the prompt split into uncached, cache-read and cache-written.
fn start_usage(usage: ScriptedUsage) -> Value {
    let uncached = usage.prompt_tokens.saturating_sub(usage.cached_tokens).saturating_sub(usage.cache_write_tokens);
    json!({
        "input_tokens": uncached,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
        "output_tokens": 1,
    })
}

fn stop_reason(reply: &Reply) -> Value {
    match reply.finish_reason().as_str() {
        "" => Value::Null,
        "stop" => json!("end_turn"),
        "tool_calls" => json!("tool_use"),
        "length" => json!("max_tokens"),
        other => json!(other), // scripts may name Anthropic reasons directly: "refusal", "pause_turn"
    }
}

/// The scripted stream error as Anthropic's `{type, message}`; OpenAI's `server_error` is
/// Anthropic's `api_error`.
fn error_object(error: &Value) -> Value {
    let kind = match error.get("type").and_then(Value::as_str) {
        None | Some("server_error") => "api_error",
        Some(kind) => kind,
    };
    let message = match error {
        Value::String(message) => message.clone(),
        _ => error.get("message").and_then(Value::as_str).unwrap_or("scripted error").to_string(),
    };
    json!({ "type": kind, "message": message })
}
