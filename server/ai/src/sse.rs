//! Server-sent events framing: an incremental byte-level parser.
//!
//! Bytes arrive in whatever pieces the network hands over — an event, a line, even a UTF-8
//! character may be split between two reads — so the parser keeps the unfinished line as bytes and
//! decodes only whole lines. It follows the SSE rules that matter for LLM APIs: lines end in `\n`,
//! `\r\n` or `\r`; `:` starts a comment (`: keep-alive`); `data:` may or may not have a space;
//! several `data` lines join with `\n`; a blank line ends an event. What the data means (`[DONE]`,
//! a JSON chunk, an error payload) is for the caller.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event type.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Turns a byte stream into [`SseEvent`]s, whatever the chunking.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line being read (not yet ended).
    line: Vec<u8>,
    /// The last byte was `\r`, so a `\n` right after it ends no second line.
    after_cr: bool,
    /// Data of the event being built; `None` until a `data` field arrives.
    data: Option<String>,
    event: Option<String>,
    /// Comment lines seen (keep-alives, mostly).
    comments: usize,
}

impl SseParser {
    /// Feeds the next bytes and returns the events they complete.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if bytes.is_empty() {
            return events;
        }
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            // A line whole in this read is read where it lies; only one begun in an earlier read
            // is gathered first.
            if self.line.is_empty() {
                self.end_line(&bytes[..end], &mut events);
            } else {
                self.line.extend_from_slice(&bytes[..end]);
                let line = std::mem::take(&mut self.line);
                self.end_line(&line, &mut events);
                self.line = line;
                self.line.clear();
            }
            let mut next = end + 1;
            if bytes[end] == b'\r' {
                match bytes.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            bytes = &bytes[next..];
        }
        self.line.extend_from_slice(bytes);
        events
    }

    /// How many comment lines (`: keep-alive`) came so far: they are never dispatched, but a
    /// caller may want to know that the connection is alive and carries nothing.
    pub fn comments(&self) -> usize {
        self.comments
    }

    /// Bytes held for an event not yet dispatched: its data so far and the line not yet ended. A
    /// caller bounds it, as a stream without line ends would otherwise grow it without end.
    pub fn pending_len(&self) -> usize {
        self.line.len() + self.data.as_ref().map_or(0, String::len)
    }

    /// Ends the stream: an event whose lines all arrived but whose closing blank line did not is
    /// still dispatched (some servers omit it); an unfinished line is dropped, as it may be cut.
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.line.clear();
        self.after_cr = false;
        self.take_event()
    }

    fn end_line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            events.extend(self.take_event());
            return;
        }
        if line[0] == b':' {
            self.comments += 1; // a comment, such as `: keep-alive`
            return;
        }
        // Checked whole first: nearly every line is valid UTF-8, and the lossy reading goes
        // through it a piece at a time.
        let line = match std::str::from_utf8(line) {
            Ok(line) => std::borrow::Cow::Borrowed(line),
            Err(_) => String::from_utf8_lossy(line),
        };
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            "event" => self.event = Some(value.to_string()),
            _ => {} // `id`, `retry` and unknown fields mean nothing to a completion stream
        }
    }

    fn take_event(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        self.data.take().map(|data| SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use proptest::prelude::*;

    use super::*;

    /// Feeds `chunks` one after another, then ends the stream; renders each event on a line.
    fn check(chunks: &[&[u8]], expected: Expect) {
        let mut parser = SseParser::default();
        let mut events = Vec::new();
        for chunk in chunks {
            events.extend(parser.feed(chunk));
        }
        events.extend(parser.finish());
        let rendered: Vec<String> = events.iter().map(|event| format!("{:?} {:?}", event.event, event.data)).collect();
        expected.assert_eq(&rendered.join("\n"));
    }

    fn parse_all(chunks: &[Vec<u8>]) -> Vec<SseEvent> {
        let mut parser = SseParser::default();
        let mut events: Vec<SseEvent> = chunks.iter().flat_map(|chunk| parser.feed(chunk)).collect();
        events.extend(parser.finish());
        events
    }

    #[test]
    fn data_with_and_without_space() {
        check(
            &[b"data: {\"a\":1}\n\ndata:{\"b\":2}\n\n"],
            expect![[r#"
            None "{\"a\":1}"
            None "{\"b\":2}""#]],
        );
    }

    #[test]
    fn crlf_and_lone_cr_line_ends() {
        check(
            &[b"data: one\r\n\r\ndata: two\r\rdata: three\n\n"],
            expect![[r#"
            None "one"
            None "two"
            None "three""#]],
        );
    }

    #[test]
    fn crlf_split_between_chunks_is_one_line_end() {
        check(
            &[b"data: one\r", b"\n\r", b"\ndata: two\r\n\r\n"],
            expect![[r#"
            None "one"
            None "two""#]],
        );
    }

    #[test]
    fn comments_are_skipped() {
        check(&[b": keep-alive\n\n: ping\ndata: x\n\n"], expect![[r#"None "x""#]]);
    }

    #[test]
    fn multi_line_data_joins_with_newline() {
        check(&[b"data: {\"a\":\ndata: 1}\n\n"], expect![[r#"None "{\"a\":\n1}""#]]);
    }

    #[test]
    fn event_field_and_done() {
        check(
            &[b"event: error\ndata: {\"error\":{}}\n\ndata: [DONE]\n\n"],
            expect![[r#"
            Some("error") "{\"error\":{}}"
            None "[DONE]""#]],
        );
    }

    #[test]
    fn split_inside_a_multibyte_character() {
        let bytes = "data: héllo ✓\n\n".as_bytes();
        let split = bytes.iter().position(|&b| b == 0xC3).unwrap() + 1;
        check(&[&bytes[..split], &bytes[split..split + 8], &bytes[split + 8..]], expect![[r#"None "héllo ✓""#]]);
    }

    #[test]
    fn stream_end_dispatches_a_finished_event_and_drops_a_cut_line() {
        check(&[b"data: whole\n"], expect![[r#"None "whole""#]]);
        check(&[b"data: whole\n\ndata: {\"cut"], expect![[r#"None "whole""#]]);
    }

    /// Bytes that make SSE interesting: field names, separators, line ends, a multibyte char.
    fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
        let alphabet =
            vec![b'd', b'a', b't', b'a', b':', b' ', b'\r', b'\n', b'\n', b'x', 0xC3, 0xA9, b'e', b'v', b'n'];
        prop::collection::vec(prop::sample::select(alphabet), 0..200)
    }

    /// Well-formed streams too, so the property covers real events and not only noise.
    fn sse_stream() -> impl Strategy<Value = Vec<u8>> {
        let line_end = prop::sample::select(vec!["\n", "\r\n", "\r"]);
        let event = ("[a-zé✓{}\":, ]{0,12}", any::<bool>(), any::<bool>(), line_end);
        prop::collection::vec(event, 0..8).prop_map(|events| {
            let mut text = String::new();
            for (data, space, comment, end) in events {
                if comment {
                    text.push_str(&format!(": keep-alive{end}"));
                }
                let separator = if space { ": " } else { ":" };
                text.push_str(&format!("data{separator}{data}{end}{end}"));
            }
            text.into_bytes()
        })
    }

    fn split_at_points(bytes: &[u8], points: &[usize]) -> Vec<Vec<u8>> {
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
        fn any_chunking_of_noise_yields_the_same_events(bytes in sse_bytes(), points in prop::collection::vec(any::<usize>(), 0..12)) {
            let whole = parse_all(std::slice::from_ref(&bytes));
            prop_assert_eq!(parse_all(&split_at_points(&bytes, &points)), whole);
        }

        #[test]
        fn any_chunking_of_a_stream_yields_the_same_events(bytes in sse_stream(), points in prop::collection::vec(any::<usize>(), 0..12)) {
            let whole = parse_all(std::slice::from_ref(&bytes));
            prop_assert_eq!(parse_all(&split_at_points(&bytes, &points)), whole);
        }
    }
}
