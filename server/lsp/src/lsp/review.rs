//! The pending edits: the one place that holds proposals waiting for the user, and turns
//! `reins.edit.accept` / `reins.edit.reject` (or a cancelled run) into the gate's answer.
//!
//! A proposal is a value in a map with a oneshot sender; the run that proposed it awaits the
//! receiver in its own task (see [`super::approval`]), so no handler ever waits for a person or
//! for the editor. Deciding is synchronous: the handler works out what to apply (rebasing onto
//! text the user typed meanwhile), sends that down the oneshot, and returns. An accepted file
//! change is then applied by the tool through [`super::workspace`], which reports back here so
//! `edit_resolved` says what really happened in the editor.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reins_agent::{AgentEvent, FileChange, Proposal};
use reins_harness::HarnessEventSink;
use reins_tools::WorkspaceError;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tower_lsp_server::jsonrpc::Error;
use tower_lsp_server::ls_types::Uri;

use crate::lsp::diff::{self, Hunk};
use crate::lsp::documents::Documents;
use crate::lsp::events::Events;
use crate::lsp::pending::{self, FileSubject, HunkView, Outcome, PendingEdit, Subject};
use crate::lsp::{lock, merge, to_proto};

/// How long the hunk diff of a proposal may search before settling for coarser hunks.
pub const DIFF_DEADLINE: Duration = Duration::from_millis(100);

/// The session and run a tool call belongs to.
pub type RunKey = (String, String);

/// What the waiting run is told.
#[derive(Debug)]
pub enum Decision {
    /// Go ahead: with the proposal as it was (`change: None`), or with `change` and a `note`
    /// for the model (some hunks only, or merged into newer text).
    Accept { change: Option<FileChange>, note: Option<String> },
    /// Do not run it; the model reads `reason`.
    Block { reason: String },
}

/// Everything the gate knows about a proposal when it asks.
pub struct Proposed<'a> {
    pub run: RunKey,
    pub tool_call_id: &'a str,
    pub tool: &'a str,
    pub proposal: &'a Proposal,
    /// The path as the model and the user read it (relative to the workspace).
    pub shown: String,
}

/// One proposal waiting for the user.
struct Pending {
    edit: PendingEdit,
    proposal: Proposal,
    hunks: Vec<Hunk>,
    shown: String,
    reply: oneshot::Sender<Decision>,
}

/// An accepted file change on its way to the editor, reported by [`Reviews::applied`].
struct Applying {
    id: String,
    run: RunKey,
    after: String,
    outcome: Outcome,
    hunks: Vec<usize>,
    /// The user's reason for the hunks not applied (partially applied only).
    reason: Option<String>,
}

#[derive(Default)]
struct ReviewState {
    next_id: u64,
    /// Waiting proposals by number, so listing keeps the order they came in.
    pending: BTreeMap<u64, Pending>,
    decided: HashSet<String>,
    applying: HashMap<PathBuf, Applying>,
    /// The run of each tool call in flight, learned from `tool_execution_start` events.
    calls: HashMap<String, RunKey>,
    /// (session, tool) pairs the user allowed for the rest of the session.
    allowed: HashSet<(String, String)>,
}

pub struct Reviews {
    state: Mutex<ReviewState>,
    documents: Arc<Mutex<Documents>>,
    events: Events,
}

impl Reviews {
    pub fn new(documents: Arc<Mutex<Documents>>, events: Events) -> Self {
        Self { state: Mutex::new(ReviewState::default()), documents, events }
    }

    /// Wraps the harness's event sink to learn which session and run each tool call belongs to:
    /// the gate only sees the call, and pending edits name their session and run.
    pub fn sink(self: &Arc<Self>, inner: HarnessEventSink) -> HarnessEventSink {
        let reviews = self.clone();
        Arc::new(move |event| {
            match &event.event {
                AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                    let run = (event.session_id.clone(), event.run_id.clone());
                    lock(&reviews.state).calls.insert(tool_call_id.clone(), run);
                }
                AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                    lock(&reviews.state).calls.remove(tool_call_id);
                }
                _ => {}
            }
            inner(event);
        })
    }

    /// The session and run of a tool call in flight (empty strings if unknown).
    pub fn run_of(&self, tool_call_id: &str) -> RunKey {
        lock(&self.state).calls.get(tool_call_id).cloned().unwrap_or_default()
    }

    /// Whether the user allowed `tool` for the rest of `session_id` when accepting.
    pub fn allowed_for_session(&self, session_id: &str, tool: &str) -> bool {
        lock(&self.state).allowed.contains(&(session_id.to_string(), tool.to_string()))
    }

    /// Records a proposal, publishes it (event and diagnostics), and returns its id and the
    /// receiver the run waits on.
    pub fn propose(&self, proposed: Proposed<'_>) -> (String, oneshot::Receiver<Decision>) {
        let (tx, rx) = oneshot::channel();
        let (subject, hunks, notes) = self.subject(&proposed);
        let mut state = lock(&self.state);
        state.next_id += 1;
        let number = state.next_id;
        let id = format!("e{number}");
        let edit = PendingEdit {
            id: id.clone(),
            session_id: proposed.run.0.clone(),
            run_id: proposed.run.1.clone(),
            tool_call_id: proposed.tool_call_id.to_string(),
            tool: proposed.tool.to_string(),
            subject,
            notes,
        };
        self.events.review(edit.session_id.clone(), edit.run_id.clone(), pending::proposed_event(&edit));
        let uri = file_uri(&edit);
        state.pending.insert(
            number,
            Pending { edit, proposal: proposed.proposal.clone(), hunks, shown: proposed.shown, reply: tx },
        );
        if let Some(uri) = uri {
            self.publish_diagnostics(&state, &uri);
        }
        (id, rx)
    }

    /// The wire view and hunks of a proposal.
    fn subject(&self, proposed: &Proposed<'_>) -> (Subject, Vec<Hunk>, Vec<String>) {
        match proposed.proposal {
            Proposal::Command(command) => (
                Subject::Command { command: command.command.clone(), cwd: command.cwd.display().to_string() },
                Vec::new(),
                Vec::new(),
            ),
            Proposal::FileChange(change) => {
                let (encoding, open_uri) = {
                    let documents = lock(&self.documents);
                    (documents.encoding, documents.by_path(&change.path).map(|document| document.uri.clone()))
                };
                let uri = open_uri.or_else(|| path_uri(&change.path)).unwrap_or_default();
                let before = change.before.as_deref().unwrap_or("");
                let hunks = diff::hunks(before, &change.after, encoding, DIFF_DEADLINE);
                let file = FileSubject {
                    uri,
                    version: change.version,
                    create: change.before.is_none(),
                    hunks: hunks.iter().map(HunkView::of).collect(),
                    diff: diff::unified_diff(&proposed.shown, before, &change.after),
                };
                (Subject::File(file), hunks, change.notes.clone())
            }
        }
    }

    /// `reins.edit.list`: the pending edits, of one session or all, oldest first.
    pub fn list(&self, session_id: Option<&str>) -> Vec<PendingEdit> {
        let state = lock(&self.state);
        state
            .pending
            .values()
            .filter(|pending| session_id.is_none_or(|id| pending.edit.session_id == id))
            .map(|pending| pending.edit.clone())
            .collect()
    }

    /// The pending edits of one document, for code actions.
    pub fn on_uri(&self, uri: &str) -> Vec<PendingEdit> {
        let state = lock(&self.state);
        state
            .pending
            .values()
            .filter(|pending| file_uri(&pending.edit).as_deref() == Some(uri))
            .map(|p| p.edit.clone())
            .collect()
    }

    /// `reins.edit.reject`.
    pub fn reject(&self, id: &str, reason: Option<String>) -> Result<Value, Error> {
        let pending = self.take(id, None)?;
        let subject = match &pending.proposal {
            Proposal::Command(command) => format!("the command `{}`", command.command),
            Proposal::FileChange(_) => format!("this {} of {}", pending.edit.tool, pending.shown),
        };
        let reason_for_model = pending::rejected_reason(&subject, reason.as_deref());
        let reason_shown = reason.filter(|reason| !reason.trim().is_empty()).unwrap_or_else(|| "rejected".to_string());
        self.resolve(
            pending,
            Outcome::Rejected,
            &[],
            Some(&reason_shown),
            Decision::Block { reason: reason_for_model },
        )?;
        Ok(json!({ "id": id, "outcome": Outcome::Rejected.as_str() }))
    }

    /// `reins.edit.accept`: all hunks, or the chosen ones, with the user's `reason` for the
    /// others. A change to text the user edited meanwhile is rebased onto it, or refused as stale
    /// when they touch the same lines.
    pub fn accept(
        &self,
        id: &str,
        chosen: Option<Vec<usize>>,
        allow_for_session: bool,
        reason: Option<String>,
    ) -> Result<Value, Error> {
        let pending = self.take(id, chosen.as_deref())?;
        if allow_for_session {
            let key = (pending.edit.session_id.clone(), pending.edit.tool.clone());
            lock(&self.state).allowed.insert(key);
        }
        let change = match &pending.proposal {
            Proposal::Command(_) => {
                self.resolve(pending, Outcome::Applied, &[], None, Decision::Accept { change: None, note: None })?;
                return Ok(json!({ "id": id, "outcome": Outcome::Applied.as_str(), "hunks": [] }));
            }
            Proposal::FileChange(change) => change.clone(),
        };
        let all: Vec<usize> = pending.hunks.iter().map(|hunk| hunk.index).collect();
        let mut chosen = chosen.unwrap_or_else(|| all.clone());
        chosen.sort_unstable();
        chosen.dedup();
        let outcome = if chosen.len() == all.len() { Outcome::Applied } else { Outcome::PartiallyApplied };
        // A reason only says something about hunks left out; blank is no reason.
        let reason = reason
            .map(|reason| reason.trim().to_string())
            .filter(|reason| outcome == Outcome::PartiallyApplied && !reason.is_empty());
        let before = change.before.as_deref().unwrap_or("");
        let proposed_after = diff::apply_hunks(before, &pending.hunks, &chosen);

        let settled = match self.current_text(&change.path) {
            // The file was created while the write waited.
            Some(_) if change.before.is_none() => Err(pending::created_meanwhile_reason(&pending.shown)),
            Some((current, version)) if current != before => match merge::rebase(before, &proposed_after, &current) {
                Ok(merged) => Ok((Some(current), merged, version, Some(pending::merged_note(&pending.shown)))),
                Err(conflict) => Err(pending::stale_reason(&pending.shown, &conflict, &current)),
            },
            Some((current, version)) => Ok((Some(current), proposed_after, version, None)),
            None if change.before.is_some() => Err(format!(
                "{} was deleted while this change waited for review, so nothing was changed.",
                pending.shown
            )),
            None => Ok((None, proposed_after, None, None)),
        };
        let (current, after, version, merged_note) = match settled {
            Ok(settled) => settled,
            Err(reason) => {
                self.resolve(pending, Outcome::Stale, &[], Some(&reason.clone()), Decision::Block { reason })?;
                return Ok(json!({ "id": id, "outcome": Outcome::Stale.as_str(), "hunks": [] }));
            }
        };
        let mut notes: Vec<String> = Vec::new();
        if outcome == Outcome::PartiallyApplied {
            notes.push(pending::partial_note(&pending.shown, &pending.hunks, &chosen, &after, reason.as_deref()));
        }
        notes.extend(merged_note);
        // Unchanged: the proposal goes as it was, and its own text is what the workspace reports.
        let (decision, after) = if notes.is_empty() && current.as_deref() == change.before.as_deref() {
            (Decision::Accept { change: None, note: None }, change.after.clone())
        } else {
            let changed = FileChange { before: current, after: after.clone(), version, ..change.clone() };
            (Decision::Accept { change: Some(changed), note: Some(notes.join("\n")) }, after)
        };
        let applying =
            Applying { id: id.to_string(), run: run_key(&pending.edit), after, outcome, hunks: chosen.clone(), reason };
        lock(&self.state).applying.insert(change.path.clone(), applying);
        self.clear_diagnostics(&pending.edit);
        if pending.reply.send(decision).is_err() {
            lock(&self.state).applying.remove(&change.path);
            return Err(gone(id));
        }
        Ok(json!({ "id": id, "outcome": outcome.as_str(), "hunks": chosen }))
    }

    /// The run stopped while `id` waited: it is rejected with reason "cancelled".
    pub fn cancel(&self, id: &str) {
        let taken = {
            let mut state = lock(&self.state);
            let number = state.pending.iter().find(|(_, pending)| pending.edit.id == id).map(|(number, _)| *number);
            number.and_then(|number| state.pending.remove(&number))
        };
        match taken {
            Some(pending) => {
                lock(&self.state).decided.insert(id.to_string());
                let _ = self.resolve(
                    pending,
                    Outcome::Cancelled,
                    &[],
                    Some("cancelled"),
                    Decision::Block { reason: "cancelled".to_string() },
                );
            }
            None => {
                // Accepted at the same moment: the change will not be applied now.
                let mut state = lock(&self.state);
                let path = state.applying.iter().find(|(_, applying)| applying.id == id).map(|(path, _)| path.clone());
                if let Some(applying) = path.and_then(|path| state.applying.remove(&path)) {
                    drop(state);
                    let event = pending::resolved_event(id, Outcome::Cancelled, &[], Some("cancelled"));
                    self.events.review(applying.run.0, applying.run.1, event);
                }
            }
        }
    }

    /// The workspace applied (or failed to apply) a change to `path`. If it was an accepted
    /// proposal, `edit_resolved` says how it went.
    pub fn applied(&self, path: &Path, after: &str, result: &Result<(), WorkspaceError>) {
        let applying = {
            let mut state = lock(&self.state);
            match state.applying.get(path) {
                Some(applying) if applying.after == after => state.applying.remove(path),
                _ => None,
            }
        };
        let Some(applying) = applying else { return };
        let event = match result {
            Ok(()) => {
                pending::resolved_event(&applying.id, applying.outcome, &applying.hunks, applying.reason.as_deref())
            }
            Err(WorkspaceError::Stale { .. }) => pending::resolved_event(
                &applying.id,
                Outcome::Stale,
                &[],
                Some("the buffer changed again before the change reached the editor"),
            ),
            // The editor's own reason, as it gave it.
            Err(WorkspaceError::Rejected { reason, .. }) => {
                pending::resolved_event(&applying.id, Outcome::Failed, &[], Some(reason))
            }
            Err(err) => pending::resolved_event(&applying.id, Outcome::Failed, &[], Some(&err.to_string())),
        };
        self.events.review(applying.run.0, applying.run.1, event);
    }

    /// Takes `id` out of the pending map (marking it decided), after checking `chosen` hunks.
    fn take(&self, id: &str, chosen: Option<&[usize]>) -> Result<Pending, Error> {
        let mut state = lock(&self.state);
        let Some(number) = state.pending.iter().find(|(_, pending)| pending.edit.id == id).map(|(n, _)| *n) else {
            if state.decided.contains(id) {
                return Err(to_proto::error("invalid_state", format!("{id} was already decided")));
            }
            return Err(to_proto::invalid_argument(format!(
                "no pending edit {id:?}; reins.edit.list shows the pending ones"
            )));
        };
        if let (Some(chosen), Some(pending)) = (chosen, state.pending.get(&number)) {
            check_hunks(id, chosen, &pending.proposal, pending.hunks.len())?;
        }
        state.decided.insert(id.to_string());
        state.pending.remove(&number).ok_or_else(|| gone(id))
    }

    /// Publishes a decision: the `edit_resolved` event, cleared diagnostics, and the gate's answer.
    fn resolve(
        &self,
        pending: Pending,
        outcome: Outcome,
        hunks: &[usize],
        reason: Option<&str>,
        decision: Decision,
    ) -> Result<(), Error> {
        let id = pending.edit.id.clone();
        let event = pending::resolved_event(&id, outcome, hunks, reason);
        self.events.review(pending.edit.session_id.clone(), pending.edit.run_id.clone(), event);
        self.clear_diagnostics(&pending.edit);
        pending.reply.send(decision).map_err(|_| gone(&id))
    }

    /// Republishes the diagnostics of `edit`'s document without it.
    fn clear_diagnostics(&self, edit: &PendingEdit) {
        if let Some(uri) = file_uri(edit) {
            self.publish_diagnostics(&lock(&self.state), &uri);
        }
    }

    /// The diagnostics of every pending edit on `uri` (none clears them).
    fn publish_diagnostics(&self, state: &ReviewState, uri: &str) {
        let Ok(parsed) = uri.parse::<Uri>() else { return };
        let on_uri: Vec<&PendingEdit> = state
            .pending
            .values()
            .map(|pending| &pending.edit)
            .filter(|edit| file_uri(edit).as_deref() == Some(uri))
            .collect();
        let version = on_uri.iter().find_map(|edit| match &edit.subject {
            Subject::File(file) => file.version,
            Subject::Command { .. } => None,
        });
        let diagnostics = on_uri.into_iter().flat_map(pending::diagnostics).collect();
        self.events.diagnostics(parsed, diagnostics, version);
    }

    /// The text of `path` now, with the buffer version when it is open; `None` if it does not exist.
    fn current_text(&self, path: &Path) -> Option<(String, Option<i32>)> {
        if let Some(document) = lock(&self.documents).by_path(path) {
            return Some((document.text(), Some(document.version)));
        }
        std::fs::read_to_string(path).ok().map(|text| (text, None))
    }
}

/// Checks the hunk indexes of `reins.edit.accept {hunks}`.
fn check_hunks(id: &str, chosen: &[usize], proposal: &Proposal, count: usize) -> Result<(), Error> {
    if matches!(proposal, Proposal::Command(_)) {
        return Err(to_proto::invalid_argument(format!("{id} is a command; it has no hunks to choose")));
    }
    if chosen.is_empty() {
        return Err(to_proto::invalid_argument(format!(
            "hunks is empty; name at least one hunk of {id}, or reject it with reins.edit.reject"
        )));
    }
    if let Some(missing) = chosen.iter().find(|index| **index >= count) {
        return Err(to_proto::invalid_argument(format!(
            "{id} has no hunk {missing}; its hunks are 0 to {}",
            count.saturating_sub(1)
        )));
    }
    Ok(())
}

fn gone(id: &str) -> Error {
    to_proto::error("invalid_state", format!("the run that proposed {id} is no longer waiting for it"))
}

fn run_key(edit: &PendingEdit) -> RunKey {
    (edit.session_id.clone(), edit.run_id.clone())
}

fn file_uri(edit: &PendingEdit) -> Option<String> {
    match &edit.subject {
        Subject::File(file) if !file.create => Some(file.uri.clone()),
        _ => None,
    }
}

/// `file://` URI of a path.
pub fn path_uri(path: &Path) -> Option<String> {
    Uri::from_file_path(path).map(|uri| uri.as_str().to_string())
}
