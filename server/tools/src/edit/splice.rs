//! Turning a matched span into its replacement bytes without touching what the model did not
//! change. The file is seen through an [`LfView`] (no BOM, CRLF folded to LF) with the way back to
//! its bytes. Within a span, `oldText`'s lines are aligned with the file's; lines the model
//! repeated unchanged in `newText` — or wrote again differing only in what the match overlooked
//! (quotes, trailing spaces) — are copied from the file (its quotes, dashes, trailing spaces and
//! line endings), file lines the model did not quote (a blank line it left out, a stale context
//! line) stay, and only changed lines take `newText` — re-indented to the file when the match
//! ignored indentation, keeping the file's typography in what they repeat, ending as the line
//! they replace ends.

use std::ops::Range;

use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::matching::{Found, Normalisation, ascii_typography};
use super::reindent::IndentMap;
use super::restyle::restyle;

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
    /// Bytes of indentation the first matched line starts with that the model's copy left out.
    lead: usize,
    /// The lead is written before the first new line, unless a file line comes first.
    lead_owed: bool,
    /// The last line written has no line break — a kept file line that had none where the
    /// model's copy had one, or newText's last line —: one is written if anything follows.
    owed_break: bool,
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

/// The bytes that replace `span` for an edit found as `found`. The span starts `lead` bytes of
/// indentation before the text the model quoted, which belong to whatever comes first in its place.
pub(crate) fn replacement(view: &LfView, span: Range<usize>, lead: usize, found: &Found) -> String {
    let old_lines: Vec<&str> = found.old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = found.new.split_inclusive('\n').collect();
    let mut splice = Splice {
        view,
        matched: line_ranges(&view.text, span.clone()),
        next_matched: 0,
        anchor: span.start,
        lead,
        lead_owed: lead > 0,
        owed_break: false,
        out: String::with_capacity(found.new.len()),
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
    // Lines are compared as the normalisations see them: a line the model wrote again with other
    // quotes or trailing spaces is not a change, whatever bytes it came with. Nor is a line
    // repeated with or without a line break after it (the last of oldText or newText, which then
    // goes on or stops there): the break is written as newText says, the line as the file has it.
    let old_keys: Vec<String> = old_lines.iter().map(|line| style_key(line)).collect();
    let new_keys: Vec<String> = new_lines.iter().map(|line| style_key(line)).collect();
    for op in capture_diff_slices(Algorithm::Myers, &old_keys, &new_keys) {
        match op {
            DiffOp::Equal { old_index, new_index, len } => {
                for offset in 0..len {
                    let (old, new) = (old_lines[old_index + offset], new_lines[new_index + offset]);
                    let Some(matched) = aligned[old_index + offset] else { continue };
                    if content(old) == content(new) || content(old) != content(splice.line(matched)) {
                        // Repeated, or respelled from a copy that was not the file's bytes anyway.
                        splice.repeat(matched, old.ends_with('\n'), new.ends_with('\n'));
                    } else {
                        // An exact copy written again in another style on purpose.
                        splice.drop_through(&[Some(matched)]);
                        splice.write_new(new, Some((old, matched)), indent.as_ref());
                    }
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
                // Each old line takes its share of the new lines, in order, so file lines the
                // model did not quote (a blank line it left out) stay where they were between
                // them; the last old line always takes the last new line (which may end without
                // a line break, as the old one does).
                let share = |index: usize| index * new_len / old_len;
                for index in 0..old_len {
                    let old = old_index + index;
                    let news = &new_lines[new_index + share(index)..new_index + share(index + 1)];
                    if let Some(matched) = aligned[old] {
                        splice.drop_through(&[Some(matched)]);
                    }
                    let paired = aligned[old].filter(|_| news.len() == 1).map(|matched| (old_lines[old], matched));
                    for new_line in news {
                        splice.write_new(new_line, paired, indent.as_ref());
                    }
                }
            }
        }
    }
    splice.keep_before(splice.matched.len());
    splice.out
}

/// A line as the normalisations compare it: without its line break and trailing whitespace,
/// typography as ASCII.
fn style_key(line: &str) -> String {
    content(line).trim_end().chars().map(ascii_typography).collect()
}

/// A line without its `\n`.
fn content(line: &str) -> &str {
    line.strip_suffix('\n').unwrap_or(line)
}

impl Splice<'_, '_> {
    /// A matched line as the model quoted it (the first without its lead).
    fn line(&self, matched: usize) -> &str {
        let range = &self.matched[matched];
        let skip = if matched == 0 { self.lead } else { 0 };
        &self.view.text[range.start + skip..range.end]
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
            if std::mem::take(&mut self.owed_break) {
                self.out.push_str(self.view.ending_of_line_at(self.anchor));
            }
            self.out.push_str(self.view.bytes(self.matched[line].clone()));
            self.lead_owed = false;
        }
        self.next_matched = self.next_matched.max(matched);
    }

    /// Copies the file's lines up to and including `matched`.
    fn keep_through(&mut self, matched: usize) {
        self.keep_before(matched + 1);
        self.anchor = self.matched[matched].start;
    }

    /// Writes the file's line `matched` for an old line that newText repeats: its bytes, and a
    /// line break as the file has it unless the model added one after it or took it away.
    fn repeat(&mut self, matched: usize, old_breaks: bool, new_breaks: bool) {
        let file_breaks = self.line(matched).ends_with('\n');
        if old_breaks == new_breaks || new_breaks == file_breaks {
            self.keep_through(matched);
            // The model's copy had a break where the file's last line has none: not a change,
            // but whatever follows needs one.
            self.owed_break = new_breaks && !file_breaks;
        } else if new_breaks {
            // Lines appended after a quote that stopped at the end of a line.
            self.keep_through(matched);
            self.out.push_str(self.view.ending_of_line_at(self.anchor));
        } else {
            // The model joins this line to what follows: its bytes without the break.
            self.keep_before(matched);
            let range = &self.matched[matched];
            self.out.push_str(self.view.bytes(range.start..range.end - 1));
            self.lead_owed = false;
            self.anchor = range.start;
            self.next_matched = matched + 1;
            self.owed_break = true;
        }
    }

    /// Drops the matched lines of deleted old lines; file lines the model did not quote, before
    /// and between them, are kept.
    fn drop_through(&mut self, aligned: &[Option<usize>]) {
        for (nth, &matched) in aligned.iter().flatten().enumerate() {
            self.keep_before(matched);
            if nth == 0 {
                self.anchor = self.matched[matched].start;
            }
            self.next_matched = matched + 1;
        }
    }

    /// Writes one line of `newText`: re-indented when `indent` says so, and ending as the file's
    /// line at the anchor ends. Paired with the file line it replaces, it keeps the file's
    /// spelling of what the model repeated (see `restyle`) and the file's trailing whitespace when
    /// the model's copy had dropped it (a Markdown hard break, or noise the model did not mean to
    /// touch).
    fn write_new(&mut self, new_line: &str, paired: Option<(&str, usize)>, indent: Option<&IndentMap>) {
        let mut line = match indent {
            Some(map) => map.apply(content(new_line)),
            None => content(new_line).to_string(),
        };
        if let Some((old_line, matched)) = paired {
            self.anchor = self.matched[matched].start;
            let file_content = content(self.line(matched));
            let file_trailing = &file_content[file_content.trim_end_matches([' ', '\t']).len()..];
            let old_content = content(old_line);
            let dropped = !old_content.ends_with(char::is_whitespace);
            // The file's spelling, compared without the trailing whitespace the copy dropped.
            let file_core =
                if dropped { &file_content[..file_content.len() - file_trailing.len()] } else { file_content };
            if let Some(restyled) = restyle(&line, old_content, file_core) {
                line = restyled;
            }
            if !file_trailing.is_empty() && dropped && !line.ends_with(char::is_whitespace) && !line.is_empty() {
                line.push_str(file_trailing);
            }
        }
        if std::mem::take(&mut self.owed_break) {
            self.out.push_str(self.view.ending_of_line_at(self.anchor));
        }
        if std::mem::take(&mut self.lead_owed) {
            let start = self.matched[0].start;
            self.out.push_str(&self.view.text[start..start + self.lead]);
        }
        self.out.push_str(&line);
        if new_line.ends_with('\n') {
            self.out.push_str(self.view.ending_of_line_at(self.anchor));
        } else {
            // newText's last line, placed before file lines the model did not quote.
            self.owed_break = true;
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
