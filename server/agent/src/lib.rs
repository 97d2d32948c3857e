//! The agent loop: a context, tools run through prepare → gate → execute, hooks, events, and the
//! policies that keep a model honest (validation, timeouts, truncation, limits).
//!
//! Knows nothing of sessions, config files or editors: the harness passes those in as hooks.

mod agent;
mod budget;
mod context;
mod event;
mod exec;
mod hooks;
mod lock;
mod look;
mod policy;
mod repair;
mod run;
mod todo;
mod tool;

pub use agent::{Agent, AgentError};
pub use budget::SharedBudget;
pub use context::{AgentContext, Limits};
pub use event::{AgentEvent, EventSink, TurnEndReason};
pub use hooks::{Gate, Hooks, NoHooks};
pub use lock::lock;
pub use look::{ToolKind, ToolLocation, ToolLook, string_argument};
pub use repair::repair_arguments;
pub use run::{RunOutcome, run};
pub use todo::{Todo, TodoStatus};
pub use tool::{
    CommandProposal, FileChange, Prepared, Proposal, ServerCall, Tool, ToolContext, ToolError, ToolOutput, TypedTool,
    parse_arguments, schema_of,
};
