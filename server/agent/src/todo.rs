//! A todo list: the steps of the work at hand, each pending, in progress or completed. A tool
//! (reins's `todo`) hands the whole list back in its output ([`crate::ToolOutput::todos`]), the
//! loop reports it as [`crate::AgentEvent::TodoUpdate`], and each surface shows it its own way
//! (ACP's `plan`, the Neovim chat's checklist, a few lines at the terminal).

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// One step of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Todo {
    /// What the step is, in a short sentence.
    pub content: String,
    pub status: TodoStatus,
}

impl TodoStatus {
    /// The status as the tool's arguments, the session file and the wire spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }

    /// The status spelled `name` (see [`TodoStatus::as_str`]).
    pub fn parse(name: &str) -> Option<TodoStatus> {
        [TodoStatus::Pending, TodoStatus::InProgress, TodoStatus::Completed]
            .into_iter()
            .find(|status| status.as_str() == name)
    }
}
