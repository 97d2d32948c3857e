//! The resources of the servers that offer them, as three tools named as pi 1.6, Codex and
//! OpenCode name them: `list_mcp_resources`, `list_mcp_resource_templates` and
//! `read_mcp_resource`. A resource's text reaches the model as text and an image as an image;
//! other binary data is a line saying what it was, never base64 text. The agent cuts a long
//! result as it cuts any tool's.
//!
//! They are declared while some server in force offers resources, and count as the tools of
//! those servers: deferred when all of them are (see `set.rs`). Reading is what resources are
//! for, so they are read-only: no approval is asked unless the user's `[approval]` names them.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::{ToolContext, ToolError, ToolKind, ToolLook, ToolOutput, TypedTool};
use reins_ai::Content;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::content::resource_contents;
use crate::server::Server;

pub const LIST_RESOURCES: &str = "list_mcp_resources";
pub const LIST_RESOURCE_TEMPLATES: &str = "list_mcp_resource_templates";
pub const READ_RESOURCE: &str = "read_mcp_resource";

/// The servers in force that offer resources, in order.
#[derive(Clone)]
pub(crate) struct ResourceServers(pub(crate) Arc<[Arc<Server>]>);

pub(crate) struct ListResources(pub(crate) ResourceServers);
pub(crate) struct ListResourceTemplates(pub(crate) ResourceServers);
pub(crate) struct ReadResource(pub(crate) ResourceServers);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListInput {
    /// The server to list; every server with resources when left out.
    server: Option<String>,
    /// The `nextCursor` of the previous page of this server's list.
    cursor: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadInput {
    /// The server that offers the resource.
    server: String,
    /// The resource's URI, as listed (or made from a template).
    uri: String,
}

/// Which listing a list tool asks for.
#[derive(Clone, Copy)]
enum Listing {
    Resources,
    Templates,
}

impl ResourceServers {
    pub(crate) fn names(&self) -> String {
        self.0.iter().map(|server| format!("`{}`", server.name())).collect::<Vec<_>>().join(", ")
    }

    fn find(&self, name: &str) -> Result<&Arc<Server>, ToolError> {
        self.0.iter().find(|server| server.name() == name).ok_or_else(|| {
            ToolError::new(format!("no MCP server `{name}` offers resources; these do: {}", self.names()))
        })
    }

    /// The longest a call may take: the longest tool timeout of the servers, with a margin.
    fn timeout(&self) -> Duration {
        self.0.iter().map(|server| server.config.tool_timeout).max().unwrap_or_default() + Duration::from_secs(5)
    }

    /// One page of `server`'s listing from `cursor`, or every page of every server.
    async fn list(&self, input: ListInput, listing: Listing, cx: &ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        let key = match listing {
            Listing::Resources => "resources",
            Listing::Templates => "resourceTemplates",
        };
        let mut entries = Vec::new();
        let mut next = None;
        match &input.server {
            Some(name) => {
                let server = self.find(name)?;
                let (items, cursor) = page(server, listing, input.cursor, cx).await?;
                entries.extend(items);
                next = cursor;
            }
            None => {
                for server in self.0.iter() {
                    let mut cursor = None;
                    loop {
                        let (items, after) = page(server, listing, cursor, cx).await?;
                        entries.extend(items);
                        match after {
                            Some(after) => cursor = Some(after),
                            None => break,
                        }
                    }
                }
            }
        }
        let mut answer = Map::new();
        if let Some(server) = input.server {
            answer.insert("server".into(), server.into());
        }
        answer.insert(key.into(), entries.into());
        if let Some(next) = next {
            answer.insert("nextCursor".into(), next.into());
        }
        let text = serde_json::to_string_pretty(&answer).unwrap_or_default();
        Ok(ToolOutput { content: vec![Content::text(text)], details: None, todos: None })
    }
}

/// One page of `server`'s listing: its entries, each named with the server, and the next cursor.
async fn page(
    server: &Arc<Server>,
    listing: Listing,
    cursor: Option<String>,
    cx: &ToolContext<'_>,
) -> Result<(Vec<Value>, Option<String>), ToolError> {
    let (items, next) = match listing {
        Listing::Resources => server.list_resources(cursor, &cx.cancel).await.map_err(ToolError)?,
        Listing::Templates => server.list_resource_templates(cursor, &cx.cancel).await.map_err(ToolError)?,
    };
    let entries = items
        .into_iter()
        .filter(|item| !is_app(item))
        .map(|item| {
            let mut entry = Map::new();
            entry.insert("server".into(), server.name().into());
            if let Value::Object(fields) = item {
                // Icons, annotations and `_meta` are for a client's display, not for the model.
                let kept = ["uri", "uriTemplate", "name", "title", "description", "mimeType", "size"];
                entry.extend(fields.into_iter().filter(|(field, _)| kept.contains(&field.as_str())));
            }
            Value::Object(entry)
        })
        .collect();
    Ok((entries, next))
}

/// Whether a listed resource is an MCP App's user interface, which reins does not show (as pi
/// leaves them out).
fn is_app(item: &Value) -> bool {
    let uri = item.get("uri").or_else(|| item.get("uriTemplate")).and_then(Value::as_str).unwrap_or("");
    let mime = item.get("mimeType").and_then(Value::as_str).unwrap_or("");
    uri.starts_with("ui://") || mime.starts_with("text/html;profile=mcp-app")
}

fn look(title: String, arguments: &Value) -> ToolLook {
    ToolLook { title, kind: ToolKind::Read, ..ToolLook::plain("", arguments) }
}

#[async_trait]
impl TypedTool for ListResources {
    type Input = ListInput;
    const NAME: &'static str = LIST_RESOURCES;
    const READ_ONLY: bool = true;

    fn description(&self) -> String {
        format!(
            "Lists the resources (files, records, documents) that MCP servers offer, as JSON: \
             `{{server?, resources: [{{server, uri, name, ...}}], nextCursor?}}`. With `server`, one page \
             of that server's list (`cursor` continues with the next); without, every resource of every \
             server. Servers with resources: {}. Read one with `{READ_RESOURCE}`.",
            self.0.names()
        )
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.0.timeout())
    }

    fn look(&self, arguments: &Value) -> ToolLook {
        let server = arguments.get("server").and_then(Value::as_str);
        look(server.map_or("List MCP resources".into(), |server| format!("List the resources of {server}")), arguments)
    }

    async fn execute(
        &self,
        input: ListInput,
        _: Option<reins_agent::Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        self.0.list(input, Listing::Resources, &cx).await
    }
}

#[async_trait]
impl TypedTool for ListResourceTemplates {
    type Input = ListInput;
    const NAME: &'static str = LIST_RESOURCE_TEMPLATES;
    const READ_ONLY: bool = true;

    fn description(&self) -> String {
        format!(
            "Lists the URI templates (RFC 6570) of resources that MCP servers can read but do not list, \
             as JSON: `{{server?, resourceTemplates: [{{server, uriTemplate, name, ...}}], nextCursor?}}`. \
             Fill a template in and read it with `{READ_RESOURCE}`. Servers with resources: {}.",
            self.0.names()
        )
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.0.timeout())
    }

    fn look(&self, arguments: &Value) -> ToolLook {
        look("List MCP resource templates".into(), arguments)
    }

    async fn execute(
        &self,
        input: ListInput,
        _: Option<reins_agent::Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        self.0.list(input, Listing::Templates, &cx).await
    }
}

#[async_trait]
impl TypedTool for ReadResource {
    type Input = ReadInput;
    const NAME: &'static str = READ_RESOURCE;
    const READ_ONLY: bool = true;

    fn description(&self) -> String {
        format!(
            "Reads a resource of an MCP server by its `uri` (from `{LIST_RESOURCES}`, a template, or a \
             resource link in a tool's result). Text comes as text and images as images. Servers with \
             resources: {}.",
            self.0.names()
        )
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.0.timeout())
    }

    fn look(&self, arguments: &Value) -> ToolLook {
        let uri = arguments.get("uri").and_then(Value::as_str).unwrap_or("a resource");
        let server = arguments.get("server").and_then(Value::as_str).unwrap_or("MCP");
        ToolLook { summary: uri.to_string(), ..look(format!("Read {uri} ({server}, MCP)"), arguments) }
    }

    async fn execute(
        &self,
        input: ReadInput,
        _: Option<reins_agent::Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let server = self.0.find(&input.server)?;
        let contents = server.read_resource(&input.uri, &cx.cancel).await.map_err(ToolError)?;
        let mut content: Vec<Content> = contents.into_iter().map(resource_contents).collect();
        if content.is_empty() {
            content.push(Content::text(format!("(the resource {} is empty)", input.uri)));
        }
        let details = json!({"mcp": {"server": input.server, "resource": input.uri}});
        Ok(ToolOutput { content, details: Some(details), todos: None })
    }
}
