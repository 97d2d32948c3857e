//! The user's comments on the hunks of a proposal: held with the pending edit while the user
//! reviews, sent to the model in one batch with the decision on every hunk when the edit is
//! decided ("hunk 2 (lines 10–14): rejected — comment: …"), and then kept open, by the lines they
//! were about, until the next proposal for those lines answers them. Pure functions over hunks.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range as Span;
use std::path::PathBuf;

use crate::diff::{Hunk, split_lines};
use crate::merge::{Located, locate};

/// One comment on one hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// The pending edit it was made on, and the hunk's index there.
    pub edit: String,
    pub hunk: usize,
    pub text: String,
}

/// A comment the model has read, waiting for the proposal that answers it.
#[derive(Debug, Clone)]
pub(crate) struct OpenComment {
    pub comment: Comment,
    pub session_id: String,
    pub path: PathBuf,
    /// The hunk's lines (from 0) in the file as the decision left it.
    pub lines: Span<usize>,
}

/// The line (from 0) where each of `hunks` (made from `before`) starts in `current`, the text as
/// the user left it: moved by the lines typed above it meanwhile.
pub fn current_starts(before: &str, hunks: &[Hunk], current: &str) -> Vec<usize> {
    if before == current {
        return hunks.iter().map(|hunk| hunk.line).collect();
    }
    let located = locate(before, hunks, current);
    located
        .iter()
        .map(|located| match located {
            Located::At(bytes) => line_count(current.get(..bytes.start).unwrap_or(current)),
            Located::Conflict { line } => *line,
        })
        .collect()
}

/// Where each hunk lies once `chosen` are applied to the text where the hunks start at `starts`
/// ([`current_starts`]): its lines (from 0, at least one) in the result — the new text of an
/// applied hunk, the old text of one left out, moved by the line count of the applied hunks
/// before it.
pub fn result_lines(hunks: &[Hunk], chosen: &[usize], starts: &[usize]) -> Vec<Span<usize>> {
    let mut delta: isize = 0;
    hunks
        .iter()
        .zip(starts)
        .map(|(hunk, line)| {
            let applied = chosen.contains(&hunk.index);
            let start = (*line as isize + delta).max(0) as usize;
            let text = if applied { &hunk.new_text } else { &hunk.old_text };
            if applied {
                delta += line_count(&hunk.new_text) as isize - line_count(&hunk.old_text) as isize;
            }
            start..start + touched_lines(text).max(1)
        })
        .collect()
}

/// What the model reads of the user's `comments` (by hunk index) on the hunks of one file of a
/// proposal, `chosen` being those applied: every hunk with its lines as the file now reads and
/// the decision, and the comment where there is one. `None` without a comment on these hunks.
/// `starts` are the hunks' lines in the text the decision was made on ([`current_starts`]).
pub fn comments_note(
    shown: &str,
    hunks: &[Hunk],
    chosen: &[usize],
    starts: &[usize],
    comments: &BTreeMap<usize, String>,
) -> Option<String> {
    if !hunks.iter().any(|hunk| comments.contains_key(&hunk.index)) {
        return None;
    }
    let mut out = format!(
        "The user's comments on this change to {shown}, with the decision on each hunk (lines as {shown} now reads):"
    );
    for (hunk, lines) in hunks.iter().zip(result_lines(hunks, chosen, starts)) {
        let decision = if chosen.contains(&hunk.index) { "applied" } else { "rejected" };
        let place = match lines.len() {
            1 => format!("line {}", lines.start + 1),
            _ => format!("lines {}–{}", lines.start + 1, lines.end),
        };
        let _ = write!(out, "\nhunk {} ({place}): {decision}", hunk.index + 1);
        if let Some(comment) = comments.get(&hunk.index) {
            let _ = write!(out, " — comment: {}", one_line(comment));
        }
    }
    Some(out)
}

/// The open comments answered by a proposal of `session_id` whose `hunks` change `path`: those
/// on lines the hunks touch (or, for an insertion, sit at). They are taken out of `open`.
pub(crate) fn answered(
    open: &mut Vec<OpenComment>,
    session_id: &str,
    path: &std::path::Path,
    hunks: &[Hunk],
) -> Vec<Comment> {
    // An insertion sits between two lines: it is about both.
    let spans: Vec<Span<usize>> = hunks
        .iter()
        .map(|hunk| match hunk.old_text.is_empty() {
            true => hunk.line.saturating_sub(1)..hunk.line + 1,
            false => hunk.line..hunk.line + touched_lines(&hunk.old_text),
        })
        .collect();
    let meets = |lines: &Span<usize>| spans.iter().any(|span| span.start < lines.end && lines.start < span.end);
    let (answered, kept): (Vec<OpenComment>, Vec<OpenComment>) = std::mem::take(open)
        .into_iter()
        .partition(|open| open.session_id == session_id && open.path == path && meets(&open.lines));
    *open = kept;
    answered.into_iter().map(|open| open.comment).collect()
}

/// A comment as one line: its line breaks read as spaces, trimmed.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The line breaks in `text`.
fn line_count(text: &str) -> usize {
    let lines = split_lines(text);
    match lines.last() {
        Some(last) if last.ends_with(['\n', '\r']) => lines.len(),
        Some(_) => lines.len() - 1,
        None => 0,
    }
}

/// How many lines `text` has characters on (a final line break starts no line).
fn touched_lines(text: &str) -> usize {
    split_lines(text).len()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use expect_test::expect;

    use super::*;
    use crate::diff;

    fn hunks_of(old: &str, new: &str) -> Vec<Hunk> {
        diff::hunks(old, new, Duration::from_secs(1))
    }

    const OLD: &str = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n";

    #[test]
    fn every_hunk_is_named_with_its_lines_decision_and_comment() {
        let new = "a\nB\nB2\nc\nd\ne\nf\ng\nH\ni\nj\nk\n";
        let hunks = hunks_of(OLD, new);
        let comments = BTreeMap::from([(0, "one line\nplease".to_string()), (2, "keep l".to_string())]);
        let starts = current_starts(OLD, &hunks, OLD);
        expect![[r#"
            The user's comments on this change to a.rs, with the decision on each hunk (lines as a.rs now reads):
            hunk 1 (lines 2–3): applied — comment: one line please
            hunk 2 (line 9): rejected
            hunk 3 (line 13): rejected — comment: keep l"#]]
        .assert_eq(&comments_note("a.rs", &hunks, &[0], &starts, &comments).unwrap());
        assert_eq!(comments_note("a.rs", &hunks, &[0], &starts, &BTreeMap::new()), None);
        // Two lines typed at the top meanwhile move every hunk down two.
        let typed = format!("x\ny\n{OLD}");
        let moved = current_starts(OLD, &hunks, &typed);
        assert_eq!(moved, starts.iter().map(|line| line + 2).collect::<Vec<_>>());
        let note = comments_note("a.rs", &hunks, &[], &moved, &comments).unwrap();
        assert!(note.ends_with("hunk 1 (line 4): rejected — comment: one line please\nhunk 2 (line 10): rejected\nhunk 3 (line 14): rejected — comment: keep l"), "{note}");
    }

    #[test]
    fn a_comment_is_answered_by_the_next_proposal_on_its_lines_only() {
        let open = |hunk: usize, lines: Span<usize>, session: &str| OpenComment {
            comment: Comment { edit: "e1".into(), hunk, text: format!("c{hunk}") },
            session_id: session.into(),
            path: PathBuf::from("/w/a.rs"),
            lines,
        };
        let mut comments = vec![open(0, 1..2, "s1"), open(1, 8..9, "s1"), open(2, 1..2, "s2")];
        // The revision changes line 2 (index 1) only.
        let revision = hunks_of(OLD, &OLD.replace("b\n", "bee\n"));
        let answered = answered(&mut comments, "s1", std::path::Path::new("/w/a.rs"), &revision);
        assert_eq!(answered.iter().map(|c| c.hunk).collect::<Vec<_>>(), [0]);
        assert_eq!(comments.iter().map(|c| c.comment.hunk).collect::<Vec<_>>(), [1, 2]);
    }
}
