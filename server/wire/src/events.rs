//! Agent events and the messages in them as JSON: what `reins/event` carries and `reins run
//! --json` prints, the pi agent's shapes. What streams is built as borrowed `Wire*` views that
//! serde writes as they are, without a JSON tree per event.

use reins_agent::{AgentEvent, Todo, TurnEndReason};
use reins_ai::{
    AssistantMessage, Content, Cost, Message, ProviderError, ProviderErrorKind, StopReason, StreamEvent,
    ToolResultMessage, Usage, UserMessage,
};
use serde::Serialize;
use serde_json::Value;

/// An agent event, as `reins/event` carries it and `reins run --json` prints it: borrowed
/// views of the event that serde writes as they are, without a JSON tree in between (the
/// terminal prints one per streamed delta).
pub fn agent_event(event: &AgentEvent) -> WireEvent<'_> {
    match event {
        AgentEvent::AgentStart => WireEvent::AgentStart,
        AgentEvent::TurnStart { turn } => WireEvent::TurnStart { turn: *turn },
        AgentEvent::MessageStart { message: m } => WireEvent::MessageStart { message: message(m) },
        AgentEvent::MessageUpdate { delta } => WireEvent::MessageUpdate { delta: stream_event(delta) },
        AgentEvent::MessageEnd { message: m } => WireEvent::MessageEnd { message: message(m) },
        AgentEvent::ToolExecutionStart { tool_call_id, tool_name, args, .. } => {
            WireEvent::ToolExecutionStart { tool_call_id, tool_name, args }
        }
        AgentEvent::ToolExecutionUpdate { tool_call_id, tool_name, partial } => {
            WireEvent::ToolExecutionUpdate { tool_call_id, tool_name, partial }
        }
        AgentEvent::ToolExecutionEnd { tool_call_id, tool_name, result, is_error } => WireEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            result: tool_result_fields(result),
            is_error: *is_error,
        },
        AgentEvent::TodoUpdate { tool_call_id, todos: list } => {
            WireEvent::TodoUpdate { tool_call_id, todos: todos(list) }
        }
        AgentEvent::TurnEnd { turn, reason, message, tool_results } => WireEvent::TurnEnd {
            turn: *turn,
            reason: turn_end_reason(*reason),
            message: assistant_fields(message),
            tool_results: tool_results.iter().map(tool_result_fields).collect(),
        },
        AgentEvent::AgentEnd { reason, messages, usage: total, error } => WireEvent::AgentEnd {
            reason: turn_end_reason(*reason),
            messages: messages.iter().map(message).collect(),
            usage: usage(total),
            error: error.as_deref(),
        },
    }
}

/// A wire shape as a JSON value. Wire shapes have string keys and no failing `Serialize`, so
/// this cannot fail; `null` stands in if it ever did.
pub fn to_value(wire: &impl Serialize) -> Value {
    serde_json::to_value(wire).unwrap_or(Value::Null)
}

/// An agent event on the wire (see [`agent_event`]).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum WireEvent<'a> {
    AgentStart,
    TurnStart {
        turn: u32,
    },
    MessageStart {
        message: WireMessage<'a>,
    },
    MessageUpdate {
        delta: WireDelta<'a>,
    },
    MessageEnd {
        message: WireMessage<'a>,
    },
    ToolExecutionStart {
        tool_call_id: &'a str,
        tool_name: &'a str,
        args: &'a Value,
    },
    ToolExecutionUpdate {
        tool_call_id: &'a str,
        tool_name: &'a str,
        partial: &'a str,
    },
    ToolExecutionEnd {
        tool_call_id: &'a str,
        tool_name: &'a str,
        result: WireToolResult<'a>,
        is_error: bool,
    },
    TodoUpdate {
        tool_call_id: &'a str,
        todos: Vec<WireTodo<'a>>,
    },
    TurnEnd {
        turn: u32,
        reason: &'static str,
        message: WireAssistant<'a>,
        tool_results: Vec<WireToolResult<'a>>,
    },
    AgentEnd {
        reason: &'static str,
        messages: Vec<WireMessage<'a>>,
        usage: WireUsage,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a str>,
    },
}

/// A step of a todo list on the wire (see [`todos`]).
#[derive(Serialize)]
pub struct WireTodo<'a> {
    content: &'a str,
    status: &'static str,
}

/// A todo list: each step's content and status (`pending`, `in_progress`, `completed`).
pub fn todos(todos: &[Todo]) -> Vec<WireTodo<'_>> {
    todos.iter().map(|todo| WireTodo { content: &todo.content, status: todo.status.as_str() }).collect()
}

/// A streamed piece of a message on the wire (see [`stream_event`]).
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum WireDelta<'a> {
    Text { index: usize, delta: &'a str },
    Thinking { index: usize, delta: &'a str },
    ToolCall { index: usize, id: &'a str, name: &'a str, arguments_delta: &'a str },
    Retry { attempt: u32, max_retries: u32, delay_ms: u64, reason: &'a str },
}

/// A message on the wire, with its `role` (see [`message`]).
#[derive(Serialize)]
#[serde(tag = "role")]
pub enum WireMessage<'a> {
    #[serde(rename = "user")]
    User(WireUser<'a>),
    #[serde(rename = "assistant")]
    Assistant(WireAssistant<'a>),
    #[serde(rename = "toolResult")]
    ToolResult(WireToolResult<'a>),
}

#[derive(Serialize)]
pub struct WireUser<'a> {
    content: Vec<WireContent<'a>>,
    timestamp: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireAssistant<'a> {
    content: Vec<WireContent<'a>>,
    provider: &'a str,
    model: &'a str,
    usage: WireUsage,
    stop_reason: &'static str,
    timestamp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<WireProviderError<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireToolResult<'a> {
    tool_call_id: &'a str,
    tool_name: &'a str,
    content: Vec<WireContent<'a>>,
    is_error: bool,
    timestamp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a Value>,
}

/// One block of a message on the wire, with its `type` (see [`content`]).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum WireContent<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        signature: Option<&'a str>,
    },
    ToolCall {
        id: &'a str,
        name: &'a str,
        arguments: &'a Value,
    },
    Image {
        data: &'a str,
        mime_type: &'a str,
    },
}

/// Tokens and cost on the wire (see [`usage`]).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireUsage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    total_tokens: u64,
    cost: WireCost,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WireCost {
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
    total: f64,
}

#[derive(Serialize)]
pub struct WireProviderError<'a> {
    kind: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
}

pub fn turn_end_reason(reason: TurnEndReason) -> &'static str {
    match reason {
        TurnEndReason::FinalAnswer => "final_answer",
        TurnEndReason::ToolObservations => "tool_observations",
        TurnEndReason::MaxTurns => "max_turns",
        TurnEndReason::RepeatedAction => "repeated_action",
        TurnEndReason::Deadline => "deadline",
        TurnEndReason::Budget => "budget",
        TurnEndReason::Refusal => "refusal",
        TurnEndReason::Aborted => "aborted",
        TurnEndReason::Error => "error",
    }
}

/// A piece of a streaming message.
pub fn stream_event(event: &StreamEvent) -> WireDelta<'_> {
    match event {
        StreamEvent::Text { index, delta } => WireDelta::Text { index: *index, delta },
        StreamEvent::Thinking { index, delta } => WireDelta::Thinking { index: *index, delta },
        StreamEvent::ToolCall { index, id, name, arguments_delta } => {
            WireDelta::ToolCall { index: *index, id, name, arguments_delta }
        }
        StreamEvent::Retry { attempt, max_retries, delay_ms, reason } => {
            WireDelta::Retry { attempt: *attempt, max_retries: *max_retries, delay_ms: *delay_ms, reason }
        }
    }
}

/// A message of the conversation, with its `role` (the pi agent's shape).
pub fn message(message: &Message) -> WireMessage<'_> {
    match message {
        Message::User(user) => WireMessage::User(user_fields(user)),
        Message::Assistant(assistant) => WireMessage::Assistant(assistant_fields(assistant)),
        Message::ToolResult(result) => WireMessage::ToolResult(tool_result_fields(result)),
    }
}

fn user_fields(user: &UserMessage) -> WireUser<'_> {
    WireUser { content: contents(&user.content), timestamp: user.timestamp }
}

fn assistant_fields(assistant: &AssistantMessage) -> WireAssistant<'_> {
    WireAssistant {
        content: contents(&assistant.content),
        provider: &assistant.provider,
        model: &assistant.model,
        usage: usage(&assistant.usage),
        stop_reason: stop_reason(assistant.stop_reason),
        timestamp: assistant.timestamp,
        error: assistant.error.as_ref().map(provider_error),
    }
}

fn tool_result_fields(result: &ToolResultMessage) -> WireToolResult<'_> {
    WireToolResult {
        tool_call_id: &result.tool_call_id,
        tool_name: &result.tool_name,
        content: contents(&result.content),
        is_error: result.is_error,
        timestamp: result.timestamp,
        details: result.details.as_ref(),
    }
}

fn contents(blocks: &[Content]) -> Vec<WireContent<'_>> {
    blocks.iter().map(content).collect()
}

/// One block of a message, with its `type`.
pub fn content(block: &Content) -> WireContent<'_> {
    match block {
        Content::Text { text } => WireContent::Text { text },
        Content::Thinking { thinking, signature } => {
            WireContent::Thinking { thinking, signature: signature.as_deref() }
        }
        Content::ToolCall(call) => WireContent::ToolCall { id: &call.id, name: &call.name, arguments: &call.arguments },
        Content::Image { data, mime_type } => WireContent::Image { data, mime_type },
    }
}

fn stop_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ToolUse => "toolUse",
        StopReason::Refusal => "refusal",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
    }
}

/// Tokens and cost.
pub fn usage(usage: &Usage) -> WireUsage {
    WireUsage {
        input: usage.input,
        output: usage.output,
        cache_read: usage.cache_read,
        cache_write: usage.cache_write,
        total_tokens: usage.total_tokens,
        cost: cost(&usage.cost),
    }
}

fn cost(cost: &Cost) -> WireCost {
    WireCost {
        input: cost.input,
        output: cost.output,
        cache_read: cost.cache_read,
        cache_write: cost.cache_write,
        total: cost.total,
    }
}

fn provider_error(error: &ProviderError) -> WireProviderError<'_> {
    let kind = match error.kind {
        ProviderErrorKind::Http => "http",
        ProviderErrorKind::Auth => "auth",
        ProviderErrorKind::ContextOverflow => "context_overflow",
        ProviderErrorKind::Connection => "connection",
        ProviderErrorKind::OpenFiles => "open_files",
        ProviderErrorKind::Timeout => "timeout",
        ProviderErrorKind::Stream => "stream",
        ProviderErrorKind::Protocol => "protocol",
        ProviderErrorKind::Aborted => "aborted",
    };
    WireProviderError { kind, message: &error.message, status: error.status }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;

    #[test]
    fn agent_events_have_the_pi_agents_shapes() {
        use reins_ai::ToolCall;
        let assistant = AssistantMessage {
            content: vec![
                Content::Thinking { thinking: "hm".into(), signature: Some("sig".into()) },
                Content::ToolCall(ToolCall { id: "c1".into(), name: "read".into(), arguments: json!({"path": "a"}) }),
            ],
            provider: "openai".into(),
            model: "gpt-4.1".into(),
            usage: Usage { input: 3, output: 2, total_tokens: 5, ..Usage::default() },
            stop_reason: StopReason::Error,
            error: Some(ProviderError {
                kind: ProviderErrorKind::ContextOverflow,
                status: Some(400),
                message: "long".into(),
            }),
            timestamp: 7,
        };
        let result = ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![Content::text("alpha")],
            is_error: false,
            details: None,
            timestamp: 8,
        };
        let turn_end = AgentEvent::TurnEnd {
            turn: 1,
            reason: TurnEndReason::ToolObservations,
            message: assistant.clone(),
            tool_results: vec![result],
        };
        expect![[r#"{"type":"turn_end","turn":1,"reason":"tool_observations","message":{"content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a"}}],"provider":"openai","model":"gpt-4.1","usage":{"input":3,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":5,"cost":{"input":0.0,"output":0.0,"cacheRead":0.0,"cacheWrite":0.0,"total":0.0}},"stopReason":"error","timestamp":7,"error":{"kind":"context_overflow","message":"long","status":400}},"toolResults":[{"toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"alpha"}],"isError":false,"timestamp":8}]}"#]]
        .assert_eq(&to_value(&agent_event(&turn_end)).to_string());
        // `reins run --json` writes the same value, straight from the event.
        let line: Value = serde_json::from_str(&serde_json::to_string(&agent_event(&turn_end)).unwrap()).unwrap();
        assert_eq!(line, to_value(&agent_event(&turn_end)));
        let user = Message::User(UserMessage { content: vec![Content::text("hi")], timestamp: 1 });
        expect![[r#"{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}"#]]
            .assert_eq(&to_value(&message(&user)).to_string());
        let delta =
            StreamEvent::ToolCall { index: 1, id: "c1".into(), name: "read".into(), arguments_delta: "{".into() };
        expect![[r#"{"type":"message_update","delta":{"kind":"tool_call","index":1,"id":"c1","name":"read","argumentsDelta":"{"}}"#]]
            .assert_eq(&to_value(&agent_event(&AgentEvent::MessageUpdate { delta })).to_string());
        let end = AgentEvent::AgentEnd {
            reason: TurnEndReason::Error,
            messages: vec![user, Message::Assistant(assistant)],
            usage: Usage::default(),
            error: Some("the model failed".into()),
        };
        let end = to_value(&agent_event(&end));
        assert_eq!(
            (&end["type"], &end["error"], &end["messages"][1]["role"]),
            (&json!("agent_end"), &json!("the model failed"), &json!("assistant"))
        );
        let start = to_value(&agent_event(&AgentEvent::AgentStart));
        assert_eq!(start, json!({"type": "agent_start"}));
        let todos = vec![
            reins_agent::Todo { content: "read".into(), status: reins_agent::TodoStatus::Completed },
            reins_agent::Todo { content: "fix".into(), status: reins_agent::TodoStatus::InProgress },
        ];
        let update = AgentEvent::TodoUpdate { tool_call_id: "c2".into(), todos };
        expect![[r#"{"type":"todo_update","toolCallId":"c2","todos":[{"content":"read","status":"completed"},{"content":"fix","status":"in_progress"}]}"#]]
            .assert_eq(&to_value(&agent_event(&update)).to_string());
    }
}
