//! Rewrites of the model's own texts for two habits: copying line-number prefixes from a listing
//! (`12\t`, `12: `, `   12→`, `   12 | `) and escaping text twice (`\n`, `\t`, `\"` written
//! literally). Each is tried only after the literal text failed to match, and the rewritten
//! `oldText` must then match the file exactly; `newText` is rewritten the same way.

/// How a listing separates a line's number from its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Separator {
    Tab,
    Colon,
    Arrow,
    Bar,
}

/// A line-number prefix: the number and how many bytes the prefix takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Prefix {
    number: usize,
    separator: Separator,
    len: usize,
}

/// `old` and `new` without line-number prefixes, when every line of `old` has one, all with the
/// same separator and consecutive numbers. In `new`, a prefix is removed only where its number
/// fits the numbering around the edit: a new line that really starts with `404: ` keeps it.
pub(crate) fn strip_line_numbers(old: &str, new: &str) -> Option<(String, String)> {
    let old_prefixes: Vec<Prefix> = old.split_inclusive('\n').map(prefix).collect::<Option<_>>()?;
    let first = old_prefixes.first()?;
    let consecutive = old_prefixes
        .iter()
        .enumerate()
        .all(|(index, prefix)| prefix.separator == first.separator && prefix.number == first.number + index);
    if !consecutive {
        return None;
    }
    let stripped_old = strip(old, |_| true);
    let new_line_count = new.split_inclusive('\n').count();
    let numbers = first.number.saturating_sub(1)..=first.number + old_prefixes.len() + new_line_count;
    let stripped_new = strip(new, |prefix| prefix.separator == first.separator && numbers.contains(&prefix.number));
    Some((stripped_old, stripped_new))
}

fn strip(text: &str, removable: impl Fn(&Prefix) -> bool) -> String {
    text.split_inclusive('\n')
        .map(|line| match prefix(line) {
            Some(found) if removable(&found) => &line[found.len..],
            _ => line,
        })
        .collect()
}

/// The line-number prefix `line` starts with: optional spaces, digits, and a separator (which
/// may end the line when the numbered line was empty).
fn prefix(line: &str) -> Option<Prefix> {
    // Listings pad numbers to a few columns; more digits than this are not a line number.
    const MAX_DIGITS: usize = 7;
    let after_spaces = line.trim_start_matches(' ');
    let digits = after_spaces.len() - after_spaces.trim_start_matches(|ch: char| ch.is_ascii_digit()).len();
    if digits == 0 || digits > MAX_DIGITS {
        return None;
    }
    let number: usize = after_spaces[..digits].parse().ok()?;
    let rest = &after_spaces[digits..];
    let at_end = |sep: &str| rest.strip_prefix(sep).is_some_and(|after| after.is_empty() || after == "\n");
    let (separator, sep_len) = if rest.starts_with('\t') {
        (Separator::Tab, 1)
    } else if rest.starts_with(": ") {
        (Separator::Colon, 2)
    } else if at_end(":") {
        (Separator::Colon, 1)
    } else if rest.starts_with('→') {
        (Separator::Arrow, '→'.len_utf8())
    } else if rest.starts_with(" | ") {
        (Separator::Bar, 3)
    } else if at_end(" |") {
        (Separator::Bar, 2)
    } else {
        return None;
    };
    Some(Prefix { number, separator, len: line.len() - rest.len() + sep_len })
}

/// `old` and `new` with `\n`, `\t`, `\r`, `\"`, `\'` and `\\` read as the characters they stand
/// for, when `old` has at least one of them; `None` otherwise.
pub(crate) fn unescape(old: &str, new: &str) -> Option<(String, String)> {
    let unescaped_old = unescape_text(old);
    (unescaped_old != old).then(|| (unescaped_old, unescape_text(new)))
}

fn unescape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        let replacement = match chars.peek() {
            Some('n') => '\n',
            Some('t') => '\t',
            Some('r') => '\r',
            Some('"') => '"',
            Some('\'') => '\'',
            Some('\\') => '\\',
            _ => {
                out.push(ch);
                continue;
            }
        };
        chars.next();
        out.push(replacement);
    }
    // A `\r` that stood for a CRLF file's line ending: matching sees LF only.
    out.replace("\r\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_consecutive_prefixes_of_one_kind() {
        let strip = |old: &str, new: &str| strip_line_numbers(old, new);
        assert_eq!(
            strip("12\tx = 1\n13\ty = 2\n", "12\tx = 1\n13\ty = 3\n404\tz\n"),
            Some(("x = 1\ny = 2\n".to_string(), "x = 1\ny = 3\n404\tz\n".to_string()))
        );
        assert_eq!(strip("   7→a\n   8→\n", "   7→b\n"), Some(("a\n\n".to_string(), "b\n".to_string())));
        assert_eq!(strip("   3 | a\n", "   3 | b\n"), Some(("a\n".to_string(), "b\n".to_string())));
        assert_eq!(strip("12: a\n14: b\n", ""), None);
        assert_eq!(strip("12: a\n13\tb\n", ""), None);
        assert_eq!(strip("x: a\n", ""), None);
    }

    #[test]
    fn unescapes_only_what_was_escaped() {
        assert_eq!(
            unescape(r#"a\n\tb(\"c\")\\n"#, r"x\ny"),
            Some(("a\n\tb(\"c\")\\n".to_string(), "x\ny".to_string()))
        );
        assert_eq!(unescape("plain\n", r"x\ny"), None);
        assert_eq!(unescape(r"a\d", ""), None);
    }
}
