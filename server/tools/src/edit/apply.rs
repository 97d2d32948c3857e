//! The rules of `edit` as one pure function, [`apply_edits`], so they can be tested without I/O.
//!
//! Every edit is located in the ORIGINAL text (not one after another), exactly once unless
//! `replaceAll`, without overlapping another; then all of them are spliced into the original bytes
//! at once. One failure and nothing changes. Matching sees the file without its BOM and with CRLF
//! folded to LF; the splice maps back to the file's own bytes, so nothing outside a matched span
//! changes and lines the model repeated unchanged keep the file's bytes.

use std::borrow::Cow;
use std::ops::Range;

use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::Edit;
use super::matching::{self, Normalisation};

/// A successful edit: the new file text and what the model and the reviewer should be told.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub text: String,
    /// How loose matches were found ("matched after ignoring trailing whitespace").
    pub notes: Vec<String>,
    /// How many places changed (more than the number of edits with `replaceAll`).
    pub replacements: usize,
}

/// The file as matching sees it, and the way back to its bytes.
struct LfView<'a> {
    bom: &'a str,
    /// The file after the BOM, untouched.
    body: &'a str,
    /// `body` with every CRLF folded to LF.
    text: String,
    /// Offsets in `text` of the `\n`s that were `\r\n` in `body`, ascending.
    crlf_at: Vec<usize>,
    /// What new lines get: the file's dominant line ending.
    line_ending: &'static str,
}

/// One place an edit changes, in `LfView::text` offsets.
struct Place {
    edit: usize,
    span: Range<usize>,
}

/// An edit's texts as matching sees them (LF line endings).
struct EditText<'a> {
    old: Cow<'a, str>,
    new: Cow<'a, str>,
}

/// Applies `edits` to `original`, or says why not in a message for the model. `display_path` is
/// the file's path as the model knows it, for those messages.
pub fn apply_edits(original: &str, edits: &[Edit], replace_all: bool, display_path: &str) -> Result<Applied, String> {
    if edits.is_empty() {
        return Err("no edits given: pass at least one {oldText, newText} pair in edits".to_string());
    }
    let several = edits.len() > 1;
    let fail = |message: String| if several { format!("{message}\nNone of the edits were applied.") } else { message };
    let label = |index: usize| if several { format!("edits[{index}]: ") } else { String::new() };

    let view = LfView::new(original);
    let texts: Vec<EditText> =
        edits.iter().map(|edit| EditText { old: to_lf(&edit.old_text), new: to_lf(&edit.new_text) }).collect();
    let mut places = Vec::new();
    let mut notes = Vec::new();
    for (index, text) in texts.iter().enumerate() {
        let label = label(index);
        if text.old.is_empty() {
            return Err(fail(format!(
                "{label}oldText is empty; it must quote the text to replace. To insert, quote a neighbouring line in oldText and repeat it in newText; to create a file, use write"
            )));
        }
        if text.old == text.new {
            return Err(fail(format!("{label}oldText and newText are identical, so this edit would change nothing")));
        }
        let matches = matching::find(&view.text, &text.old);
        if matches.spans.is_empty() {
            return Err(fail(not_found(&view.text, &text.old, &label, display_path)));
        }
        if matches.spans.len() > 1 && !replace_all {
            return Err(fail(ambiguous(&view.text, &matches, &label, display_path)));
        }
        if matches.normalisation != Normalisation::Exact {
            notes.push(format!("{label}{}", matches.normalisation.describe()));
        }
        places.extend(matches.spans.into_iter().map(|span| Place { edit: index, span }));
    }

    places.sort_by_key(|place| (place.span.start, place.edit));
    for pair in places.windows(2) {
        if pair[0].span.end > pair[1].span.start {
            let line = line_of(&view.text, pair[1].span.start);
            return Err(fail(format!(
                "edits[{}] and edits[{}] overlap in {display_path} (around line {line}); each edit must change a separate part of the file, so merge them into one edit",
                pair[0].edit, pair[1].edit
            )));
        }
    }

    let mut result = String::with_capacity(original.len());
    result.push_str(view.bom);
    let mut copied_to = 0;
    for place in &places {
        let text = &texts[place.edit];
        result.push_str(&view.body[copied_to..view.to_body(place.span.start)]);
        result.push_str(&replacement(&view, place.span.clone(), &text.old, &text.new));
        copied_to = view.to_body(place.span.end);
    }
    result.push_str(&view.body[copied_to..]);

    if result == original {
        return Err(fail(format!(
            "these edits would leave {display_path} unchanged: the matched text already reads as newText"
        )));
    }
    Ok(Applied { text: result, notes, replacements: places.len() })
}

impl<'a> LfView<'a> {
    fn new(original: &'a str) -> Self {
        let (bom, body) = match original.strip_prefix('\u{feff}') {
            Some(body) => ("\u{feff}", body),
            None => ("", original),
        };
        let mut text = String::with_capacity(body.len());
        let mut crlf_at = Vec::new();
        let mut lone_lf = 0;
        let mut rest = body;
        while let Some(at) = rest.find('\n') {
            match rest[..at].strip_suffix('\r') {
                Some(line) => {
                    text.push_str(line);
                    crlf_at.push(text.len());
                }
                None => {
                    text.push_str(&rest[..at]);
                    lone_lf += 1;
                }
            }
            text.push('\n');
            rest = &rest[at + 1..];
        }
        text.push_str(rest);
        let line_ending = if crlf_at.len() > lone_lf { "\r\n" } else { "\n" };
        LfView { bom, body, text, crlf_at, line_ending }
    }

    /// The `body` offset of `text` offset `at`: each folded CR before it shifts it by one, so a
    /// span ending after a `\n` takes its `\r` along and one ending before it leaves the pair.
    fn to_body(&self, at: usize) -> usize {
        at + self.crlf_at.partition_point(|&lf| lf < at)
    }
}

/// What replaces one matched span, in the file's bytes: `new`'s lines with the file's line
/// ending, except that lines `old` and `new` share keep the matched region's own bytes — a loose
/// match must not rewrite the trailing spaces or curly quotes of lines the model did not change.
fn replacement(view: &LfView, span: Range<usize>, old: &str, new: &str) -> String {
    let matched_lines = line_ranges(&view.text[span.clone()]);
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    // Both normalisations keep line breaks, so the counts agree; if not, fall back to `new`.
    if matched_lines.len() != old_lines.len() {
        return with_line_ending(new, view.line_ending).into_owned();
    }
    let mut out = String::with_capacity(new.len());
    for op in capture_diff_slices(Algorithm::Myers, &old_lines, &new_lines) {
        match op {
            DiffOp::Equal { old_index, len, .. } => {
                for line in &matched_lines[old_index..old_index + len] {
                    let start = view.to_body(span.start + line.start);
                    let end = view.to_body(span.start + line.end);
                    out.push_str(&view.body[start..end]);
                }
            }
            DiffOp::Delete { .. } => {}
            DiffOp::Insert { new_index, new_len, .. } | DiffOp::Replace { new_index, new_len, .. } => {
                for line in &new_lines[new_index..new_index + new_len] {
                    out.push_str(&with_line_ending(line, view.line_ending));
                }
            }
        }
    }
    out
}

/// The byte ranges of `text`'s lines, each with its `\n`.
fn line_ranges(text: &str) -> Vec<Range<usize>> {
    let mut start = 0;
    text.split_inclusive('\n')
        .map(|line| {
            let range = start..start + line.len();
            start = range.end;
            range
        })
        .collect()
}

fn to_lf(text: &str) -> Cow<'_, str> {
    if text.contains("\r\n") { Cow::Owned(text.replace("\r\n", "\n")) } else { Cow::Borrowed(text) }
}

fn with_line_ending<'t>(text: &'t str, line_ending: &str) -> Cow<'t, str> {
    if line_ending == "\n" { Cow::Borrowed(text) } else { Cow::Owned(text.replace('\n', line_ending)) }
}

/// 1-based line number of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

fn ambiguous(text: &str, matches: &matching::Matches, label: &str, display_path: &str) -> String {
    // Enough line numbers to find them; all of them would flood the message.
    const MAX_LISTED: usize = 10;
    let count = matches.spans.len();
    let mut lines: Vec<String> =
        matches.spans.iter().take(MAX_LISTED).map(|span| line_of(text, span.start).to_string()).collect();
    if count > MAX_LISTED {
        lines.push("…".to_string());
    }
    let how = match matches.normalisation {
        Normalisation::Exact => String::new(),
        loose => format!(" when {} (none match exactly)", loose.ignoring()),
    };
    format!(
        "{label}found {count} occurrences of the text in {display_path}{how}, at lines {}; add more surrounding context to make it unique, or set replaceAll",
        lines.join(", ")
    )
}

fn not_found(text: &str, old: &str, label: &str, display_path: &str) -> String {
    // Lines shown around the closest region, and at most this many lines in all.
    const CONTEXT: usize = 2;
    const MAX_SHOWN: usize = 40;
    let mut message = format!("{label}could not find oldText in {display_path}");
    match matching::closest_region(text, old) {
        None if text.is_empty() => {
            message.push_str(&format!(" ({display_path} is empty; use write to give it content)"))
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
            message.push_str(&format!(
                ". The most similar part of the file is {span} (shown with line numbers, which are not part of the file):\n"
            ));
            for number in first..=last {
                message.push_str(&format!("{number:>5} | {}\n", lines[number - 1]));
            }
        }
    }
    message.push_str(&format!(
        "\nRead {display_path} again and copy oldText exactly as it is now, including whitespace and indentation."
    ));
    message
}
