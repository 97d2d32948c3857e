//! The `apply_patch` tool: the Codex patch format that OpenAI's coding models are trained on, as
//! the second dialect of editing beside `edit`.
//!
//! `prepare` reads the patch ([`parse`]), every file it names through the [`Workspace`] (an open
//! buffer wins over the disk), and works out each file's new text with the same matcher as
//! `edit` ([`plan`]); one file that fails and nothing is proposed. The proposal holds every file,
//! created, deleted, moved or changed, for the gate to show; `execute` applies what the gate
//! allowed, all files together or none.

mod parse;
mod plan;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use reins_agent::{
    FileChange, Proposal, ToolContext, ToolError, ToolKind, ToolLocation, ToolLook, ToolOutput, TypedTool,
    string_argument,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::edit::unified_diff;
use crate::workspace::{Workspace, WorkspaceError};
use crate::{display_path, workspace_error};

use parse::Patch;
use plan::{Planned, Target};

/// Arguments of `apply_patch`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchInput {
    /// The whole patch, from `*** Begin Patch` to `*** End Patch`.
    pub input: String,
}

/// The `apply_patch` tool over a workspace.
pub struct ApplyPatchTool {
    workspace: Arc<dyn Workspace>,
}

impl ApplyPatchTool {
    pub fn new(workspace: Arc<dyn Workspace>) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl TypedTool for ApplyPatchTool {
    type Input = ApplyPatchInput;
    const NAME: &'static str = "apply_patch";
    const READ_ONLY: bool = false;

    fn look(&self, arguments: &Value) -> ToolLook {
        let paths = string_argument(arguments, "input").map(patch_paths).unwrap_or_default();
        ToolLook {
            title: if paths.is_empty() { "Apply a patch".to_string() } else { format!("Patch {}", paths.join(", ")) },
            kind: ToolKind::Edit,
            locations: paths.iter().map(|path| ToolLocation::new(path.as_str())).collect(),
            summary: paths.join(", "),
        }
    }
    fn description(&self) -> String {
        "Create, change, delete and move files with one patch; all its files change together or none does. \
         Format:\n\
         *** Begin Patch\n\
         *** Update File: path/to/file\n\
         @@ def enclosing_function():\n \
          context line\n\
         -removed line\n\
         +added line\n\
         *** Add File: path/new_file\n\
         +every line of the new file\n\
         *** Delete File: path/old_file\n\
         *** Update File: path/a\n\
         *** Move to: path/b\n\
         *** End Patch\n\
         Give about 3 unchanged lines of context around each change, copied exactly; when that is not \
         unique, add an @@ line with the class or function the change is in."
            .to_string()
    }

    async fn prepare(&self, input: &ApplyPatchInput) -> Result<Option<Proposal>, ToolError> {
        let patch = parse::parse(&input.input)
            .map_err(|err| ToolError::new(format!("could not read the patch: {err}. Nothing was changed.")))?;
        let targets = self.targets(&patch).await?;
        let planned = plan::plan(&patch, &targets).map_err(|message| ToolError::new(refused(&patch, &message)))?;
        let files = planned.into_iter().map(file_change).collect();
        Ok(Some(Proposal::FileChanges { files }))
    }

    async fn execute(
        &self,
        _input: ApplyPatchInput,
        proposal: Option<Proposal>,
        _cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let changes = match &proposal {
            Some(proposal @ (Proposal::FileChanges { .. } | Proposal::FileChange(_))) => proposal.file_changes(),
            _ => return Err(ToolError::new("internal error: apply_patch reached execute without file changes")),
        };
        self.workspace.apply_all(changes).await.map_err(|err| {
            let what = match &err {
                WorkspaceError::Stale { path, .. } => format!(
                    "{err}; no file was changed. Read {} again and redo the patch",
                    display_path(path, &self.workspace.cwd())
                ),
                _ => format!("{err}; no file was changed"),
            };
            ToolError::new(what)
        })?;
        Ok(report(self.workspace.as_ref(), changes))
    }
}

impl ApplyPatchTool {
    /// Every path the patch names, resolved inside the workspace and read (`None` when missing).
    async fn targets(&self, patch: &Patch) -> Result<HashMap<String, Target>, ToolError> {
        let mut targets = HashMap::new();
        for op in &patch.files {
            for raw in op.paths() {
                if targets.contains_key(raw) {
                    continue;
                }
                let path = self.workspace.resolve_writable(raw).map_err(|err| {
                    ToolError::new(format!("{err} (line {} of the patch). Nothing was changed.", op.line()))
                })?;
                let shown = display_path(&path, &self.workspace.cwd());
                let (text, version) = match self.workspace.read_text(&path).await {
                    Ok(file) => (Some(file.text), file.version),
                    Err(WorkspaceError::NotFound(_)) => (None, None),
                    Err(err) => return Err(workspace_error(err)),
                };
                targets.insert(raw.to_string(), Target { path, shown, text, version });
            }
        }
        Ok(targets)
    }
}

/// A planning failure as the model reads it: the reason, and that nothing changed.
fn refused(patch: &Patch, message: &str) -> String {
    let nothing = if patch.files.len() > 1 { "No file was changed." } else { "Nothing was changed." };
    format!("{message}\n{nothing}")
}

fn file_change(planned: Planned) -> FileChange {
    FileChange {
        path: planned.path,
        before: planned.before,
        delete: planned.after.is_none(),
        after: planned.after.unwrap_or_default(),
        moved_to: planned.moved_to.map(|(path, _)| path),
        version: planned.version,
        notes: planned.notes,
    }
}

/// What the model reads after the patch landed: one line per file, the notes, and a compact
/// diff of each changed file; `details` carry the full unified diffs for UIs.
fn report(workspace: &dyn Workspace, changes: &[FileChange]) -> ToolOutput {
    // Context lines in the model's diff, and how long it may get before it is cut.
    const CONTEXT: usize = 2;
    const MAX_DIFF_LINES: usize = 80;
    let root = workspace.cwd();
    let shown = |path: &PathBuf| display_path(path, &root);
    let mut text = String::from("Applied the patch:");
    let mut diffs = String::new();
    let mut details = BTreeMap::new();
    for change in changes {
        let path = shown(&change.path);
        let before = change.before.as_deref().unwrap_or("");
        let line = match (&change.before, &change.moved_to) {
            _ if change.delete => format!("deleted {path}"),
            (None, _) => format!("created {path} ({} lines)", change.after.lines().count()),
            (Some(_), Some(to)) if before == change.after => format!("moved {path} to {}", shown(to)),
            (Some(_), Some(to)) => format!("moved {path} to {} and changed it", shown(to)),
            (Some(_), None) => format!("changed {path}"),
        };
        let _ = write!(text, "\n- {line}");
        for note in &change.notes {
            let _ = write!(text, "\n  Note: {note}");
        }
        if change.before.is_some() && !change.delete && before != change.after {
            diffs.push_str(&unified_diff(before, &change.after, CONTEXT, Some(&path)));
        }
        let full = if change.delete { String::new() } else { unified_diff(before, &change.after, 3, Some(&path)) };
        details.insert(path, json!({ "outcome": line, "notes": change.notes, "diff": full }));
    }
    if !diffs.is_empty() {
        let lines: Vec<&str> = diffs.lines().collect();
        text.push_str("\n\n");
        text.push_str(&lines[..lines.len().min(MAX_DIFF_LINES)].join("\n"));
        if lines.len() > MAX_DIFF_LINES {
            let _ = write!(text, "\n… {} more diff lines not shown", lines.len() - MAX_DIFF_LINES);
        }
    }
    ToolOutput::text(text).with_details(json!({ "files": details }))
}

/// The paths a patch names (moves' destinations too), as written; none when it cannot be read.
pub fn patch_paths(input: &str) -> Vec<String> {
    let Ok(patch) = parse::parse(input) else { return Vec::new() };
    patch.files.iter().flat_map(|op| op.paths()).map(str::to_string).collect()
}

/// What a patch did to a set of files: each file after (`None`: deleted, or moved away), and the
/// notes on loose matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Patched {
    pub files: BTreeMap<String, Option<String>>,
    pub notes: Vec<String>,
}

/// The files after `input` is applied to `files` (path → text, as the model names them), or the
/// message the model would read: the pure function behind `apply_patch`, for the corpus and the
/// bench. A file the patch deletes maps to `None`; one it moves appears under its new path.
pub fn apply_patch_to(input: &str, files: &BTreeMap<String, String>) -> Result<Patched, String> {
    let patch = parse::parse(input).map_err(|err| format!("could not read the patch: {err}"))?;
    let mut targets = HashMap::new();
    for op in &patch.files {
        for raw in op.paths() {
            let key = raw.trim_start_matches("./").to_string();
            let target =
                Target { path: PathBuf::from(&key), shown: key.clone(), text: files.get(&key).cloned(), version: None };
            targets.insert(raw.to_string(), target);
        }
    }
    let planned = plan::plan(&patch, &targets).map_err(|message| refused(&patch, &message))?;
    let mut result: BTreeMap<String, Option<String>> =
        files.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
    let mut notes = Vec::new();
    for file in planned {
        notes.extend(file.notes);
        match file.moved_to {
            Some((_, to)) => {
                result.insert(file.shown, None);
                result.insert(to, file.after);
            }
            None => {
                result.insert(file.shown, file.after);
            }
        }
    }
    Ok(Patched { files: result, notes })
}
