//! Translates a reins [`Request`] into a Messages API request body.
//!
//! The API wants user and assistant turns, so tool results become `tool_result` blocks of a user
//! message, and consecutive same-role messages are merged into one. Two cache breakpoints make
//! long sessions cheap: the system prompt, and the last block of the last user message (so the
//! whole conversation so far is a cached prefix for the next turn).

use serde_json::Value;

use super::REDACTED_THINKING_PREFIX;
use super::wire::{
    Block, CacheControl, EPHEMERAL, ImageSource, MessagesRequest, Role, ThinkingConfig, WireMessage, WireTool,
};
use crate::message::{AssistantMessage, Content, Message, ToolResultMessage};
use crate::model::{Model, ThinkingLevel};
use crate::provider::Request;

/// The output limit when neither the request nor the model gives one (the API requires one).
const DEFAULT_MAX_TOKENS: u64 = 4096;
/// The API's smallest thinking budget.
const MIN_THINKING_BUDGET: u64 = 1024;
/// Left for the answer when thinking shares `max_tokens` with it.
const MIN_ANSWER_TOKENS: u64 = 1024;

/// The streaming request body for `request`.
pub fn messages_request(request: &Request) -> MessagesRequest<'_> {
    let model = &request.model;
    let max_tokens = match request.max_tokens.unwrap_or(model.max_output) {
        0 => DEFAULT_MAX_TOKENS,
        tokens => tokens,
    };
    let system = match request.system_prompt.is_empty() {
        true => Vec::new(),
        false => vec![Block::Text { text: request.system_prompt.clone(), cache_control: Some(EPHEMERAL) }],
    };
    MessagesRequest {
        model: &model.id,
        max_tokens,
        stream: true,
        system,
        messages: messages(request),
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool { name: &tool.name, description: &tool.description, input_schema: &tool.parameters })
            .collect(),
        thinking: thinking(model, max_tokens, request.thinking.unwrap_or(ThinkingLevel::Medium)),
    }
}

/// The thinking budget of a level (pi's budgets, and twice `high` for `xhigh`).
fn budget(level: ThinkingLevel) -> u64 {
    match level {
        ThinkingLevel::Off => 0,
        ThinkingLevel::Minimal => 1024,
        ThinkingLevel::Low => 2048,
        ThinkingLevel::Medium => 8192,
        ThinkingLevel::High => 16_384,
        ThinkingLevel::XHigh => 32_768,
    }
}

/// Anthropic's rules: the budget counts against `max_tokens` and must stay below it, and must be
/// at least 1024. So it is cut to leave [`MIN_ANSWER_TOKENS`] for the answer, and when that
/// leaves less than the minimum (or the model does not reason, or the level is `off`) the call
/// goes without thinking.
fn thinking(model: &Model, max_tokens: u64, level: ThinkingLevel) -> Option<ThinkingConfig> {
    let budget = budget(level).min(max_tokens.saturating_sub(MIN_ANSWER_TOKENS));
    (model.reasoning && budget >= MIN_THINKING_BUDGET)
        .then_some(ThinkingConfig { kind: "enabled", budget_tokens: budget })
}

fn messages(request: &Request) -> Vec<WireMessage> {
    let mut out: Vec<WireMessage> = Vec::with_capacity(request.messages.len());
    for message in request.messages.iter() {
        let (role, blocks) = match message {
            Message::User(user) => (Role::User, user.content.iter().filter_map(user_block).collect()),
            Message::Assistant(assistant) => (Role::Assistant, assistant_blocks(assistant, &request.model)),
            Message::ToolResult(result) => (Role::User, vec![tool_result_block(result)]),
        };
        push(&mut out, role, blocks);
    }
    if let Some(last_user) = out.iter_mut().rev().find(|message| message.role == Role::User)
        && let Some(block) = last_user.content.last_mut()
    {
        set_cache_control(block, EPHEMERAL);
    }
    out
}

/// Appends to the previous message when it has the same role (tool results after tool results,
/// a user note after tool results), since the API merges them anyway and older versions refused
/// two in a row; an empty message is left out (the API rejects it).
fn push(out: &mut Vec<WireMessage>, role: Role, blocks: Vec<Block>) {
    if blocks.is_empty() {
        return;
    }
    match out.last_mut() {
        Some(last) if last.role == role => last.content.extend(blocks),
        _ => out.push(WireMessage { role, content: blocks }),
    }
}

/// Text and images; empty text is dropped because the API rejects empty text blocks.
fn user_block(block: &Content) -> Option<Block> {
    match block {
        Content::Text { text } if !text.is_empty() => Some(Block::Text { text: text.clone(), cache_control: None }),
        Content::Image { data, mime_type } => Some(Block::Image {
            source: ImageSource { kind: "base64", media_type: mime_type.clone(), data: data.clone() },
            cache_control: None,
        }),
        _ => None,
    }
}

/// Thinking goes back only to the model that wrote it and only when signed (the API verifies
/// signatures); redacted thinking goes back as the opaque block it came as.
fn assistant_blocks(message: &AssistantMessage, model: &Model) -> Vec<Block> {
    let same_model = message.provider == model.provider && message.model == model.id;
    message
        .content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } if !text.is_empty() => Some(Block::Text { text: text.clone(), cache_control: None }),
            Content::Thinking { thinking, signature: Some(signature) } if same_model && !signature.is_empty() => {
                Some(match signature.strip_prefix(REDACTED_THINKING_PREFIX) {
                    Some(data) => Block::RedactedThinking { data: data.to_string() },
                    None => Block::Thinking { thinking: thinking.clone(), signature: signature.clone() },
                })
            }
            Content::ToolCall(call) => Some(Block::ToolUse {
                id: call.id.clone(),
                name: call.name.clone(),
                input: input_object(&call.arguments),
            }),
            _ => None,
        })
        .collect()
}

/// `input` must be an object. Arguments that could not be parsed are kept as their raw text;
/// they go back as `{}` (the tool result that follows says what was wrong with them).
fn input_object(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => Value::Object(Default::default()),
        },
        _ => Value::Object(Default::default()),
    }
}

fn tool_result_block(result: &ToolResultMessage) -> Block {
    Block::ToolResult {
        tool_use_id: result.tool_call_id.clone(),
        content: result.content.iter().filter_map(user_block).collect(),
        is_error: result.is_error,
        cache_control: None,
    }
}

fn set_cache_control(block: &mut Block, value: CacheControl) {
    match block {
        Block::Text { cache_control, .. }
        | Block::Image { cache_control, .. }
        | Block::ToolResult { cache_control, .. } => *cache_control = Some(value),
        // Not in user messages; thinking blocks cannot carry a breakpoint.
        Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::ToolUse { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use serde_json::json;

    use super::*;
    use crate::message::{StopReason, ToolCall, UserMessage};
    use crate::model::Prices;

    fn model(reasoning: bool, max_output: u64) -> Model {
        Model {
            id: "claude-test".into(),
            provider: "anthropic".into(),
            base_url: "http://127.0.0.1:1".into(),
            context_window: 200_000,
            max_output,
            prices: Prices::default(),
            reasoning,
            compat: Default::default(),
        }
    }

    fn request(messages: Vec<Message>) -> Request {
        Request {
            model: model(false, 1000),
            system_prompt: String::new(),
            messages: messages.into(),
            tools: Vec::new().into(),
            max_tokens: None,
            thinking: None,
        }
    }

    fn assistant(provider: &str, content: Vec<Content>) -> Message {
        Message::Assistant(AssistantMessage {
            content,
            provider: provider.into(),
            model: "claude-test".into(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        })
    }

    /// The `messages` array, one compact JSON message per line.
    fn check_messages(request: &Request, expected: Expect) {
        let body = serde_json::to_value(messages_request(request)).unwrap();
        let lines: Vec<String> =
            body["messages"].as_array().unwrap().iter().map(|message| message.to_string()).collect();
        expected.assert_eq(&lines.join("\n"));
    }

    /// `max_tokens` and `thinking` of the body for a model (reasoning or not, its output limit)
    /// at each level, `None` (the default) first.
    fn check_thinking(reasoning: bool, max_output: u64, expected: Expect) {
        let levels = std::iter::once(None).chain(ThinkingLevel::ALL.map(Some));
        let lines: Vec<String> = levels
            .map(|level| {
                let request = Request { model: model(reasoning, max_output), thinking: level, ..request(Vec::new()) };
                let body = serde_json::to_value(messages_request(&request)).unwrap();
                let level = level.map_or("default", ThinkingLevel::as_str);
                format!("{level}: max_tokens={} thinking={}", body["max_tokens"], body["thinking"]["budget_tokens"])
            })
            .collect();
        expected.assert_eq(&lines.join("\n"));
    }

    #[test]
    fn thinking_levels_become_budgets_inside_max_tokens_or_no_thinking() {
        check_thinking(
            true,
            64_000,
            expect![[r#"
                default: max_tokens=64000 thinking=8192
                off: max_tokens=64000 thinking=null
                minimal: max_tokens=64000 thinking=1024
                low: max_tokens=64000 thinking=2048
                medium: max_tokens=64000 thinking=8192
                high: max_tokens=64000 thinking=16384
                xhigh: max_tokens=64000 thinking=32768"#]],
        );
        check_thinking(
            true,
            4096,
            expect![[r#"
                default: max_tokens=4096 thinking=3072
                off: max_tokens=4096 thinking=null
                minimal: max_tokens=4096 thinking=1024
                low: max_tokens=4096 thinking=2048
                medium: max_tokens=4096 thinking=3072
                high: max_tokens=4096 thinking=3072
                xhigh: max_tokens=4096 thinking=3072"#]],
        );
        check_thinking(
            true,
            2000,
            expect![[r#"
            default: max_tokens=2000 thinking=null
            off: max_tokens=2000 thinking=null
            minimal: max_tokens=2000 thinking=null
            low: max_tokens=2000 thinking=null
            medium: max_tokens=2000 thinking=null
            high: max_tokens=2000 thinking=null
            xhigh: max_tokens=2000 thinking=null"#]],
        );
        check_thinking(
            false,
            64_000,
            expect![[r#"
            default: max_tokens=64000 thinking=null
            off: max_tokens=64000 thinking=null
            minimal: max_tokens=64000 thinking=null
            low: max_tokens=64000 thinking=null
            medium: max_tokens=64000 thinking=null
            high: max_tokens=64000 thinking=null
            xhigh: max_tokens=64000 thinking=null"#]],
        );
    }

    #[test]
    fn thinking_goes_back_signed_to_the_same_model_only_and_redacted_as_data() {
        let thinking = vec![
            Content::Thinking { thinking: "unsigned".into(), signature: None },
            Content::Thinking { thinking: "signed".into(), signature: Some("sig".into()) },
            Content::Thinking { thinking: String::new(), signature: Some(format!("{REDACTED_THINKING_PREFIX}opaque")) },
            Content::text(""),
            Content::text("answer"),
        ];
        check_messages(
            &request(vec![
                Message::user("q"),
                assistant("anthropic", thinking.clone()),
                Message::user("again"),
                assistant("openai", thinking),
            ]),
            expect![[r#"
                {"role":"user","content":[{"type":"text","text":"q"}]}
                {"role":"assistant","content":[{"type":"thinking","thinking":"signed","signature":"sig"},{"type":"redacted_thinking","data":"opaque"},{"type":"text","text":"answer"}]}
                {"role":"user","content":[{"type":"text","text":"again","cache_control":{"type":"ephemeral"}}]}
                {"role":"assistant","content":[{"type":"text","text":"answer"}]}"#]],
        );
    }

    #[test]
    fn tool_results_merge_with_images_errors_and_a_following_user_note() {
        let image = Content::Image { data: "AAAA".into(), mime_type: "image/png".into() };
        let result = |id: &str, content: Vec<Content>, is_error: bool| {
            Message::ToolResult(ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "read".into(),
                content,
                is_error,
                details: None,
                timestamp: 0,
            })
        };
        check_messages(
            &request(vec![
                Message::User(UserMessage { content: vec![Content::text("look"), image.clone()], timestamp: 0 }),
                assistant(
                    "anthropic",
                    vec![
                        Content::ToolCall(ToolCall {
                            id: "t1".into(),
                            name: "read".into(),
                            arguments: json!({"p": 1}),
                        }),
                        Content::ToolCall(ToolCall { id: "t2".into(), name: "read".into(), arguments: json!("{bad") }),
                    ],
                ),
                result("t1", vec![Content::text("text"), image], false),
                result("t2", vec![Content::text("error: bad JSON")], true),
                Message::user("and then?"),
                assistant("anthropic", Vec::new()),
            ]),
            expect![[r#"
                {"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}
                {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{"p":1}},{"type":"tool_use","id":"t2","name":"read","input":{}}]}
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"text"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}],"is_error":false},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"error: bad JSON"}],"is_error":true},{"type":"text","text":"and then?","cache_control":{"type":"ephemeral"}}]}"#]],
        );
    }
}
