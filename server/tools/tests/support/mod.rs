//! Shared test fixtures: a temporary workspace on disk and one way to run a tool through
//! prepare → execute, as the agent does (with the gate allowing the proposal unchanged).

#![allow(dead_code)] // Each test file uses a different part of this module.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use reins_agent::{Tool, ToolContext};
use reins_ai::Content;
use reins_tools::FsWorkspace;
use serde_json::Value;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// A temporary directory holding the workspace root (`root/`) and a sibling directory outside
/// it (`outside/`), so escapes have somewhere to point.
pub struct Fixture {
    _dir: TempDir,
    pub root: PathBuf,
    pub outside: PathBuf,
    pub workspace: Arc<FsWorkspace>,
}

impl Fixture {
    /// A workspace whose root holds `files` (path relative to the root, content).
    pub fn new(files: &[(&str, &str)]) -> Self {
        Self::new_in(&std::env::temp_dir(), files)
    }

    /// [`Fixture::new`] in a temporary directory under `parent`.
    pub fn new_in(parent: &Path, files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir_in(parent).unwrap();
        let root = dir.path().canonicalize().unwrap().join("root");
        let outside = dir.path().canonicalize().unwrap().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
        for (path, content) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let workspace = Arc::new(FsWorkspace::new(vec![root.clone()]).unwrap());
        Self { _dir: dir, root, outside, workspace }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).unwrap()
    }

    /// Creates a symlink at `link` (relative to the root) pointing to `target`.
    pub fn symlink(&self, target: &Path, link: &str) {
        std::os::unix::fs::symlink(target, self.path(link)).unwrap();
    }

    /// Replaces the fixture's absolute paths in `text` so expectations do not depend on them.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.root.display().to_string(), "$ROOT").replace(&self.outside.display().to_string(), "$OUTSIDE")
    }
}

/// Runs `tool` with `arguments` (JSON text): `Ok(text)` or `Err(message)`.
pub async fn run(tool: &dyn Tool, arguments: &str) -> Result<String, String> {
    run_with(tool, arguments, CancellationToken::new(), &|_| {}).await
}

/// [`run`] with a cancellation token and a partial-output callback.
pub async fn run_with(
    tool: &dyn Tool,
    arguments: &str,
    cancel: CancellationToken,
    on_update: &(dyn Fn(&str) + Send + Sync),
) -> Result<String, String> {
    let arguments: Value = serde_json::from_str(arguments).unwrap();
    let prepared = tool.prepare(&arguments).await.map_err(|err| err.0)?;
    let proposal = prepared.proposal.clone();
    let cx = ToolContext { tool_call_id: "call-1", cancel, on_update };
    let output = tool.execute(prepared, proposal, cx).await.map_err(|err| err.0)?;
    Ok(output
        .content
        .iter()
        .map(|content| match content {
            Content::Text { text } => text.as_str(),
            other => panic!("tools answer with text, got {other:?}"),
        })
        .collect())
}

/// `text` for a success, `error: message` for a failure: one string to compare.
pub fn outcome(result: Result<String, String>) -> String {
    match result {
        Ok(text) => text,
        Err(message) => format!("error: {message}"),
    }
}

/// A long text shortened for an expectation: its first two and last two lines around a count.
pub fn summarize(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= 6 {
        return text.to_string();
    }
    format!(
        "{}\n{}\n… ({} lines in all) …\n{}\n{}",
        lines[0],
        lines[1],
        lines.len(),
        lines[lines.len() - 2],
        lines[lines.len() - 1]
    )
}

/// `count` numbered lines: `line 1\nline 2\n…`.
pub fn numbered_lines(count: usize) -> String {
    (1..=count).map(|n| format!("line {n}\n")).collect()
}
