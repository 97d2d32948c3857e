//! Turning a matched span into its replacement bytes without touching what the model did not
//! change. The file is seen through an [`LfView`] (no BOM, CRLF folded to LF) with the way back to
//! its bytes. Within a span, `oldText`'s lines are aligned with the file's; lines the model
//! repeated unchanged in `newText` are copied from the file (its quotes, dashes, trailing spaces
//! and line endings), file lines the model did not quote (a blank line it left out, a stale
//! context line) stay, and only changed lines take `newText` — re-indented to the file when the
//! match ignored indentation, ending as the line they replace ends.

use std::ops::Range;

use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::matching::{Found, Normalisation, ascii_typography};
use super::reindent::IndentMap;

/// The file as matching sees it, and the way back to its bytes.
pub(crate) struct LfView<'a> {
    pub bom: &'a str,
    /// The file after the BOM, untouched.
    pub body: &'a str,
    /// `body` with every CRLF folded to LF.
    pub text: String,
    /// Offsets in `text` of the `\n`s that were `\r\n` in `body`, ascending.
    crlf_at: Vec<usize>,
    /// What a line gets when no neighbour says otherwise: the file's dominant line ending.
    line_ending: &'static str,
}

/// One span being rebuilt: the matched lines and the output so far.
struct Splice<'v, 'a> {
    view: &'v LfView<'a>,
    /// The matched lines, as ranges of `view.text`, each with its `\n` (the last maybe without).
    matched: Vec<Range<usize>>,
    /// Matched lines before this one are written or dropped.
    next_matched: usize,
    /// Where the line being replaced or inserted after starts, for its line ending.
    anchor: usize,
    keep_hard_breaks: bool,
    out: String,
}

impl<'a> LfView<'a> {
    pub(crate) fn new(original: &'a str) -> Self {
        let (bom, body) = match original.strip_prefix('\u{feff}') {
            Some(body) => ("\u{feff}", body),
            None => ("", original),
        };
        let mut text = String::with_capacity(body.len());
        let mut crlf_at = Vec::new();
        let mut lone_lf = 0;
        let mut rest = body;
        while let Some(at) = rest.find('\n') {
            match rest[..at].strip_suffix('\r') {
                Some(line) => {
                    text.push_str(line);
                    crlf_at.push(text.len());
                }
                None => {
                    text.push_str(&rest[..at]);
                    lone_lf += 1;
                }
            }
            text.push('\n');
            rest = &rest[at + 1..];
        }
        text.push_str(rest);
        let line_ending = if crlf_at.len() > lone_lf { "\r\n" } else { "\n" };
        LfView { bom, body, text, crlf_at, line_ending }
    }

    /// The `body` offset of `text` offset `at`: each folded CR before it shifts it by one, so a
    /// span ending after a `\n` takes its `\r` along and one ending before it leaves the pair.
    pub(crate) fn to_body(&self, at: usize) -> usize {
        at + self.crlf_at.partition_point(|&lf| lf < at)
    }

    /// The file's bytes for `text` range `range`.
    fn bytes(&self, range: Range<usize>) -> &'a str {
        &self.body[self.to_body(range.start)..self.to_body(range.end)]
    }

    /// How the line holding `text` offset `at` ends in the file (the dominant ending for a last
    /// line without one).
    fn ending_of_line_at(&self, at: usize) -> &'static str {
        match self.text[at..].find('\n') {
            Some(lf) if self.crlf_at.binary_search(&(at + lf)).is_ok() => "\r\n",
            Some(_) => "\n",
            None => self.line_ending,
        }
    }
}

/// The bytes that replace `span` for an edit found as `found`. With `keep_hard_breaks` (a
/// Markdown file), a changed line keeps the two trailing spaces of the line it replaces when the
/// model's copy of that line had dropped them.
pub(crate) fn replacement(view: &LfView, span: Range<usize>, found: &Found, keep_hard_breaks: bool) -> String {
    let old_lines: Vec<&str> = found.old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = found.new.split_inclusive('\n').collect();
    let mut splice = Splice {
        view,
        matched: line_ranges(&view.text, span.clone()),
        next_matched: 0,
        anchor: span.start,
        out: String::with_capacity(found.new.len()),
        keep_hard_breaks,
    };
    let aligned = splice.align(&old_lines);
    let indent = (found.normalisation == Normalisation::Indentation)
        .then(|| {
            let pairs: Vec<(&str, &str)> = aligned
                .iter()
                .enumerate()
                .filter_map(|(old, matched)| matched.map(|m| (old_lines[old], splice.line(m))))
                .collect();
            IndentMap::infer(&pairs, &found.old, &found.new, &view.text)
        })
        .flatten();
    for op in capture_diff_slices(Algorithm::Myers, &old_lines, &new_lines) {
        match op {
            DiffOp::Equal { old_index, len, .. } => {
                for matched in aligned[old_index..old_index + len].iter().flatten() {
                    splice.keep_through(*matched);
                }
            }
            DiffOp::Delete { old_index, old_len, .. } => {
                splice.drop_through(&aligned[old_index..old_index + old_len]);
            }
            DiffOp::Insert { new_index, new_len, .. } => {
                for new_line in &new_lines[new_index..new_index + new_len] {
                    splice.write_new(new_line, None, indent.as_ref());
                }
            }
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                let olds = old_index..old_index + old_len;
                let news = &new_lines[new_index..new_index + new_len];
                if old_len == new_len {
                    // Line for line: each new line takes the place (and ending) of its old one.
                    for (old, new_line) in olds.zip(news) {
                        let paired = aligned[old].map(|matched| {
                            splice.drop_through(&[Some(matched)]);
                            (old_lines[old], matched)
                        });
                        splice.write_new(new_line, paired, indent.as_ref());
                    }
                } else {
                    let first = aligned[olds.clone()].iter().flatten().next().copied();
                    if let Some(matched) = first {
                        splice.keep_before(matched);
                        splice.anchor = splice.matched[matched].start;
                    }
                    for new_line in news {
                        splice.write_new(new_line, None, indent.as_ref());
                    }
                    splice.drop_through(&aligned[olds]);
                }
            }
        }
    }
    splice.keep_before(splice.matched.len());
    splice.out
}

impl Splice<'_, '_> {
    fn line(&self, matched: usize) -> &str {
        &self.view.text[self.matched[matched].clone()]
    }

    /// For each of `old_lines`, the matched line it stands for: compared without surrounding
    /// whitespace and typography, so every loose normalisation aligns; lines only one side has
    /// (a blank line, a stale context line) align with nothing.
    fn align(&self, old_lines: &[&str]) -> Vec<Option<usize>> {
        let key = |line: &str| line.trim().chars().map(ascii_typography).collect::<String>();
        let old_keys: Vec<String> = old_lines.iter().map(|line| key(line)).collect();
        let matched_keys: Vec<String> = (0..self.matched.len()).map(|m| key(self.line(m))).collect();
        let mut aligned = vec![None; old_lines.len()];
        for op in capture_diff_slices(Algorithm::Myers, &old_keys, &matched_keys) {
            if let DiffOp::Equal { old_index, new_index, len } = op {
                for offset in 0..len {
                    aligned[old_index + offset] = Some(new_index + offset);
                }
            }
        }
        aligned
    }

    /// Copies the file's unquoted lines before `matched` (they were never the model's to drop).
    fn keep_before(&mut self, matched: usize) {
        for line in self.next_matched..matched {
            self.out.push_str(self.view.bytes(self.matched[line].clone()));
        }
        self.next_matched = self.next_matched.max(matched);
    }

    /// Copies the file's lines up to and including `matched`.
    fn keep_through(&mut self, matched: usize) {
        self.keep_before(matched + 1);
        self.anchor = self.matched[matched].start;
    }

    /// Drops the matched lines of deleted old lines, and unquoted file lines between them; file
    /// lines before the first are kept.
    fn drop_through(&mut self, aligned: &[Option<usize>]) {
        let mut matched_lines = aligned.iter().flatten();
        if let Some(&first) = matched_lines.next() {
            self.keep_before(first);
            self.anchor = self.matched[first].start;
            let last = matched_lines.last().copied().unwrap_or(first);
            self.next_matched = last + 1;
        }
    }

    /// Writes one line of `newText`: re-indented when `indent` says so, keeping a Markdown hard
    /// break (two trailing spaces) the model's copy of the line it replaces left out when
    /// `keep_hard_breaks`, and ending as the file's line at the anchor ends.
    fn write_new(&mut self, new_line: &str, paired: Option<(&str, usize)>, indent: Option<&IndentMap>) {
        let content = new_line.strip_suffix('\n').unwrap_or(new_line);
        let mut line = match indent {
            Some(map) => map.apply(content),
            None => content.to_string(),
        };
        if let Some((old_line, matched)) = paired {
            self.anchor = self.matched[matched].start;
            let file_line = self.line(matched);
            let file_content = file_line.strip_suffix('\n').unwrap_or(file_line);
            let file_trailing = &file_content[file_content.trim_end_matches(' ').len()..];
            let old_content = old_line.strip_suffix('\n').unwrap_or(old_line);
            let dropped = !old_content.ends_with(char::is_whitespace);
            if self.keep_hard_breaks
                && file_trailing.len() >= 2
                && dropped
                && !line.ends_with(char::is_whitespace)
                && !line.is_empty()
            {
                line.push_str(file_trailing);
            }
        }
        self.out.push_str(&line);
        if new_line.ends_with('\n') {
            self.out.push_str(self.view.ending_of_line_at(self.anchor));
        }
    }
}

/// The ranges of the lines of `text[span]`, each with its `\n`.
fn line_ranges(text: &str, span: Range<usize>) -> Vec<Range<usize>> {
    let mut start = span.start;
    text[span]
        .split_inclusive('\n')
        .map(|line| {
            let range = start..start + line.len();
            start = range.end;
            range
        })
        .collect()
}
