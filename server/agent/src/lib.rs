//! The agent loop: a context, tools run through prepare → gate → execute, hooks, events, and the
//! policies that keep a model honest (validation, timeouts, truncation, limits).
//!
//! Knows nothing of sessions, config files or editors: the harness passes those in as hooks.

mod context;
mod event;
mod hooks;
mod tool;

pub use context::{AgentContext, Limits};
pub use event::{AgentEvent, EventSink, TurnEndReason};
pub use hooks::{Gate, Hooks, NoHooks};
pub use tool::{
    CommandProposal, FileChange, Prepared, Proposal, Tool, ToolContext, ToolError, ToolOutput, TypedTool,
    parse_arguments, schema_of,
};
