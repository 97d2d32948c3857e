//! Small policies of the loop that need no I/O: cutting long tool results and spotting a model
//! that repeats itself.

use reins_ai::{Content, ToolCall};
use serde_json::Value;

/// Remembers the last call the run made, to stop a model that repeats an identical call.
#[derive(Debug, Default)]
pub(crate) struct RepeatDetector {
    last: Option<(String, Value)>,
}

impl RepeatDetector {
    /// Records `call` (with its parsed arguments) and tells whether it is identical to the
    /// previous one. Arguments compare as JSON values, so key order and spacing do not matter.
    pub(crate) fn is_repeat(&mut self, call: &ToolCall, arguments: &Value) -> bool {
        let repeat = self.last.as_ref().is_some_and(|(name, args)| *name == call.name && args == arguments);
        self.last = Some((call.name.clone(), arguments.clone()));
        repeat
    }

    /// Forgets the last call: after the user speaks, doing the same thing again may be wanted.
    pub(crate) fn reset(&mut self) {
        self.last = None;
    }
}

/// Cuts the text of `content` to at most `max_bytes` bytes in total (never inside a character)
/// and appends a notice saying how much was shown. Images are kept as they are.
pub(crate) fn truncate_content(content: &mut Vec<Content>, max_bytes: usize) {
    let total: usize = content.iter().map(text_len).sum();
    if total <= max_bytes {
        return;
    }
    let mut budget = max_bytes;
    let mut shown = 0;
    let mut cut_at = None;
    for (index, block) in content.iter_mut().enumerate() {
        let Content::Text { text } = block else { continue };
        if cut_at.is_some() {
            text.clear();
            continue;
        }
        if text.len() > budget {
            let end = floor_char_boundary(text, budget);
            text.truncate(end);
            cut_at = Some(index);
        }
        budget -= text.len();
        shown += text.len();
    }
    content.retain(|block| !matches!(block, Content::Text { text } if text.is_empty()));
    let notice = format!("[output truncated: {shown} of {total} bytes shown]");
    match content.iter_mut().rev().find_map(|block| match block {
        Content::Text { text } => Some(text),
        _ => None,
    }) {
        Some(text) => {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&notice);
        }
        None => content.push(Content::text(notice)),
    }
}

fn text_len(block: &Content) -> usize {
    match block {
        Content::Text { text } => text.len(),
        _ => 0,
    }
}

/// The largest index `<= index` that starts a character of `text`.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    (0..=index).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use reins_ai::{Content, ToolCall};
    use serde_json::json;

    use super::{RepeatDetector, truncate_content};

    fn check_truncate(content: Vec<Content>, max_bytes: usize, expected: Expect) {
        let mut content = content;
        truncate_content(&mut content, max_bytes);
        expected.assert_debug_eq(&content);
    }

    #[test]
    fn short_output_is_untouched() {
        check_truncate(
            vec![Content::text("hello")],
            5,
            expect![[r#"
                [
                    Text {
                        text: "hello",
                    },
                ]
            "#]],
        );
    }

    #[test]
    fn long_output_is_cut_with_a_notice() {
        check_truncate(
            vec![Content::text("0123456789")],
            4,
            expect![[r#"
                [
                    Text {
                        text: "0123\n[output truncated: 4 of 10 bytes shown]",
                    },
                ]
            "#]],
        );
    }

    #[test]
    fn cut_never_splits_a_character() {
        // "é" is two bytes; a limit of 2 falls inside the second "é".
        check_truncate(
            vec![Content::text("aéé")],
            2,
            expect![[r#"
                [
                    Text {
                        text: "a\n[output truncated: 1 of 5 bytes shown]",
                    },
                ]
            "#]],
        );
    }

    #[test]
    fn later_blocks_are_dropped_and_images_kept() {
        check_truncate(
            vec![
                Content::text("abc"),
                Content::Image { data: "AAAA".into(), mime_type: "image/png".into() },
                Content::text("defgh"),
                Content::text("ijk"),
            ],
            5,
            expect![[r#"
                [
                    Text {
                        text: "abc",
                    },
                    Image {
                        data: "AAAA",
                        mime_type: "image/png",
                    },
                    Text {
                        text: "de\n[output truncated: 5 of 11 bytes shown]",
                    },
                ]
            "#]],
        );
    }

    fn call(name: &str) -> ToolCall {
        ToolCall { id: "x".into(), name: name.into(), arguments: json!({}) }
    }

    #[test]
    fn repeat_needs_same_name_and_arguments_in_a_row() {
        let mut detector = RepeatDetector::default();
        let seen: Vec<bool> = [
            ("read", json!({"path": "a", "n": 1})),
            ("read", json!({"n": 1, "path": "a"})), // same value, other key order
            ("read", json!({"path": "b"})),
            ("ls", json!({"path": "b"})),
            ("read", json!({"path": "b"})),
        ]
        .iter()
        .map(|(name, args)| detector.is_repeat(&call(name), args))
        .collect();
        assert_eq!(seen, [false, true, false, false, false]);
        detector.reset();
        assert!(!detector.is_repeat(&call("read"), &json!({"path": "b"})));
    }
}
