//! Pending edits as the editor and the model see them: the `PendingEdit` of `edit_proposed`, the
//! `edit_resolved` event, the review diagnostics, and the sentences that tell the model what the
//! user decided. Pure functions over texts and hunks; the state lives in [`super::review`].

use std::fmt::Write as _;
use std::ops::Range as Span;

use serde::Serialize;
use serde_json::{Value, json};
use tower_lsp_server::ls_types::{Diagnostic, DiagnosticSeverity, NumberOrString, Range};

use crate::lsp::diff::{self, Hunk};
use crate::lsp::merge::Conflict;

/// Lines shown before and after a changed place in what the model reads.
const EXCERPT_CONTEXT: usize = 2;
/// Longest piece of text quoted in a diagnostic message.
const QUOTE_CHARS: usize = 40;

/// A proposal waiting for the user, as `edit_proposed` and `reins.edit.list` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingEdit {
    pub id: String,
    pub session_id: String,
    pub run_id: String,
    pub tool_call_id: String,
    /// `edit`, `write` or `bash`.
    pub tool: String,
    #[serde(flatten)]
    pub subject: Subject,
    pub notes: Vec<String>,
}

/// What the proposal changes: a file, or (bash) nothing until the command runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Subject {
    File(FileSubject),
    Command { command: String, cwd: String },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSubject {
    pub uri: String,
    /// The buffer version the hunks apply to; `None` (null) when the text came from the disk.
    pub version: Option<i32>,
    /// A new file: a `CreateFile` plus its content.
    pub create: bool,
    pub hunks: Vec<HunkView>,
    /// The whole change as a unified diff.
    pub diff: String,
}

/// One hunk on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HunkView {
    pub index: usize,
    pub range: Range,
    pub old_text: String,
    pub new_text: String,
}

/// How a pending edit ended, as `edit_resolved` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Applied,
    PartiallyApplied,
    Rejected,
    Failed,
    Stale,
    Cancelled,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::PartiallyApplied => "partially_applied",
            Outcome::Rejected => "rejected",
            Outcome::Failed => "failed",
            Outcome::Stale => "stale",
            Outcome::Cancelled => "cancelled",
        }
    }
}

impl HunkView {
    pub fn of(hunk: &Hunk) -> Self {
        Self { index: hunk.index, range: hunk.range, old_text: hunk.old_text.clone(), new_text: hunk.new_text.clone() }
    }
}

/// The `edit_proposed` event.
pub fn proposed_event(edit: &PendingEdit) -> Value {
    json!({ "type": "edit_proposed", "edit": edit })
}

/// The `edit_resolved` event: `hunks` for the outcomes that applied something, `reason` for the
/// others (and for `partially_applied`, the user's reason for the hunks left out, if any).
pub fn resolved_event(id: &str, outcome: Outcome, hunks: &[usize], reason: Option<&str>) -> Value {
    let mut event = json!({ "type": "edit_resolved", "id": id, "outcome": outcome.as_str() });
    if matches!(outcome, Outcome::Applied | Outcome::PartiallyApplied) {
        event["hunks"] = json!(hunks);
    }
    if let Some(reason) = reason {
        event["reason"] = json!(reason);
    }
    event
}

/// One Information diagnostic (source `reins`, code = the pending id) per hunk.
pub fn diagnostics(edit: &PendingEdit) -> Vec<Diagnostic> {
    let Subject::File(file) = &edit.subject else { return Vec::new() };
    file.hunks
        .iter()
        .map(|hunk| {
            let what = match (hunk.old_text.is_empty(), hunk.new_text.is_empty()) {
                (true, _) => format!("insert {}", quote(&hunk.new_text)),
                (false, true) => format!("delete {}", quote(&hunk.old_text)),
                (false, false) => format!("replace {} with {}", quote(&hunk.old_text), quote(&hunk.new_text)),
            };
            Diagnostic {
                range: hunk.range,
                severity: Some(DiagnosticSeverity::INFORMATION),
                code: Some(NumberOrString::String(edit.id.clone())),
                source: Some("reins".to_string()),
                message: format!(
                    "agent edit {} (hunk {} of {}): {what}; accept or reject it with a code action",
                    edit.id,
                    hunk.index,
                    file.hunks.len()
                ),
                ..Diagnostic::default()
            }
        })
        .collect()
}

/// The first line of `text`, shortened, in backticks.
fn quote(text: &str) -> String {
    let mut lines = text.lines().filter(|line| !line.trim().is_empty());
    let first = lines.next().unwrap_or("").trim();
    let mut shown: String = first.chars().take(QUOTE_CHARS).collect();
    if first.chars().count() > QUOTE_CHARS || lines.next().is_some() {
        shown.push('…');
    }
    if shown.is_empty() { "a line break".to_string() } else { format!("`{shown}`") }
}

/// "hunk 0" or "hunks 0, 2".
fn hunk_list(indexes: &[usize]) -> String {
    let numbers: Vec<String> = indexes.iter().map(usize::to_string).collect();
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
        let start = (hunk.range.start.line as isize + delta).max(0) as usize;
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
    format!(
        "The user applied {} and did not apply {} (of {} hunks) of this change to {shown}. \
         {why}{shown} now reads, around the changes:\n{}",
        hunk_list(&applied),
        hunk_list(&skipped),
        hunks.len(),
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
    let lines = diff::split_lines(text);
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
    let lines = diff::split_lines(text);
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
    use crate::lsp::documents::PositionEncoding;

    /// The note after applying `chosen` of the hunks from `old` to `new`, the others left out
    /// for `reason`.
    fn check_partial(old: &str, new: &str, chosen: &[usize], reason: Option<&str>) -> String {
        let hunks = diff::hunks(old, new, PositionEncoding::Utf16, Duration::from_secs(1));
        let result = diff::apply_hunks(old, &hunks, chosen);
        partial_note("a.rs", &hunks, chosen, &result, reason)
    }

    #[test]
    fn a_partial_application_names_the_hunks_and_shows_the_result_around_them() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nB\nB2\nc\nd\ne\nf\ng\nh\nI\nj\n";
        expect![[r#"
            The user applied hunk 1 and did not apply hunk 0 (of 2 hunks) of this change to a.rs. a.rs now reads, around the changes:
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
            The user applied hunk 0 and did not apply hunk 1 (of 2 hunks) of this change to a.rs. The user's reason for not applying hunk 1: j stays lowercase
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
    fn resolved_events_carry_hunks_or_a_reason() {
        assert_eq!(
            resolved_event("e1", Outcome::PartiallyApplied, &[0], None).to_string(),
            r#"{"hunks":[0],"id":"e1","outcome":"partially_applied","type":"edit_resolved"}"#
        );
        assert_eq!(
            resolved_event("e1", Outcome::PartiallyApplied, &[0], Some("not that one")).to_string(),
            r#"{"hunks":[0],"id":"e1","outcome":"partially_applied","reason":"not that one","type":"edit_resolved"}"#
        );
        assert_eq!(
            resolved_event("e2", Outcome::Rejected, &[], Some("no")).to_string(),
            r#"{"id":"e2","outcome":"rejected","reason":"no","type":"edit_resolved"}"#
        );
    }

    #[test]
    fn diagnostics_quote_the_change() {
        let hunks = diff::hunks("x = 41\n", "x = 42\n", PositionEncoding::Utf16, Duration::from_secs(1));
        let edit = PendingEdit {
            id: "e1".into(),
            session_id: "s".into(),
            run_id: "r".into(),
            tool_call_id: "c".into(),
            tool: "edit".into(),
            subject: Subject::File(FileSubject {
                uri: "file:///a".into(),
                version: Some(1),
                create: false,
                hunks: hunks.iter().map(HunkView::of).collect(),
                diff: String::new(),
            }),
            notes: Vec::new(),
        };
        let diagnostics = diagnostics(&edit);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(
            diagnostics[0].message,
            "agent edit e1 (hunk 0 of 1): replace `41` with `42`; accept or reject it with a code action"
        );
        assert_eq!(diagnostics[0].range, hunks[0].range);
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
