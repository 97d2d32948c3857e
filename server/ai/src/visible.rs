//! Untrusted text made safe to write to a terminal: the one place that decides it, for every
//! face reins shows at a terminal (prompts, streamed answers, tool output, listings).
//!
//! A model, a tool's output, a session file or an MCP server can put control sequences in text
//! that a terminal would obey: move the cursor up and clear a line (to hide a command in an
//! approval prompt), clear the screen, set the title or the clipboard (OSC 52), or reorder what
//! is read with bidi overrides. Here every such character becomes a visible escape, the way `git`
//! and `less` show them: C0 controls and DEL in caret notation (`ESC` is `^[`, so `ESC[2K` reads
//! `^[[2K`), C1 controls and bidi controls as `<U+009B>`. What follows an escape is ordinary text
//! and stays as it is. Colours of reins's own are added after, around text made visible.

use std::borrow::Cow;

/// `text` with every character that could steer a terminal made visible; tabs and line breaks
/// (`\n`, and `\r` right before `\n`) are kept, for text shown as lines (answers, tool output,
/// diffs, commands).
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// [`visible`] for text shown on one line (a title, a path, a name): line breaks are made
/// visible too, so the text cannot start a line of its own that looks like reins's.
pub fn visible_line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let keep = |at: usize, c: char| match c {
        '\t' => true,
        '\n' => keep_lines,
        '\r' => keep_lines && text[at + 1..].starts_with('\n'),
        _ => !steers(c),
    };
    let Some(first) = text.char_indices().position(|(at, c)| !keep(at, c)) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    for (n, (at, c)) in text.char_indices().enumerate() {
        if n < first || keep(at, c) {
            out.push(c);
        } else {
            push_escaped(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// Whether a terminal could act on `c` rather than show it.
fn steers(c: char) -> bool {
    matches!(c,
        '\0'..='\x1f' | '\x7f' | '\u{80}'..='\u{9f}'
        // Bidi controls: marks, embeddings, overrides and isolates.
        | '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\0'..='\x1f' => {
            out.push('^');
            out.push(char::from(c as u8 + b'@'));
        }
        '\x7f' => out.push_str("^?"),
        _ => out.push_str(&format!("<U+{:04X}>", u32::from(c))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        let text = "fn main() {\n\tprintln!(\"héllo 😀\");\r\n}\n";
        assert!(matches!(visible(text), Cow::Borrowed(t) if t == text));
        assert!(matches!(visible_line("a b\tc"), Cow::Borrowed("a b\tc")));
    }

    #[test]
    fn control_sequences_become_visible() {
        let cases = [
            // A command hidden by erasing its line and drawing another over it.
            ("rm -f important.txt #\x1b[2K\x1b[1A\r$ ls -la", "rm -f important.txt #^[[2K^[[1A^M$ ls -la"),
            // OSC 52 (the clipboard) and clearing the screen.
            ("\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J", "^[]52;c;cm0gLXJmIH4K^G^[[2J"),
            ("back\x08\x08\x7f", "back^H^H^?"),
            // C1 CSI and OSC, and the bidi override of "Trojan Source".
            ("\u{9b}2J \u{9d}0;title\u{9c}", "<U+009B>2J <U+009D>0;title<U+009C>"),
            ("ok\u{202e}txt.exe\u{2066}", "ok<U+202E>txt.exe<U+2066>"),
            ("a\0b", "a^@b"),
        ];
        for (text, shown) in cases {
            assert_eq!(visible(text), shown, "{text:?}");
        }
    }

    #[test]
    fn line_breaks_are_kept_in_text_and_shown_in_a_line() {
        assert_eq!(visible("a\nb\r\nc\rd\r"), "a\nb\r\nc^Md^M");
        assert_eq!(visible_line("title\n● bash $ ls\r\n"), "title^J● bash $ ls^M^J");
    }
}
