//! Approval: which tool calls need the user's yes, and the seam through which they are asked.
//!
//! The policy is per tool — `ask`, `auto` or `deny` — with `ask` for the tools that change
//! things (`edit`, `write`, `bash`) unless the user configured otherwise, and `auto` for a tool
//! the user allowed for the rest of the session. [`without_asking`] is the one place the policy
//! is evaluated; how the user is asked is an [`Approver`]'s business (the terminal asks per hunk,
//! the language server holds a pending edit).

use std::collections::HashMap;

use async_trait::async_trait;
use reins_agent::{FileChange, Gate, Proposal};
use reins_ai::ToolCall;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Ask,
    Auto,
    Deny,
}

/// Per-tool policies; tools without an entry are `auto`.
#[derive(Debug, Clone, PartialEq)]
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

    /// The policy for `tool`. `apply_patch` is the other dialect of `edit`: without a policy of
    /// its own it follows `edit`'s, so `approval.edit = "auto"` means every file edit.
    pub fn for_tool(&self, tool: &str) -> Policy {
        match self.per_tool.get(tool) {
            Some(policy) => *policy,
            None if tool == "apply_patch" => self.for_tool("edit"),
            None => Policy::Auto,
        }
    }
}

/// One tool call at the gate, with the session and run it belongs to. Tool-call ids come from
/// the model and repeat across sessions; the session and run tell calls apart.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    pub session_id: &'a str,
    pub run_id: &'a str,
    pub call: &'a ToolCall,
    pub proposal: &'a Proposal,
}

/// The user's answer to a proposal, as the run waiting at the gate receives it.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Go ahead: as proposed (`changed: None`), or with the files as [`Changed`] says. With
    /// `allow_for_session`, the tool runs without asking for the rest of the session.
    Accept { changed: Option<Changed>, allow_for_session: bool },
    /// Do not run it; the model reads `reason`.
    Reject { reason: String },
}

/// What is written instead of the proposal (some hunks only, or merged into text the user
/// changed meanwhile), and the note that tells the model so.
#[derive(Debug, Clone, PartialEq)]
pub struct Changed {
    pub files: Vec<FileChange>,
    pub note: String,
}

impl Verdict {
    /// The gate's answer, and whether the tool is now allowed for the rest of the session.
    pub fn into_gate(self) -> (Gate, bool) {
        match self {
            Verdict::Accept { changed: None, allow_for_session } => (Gate::Allow, allow_for_session),
            Verdict::Accept { changed: Some(Changed { mut files, note }), allow_for_session } => {
                let gate = match (files.pop(), files.is_empty()) {
                    (Some(file), true) if file.moved_to.is_none() && !file.delete => {
                        Gate::AllowChanged { proposal: Proposal::FileChange(file), note }
                    }
                    (Some(file), _) => {
                        files.push(file);
                        Gate::AllowChanged { proposal: Proposal::FileChanges { files }, note }
                    }
                    (None, _) => Gate::Block { reason: note },
                };
                (gate, allow_for_session)
            }
            Verdict::Reject { reason } => (Gate::Block { reason }, false),
        }
    }
}

/// Asks the user about one proposal. May wait as long as `cancel` is not triggered.
#[async_trait]
pub trait Approver: Send + Sync {
    async fn decide(&self, request: ApprovalRequest<'_>, cancel: &CancellationToken) -> Verdict;
}

/// The gate's answer when nobody needs asking, or `None` when the user must be asked: `policy`'s
/// word for `tool`, where `ask` becomes `auto` once the user allowed the tool for the rest of the
/// session (a `deny` set since still wins). A call with nothing to show (`has_proposal` false)
/// changes nothing, so there is nothing to ask.
pub fn without_asking(
    policy: &ApprovalPolicy,
    tool: &str,
    allowed_for_session: bool,
    has_proposal: bool,
) -> Option<Gate> {
    match policy.for_tool(tool) {
        Policy::Ask if allowed_for_session => Some(Gate::Allow),
        Policy::Auto => Some(Gate::Allow),
        Policy::Deny => Some(Gate::Block {
            reason: format!("the user's settings do not allow the `{tool}` tool; do not try it again"),
        }),
        Policy::Ask if !has_proposal => Some(Gate::Allow),
        Policy::Ask => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// The answer for one call of `tool`, as a word: allow, ask, or the block reason.
    fn check(policy: &ApprovalPolicy, tool: &str, allowed_for_session: bool, has_proposal: bool) -> String {
        match without_asking(policy, tool, allowed_for_session, has_proposal) {
            None => "ask".into(),
            Some(Gate::Allow) => "allow".into(),
            Some(Gate::Block { reason }) => format!("block: {reason}"),
            Some(other) => format!("{other:?}"),
        }
    }

    #[test]
    fn mutating_tools_ask_by_default_others_pass() {
        let policy = ApprovalPolicy::default();
        let answers =
            ["edit", "apply_patch", "write", "bash", "read", "grep"].map(|tool| check(&policy, tool, false, true));
        assert_eq!(answers, ["ask", "ask", "ask", "ask", "allow", "allow"]);
        // apply_patch follows edit unless it has a policy of its own.
        let mut policy = ApprovalPolicy::default();
        policy.set("edit", Policy::Auto);
        assert_eq!(check(&policy, "apply_patch", false, true), "allow");
        policy.set("apply_patch", Policy::Deny);
        assert!(check(&policy, "apply_patch", false, true).starts_with("block"));
        // Nothing to show, nothing to ask.
        assert_eq!(check(&policy, "bash", false, false), "allow");
    }

    #[test]
    fn approve_all_deny_and_allowed_for_session() {
        assert_eq!(check(&ApprovalPolicy::approve_all(), "edit", false, true), "allow");
        let mut policy = ApprovalPolicy::default();
        policy.set("bash", Policy::Deny);
        assert_eq!(
            check(&policy, "bash", false, true),
            "block: the user's settings do not allow the `bash` tool; do not try it again"
        );
        assert_eq!(check(&policy, "edit", true, true), "allow");
        // A deny set after the user allowed the tool for the session wins.
        assert!(check(&policy, "bash", true, true).starts_with("block"));
    }

    #[test]
    fn verdicts_become_gates() {
        let change = FileChange {
            path: PathBuf::from("/w/a"),
            before: Some("a\n".into()),
            after: "b\n".into(),
            version: None,
            notes: Vec::new(),
            ..FileChange::default()
        };
        let accepted = Verdict::Accept { changed: None, allow_for_session: true };
        assert_eq!(accepted.into_gate(), (Gate::Allow, true));
        let changed = Verdict::Accept {
            changed: Some(Changed { files: vec![change.clone()], note: "partly".into() }),
            allow_for_session: false,
        };
        let expected = Gate::AllowChanged { proposal: Proposal::FileChange(change), note: "partly".into() };
        assert_eq!(changed.into_gate(), (expected, false));
        let rejected = Verdict::Reject { reason: "no".into() };
        assert_eq!(rejected.into_gate(), (Gate::Block { reason: "no".into() }, false));
    }
}
