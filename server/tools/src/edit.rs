//! The `edit` tool: replaces quoted text in an existing file.
//!
//! `prepare` reads the file through the [`Workspace`] (an open buffer wins over the disk) and
//! computes the whole new text with [`apply_edits`], so the gate can show the change before it
//! happens; `execute` applies what the gate allowed and tells the model what landed, as a diff.

mod apply;
pub(crate) mod hint;
pub(crate) mod matching;
mod needle;
mod reindent;
mod restyle;
pub(crate) mod splice;
mod stale;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::{
    FileChange, Proposal, ToolContext, ToolError, ToolKind, ToolLocation, ToolLook, ToolOutput, TypedTool,
    string_argument,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use similar::{Algorithm, TextDiff};

use crate::workspace::{Workspace, WorkspaceError};
use crate::{display_path, workspace_error};

pub(crate) use apply::splice_all;
pub use apply::{Applied, apply_edits};

/// Arguments of `edit`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditInput {
    // The file must exist; `write` creates files.
    pub path: String,
    // Every oldText is looked up in the file as it is now (not after the edits before it), must
    // match exactly one place, and must not overlap another edit's text. If any edit fails, none
    // is applied. The tool's description says so to the model.
    #[schemars(length(min = 1))]
    pub edits: Vec<Edit>,
    /// Replace every match of each oldText (renames).
    #[serde(default)]
    pub replace_all: bool,
}

/// One replacement.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
// Inline rather than `$ref`: some model servers handle references in tool schemas poorly.
#[schemars(inline)]
pub struct Edit {
    // The exact text to replace, copied from the file as it is now (same whitespace, no line
    // numbers), matching one place unless replaceAll; never empty.
    pub old_text: String,
    // Empty deletes oldText.
    pub new_text: String,
}

/// The `edit` tool over a workspace.
pub struct EditTool {
    workspace: Arc<dyn Workspace>,
}

impl EditTool {
    pub fn new(workspace: Arc<dyn Workspace>) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl TypedTool for EditTool {
    type Input = EditInput;
    const NAME: &'static str = "edit";
    const READ_ONLY: bool = false;

    fn look(&self, arguments: &Value) -> ToolLook {
        let path = string_argument(arguments, "path");
        ToolLook {
            title: format!("Edit {}", path.unwrap_or("a file")),
            kind: ToolKind::Edit,
            locations: path.map(|path| vec![ToolLocation::new(path)]).unwrap_or_default(),
            summary: path.unwrap_or_default().to_string(),
        }
    }
    fn description(&self) -> String {
        "Replace exact text in an existing file. Each oldText is copied from the file as it is now, \
         whitespace included, with enough context to match exactly one place; edits are matched \
         against the original, must not overlap, and apply together or not at all."
            .to_string()
    }

    async fn prepare(&self, input: &EditInput) -> Result<Option<Proposal>, ToolError> {
        let path = self.workspace.resolve_writable(&input.path).map_err(workspace_error)?;
        let shown = display_path(&path, &self.workspace.cwd());
        let file = self.workspace.read_text(&path).await.map_err(|err| match err {
            WorkspaceError::NotFound(_) => ToolError::new(format!(
                "{shown} does not exist; edit only changes existing files, so use write to create it"
            )),
            other => workspace_error(other),
        })?;
        let applied = apply_edits(&file.text, &input.edits, input.replace_all, &shown).map_err(ToolError::new)?;
        Ok(Some(Proposal::FileChange(FileChange {
            path,
            before: Some(file.text),
            after: applied.text,
            version: file.version,
            notes: applied.notes,
            ..FileChange::default()
        })))
    }

    async fn execute(
        &self,
        input: EditInput,
        proposal: Option<Proposal>,
        _cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let Some(Proposal::FileChange(change)) = proposal else {
            return Err(ToolError::new("internal error: edit reached execute without a file change"));
        };
        let shown = display_path(&change.path, &self.workspace.cwd());
        self.workspace.apply(&change).await.map_err(|err| match err {
            WorkspaceError::Stale { .. } => {
                ToolError::new(format!("{err}; nothing was changed. Read {shown} again and redo the edit"))
            }
            other => workspace_error(other),
        })?;
        Ok(report(&input, &change, &shown))
    }
}

/// What the model reads after a successful edit: a count, the notes, and a compact diff of what
/// landed; `details` carry the full unified diff for UIs.
fn report(input: &EditInput, change: &FileChange, shown: &str) -> ToolOutput {
    // Context lines in the model's diff, and how long it may get before it is cut.
    const CONTEXT: usize = 2;
    const MAX_DIFF_LINES: usize = 80;
    let before = change.before.as_deref().unwrap_or("");
    // The gate may have applied only part of the proposal; only recount when it did not.
    let replacements = apply_edits(before, &input.edits, input.replace_all, shown)
        .ok()
        .filter(|applied| applied.text == change.after)
        .map(|applied| applied.replacements);
    let mut text = match replacements {
        Some(1) => format!("Edited {shown}: 1 replacement"),
        Some(count) => format!("Edited {shown}: {count} replacements"),
        None => format!("Edited {shown} as changed by the reviewer"),
    };
    for note in &change.notes {
        let _ = write!(text, "\nNote: {note}");
    }
    let compact = unified_diff(before, &change.after, CONTEXT, None);
    let lines: Vec<&str> = compact.lines().collect();
    text.push_str("\n\n");
    text.push_str(&lines[..lines.len().min(MAX_DIFF_LINES)].join("\n"));
    if lines.len() > MAX_DIFF_LINES {
        let _ = write!(text, "\n… {} more diff lines not shown", lines.len() - MAX_DIFF_LINES);
    }
    let details = json!({
        "path": shown,
        "replacements": replacements,
        "notes": change.notes,
        "diff": unified_diff(before, &change.after, 3, Some(shown)),
    });
    ToolOutput::text(text).with_details(details)
}

/// A unified diff of two texts, compared with CRLF folded to LF so line endings do not show up
/// as changes. With `header`, it starts with `---`/`+++` lines naming that path.
pub(crate) fn unified_diff(before: &str, after: &str, context: usize, header: Option<&str>) -> String {
    // Diffing is for display; a pathological pair must not hold the tool up.
    const DIFF_TIMEOUT: Duration = Duration::from_millis(500);
    let before = before.replace("\r\n", "\n");
    let after = after.replace("\r\n", "\n");
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before.as_str(), after.as_str());
    let mut unified = diff.unified_diff();
    unified.context_radius(context);
    if let Some(path) = header {
        unified.header(path, path);
    }
    unified.to_string()
}
