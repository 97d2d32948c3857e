//! Keeping the file's typography inside a line the model changed. When the model quoted a line
//! with ASCII quotes, dashes and spaces where the file has typographic ones, the parts of the line
//! it repeated unchanged are written with the file's characters, and only what it changed takes
//! its own: `say(“it’s fine”)` quoted as `say("it's fine")` and changed to `say("it's great")`
//! becomes `say(“it’s great”)`.
//!
//! The line is compared by tokens — double-quoted strings, words, single characters — so that a
//! string the model added keeps its own quotes whole instead of borrowing one of the file's.

use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::matching::ascii_typography;

/// A piece of a line, as a range of its characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Token {
    start: usize,
    end: usize,
    quoted: bool,
}

/// `new` (a changed line, without its line ending) with the file's spelling for what it repeats
/// from `old`, when `old` is `file` with some typographic characters written as ASCII; `None`
/// when `old` is not such a copy of `file` (then `new` stands as it is).
pub(crate) fn restyle(new: &str, old: &str, file: &str) -> Option<String> {
    if old == file {
        return None;
    }
    let old: Vec<char> = old.chars().collect();
    let file: Vec<char> = file.chars().collect();
    let copy =
        old.len() == file.len() && old.iter().zip(&file).all(|(o, f)| ascii_typography(*o) == ascii_typography(*f));
    if !copy {
        return None;
    }
    let new: Vec<char> = new.chars().collect();
    let old_tokens = tokens(&old);
    let new_tokens = tokens(&new);
    let text = |chars: &[char], token: &Token| chars[token.start..token.end].iter().collect::<String>();
    let old_texts: Vec<String> = old_tokens.iter().map(|token| text(&old, token)).collect();
    let new_texts: Vec<String> = new_tokens.iter().map(|token| text(&new, token)).collect();
    let mut out = String::with_capacity(new.len() + 8);
    for op in capture_diff_slices(Algorithm::Myers, &old_texts, &new_texts) {
        match op {
            DiffOp::Equal { old_index, len, .. } => {
                let (first, last) = (old_tokens[old_index], old_tokens[old_index + len - 1]);
                out.extend(&file[first.start..last.end]);
            }
            DiffOp::Delete { .. } => {}
            DiffOp::Insert { new_index, new_len, .. } => {
                out.extend(&new[new_tokens[new_index].start..new_tokens[new_index + new_len - 1].end]);
            }
            DiffOp::Replace { old_index, old_len: 1, new_index, new_len: 1 } => {
                let (old_token, new_token) = (old_tokens[old_index], new_tokens[new_index]);
                let old_chars = &old[old_token.start..old_token.end];
                let file_chars = &file[old_token.start..old_token.end];
                let new_chars = &new[new_token.start..new_token.end];
                if old_token.quoted && new_token.quoted && old_chars.len() >= 2 && new_chars.len() >= 2 {
                    // The same string with other contents: the file's quotes around the new text.
                    let inner = |chars: &[char]| chars[1..chars.len() - 1].to_vec();
                    out.push(file_chars[0]);
                    out.extend(by_characters(&inner(new_chars), &inner(old_chars), &inner(file_chars)));
                    out.push(file_chars[file_chars.len() - 1]);
                } else {
                    out.extend(by_characters(new_chars, old_chars, file_chars));
                }
            }
            DiffOp::Replace { new_index, new_len, .. } => {
                out.extend(&new[new_tokens[new_index].start..new_tokens[new_index + new_len - 1].end]);
            }
        }
    }
    Some(out)
}

/// `new` with the file's character wherever it repeats one of `old`'s (common prefix and suffix
/// first, then a character diff of the middle); `old` and `file` correspond one for one.
fn by_characters(new: &[char], old: &[char], file: &[char]) -> Vec<char> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..].iter().rev().zip(new[prefix..].iter().rev()).take_while(|(a, b)| a == b).count();
    let (old_middle, new_middle) = (&old[prefix..old.len() - suffix], &new[prefix..new.len() - suffix]);
    let mut out = file[..prefix].to_vec();
    for op in capture_diff_slices(Algorithm::Myers, old_middle, new_middle) {
        match op {
            DiffOp::Equal { old_index, len, .. } => {
                out.extend(&file[prefix + old_index..prefix + old_index + len]);
            }
            DiffOp::Delete { .. } => {}
            DiffOp::Insert { new_index, new_len, .. } | DiffOp::Replace { new_index, new_len, .. } => {
                out.extend(&new_middle[new_index..new_index + new_len]);
            }
        }
    }
    out.extend(&file[file.len() - suffix..]);
    out
}

/// A line's tokens: a double-quoted string (either kind of double quote, to the next one or the
/// end), a word (letters, digits, `_`, and apostrophes between them), or any other character.
fn tokens(chars: &[char]) -> Vec<Token> {
    let is_double = |ch: char| ascii_typography(ch) == '"';
    let is_word = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let start = at;
        let quoted = is_double(chars[at]);
        if quoted {
            at += 1;
            while at < chars.len() && !is_double(chars[at]) {
                at += 1;
            }
            at = (at + 1).min(chars.len());
        } else if is_word(chars[at]) {
            while at < chars.len()
                && (is_word(chars[at])
                    || (ascii_typography(chars[at]) == '\''
                        && at + 1 < chars.len()
                        && is_word(chars[at + 1])
                        && is_word(chars[at - 1])))
            {
                at += 1;
            }
        } else {
            at += 1;
        }
        out.push(Token { start, end: at, quoted });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(new: &str, old: &str, file: &str, expected: &str) {
        let actual = restyle(new, old, file).unwrap_or_else(|| format!("as written: {new}"));
        assert_eq!(actual, expected);
    }

    #[test]
    fn repeated_parts_keep_the_files_typography() {
        check(r#"say("it's great")"#, r#"say("it's fine")"#, "say(“it’s fine”)", "say(“it’s great”)");
        check("sub = 'x' - z", "sub = 'x' - y", "sub = ‘x’ — y", "sub = ‘x’ — z");
        check(
            r#"He said "hello" to them."#,
            r#"He said "hello" to me."#,
            "He said “hello” to me.",
            "He said “hello” to them.",
        );
        check(r#"f("x", "y")"#, r#"f("a", "b")"#, "f(“a”, “b”)", "f(“x”, “y”)");
    }

    #[test]
    fn new_strings_keep_their_own_quotes_whole() {
        check(r#"f("x", "a")"#, r#"f("a")"#, "f(“a”)", "f(\"x\", “a”)");
        check(r#"f("a", "x")"#, r#"f("a")"#, "f(“a”)", "f(“a”, \"x\")");
    }

    #[test]
    fn a_changed_quote_is_the_models() {
        check("x = 'a'", r#"x = "a""#, "x = “a”", "x = 'a'");
    }

    #[test]
    fn only_a_typographic_copy_is_restyled() {
        check("x = 2", "x = 1", "x = 1", "as written: x = 2");
        check("x = 2", "x = 1", "x  = 1", "as written: x = 2");
        check("x = 2", "x = 1", "y = 1", "as written: x = 2");
    }
}
