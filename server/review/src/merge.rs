//! Rebasing a proposed edit onto a buffer the user changed after it was proposed: a line-based
//! three-way merge that applies the proposal's changes where the user did not touch, and refuses
//! (with the place) where both changed the same lines, so user typing is never overwritten.

use std::ops::Range;
use std::time::Duration;

use crate::diff::{Hunk, LineChange, line_changes, split_lines};

/// How long each of the two diffs may search for a small diff; a coarser one only means more
/// conflicts, never a wrong merge.
const DIFF_DEADLINE: Duration = Duration::from_millis(500);

/// Where the proposal and the user's changes meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The lines of the current text (from 0, end excluded) the user changed where the proposal
    /// changes too; empty where the user deleted lines.
    pub lines: Range<usize>,
    /// For the model: what changed where, in 1-based line numbers.
    pub description: String,
}

/// Which side of the merge a change comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Proposal,
    User,
}

/// A change of either side, in lines of the base text.
struct SideChange {
    side: Side,
    change: LineChange,
}

/// `current` with the changes `proposed` made to `base`, when none of them touches lines the
/// user changed from `base` to `current`. Changes on adjacent lines merge; the same change made
/// on both sides is kept once; line breaks are kept as each side wrote them.
pub fn rebase(base: &str, proposed: &str, current: &str) -> Result<String, Conflict> {
    let base_lines = split_lines(base);
    let proposed_lines = split_lines(proposed);
    let current_lines = split_lines(current);
    let mut changes: Vec<SideChange> = line_changes(&base_lines, &proposed_lines, DIFF_DEADLINE)
        .into_iter()
        .map(|change| SideChange { side: Side::Proposal, change })
        .chain(
            line_changes(&base_lines, &current_lines, DIFF_DEADLINE)
                .into_iter()
                .map(|change| SideChange { side: Side::User, change }),
        )
        .collect();
    changes.sort_by_key(|side_change| (side_change.change.old.start, side_change.change.old.end));

    let mut merged = String::with_capacity(current.len());
    let mut conflicts: Vec<Conflict> = Vec::new();
    // Lines of base copied so far, and how far the current text's line numbers run ahead of base's.
    let mut base_at = 0;
    let mut current_shift: isize = 0;
    let mut rest = changes.as_slice();
    while let Some(first) = rest.first() {
        // A cluster: changes of either side that overlap, transitively.
        let mut span = first.change.old.clone();
        let mut count = 1;
        while let Some(next) = rest.get(count)
            && overlaps(&span, &next.change.old)
        {
            span.start = span.start.min(next.change.old.start);
            span.end = span.end.max(next.change.old.end);
            count += 1;
        }
        let (cluster, after) = rest.split_at(count);
        rest = after;

        merged.extend(base_lines[base_at..span.start].iter().copied());
        base_at = span.end;
        let proposal = side_text(&base_lines, &proposed_lines, span.clone(), cluster, Side::Proposal);
        let user = side_text(&base_lines, &current_lines, span.clone(), cluster, Side::User);
        let user_line_count = user_lines_in(cluster, span.len());
        let current_start = (span.start as isize + current_shift) as usize;
        current_shift += user_line_count as isize - span.len() as isize;

        let touched_by_user = cluster.iter().any(|side_change| side_change.side == Side::User);
        let touched_by_proposal = cluster.iter().any(|side_change| side_change.side == Side::Proposal);
        if !touched_by_user {
            merged.push_str(&proposal);
        } else if !touched_by_proposal || proposal == user {
            merged.push_str(&user);
        } else if let Some(lines) = line_by_line(&base_lines[span.clone()], &proposal, &user) {
            merged.push_str(&lines);
        } else {
            conflicts.push(conflict(current_start..current_start + user_line_count, span));
        }
    }
    merged.extend(base_lines[base_at..].iter().copied());

    let mut conflicts = conflicts.into_iter();
    match conflicts.next() {
        None => Ok(merged),
        Some(mut first) => {
            let more = conflicts.len();
            if more > 0 {
                first.description.push_str(&format!(" ({more} more place(s) conflict too)"));
            }
            Err(first)
        }
    }
}

/// Both sides changed the lines of a cluster, each keeping their number: merged line by line
/// when no line was changed differently by the two (a change the user already took, inside a
/// block they changed around it); `None` otherwise.
fn line_by_line(base: &[&str], proposal: &str, user: &str) -> Option<String> {
    let (proposal, user) = (split_lines(proposal), split_lines(user));
    if proposal.len() != base.len() || user.len() != base.len() {
        return None;
    }
    let mut merged = String::new();
    for ((base, proposal), user) in base.iter().zip(&proposal).zip(&user) {
        let line = match (proposal == base, user == base) {
            (true, _) => user,
            (false, true) => proposal,
            (false, false) if proposal == user => user,
            (false, false) => return None,
        };
        merged.push_str(line);
    }
    Some(merged)
}

/// Where a hunk of a proposal made from some text is in that text as the user changed it since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// Untouched by the user: these bytes of the current text hold the hunk's old text.
    At(Range<usize>),
    /// The user changed lines the hunk changes too (accepting it will be refused); it was at
    /// about this line (from 0) of the current text.
    Conflict { line: usize },
}

/// Where each of `hunks` (made from `base`) is in `current`, by the same line diff [`rebase`]
/// merges with: moved by the lines the user added or removed above it, or in conflict where the
/// user changed its lines.
pub fn locate(base: &str, hunks: &[Hunk], current: &str) -> Vec<Located> {
    let base_lines = split_lines(base);
    let current_lines = split_lines(current);
    let user = line_changes(&base_lines, &current_lines, DIFF_DEADLINE);
    let base_starts = starts(&base_lines);
    let current_starts = starts(&current_lines);
    hunks
        .iter()
        .map(|hunk| {
            // The base lines the hunk changes (empty for an insertion before line `hunk.line`).
            let last = match hunk.old_bytes.is_empty() {
                true => hunk.line,
                false => base_starts.partition_point(|&start| start < hunk.old_bytes.end),
            };
            let lines = hunk.line..last.max(hunk.line);
            let shift: isize = user
                .iter()
                .filter(|change| change.old.end <= lines.start && !overlaps(&change.old, &lines))
                .map(|change| change.new.len() as isize - change.old.len() as isize)
                .sum();
            let line = (hunk.line as isize + shift).max(0) as usize;
            if user.iter().any(|change| overlaps(&change.old, &lines)) {
                return Located::Conflict { line };
            }
            let column = hunk.old_bytes.start - base_starts.get(hunk.line).copied().unwrap_or(0);
            let start = current_starts.get(line).copied().unwrap_or(current.len()) + column;
            let bytes = start..start + hunk.old_bytes.len();
            match current.get(bytes.clone()) == Some(hunk.old_text.as_str()) {
                true => Located::At(bytes),
                false => Located::Conflict { line },
            }
        })
        .collect()
}

/// The byte offset where each line starts, and the text's length (where a line after the last
/// would start).
fn starts(lines: &[&str]) -> Vec<usize> {
    let mut at = 0;
    let mut starts: Vec<usize> = lines
        .iter()
        .map(|line| {
            let start = at;
            at += line.len();
            start
        })
        .collect();
    starts.push(at);
    starts
}

/// Whether two changes (ranges of base lines, empty for an insertion) touch the same lines.
/// Changes on adjacent lines do not; an insertion conflicts with a change around it, and with
/// another insertion at the same place, whose order nobody can tell.
fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => a.start == b.start,
        (true, false) => b.start < a.start && a.start < b.end,
        (false, true) => a.start < b.start && b.start < a.end,
        (false, false) => a.start < b.end && b.start < a.end,
    }
}

/// One side's text for base lines `span`: base lines, with that side's changes in the cluster
/// applied.
fn side_text(base: &[&str], side_lines: &[&str], span: Range<usize>, cluster: &[SideChange], side: Side) -> String {
    let mut text = String::new();
    let mut at = span.start;
    for side_change in cluster.iter().filter(|side_change| side_change.side == side) {
        let change = &side_change.change;
        text.extend(base[at..change.old.start].iter().copied());
        text.extend(side_lines[change.new.clone()].iter().copied());
        at = change.old.end;
    }
    text.extend(base[at..span.end].iter().copied());
    text
}

/// How many lines of the current text the user's version of `span_len` base lines has.
fn user_lines_in(cluster: &[SideChange], span_len: usize) -> usize {
    let user_changes = cluster.iter().filter(|side_change| side_change.side == Side::User);
    user_changes
        .fold(span_len, |lines, side_change| lines + side_change.change.new.len() - side_change.change.old.len())
}

fn conflict(lines: Range<usize>, base_span: Range<usize>) -> Conflict {
    let user = match lines.len() {
        0 => format!("deleted the lines before line {} of the current text", lines.start + 1),
        _ => format!("changed {} of the current text", describe_lines(&lines)),
    };
    let proposal = match base_span.len() {
        0 => format!("inserts lines before line {}", base_span.start + 1),
        _ => format!("changes {}", describe_lines(&base_span)),
    };
    let description = format!(
        "the file changed after the edit was proposed: the user {user}, where the edit {proposal} of the text it \
         was made from"
    );
    Conflict { lines, description }
}

/// "line 4" or "lines 4-6", 1-based, for a non-empty range.
fn describe_lines(lines: &Range<usize>) -> String {
    match lines.len() {
        1 => format!("line {}", lines.start + 1),
        _ => format!("lines {}-{}", lines.start + 1, lines.end),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use proptest::prelude::*;

    use super::*;

    /// Renders the rebase of `proposed` onto `current` (both made from `base`): the merged text,
    /// or the conflict with its lines.
    fn check_rebase(base: &str, proposed: &str, current: &str, expected: Expect) {
        let rendered = match rebase(base, proposed, current) {
            Ok(merged) => format!("clean: {merged:?}"),
            Err(Conflict { lines, description }) => format!("conflict at {lines:?}: {description}"),
        };
        expected.assert_eq(&rendered);
    }

    #[test]
    fn user_typing_elsewhere_merges_cleanly() {
        check_rebase("a\nb\nc\nd\n", "a\nB\nc\nd\n", "a\nb\nc\nd!\n", expect![[r#"clean: "a\nB\nc\nd!\n""#]]);
    }

    #[test]
    fn user_editing_the_same_lines_conflicts() {
        check_rebase(
            "a\nb\nc\nd\n",
            "a\nB\nc\nd\n",
            "a\nbee\nc\nd\n",
            expect![
                "conflict at 1..2: the file changed after the edit was proposed: the user changed line 2 of the current text, where the edit changes line 2 of the text it was made from"
            ],
        );
        check_rebase(
            "a\nb\nc\nd\n",
            "a\nB\nC\nd\n",
            "a\nc\nd\n",
            expect![
                "conflict at 1..2: the file changed after the edit was proposed: the user changed line 2 of the current text, where the edit changes lines 2-3 of the text it was made from"
            ],
        );
        check_rebase(
            "a\nb\nc\nd\n",
            "a\nB\nc\nd\n",
            "a\nd\n",
            expect![
                "conflict at 1..1: the file changed after the edit was proposed: the user deleted the lines before line 2 of the current text, where the edit changes lines 2-3 of the text it was made from"
            ],
        );
        // Two insertions at one place: nobody can tell which goes first.
        check_rebase(
            "a\nb\nc\n",
            "a\nnew\nb\nc\n",
            "a\nother\nb\nc\n",
            expect![
                "conflict at 1..2: the file changed after the edit was proposed: the user changed line 2 of the current text, where the edit inserts lines before line 2 of the text it was made from"
            ],
        );
    }

    #[test]
    fn lines_the_user_inserted_above_shift_the_proposal() {
        check_rebase("a\nb\nc\n", "a\nb\nC\n", "top\nmore\na\nb\nc\n", expect![[r#"clean: "top\nmore\na\nb\nC\n""#]]);
    }

    #[test]
    fn changes_on_adjacent_lines_merge() {
        check_rebase("a\nb\nc\n", "a\nB\nc\n", "a\nb\nC\n", expect![[r#"clean: "a\nB\nC\n""#]]);
        check_rebase("a\nb\nc\n", "a\nnew\nb\nc\n", "a\nB\nc\n", expect![[r#"clean: "a\nnew\nB\nc\n""#]]);
        check_rebase("a\nb\nc\n", "a\nb\nnew\nc\n", "a\nB\nc\n", expect![[r#"clean: "a\nB\nnew\nc\n""#]]);
    }

    #[test]
    fn line_breaks_are_kept_as_written() {
        check_rebase(
            "a\r\nb\r\nc\r\n",
            "a\r\nB\r\nc\r\n",
            "a\r\nb\r\nc\r\nd\r\n",
            expect![[r#"clean: "a\r\nB\r\nc\r\nd\r\n""#]],
        );
        check_rebase("a\rb\rc", "a\rB\rc", "A\rb\rc", expect![[r#"clean: "A\rB\rc""#]]);
    }

    #[test]
    fn the_same_change_on_both_sides_is_kept_once() {
        check_rebase("a\nb\nc\n", "a\nB\nc\nd\n", "a\nB\nc\n", expect![[r#"clean: "a\nB\nc\nd\n""#]]);
        check_rebase("a\nb\n", "a\nx\nb\n", "a\nx\nb\n", expect![[r#"clean: "a\nx\nb\n""#]]);
    }

    #[test]
    fn a_change_the_user_already_made_inside_their_own_block_is_kept_once() {
        // The user took line 2 of the proposal and changed lines 1 and 3 around it: the rest of
        // the proposal (line 4) still applies, line by line.
        check_rebase("a\nb\nc\nd\n", "a\nB\nc\nD\n", "A\nB\nC\nd\n", expect![[r#"clean: "A\nB\nC\nD\n""#]]);
        // A line both changed differently is still a conflict.
        check_rebase(
            "a\nb\nc\n",
            "a\nX\nc\n",
            "A\nY\nc\n",
            expect![
                "conflict at 0..2: the file changed after the edit was proposed: the user changed lines 1-2 of the current text, where the edit changes lines 1-2 of the text it was made from"
            ],
        );
    }

    #[test]
    fn without_user_changes_the_proposal_applies_as_is() {
        check_rebase("a\nb", "a\nb\nc", "a\nb", expect![[r#"clean: "a\nb\nc""#]]);
        check_rebase("", "new\n", "", expect![[r#"clean: "new\n""#]]);
        check_rebase("a\n", "a\n", "a\nb\n", expect![[r#"clean: "a\nb\n""#]]);
    }

    /// Where the hunks of `base` → `proposed` are in `current`: each as the text found there, or
    /// a conflict with its line.
    fn check_locate(base: &str, proposed: &str, current: &str, expected: Expect) {
        let hunks = crate::diff::hunks(base, proposed, DIFF_DEADLINE);
        let shown: Vec<String> = locate(base, &hunks, current)
            .into_iter()
            .map(|located| match located {
                Located::At(bytes) => format!("{bytes:?} {:?}", &current[bytes.clone()]),
                Located::Conflict { line } => format!("conflict near line {line}"),
            })
            .collect();
        expected.assert_eq(&shown.join("\n"));
    }

    #[test]
    fn hunks_move_with_the_lines_the_user_added_or_removed_above() {
        // b → B and d → D, with two lines typed at the top.
        check_locate(
            "a\nb\nc\nd\n",
            "a\nB\nc\nD\n",
            "a\nb\nc\nd\n",
            expect![[r#"
            2..3 "b"
            6..7 "d""#]],
        );
        check_locate(
            "a\nb\nc\nd\n",
            "a\nB\nc\nD\n",
            "new\nlines\na\nb\nc\nd\n",
            expect![[r#"
            12..13 "b"
            16..17 "d""#]],
        );
        // A line removed between the two hunks moves only the second.
        check_locate(
            "a\nb\nc\nd\n",
            "a\nB\nc\nD\n",
            "a\nb\nd\n",
            expect![[r#"
            2..3 "b"
            4..5 "d""#]],
        );
        // An insertion before line 2 moves too.
        check_locate("a\nb\n", "a\nnew\nb\n", "top\na\nb\n", expect![[r#"6..6 """#]]);
    }

    #[test]
    fn a_hunk_whose_lines_the_user_changed_is_a_conflict() {
        check_locate(
            "a\nb\nc\nd\n",
            "a\nB\nc\nD\n",
            "x\na\nbee\nc\nd\n",
            expect![[r#"
            conflict near line 2
            10..11 "d""#]],
        );
        check_locate("a\nb\nc\n", "a\nB\nc\n", "a\nc\n", expect![[r#"conflict near line 1"#]]);
    }

    const LINES: &[&str] = &["a\n", "b\n", "c\r\n", "d\r", "é😀\n", "x"];

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(LINES), 0..12).prop_map(|lines| lines.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

        /// Unchanged text leaves every hunk where it was.
        #[test]
        fn unchanged_text_locates_every_hunk_in_place(base in text(), other in text()) {
            let hunks = crate::diff::hunks(&base, &other, DIFF_DEADLINE);
            let located = locate(&base, &hunks, &base);
            prop_assert_eq!(located, hunks.iter().map(|hunk| Located::At(hunk.old_bytes.clone())).collect::<Vec<_>>());
        }

        /// With one side unchanged, the rebase is the other side, whatever the texts.
        #[test]
        fn an_unchanged_side_gives_the_other(base in text(), other in text()) {
            prop_assert_eq!(rebase(&base, &other, &base), Ok(other.clone()));
            prop_assert_eq!(rebase(&base, &base, &other), Ok(other.clone()));
            prop_assert_eq!(rebase(&base, &other, &other), Ok(other));
        }
    }
}
