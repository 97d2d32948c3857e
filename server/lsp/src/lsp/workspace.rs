//! The editor-backed [`Workspace`]: the agent's tools read open buffers (with their versions)
//! before the disk, paths stay confined to the workspace folders the client named, and changes
//! go to the editor as versioned `workspace/applyEdit` — minimal edits, one per hunk, so undo in
//! the editor is per hunk and the cursor stays put. A file that is not open goes through the
//! editor too when it takes `documentChanges` (it opens the file), else to the disk.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::FileChange;
use reins_tools::{FsWorkspace, TextFile, Workspace, WorkspaceError};
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{MessageType, TextEdit, Uri, WorkspaceEdit};

use reins_review::DIFF_DEADLINE;
use ropey::Rope;

use crate::lsp::documents::Documents;
use crate::lsp::review::Reviews;
use crate::lsp::{lock, to_proto};

/// How long the editor has to answer `workspace/applyEdit` before the change counts as failed.
const APPLY_EDIT_TIMEOUT: Duration = Duration::from_secs(10);

/// When a client has not answered `workspace/applyEdit` by then, the server writes a log line
/// (see [`EditorWorkspace::send`]).
const NUDGE_AFTER: Duration = Duration::from_millis(150);

pub struct EditorWorkspace {
    documents: Arc<Mutex<Documents>>,
    disk: RwLock<FsWorkspace>,
    client: Client,
    reviews: Arc<Reviews>,
    /// The client applies versioned `documentChanges` (`workspace.workspaceEdit.documentChanges`).
    document_changes: AtomicBool,
    /// … and `CreateFile` operations among them (`resourceOperations` has `create`).
    create_files: AtomicBool,
}

impl EditorWorkspace {
    /// A workspace over `fallback` until the client names its folders. Applied changes are
    /// reported to `reviews`.
    pub fn new(documents: Arc<Mutex<Documents>>, client: Client, fallback: FsWorkspace, reviews: Arc<Reviews>) -> Self {
        Self {
            documents,
            disk: RwLock::new(fallback),
            client,
            reviews,
            document_changes: AtomicBool::new(false),
            create_files: AtomicBool::new(false),
        }
    }

    /// What the client said it can apply (`initialize`).
    pub fn set_edit_support(&self, document_changes: bool, create_files: bool) {
        self.document_changes.store(document_changes, Ordering::Relaxed);
        self.create_files.store(document_changes && create_files, Ordering::Relaxed);
    }

    /// Replaces the roots (`initialize`, `didChangeWorkspaceFolders`). Folders that do not exist
    /// are skipped with a warning; with none left, the roots stay as they were.
    pub fn set_roots(&self, roots: Vec<PathBuf>) {
        let existing: Vec<PathBuf> = roots
            .into_iter()
            .filter(|root| {
                let exists = root.is_dir();
                if !exists {
                    tracing::warn!("workspace folder {} does not exist; ignored", root.display());
                }
                exists
            })
            .collect();
        if existing.is_empty() {
            return;
        }
        match FsWorkspace::new(existing) {
            Ok(disk) => *self.disk.write().unwrap_or_else(|poison| poison.into_inner()) = disk,
            Err(err) => tracing::warn!("cannot use the workspace folders: {err}"),
        }
    }

    fn disk(&self) -> FsWorkspace {
        self.disk.read().unwrap_or_else(|poison| poison.into_inner()).clone()
    }

    /// Sends `edit` and waits (in the tool's task, never in a handler) for the editor's answer.
    async fn send(&self, path: &Path, edit: WorkspaceEdit) -> Result<(), WorkspaceError> {
        let rejected = |reason: String| WorkspaceError::Rejected { path: path.to_path_buf(), reason };
        let answer = self.client.apply_edit(edit);
        let deadline = tokio::time::sleep(APPLY_EDIT_TIMEOUT);
        let nudge = tokio::time::sleep(NUDGE_AFTER);
        tokio::pin!(answer, deadline, nudge);
        let mut nudged = false;
        let answered = loop {
            tokio::select! {
                answer = &mut answer => break Ok(answer),
                _ = &mut deadline => break Err(()),
                // Emacs's jsonrpc, while it waits for the answer to `reins.edit.accept`, leaves a
                // request that arrived in the same read as that answer unread until more output
                // comes. A log line a moment later is that output, and harmless everywhere else.
                _ = &mut nudge, if !nudged => {
                    nudged = true;
                    let note = format!("reins: waiting for the editor to apply the change to {}", path.display());
                    self.client.log_message(MessageType::LOG, note).await;
                }
            }
        };
        match answered {
            Err(_) => Err(rejected(format!("the editor did not answer within {}s", APPLY_EDIT_TIMEOUT.as_secs()))),
            Ok(Err(err)) => Err(rejected(format!("the editor answered with an error: {}", err.message))),
            Ok(Ok(response)) if response.applied => Ok(()),
            Ok(Ok(response)) => {
                Err(rejected(response.failure_reason.unwrap_or_else(|| "the editor refused the edit".to_string())))
            }
        }
    }

    /// Applies a change to `path` (resolved): through the editor where it can, else on disk.
    async fn apply_at(&self, path: &Path, change: &FileChange) -> Result<(), WorkspaceError> {
        let stale = |actual| WorkspaceError::Stale { path: path.to_path_buf(), expected: change.version, actual };
        let (open, encoding) = {
            let documents = lock(&self.documents);
            let open =
                documents.by_path(path).map(|document| (document.uri.clone(), document.version, document.rope.clone()));
            (open, documents.encoding)
        };
        if let Some((uri, version, rope)) = open {
            let text = rope.to_string();
            if change.before.as_deref() != Some(text.as_str()) {
                return Err(stale(Some(version)));
            }
            let hunks = reins_review::hunks(&text, &change.after, DIFF_DEADLINE);
            let edits = to_proto::text_edits(&rope, &hunks, encoding);
            if edits.is_empty() {
                return Ok(());
            }
            return self.send(path, to_proto::document_edit(&uri, Some(version), edits)).await;
        }
        let disk = self.disk();
        if !self.document_changes.load(Ordering::Relaxed) {
            return disk.apply(change).await;
        }
        let Some(uri) = Uri::from_file_path(path) else { return disk.apply(change).await };
        let edit = match &change.before {
            Some(before) => {
                let current = match disk.read_text(path).await {
                    Ok(file) => file.text,
                    Err(WorkspaceError::NotFound(_)) => return Err(stale(None)),
                    Err(err) => return Err(err),
                };
                if &current != before {
                    return Err(stale(None));
                }
                let hunks = reins_review::hunks(before, &change.after, DIFF_DEADLINE);
                let edits = to_proto::text_edits(&Rope::from_str(before), &hunks, encoding);
                if edits.is_empty() {
                    return Ok(());
                }
                to_proto::document_edit(uri.as_str(), None, edits)
            }
            None if !self.create_files.load(Ordering::Relaxed) => return disk.apply(change).await,
            None => {
                if tokio::fs::try_exists(path).await.unwrap_or(false) {
                    return Err(stale(None));
                }
                // CreateFile does not promise parent directories; the write tool does.
                if let Some(parent) = path.parent() {
                    tokio::fs::create_dir_all(parent)
                        .await
                        .map_err(|err| WorkspaceError::Io { path: parent.to_path_buf(), reason: err.to_string() })?;
                }
                let content = (!change.after.is_empty())
                    .then(|| TextEdit { range: Default::default(), new_text: change.after.clone() });
                to_proto::create_file_edit(uri, content)
            }
        };
        self.send(path, edit).await
    }
}

#[async_trait]
impl Workspace for EditorWorkspace {
    fn roots(&self) -> Vec<PathBuf> {
        self.disk().roots()
    }

    fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        self.disk().resolve(path)
    }

    fn is_inside(&self, path: &Path) -> bool {
        self.disk().is_inside(path)
    }

    async fn read_text(&self, path: &Path) -> Result<TextFile, WorkspaceError> {
        let disk = self.disk();
        let path = disk.resolve_path(path)?;
        if let Some(document) = lock(&self.documents).by_path(&path) {
            return Ok(TextFile { text: document.text(), version: Some(document.version) });
        }
        disk.read_text(&path).await
    }

    async fn apply(&self, change: &FileChange) -> Result<(), WorkspaceError> {
        let path = self.disk().resolve_path(&change.path)?;
        let result = self.apply_at(&path, change).await;
        // A reviewed change: `edit_resolved` tells the editor how it went.
        self.reviews.written(&path, &change.after, &result);
        result
    }

    fn open_buffers(&self) -> Vec<(PathBuf, String)> {
        let documents = lock(&self.documents);
        documents.all().filter_map(|document| Some((document.path.clone()?, document.text()))).collect()
    }
}
