//! A session's branch as a page to read or share, as pi's `--export`: the messages, tool calls
//! folded, diff lines coloured, the usage. HTML is one standalone file — its style inline, no
//! script, nothing loaded from the network — and everything from the session is escaped, since
//! a model, a tool or a file wrote it.

use reins_ai::{Content, Message, Usage};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Html,
    Markdown,
}

impl ExportFormat {
    /// `html` or `md` (`markdown`), or a path's extension.
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "html" | "htm" => Some(Self::Html),
            "md" | "markdown" => Some(Self::Markdown),
            _ => None,
        }
    }
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;\
color:#222;background:#fff}.msg{border-left:4px solid #ccc;margin:1rem 0;padding:.2rem 1rem}\
.user{border-color:#36c}.assistant{border-color:#393}.tool{border-color:#999}\
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem;overflow-x:auto}\
.add{color:#060;background:#e6ffe6}.del{color:#900;background:#ffe6e6}.error{color:#900}\
details summary{cursor:pointer;color:#555}.usage{color:#555;font-size:.9em}";

/// The page of `messages` (a branch, root first) titled `title`.
pub fn render(title: &str, messages: &[Message], format: ExportFormat) -> String {
    match format {
        ExportFormat::Html => html(title, messages),
        ExportFormat::Markdown => markdown(title, messages),
    }
}

fn html(title: &str, messages: &[Message]) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(title),
        escape(title)
    );
    for message in messages {
        match message {
            Message::User(user) => {
                out.push_str("<div class=\"msg user\"><h3>You</h3>\n");
                for block in &user.content {
                    out.push_str(&html_block(block));
                }
                out.push_str("</div>\n");
            }
            Message::Assistant(assistant) => {
                out.push_str(&format!("<div class=\"msg assistant\"><h3>{}</h3>\n", escape(&assistant.model)));
                for block in &assistant.content {
                    out.push_str(&html_block(block));
                }
                if let Some(error) = &assistant.error {
                    out.push_str(&format!("<p class=\"error\">{}</p>\n", escape(&error.to_string())));
                }
                out.push_str("</div>\n");
            }
            Message::ToolResult(result) => {
                let text = text_of(&result.content);
                let class = if result.is_error { "msg tool error" } else { "msg tool" };
                out.push_str(&format!(
                    "<div class=\"{class}\"><details><summary>{} result ({} lines)</summary>\n<pre>{}</pre></details></div>\n",
                    escape(&result.tool_name),
                    text.lines().count(),
                    diff_lines(&text)
                ));
            }
        }
    }
    out.push_str(&format!("<p class=\"usage\">{}</p>\n</body>\n</html>\n", escape(&usage_line(messages))));
    out
}

fn html_block(block: &Content) -> String {
    match block {
        Content::Text { text } => format!("<pre>{}</pre>\n", escape(text)),
        Content::Thinking { thinking, .. } => {
            format!("<details><summary>Thinking</summary>\n<pre>{}</pre></details>\n", escape(thinking))
        }
        Content::ToolCall(call) => {
            let arguments = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
            format!(
                "<details><summary>{} call</summary>\n<pre>{}</pre></details>\n",
                escape(&call.name),
                diff_lines(&arguments)
            )
        }
        Content::Image { mime_type, .. } => format!("<p>[image: {}]</p>\n", escape(mime_type)),
    }
}

/// Escaped text whose diff lines (`+…`, `-…`) are coloured.
fn diff_lines(text: &str) -> String {
    text.lines()
        .map(|line| {
            let class = match line.trim_start_matches(['"', ' ']).chars().next() {
                Some('+') if !line.starts_with("+++") => Some("add"),
                Some('-') if !line.starts_with("---") => Some("del"),
                _ => None,
            };
            match class {
                Some(class) => format!("<span class=\"{class}\">{}</span>", escape(line)),
                None => escape(line),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn markdown(title: &str, messages: &[Message]) -> String {
    let fence = |text: &str| {
        let ticks = "`".repeat(longest_backtick_run(text).max(2) + 1);
        format!("{ticks}\n{text}\n{ticks}\n")
    };
    let mut out = format!("# {}\n\n", title.replace('\n', " "));
    for message in messages {
        match message {
            // Every block ends with a blank line: a heading, a rule or a fence right under a
            // line of text would run into it (`text` then `---` is a heading in Markdown).
            Message::User(user) => out.push_str(&format!("## You\n\n{}\n\n", text_of(&user.content).trim_end())),
            Message::Assistant(assistant) => {
                out.push_str(&format!("## {}\n\n", escape(&assistant.model.replace('\n', " "))));
                for block in &assistant.content {
                    match block {
                        Content::Text { text } => out.push_str(&format!("{}\n\n", text.trim_end())),
                        Content::Thinking { thinking, .. } => out.push_str(&format!(
                            "<details><summary>Thinking</summary>\n\n{}</details>\n\n",
                            fence(thinking)
                        )),
                        Content::ToolCall(call) => out.push_str(&format!(
                            "<details><summary>{} call</summary>\n\n{}</details>\n\n",
                            escape(&call.name),
                            fence(&serde_json::to_string_pretty(&call.arguments).unwrap_or_default())
                        )),
                        Content::Image { .. } => out.push_str("[image]\n\n"),
                    }
                }
            }
            Message::ToolResult(result) => out.push_str(&format!(
                "<details><summary>{} result</summary>\n\n{}</details>\n\n",
                escape(&result.tool_name),
                fence(&text_of(&result.content))
            )),
        }
    }
    out.push_str(&format!("---\n{}\n", usage_line(messages)));
    out
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

fn text_of(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the branch's model calls used and cost.
fn usage_line(messages: &[Message]) -> String {
    let mut total = Usage::default();
    let mut calls = 0;
    for message in messages {
        if let Message::Assistant(assistant) = message {
            calls += 1;
            total.input += assistant.usage.input;
            total.output += assistant.usage.output;
            total.cache_read += assistant.usage.cache_read;
            total.cache_write += assistant.usage.cache_write;
            total.cost.total += assistant.usage.cost.total;
        }
    }
    format!(
        "{calls} model calls: {} input tokens, {} output, {} read from cache, {} written to it; ${:.4}",
        total.input, total.output, total.cache_read, total.cache_write, total.cost.total
    )
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters (a terminal's escape sequences) are shown, not passed on.
            c if c.is_control() && c != '\n' && c != '\t' => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    use reins_ai::{AssistantMessage, ToolCall, ToolResultMessage};

    use super::*;

    fn session() -> Vec<Message> {
        vec![
            Message::user("<script>alert(1)</script> fix it"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    Content::text("<img src=\"https://evil.example/x.png\">"),
                    Content::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "edit".into(),
                        arguments: serde_json::json!({"path": "a.rs", "oldText": "a", "newText": "b"}),
                    }),
                ],
                model: "m</h3><script>".into(),
                ..AssistantMessage::default()
            }),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "c1".into(),
                tool_name: "edit".into(),
                content: vec![Content::text("-a\n+b\n\u{1b}[31mred")],
                is_error: false,
                details: None,
                timestamp: 0,
            }),
        ]
    }

    #[test]
    fn html_is_standalone_escaped_and_folds_tool_calls() {
        let page = render("Session <1>", &session(), ExportFormat::Html);
        assert!(!page.contains("<script>") && !page.contains("<img"), "{page}");
        // Nothing is loaded: the URL in the message is text.
        for load in ["src=\"", "href=\"", "url(", "@import", "<link", "<iframe"] {
            assert!(!page.contains(load), "{load} in {page}");
        }
        assert!(page.contains("&lt;img src=&quot;https://evil.example/x.png&quot;&gt;"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("<span class=\"del\">-a</span>\n<span class=\"add\">+b</span>"), "{page}");
        assert!(page.contains("\\u{1b}[31mred") && !page.contains('\u{1b}'));
        assert!(page.contains("<details><summary>edit call</summary>"));
        for tag in ["div", "details", "pre", "summary", "html", "body"] {
            assert_eq!(page.matches(&format!("<{tag}")).count(), page.matches(&format!("</{tag}>")).count(), "{tag}");
        }
        assert!(page.contains("1 model calls"));
    }

    #[test]
    fn markdown_fences_hold_what_contains_fences() {
        let messages = vec![Message::ToolResult(ToolResultMessage {
            tool_call_id: "c".into(),
            tool_name: "read".into(),
            content: vec![Content::text("```rust\nfn x() {}\n```")],
            is_error: false,
            details: None,
            timestamp: 0,
        })];
        let page = render("t", &messages, ExportFormat::Markdown);
        assert!(page.contains("````\n```rust\nfn x() {}\n```\n````"), "{page}");
    }

    /// What a CommonMark reader makes of a page: its headings, rules, code blocks and folds, in
    /// order.
    fn outline(page: &str) -> String {
        let mut out = Vec::new();
        let mut heading: Option<String> = None;
        for event in Parser::new(page) {
            match event {
                Event::Start(Tag::Heading { level, .. }) => heading = Some(format!("{level} ")),
                Event::Text(text) => {
                    if let Some(heading) = &mut heading {
                        heading.push_str(&text);
                    }
                }
                Event::End(TagEnd::Heading(_)) => out.extend(heading.take()),
                Event::Rule => out.push("rule".to_string()),
                Event::Start(Tag::CodeBlock(_)) => out.push("code".to_string()),
                Event::Html(html) if html.starts_with("<details>") => out.push("details".to_string()),
                _ => {}
            }
        }
        out.join("\n")
    }

    #[test]
    fn markdown_reads_as_a_heading_per_message_with_calls_folded_and_the_usage_under_a_rule() {
        let mut messages = session();
        messages.push(Message::user("one more line\nand a second"));
        let page = render("Session", &messages, ExportFormat::Markdown);
        expect![[r#"
            h1 Session
            h2 You
            h2 m</h3><script>
            details
            code
            details
            code
            h2 You
            rule"#]]
        .assert_eq(&outline(&page));
        // Every heading stands apart: a blank line before it, whatever came before.
        let lines: Vec<&str> = page.lines().collect();
        for (n, line) in lines.iter().enumerate().skip(1) {
            if line.starts_with('#') || *line == "---" {
                assert_eq!(lines[n - 1], "", "no blank line before {line:?} in\n{page}");
            }
        }
    }
}
