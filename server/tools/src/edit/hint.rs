//! What a refused edit tells the model so its next try lands: for text not found, the most
//! similar region of the file with line numbers, a short diff of `oldText` against it, and how
//! many regions were about as close; for text found more than once, where.

use std::fmt::Write as _;

use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::matching::{Found, Normalisation};

/// The lines of the file that most resemble an unmatched `oldText` (1-based, inclusive), and how
/// many separate regions were nearly as similar (0 when even the closest is not very similar).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Region {
    pub first_line: usize,
    pub last_line: usize,
    pub candidates: usize,
}

/// A line as a sorted multiset of character pairs, padded so one-character lines have some.
type Bigrams = Vec<(char, char)>;

/// Which tool's words a message uses for the text the model quoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// `edit`: oldText.
    Edit,
    /// `apply_patch`: a hunk's context and `-` lines.
    Patch,
}

impl Dialect {
    /// The quoted text, as the model knows it.
    fn quoted(self) -> &'static str {
        match self {
            Dialect::Edit => "oldText",
            Dialect::Patch => "the hunk's context and '-' lines",
        }
    }

    /// What to copy again, and how.
    fn retry(self) -> &'static str {
        match self {
            Dialect::Edit => "oldText exactly as it is now",
            Dialect::Patch => "the hunk's context and '-' lines exactly as they are now",
        }
    }

    /// Its lines in a diff against the file.
    fn diff_side(self) -> &'static str {
        match self {
            Dialect::Edit => "your oldText",
            Dialect::Patch => "your hunk",
        }
    }
}

/// The message for `old` found nowhere in `text`.
pub(crate) fn not_found(text: &str, old: &str, label: &str, display_path: &str, dialect: Dialect) -> String {
    // Lines shown around the closest region, at most this many lines in all, and of the diff.
    const CONTEXT: usize = 2;
    const MAX_SHOWN: usize = 40;
    const MAX_DIFF_LINES: usize = 12;
    let quoted = dialect.quoted();
    let mut message = format!("{label}could not find {quoted} in {display_path}");
    match closest_region(text, old) {
        None if text.is_empty() => {
            let _ = write!(message, " ({display_path} is empty; use write to give it content)");
        }
        None => message.push('.'),
        Some(region) => {
            let lines: Vec<&str> = text.lines().collect();
            let first = region.first_line.saturating_sub(CONTEXT).max(1);
            let last = (region.last_line + CONTEXT).min(lines.len()).min(first + MAX_SHOWN - 1);
            let span = if region.first_line == region.last_line {
                format!("line {}", region.first_line)
            } else {
                format!("lines {}-{}", region.first_line, region.last_line)
            };
            let candidates = match region.candidates {
                0 => "though not very similar".to_string(),
                1 => "no other region comes close".to_string(),
                count => format!("the closest of {count} similar regions"),
            };
            let _ = writeln!(
                message,
                ". The most similar part of the file is {span} ({candidates}), shown with line numbers, which are not part of the file:"
            );
            for number in first..=last {
                let _ = writeln!(message, "{number:>5} | {}", lines[number - 1]);
            }
            let region_lines = &lines[region.first_line - 1..region.last_line];
            let old_lines: Vec<&str> = old.trim_end_matches('\n').lines().collect();
            let diff = line_diff(&old_lines, region_lines, MAX_DIFF_LINES);
            if !diff.is_empty() {
                let _ = writeln!(message, "What differs (- {}, + the file):", dialect.diff_side());
                message.push_str(&diff);
            }
        }
    }
    let _ = write!(
        message,
        "\nRead {display_path} again and copy {}, including whitespace and indentation.",
        dialect.retry()
    );
    message
}

/// The message for `old` found at several places without `replaceAll`.
pub(crate) fn ambiguous(text: &str, found: &Found, label: &str, display_path: &str) -> String {
    // Enough line numbers to find them; all of them would flood the message.
    const MAX_LISTED: usize = 10;
    let count = found.spans.len();
    let mut lines: Vec<String> =
        found.spans.iter().take(MAX_LISTED).map(|span| line_of(text, span.start).to_string()).collect();
    if count > MAX_LISTED {
        lines.push("…".to_string());
    }
    let how = match found.normalisation {
        Normalisation::Exact => String::new(),
        loose => format!(" when {} (none match exactly)", loose.ignoring()),
    };
    format!(
        "{label}found {count} occurrences of the text in {display_path}{how}, at lines {}; add more surrounding context to make it unique, or set replaceAll",
        lines.join(", ")
    )
}

/// 1-based line number of byte offset `at`.
pub(crate) fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// `-`/`+` lines for what differs between `old` and `file`, at most `max_lines`, with a word on
/// differences that are whitespace only (invisible in the listing).
fn line_diff(old: &[&str], file: &[&str], max_lines: usize) -> String {
    let mut lines = Vec::new();
    let mut whitespace_only = true;
    for op in capture_diff_slices(Algorithm::Myers, old, file) {
        let (removed, added) = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete { old_index, old_len, .. } => (&old[old_index..old_index + old_len], &file[0..0]),
            DiffOp::Insert { new_index, new_len, .. } => (&old[0..0], &file[new_index..new_index + new_len]),
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                (&old[old_index..old_index + old_len], &file[new_index..new_index + new_len])
            }
        };
        let squeeze =
            |lines: &[&str]| lines.iter().map(|line| line.split_whitespace().collect::<String>()).collect::<Vec<_>>();
        whitespace_only &= squeeze(removed) == squeeze(added);
        lines.extend(removed.iter().map(|line| format!("- {line}")));
        lines.extend(added.iter().map(|line| format!("+ {line}")));
    }
    if lines.is_empty() {
        return String::new();
    }
    let total = lines.len();
    let mut out: String = lines.into_iter().take(max_lines).map(|line| line + "\n").collect();
    if total > max_lines {
        let _ = writeln!(out, "… {} more lines differ", total - max_lines);
    }
    if whitespace_only {
        out.push_str("Only whitespace differs (indentation, spaces or tabs): copy it exactly.\n");
    }
    out
}

/// The window of the file's lines most similar to `needle`'s lines, compared line by line
/// (ignoring indentation and trailing whitespace). `None` when either has no lines.
pub(crate) fn closest_region(haystack: &str, needle: &str) -> Option<Region> {
    // Scoring more than this many lines of a long oldText adds cost and little precision.
    const MAX_SCORED_LINES: usize = 30;
    // A region counts as a candidate when it scores this close to the best one, and at least
    // this similar per line.
    const CANDIDATE_RATIO: f64 = 0.9;
    const CANDIDATE_SIMILARITY: f64 = 0.5;
    let needle_lines: Vec<&str> = needle.trim_end_matches('\n').lines().collect();
    let file_lines: Vec<&str> = haystack.lines().collect();
    if needle_lines.is_empty() || file_lines.is_empty() {
        return None;
    }
    let width = needle_lines.len().min(file_lines.len());
    let scored: Vec<Bigrams> = needle_lines.iter().take(width.min(MAX_SCORED_LINES)).map(|l| bigrams(l)).collect();
    let file: Vec<Bigrams> = file_lines.iter().map(|l| bigrams(l)).collect();
    let scores: Vec<f64> = (0..=file_lines.len() - width)
        .map(|start| scored.iter().zip(&file[start..]).map(|(a, b)| dice(a, b)).sum())
        .collect();
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // Best first; ties go to the earliest window.
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let best = order[0];
    // Separate regions only: a window overlapping an already counted one is the same region.
    let mut counted: Vec<usize> = Vec::new();
    let threshold = (scores[best] * CANDIDATE_RATIO).max(CANDIDATE_SIMILARITY * scored.len() as f64);
    for &start in order.iter().take_while(|&&start| scores[start] >= threshold) {
        if counted.iter().all(|&other| start.abs_diff(other) >= width) {
            counted.push(start);
        }
    }
    Some(Region { first_line: best + 1, last_line: best + width, candidates: counted.len() })
}

/// How alike two lines are, ignoring indentation and trailing whitespace: 1 for equal lines, 0
/// for nothing in common.
pub(crate) fn similarity(a: &str, b: &str) -> f64 {
    dice(&bigrams(a), &bigrams(b))
}

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

/// Dice coefficient of two bigram multisets.
fn dice(a: &Bigrams, b: &Bigrams) -> f64 {
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

    #[test]
    fn closest_region_prefers_the_most_similar_window_and_counts_rivals() {
        let file = "fn a() {\n    one();\n}\n\nfn b() {\n    two();\n}\n";
        assert_eq!(
            closest_region(file, "fn b() {\n    too();\n"),
            Some(Region { first_line: 5, last_line: 6, candidates: 1 })
        );
        let twins = "x = 1\ny = 2\n\nx = 1\ny = 2\n";
        assert_eq!(
            closest_region(twins, "x = 1\ny = 3\n"),
            Some(Region { first_line: 1, last_line: 2, candidates: 2 })
        );
        assert_eq!(closest_region("", "x"), None);
    }

    #[test]
    fn diff_names_whitespace_only_differences() {
        assert_eq!(line_diff(&["a", "b"], &["a", "c"], 12), "- b\n+ c\n");
        assert_eq!(
            line_diff(&["  a"], &["\ta"], 12),
            "-   a\n+ \ta\nOnly whitespace differs (indentation, spaces or tabs): copy it exactly.\n"
        );
    }
}
