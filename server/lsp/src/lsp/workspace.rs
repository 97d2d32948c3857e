//! The editor-backed [`Workspace`]: the agent's tools read open buffers (with their versions)
//! before the disk, paths stay confined to the workspace folders the client named, and changes
//! go to the editor as versioned `workspace/applyEdit` — minimal edits, one per hunk, so undo in
//! the editor is per hunk and the cursor stays put. A file that is not open goes through the
//! editor too when it takes `documentChanges` (it opens the file), else to the disk. A change of
//! several files (a patch) goes as one workspace edit — `CreateFile`, `RenameFile`, `DeleteFile`
//! and versioned document edits together — when the client can apply all of it, so it lands
//! whole or not at all; otherwise file by file, undone if one fails.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::FileChange;
use reins_tools::{FsWorkspace, TextFile, Workspace, WorkspaceError};
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{ResourceOperationKind, TextEdit, Uri, WorkspaceEdit};

use reins_review::DIFF_DEADLINE;

use crate::lsp::documents::Documents;
use crate::lsp::review::Reviews;
use crate::lsp::to_proto::FileOperation;
use crate::lsp::{lock, to_proto};

/// How long the editor has to answer `workspace/applyEdit` before the change counts as failed.
const APPLY_EDIT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct EditorWorkspace {
    documents: Arc<Mutex<Documents>>,
    disk: RwLock<FsWorkspace>,
    client: Client,
    reviews: Arc<Reviews>,
    /// The client applies versioned `documentChanges` (`workspace.workspaceEdit.documentChanges`).
    document_changes: AtomicBool,
    /// … and `CreateFile` operations among them (`resourceOperations` has `create`).
    create_files: AtomicBool,
    /// … `RenameFile` (`rename`).
    rename_files: AtomicBool,
    /// … `DeleteFile` (`delete`).
    delete_files: AtomicBool,
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
            rename_files: AtomicBool::new(false),
            delete_files: AtomicBool::new(false),
        }
    }

    /// What the client said it can apply (`initialize`): versioned `documentChanges`, and which
    /// resource operations among them.
    pub fn set_edit_support(&self, document_changes: bool, operations: &[ResourceOperationKind]) {
        let can = |kind: ResourceOperationKind| document_changes && operations.contains(&kind);
        self.document_changes.store(document_changes, Ordering::Relaxed);
        self.create_files.store(can(ResourceOperationKind::Create), Ordering::Relaxed);
        self.rename_files.store(can(ResourceOperationKind::Rename), Ordering::Relaxed);
        self.delete_files.store(can(ResourceOperationKind::Delete), Ordering::Relaxed);
    }

    /// Whether the client can apply every one of `changes` in one workspace edit.
    fn can_apply_together(&self, changes: &[FileChange]) -> bool {
        let flag = |flag: &AtomicBool| flag.load(Ordering::Relaxed);
        flag(&self.document_changes)
            && changes.iter().all(|change| {
                (!change.delete || flag(&self.delete_files))
                    && (change.moved_to.is_none() || flag(&self.rename_files))
                    && (change.before.is_some() || flag(&self.create_files))
            })
    }

    /// `changes` as one workspace edit, each checked against the text it was made from (the open
    /// buffer, else the disk), or the first that went stale.
    async fn one_edit(&self, changes: &[FileChange]) -> Result<WorkspaceEdit, WorkspaceError> {
        let disk = self.disk();
        let mut operations = Vec::new();
        for change in changes {
            let path = disk.resolve_path(&change.path)?;
            let stale = |actual| WorkspaceError::Stale { path: path.clone(), expected: change.version, actual };
            let invalid = || WorkspaceError::Io { path: path.clone(), reason: "has no file URI".into() };
            let (open, encoding) = {
                let documents = lock(&self.documents);
                let open =
                    documents.by_path(&path).map(|document| (document.uri.clone(), document.version, document.text()));
                (open, documents.encoding)
            };
            let (uri, version, current) = match open {
                Some((uri, version, text)) => (uri.parse::<Uri>().map_err(|_| invalid())?, Some(version), Some(text)),
                None => {
                    let current = match disk.read_text(&path).await {
                        Ok(file) => Some(file.text),
                        Err(WorkspaceError::NotFound(_)) => None,
                        Err(err) => return Err(err),
                    };
                    (Uri::from_file_path(&path).ok_or_else(invalid)?, None, current)
                }
            };
            if current != change.before {
                return Err(stale(version));
            }
            let Some(before) = &change.before else {
                create_parent(&path).await?;
                let content = (!change.after.is_empty())
                    .then(|| TextEdit { range: Default::default(), new_text: change.after.clone() });
                operations.push(FileOperation::Create { uri, content });
                continue;
            };
            if change.delete {
                // An open buffer's version guards its deletion as it guards its edits.
                if version.is_some() {
                    operations.push(FileOperation::Edit { uri: uri.clone(), version, edits: Vec::new() });
                }
                operations.push(FileOperation::Delete { uri });
                continue;
            }
            let hunks = reins_review::hunks(before, &change.after, DIFF_DEADLINE);
            let edits = to_proto::text_edits(before, &hunks, encoding);
            // The versioned edit goes first, so a rename applies to the text it was made from.
            if !edits.is_empty() || version.is_some() {
                operations.push(FileOperation::Edit { uri: uri.clone(), version, edits });
            }
            if let Some(to) = &change.moved_to {
                let to = disk.resolve_path(to)?;
                if tokio::fs::try_exists(&to).await.unwrap_or(false) {
                    return Err(WorkspaceError::Stale { path: to, expected: None, actual: None });
                }
                create_parent(&to).await?;
                let to = Uri::from_file_path(&to).ok_or_else(invalid)?;
                operations.push(FileOperation::Rename { from: uri, to });
            }
        }
        Ok(to_proto::file_operations(operations))
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
        let answered = tokio::time::timeout(APPLY_EDIT_TIMEOUT, self.client.apply_edit(edit)).await;
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
            let edits = to_proto::text_edits(&text, &hunks, encoding);
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
                let edits = to_proto::text_edits(before, &hunks, encoding);
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
                create_parent(path).await?;
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
        let whole_file = change.delete || change.moved_to.is_some();
        if whole_file && self.can_apply_together(std::slice::from_ref(change)) {
            return self.apply_all(std::slice::from_ref(change)).await;
        }
        let path = self.disk().resolve_path(&change.path)?;
        let result = if whole_file { self.disk().apply(change).await } else { self.apply_at(&path, change).await };
        // A reviewed change: `edit_resolved` tells the editor how it went.
        self.reviews.written(&path, &change.after, &result);
        result
    }

    async fn apply_all(&self, changes: &[FileChange]) -> Result<(), WorkspaceError> {
        let simple = changes.len() == 1 && !changes[0].delete && changes[0].moved_to.is_none();
        if simple || !self.can_apply_together(changes) {
            return reins_tools::apply_each(self, changes).await;
        }
        let first = changes.first().map(|change| change.path.clone()).unwrap_or_default();
        let result = match self.one_edit(changes).await {
            Ok(edit) => self.send(&first, edit).await,
            Err(err) => Err(err),
        };
        let disk = self.disk();
        for change in changes {
            // Reviewed changes: `edit_resolved` tells the editor how each went.
            let path = disk.resolve_path(&change.path).unwrap_or_else(|_| change.path.clone());
            self.reviews.written(&path, &change.after, &result);
        }
        result
    }

    fn open_buffers(&self) -> Vec<(PathBuf, String)> {
        let documents = lock(&self.documents);
        documents.all().filter_map(|document| Some((document.path.clone()?, document.text()))).collect()
    }
}

/// Creates the parent directories of `path`: `CreateFile` and `RenameFile` do not promise them.
async fn create_parent(path: &Path) -> Result<(), WorkspaceError> {
    let Some(parent) = path.parent() else { return Ok(()) };
    tokio::fs::create_dir_all(parent)
        .await
        .map_err(|err| WorkspaceError::Io { path: parent.to_path_buf(), reason: err.to_string() })
}
