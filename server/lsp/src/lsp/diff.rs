//! Proposed edits as reviewable hunks: a line diff of the old text against the new one, cut into
//! minimal, non-overlapping `TextEdit`s in the client's position encoding, one per hunk, so the user
//! can accept some and reject others.
//!
//! Lines are LSP's: they end at `\n`, `\r\n` or a lone `\r`, and each line keeps its break, so a
//! changed line ending is a changed line. This file depends on no other module of the crate except
//! the position encoding, so the bench can include it with `#[path]`.

// `Range` is LSP's; a `Span` counts bytes or lines.
use std::ops::Range as Span;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp, TextDiff};
use tower_lsp_server::ls_types::{Position, Range, TextEdit};

use super::documents::PositionEncoding;

/// A replaced hunk with at most this many lines on each side is narrowed to the characters that
/// changed; a larger one is shown as whole lines, which reads better than a scatter of fragments.
const REFINE_MAX_LINES: usize = 3;

/// How long [`unified_diff`] may search for a small diff before settling for a coarser one.
const UNIFIED_DIFF_DEADLINE: Duration = Duration::from_millis(200);

/// Lines of context around each hunk of [`unified_diff`].
const UNIFIED_CONTEXT_LINES: usize = 3;

/// One reviewable change: replace `range` of the old text with `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Position of the hunk in its proposal, from 0; what `reins.edit.accept {hunks}` names.
    pub index: usize,
    /// The replaced part of the old text, in LSP positions of the negotiated encoding.
    pub range: Range,
    /// The same part in bytes of the old text, so hunks apply without an encoding.
    pub old_bytes: Span<usize>,
    pub old_text: String,
    pub new_text: String,
}

/// A run of changed lines: lines `old` of the old text became lines `new` of the new text. One of
/// them may be empty (a pure insertion or deletion), never both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineChange {
    pub old: Span<usize>,
    pub new: Span<usize>,
}

/// The hunks that turn `old` into `new`, in order, with positions in `encoding`.
///
/// Hunks are separated by at least one unchanged line. A hunk that replaces at most
/// [`REFINE_MAX_LINES`] lines with at most as many is narrowed to the characters between the
/// common prefix and suffix, widened to whole words and never splitting a `\r\n`, so a changed
/// word is a one-word edit; other hunks span exactly their lines. When `deadline` passes, the diff
/// settles for fewer, larger hunks; they still turn `old` into `new`.
pub fn hunks(old: &str, new: &str, encoding: PositionEncoding, deadline: Duration) -> Vec<Hunk> {
    let old_lines = split_lines(old);
    let new_lines = split_lines(new);
    let old_starts = line_starts(&old_lines);
    let new_line_starts = line_starts(&new_lines);
    let byte_of = |starts: &[usize], text: &str, line: usize| starts.get(line).copied().unwrap_or(text.len());

    let mut hunks = Vec::new();
    for change in line_changes(&old_lines, &new_lines, deadline) {
        let mut old_span = byte_of(&old_starts, old, change.old.start)..byte_of(&old_starts, old, change.old.end);
        let mut new_span =
            byte_of(&new_line_starts, new, change.new.start)..byte_of(&new_line_starts, new, change.new.end);
        let small = change.old.len() <= REFINE_MAX_LINES && change.new.len() <= REFINE_MAX_LINES;
        if small && !change.old.is_empty() && !change.new.is_empty() {
            (old_span, new_span) = narrow(old, old_span, new, new_span);
        }
        if old[old_span.clone()] == new[new_span.clone()] {
            continue;
        }
        let range = Range {
            start: position_at(old, &old_starts, old_span.start, encoding),
            end: position_at(old, &old_starts, old_span.end, encoding),
        };
        hunks.push(Hunk {
            index: hunks.len(),
            range,
            old_text: old[old_span.clone()].to_string(),
            new_text: new[new_span].to_string(),
            old_bytes: old_span,
        });
    }
    hunks
}

/// One `TextEdit` per hunk, in order; they apply together to the old text.
pub fn text_edits(hunks: &[Hunk]) -> Vec<TextEdit> {
    hunks.iter().map(|hunk| TextEdit { range: hunk.range, new_text: hunk.new_text.clone() }).collect()
}

/// The old text with the hunks whose `index` is in `chosen` applied and the others left out.
///
/// `old` must be the text the hunks were computed from; a hunk that does not match it (its
/// `old_text` is not at its `old_bytes`) is left out rather than applied in the wrong place.
pub fn apply_hunks(old: &str, hunks: &[Hunk], chosen: &[usize]) -> String {
    let mut selected: Vec<&Hunk> = hunks
        .iter()
        .filter(|hunk| chosen.contains(&hunk.index))
        .filter(|hunk| old.get(hunk.old_bytes.clone()) == Some(hunk.old_text.as_str()))
        .collect();
    selected.sort_by_key(|hunk| (hunk.old_bytes.start, hunk.old_bytes.end));
    let mut out = String::with_capacity(old.len());
    let mut copied = 0;
    for hunk in selected {
        // Hunks from one proposal never overlap; one that would is not from this proposal.
        if hunk.old_bytes.start < copied {
            continue;
        }
        out.push_str(&old[copied..hunk.old_bytes.start]);
        out.push_str(&hunk.new_text);
        copied = hunk.old_bytes.end;
    }
    out.push_str(&old[copied..]);
    out
}

/// `text` with `edits` applied as an LSP client applies them: every range refers to `text`,
/// edits must not overlap, and insertions at the same position keep their order. A position past
/// the end of its line means the line's end, and a line past the end means the end of the text,
/// as the specification says; a position inside a character is an error.
pub fn apply_text_edits(text: &str, edits: &[TextEdit], encoding: PositionEncoding) -> Result<String, String> {
    let starts = line_starts(&split_lines(text));
    let mut spans = Vec::with_capacity(edits.len());
    for (number, edit) in edits.iter().enumerate() {
        let start =
            byte_at(text, &starts, edit.range.start, encoding).map_err(|why| format!("edit {number}: {why}"))?;
        let end = byte_at(text, &starts, edit.range.end, encoding).map_err(|why| format!("edit {number}: {why}"))?;
        if end < start {
            return Err(format!("edit {number}: its range ends before it starts"));
        }
        spans.push((start..end, number));
    }
    // Stable: insertions at one position stay in the order the client received them.
    spans.sort_by_key(|(span, _)| (span.start, span.end));
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut previous = None;
    for (span, number) in spans {
        if span.start < copied {
            let other = previous.unwrap_or(number);
            return Err(format!("edits {other} and {number} overlap"));
        }
        out.push_str(&text[copied..span.start]);
        out.push_str(&edits[number].new_text);
        copied = span.end;
        previous = Some(number);
    }
    out.push_str(&text[copied..]);
    Ok(out)
}

/// The change as a unified diff (`--- a/path`, `+++ b/path`, three lines of context), the form
/// the model and a terminal reader know. Empty when nothing changed.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    let old_lines = split_lines(old);
    let new_lines = split_lines(new);
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(UNIFIED_DIFF_DEADLINE)
        // The lines keep their own breaks; a last line without one gets similar's marker.
        .newline_terminated(true)
        .diff_slices(&old_lines, &new_lines);
    if diff.ops().iter().all(|op| matches!(op, DiffOp::Equal { .. })) {
        return String::new();
    }
    diff.unified_diff()
        .context_radius(UNIFIED_CONTEXT_LINES)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// The runs of changed lines between two texts split by [`split_lines`], in order, each
/// separated from the next by at least one unchanged line.
pub fn line_changes(old_lines: &[&str], new_lines: &[&str], deadline: Duration) -> Vec<LineChange> {
    // Myers finds a longest common subsequence, so no line inside a change is also a line of the
    // other side of that change: the change cannot be split around an unchanged line.
    // The lines are compared as strings: interning them first, as `TextDiff` does, costs more than
    // the diff itself when the changes are few, which is the common case.
    let deadline = Instant::now().checked_add(deadline);
    let ops = similar::capture_diff_slices_deadline(Algorithm::Myers, old_lines, new_lines, deadline);
    // The changes are the gaps between the unchanged runs. They are read from the `Equal` ops
    // alone because similar's compaction can leave an `Insert` naming an `old_index` inside the
    // `Delete` before it.
    let mut changes = Vec::new();
    let (mut old_at, mut new_at) = (0, 0);
    let unchanged = ops.iter().filter_map(|op| match *op {
        DiffOp::Equal { old_index, new_index, len } => Some((old_index, new_index, len)),
        _ => None,
    });
    for (old_index, new_index, len) in unchanged.chain([(old_lines.len(), new_lines.len(), 0)]) {
        if old_index > old_at || new_index > new_at {
            changes.push(LineChange { old: old_at..old_index, new: new_at..new_index });
        }
        (old_at, new_at) = (old_index + len, new_index + len);
    }
    changes
}

/// The lines of `text`, each with its `\n`, `\r\n` or `\r`; the last may have none. An empty
/// text has no lines, and a final line break starts no empty line.
pub fn split_lines(text: &str) -> Vec<&str> {
    if !text.contains('\r') {
        // The common case, and a fast one: `split_inclusive` searches with memchr.
        return text.split_inclusive('\n').collect();
    }
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        // The `\r` of a `\r\n` is not a break of its own.
        let is_break = byte == b'\n' || (byte == b'\r' && bytes.get(at + 1) != Some(&b'\n'));
        if is_break {
            lines.push(&text[start..=at]);
            start = at + 1;
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Byte offset of the start of every LSP line of a text split into `lines`, the first being 0;
/// the last is the text's length when the text ends with a line break, since LSP counts the
/// empty line after it.
fn line_starts(lines: &[&str]) -> Vec<usize> {
    let mut starts = Vec::with_capacity(lines.len() + 1);
    starts.push(0);
    let mut at = 0;
    for line in lines {
        at += line.len();
        if line.ends_with(['\n', '\r']) {
            starts.push(at);
        }
    }
    starts
}

/// Narrows a replacement to what lies between the common prefix and suffix of both sides,
/// widened to whole words. A boundary that would fall between `\r` and `\n` moves outwards,
/// since LSP cannot name that spot.
fn narrow(old: &str, old_span: Span<usize>, new: &str, new_span: Span<usize>) -> (Span<usize>, Span<usize>) {
    let (old_part, new_part) = (&old[old_span.clone()], &new[new_span.clone()]);
    let mut prefix: usize =
        old_part.chars().zip(new_part.chars()).take_while(|(a, b)| a == b).map(|(a, _)| a.len_utf8()).sum();
    let mut suffix: usize = old_part[prefix..]
        .chars()
        .rev()
        .zip(new_part[prefix..].chars().rev())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a.len_utf8())
        .sum();
    // Whole words read better than fragments ("1" -> "10", not "" -> "0"): a boundary inside a
    // word moves outwards over the common characters to the word's edge.
    while let Some(before) = old_part[..prefix].chars().next_back()
        && is_word(before)
        && (starts_with_word(&old_part[prefix..]) || starts_with_word(&new_part[prefix..]))
    {
        prefix -= before.len_utf8();
    }
    while let Some(after) = old_part[old_part.len() - suffix..].chars().next()
        && is_word(after)
        && (ends_with_word(&old_part[prefix..old_part.len() - suffix])
            || ends_with_word(&new_part[prefix..new_part.len() - suffix]))
    {
        suffix -= after.len_utf8();
    }
    let mut start = old_span.start + prefix;
    let mut end = old_span.end - suffix;
    let mut new_start = new_span.start + prefix;
    let mut new_end = new_span.end - suffix;
    let bytes = old.as_bytes();
    // The moved-over `\r` or `\n` is in the common prefix or suffix, so it is on both sides.
    if start > 0 && bytes[start - 1] == b'\r' && bytes.get(start) == Some(&b'\n') {
        start -= 1;
        new_start -= 1;
    }
    if end > 0 && bytes[end - 1] == b'\r' && bytes.get(end) == Some(&b'\n') {
        end += 1;
        new_end += 1;
    }
    (start..end, new_start..new_end)
}

fn is_word(character: char) -> bool {
    character.is_alphanumeric() || character == '_'
}

fn starts_with_word(text: &str) -> bool {
    text.chars().next().is_some_and(is_word)
}

fn ends_with_word(text: &str) -> bool {
    text.chars().next_back().is_some_and(is_word)
}

/// The LSP position of byte `offset` of `text`, whose line starts are `starts`.
fn position_at(text: &str, starts: &[usize], offset: usize, encoding: PositionEncoding) -> Position {
    let line = starts.partition_point(|&start| start <= offset).saturating_sub(1);
    let within = &text[starts[line]..offset];
    Position { line: line as u32, character: encoded_len(within, encoding) as u32 }
}

/// The byte offset of an LSP position in `text`, clamped as the specification says.
fn byte_at(text: &str, starts: &[usize], position: Position, encoding: PositionEncoding) -> Result<usize, String> {
    let Some(&line_start) = starts.get(position.line as usize) else {
        return Ok(text.len());
    };
    let line_end = starts.get(position.line as usize + 1).copied().unwrap_or(text.len());
    let content = text[line_start..line_end].trim_end_matches(['\n', '\r']);
    let wanted = position.character as usize;
    let mut units = 0;
    for (at, character) in content.char_indices() {
        if units == wanted {
            return Ok(line_start + at);
        }
        units += match encoding {
            PositionEncoding::Utf16 => character.len_utf16(),
            PositionEncoding::Utf8 => character.len_utf8(),
        };
        if units > wanted {
            return Err(format!("{}:{} is inside the character {character:?}", position.line, position.character));
        }
    }
    Ok(line_start + content.len())
}

/// Length of `text` in the code units `encoding` counts.
fn encoded_len(text: &str, encoding: PositionEncoding) -> usize {
    match encoding {
        PositionEncoding::Utf16 => text.chars().map(char::len_utf16).sum(),
        PositionEncoding::Utf8 => text.len(),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use proptest::prelude::*;

    use super::*;

    const NO_DEADLINE: Duration = Duration::from_secs(60);

    /// Renders the hunks of `old` → `new` one a line, as `#index line:col..line:col "old" -> "new"`,
    /// after checking that their edits turn `old` into `new`.
    fn check_hunks(old: &str, new: &str, encoding: PositionEncoding, expected: Expect) {
        let hunks = hunks(old, new, encoding, NO_DEADLINE);
        assert_eq!(apply_text_edits(old, &text_edits(&hunks), encoding).as_deref(), Ok(new));
        let rendered: Vec<String> = hunks
            .iter()
            .map(|hunk| {
                let Range { start, end } = hunk.range;
                format!(
                    "#{} {}:{}..{}:{} {:?} -> {:?}",
                    hunk.index, start.line, start.character, end.line, end.character, hunk.old_text, hunk.new_text
                )
            })
            .collect();
        expected.assert_eq(&rendered.join("\n"));
    }

    fn utf16(old: &str, new: &str, expected: Expect) {
        check_hunks(old, new, PositionEncoding::Utf16, expected);
    }

    #[test]
    fn a_changed_word_is_an_edit_of_that_word() {
        utf16(
            "fn main() {\n    let count = 1;\n}\n",
            "fn main() {\n    let total = 1;\n}\n",
            expect![[r##"#0 1:8..1:13 "count" -> "total""##]],
        );
    }

    #[test]
    fn inserted_and_deleted_lines_are_whole_lines() {
        utf16("a\nb\nc\n", "a\nnew\nb\nc\n", expect![[r##"#0 1:0..1:0 "" -> "new\n""##]]);
        utf16("a\nb\nc\nd\n", "a\nd\n", expect![[r##"#0 1:0..3:0 "b\nc\n" -> """##]]);
        utf16("a\nb\n", "", expect![[r##"#0 0:0..2:0 "a\nb\n" -> """##]]);
        utf16("", "a\nb", expect![[r##"#0 0:0..0:0 "" -> "a\nb""##]]);
    }

    #[test]
    fn a_large_replacement_spans_exactly_its_lines() {
        utf16(
            "keep\none\ntwo\nthree\nfour\nkeep\n",
            "keep\n1\n2\n3\n4\nkeep\n",
            expect![[r##"#0 1:0..5:0 "one\ntwo\nthree\nfour\n" -> "1\n2\n3\n4\n""##]],
        );
    }

    #[test]
    fn hunks_are_separated_by_unchanged_lines() {
        utf16(
            "a = 1\nb = 2\nc = 3\nd = 4\n",
            "a = 10\nb = 2\nc = 3\nd = 40\n",
            expect![[r##"
            #0 0:4..0:5 "1" -> "10"
            #1 3:4..3:5 "4" -> "40""##]],
        );
    }

    #[test]
    fn columns_count_utf16_units_or_bytes() {
        check_hunks("😀é a\n", "😀é b\n", PositionEncoding::Utf16, expect![[r##"#0 0:4..0:5 "a" -> "b""##]]);
        check_hunks("😀é a\n", "😀é b\n", PositionEncoding::Utf8, expect![[r##"#0 0:7..0:8 "a" -> "b""##]]);
    }

    #[test]
    fn line_breaks_are_lf_crlf_and_lone_cr() {
        utf16("a\rb\rc", "a\rB\rc", expect![[r##"#0 1:0..1:1 "b" -> "B""##]]);
        // Between "\r" and "\n" is no LSP position, so the edit takes the whole "\r\n".
        utf16("a\r\nb\r\n", "a\nb\r\n", expect![[r##"#0 0:1..1:0 "\r\n" -> "\n""##]]);
        utf16("a\nb\n", "a\r\nb\n", expect![[r##"#0 0:1..0:1 "" -> "\r""##]]);
    }

    #[test]
    fn a_missing_final_newline_is_a_change_of_the_last_line() {
        utf16("a\nb", "a\nb\n", expect![[r##"#0 1:1..1:1 "" -> "\n""##]]);
        utf16("a\nb\n", "a\nb", expect![[r##"#0 1:1..2:0 "\n" -> """##]]);
    }

    #[test]
    fn hunks_stay_in_order_when_the_diff_slides_lines() {
        utf16(
            "a\n\r\naa\n\r\n\naaaaa",
            "a\n\na\na\r\n\naaaaa",
            expect![[r##"
            #0 1:0..4:0 "\r\naa\n\r\n" -> ""
            #1 5:0..5:0 "" -> "a\na\r\n\n""##]],
        );
    }

    #[test]
    fn identical_texts_have_no_hunks() {
        utf16("same\r\nthing", "same\r\nthing", expect![""]);
        utf16("", "", expect![""]);
    }

    /// An edit: start (line, character), end, new text.
    type Edit<'a> = ((u32, u32), (u32, u32), &'a str);

    /// Applies `edits` to `text` and renders the result or the error.
    fn check_apply(text: &str, edits: &[Edit<'_>], expected: Expect) {
        let edits: Vec<TextEdit> = edits
            .iter()
            .map(|(start, end, new_text)| TextEdit {
                range: Range { start: Position::new(start.0, start.1), end: Position::new(end.0, end.1) },
                new_text: new_text.to_string(),
            })
            .collect();
        let result = match apply_text_edits(text, &edits, PositionEncoding::Utf16) {
            Ok(text) => format!("{text:?}"),
            Err(why) => format!("error: {why}"),
        };
        expected.assert_eq(&result);
    }

    #[test]
    fn text_edits_apply_as_a_client_applies_them() {
        // Insertions at one position keep their order; ranges refer to the original text.
        check_apply(
            "ab\ncd",
            &[((1, 0), (1, 0), "1"), ((0, 0), (0, 1), "A"), ((1, 0), (1, 0), "2")],
            expect![[r#""Ab\n12cd""#]],
        );
        // Past the end of a line is its end (before "\r\n"); past the last line is the end.
        check_apply("ab\r\ncd", &[((0, 9), (0, 9), "!"), ((7, 0), (8, 0), "?")], expect![[r#""ab!\r\ncd?""#]]);
        check_apply("abcd", &[((0, 0), (0, 2), "x"), ((0, 1), (0, 3), "y")], expect!["error: edits 0 and 1 overlap"]);
        check_apply("😀", &[((0, 1), (0, 2), "x")], expect!["error: edit 0: 0:1 is inside the character '😀'"]);
        check_apply("abc", &[((0, 2), (0, 1), "x")], expect!["error: edit 0: its range ends before it starts"]);
    }

    #[test]
    fn chosen_hunks_apply_alone() {
        let old = "one\ntwo\nthree\nfour\nfive\n";
        let new = "ONE\ntwo\nthree\nfour\nFIVE\n";
        let hunks = hunks(old, new, PositionEncoding::Utf16, NO_DEADLINE);
        let applied: Vec<String> = [&[][..], &[0], &[1], &[0, 1], &[7]]
            .iter()
            .map(|chosen| format!("{chosen:?} {:?}", apply_hunks(old, &hunks, chosen)))
            .collect();
        expect![[r#"
            [] "one\ntwo\nthree\nfour\nfive\n"
            [0] "ONE\ntwo\nthree\nfour\nfive\n"
            [1] "one\ntwo\nthree\nfour\nFIVE\n"
            [0, 1] "ONE\ntwo\nthree\nfour\nFIVE\n"
            [7] "one\ntwo\nthree\nfour\nfive\n""#]]
        .assert_eq(&applied.join("\n"));
    }

    #[test]
    fn unified_diff_shows_context_and_a_missing_newline() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9";
        let new = "1\n2\n3\nfour\n5\n6\n7\n8\n9\n";
        expect![[r#"
            --- a/src/a.txt
            +++ b/src/a.txt
            @@ -1,9 +1,9 @@
             1
             2
             3
            -4
            +four
             5
             6
             7
             8
            -9
            \ No newline at end of file
            +9
        "#]]
        .assert_eq(&unified_diff("src/a.txt", old, new));
        assert_eq!(unified_diff("a", "same", "same"), "");
    }

    /// The exact byte offset of `position` in `text`, or `None` if the position is not exactly
    /// on a character boundary of a line (past a line's end, between `\r` and `\n`, inside a
    /// character). Written without the module's line index, to check it.
    fn exact_offset(text: &str, position: Position, encoding: PositionEncoding) -> Option<usize> {
        let (mut line, mut column) = (0u32, 0u32);
        let mut chars = text.char_indices().peekable();
        loop {
            let offset = chars.peek().map_or(text.len(), |(at, _)| *at);
            if (line, column) == (position.line, position.character) {
                return Some(offset);
            }
            let (_, character) = chars.next()?;
            if character == '\r' && chars.peek().is_some_and(|(_, next)| *next == '\n') {
                chars.next();
            }
            if character == '\r' || character == '\n' {
                line += 1;
                column = 0;
            } else {
                column += match encoding {
                    PositionEncoding::Utf16 => character.len_utf16() as u32,
                    PositionEncoding::Utf8 => character.len_utf8() as u32,
                };
            }
        }
    }

    /// The whole lines of `text` (each with its line break) that lie inside the byte range `span`.
    fn whole_lines_within(text: &str, span: Span<usize>) -> Vec<&str> {
        let mut lines = Vec::new();
        let mut start = 0;
        let mut chars = text.char_indices().peekable();
        while let Some((at, character)) = chars.next() {
            let mut end = at + character.len_utf8();
            if character == '\r' && chars.peek().is_some_and(|(_, next)| *next == '\n') {
                chars.next();
                end += 1;
            }
            if character == '\r' || character == '\n' || end == text.len() {
                if span.start <= start && end <= span.end {
                    lines.push(&text[start..end]);
                }
                start = end;
            }
        }
        lines
    }

    /// The properties every diff must have, in both encodings:
    /// - the edits turn `old` into `new`, and their positions are exact (no clamping needed);
    /// - the edits are in order and do not overlap or touch;
    /// - each hunk's `old_text` is what its range and `old_bytes` cover;
    /// - no unchanged line lies inside an edit: no whole line of `old` inside an edit's range is
    ///   also a whole line of `new` inside the text that edit puts in its place (otherwise the
    ///   edit could be split around that line);
    /// - applying any subset of hunks with `apply_hunks` equals applying their `TextEdit`s.
    fn check_properties(old: &str, new: &str, subset: u64) {
        for encoding in [PositionEncoding::Utf16, PositionEncoding::Utf8] {
            let hunks = hunks(old, new, encoding, NO_DEADLINE);
            let edits = text_edits(&hunks);
            assert_eq!(apply_text_edits(old, &edits, encoding).as_deref(), Ok(new), "{encoding:?}");
            let mut previous_end = None;
            let mut shift: isize = 0;
            for (number, hunk) in hunks.iter().enumerate() {
                assert_eq!(hunk.index, number);
                let start = exact_offset(old, hunk.range.start, encoding).expect("exact start");
                let end = exact_offset(old, hunk.range.end, encoding).expect("exact end");
                assert_eq!(start..end, hunk.old_bytes, "{encoding:?} {hunk:?}");
                assert_eq!(&old[start..end], hunk.old_text);
                assert_ne!(hunk.old_text, hunk.new_text);
                if let Some(previous_end) = previous_end {
                    assert!(previous_end < start, "hunks overlap or touch: {hunks:?}");
                }
                previous_end = Some(end);

                let new_start = (start as isize + shift) as usize;
                let removed = whole_lines_within(old, start..end);
                let inserted = whole_lines_within(new, new_start..new_start + hunk.new_text.len());
                for line in &removed {
                    assert!(!inserted.contains(line), "unchanged line {line:?} inside {hunk:?}");
                }
                shift += hunk.new_text.len() as isize - hunk.old_text.len() as isize;
            }
            let chosen: Vec<usize> = (0..hunks.len()).filter(|index| subset & (1 << (index % 64)) != 0).collect();
            let chosen_edits: Vec<TextEdit> = chosen.iter().map(|&index| edits[index].clone()).collect();
            assert_eq!(Ok(apply_hunks(old, &hunks, &chosen)), apply_text_edits(old, &chosen_edits, encoding));
        }
    }

    const PIECES: &[&str] = &["a", "b", "é", "中", "😀", " ", "\n", "\r\n", "\r", "ab\n", "a\r\n"];

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES), 0..24).prop_map(|pieces| pieces.concat())
    }

    /// An old text and a new one made from it by a few splices of pieces, so that they share
    /// lines, as real edits do.
    fn edited_pair() -> impl Strategy<Value = (String, String)> {
        let pieces = || prop::collection::vec(prop::sample::select(PIECES), 0..30);
        let splice = (any::<usize>(), 0..4usize, prop::collection::vec(prop::sample::select(PIECES), 0..4));
        (pieces(), prop::collection::vec(splice, 0..4)).prop_map(|(old, splices)| {
            let mut new = old.clone();
            for (at, removed, inserted) in splices {
                let at = at % (new.len() + 1);
                let removed = removed.min(new.len() - at);
                new.splice(at..at + removed, inserted);
            }
            (old.concat(), new.concat())
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn edits_turn_old_into_new_minimally(pair in prop_oneof![edited_pair(), (text(), text())], subset in any::<u64>()) {
            check_properties(&pair.0, &pair.1, subset);
        }
    }
}
