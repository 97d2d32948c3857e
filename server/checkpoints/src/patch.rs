//! Patches for files too large to record whole: each hunk holds its changed lines with up to
//! three lines of context on each side, so it can be found again in a file the user edited
//! elsewhere since, like `patch` finds a hunk that moved. A hunk whose lines (context included)
//! are no longer in the file is a conflict, never a guess.

use std::ops::Range;
use std::time::Duration;

use reins_review::Conflict;
use reins_review::diff::{line_changes, split_lines};
use serde::{Deserialize, Serialize};

/// Lines of context kept around each hunk.
const CONTEXT_LINES: usize = 3;

/// How long the line diff may search for a small diff; a coarser one only makes larger hunks.
const DIFF_DEADLINE: Duration = Duration::from_secs(2);

/// One hunk: `old` (context and removed lines) at line `old_line` of the old text becomes `new`
/// (context and added lines) at line `new_line` of the new text. Lines keep their breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchHunk {
    pub old_line: usize,
    pub new_line: usize,
    pub old: String,
    pub new: String,
}

/// The hunks that turn `old` into `new`; changes closer than twice the context share a hunk.
pub fn make(old: &str, new: &str) -> Vec<PatchHunk> {
    let old_lines = split_lines(old);
    let new_lines = split_lines(new);
    let changes = line_changes(&old_lines, &new_lines, DIFF_DEADLINE);
    let mut hunks: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    for change in changes {
        let before = CONTEXT_LINES.min(change.old.start).min(change.new.start);
        let old = change.old.start - before..(change.old.end + CONTEXT_LINES).min(old_lines.len());
        // The context after is the same lines on both sides.
        let after = old.end - change.old.end;
        let new = change.new.start - before..change.new.end + after;
        match hunks.last_mut() {
            Some((last_old, last_new)) if old.start <= last_old.end => {
                last_old.end = old.end;
                last_new.end = new.end;
            }
            _ => hunks.push((old, new)),
        }
    }
    hunks
        .into_iter()
        .map(|(old, new)| PatchHunk {
            old_line: old.start,
            new_line: new.start,
            old: old_lines[old].concat(),
            new: new_lines[new].concat(),
        })
        .collect()
}

/// `hunks` as a unified diff of `path` (`reverse`: the change undone), for a person to read:
/// what a checkout could not make, to make by hand.
pub fn unified(path: &str, hunks: &[PatchHunk], reverse: bool) -> String {
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    for hunk in hunks {
        let ((from, from_line), (to, to_line)) = match reverse {
            false => ((&hunk.old, hunk.old_line), (&hunk.new, hunk.new_line)),
            true => ((&hunk.new, hunk.new_line), (&hunk.old, hunk.old_line)),
        };
        let (old, new) = (split_lines(from), split_lines(to));
        out.push_str(&format!("@@ -{} +{} @@\n", numbers(from_line, old.len()), numbers(to_line, new.len())));
        let mut line = |mark: char, text: &str| {
            out.push(mark);
            out.push_str(text);
            if !text.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        };
        // Between the changes, the lines are the same on both sides.
        let mut unchanged = 0;
        for change in line_changes(&old, &new, DIFF_DEADLINE) {
            old[unchanged..change.old.start].iter().for_each(|text| line(' ', text));
            old[change.old.clone()].iter().for_each(|text| line('-', text));
            new[change.new.clone()].iter().for_each(|text| line('+', text));
            unchanged = change.old.end;
        }
        old[unchanged..].iter().for_each(|text| line(' ', text));
    }
    out
}

/// A hunk's lines in a unified diff's header: `start,count`, from 1 (from 0 when it has none).
fn numbers(start: usize, count: usize) -> String {
    match count {
        0 => format!("{start},0"),
        _ => format!("{},{count}", start + 1),
    }
}

/// About the bytes `hunks` take in a record: their texts.
pub fn size(hunks: &[PatchHunk]) -> usize {
    hunks.iter().map(|hunk| hunk.old.len() + hunk.new.len()).sum()
}

/// `text` with `hunks` applied (`reverse`: undone, new back to old), each found where it was or,
/// if the user added or removed lines above it, at the nearest place its lines are.
pub fn apply(text: &str, hunks: &[PatchHunk], reverse: bool) -> Result<String, Conflict> {
    match apply_in_place(text, hunks, reverse) {
        Some(patched) => Ok(patched),
        None => apply_searching(text, hunks, reverse),
    }
}

/// [`apply`] when a hunk is not at its line: each is searched for, nearest to its line first.
fn apply_searching(text: &str, hunks: &[PatchHunk], reverse: bool) -> Result<String, Conflict> {
    let lines = split_lines(text);
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    // How far this text's lines run ahead of the patch's own numbering.
    let mut shift: isize = 0;
    for hunk in hunks {
        let (from, to, line) = match reverse {
            false => (&hunk.old, &hunk.new, hunk.old_line),
            true => (&hunk.new, &hunk.old, hunk.new_line),
        };
        let want = split_lines(from);
        let expected = (line as isize + shift).max(0) as usize;
        let Some(at) = find(&lines, &want, copied, expected) else {
            let start = expected.min(lines.len());
            let end = (start + want.len().max(1)).min(lines.len()).max(start);
            let description = format!(
                "the lines the change was made at ({}) are no longer in the file as they were",
                describe_lines(&(start..end))
            );
            return Err(Conflict { lines: start..end, description });
        };
        out.extend(lines[copied..at].iter().copied());
        out.push_str(to);
        copied = at + want.len();
        // The text searched is the one the patch's line numbers count in, so only the user's
        // offset carries over to the next hunk.
        shift = at as isize - line as isize;
    }
    out.extend(lines[copied..].iter().copied());
    Ok(out)
}

/// `text` with `hunks` applied when each is at the very line its number says, as on the text the
/// patch was made from, which is how a checkout finds most files: found by counting line breaks,
/// without splitting the text into lines. `None`: a hunk is elsewhere, or not there (then
/// [`apply`] searches).
fn apply_in_place(text: &str, hunks: &[PatchHunk], reverse: bool) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    // The line `copied` (a byte offset in `text`) starts.
    let (mut line, mut copied) = (0, 0);
    for hunk in hunks {
        let (from, to, start) = match reverse {
            false => (&hunk.old, &hunk.new, hunk.old_line),
            true => (&hunk.new, &hunk.old, hunk.new_line),
        };
        let at = match start.checked_sub(line)? {
            0 => copied,
            skip => copied + text[copied..].match_indices('\n').nth(skip - 1)?.0 + 1,
        };
        let end = at + from.len();
        // Whole lines: the hunk ends at a line break or where the text ends.
        let whole = from.is_empty() || from.ends_with('\n') || end == text.len();
        if !whole || !text[at..].starts_with(from.as_str()) {
            return None;
        }
        out.push_str(&text[copied..at]);
        out.push_str(to);
        (line, copied) = (start + split_lines(from).len(), end);
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Where `want` is in `lines` at or after `from`, nearest to `expected`.
fn find(lines: &[&str], want: &[&str], from: usize, expected: usize) -> Option<usize> {
    let last = lines.len().checked_sub(want.len())?;
    if from > last {
        return None;
    }
    let expected = expected.clamp(from, last);
    let matches = |at: usize| lines[at..at + want.len()] == *want;
    (0..=last - from).find_map(|distance| {
        let after = expected + distance;
        let before = expected.checked_sub(distance).filter(|&at| at >= from);
        [before, (after <= last).then_some(after)].into_iter().flatten().find(|&at| matches(at))
    })
}

fn describe_lines(lines: &Range<usize>) -> String {
    match lines.len() {
        0 | 1 => format!("line {}", lines.start + 1),
        _ => format!("lines {}-{}", lines.start + 1, lines.end),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use proptest::prelude::*;

    use super::*;

    fn numbered(range: Range<usize>) -> String {
        range.map(|n| format!("n{n}\n")).collect()
    }

    /// Makes the patch of `old` → `new`, applies it to `current` forward, and renders the result.
    fn check_apply(old: &str, new: &str, current: &str, expected: Expect) {
        let hunks = make(old, new);
        let rendered = match apply(current, &hunks, false) {
            Ok(text) => format!("{} hunk(s): {text:?}", hunks.len()),
            Err(conflict) => format!("conflict at {:?}: {}", conflict.lines, conflict.description),
        };
        expected.assert_eq(&rendered);
    }

    #[test]
    fn a_patch_applies_where_it_was_or_where_its_lines_moved() {
        let old = numbered(0..20);
        let new = old.replace("n5\n", "five\n").replace("n15\n", "fifteen\n");
        check_apply(
            &old,
            &new,
            &old,
            expect![[
                r#"2 hunk(s): "n0\nn1\nn2\nn3\nn4\nfive\nn6\nn7\nn8\nn9\nn10\nn11\nn12\nn13\nn14\nfifteen\nn16\nn17\nn18\nn19\n""#
            ]],
        );
        // Two lines typed at the top move both hunks.
        let typed = format!("top\nmore\n{old}");
        check_apply(
            &old,
            &new,
            &typed,
            expect![[
                r#"2 hunk(s): "top\nmore\nn0\nn1\nn2\nn3\nn4\nfive\nn6\nn7\nn8\nn9\nn10\nn11\nn12\nn13\nn14\nfifteen\nn16\nn17\nn18\nn19\n""#
            ]],
        );
        // A changed line inside the second hunk's context is a conflict.
        let edited = old.replace("n13\n", "thirteen\n");
        check_apply(
            &old,
            &new,
            &edited,
            expect![
                "conflict at 12..19: the lines the change was made at (lines 13-19) are no longer in the file as they were"
            ],
        );
    }

    #[test]
    fn near_changes_share_a_hunk_and_undo_restores_the_old_text() {
        let old = numbered(0..30);
        let new = old.replace("n10\n", "ten\n").replace("n13\n", "").replace("n29\n", "n29\nn30\n");
        let hunks = make(&old, &new);
        assert_eq!(hunks.len(), 2);
        assert_eq!(apply(&new, &hunks, true).unwrap(), old);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

        /// On the text it was made from, a patch gives the new text, and undone gives the old.
        #[test]
        fn a_patch_round_trips(old in prop::collection::vec(0u8..6, 0..40), new in prop::collection::vec(0u8..6, 0..40)) {
            let text = |lines: &[u8]| lines.iter().map(|n| format!("l{n}\n")).collect::<String>();
            let (old, new) = (text(&old), text(&new));
            let hunks = make(&old, &new);
            prop_assert_eq!(apply(&old, &hunks, false).unwrap(), new.clone());
            prop_assert_eq!(apply(&new, &hunks, true).unwrap(), old);
        }

        /// Where every hunk is at its line, counting line breaks finds what the search finds;
        /// texts with and without a final line break, with CRLF and empty lines.
        #[test]
        fn counting_finds_what_searching_finds(
            old in prop::collection::vec(0u8..8, 0..40),
            new in prop::collection::vec(0u8..8, 0..40),
            old_end in any::<bool>(),
            new_end in any::<bool>(),
        ) {
            let text = |lines: &[u8], end: bool| {
                let line = |n: &u8| match n { 6 => String::new(), 7 => "crlf\r".to_string(), n => format!("l{n}") };
                let mut text = lines.iter().map(line).collect::<Vec<_>>().join("\n");
                if end && !lines.is_empty() {
                    text.push('\n');
                }
                text
            };
            let (old, new) = (text(&old, old_end), text(&new, new_end));
            let hunks = make(&old, &new);
            prop_assert_eq!(apply_in_place(&old, &hunks, false), Some(new.clone()));
            prop_assert_eq!(apply_in_place(&new, &hunks, true), Some(old.clone()));
            prop_assert_eq!(apply_searching(&old, &hunks, false).ok(), Some(new.clone()));
            // A line added on top: where counting finds the hunks still, the search agrees.
            let moved = format!("top\n{old}");
            if let Some(counted) = apply_in_place(&moved, &hunks, false) {
                prop_assert_eq!(Some(counted), apply_searching(&moved, &hunks, false).ok());
            }
        }
    }
}
