//! The user's message with what they attached — a selection in the editor, a whole file, a file
//! that is not text — in one format for the model, whatever surface it came from (`reins.ask`
//! and `reins.chat.send`'s context over LSP, embedded resources over ACP): the text, then each
//! attachment quoted after it.

/// What the user attached to a message, ready to quote to the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attachment {
    /// As the model reads it: relative to the workspace root when inside it, else a URI.
    pub path: String,
    /// The 1-based first and last lines of a selection; `None` for the whole file.
    pub lines: Option<(u32, u32)>,
    /// The language of the text (the fence's info string); empty when unknown.
    pub language: String,
    /// `None` when it is not text: the model is told it was attached, without its content.
    pub text: Option<String>,
    /// What goes with the text (the diagnostics in a selection): a heading and one line each.
    pub notes: Option<(String, Vec<String>)>,
}

/// The message: `text`, then each attachment quoted after it, a blank line between.
pub fn with_attachments(text: &str, attachments: &[Attachment]) -> String {
    let mut out = text.trim().to_string();
    for attachment in attachments {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&quote_attachment(attachment));
    }
    out
}

/// `Selection: path lines a-b (language)` or `Attached file: path`, the text in a fence, then
/// the notes, one a line.
pub fn quote_attachment(attachment: &Attachment) -> String {
    let Some(text) = &attachment.text else {
        return format!("Attached: {} (not text; its content is not included)", attachment.path);
    };
    let mut out = match attachment.lines {
        Some((first, last)) if first == last => format!("Selection: {} line {first}", attachment.path),
        Some((first, last)) => format!("Selection: {} lines {first}-{last}", attachment.path),
        None => format!("Attached file: {}", attachment.path),
    };
    if !attachment.language.is_empty() {
        out.push_str(&format!(" ({})", attachment.language));
    }
    let fence = fence_for(text);
    out.push_str(&format!("\n{fence}{}\n{text}", attachment.language));
    if !text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    if let Some((heading, lines)) = &attachment.notes {
        out.push('\n');
        out.push_str(heading);
        for line in lines {
            out.push_str("\n- ");
            out.push_str(line);
        }
    }
    out
}

/// A code fence longer than any run of backticks in `text`, so the text cannot close it.
pub fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    #[test]
    fn a_selection_a_whole_file_and_a_binary_file_share_one_layout() {
        let selection = Attachment {
            path: "src/a.rs".into(),
            lines: Some((2, 3)),
            language: "rust".into(),
            text: Some("let x = 1;\nlet y = 2;".into()),
            notes: Some(("Diagnostics in the selection:".into(), vec!["line 2: error: bad".into()])),
        };
        let file =
            Attachment { path: "notes.md".into(), text: Some("uses ``` fences\n".into()), ..Attachment::default() };
        let image = Attachment { path: "x.png".into(), ..Attachment::default() };
        expect![[r#"
            fix it

            Selection: src/a.rs lines 2-3 (rust)
            ```rust
            let x = 1;
            let y = 2;
            ```
            Diagnostics in the selection:
            - line 2: error: bad

            Attached file: notes.md
            ````
            uses ``` fences
            ````

            Attached: x.png (not text; its content is not included)"#]]
        .assert_eq(&with_attachments("  fix it\n", &[selection, file, image]));
        let one_line = Attachment { lines: Some((4, 4)), text: Some("x".into()), ..Attachment::default() };
        assert!(quote_attachment(&one_line).starts_with("Selection:  line 4\n```\nx\n```"));
        assert_eq!(with_attachments("", &[image_only()]), "Attached: y.gif (not text; its content is not included)");
    }

    #[test]
    fn fences_outgrow_backticks_in_the_text() {
        assert_eq!(fence_for("no ticks"), "```");
        assert_eq!(fence_for("a ```` b"), "`````");
    }

    fn image_only() -> Attachment {
        Attachment { path: "y.gif".into(), ..Attachment::default() }
    }
}
