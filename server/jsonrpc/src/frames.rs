//! `Content-Length` framing as LSP sends it: header lines (`Content-Length: N` and optional others
//! such as `Content-Type`), a blank line, then N bytes of body.
//!
//! A client that breaks the framing once (a length that is not a number, two different lengths, a
//! length shorter than the body, a header block without a length, bytes that are not UTF-8) must
//! not leave the reader lost for good, so every bad header block is skipped up to the next
//! `Content-Length` header. That is a safe place to start again: a valid JSON body cannot hold
//! `Content-Length: N` followed by a real line break, because its strings cannot hold line breaks
//! and the words would be bare outside them. A frame over the size limit is read past without
//! being kept; only its first bytes are, so that its id can be answered.

use crate::Reader;

/// Frames larger than this are skipped rather than buffered (a broken or hostile client).
pub const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;
/// A header block that has not ended after this many bytes is garbage.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;
/// How much of an oversized frame is kept, to find its id.
pub(crate) const HEAD_BYTES: usize = 64 * 1024;
/// Where a header block can start: matched without regard to case.
const MARKER: &[u8] = b"content-length";

/// What a reader found next in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A frame's body.
    Body(Vec<u8>),
    /// A frame over the size limit, read past; `head` is its first bytes (up to 64 KiB).
    Oversized { length: usize, head: Vec<u8> },
    /// Bytes that were not a frame, skipped up to the next `Content-Length` header (or to the end
    /// of the input), and why.
    Skipped { bytes: usize, reason: String },
}

/// Cuts a byte stream into frames: [`FrameReader::push`] what arrived, then take
/// [`FrameReader::next_item`] until it returns `None`; at the end of the input,
/// [`FrameReader::finish`] reports a cut frame. Chunk boundaries do not matter.
#[derive(Debug)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    start: usize,
    state: State,
    max_frame: usize,
}

#[derive(Debug)]
enum State {
    /// Expecting a header block.
    Header,
    /// Expecting a body of this many bytes.
    Body(usize),
    /// Reading past an oversized body.
    Oversized { length: usize, remaining: usize, head: Vec<u8> },
    /// Looking for the next `Content-Length` after bytes that were not a frame.
    Resync { skipped: usize, reason: String },
}

/// What the bytes at the start of a header block amount to.
enum Header {
    /// Not all there yet.
    Incomplete,
    /// A valid block of `consumed` bytes announcing a body of `length` bytes.
    Complete { consumed: usize, length: usize },
    /// Not a valid block: look for the next one after its first byte (a later line of the
    /// block may be a valid start).
    Bad(String),
}

impl Reader for FrameReader {
    /// Adds bytes read from the input.
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete item, or `None` until more bytes are pushed.
    fn next_item(&mut self) -> Option<Item> {
        let item = self.advance();
        self.compact();
        item
    }

    /// Ends the input: what is left unread (a frame cut short, a partial header) as one
    /// [`Item::Skipped`], or `None` if nothing is.
    fn finish(&mut self) -> Option<Item> {
        let left = self.buf.len() - self.start;
        self.buf.clear();
        self.start = 0;
        let (bytes, reason) = match std::mem::replace(&mut self.state, State::Header) {
            State::Header if left == 0 => return None,
            State::Header => (left, "the input ended inside a header".to_string()),
            State::Body(length) => (left, format!("the input ended {left} bytes into a body of {length}")),
            State::Oversized { length, remaining, .. } => {
                (length - remaining + left, format!("the input ended inside an oversized frame of {length} bytes"))
            }
            State::Resync { skipped, reason } => (skipped + left, reason),
        };
        Some(Item::Skipped { bytes, reason })
    }
}

impl Default for FrameReader {
    fn default() -> Self {
        Self::new(MAX_FRAME_BYTES)
    }
}

impl FrameReader {
    /// A reader that skips frames over `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        Self { buf: Vec::new(), start: 0, state: State::Header, max_frame }
    }

    /// The bytes pushed that no item has covered yet, as they came. Right after
    /// [`Reader::next_item`] returned an item, that is exactly what followed the item in the input
    /// (a server that reads the first message itself hands the rest on with it).
    pub fn into_unread(self) -> Vec<u8> {
        match self.state {
            State::Header => self.buf[self.start..].to_vec(),
            State::Body(length) => {
                let mut unread = format!("Content-Length: {length}\r\n\r\n").into_bytes();
                unread.extend_from_slice(&self.buf[self.start..]);
                unread
            }
            // Bytes being skipped are not a message: nothing of them is worth handing on.
            State::Oversized { .. } | State::Resync { .. } => Vec::new(),
        }
    }

    fn advance(&mut self) -> Option<Item> {
        loop {
            let data = &self.buf[self.start..];
            match &mut self.state {
                State::Header => {
                    // Line breaks between frames are tolerated.
                    let blank = data.iter().take_while(|&&byte| byte == b'\r' || byte == b'\n').count();
                    self.start += blank;
                    let data = &data[blank..];
                    if data.is_empty() {
                        return None;
                    }
                    match parse_header(data) {
                        Header::Incomplete => return None,
                        Header::Complete { consumed, length } => {
                            self.start += consumed;
                            self.state = match length > self.max_frame {
                                true => State::Oversized { length, remaining: length, head: Vec::new() },
                                false => State::Body(length),
                            };
                        }
                        Header::Bad(reason) => {
                            self.start += 1;
                            self.state = State::Resync { skipped: 1, reason };
                        }
                    }
                }
                State::Body(length) => {
                    let length = *length;
                    if data.len() < length {
                        return None;
                    }
                    let body = data[..length].to_vec();
                    self.start += length;
                    self.state = State::Header;
                    return Some(Item::Body(body));
                }
                State::Oversized { length, remaining, head } => {
                    let take = data.len().min(*remaining);
                    let keep = take.min(HEAD_BYTES - head.len().min(HEAD_BYTES));
                    head.extend_from_slice(&data[..keep]);
                    *remaining -= take;
                    self.start += take;
                    if *remaining > 0 {
                        return None;
                    }
                    let item = Item::Oversized { length: *length, head: std::mem::take(head) };
                    self.state = State::Header;
                    return Some(item);
                }
                State::Resync { skipped, reason } => match find_marker(data) {
                    Some(at) => {
                        let item = Item::Skipped { bytes: *skipped + at, reason: std::mem::take(reason) };
                        self.start += at;
                        self.state = State::Header;
                        return Some(item);
                    }
                    None => {
                        // Keep a tail that may be the start of a marker cut by the chunking.
                        let drop = data.len().saturating_sub(MARKER.len() - 1);
                        *skipped += drop;
                        self.start += drop;
                        return None;
                    }
                },
            }
        }
    }

    /// Drops the bytes already read once they are worth moving the rest for.
    fn compact(&mut self) {
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 64 * 1024 && self.start * 2 > self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }
}

/// `body` in a frame.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Reads the header block at the start of `data` (which does not start with a line break).
fn parse_header(data: &[u8]) -> Header {
    let mut pos = 0;
    let mut length: Option<usize> = None;
    // The first problem with the lengths, reported once the block is whole.
    let mut problem: Option<String> = None;
    loop {
        let Some(newline) = data[pos..].iter().position(|&byte| byte == b'\n') else {
            if data.len() > MAX_HEADER_BYTES {
                return Header::Bad(format!("no end of the header block within {MAX_HEADER_BYTES} bytes"));
            }
            return Header::Incomplete;
        };
        let end = pos + newline + 1;
        if end > MAX_HEADER_BYTES {
            return Header::Bad(format!("no end of the header block within {MAX_HEADER_BYTES} bytes"));
        }
        let line = &data[pos..pos + newline];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return match (problem, length) {
                (Some(reason), _) => Header::Bad(reason),
                (None, None) => Header::Bad("a header block without Content-Length".to_string()),
                (None, Some(length)) => Header::Complete { consumed: end, length },
            };
        }
        let Some((name, value)) = header_line(line) else {
            return Header::Bad(format!("{} is not a header line", quote(line)));
        };
        if name.eq_ignore_ascii_case("content-length") && problem.is_none() {
            match value.parse::<usize>() {
                Err(_) => problem = Some(format!("Content-Length {} is not a byte count", quote(value.as_bytes()))),
                Ok(value) if length.is_some_and(|known| known != value) => {
                    problem = Some("two different Content-Length headers".to_string());
                }
                Ok(value) => length = Some(value),
            }
        }
        pos = end;
    }
}

/// `Name: value` with an HTTP token for a name and UTF-8 text without control characters for a
/// value (trimmed), or `None`.
fn header_line(line: &[u8]) -> Option<(&str, &str)> {
    let colon = line.iter().position(|&byte| byte == b':')?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    let token = |byte: &u8| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(byte);
    if name.is_empty() || !name.iter().all(token) {
        return None;
    }
    let value = std::str::from_utf8(value).ok()?;
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return None;
    }
    // The name is ASCII, so this cannot fail.
    Some((std::str::from_utf8(name).ok()?, value.trim()))
}

/// Where the next `Content-Length` (any case) starts in `data`.
fn find_marker(data: &[u8]) -> Option<usize> {
    data.windows(MARKER.len()).position(|window| window.eq_ignore_ascii_case(MARKER))
}

/// The start of a line for an error message: lossy, escaped, at most 40 characters.
fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]);
    let mut quoted = format!("{text:?}");
    if bytes.len() > 40 {
        quoted.push('…');
    }
    quoted
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use proptest::prelude::*;

    use super::*;

    /// Everything `input` holds, one item per line: bodies as text, skips with their reason.
    fn items_of(chunks: &[&[u8]], max_frame: usize) -> Vec<String> {
        crate::render(FrameReader::new(max_frame).read_all(chunks))
    }

    fn check(input: &[u8], expected: Expect) {
        expected.assert_eq(&items_of(&[input], MAX_FRAME_BYTES).join("\n"));
    }

    #[test]
    fn frames_with_other_headers_and_blank_lines_between() {
        check(
            b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}\r\ncontent-length:4\n\nnull",
            expect![[r#"
                body {}
                body null"#]],
        );
    }

    #[test]
    fn what_follows_the_first_message_is_handed_on_unread() {
        let unread_after_first = |input: &[u8]| {
            let mut reader = FrameReader::default();
            reader.push(input);
            assert_eq!(reader.next_item(), Some(Item::Body(b"{}".to_vec())));
            String::from_utf8(reader.into_unread()).unwrap()
        };
        assert_eq!(
            unread_after_first(b"Content-Length: 2\r\n\r\n{}Content-Length: 4\r\n\r\nnu"),
            "Content-Length: 4\r\n\r\nnu"
        );
        assert_eq!(unread_after_first(b"Content-Length: 2\r\n\r\n{}"), "");
        // A header already read is given back as one.
        let mut reader = FrameReader::default();
        reader.push(b"Content-Length: 2\r\n\r\n{}content-length:4\n\nnu");
        reader.next_item();
        assert_eq!(reader.next_item(), None);
        assert_eq!(reader.into_unread(), b"Content-Length: 4\r\n\r\nnu");
    }

    #[test]
    fn a_length_that_is_not_a_number_skips_to_the_next_header() {
        check(
            b"Content-Length: abc\r\n\r\n{\"id\":1}Content-Length: 2\r\n\r\n{}",
            expect![[r#"
                skipped 31: Content-Length "abc" is not a byte count
                body {}"#]],
        );
    }

    #[test]
    fn two_different_lengths_resynchronise_on_the_second() {
        check(
            b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}}Content-Length: 2\r\n\r\n{}",
            expect![[r#"
                skipped 19: two different Content-Length headers
                body {}}
                body {}"#]],
        );
        // The same length twice is harmless.
        check(b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", expect!["body {}"]);
    }

    #[test]
    fn a_length_shorter_than_the_body_loses_only_that_frame() {
        check(
            b"Content-Length: 3\r\n\r\n{\"a\":1}Content-Length: 2\r\n\r\n{}",
            expect![[r#"
                body {"a
                skipped 4: "\":1}Content-Length: 2" is not a header line
                body {}"#]],
        );
    }

    #[test]
    fn a_header_block_without_a_length_is_skipped() {
        check(
            b"X-Unknown: 1\r\n\r\n{\"id\":1}Content-Length: 2\r\n\r\n{}",
            expect![[r#"
                skipped 24: a header block without Content-Length
                body {}"#]],
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_in_a_header_are_skipped() {
        check(
            b"Content-Length: 2\xff\xfe\r\n\r\n{}Content-Length: 2\r\n\r\n{}",
            expect![[r#"
                skipped 25: "Content-Length: 2��" is not a header line
                body {}"#]],
        );
    }

    #[test]
    fn endless_garbage_is_dropped_as_it_comes() {
        let mut reader = FrameReader::default();
        for _ in 0..1000 {
            reader.push(&[b'x'; 1024]);
            assert_eq!(reader.next_item(), None);
        }
        // What is kept is bounded (read bytes are dropped in batches).
        assert!(reader.buf.len() - reader.start <= MAX_HEADER_BYTES + 1024, "{}", reader.buf.len() - reader.start);
        assert!(reader.buf.len() <= 256 * 1024, "{}", reader.buf.len());
        reader.push(b"\r\nContent-Length: 2\r\n\r\n{}");
        assert!(matches!(reader.next_item(), Some(Item::Skipped { bytes: 1_024_002, .. })), "{:?}", reader.state);
        assert_eq!(reader.next_item(), Some(Item::Body(b"{}".to_vec())));
    }

    #[test]
    fn an_oversized_frame_is_read_past_keeping_its_head() {
        let mut input = b"Content-Length: 10\r\n\r\n{\"id\":7,\"x\"Content-Length: 2\r\n\r\n{}".to_vec();
        input.extend_from_slice(b"Content-Length: 3\r\n\r\n[1]");
        expect![[r#"
            oversized 10, head 10
            skipped 1: "\"Content-Length: 2" is not a header line
            body {}
            body [1]"#]]
        .assert_eq(&items_of(&[&input], 4).join("\n"));
    }

    #[test]
    fn the_end_of_the_input_reports_a_cut_frame() {
        check(
            b"Content-Length: 10\r\n\r\n{\"a\"",
            expect![[r#"skipped 4: the input ended 4 bytes into a body of 10"#]],
        );
        check(b"Content-Len", expect![[r#"skipped 11: the input ended inside a header"#]]);
        check(b"\r\n\r\n", expect![""]);
    }

    /// Bytes that make framing interesting: header words, separators, digits, non-UTF-8.
    fn frame_bytes() -> impl Strategy<Value = Vec<u8>> {
        let pieces = prop::sample::select(vec![
            &b"Content-Length: "[..],
            b"content-length:",
            b"Content-Type: x",
            b"\r\n",
            b"\n",
            b"\r",
            b"1",
            b"2",
            b"0",
            b"{}",
            b"x",
            b": ",
            b"\xff",
        ]);
        prop::collection::vec(pieces, 0..40).prop_map(|pieces| pieces.concat())
    }

    fn chunked(bytes: &[u8], points: &[usize]) -> Vec<Vec<u8>> {
        let mut points: Vec<usize> = points.iter().map(|p| p % (bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for point in points {
            chunks.push(bytes[start..point].to_vec());
            start = point;
        }
        chunks.push(bytes[start..].to_vec());
        chunks
    }

    proptest! {
        #[test]
        fn any_chunking_yields_the_same_items(bytes in frame_bytes(), points in prop::collection::vec(any::<usize>(), 0..8)) {
            let whole = items_of(&[&bytes], 16);
            let chunks = chunked(&bytes, &points);
            let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            prop_assert_eq!(items_of(&chunks, 16), whole);
        }

        #[test]
        fn garbage_without_line_breaks_loses_no_following_frame(
            garbage in prop::collection::vec(any::<u8>().prop_filter("no line break", |b| *b != b'\n'), 0..64),
            bodies in prop::collection::vec("[a-z{}\":,]{0,12}", 1..4),
        ) {
            let mut input = garbage.clone();
            input.extend_from_slice(b"\r\n");
            for body in &bodies {
                input.extend_from_slice(&frame(body.as_bytes()));
            }
            let items = items_of(&[&input], MAX_FRAME_BYTES);
            let got: Vec<&String> = items.iter().filter(|item| item.starts_with("body ")).collect();
            let wanted: Vec<String> = bodies.iter().map(|body| format!("body {body}")).collect();
            prop_assert_eq!(got, wanted.iter().collect::<Vec<_>>(), "{:?}", items);
        }
    }
}
