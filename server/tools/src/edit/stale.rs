//! The last rung of matching: `oldText` whose context lines went stale. When the lines the model
//! changes (deleted or replaced, per a diff of `oldText` against `newText`) match the file
//! exactly at one place, and only lines it repeats unchanged differ there — each still similar to
//! the model's version — the edit can land: the splice keeps the file's own version of those
//! context lines, so nothing the model did not see is overwritten.

use std::ops::Range;

use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::hint::similarity;

/// Places where the changed lines match, and the note that says which context lines differed.
pub(crate) struct Stale {
    pub spans: Vec<Range<usize>>,
    pub note: String,
}

/// How alike a stale context line must still be to the model's version (Dice of bigrams).
const MIN_SIMILARITY: f64 = 0.5;

/// Windows of the file's lines where every changed line of `old` matches exactly and every
/// differing line is a context line; `None` when there is none, or when `old` has no changed
/// line or no context line to be stale.
pub(crate) fn find(haystack: &str, old: &str, new: &str, keep: &dyn Fn(&Range<usize>) -> bool) -> Option<Stale> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let mut changed = vec![false; old_lines.len()];
    for op in capture_diff_slices(Algorithm::Myers, &old_lines, &new_lines) {
        if let DiffOp::Delete { old_index, old_len, .. } | DiffOp::Replace { old_index, old_len, .. } = op {
            changed[old_index..old_index + old_len].iter_mut().for_each(|flag| *flag = true);
        }
    }
    let changes_something = old_lines.iter().zip(&changed).any(|(line, &flag)| flag && !line.trim().is_empty());
    if !changes_something || changed.iter().all(|&flag| flag) {
        return None;
    }
    let old_content: Vec<&str> = old_lines.iter().map(|line| line.strip_suffix('\n').unwrap_or(line)).collect();
    let file_lines = line_spans(haystack);
    if file_lines.len() < old_content.len() {
        return None;
    }
    let ends_with_newline = old.ends_with('\n');
    let mut spans = Vec::new();
    let mut differing_first = Vec::new();
    for start in 0..=file_lines.len() - old_content.len() {
        let line = |index: usize| &haystack[file_lines[start + index].clone()];
        // Changed lines first: plain comparisons rule out almost every window before any scoring.
        let changed_fit =
            (0..old_content.len()).filter(|&index| changed[index]).all(|index| line(index) == old_content[index]);
        if !changed_fit {
            continue;
        }
        let mut differing = Vec::new();
        let mut fits = true;
        for (index, &model) in old_content.iter().enumerate().filter(|&(index, _)| !changed[index]) {
            if line(index) == model {
                continue;
            }
            if similarity(line(index), model) < MIN_SIMILARITY {
                fits = false;
                break;
            }
            differing.push((start + index + 1, line(index), model));
        }
        if !fits || differing.is_empty() {
            continue;
        }
        let first = file_lines[start].start;
        let last = &file_lines[start + old_content.len() - 1];
        let end = if ends_with_newline { (last.end + 1).min(haystack.len()) } else { last.end };
        if !keep(&(first..end)) {
            continue;
        }
        spans.push(first..end);
        if differing_first.is_empty() {
            differing_first = differing
                .iter()
                .map(|(number, line, model)| format!("line {number} reads {line:?}, not {model:?}"))
                .collect();
        }
    }
    if spans.is_empty() {
        return None;
    }
    let note = format!(
        "matched although {} of oldText's unchanged context lines differ from the file ({}); the lines you changed matched exactly, and the file's own version of the context lines was kept",
        differing_first.len(),
        differing_first.join("; ")
    );
    Some(Stale { spans, note })
}

/// The byte ranges of `text`'s lines, without their `\n`.
fn line_spans(text: &str) -> Vec<Range<usize>> {
    let mut start = 0;
    text.split_inclusive('\n')
        .map(|line| {
            let content = start..start + line.strip_suffix('\n').unwrap_or(line).len();
            start += line.len();
            content
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(haystack: &str, old: &str, new: &str, expected: &str) {
        let actual = match find(haystack, old, new, &|_| true) {
            Some(stale) => {
                let spans: Vec<&str> = stale.spans.iter().map(|span| &haystack[span.clone()]).collect();
                format!("{spans:?} {}", stale.note)
            }
            None => "none".to_string(),
        };
        assert_eq!(actual, expected);
    }

    #[test]
    fn lands_when_only_context_is_stale() {
        check(
            "let limit = 10;\nrun(limit);\n",
            "let limit = 5;\nrun(limit);\n",
            "let limit = 5;\nrun_twice(limit);\n",
            r#"["let limit = 10;\nrun(limit);\n"] matched although 1 of oldText's unchanged context lines differ from the file (line 1 reads "let limit = 10;", not "let limit = 5;"); the lines you changed matched exactly, and the file's own version of the context lines was kept"#,
        );
    }

    #[test]
    fn refuses_a_changed_line_that_differs() {
        check("a = 1\nb = 2\n", "a = 1\nb = 3\n", "a = 1\nb = 4\n", "none");
    }

    #[test]
    fn refuses_pure_insertions_and_unlike_context() {
        check("a = 1\nb = 2\n", "a = 9\nb = 2\n", "a = 9\nc = 0\nb = 2\n", "none");
        check("zzzzzz\nb = 2\n", "a = 1\nb = 2\n", "a = 1\nb = 3\n", "none");
    }
}
