//! The built-in tools — `read`, `write`, `edit` (or `apply_patch`), `bash`, `ls`, `grep`, `find`
//! — each a typed [`reins_agent::Tool`] that works through a [`Workspace`]; `todo`, the list of
//! steps the user watches; and `diagnostics`,
//! over the editor's [`DiagnosticSource`] where there is one; `lsp` and `rename` over a
//! [`LanguageSource`] (language servers) where there is one.

mod bash;
mod diagnostics;
mod edit;
mod exec;
mod find;
mod fs;
mod grep;
mod hook_exec;
mod language;
mod ls;
mod namespace;
mod navigate;
mod new_repositories;
mod output_files;
mod patch;
mod read;
mod rename;
mod repositories;
mod sandbox;
mod sandbox_exec;
mod terminal;
mod todo;
mod truncate;
mod workspace;
mod write;

use std::path::Path;
use std::sync::Arc;

use reins_agent::{Tool, ToolError};

pub use bash::{BashTool, remove_abandoned_output};
pub use diagnostics::{Diagnostic, DiagnosticSource, DiagnosticsTool, FileDiagnostics, Severity, parse_problems};
pub use edit::{Applied, Edit, EditTool, apply_edits};
pub use exec::{
    DEFAULT_MAX_OUTPUT_FILE_BYTES, DEFAULT_MAX_TIMEOUT_SECS, DEFAULT_TIMEOUT_SECS, ExecPolicy, Sandbox, SandboxMode,
    looks_secret, tool_env,
};
pub use find::FindTool;
pub use fs::FsWorkspace;
pub use grep::GrepTool;
pub use hook_exec::{HookRun, run_hook};
pub use language::{Calls, LanguageSource, Lookup, Place, Point, RenameStep, Symbol, TextReplace};
pub use ls::LsTool;
pub use namespace::{PROTECTED_NAMES, enclose, namespace_support, protected_paths, run_enclosed};
pub use navigate::{LspInput, LspTool, Operation};
pub use output_files::MAX_TOTAL_OUTPUT_BYTES;
pub use patch::{ApplyPatchInput, ApplyPatchTool, Patched, apply_patch_to, patch_paths};
pub use read::ReadTool;
pub use rename::{RenameInput, RenameTool};
pub use sandbox::{protections, sandbox_support};
pub use sandbox_exec::{POLICY_VAR, SandboxPolicy, sandbox_exec_invocation};
pub use terminal::{Terminal, TerminalRun};
pub use todo::{TODO_TOOL, TodoInput, TodoTool};
pub use workspace::{TextFile, Workspace, WorkspaceError, apply_each, in_git_dir};
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

impl EditFormat {
    /// The dialect a model family is trained on, by its id (`gpt-5-mini`, `openai/gpt-4.1`): the
    /// Codex patch format for OpenAI's GPT-4.1, GPT-5, o3/o4 and codex models, `edit` for the rest.
    pub fn trained_on(model_id: &str) -> EditFormat {
        let id = model_id.rsplit('/').next().unwrap_or(model_id).to_ascii_lowercase();
        let families = ["gpt-4.1", "gpt-5", "o3", "o4", "codex"];
        if families.iter().any(|family| id.starts_with(family)) || id.contains("codex") {
            EditFormat::ApplyPatch
        } else {
            EditFormat::Edit
        }
    }

    /// The tool's name: `edit` or `apply_patch`.
    pub fn tool_name(self) -> &'static str {
        match self {
            EditFormat::Edit => "edit",
            EditFormat::ApplyPatch => "apply_patch",
        }
    }
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
    vec![
        Arc::new(ReadTool::new(workspace.clone())),
        Arc::new(WriteTool::new(workspace.clone())),
        edit_tool(workspace.clone(), edit_format),
        Arc::new(BashTool::with_policy(workspace.clone(), policy)),
        Arc::new(LsTool::new(workspace.clone())),
        Arc::new(GrepTool::new(workspace.clone())),
        Arc::new(FindTool::new(workspace)),
        Arc::new(TodoTool),
    ]
}

/// The edit tool of `edit_format`: `edit` or `apply_patch`.
pub fn edit_tool(workspace: Arc<dyn Workspace>, edit_format: EditFormat) -> Arc<dyn Tool> {
    match edit_format {
        EditFormat::Edit => Arc::new(EditTool::new(workspace)),
        EditFormat::ApplyPatch => Arc::new(ApplyPatchTool::new(workspace)),
    }
}

/// A path as people and the model read it: relative to `root` (the working directory) when
/// inside it, `.` for the root itself, so it can be passed straight back to a tool. The one rule
/// for showing paths, in tools, reviews and the terminal.
pub fn display_path(path: &Path, root: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_string(),
        Ok(relative) => relative.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// Turns a workspace failure into a tool error the model reads.
pub(crate) fn workspace_error(err: WorkspaceError) -> ToolError {
    ToolError::new(err.to_string())
}
