//! Translates a reins [`Request`] into a Chat Completions request body.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::{RawValue, to_raw_value};

use super::wire::{
    ArgumentsText, ChatRequest, ContentPart, ImageUrl, StreamOptions, UserContent, WireFunction, WireFunctionCall,
    WireMessage, WireTool, WireToolCall,
};
use crate::message::{AssistantMessage, Content, Message, ToolResultMessage};
use crate::model::ThinkingLevel;
use crate::provider::{Request, ToolSpec};

/// The parts of a client's last request body, kept so that the next one (the same conversation
/// with a few messages more) encodes only what is new: the whole conversation goes out on every
/// turn. Messages and tools are matched by address. The agent sends the messages of its last
/// request again as the same shared values, and these hold them, so no address is reused while
/// it is here.
#[derive(Default)]
pub struct Encoded {
    /// The system message, with the prompt and the role (`developer` or not) it was encoded with.
    system: Option<(String, bool, Box<RawValue>)>,
    /// Each message, in order, with its wire message (none for an empty answer, left out).
    messages: Vec<(Arc<Message>, Option<Box<RawValue>>)>,
    tools: Option<(Arc<Vec<ToolSpec>>, Box<RawValue>)>,
}

impl std::fmt::Debug for Encoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoded").field("messages", &self.messages.len()).finish_non_exhaustive()
    }
}

impl Encoded {
    /// Makes the parts `request`'s, encoding those the last request did not have.
    fn update(&mut self, request: &Request) -> serde_json::Result<()> {
        let developer = request.model.compat.developer_role;
        let same_system =
            matches!(&self.system, Some((prompt, role, _)) if *prompt == request.system_prompt && *role == developer);
        if request.system_prompt.is_empty() {
            self.system = None;
        } else if !same_system {
            let content = request.system_prompt.as_str();
            let message = if developer { WireMessage::Developer { content } } else { WireMessage::System { content } };
            self.system = Some((request.system_prompt.clone(), developer, to_raw_value(&message)?));
        }

        let mut last = std::mem::take(&mut self.messages).into_iter();
        let mut messages = Vec::with_capacity(request.messages.len());
        for message in request.messages.shared() {
            let kept = last.next().filter(|(sent, _)| Arc::ptr_eq(sent, message)).map(|(_, wire)| wire);
            let wire = match kept {
                Some(wire) => wire,
                None => encode_message(message)?,
            };
            messages.push((message.clone(), wire));
        }
        self.messages = messages;

        let same_tools = matches!(&self.tools, Some((tools, _)) if Arc::ptr_eq(tools, &request.tools));
        if request.tools.is_empty() {
            self.tools = None;
        } else if !same_tools {
            self.tools = Some((request.tools.clone(), to_raw_value(&wire_tools(&request.tools))?));
        }
        Ok(())
    }

    /// The user messages that carry the tool results' images, each with the index of the message
    /// it goes before: tool messages must follow their assistant message directly, and a `tool`
    /// message cannot carry an image, so the images wait until after the run of results.
    fn tool_images(&self) -> serde_json::Result<Vec<(usize, Box<RawValue>)>> {
        let mut images_at = Vec::new();
        let mut pending: Vec<ContentPart> = Vec::new();
        for (index, (message, _)) in self.messages.iter().enumerate() {
            match &**message {
                Message::ToolResult(result) => pending.extend(result.content.iter().filter_map(image_part)),
                _ if !pending.is_empty() => {
                    images_at.push((index, to_raw_value(&images_message(std::mem::take(&mut pending)))?));
                }
                _ => {}
            }
        }
        if !pending.is_empty() {
            images_at.push((self.messages.len(), to_raw_value(&images_message(pending))?));
        }
        Ok(images_at)
    }

    /// The body's messages in order: the system message, then each message's, with the images'
    /// messages where they go.
    fn wire_messages<'a>(&'a self, images_at: &'a [(usize, Box<RawValue>)]) -> Vec<&'a RawValue> {
        let mut out = Vec::with_capacity(self.messages.len() + images_at.len() + 1);
        out.extend(self.system.as_ref().map(|(_, _, wire)| &**wire));
        let mut images = images_at.iter().peekable();
        for (index, (_, wire)) in self.messages.iter().enumerate() {
            while let Some((_, message)) = images.next_if(|(at, _)| *at == index) {
                out.push(&**message);
            }
            out.extend(wire.as_deref());
        }
        out.extend(images.map(|(_, message)| &**message));
        out
    }
}

/// The streaming request body for `request`. `encoded` holds the last body's parts, and then
/// this one's (see [`Encoded`]); an empty one encodes everything.
/// The output limit is always sent (from the model's entry unless the request sets one): a
/// server left to its own default may stream without end. The thinking level goes as
/// `reasoning_effort` only to a reasoning model whose entry lists the values it takes (clamped to
/// the nearest of them); `off`, or no level, sends nothing and leaves the server's default.
pub fn chat_body(request: &Request, encoded: &mut Encoded) -> serde_json::Result<Vec<u8>> {
    encoded.update(request)?;
    let images_at = encoded.tool_images()?;
    let compat = &request.model.compat;
    let output_limit = Some(request.output_limit()).filter(|&tokens| tokens > 0);
    let body = ChatRequest {
        model: &request.model.id,
        messages: encoded.wire_messages(&images_at),
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        max_tokens: output_limit.filter(|_| !compat.max_completion_tokens),
        max_completion_tokens: output_limit.filter(|_| compat.max_completion_tokens),
        tools: encoded.tools.as_ref().map(|(_, wire)| &**wire),
        reasoning_effort: request
            .thinking
            .filter(|_| request.model.reasoning)
            .and_then(|level| compat.reasoning_effort.clamp(level))
            .map(ThinkingLevel::as_str),
    };
    // Sized once: the parts are encoded already, and growing the body from nothing copies a
    // long conversation over and over.
    let parts: usize = body.messages.iter().map(|message| message.get().len() + 1).sum::<usize>()
        + body.tools.map_or(0, |tools| tools.get().len());
    let mut bytes = Vec::with_capacity(parts + 256);
    serde_json::to_writer(&mut bytes, &body)?;
    Ok(bytes)
}

fn wire_tools(tools: &[ToolSpec]) -> Vec<WireTool<'_>> {
    tools
        .iter()
        .map(|tool| WireTool {
            kind: "function",
            function: WireFunction { name: &tool.name, description: &tool.description, parameters: &tool.parameters },
        })
        .collect()
}

/// A message's wire message, borrowing its text until it is written; `None` for an empty answer.
fn encode_message(message: &Message) -> serde_json::Result<Option<Box<RawValue>>> {
    match message {
        Message::User(user) => to_raw_value(&WireMessage::User { content: user_content(&user.content) }).map(Some),
        Message::Assistant(assistant) => assistant_message(assistant).map(|wire| to_raw_value(&wire)).transpose(),
        Message::ToolResult(result) => to_raw_value(&tool_message(result)).map(Some),
    }
}

fn user_content(content: &[Content]) -> UserContent<'_> {
    if content.iter().all(|block| matches!(block, Content::Text { .. })) {
        return UserContent::Text(joined_text(content));
    }
    let parts = content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } => Some(ContentPart::Text { text: Cow::Borrowed(text) }),
            Content::Image { .. } => image_part(block),
            Content::Thinking { .. } | Content::ToolCall(_) => None,
        })
        .collect();
    UserContent::Parts(parts)
}

/// `None` for a message with nothing to send back (an aborted or failed empty answer), which
/// some servers would reject.
fn assistant_message(message: &AssistantMessage) -> Option<WireMessage<'_>> {
    let text = joined_text(&message.content);
    let tool_calls: Vec<WireToolCall> = message
        .tool_calls()
        .map(|call| WireToolCall {
            id: &call.id,
            kind: "function",
            function: WireFunctionCall { name: &call.name, arguments: arguments_text(&call.arguments) },
        })
        .collect();
    if text.is_empty() && tool_calls.is_empty() {
        return None;
    }
    // Thinking blocks are not sent back: Chat Completions has no field for them.
    Some(WireMessage::Assistant { content: (!text.is_empty()).then_some(text), tool_calls })
}

/// Arguments that could not be parsed are kept as the raw string; they go back as they came.
fn arguments_text(arguments: &Value) -> ArgumentsText<'_> {
    match arguments {
        Value::String(raw) => ArgumentsText::Raw(raw),
        other => ArgumentsText::Json(other),
    }
}

/// A `tool` message carries one string: the result's text blocks (an MCP server's several
/// paragraphs, with its images between them) are joined with a blank line, so they do not run
/// together.
fn tool_message(result: &ToolResultMessage) -> WireMessage<'_> {
    WireMessage::Tool { tool_call_id: &result.tool_call_id, content: joined_with(&result.content, "\n\n") }
}

fn images_message(images: Vec<ContentPart<'_>>) -> WireMessage<'_> {
    let mut parts = vec![ContentPart::Text { text: Cow::Borrowed("Images from the tool results above:") }];
    parts.extend(images);
    WireMessage::User { content: UserContent::Parts(parts) }
}

fn image_part(block: &Content) -> Option<ContentPart<'_>> {
    match block {
        Content::Image { data, mime_type } => {
            Some(ContentPart::ImageUrl { image_url: ImageUrl { url: format!("data:{mime_type};base64,{data}") } })
        }
        _ => None,
    }
}

/// The text blocks as one string: borrowed when there is one (the usual case), joined otherwise.
fn joined_text(content: &[Content]) -> Cow<'_, str> {
    joined_with(content, "")
}

fn joined_with<'a>(content: &'a [Content], separator: &str) -> Cow<'a, str> {
    let mut texts = content.iter().filter_map(|block| match block {
        Content::Text { text } => Some(text.as_str()),
        _ => None,
    });
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(only), None) => Cow::Borrowed(only),
        (Some(first), Some(second)) => {
            let mut joined = format!("{first}{separator}{second}");
            texts.for_each(|text| {
                joined.push_str(separator);
                joined.push_str(text);
            });
            Cow::Owned(joined)
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;
    use crate::message::{StopReason, ToolCall, UserMessage};
    use crate::model::{Model, Prices};
    use crate::provider::ToolSpec;

    fn model() -> Model {
        Model {
            id: "gpt-test".into(),
            provider: "openai".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            context_window: 1000,
            max_output: 100,
            prices: Prices::default(),
            reasoning: false,
            compat: Default::default(),
        }
    }

    fn assistant(content: Vec<Content>) -> Message {
        Message::Assistant(AssistantMessage {
            content,
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        })
    }

    fn tool_result(id: &str, content: Vec<Content>) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content,
            is_error: false,
            details: None,
            timestamp: 0,
        })
    }

    fn body(request: &Request) -> String {
        let body = chat_body(request, &mut Encoded::default()).unwrap();
        serde_json::to_string_pretty(&serde_json::from_slice::<Value>(&body).unwrap()).unwrap()
    }

    #[test]
    fn body_has_system_user_assistant_tool_messages_tools_and_stream_options() {
        let request = Request {
            model: model(),
            system_prompt: "You are terse.".into(),
            messages: vec![
                Message::user("read a.txt"),
                assistant(vec![
                    Content::Thinking { thinking: "not sent".into(), signature: None },
                    Content::text("Reading."),
                    Content::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a.txt"}),
                    }),
                    Content::ToolCall(ToolCall { id: "c2".into(), name: "read".into(), arguments: json!("{bad") }),
                ]),
                tool_result("c1", vec![Content::text("hello")]),
                tool_result("c2", vec![Content::text("error: bad JSON")]),
            ]
            .into(),
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Read a file".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }]
            .into(),
            max_tokens: Some(64),
            thinking: None,
        };
        expect![[r#"
            {
              "model": "gpt-test",
              "messages": [
                {
                  "role": "system",
                  "content": "You are terse."
                },
                {
                  "role": "user",
                  "content": "read a.txt"
                },
                {
                  "role": "assistant",
                  "content": "Reading.",
                  "tool_calls": [
                    {
                      "id": "c1",
                      "type": "function",
                      "function": {
                        "name": "read",
                        "arguments": "{\"path\":\"a.txt\"}"
                      }
                    },
                    {
                      "id": "c2",
                      "type": "function",
                      "function": {
                        "name": "read",
                        "arguments": "{bad"
                      }
                    }
                  ]
                },
                {
                  "role": "tool",
                  "tool_call_id": "c1",
                  "content": "hello"
                },
                {
                  "role": "tool",
                  "tool_call_id": "c2",
                  "content": "error: bad JSON"
                }
              ],
              "stream": true,
              "stream_options": {
                "include_usage": true
              },
              "max_tokens": 64,
              "tools": [
                {
                  "type": "function",
                  "function": {
                    "name": "read",
                    "description": "Read a file",
                    "parameters": {
                      "type": "object",
                      "properties": {
                        "path": {
                          "type": "string"
                        }
                      }
                    }
                  }
                }
              ]
            }"#]]
        .assert_eq(&body(&request));
    }

    #[test]
    fn images_become_parts_and_tool_images_follow_the_tool_messages() {
        let image = Content::Image { data: "AAAA".into(), mime_type: "image/png".into() };
        let request = Request {
            model: model(),
            system_prompt: String::new(),
            messages: vec![
                Message::User(UserMessage {
                    content: vec![Content::text("what is this?"), image.clone()],
                    timestamp: 0,
                }),
                assistant(vec![Content::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({}),
                })]),
                // A tool's text blocks are paragraphs: a blank line between them.
                tool_result("c1", vec![Content::text("A tiny image:"), image, Content::text("The image above.")]),
                assistant(vec![]), // an empty failed answer is left out
            ]
            .into(),
            tools: Vec::new().into(),
            max_tokens: None,
            thinking: None,
        };
        let value: Value = serde_json::from_str(&body(&request)).unwrap();
        expect![[r#"[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"A tiny image:\n\nThe image above."},{"role":"user","content":[{"type":"text","text":"Images from the tool results above:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]"#]]
        .assert_eq(&value["messages"].to_string());
        assert!(value.get("tools").is_none());
        // Without a limit of its own, the request takes the model's.
        assert_eq!(value["max_tokens"], json!(request.model.max_output));
    }

    #[test]
    fn a_body_built_on_the_last_one_equals_one_built_afresh() {
        let image = Content::Image { data: "AAAA".into(), mime_type: "image/png".into() };
        let call = |id: &str| {
            assistant(vec![Content::ToolCall(ToolCall { id: id.into(), name: "read".into(), arguments: json!({}) })])
        };
        let first: Vec<Arc<Message>> =
            vec![Message::user("look"), call("c1"), tool_result("c1", vec![Content::text("seen"), image.clone()])]
                .into_iter()
                .map(Arc::new)
                .collect();
        let tools: Arc<Vec<ToolSpec>> =
            Arc::new(vec![ToolSpec { name: "read".into(), description: "Read".into(), parameters: json!({}) }]);
        let request = |messages: Vec<Arc<Message>>, system: &str, tools: Arc<Vec<ToolSpec>>| Request {
            model: model(),
            system_prompt: system.into(),
            messages: messages.into(),
            tools,
            max_tokens: None,
            thinking: None,
        };
        fn check(request: Request, encoded: &mut Encoded) {
            let built_on = chat_body(&request, encoded).unwrap();
            let afresh = chat_body(&request, &mut Encoded::default()).unwrap();
            assert_eq!(String::from_utf8(built_on).unwrap(), String::from_utf8(afresh).unwrap());
        }
        let mut encoded = Encoded::default();
        check(request(first.clone(), "Be brief.", tools.clone()), &mut encoded);
        // The same messages and a new one: the images now go before it.
        let mut grown = first.clone();
        grown.push(Arc::new(Message::user("and now?")));
        check(request(grown.clone(), "Be brief.", tools.clone()), &mut encoded);
        // A message replaced where it stood (as compaction does), another prompt, other tools.
        let mut replaced = grown.clone();
        replaced[1] = Arc::new(call("c9"));
        let other_tools =
            Arc::new(vec![ToolSpec { name: "ls".into(), description: "List".into(), parameters: json!({}) }]);
        check(request(replaced.clone(), "Be terse.", other_tools), &mut encoded);
        check(request(replaced[..2].to_vec(), "", Arc::new(Vec::new())), &mut encoded);
        check(request(first.clone(), "Be brief.", tools.clone()), &mut encoded);

        // A message sent before goes out as it was encoded then, not encoded again: a marked
        // encoding of the first message shows in the next body.
        let marked = r#"{"role":"user","content":"as encoded before"}"#;
        encoded.messages[0].1 = Some(RawValue::from_string(marked.to_string()).unwrap());
        let body = chat_body(&request(grown, "Be brief.", tools), &mut encoded).unwrap();
        assert!(String::from_utf8(body).unwrap().contains(marked));
    }

    #[test]
    fn compat_renames_the_system_role_and_the_output_limit() {
        let mut request = Request {
            model: model(),
            system_prompt: "Be brief.".into(),
            messages: vec![Message::user("hi")].into(),
            tools: Vec::new().into(),
            // The model's own limit (100) is sent, under the name the model takes.
            max_tokens: None,
            thinking: None,
        };
        request.model.compat =
            crate::model::Compat { developer_role: true, max_completion_tokens: true, ..Default::default() };
        let value: Value = serde_json::from_str(&body(&request)).unwrap();
        expect![[r#"{"role":"developer","content":"Be brief."}"#]].assert_eq(&value["messages"][0].to_string());
        assert_eq!((value.get("max_tokens"), value["max_completion_tokens"].as_u64()), (None, Some(100)));
    }

    #[test]
    fn reasoning_effort_goes_clamped_to_reasoning_models_that_take_it() {
        use crate::model::{Efforts, ThinkingLevel::*};
        let effort = |reasoning: bool, efforts: Efforts, thinking: Option<ThinkingLevel>| {
            let mut request = Request {
                model: model(),
                system_prompt: String::new(),
                messages: vec![Message::user("hi")].into(),
                tools: Vec::new().into(),
                max_tokens: None,
                thinking,
            };
            request.model.reasoning = reasoning;
            request.model.compat.reasoning_effort = efforts;
            let value: Value = serde_json::from_str(&body(&request)).unwrap();
            value.get("reasoning_effort").map(|effort| effort.as_str().unwrap().to_string())
        };
        assert_eq!(effort(true, Efforts::LOW_TO_HIGH, Some(Minimal)).as_deref(), Some("low"));
        assert_eq!(effort(true, Efforts::MINIMAL_TO_HIGH, Some(Minimal)).as_deref(), Some("minimal"));
        assert_eq!(effort(true, Efforts::LOW_TO_HIGH, Some(XHigh)).as_deref(), Some("high"));
        assert_eq!(effort(true, Efforts::LOW_TO_HIGH, Some(Off)), None);
        assert_eq!(effort(true, Efforts::LOW_TO_HIGH, None), None, "no level: the server's default");
        assert_eq!(effort(true, Efforts::NONE, Some(High)), None, "the entry lists no efforts");
        assert_eq!(effort(false, Efforts::LOW_TO_HIGH, Some(High)), None, "not a reasoning model");
    }
}
