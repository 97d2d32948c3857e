//! The client's copy of a document, edited the way an editor would: by ranges in UTF-16 code
//! units, over lines split at `\n`, `\r\n` and `\r`.

use serde_json::{Value, json};

#[derive(Debug, Clone, Default)]
pub struct ClientDocument {
    pub text: String,
}

impl ClientDocument {
    pub fn new(text: &str) -> Self {
        Self { text: text.to_string() }
    }

    /// The LSP position (line, UTF-16 column) of a byte offset on a char boundary.
    pub fn position(&self, offset: usize) -> (u32, u32) {
        let before = &self.text[..offset];
        let mut line = 0;
        let mut line_start = 0;
        let bytes = before.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => {
                    line += 1;
                    line_start = i + 1;
                }
                b'\r' if bytes.get(i + 1) != Some(&b'\n') => {
                    line += 1;
                    line_start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        // An offset between "\r" and "\n" is not addressable; callers avoid it.
        let column = before[line_start..].encode_utf16().count();
        (line, column as u32)
    }

    /// The byte offset of an LSP position (line, UTF-16 column); past the end of a line or of
    /// the text, it clamps there, as the specification asks.
    pub fn offset(&self, line: u32, character: u32) -> usize {
        let bytes = self.text.as_bytes();
        let (mut at, mut current) = (0, 0);
        while current < line {
            match bytes.get(at) {
                None => return self.text.len(),
                Some(b'\r') if bytes.get(at + 1) == Some(&b'\n') => {
                    at += 2;
                    current += 1;
                }
                Some(b'\n' | b'\r') => {
                    at += 1;
                    current += 1;
                }
                Some(_) => at += 1,
            }
        }
        let mut units = 0;
        for (index, c) in self.text[at..].char_indices() {
            if c == '\n' || c == '\r' || units >= character as usize {
                return at + index;
            }
            units += c.len_utf16();
        }
        self.text.len()
    }

    /// Applies an LSP content change or text edit (`range` and `text` or `newText`; without a
    /// range, the whole text).
    pub fn apply(&mut self, change: &Value) {
        let text = change.get("text").or_else(|| change.get("newText")).and_then(Value::as_str).unwrap_or("");
        let Some(range) = change.get("range").filter(|range| !range.is_null()) else {
            self.text = text.to_string();
            return;
        };
        let at = |position: &Value| {
            let number = |key: &str| position[key].as_u64().unwrap_or(0) as u32;
            self.offset(number("line"), number("character"))
        };
        let (start, end) = (at(&range["start"]), at(&range["end"]));
        self.text.replace_range(start..end.max(start), text);
    }

    /// Replaces bytes `start..end` with `new_text` and returns the change event for it.
    pub fn replace(&mut self, start: usize, end: usize, new_text: &str) -> Value {
        let (start_line, start_col) = self.position(start);
        let (end_line, end_col) = self.position(end);
        self.text.replace_range(start..end, new_text);
        json!({
            "range": {
                "start": {"line": start_line, "character": start_col},
                "end": {"line": end_line, "character": end_col},
            },
            "text": new_text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_and_every_line_break() {
        let doc = ClientDocument::new("a😀b\r\nc\rd\ne");
        assert_eq!(doc.position(5), (0, 3)); // after "a😀"
        assert_eq!(doc.position(doc.text.find('c').unwrap()), (1, 0));
        assert_eq!(doc.position(doc.text.find('d').unwrap()), (2, 0));
        assert_eq!(doc.position(doc.text.len()), (3, 1));
    }

    #[test]
    fn replace_edits_the_text_and_describes_the_range() {
        let mut doc = ClientDocument::new("中文\r\nx");
        let change = doc.replace(3, 6, "!");
        assert_eq!(doc.text, "中!\r\nx");
        assert_eq!(change["range"]["start"], json!({"line": 0, "character": 1}));
        assert_eq!(change["range"]["end"], json!({"line": 0, "character": 2}));
    }
}
