//! Hooks: how the harness above steers the loop without the loop knowing who it serves.

use std::sync::Arc;

use async_trait::async_trait;
use reins_ai::{Message, ToolCall, ToolResultMessage};
use tokio_util::sync::CancellationToken;

use crate::context::AgentContext;
use crate::tool::Proposal;

/// The gate's verdict on one prepared tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    Allow,
    /// Run it with a changed proposal (some hunks only); `note` is appended to the result so the
    /// model knows what actually happened.
    AllowChanged {
        proposal: Proposal,
        note: String,
    },
    /// Do not run it; the model gets `reason` as an error result.
    Block {
        reason: String,
    },
}

/// One trait, default no-ops. The harness implements it; tests implement what they exercise.
#[async_trait]
pub trait Hooks: Send + Sync {
    /// Rewrites the messages just before each model call (pruning, injected context): `Some`
    /// goes to the model in their place. The default, `None`, sends them as they are, sharing
    /// them with the previous call's request instead of copying the conversation.
    async fn transform_context(&self, _messages: &[Arc<Message>]) -> Option<Vec<Message>> {
        None
    }
    /// The gate. May wait (for a user's decision) as long as `cancel` is not triggered.
    async fn before_tool_call(
        &self,
        _call: &ToolCall,
        _proposal: Option<&Proposal>,
        _cancel: &CancellationToken,
    ) -> Gate {
        Gate::Allow
    }
    /// Runs once per turn, before the turn's tool calls run: `calls` are those that will (in
    /// order), `turn` counts the run's model calls from 1 (so a smaller one means a new run).
    async fn before_tool_calls(&self, _turn: u32, _calls: &[ToolCall]) {}
    /// May rewrite a finished tool result.
    async fn after_tool_call(&self, _call: &ToolCall, _result: &mut ToolResultMessage) {}
    /// Runs after a turn's tool results, before the next model call: a save point, and the place
    /// to swap the model or tools for the next turn.
    async fn prepare_next_turn(&self, _context: &mut AgentContext) {}
    /// Messages the user sent while the agent worked; delivered after the current tools finish.
    fn steering_messages(&self) -> Vec<Message> {
        Vec::new()
    }
    /// Messages to continue with when the agent would otherwise stop.
    fn follow_up_messages(&self) -> Vec<Message> {
        Vec::new()
    }
}

/// Hooks that change nothing.
pub struct NoHooks;

impl Hooks for NoHooks {}
