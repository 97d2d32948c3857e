//! A `tools/call` result as the model reads it: text stays text, images stay images, what the
//! model cannot take (audio, binary resources) is described in a line, structured content is
//! rendered as JSON text when the blocks do not already say it (never with base64 data), and
//! `isError: true` becomes an error result.

use reins_agent::{ToolError, ToolOutput};
use reins_ai::Content;
use rmcp::model::{ContentBlock, ResourceContents};
use serde_json::{Value, json};

/// The tool result of a call to `tool` of `server`, from the `tools/call` result as JSON: a
/// block reins cannot read is described rather than failing the whole result.
pub(crate) fn tool_output(server: &str, tool: &str, result: &Value) -> Result<ToolOutput, ToolError> {
    let blocks = match result.get("content") {
        Some(Value::Array(blocks)) => blocks.as_slice(),
        None | Some(Value::Null) => &[],
        Some(_) => {
            return Err(ToolError::new(format!(
                "the MCP server `{server}` answered with a malformed result: `content` is not a list"
            )));
        }
    };
    let mut content: Vec<Content> = blocks.iter().filter_map(convert_json).collect();
    if let Some(structured) = result.get("structuredContent").filter(|value| !value.is_null())
        && !carried(structured, blocks, &content)
    {
        let mut structured = structured.clone();
        hide_base64(&mut structured);
        let text = serde_json::to_string_pretty(&structured).unwrap_or_else(|_| structured.to_string());
        content.push(Content::text(text));
    }
    if result.get("isError") == Some(&Value::Bool(true)) {
        let texts: Vec<&str> = content
            .iter()
            .filter_map(|block| match block {
                Content::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let message = if texts.is_empty() {
            format!("the MCP tool `{tool}` of server `{server}` reported an error without a message")
        } else {
            texts.join("\n")
        };
        return Err(ToolError::new(message));
    }
    if content.is_empty() {
        content.push(Content::text("(the tool returned no content)"));
    }
    Ok(ToolOutput { content, details: Some(json!({"mcp": {"server": server, "tool": tool}})), todos: None })
}

/// Whether the content blocks already say what `structured` says, so that it need not be sent
/// again: servers should put it in a text block as JSON (the spec asks them to), and many say it
/// in their own words or repeat the blocks themselves (server-filesystem's `read_text_file`
/// gives `{"content": TEXT}`, its `read_media_file` `{"content": [BLOCKS]}`). It is carried
/// when a text block is its JSON, or when each of its values is: a block itself, or a string or
/// number found in the text.
fn carried(structured: &Value, blocks: &[Value], content: &[Content]) -> bool {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if texts.iter().any(|text| serde_json::from_str::<Value>(text).is_ok_and(|parsed| parsed == *structured)) {
        return true;
    }
    values_carried(structured, blocks, &texts.join("\n"))
}

fn values_carried(value: &Value, blocks: &[Value], text: &str) -> bool {
    if blocks.contains(value) {
        return true;
    }
    match value {
        Value::Object(map) => map.values().all(|value| values_carried(value, blocks, text)),
        Value::Array(items) => items.iter().all(|value| values_carried(value, blocks, text)),
        Value::String(string) => text.contains(string.as_str()),
        Value::Number(number) => text.contains(&number.to_string()),
        Value::Bool(flag) => text.contains(&flag.to_string()),
        Value::Null => true,
    }
}

/// The shortest string taken for base64 data rather than words.
const BASE64_MIN: usize = 256;

/// Replaces each string of `value` that is base64 data with a line saying how much it was: the
/// model cannot read it, and it would cost more than everything else in the result.
fn hide_base64(value: &mut Value) {
    match value {
        Value::String(string) if looks_like_base64(string) => {
            *string = format!("[{} of base64 data not shown to the model]", size(string));
        }
        Value::Object(map) => map.values_mut().for_each(hide_base64),
        Value::Array(items) => items.iter_mut().for_each(hide_base64),
        _ => {}
    }
}

fn looks_like_base64(text: &str) -> bool {
    text.len() >= BASE64_MIN
        && text.trim_end_matches('=').bytes().all(|byte| byte.is_ascii_alphanumeric() || b"+/-_".contains(&byte))
}

/// One content block; empty text is left out.
fn convert_json(block: &Value) -> Option<Content> {
    match serde_json::from_value::<ContentBlock>(block.clone()) {
        Ok(ContentBlock::Text(text)) if text.text.is_empty() => None,
        Ok(block) => Some(convert(block)),
        Err(_) => {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("(none)");
            Some(Content::text(format!("[a content block of type `{kind}` that reins cannot show]")))
        }
    }
}

fn convert(block: ContentBlock) -> Content {
    match block {
        ContentBlock::Text(text) => Content::text(text.text),
        ContentBlock::Image(image) => Content::Image { data: image.data, mime_type: image.mime_type },
        ContentBlock::Audio(audio) => {
            Content::text(format!("[audio ({}), {} not shown to the model]", audio.mime_type, size(&audio.data)))
        }
        ContentBlock::Resource(embedded) => resource_contents(embedded.resource),
        ContentBlock::ResourceLink(link) => {
            let mut line = format!("[resource link {}: {}", link.uri, link.name);
            if let Some(description) = link.description.filter(|text| !text.is_empty()) {
                line.push_str(&format!(" — {description}"));
            }
            if let Some(mime) = link.mime_type {
                line.push_str(&format!(" ({mime})"));
            }
            line.push(']');
            Content::text(line)
        }
        other => Content::text(format!("[a content block reins cannot show: {}]", kind_of(&other))),
    }
}

/// A resource's contents: text as text, an image as an image, other binary data as a line.
pub(crate) fn resource_contents(contents: ResourceContents) -> Content {
    match contents {
        ResourceContents::TextResourceContents { uri, text, .. } => Content::text(format!("[resource {uri}]\n{text}")),
        ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => match mime_type {
            Some(mime) if mime.starts_with("image/") => Content::Image { data: blob, mime_type: mime },
            mime => Content::text(format!(
                "[resource {uri} ({}), {} of binary data not shown to the model]",
                mime.as_deref().unwrap_or("no type given"),
                size(&blob)
            )),
        },
        _ => Content::text("[resource contents of a kind reins cannot show]"),
    }
}

/// A block's `type`, for the line that stands for it.
fn kind_of(block: &ContentBlock) -> String {
    serde_json::to_value(block)
        .ok()
        .and_then(|value| value.get("type").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| "(none)".to_string())
}

/// The size of base64 data once decoded, for a person.
fn size(base64: &str) -> String {
    let bytes = base64.trim_end_matches('=').len() * 3 / 4;
    if bytes < 1024 { format!("{bytes} bytes") } else { format!("{} KiB", bytes / 1024) }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    /// The blocks as one-line JSON in the pi agent's shape (the core types carry no serde).
    fn blocks(blocks: &[Content]) -> String {
        let quoted = |text: &str| Value::from(text).to_string();
        let blocks: Vec<String> = blocks
            .iter()
            .map(|block| match block {
                Content::Text { text } => format!(r#"{{"type":"text","text":{}}}"#, quoted(text)),
                Content::Image { data, mime_type } => {
                    format!(r#"{{"type":"image","data":{},"mimeType":{}}}"#, quoted(data), quoted(mime_type))
                }
                other => format!("{other:?}"),
            })
            .collect();
        format!("[{}]", blocks.join(","))
    }

    fn check(result: Value, expected: Expect) {
        let rendered = match tool_output("everything", "t", &result) {
            Ok(output) => blocks(&output.content),
            Err(err) => format!("error: {err}"),
        };
        expected.assert_eq(&rendered);
    }

    #[test]
    fn text_and_images() {
        check(
            json!({"content": [{"type": "text", "text": "A tiny image:"},
                               {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]}),
            expect![[
                r#"[{"type":"text","text":"A tiny image:"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]"#
            ]],
        );
    }

    #[test]
    fn is_error_becomes_an_error_result() {
        check(
            json!({"content": [{"type": "text", "text": "Invalid arguments: a must be a number"}], "isError": true}),
            expect!["error: Invalid arguments: a must be a number"],
        );
        check(
            json!({"content": [], "isError": true}),
            expect!["error: the MCP tool `t` of server `everything` reported an error without a message"],
        );
    }

    #[test]
    fn structured_content_is_json_text_unless_repeated() {
        check(
            json!({"content": [], "structuredContent": {"temperature": 22.5, "conditions": "Sunny"}}),
            expect![[r#"[{"type":"text","text":"{\n  \"temperature\": 22.5,\n  \"conditions\": \"Sunny\"\n}"}]"#]],
        );
        check(
            json!({"content": [{"type": "text", "text": "{\"temperature\": 22.5}"}],
                   "structuredContent": {"temperature": 22.5}}),
            expect![[r#"[{"type":"text","text":"{\"temperature\": 22.5}"}]"#]],
        );
        // Said in words, not as JSON: still said.
        check(
            json!({"content": [{"type": "text", "text": "Sunny, 22.5 degrees"}],
                   "structuredContent": {"temperature": 22.5, "conditions": "Sunny"}}),
            expect![[r#"[{"type":"text","text":"Sunny, 22.5 degrees"}]"#]],
        );
        // Something the text leaves out: the whole structure follows.
        check(
            json!({"content": [{"type": "text", "text": "Sunny"}],
                   "structuredContent": {"temperature": 22.5, "conditions": "Sunny"}}),
            expect![[
                r#"[{"type":"text","text":"Sunny"},{"type":"text","text":"{\n  \"temperature\": 22.5,\n  \"conditions\": \"Sunny\"\n}"}]"#
            ]],
        );
    }

    #[test]
    fn structured_content_that_repeats_the_blocks_is_not_sent_twice() {
        // server-filesystem's read_text_file and read_media_file.
        check(
            json!({"content": [{"type": "text", "text": "alpha line\n"}], "structuredContent": {"content": "alpha line\n"}}),
            expect![[r#"[{"type":"text","text":"alpha line\n"}]"#]],
        );
        let png = json!({"type": "image", "data": "iVBORw0KGgowMDAw", "mimeType": "image/png"});
        check(
            json!({"content": [png], "structuredContent": {"content": [png]}}),
            expect![[r#"[{"type":"image","data":"iVBORw0KGgowMDAw","mimeType":"image/png"}]"#]],
        );
        let blob = json!({"type": "resource", "resource": {"uri": "file:///w/b.bin", "mimeType": "application/octet-stream", "blob": "QUJD".repeat(1000)}});
        check(
            json!({"content": [blob], "structuredContent": {"content": [blob]}}),
            expect![[
                r#"[{"type":"text","text":"[resource file:///w/b.bin (application/octet-stream), 2 KiB of binary data not shown to the model]"}]"#
            ]],
        );
    }

    #[test]
    fn base64_in_structured_content_is_never_text() {
        check(
            json!({"content": [{"type": "text", "text": "the file"}],
                   "structuredContent": {"name": "b.bin", "data": "QUJD".repeat(1000)}}),
            expect![[
                r#"[{"type":"text","text":"the file"},{"type":"text","text":"{\n  \"name\": \"b.bin\",\n  \"data\": \"[2 KiB of base64 data not shown to the model]\"\n}"}]"#
            ]],
        );
    }

    #[test]
    fn resources_audio_and_links_are_described() {
        check(
            json!({"content": [
                {"type": "resource", "resource": {"uri": "demo://text/1", "mimeType": "text/plain", "text": "hello"}},
                {"type": "resource", "resource": {"uri": "demo://blob/1", "mimeType": "application/gzip", "blob": "AAAAAAAA"}},
                {"type": "resource", "resource": {"uri": "demo://img", "mimeType": "image/png", "blob": "iVBO"}},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "demo://x", "name": "x.txt", "description": "a file", "mimeType": "text/plain"}
            ]}),
            expect![[
                r#"[{"type":"text","text":"[resource demo://text/1]\nhello"},{"type":"text","text":"[resource demo://blob/1 (application/gzip), 6 bytes of binary data not shown to the model]"},{"type":"image","data":"iVBO","mimeType":"image/png"},{"type":"text","text":"[audio (audio/wav), 3 bytes not shown to the model]"},{"type":"text","text":"[resource link demo://x: x.txt — a file (text/plain)]"}]"#
            ]],
        );
    }

    #[test]
    fn nothing_at_all_says_so() {
        check(json!({"content": []}), expect![[r#"[{"type":"text","text":"(the tool returned no content)"}]"#]]);
        check(json!({}), expect![[r#"[{"type":"text","text":"(the tool returned no content)"}]"#]]);
    }

    #[test]
    fn unknown_blocks_are_described_and_bad_content_is_an_error() {
        check(
            json!({"content": [{"type": "text", "text": "ok"}, {"type": "hologram", "data": 1}]}),
            expect![[
                r#"[{"type":"text","text":"ok"},{"type":"text","text":"[a content block of type `hologram` that reins cannot show]"}]"#
            ]],
        );
        check(
            json!({"content": "nope"}),
            expect!["error: the MCP server `everything` answered with a malformed result: `content` is not a list"],
        );
    }
}
