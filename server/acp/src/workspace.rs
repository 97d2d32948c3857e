//! The workspace of one ACP session: paths confined to the session's `cwd`, as on disk; when the
//! client advertises `fs.readTextFile`, reads go through `fs/read_text_file`, so the agent sees
//! unsaved buffers, and with `fs.writeTextFile` changes are written through `fs/write_text_file`,
//! so the editor tracks them (its buffers, its undo, its review of what the agent did). Deleting
//! and moving files stay on disk: ACP has no request for them.
//!
//! With the client's `terminal`, it offers the client's terminal to `bash` ([`AcpTerminal`]).
//!
//! It also keeps the changes that landed since the event sink last took them: the sink takes them
//! when a tool call ends, so the call's update can show each as a whole-file diff.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, SessionId, WriteTextFileRequest};
use async_trait::async_trait;
use reins_agent::FileChange;
use reins_tools::{FsWorkspace, Terminal, TextFile, Workspace, WorkspaceError};

use crate::events::Events;
use crate::terminal::AcpTerminal;
use reins_agent::lock;

/// How long the client has to answer a read or a write.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct AcpWorkspace {
    disk: FsWorkspace,
    /// The connection, once serving (the workspace is built inside a request handler).
    cx: ConnectionTo<Client>,
    /// The session it belongs to, known once the harness made it.
    session_id: Arc<OnceLock<String>>,
    read_through_client: AtomicBool,
    write_through_client: AtomicBool,
    /// The client's terminal, when it has one.
    terminal: Option<Arc<AcpTerminal>>,
    landed: Mutex<Vec<FileChange>>,
}

/// What the client said it can do for a session's tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientTools {
    pub read: bool,
    pub write: bool,
    pub terminal: bool,
}

impl AcpWorkspace {
    pub fn new(disk: FsWorkspace, cx: ConnectionTo<Client>, events: Events, can: ClientTools) -> Self {
        let session_id = Arc::new(OnceLock::new());
        let terminal = can.terminal.then(|| {
            Arc::new(AcpTerminal { cx: cx.clone(), events, session_id: session_id.clone(), shown: Mutex::default() })
        });
        Self {
            disk,
            cx,
            session_id,
            read_through_client: AtomicBool::new(can.read),
            write_through_client: AtomicBool::new(can.write),
            terminal,
            landed: Mutex::default(),
        }
    }

    /// The client's terminal a call ran in, if it did (taken once).
    pub fn take_terminal(&self, tool_call_id: &str) -> Option<String> {
        self.terminal.as_ref().and_then(|terminal| terminal.take(tool_call_id))
    }

    pub fn set_session(&self, session_id: &str) {
        let _ = self.session_id.set(session_id.to_string());
    }

    /// The session this workspace serves, once it is known.
    pub fn session_id(&self) -> Option<String> {
        self.session_id.get().cloned()
    }

    /// The changes that landed since the last call, in order.
    pub fn take_landed(&self) -> Vec<FileChange> {
        std::mem::take(&mut *lock(&self.landed))
    }

    fn session(&self) -> Option<SessionId> {
        self.session_id.get().map(|id| SessionId::new(id.as_str()))
    }

    /// The file's text as the client has it (its buffer, else its disk), or `None` when the client
    /// cannot say (it failed, or did not answer in time): the disk answers then.
    async fn client_read(&self, path: &Path) -> Option<String> {
        let session = self.session()?;
        let request = ReadTextFileRequest::new(session, path.to_path_buf());
        match tokio::time::timeout(CLIENT_TIMEOUT, self.cx.send_request(request).block_task()).await {
            Ok(Ok(response)) => Some(response.content),
            Ok(Err(err)) => {
                tracing::debug!("fs/read_text_file {} failed: {}", path.display(), err.message);
                None
            }
            Err(_) => {
                tracing::warn!("the client did not answer fs/read_text_file for {}", path.display());
                None
            }
        }
    }

    async fn client_write(&self, path: &Path, content: &str) -> Result<(), WorkspaceError> {
        let rejected = |reason: String| WorkspaceError::Rejected { path: path.to_path_buf(), reason };
        let Some(session) = self.session() else { return Err(rejected("the session is not ready".into())) };
        let request = WriteTextFileRequest::new(session, path.to_path_buf(), content.to_string());
        match tokio::time::timeout(CLIENT_TIMEOUT, self.cx.send_request(request).block_task()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(err)) => Err(rejected(format!("the editor answered with an error: {}", err.message))),
            Err(_) => Err(rejected(format!("the editor did not answer within {}s", CLIENT_TIMEOUT.as_secs()))),
        }
    }

    /// The text now, through the client where it reads; `None` when the file does not exist.
    async fn current(&self, path: &Path) -> Result<Option<String>, WorkspaceError> {
        match self.read_text(path).await {
            Ok(file) => Ok(Some(file.text)),
            Err(WorkspaceError::NotFound(_)) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

#[async_trait]
impl Workspace for AcpWorkspace {
    fn roots(&self) -> Vec<PathBuf> {
        self.disk.roots()
    }

    fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        self.disk.resolve(path)
    }

    fn is_inside(&self, path: &Path) -> bool {
        self.disk.is_inside(path)
    }

    async fn read_text(&self, path: &Path) -> Result<TextFile, WorkspaceError> {
        let path = self.disk.resolve_path(path)?;
        if self.read_through_client.load(Ordering::Relaxed) {
            // A file the client cannot read may still be on disk, or not exist: the disk says.
            if let Some(text) = self.client_read(&path).await {
                return Ok(TextFile { text, version: None });
            }
        }
        self.disk.read_resolved(&path).await
    }

    async fn apply(&self, change: &FileChange) -> Result<(), WorkspaceError> {
        let path = self.disk.resolve_path(&change.path)?;
        let whole_file = change.delete || change.moved_to.is_some();
        if whole_file || !self.write_through_client.load(Ordering::Relaxed) {
            let result = self.disk.apply(change).await;
            if result.is_ok() {
                lock(&self.landed).push(change.clone());
            }
            return result;
        }
        // The user may have typed since the change was made: it is re-based onto the buffer as
        // it is now (three-way, as review does), or refused where both changed the same lines.
        // ACP names no versions, so a keystroke between this read and the write is not seen.
        let current = self.current(&path).await?;
        let landed = match (&change.before, &current) {
            (before, current) if before == current => change.clone(),
            (Some(before), Some(current)) => {
                let after = reins_review::rebase(before, &change.after, current).map_err(|conflict| {
                    WorkspaceError::Rejected {
                        path: path.clone(),
                        reason: format!("the user changed the same lines meanwhile: {}", conflict.description),
                    }
                })?;
                FileChange { before: Some(current.clone()), after, ..change.clone() }
            }
            _ => return Err(WorkspaceError::Stale { path, expected: change.version, actual: None }),
        };
        let result = self.client_write(&path, &landed.after).await;
        if result.is_ok() {
            lock(&self.landed).push(landed);
        }
        result
    }

    fn terminal(&self) -> Option<Arc<dyn Terminal>> {
        self.terminal.clone().map(|terminal| terminal as Arc<dyn Terminal>)
    }
}
