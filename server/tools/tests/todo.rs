//! `todo`: the whole list each call, checked, handed back as the call's todos.

use expect_test::{Expect, expect};
use reins_agent::{Tool, ToolContext};
use reins_tools::TodoTool;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The call's text and its list (`[x]` completed, `[>]` in progress, `[ ]` pending), or its error.
async fn check_todo(arguments: &str, expected: Expect) {
    let arguments: Value = serde_json::from_str(arguments).unwrap();
    let tool = TodoTool;
    let outcome = match tool.prepare(&arguments).await {
        Err(err) => format!("error: {}", err.0),
        Ok(prepared) => {
            let cx = ToolContext { tool_call_id: "call-1", cancel: CancellationToken::new(), on_update: &|_| {} };
            match tool.execute(prepared, None, cx).await {
                Err(err) => format!("error: {}", err.0),
                Ok(output) => {
                    let text = output.content.iter().map(|block| match block {
                        reins_ai::Content::Text { text } => text.as_str(),
                        _ => "",
                    });
                    let mut lines = vec![text.collect::<String>()];
                    for todo in output.todos.expect("a todo call hands back its list") {
                        let mark = match todo.status {
                            reins_agent::TodoStatus::Pending => "[ ]",
                            reins_agent::TodoStatus::InProgress => "[>]",
                            reins_agent::TodoStatus::Completed => "[x]",
                        };
                        lines.push(format!("{mark} {}", todo.content));
                    }
                    lines.join("\n")
                }
            }
        }
    };
    expected.assert_eq(&outcome);
}

#[tokio::test]
async fn the_whole_list_comes_back_in_order() {
    check_todo(
        r#"{"todos": [{"content": "read the code", "status": "completed"}, {"content": " fix the bug ", "status": "in_progress"}, {"content": "run the tests", "status": "pending", "activeForm": "Running the tests"}]}"#,
        expect![[r#"
            Todo list updated: 1 of 3 done; in progress: fix the bug
            [x] read the code
            [>] fix the bug
            [ ] run the tests"#]],
    )
    .await;
    check_todo(r#"{"todos": []}"#, expect!["The todo list is cleared."]).await;
}

#[tokio::test]
async fn a_bad_list_says_what_to_change() {
    check_todo(
        r#"{"todos": [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "pending"}, {"content": "c", "status": "in_progress"}]}"#,
        expect!["error: todos[0] and todos[2] are both in_progress; work on one step at a time and mark the others pending or completed"],
    )
    .await;
    check_todo(
        r#"{"todos": [{"content": "a", "status": "done"}]}"#,
        expect!["error: invalid arguments: todos[0].status: unknown variant `done`, expected one of `pending`, `in_progress`, `completed`"],
    )
    .await;
    check_todo(
        r#"{"todos": [{"content": "  ", "status": "pending"}]}"#,
        expect!["error: todos[0].content: empty; say what the step is"],
    )
    .await;
    check_todo(
        r#"{"todos": "read, then fix"}"#,
        expect!["error: invalid arguments: todos: invalid type: string \"read, then fix\", expected a sequence"],
    )
    .await;
    let many: Vec<String> = (0..51).map(|i| format!(r#"{{"content": "step {i}", "status": "pending"}}"#)).collect();
    check_todo(
        &format!(r#"{{"todos": [{}]}}"#, many.join(",")),
        expect!["error: todos: 51 steps is more than the 50 a list may have; merge small steps"],
    )
    .await;
}
