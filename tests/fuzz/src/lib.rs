//! Fuzz targets: the parsers that read what reins does not control — LSP frames and JSON-RPC
//! messages from the editor, server-sent events from the model's server, session lines from disk,
//! tool-call arguments from the model. Each target takes arbitrary bytes, must not panic, hang or
//! allocate without bound, and checks what must hold whatever the input (chunking does not change
//! the result, what is written reads back the same).
//!
//! The same functions run three ways: under AFL++ (`scripts/fuzz`, coverage-guided), under
//! `cargo test` on the seeds and on every input that ever failed (`regressions/`), and as a short
//! random run in the test suite.

use reins_ai::{Content, Model, Prices, SseParser, StopReason, Wire};
use reins_jsonrpc::{FrameReader, Inspected, Item, LineReader, Reader};
use reins_session::{Entry, Header, SessionTree};

/// A target: a name (the folder of its seeds and regressions) and the function.
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

/// Every target, by name.
pub const TARGETS: &[Target] = &[
    Target { name: "lsp_frames", run: lsp_frames },
    Target { name: "jsonrpc_lines", run: jsonrpc_lines },
    Target { name: "jsonrpc_message", run: jsonrpc_message },
    Target { name: "sse", run: sse },
    Target { name: "provider_stream", run: provider_stream },
    Target { name: "session_line", run: session_line },
    Target { name: "session_file", run: session_file },
    Target { name: "tool_arguments", run: tool_arguments },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|target| target.name == name)
}

/// The LSP frame reader: the same items whether the bytes come at once or in pieces (cut where
/// the input's first byte says), and no body over the size limit.
pub fn lsp_frames(data: &[u8]) {
    const MAX_FRAME: usize = 64;
    let (cuts, input) = split_off_cuts(data);
    let whole = frame_items(&[input], MAX_FRAME);
    let pieces = cut(input, cuts);
    assert_eq!(frame_items(&pieces, MAX_FRAME), whole, "chunking changed the frames");
    for item in &whole {
        if let Item::Body(body) = item {
            assert!(body.len() <= MAX_FRAME, "a body over the limit was kept");
            // What a frame carries is classified without panicking, too.
            jsonrpc_message(body);
        }
    }
}

/// The newline-delimited reader (ACP, MCP over stdio): the same items whatever the chunking, no
/// line over the limit kept, none holding a line break, every line classified.
pub fn jsonrpc_lines(data: &[u8]) {
    const MAX_LINE: usize = 64;
    let (cuts, input) = split_off_cuts(data);
    let whole = line_items(&[input], MAX_LINE);
    assert_eq!(line_items(&cut(input, cuts), MAX_LINE), whole, "chunking changed the lines");
    for item in &whole {
        if let Item::Body(line) = item {
            assert!(line.len() <= MAX_LINE && !line.contains(&b'\n'), "a bad line was kept");
            jsonrpc_message(line);
        }
    }
}

/// The JSON-RPC message check: never panics; an answer it gives is a JSON-RPC error whose id a
/// client can match (the request's number or string, or null); a request or response it passes
/// on has an id the protocol framework takes.
pub fn jsonrpc_message(data: &[u8]) {
    match reins_jsonrpc::inspect(data) {
        Inspected::Refused { answer } => {
            assert_eq!(answer["jsonrpc"], "2.0");
            assert!(answer["error"]["code"].is_i64(), "{answer}");
            let id = &answer["id"];
            assert!(id.is_null() || id.is_number() || id.is_string(), "{answer}");
        }
        Inspected::Request { id: Some(id), .. } => assert!(id.is_null() || reins_jsonrpc::is_usable_id(&id)),
        Inspected::Response { id, .. } => assert!(reins_jsonrpc::is_usable_id(&id)),
        Inspected::Request { id: None, .. } | Inspected::Stray { .. } => {}
    }
    // The first bytes of an oversized message, cut anywhere.
    let peeked = reins_jsonrpc::peek(data);
    if let Some(id) = peeked.id {
        assert!(id.is_null() || id.is_number() || id.is_string(), "{id}");
    }
}

/// The SSE parser: the same events whatever the chunking; it holds no more than it was fed,
/// counting each byte that is not UTF-8 as the U+FFFD (three bytes) it becomes.
pub fn sse(data: &[u8]) {
    let (cuts, input) = split_off_cuts(data);
    let whole = sse_events(&[input]);
    assert_eq!(sse_events(&cut(input, cuts)), whole, "chunking changed the events");
    let mut parser = SseParser::default();
    parser.feed(input);
    assert!(parser.pending_len() <= 3 * input.len(), "the parser holds more than it was fed");
}

/// A response body through both providers' assemblers: never a panic, and a message whose stop
/// reason agrees with its error.
pub fn provider_stream(data: &[u8]) {
    let model = Model {
        id: "fuzz".into(),
        provider: "fuzz".into(),
        base_url: String::new(),
        context_window: 1000,
        max_output: 100,
        prices: Prices::default(),
        reasoning: true,
        compat: Default::default(),
    };
    for wire in [Wire::ChatCompletions, Wire::Messages] {
        let message = reins_ai::replay(wire, data, &model);
        let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
        assert_eq!(failed, message.error.is_some(), "{:?} with {:?}", message.stop_reason, message.error);
        for block in &message.content {
            if let Content::ToolCall(call) = block {
                assert!(!call.id.is_empty(), "a tool call without an id");
            }
        }
    }
}

/// One session line: an entry or header that parses writes a line that parses back to it.
pub fn session_line(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else { return };
    if let Ok(entry) = Entry::parse(line) {
        let written = entry.to_line();
        assert!(!written.contains('\n'), "an entry wrote a line break: {written}");
        let again = Entry::parse(&written).unwrap_or_else(|error| panic!("{error}: {written}"));
        assert_eq!(again, entry, "the entry changed on a round trip");
        let _ = entry.message();
    }
    if let Ok(header) = Header::parse(line) {
        let written = header.to_line();
        assert_eq!(Header::parse(&written).as_ref(), Ok(&header), "the header changed on a round trip");
    }
}

/// A whole session file: indexing ends, every entry's path to the root ends, the context builds,
/// and what the tree writes out indexes to as many entries.
pub fn session_file(data: &[u8]) {
    let path = std::path::Path::new("fuzz.jsonl");
    let Ok(tree) = SessionTree::from_bytes(path, data.to_vec()) else { return };
    let ids: Vec<String> = tree.iter().map(|entry| entry.id.to_string()).collect();
    for id in &ids {
        if let Ok(path) = tree.path_to_root(id) {
            assert!(path.len() <= ids.len(), "a path to the root longer than the file");
        }
        let _ = tree.entry(id);
    }
    let _ = tree.context();
    let written = tree.to_jsonl();
    let again = SessionTree::from_bytes(path, written.into_bytes()).expect("what the tree wrote reads back");
    assert_eq!(again.len(), tree.len(), "entries lost on a round trip");
}

/// Tool-call argument repair: an answer is always an object, and arguments that already are a
/// JSON object come back unchanged.
pub fn tool_arguments(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(value) = reins_agent::repair_arguments(&text) {
        assert!(value.is_object(), "repair gave {value}");
        if let Ok(serde_json::Value::Object(original)) = serde_json::from_str::<serde_json::Value>(&text) {
            assert_eq!(value, serde_json::Value::Object(original), "valid arguments were changed");
        }
    }
}

/// The first byte of the input chooses where to cut the rest into pieces, so that the fuzzer
/// explores chunkings too.
fn split_off_cuts(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((&cuts, rest)) => (cuts, rest),
        None => (0, data),
    }
}

/// `input` cut into pieces: every `step` bytes, `step` being 1 + `cuts` % 16 (0 means whole).
fn cut(input: &[u8], cuts: u8) -> Vec<&[u8]> {
    if cuts == 0 || input.is_empty() {
        return vec![input];
    }
    input.chunks(1 + cuts as usize % 16).collect()
}

fn frame_items(pieces: &[&[u8]], max_frame: usize) -> Vec<Item> {
    FrameReader::new(max_frame).read_all(pieces)
}

fn line_items(pieces: &[&[u8]], max_line: usize) -> Vec<Item> {
    LineReader::new(max_line).read_all(pieces)
}

fn sse_events(pieces: &[&[u8]]) -> Vec<reins_ai::SseEvent> {
    let mut parser = SseParser::default();
    let mut events: Vec<_> = pieces.iter().flat_map(|piece| parser.feed(piece)).collect();
    events.extend(parser.finish());
    events
}
