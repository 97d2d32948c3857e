//! `ls`: the entries of one directory, sorted, directories marked with a trailing `/`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use reins_agent::{
    Proposal, ToolContext, ToolError, ToolKind, ToolLocation, ToolLook, ToolOutput, TypedTool, string_argument,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{Workspace, display_path, workspace_error};

const DEFAULT_LIMIT: usize = 500;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct LsInput {
    /// Default: the working directory.
    pub path: Option<String>,
    pub limit: Option<usize>,
}

pub struct LsTool {
    workspace: Arc<dyn Workspace>,
}

impl LsTool {
    pub fn new(workspace: Arc<dyn Workspace>) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl TypedTool for LsTool {
    type Input = LsInput;
    const NAME: &'static str = "ls";
    const READ_ONLY: bool = true;

    fn look(&self, arguments: &Value) -> ToolLook {
        let path = string_argument(arguments, "path");
        ToolLook {
            title: format!("List {}", path.unwrap_or(".")),
            kind: ToolKind::Search,
            locations: path.map(|path| vec![ToolLocation::new(path)]).unwrap_or_default(),
            summary: path.unwrap_or_default().to_string(),
        }
    }
    fn description(&self) -> String {
        format!(
            "List a directory, sorted, dotfiles included; directories end in `/`. At most \
             {DEFAULT_LIMIT} entries unless limit says otherwise."
        )
    }

    async fn execute(
        &self,
        input: LsInput,
        _proposal: Option<Proposal>,
        _cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let requested = input.path.as_deref().unwrap_or(".");
        let path = self.workspace.resolve(requested).map_err(workspace_error)?;
        let shown = display_path(&path, &self.workspace.cwd());
        let listed = path.clone();
        let workspace = self.workspace.clone();
        let entries = tokio::task::spawn_blocking(move || list_dir(&listed, workspace.as_ref()))
            .await
            .map_err(|err| ToolError::new(format!("listing {shown} failed: {err}")))?
            .map_err(|reason| ToolError::new(format!("cannot list {shown}: {reason}")))?;
        if entries.is_empty() {
            return Ok(ToolOutput::text(format!("[{shown} is empty.]")));
        }
        let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
        let mut output = entries.iter().take(limit).map(String::as_str).collect::<Vec<_>>().join("\n");
        if entries.len() > limit {
            output.push_str(&format!(
                "\n\n[Showing {limit} of {} entries. Raise limit, or use find or grep to narrow down.]",
                entries.len()
            ));
        }
        Ok(ToolOutput::text(output))
    }
}

/// Entry names sorted case-insensitively (ties broken by exact name), directories with a `/`.
/// A symlink that leads out of the workspace is named as such and not followed, so the listing
/// tells nothing about what lies outside.
fn list_dir(path: &Path, workspace: &dyn Workspace) -> Result<Vec<String>, String> {
    let metadata = std::fs::metadata(path).map_err(describe)?;
    if !metadata.is_dir() {
        return Err("it is a file, not a directory; use read to see its content".to_string());
    }
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(path).map_err(describe)? {
        let entry = entry.map_err(|err| err.to_string())?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // `metadata` follows symlinks, so a link to a directory is listed as one.
        let entry_path: PathBuf = entry.path();
        if entry.file_type().is_ok_and(|file_type| file_type.is_symlink()) && !workspace.is_inside(&entry_path) {
            entries.push(format!("{name} -> (outside the workspace)"));
            continue;
        }
        let is_dir = std::fs::metadata(&entry_path).is_ok_and(|metadata| metadata.is_dir());
        entries.push(if is_dir { format!("{name}/") } else { name });
    }
    entries.sort_by(|a, b| a.to_lowercase().cmp(&b.to_lowercase()).then_with(|| a.cmp(b)));
    Ok(entries)
}

fn describe(err: std::io::Error) -> String {
    if err.kind() == std::io::ErrorKind::NotFound { "it does not exist".to_string() } else { err.to_string() }
}
