//! The problems the editor knows of — what its language servers and linters report in each file —
//! as the agent sees them: the [`DiagnosticSource`] a protocol layer implements (an editor that
//! answers `reins/diagnostics`), the read-only `diagnostics` tool over it, one line per problem in
//! the format compilers print, and the reader of that format ([`parse_problems`], for a
//! configured command's output).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::{Proposal, ToolContext, ToolError, ToolLook, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{Workspace, display_path, workspace_error};

/// How long the tool waits for the editor.
const TOOL_TIMEOUT: Duration = Duration::from_secs(5);
/// Problems one tool result shows at most.
const MAX_SHOWN: usize = 100;
/// Characters of one problem's message kept (a language server's message may hold pages of notes).
const MAX_MESSAGE_CHARS: usize = 400;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

/// One problem in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    pub severity: Severity,
    /// Who reports it: `rustc`, `eslint`, `Pyflakes`.
    pub source: Option<String>,
    pub code: Option<String>,
    pub message: String,
}

/// The problems of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiagnostics {
    /// Absolute.
    pub path: PathBuf,
    pub diagnostics: Vec<Diagnostic>,
}

/// Where the editor's diagnostics come from: the editor itself, through its protocol layer.
#[async_trait]
pub trait DiagnosticSource: Send + Sync {
    /// Whether the editor answers at all (its client said it can).
    fn available(&self) -> bool;
    /// The diagnostics of `paths` (absolute), or of every file open in the editor when `None`,
    /// without reins's own. A file the editor does not have open is left out of the answer: its
    /// problems are unknown, not absent. Fails when the editor does not answer within `timeout`.
    async fn diagnostics(&self, paths: Option<&[PathBuf]>, timeout: Duration) -> Result<Vec<FileDiagnostics>, String>;
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }

    /// A compiler's word for it: `error`, `fatal error`, `warning`, `note`, `info`, `hint`, `help`.
    fn parse(word: &str) -> Option<Self> {
        match word.to_ascii_lowercase().as_str() {
            "error" | "fatal error" | "fatal" => Some(Severity::Error),
            "warning" | "warn" => Some(Severity::Warning),
            "note" | "info" | "information" => Some(Severity::Information),
            "hint" | "help" => Some(Severity::Hint),
            _ => None,
        }
    }
}

impl Diagnostic {
    /// The problem on one line, as compilers print it: `src/lib.rs:3:5: error[E0308]: mismatched
    /// types (rustc)`. The message goes on one line, cut if it is very long.
    pub fn line_for(&self, path: &str) -> String {
        let code = self.code.as_deref().map(|code| format!("[{code}]")).unwrap_or_default();
        let source = self.source.as_deref().map(|source| format!(" ({source})")).unwrap_or_default();
        let mut message = self.message.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
            message.truncate(cut);
            message.push('…');
        }
        format!("{path}:{}:{}: {}{code}: {message}{source}", self.line, self.column, self.severity.as_str())
    }

    /// What makes two reports the same problem wherever an edit moved it: everything but the
    /// position.
    pub fn identity(&self) -> (Severity, Option<&str>, Option<&str>, &str) {
        (self.severity, self.source.as_deref(), self.code.as_deref(), self.message.trim())
    }

    /// An error, or a warning when `warnings` are wanted too.
    pub fn is_reported(&self, warnings: bool) -> bool {
        self.severity == Severity::Error || (warnings && self.severity == Severity::Warning)
    }
}

/// The problems in a compiler's or linter's output, in order: every line of the form
/// `path:line:col: severity: message` (or `path:line: severity: message`), where the severity
/// may carry a code (`error[E0308]`). Other lines (context, summaries) are skipped; color codes
/// are ignored. Paths are as printed.
pub fn parse_problems(output: &str) -> Vec<(String, Diagnostic)> {
    output.lines().filter_map(|line| parse_line(&strip_ansi(line))).collect()
}

fn parse_line(line: &str) -> Option<(String, Diagnostic)> {
    let line = line.trim_end();
    // The path ends at the first `:` followed by a line number and another `:`.
    for (colon, _) in line.match_indices(':') {
        let path = &line[..colon];
        if path.trim().is_empty() || path.starts_with(' ') {
            continue;
        }
        let Some((line_number, rest)) = number_then_colon(&line[colon + 1..]) else { continue };
        let (column, rest) = number_then_colon(rest).unwrap_or((1, rest));
        let Some((severity, code, message)) = severity_and_message(rest) else { continue };
        let diagnostic = Diagnostic {
            line: line_number.max(1),
            column: column.max(1),
            severity,
            source: None,
            code,
            message: message.to_string(),
        };
        return Some((path.to_string(), diagnostic));
    }
    None
}

/// `12:rest` → (12, `rest`).
fn number_then_colon(text: &str) -> Option<(u32, &str)> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let number = text[..digits].parse().ok()?;
    Some((number, text[digits..].strip_prefix(':')?))
}

/// ` error[E0308]: message` → (error, E0308, `message`).
fn severity_and_message(text: &str) -> Option<(Severity, Option<String>, &str)> {
    let (word, message) = text.trim_start().split_once(':')?;
    let (word, code) = match word.split_once('[') {
        Some((word, code)) => (word, Some(code.strip_suffix(']')?.to_string())),
        None => (word, None),
    };
    let message = message.trim();
    if message.is_empty() {
        return None;
    }
    Some((Severity::parse(word.trim())?, code, message))
}

/// `line` without ANSI color sequences (`ESC [ … m`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DiagnosticsInput {
    /// Default: every file open in the editor.
    pub paths: Option<Vec<String>>,
}

/// `diagnostics`: the errors and warnings the editor reports, of some files or of all it has open.
pub struct DiagnosticsTool {
    workspace: Arc<dyn Workspace>,
    source: Arc<dyn DiagnosticSource>,
}

impl DiagnosticsTool {
    pub fn new(workspace: Arc<dyn Workspace>, source: Arc<dyn DiagnosticSource>) -> Self {
        Self { workspace, source }
    }
}

#[async_trait]
impl TypedTool for DiagnosticsTool {
    type Input = DiagnosticsInput;
    const NAME: &'static str = "diagnostics";
    const READ_ONLY: bool = true;

    fn look(&self, arguments: &Value) -> ToolLook {
        let paths: Vec<&str> = arguments
            .get("paths")
            .and_then(Value::as_array)
            .map(|paths| paths.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        ToolLook { title: Self::NAME.to_string(), summary: paths.join(", "), ..ToolLook::default() }
    }
    fn description(&self) -> String {
        format!(
            "Errors and warnings the editor's language servers and linters report for the given files, \
             or for every open file: `path:line:col: severity: message (source)`, at most {MAX_SHOWN}."
        )
    }

    async fn execute(
        &self,
        input: DiagnosticsInput,
        _proposal: Option<Proposal>,
        _cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let asked = match &input.paths {
            Some(paths) if !paths.is_empty() => Some(
                paths
                    .iter()
                    .map(|path| self.workspace.resolve(path))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(workspace_error)?,
            ),
            _ => None,
        };
        let files = self.source.diagnostics(asked.as_deref(), TOOL_TIMEOUT).await.map_err(ToolError::new)?;
        // Only what lies inside the workspace: the editor may have other files open.
        let files: Vec<FileDiagnostics> =
            files.into_iter().filter(|file| self.workspace.is_inside(&file.path)).collect();
        Ok(ToolOutput::text(self.report(asked.as_deref(), &files)))
    }
}

impl DiagnosticsTool {
    fn report(&self, asked: Option<&[PathBuf]>, files: &[FileDiagnostics]) -> String {
        let cwd = self.workspace.cwd();
        let shown = |path: &Path| display_path(path, &cwd);
        let mut lines: Vec<(&Path, &Diagnostic)> = files
            .iter()
            .flat_map(|file| file.diagnostics.iter().map(|diagnostic| (file.path.as_path(), diagnostic)))
            .filter(|(_, diagnostic)| diagnostic.is_reported(true))
            .collect();
        lines.sort_by_key(|(path, diagnostic)| (*path, diagnostic.line, diagnostic.column));
        let unchecked: Vec<String> = asked
            .unwrap_or_default()
            .iter()
            .filter(|path| !files.iter().any(|file| &file.path == *path))
            .map(|path| shown(path))
            .collect();
        let mut out = if lines.is_empty() {
            let checked: Vec<String> = asked
                .unwrap_or_default()
                .iter()
                .filter(|path| files.iter().any(|file| &file.path == *path))
                .map(|path| shown(path))
                .collect();
            match (asked, checked.is_empty()) {
                // The editor leaves out files nothing checks: their problems are unknown.
                (None, _) if files.is_empty() => {
                    "The editor has no diagnostics: no language server or linter reports on the files open in it."
                        .to_string()
                }
                (None, _) => "No errors or warnings in the files open in the editor.".to_string(),
                (Some(_), false) => format!("No errors or warnings in {}.", checked.join(", ")),
                (Some(_), true) => String::new(),
            }
        } else {
            let total = lines.len();
            let mut out: Vec<String> =
                lines.iter().take(MAX_SHOWN).map(|(path, diagnostic)| diagnostic.line_for(&shown(path))).collect();
            if total > MAX_SHOWN {
                out.push(format!("[Showing {MAX_SHOWN} of {total} problems. Ask for fewer paths to see the rest.]"));
            }
            out.join("\n")
        };
        if !unchecked.is_empty() {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&format!(
                "[The editor has no diagnostics for: {} (not open in it, or nothing there checks it).]",
                unchecked.join(", ")
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check_parse(output: &str, expected: Expect) {
        let lines: Vec<String> = parse_problems(output).iter().map(|(path, d)| d.line_for(path)).collect();
        expected.assert_eq(&lines.join("\n"));
    }

    #[test]
    fn compiler_lines_are_read_and_the_rest_skipped() {
        check_parse(
            "    Checking demo v0.1.0 (/w)\n\
             src/main.rs:2:13: error[E0308]: mismatched types: expected `u32`, found `&str`\n\
             src/lib.rs:1:4: warning: function `a` is never used\n\
             \x1b[1m\x1b[31merror\x1b[0m: could not compile `demo` (bin \"demo\") due to 1 previous error\n\
             a.c:3:5: fatal error: stdio.h: No such file or directory\n\
             a.c:4:1: note: each undeclared identifier is reported only once\n\
             lint.py:7: Warning: unused import\n\
             dir with: colon/x.rs:9:2: error: odd path\n\
             notes.txt:3: this is grep output, not a problem\n\
             \x1b[1msrc/ansi.rs:5:1: \x1b[31merror\x1b[0m: colored\n\
             x.rs:1:1: error:\n",
            expect![[r#"
                src/main.rs:2:13: error[E0308]: mismatched types: expected `u32`, found `&str`
                src/lib.rs:1:4: warning: function `a` is never used
                a.c:3:5: error: stdio.h: No such file or directory
                a.c:4:1: info: each undeclared identifier is reported only once
                lint.py:7:1: warning: unused import
                dir with: colon/x.rs:9:2: error: odd path
                src/ansi.rs:5:1: error: colored"#]],
        );
    }

    #[test]
    fn an_editor_that_checks_nothing_is_not_taken_for_one_that_found_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let workspace: Arc<dyn Workspace> = Arc::new(crate::FsWorkspace::new(vec![dir.path().to_path_buf()]).unwrap());
        struct Editor;
        #[async_trait]
        impl DiagnosticSource for Editor {
            fn available(&self) -> bool {
                true
            }
            async fn diagnostics(&self, _: Option<&[PathBuf]>, _: Duration) -> Result<Vec<FileDiagnostics>, String> {
                Ok(Vec::new())
            }
        }
        let tool = DiagnosticsTool::new(workspace, Arc::new(Editor));
        assert_eq!(
            tool.report(None, &[]),
            "The editor has no diagnostics: no language server or linter reports on the files open in it."
        );
        let clean = [FileDiagnostics { path: dir.path().join("a.rs"), diagnostics: Vec::new() }];
        assert_eq!(tool.report(None, &clean), "No errors or warnings in the files open in the editor.");
    }

    #[test]
    fn a_problem_is_one_line_with_its_code_and_source() {
        let diagnostic = Diagnostic {
            line: 3,
            column: 5,
            severity: Severity::Error,
            source: Some("rustc".into()),
            code: Some("E0308".into()),
            message: "mismatched types\n  expected `u32`\n  found `&str`".into(),
        };
        assert_eq!(
            diagnostic.line_for("src/lib.rs"),
            "src/lib.rs:3:5: error[E0308]: mismatched types expected `u32` found `&str` (rustc)"
        );
        let long = Diagnostic { message: "x".repeat(1000), code: None, source: None, ..diagnostic };
        assert_eq!(long.line_for("a").chars().count(), "a:3:5: error: ".len() + MAX_MESSAGE_CHARS + 1);
    }
}
