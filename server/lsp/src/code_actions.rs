//! Code actions for every LSP client: on a selection, ask the agent about it, with or without a
//! preset question (a `reins.ask` command carrying the range and the diagnostics the client
//! reported inside it); on the hunks of a pending edit, accept or reject it, or comment on a hunk
//! (a `reins.edit.comment` command without its comment: the client asks the user for it, as it
//! asks for the question of "Ask agent about selection").

use serde_json::{Value, json};
use tower_lsp_server::ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, Command, Diagnostic, Range,
};

use crate::ask;
use crate::review::Shown;

/// (title, preset question, kind). The plain "Ask agent about selection" has no question: the
/// Neovim plugin asks for one; other clients get [`ask::DEFAULT_QUESTION`].
const ACTIONS: &[(&str, Option<&str>, &str)] = &[
    ("Ask agent about selection", None, "refactor"),
    ("Agent: explain this", Some("Explain what this code does and how it works."), "refactor"),
    (
        "Agent: review this",
        Some("Review this code: point out bugs, risks and unclear parts, most important first."),
        "refactor",
    ),
    ("Agent: fix the diagnostics here", Some("Fix the diagnostics in this selection."), "quickfix"),
    (
        "Agent: write tests for this",
        Some("Write tests for this code, in the style of the project's existing tests."),
        "refactor",
    ),
];

const FIX_DIAGNOSTICS: &str = "Agent: fix the diagnostics here";

/// The actions for a code-action request: none on an empty range; "fix the diagnostics" only
/// when there are diagnostics in the range; only the kinds the client asked for, if it asked.
pub fn for_range(params: &CodeActionParams) -> Vec<CodeActionOrCommand> {
    let range = params.range;
    if range.start == range.end {
        return Vec::new();
    }
    let diagnostics: Vec<&Diagnostic> =
        params.context.diagnostics.iter().filter(|diagnostic| ask::overlaps(diagnostic, range)).collect();
    let wanted = |kind: &str| match &params.context.only {
        None => true,
        Some(only) => {
            only.iter().any(|wanted| kind == wanted.as_str() || kind.starts_with(&format!("{}.", wanted.as_str())))
        }
    };
    ACTIONS
        .iter()
        .filter(|(title, _, kind)| wanted(kind) && (*title != FIX_DIAGNOSTICS || !diagnostics.is_empty()))
        .map(|(title, question, kind)| {
            let mut argument = json!({
                "uri": params.text_document.uri.as_str(),
                "range": range,
                "diagnostics": diagnostics,
            });
            if let Some(question) = question {
                argument["question"] = Value::String(question.to_string());
            }
            CodeActionOrCommand::CodeAction(CodeAction {
                title: title.to_string(),
                kind: Some(CodeActionKind::from(kind.to_string())),
                diagnostics: (*title == FIX_DIAGNOSTICS).then(|| diagnostics.iter().map(|d| (*d).clone()).collect()),
                command: Some(Command {
                    title: title.to_string(),
                    command: "reins.ask".to_string(),
                    arguments: Some(vec![argument]),
                }),
                ..CodeAction::default()
            })
        })
        .collect()
}

/// "Accept agent edit", "Accept only hunk N of M (reject the others)" (per hunk here, when there
/// are several), "Reject agent edit" and "Comment on this change" (per hunk here) for each pending
/// edit with a hunk on the lines of `range` (an empty range is the cursor's line). Accepting some
/// hunks decides the whole edit, so the title says the others go.
pub fn for_pending(pending: &[Shown], range: Range) -> Vec<CodeActionOrCommand> {
    let mut actions = Vec::new();
    for edit in pending {
        let touched: Vec<usize> =
            edit.hunks.iter().filter(|(_, hunk)| lines_meet(*hunk, range)).map(|(index, _)| *index).collect();
        if touched.is_empty() {
            continue;
        }
        let count = edit.hunks.len();
        actions.push(review_action("Accept agent edit", "reins.edit.accept", json!({ "id": edit.id })));
        for index in touched.iter().copied().filter(|_| count > 1) {
            let argument = json!({ "id": edit.id, "hunks": [index] });
            let others = if count == 2 { "the other" } else { "the others" };
            let title = format!("Accept only hunk {} of {count} (reject {others})", index + 1);
            actions.push(review_action(&title, "reins.edit.accept", argument));
        }
        actions.push(review_action("Reject agent edit", "reins.edit.reject", json!({ "id": edit.id })));
        for index in touched {
            let title = match count {
                1 => "Comment on this change".to_string(),
                _ => format!("Comment on this change (hunk {} of {count})", index + 1),
            };
            actions.push(review_action(&title, "reins.edit.comment", json!({ "id": edit.id, "hunk": index })));
        }
    }
    actions
}

fn review_action(title: &str, command: &str, argument: Value) -> CodeActionOrCommand {
    CodeActionOrCommand::CodeAction(CodeAction {
        title: title.to_string(),
        kind: Some(CodeActionKind::QUICKFIX),
        command: Some(Command {
            title: title.to_string(),
            command: command.to_string(),
            arguments: Some(vec![argument]),
        }),
        ..CodeAction::default()
    })
}

/// Whether two ranges share a line. A range that ends at the start of a line does not reach
/// into it (unless it is empty: an insertion point or a cursor).
fn lines_meet(a: Range, b: Range) -> bool {
    let last_line = |range: Range| {
        if range.end.character == 0 && range.end.line > range.start.line { range.end.line - 1 } else { range.end.line }
    };
    a.start.line <= last_line(b) && b.start.line <= last_line(a)
}

#[cfg(test)]
mod tests {
    use tower_lsp_server::ls_types::{
        CodeActionContext, PartialResultParams, Position, Range, TextDocumentIdentifier, WorkDoneProgressParams,
    };

    use super::*;

    fn titles(range: ((u32, u32), (u32, u32)), diagnostic_lines: &[u32], only: Option<&str>) -> Vec<String> {
        let range = Range { start: Position::new(range.0.0, range.0.1), end: Position::new(range.1.0, range.1.1) };
        let params = CodeActionParams {
            text_document: TextDocumentIdentifier { uri: "file:///w/a.rs".parse().unwrap() },
            range,
            context: CodeActionContext {
                diagnostics: diagnostic_lines
                    .iter()
                    .map(|line| Diagnostic {
                        range: Range { start: Position::new(*line, 0), end: Position::new(*line, 1) },
                        message: "bad".into(),
                        ..Diagnostic::default()
                    })
                    .collect(),
                only: only.map(|kind| vec![CodeActionKind::from(kind.to_string())]),
                trigger_kind: None,
            },
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        };
        for_range(&params)
            .into_iter()
            .map(|action| match action {
                CodeActionOrCommand::CodeAction(action) => {
                    let argument = &action.command.unwrap().arguments.unwrap()[0];
                    format!("{} ({} diagnostics)", action.title, argument["diagnostics"].as_array().unwrap().len())
                }
                CodeActionOrCommand::Command(command) => command.title,
            })
            .collect()
    }

    #[test]
    fn a_selection_offers_the_ask_actions() {
        assert_eq!(
            titles(((1, 0), (3, 0)), &[2, 9], None),
            [
                "Ask agent about selection (1 diagnostics)",
                "Agent: explain this (1 diagnostics)",
                "Agent: review this (1 diagnostics)",
                "Agent: fix the diagnostics here (1 diagnostics)",
                "Agent: write tests for this (1 diagnostics)",
            ]
        );
    }

    /// The review actions for a request on `lines` (start, end; character 0) with one pending
    /// edit whose hunks span these lines.
    fn review_titles(hunk_lines: &[(u32, u32)], lines: (u32, u32)) -> Vec<String> {
        let at = |start: u32, end: u32| Range { start: Position::new(start, 0), end: Position::new(end, 0) };
        let hunks = hunk_lines.iter().enumerate().map(|(index, (start, end))| (index, at(*start, *end))).collect();
        let edit = Shown {
            id: "e1".into(),
            uri: Some("file:///a".into()),
            version: Some(1),
            paths: Vec::new(),
            hunks,
            conflicts: Vec::new(),
            json: Value::Null,
        };
        for_pending(&[edit], at(lines.0, lines.1))
            .into_iter()
            .map(|action| match action {
                CodeActionOrCommand::CodeAction(action) => {
                    format!("{} {}", action.title, action.command.unwrap().arguments.unwrap()[0])
                }
                CodeActionOrCommand::Command(command) => command.title,
            })
            .collect()
    }

    #[test]
    fn pending_hunks_on_the_requested_lines_offer_accept_and_reject() {
        assert_eq!(
            review_titles(&[(1, 2), (5, 5)], (5, 5)),
            [
                r#"Accept agent edit {"id":"e1"}"#,
                r#"Accept only hunk 2 of 2 (reject the other) {"id":"e1","hunks":[1]}"#,
                r#"Reject agent edit {"id":"e1"}"#,
                r#"Comment on this change (hunk 2 of 2) {"id":"e1","hunk":1}"#
            ]
        );
        // Line 2 is where hunk 0 ends (character 0): not part of it.
        assert!(review_titles(&[(1, 2), (5, 5)], (2, 2)).is_empty());
        assert_eq!(review_titles(&[(1, 2), (5, 5), (7, 8)], (0, 9)).len(), 8);
        assert_eq!(
            review_titles(&[(1, 2), (5, 5), (7, 8)], (1, 1))[1],
            r#"Accept only hunk 1 of 3 (reject the others) {"id":"e1","hunks":[0]}"#
        );
        // One hunk: accepting it is accepting the edit.
        assert_eq!(
            review_titles(&[(1, 2)], (1, 1)),
            [
                r#"Accept agent edit {"id":"e1"}"#,
                r#"Reject agent edit {"id":"e1"}"#,
                r#"Comment on this change {"id":"e1","hunk":0}"#
            ]
        );
    }

    #[test]
    fn empty_ranges_no_diagnostics_and_only_filter() {
        assert!(titles(((1, 2), (1, 2)), &[1], None).is_empty());
        assert!(!titles(((1, 0), (3, 0)), &[], None).iter().any(|t| t.starts_with("Agent: fix")));
        assert_eq!(
            titles(((1, 0), (3, 0)), &[2], Some("quickfix")),
            ["Agent: fix the diagnostics here (1 diagnostics)"]
        );
    }
}
