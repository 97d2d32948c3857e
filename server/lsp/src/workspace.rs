//! The editor-backed [`Workspace`]: the agent's tools read open buffers (with their versions)
//! before the disk, paths stay confined to the workspace folders the client named, and changes
//! go to the editor as versioned `workspace/applyEdit` — minimal edits, one per hunk, so undo in
//! the editor is per hunk and the cursor stays put. A file that is not open goes through the
//! editor too when it takes `documentChanges` (it opens the file), else to the disk. A change of
//! several files (a patch) goes as one workspace edit — `CreateFile`, `RenameFile`, `DeleteFile`
//! and versioned document edits together — when the client can apply all of it, so it lands
//! whole or not at all; otherwise file by file, undone if one fails.
//!
//! The user keeps typing meanwhile: an edit of an open buffer is re-based onto what was typed
//! since it was prepared, re-sent when the editor refuses it for a newer version, and counts as
//! applied only once the editor's `didChange` shows it (see [`EditorWorkspace::apply_open`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::FileChange;
use reins_tools::{FsWorkspace, TextFile, Workspace, WorkspaceError};
use ropey::Rope;
use tokio::sync::watch;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{MessageType, ResourceOperationKind, TextEdit, Uri, WorkspaceEdit};

use reins_review::DIFF_DEADLINE;

use crate::documents::{Document, Documents};
use crate::review::Reviews;
use crate::to_proto::FileOperation;
use crate::{lock, to_proto};

/// How long the editor has to answer `workspace/applyEdit` before the change counts as failed.
const APPLY_EDIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the editor's `didChange` may take to show an edit it applied, or the change that
/// made it refuse one.
const SHOW_TIMEOUT: Duration = Duration::from_secs(2);
/// How often an edit to a buffer the user keeps changing is re-based and sent again.
const SEND_ATTEMPTS: usize = 8;

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

    /// The text of the open buffer at the resolved path `real`, if one is open there.
    fn open_text(&self, real: &Path) -> Option<TextFile> {
        let documents = lock(&self.documents);
        documents.by_path(real).map(|document| TextFile { text: document.text(), version: Some(document.version) })
    }

    /// The text at `real`, a path `disk` resolved: the open buffer's, else the file's.
    async fn text_at(&self, disk: &FsWorkspace, real: &Path) -> Result<TextFile, WorkspaceError> {
        match self.open_text(real) {
            Some(open) => Ok(open),
            None => disk.read_resolved(real).await,
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
        if lock(&self.documents).by_path(path).is_some() {
            return self.apply_open(path, change).await;
        }
        self.apply_closed(path, change).await
    }

    /// Applies a change to the open buffer of `path`. The change is made from the buffer as
    /// the server knows it, with that version, and re-based (three-way, as review does) onto
    /// whatever the user typed since it was prepared; an edit the editor refuses because the
    /// buffer moved on is re-based and sent again. `applied: true` counts once a `didChange`
    /// shows the text it should make: only then is the server's copy where the next edit
    /// starts from.
    async fn apply_open(&self, path: &Path, change: &FileChange) -> Result<(), WorkspaceError> {
        let rejected = |reason: String| WorkspaceError::Rejected { path: path.to_path_buf(), reason };
        let Some(before) = change.before.as_deref() else {
            // A new file's change, and meanwhile a buffer holds the path.
            let actual = lock(&self.documents).by_path(path).map(|document| document.version);
            return Err(WorkspaceError::Stale { path: path.to_path_buf(), expected: change.version, actual });
        };
        let mut refused = String::new();
        for _ in 0..SEND_ATTEMPTS {
            // Subscribed before reading, so no change after the read goes unnoticed.
            let mut revisions = lock(&self.documents).subscribe();
            let open = {
                let documents = lock(&self.documents);
                let open = documents.by_path(path);
                let snapshot = |document: &Document| {
                    (document.uri.clone(), document.version, document.text(), document.loaded.clone())
                };
                open.map(snapshot)
            };
            // Closed meanwhile: the file is the disk's again.
            let Some((uri, version, text, loaded)) = open else { return self.apply_closed(path, change).await };
            let encoding = lock(&self.documents).encoding;
            let target = if text == before {
                change.after.clone()
            } else {
                reins_review::rebase(before, &change.after, &text).map_err(|conflict| {
                    rejected(format!("the user changed the same lines meanwhile: {}", conflict.description))
                })?
            };
            let (target, disk) = with_disk(path, loaded.as_ref(), target).await.map_err(rejected)?;
            let hunks = reins_review::hunks(&text, &target, DIFF_DEADLINE);
            let edits = to_proto::text_edits(&text, &hunks, encoding);
            if edits.is_empty() {
                return Ok(());
            }
            lock(&self.documents).expect(&uri, Some(target.clone()));
            let sent = self.send(path, to_proto::document_edit(&uri, Some(version), edits)).await;
            let outcome = match sent {
                Ok(()) => {
                    let shown = self.shown(&uri, version, &text, &target, &mut revisions).await.map_err(rejected);
                    if let (Ok(()), Some(disk)) = (&shown, disk) {
                        lock(&self.documents).loaded(&uri, Some(&disk));
                        let told = format!(
                            "reins: {} changed on disk while its buffer was open; the buffer now has those \
                             changes and the agent's edit: write it to keep both",
                            reins_tools::display_path(path, &self.cwd())
                        );
                        self.client.show_message(MessageType::INFO, told).await;
                    }
                    shown
                }
                Err(WorkspaceError::Rejected { reason, .. }) if self.moved_on(&uri, version, &mut revisions).await => {
                    // The editor had newer text than the edit was made for: again, from there.
                    refused = reason;
                    continue;
                }
                Err(err) => Err(err),
            };
            lock(&self.documents).expect(&uri, None);
            return outcome;
        }
        lock(&self.documents).expect(&uri_of(&self.documents, path), None);
        Err(rejected(format!(
            "the buffer kept changing while the edit was sent ({SEND_ATTEMPTS} tries); the editor's last answer: {refused}"
        )))
    }

    /// Waits until the editor's `didChange`s show `target`, the text the edit made from `text`
    /// at `version` should give. Changes that show a text holding the edit (the user typed in
    /// the same `didChange`) count too; an editor that changes nothing at all is trusted.
    async fn shown(
        &self,
        uri: &str,
        version: i32,
        text: &str,
        target: &str,
        revisions: &mut watch::Receiver<u64>,
    ) -> Result<(), String> {
        let seen = |documents: &Documents| {
            documents.get(uri).is_none_or(|document| document.expected.as_ref().is_some_and(|expected| expected.seen))
        };
        let deadline = tokio::time::Instant::now() + SHOW_TIMEOUT;
        loop {
            if seen(&lock(&self.documents)) {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, revisions.changed()).await.is_err() {
                break;
            }
        }
        let (now_version, now) = {
            let documents = lock(&self.documents);
            match documents.get(uri) {
                Some(document) => (document.version, document.text()),
                None => return Ok(()),
            }
        };
        if now_version == version {
            tracing::warn!("{uri}: the editor applied an edit but sent no change within {}s", SHOW_TIMEOUT.as_secs());
            return Ok(());
        }
        match reins_review::rebase(text, target, &now) {
            Ok(merged) if merged == now => Ok(()),
            _ => Err("the editor answered that it applied the edit, but its buffer does not show it".to_string()),
        }
    }

    /// Whether `uri` moves past `version` soon (a refused edit was made for older text).
    async fn moved_on(&self, uri: &str, version: i32, revisions: &mut watch::Receiver<u64>) -> bool {
        let moved = |documents: &Documents| documents.get(uri).is_some_and(|document| document.version != version);
        let deadline = tokio::time::Instant::now() + SHOW_TIMEOUT;
        loop {
            if moved(&lock(&self.documents)) {
                return true;
            }
            if tokio::time::timeout_at(deadline, revisions.changed()).await.is_err() {
                return false;
            }
        }
    }

    /// Applies a change to `path`, which has no open buffer: as a workspace edit the editor
    /// applies (it opens the file) when it takes `documentChanges`, else on disk.
    async fn apply_closed(&self, path: &Path, change: &FileChange) -> Result<(), WorkspaceError> {
        let stale = |actual| WorkspaceError::Stale { path: path.to_path_buf(), expected: change.version, actual };
        let encoding = lock(&self.documents).encoding;
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
        let real = disk.resolve_path(path)?;
        self.text_at(&disk, &real).await
    }

    async fn read_named(&self, path: &str) -> Result<(PathBuf, TextFile), WorkspaceError> {
        let disk = self.disk();
        let real = disk.resolve(path)?;
        let text = self.text_at(&disk, &real).await?;
        Ok((real, text))
    }

    async fn read_texts(&self, paths: &[&Path]) -> Vec<Result<TextFile, WorkspaceError>> {
        let disk = self.disk();
        let mut texts = Vec::with_capacity(paths.len());
        for real in disk.resolve_all(paths) {
            let open = real.as_ref().ok().and_then(|real| self.open_text(real));
            texts.push(match (real, open) {
                (_, Some(open)) => Ok(open),
                (Ok(real), None) => disk.read_resolved(&real).await,
                (Err(err), None) => Err(err),
            });
        }
        texts
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

/// `target`, the buffer's text with an edit, with what changed in the file on disk since the
/// buffer loaded (or wrote) it — a formatter run on save — merged three-way, and the disk's text
/// if it did change. Where both changed the same lines, the reason nothing is applied.
async fn with_disk(path: &Path, loaded: Option<&Rope>, target: String) -> Result<(String, Option<String>), String> {
    let Some(loaded) = loaded else { return Ok((target, None)) };
    let Ok(disk) = tokio::fs::read_to_string(path).await else { return Ok((target, None)) };
    if loaded.len_bytes() == disk.len() && *loaded == disk.as_str() {
        return Ok((target, None));
    }
    match reins_review::rebase(&loaded.to_string(), &disk, &target) {
        Ok(merged) => Ok((merged, Some(disk))),
        Err(conflict) => Err(format!(
            "the file changed on disk while its buffer was open, where the buffer or the edit changes it too \
             ({}); nothing was applied: reload or write the buffer first",
            conflict.description
        )),
    }
}

/// Creates the parent directories of `path`: `CreateFile` and `RenameFile` do not promise them.
async fn create_parent(path: &Path) -> Result<(), WorkspaceError> {
    let Some(parent) = path.parent() else { return Ok(()) };
    tokio::fs::create_dir_all(parent)
        .await
        .map_err(|err| WorkspaceError::Io { path: parent.to_path_buf(), reason: err.to_string() })
}

/// The URI of `path`'s open buffer, or an empty string.
fn uri_of(documents: &Mutex<Documents>, path: &Path) -> String {
    lock(documents).by_path(path).map(|document| document.uri.clone()).unwrap_or_default()
}
