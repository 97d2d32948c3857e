//! What an edit proposal is, independent of any protocol: hunks (byte spans, refined to the
//! characters that changed), the three-way merge that carries a proposal onto text changed
//! meanwhile, the pending-edit state machine (propose, accept all or some, reject with a reason,
//! allow for the session), the sentences that tell the model what happened, and the approval
//! policy. The language server turns hunks into `TextEdit`s and code actions, the terminal into
//! a `git add -p`-like prompt; an ACP layer would turn them into diff blocks and permission
//! requests.
//!
//! Words: a *proposal* is what a tool call would do; a *pending edit* is a proposal held for
//! the user's *review*; *approval* is whether a tool call needs the user's yes at all.

mod approval;
mod command_rule;
pub mod comments;
pub mod diff;
pub mod merge;
pub mod notes;
mod pending;

pub use approval::{
    ApprovalPolicy, ApprovalRequest, Approver, Changed, MCP_READ_ONLY, Policy, ToolPattern, Verdict, without_asking,
};
pub use command_rule::CommandRule;
pub use comments::{Comment, comments_note};
pub use diff::{Hunk, LineChange, apply_hunks, hunks, line_changes, split_lines, unified_diff};
pub use merge::{Conflict, Located, locate, rebase};
pub use pending::{
    Choice, DIFF_DEADLINE, FileDiff, Observer, Origin, Outcome, PendingEdit, PendingEdits, ReadCurrent, Resolution,
    ReviewError, Subject, Written,
};
