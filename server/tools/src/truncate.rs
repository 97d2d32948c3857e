//! Cutting long text down to what fits in a tool result, without splitting a UTF-8 character
//! (or a line, unless one line alone is too long), and counting what was kept so the tools can tell
//! the model how to see the rest.
//!
//! `read` keeps the head of a file (the model continues with `offset`); `bash` keeps the tail of a
//! command's output (errors and summaries come last).

/// The default limits shared by the tools: 2000 lines or 50 KB, whichever comes first.
pub const MAX_LINES: usize = 2000;
pub const MAX_BYTES: usize = 50 * 1024;

/// Which limit cut the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Lines,
    Bytes,
}

/// What was kept of a text, and how much there was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    pub kept: String,
    /// `None` when the whole text was kept.
    pub cut_by: Option<Limit>,
    /// Whole or partial lines kept.
    pub kept_lines: usize,
    pub total_lines: usize,
    pub total_bytes: usize,
    /// A single line was longer than the byte limit, so only part of it was kept.
    pub partial_line: bool,
}

impl Truncation {
    pub fn is_cut(&self) -> bool {
        self.cut_by.is_some()
    }
}

/// Number of lines as an editor counts them: a trailing newline does not start another line.
pub fn count_lines(text: &str) -> usize {
    text.split_inclusive('\n').count()
}

/// Human-readable size: `512 B`, `50.0 KB`, `3.2 MB`.
pub fn format_size(bytes: usize) -> String {
    const KB: f64 = 1024.0;
    let size = bytes as f64;
    if size < KB {
        format!("{bytes} B")
    } else if size < KB * KB {
        format!("{:.1} KB", size / KB)
    } else {
        format!("{:.1} MB", size / (KB * KB))
    }
}

/// Keeps the first `max_lines` lines of `text`, and at most `max_bytes` bytes of whole lines.
/// When the first line alone exceeds `max_bytes`, keeps its first `max_bytes` bytes (at a
/// character boundary) and sets `partial_line`.
pub fn truncate_head(text: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let total_lines = count_lines(text);
    let mut kept_bytes = 0;
    let mut kept_lines = 0;
    let mut cut_by = None;
    for line in text.split_inclusive('\n') {
        if kept_lines == max_lines {
            cut_by = Some(Limit::Lines);
            break;
        }
        if kept_bytes + line.len() > max_bytes {
            cut_by = Some(Limit::Bytes);
            break;
        }
        kept_bytes += line.len();
        kept_lines += 1;
    }
    if cut_by == Some(Limit::Bytes) && kept_lines == 0 {
        let (kept, _) = reins_ai::cut_bytes(text, max_bytes);
        return Truncation {
            kept: kept.to_string(),
            cut_by,
            kept_lines: usize::from(!kept.is_empty()),
            total_lines,
            total_bytes: text.len(),
            partial_line: true,
        };
    }
    Truncation {
        kept: text[..kept_bytes].to_string(),
        cut_by,
        kept_lines,
        total_lines,
        total_bytes: text.len(),
        partial_line: false,
    }
}

/// Keeps the last `max_lines` lines of `text`, and at most `max_bytes` bytes of whole lines.
/// When the last line alone exceeds `max_bytes`, keeps its last `max_bytes` bytes (at a
/// character boundary) and sets `partial_line`.
pub fn truncate_tail(text: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let total_lines = count_lines(text);
    let mut start = text.len();
    let mut kept_lines = 0;
    let mut cut_by = None;
    for line in text.split_inclusive('\n').rev() {
        if kept_lines == max_lines {
            cut_by = Some(Limit::Lines);
            break;
        }
        if text.len() - start + line.len() > max_bytes {
            cut_by = Some(Limit::Bytes);
            break;
        }
        start -= line.len();
        kept_lines += 1;
    }
    if cut_by == Some(Limit::Bytes) && kept_lines == 0 {
        let (kept, _) = reins_ai::cut_bytes_from_end(text, max_bytes);
        return Truncation {
            kept: kept.to_string(),
            cut_by,
            kept_lines: usize::from(!kept.is_empty()),
            total_lines,
            total_bytes: text.len(),
            partial_line: true,
        };
    }
    Truncation {
        kept: text[start..].to_string(),
        cut_by,
        kept_lines,
        total_lines,
        total_bytes: text.len(),
        partial_line: false,
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check_head(text: &str, max_lines: usize, max_bytes: usize, expected: Expect) {
        expected.assert_debug_eq(&truncate_head(text, max_lines, max_bytes));
    }

    fn check_tail(text: &str, max_lines: usize, max_bytes: usize, expected: Expect) {
        expected.assert_debug_eq(&truncate_tail(text, max_lines, max_bytes));
    }

    #[test]
    fn head_keeps_everything_that_fits() {
        check_head(
            "a\nb\n",
            10,
            100,
            expect![[r#"
                Truncation {
                    kept: "a\nb\n",
                    cut_by: None,
                    kept_lines: 2,
                    total_lines: 2,
                    total_bytes: 4,
                    partial_line: false,
                }
            "#]],
        );
    }

    #[test]
    fn head_cuts_by_lines() {
        check_head(
            "a\nb\nc",
            2,
            100,
            expect![[r#"
                Truncation {
                    kept: "a\nb\n",
                    cut_by: Some(
                        Lines,
                    ),
                    kept_lines: 2,
                    total_lines: 3,
                    total_bytes: 5,
                    partial_line: false,
                }
            "#]],
        );
    }

    #[test]
    fn head_cuts_by_bytes_at_a_line_end() {
        check_head(
            "aaa\nbbb\nccc\n",
            10,
            9,
            expect![[r#"
                Truncation {
                    kept: "aaa\nbbb\n",
                    cut_by: Some(
                        Bytes,
                    ),
                    kept_lines: 2,
                    total_lines: 3,
                    total_bytes: 12,
                    partial_line: false,
                }
            "#]],
        );
    }

    #[test]
    fn head_cuts_a_single_long_line_at_a_char_boundary() {
        // "é" is two bytes: a cut after 3 bytes would split the second one.
        check_head(
            "ééé\nx\n",
            10,
            3,
            expect![[r#"
                Truncation {
                    kept: "é",
                    cut_by: Some(
                        Bytes,
                    ),
                    kept_lines: 1,
                    total_lines: 2,
                    total_bytes: 9,
                    partial_line: true,
                }
            "#]],
        );
    }

    #[test]
    fn tail_cuts_by_lines() {
        check_tail(
            "a\nb\nc\n",
            2,
            100,
            expect![[r#"
                Truncation {
                    kept: "b\nc\n",
                    cut_by: Some(
                        Lines,
                    ),
                    kept_lines: 2,
                    total_lines: 3,
                    total_bytes: 6,
                    partial_line: false,
                }
            "#]],
        );
    }

    #[test]
    fn tail_cuts_by_bytes_at_a_line_start() {
        check_tail(
            "aaa\nbbb\nccc",
            10,
            8,
            expect![[r#"
                Truncation {
                    kept: "bbb\nccc",
                    cut_by: Some(
                        Bytes,
                    ),
                    kept_lines: 2,
                    total_lines: 3,
                    total_bytes: 11,
                    partial_line: false,
                }
            "#]],
        );
    }

    #[test]
    fn tail_cuts_a_single_long_line_at_a_char_boundary() {
        check_tail(
            "x\nééé",
            10,
            3,
            expect![[r#"
                Truncation {
                    kept: "é",
                    cut_by: Some(
                        Bytes,
                    ),
                    kept_lines: 1,
                    total_lines: 2,
                    total_bytes: 8,
                    partial_line: true,
                }
            "#]],
        );
    }

    #[test]
    fn empty_text_has_no_lines() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
        assert!(!truncate_head("", 1, 1).is_cut());
    }

    #[test]
    fn sizes_are_human_readable() {
        assert_eq!(
            [format_size(512), format_size(50 * 1024), format_size(3 * 1024 * 1024)],
            ["512 B", "50.0 KB", "3.0 MB"]
        );
    }
}
