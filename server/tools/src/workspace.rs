//! The `Workspace` trait: the only way tools touch files.
//!
//! The CLI uses [`FsWorkspace`] (the disk); the LSP server implements the trait over the editor's
//! open buffers and `workspace/applyEdit`. Either way, paths are confined to the workspace roots.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use reins_agent::FileChange;

use crate::Terminal;

/// A file's text as the agent should see it: the open buffer when the editor has one.
#[derive(Debug, Clone, PartialEq)]
pub struct TextFile {
    pub text: String,
    /// The open buffer's version; `None` when the text came from disk.
    pub version: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{path} is outside the workspace ({roots}); only files inside it can be used")]
    OutsideRoots { path: String, roots: String },
    #[error("{0}: a path starting with `~` is not expanded; give it relative to the working directory, or absolute")]
    Tilde(String),
    #[error("{0} does not exist")]
    NotFound(PathBuf),
    #[error("{path}: {reason}")]
    Io { path: PathBuf, reason: String },
    /// The buffer moved on since the change was computed (the user typed).
    #[error("{path} changed since the edit was prepared (version {expected:?}, now {actual:?})")]
    Stale { path: PathBuf, expected: Option<i32>, actual: Option<i32> },
    #[error("the change to {path} was not applied: {reason}")]
    Rejected { path: PathBuf, reason: String },
    /// Git's own directory: a hook or config written there runs, unconfined, at the next `git`.
    #[error(
        "{0} is inside .git, which only git and the user change (a hook or config written there would run \
         outside the sandbox); tools do not write there"
    )]
    GitDir(PathBuf),
}

#[async_trait]
pub trait Workspace: Send + Sync {
    /// Absolute, canonical roots. The first one is where relative paths start. Owned, because
    /// an editor's workspace folders can change while the server runs.
    fn roots(&self) -> Vec<PathBuf>;

    /// Where commands run and relative paths start.
    fn cwd(&self) -> PathBuf {
        self.roots().into_iter().next().unwrap_or_else(|| PathBuf::from("/"))
    }

    /// Turns a path from the model (relative to [`Workspace::cwd`], or absolute) into an absolute
    /// path inside the roots. Refuses `..` escapes and symlinks that lead out. The path need not
    /// exist (a file about to be written).
    fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError>;

    /// [`Workspace::resolve`] for a path a tool is about to write: never inside a root's `.git`.
    fn resolve_writable(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        let real = self.resolve(path)?;
        if in_git_dir(&real, &self.roots()) {
            return Err(WorkspaceError::GitDir(real));
        }
        Ok(real)
    }

    /// [`Workspace::resolve_writable`] for many paths at once, in order: a checkout's files,
    /// where an implementation can resolve the directories they share once instead of per path.
    fn resolve_all_writable(&self, paths: &[&str]) -> Vec<Result<PathBuf, WorkspaceError>> {
        paths.iter().map(|path| self.resolve_writable(path)).collect()
    }

    /// Whether `path` (absolute), with its symlinks followed, lies inside the roots: a walk
    /// (`grep`, `find`, `ls`) asks this of every symlink it meets, so no tool reads or shows
    /// through a link that leads out.
    fn is_inside(&self, path: &Path) -> bool {
        path.to_str().is_some_and(|path| self.resolve(path).is_ok())
    }

    /// Reads a file's text: the open buffer if there is one, else the disk.
    async fn read_text(&self, path: &Path) -> Result<TextFile, WorkspaceError>;

    /// The real path of a path from the model ([`Workspace::resolve`]) and its text
    /// ([`Workspace::read_text`]): the read tool's question, resolved once where
    /// `read_text` would otherwise resolve the path again.
    async fn read_named(&self, path: &str) -> Result<(PathBuf, TextFile), WorkspaceError> {
        let real = self.resolve(path)?;
        let text = self.read_text(&real).await?;
        Ok((real, text))
    }

    /// [`Workspace::read_text`] of many files, in order: a checkout's files, where an
    /// implementation can resolve the directories they share once instead of per path.
    async fn read_texts(&self, paths: &[&Path]) -> Vec<Result<TextFile, WorkspaceError>> {
        let mut texts = Vec::with_capacity(paths.len());
        for path in paths {
            texts.push(self.read_text(path).await);
        }
        texts
    }

    /// Applies a whole-file change. Implementations check `change.version`/`change.before`
    /// against the current text and answer `Stale` rather than overwrite newer text.
    async fn apply(&self, change: &FileChange) -> Result<(), WorkspaceError>;

    /// Applies several changes together, all or none: see [`apply_each`], which an
    /// implementation that can apply them in one go (an editor's workspace edit) improves on.
    async fn apply_all(&self, changes: &[FileChange]) -> Result<(), WorkspaceError> {
        apply_each(self, changes).await
    }

    /// Open buffers whose text differs from the disk, so searches see what the user sees.
    fn open_buffers(&self) -> Vec<(PathBuf, String)> {
        Vec::new()
    }

    /// The editor's terminal, where `bash` runs commands in the user's sight; `None` (the
    /// default) runs them here.
    fn terminal(&self) -> Option<Arc<dyn Terminal>> {
        None
    }
}

/// Applies `changes` one by one, all or none: each is checked against the text it was computed
/// from before any is applied, and if one fails midway the ones before it are undone (as far as
/// undoing can: text typed meanwhile is never overwritten).
pub async fn apply_each<W: Workspace + ?Sized>(workspace: &W, changes: &[FileChange]) -> Result<(), WorkspaceError> {
    for change in changes {
        let current = match workspace.read_text(&change.path).await {
            Ok(file) => Some(file.text),
            Err(WorkspaceError::NotFound(_)) => None,
            Err(err) => return Err(err),
        };
        if current != change.before {
            return Err(WorkspaceError::Stale { path: change.path.clone(), expected: change.version, actual: None });
        }
    }
    for (done, change) in changes.iter().enumerate() {
        if let Err(err) = workspace.apply(change).await {
            for applied in changes[..done].iter().rev() {
                if let Err(undo) = workspace.apply(&applied.undo()).await {
                    tracing::warn!("could not undo the change to {}: {undo}", applied.path.display());
                }
            }
            return Err(err);
        }
    }
    Ok(())
}

/// Whether `path` (real, absolute) lies in a `.git` below one of `roots`: the repository's own
/// or a nested one's.
pub fn in_git_dir(path: &Path, roots: &[PathBuf]) -> bool {
    roots
        .iter()
        .any(|root| path.strip_prefix(root).is_ok_and(|rest| rest.components().any(|part| part.as_os_str() == ".git")))
}
