//! Text cut to a length for a person or the model, by one rule everywhere: whole characters,
//! and `…` after them when something was cut.

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
}
