//! A server's tool as an ordinary agent [`Tool`]: the agent's validation of JSON, timeouts,
//! truncation, approval gate, events and session recording apply to it as to any other.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::{Prepared, Proposal, ServerCall, Tool, ToolContext, ToolError, ToolLook, ToolOutput};
use reins_ai::ToolSpec;
use rmcp::model::JsonObject;
use serde_json::Value;

use crate::arguments::Arguments;
use crate::content::tool_output;
use crate::schema::normalize_input_schema;
use crate::server::{PROGRESS_STRETCH, Server, ServerTool};

/// Tool `tool` of `server`, offered to the model as `name` (`mcp__server__tool`).
pub struct McpTool {
    name: String,
    spec: ToolSpec,
    tool: String,
    server: Arc<Server>,
    /// The server's own schema, which arguments are checked against.
    arguments: Arguments,
    /// What its declaration costs in a request, in tokens (estimated: 4 bytes a token).
    tokens: u64,
    /// The server's `readOnlyHint`, for the approval gate.
    read_only_hint: bool,
}

impl McpTool {
    pub(crate) fn new(name: String, server: Arc<Server>, tool: &ServerTool) -> Self {
        let spec = ToolSpec {
            name: name.clone(),
            description: tool.description.clone(),
            parameters: normalize_input_schema(&tool.input_schema),
        };
        let bytes = spec.name.len() + spec.description.len() + spec.parameters.to_string().len();
        let tokens = bytes.div_ceil(4) as u64;
        let arguments = Arguments::new(&tool.input_schema);
        let read_only_hint = tool.read_only_hint;
        Self { name, spec, tool: tool.name.clone(), server, arguments, tokens, read_only_hint }
    }

    /// What its declaration costs in a request, in tokens (estimated).
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Whether its server asks for it to be deferred (`Some(Deferred)`), declared directly, or
    /// leaves it to the threshold (`None`).
    pub fn exposure(&self) -> Option<crate::Exposure> {
        self.server.config.exposure
    }

    /// Its description, as the server gave it.
    pub fn description(&self) -> &str {
        &self.spec.description
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        self.server.name()
    }

    /// The server's name for the tool.
    pub fn tool(&self) -> &str {
        &self.tool
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn name(&self) -> &str {
        &self.name
    }

    /// Never: a server's `readOnlyHint` is a hint from a program we do not control, and read-only
    /// calls run in parallel and are retried.
    fn read_only(&self) -> bool {
        false
    }

    /// The agent's timer is a backstop only: the call keeps its own, which progress
    /// notifications start again (see `Server::call`).
    fn timeout(&self) -> Option<Duration> {
        Some(self.server.config.tool_timeout * PROGRESS_STRETCH + Duration::from_secs(5))
    }

    fn look(&self, arguments: &Value) -> ToolLook {
        look(&self.name, arguments)
    }

    async fn prepare(&self, arguments: &Value) -> Result<Prepared, ToolError> {
        let arguments: JsonObject = match arguments {
            Value::Object(map) => map.clone(),
            Value::Null => JsonObject::new(),
            other => {
                return Err(ToolError::new(format!(
                    "invalid arguments: expected a JSON object matching the tool's schema, found {}",
                    kind(other)
                )));
            }
        };
        self.arguments.check(&Value::Object(arguments.clone())).map_err(ToolError::new)?;
        // What the approval gate shows: reins cannot tell what a server's tool will do.
        let proposal = Proposal::ServerCall(ServerCall {
            server: self.server.name().to_string(),
            tool: self.tool.clone(),
            arguments: Value::Object(arguments.clone()),
            read_only_hint: self.read_only_hint,
        });
        Ok(Prepared { proposal: Some(proposal), input: Box::new(arguments) })
    }

    async fn execute(
        &self,
        prepared: Prepared,
        _proposal: Option<Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let arguments = prepared
            .input
            .downcast::<JsonObject>()
            .map_err(|_| ToolError::new(format!("internal error: {} was prepared by another tool", self.name)))?;
        let result =
            self.server.call(&self.tool, &self.name, *arguments, &cx.cancel, cx.on_update).await.map_err(ToolError)?;
        tool_output(self.server.name(), &self.tool, &result)
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// How a call of the MCP tool named `name` looks: `tool (server, MCP)`, and the arguments on one
/// line, since reins cannot tell what it touches. By the name alone, so a recorded call looks
/// the same before its server is up.
pub fn look(name: &str, arguments: &Value) -> ToolLook {
    let title = match name.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")) {
        Some((server, tool)) => format!("{tool} ({server}, MCP)"),
        None => name.to_string(),
    };
    ToolLook { title, ..ToolLook::plain(name, arguments) }
}
