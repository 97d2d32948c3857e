//! The agent's view of a conversation, snapshotted at every turn.

use std::sync::Arc;
use std::time::Duration;

use reins_ai::{Message, Model, ThinkingLevel};

use crate::budget::SharedBudget;
use crate::tool::Tool;

#[derive(Clone)]
pub struct AgentContext {
    pub system_prompt: String,
    pub model: Model,
    /// Shared: a request carries these same values, so a turn copies no message, and a
    /// provider or hook can tell by address the ones it has seen. A hook changes one by putting
    /// another in its place.
    pub messages: Vec<Arc<Message>>,
    pub tools: Vec<Arc<dyn Tool>>,
    /// How hard the model thinks; `None` leaves it to the provider (see [`reins_ai::Request`]).
    pub thinking: Option<ThinkingLevel>,
}

/// The loop's policies that are numbers.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Model calls in one run.
    pub max_turns: u32,
    /// Wall-clock limit for one run.
    pub deadline: Option<Duration>,
    /// Default per-tool timeout, for tools that do not set their own.
    pub tool_timeout: Duration,
    /// A tool result longer than this many bytes is cut, with a notice.
    pub max_result_bytes: usize,
    /// Retries of a read-only tool that failed or timed out.
    pub read_only_retries: u32,
    /// US dollars this run may spend on model calls: the run stops (reason `budget`) before a
    /// call whose estimated cost would take it past this.
    pub max_cost_usd: Option<f64>,
    /// A budget this run shares with others (a parent and its subagents): when set, it is what
    /// limits the cost, and every model call of the run is paid from it.
    pub shared_budget: Option<Arc<SharedBudget>>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_turns: 50,
            deadline: None,
            tool_timeout: Duration::from_secs(600),
            max_result_bytes: 100 * 1024,
            read_only_retries: 1,
            max_cost_usd: None,
            shared_budget: None,
        }
    }
}
