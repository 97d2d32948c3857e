//! Proposed changes as reviewable hunks: a line diff of the old text against the new one, cut
//! into minimal, non-overlapping replacements of byte spans, one per hunk, so the user can accept
//! some and reject others. A protocol layer turns a hunk's byte span into its own positions.
//!
//! Lines end at `\n`, `\r\n` or a lone `\r` (as LSP's do), and each line keeps its break, so a
//! changed line ending is a changed line.

// A `Span` counts bytes or lines.
use std::ops::Range as Span;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp, TextDiff};

/// A replaced hunk with at most this many lines on each side is narrowed to the characters that
/// changed; a larger one is shown as whole lines, which reads better than a scatter of fragments.
const REFINE_MAX_LINES: usize = 3;

/// How long [`unified_diff`] may search for a small diff before settling for a coarser one.
const UNIFIED_DIFF_DEADLINE: Duration = Duration::from_millis(200);

/// Lines of context around each hunk of [`unified_diff`].
const UNIFIED_CONTEXT_LINES: usize = 3;

/// One reviewable change: replace `old_bytes` of the old text with `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Position of the hunk in its proposal, from 0; what a reviewer names to accept it.
    pub index: usize,
    /// The replaced part of the old text, in bytes. It never splits a character or a `\r\n`.
    pub old_bytes: Span<usize>,
    /// The line of the old text (from 0) where the hunk starts, and where it ends: lines as an
    /// editor counts them, so a protocol layer needs only the line's text for a column.
    pub line: usize,
    pub end_line: usize,
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

/// The hunks that turn `old` into `new`, in order.
///
/// Hunks are separated by at least one unchanged line. A hunk that replaces at most
/// [`REFINE_MAX_LINES`] lines with at most as many is narrowed to the characters between the
/// common prefix and suffix, widened to whole words and never splitting a `\r\n`, so a changed
/// word is a one-word edit; other hunks span exactly their lines. When `deadline` passes, the diff
/// settles for fewer, larger hunks; they still turn `old` into `new`.
pub fn hunks(old: &str, new: &str, deadline: Duration) -> Vec<Hunk> {
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
        hunks.push(Hunk {
            index: hunks.len(),
            line: line_at(&old_starts, old_span.start),
            end_line: line_at(&old_starts, old_span.end),
            old_text: old[old_span.clone()].to_string(),
            new_text: new[new_span].to_string(),
            old_bytes: old_span,
        });
    }
    hunks
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

/// Byte offset of the start of every line of a text split into `lines`, the first being 0; the
/// last is the text's length when the text ends with a line break, since the empty line after it
/// counts (as in LSP).
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
/// since no editor position (LSP's included) names that spot.
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

/// The line (from 0) holding byte `offset` of a text whose line starts are `starts`.
fn line_at(starts: &[usize], offset: usize) -> usize {
    starts.partition_point(|&start| start <= offset).saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use proptest::prelude::*;

    use super::*;

    const NO_DEADLINE: Duration = Duration::from_secs(60);

    /// Renders the hunks of `old` → `new` one a line, as `#index line N bytes a..b "old" -> "new"`,
    /// after checking that all of them together turn `old` into `new`.
    fn check_hunks(old: &str, new: &str, expected: Expect) {
        let hunks = hunks(old, new, NO_DEADLINE);
        let all: Vec<usize> = hunks.iter().map(|hunk| hunk.index).collect();
        assert_eq!(apply_hunks(old, &hunks, &all), new);
        let rendered: Vec<String> = hunks
            .iter()
            .map(|hunk| {
                format!(
                    "#{} line {} bytes {:?} {:?} -> {:?}",
                    hunk.index, hunk.line, hunk.old_bytes, hunk.old_text, hunk.new_text
                )
            })
            .collect();
        expected.assert_eq(&rendered.join("\n"));
    }

    #[test]
    fn a_changed_word_is_an_edit_of_that_word() {
        check_hunks(
            "fn main() {\n    let count = 1;\n}\n",
            "fn main() {\n    let total = 1;\n}\n",
            expect![[r#"#0 line 1 bytes 20..25 "count" -> "total""#]],
        );
    }

    #[test]
    fn inserted_and_deleted_lines_are_whole_lines() {
        check_hunks("a\nb\nc\n", "a\nnew\nb\nc\n", expect![[r#"#0 line 1 bytes 2..2 "" -> "new\n""#]]);
        check_hunks("a\nb\nc\nd\n", "a\nd\n", expect![[r#"#0 line 1 bytes 2..6 "b\nc\n" -> """#]]);
        check_hunks("a\nb\n", "", expect![[r#"#0 line 0 bytes 0..4 "a\nb\n" -> """#]]);
        check_hunks("", "a\nb", expect![[r#"#0 line 0 bytes 0..0 "" -> "a\nb""#]]);
    }

    #[test]
    fn hunks_are_separated_by_unchanged_lines() {
        check_hunks(
            "a = 1\nb = 2\nc = 3\nd = 4\n",
            "a = 10\nb = 2\nc = 3\nd = 40\n",
            expect![[r#"
                #0 line 0 bytes 4..5 "1" -> "10"
                #1 line 3 bytes 22..23 "4" -> "40""#]],
        );
    }

    #[test]
    fn a_crlf_is_never_split() {
        check_hunks("a\r\nb\r\n", "a\nb\r\n", expect![[r#"#0 line 0 bytes 1..3 "\r\n" -> "\n""#]]);
        check_hunks("a\rb\rc", "a\rB\rc", expect![[r#"#0 line 1 bytes 2..3 "b" -> "B""#]]);
    }

    #[test]
    fn identical_texts_have_no_hunks() {
        check_hunks("same\r\nthing", "same\r\nthing", expect![""]);
        check_hunks("", "", expect![""]);
    }

    #[test]
    fn chosen_hunks_apply_alone() {
        let old = "one\ntwo\nthree\nfour\nfive\n";
        let new = "ONE\ntwo\nthree\nfour\nFIVE\n";
        let hunks = hunks(old, new, NO_DEADLINE);
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

    /// The line (from 0) of byte `offset`, counted without the module's line index.
    fn line_of(text: &str, offset: usize) -> usize {
        split_lines(&text[..offset]).iter().filter(|line| line.ends_with(['\n', '\r'])).count()
    }

    /// The properties every diff must have:
    /// - the hunks together turn `old` into `new`;
    /// - they are in order and do not overlap or touch, and split no character or `\r\n`;
    /// - each hunk's `old_text` is what its `old_bytes` cover, and `line` is where that starts;
    /// - no unchanged line lies inside a hunk: no whole line of `old` inside a hunk is also a
    ///   whole line of `new` inside the text that hunk puts in its place;
    /// - any subset of hunks applies alone, as the same hunks applied one by one from the end.
    fn check_properties(old: &str, new: &str, subset: u64) {
        let hunks = hunks(old, new, NO_DEADLINE);
        let all: Vec<usize> = hunks.iter().map(|hunk| hunk.index).collect();
        assert_eq!(apply_hunks(old, &hunks, &all), new);
        let mut previous_end = None;
        let mut shift: isize = 0;
        for (number, hunk) in hunks.iter().enumerate() {
            assert_eq!(hunk.index, number);
            let span = hunk.old_bytes.clone();
            assert_eq!(old.get(span.clone()), Some(hunk.old_text.as_str()), "{hunk:?}");
            assert!(!(old[..span.start].ends_with('\r') && old[span.start..].starts_with('\n')), "{hunk:?}");
            assert!(!(old[..span.end].ends_with('\r') && old[span.end..].starts_with('\n')), "{hunk:?}");
            assert_eq!((hunk.line, hunk.end_line), (line_of(old, span.start), line_of(old, span.end)), "{hunk:?}");
            assert_ne!(hunk.old_text, hunk.new_text);
            if let Some(previous_end) = previous_end {
                assert!(previous_end < span.start, "hunks overlap or touch: {hunks:?}");
            }
            previous_end = Some(span.end);

            let new_start = (span.start as isize + shift) as usize;
            let removed = whole_lines_within(old, span.clone());
            let inserted = whole_lines_within(new, new_start..new_start + hunk.new_text.len());
            for line in &removed {
                assert!(!inserted.contains(line), "unchanged line {line:?} inside {hunk:?}");
            }
            shift += hunk.new_text.len() as isize - hunk.old_text.len() as isize;
        }
        let chosen: Vec<usize> = all.iter().copied().filter(|index| subset & (1 << (index % 64)) != 0).collect();
        let mut one_by_one = old.to_string();
        for hunk in hunks.iter().rev().filter(|hunk| chosen.contains(&hunk.index)) {
            one_by_one.replace_range(hunk.old_bytes.clone(), &hunk.new_text);
        }
        assert_eq!(apply_hunks(old, &hunks, &chosen), one_by_one);
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
        fn hunks_turn_old_into_new_minimally(pair in prop_oneof![edited_pair(), (text(), text())], subset in any::<u64>()) {
            check_properties(&pair.0, &pair.1, subset);
        }
    }
}
