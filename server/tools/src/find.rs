//! `find`: files whose path matches a glob, walking the tree as git sees it (`.gitignore`
//! respected, hidden files skipped).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use reins_agent::{
    Proposal, ToolContext, ToolError, ToolKind, ToolLocation, ToolLook, ToolOutput, TypedTool, string_argument,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{Workspace, display_path, workspace_error};

const DEFAULT_LIMIT: usize = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindInput {
    /// Glob: `*.rs`, `src/**/*.ts`. Without a `/` it matches names at any depth.
    pub pattern: String,
    /// Directory to search; default: the working directory.
    pub path: Option<String>,
    pub limit: Option<usize>,
}

pub struct FindTool {
    workspace: Arc<dyn Workspace>,
}

impl FindTool {
    pub fn new(workspace: Arc<dyn Workspace>) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl TypedTool for FindTool {
    type Input = FindInput;
    const NAME: &'static str = "find";
    const READ_ONLY: bool = true;

    fn look(&self, arguments: &Value) -> ToolLook {
        let (pattern, path) = (string_argument(arguments, "pattern"), string_argument(arguments, "path"));
        ToolLook {
            title: format!("Find `{}` in {}", pattern.unwrap_or(""), path.unwrap_or(".")),
            kind: ToolKind::Search,
            locations: path.map(|path| vec![ToolLocation::new(path)]).unwrap_or_default(),
            summary: pattern.map(|pattern| format!("{pattern} {}", path.unwrap_or(""))).unwrap_or_default(),
        }
    }
    fn description(&self) -> String {
        format!(
            "Find files by glob, respecting .gitignore and skipping hidden files. Paths come sorted, \
             at most {DEFAULT_LIMIT} unless limit says otherwise."
        )
    }

    async fn execute(
        &self,
        input: FindInput,
        _proposal: Option<Proposal>,
        _cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let dir = self.workspace.resolve(input.path.as_deref().unwrap_or(".")).map_err(workspace_error)?;
        let root = self.workspace.cwd();
        let shown_dir = display_path(&dir, &root);
        if !dir.is_dir() {
            return Err(ToolError::new(format!("{shown_dir} is not a directory; find searches directories")));
        }
        let matcher = FileMatcher::new(&input.pattern)?;
        let walked = dir.clone();
        let workspace = self.workspace.clone();
        let mut found = tokio::task::spawn_blocking(move || walk(&walked, &matcher, workspace.as_ref()))
            .await
            .map_err(|err| ToolError::new(format!("find failed: {err}")))?;
        if found.is_empty() {
            return Ok(ToolOutput::text(format!("No files found matching {} in {shown_dir}", input.pattern)));
        }
        found.sort();
        let total = found.len();
        let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
        let mut output = found.iter().take(limit).map(|path| display_path(path, &root)).collect::<Vec<_>>().join("\n");
        if total > limit {
            output.push_str(&format!(
                "\n\n[Showing {limit} of {total} files. Use a more specific pattern or path, or raise limit.]"
            ));
        }
        Ok(ToolOutput::text(output))
    }
}

/// A glob matched against a file name (pattern without `/`) or a relative path (with `/`).
pub(crate) struct FileMatcher {
    glob: GlobMatcher,
    whole_path: bool,
}

impl FileMatcher {
    pub(crate) fn new(pattern: &str) -> Result<Self, ToolError> {
        let pattern = pattern.trim().trim_start_matches("./");
        if pattern.is_empty() {
            return Err(ToolError::new("pattern is empty; give a glob such as `*.rs`"));
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|err| ToolError::new(format!("invalid glob pattern `{pattern}`: {err}")))?;
        Ok(Self { glob: glob.compile_matcher(), whole_path: pattern.contains('/') })
    }

    pub(crate) fn is_match(&self, relative: &Path) -> bool {
        if self.whole_path {
            self.glob.is_match(relative)
        } else {
            relative.file_name().is_some_and(|name| self.glob.is_match(name))
        }
    }
}

/// Files under `dir` (not directories, nor links to them) that match, as absolute paths. A
/// symlink that leads out of the workspace is left out: no tool could use it.
fn walk(dir: &Path, matcher: &FileMatcher, workspace: &dyn Workspace) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in ignore::WalkBuilder::new(dir).require_git(false).build() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                tracing::debug!("find: skipping an unreadable entry: {err}");
                continue;
            }
        };
        if entry.file_type().is_none_or(|file_type| file_type.is_dir()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(dir) else { continue };
        let usable = !entry.path_is_symlink()
            || (workspace.is_inside(entry.path()) && !entry.path().metadata().is_ok_and(|target| target.is_dir()));
        if matcher.is_match(relative) && usable {
            found.push(entry.into_path());
        }
    }
    found
}
