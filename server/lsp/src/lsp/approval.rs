//! The approval gate's answer in the language server.
//!
//! The harness asks this approver about every `edit`, `write` and `bash` proposal. It answers
//! from the client's live settings (`approval: {edit, write, bash}`), so a change through
//! `didChangeConfiguration` applies to the next call. Reviewing a proposal in the editor (pending
//! edits with accept/reject) is the edit-review issue; until it lands, `ask` cannot be answered by
//! a person here and is refused with a reason that says how to allow the tool.

use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use reins_agent::{Gate, Proposal};
use reins_ai::ToolCall;
use reins_harness::{Approver, Policy};
use tokio_util::sync::CancellationToken;

use crate::lsp::config::Config;

/// Temporary: the reason an `ask` proposal is refused until editors can review proposals.
pub const CANNOT_REVIEW_YET: &str = "this editor cannot review proposals yet; set approval to auto to allow";

pub struct SettingsApprover {
    pub config: Arc<RwLock<Config>>,
}

#[async_trait]
impl Approver for SettingsApprover {
    async fn decide(&self, call: &ToolCall, _proposal: &Proposal, _cancel: &CancellationToken) -> Gate {
        let policy = self.config.read().unwrap_or_else(|poison| poison.into_inner()).policy_for(&call.name);
        decide(policy, &call.name)
    }
}

fn decide(policy: Policy, tool: &str) -> Gate {
    match policy {
        Policy::Auto => Gate::Allow,
        Policy::Deny => {
            Gate::Block { reason: format!("the user's settings do not allow the `{tool}` tool; do not try it again") }
        }
        Policy::Ask => Gate::Block { reason: format!("`{tool}` needs the user's approval, but {CANNOT_REVIEW_YET}") },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_answer_without_asking_anyone() {
        assert_eq!(decide(Policy::Auto, "edit"), Gate::Allow);
        let Gate::Block { reason } = decide(Policy::Ask, "bash") else { panic!("ask must block") };
        assert_eq!(
            reason,
            "`bash` needs the user's approval, but this editor cannot review proposals yet; set approval to auto to allow"
        );
        assert!(matches!(decide(Policy::Deny, "write"), Gate::Block { reason } if reason.contains("do not allow")));
    }
}
