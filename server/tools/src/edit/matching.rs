//! Finding an edit's `oldText` in a file: exactly first, then under one forgiving normalisation at
//! a time, mildest first, stopping at the first that finds anything (a non-unique find is then
//! refused, never resolved by trying a looser one).
//!
//! Everything here works on LF-only text without a BOM; `apply` takes care of the file's bytes.

use std::borrow::Cow;
use std::ops::Range;

use super::{needle, reindent, stale};

/// How a match was found. The loose kinds are reported to the model and the reviewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Normalisation {
    Exact,
    TrailingWhitespace,
    Typography,
    /// Both of the above at once, which a copy of prose (curly quotes, Markdown hard breaks)
    /// often needs; still only those two kinds of difference.
    TypographyAndTrailingWhitespace,
    LineNumbers,
    Escapes,
    Indentation,
    BlankLines,
    StaleContext,
}

/// Where `oldText` occurs and how it was found, with the edit's texts as the splice must see
/// them (line-number prefixes or escapes removed when that is how it matched).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found<'a> {
    pub normalisation: Normalisation,
    /// Non-overlapping, in file order; empty when nothing matched.
    pub spans: Vec<Range<usize>>,
    pub old: Cow<'a, str>,
    pub new: Cow<'a, str>,
    /// What to tell the model about a loose landing; `None` for an exact one.
    pub note: Option<String>,
}

/// A text rewritten by a normalisation, with the way back: `origin[i]` is the offset in the
/// source of the character that byte `i` came from. Normalisations map each kept character to
/// exactly one character, so a match maps back to whole source characters.
struct Normalised {
    text: String,
    origin: Vec<usize>,
}

impl Normalisation {
    /// What the normalisation overlooks, as a phrase: "ignoring trailing whitespace".
    pub(crate) fn ignoring(self) -> &'static str {
        match self {
            Normalisation::Exact => "comparing exactly",
            Normalisation::TrailingWhitespace => "ignoring trailing whitespace",
            Normalisation::Typography => "treating typographic quotes, dashes and Unicode spaces as their ASCII forms",
            Normalisation::TypographyAndTrailingWhitespace => {
                "ignoring trailing whitespace and treating typographic quotes, dashes and Unicode spaces as their ASCII forms"
            }
            Normalisation::LineNumbers => "removing line-number prefixes copied from read output",
            Normalisation::Escapes => r#"reading \n, \t and \" written literally as the characters they stand for"#,
            Normalisation::Indentation => "ignoring indentation",
            Normalisation::BlankLines => "ignoring blank lines",
            Normalisation::StaleContext => "allowing unchanged context lines to differ",
        }
    }

    /// The note for a landing: "matched after ignoring trailing whitespace".
    fn describe(self) -> String {
        match self {
            Normalisation::Indentation => {
                "matched after ignoring indentation; newText was re-indented to the file's indentation".to_string()
            }
            other => format!("matched after {}", other.ignoring()),
        }
    }

    /// Normalisations that rewrite the file and oldText alike, character by character.
    fn normalise(self, source: &str) -> Normalised {
        match self {
            Normalisation::TrailingWhitespace => strip_trailing_whitespace(source),
            Normalisation::Typography => map_chars(source, ascii_typography),
            Normalisation::TypographyAndTrailingWhitespace => strip_trailing_whitespace_and_typography(source),
            Normalisation::Indentation => strip_indentation(source),
            Normalisation::BlankLines => drop_blank_lines(source),
            _ => map_chars(source, |ch| ch),
        }
    }
}

/// Finds `old` in `haystack` under the mildest normalisation that finds it at all.
pub(crate) fn find<'a>(haystack: &str, old: &'a str, new: &'a str) -> Found<'a> {
    find_where(haystack, old, new, &|_| true)
}

/// Like [`find`], counting only the places `keep` accepts (after the hunk before, at a line
/// start): a normalisation finds something only if it finds such a place.
pub(crate) fn find_where<'a>(
    haystack: &str,
    old: &'a str,
    new: &'a str,
    keep: &dyn Fn(&Range<usize>) -> bool,
) -> Found<'a> {
    let found = |normalisation: Normalisation, spans: Vec<Range<usize>>| Found {
        normalisation,
        spans,
        old: Cow::Borrowed(old),
        new: Cow::Borrowed(new),
        note: (normalisation != Normalisation::Exact).then(|| normalisation.describe()),
    };
    // The finds below list overlapping places too, so that one `keep` refuses (not at a line
    // start, say) cannot hide one it accepts; the first of overlapping accepted places wins.
    let kept = |spans: Vec<Range<usize>>| {
        let mut taken: Vec<Range<usize>> = Vec::new();
        for span in spans.into_iter().filter(|span| keep(span)) {
            if taken.last().is_none_or(|last| span.start >= last.end) {
                taken.push(span);
            }
        }
        taken
    };
    let exact = kept(find_exact(haystack, old));
    if !exact.is_empty() {
        return found(Normalisation::Exact, exact);
    }
    for normalisation in
        [Normalisation::TrailingWhitespace, Normalisation::Typography, Normalisation::TypographyAndTrailingWhitespace]
    {
        let spans = kept(find_normalised(haystack, old, normalisation));
        if !spans.is_empty() {
            return found(normalisation, spans);
        }
    }
    // Rewrites of the model's texts alone, matched exactly against the untouched file.
    let rewrites = [
        (Normalisation::LineNumbers, needle::strip_line_numbers(old, new)),
        (Normalisation::Escapes, needle::unescape(old, new)),
    ];
    for (normalisation, rewritten) in rewrites {
        let Some((old, new)) = rewritten else { continue };
        let spans = kept(find_exact(haystack, &old));
        if !spans.is_empty() {
            let note = Some(normalisation.describe());
            return Found { normalisation, spans, old: Cow::Owned(old), new: Cow::Owned(new), note };
        }
    }
    let indented = kept(find_indented(haystack, old, new));
    if !indented.is_empty() {
        return found(Normalisation::Indentation, indented);
    }
    let unblanked = kept(find_normalised(haystack, old, Normalisation::BlankLines));
    if !unblanked.is_empty() {
        return found(Normalisation::BlankLines, unblanked);
    }
    if let Some(stale) = stale::find(haystack, old, new, keep) {
        return Found {
            normalisation: Normalisation::StaleContext,
            spans: stale.spans,
            old: Cow::Borrowed(old),
            new: Cow::Borrowed(new),
            note: Some(stale.note),
        };
    }
    found(Normalisation::Exact, Vec::new())
}

fn find_exact(haystack: &str, needle: &str) -> Vec<Range<usize>> {
    occurrences(haystack, needle).map(|at| at..at + needle.len()).collect()
}

/// Where `needle` starts in `haystack`, overlapping places included, in order.
fn occurrences<'a>(haystack: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    let mut from = Some(0);
    std::iter::from_fn(move || {
        let start = from?;
        let at = start + haystack[start..].find(needle)?;
        // The next place may start one character later.
        from = haystack[at..].chars().next().map(|ch| at + ch.len_utf8());
        Some(at)
    })
}

fn find_normalised(haystack: &str, needle: &str, normalisation: Normalisation) -> Vec<Range<usize>> {
    let needle_norm = normalisation.normalise(needle).text;
    if needle_norm.trim().is_empty() {
        return Vec::new();
    }
    // A needle whose last line lost trailing whitespace must end where a line ends; otherwise
    // "foo(a, " would match the start of "foo(a,b)" and the splice would land mid-line.
    let trims =
        matches!(normalisation, Normalisation::TrailingWhitespace | Normalisation::TypographyAndTrailingWhitespace);
    let must_end_line = trims && needle.ends_with(|ch: char| ch.is_whitespace() && ch != '\n');
    let hay = normalisation.normalise(haystack);
    occurrences(&hay.text, &needle_norm)
        .map(|at| at..at + needle_norm.len())
        .filter(|span| !must_end_line || span.end == hay.text.len() || hay.text.as_bytes()[span.end] == b'\n')
        .map(|span| hay.source_range(haystack, span))
        .map(|span| if trims { through_trailing_whitespace(haystack, span) } else { span })
        .collect()
}

/// `span` extended over the whitespace that ends its last line, when only whitespace follows it
/// there: that whitespace is what the match overlooked, so the splice sees the whole file line.
fn through_trailing_whitespace(haystack: &str, span: Range<usize>) -> Range<usize> {
    // A span that ends with its line break has no whitespace left on its line: what follows is
    // the next line's, a blank line of spaces the model did not quote.
    if haystack[..span.end].ends_with('\n') {
        return span;
    }
    let rest = &haystack[span.end..];
    let line_rest = &rest[..rest.find('\n').unwrap_or(rest.len())];
    if !line_rest.is_empty() && line_rest.trim().is_empty() { span.start..span.end + line_rest.len() } else { span }
}

/// Matches ignoring each line's leading whitespace, then keeps the places whose indentation
/// differs from oldText's by one consistent shift or change of style (which `reindent` can
/// carry over to newText). Spans start at the beginning of their first line, indentation included.
fn find_indented(haystack: &str, old: &str, new: &str) -> Vec<Range<usize>> {
    let needle_norm = strip_indentation(old).text;
    if needle_norm.trim().is_empty() {
        return Vec::new();
    }
    let hay = strip_indentation(haystack);
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    occurrences(&hay.text, &needle_norm)
        .filter(|&at| at == 0 || hay.text.as_bytes()[at - 1] == b'\n')
        .map(|at| {
            let range = hay.source_range(haystack, at..at + needle_norm.len());
            let line_start = haystack[..range.start].rfind('\n').map_or(0, |lf| lf + 1);
            line_start..range.end
        })
        .filter(|span| {
            let matched: Vec<&str> = haystack[span.clone()].split_inclusive('\n').collect();
            let pairs: Vec<(&str, &str)> = old_lines.iter().copied().zip(matched).collect();
            reindent::IndentMap::infer(&pairs, old, new, haystack).is_some()
        })
        .collect()
}

impl Normalised {
    /// The source range covering exactly the characters a match of the normalised text came from.
    fn source_range(&self, source: &str, span: Range<usize>) -> Range<usize> {
        let start = self.origin[span.start];
        let last = self.origin[span.end - 1];
        let last_len = source[last..].chars().next().map_or(0, char::len_utf8);
        start..last + last_len
    }

    fn push(&mut self, ch: char, source_at: usize) {
        self.text.push(ch);
        self.origin.extend(std::iter::repeat_n(source_at, ch.len_utf8()));
    }

    fn with_capacity(capacity: usize) -> Self {
        Normalised { text: String::with_capacity(capacity), origin: Vec::with_capacity(capacity) }
    }
}

/// Calls `keep` with each line's content (without its `\n`) and the content's offset, and pushes
/// what it returns followed by the line's `\n`, unless it returns `None` (the line is dropped).
fn map_lines(source: &str, keep: impl Fn(&str) -> Option<Range<usize>>) -> Normalised {
    let mut out = Normalised::with_capacity(source.len());
    let mut line_start = 0;
    for line in source.split_inclusive('\n') {
        let content = line.strip_suffix('\n').unwrap_or(line);
        if let Some(kept) = keep(content) {
            for (at, ch) in content[kept.clone()].char_indices() {
                out.push(ch, line_start + kept.start + at);
            }
            if content.len() < line.len() {
                out.push('\n', line_start + content.len());
            }
        }
        line_start += line.len();
    }
    out
}

fn strip_trailing_whitespace(source: &str) -> Normalised {
    map_lines(source, |content| Some(0..content.trim_end().len()))
}

fn strip_trailing_whitespace_and_typography(source: &str) -> Normalised {
    let mut out = Normalised::with_capacity(source.len());
    let mut line_start = 0;
    for line in source.split_inclusive('\n') {
        let content = line.strip_suffix('\n').unwrap_or(line);
        for (at, ch) in content.trim_end().char_indices() {
            out.push(ascii_typography(ch), line_start + at);
        }
        if content.len() < line.len() {
            out.push('\n', line_start + content.len());
        }
        line_start += line.len();
    }
    out
}

fn strip_indentation(source: &str) -> Normalised {
    map_lines(source, |content| Some(content.len() - content.trim_start_matches([' ', '\t']).len()..content.len()))
}

fn drop_blank_lines(source: &str) -> Normalised {
    map_lines(source, |content| (!content.trim().is_empty()).then_some(0..content.len()))
}

fn map_chars(source: &str, map: fn(char) -> char) -> Normalised {
    let mut out = Normalised::with_capacity(source.len());
    for (at, ch) in source.char_indices() {
        out.push(map(ch), at);
    }
    out
}

/// Smart quotes, dashes and Unicode spaces as the ASCII a model tends to type instead.
pub(crate) fn ascii_typography(ch: char) -> char {
    match ch {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_find(haystack: &str, needle: &str, expected: &str) {
        let found = find(haystack, needle, "");
        let spans: Vec<&str> = found.spans.iter().map(|span| &haystack[span.clone()]).collect();
        assert_eq!(format!("{:?} {:?}", found.normalisation, spans), expected);
    }

    #[test]
    fn loose_matches_map_back_to_whole_source_characters() {
        check_find("a = “x”  \nb\n", "a = \"x\"", r#"Typography ["a = “x”"]"#);
        check_find("f(a)   \n  g()\t\nh\n", "f(a)\n  g()\n", r#"TrailingWhitespace ["f(a)   \n  g()\t\n"]"#);
        check_find("foo(a,b)\n", "foo(a, ", r#"Exact []"#);
        check_find("x\u{3000}=\u{a0}1\n", "x = 1", r#"Typography ["x\u{3000}=\u{a0}1"]"#);
    }

    #[test]
    fn indentation_spans_start_at_the_line_and_need_a_consistent_shift() {
        check_find(
            "fn f() {\n\tif x {\n\t\ty();\n\t}\n}\n",
            "if x {\n    y();\n}",
            r#"Indentation ["\tif x {\n\t\ty();\n\t}"]"#,
        );
        // `b` is one level deeper than `a` in the file but at the same level in oldText.
        check_find("  a\n    b\n", "a\nb", r#"Exact []"#);
    }

    #[test]
    fn blank_lines_are_ignored_last_among_the_normalisations() {
        check_find("a\n\nb\nc\n", "a\nb\n", r#"BlankLines ["a\n\nb\n"]"#);
    }
}
