//! The `Tool` trait and the typed adapter that validates arguments against a struct.
//!
//! A tool call goes through *prepare → gate → execute*. `prepare` parses the arguments and works
//! out what the call would do without doing it (for `edit`, the new text of the file); the gate
//! ([`crate::Hooks::before_tool_call`]) sees that [`Proposal`] and may allow, change or block it;
//! `execute` then carries it out.

use std::any::Any;
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use reins_ai::{Content, ToolSpec};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::look::ToolLook;
use crate::todo::Todo;

/// What a prepared call would do, in terms a reviewer can judge.
#[derive(Debug, Clone, PartialEq)]
pub enum Proposal {
    FileChange(FileChange),
    /// Changes to several files that land together or not at all (a patch), in the order given.
    FileChanges {
        files: Vec<FileChange>,
    },
    Command(CommandProposal),
    ServerCall(ServerCall),
}

/// A whole-file change: the text before (none for a new file) and after, and whether the file
/// is deleted or moved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileChange {
    /// Absolute path inside the workspace.
    pub path: PathBuf,
    /// The text the change was computed from; `None` creates the file.
    pub before: Option<String>,
    /// The text after; empty when the file is deleted.
    pub after: String,
    /// The file is removed (`before` must be its text).
    pub delete: bool,
    /// The file is renamed to this absolute path, with `after` as its text there.
    pub moved_to: Option<PathBuf>,
    /// The version of the open buffer `before` was read from, when the editor had it open.
    pub version: Option<i32>,
    /// How the change was found, for the model and the reviewer ("matched after ignoring
    /// trailing whitespace").
    pub notes: Vec<String>,
}

impl FileChange {
    /// The change that takes the file back to `before` (to roll back a patch that failed midway).
    pub fn undo(&self) -> FileChange {
        FileChange {
            path: self.moved_to.clone().unwrap_or_else(|| self.path.clone()),
            before: (!self.delete).then(|| self.after.clone()),
            after: self.before.clone().unwrap_or_default(),
            delete: self.before.is_none(),
            moved_to: self.moved_to.as_ref().map(|_| self.path.clone()),
            version: None,
            notes: Vec::new(),
        }
    }

    /// Where the file is after the change.
    pub fn final_path(&self) -> &PathBuf {
        self.moved_to.as_ref().unwrap_or(&self.path)
    }
}

impl Proposal {
    /// The file changes it proposes, in order (none for a command).
    pub fn file_changes(&self) -> &[FileChange] {
        match self {
            Proposal::FileChange(change) => std::slice::from_ref(change),
            Proposal::FileChanges { files } => files,
            Proposal::Command(_) | Proposal::ServerCall(_) => &[],
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CommandProposal {
    pub command: String,
    pub cwd: PathBuf,
    pub timeout_secs: u64,
}

/// A call that another program carries out (a tool of the user's MCP server), whose effect reins
/// cannot preview: the reviewer judges the tool and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerCall {
    /// The server's name.
    pub server: String,
    /// The server's name for the tool.
    pub tool: String,
    pub arguments: Value,
    /// The server says the tool changes nothing (MCP's `readOnlyHint`): a hint from a program
    /// reins does not control, which the user may choose to trust (`[approval] mcp_read_only`).
    pub read_only_hint: bool,
}

/// A call that passed validation and preparation, waiting for the gate.
pub struct Prepared {
    pub proposal: Option<Proposal>,
    /// The tool's own parsed input, handed back to `execute`.
    pub input: Box<dyn Any + Send + Sync>,
}

/// What a tool hands back. Failures the model should read are `ToolError`s, not panics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    pub content: Vec<Content>,
    /// Structured data for UIs; not sent to the model.
    pub details: Option<Value>,
    /// The session's todo list as this call leaves it (the `todo` tool): the loop reports it as
    /// [`crate::AgentEvent::TodoUpdate`].
    pub todos: Option<Vec<Todo>>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: vec![Content::text(text)], details: None, todos: None }
    }
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
    pub fn with_todos(mut self, todos: Vec<Todo>) -> Self {
        self.todos = Some(todos);
        self
    }
}

/// A failure the model can act on; it becomes a tool result with `isError: true`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// Passed to `execute`: where progress goes and when to stop.
pub struct ToolContext<'a> {
    pub tool_call_id: &'a str,
    pub cancel: CancellationToken,
    /// Partial output for `tool_execution_update` events (a running command's output).
    pub on_update: &'a (dyn Fn(&str) + Send + Sync),
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    fn name(&self) -> &str;
    /// Read-only calls in one message may run in parallel and may be retried.
    fn read_only(&self) -> bool {
        false
    }
    /// How long `execute` may take before the agent stops it; `None` uses the agent's default.
    fn timeout(&self) -> Option<Duration> {
        None
    }
    /// How a call with `arguments` (not yet checked) looks to a person (see [`ToolLook`]).
    fn look(&self, arguments: &Value) -> ToolLook {
        ToolLook::plain(self.name(), arguments)
    }
    /// Validates `arguments` and computes what the call would do, without side effects.
    async fn prepare(&self, arguments: &Value) -> Result<Prepared, ToolError>;
    /// Carries out a prepared call. `proposal` is what the gate allowed (possibly changed).
    async fn execute(
        &self,
        prepared: Prepared,
        proposal: Option<Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError>;
}

/// A tool whose input is a struct: the struct gives the schema (schemars) and the validation
/// (serde, with the path of the offending field). Every `TypedTool` is a [`Tool`].
#[async_trait]
pub trait TypedTool: Send + Sync {
    type Input: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    const NAME: &'static str;
    const READ_ONLY: bool;

    fn description(&self) -> String;
    fn timeout(&self) -> Option<Duration> {
        None
    }
    /// How a call with `arguments` (not yet checked) looks to a person (see [`ToolLook`]).
    fn look(&self, arguments: &Value) -> ToolLook {
        ToolLook::plain(Self::NAME, arguments)
    }
    async fn prepare(&self, _input: &Self::Input) -> Result<Option<Proposal>, ToolError> {
        Ok(None)
    }
    async fn execute(
        &self,
        input: Self::Input,
        proposal: Option<Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError>;
}

/// Parses tool arguments into `T`, naming the offending field on failure:
/// `edits[1].oldText: invalid type: integer `3`, expected a string`.
pub fn parse_arguments<T: DeserializeOwned>(arguments: &Value) -> Result<T, ToolError> {
    if let Value::String(raw) = arguments {
        return Err(ToolError::new(format!(
            "the arguments are not valid JSON, so the call was not run; send a JSON object matching the tool's schema. Received: {}",
            reins_ai::shorten(raw, 200)
        )));
    }
    serde_path_to_error::deserialize::<_, T>(arguments).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." {
            ToolError::new(format!("invalid arguments: {inner}"))
        } else {
            ToolError::new(format!("invalid arguments: {path}: {inner}"))
        }
    })
}

/// The JSON Schema of `T`, as sent to the model: only what tells the model how to call the tool.
///
/// It is sent (and billed) with every model call, so what serde checks anyway or the model has
/// no use for is left out: the meta-schema and title, a struct's own doc comment (the tool's
/// description speaks for it), number formats and a minimum of 0, defaults, `additionalProperties`,
/// and the `null` an `Option` adds to its type (the field is simply not required).
pub fn schema_of<T: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
    }
    lean_schema(&mut schema);
    schema
}

fn lean_schema(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if map.get("type").and_then(Value::as_str) == Some("object") {
        map.remove("description");
    }
    for key in ["format", "default", "additionalProperties"] {
        map.remove(key);
    }
    if map.get("minimum").and_then(Value::as_u64) == Some(0) {
        map.remove("minimum");
    }
    if let Some(Value::Array(types)) = map.get("type") {
        let mut named = types.iter().filter(|kind| kind.as_str() != Some("null"));
        if let (Some(only), None) = (named.next(), named.next()) {
            let only = only.clone();
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        properties.values_mut().for_each(lean_schema);
    }
    if let Some(items) = map.get_mut("items") {
        lean_schema(items);
    }
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn spec(&self) -> ToolSpec {
        ToolSpec { name: T::NAME.to_string(), description: self.description(), parameters: schema_of::<T::Input>() }
    }
    fn name(&self) -> &str {
        T::NAME
    }
    fn read_only(&self) -> bool {
        T::READ_ONLY
    }
    fn timeout(&self) -> Option<Duration> {
        TypedTool::timeout(self)
    }
    fn look(&self, arguments: &Value) -> ToolLook {
        TypedTool::look(self, arguments)
    }
    async fn prepare(&self, arguments: &Value) -> Result<Prepared, ToolError> {
        let input: T::Input = parse_arguments(arguments)?;
        let proposal = TypedTool::prepare(self, &input).await?;
        Ok(Prepared { proposal, input: Box::new(input) })
    }
    async fn execute(
        &self,
        prepared: Prepared,
        proposal: Option<Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let input = prepared
            .input
            .downcast::<T::Input>()
            .map_err(|_| ToolError::new(format!("internal error: {} was prepared by another tool", T::NAME)))?;
        TypedTool::execute(self, *input, proposal, cx).await
    }
}
