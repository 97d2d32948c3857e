//! Approval: which tool calls need the user's yes, and the seam through which they are asked.
//!
//! The policy is per tool — `ask`, `auto` or `deny` — with `ask` for the tools that change
//! things (`edit`, `write`, `bash`) and for the tools of the user's MCP servers (`mcp__*`: reins
//! cannot tell what they do) unless the user configured otherwise, and `auto` for a tool the user
//! allowed for the rest of the session. [`without_asking`] is the one place the policy is
//! evaluated; how the user is asked is an [`Approver`]'s business (the terminal asks per hunk,
//! the language server holds a pending edit).

use std::collections::HashMap;

use async_trait::async_trait;
use globset::{Glob, GlobMatcher};
use reins_agent::{FileChange, Gate, Proposal, ToolLook};
use reins_ai::ToolCall;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Ask,
    Auto,
    Deny,
}

/// The `[approval]` key that approves the calls of MCP tools whose server says they change
/// nothing (`readOnlyHint`) where they would be asked about.
pub const MCP_READ_ONLY: &str = "mcp_read_only";

/// Per-tool policies, by exact name or by a glob on the name (`mcp__docs__*`). An exact name
/// wins over globs, and of the globs that match, the longest; tools nothing names are `auto`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPolicy {
    per_tool: HashMap<String, Policy>,
    /// In the order set; a glob set again replaces its entry.
    globs: Vec<(ToolPattern, Policy)>,
}

/// A glob on tool names: `*` any run of characters, `?` one, `[abc]` one of a set.
#[derive(Debug, Clone)]
pub struct ToolPattern {
    glob: String,
    matcher: GlobMatcher,
}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        let per_tool = ["edit", "write", "bash"].into_iter().map(|tool| (tool.to_string(), Policy::Ask)).collect();
        let mut policy = Self { per_tool, globs: Vec::new() };
        policy.set("mcp__*", Policy::Ask);
        policy
    }
}

impl ApprovalPolicy {
    /// Approves everything, with no policy at all (a harness that runs no model, as for a
    /// checkout). `--yes` is [`Self::with_asks_approved`]: it keeps the user's `deny`.
    pub fn approve_all() -> Self {
        Self { per_tool: HashMap::new(), globs: Vec::new() }
    }

    /// The policy with every `ask` made `auto` (`reins run --yes`). A `deny` stays: it means
    /// never, whatever the command line says.
    pub fn with_asks_approved(mut self) -> Self {
        let approve = |policy: &mut Policy| {
            if *policy == Policy::Ask {
                *policy = Policy::Auto;
            }
        };
        self.per_tool.values_mut().for_each(approve);
        self.globs.iter_mut().for_each(|(_, policy)| approve(policy));
        self
    }

    /// Sets the policy of a tool, or of the tools a glob matches. A glob that does not parse is
    /// taken as a plain name (config readers check with [`ToolPattern::new`] first).
    pub fn set(&mut self, tool: &str, policy: Policy) {
        match ToolPattern::new(tool) {
            Ok(pattern) if ToolPattern::is_glob(tool) => {
                self.globs.retain(|(old, _)| old.glob != pattern.glob);
                self.globs.push((pattern, policy));
            }
            _ => {
                self.per_tool.insert(tool.to_string(), policy);
            }
        }
    }

    /// The policy for `tool`. `apply_patch` is the other dialect of `edit`, and `rename` an edit
    /// the language server works out: without a policy of their own they follow `edit`'s, so
    /// `approval.edit = "auto"` means every file edit.
    /// Whether the user trusts MCP tools that say they change nothing: `[approval]
    /// mcp_read_only = "auto"`, set by name (a glob does not say it).
    pub fn trusts_mcp_read_only(&self) -> bool {
        self.per_tool.get(MCP_READ_ONLY) == Some(&Policy::Auto)
    }

    pub fn for_tool(&self, tool: &str) -> Policy {
        if let Some(policy) = self.per_tool.get(tool) {
            return *policy;
        }
        if tool == "apply_patch" || tool == "rename" {
            return self.for_tool("edit");
        }
        // Of equally long globs, the one set last (a later config layer) wins.
        self.globs
            .iter()
            .filter(|(pattern, _)| pattern.matcher.is_match(tool))
            .max_by_key(|(pattern, _)| pattern.glob.len())
            .map_or(Policy::Auto, |(_, policy)| *policy)
    }
}

impl ToolPattern {
    pub fn new(glob: &str) -> Result<Self, String> {
        let matcher = Glob::new(glob).map_err(|err| format!("`{glob}` is not a valid pattern: {}", err.kind()))?;
        Ok(Self { glob: glob.to_string(), matcher: matcher.compile_matcher() })
    }

    /// Whether the tool named `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        self.matcher.is_match(name)
    }

    /// Whether `name` is a pattern rather than a tool's name.
    pub fn is_glob(name: &str) -> bool {
        name.contains(['*', '?', '['])
    }
}

impl PartialEq for ToolPattern {
    fn eq(&self, other: &Self) -> bool {
        self.glob == other.glob
    }
}

/// One tool call at the gate, with the session and run it belongs to. Tool-call ids come from
/// the model and repeat across sessions; the session and run tell calls apart.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    pub session_id: &'a str,
    pub run_id: &'a str,
    pub call: &'a ToolCall,
    /// How the call looks, as its tool says: a surface shows it as it is, never by the tool's
    /// name.
    pub look: &'a ToolLook,
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
        // So does rename.
        assert_eq!(check(&policy, "rename", false, true), "allow");
        policy.set("edit", Policy::Ask);
        assert_eq!(check(&policy, "rename", false, true), "ask");
        // Nothing to show, nothing to ask.
        assert_eq!(check(&policy, "bash", false, false), "allow");
    }

    #[test]
    fn mcp_tools_ask_by_default_and_globs_set_them_per_server_or_tool() {
        let mut policy = ApprovalPolicy::default();
        assert_eq!(check(&policy, "mcp__docs__search", false, true), "ask");
        policy.set("mcp__docs__*", Policy::Auto);
        policy.set("mcp__docs__delete*", Policy::Deny);
        policy.set("mcp__github__get_issue", Policy::Auto);
        let answers =
            ["mcp__docs__search", "mcp__docs__delete_page", "mcp__github__get_issue", "mcp__github__create_issue"]
                .map(|tool| check(&policy, tool, false, true));
        assert_eq!(
            answers,
            [
                "allow",
                "block: the user's settings do not allow the `mcp__docs__delete_page` tool; do not try it again",
                "allow",
                "ask"
            ]
        );
        // An exact name wins over any glob; a glob set again replaces itself.
        policy.set("mcp__docs__delete_draft", Policy::Ask);
        policy.set("mcp__docs__*", Policy::Deny);
        assert_eq!(check(&policy, "mcp__docs__delete_draft", false, true), "ask");
        assert!(check(&policy, "mcp__docs__search", false, true).starts_with("block"));
        // `--yes` approves them too (but not a denied one); a pattern that does not parse is an error for the config.
        assert_eq!(check(&ApprovalPolicy::default().with_asks_approved(), "mcp__docs__search", false, true), "allow");
        assert_eq!(
            ToolPattern::new("mcp__[").unwrap_err(),
            "`mcp__[` is not a valid pattern: unclosed character class; missing ']'"
        );
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
    fn yes_turns_ask_into_auto_and_nothing_else() {
        let mut policy = ApprovalPolicy::default();
        policy.set("bash", Policy::Deny);
        policy.set("mcp__docs__*", Policy::Deny);
        policy.set("mcp__docs__search", Policy::Ask);
        let policy = policy.with_asks_approved();
        let answers = ["edit", "apply_patch", "write", "read", "mcp__github__create_issue", "mcp__docs__search"]
            .map(|tool| check(&policy, tool, false, true));
        assert_eq!(answers, ["allow"; 6]);
        for tool in ["bash", "mcp__docs__delete_page"] {
            assert_eq!(
                check(&policy, tool, false, true),
                format!("block: the user's settings do not allow the `{tool}` tool; do not try it again")
            );
        }
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
