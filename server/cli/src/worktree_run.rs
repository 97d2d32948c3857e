//! `reins run --worktree`: the agent works on a git worktree of its own (see
//! [`reins_harness::Worktree`]) with its edits applied directly, and at the end its whole change
//! is one proposal against the user's files as they are then, reviewed hunk by hunk like any
//! edit. Files where the user changed the same lines are named and left alone; the worktree is
//! removed once everything in it was decided, and kept (with its id and place said) otherwise.

use std::path::Path;

use reins_agent::{FileChange, Proposal, ToolLook};
use reins_ai::ToolCall;
use reins_harness::{ApprovalRequest, Approver, Verdict, Worktree};
use reins_tools::{FsWorkspace, Workspace};
use tokio_util::sync::CancellationToken;

/// Makes the worktree of the repository at `root` for one run.
pub fn create(root: &Path, data_dir: &Path) -> Result<Worktree, String> {
    let id = format!("{:x}-{}", reins_ai::now_ms(), std::process::id());
    Worktree::create(root, data_dir, &id).map_err(|err| err.to_string())
}

/// Proposes the agent's change to the user: merged files through `approver` (all of them when
/// `yes`), conflicts named. Answers whether the worktree could go (everything was decided).
pub async fn propose(worktree: &Worktree, approver: &dyn Approver, yes: bool) -> Result<bool, String> {
    let merged = worktree.merge().map_err(|err| err.to_string())?;
    if merged.is_empty() {
        eprintln!("reins: the agent changed nothing in its worktree");
        return Ok(true);
    }
    let mut files = Vec::new();
    let mut conflicts = 0;
    for file in merged {
        let path = worktree.repo.join(&file.path);
        match file.result {
            Ok(after) if after == file.current => {}
            Ok(after) => files.push(FileChange {
                path,
                before: file.current.clone(),
                delete: after.is_none(),
                after: after.unwrap_or_default(),
                ..FileChange::default()
            }),
            Err(conflict) => {
                conflicts += 1;
                let kept = reins_ai::visible_line(&conflict.description).into_owned();
                eprintln!(
                    "reins: not applied, {kept}; the agent's version is in {}",
                    worktree.dir.join(&file.path).display()
                );
            }
        }
    }
    let proposal = Proposal::FileChanges { files };
    let call =
        ToolCall { id: format!("worktree-{}", worktree.id), name: "worktree".into(), arguments: Default::default() };
    let decided = if proposal.file_changes().is_empty() {
        Some(Vec::new())
    } else if yes {
        Some(proposal.file_changes().to_vec())
    } else {
        let look = ToolLook::plain(&call.name, &call.arguments);
        let request = ApprovalRequest {
            session_id: &worktree.id,
            run_id: &worktree.id,
            call: &call,
            look: &look,
            proposal: &proposal,
        };
        match approver.decide(request, &CancellationToken::new()).await {
            Verdict::Accept { changed: None, .. } => Some(proposal.file_changes().to_vec()),
            Verdict::Accept { changed: Some(changed), .. } => Some(changed.files),
            Verdict::Reject { reason } => {
                eprintln!("reins: the worktree's change was not applied: {}", reins_ai::visible_line(&reason));
                None
            }
        }
    };
    let Some(accepted) = decided else { return Ok(false) };
    let workspace = FsWorkspace::new(vec![worktree.repo.clone()]).map_err(|err| err.to_string())?;
    for change in &accepted {
        workspace.apply(change).await.map_err(|err| format!("{}: {err}", change.path.display()))?;
    }
    let all = accepted.as_slice() == proposal.file_changes() && conflicts == 0;
    Ok(all)
}

/// Says where a kept worktree is, or removes a finished one.
pub fn finish(worktree: &Worktree, done: bool) {
    if done {
        if let Err(err) = worktree.remove() {
            eprintln!("reins: could not remove the worktree {}: {err}", worktree.dir.display());
        }
        return;
    }
    eprintln!("reins: the worktree {} is kept at {}", worktree.id, worktree.dir.display());
}
