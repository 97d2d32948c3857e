//! `write`: creates a file or replaces its whole content. Prepare proposes the change (the gate
//! shows it as a diff against the current text); execute applies what the gate allowed.

use std::sync::Arc;

use async_trait::async_trait;
use reins_agent::{
    FileChange, Proposal, ToolContext, ToolError, ToolKind, ToolLocation, ToolLook, ToolOutput, TypedTool,
    string_argument,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{Workspace, WorkspaceError, display_path, workspace_error};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteInput {
    pub path: String,
    pub content: String,
}

pub struct WriteTool {
    workspace: Arc<dyn Workspace>,
}

impl WriteTool {
    pub fn new(workspace: Arc<dyn Workspace>) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl TypedTool for WriteTool {
    type Input = WriteInput;
    const NAME: &'static str = "write";
    const READ_ONLY: bool = false;

    fn look(&self, arguments: &Value) -> ToolLook {
        let path = string_argument(arguments, "path");
        ToolLook {
            title: format!("Write {}", path.unwrap_or("a file")),
            kind: ToolKind::Edit,
            locations: path.map(|path| vec![ToolLocation::new(path)]).unwrap_or_default(),
            summary: path.unwrap_or_default().to_string(),
        }
    }
    fn description(&self) -> String {
        "Create a file, or replace all of its content; parent directories are created.".to_string()
    }

    async fn prepare(&self, input: &WriteInput) -> Result<Option<Proposal>, ToolError> {
        let path = self.workspace.resolve_writable(&input.path).map_err(workspace_error)?;
        let (before, version) = match self.workspace.read_text(&path).await {
            Ok(file) => (Some(file.text), file.version),
            Err(WorkspaceError::NotFound(_)) => (None, None),
            Err(err) => {
                return Err(ToolError::new(format!("cannot write over {}: {err}", input.path)));
            }
        };
        Ok(Some(Proposal::FileChange(FileChange {
            path,
            before,
            after: input.content.clone(),
            version,
            notes: Vec::new(),
            ..FileChange::default()
        })))
    }

    async fn execute(
        &self,
        _input: WriteInput,
        proposal: Option<Proposal>,
        _cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        // The gate may have changed the proposal; what it allowed is what gets written.
        let Some(Proposal::FileChange(change)) = proposal else {
            return Err(ToolError::new("internal error: write was executed without a file change to apply"));
        };
        let shown = display_path(&change.path, &self.workspace.cwd());
        self.workspace.apply(&change).await.map_err(|err| match err {
            WorkspaceError::Stale { .. } => ToolError::new(format!(
                "{shown} changed since this write was prepared (it was edited or created meanwhile), so \
                 nothing was written; read it again and retry"
            )),
            other => workspace_error(other),
        })?;
        let size = match change.after.len() {
            1 => "1 byte".to_string(),
            n => format!("{n} bytes"),
        };
        let message = match change.before {
            None => format!("Created {shown} ({size})"),
            Some(_) => format!("Wrote {size} to {shown}"),
        };
        Ok(ToolOutput::text(message))
    }
}
