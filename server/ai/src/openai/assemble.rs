//! Assembles streamed Chat Completions chunks into content blocks, emitting [`StreamEvent`]s as
//! deltas arrive, and finally into one [`AssistantMessage`].
//!
//! Tool calls arrive as fragments keyed by `index`. Some servers reuse index 0 for every call,
//! each with a new id, so a new id at an index that already holds a call starts a new call.

use serde_json::Value;

use super::errors::payload_error;
use super::wire::{ChatChunk, Delta, ToolCallDelta, WireUsage, parse_lenient};
use crate::message::{AssistantMessage, Content, ProviderError, ProviderErrorKind, StopReason, ToolCall, Usage};
use crate::model::Model;
use crate::provider::{EventSink, StreamEvent};
use crate::sse::SseEvent;
use crate::transport::{Assemble, Step};
use crate::transport::{QUOTED_EVENT_CHARS, finished_message};

/// Builds one assistant message from a stream of SSE events.
pub struct Assembler<'a> {
    blocks: Vec<Block>,
    /// The call each wire `index` currently continues: (wire index, block position).
    calls_by_index: Vec<(usize, usize)>,
    last_wire_index: Option<usize>,
    usage: Option<WireUsage>,
    finish_reason: Option<String>,
    done: bool,
    on_event: EventSink<'a>,
}

enum Block {
    Text(String),
    Thinking(String),
    ToolCall { id: String, id_from_server: bool, name: String, arguments: String },
}

impl<'a> Assembler<'a> {
    pub fn new(on_event: EventSink<'a>) -> Self {
        Self {
            blocks: Vec::new(),
            calls_by_index: Vec::new(),
            last_wire_index: None,
            usage: None,
            finish_reason: None,
            done: false,
            on_event,
        }
    }

    /// Takes one SSE event.
    pub fn on_event(&mut self, event: &SseEvent) -> Step {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Step::Done;
        }
        if data.is_empty() {
            return Step::KeepAlive;
        }
        let chunk: ChatChunk = match parse_lenient(data.as_bytes()) {
            Ok(chunk) => chunk,
            Err(error) => {
                let message =
                    format!("could not read a stream chunk ({error}): {}", crate::shorten(data, QUOTED_EVENT_CHARS));
                return Step::Failed(ProviderError::new(ProviderErrorKind::Protocol, message));
            }
        };
        match &chunk.error {
            Some(error) if !error.is_null() => return Step::Failed(payload_error(error)),
            _ if event.event.as_deref() == Some("error") => {
                return Step::Failed(payload_error(&Value::String(data.to_string())));
            }
            _ => {}
        }
        match self.on_chunk(chunk) {
            true => Step::Continue,
            // A chunk with an empty delta and nothing else (some servers send them while the
            // model thinks) shows the connection is alive, not that the answer moves.
            false => Step::KeepAlive,
        }
    }

    /// Whether the answer is known to be whole: `[DONE]` or a finish reason arrived.
    pub fn is_complete(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }

    /// The message so far; `error` (a cut, a timeout, a cancel) overrides the finish reason.
    pub fn into_message(self, model: &Model, error: Option<ProviderError>) -> AssistantMessage {
        let content: Vec<Content> = self.blocks.into_iter().map(Block::into_content).collect();
        let reason = self.finish_reason;
        finished_message(content, model, usage(self.usage, model), error, |has_tool_calls| {
            stop_reason(reason.as_deref(), has_tool_calls)
        })
    }

    /// Takes one chunk; returns whether it carried the answer forward (content or a finish
    /// reason). Usage alone does not: a server that sent a count every second (`"choices": []`)
    /// would otherwise hold off the idle timeout for ever.
    fn on_chunk(&mut self, chunk: ChatChunk) -> bool {
        let mut carried = false;
        if let Some(usage) = chunk.usage
            && usage != WireUsage::default()
        {
            self.usage = Some(usage);
        }
        // With `n = 1` (the default) there is one choice; others are ignored.
        let Some(choice) = chunk.choices.and_then(|choices| choices.into_iter().next()) else { return carried };
        if let Some(delta) = choice.delta {
            carried |= self.on_delta(delta);
        }
        if let Some(reason) = choice.finish_reason.filter(|reason| !reason.is_empty()) {
            self.finish_reason = Some(reason);
            carried = true;
        }
        carried
    }

    /// Takes one delta; returns whether it carried any content.
    fn on_delta(&mut self, delta: Delta) -> bool {
        let mut carried = false;
        let thinking = delta.reasoning_content.filter(|text| !text.is_empty()).or(delta.reasoning);
        if let Some(thinking) = thinking.filter(|text| !text.is_empty()) {
            let index = self.append_text(thinking.clone(), true);
            (self.on_event)(StreamEvent::Thinking { index, delta: thinking });
            carried = true;
        }
        if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
            let index = self.append_text(text.clone(), false);
            (self.on_event)(StreamEvent::Text { index, delta: text });
            carried = true;
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.on_tool_call(call);
            carried = true;
        }
        carried
    }

    /// Appends to the last block when it is of the same kind, else starts one; returns its index.
    fn append_text(&mut self, piece: String, thinking: bool) -> usize {
        match (self.blocks.last_mut(), thinking) {
            (Some(Block::Thinking(text)), true) | (Some(Block::Text(text)), false) => text.push_str(&piece),
            (_, true) => self.blocks.push(Block::Thinking(piece)),
            (_, false) => self.blocks.push(Block::Text(piece)),
        }
        self.blocks.len() - 1
    }

    fn on_tool_call(&mut self, delta: ToolCallDelta) {
        let wire_index = delta.index.or(self.last_wire_index).unwrap_or(0);
        self.last_wire_index = Some(wire_index);
        let new_id = delta.id.filter(|id| !id.is_empty());
        let function = delta.function.unwrap_or_default();
        let existing =
            self.calls_by_index.iter().find(|(index, _)| *index == wire_index).map(|&(_, position)| position);
        let position = match existing {
            Some(position) if !self.starts_new_call(position, new_id.as_deref()) => position,
            _ => {
                let calls = self.blocks.iter().filter(|block| matches!(block, Block::ToolCall { .. })).count();
                self.blocks.push(Block::ToolCall {
                    id: new_id.clone().unwrap_or_else(|| format!("call_{calls}")),
                    id_from_server: new_id.is_some(),
                    name: String::new(),
                    arguments: String::new(),
                });
                let position = self.blocks.len() - 1;
                self.calls_by_index.retain(|(index, _)| *index != wire_index);
                self.calls_by_index.push((wire_index, position));
                position
            }
        };
        let Some(Block::ToolCall { id, id_from_server, name, arguments }) = self.blocks.get_mut(position) else {
            return;
        };
        if let Some(new_id) = new_id
            && !*id_from_server
        {
            *id = new_id;
            *id_from_server = true;
        }
        if let Some(new_name) = function.name.filter(|name| !name.is_empty())
            && name.is_empty()
        {
            *name = new_name;
        }
        let arguments_delta = match function.arguments {
            Some(Value::String(piece)) => piece,
            Some(Value::Null) | None => String::new(),
            // A few servers send the whole arguments object at once.
            Some(whole) => whole.to_string(),
        };
        arguments.push_str(&arguments_delta);
        let event = StreamEvent::ToolCall { index: position, id: id.clone(), name: name.clone(), arguments_delta };
        (self.on_event)(event);
    }

    /// A different server-given id at an index that holds a call means a new call.
    fn starts_new_call(&self, position: usize, new_id: Option<&str>) -> bool {
        match (self.blocks.get(position), new_id) {
            (Some(Block::ToolCall { id, id_from_server: true, .. }), Some(new_id)) => id != new_id,
            _ => false,
        }
    }
}

impl Assemble for Assembler<'_> {
    fn on_event(&mut self, event: &SseEvent) -> Step {
        Assembler::on_event(self, event)
    }

    fn is_complete(&self) -> bool {
        Assembler::is_complete(self)
    }

    fn output_len(&self) -> usize {
        self.blocks.iter().map(Block::len).sum()
    }

    fn into_message(self, model: &Model, error: Option<ProviderError>) -> AssistantMessage {
        Assembler::into_message(self, model, error)
    }
}

impl Block {
    /// Bytes of output the block holds.
    fn len(&self) -> usize {
        match self {
            Block::Text(text) | Block::Thinking(text) => text.len(),
            Block::ToolCall { arguments, .. } => arguments.len(),
        }
    }

    fn into_content(self) -> Content {
        match self {
            Block::Text(text) => Content::Text { text },
            Block::Thinking(thinking) => Content::Thinking { thinking, signature: None },
            Block::ToolCall { id, name, arguments, .. } => {
                Content::ToolCall(ToolCall { id, name, arguments: parse_arguments(arguments) })
            }
        }
    }
}

/// The parsed arguments, or the raw text when it is not JSON (the agent repairs or rejects it).
fn parse_arguments(raw: String) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(&raw).unwrap_or(Value::String(raw))
}

fn stop_reason(finish_reason: Option<&str>, has_tool_calls: bool) -> Result<StopReason, ProviderError> {
    let default = if has_tool_calls { StopReason::ToolUse } else { StopReason::Stop };
    match finish_reason {
        None | Some("stop") | Some("tool_calls") | Some("function_call") | Some("eos") => Ok(default),
        Some("length") => Ok(StopReason::Length),
        Some("content_filter") => Ok(StopReason::Refusal),
        Some(other) => Err(ProviderError::new(
            ProviderErrorKind::Protocol,
            format!("the provider stopped with an unknown finish_reason {other:?}"),
        )),
    }
}

fn usage(wire: Option<WireUsage>, model: &Model) -> Usage {
    let Some(wire) = wire else { return Usage::default() };
    let prompt = wire.prompt_tokens.unwrap_or(0);
    let cached = wire.prompt_tokens_details.and_then(|details| details.cached_tokens).unwrap_or(0).min(prompt);
    let output = wire.completion_tokens.unwrap_or(0);
    let mut usage = Usage {
        input: prompt - cached,
        output,
        cache_read: cached,
        cache_write: 0,
        total_tokens: prompt + output,
        ..Usage::default()
    };
    model.prices.apply(&mut usage);
    usage
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use expect_test::{Expect, expect};

    use super::*;
    use crate::model::Prices;

    fn model() -> Model {
        Model {
            id: "m".into(),
            provider: "p".into(),
            base_url: String::new(),
            context_window: 1000,
            max_output: 100,
            prices: Prices { input: 1.0, output: 2.0, cache_read: 0.5, cache_write: 0.0 },
            reasoning: true,
            compat: Default::default(),
        }
    }

    /// Feeds each string as one event's data; renders the stream events, then the message.
    fn check(data: &[&str], expected: Expect) {
        let events = Mutex::new(Vec::new());
        let sink = |event: StreamEvent| events.lock().unwrap().push(event);
        let mut assembler = Assembler::new(&sink);
        let mut failure = None;
        for data in data {
            match assembler.on_event(&SseEvent { event: None, data: data.to_string() }) {
                Step::Continue | Step::KeepAlive => {}
                Step::Done => break,
                Step::Failed(error) | Step::Retry(error) => {
                    failure = Some(error);
                    break;
                }
            }
        }
        let complete = assembler.is_complete();
        let message = assembler.into_message(&model(), failure);
        let mut out: Vec<String> = events.into_inner().unwrap().iter().map(crate::test_json::stream_event).collect();
        out.push(format!("complete={complete} stop={:?} error={:?}", message.stop_reason, message.error));
        out.push(crate::test_json::contents(&message.content));
        let usage = &message.usage;
        out.push(format!(
            "usage in={} out={} cache_read={} total={} cost={:.6}",
            usage.input, usage.output, usage.cache_read, usage.total_tokens, usage.cost.total
        ));
        expected.assert_eq(&out.join("\n"));
    }

    fn delta(delta: &str) -> String {
        format!(r#"{{"choices":[{{"index":0,"delta":{delta},"finish_reason":null}}]}}"#)
    }

    fn finish(reason: &str) -> String {
        format!(r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#)
    }

    #[test]
    fn thinking_then_text_with_cached_usage() {
        check(
            &[
                &delta(r#"{"role":"assistant","content":""}"#),
                &delta(r#"{"reasoning_content":"Let me "}"#),
                &delta(r#"{"reasoning_content":"think."}"#),
                &delta(r#"{"content":"Hel"}"#),
                &delta(r#"{"content":"lo"}"#),
                &finish("stop"),
                r#"{"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":400}}}"#,
                "[DONE]",
            ],
            expect![[r#"
                {"kind":"thinking","index":0,"delta":"Let me "}
                {"kind":"thinking","index":0,"delta":"think."}
                {"kind":"text","index":1,"delta":"Hel"}
                {"kind":"text","index":1,"delta":"lo"}
                complete=true stop=Stop error=None
                [{"type":"thinking","thinking":"Let me think."},{"type":"text","text":"Hello"}]
                usage in=600 out=20 cache_read=400 total=1020 cost=0.000840"#]],
        );
    }

    #[test]
    fn reasoning_field_name_is_thinking_too() {
        check(
            &[&delta(r#"{"reasoning":"hm"}"#), &delta(r#"{"content":"ok"}"#), &finish("stop")],
            expect![[r#"
                {"kind":"thinking","index":0,"delta":"hm"}
                {"kind":"text","index":1,"delta":"ok"}
                complete=true stop=Stop error=None
                [{"type":"thinking","thinking":"hm"},{"type":"text","text":"ok"}]
                usage in=0 out=0 cache_read=0 total=0 cost=0.000000"#]],
        );
    }

    #[test]
    fn parallel_tool_calls_interleaved_by_index() {
        check(
            &[
                &delta(
                    r#"{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read","arguments":""}}]}"#,
                ),
                &delta(
                    r#"{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#,
                ),
                &delta(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}"#),
                &delta(r#"{"tool_calls":[{"index":0,"function":{"arguments":"\"a\"}"}}]}"#),
                &finish("tool_calls"),
            ],
            expect![[r#"
                {"kind":"tool_call","index":0,"id":"a","name":"read","argumentsDelta":""}
                {"kind":"tool_call","index":1,"id":"b","name":"ls","argumentsDelta":"{}"}
                {"kind":"tool_call","index":0,"id":"a","name":"read","argumentsDelta":"{\"path\":"}
                {"kind":"tool_call","index":0,"id":"a","name":"read","argumentsDelta":"\"a\"}"}
                complete=true stop=ToolUse error=None
                [{"type":"toolCall","id":"a","name":"read","arguments":{"path":"a"}},{"type":"toolCall","id":"b","name":"ls","arguments":{}}]
                usage in=0 out=0 cache_read=0 total=0 cost=0.000000"#]],
        );
    }

    #[test]
    fn a_new_id_at_a_reused_index_starts_a_new_call() {
        check(
            &[
                &delta(r#"{"tool_calls":[{"index":0,"id":"a","function":{"name":"read","arguments":"{\"p\":1}"}}]}"#),
                &delta(r#"{"tool_calls":[{"index":0,"id":"b","function":{"name":"ls","arguments":"{}"}}]}"#),
                &finish("stop"),
            ],
            expect![[r#"
                {"kind":"tool_call","index":0,"id":"a","name":"read","argumentsDelta":"{\"p\":1}"}
                {"kind":"tool_call","index":1,"id":"b","name":"ls","argumentsDelta":"{}"}
                complete=true stop=ToolUse error=None
                [{"type":"toolCall","id":"a","name":"read","arguments":{"p":1}},{"type":"toolCall","id":"b","name":"ls","arguments":{}}]
                usage in=0 out=0 cache_read=0 total=0 cost=0.000000"#]],
        );
    }

    #[test]
    fn malformed_arguments_stay_raw_and_object_arguments_are_accepted() {
        check(
            &[
                &delta(
                    r#"{"tool_calls":[{"index":0,"id":"a","function":{"name":"edit","arguments":"{\"path\": \"a"}}]}"#,
                ),
                &delta(r#"{"tool_calls":[{"index":1,"function":{"name":"ls","arguments":{"path":"."}}}]}"#),
                &finish("tool_calls"),
            ],
            expect![[r#"
                {"kind":"tool_call","index":0,"id":"a","name":"edit","argumentsDelta":"{\"path\": \"a"}
                {"kind":"tool_call","index":1,"id":"call_1","name":"ls","argumentsDelta":"{\"path\":\".\"}"}
                complete=true stop=ToolUse error=None
                [{"type":"toolCall","id":"a","name":"edit","arguments":"{\"path\": \"a"},{"type":"toolCall","id":"call_1","name":"ls","arguments":{"path":"."}}]
                usage in=0 out=0 cache_read=0 total=0 cost=0.000000"#]],
        );
    }

    #[test]
    fn tolerates_empty_finish_empty_usage_nulls_missing_choices_and_unknown_fields() {
        check(
            &[
                r#"{"id":"x","object":"chat.completion.chunk","system_fingerprint":null}"#,
                r#"{"choices":null,"usage":null}"#,
                r#"{"choices":[{"index":0,"delta":{"content":null,"reasoning_content":null,"tool_calls":null,"extra":1},"finish_reason":""}],"usage":{}}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null,"logprobs":null}]}"#,
                "[DONE]",
            ],
            expect![[r#"
                {"kind":"text","index":0,"delta":"hi"}
                complete=true stop=Stop error=None
                [{"type":"text","text":"hi"}]
                usage in=0 out=0 cache_read=0 total=0 cost=0.000000"#]],
        );
    }

    #[test]
    fn finish_reasons_map_to_stop_reasons() {
        let cases = ["stop", "length", "tool_calls", "function_call", "content_filter", "weird"];
        let mapped: Vec<String> = cases
            .iter()
            .map(|reason| {
                let with_call = stop_reason(Some(reason), true).map_err(|e| e.kind);
                let without = stop_reason(Some(reason), false).map_err(|e| e.kind);
                format!("{reason}: {with_call:?} / {without:?}")
            })
            .collect();
        expect![[r#"
            stop: Ok(ToolUse) / Ok(Stop)
            length: Ok(Length) / Ok(Length)
            tool_calls: Ok(ToolUse) / Ok(Stop)
            function_call: Ok(ToolUse) / Ok(Stop)
            content_filter: Ok(Refusal) / Ok(Refusal)
            weird: Err(Protocol) / Err(Protocol)"#]]
        .assert_eq(&mapped.join("\n"));
    }

    #[test]
    fn a_content_filter_finish_is_a_refusal_that_keeps_the_partial_answer() {
        check(
            &[&delta(r#"{"content":"I can"}"#), &finish("content_filter"), "[DONE]"],
            expect![[r#"
                {"kind":"text","index":0,"delta":"I can"}
                complete=true stop=Refusal error=None
                [{"type":"text","text":"I can"}]
                usage in=0 out=0 cache_read=0 total=0 cost=0.000000"#]],
        );
    }

    #[test]
    fn error_payload_fails_the_stream_and_keeps_the_content() {
        check(
            &[&delta(r#"{"content":"partial"}"#), r#"{"error":{"message":"overloaded","type":"server_error"}}"#],
            expect![[r#"
                {"kind":"text","index":0,"delta":"partial"}
                complete=false stop=Error error=Some(ProviderError { kind: Stream, status: None, message: "the server reported an error mid-stream: overloaded" })
                [{"type":"text","text":"partial"}]
                usage in=0 out=0 cache_read=0 total=0 cost=0.000000"#]],
        );
    }

    #[test]
    fn unparsable_chunk_is_a_protocol_error() {
        check(
            &[&delta(r#"{"content":"a"}"#), "{not json"],
            expect![[r#"
                {"kind":"text","index":0,"delta":"a"}
                complete=false stop=Error error=Some(ProviderError { kind: Protocol, status: None, message: "could not read a stream chunk (key must be a string at line 1 column 2): {not json" })
                [{"type":"text","text":"a"}]
                usage in=0 out=0 cache_read=0 total=0 cost=0.000000"#]],
        );
    }
}
