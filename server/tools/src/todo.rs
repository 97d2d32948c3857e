//! `todo`: the model keeps the steps of a multi-step job as a list the user watches (Codex's
//! `update_plan`, Claude Code's `TodoWrite`). Each call sends the whole list, which replaces the
//! one before; the call changes no file, so it is offered in every tool set, read-only too. The
//! list is the session's: the harness records each one on the session's path, so a loaded or
//! checked-out session has the list that held there.

use async_trait::async_trait;
use reins_agent::{Proposal, Todo, TodoStatus, ToolContext, ToolError, ToolLook, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The tool's name.
pub const TODO_TOOL: &str = "todo";
/// A list longer than this is not a plan a person can follow.
const MAX_ITEMS: usize = 50;
/// A step longer than this is not a step.
const MAX_CONTENT_CHARS: usize = 500;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoInput {
    /// The whole list; an empty one clears it.
    pub todos: Vec<TodoItem>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(inline)]
pub struct TodoItem {
    pub content: String,
    pub status: ItemStatus,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    Pending,
    InProgress,
    Completed,
}

/// The `todo` tool. It keeps nothing itself: the list a call sends is its output.
#[derive(Debug, Default)]
pub struct TodoTool;

#[async_trait]
impl TypedTool for TodoTool {
    type Input = TodoInput;
    const NAME: &'static str = TODO_TOOL;
    const READ_ONLY: bool = true;

    fn description(&self) -> String {
        "Keep a todo list the user sees, for work of three steps or more. Send the whole list each \
         time (it replaces the last one); mark one step in_progress as you start it and completed as \
         soon as it is done."
            .to_string()
    }

    /// How far along the list is, and the step in progress.
    fn look(&self, arguments: &Value) -> ToolLook {
        let items = arguments.get("todos").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let status = |item: &Value| item.get("status").and_then(Value::as_str).and_then(TodoStatus::parse);
        let done = items.iter().filter(|item| status(item) == Some(TodoStatus::Completed)).count();
        let current = items
            .iter()
            .find(|item| status(item) == Some(TodoStatus::InProgress))
            .and_then(|item| item.get("content").and_then(Value::as_str))
            .unwrap_or_default();
        ToolLook {
            title: format!("Todo list: {done} of {} done", items.len()),
            summary: current.to_string(),
            ..ToolLook::default()
        }
    }

    async fn prepare(&self, input: &TodoInput) -> Result<Option<Proposal>, ToolError> {
        todos(input)?;
        Ok(None)
    }

    async fn execute(
        &self,
        input: TodoInput,
        _proposal: Option<Proposal>,
        _cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let todos = todos(&input)?;
        Ok(ToolOutput::text(report(&todos)).with_todos(todos))
    }
}

/// The list the input sends, checked: steps that say something, not too many, at most one in
/// progress.
fn todos(input: &TodoInput) -> Result<Vec<Todo>, ToolError> {
    if input.todos.len() > MAX_ITEMS {
        return Err(ToolError::new(format!(
            "todos: {} steps is more than the {MAX_ITEMS} a list may have; merge small steps",
            input.todos.len()
        )));
    }
    let mut list = Vec::with_capacity(input.todos.len());
    for (index, item) in input.todos.iter().enumerate() {
        let content = item.content.trim();
        if content.is_empty() {
            return Err(ToolError::new(format!("todos[{index}].content: empty; say what the step is")));
        }
        if content.chars().count() > MAX_CONTENT_CHARS {
            return Err(ToolError::new(format!(
                "todos[{index}].content: longer than {MAX_CONTENT_CHARS} characters; a step is a short sentence"
            )));
        }
        let status = match item.status {
            ItemStatus::Pending => TodoStatus::Pending,
            ItemStatus::InProgress => TodoStatus::InProgress,
            ItemStatus::Completed => TodoStatus::Completed,
        };
        list.push(Todo { content: content.to_string(), status });
    }
    let in_progress: Vec<usize> = (0..list.len()).filter(|&i| list[i].status == TodoStatus::InProgress).collect();
    if let [first, second, ..] = in_progress[..] {
        return Err(ToolError::new(format!(
            "todos[{first}] and todos[{second}] are both in_progress; work on one step at a time and mark the \
             others pending or completed"
        )));
    }
    Ok(list)
}

/// What the model reads back: short, since the list itself is in its call.
fn report(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "The todo list is cleared.".to_string();
    }
    let done = todos.iter().filter(|todo| todo.status == TodoStatus::Completed).count();
    let current = todos.iter().find(|todo| todo.status == TodoStatus::InProgress);
    match current {
        Some(todo) => format!("Todo list updated: {done} of {} done; in progress: {}", todos.len(), todo.content),
        None => format!("Todo list updated: {done} of {} done", todos.len()),
    }
}
