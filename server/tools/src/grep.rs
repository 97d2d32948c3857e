//! `grep`: searches file contents with ripgrep's own crates. The walk respects `.gitignore` (with
//! or without a git repository) and skips hidden and binary files; an open editor buffer is
//! searched instead of its file on disk, so results match what the user sees.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use reins_agent::{
    Proposal, ToolContext, ToolError, ToolKind, ToolLocation, ToolLook, ToolOutput, TypedTool, string_argument,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::find::FileMatcher;
use crate::truncate::{MAX_BYTES, format_size, truncate_head};
use crate::{Workspace, display_path, workspace_error};

const DEFAULT_LIMIT: usize = 100;
const MAX_LINE_CHARS: usize = 500;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepInput {
    /// Rust regex, one line at a time; plain text with `literal`.
    pub pattern: String,
    /// File or directory; default: the working directory.
    pub path: Option<String>,
    /// Only files matching this glob (`*.rs`, `src/**/*.ts`).
    pub glob: Option<String>,
    pub ignore_case: Option<bool>,
    pub literal: Option<bool>,
    /// Lines shown around each match.
    pub context: Option<usize>,
    pub limit: Option<usize>,
}

pub struct GrepTool {
    workspace: Arc<dyn Workspace>,
}

impl GrepTool {
    pub fn new(workspace: Arc<dyn Workspace>) -> Self {
        Self { workspace }
    }
}

/// Everything one search needs, moved onto a blocking thread.
struct Search {
    workspace: Arc<dyn Workspace>,
    root: PathBuf,
    cwd: PathBuf,
    matcher: RegexMatcher,
    files: Option<FileMatcher>,
    context: usize,
    limit: usize,
    buffers: HashMap<PathBuf, String>,
    cancel: CancellationToken,
}

/// What a search found: output lines, and whether it stopped at the limit.
#[derive(Default)]
struct Found {
    lines: Vec<String>,
    matches: usize,
    more: bool,
}

/// Collects one file's matches and context lines in `path:line: text` / `path-line- text` form.
struct FileSink<'a> {
    shown: &'a str,
    /// Matches allowed before the search stops.
    budget: usize,
    lines: Vec<Line>,
    matches: usize,
    binary: bool,
    hit_limit: bool,
}

enum Line {
    Match(String),
    Before(String),
    After(String),
    Break,
}

#[async_trait]
impl TypedTool for GrepTool {
    type Input = GrepInput;
    const NAME: &'static str = "grep";
    const READ_ONLY: bool = true;

    fn look(&self, arguments: &Value) -> ToolLook {
        let (pattern, path) = (string_argument(arguments, "pattern"), string_argument(arguments, "path"));
        ToolLook {
            title: format!("Search for `{}` in {}", pattern.unwrap_or(""), path.unwrap_or(".")),
            kind: ToolKind::Search,
            locations: path.map(|path| vec![ToolLocation::new(path)]).unwrap_or_default(),
            summary: pattern.map(|pattern| format!("{pattern} {}", path.unwrap_or(""))).unwrap_or_default(),
        }
    }
    fn description(&self) -> String {
        format!(
            "Search file contents (unsaved editor changes included), respecting .gitignore and \
             skipping hidden and binary files. Prints `path:line: text` (context: `path-line- text`), \
             at most {DEFAULT_LIMIT} matches unless limit says otherwise; lines cut at \
             {MAX_LINE_CHARS} characters."
        )
    }

    async fn execute(
        &self,
        input: GrepInput,
        _proposal: Option<Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let root = self.workspace.resolve(input.path.as_deref().unwrap_or(".")).map_err(workspace_error)?;
        if !root.exists() {
            return Err(ToolError::new(format!("{} does not exist", display_path(&root, &self.workspace.cwd()))));
        }
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(input.ignore_case.unwrap_or(false))
            .fixed_strings(input.literal.unwrap_or(false))
            .line_terminator(Some(b'\n'))
            .build(&input.pattern)
            .map_err(|err| {
                ToolError::new(format!(
                    "invalid regular expression `{}`: {}. Set literal=true to search for the text as written.",
                    input.pattern,
                    regex_error_reason(&err.to_string())
                ))
            })?;
        let search = Search {
            files: input.glob.as_deref().map(FileMatcher::new).transpose()?,
            workspace: self.workspace.clone(),
            root,
            cwd: self.workspace.cwd(),
            matcher,
            context: input.context.unwrap_or(0),
            limit: input.limit.unwrap_or(DEFAULT_LIMIT).max(1),
            buffers: self.workspace.open_buffers().into_iter().collect(),
            cancel: cx.cancel.clone(),
        };
        let limit = search.limit;
        let found = tokio::task::spawn_blocking(move || search.run())
            .await
            .map_err(|err| ToolError::new(format!("grep failed: {err}")))?;
        if found.matches == 0 {
            return Ok(ToolOutput::text(format!("No matches found for {}", input.pattern)));
        }
        let mut output = found.lines.join("\n");
        let mut notices = Vec::new();
        let cut = truncate_head(&output, usize::MAX, MAX_BYTES);
        if cut.is_cut() {
            output = cut.kept.trim_end().to_string();
            notices.push(format!("[Output cut at {}. Narrow the pattern or path.]", format_size(MAX_BYTES)));
        }
        if found.more {
            notices.push(format!(
                "[Showing the first {limit} matches; there are more. Narrow the pattern, path or glob, or raise limit.]"
            ));
        }
        for notice in notices {
            output.push_str("\n\n");
            output.push_str(&notice);
        }
        Ok(ToolOutput::text(output))
    }
}

impl Search {
    fn run(self) -> Found {
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(b'\0'))
            .line_number(true)
            .before_context(self.context)
            .after_context(self.context)
            .build();
        let mut found = Found::default();
        let mut visited = HashSet::new();
        let walker = ignore::WalkBuilder::new(&self.root).require_git(false).sort_by_file_name(Ord::cmp).build();
        for entry in walker {
            if found.more || self.cancel.is_cancelled() {
                return found;
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    tracing::debug!("grep: skipping an unreadable entry: {err}");
                    continue;
                }
            };
            if entry.file_type().is_none_or(|file_type| file_type.is_dir()) || !self.wanted(entry.path()) {
                continue;
            }
            // The walk does not enter linked directories, but a linked file would be read
            // through: only when its target is inside the workspace.
            if entry.path_is_symlink() && !self.workspace.is_inside(entry.path()) {
                continue;
            }
            visited.insert(entry.path().to_path_buf());
            self.search_file(&mut searcher, entry.path(), &mut found);
        }
        // Buffers the editor has open but that are not on disk yet (new, unsaved files).
        let mut unsaved: Vec<&PathBuf> = self
            .buffers
            .keys()
            .filter(|path| !visited.contains(*path) && !path.exists() && path.starts_with(&self.root))
            .filter(|path| self.wanted(path))
            .collect();
        unsaved.sort();
        for path in unsaved {
            if found.more {
                break;
            }
            self.search_file(&mut searcher, path, &mut found);
        }
        found
    }

    /// Whether the glob (if any) admits `path`; a file named directly is always searched.
    fn wanted(&self, path: &Path) -> bool {
        match (&self.files, path.strip_prefix(&self.root)) {
            (None, _) => true,
            (Some(_), Ok(relative)) if relative.as_os_str().is_empty() => true,
            (Some(files), Ok(relative)) => files.is_match(relative),
            (Some(_), Err(_)) => false,
        }
    }

    fn search_file(&self, searcher: &mut Searcher, path: &Path, found: &mut Found) {
        let shown = crate::display_path(path, &self.cwd);
        let mut sink = FileSink {
            shown: &shown,
            budget: self.limit - found.matches,
            lines: Vec::new(),
            matches: 0,
            binary: false,
            hit_limit: false,
        };
        let result = match self.buffers.get(path) {
            Some(text) => searcher.search_slice(&self.matcher, text.as_bytes(), &mut sink),
            None => searcher.search_path(&self.matcher, path, &mut sink),
        };
        if let Err(err) = result {
            tracing::debug!("grep: cannot search {}: {err}", path.display());
            return;
        }
        if sink.binary {
            return;
        }
        if sink.hit_limit {
            // Before-context already collected for the match that was not taken.
            while matches!(sink.lines.last(), Some(Line::Before(_) | Line::Break)) {
                sink.lines.pop();
            }
            found.more = true;
        }
        if sink.matches > 0 && self.context > 0 && !found.lines.is_empty() {
            found.lines.push("--".to_string());
        }
        found.matches += sink.matches;
        found.lines.extend(sink.lines.into_iter().map(|line| match line {
            Line::Match(text) | Line::Before(text) | Line::After(text) => text,
            Line::Break => "--".to_string(),
        }));
    }
}

/// The reason line of a regex error. The full message quotes the pattern as grep-regex rewrote
/// it (`(?:fn ()`) with a caret under it, which would confuse more than help.
fn regex_error_reason(message: &str) -> &str {
    message.lines().rev().find_map(|line| line.trim().strip_prefix("error: ")).unwrap_or(message)
}

impl FileSink<'_> {
    fn format(&self, separator: char, line_number: Option<u64>, bytes: &[u8]) -> String {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let (text, cut) = reins_ai::cut_chars(text, MAX_LINE_CHARS);
        let ellipsis = if cut { "…" } else { "" };
        let number = line_number.unwrap_or(0);
        format!("{}{separator}{number}{separator} {text}{ellipsis}", self.shown)
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.matches == self.budget {
            self.hit_limit = true;
            return Ok(false);
        }
        self.matches += 1;
        let line = self.format(':', found.line_number(), found.bytes());
        self.lines.push(Line::Match(line));
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        let line = self.format('-', context.line_number(), context.bytes());
        self.lines.push(match context.kind() {
            grep_searcher::SinkContextKind::Before => Line::Before(line),
            _ => Line::After(line),
        });
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        if !self.lines.is_empty() {
            self.lines.push(Line::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}
