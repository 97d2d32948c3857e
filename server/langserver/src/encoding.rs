//! Columns as a language server counts them — UTF-16 code units unless `initialize` settled on
//! UTF-8 bytes or UTF-32 characters — converted to and from the characters the tools count, by
//! the line's text.

use reins_tools::Point;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// The encoding a server's capabilities settled (`positionEncoding`; UTF-16 when absent).
    pub fn of(capabilities: &Value) -> Encoding {
        match capabilities.get("positionEncoding").and_then(Value::as_str) {
            Some("utf-8") => Encoding::Utf8,
            Some("utf-32") => Encoding::Utf32,
            _ => Encoding::Utf16,
        }
    }

    /// A server's position in `text` as a point; a column past the line's end is its end.
    pub fn point(self, text: &str, line: u32, character: u32) -> Point {
        let code = text.split('\n').nth(line as usize).unwrap_or("");
        let mut units = 0u32;
        let mut column = 0u32;
        for c in code.chars() {
            if units >= character || c == '\r' {
                break;
            }
            units += self.width(c);
            column += 1;
        }
        Point { line, column }
    }

    /// A point in `text` as the server's position (line, character).
    pub fn position(self, text: &str, point: Point) -> (u32, u32) {
        let code = text.split('\n').nth(point.line as usize).unwrap_or("");
        let character = code.chars().take(point.column as usize).map(|c| self.width(c)).sum();
        (point.line, character)
    }

    fn width(self, c: char) -> u32 {
        match self {
            Encoding::Utf8 => c.len_utf8() as u32,
            Encoding::Utf16 => c.len_utf16() as u32,
            Encoding::Utf32 => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_convert_both_ways_in_every_encoding() {
        let text = "x\nlet 𝔘 = größe;\n";
        // `größe` starts at character 8: `𝔘` is two UTF-16 units and four UTF-8 bytes.
        let point = Point { line: 1, column: 8 };
        assert_eq!(Encoding::Utf16.position(text, point), (1, 9));
        assert_eq!(Encoding::Utf8.position(text, point), (1, 11));
        assert_eq!(Encoding::Utf32.position(text, point), (1, 8));
        for (encoding, character) in [(Encoding::Utf16, 9), (Encoding::Utf8, 11), (Encoding::Utf32, 8)] {
            assert_eq!(encoding.point(text, 1, character), point);
        }
        assert_eq!(Encoding::Utf16.point(text, 0, 99), Point { line: 0, column: 1 });
        assert_eq!(Encoding::Utf16.point(text, 7, 3), Point { line: 7, column: 0 });
    }
}
