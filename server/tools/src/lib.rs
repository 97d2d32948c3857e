//! The built-in tools — `read`, `write`, `edit` (or `apply_patch`), `bash`, `ls`, `grep`, `find`
//! — each a typed [`reins_agent::Tool`] that works through a [`Workspace`].

mod bash;
mod edit;
mod exec;
mod find;
mod fs;
mod grep;
mod ls;
mod patch;
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
pub use patch::{ApplyPatchInput, ApplyPatchTool, apply_patch_to};
pub use read::ReadTool;
pub use sandbox::sandbox_support;
pub use workspace::{TextFile, Workspace, WorkspaceError, apply_each};
pub use write::WriteTool;

/// How the model edits files: one dialect is offered, never both, so the model is not torn
/// between two ways of doing one thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EditFormat {
    /// `edit`: oldText/newText pairs.
    #[default]
    Edit,
    /// `apply_patch`: the Codex patch format OpenAI's coding models are trained on.
    ApplyPatch,
}

/// Every built-in tool, in the order they are presented to the model; commands run under `policy`.
pub fn builtin_tools(workspace: Arc<dyn Workspace>, policy: ExecPolicy) -> Vec<Arc<dyn Tool>> {
    builtin_tools_editing_with(workspace, policy, EditFormat::Edit)
}

/// [`builtin_tools`], with files edited in `edit_format`.
pub fn builtin_tools_editing_with(
    workspace: Arc<dyn Workspace>,
    policy: ExecPolicy,
    edit_format: EditFormat,
) -> Vec<Arc<dyn Tool>> {
    let editor: Arc<dyn Tool> = match edit_format {
        EditFormat::Edit => Arc::new(EditTool::new(workspace.clone())),
        EditFormat::ApplyPatch => Arc::new(ApplyPatchTool::new(workspace.clone())),
    };
    vec![
        Arc::new(ReadTool::new(workspace.clone())),
        Arc::new(WriteTool::new(workspace.clone())),
        editor,
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
