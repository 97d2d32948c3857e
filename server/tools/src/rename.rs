//! `rename`: renames a symbol everywhere the language server knows it is used — exactly the edit
//! the server would have the editor apply, file moves included — as one proposal of file changes,
//! reviewed and recorded like any edit. Prepare asks the server and works out every file's new
//! text; execute applies what the gate allowed, all files or none.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::{
    FileChange, Proposal, ToolContext, ToolError, ToolKind, ToolLocation, ToolLook, ToolOutput, TypedTool,
    string_argument,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::language::{LanguageSource, Point, RenameStep, TextReplace};
use crate::navigate::locate;
use crate::{Workspace, WorkspaceError, display_path, workspace_error};

/// Addressed as `lsp` addresses a symbol; no doc comments, as there.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenameInput {
    pub path: String,
    pub line: u32,
    pub symbol: String,
    pub new_name: String,
}

pub struct RenameTool {
    workspace: Arc<dyn Workspace>,
    source: Arc<dyn LanguageSource>,
}

impl RenameTool {
    pub fn new(workspace: Arc<dyn Workspace>, source: Arc<dyn LanguageSource>) -> Self {
        Self { workspace, source }
    }
}

#[async_trait]
impl TypedTool for RenameTool {
    type Input = RenameInput;
    const NAME: &'static str = "rename";
    const READ_ONLY: bool = false;

    fn description(&self) -> String {
        "Rename a symbol (as lsp names it) and all its references.".to_string()
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(60))
    }

    fn look(&self, arguments: &Value) -> ToolLook {
        let (symbol, new_name) = (string_argument(arguments, "symbol"), string_argument(arguments, "new_name"));
        let path = string_argument(arguments, "path");
        let line = arguments.get("line").and_then(Value::as_u64).and_then(|line| u32::try_from(line).ok());
        let renamed = format!("{} → {}", symbol.unwrap_or("?"), new_name.unwrap_or("?"));
        ToolLook {
            title: format!("Rename `{}` to `{}`", symbol.unwrap_or(""), new_name.unwrap_or("")),
            kind: ToolKind::Edit,
            locations: path.map(|path| vec![ToolLocation { path: path.to_string(), line }]).unwrap_or_default(),
            summary: format!("{renamed} {}", path.unwrap_or("")).trim_end().to_string(),
        }
    }

    async fn prepare(&self, input: &RenameInput) -> Result<Option<Proposal>, ToolError> {
        let path = self.workspace.resolve(&input.path).map_err(workspace_error)?;
        if !self.source.covers(&path) {
            return Err(ToolError::new(format!(
                "no language server is configured for {}; rename with edit instead",
                input.path
            )));
        }
        let new_name = input.new_name.trim();
        if new_name.is_empty() || new_name == input.symbol.trim() {
            return Err(ToolError::new("`newName` must be a name other than the symbol's"));
        }
        let at = locate(self.workspace.as_ref(), &path, Some(input.line), Some(&input.symbol)).await?;
        let steps = self.source.rename(&path, at, new_name).await.map_err(ToolError::new)?;
        let files = self.changes(&steps).await?;
        if files.is_empty() {
            return Err(ToolError::new(format!(
                "the language server has nothing to change to rename `{}`",
                input.symbol
            )));
        }
        Ok(Some(match <[FileChange; 1]>::try_from(files) {
            Ok([only]) => Proposal::FileChange(only),
            Err(files) => Proposal::FileChanges { files },
        }))
    }

    async fn execute(
        &self,
        input: RenameInput,
        proposal: Option<Proposal>,
        _cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let Some(proposal) = proposal else {
            return Err(ToolError::new("internal error: rename was executed without file changes to apply"));
        };
        let files = proposal.file_changes();
        self.workspace.apply_all(files).await.map_err(|err| match err {
            WorkspaceError::Stale { path, .. } => ToolError::new(format!(
                "{} changed since this rename was prepared, so nothing was changed; retry the rename",
                display_path(&path, &self.workspace.cwd())
            )),
            other => workspace_error(other),
        })?;
        let cwd = self.workspace.cwd();
        let names: Vec<String> = files
            .iter()
            .map(|change| match &change.moved_to {
                Some(to) => format!("{} → {}", display_path(&change.path, &cwd), display_path(to, &cwd)),
                None => display_path(&change.path, &cwd),
            })
            .collect();
        let count = if files.len() == 1 { "1 file".to_string() } else { format!("{} files", files.len()) };
        Ok(ToolOutput::text(format!(
            "Renamed `{}` to `{}` in {count}: {}",
            input.symbol.trim(),
            input.new_name.trim(),
            names.join(", ")
        )))
    }
}

impl RenameTool {
    /// The file changes of `steps`, one per file, in the order the files first appear; every
    /// path must be one the tools may write.
    async fn changes(&self, steps: &[RenameStep]) -> Result<Vec<FileChange>, ToolError> {
        let mut files: Vec<FileChange> = Vec::new();
        for step in steps {
            match step {
                RenameStep::Edit { path, edits } => {
                    let index = self.change_of(&mut files, path).await?;
                    let change = &mut files[index];
                    change.after = apply_replaces(&change.after, edits).map_err(|reason| {
                        ToolError::new(format!(
                            "the language server's edit of {} does not fit the file: {reason}",
                            display_path(path, &self.workspace.cwd())
                        ))
                    })?;
                }
                RenameStep::Move { from, to } => {
                    let to = self.writable(to)?;
                    let index = self.change_of(&mut files, from).await?;
                    files[index].moved_to = Some(to);
                }
                RenameStep::Create { path } => {
                    let path = self.writable(path)?;
                    if !files.iter().any(|change| change.final_path() == &path) {
                        files.push(FileChange { path, before: None, after: String::new(), ..FileChange::default() });
                    }
                }
                RenameStep::Delete { path } => {
                    let index = self.change_of(&mut files, path).await?;
                    files[index].delete = true;
                    files[index].after.clear();
                }
            }
        }
        files.retain(|change| {
            change.before.as_deref() != Some(&change.after) || change.delete || change.moved_to.is_some()
        });
        Ok(files)
    }

    /// The index of the change of the file now at `path` (after moves so far), added with the
    /// file's current text when there is none yet.
    async fn change_of(&self, files: &mut Vec<FileChange>, path: &Path) -> Result<usize, ToolError> {
        let path = self.writable(path)?;
        if let Some(index) = files.iter().position(|change| change.final_path() == &path) {
            return Ok(index);
        }
        let file = self.workspace.read_text(&path).await.map_err(workspace_error)?;
        files.push(FileChange {
            path,
            after: file.text.clone(),
            before: Some(file.text),
            version: file.version,
            ..FileChange::default()
        });
        Ok(files.len() - 1)
    }

    /// `path` if the tools may write it: inside the roots, not in `.git`.
    fn writable(&self, path: &Path) -> Result<PathBuf, ToolError> {
        let text = path.to_str().ok_or_else(|| ToolError::new(format!("{} is not a UTF-8 path", path.display())))?;
        self.workspace.resolve_writable(text).map_err(|err| {
            ToolError::new(format!("the rename would change {}, which tools may not: {err}", path.display()))
        })
    }
}

/// `text` with `edits` (points against `text`) applied; they must not overlap.
pub(crate) fn apply_replaces(text: &str, edits: &[TextReplace]) -> Result<String, String> {
    let mut spans = Vec::with_capacity(edits.len());
    for edit in edits {
        let start = offset_of(text, edit.start).ok_or_else(|| format!("no line {}", edit.start.line + 1))?;
        let end = offset_of(text, edit.end).ok_or_else(|| format!("no line {}", edit.end.line + 1))?;
        if end < start {
            return Err(format!("an edit ends before it starts on line {}", edit.start.line + 1));
        }
        spans.push((start, end, edit.text.as_str()));
    }
    spans.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new) in spans {
        if start < at {
            return Err(format!("two edits overlap at byte {start}"));
        }
        out.push_str(&text[at..start]);
        out.push_str(new);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// The byte offset of `point` in `text`; a column past the line's end is its end (as LSP says).
fn offset_of(text: &str, point: Point) -> Option<usize> {
    let mut line_start = 0;
    for _ in 0..point.line {
        line_start += text[line_start..].find('\n')? + 1;
    }
    let line_end = text[line_start..].find('\n').map_or(text.len(), |end| line_start + end);
    let line = &text[line_start..line_end];
    let within = line.char_indices().nth(point.column as usize).map_or(line.len(), |(at, _)| at);
    Some(line_start + within)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replace(start: (u32, u32), end: (u32, u32), text: &str) -> TextReplace {
        TextReplace {
            start: Point { line: start.0, column: start.1 },
            end: Point { line: end.0, column: end.1 },
            text: text.into(),
        }
    }

    #[test]
    fn edits_apply_by_character_columns_in_any_order() {
        let text = "größe = 1\nprint(größe)\n";
        let edits = [replace((1, 6), (1, 11), "size"), replace((0, 0), (0, 5), "size")];
        assert_eq!(apply_replaces(text, &edits).unwrap(), "size = 1\nprint(size)\n");
        assert_eq!(apply_replaces("ab", &[replace((0, 1), (0, 99), "X")]).unwrap(), "aX");
        assert_eq!(apply_replaces("a\n", &[replace((5, 0), (5, 0), "X")]).unwrap_err(), "no line 6");
        let overlapping = [replace((0, 0), (0, 2), "X"), replace((0, 1), (0, 3), "Y")];
        assert_eq!(apply_replaces("abcd", &overlapping).unwrap_err(), "two edits overlap at byte 1");
    }
}
