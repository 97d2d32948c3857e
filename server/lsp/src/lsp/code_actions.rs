//! Code actions on a selection, for every LSP client: ask the agent about it, with or without a
//! preset question. Each action is a `reins.ask` command carrying the range and the diagnostics
//! the client reported inside it.

use serde_json::{Value, json};
use tower_lsp_server::ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, Command, Diagnostic,
};

use crate::lsp::ask;

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
