//! Newline-delimited JSON-RPC, as ACP and MCP send it over stdio: one message a line. Blank
//! lines are ignored, a `\r` before the `\n` is dropped, and a line over the size limit is read
//! past without being kept (only its first bytes are, so that [`crate::peek`] can find its id).
//! Bytes that are not UTF-8 or not JSON still make a line: [`crate::inspect`] answers them.

use crate::Reader;
use crate::frames::{HEAD_BYTES, Item};

/// Lines longer than this are skipped rather than buffered.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Cuts a byte stream into lines: [`LineReader::push`] what arrived, then take
/// [`LineReader::next_item`] until it returns `None`; at the end of the input,
/// [`LineReader::finish`] reports a line that never ended. Chunk boundaries do not matter.
#[derive(Debug)]
pub struct LineReader {
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    start: usize,
    /// Bytes of the current line already searched for its end, so a long line arriving in small
    /// pieces is searched once.
    scanned: usize,
    max_line: usize,
    /// Reading past an oversized line: its bytes so far, and its first bytes.
    oversized: Option<(usize, Vec<u8>)>,
}

impl Reader for LineReader {
    /// Adds bytes read from the input.
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next line ([`Item::Body`]) or oversized line, or `None` until more bytes are pushed.
    fn next_item(&mut self) -> Option<Item> {
        let item = self.advance();
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 64 * 1024 && self.start * 2 > self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        item
    }

    /// Ends the input: a line that never ended, as one [`Item::Skipped`], or `None`.
    fn finish(&mut self) -> Option<Item> {
        let left = &self.buf[self.start..];
        let blank = left.iter().all(u8::is_ascii_whitespace);
        let item = match self.oversized.take() {
            Some((length, _)) => Some(Item::Skipped {
                bytes: length + left.len(),
                reason: format!("the input ended inside a line of over {} bytes", self.max_line),
            }),
            None if blank => None,
            None => Some(Item::Skipped { bytes: left.len(), reason: "the input ended inside a line".to_string() }),
        };
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        item
    }
}

impl Default for LineReader {
    fn default() -> Self {
        Self::new(MAX_LINE_BYTES)
    }
}

impl LineReader {
    /// A reader that skips lines over `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        Self { buf: Vec::new(), start: 0, scanned: 0, max_line, oversized: None }
    }

    fn advance(&mut self) -> Option<Item> {
        loop {
            let data = &self.buf[self.start..];
            let end = data[self.scanned..].iter().position(|&byte| byte == b'\n').map(|at| self.scanned + at);
            if let Some((length, head)) = &mut self.oversized {
                let take = end.unwrap_or(data.len());
                head.extend_from_slice(&data[..take.min(HEAD_BYTES.saturating_sub(head.len()))]);
                *length += take;
                self.start += take + usize::from(end.is_some());
                self.scanned = 0;
                end?;
                let (length, head) = self.oversized.take()?;
                return Some(Item::Oversized { length, head });
            }
            let Some(end) = end else {
                self.scanned = data.len();
                if data.len() > self.max_line {
                    self.oversized = Some((0, Vec::new()));
                    continue;
                }
                return None;
            };
            let line = &data[..end];
            self.start += end + 1;
            self.scanned = 0;
            if line.len() > self.max_line {
                let head = line[..line.len().min(HEAD_BYTES)].to_vec();
                return Some(Item::Oversized { length: line.len(), head });
            }
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Some(Item::Body(line.to_vec()));
            }
        }
    }
}

/// `message` as a line: newline-delimited JSON has no line break inside a message, so none may
/// be in `message` (serde_json's compact output has none).
pub fn line(message: &[u8]) -> Vec<u8> {
    let mut out = message.to_vec();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use proptest::prelude::*;

    use super::*;

    fn items_of(chunks: &[&[u8]], max_line: usize) -> Vec<String> {
        crate::render(LineReader::new(max_line).read_all(chunks))
    }

    fn check(input: &[u8], max_line: usize, expected: Expect) {
        expected.assert_eq(&items_of(&[input], max_line).join("\n"));
    }

    #[test]
    fn lines_blank_lines_and_crlf() {
        check(
            b"{\"id\":1}\n\n  \r\n{\"id\":2}\r\n\xff\xfe\n{\"cut",
            64,
            expect![[r#"
                body {"id":1}
                body {"id":2}
                body ��
                skipped 5: the input ended inside a line"#]],
        );
    }

    #[test]
    fn a_line_over_the_limit_is_skipped_keeping_its_head() {
        check(
            b"{\"id\":7,\"params\":\"xxxxxxxxxxxxxxxx\"}\n{\"id\":8}\n",
            16,
            expect![[r#"
                oversized 36, head 36
                body {"id":8}"#]],
        );
        let mut reader = LineReader::new(16);
        for _ in 0..1000 {
            reader.push(b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
            assert_eq!(reader.next_item(), None);
        }
        assert!(reader.buf.len() < 64, "an oversized line is not kept");
        reader.push(b"\n{}\n");
        assert!(matches!(reader.next_item(), Some(Item::Oversized { length: 31000, .. })));
        assert_eq!(reader.next_item(), Some(Item::Body(b"{}".to_vec())));
    }

    fn line_bytes() -> impl Strategy<Value = Vec<u8>> {
        let pieces = prop::sample::select(vec![&b"{\"id\":1}"[..], b"\r\n", b"\n", b"\r", b" ", b"x", b"\xff", b"{}"]);
        prop::collection::vec(pieces, 0..40).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn any_chunking_yields_the_same_items(bytes in line_bytes(), step in 1usize..9) {
            let whole = items_of(&[&bytes], 12);
            let chunks: Vec<&[u8]> = bytes.chunks(step).collect();
            prop_assert_eq!(items_of(&chunks, 12), whole);
        }
    }
}
