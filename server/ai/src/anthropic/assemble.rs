//! Assembles Messages API stream events into content blocks, emitting [`StreamEvent`]s as deltas
//! arrive, and finally into one [`AssistantMessage`].
//!
//! Blocks are keyed by the wire `index`; a tool call's `input_json_delta` pieces are joined and
//! parsed once the message is built. Blocks reins does not know (server tools) are skipped.

use serde_json::Value;

use super::REDACTED_THINKING_PREFIX;
use super::wire::{BlockDelta, BlockStart, WireError, WireEvent, WireUsage};
use crate::message::{AssistantMessage, Content, ProviderError, ProviderErrorKind, StopReason, ToolCall, Usage};
use crate::model::Model;
use crate::provider::{EventSink, StreamEvent};
use crate::sse::SseEvent;
use crate::transport::{Assemble, Step};
use crate::transport::{QUOTED_EVENT_CHARS, finished_message};

/// Error types worth another attempt when they arrive before any content.
const RETRYABLE_ERRORS: [&str; 3] = ["overloaded_error", "api_error", "rate_limit_error"];

/// Builds one assistant message from a stream of SSE events.
pub struct Assembler<'a> {
    blocks: Vec<Block>,
    /// The block each wire `index` fills: (wire index, position in `blocks`).
    positions: Vec<(usize, usize)>,
    usage: WireUsage,
    stop_reason: Option<String>,
    stopped: bool,
    on_event: EventSink<'a>,
}

enum Block {
    Text(String),
    Thinking { thinking: String, signature: String },
    RedactedThinking(String),
    ToolCall { id: String, name: String, input_json: String, start_input: Value },
}

impl<'a> Assembler<'a> {
    pub fn new(on_event: EventSink<'a>) -> Self {
        Self {
            blocks: Vec::new(),
            positions: Vec::new(),
            usage: WireUsage::default(),
            stop_reason: None,
            stopped: false,
            on_event,
        }
    }

    /// The message so far; `error` (a cut, a timeout, a cancel) overrides the stop reason.
    pub fn into_message(self, model: &Model, error: Option<ProviderError>) -> AssistantMessage {
        let content: Vec<Content> = self.blocks.into_iter().map(Block::into_content).collect();
        let reason = self.stop_reason;
        finished_message(content, model, usage(self.usage, model), error, |has_tool_calls| {
            stop_reason(reason.as_deref(), has_tool_calls)
        })
    }

    fn on_wire_event(&mut self, event: WireEvent) -> Step {
        match event {
            // Counts without content, like pings, do not hold off the idle timeout: a server
            // that sent usage every second would otherwise keep a run waiting for ever.
            WireEvent::MessageStart { message } => {
                self.add_usage(message.usage);
                return Step::KeepAlive;
            }
            WireEvent::ContentBlockStart { index, content_block } => self.start_block(index, content_block),
            WireEvent::ContentBlockDelta { index, delta } => self.on_delta(index, delta),
            WireEvent::MessageDelta { delta, usage } => {
                self.add_usage(usage);
                let Some(reason) = delta.stop_reason else { return Step::KeepAlive };
                self.stop_reason = Some(reason);
            }
            WireEvent::MessageStop {} => {
                self.stopped = true;
                return Step::Done;
            }
            WireEvent::Error { error } => return self.on_error(error),
            // Pings, and events of kinds reins does not know, show only that the connection lives.
            WireEvent::Ping {} | WireEvent::Unknown => return Step::KeepAlive,
            WireEvent::ContentBlockStop {} => {}
        }
        Step::Continue
    }

    /// Later counts replace earlier ones field by field (`message_delta` counts are cumulative).
    fn add_usage(&mut self, usage: Option<WireUsage>) {
        let Some(usage) = usage else { return };
        let usage_so_far = &mut self.usage;
        for (field, value) in [
            (&mut usage_so_far.input_tokens, usage.input_tokens),
            (&mut usage_so_far.output_tokens, usage.output_tokens),
            (&mut usage_so_far.cache_creation_input_tokens, usage.cache_creation_input_tokens),
            (&mut usage_so_far.cache_read_input_tokens, usage.cache_read_input_tokens),
        ] {
            if value.is_some() {
                *field = value;
            }
        }
    }

    fn start_block(&mut self, index: usize, start: BlockStart) {
        let position = self.blocks.len();
        let (block, event) = match start {
            BlockStart::Text { text } => {
                let event = (!text.is_empty()).then(|| StreamEvent::Text { index: position, delta: text.clone() });
                (Block::Text(text), event)
            }
            BlockStart::Thinking { thinking, signature } => {
                let event =
                    (!thinking.is_empty()).then(|| StreamEvent::Thinking { index: position, delta: thinking.clone() });
                (Block::Thinking { thinking, signature: signature.unwrap_or_default() }, event)
            }
            BlockStart::RedactedThinking { data } => (Block::RedactedThinking(data), None),
            BlockStart::ToolUse { id, name, input } => {
                let event = StreamEvent::ToolCall {
                    index: position,
                    id: id.clone(),
                    name: name.clone(),
                    arguments_delta: String::new(),
                };
                (Block::ToolCall { id, name, input_json: String::new(), start_input: input }, Some(event))
            }
            BlockStart::Unknown => return,
        };
        self.blocks.push(block);
        self.positions.retain(|(wire_index, _)| *wire_index != index);
        self.positions.push((index, position));
        if let Some(event) = event {
            (self.on_event)(event);
        }
    }

    fn on_delta(&mut self, index: usize, delta: BlockDelta) {
        let Some(position) = self.positions.iter().find(|(wire_index, _)| *wire_index == index).map(|&(_, p)| p) else {
            return; // a delta of a skipped block
        };
        let Some(block) = self.blocks.get_mut(position) else { return };
        let event = match (block, delta) {
            (Block::Text(text), BlockDelta::TextDelta { text: piece }) => {
                text.push_str(&piece);
                StreamEvent::Text { index: position, delta: piece }
            }
            (Block::Thinking { thinking, .. }, BlockDelta::ThinkingDelta { thinking: piece }) => {
                thinking.push_str(&piece);
                StreamEvent::Thinking { index: position, delta: piece }
            }
            (Block::Thinking { signature, .. }, BlockDelta::SignatureDelta { signature: piece }) => {
                signature.push_str(&piece);
                return;
            }
            (Block::ToolCall { id, name, input_json, .. }, BlockDelta::InputJsonDelta { partial_json }) => {
                input_json.push_str(&partial_json);
                StreamEvent::ToolCall {
                    index: position,
                    id: id.clone(),
                    name: name.clone(),
                    arguments_delta: partial_json,
                }
            }
            _ => return, // a delta that does not fit its block, or one reins does not use
        };
        (self.on_event)(event);
    }

    /// An error before any content lost nothing, so a transient one is retried from scratch.
    fn on_error(&mut self, error: WireError) -> Step {
        let message = match error.kind.is_empty() {
            true => error.message,
            false => format!("{} ({})", error.message, error.kind),
        };
        let failure = ProviderError::new(
            ProviderErrorKind::Stream,
            format!("the server reported an error mid-stream: {message}"),
        );
        if self.blocks.is_empty() && RETRYABLE_ERRORS.contains(&error.kind.as_str()) {
            self.usage = WireUsage::default();
            self.positions.clear();
            self.stop_reason = None;
            return Step::Retry(failure);
        }
        Step::Failed(failure)
    }
}

impl Assemble for Assembler<'_> {
    fn on_event(&mut self, event: &SseEvent) -> Step {
        let data = event.data.trim();
        if data.is_empty() {
            return Step::KeepAlive;
        }
        match serde_json::from_str::<WireEvent>(data) {
            Ok(event) => self.on_wire_event(event),
            Err(error) => {
                let message =
                    format!("could not read a stream event ({error}): {}", crate::shorten(data, QUOTED_EVENT_CHARS));
                Step::Failed(ProviderError::new(ProviderErrorKind::Protocol, message))
            }
        }
    }

    /// Whole once the stop reason came (`message_stop` only follows it).
    fn is_complete(&self) -> bool {
        self.stopped || self.stop_reason.is_some()
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
            Block::Text(text) | Block::RedactedThinking(text) => text.len(),
            Block::Thinking { thinking, .. } => thinking.len(),
            Block::ToolCall { input_json, .. } => input_json.len(),
        }
    }

    fn into_content(self) -> Content {
        match self {
            Block::Text(text) => Content::Text { text },
            Block::Thinking { thinking, signature } => {
                Content::Thinking { thinking, signature: (!signature.is_empty()).then_some(signature) }
            }
            Block::RedactedThinking(data) => Content::Thinking {
                thinking: String::new(),
                signature: Some(format!("{REDACTED_THINKING_PREFIX}{data}")),
            },
            Block::ToolCall { id, name, input_json, start_input } => {
                Content::ToolCall(ToolCall { id, name, arguments: arguments(input_json, start_input) })
            }
        }
    }
}

/// The parsed input; the raw text when it is not JSON (the agent rejects it with a tool error);
/// the input of `content_block_start` when no pieces came (it is `{}` when they do).
fn arguments(input_json: String, start_input: Value) -> Value {
    if input_json.trim().is_empty() {
        return match start_input {
            Value::Object(_) => start_input,
            _ => Value::Object(Default::default()),
        };
    }
    serde_json::from_str(&input_json).unwrap_or(Value::String(input_json))
}

fn stop_reason(reason: Option<&str>, has_tool_calls: bool) -> Result<StopReason, ProviderError> {
    // Calls are answered whatever the stated reason, so none is left without a result.
    let default = if has_tool_calls { StopReason::ToolUse } else { StopReason::Stop };
    match reason {
        None | Some("end_turn") | Some("stop_sequence") | Some("pause_turn") | Some("tool_use") => Ok(default),
        Some("max_tokens") | Some("model_context_window_exceeded") => Ok(StopReason::Length),
        Some("refusal") => Ok(StopReason::Refusal),
        Some(other) => Err(ProviderError::new(
            ProviderErrorKind::Protocol,
            format!("the provider stopped with an unknown stop_reason {other:?}"),
        )),
    }
}

/// `input_tokens` excludes the cached prompt, which is counted as cache read and cache write.
fn usage(wire: WireUsage, model: &Model) -> Usage {
    let input = wire.input_tokens.unwrap_or(0);
    let output = wire.output_tokens.unwrap_or(0);
    let cache_read = wire.cache_read_input_tokens.unwrap_or(0);
    let cache_write = wire.cache_creation_input_tokens.unwrap_or(0);
    let mut usage = Usage {
        input,
        output,
        cache_read,
        cache_write,
        total_tokens: input + output + cache_read + cache_write,
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
            provider: "anthropic".into(),
            base_url: String::new(),
            context_window: 1000,
            max_output: 100,
            prices: Prices { input: 1.0, output: 2.0, cache_read: 0.5, cache_write: 1.25 },
            reasoning: true,
            compat: Default::default(),
        }
    }

    /// Feeds each string as one event's data; renders the steps that were not `Continue`, the
    /// stream events, then the message.
    fn check(data: &[&str], expected: Expect) {
        let events = Mutex::new(Vec::new());
        let sink = |event: StreamEvent| events.lock().unwrap().push(event);
        let mut assembler = Assembler::new(&sink);
        let mut out = Vec::new();
        let mut failure = None;
        for data in data {
            match assembler.on_event(&SseEvent { event: None, data: data.to_string() }) {
                Step::Continue | Step::KeepAlive => {}
                Step::Done => out.push("step done".to_string()),
                Step::Retry(error) => out.push(format!("step retry: {}", error.message)),
                Step::Failed(error) => {
                    failure = Some(error);
                    break;
                }
            }
        }
        let complete = assembler.is_complete();
        let message = assembler.into_message(&model(), failure);
        out.extend(events.into_inner().unwrap().iter().map(crate::test_json::stream_event));
        out.push(format!("complete={complete} stop={:?} error={:?}", message.stop_reason, message.error));
        out.push(crate::test_json::contents(&message.content));
        let usage = &message.usage;
        out.push(format!(
            "usage in={} out={} cache_read={} cache_write={} total={} cost={:.6}",
            usage.input, usage.output, usage.cache_read, usage.cache_write, usage.total_tokens, usage.cost.total
        ));
        expected.assert_eq(&out.join("\n"));
    }

    const START: &str = r#"{"type":"message_start","message":{"id":"m1","usage":{"input_tokens":100,"cache_creation_input_tokens":null,"cache_read_input_tokens":50,"output_tokens":1}}}"#;

    #[test]
    fn server_tool_blocks_are_skipped_and_cumulative_usage_replaces_earlier_counts() {
        check(
            &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s1","name":"web_search","input":{}}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\":1}"}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"Hi"}}"#,
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{}}}"#,
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"!"}}"#,
                r#"{"type":"content_block_stop","index":1}"#,
                r#"{"type":"some_future_event","x":1}"#,
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":120,"output_tokens":7}}"#,
                r#"{"type":"message_stop"}"#,
            ],
            expect![[r#"
                step done
                {"kind":"text","index":0,"delta":"Hi"}
                {"kind":"text","index":0,"delta":"!"}
                complete=true stop=Stop error=None
                [{"type":"text","text":"Hi!"}]
                usage in=120 out=7 cache_read=50 cache_write=0 total=177 cost=0.000159"#]],
        );
    }

    #[test]
    fn tool_input_from_the_start_block_and_calls_win_over_end_turn() {
        check(
            &[
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"ls","input":{"path":"."}}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
            ],
            expect![[r#"
                {"kind":"tool_call","index":0,"id":"t1","name":"ls","argumentsDelta":""}
                complete=true stop=ToolUse error=None
                [{"type":"toolCall","id":"t1","name":"ls","arguments":{"path":"."}}]
                usage in=0 out=0 cache_read=0 cache_write=0 total=0 cost=0.000000"#]],
        );
    }

    #[test]
    fn a_refusal_stop_keeps_the_partial_answer_and_leaves_calls_unanswered() {
        check(
            &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I won't"}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"ls","input":{}}}"#,
                r#"{"type":"content_block_stop","index":1}"#,
                r#"{"type":"message_delta","delta":{"stop_reason":"refusal","stop_details":{"explanation":"policy"}},"usage":{"output_tokens":3}}"#,
                r#"{"type":"message_stop"}"#,
            ],
            expect![[r#"
                step done
                {"kind":"text","index":0,"delta":"I won't"}
                {"kind":"tool_call","index":1,"id":"t1","name":"ls","argumentsDelta":""}
                complete=true stop=Refusal error=None
                [{"type":"text","text":"I won't"},{"type":"toolCall","id":"t1","name":"ls","arguments":{}}]
                usage in=100 out=3 cache_read=50 cache_write=0 total=153 cost=0.000131"#]],
        );
    }

    #[test]
    fn an_overloaded_error_before_content_asks_for_a_retry_and_forgets_the_start() {
        check(
            &[START, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#],
            expect![[r#"
                step retry: the server reported an error mid-stream: Overloaded (overloaded_error)
                complete=false stop=Stop error=None
                []
                usage in=0 out=0 cache_read=0 cache_write=0 total=0 cost=0.000000"#]],
        );
    }

    #[test]
    fn an_invalid_request_error_is_not_retried_and_an_unreadable_event_is_a_protocol_error() {
        check(
            &[r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#],
            expect![[r#"
                complete=false stop=Error error=Some(ProviderError { kind: Stream, status: None, message: "the server reported an error mid-stream: bad (invalid_request_error)" })
                []
                usage in=0 out=0 cache_read=0 cache_write=0 total=0 cost=0.000000"#]],
        );
        check(
            &[r#"{"type":"content_block_start","index":0}"#],
            expect![[r#"
                complete=false stop=Error error=Some(ProviderError { kind: Protocol, status: None, message: "could not read a stream event (missing field `content_block`): {\"type\":\"content_block_start\",\"index\":0}" })
                []
                usage in=0 out=0 cache_read=0 cache_write=0 total=0 cost=0.000000"#]],
        );
    }
}
