//! Finding an edit's `oldText` in a file: exactly first, then under one forgiving normalisation at
//! a time (mildest first), and — when nothing matches — the region of the file that looks most
//! like it, so the model can see what it got wrong.
//!
//! Everything here works on LF-only text without a BOM; `apply` takes care of the file's bytes.

use std::ops::Range;

/// How a match was found. The loose kinds are reported to the model and the reviewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Normalisation {
    Exact,
    TrailingWhitespace,
    Typography,
}

/// Where `oldText` occurs, as byte ranges of the searched text, and how it was found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Matches {
    pub normalisation: Normalisation,
    /// Non-overlapping, in file order; empty when nothing matched.
    pub spans: Vec<Range<usize>>,
}

/// The lines of the file that most resemble an unmatched `oldText` (1-based, inclusive).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Region {
    pub first_line: usize,
    pub last_line: usize,
}

/// A text rewritten by a normalisation, with the way back: `origin[i]` is the offset in the
/// source of the character that byte `i` came from. Normalisations map each kept character to
/// exactly one character, so a match maps back to whole source characters.
struct Normalised {
    text: String,
    origin: Vec<usize>,
}

impl Normalisation {
    /// The loose normalisations, mildest first.
    const LOOSE: [Normalisation; 2] = [Normalisation::TrailingWhitespace, Normalisation::Typography];

    /// For notes: "matched after ignoring trailing whitespace".
    pub(crate) fn describe(self) -> String {
        match self {
            Normalisation::Exact => "matched exactly".to_string(),
            loose => format!("matched after {}", loose.ignoring()),
        }
    }

    /// What the normalisation overlooks, as a phrase: "ignoring trailing whitespace".
    pub(crate) fn ignoring(self) -> &'static str {
        match self {
            Normalisation::Exact => "comparing exactly",
            Normalisation::TrailingWhitespace => "ignoring trailing whitespace",
            Normalisation::Typography => "treating typographic quotes, dashes and Unicode spaces as their ASCII forms",
        }
    }

    fn apply(self, source: &str) -> Normalised {
        match self {
            Normalisation::Exact => map_chars(source, |ch| ch),
            Normalisation::TrailingWhitespace => strip_trailing_whitespace(source),
            Normalisation::Typography => map_chars(source, ascii_typography),
        }
    }
}

/// Finds `needle` in `haystack`: every exact occurrence if there is one, else every occurrence
/// under the first loose normalisation that finds any.
pub(crate) fn find(haystack: &str, needle: &str) -> Matches {
    let exact: Vec<Range<usize>> = haystack.match_indices(needle).map(|(at, _)| at..at + needle.len()).collect();
    if !exact.is_empty() {
        return Matches { normalisation: Normalisation::Exact, spans: exact };
    }
    for normalisation in Normalisation::LOOSE {
        let spans = find_normalised(haystack, needle, normalisation);
        if !spans.is_empty() {
            return Matches { normalisation, spans };
        }
    }
    Matches { normalisation: Normalisation::Exact, spans: Vec::new() }
}

fn find_normalised(haystack: &str, needle: &str, normalisation: Normalisation) -> Vec<Range<usize>> {
    let needle_norm = normalisation.apply(needle).text;
    if needle_norm.is_empty() {
        return Vec::new();
    }
    // A needle whose last line lost trailing whitespace must end where a line ends; otherwise
    // "foo(a, " would match the start of "foo(a,b)" and the splice would land mid-line.
    let must_end_line = normalisation == Normalisation::TrailingWhitespace
        && needle.ends_with(|ch: char| ch.is_whitespace() && ch != '\n');
    let hay = normalisation.apply(haystack);
    hay.text
        .match_indices(needle_norm.as_str())
        .map(|(at, _)| at..at + needle_norm.len())
        .filter(|span| !must_end_line || span.end == hay.text.len() || hay.text.as_bytes()[span.end] == b'\n')
        .map(|span| hay.source_range(haystack, span))
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
}

fn strip_trailing_whitespace(source: &str) -> Normalised {
    let mut out = Normalised { text: String::with_capacity(source.len()), origin: Vec::with_capacity(source.len()) };
    let mut line_start = 0;
    for line in source.split_inclusive('\n') {
        let content = line.strip_suffix('\n').unwrap_or(line);
        for (at, ch) in content.trim_end().char_indices() {
            out.push(ch, line_start + at);
        }
        if content.len() < line.len() {
            out.push('\n', line_start + content.len());
        }
        line_start += line.len();
    }
    out
}

fn map_chars(source: &str, map: fn(char) -> char) -> Normalised {
    let mut out = Normalised { text: String::with_capacity(source.len()), origin: Vec::with_capacity(source.len()) };
    for (at, ch) in source.char_indices() {
        out.push(map(ch), at);
    }
    out
}

impl Normalised {
    fn push(&mut self, ch: char, source_at: usize) {
        self.text.push(ch);
        self.origin.extend(std::iter::repeat_n(source_at, ch.len_utf8()));
    }
}

/// Smart quotes, dashes and Unicode spaces as the ASCII a model tends to type instead.
fn ascii_typography(ch: char) -> char {
    match ch {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{2010}'..='\u{2015}' => '-',
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// The window of the file's lines most similar to `needle`'s lines, compared line by line
/// (ignoring indentation and trailing whitespace). `None` when either has no lines.
pub(crate) fn closest_region(haystack: &str, needle: &str) -> Option<Region> {
    // Scoring more than this many lines of a long oldText adds cost and little precision.
    const MAX_SCORED_LINES: usize = 30;
    let needle_lines: Vec<&str> = needle.trim_end_matches('\n').lines().collect();
    let file_lines: Vec<&str> = haystack.lines().collect();
    if needle_lines.is_empty() || file_lines.is_empty() {
        return None;
    }
    let width = needle_lines.len().min(file_lines.len());
    let scored: Vec<Bigrams> = needle_lines.iter().take(width.min(MAX_SCORED_LINES)).map(|l| bigrams(l)).collect();
    let file: Vec<Bigrams> = file_lines.iter().map(|l| bigrams(l)).collect();
    let mut best = (f64::MIN, 0);
    for start in 0..=file_lines.len() - width {
        let score: f64 = scored.iter().zip(&file[start..]).map(|(a, b)| similarity(a, b)).sum();
        if score > best.0 {
            best = (score, start);
        }
    }
    Some(Region { first_line: best.1 + 1, last_line: best.1 + width })
}

/// A line as a sorted multiset of character pairs, padded so one-character lines have some.
type Bigrams = Vec<(char, char)>;

fn bigrams(line: &str) -> Bigrams {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Vec::new();
    }
    let padded: Vec<char> = std::iter::once(' ').chain(trimmed.chars()).chain(std::iter::once(' ')).collect();
    let mut pairs: Bigrams = padded.windows(2).map(|w| (w[0], w[1])).collect();
    pairs.sort_unstable();
    pairs
}

/// Dice coefficient of two bigram multisets: 1 for equal lines, 0 for nothing in common.
fn similarity(a: &Bigrams, b: &Bigrams) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (2 * common) as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_find(haystack: &str, needle: &str, expected: &str) {
        let matches = find(haystack, needle);
        let spans: Vec<&str> = matches.spans.iter().map(|span| &haystack[span.clone()]).collect();
        assert_eq!(format!("{:?} {:?}", matches.normalisation, spans), expected);
    }

    #[test]
    fn loose_matches_map_back_to_whole_source_characters() {
        check_find("a = “x”  \nb\n", "a = \"x\"", r#"Typography ["a = “x”"]"#);
        check_find("f(a)   \n  g()\t\nh\n", "f(a)\n  g()\n", r#"TrailingWhitespace ["f(a)   \n  g()\t\n"]"#);
        check_find("foo(a,b)\n", "foo(a, ", r#"Exact []"#);
        check_find("x\u{3000}=\u{a0}1\n", "x = 1", r#"Typography ["x\u{3000}=\u{a0}1"]"#);
    }

    #[test]
    fn closest_region_prefers_the_most_similar_window() {
        let file = "fn a() {\n    one();\n}\n\nfn b() {\n    two();\n}\n";
        assert_eq!(closest_region(file, "fn b() {\n    too();\n"), Some(Region { first_line: 5, last_line: 6 }));
        assert_eq!(closest_region("", "x"), None);
    }
}
