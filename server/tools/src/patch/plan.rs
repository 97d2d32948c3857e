//! What a parsed patch does to the files it names, as one pure function, [`plan`], so the rules
//! can be tested without I/O: every hunk is located with the same matcher as `edit` (exactly
//! first, then the same normalisations in the same order, and only the lines the model changed
//! take its bytes); one file that fails, and nothing is planned.
//!
//! A hunk is looked for after the hunk before it and after its `@@` lines; one that matches in
//! several places is refused with the places shown, unless its `@@` line's block holds only one.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::PathBuf;

use crate::edit::hint::{self, Dialect};
use crate::edit::matching::{self, Found, Normalisation};
use crate::edit::splice::LfView;
use crate::edit::splice_all;

use super::parse::{FileOp, Hunk, Patch};

/// A file a patch names, resolved by the tool: where it is, how to show it, and its text now
/// (`None` when it does not exist) with the open buffer's version.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Target {
    pub path: PathBuf,
    pub shown: String,
    pub text: Option<String>,
    pub version: Option<i32>,
}

/// What the patch does to one file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Planned {
    pub path: PathBuf,
    pub shown: String,
    /// The text now; `None` when the patch creates the file.
    pub before: Option<String>,
    /// The text after; `None` when the patch deletes the file.
    pub after: Option<String>,
    /// Where the file moves to (`*** Move to:`), with `after` as its text there.
    pub moved_to: Option<(PathBuf, String)>,
    pub version: Option<i32>,
    /// How loose matches were found, per hunk.
    pub notes: Vec<String>,
}

/// Plans `patch` over `targets` (every path the patch names, keyed as written in the patch), or
/// says why not in a message for the model.
pub(crate) fn plan(patch: &Patch, targets: &HashMap<String, Target>) -> Result<Vec<Planned>, String> {
    let target = |path: &str| {
        targets.get(path).ok_or_else(|| format!("internal error: the patch's path {path:?} was not resolved"))
    };
    // One section per file: two would each be planned against the file as it is now.
    let mut seen: HashMap<&PathBuf, &str> = HashMap::new();
    for op in &patch.files {
        for path in op.paths() {
            let resolved = target(path)?;
            if let Some(first) = seen.insert(&resolved.path, path) {
                return Err(format!(
                    "{} appears twice in the patch (as {first:?} and {path:?}); give each file one section, with all its hunks in it",
                    resolved.shown
                ));
            }
        }
    }
    let mut planned = Vec::with_capacity(patch.files.len());
    for op in &patch.files {
        let file = target(op.path())?;
        let shown = &file.shown;
        let step = match op {
            FileOp::Add { text, .. } => {
                if file.text.is_some() {
                    return Err(format!(
                        "{shown} already exists; *** Add File only creates files. Use *** Update File: {shown} to change it"
                    ));
                }
                Planned { before: None, after: Some(text.clone()), ..unchanged(file) }
            }
            FileOp::Delete { .. } => {
                let Some(text) = &file.text else {
                    return Err(format!("{shown} does not exist, so *** Delete File: {shown} has nothing to delete"));
                };
                Planned { before: Some(text.clone()), after: None, ..unchanged(file) }
            }
            FileOp::Update { move_to, hunks, .. } => {
                let Some(text) = &file.text else {
                    return Err(format!(
                        "{shown} does not exist; *** Update File changes existing files, so use *** Add File: {shown} to create it"
                    ));
                };
                let moved_to = match move_to {
                    Some(to) => {
                        let destination = target(to)?;
                        if destination.text.is_some() {
                            return Err(format!(
                                "cannot move {shown} to {}: it already exists. Delete it in the same patch first, or pick another name",
                                destination.shown
                            ));
                        }
                        Some((destination.path.clone(), destination.shown.clone()))
                    }
                    None => None,
                };
                let (after, notes) =
                    if hunks.is_empty() { (text.clone(), Vec::new()) } else { apply_hunks(text, hunks, shown)? };
                Planned { before: Some(text.clone()), after: Some(after), moved_to, notes, ..unchanged(file) }
            }
        };
        planned.push(step);
    }
    Ok(planned)
}

fn unchanged(file: &Target) -> Planned {
    Planned {
        path: file.path.clone(),
        shown: file.shown.clone(),
        before: file.text.clone(),
        after: file.text.clone(),
        moved_to: None,
        version: file.version,
        notes: Vec::new(),
    }
}

/// One located hunk: where it goes in the LF view and how it was found.
struct Located<'h> {
    hunk: usize,
    span: Range<usize>,
    found: Found<'h>,
}

/// The hunk's texts as `edit` sees them: `oldText` (context and `-` lines) and `newText`
/// (context and `+` lines), every line ending with `\n`.
struct Texts {
    old: String,
    new: String,
}

/// Applies `hunks` to `original`, all at once: the new text and the notes of loose matches.
pub(crate) fn apply_hunks(original: &str, hunks: &[Hunk], shown: &str) -> Result<(String, Vec<String>), String> {
    let view = LfView::new(original);
    let several = hunks.len() > 1;
    let texts: Vec<Texts> = hunks
        .iter()
        .map(|hunk| Texts {
            old: hunk.old_lines().map(|line| format!("{line}\n")).collect(),
            new: hunk.new_lines().map(|line| format!("{line}\n")).collect(),
        })
        .collect();
    let mut located: Vec<Located> = Vec::with_capacity(hunks.len());
    let mut notes = Vec::new();
    let mut cursor = 0;
    for (index, (hunk, texts)) in hunks.iter().zip(&texts).enumerate() {
        let label = if several {
            format!("{shown}, hunk {} (line {} of the patch): ", index + 1, hunk.line)
        } else {
            format!("{shown} (line {} of the patch): ", hunk.line)
        };
        let place = locate(&view.text, hunk, texts, cursor, &label, shown)?;
        if let Some(note) = &place.found.note {
            notes.push(format!("{label}{note}"));
        }
        cursor = place.span.end;
        located.push(Located { hunk: index, ..place });
    }
    located.sort_by_key(|place| (place.span.start, place.hunk));
    for pair in located.windows(2) {
        if pair[0].span.end > pair[1].span.start {
            return Err(format!(
                "hunks {} and {} of {shown} change the same lines (around line {}); merge them into one hunk",
                pair[0].hunk + 1,
                pair[1].hunk + 1,
                hint::line_of(&view.text, pair[1].span.start)
            ));
        }
    }
    let places: Vec<(Range<usize>, &Found)> = located.iter().map(|place| (place.span.clone(), &place.found)).collect();
    let result = splice_all(original, &view, &places);
    if result == original {
        return Err(format!("the patch would leave {shown} unchanged: its lines already read as the hunks' + lines"));
    }
    Ok((result, notes))
}

/// Finds where `hunk` goes in `text` (an LF view), looking after `cursor` (the end of the hunk
/// before) and after its `@@` lines.
fn locate<'h>(
    text: &str,
    hunk: &Hunk,
    texts: &'h Texts,
    cursor: usize,
    label: &str,
    shown: &str,
) -> Result<Located<'h>, String> {
    // Each @@ line is looked for after the one before; the hunk may start on the last one.
    let mut anchor: Option<Range<usize>> = None;
    let mut missing_anchor = None;
    for line in &hunk.anchors {
        let after = anchor.as_ref().map_or(cursor, |previous| next_line_start(text, previous.end));
        match find_line(text, line, after) {
            Some(found) => anchor = Some(found),
            None => {
                missing_anchor = Some(format!(
                    "{label}could not find the @@ line {line:?} in {shown}{}. An @@ line names a line of the file (a function or class) that the hunk comes after; copy it exactly, or leave it out",
                    if after > 0 { " after the hunk before it" } else { "" }
                ));
                anchor = None;
                break;
            }
        }
    }
    // Hunks come in file order; one that fits only before the hunk before it is still taken
    // when it fits exactly one place.
    let from = anchor.as_ref().map_or(cursor, |line| line.start);
    if let Some(message) = &missing_anchor
        && texts.old.is_empty()
    {
        return Err(message.clone());
    }
    if texts.old.is_empty() {
        // Only added lines: after the @@ line, or at the end of the file.
        let at = match &anchor {
            Some(line) => next_line_start(text, line.end),
            None => text.len(),
        };
        let new = if !text.is_empty() && !text.ends_with('\n') && at == text.len() {
            format!("\n{}", texts.new)
        } else {
            texts.new.clone()
        };
        let found = Found {
            normalisation: Normalisation::Exact,
            spans: std::iter::once(at..at).collect(),
            old: "".into(),
            new: new.into(),
            note: None,
        };
        return Ok(Located { hunk: 0, span: at..at, found });
    }
    let at_line_start = |at: usize| at == 0 || text.as_bytes()[at - 1] == b'\n';
    let eof_only = hunk.end_of_file;
    let line_end = |at: usize| text[at..].find('\n').map_or(text.len(), |lf| at + lf);
    let search = |start: usize| {
        let keep = |span: &Range<usize>| {
            span.start >= start && at_line_start(span.start) && (!eof_only || span.end == text.len())
        };
        let found = matching::find_where(text, &texts.old, &texts.new, &keep);
        if !found.spans.is_empty() {
            return found;
        }
        // The hunk's last line may end the file without a line break, or go on with whitespace
        // its copy dropped: it is looked for without its line break, and the place then taken
        // to the end of that line (and its break, when it has one, which the texts get back).
        let old = texts.old.strip_suffix('\n').unwrap_or(&texts.old);
        let new = texts.new.strip_suffix('\n').unwrap_or(&texts.new);
        // A place ending at the very end of a file that ends with a line break would match the
        // hunk's last (blank) line to the nothing after that break: not a line of the file.
        let keep = |span: &Range<usize>| {
            let end = line_end(span.end);
            span.start >= start
                && at_line_start(span.start)
                && text[span.end..end].trim().is_empty()
                && !(span.end == text.len() && text.ends_with('\n'))
                && (!eof_only || end + 1 >= text.len())
        };
        let mut found = matching::find_where(text, old, new, &keep);
        let with_break = found.spans.first().is_some_and(|span| line_end(span.end) < text.len());
        for span in &mut found.spans {
            let end = line_end(span.end);
            span.end = if end < text.len() { end + 1 } else { end };
        }
        if with_break {
            found.old = format!("{}\n", found.old).into();
            if texts.new.ends_with('\n') {
                found.new = format!("{}\n", found.new).into();
            }
        }
        found
    };
    let mut found = search(from);
    if found.spans.is_empty() && anchor.is_none() && from > 0 {
        found = search(0);
    }
    if let Some(message) = missing_anchor {
        // An @@ line the file does not have is forgiven only when the hunk itself fits one place.
        if found.spans.len() != 1 {
            return Err(message);
        }
        let line = hint::line_of(text, found.spans[0].start);
        let note = format!("the @@ line was not found, but the hunk's lines fit one place (line {line})");
        found.note = Some(match found.note.take() {
            Some(how) => format!("{how}; {note}"),
            None => note,
        });
    }
    match found.spans.len() {
        0 => Err(hint::not_found(text, &texts.old, label, shown, Dialect::Patch)),
        1 => Ok(Located { hunk: 0, span: found.spans[0].clone(), found }),
        _ => {
            let within = anchor.as_ref().map(|line| block_end(text, line.start));
            match within {
                Some(end) if found.spans.iter().filter(|span| span.start < end).count() == 1 => {
                    let span = found.spans[0].clone();
                    found.spans.truncate(1);
                    Ok(Located { hunk: 0, span, found })
                }
                _ => Err(ambiguous(text, &found, label, shown)),
            }
        }
    }
}

/// The first line starting at or after `from` that reads as `wanted`: ignoring trailing
/// whitespace first, then indentation too, then typography too. The range has no `\n`.
fn find_line(text: &str, wanted: &str, from: usize) -> Option<Range<usize>> {
    let mut lines = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if start >= from {
            lines.push(start..start + line.strip_suffix('\n').unwrap_or(line).len());
        }
        start += line.len();
    }
    let rungs: [fn(&str) -> String; 3] = [
        |line| line.trim_end().to_string(),
        |line| line.trim().to_string(),
        |line| line.trim().chars().map(matching::ascii_typography).collect(),
    ];
    rungs.iter().find_map(|key| {
        let wanted = key(wanted);
        lines.iter().find(|range| key(&text[(*range).clone()]) == wanted).cloned()
    })
}

/// Where the line after the one ending at `end` starts (the end of the text if none).
fn next_line_start(text: &str, end: usize) -> usize {
    text[end..].find('\n').map_or(text.len(), |lf| end + lf + 1)
}

/// The end of the block that the line starting at `start` opens: the lines after it that are
/// blank or indented deeper, and a closing line at its own depth (`}`, `)`, `]`, `end`).
fn block_end(text: &str, start: usize) -> usize {
    let indent = |line: &str| line.len() - line.trim_start_matches([' ', '\t']).len();
    let first_end = next_line_start(text, start);
    let depth = indent(&text[start..first_end]);
    let mut at = first_end;
    while at < text.len() {
        let end = next_line_start(text, at);
        let line = text[at..end].trim_end_matches('\n');
        if !line.trim().is_empty() && indent(line) <= depth {
            let closing = line.trim_start().starts_with(['}', ')', ']']) || line.trim() == "end";
            return if closing && indent(line) == depth { end } else { at };
        }
        at = end;
    }
    text.len()
}

/// The message for a hunk that fits several places: each place with its first lines.
fn ambiguous(text: &str, found: &Found, label: &str, shown: &str) -> String {
    // Places shown, and lines of each.
    const MAX_PLACES: usize = 3;
    const LINES_SHOWN: usize = 3;
    let lines: Vec<&str> = text.lines().collect();
    let numbers: Vec<usize> = found.spans.iter().map(|span| hint::line_of(text, span.start)).collect();
    let how = match found.normalisation {
        Normalisation::Exact => String::new(),
        loose => format!(" when {} (none match exactly)", loose.ignoring()),
    };
    let mut message = format!(
        "{label}the hunk's lines match {} places in {shown}{how}, at lines {}; add context lines, or an @@ line naming the function or class it is in, so it matches one:\n",
        numbers.len(),
        numbers.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    );
    for span in found.spans.iter().take(MAX_PLACES) {
        let first = hint::line_of(text, span.start);
        let last = hint::line_of(text, span.end.saturating_sub(1).max(span.start));
        for line in first..=last.min(first + LINES_SHOWN - 1).min(lines.len()) {
            let _ = writeln!(message, "{line:>5} | {}", lines[line - 1]);
        }
        message.push_str("  ...\n");
    }
    message
}
