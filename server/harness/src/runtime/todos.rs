//! A session's todo list (the `todo` tool's): each list a call leaves is a pi `custom` entry
//! (`reins.todo`) on the session's path, where the call was made, so a loaded session, a fork or
//! a checkout has the list that held there. pi passes the entries over.

use reins_agent::{Todo, TodoStatus};
use serde_json::{Value, json};

use super::Harness;
use crate::error::HarnessError;

/// The `custom` entry that holds a session's todo list.
pub const TODO_ENTRY: &str = "reins.todo";

/// The entry's data: `{"todos": [{"content": …, "status": "in_progress"}, …]}`.
pub(crate) fn todo_data(todos: &[Todo]) -> Value {
    let items: Vec<Value> =
        todos.iter().map(|todo| json!({"content": todo.content, "status": todo.status.as_str()})).collect();
    json!({ "todos": items })
}

/// The list an entry's data holds; steps it cannot read (another version's) are left out.
fn parse(data: &Value) -> Vec<Todo> {
    let items = data.get("todos").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    items
        .iter()
        .filter_map(|item| {
            let content = item.get("content")?.as_str()?.to_string();
            let status = TodoStatus::parse(item.get("status")?.as_str()?)?;
            Some(Todo { content, status })
        })
        .collect()
}

/// How an entry shows in a session's tree: how far along its list was.
pub(crate) fn todo_preview(data: &Value) -> String {
    let todos = parse(data);
    if todos.is_empty() {
        return "todo list cleared".to_string();
    }
    let done = todos.iter().filter(|todo| todo.status == TodoStatus::Completed).count();
    let current = todos.iter().find(|todo| todo.status == TodoStatus::InProgress);
    let doing = current.map(|todo| format!(": {}", todo.content)).unwrap_or_default();
    format!("todo list, {done} of {} done{doing}", todos.len())
}

impl Harness {
    /// The session's todo list where its leaf is now (empty when none was kept).
    pub fn todos(&self, session_id: &str) -> Result<Vec<Todo>, HarnessError> {
        Ok(self.marked(session_id, TODO_ENTRY)?.map(|data| parse(&data)).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_reads_back_as_it_was_kept() {
        let todos = vec![
            Todo { content: "read".into(), status: TodoStatus::Completed },
            Todo { content: "fix".into(), status: TodoStatus::InProgress },
            Todo { content: "test".into(), status: TodoStatus::Pending },
        ];
        assert_eq!(parse(&todo_data(&todos)), todos);
        let odd = json!({"todos": [{"content": "a", "status": "blocked"}, {"content": "b", "status": "pending"}, 3]});
        assert_eq!(parse(&odd), [Todo { content: "b".into(), status: TodoStatus::Pending }]);
        assert!(parse(&json!("nothing")).is_empty());
        assert_eq!(todo_preview(&todo_data(&todos)), "todo list, 1 of 3 done: fix");
        assert_eq!(todo_preview(&json!({"todos": []})), "todo list cleared");
    }
}
