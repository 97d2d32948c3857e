//! The sentences that tell the model what the user decided about a proposal: which hunks were
//! applied and what the file now reads around them, why a change could not be applied, the
//! user's reason for a rejection. Pure functions over texts and hunks.

use std::fmt::Write as _;
use std::ops::Range as Span;

use crate::diff::{Hunk, split_lines};
use crate::merge::Conflict;

/// Lines shown before and after a changed place in what the model reads.
const EXCERPT_CONTEXT: usize = 2;

/// "hunk 1" or "hunks 1, 3" for the hunk indexes 0 and 2: numbered from 1, as every surface shows
/// hunks to the user ("hunk 1 of 3"), so the model names the hunk the user means.
fn hunk_list(indexes: &[usize]) -> String {
    let numbers: Vec<String> = indexes.iter().map(|index| (index + 1).to_string()).collect();
    match numbers.len() {
        1 => format!("hunk {}", numbers[0]),
        _ => format!("hunks {}", numbers.join(", ")),
    }
}

/// What the model reads when the user applied only some hunks: which, which not, the user's
/// `reason` for those not applied, and the resulting text around every hunk (`result` is the file
/// after the chosen hunks).
pub fn partial_note(shown: &str, hunks: &[Hunk], chosen: &[usize], result: &str, reason: Option<&str>) -> String {
    let applied: Vec<usize> = hunks.iter().map(|h| h.index).filter(|i| chosen.contains(i)).collect();
    let skipped: Vec<usize> = hunks.iter().map(|h| h.index).filter(|i| !chosen.contains(i)).collect();
    let mut windows: Vec<Span<usize>> = Vec::new();
    // Where each hunk lies in the result: applied hunks before it moved it by their line delta.
    let mut delta: isize = 0;
    for hunk in hunks {
        let is_applied = chosen.contains(&hunk.index);
        let start = (hunk.line as isize + delta).max(0) as usize;
        let shown_text = if is_applied { &hunk.new_text } else { &hunk.old_text };
        let extent = line_breaks(shown_text) + 1;
        windows.push(start.saturating_sub(EXCERPT_CONTEXT)..start + extent + EXCERPT_CONTEXT);
        if is_applied {
            delta += line_breaks(&hunk.new_text) as isize - line_breaks(&hunk.old_text) as isize;
        }
    }
    let why = match reason.map(str::trim).filter(|reason| !reason.is_empty()) {
        Some(reason) => format!("The user's reason for not applying {}: {reason}\n", hunk_list(&skipped)),
        None => String::new(),
    };
    // Hunks are numbered across the files of a proposal, so a later file's start past 1.
    let count = match (hunks.first(), hunks.last()) {
        (Some(first), Some(last)) if first.index > 0 => {
            format!("of the {} hunks numbered {} to {}", hunks.len(), first.index + 1, last.index + 1)
        }
        _ => format!("of {} hunks", hunks.len()),
    };
    format!(
        "The user applied {} and did not apply {} ({count}) of this change to {shown}. \
         {why}{shown} now reads, around the changes:\n{}",
        hunk_list(&applied),
        hunk_list(&skipped),
        excerpt(result, &windows)
    )
}

/// What the model reads when its change was merged into text the user changed meanwhile.
pub fn merged_note(shown: &str) -> String {
    format!(
        "{shown} changed in the editor while this change waited for review; the change was merged into \
         the new text without touching the user's edits."
    )
}

/// Why a change could not be applied because the user changed the same lines meanwhile, with the
/// current text there.
pub fn stale_reason(shown: &str, conflict: &Conflict, current: &str) -> String {
    let window = conflict.lines.start.saturating_sub(EXCERPT_CONTEXT)
        ..conflict.lines.end.max(conflict.lines.start + 1) + EXCERPT_CONTEXT;
    format!(
        "{shown} was not changed: {}. {shown} now reads there:\n{}\nRead the file again and redo the change \
         if it is still needed.",
        conflict.description,
        excerpt(current, &[window])
    )
}

/// Why a new file could not be created: it appeared while the proposal waited.
pub fn created_meanwhile_reason(shown: &str) -> String {
    format!("{shown} was created while this write waited for review, so nothing was written; read it and decide again.")
}

/// What the model reads when the user rejected a proposal.
pub fn rejected_reason(subject: &str, reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|reason| !reason.is_empty()) {
        Some(reason) => format!("The user rejected {subject}, saying: {reason}"),
        None => format!("The user rejected {subject}."),
    }
}

/// Numbered lines of `text` (1-based) in `windows` (0-based line spans, merged where they meet),
/// with `…` between separate windows.
fn excerpt(text: &str, windows: &[Span<usize>]) -> String {
    let lines = split_lines(text);
    let mut merged: Vec<Span<usize>> = Vec::new();
    let mut sorted = windows.to_vec();
    sorted.sort_by_key(|window| window.start);
    for window in sorted {
        let window = window.start.min(lines.len())..window.end.min(lines.len());
        match merged.last_mut() {
            Some(last) if window.start <= last.end => last.end = last.end.max(window.end),
            _ => merged.push(window),
        }
    }
    let mut out = String::new();
    for (number, window) in merged.iter().enumerate() {
        if number > 0 {
            out.push_str("…\n");
        }
        for line in window.clone() {
            let _ = writeln!(out, "{:>5} | {}", line + 1, lines[line].trim_end_matches(['\r', '\n']));
        }
    }
    if out.is_empty() {
        out.push_str("(the file is empty)\n");
    }
    out.truncate(out.trim_end().len());
    out
}

fn line_breaks(text: &str) -> usize {
    let lines = split_lines(text);
    match lines.last() {
        Some(last) if last.ends_with(['\n', '\r']) => lines.len(),
        Some(_) => lines.len() - 1,
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use expect_test::expect;

    use super::*;
    use crate::diff;

    /// The note after applying `chosen` of the hunks from `old` to `new`, the others left out
    /// for `reason`.
    fn check_partial(old: &str, new: &str, chosen: &[usize], reason: Option<&str>) -> String {
        let hunks = diff::hunks(old, new, Duration::from_secs(1));
        let result = diff::apply_hunks(old, &hunks, chosen);
        partial_note("a.rs", &hunks, chosen, &result, reason)
    }
    #[test]
    fn a_partial_application_names_the_hunks_and_shows_the_result_around_them() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nB\nB2\nc\nd\ne\nf\ng\nh\nI\nj\n";
        expect![[r#"
            The user applied hunk 2 and did not apply hunk 1 (of 2 hunks) of this change to a.rs. a.rs now reads, around the changes:
                1 | a
                2 | b
                3 | c
                4 | d
            …
                7 | g
                8 | h
                9 | I
               10 | j"#]]
        .assert_eq(&check_partial(old, new, &[1], None));
    }

    #[test]
    fn a_partial_application_gives_the_users_reason_for_the_hunks_left_out() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "A\nb\nc\nd\ne\nf\ng\nh\ni\nJ\n";
        expect![[r#"
            The user applied hunk 1 and did not apply hunk 2 (of 2 hunks) of this change to a.rs. The user's reason for not applying hunk 2: j stays lowercase
            a.rs now reads, around the changes:
                1 | A
                2 | b
                3 | c
            …
                8 | h
                9 | i
               10 | j"#]]
        .assert_eq(&check_partial(old, new, &[0], Some(" j stays lowercase ")));
        assert!(!check_partial(old, new, &[0], Some("  ")).contains("reason"));
    }

    #[test]
    fn rejections_quote_the_reason() {
        assert_eq!(
            rejected_reason("this edit of a.rs", Some(" use a constant ")),
            "The user rejected this edit of a.rs, saying: use a constant"
        );
        assert_eq!(rejected_reason("the command `ls`", Some("")), "The user rejected the command `ls`.");
    }
}
