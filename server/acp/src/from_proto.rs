//! What the client sends, as the harness takes it: a prompt's content blocks as the user
//! message (attached files quoted as context, the way the LSP layer quotes a selection), the MCP
//! servers of `session/new` as server configs, and `file://` URIs as paths.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource, McpServer};
use reins_ai::Content;
use reins_mcp::{ServerConfig, Transport};

/// One piece of what the user attached, ready to quote.
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    /// The path (relative to the working directory when inside it), else the URI.
    pub name: String,
    /// The file's text; `None` when only linked (a link to something reins cannot read).
    pub text: Option<String>,
}

/// A prompt: its text, the images, and the resources it carries or links.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Prompt {
    pub text: String,
    pub images: Vec<Content>,
    pub attachments: Vec<Attachment>,
    /// Linked files, to be read (through the client where it can) before the run.
    pub links: Vec<(String, PathBuf)>,
}

/// Sorts a prompt's blocks. Audio and binary resources are refused with what to do instead.
pub fn prompt(blocks: Vec<ContentBlock>, cwd: &std::path::Path, images: bool) -> Result<Prompt, String> {
    let mut prompt = Prompt::default();
    let mut texts: Vec<String> = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => texts.push(text.text),
            ContentBlock::Image(image) if images => {
                prompt.images.push(Content::Image { data: image.data, mime_type: image.mime_type })
            }
            ContentBlock::Image(_) => {
                return Err("the model in use does not take images; describe the image in words instead".into());
            }
            ContentBlock::Resource(resource) => match resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => {
                    prompt.attachments.push(Attachment { name: shown(&contents.uri, cwd), text: Some(contents.text) })
                }
                EmbeddedResourceResource::BlobResourceContents(contents) => {
                    prompt.attachments.push(Attachment { name: shown(&contents.uri, cwd), text: None })
                }
                _ => {}
            },
            ContentBlock::ResourceLink(link) => match file_path(&link.uri) {
                Some(path) => prompt.links.push((shown(&link.uri, cwd), path)),
                None => prompt.attachments.push(Attachment { name: link.uri, text: None }),
            },
            ContentBlock::Audio(_) => return Err("reins does not take audio; type the request instead".into()),
            _ => return Err("a content block of a kind reins does not know".into()),
        }
    }
    prompt.text = texts.join("\n");
    Ok(prompt)
}

impl Prompt {
    /// Nothing to do: no text, image or attachment (clients send `[]` after a failed turn).
    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty() && self.images.is_empty() && self.attachments.is_empty() && self.links.is_empty()
    }

    /// The user message: the text, each attached file quoted after it in a block of its own (so
    /// that a replay gives the client back what it sent, see [`unquote`]), then the images.
    pub fn into_content(self) -> Vec<Content> {
        let text = self.text.trim();
        let mut content: Vec<Content> = (!text.is_empty()).then(|| Content::text(text)).into_iter().collect();
        content.extend(
            self.attachments.iter().map(|file| Content::text(reins_harness::quote_attachment(&attachment(file)))),
        );
        content.extend(self.images);
        content
    }
}

/// An attached file as the harness quotes it (`Attached file: path`, then the text in a fence):
/// whole, its language unknown.
fn attachment(attachment: &Attachment) -> reins_harness::Attachment {
    reins_harness::Attachment {
        path: attachment.name.clone(),
        text: attachment.text.clone(),
        ..reins_harness::Attachment::default()
    }
}

/// The name of the attachment a text block quotes (`reins_harness::quote_attachment`'s output), or `None` when the
/// block is the user's own text.
pub fn unquote(text: &str) -> Option<&str> {
    if let Some(rest) = text.strip_prefix("Attached: ") {
        return rest.strip_suffix(" (not text; its content is not included)").filter(|name| !name.contains('\n'));
    }
    let rest = text.strip_prefix("Attached file: ")?;
    let (name, body) = rest.split_once('\n')?;
    let fence_len = body.len() - body.trim_start_matches('`').len();
    let fence = &body[..fence_len];
    let closed = fence_len >= 3 && body[fence_len..].starts_with('\n') && body.ends_with(&format!("\n{fence}"));
    closed.then_some(name)
}

/// A `file://` URI of an absolute path, percent-encoding what a URI path cannot hold as is.
pub fn file_uri(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &byte in path.as_os_str().as_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => uri.push(byte as char),
            _ => uri.push_str(&format!("%{byte:02X}")),
        }
    }
    uri
}

/// A URI as the model reads it: a path relative to the working directory when inside it.
fn shown(uri: &str, cwd: &std::path::Path) -> String {
    match file_path(uri) {
        Some(path) => reins_tools::display_path(&path, cwd),
        None => uri.to_string(),
    }
}

/// The path of a `file://` URI (percent-decoded), or of an absolute path given as is.
pub fn file_path(uri: &str) -> Option<PathBuf> {
    if uri.starts_with('/') {
        return Some(PathBuf::from(uri));
    }
    let rest = uri.strip_prefix("file://")?;
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|byte| (*byte as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                decoded.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, _, _) => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(decoded)))
}

/// The MCP servers a client hands a session, and a sentence for each one left out: SSE
/// (deprecated in MCP, and not advertised) and transports reins does not know are skipped rather
/// than failing the whole session.
pub fn mcp_servers(servers: Vec<McpServer>) -> (Vec<ServerConfig>, Vec<String>) {
    let mut configs = Vec::new();
    let mut skipped = Vec::new();
    for server in servers {
        let mut config = match server {
            McpServer::Stdio(stdio) => {
                let command = stdio.command.to_string_lossy().into_owned();
                let mut config = ServerConfig::stdio(stdio.name, command, stdio.args);
                if let Transport::Stdio { env, .. } = &mut config.transport {
                    *env = stdio.env.into_iter().map(|var| (var.name, var.value)).collect();
                }
                config
            }
            McpServer::Http(http) => {
                let mut config = ServerConfig::http(http.name, http.url);
                if let Transport::Http { headers, .. } = &mut config.transport {
                    *headers = http.headers.into_iter().map(|header| (header.name, header.value)).collect();
                }
                config
            }
            McpServer::Sse(sse) => {
                skipped
                    .push(format!("MCP server `{}` skipped: SSE is not supported; give its HTTP endpoint", sse.name));
                continue;
            }
            _ => {
                skipped.push("an MCP server of a transport reins does not know was skipped".to_string());
                continue;
            }
        };
        if config.name.trim().is_empty() {
            skipped.push("an MCP server without a name was skipped".to_string());
            continue;
        }
        config.origin = "session/new".to_string();
        configs.push(config);
    }
    (configs, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(file_path("file:///w/a%20b.rs"), Some(PathBuf::from("/w/a b.rs")));
        assert_eq!(file_path("file://localhost/w/x"), Some(PathBuf::from("/w/x")));
        assert_eq!(file_path("/w/x"), Some(PathBuf::from("/w/x")));
        assert_eq!(file_path("https://example.com/x"), None);
        assert_eq!(file_path("file://host/x"), None);
    }

    #[test]
    fn attachments_are_quoted_after_the_text() {
        let prompt = Prompt {
            text: "what does this do?".into(),
            attachments: vec![Attachment { name: "src/a.rs".into(), text: Some("fn a() {}\n".into()) }],
            ..Prompt::default()
        };
        let content = prompt.into_content();
        let texts: Vec<&str> = content
            .iter()
            .map(|block| match block {
                Content::Text { text } => text.as_str(),
                _ => "?",
            })
            .collect();
        expect_test::expect![[r#"
            [
                "what does this do?",
                "Attached file: src/a.rs\n```\nfn a() {}\n```",
            ]
        "#]]
        .assert_debug_eq(&texts);
        // Each quote names its attachment again; the user's text is no quote.
        let names: Vec<Option<&str>> = texts.iter().map(|text| unquote(text)).collect();
        assert_eq!(names, [None, Some("src/a.rs")]);
        let unread = reins_harness::quote_attachment(&attachment(&Attachment { name: "x.png".into(), text: None }));
        assert_eq!(unquote(&unread), Some("x.png"));
        assert_eq!(unquote("Attached file: a.rs\n```\nnot closed"), None);
        assert_eq!(file_uri(std::path::Path::new("/w/a b#.rs")), "file:///w/a%20b%23.rs");
        assert_eq!(file_path(&file_uri(std::path::Path::new("/w/a b#.rs"))), Some(PathBuf::from("/w/a b#.rs")));
    }

    #[test]
    fn mcp_servers_keep_stdio_and_http_and_skip_sse() {
        let servers: Vec<McpServer> = serde_json::from_value(serde_json::json!([
            {"name": "fs", "command": "/bin/fs-mcp", "args": ["/w"], "env": [{"name": "MODE", "value": "ro"}]},
            {"type": "http", "name": "docs", "url": "http://127.0.0.1:9/mcp", "headers": [{"name": "X", "value": "1"}]},
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}
        ]))
        .unwrap();
        let (configs, skipped) = mcp_servers(servers);
        let shown: Vec<String> = configs
            .iter()
            .map(|config| format!("{} {} ({})", config.name, config.transport.describe(), config.origin))
            .collect();
        assert_eq!(shown, ["fs /bin/fs-mcp /w (session/new)", "docs http://127.0.0.1:9/mcp (session/new)"]);
        assert!(
            matches!(&configs[0].transport, Transport::Stdio { env, .. } if env == &[("MODE".to_string(), "ro".to_string())])
        );
        assert_eq!(skipped, ["MCP server `old` skipped: SSE is not supported; give its HTTP endpoint"]);
    }
}
