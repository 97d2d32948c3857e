//! One scripted reply: what the server answers to one chat-completions request, and how.
//!
//! A reply is plain data (deserialized from a JSON script, camelCase) with a small builder API for
//! tests. Content fields say *what* the model answers; transport fields say how badly the wire
//! behaves while it does (delays, cuts, keep-alive comments, odd line endings).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the server answers to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Reply {
    /// Assistant text, streamed in `chunk_chars` pieces.
    pub text: String,
    /// Reasoning, streamed before the text.
    pub thinking: String,
    /// Send reasoning as `reasoning` instead of `reasoning_content`.
    pub reasoning_field: bool,
    /// Anthropic mode: the thinking block's signature; `scripted-signature` when absent.
    pub thinking_signature: Option<String>,
    /// Anthropic mode: the data of a `redacted_thinking` block sent before the thinking.
    pub redacted_thinking: Option<String>,
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Every tool call reuses `index: 0` with a new id (a quirk of some servers).
    pub reuse_index_zero: bool,
    /// Token counts for the final usage chunk; estimated from the text when absent.
    pub usage: Option<ScriptedUsage>,
    /// Overrides the finish reason (`"length"`, `""`); default `tool_calls` or `stop`.
    pub finish_reason: Option<String>,
    /// Size of the streamed pieces, in chars.
    pub chunk_chars: usize,
    /// Answer with this HTTP error instead of a completion.
    pub error: Option<HttpError>,
    /// Wait before the response head, in ms.
    pub delay_ms: u64,
    /// Wait between two SSE events, in ms.
    pub chunk_delay_ms: u64,
    /// Close the socket after this many SSE events, without finishing the body.
    pub cut_after_chunks: Option<usize>,
    /// Send `data: {"error": <this>}` after the content instead of the finish chunk.
    pub stream_error: Option<Value>,
    /// Send a `: keep-alive` comment before every event.
    pub keep_alive: bool,
    /// End SSE lines with `\r\n`.
    pub crlf: bool,
    /// Write `data:` without the space after the colon.
    pub no_space: bool,
    /// Play this reply this many times (benchmarks).
    pub repeat: usize,
    /// Instead of the reply, misbehave this way (after `delay_ms`).
    pub fault: Option<Fault>,
    /// Played only for a request whose body contains this text (concurrent callers, such as
    /// subagents, ask in no fixed order); the first reply in the script that fits is played.
    pub when: Option<String>,
}

/// A way for the server to fail that no well-behaved reply shows. Endless and stalling faults
/// end when the client hangs up, or after [`Fault::MAX_SECONDS`] at the latest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase", tag = "kind")]
pub enum Fault {
    /// Close the connection once the request is read, before any byte of a response.
    ResetBeforeHeaders,
    /// Read the request and never answer.
    StallBeforeHeaders,
    /// Send the head of a 200 event stream, then nothing.
    StallAfterHeaders,
    /// Send the head of a 200 event stream, then only keep-alives every `every_ms`: `: ping`
    /// comments, or `ping` events in Anthropic mode.
    KeepAliveOnly { every_ms: u64 },
    /// Stream text deltas without end, one every `every_ms`.
    Endless { every_ms: u64 },
    /// Send the head of a 200 event stream, then `chunk` (raw bytes of the body) again and again,
    /// one every `every_ms`: empty deltas, unknown events, a line that never ends.
    Repeat { chunk: String, every_ms: u64 },
    /// Answer with this status, content type and body (an HTML page, plain JSON, nothing).
    Body { status: u16, content_type: String, body: String },
}

impl Fault {
    /// How long an endless or stalling fault goes on when the client does not hang up.
    pub const MAX_SECONDS: u64 = 300;
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScriptedToolCall {
    /// Defaults to `call_<n>` where n counts the calls of the reply.
    pub id: String,
    pub name: String,
    /// Arguments as a JSON value, sent as its serialized text.
    pub arguments: Value,
    /// Arguments sent verbatim instead of `arguments` (for malformed-JSON tests).
    pub raw_arguments: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScriptedUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    /// Prompt tokens written to the cache (Anthropic's `cache_creation_input_tokens`); part of
    /// `prompt_tokens` like `cached_tokens`.
    pub cache_write_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HttpError {
    pub status: u16,
    /// The response body; default an OpenAI-style `{"error": {"message": …}}`.
    pub body: Option<Value>,
    /// Used for the default body.
    pub message: String,
    /// Value of the `Retry-After` header, in seconds.
    pub retry_after: Option<u64>,
}

impl Default for Reply {
    fn default() -> Self {
        Self {
            text: String::new(),
            thinking: String::new(),
            reasoning_field: false,
            thinking_signature: None,
            redacted_thinking: None,
            tool_calls: Vec::new(),
            reuse_index_zero: false,
            usage: None,
            finish_reason: None,
            chunk_chars: 3,
            error: None,
            delay_ms: 0,
            chunk_delay_ms: 0,
            cut_after_chunks: None,
            stream_error: None,
            keep_alive: false,
            crlf: false,
            no_space: false,
            repeat: 1,
            fault: None,
            when: None,
        }
    }
}

impl Default for ScriptedToolCall {
    fn default() -> Self {
        Self {
            id: String::new(),
            name: String::new(),
            arguments: Value::Object(Default::default()),
            raw_arguments: None,
        }
    }
}

impl Default for HttpError {
    fn default() -> Self {
        Self { status: 500, body: None, message: "scripted error".to_string(), retry_after: None }
    }
}

impl Reply {
    /// A reply that answers with text.
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: text.into(), ..Self::default() }
    }

    /// A reply that calls one tool with JSON arguments.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self::default().with_tool_call(id, name, arguments)
    }

    /// An HTTP error with an OpenAI-style body carrying `message`.
    pub fn http_error(status: u16, message: impl Into<String>) -> Self {
        Self { error: Some(HttpError { status, message: message.into(), ..HttpError::default() }), ..Self::default() }
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.thinking = thinking.into();
        self
    }

    pub fn with_tool_call(mut self, id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        self.tool_calls.push(ScriptedToolCall { id: id.into(), name: name.into(), arguments, raw_arguments: None });
        self
    }

    /// A tool call whose arguments are sent verbatim, valid JSON or not.
    pub fn with_raw_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        raw: impl Into<String>,
    ) -> Self {
        self.tool_calls.push(ScriptedToolCall {
            id: id.into(),
            name: name.into(),
            raw_arguments: Some(raw.into()),
            ..ScriptedToolCall::default()
        });
        self
    }

    /// Sends reasoning in the `reasoning` field instead of `reasoning_content`.
    pub fn with_reasoning_field(mut self) -> Self {
        self.reasoning_field = true;
        self
    }

    pub fn with_reused_index_zero(mut self) -> Self {
        self.reuse_index_zero = true;
        self
    }

    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64, cached_tokens: u64) -> Self {
        self.usage = Some(ScriptedUsage { prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens: 0 });
        self
    }

    /// Sets the prompt tokens written to the cache (after `with_usage`, which it amends).
    pub fn with_cache_write(mut self, tokens: u64) -> Self {
        self.usage.get_or_insert_with(ScriptedUsage::default).cache_write_tokens = tokens;
        self
    }

    /// Anthropic mode: the signature sent with the thinking block.
    pub fn with_thinking_signature(mut self, signature: impl Into<String>) -> Self {
        self.thinking_signature = Some(signature.into());
        self
    }

    /// Anthropic mode: a `redacted_thinking` block carrying `data`, before any thinking.
    pub fn with_redacted_thinking(mut self, data: impl Into<String>) -> Self {
        self.redacted_thinking = Some(data.into());
        self
    }

    pub fn with_finish_reason(mut self, finish_reason: impl Into<String>) -> Self {
        self.finish_reason = Some(finish_reason.into());
        self
    }

    pub fn with_chunk_chars(mut self, chunk_chars: usize) -> Self {
        self.chunk_chars = chunk_chars;
        self
    }

    /// Sets the HTTP error's `Retry-After` header (only meaningful on an error reply).
    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        if let Some(error) = &mut self.error {
            error.retry_after = Some(seconds);
        }
        self
    }

    /// Replaces the HTTP error's body (only meaningful on an error reply).
    pub fn with_error_body(mut self, body: Value) -> Self {
        if let Some(error) = &mut self.error {
            error.body = Some(body);
        }
        self
    }

    pub fn with_delay_ms(mut self, delay_ms: u64) -> Self {
        self.delay_ms = delay_ms;
        self
    }

    pub fn with_chunk_delay_ms(mut self, chunk_delay_ms: u64) -> Self {
        self.chunk_delay_ms = chunk_delay_ms;
        self
    }

    pub fn with_cut_after_chunks(mut self, events: usize) -> Self {
        self.cut_after_chunks = Some(events);
        self
    }

    /// Ends the stream with `data: {"error": {"message": …}}` after the content.
    pub fn with_stream_error(mut self, message: impl Into<String>) -> Self {
        self.stream_error = Some(serde_json::json!({ "message": message.into(), "type": "server_error" }));
        self
    }

    /// Ends the stream with an error payload of type `kind` (Anthropic mode: `overloaded_error`).
    pub fn with_typed_stream_error(mut self, kind: impl Into<String>, message: impl Into<String>) -> Self {
        self.stream_error = Some(serde_json::json!({ "message": message.into(), "type": kind.into() }));
        self
    }

    pub fn with_keep_alive(mut self) -> Self {
        self.keep_alive = true;
        self
    }

    pub fn with_crlf(mut self) -> Self {
        self.crlf = true;
        self
    }

    pub fn with_no_space(mut self) -> Self {
        self.no_space = true;
        self
    }

    pub fn when(mut self, text: impl Into<String>) -> Self {
        self.when = Some(text.into());
        self
    }
    pub fn with_repeat(mut self, times: usize) -> Self {
        self.repeat = times;
        self
    }

    /// A reply that misbehaves: see [`Fault`].
    pub fn fault(fault: Fault) -> Self {
        Self { fault: Some(fault), ..Self::default() }
    }

    /// The finish reason this reply reports.
    pub fn finish_reason(&self) -> String {
        match &self.finish_reason {
            Some(reason) => reason.clone(),
            None if self.tool_calls.is_empty() => "stop".to_string(),
            None => "tool_calls".to_string(),
        }
    }
}

impl ScriptedToolCall {
    /// The arguments as the text that goes on the wire.
    pub fn arguments_text(&self) -> String {
        match &self.raw_arguments {
            Some(raw) => raw.clone(),
            None => self.arguments.to_string(),
        }
    }
}
