//! The language server's side of review: the approver that holds each proposal as a pending edit
//! of the review core ([`reins_review::PendingEdits`]) until `reins.edit.accept` /
//! `reins.edit.reject`, and the observer that shows pending edits to the editor — the
//! `edit_proposed` and `edit_resolved` events, diagnostics on the hunks, and code actions.
//!
//! Deciding is the core's: this module reads the files as they are now (the open buffer, else
//! the disk) and turns the core's answers into JSON-RPC results. An accepted file change is
//! applied by the tool through [`super::workspace`], which reports back here so `edit_resolved`
//! says what really happened in the editor.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use reins_agent::{FileChange, Proposal};
use reins_harness::{ApprovalRequest, Approver, Verdict};
use reins_review::{Choice, Observer, Origin, PendingEdit, PendingEdits, Resolution, Subject, Written};
use reins_tools::{Workspace, WorkspaceError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tower_lsp_server::jsonrpc::Error;
use tower_lsp_server::ls_types::{Range, Uri};

use crate::documents::Documents;
use crate::events::Events;
use crate::workspace::EditorWorkspace;
use crate::{lock, to_proto};

/// The pending edits, as the editor sees them.
pub struct Reviews {
    edits: Arc<PendingEdits>,
    documents: Arc<Mutex<Documents>>,
    /// Locked only after `edits`' own lock, or without it held by this thread: the publisher
    /// takes it while `edits` holds theirs.
    shown: Arc<Mutex<HashMap<String, Shown>>>,
    publisher: Arc<Publisher>,
}

/// What the editor was shown of one pending edit, kept because its hunks' ranges are positions
/// in the text the proposal was made from.
#[derive(Clone)]
pub struct Shown {
    pub id: String,
    /// The file, when there is one the editor can mark (not a new file).
    pub uri: Option<String>,
    pub version: Option<i32>,
    pub paths: Vec<PathBuf>,
    /// Each hunk's index and range: where it is in the buffer now, moved with the user's typing.
    pub hunks: Vec<(usize, Range)>,
    /// The hunks whose lines the user changed since (accepting them will be refused).
    pub conflicts: Vec<usize>,
    /// The `PendingEdit` of the protocol.
    pub json: Value,
}

/// Tells the editor about the review, in the order things happen.
struct Publisher {
    events: Events,
    documents: Arc<Mutex<Documents>>,
    shown: Arc<Mutex<HashMap<String, Shown>>>,
}

/// Asks by holding the proposal as a pending edit until the user decides or the run stops.
pub struct ReviewApprover {
    pub reviews: Arc<Reviews>,
    pub workspace: Arc<EditorWorkspace>,
}

#[async_trait]
impl Approver for ReviewApprover {
    async fn decide(&self, request: ApprovalRequest<'_>, cancel: &CancellationToken) -> Verdict {
        let cwd = self.workspace.cwd();
        let shown = |path: &Path| reins_tools::display_path(path, &cwd);
        // One pending edit per file: a patch of several is decided file by file.
        self.reviews.edits.decide(Origin::of(&request), request.proposal, shown, cancel).await
    }
}

impl Reviews {
    pub fn new(documents: Arc<Mutex<Documents>>, events: Events) -> Self {
        let shown = Arc::new(Mutex::new(HashMap::new()));
        let publisher = Arc::new(Publisher { events, documents: documents.clone(), shown: shown.clone() });
        Self { edits: Arc::new(PendingEdits::new(publisher.clone())), documents, shown, publisher }
    }

    /// Holds `change` — not a tool call's: a restore of files to an earlier entry — as a pending
    /// edit of `origin`, and applies it through `workspace` once the user accepts it (some hunks
    /// or all, rebased onto what the user typed meanwhile); answers the pending edit's id, and
    /// the task that ends once it is decided (and, accepted, applied).
    pub fn propose_change(
        &self,
        origin: Origin,
        change: FileChange,
        workspace: Arc<EditorWorkspace>,
    ) -> (String, tokio::task::JoinHandle<()>) {
        let cwd = workspace.cwd();
        let proposal = Proposal::FileChange(change.clone());
        let subject = Subject::each_file(&proposal, |path| reins_tools::display_path(path, &cwd)).into_iter().next();
        let (edit, reply) = self.edits.propose(origin, subject.unwrap_or(Subject::Files(Vec::new())));
        let edits = self.edits.clone();
        let id = edit.id.clone();
        let done = tokio::spawn(async move {
            // No run waits for it: the user decides whenever they like.
            let changes = match edits.wait(&id, reply, &CancellationToken::new()).await {
                Verdict::Accept { changed: Some(changed), .. } => changed.files,
                Verdict::Accept { changed: None, .. } => vec![change],
                Verdict::Reject { .. } => return,
            };
            for change in changes {
                // The workspace reports how it went (`edit_resolved`).
                if let Err(err) = workspace.apply(&change).await {
                    tracing::warn!("restoring {}: {err}", change.path.display());
                }
            }
        });
        (edit.id, done)
    }

    /// The ids of the edits still pending in run `run_id`.
    pub fn pending_in_run(&self, run_id: &str) -> Vec<String> {
        self.edits.list(None).into_iter().filter(|edit| edit.run_id == run_id).map(|edit| edit.id).collect()
    }

    /// The user changed the open document `uri`: the hunks of the edits pending on it moved with
    /// the text (or now conflict with it), and their ranges and diagnostics follow.
    pub fn document_changed(&self, uri: &str) {
        let (path, text, version, encoding) = {
            let documents = lock(&self.documents);
            let Some(document) = documents.get(uri) else { return };
            let Some(path) = document.path.clone() else { return };
            (path, document.rope.clone(), document.version, documents.encoding)
        };
        let waiting = self.edits.on_path(&path);
        if waiting.is_empty() {
            return;
        }
        let current = text.to_string();
        {
            let mut shown = lock(&self.shown);
            for edit in &waiting {
                let (Some(seen), Subject::Files(files)) = (shown.get_mut(&edit.id), &edit.subject) else { continue };
                let Some(file) = files.iter().find(|file| file.path == path) else { continue };
                let located = reins_review::locate(file.before.as_deref().unwrap_or(""), &file.hunks, &current);
                let (ranges, conflicts) = to_proto::located_ranges(&text, &file.hunks, &located, encoding);
                seen.hunks = file.hunks.iter().map(|hunk| hunk.index).zip(ranges).collect();
                seen.conflicts = conflicts;
                seen.version = Some(version);
            }
        }
        let waiting: Vec<&PendingEdit> = waiting.iter().collect();
        self.publisher.waiting_on(&path, &waiting);
    }

    /// `reins.edit.list`: the pending edits, of one session or all, oldest first.
    pub fn list(&self, session_id: Option<&str>) -> Value {
        // The pending edits first, then `shown` (see there).
        let edits = self.edits.list(session_id);
        let shown = lock(&self.shown);
        Value::Array(edits.iter().filter_map(|edit| shown.get(&edit.id)).map(|shown| shown.json.clone()).collect())
    }

    /// The pending edits of one document, for code actions.
    pub fn on_uri(&self, uri: &str) -> Vec<Shown> {
        let waiting = self.edits.list(None);
        let shown = lock(&self.shown);
        let on_uri = waiting.iter().filter_map(|edit| shown.get(&edit.id));
        on_uri.filter(|shown| shown.uri.as_deref() == Some(uri)).cloned().collect()
    }

    /// `reins.edit.comment`: the comment is kept with its hunk (whose range follows the user's
    /// typing) until the edit is decided, and goes to the model with the decision.
    pub fn comment(&self, id: &str, hunk: usize, text: &str) -> Result<Value, Error> {
        let edit = self.edits.comment(id, hunk, text).map_err(to_proto::review_error)?;
        Ok(to_proto::edit_comments(&edit))
    }

    /// `reins.edit.reject`.
    pub fn reject(&self, id: &str, reason: Option<String>) -> Result<Value, Error> {
        let current = |path: &Path| self.current_text(path);
        let resolution = self.edits.reject(id, reason, &current).map_err(to_proto::review_error)?;
        Ok(to_proto::edit_rejected(&resolution))
    }

    /// `reins.edit.accept`: all hunks, or the chosen ones, with the user's `reason` for the
    /// others, against the files as they are now.
    pub fn accept(
        &self,
        id: &str,
        hunks: Option<Vec<usize>>,
        allow_for_session: bool,
        reason: Option<String>,
    ) -> Result<Value, Error> {
        let choice = Choice { hunks, allow_for_session, reason };
        let current = |path: &Path| self.current_text(path);
        let resolution = self.edits.accept(id, choice, &current).map_err(to_proto::review_error)?;
        Ok(to_proto::edit_accepted(&resolution))
    }

    /// The workspace applied (or failed to apply) a change to `path`. If it was an accepted
    /// proposal, `edit_resolved` says how it went.
    pub fn written(&self, path: &Path, after: &str, result: &Result<(), WorkspaceError>) {
        let written = match result {
            Ok(()) => Written::Ok,
            Err(WorkspaceError::Stale { .. }) => Written::Stale,
            // The editor's own reason, as it gave it.
            Err(WorkspaceError::Rejected { reason, .. }) => Written::Failed(reason.clone()),
            Err(err) => Written::Failed(err.to_string()),
        };
        self.edits.written(path, after, written);
    }

    /// The text of `path` now, with the buffer version when it is open; `None` if it does not exist.
    fn current_text(&self, path: &Path) -> Option<(String, Option<i32>)> {
        if let Some(document) = lock(&self.documents).by_path(path) {
            return Some((document.text(), Some(document.version)));
        }
        std::fs::read_to_string(path).ok().map(|text| (text, None))
    }
}

impl Observer for Publisher {
    fn proposed(&self, edit: &PendingEdit) {
        let shown = self.show(edit);
        self.events.review(edit.session_id.clone(), edit.run_id.clone(), to_proto::edit_proposed(shown.json.clone()));
        lock(&self.shown).insert(edit.id.clone(), shown);
    }

    fn resolved(&self, resolution: &Resolution) {
        let event = to_proto::edit_resolved(resolution);
        self.events.review(resolution.session_id.clone(), resolution.run_id.clone(), event);
        // What has marks in the editor goes in `waiting_on`, once the marks are cleared.
        let mut shown = lock(&self.shown);
        if shown.get(&resolution.id).is_some_and(|seen| seen.uri.is_none()) {
            shown.remove(&resolution.id);
        }
    }

    fn commented(&self, edit: &PendingEdit, hunk: usize) {
        let range = {
            let mut shown = lock(&self.shown);
            let Some(seen) = shown.get_mut(&edit.id) else { return };
            seen.json["comments"] = to_proto::comments(edit);
            seen.hunks.iter().find(|(index, _)| *index == hunk).map(|(_, range)| *range)
        };
        let event = to_proto::edit_commented(edit, hunk, range);
        self.events.review(edit.session_id.clone(), edit.run_id.clone(), event);
    }

    fn waiting_on(&self, path: &Path, waiting: &[&PendingEdit]) {
        let mut shown = lock(&self.shown);
        // The URI the editor knows the file by, from any edit shown on it.
        let uri =
            shown.values().filter(|seen| seen.paths.iter().any(|of| of == path)).find_map(|seen| seen.uri.clone());
        let mut version = None;
        let mut diagnostics = Vec::new();
        for (index, edit) in waiting.iter().enumerate() {
            let Some(seen) = shown.get(&edit.id) else { continue };
            if index == 0 {
                version = seen.version;
            }
            let ranges: Vec<Range> = seen.hunks.iter().map(|(_, range)| *range).collect();
            diagnostics.extend(to_proto::review_diagnostics(edit, &ranges, &seen.conflicts));
        }
        // The edits of this file no longer waiting are decided: the editor is done with them.
        shown.retain(|id, seen| !seen.paths.iter().any(|of| of == path) || waiting.iter().any(|edit| &edit.id == id));
        if let Some(uri) = uri.or_else(|| path_uri(path)).and_then(|uri| uri.parse::<Uri>().ok()) {
            self.events.diagnostics(uri, diagnostics, version);
        }
    }
}

impl Publisher {
    /// The editor's view of a new pending edit: its file's URI (the open buffer's, else one made
    /// from the path) and its hunks' ranges in the negotiated encoding.
    fn show(&self, edit: &PendingEdit) -> Shown {
        let file = match &edit.subject {
            Subject::Files(files) => files.first(),
            Subject::Command(_) | Subject::ServerCall(_) => None,
        };
        let Some(file) = file else {
            let json = to_proto::pending_edit(edit, "", &[]);
            let (hunks, conflicts) = (Vec::new(), Vec::new());
            return Shown { id: edit.id.clone(), uri: None, version: None, paths: Vec::new(), hunks, conflicts, json };
        };
        let (encoding, open_uri) = {
            let documents = lock(&self.documents);
            (documents.encoding, documents.by_path(&file.path).map(|document| document.uri.clone()))
        };
        let uri = open_uri.or_else(|| path_uri(&file.path)).unwrap_or_default();
        let ranges = to_proto::hunk_ranges(file.before.as_deref().unwrap_or(""), &file.hunks, encoding);
        let json = to_proto::pending_edit(edit, &uri, &ranges);
        Shown {
            id: edit.id.clone(),
            uri: (!file.creates()).then_some(uri),
            version: file.version,
            paths: vec![file.path.clone()],
            hunks: file.hunks.iter().map(|hunk| hunk.index).zip(ranges).collect(),
            conflicts: Vec::new(),
            json,
        }
    }
}

/// `file://` URI of a path.
pub fn path_uri(path: &Path) -> Option<String> {
    Uri::from_file_path(path).map(|uri| uri.as_str().to_string())
}
