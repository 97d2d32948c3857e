//! Turns a [`Reply`] into OpenAI wire payloads: streamed chunk objects, a whole completion, or an
//! error body. Pure functions; the server decides how to write them.

use serde_json::{Value, json};

use crate::reply::{Reply, ScriptedUsage};

/// What the request asked for that shapes the answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestShape {
    pub model: String,
    pub include_usage: bool,
    /// Characters of message content in the request, for estimated usage.
    pub prompt_chars: usize,
}

/// How one streamed event ends the body.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    Chunk(Value),
    Done,
}

/// Every SSE event of a streamed reply, in order, ending with `[DONE]` (or the error payload).
pub fn stream_events(reply: &Reply, shape: &RequestShape) -> Vec<StreamEvent> {
    let mut deltas: Vec<(Value, Option<String>)> = vec![(json!({"role": "assistant", "content": ""}), None)];
    let reasoning_key = if reply.reasoning_field { "reasoning" } else { "reasoning_content" };
    for piece in pieces(&reply.thinking, reply.chunk_chars) {
        deltas.push((json!({ reasoning_key: piece }), None));
    }
    for piece in pieces(&reply.text, reply.chunk_chars) {
        deltas.push((json!({ "content": piece }), None));
    }
    for (position, call) in reply.tool_calls.iter().enumerate() {
        let index = if reply.reuse_index_zero { 0 } else { position };
        let head = json!({
            "index": index,
            "id": tool_call_id(&call.id, position),
            "type": "function",
            "function": { "name": call.name, "arguments": "" },
        });
        deltas.push((json!({ "tool_calls": [head] }), None));
        for piece in pieces(&call.arguments_text(), reply.chunk_chars) {
            deltas.push((json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] }), None));
        }
    }
    let mut events: Vec<StreamEvent> =
        deltas.into_iter().map(|(delta, finish)| StreamEvent::Chunk(chunk(shape, delta, finish))).collect();
    if let Some(error) = &reply.stream_error {
        events.push(StreamEvent::Chunk(json!({ "error": error })));
        return events;
    }
    events.push(StreamEvent::Chunk(chunk(shape, json!({}), Some(reply.finish_reason()))));
    if shape.include_usage {
        events.push(StreamEvent::Chunk(json!({
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": shape.model,
            "choices": [],
            "usage": usage_json(usage(reply, shape)),
        })));
    }
    events.push(StreamEvent::Done);
    events
}

/// The reply as one non-streamed `chat.completion` object.
pub fn completion(reply: &Reply, shape: &RequestShape) -> Value {
    let tool_calls: Vec<Value> = reply
        .tool_calls
        .iter()
        .enumerate()
        .map(|(position, call)| {
            json!({
                "id": tool_call_id(&call.id, position),
                "type": "function",
                "function": { "name": call.name, "arguments": call.arguments_text() },
            })
        })
        .collect();
    let mut message =
        json!({ "role": "assistant", "content": if reply.text.is_empty() { Value::Null } else { json!(reply.text) } });
    if !reply.thinking.is_empty() {
        let key = if reply.reasoning_field { "reasoning" } else { "reasoning_content" };
        message[key] = json!(reply.thinking);
    }
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": shape.model,
        "choices": [{ "index": 0, "message": message, "finish_reason": reply.finish_reason() }],
        "usage": usage_json(usage(reply, shape)),
    })
}

/// An OpenAI-style error body.
pub fn error_body(message: &str, kind: &str) -> Value {
    json!({ "error": { "message": message, "type": kind, "code": Value::Null } })
}

fn chunk(shape: &RequestShape, delta: Value, finish_reason: Option<String>) -> Value {
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": shape.model,
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish_reason }],
    })
}

pub fn tool_call_id(id: &str, position: usize) -> String {
    if id.is_empty() { format!("call_{position}") } else { id.to_string() }
}

pub fn usage(reply: &Reply, shape: &RequestShape) -> ScriptedUsage {
    if let Some(usage) = reply.usage {
        return usage;
    }
    // A rough chars/4 estimate, so benchmarks see plausible counts without scripting them.
    let completion_chars = reply.text.chars().count()
        + reply.thinking.chars().count()
        + reply.tool_calls.iter().map(|call| call.arguments_text().chars().count()).sum::<usize>();
    ScriptedUsage {
        prompt_tokens: shape.prompt_chars.div_ceil(4) as u64,
        completion_tokens: completion_chars.div_ceil(4) as u64,
        cached_tokens: 0,
        cache_write_tokens: 0,
    }
}

fn usage_json(usage: ScriptedUsage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": { "cached_tokens": usage.cached_tokens },
    })
}

/// Splits text into pieces of `size` chars (never inside a char).
pub fn pieces(text: &str, size: usize) -> Vec<String> {
    let size = size.max(1);
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|piece| piece.iter().collect()).collect()
}

/// Characters of message content in a request body, for usage estimates.
pub fn prompt_chars(body: &Value) -> usize {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else { return 0 };
    messages
        .iter()
        .map(|message| match message.get("content") {
            Some(Value::String(text)) => text.chars().count(),
            Some(other @ Value::Array(_)) => other.to_string().len(),
            _ => 0,
        })
        .sum()
}
