//! `lsp`: the language servers' knowledge of the code, read-only — definitions, type definitions,
//! implementations, references, hover, a file's outline, the workspace's symbols, calls in and
//! out. One tool with an `operation` keeps every request small. A symbol is named by its file,
//! its line and its text on that line (models are poor at columns: reins finds the column), and
//! every answer is compact text like `grep`'s — `line:col: the line`, grouped by file, capped —
//! never the server's JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::{
    Proposal, ToolContext, ToolError, ToolKind, ToolLocation, ToolLook, ToolOutput, TypedTool, string_argument,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::language::{Calls, LanguageSource, Lookup, Place, Point, Symbol};
use crate::{Workspace, display_path, workspace_error};

/// Lines one answer shows at most.
const MAX_SHOWN: usize = 100;
/// Characters of one shown line of code kept.
const MAX_LINE_CHARS: usize = 200;
/// Characters of a hover kept.
const MAX_HOVER_CHARS: usize = 4000;
/// How long a language server may take (its first answer includes indexing the project).
const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Definition,
    TypeDefinition,
    Implementation,
    References,
    Hover,
    DocumentSymbols,
    WorkspaceSymbols,
    IncomingCalls,
    OutgoingCalls,
}

/// The fields carry no doc comments: the tool's description says it all once, and every byte of
/// the schema is sent with every request.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LspInput {
    pub operation: Operation,
    pub path: Option<String>,
    pub line: Option<u32>,
    pub symbol: Option<String>,
    pub query: Option<String>,
}

/// `lsp`: asks the language servers of [`LanguageSource`] about a symbol or a file.
pub struct LspTool {
    workspace: Arc<dyn Workspace>,
    source: Arc<dyn LanguageSource>,
}

impl LspTool {
    pub fn new(workspace: Arc<dyn Workspace>, source: Arc<dyn LanguageSource>) -> Self {
        Self { workspace, source }
    }
}

#[async_trait]
impl TypedTool for LspTool {
    type Input = LspInput;
    const NAME: &'static str = "lsp";
    const READ_ONLY: bool = true;

    fn description(&self) -> String {
        "Ask the language server about `symbol` on `line` (1-based) of `path`; workspace_symbols takes `query`."
            .to_string()
    }

    fn timeout(&self) -> Option<Duration> {
        Some(TOOL_TIMEOUT)
    }

    fn look(&self, arguments: &Value) -> ToolLook {
        let operation = string_argument(arguments, "operation").unwrap_or("lookup");
        let path = string_argument(arguments, "path");
        let line = arguments.get("line").and_then(Value::as_u64).and_then(|line| u32::try_from(line).ok());
        let subject = string_argument(arguments, "symbol").or(string_argument(arguments, "query")).unwrap_or("");
        ToolLook {
            title: format!("{operation} of `{subject}`"),
            kind: ToolKind::Search,
            locations: path.map(|path| vec![ToolLocation { path: path.to_string(), line }]).unwrap_or_default(),
            summary: format!("{operation} {subject} {}", path.unwrap_or("")).trim_end().to_string(),
        }
    }

    async fn execute(&self, input: LspInput, _: Option<Proposal>, _: ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        let text = match input.operation {
            Operation::WorkspaceSymbols => {
                let query = input.query.as_deref().or(input.symbol.as_deref()).unwrap_or("").trim();
                if query.is_empty() {
                    return Err(ToolError::new("workspace_symbols needs a `query`: a symbol's name or part of it"));
                }
                let near = match input.path.as_deref() {
                    Some(path) => Some(self.workspace.resolve(path).map_err(workspace_error)?),
                    None => None,
                };
                let symbols = self.source.workspace_symbols(query, near.as_deref()).await.map_err(ToolError::new)?;
                self.symbols_report(&symbols, &format!("No symbol matches `{query}`."), true).await
            }
            Operation::DocumentSymbols => {
                let path = self.file(input.path.as_deref())?;
                let symbols = self.source.document_symbols(&path).await.map_err(ToolError::new)?;
                let shown = display_path(&path, &self.workspace.cwd());
                self.symbols_report(&symbols, &format!("The language server finds no symbols in {shown}."), false).await
            }
            operation => {
                let (path, at) = self.symbol_at(&input).await?;
                let what = input.symbol.as_deref().unwrap_or_default();
                match operation {
                    Operation::Hover => match self.source.hover(&path, at).await.map_err(ToolError::new)? {
                        Some(text) if !text.trim().is_empty() => cut(text.trim(), MAX_HOVER_CHARS),
                        _ => format!("The language server has no information about `{what}` there."),
                    },
                    Operation::IncomingCalls | Operation::OutgoingCalls => {
                        let direction =
                            if operation == Operation::IncomingCalls { Calls::Incoming } else { Calls::Outgoing };
                        let calls = self.source.calls(direction, &path, at).await.map_err(ToolError::new)?;
                        self.calls_report(direction, what, &calls).await
                    }
                    _ => {
                        let lookup = match operation {
                            Operation::Definition => Lookup::Definition,
                            Operation::TypeDefinition => Lookup::TypeDefinition,
                            Operation::Implementation => Lookup::Implementation,
                            _ => Lookup::References,
                        };
                        let places = self.source.lookup(lookup, &path, at).await.map_err(ToolError::new)?;
                        self.places_report(lookup, what, &places).await
                    }
                }
            }
        };
        Ok(ToolOutput::text(text))
    }
}

impl LspTool {
    /// The file `path` names, which a language server must cover.
    fn file(&self, path: Option<&str>) -> Result<PathBuf, ToolError> {
        let Some(path) = path else {
            return Err(ToolError::new("this operation needs the `path` of a file"));
        };
        let resolved = self.workspace.resolve(path).map_err(workspace_error)?;
        if !self.source.covers(&resolved) {
            return Err(ToolError::new(format!(
                "no language server is configured for {path}; use grep and read instead, or configure one in \
                 [lsp_servers]"
            )));
        }
        Ok(resolved)
    }

    /// The file and point the input names (path, 1-based line, the symbol's text on it).
    async fn symbol_at(&self, input: &LspInput) -> Result<(PathBuf, Point), ToolError> {
        let path = self.file(input.path.as_deref())?;
        let point = locate(self.workspace.as_ref(), &path, input.line, input.symbol.as_deref()).await?;
        Ok((path, point))
    }

    async fn places_report(&self, lookup: Lookup, what: &str, places: &[Place]) -> String {
        let noun = match lookup {
            Lookup::Definition => "definition",
            Lookup::TypeDefinition => "type definition",
            Lookup::Implementation => "implementation",
            Lookup::References => "reference",
        };
        if places.is_empty() {
            return format!("The language server finds no {noun} of `{what}`.");
        }
        let entries: Vec<(PathBuf, Point, String)> =
            places.iter().map(|place| (place.path.clone(), place.start, String::new())).collect();
        self.grouped(entries, noun, true).await
    }

    async fn symbols_report(&self, symbols: &[Symbol], none: &str, grouped: bool) -> String {
        if symbols.is_empty() {
            return none.to_string();
        }
        if grouped {
            let entries = symbols
                .iter()
                .map(|symbol| {
                    let container = symbol.container.as_deref().map(|c| format!(" (in {c})")).unwrap_or_default();
                    (
                        symbol.place.path.clone(),
                        symbol.place.start,
                        format!("{} {}{container}", symbol.kind, symbol.name),
                    )
                })
                .collect();
            return self.grouped(entries, "symbol", false).await;
        }
        let mut lines: Vec<String> = symbols
            .iter()
            .take(MAX_SHOWN)
            .map(|symbol| {
                let indent = "  ".repeat(symbol.depth.min(8) as usize);
                let at = symbol.place.start;
                format!("{indent}{}:{}: {} {}", at.line + 1, at.column + 1, symbol.kind, symbol.name)
            })
            .collect();
        if symbols.len() > MAX_SHOWN {
            lines.push(format!("[Showing {MAX_SHOWN} of {} symbols.]", symbols.len()));
        }
        lines.join("\n")
    }

    async fn calls_report(&self, direction: Calls, what: &str, calls: &[(Symbol, Vec<Place>)]) -> String {
        if calls.is_empty() {
            return match direction {
                Calls::Incoming => format!("The language server finds no calls of `{what}`."),
                Calls::Outgoing => format!("The language server finds no calls made by `{what}`."),
            };
        }
        let entries = calls
            .iter()
            .map(|(symbol, sites)| {
                let sites: Vec<String> =
                    sites.iter().map(|site| format!("{}:{}", site.start.line + 1, site.start.column + 1)).collect();
                let label = match direction {
                    Calls::Incoming => format!("{} {} calls it at {}", symbol.kind, symbol.name, sites.join(", ")),
                    Calls::Outgoing => format!("{} {} (called at {})", symbol.kind, symbol.name, sites.join(", ")),
                };
                (symbol.place.path.clone(), symbol.place.start, label)
            })
            .collect();
        self.grouped(entries, "call", false).await
    }

    /// Entries as `line:col: label` (or the line's code when `code`), under their file's path,
    /// files and lines in order, at most [`MAX_SHOWN`]. Places outside the workspace (a
    /// library's) are counted, not shown.
    async fn grouped(&self, entries: Vec<(PathBuf, Point, String)>, noun: &str, code: bool) -> String {
        let cwd = self.workspace.cwd();
        let total = entries.len();
        let mut files: BTreeMap<PathBuf, Vec<(Point, String)>> = BTreeMap::new();
        let mut outside = 0;
        for (path, point, label) in entries {
            if !self.workspace.is_inside(&path) {
                outside += 1;
                continue;
            }
            let lines = files.entry(path).or_default();
            if !lines.iter().any(|(seen, _)| *seen == point) {
                lines.push((point, label));
            }
        }
        let mut out = Vec::new();
        let mut shown = 0;
        let file_count = files.len();
        for (path, mut lines) in files {
            if shown >= MAX_SHOWN {
                break;
            }
            lines.sort_by_key(|(point, _)| *point);
            let text = if code { self.workspace.read_text(&path).await.ok().map(|file| file.text) } else { None };
            let source: Vec<&str> = text.as_deref().map(|text| text.lines().collect()).unwrap_or_default();
            out.push(format!("{}:", display_path(&path, &cwd)));
            for (point, label) in lines {
                if shown >= MAX_SHOWN {
                    break;
                }
                let label = if code {
                    source.get(point.line as usize).map(|line| cut(line.trim(), MAX_LINE_CHARS)).unwrap_or_default()
                } else {
                    label
                };
                out.push(format!("  {}:{}: {label}", point.line + 1, point.column + 1));
                shown += 1;
            }
        }
        let plural = |n: usize, word: &str| if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") };
        if shown < total - outside {
            out.push(format!(
                "[Showing {shown} of {} in {}.]",
                plural(total - outside, noun),
                plural(file_count, "file")
            ));
        }
        if outside > 0 {
            out.push(format!("[{} outside the workspace (libraries) not shown.]", plural(outside, "more")));
        }
        out.join("\n")
    }
}

/// The point of `symbol` on `line` (1-based) of `path`: its first occurrence there as a whole
/// word, else as any text. Errors say what the line holds, so the model can correct itself.
pub(crate) async fn locate(
    workspace: &dyn Workspace,
    path: &Path,
    line: Option<u32>,
    symbol: Option<&str>,
) -> Result<Point, ToolError> {
    let (Some(line), Some(symbol)) = (line, symbol.map(str::trim).filter(|symbol| !symbol.is_empty())) else {
        return Err(ToolError::new(
            "name the symbol with `path`, `line` (1-based) and `symbol` (its text on that line)",
        ));
    };
    let text = workspace.read_text(path).await.map_err(workspace_error)?.text;
    let shown = display_path(path, &workspace.cwd());
    let count = text.lines().count();
    let Some(code) = text.lines().nth(line.saturating_sub(1) as usize).filter(|_| line >= 1) else {
        let lines = if count == 1 { "1 line".to_string() } else { format!("{count} lines") };
        return Err(ToolError::new(format!("{shown} has {lines}; line {line} is not one of them")));
    };
    match column_of(code, symbol) {
        Some(column) => Ok(Point { line: line - 1, column }),
        None => Err(ToolError::new(format!(
            "`{symbol}` is not on line {line} of {shown}, which is: {}",
            cut(code.trim(), MAX_LINE_CHARS)
        ))),
    }
}

/// The column (in characters) of `symbol` in `line`: its first occurrence not inside a longer
/// identifier, else its first occurrence.
pub(crate) fn column_of(line: &str, symbol: &str) -> Option<u32> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let starts: Vec<usize> = line.match_indices(symbol).map(|(start, _)| start).collect();
    let whole = starts.iter().find(|&&start| {
        let before = line[..start].chars().next_back();
        let after = line[start + symbol.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    });
    let start = whole.or(starts.first())?;
    Some(line[..*start].chars().count() as u32)
}

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;
    use crate::language::{RenameStep, Symbol};

    /// A language server that knows nothing: the reports below get their places directly.
    struct Silent;

    #[async_trait]
    impl LanguageSource for Silent {
        fn covers(&self, _: &Path) -> bool {
            true
        }
        async fn lookup(&self, _: Lookup, _: &Path, _: Point) -> Result<Vec<Place>, String> {
            Ok(Vec::new())
        }
        async fn hover(&self, _: &Path, _: Point) -> Result<Option<String>, String> {
            Ok(None)
        }
        async fn document_symbols(&self, _: &Path) -> Result<Vec<Symbol>, String> {
            Ok(Vec::new())
        }
        async fn workspace_symbols(&self, _: &str, _: Option<&Path>) -> Result<Vec<Symbol>, String> {
            Ok(Vec::new())
        }
        async fn calls(&self, _: Calls, _: &Path, _: Point) -> Result<Vec<(Symbol, Vec<Place>)>, String> {
            Ok(Vec::new())
        }
        async fn rename(&self, _: &Path, _: Point, _: &str) -> Result<Vec<RenameStep>, String> {
            Ok(Vec::new())
        }
    }

    /// What the tool tells the model of `places` (relative to a workspace holding `files`, or
    /// absolute; 1-based line and column) found as references.
    async fn references_report(files: &[(&str, &str)], places: &[(&str, u32, u32)]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (path, text) in files {
            std::fs::write(root.join(path), text).unwrap();
        }
        let places: Vec<Place> = places
            .iter()
            .map(|(path, line, column)| {
                let at = Point { line: line - 1, column: column - 1 };
                Place { path: root.join(path), start: at, end: at }
            })
            .collect();
        let workspace: Arc<dyn Workspace> = Arc::new(crate::FsWorkspace::new(vec![root]).unwrap());
        LspTool::new(workspace, Arc::new(Silent)).places_report(Lookup::References, "greet", &places).await
    }

    async fn check_references(files: &[(&str, &str)], places: &[(&str, u32, u32)], expected: Expect) {
        expected.assert_eq(&references_report(files, places).await);
    }

    #[tokio::test]
    async fn references_are_grouped_by_file_with_their_line_and_outside_ones_counted() {
        check_references(
            &[("b.py", "import a\n\na.greet()\n"), ("a.py", "def greet():\n    pass\n")],
            &[("b.py", 3, 3), ("a.py", 1, 5), ("/usr/lib/python3/x.py", 1, 1), ("b.py", 3, 3)],
            expect![[r#"
                a.py:
                  1:5: def greet():
                b.py:
                  3:3: a.greet()
                [Showing 2 of 3 references in 2 files.]
                [1 more outside the workspace (libraries) not shown.]"#]],
        )
        .await;
        check_references(&[], &[], expect!["The language server finds no reference of `greet`."]).await;
    }

    #[tokio::test]
    async fn at_most_a_hundred_are_shown_and_the_rest_counted() {
        let text: String = (1..=150).map(|n| format!("greet({n})\n")).collect();
        let places: Vec<(&str, u32, u32)> = (1..=150).map(|line| ("a.py", line, 1)).collect();
        let report = references_report(&[("a.py", &text)], &places).await;
        assert_eq!(report.lines().count(), 1 + 100 + 1);
        assert!(report.ends_with("  100:1: greet(100)\n[Showing 100 of 150 references in 1 file.]"), "{report}");
    }

    #[test]
    fn lsp_and_rename_calls_look_like_what_they_ask() {
        use reins_agent::Tool;
        let root = std::env::temp_dir();
        let workspace: Arc<dyn Workspace> = Arc::new(crate::FsWorkspace::new(vec![root]).unwrap());
        let lsp: Arc<dyn Tool> = Arc::new(LspTool::new(workspace.clone(), Arc::new(Silent)));
        let rename: Arc<dyn Tool> = Arc::new(crate::RenameTool::new(workspace, Arc::new(Silent)));
        let asked =
            lsp.look(&serde_json::json!({"operation": "references", "path": "a.py", "line": 3, "symbol": "greet"}));
        assert_eq!(
            (asked.title.as_str(), asked.kind, asked.summary.as_str()),
            ("references of `greet`", ToolKind::Search, "references greet a.py")
        );
        assert_eq!(asked.locations, [ToolLocation { path: "a.py".into(), line: Some(3) }]);
        let renamed =
            rename.look(&serde_json::json!({"path": "a.py", "line": 1, "symbol": "greet", "new_name": "welcome"}));
        assert_eq!(
            (renamed.title.as_str(), renamed.kind, renamed.summary.as_str()),
            ("Rename `greet` to `welcome`", ToolKind::Edit, "greet → welcome a.py")
        );
        assert_eq!(
            rename.look(&serde_json::json!({})).summary,
            "? → ?",
            "a call without arguments still looks like a rename"
        );
    }

    #[test]
    fn the_column_is_the_symbol_as_a_whole_word() {
        assert_eq!(column_of("    def greet(self, greeting):", "greet"), Some(8));
        assert_eq!(column_of("x = greeting + greet()", "greet"), Some(15));
        assert_eq!(column_of("let größe = größe_x;", "größe"), Some(4));
        assert_eq!(column_of("foo_bar()", "bar"), Some(4), "no whole word: the first occurrence");
        assert_eq!(column_of("abc", "x"), None);
    }
}
