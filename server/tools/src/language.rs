//! What language servers know about the code — where a symbol is defined, who uses it, its type,
//! the symbols of a file or of the workspace, the calls in and out of a function, and how to
//! rename it — as the `lsp` and `rename` tools ask for it: the [`LanguageSource`] that says where
//! that knowledge comes from (servers reins starts itself, or the editor's own), in terms free of
//! any protocol: absolute paths, 1-based lines, 0-based character columns.

use std::path::{Path, PathBuf};

use async_trait::async_trait;

/// A point in a file: 0-based line and column in characters (Unicode scalar values), as the text
/// is split by `str::chars`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Point {
    pub line: u32,
    pub column: u32,
}

/// A span of a file, `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Place {
    /// Absolute.
    pub path: PathBuf,
    pub start: Point,
    pub end: Point,
}

/// What the `lsp` tool asks about a symbol at a [`Point`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    Definition,
    TypeDefinition,
    Implementation,
    References,
}

/// Which way a call hierarchy goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Calls {
    /// Who calls the function.
    Incoming,
    /// What the function calls.
    Outgoing,
}

/// A named symbol: a function, a class, a field…
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    /// `function`, `class`, `method`… (the language server's kind, in words).
    pub kind: String,
    /// Where it is; for a file's symbols, where its name is.
    pub place: Place,
    /// What it is in (a class, a module), when the server says.
    pub container: Option<String>,
    /// How deep it is nested in its file's outline (0: at the top).
    pub depth: u32,
}

/// One edit of a file's text: `range` replaced with `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextReplace {
    pub start: Point,
    pub end: Point,
    pub text: String,
}

/// One step of a rename, in the order the language server gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenameStep {
    /// Edits of one file's text, against its text as it was before any step.
    Edit {
        path: PathBuf,
        edits: Vec<TextReplace>,
    },
    /// The file moves (a module named after the symbol).
    Move {
        from: PathBuf,
        to: PathBuf,
    },
    Create {
        path: PathBuf,
    },
    Delete {
        path: PathBuf,
    },
}

/// Where the language intelligence comes from: language servers reins started, or the editor's.
/// Every failure is a sentence for the model (no server for that language, the server crashed or
/// did not answer in time); the tools add what to do instead.
#[async_trait]
pub trait LanguageSource: Send + Sync {
    /// Whether some language server may answer about `path` (one is configured for its language).
    fn covers(&self, path: &Path) -> bool;
    /// Definitions, type definitions, implementations or references of the symbol at `at`.
    async fn lookup(&self, lookup: Lookup, path: &Path, at: Point) -> Result<Vec<Place>, String>;
    /// Its type and documentation, as text (`None`: the server has nothing to say).
    async fn hover(&self, path: &Path, at: Point) -> Result<Option<String>, String>;
    /// The outline of a file, in order, nested ones after their parent.
    async fn document_symbols(&self, path: &Path) -> Result<Vec<Symbol>, String>;
    /// Symbols of the workspace whose name matches `query`, asked of the servers of `near`'s
    /// language (a file the model names), or of every server running when `None`.
    async fn workspace_symbols(&self, query: &str, near: Option<&Path>) -> Result<Vec<Symbol>, String>;
    /// The functions that call the one at `at`, or that it calls, each with where the calls are.
    async fn calls(&self, direction: Calls, path: &Path, at: Point) -> Result<Vec<(Symbol, Vec<Place>)>, String>;
    /// What renaming the symbol at `at` to `new_name` changes, as the server would have the
    /// editor apply it; fails when the symbol cannot be renamed there.
    async fn rename(&self, path: &Path, at: Point, new_name: &str) -> Result<Vec<RenameStep>, String>;
}
