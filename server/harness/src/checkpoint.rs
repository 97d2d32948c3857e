//! Recording a session's file changes where they land (see `reins_checkpoints`): the session's
//! tools work through a [`RecordingWorkspace`], which writes a `reins.file_change` entry for every
//! change that lands, and each tool that changes things in other ways (a `bash` command, an MCP
//! tool) is a [`RecordedTool`], which writes a `reins.command` entry before it runs.
//!
//! Mutating calls run one at a time, so the call in progress is one slot per session.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::{FileChange, Prepared, Proposal, Tool, ToolContext, ToolError, ToolLook, ToolOutput};
use reins_ai::ToolSpec;
use reins_checkpoints::{COMMAND, CommandRecord, FILE_CHANGE, FileChangeRecord, Landed, SideStore};
use reins_session::{EntryKind, SessionFile};
use reins_tools::{TextFile, Workspace, WorkspaceError};
use serde_json::Value;

use crate::runtime::lock;

/// Writes a session's checkpoint entries.
pub(crate) struct FileRecorder {
    file: Arc<Mutex<SessionFile>>,
    /// Where recorded paths are relative to.
    cwd: PathBuf,
    /// The mutating tool call running now: its id and tool.
    call: Mutex<Option<(String, String)>>,
}

/// The session's view of the workspace: the workspace itself, with every change that lands
/// recorded.
pub(crate) struct RecordingWorkspace {
    inner: Arc<dyn Workspace>,
    recorder: Arc<FileRecorder>,
}

/// A mutating tool whose calls are recorded: file tools through the workspace, others as a
/// command that ran.
pub(crate) struct RecordedTool {
    inner: Arc<dyn Tool>,
    recorder: Arc<FileRecorder>,
}

impl FileRecorder {
    pub fn new(file: Arc<Mutex<SessionFile>>, cwd: PathBuf) -> Arc<Self> {
        Arc::new(FileRecorder { file, cwd, call: Mutex::new(None) })
    }

    /// `changes` landed: one entry for them, written at once (the file changed already).
    fn landed(&self, changes: &[FileChange]) {
        if changes.is_empty() {
            return;
        }
        let (call_id, tool) = lock(&self.call).clone().unwrap_or_default();
        let landed: Vec<Landed> = changes
            .iter()
            .map(|change| Landed {
                path: self.shown(&change.path),
                moved_to: change.moved_to.as_deref().map(|to| self.shown(to)),
                before: change.before.as_ref().map(|text| text.as_bytes().to_vec()),
                after: (!change.delete).then(|| change.after.as_bytes().to_vec()),
            })
            .collect();
        let mut file = lock(&self.file);
        let store = SideStore::of_session(file.path());
        let record = match FileChangeRecord::new(&call_id, &tool, &landed, &store) {
            Ok(record) => record,
            Err(err) => {
                tracing::error!("could not record the change to {}: {err}", landed[0].path);
                return;
            }
        };
        append(&mut file, FILE_CHANGE, record.to_value());
    }

    /// A command is about to run: what it does to files will not be known.
    fn command(&self, call_id: &str, tool: &str, command: Option<&str>) {
        let record = CommandRecord::new(call_id, tool, command);
        append(&mut lock(&self.file), COMMAND, record.to_value());
    }

    /// The path relative to the working directory when inside it, else as it is.
    fn shown(&self, path: &Path) -> String {
        reins_tools::display_path(path, &self.cwd)
    }
}

fn append(file: &mut SessionFile, custom_type: &str, data: Value) {
    let kind = EntryKind::Custom { custom_type: custom_type.to_string(), data: Some(data) };
    if let Err(err) = file.append(kind).and_then(|_| file.flush()) {
        tracing::error!("could not save the session {}: {err}", file.path().display());
    }
}

impl RecordingWorkspace {
    pub fn new(inner: Arc<dyn Workspace>, recorder: Arc<FileRecorder>) -> Arc<Self> {
        Arc::new(RecordingWorkspace { inner, recorder })
    }
}

#[async_trait]
impl Workspace for RecordingWorkspace {
    fn roots(&self) -> Vec<PathBuf> {
        self.inner.roots()
    }

    fn cwd(&self) -> PathBuf {
        self.inner.cwd()
    }

    fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        self.inner.resolve(path)
    }

    fn is_inside(&self, path: &Path) -> bool {
        self.inner.is_inside(path)
    }

    async fn read_text(&self, path: &Path) -> Result<TextFile, WorkspaceError> {
        self.inner.read_text(path).await
    }

    async fn read_named(&self, path: &str) -> Result<(PathBuf, TextFile), WorkspaceError> {
        self.inner.read_named(path).await
    }

    async fn read_texts(&self, paths: &[&Path]) -> Vec<Result<TextFile, WorkspaceError>> {
        self.inner.read_texts(paths).await
    }

    async fn apply(&self, change: &FileChange) -> Result<(), WorkspaceError> {
        self.inner.apply(change).await?;
        self.recorder.landed(std::slice::from_ref(change));
        Ok(())
    }

    async fn apply_all(&self, changes: &[FileChange]) -> Result<(), WorkspaceError> {
        // All or none land (the inner workspace undoes a partial patch), so one entry says it.
        self.inner.apply_all(changes).await?;
        self.recorder.landed(changes);
        Ok(())
    }

    fn open_buffers(&self) -> Vec<(PathBuf, String)> {
        self.inner.open_buffers()
    }

    fn terminal(&self) -> Option<Arc<dyn reins_tools::Terminal>> {
        self.inner.terminal()
    }
}

/// Each mutating tool of `tools` recorded; read-only ones as they are.
pub(crate) fn recorded(tools: Vec<Arc<dyn Tool>>, recorder: &Arc<FileRecorder>) -> Vec<Arc<dyn Tool>> {
    tools
        .into_iter()
        .map(|tool| match tool.read_only() {
            true => tool,
            false => Arc::new(RecordedTool { inner: tool, recorder: recorder.clone() }) as Arc<dyn Tool>,
        })
        .collect()
}

/// Clears the call in progress however the call ends (a timeout drops it midway).
struct CallDone<'a>(&'a FileRecorder);

impl Drop for CallDone<'_> {
    fn drop(&mut self) {
        *lock(&self.0.call) = None;
    }
}

#[async_trait]
impl Tool for RecordedTool {
    fn spec(&self) -> ToolSpec {
        self.inner.spec()
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn read_only(&self) -> bool {
        false
    }

    fn timeout(&self) -> Option<Duration> {
        self.inner.timeout()
    }

    fn look(&self, arguments: &Value) -> ToolLook {
        self.inner.look(arguments)
    }
    async fn prepare(&self, arguments: &Value) -> Result<Prepared, ToolError> {
        self.inner.prepare(arguments).await
    }

    async fn execute(
        &self,
        prepared: Prepared,
        proposal: Option<Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let name = self.inner.name().to_string();
        *lock(&self.recorder.call) = Some((cx.tool_call_id.to_string(), name.clone()));
        let _done = CallDone(&self.recorder);
        // File changes are recorded as they land; anything else may change files unseen.
        match &proposal {
            Some(Proposal::FileChange(_) | Proposal::FileChanges { .. }) => {}
            Some(Proposal::Command(command)) => self.recorder.command(cx.tool_call_id, &name, Some(&command.command)),
            Some(Proposal::ServerCall(_)) | None => self.recorder.command(cx.tool_call_id, &name, None),
        }
        self.inner.execute(prepared, proposal, cx).await
    }
}
