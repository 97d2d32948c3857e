//! Open buffers: one rope per document, with its version and language, kept in step with the
//! editor through full and incremental `didChange` events.
//!
//! Positions arrive in the negotiated encoding (UTF-16 unless the client offered UTF-8); ropey
//! counts chars, and the review core counts bytes, so every position is converted here, and
//! only here. The ropes are built with `cr_lines` and
//! without `unicode_lines`, so their lines are exactly LSP's: split at `\n`, `\r\n` and `\r`.

use std::collections::HashMap;
use std::ops::Range as Span;
use std::path::{Path, PathBuf};

use ropey::{Rope, RopeSlice};
use tokio::sync::watch;
use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent};

/// How `Position.character` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PositionEncoding {
    #[default]
    Utf16,
    Utf8,
}

/// One open buffer.
#[derive(Debug, Clone)]
pub struct Document {
    pub uri: String,
    /// The file behind the buffer; `None` for buffers that are not files (`untitled:`).
    pub path: Option<PathBuf>,
    pub language_id: String,
    pub version: i32,
    pub rope: Rope,
    /// The text an edit sent to the editor should make, and whether a `didChange` showed it:
    /// the editor's `applied: true` alone does not say the buffer holds it.
    pub expected: Option<Expected>,
    /// The file on disk when the buffer opened or last wrote it (`didOpen`, `didSave`): the base
    /// of a three-way merge when the file changes on disk under the buffer (a formatter).
    pub loaded: Option<Rope>,
}

/// What an edit in flight should turn the buffer into.
#[derive(Debug, Clone)]
pub struct Expected {
    pub text: String,
    pub seen: bool,
}

/// Every open buffer, by URI, with an index by path for the agent's tools.
#[derive(Debug, Default)]
pub struct Documents {
    pub encoding: PositionEncoding,
    by_uri: HashMap<String, Document>,
    by_path: HashMap<PathBuf, String>,
    /// Counts every open, change and close, so that an edit in flight can wait for the editor.
    revisions: watch::Sender<u64>,
}

impl Documents {
    pub fn open(&mut self, uri: String, path: Option<PathBuf>, language_id: String, version: i32, text: &str) {
        if let Some(path) = &path {
            self.by_path.insert(path.clone(), uri.clone());
        }
        let rope = Rope::from_str(text);
        let document = Document { uri: uri.clone(), path, language_id, version, rope, expected: None, loaded: None };
        self.by_uri.insert(uri, document);
        self.revised();
    }

    /// Applies one `didChange`, in order. A change for a buffer that is not open is dropped
    /// with a warning: the editor broke the protocol, and guessing would corrupt the text.
    pub fn change(&mut self, uri: &str, version: i32, changes: &[TextDocumentContentChangeEvent]) {
        let encoding = self.encoding;
        let Some(document) = self.by_uri.get_mut(uri) else {
            tracing::warn!("didChange for {uri}, which is not open; ignored");
            return;
        };
        for change in changes {
            match change.range {
                None => document.rope = Rope::from_str(&change.text),
                Some(range) => {
                    let start = char_index(&document.rope, range.start, encoding);
                    let end = char_index(&document.rope, range.end, encoding).max(start);
                    document.rope.remove(start..end);
                    document.rope.insert(start, &change.text);
                }
            }
            // One workspace edit may arrive as several changes, and typing may follow in the
            // same `didChange`: the text in between is what shows the edit landed.
            if let Some(expected) = document.expected.as_mut().filter(|expected| !expected.seen) {
                expected.seen =
                    document.rope.len_bytes() == expected.text.len() && document.rope == expected.text.as_str();
            }
        }
        document.version = version;
        self.revised();
    }

    pub fn close(&mut self, uri: &str) {
        if let Some(document) = self.by_uri.remove(uri)
            && let Some(path) = document.path
        {
            self.by_path.remove(&path);
        }
        self.revised();
    }

    /// The file of `uri` holds `text` now (the buffer opened or wrote it, or has the file's
    /// changes merged into it).
    pub fn loaded(&mut self, uri: &str, text: Option<&str>) {
        if let Some(document) = self.by_uri.get_mut(uri) {
            document.loaded = text.map(Rope::from_str);
        }
    }

    /// Watches the documents: the value changes with every open, change and close.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.revisions.subscribe()
    }

    /// Records that an edit sent to the editor should turn `uri`'s text into `text` (or, with
    /// `None`, that no edit is in flight any more).
    pub fn expect(&mut self, uri: &str, text: Option<String>) {
        if let Some(document) = self.by_uri.get_mut(uri) {
            document.expected = text.map(|text| Expected { text, seen: false });
        }
    }

    fn revised(&self) {
        self.revisions.send_modify(|revision| *revision = revision.wrapping_add(1));
    }

    pub fn get(&self, uri: &str) -> Option<&Document> {
        self.by_uri.get(uri)
    }

    pub fn by_path(&self, path: &Path) -> Option<&Document> {
        self.by_path.get(path).and_then(|uri| self.by_uri.get(uri))
    }

    pub fn all(&self) -> impl Iterator<Item = &Document> {
        self.by_uri.values()
    }
}

impl Document {
    pub fn text(&self) -> String {
        self.rope.to_string()
    }
}

/// The char index of an LSP position. A line past the end clamps to the end of the text, and a
/// character past the end of its line clamps to the line's end (before its line break), as the
/// specification asks.
pub fn char_index(rope: &Rope, position: Position, encoding: PositionEncoding) -> usize {
    let line_index = position.line as usize;
    if line_index >= rope.len_lines() {
        return rope.len_chars();
    }
    let line_start = rope.line_to_char(line_index);
    let line = without_line_break(rope.line(line_index));
    let character = position.character as usize;
    let within = match encoding {
        PositionEncoding::Utf16 => {
            if character >= line.len_utf16_cu() {
                line.len_chars()
            } else {
                line.utf16_cu_to_char(character)
            }
        }
        PositionEncoding::Utf8 => {
            if character >= line.len_bytes() {
                line.len_chars()
            } else {
                line.byte_to_char(character)
            }
        }
    };
    line_start + within
}

/// The LSP position of a char index.
pub fn position_of(rope: &Rope, char_index: usize, encoding: PositionEncoding) -> Position {
    let char_index = char_index.min(rope.len_chars());
    let line_index = rope.char_to_line(char_index);
    let within = rope.slice(rope.line_to_char(line_index)..char_index);
    let character = match encoding {
        PositionEncoding::Utf16 => within.len_utf16_cu(),
        PositionEncoding::Utf8 => within.len_bytes(),
    };
    Position { line: line_index as u32, character: character as u32 }
}

/// The LSP position of byte `offset` of `text`, known to lie on line `line` (from 0, counted as
/// LSP counts): only that line's text is read, so converting a hunk costs its line, not the file.
pub fn position_in(text: &str, offset: usize, line: usize, encoding: PositionEncoding) -> Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_start = text[..offset].rfind(['\n', '\r']).map_or(0, |at| at + 1);
    let within = &text[line_start..offset];
    let character = match encoding {
        PositionEncoding::Utf16 => within.chars().map(char::len_utf16).sum(),
        PositionEncoding::Utf8 => within.len(),
    };
    Position { line: line as u32, character: character as u32 }
}

/// The LSP range of the bytes `span` of `rope`'s text (a hunk's span: it splits no character).
pub fn range_of(rope: &Rope, span: Span<usize>, encoding: PositionEncoding) -> Range {
    let position = |byte: usize| position_of(rope, rope.byte_to_char(byte.min(rope.len_bytes())), encoding);
    Range { start: position(span.start), end: position(span.end) }
}

/// A line without its `\n`, `\r\n` or `\r`.
fn without_line_break(line: RopeSlice<'_>) -> RopeSlice<'_> {
    let mut end = line.len_chars();
    if end > 0 && line.char(end - 1) == '\n' {
        end -= 1;
    }
    if end > 0 && line.char(end - 1) == '\r' {
        end -= 1;
    }
    line.slice(..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: (u32, u32), end: (u32, u32)) -> Range {
        Range { start: Position::new(start.0, start.1), end: Position::new(end.0, end.1) }
    }

    /// An edit: start (line, character), end, new text.
    type Edit<'a> = ((u32, u32), (u32, u32), &'a str);

    /// Opens `text`, applies `edits` in order, and returns the result.
    fn check_edits(encoding: PositionEncoding, text: &str, edits: &[Edit<'_>]) -> String {
        let mut documents = Documents { encoding, ..Documents::default() };
        documents.open("file:///a".into(), None, "text".into(), 1, text);
        let changes: Vec<TextDocumentContentChangeEvent> = edits
            .iter()
            .map(|(start, end, text)| TextDocumentContentChangeEvent {
                range: Some(range(*start, *end)),
                range_length: None,
                text: text.to_string(),
            })
            .collect();
        documents.change("file:///a", 2, &changes);
        let document = documents.get("file:///a").unwrap();
        assert_eq!(document.version, 2);
        document.text()
    }

    #[test]
    fn utf16_counts_astral_characters_as_two_units() {
        // "😀" is two UTF-16 units; "é" one; the edit lands after both.
        assert_eq!(check_edits(PositionEncoding::Utf16, "😀é!\n", &[((0, 3), (0, 4), "?")]), "😀é?\n");
        assert_eq!(check_edits(PositionEncoding::Utf8, "😀é!\n", &[((0, 6), (0, 7), "?")]), "😀é?\n");
    }

    #[test]
    fn crlf_and_lone_cr_are_line_breaks() {
        let text = "a\r\nb\rc\nd";
        assert_eq!(check_edits(PositionEncoding::Utf16, text, &[((1, 0), (1, 1), "B")]), "a\r\nB\rc\nd");
        assert_eq!(check_edits(PositionEncoding::Utf16, text, &[((2, 0), (3, 1), "CD")]), "a\r\nb\rCD");
        // A character past the end of a line stops before its line break, never inside "\r\n".
        assert_eq!(check_edits(PositionEncoding::Utf16, text, &[((0, 9), (0, 9), "!")]), "a!\r\nb\rc\nd");
    }

    #[test]
    fn positions_past_the_end_clamp() {
        assert_eq!(check_edits(PositionEncoding::Utf16, "ab\n", &[((7, 0), (9, 9), "z")]), "ab\nz");
        assert_eq!(check_edits(PositionEncoding::Utf16, "", &[((0, 0), (0, 0), "中文")]), "中文");
    }

    #[test]
    fn positions_round_trip_through_char_indexes() {
        let rope = Rope::from_str("x😀\r\n中文\ry");
        for encoding in [PositionEncoding::Utf16, PositionEncoding::Utf8] {
            for index in 0..=rope.len_chars() {
                let position = position_of(&rope, index, encoding);
                // Between "\r" and "\n" is not a position LSP can name; it clamps to the line end.
                let expected = if index == 3 { 2 } else { index };
                assert_eq!(char_index(&rope, position, encoding), expected, "{encoding:?} {index} {position:?}");
            }
        }
    }

    #[test]
    fn paths_index_open_buffers_until_closed() {
        let mut documents = Documents::default();
        documents.open("file:///w/a.rs".into(), Some("/w/a.rs".into()), "rust".into(), 3, "fn a() {}\n");
        assert_eq!(documents.by_path(Path::new("/w/a.rs")).map(|d| d.version), Some(3));
        documents.close("file:///w/a.rs");
        assert!(documents.by_path(Path::new("/w/a.rs")).is_none());
    }
}
