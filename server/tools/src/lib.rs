//! The built-in tools — `read`, `write`, `edit`, `bash`, `ls`, `grep`, `find` — each a typed
//! [`reins_agent::Tool`] that works through a [`Workspace`].

mod bash;
mod edit;
mod exec;
mod find;
mod fs;
mod grep;
mod ls;
mod read;
mod sandbox;
mod truncate;
mod workspace;
mod write;

use std::path::Path;
use std::sync::Arc;

use reins_agent::{Tool, ToolError};

pub use bash::BashTool;
pub use edit::{Applied, Edit, EditTool, apply_edits};
pub use exec::{
    DEFAULT_MAX_OUTPUT_FILE_BYTES, DEFAULT_MAX_TIMEOUT_SECS, DEFAULT_TIMEOUT_SECS, ExecPolicy, Sandbox, SandboxMode,
    looks_secret, tool_env,
};
pub use find::FindTool;
pub use fs::FsWorkspace;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use read::ReadTool;
pub use sandbox::sandbox_support;
pub use workspace::{TextFile, Workspace, WorkspaceError};
pub use write::WriteTool;

/// Every built-in tool, in the order they are presented to the model; commands run under `policy`.
pub fn builtin_tools(workspace: Arc<dyn Workspace>, policy: ExecPolicy) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadTool::new(workspace.clone())),
        Arc::new(WriteTool::new(workspace.clone())),
        Arc::new(EditTool::new(workspace.clone())),
        Arc::new(BashTool::with_policy(workspace.clone(), policy)),
        Arc::new(LsTool::new(workspace.clone())),
        Arc::new(GrepTool::new(workspace.clone())),
        Arc::new(FindTool::new(workspace)),
    ]
}

/// A path as the model should see it: relative to the working directory when inside it, so it can
/// be passed straight back to another tool.
pub(crate) fn display_path(workspace: &dyn Workspace, path: &Path) -> String {
    match path.strip_prefix(workspace.cwd()) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_string(),
        Ok(relative) => relative.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// Turns a workspace failure into a tool error the model reads.
pub(crate) fn workspace_error(err: WorkspaceError) -> ToolError {
    ToolError::new(err.to_string())
}
