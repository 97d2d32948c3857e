//! Small policies of the loop that need no I/O: cutting long tool results, spotting a model
//! that repeats itself, what the next model call will likely cost, and whether it fits the
//! model's context window at all.

use std::sync::Arc;

use reins_ai::{Content, Message, Model, ProviderError, ProviderErrorKind, Request, ToolCall, ToolSpec};
use serde_json::Value;

/// Characters per token in estimates (English text and code average about four).
const CHARS_PER_TOKEN: usize = 4;

/// What the next call with this context will likely cost, in US dollars, from the model's prices:
/// the prompt of the last call (its reported tokens) is read from the cache where the model has a
/// cache price, what came after it is new input (priced as a cache write where that costs more),
/// and the answer is guessed as long as the last one. Without an earlier call everything is new
/// input, estimated from the text, and no answer is guessed.
pub(crate) fn next_call_cost(model: &Model, system_prompt: &str, tools: &[ToolSpec], messages: &[Arc<Message>]) -> f64 {
    let prices = &model.prices;
    let cached_price = if prices.cache_read > 0.0 { prices.cache_read } else { prices.input };
    let new_price = prices.input.max(prices.cache_write);
    let last_call = messages.iter().enumerate().rev().find_map(|(at, message)| match &**message {
        Message::Assistant(assistant)
            if assistant.usage.input + assistant.usage.cache_read + assistant.usage.cache_write > 0 =>
        {
            Some((at, &assistant.usage))
        }
        _ => None,
    });
    let (cached, output, new_chars) = match last_call {
        Some((at, usage)) => {
            let after: usize = messages[at + 1..].iter().map(|message| message_chars(message)).sum();
            (usage.input + usage.cache_read + usage.cache_write, usage.output, after)
        }
        None => {
            let tools: usize = tools
                .iter()
                .map(|tool| tool.name.len() + tool.description.len() + tool.parameters.to_string().len())
                .sum();
            (0, 0, system_prompt.len() + tools + messages.iter().map(|message| message_chars(message)).sum::<usize>())
        }
    };
    let new = (new_chars.div_ceil(CHARS_PER_TOKEN) as u64 + output) as f64;
    let per_million = |tokens: f64, price: f64| tokens * price / 1_000_000.0;
    per_million(cached as f64, cached_price) + per_million(new, new_price) + per_million(output as f64, prices.output)
}

/// The error for a request whose conversation alone is, by the estimate of [`next_call_cost`]
/// (characters / 4), over the model's context window: the provider would refuse it anyway, after
/// it was sent whole. The system prompt and the tools are left out of the count, so an estimate
/// that runs high never refuses a request the model would take. `chars` is the sum of
/// [`message_chars`] over the request's messages, which the run keeps as the context grows.
pub(crate) fn over_window(request: &Request, chars: usize) -> Option<ProviderError> {
    let tokens = chars.div_ceil(CHARS_PER_TOKEN) as u64;
    let window = request.model.context_window;
    (tokens > window).then(|| {
        let message = format!(
            "the conversation is about {tokens} tokens, more than the {window}-token context window of {}; \
             it was not sent: compact the session or start a new one",
            request.model.id
        );
        ProviderError::new(ProviderErrorKind::ContextOverflow, message)
    })
}

/// The characters a message adds to a prompt (counted as bytes): its text, tool calls and results.
pub(crate) fn message_chars(message: &Message) -> usize {
    let content = match message {
        Message::User(user) => &user.content,
        Message::Assistant(assistant) => &assistant.content,
        Message::ToolResult(result) => &result.content,
    };
    content
        .iter()
        .map(|block| match block {
            Content::Text { text } => text.len(),
            Content::Thinking { thinking, .. } => thinking.len(),
            Content::ToolCall(call) => call.name.len() + call.arguments_size().bytes,
            // Images are priced by the provider's own rules; a megapixel is about 1,600 tokens.
            Content::Image { .. } => 1600 * CHARS_PER_TOKEN,
        })
        .sum()
}

/// Remembers the last call the run made, to stop a model that repeats an identical call.
#[derive(Debug, Default)]
pub(crate) struct RepeatDetector {
    last: Option<(String, Value)>,
}

impl RepeatDetector {
    /// Records `call` (with its parsed arguments) and tells whether it is identical to the
    /// previous one. Arguments compare as JSON values, so key order and spacing do not matter.
    pub(crate) fn is_repeat(&mut self, call: &ToolCall, arguments: &Value) -> bool {
        let repeat = self.last.as_ref().is_some_and(|(name, args)| *name == call.name && args == arguments);
        self.last = Some((call.name.clone(), arguments.clone()));
        repeat
    }

    /// Forgets the last call: after the user speaks, doing the same thing again may be wanted.
    pub(crate) fn reset(&mut self) {
        self.last = None;
    }
}

/// Cuts the text of `content` to at most `max_bytes` bytes in total (never inside a character)
/// and appends a notice saying how much was shown. Images are kept as they are.
pub(crate) fn truncate_content(content: &mut Vec<Content>, max_bytes: usize) {
    let total: usize = content.iter().map(text_len).sum();
    if total <= max_bytes {
        return;
    }
    let mut budget = max_bytes;
    let mut shown = 0;
    let mut cut_at = None;
    for (index, block) in content.iter_mut().enumerate() {
        let Content::Text { text } = block else { continue };
        if cut_at.is_some() {
            text.clear();
            continue;
        }
        if let (kept, true) = reins_ai::cut_bytes(text, budget) {
            let end = kept.len();
            text.truncate(end);
            cut_at = Some(index);
        }
        budget -= text.len();
        shown += text.len();
    }
    content.retain(|block| !matches!(block, Content::Text { text } if text.is_empty()));
    let notice = format!("[output truncated: {shown} of {total} bytes shown]");
    match content.iter_mut().rev().find_map(|block| match block {
        Content::Text { text } => Some(text),
        _ => None,
    }) {
        Some(text) => {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&notice);
        }
        None => content.push(Content::text(notice)),
    }
}

fn text_len(block: &Content) -> usize {
    match block {
        Content::Text { text } => text.len(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use expect_test::{Expect, expect};
    use reins_ai::{Content, ToolCall};
    use serde_json::json;

    use reins_ai::{Message, Model, ProviderErrorKind, Request};

    use super::{RepeatDetector, next_call_cost, over_window, truncate_content};

    #[test]
    fn a_request_over_the_window_is_refused_before_it_is_sent() {
        let model = Model {
            id: "m".into(),
            provider: "p".into(),
            base_url: String::new(),
            context_window: 1000,
            max_output: 100,
            prices: Default::default(),
            reasoning: false,
            compat: Default::default(),
        };
        let request = |text: &str| Request {
            model: model.clone(),
            system_prompt: "system".into(),
            messages: vec![Message::user(text)].into(),
            tools: Vec::new().into(),
            max_tokens: None,
            thinking: None,
        };
        let over = |request: Request| {
            let chars = request.messages.iter().map(super::message_chars).sum();
            over_window(&request, chars)
        };
        assert!(over(request(&"x".repeat(4000))).is_none());
        let error = over(request(&"x".repeat(4001))).expect("over the window");
        assert_eq!(error.kind, ProviderErrorKind::ContextOverflow);
        assert_eq!(
            error.message,
            "the conversation is about 1001 tokens, more than the 1000-token context window of m; it was not sent: \
             compact the session or start a new one"
        );
    }

    fn check_truncate(content: Vec<Content>, max_bytes: usize, expected: Expect) {
        let mut content = content;
        truncate_content(&mut content, max_bytes);
        expected.assert_debug_eq(&content);
    }

    #[test]
    fn short_output_is_untouched() {
        check_truncate(
            vec![Content::text("hello")],
            5,
            expect![[r#"
                [
                    Text {
                        text: "hello",
                    },
                ]
            "#]],
        );
    }

    #[test]
    fn long_output_is_cut_with_a_notice() {
        check_truncate(
            vec![Content::text("0123456789")],
            4,
            expect![[r#"
                [
                    Text {
                        text: "0123\n[output truncated: 4 of 10 bytes shown]",
                    },
                ]
            "#]],
        );
    }

    #[test]
    fn cut_never_splits_a_character() {
        // "é" is two bytes; a limit of 2 falls inside the second "é".
        check_truncate(
            vec![Content::text("aéé")],
            2,
            expect![[r#"
                [
                    Text {
                        text: "a\n[output truncated: 1 of 5 bytes shown]",
                    },
                ]
            "#]],
        );
    }

    #[test]
    fn later_blocks_are_dropped_and_images_kept() {
        check_truncate(
            vec![
                Content::text("abc"),
                Content::Image { data: "AAAA".into(), mime_type: "image/png".into() },
                Content::text("defgh"),
                Content::text("ijk"),
            ],
            5,
            expect![[r#"
                [
                    Text {
                        text: "abc",
                    },
                    Image {
                        data: "AAAA",
                        mime_type: "image/png",
                    },
                    Text {
                        text: "de\n[output truncated: 5 of 11 bytes shown]",
                    },
                ]
            "#]],
        );
    }

    fn call(name: &str) -> ToolCall {
        ToolCall { id: "x".into(), name: name.into(), arguments: json!({}) }
    }

    #[test]
    fn repeat_needs_same_name_and_arguments_in_a_row() {
        let mut detector = RepeatDetector::default();
        let seen: Vec<bool> = [
            ("read", json!({"path": "a", "n": 1})),
            ("read", json!({"n": 1, "path": "a"})), // same value, other key order
            ("read", json!({"path": "b"})),
            ("ls", json!({"path": "b"})),
            ("read", json!({"path": "b"})),
        ]
        .iter()
        .map(|(name, args)| detector.is_repeat(&call(name), args))
        .collect();
        assert_eq!(seen, [false, true, false, false, false]);
        detector.reset();
        assert!(!detector.is_repeat(&call("read"), &json!({"path": "b"})));
    }

    /// The next call after a 10,000-token prompt that answered in 500 tokens, with a 400-character
    /// tool result since: the prompt is read from the cache, the answer and the result are new.
    #[test]
    fn the_next_call_is_priced_from_the_last_one_with_its_prefix_cached() {
        use reins_ai::{AssistantMessage, Message, Model, Prices, ToolResultMessage, Usage};
        let mut model = Model {
            id: "m".into(),
            provider: "p".into(),
            base_url: String::new(),
            context_window: 200_000,
            max_output: 8192,
            prices: Prices { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 },
            reasoning: false,
            compat: Default::default(),
        };
        let last = AssistantMessage {
            usage: Usage { input: 10, cache_read: 9_000, cache_write: 990, output: 500, ..Usage::default() },
            ..AssistantMessage::default()
        };
        let result = ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![Content::text("x".repeat(400))],
            is_error: false,
            details: None,
            timestamp: 0,
        };
        let messages = [Message::user("go"), Message::Assistant(last), Message::ToolResult(result)].map(Arc::new);
        let cost = |model: &Model| (next_call_cost(model, "", &[], &messages) * 1e6).round() / 1e6;
        // 10,000 × $0.3 + 600 × $3.75 + 500 × $15, per million.
        assert_eq!(cost(&model), 0.01275);
        // Without cache prices the whole prompt is input again.
        model.prices = Prices { input: 3.0, output: 15.0, ..Prices::default() };
        assert_eq!(cost(&model), 0.0393);
        // Before any call: the text, at four characters a token.
        assert_eq!(next_call_cost(&model, &"s".repeat(4000), &[], &[Arc::new(Message::user("go"))]) * 1e6, 3003.0);
    }
}
