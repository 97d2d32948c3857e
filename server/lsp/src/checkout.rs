//! The editor's side of checkpoints: `reins.session.navigate` and `reins.session.fork` with
//! `files: true` turn each file the move would change into a pending edit of the session,
//! reviewed like any proposal (hunk by hunk, accept or reject) and applied through
//! `workspace/applyEdit` so the editor's undo works; files where the user's edits and the agent's
//! change overlap come back in the answer as conflicts, never as edits.

use reins_agent::FileChange;
use reins_harness::{Checkout, FileOutcome, Status};
use reins_review::Origin;
use serde_json::{Value, json};
use tower_lsp_server::ls_types::{Position, Range};

use crate::review::path_uri;
use crate::server::State;
use crate::{lock, to_proto};

/// The tool the pending edits of a restore name (no tool call made them).
const TOOL: &str = "checkout";

/// Holds each file `checkout` changes as a pending edit of its session, and answers the edits
/// proposed, the conflicts, and the commands whose effects were not tracked.
pub fn propose(state: &State, checkout: &Checkout) -> Value {
    let origin = Origin {
        session_id: checkout.session_id.clone(),
        run_id: format!("checkout-{}", checkout.target),
        tool_call_id: String::new(),
        tool: TOOL.to_string(),
    };
    let mut edits = Vec::new();
    let mut conflicts = Vec::new();
    for file in &checkout.files {
        let uri = path_uri(&file.path);
        match &file.status {
            Status::Conflict(info) => {
                let range = info.lines.as_ref().map(|lines| lines_range(lines.start, lines.end));
                conflicts.push(to_proto::checkout_conflict(
                    &file.shown,
                    uri,
                    Some(&info.entry_id),
                    range,
                    &info.reason,
                    info.change.as_deref(),
                ));
            }
            Status::Refused(reason) => {
                conflicts.push(to_proto::checkout_conflict(&file.shown, uri, None, None, reason, None))
            }
            _ if file.writes() => match change_of(state, file, &checkout.target) {
                Ok(change) => {
                    let (id, _) = state.reviews.propose_change(origin.clone(), change, state.workspace.clone());
                    edits.push(to_proto::checkout_edit(&id, &file.shown, uri, file.action()));
                }
                Err(reason) => conflicts.push(to_proto::checkout_conflict(&file.shown, uri, None, None, &reason, None)),
            },
            _ => {}
        }
    }
    json!({"edits": edits, "conflicts": conflicts, "commands": to_proto::checkout_commands(&checkout.commands)})
}

/// The change that brings `file` to what the checkout gives it, from its text now (the open
/// buffer's, with its version).
fn change_of(state: &State, file: &FileOutcome, target: &str) -> Result<FileChange, String> {
    let text = |bytes: &Option<Vec<u8>>| -> Result<Option<String>, String> {
        bytes.clone().map(String::from_utf8).transpose().map_err(|_| {
            "it is not a text file, so the editor cannot restore it; `reins sessions checkout` can".to_string()
        })
    };
    let before = text(&file.current)?;
    let after = text(&file.result)?;
    let version = lock(&state.documents).by_path(&file.path).map(|document| document.version);
    let mut notes = vec![format!("brings {} back to how the agent left it at entry {target}", file.shown)];
    if file.status == Status::Merged {
        notes.push("your own edits since are kept".to_string());
    }
    Ok(FileChange {
        path: file.path.clone(),
        before,
        delete: after.is_none(),
        after: after.unwrap_or_default(),
        moved_to: None,
        version,
        notes,
    })
}

/// Whole lines `start..end` (from 0, end excluded) as an LSP range.
fn lines_range(start: usize, end: usize) -> Range {
    let line = |line: usize| Position { line: line as u32, character: 0 };
    Range { start: line(start), end: line(end.max(start)) }
}
