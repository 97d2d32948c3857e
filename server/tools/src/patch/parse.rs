//! Reading the Codex patch format that OpenAI's coding models are trained on:
//!
//! ```text
//! *** Begin Patch
//! *** Update File: src/app.py
//! @@ def main():
//! -    print("hi")
//! +    print("hello")
//! *** Add File: docs/new.md
//! +# New
//! *** Delete File: old.txt
//! *** Update File: a.py
//! *** Move to: b.py
//! @@
//! -x = 1
//! +x = 2
//! *** End Patch
//! ```
//!
//! Strict where a mistake would change the meaning, forgiving where it cannot: markers are
//! matched ignoring case and surrounding spaces, a missing `*** End Patch`, a heredoc or Markdown
//! fence around the patch, CRLF line endings, unified-diff `@@ -1,2 +1,2 @@` headers and context
//! lines that lost their leading space are all accepted; anything else is an error naming the
//! line of the patch.

use std::fmt;

/// A parsed patch: what to do to each file, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Patch {
    pub files: Vec<FileOp>,
}

/// One file section of a patch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FileOp {
    /// `*** Add File:` — the new file's whole text.
    Add { path: String, text: String, line: usize },
    /// `*** Delete File:`.
    Delete { path: String, line: usize },
    /// `*** Update File:`, maybe `*** Move to:`, and the hunks (none for a pure move).
    Update { path: String, move_to: Option<String>, hunks: Vec<Hunk>, line: usize },
}

/// One `@@` section of an update.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Hunk {
    /// The text after `@@` (usually a function or class line), in order: each is looked for
    /// after the one before, and the hunk after the last.
    pub anchors: Vec<String>,
    pub lines: Vec<HunkLine>,
    /// `*** End of File`: the hunk's lines end the file.
    pub end_of_file: bool,
    /// The 1-based line of the patch the hunk starts on.
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HunkLine {
    Context(String),
    Remove(String),
    Add(String),
}

/// Why a patch could not be read, at which line of it (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {} of the patch: {}", self.line, self.message)
    }
}

const BEGIN: &str = "*** begin patch";
const END: &str = "*** end patch";
const END_OF_FILE: &str = "*** end of file";

/// A line of the patch classified by its marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker<'a> {
    Add(&'a str),
    Delete(&'a str),
    Update(&'a str),
    MoveTo(&'a str),
    EndOfFile,
    End,
    /// A line starting `***` that is none of the above.
    Unknown,
}

impl Hunk {
    /// The hunk's lines as they are in the file now (context and removed lines).
    pub(crate) fn old_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|line| match line {
            HunkLine::Context(text) | HunkLine::Remove(text) => Some(text.as_str()),
            HunkLine::Add(_) => None,
        })
    }

    /// The hunk's lines as they should be (context and added lines).
    pub(crate) fn new_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|line| match line {
            HunkLine::Context(text) | HunkLine::Add(text) => Some(text.as_str()),
            HunkLine::Remove(_) => None,
        })
    }
}

impl FileOp {
    pub(crate) fn path(&self) -> &str {
        match self {
            FileOp::Add { path, .. } | FileOp::Delete { path, .. } | FileOp::Update { path, .. } => path,
        }
    }

    /// Every path the section names: its file, and where an update moves it.
    pub(crate) fn paths(&self) -> Vec<&str> {
        match self {
            FileOp::Update { path, move_to: Some(to), .. } => vec![path, to],
            other => vec![other.path()],
        }
    }

    /// The 1-based line of the patch the section starts on.
    pub(crate) fn line(&self) -> usize {
        match self {
            FileOp::Add { line, .. } | FileOp::Delete { line, .. } | FileOp::Update { line, .. } => *line,
        }
    }
}

/// Parses `input`, the `apply_patch` tool's argument.
pub(crate) fn parse(input: &str) -> Result<Patch, ParseError> {
    let mut text = input.replace("\r\n", "\n");
    // A patch escaped twice arrives as one line with `\n` spelled out.
    if !text.trim().contains('\n') && text.contains("\\n") {
        text = unescape(&text);
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let (first, last) = body_bounds(&lines)?;
    let mut parser = Parser { lines: &lines, at: first, end: last, files: Vec::new() };
    parser.run()?;
    if parser.files.is_empty() {
        return Err(ParseError {
            line: first + 1,
            message: "the patch has no file sections; start one with *** Update File: PATH, *** Add File: PATH or *** Delete File: PATH".to_string(),
        });
    }
    Ok(Patch { files: parser.files })
}

/// `text` with `\n`, `\t`, `\"` and `\\` read as the characters they stand for.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The range of lines between `*** Begin Patch` and `*** End Patch` (or the end of the input),
/// after taking off a heredoc or a Markdown fence the model wrapped the patch in.
fn body_bounds(lines: &[&str]) -> Result<(usize, usize), ParseError> {
    let mut first = lines.iter().position(|line| !line.trim().is_empty()).unwrap_or(lines.len());
    let mut last = lines.iter().rposition(|line| !line.trim().is_empty()).map_or(first, |at| at + 1);
    if first == last {
        return Err(ParseError { line: 1, message: "the patch is empty; it starts with *** Begin Patch".to_string() });
    }
    // `apply_patch <<'EOF'` … `EOF`, or ```diff … ```: as a shell or a chat would have it.
    let opening = lines[first].trim();
    let heredoc = opening.trim_start_matches("apply_patch").trim_start().starts_with("<<");
    if heredoc || opening.starts_with("```") {
        first += 1;
        let closing = lines[last - 1].trim();
        if last - 1 > first
            && (closing == "```" || (heredoc && closing.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_')))
        {
            last -= 1;
        }
    }
    while first < last && lines[first].trim().is_empty() {
        first += 1;
    }
    if first < last && lines[first].trim().eq_ignore_ascii_case(BEGIN) {
        first += 1;
    } else if !lines
        .get(first)
        .is_some_and(|line| matches!(marker(line), Some(Marker::Add(_) | Marker::Delete(_) | Marker::Update(_))))
    {
        return Err(ParseError {
            line: first + 1,
            message: format!(
                "expected *** Begin Patch, found {:?}; the patch starts with *** Begin Patch and a file section",
                lines.get(first).copied().unwrap_or("")
            ),
        });
    }
    Ok((first, last))
}

/// The marker `line` starts with, if it is a `***` line.
fn marker(line: &str) -> Option<Marker<'_>> {
    let trimmed = line.trim();
    if !trimmed.starts_with("***") {
        return None;
    }
    let lower = trimmed.to_ascii_lowercase();
    let after = |prefix: &str| {
        lower.strip_prefix(prefix).map(|_| trimmed[prefix.len()..].trim().trim_start_matches(':').trim())
    };
    Some(if lower == END {
        Marker::End
    } else if lower == END_OF_FILE {
        Marker::EndOfFile
    } else if let Some(path) = after("*** add file") {
        Marker::Add(unquote(path))
    } else if let Some(path) = after("*** delete file") {
        Marker::Delete(unquote(path))
    } else if let Some(path) = after("*** update file") {
        Marker::Update(unquote(path))
    } else if let Some(path) = after("*** move to") {
        Marker::MoveTo(unquote(path))
    } else {
        Marker::Unknown
    })
}

/// A path without the quotes or backticks a model may put around it.
fn unquote(path: &str) -> &str {
    for quote in ['`', '"', '\''] {
        if let Some(inner) = path.strip_prefix(quote).and_then(|rest| rest.strip_suffix(quote)) {
            return inner.trim();
        }
    }
    path
}

struct Parser<'a> {
    lines: &'a [&'a str],
    /// The next line to read (0-based).
    at: usize,
    /// One past the last line of the body.
    end: usize,
    files: Vec<FileOp>,
}

impl<'a> Parser<'a> {
    fn error(&self, at: usize, message: impl Into<String>) -> ParseError {
        ParseError { line: at + 1, message: message.into() }
    }

    fn run(&mut self) -> Result<(), ParseError> {
        while self.at < self.end {
            let at = self.at;
            let line = self.lines[at];
            self.at += 1;
            if line.trim().is_empty() {
                continue;
            }
            match marker(line) {
                Some(Marker::End) => return self.after_end(),
                Some(Marker::Add(path)) => {
                    let path = self.path(at, path, "Add File")?;
                    let text = self.added_text()?;
                    self.files.push(FileOp::Add { path, text, line: at + 1 });
                }
                Some(Marker::Delete(path)) => {
                    let path = self.path(at, path, "Delete File")?;
                    self.files.push(FileOp::Delete { path, line: at + 1 });
                }
                Some(Marker::Update(path)) => {
                    let path = self.path(at, path, "Update File")?;
                    let move_to =
                        match self.lines.get(self.at).filter(|_| self.at < self.end).and_then(|next| marker(next)) {
                            Some(Marker::MoveTo(to)) => {
                                let to = self.path(self.at, to, "Move to")?;
                                self.at += 1;
                                Some(to)
                            }
                            _ => None,
                        };
                    let hunks = self.hunks(&path)?;
                    if hunks.is_empty() && move_to.is_none() {
                        return Err(self.error(
                            at,
                            format!("*** Update File: {path} has no hunks; add @@ sections with the lines to change"),
                        ));
                    }
                    self.files.push(FileOp::Update { path, move_to, hunks, line: at + 1 });
                }
                Some(Marker::MoveTo(_)) => {
                    return Err(self.error(
                        at,
                        "*** Move to: must come right after the *** Update File: line of the file it moves",
                    ));
                }
                Some(Marker::EndOfFile) => {
                    return Err(self.error(at, "*** End of File must end a hunk of an *** Update File section"));
                }
                Some(Marker::Unknown) | None => {
                    return Err(self.error(
                        at,
                        format!("expected a file section (*** Update File: PATH, *** Add File: PATH, *** Delete File: PATH) or *** End Patch, found {line:?}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// After `*** End Patch`: only blank lines may follow.
    fn after_end(&mut self) -> Result<(), ParseError> {
        match (self.at..self.end).find(|&at| !self.lines[at].trim().is_empty()) {
            Some(at) => Err(self.error(at, "text after *** End Patch; put every file section before it, in one patch")),
            None => Ok(()),
        }
    }

    fn path(&self, at: usize, path: &str, what: &str) -> Result<String, ParseError> {
        if path.is_empty() {
            return Err(self.error(at, format!("*** {what}: needs a path")));
        }
        Ok(path.to_string())
    }

    /// The `+` lines of an `*** Add File` section, as the file's text. Blank lines inside count as
    /// empty lines; blank lines before the next section do not.
    fn added_text(&mut self) -> Result<String, ParseError> {
        let mut lines: Vec<&str> = Vec::new();
        let mut blanks = 0;
        while self.at < self.end && marker(self.lines[self.at]).is_none() {
            let line = self.lines[self.at];
            if let Some(content) = line.strip_prefix('+') {
                lines.extend(std::iter::repeat_n("", blanks));
                blanks = 0;
                lines.push(content);
            } else if line.trim().is_empty() {
                blanks += 1;
            } else {
                return Err(self.error(
                    self.at,
                    format!("every line of an added file starts with '+', but this one does not: {line:?}"),
                ));
            }
            self.at += 1;
        }
        Ok(lines.iter().map(|line| format!("{line}\n")).collect())
    }

    /// The hunks of an `*** Update File` section, up to the next marker that is not
    /// `*** End of File`.
    fn hunks(&mut self, path: &str) -> Result<Vec<Hunk>, ParseError> {
        let mut hunks: Vec<Hunk> = Vec::new();
        let mut current = Hunk { line: self.at + 1, ..Hunk::default() };
        // Empty lines seen but not yet known to be context: dropped if the hunk ends after them.
        let mut blanks = 0;
        let finish = |current: &mut Hunk, hunks: &mut Vec<Hunk>, next_line: usize| -> Result<(), ParseError> {
            let hunk = std::mem::replace(current, Hunk { line: next_line, ..Hunk::default() });
            if hunk.lines.is_empty() {
                if hunk.anchors.is_empty() && !hunk.end_of_file {
                    return Ok(());
                }
                return Err(ParseError {
                    line: hunk.line,
                    message: format!(
                        "a hunk of {path} has no lines; under its @@ line, give the lines to change with ' ', '-' and '+'"
                    ),
                });
            }
            if !hunk.lines.iter().any(|line| !matches!(line, HunkLine::Context(_))) {
                return Err(ParseError {
                    line: hunk.line,
                    message: format!(
                        "a hunk of {path} has only context lines, so it changes nothing; mark removed lines with '-' and added ones with '+'"
                    ),
                });
            }
            hunks.push(hunk);
            Ok(())
        };
        while self.at < self.end {
            let at = self.at;
            let line = self.lines[at];
            match marker(line) {
                Some(Marker::EndOfFile) => {
                    current.end_of_file = true;
                    self.at += 1;
                    blanks = 0;
                    finish(&mut current, &mut hunks, self.at + 1)?;
                    continue;
                }
                Some(_) => break,
                None => {}
            }
            self.at += 1;
            if let Some(header) = line.strip_prefix("@@") {
                blanks = 0;
                if !current.lines.is_empty() || current.end_of_file {
                    finish(&mut current, &mut hunks, at + 1)?;
                }
                if current.anchors.is_empty() {
                    current.line = at + 1;
                }
                if let Some(anchor) = anchor_of(header) {
                    current.anchors.push(anchor);
                }
                continue;
            }
            if line.is_empty() || line.starts_with("\\ ") {
                // An empty line is an empty context line, unless it only separates hunks;
                // `\ No newline at end of file` is diff's note, not a line.
                blanks += usize::from(line.is_empty());
                continue;
            }
            for _ in 0..std::mem::take(&mut blanks) {
                current.lines.push(HunkLine::Context(String::new()));
            }
            let hunk_line = match line.as_bytes()[0] {
                b' ' => HunkLine::Context(line[1..].to_string()),
                b'-' => HunkLine::Remove(line[1..].to_string()),
                b'+' => HunkLine::Add(line[1..].to_string()),
                // A context line that lost its leading space: the matcher checks it like any other.
                _ => HunkLine::Context(line.to_string()),
            };
            current.lines.push(hunk_line);
        }
        finish(&mut current, &mut hunks, self.at + 1)?;
        Ok(hunks)
    }
}

/// The anchor text of an `@@` line (after the `@@`): `None` for a bare `@@` and for the numbers of
/// a unified-diff header, whose trailing text (a function, as git writes it) is the anchor.
fn anchor_of(header: &str) -> Option<String> {
    let header = header.trim();
    let header = match header.strip_prefix('-') {
        Some(rest) if rest.starts_with(|ch: char| ch.is_ascii_digit()) => match rest.find("@@") {
            Some(close) => rest[close + 2..].trim(),
            None => "",
        },
        _ => header.strip_suffix("@@").map_or(header, str::trim_end),
    };
    (!header.is_empty()).then(|| header.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `input` and renders it compactly, or the error.
    fn check(input: &str, expected: &str) {
        let actual = match parse(input) {
            Ok(patch) => patch.files.iter().map(render).collect::<Vec<_>>().join("\n"),
            Err(err) => format!("error: {err}"),
        };
        assert_eq!(actual, expected, "\n{actual}");
    }

    fn render(op: &FileOp) -> String {
        match op {
            FileOp::Add { path, text, line } => format!("{line}: add {path} {text:?}"),
            FileOp::Delete { path, line } => format!("{line}: delete {path}"),
            FileOp::Update { path, move_to, hunks, line } => {
                let mut out = format!("{line}: update {path}");
                if let Some(to) = move_to {
                    out.push_str(&format!(" -> {to}"));
                }
                for hunk in hunks {
                    out.push_str(&format!(
                        "\n  {}: @@ {:?}{}",
                        hunk.line,
                        hunk.anchors,
                        if hunk.end_of_file { " eof" } else { "" }
                    ));
                    for line in &hunk.lines {
                        out.push_str(&match line {
                            HunkLine::Context(text) => format!("\n    ={text:?}"),
                            HunkLine::Remove(text) => format!("\n    -{text:?}"),
                            HunkLine::Add(text) => format!("\n    +{text:?}"),
                        });
                    }
                }
                out
            }
        }
    }

    #[test]
    fn reads_every_kind_of_section() {
        check(
            "*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    print(\"hi\")\n+    print(\"hello\")\n*** Add File: docs/new.md\n+# New\n*** Delete File: old.txt\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n",
            "2: update src/app.py\n  3: @@ [\"def main():\"]\n    -\"    print(\\\"hi\\\")\"\n    +\"    print(\\\"hello\\\")\"\n6: add docs/new.md \"# New\\n\"\n8: delete old.txt\n9: update a.py -> b.py\n  11: @@ []\n    -\"x = 1\"\n    +\"x = 2\"",
        );
    }

    #[test]
    fn forgives_what_cannot_change_the_meaning() {
        // No End Patch, CRLF, padded and lower-case markers, a quoted path.
        check(
            "  *** begin patch  \r\n*** update file:  `a.py` \r\n@@\r\n-x\r\n+y\r\n",
            "2: update a.py\n  3: @@ []\n    -\"x\"\n    +\"y\"",
        );
        // A heredoc, a fence, a unified-diff header with git's function context, a stacked anchor.
        check(
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.py\n@@ -10,2 +10,2 @@ class A:\n@@ def f(self):\n-x\n+y\n*** End Patch\nEOF\n",
            "3: update a.py\n  4: @@ [\"class A:\", \"def f(self):\"]\n    -\"x\"\n    +\"y\"",
        );
        check("```diff\n*** Begin Patch\n*** Delete File: a.py\n*** End Patch\n```", "3: delete a.py");
        // Escaped twice: one line with the line breaks spelled out.
        check(
            r#"*** Begin Patch\n*** Update File: a.py\n@@\n-say(\"a\")\n+say(\"b\")\n*** End Patch"#,
            "2: update a.py\n  3: @@ []\n    -\"say(\\\"a\\\")\"\n    +\"say(\\\"b\\\")\"",
        );
        // The first hunk may start without @@; a context line that lost its space is context.
        check(
            "*** Begin Patch\n*** Update File: a.py\n import os\nimport sys\n+import re\n*** End Patch",
            "2: update a.py\n  3: @@ []\n    =\"import os\"\n    =\"import sys\"\n    +\"import re\"",
        );
    }

    #[test]
    fn empty_lines_are_context_inside_a_hunk_and_separators_between() {
        check(
            "*** Begin Patch\n*** Update File: a.py\n@@\n a\n\n-b\n+c\n\n@@ def g():\n-d\n+e\n*** End of File\n\n*** Add File: n.txt\n+1\n\n+3\n\n*** End Patch",
            "2: update a.py\n  3: @@ []\n    =\"a\"\n    =\"\"\n    -\"b\"\n    +\"c\"\n  9: @@ [\"def g():\"] eof\n    -\"d\"\n    +\"e\"\n14: add n.txt \"1\\n\\n3\\n\"",
        );
    }

    #[test]
    fn refuses_what_it_cannot_read_naming_the_line() {
        check(
            "hello",
            r#"error: line 1 of the patch: expected *** Begin Patch, found "hello"; the patch starts with *** Begin Patch and a file section"#,
        );
        check("", "error: line 1 of the patch: the patch is empty; it starts with *** Begin Patch");
        check(
            "*** Begin Patch\n*** End Patch",
            "error: line 2 of the patch: the patch has no file sections; start one with *** Update File: PATH, *** Add File: PATH or *** Delete File: PATH",
        );
        check(
            "*** Begin Patch\n*** Update File: a.py\n*** End Patch",
            "error: line 2 of the patch: *** Update File: a.py has no hunks; add @@ sections with the lines to change",
        );
        check(
            "*** Begin Patch\n*** Add File: n.txt\nx\n",
            r#"error: line 3 of the patch: every line of an added file starts with '+', but this one does not: "x""#,
        );
        check(
            "*** Begin Patch\n*** Update File: a.py\n@@ def f():\n a\n b\n*** End Patch",
            "error: line 3 of the patch: a hunk of a.py has only context lines, so it changes nothing; mark removed lines with '-' and added ones with '+'",
        );
        check(
            "*** Begin Patch\n*** Update File: a.py\n@@ def f():\n@@ def g():\n*** End Patch",
            "error: line 3 of the patch: a hunk of a.py has no lines; under its @@ line, give the lines to change with ' ', '-' and '+'",
        );
        check(
            "*** Begin Patch\n*** Frobnicate: a\n",
            r#"error: line 2 of the patch: expected a file section (*** Update File: PATH, *** Add File: PATH, *** Delete File: PATH) or *** End Patch, found "*** Frobnicate: a""#,
        );
        check(
            "*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Delete File: b",
            "error: line 4 of the patch: text after *** End Patch; put every file section before it, in one patch",
        );
        check(
            "*** Begin Patch\n*** Move to: b\n",
            "error: line 2 of the patch: *** Move to: must come right after the *** Update File: line of the file it moves",
        );
        check("*** Begin Patch\n*** Delete File:\n", "error: line 2 of the patch: *** Delete File: needs a path");
    }
}
