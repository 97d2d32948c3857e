//! The rules of `edit` as one pure function, [`apply_edits`], so they can be tested without I/O.
//!
//! Every edit is located in the ORIGINAL text (not one after another), exactly once unless
//! `replaceAll`, without overlapping another; then all of them are spliced into the original bytes
//! at once. One failure and nothing changes. Matching (`matching`) sees the file without its BOM and with
//! CRLF folded to LF; the splice (`splice`) maps back to the file's own bytes, so nothing outside
//! a matched span changes and lines the model repeated unchanged keep the file's bytes.

use std::borrow::Cow;
use std::ops::Range;

use super::hint::{self, Dialect};
use super::matching::Found;
use super::splice::{self, LfView};
use super::{Edit, matching};

/// A successful edit: the new file text and what the model and the reviewer should be told.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub text: String,
    /// How loose matches were found ("matched after ignoring trailing whitespace").
    pub notes: Vec<String>,
    /// How many places changed (more than the number of edits with `replaceAll`).
    pub replacements: usize,
}

/// One place an edit changes, in `LfView::text` offsets.
struct Place {
    edit: usize,
    span: Range<usize>,
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
    let texts: Vec<(Cow<str>, Cow<str>)> =
        edits.iter().map(|edit| (to_lf(&edit.old_text), to_lf(&edit.new_text))).collect();
    let mut places = Vec::new();
    let mut founds = Vec::with_capacity(edits.len());
    let mut notes = Vec::new();
    for (index, (old, new)) in texts.iter().enumerate() {
        let label = label(index);
        if old.is_empty() {
            return Err(fail(format!(
                "{label}oldText is empty; it must quote the text to replace. To insert, quote a neighbouring line in oldText and repeat it in newText; to create a file, use write"
            )));
        }
        if old == new {
            return Err(fail(format!("{label}oldText and newText are identical, so this edit would change nothing")));
        }
        let mut found = matching::find(&view.text, old, new);
        if found.spans.is_empty() {
            return Err(fail(hint::not_found(&view.text, old, &label, display_path, Dialect::Edit)));
        }
        if found.spans.len() > 1 && !replace_all {
            return Err(fail(hint::ambiguous(&view.text, &found, &label, display_path)));
        }
        if !found.old.ends_with('\n') {
            // A quote that stops short of its line's trailing whitespace takes it along, so that
            // lines appended after it do not carry it away from the line it ends.
            for span in &mut found.spans {
                span.end = through_trailing_whitespace(&view.text, span.end);
            }
            // And the line break after it, on both sides: lines appended or deleted at its end
            // then leave the lines before with their own endings, as a quote with a final newline.
            // Whole lines deleted take their break along rather than leave an empty line.
            if found.spans.iter().all(|span| view.text[span.end..].starts_with('\n')) {
                let whole_lines = found.spans.iter().all(|span| {
                    let line_start = view.text[..span.start].rfind('\n').map_or(0, |lf| lf + 1);
                    view.text[line_start..span.start].bytes().all(|byte| byte == b' ' || byte == b'\t')
                });
                for span in &mut found.spans {
                    span.end += 1;
                }
                found.old.to_mut().push('\n');
                if !(found.new.is_empty() && whole_lines) {
                    found.new.to_mut().push('\n');
                }
            }
        }
        if let Some(note) = &found.note {
            notes.push(format!("{label}{note}"));
        }
        places.extend(std::mem::take(&mut found.spans).into_iter().map(|span| Place { edit: index, span }));
        founds.push(found);
    }

    places.sort_by_key(|place| (place.span.start, place.edit));
    for pair in places.windows(2) {
        if pair[0].span.end > pair[1].span.start {
            let line = hint::line_of(&view.text, pair[1].span.start);
            return Err(fail(format!(
                "edits[{}] and edits[{}] overlap in {display_path} (around line {line}); each edit must change a separate part of the file, so merge them into one edit",
                pair[0].edit, pair[1].edit
            )));
        }
    }

    let spliced: Vec<(Range<usize>, &Found)> =
        places.iter().map(|place| (place.span.clone(), &founds[place.edit])).collect();
    let result = splice_all(original, &view, &spliced);

    if result == original {
        return Err(fail(format!(
            "these edits would leave {display_path} unchanged: the matched text already reads as newText"
        )));
    }
    Ok(Applied { text: result, notes, replacements: places.len() })
}

/// `original` with each of `places` (non-overlapping, in file order, in `view.text` offsets)
/// replaced as its match says: the one way both `edit` and `apply_patch` write.
pub(crate) fn splice_all(original: &str, view: &LfView, places: &[(Range<usize>, &Found)]) -> String {
    let mut result = String::with_capacity(original.len());
    result.push_str(view.bom);
    let mut copied_to = 0;
    for (span, found) in places {
        // Whole lines quoted from after their indentation: the indentation goes with the first
        // line, so deleting that line does not leave it glued to the next one.
        let line_start = view.text[..span.start].rfind('\n').map_or(0, |lf| lf + 1).max(copied_to);
        let lead = &view.text[line_start..span.start];
        let lead =
            if found.old.contains('\n') && lead.chars().all(|ch| ch == ' ' || ch == '\t') { lead.len() } else { 0 };
        let start = span.start - lead;
        result.push_str(&view.body[view.to_body(copied_to)..view.to_body(start)]);
        result.push_str(&splice::replacement(view, start..span.end, lead, found));
        copied_to = span.end;
    }
    result.push_str(&view.body[view.to_body(copied_to)..]);
    result
}

/// `at`, or the end of its line when only spaces and tabs stand between them.
fn through_trailing_whitespace(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    let line_end = rest.find('\n').unwrap_or(rest.len());
    if rest[..line_end].bytes().all(|byte| byte == b' ' || byte == b'\t') { at + line_end } else { at }
}

fn to_lf(text: &str) -> Cow<'_, str> {
    if text.contains("\r\n") { Cow::Owned(text.replace("\r\n", "\n")) } else { Cow::Borrowed(text) }
}
