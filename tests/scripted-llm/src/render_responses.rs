//! Turns a [`Reply`] into OpenAI Responses API payloads (`POST …/responses`): the named SSE
//! events of a streamed response, or a whole response object. Pure functions; the server decides
//! how to write them. Codex speaks only this API, so the bench needs it to run Codex as a peer.
//!
//! Each part of the reply becomes an output item: reasoning (with its text as a summary), then
//! the message, then one `function_call` per tool call. A scripted stream error ends the stream
//! with `response.failed`.

use serde_json::{Value, json};

use crate::render::{RequestShape, pieces, tool_call_id, usage};
use crate::render_anthropic::NamedEvent;
use crate::reply::Reply;

/// The id of every scripted response.
const RESPONSE_ID: &str = "resp_scripted";

/// Every SSE event of a streamed reply, in order, ending with `response.completed` (or
/// `response.failed` when the script has a stream error).
pub fn stream_events(reply: &Reply, shape: &RequestShape) -> Vec<NamedEvent> {
    let mut sequence = 0_u64;
    let mut events: Vec<NamedEvent> = Vec::new();
    let mut push = |name: &'static str, fields: Value| {
        let mut data = json!({ "type": name, "sequence_number": sequence });
        if let (Some(data), Value::Object(fields)) = (data.as_object_mut(), fields) {
            data.extend(fields);
        }
        sequence += 1;
        events.push((name, data));
    };
    push("response.created", json!({ "response": head(shape, "in_progress") }));
    push("response.in_progress", json!({ "response": head(shape, "in_progress") }));
    for (index, item) in items(reply).into_iter().enumerate() {
        let added = match &item {
            Item::Reasoning { id, .. } => json!({ "type": "reasoning", "id": id, "summary": [] }),
            Item::Message { id, .. } => {
                json!({ "type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": [] })
            }
            Item::FunctionCall { id, call_id, name, .. } => json!({
                "type": "function_call", "id": id, "call_id": call_id, "name": name,
                "arguments": "", "status": "in_progress",
            }),
        };
        push("response.output_item.added", json!({ "output_index": index, "item": added }));
        match &item {
            Item::Reasoning { id, text } => {
                for piece in pieces(text, reply.chunk_chars) {
                    push(
                        "response.reasoning_summary_text.delta",
                        json!({ "item_id": id, "output_index": index, "summary_index": 0, "delta": piece }),
                    );
                }
            }
            Item::Message { id, text } => {
                let part = json!({ "type": "output_text", "text": "", "annotations": [] });
                let at = json!({ "item_id": id, "output_index": index, "content_index": 0 });
                push("response.content_part.added", with(&at, "part", part));
                for piece in pieces(text, reply.chunk_chars) {
                    push("response.output_text.delta", with(&at, "delta", json!(piece)));
                }
                push("response.output_text.done", with(&at, "text", json!(text)));
            }
            Item::FunctionCall { id, arguments, .. } => {
                for piece in pieces(arguments, reply.chunk_chars) {
                    push(
                        "response.function_call_arguments.delta",
                        json!({ "item_id": id, "output_index": index, "delta": piece }),
                    );
                }
            }
        }
        push("response.output_item.done", json!({ "output_index": index, "item": item.done() }));
    }
    if let Some(error) = &reply.stream_error {
        let mut failed = head(shape, "failed");
        failed["error"] = error_object(error);
        push("response.failed", json!({ "response": failed }));
        return events;
    }
    push("response.completed", json!({ "response": response(reply, shape) }));
    events
}

/// The reply as one whole, completed `response` object.
pub fn response(reply: &Reply, shape: &RequestShape) -> Value {
    let usage = usage(reply, shape);
    let mut response = head(shape, if reply.finish_reason() == "length" { "incomplete" } else { "completed" });
    response["output"] = Value::Array(items(reply).iter().map(Item::done).collect());
    response["usage"] = json!({
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": { "cached_tokens": usage.cached_tokens },
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": { "reasoning_tokens": 0 },
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    });
    if reply.finish_reason() == "length" {
        response["incomplete_details"] = json!({ "reason": "max_output_tokens" });
    }
    response
}

/// Characters of instructions and input in a Responses request, for usage estimates.
pub fn prompt_chars(body: &Value) -> usize {
    let text = |value: Option<&Value>| match value {
        Some(Value::String(text)) => text.chars().count(),
        Some(Value::Null) | None => 0,
        Some(other) => other.to_string().len(),
    };
    text(body.get("instructions")) + text(body.get("input"))
}

/// An output item of the reply, in stream order.
enum Item {
    Reasoning { id: String, text: String },
    Message { id: String, text: String },
    FunctionCall { id: String, call_id: String, name: String, arguments: String },
}

impl Item {
    /// The item as `response.output_item.done` and the whole response carry it.
    fn done(&self) -> Value {
        match self {
            Item::Reasoning { id, text } => {
                json!({ "type": "reasoning", "id": id, "summary": [{ "type": "summary_text", "text": text }] })
            }
            Item::Message { id, text } => json!({
                "type": "message", "id": id, "role": "assistant", "status": "completed",
                "content": [{ "type": "output_text", "text": text, "annotations": [] }],
            }),
            Item::FunctionCall { id, call_id, name, arguments } => json!({
                "type": "function_call", "id": id, "call_id": call_id, "name": name,
                "arguments": arguments, "status": "completed",
            }),
        }
    }
}

fn items(reply: &Reply) -> Vec<Item> {
    let mut items = Vec::new();
    if !reply.thinking.is_empty() {
        items.push(Item::Reasoning { id: "rs_scripted".into(), text: reply.thinking.clone() });
    }
    if !reply.text.is_empty() {
        items.push(Item::Message { id: "msg_scripted".into(), text: reply.text.clone() });
    }
    for (position, call) in reply.tool_calls.iter().enumerate() {
        items.push(Item::FunctionCall {
            id: format!("fc_{position}"),
            call_id: tool_call_id(&call.id, position),
            name: call.name.clone(),
            arguments: call.arguments_text(),
        });
    }
    items
}

fn head(shape: &RequestShape, status: &str) -> Value {
    json!({
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": shape.model,
        "output": [],
    })
}

/// `base` with one more field.
fn with(base: &Value, key: &str, value: Value) -> Value {
    let mut object = base.clone();
    object[key] = value;
    object
}

/// The scripted stream error as the Responses API's `{code, message}`.
fn error_object(error: &Value) -> Value {
    let code = error.get("code").or_else(|| error.get("type")).and_then(Value::as_str).unwrap_or("server_error");
    let message = match error {
        Value::String(message) => message.clone(),
        _ => error.get("message").and_then(Value::as_str).unwrap_or("scripted error").to_string(),
    };
    json!({ "code": code, "message": message })
}
