//! Approval: which tool calls need the user's yes, and the gate that asks.
//!
//! The policy is per tool — `ask`, `auto` or `deny` — with `ask` for the tools that change
//! things (`edit`, `write`, `bash`) unless the user configured otherwise. How the user is asked
//! is not decided here: the CLI asks on the terminal, the LSP server holds a pending edit.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use reins_agent::{Gate, Hooks, Proposal};
use reins_ai::ToolCall;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Ask,
    Auto,
    Deny,
}

/// Per-tool policies; tools without an entry are `auto`.
#[derive(Debug, Clone)]
pub struct ApprovalPolicy {
    per_tool: HashMap<String, Policy>,
}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        let per_tool = ["edit", "write", "bash"].into_iter().map(|tool| (tool.to_string(), Policy::Ask)).collect();
        Self { per_tool }
    }
}

impl ApprovalPolicy {
    /// Approves everything (`reins run --yes`).
    pub fn approve_all() -> Self {
        Self { per_tool: HashMap::new() }
    }

    pub fn set(&mut self, tool: &str, policy: Policy) {
        self.per_tool.insert(tool.to_string(), policy);
    }

    pub fn for_tool(&self, tool: &str) -> Policy {
        self.per_tool.get(tool).copied().unwrap_or(Policy::Auto)
    }
}

/// Asks the user about one proposal. May wait as long as `cancel` is not triggered.
#[async_trait]
pub trait Approver: Send + Sync {
    async fn decide(&self, call: &ToolCall, proposal: &Proposal, cancel: &CancellationToken) -> Gate;
}

/// The `before_tool_call` gate: applies the policy, and asks the [`Approver`] where it says `ask`.
pub struct ApprovalGate {
    pub policy: ApprovalPolicy,
    pub approver: Arc<dyn Approver>,
}

#[async_trait]
impl Hooks for ApprovalGate {
    async fn before_tool_call(&self, call: &ToolCall, proposal: Option<&Proposal>, cancel: &CancellationToken) -> Gate {
        match self.policy.for_tool(&call.name) {
            Policy::Auto => Gate::Allow,
            Policy::Deny => Gate::Block {
                reason: format!("the user's settings do not allow the `{}` tool; do not try it again", call.name),
            },
            Policy::Ask => match proposal {
                Some(proposal) => self.approver.decide(call, proposal, cancel).await,
                // Nothing to show means nothing will change: no question to ask.
                None => Gate::Allow,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Mutex;

    use reins_agent::CommandProposal;

    use super::*;

    struct Recorder(Mutex<Vec<String>>);

    #[async_trait]
    impl Approver for Recorder {
        async fn decide(&self, call: &ToolCall, _: &Proposal, _: &CancellationToken) -> Gate {
            self.0.lock().unwrap().push(call.name.clone());
            Gate::Block { reason: "user said no".into() }
        }
    }

    async fn gate(policy: ApprovalPolicy, tool: &str) -> (Gate, Vec<String>) {
        let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
        let gate = ApprovalGate { policy, approver: recorder.clone() };
        let call = ToolCall { id: "c1".into(), name: tool.into(), arguments: serde_json::json!({}) };
        let proposal =
            Proposal::Command(CommandProposal { command: "ls".into(), cwd: PathBuf::from("/w"), timeout_secs: 120 });
        let verdict = gate.before_tool_call(&call, Some(&proposal), &CancellationToken::new()).await;
        let asked = recorder.0.lock().unwrap().clone();
        (verdict, asked)
    }

    #[tokio::test]
    async fn mutating_tools_ask_by_default_others_pass() {
        let (verdict, asked) = gate(ApprovalPolicy::default(), "bash").await;
        assert_eq!(verdict, Gate::Block { reason: "user said no".into() });
        assert_eq!(asked, ["bash"]);
        let (verdict, asked) = gate(ApprovalPolicy::default(), "read").await;
        assert_eq!((verdict, asked.len()), (Gate::Allow, 0));
    }

    #[tokio::test]
    async fn approve_all_and_deny() {
        let (verdict, asked) = gate(ApprovalPolicy::approve_all(), "edit").await;
        assert_eq!((verdict, asked.len()), (Gate::Allow, 0));
        let mut deny = ApprovalPolicy::default();
        deny.set("bash", Policy::Deny);
        let (verdict, asked) = gate(deny, "bash").await;
        assert!(matches!(verdict, Gate::Block { reason } if reason.contains("do not allow the `bash` tool")));
        assert!(asked.is_empty());
    }
}
