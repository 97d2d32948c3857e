//! Text cut to a length for a person or the model, by one rule everywhere: never inside a
//! character, and `…` after what is kept when a person reads it. Lengths are in characters for
//! what is shown, in bytes for what is budgeted (tool output, log lines).

use std::borrow::Cow;

/// The first `max_chars` characters of `text`, and whether anything was cut.
pub fn cut_chars(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}

/// `text` cut to its first `max_chars` characters, with `…` after them when something was cut.
pub fn shorten(text: &str, max_chars: usize) -> Cow<'_, str> {
    match cut_chars(text, max_chars) {
        (kept, true) => Cow::Owned(format!("{kept}…")),
        (all, false) => Cow::Borrowed(all),
    }
}

/// The first line of `text`, trimmed and [`shorten`]ed to `max_chars`: a one-line preview
/// (progress messages, tool descriptions).
pub fn first_line(text: &str, max_chars: usize) -> Cow<'_, str> {
    let line = text.lines().next().unwrap_or("").trim();
    shorten(line, max_chars)
}

/// The longest start of `text` of at most `max_bytes` bytes that ends between characters, and
/// whether anything was cut.
pub fn cut_bytes(text: &str, max_bytes: usize) -> (&str, bool) {
    if text.len() <= max_bytes {
        return (text, false);
    }
    let end = (0..=max_bytes).rev().find(|&at| text.is_char_boundary(at)).unwrap_or(0);
    (&text[..end], true)
}

/// The longest end of `text` of at most `max_bytes` bytes that starts between characters, and
/// whether anything was cut.
pub fn cut_bytes_from_end(text: &str, max_bytes: usize) -> (&str, bool) {
    if text.len() <= max_bytes {
        return (text, false);
    }
    let from = text.len() - max_bytes;
    let start = (from..=text.len()).find(|&at| text.is_char_boundary(at)).unwrap_or(text.len());
    (&text[start..], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_characters_and_an_ellipsis_when_cut() {
        assert_eq!(shorten("héllo wörld", 5), "héllo…");
        assert_eq!(shorten("héllo", 5), "héllo");
        assert_eq!(shorten("", 0), "");
        assert_eq!(shorten("😀😀", 1), "😀…");
        assert_eq!(cut_chars("héllo", 2), ("hé", true));
        assert_eq!(cut_chars("hé", 2), ("hé", false));
    }

    #[test]
    fn byte_cuts_fall_between_characters() {
        // "é" is two bytes, "😀" four.
        assert_eq!(cut_bytes("héllo", 2), ("h", true));
        assert_eq!(cut_bytes("héllo", 3), ("hé", true));
        assert_eq!(cut_bytes("héllo", 6), ("héllo", false));
        assert_eq!(cut_bytes("😀", 3), ("", true));
        assert_eq!(cut_bytes_from_end("héllo", 4), ("llo", true));
        assert_eq!(cut_bytes_from_end("olé", 2), ("é", true));
        assert_eq!(cut_bytes_from_end("olé", 1), ("", true));
        assert_eq!(cut_bytes_from_end("olé", 9), ("olé", false));
    }

    #[test]
    fn a_first_line_is_trimmed_and_shortened() {
        assert_eq!(first_line("  fix the parser  \nand the tests", 40), "fix the parser");
        assert_eq!(first_line("fix the parser", 3), "fix…");
        assert_eq!(first_line("", 3), "");
    }
}
