//! The chat message `reins.ask` sends: the user's question followed by the selection — path,
//! line range, language, the selected text, and the diagnostics inside it and, when the editor
//! says what they are, in the lines around it — so the model knows exactly what the user is
//! looking at. `reins.chat.send`'s `context` uses the same block.

use reins_harness::Attachment;
use tower_lsp_server::ls_types::{Diagnostic, DiagnosticSeverity, NumberOrString, Range};

/// The question when `reins.ask` comes without one (a client that cannot prompt ran the plain
/// "Ask agent about selection" action).
pub const DEFAULT_QUESTION: &str = "Tell me about this code: what it does, and anything that looks wrong.";

/// Lines before and after a selection whose diagnostics go with it, when the editor gives them.
pub const LINES_AROUND: u32 = 5;

/// A piece of a document, ready to quote to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// Relative to the workspace root when inside it.
    pub path: String,
    pub range: Range,
    pub language_id: String,
    pub text: String,
    pub diagnostics: Vec<Diagnostic>,
    /// The lines before and after the selection that `diagnostics` cover too (0: the selection's
    /// own only).
    pub lines_around: u32,
}

/// The message text for a question about `selections`.
pub fn message(question: &str, selections: &[Selection]) -> String {
    let attachments: Vec<Attachment> = selections.iter().map(attachment).collect();
    reins_harness::with_attachments(question, &attachments)
}

/// A selection as the harness quotes every attachment: `path` lines `a-b` (`language`), the
/// text in a fence, then the diagnostics, one a line.
fn attachment(selection: &Selection) -> Attachment {
    let notes = (!selection.diagnostics.is_empty()).then(|| {
        let heading = match selection.lines_around {
            0 => "Diagnostics in the selection:".to_string(),
            around => format!("Diagnostics in the selection and the {around} lines before and after it:"),
        };
        (heading, selection.diagnostics.iter().map(diagnostic_line).collect())
    });
    Attachment {
        path: selection.path.clone(),
        lines: Some(line_span(selection.range)),
        language: selection.language_id.clone(),
        text: Some(selection.text.clone()),
        notes,
    }
}

/// The 1-based first and last lines a range covers. A range that ends at the start of a line
/// (a whole-line selection) does not cover that line.
pub fn line_span(range: Range) -> (u32, u32) {
    let first = range.start.line + 1;
    let mut last = range.end.line + 1;
    if range.end.character == 0 && range.end.line > range.start.line {
        last -= 1;
    }
    (first, last.max(first))
}

/// Whether a diagnostic lies (at least partly) inside `range`.
pub fn overlaps(diagnostic: &Diagnostic, range: Range) -> bool {
    let d = diagnostic.range;
    (d.start.line, d.start.character) <= (range.end.line, range.end.character)
        && (d.end.line, d.end.character) >= (range.start.line, range.start.character)
}

fn diagnostic_line(diagnostic: &Diagnostic) -> String {
    let severity = match diagnostic.severity {
        Some(DiagnosticSeverity::ERROR) => "error",
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::INFORMATION) => "info",
        Some(DiagnosticSeverity::HINT) => "hint",
        _ => "diagnostic",
    };
    let code = match &diagnostic.code {
        Some(NumberOrString::Number(code)) => format!("[{code}] "),
        Some(NumberOrString::String(code)) => format!("[{code}] "),
        None => String::new(),
    };
    let source = diagnostic.source.as_deref().map(|source| format!(" ({source})")).unwrap_or_default();
    let message = diagnostic.message.lines().collect::<Vec<_>>().join(" ");
    format!("line {}: {severity}: {code}{message}{source}", diagnostic.range.start.line + 1)
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use tower_lsp_server::ls_types::Position;

    use super::*;

    fn range(start: (u32, u32), end: (u32, u32)) -> Range {
        Range { start: Position::new(start.0, start.1), end: Position::new(end.0, end.1) }
    }

    #[test]
    fn a_selection_is_quoted_with_its_path_lines_language_and_diagnostics() {
        let diagnostic = Diagnostic {
            range: range((3, 4), (3, 6)),
            severity: Some(DiagnosticSeverity::ERROR),
            code: Some(NumberOrString::String("E0308".into())),
            source: Some("rustc".into()),
            message: "mismatched types\nexpected u32".into(),
            ..Diagnostic::default()
        };
        let selection = Selection {
            path: "src/lib.rs".into(),
            range: range((2, 0), (5, 0)),
            language_id: "rust".into(),
            text: "fn answer() -> u32 {\n    \"42\"\n}\n".into(),
            diagnostics: vec![diagnostic],
            lines_around: 0,
        };
        expect![[r#"
            Why does this not compile?

            Selection: src/lib.rs lines 3-5 (rust)
            ```rust
            fn answer() -> u32 {
                "42"
            }
            ```
            Diagnostics in the selection:
            - line 4: error: [E0308] mismatched types expected u32 (rustc)"#]]
        .assert_eq(&message(" Why does this not compile?\n", &[selection]));
    }

    #[test]
    fn diagnostics_around_the_selection_say_how_far_they_reach() {
        let at = |line, message: &str| Diagnostic {
            range: range((line, 0), (line, 1)),
            severity: Some(DiagnosticSeverity::WARNING),
            message: message.into(),
            ..Diagnostic::default()
        };
        let selection = Selection {
            path: "a.py".into(),
            range: range((4, 0), (5, 0)),
            language_id: String::new(),
            text: "x = f()\n".into(),
            diagnostics: vec![at(1, "unused import"), at(4, "f is undefined")],
            lines_around: LINES_AROUND,
        };
        expect![[r#"
            Selection: a.py line 5
            ```
            x = f()
            ```
            Diagnostics in the selection and the 5 lines before and after it:
            - line 2: warning: unused import
            - line 5: warning: f is undefined"#]]
        .assert_eq(&reins_harness::quote_attachment(&attachment(&selection)));
    }

    #[test]
    fn line_spans_and_overlaps() {
        assert_eq!(line_span(range((0, 2), (0, 5))), (1, 1));
        assert_eq!(line_span(range((1, 0), (3, 0))), (2, 3));
        assert_eq!(line_span(range((1, 0), (3, 1))), (2, 4));
        let at = |line| Diagnostic { range: range((line, 0), (line, 3)), ..Diagnostic::default() };
        assert!(overlaps(&at(2), range((1, 0), (3, 0))));
        assert!(!overlaps(&at(5), range((1, 0), (3, 0))));
    }
}
