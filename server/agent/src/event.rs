//! Agent events: what a run reports as it goes. `reins run --json` prints them one per line and
//! the LSP server forwards them as `reins/event`, so their JSON form is a protocol.

use reins_ai::{AssistantMessage, Message, StreamEvent, ToolResultMessage, Usage};
use serde_json::Value;

use crate::look::ToolLook;
use crate::todo::Todo;

#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    AgentStart,
    TurnStart {
        turn: u32,
    },
    /// A message entered the context: a prompt, a steering message, or the assistant's message
    /// as it starts streaming (empty content).
    MessageStart {
        message: Message,
    },
    /// A piece of the streaming assistant message.
    MessageUpdate {
        delta: StreamEvent,
    },
    MessageEnd {
        message: Message,
    },
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        /// How the call looks to a person, as its tool says ([`crate::Tool::look`]): what a
        /// surface shows instead of matching tool names.
        look: ToolLook,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        partial: String,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolResultMessage,
        is_error: bool,
    },
    /// A call (the `todo` tool's) replaced the session's todo list: the whole list as it is now.
    /// Comes between the call's start and its end.
    TodoUpdate {
        tool_call_id: String,
        todos: Vec<Todo>,
    },
    TurnEnd {
        turn: u32,
        reason: TurnEndReason,
        message: AssistantMessage,
        tool_results: Vec<ToolResultMessage>,
    },
    AgentEnd {
        reason: TurnEndReason,
        /// The messages this run added, in order.
        messages: Vec<Message>,
        /// Usage and cost of every model call in the run.
        usage: Usage,
        /// What went wrong (reason `error`), or what the budget would not cover (`budget`).
        error: Option<String>,
    },
}

/// Why a turn (and, for the last one, the run) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEndReason {
    /// The model answered without calling tools.
    FinalAnswer,
    /// Tools ran; their results go to the next turn.
    ToolObservations,
    MaxTurns,
    /// The model repeated an identical call twice in a row.
    RepeatedAction,
    /// The run's wall-clock limit passed.
    Deadline,
    /// The next model call would have cost more than the run's budget had left.
    Budget,
    /// The model, or the provider's content filter, declined to answer.
    Refusal,
    Aborted,
    Error,
}

/// Receives events in order. Called from the loop's task; must not block.
pub type EventSink = std::sync::Arc<dyn Fn(AgentEvent) + Send + Sync>;
