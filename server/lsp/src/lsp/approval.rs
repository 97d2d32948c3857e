//! The approval gate's answer in the language server.
//!
//! The harness asks this approver about every `edit`, `write` and `bash` proposal (see
//! [`gate_policy`]). The policy comes from the settings in force (`approval.<tool>`, from config
//! files or the client), so a change through `didChangeConfiguration` applies to the next call,
//! unless the user allowed the tool for the session when accepting. `ask` records a pending edit (see [`super::review`]) and waits, in the
//! run's task, for the user's decision or the run's cancellation; never for a timeout.

use std::sync::Arc;

use async_trait::async_trait;
use reins_agent::{Gate, Proposal};
use reins_ai::ToolCall;
use reins_harness::{ApprovalPolicy, Approver, Policy};
use reins_tools::Workspace;
use tokio_util::sync::CancellationToken;

use crate::lsp::config::ServerSettings;
use crate::lsp::review::{Decision, Proposed, Reviews};
use crate::lsp::workspace::EditorWorkspace;

/// The tools whose calls carry a proposal to show; the approver decides them with the live policy.
const REVIEWED_TOOLS: &[&str] = &["edit", "write", "bash"];

pub struct ReviewApprover {
    pub settings: Arc<ServerSettings>,
    pub reviews: Arc<Reviews>,
    pub workspace: Arc<EditorWorkspace>,
}

#[async_trait]
impl Approver for ReviewApprover {
    async fn decide(&self, call: &ToolCall, proposal: &Proposal, cancel: &CancellationToken) -> Gate {
        let run = self.reviews.run_of(&call.id);
        let policy = if self.reviews.allowed_for_session(&run.0, &call.name) {
            Policy::Auto
        } else {
            self.settings.current().approval.for_tool(&call.name)
        };
        if let Some(answer) = without_asking(policy, &call.name) {
            return answer;
        }
        let shown = match proposal {
            Proposal::FileChange(change) => match change.path.strip_prefix(self.workspace.cwd()) {
                Ok(relative) => relative.display().to_string(),
                Err(_) => change.path.display().to_string(),
            },
            Proposal::Command(command) => command.command.clone(),
        };
        let proposed = Proposed { run, tool_call_id: &call.id, tool: &call.name, proposal, shown };
        let (id, decision) = self.reviews.propose(proposed);
        // The run may stop by dropping this future rather than through `cancel`.
        let mut unanswered = CancelOnDrop { reviews: self.reviews.clone(), id: Some(id) };
        tokio::select! {
            biased;
            decision = decision => {
                unanswered.id = None;
                match decision {
                    Ok(decision) => gate(decision),
                    Err(_) => Gate::Block { reason: "the review of this change was dropped; nothing was changed".into() },
                }
            }
            () = cancel.cancelled() => Gate::Block { reason: "cancelled".to_string() },
        }
    }
}

/// The harness's own gate policy: `policy` (the settings at start, for tools without a
/// proposal), with every reviewed tool sent to the approver, which applies the live settings.
pub fn gate_policy(policy: &ApprovalPolicy) -> ApprovalPolicy {
    let mut gate = policy.clone();
    for tool in REVIEWED_TOOLS {
        gate.set(tool, Policy::Ask);
    }
    gate
}

/// Rejects a proposal as cancelled when its run stops waiting before the user decided.
struct CancelOnDrop {
    reviews: Arc<Reviews>,
    /// `None` once the decision arrived.
    id: Option<String>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            self.reviews.cancel(id);
        }
    }
}

/// The answer when the policy needs nobody: `None` for `ask`.
fn without_asking(policy: Policy, tool: &str) -> Option<Gate> {
    match policy {
        Policy::Auto => Some(Gate::Allow),
        Policy::Deny => Some(Gate::Block {
            reason: format!("the user's settings do not allow the `{tool}` tool; do not try it again"),
        }),
        Policy::Ask => None,
    }
}

fn gate(decision: Decision) -> Gate {
    match decision {
        Decision::Accept { change: None, note: None } => Gate::Allow,
        Decision::Accept { change: None, note: Some(note) } => {
            // Nothing to change, only something to say: no proposal means "as it was".
            tracing::debug!("a note without a changed proposal is dropped: {note}");
            Gate::Allow
        }
        Decision::Accept { change: Some(change), note } => {
            Gate::AllowChanged { proposal: Proposal::FileChange(change), note: note.unwrap_or_default() }
        }
        Decision::Block { reason } => Gate::Block { reason },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_and_deny_answer_without_asking() {
        assert_eq!(without_asking(Policy::Auto, "edit"), Some(Gate::Allow));
        assert_eq!(without_asking(Policy::Ask, "bash"), None);
        let Some(Gate::Block { reason }) = without_asking(Policy::Deny, "write") else { panic!("deny must block") };
        assert_eq!(reason, "the user's settings do not allow the `write` tool; do not try it again");
    }

    #[test]
    fn the_gate_sends_reviewed_tools_to_the_approver_and_keeps_the_rest() {
        let mut settings = ApprovalPolicy::default();
        settings.set("edit", Policy::Auto);
        settings.set("grep", Policy::Deny);
        let gate = gate_policy(&settings);
        let policies = ["edit", "write", "bash", "grep", "read"].map(|tool| gate.for_tool(tool));
        assert_eq!(policies, [Policy::Ask, Policy::Ask, Policy::Ask, Policy::Deny, Policy::Auto]);
    }
}
