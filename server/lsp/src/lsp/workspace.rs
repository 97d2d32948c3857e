//! The editor-backed [`Workspace`]: the agent's tools read open buffers (with their versions)
//! before the disk, paths stay confined to the workspace folders the client named, and changes
//! to open buffers go to the editor as `workspace/applyEdit`, so undo works there.
//!
//! The edit-review issue replaces the whole-document edit here with reviewed hunks.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::FileChange;
use reins_tools::{FsWorkspace, TextFile, Workspace, WorkspaceError};
use tower_lsp_server::Client;

use crate::lsp::documents::Documents;
use crate::lsp::{lock, to_proto};

/// How long the editor has to answer `workspace/applyEdit` before the change counts as failed.
const APPLY_EDIT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct EditorWorkspace {
    documents: Arc<Mutex<Documents>>,
    disk: RwLock<FsWorkspace>,
    client: Client,
}

impl EditorWorkspace {
    /// A workspace over `fallback` until the client names its folders.
    pub fn new(documents: Arc<Mutex<Documents>>, client: Client, fallback: FsWorkspace) -> Self {
        Self { documents, disk: RwLock::new(fallback), client }
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

    /// Sends the whole new text of an open buffer as one versioned edit and waits (in the tool's
    /// task, never in a handler) for the editor's answer.
    async fn apply_to_buffer(
        &self,
        change: &FileChange,
        uri: String,
        version: i32,
        end: (u32, u32),
    ) -> Result<(), WorkspaceError> {
        let edit = to_proto::whole_document_edit(&uri, version, end, &change.after);
        let rejected = |reason: String| WorkspaceError::Rejected { path: change.path.clone(), reason };
        match tokio::time::timeout(APPLY_EDIT_TIMEOUT, self.client.apply_edit(edit)).await {
            Err(_) => Err(rejected(format!("the editor did not answer within {}s", APPLY_EDIT_TIMEOUT.as_secs()))),
            Ok(Err(err)) => Err(rejected(format!("the editor answered with an error: {}", err.message))),
            Ok(Ok(response)) if response.applied => Ok(()),
            Ok(Ok(response)) => {
                Err(rejected(response.failure_reason.unwrap_or_else(|| "the editor refused the edit".to_string())))
            }
        }
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

    async fn read_text(&self, path: &Path) -> Result<TextFile, WorkspaceError> {
        let disk = self.disk();
        let path = disk.resolve_path(path)?;
        if let Some(document) = lock(&self.documents).by_path(&path) {
            return Ok(TextFile { text: document.text(), version: Some(document.version) });
        }
        disk.read_text(&path).await
    }

    async fn apply(&self, change: &FileChange) -> Result<(), WorkspaceError> {
        let disk = self.disk();
        let path = disk.resolve_path(&change.path)?;
        let open = {
            let documents = lock(&self.documents);
            documents.by_path(&path).map(|document| {
                let end = document.end_position(documents.encoding);
                (document.uri.clone(), document.version, document.text(), (end.line, end.character))
            })
        };
        let Some((uri, version, text, end)) = open else {
            return disk.apply(change).await;
        };
        if change.before.as_deref() != Some(text.as_str()) {
            return Err(WorkspaceError::Stale { path, expected: change.version, actual: Some(version) });
        }
        self.apply_to_buffer(change, uri, version, end).await
    }

    fn open_buffers(&self) -> Vec<(PathBuf, String)> {
        let documents = lock(&self.documents);
        documents.all().filter_map(|document| Some((document.path.clone()?, document.text()))).collect()
    }
}
