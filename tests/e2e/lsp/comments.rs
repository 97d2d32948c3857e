//! Talking back to a proposal over LSP: the code action "Comment on this change" on each hunk
//! (the client adds the comment it asked the user for), the comments kept on their hunks while
//! the user types above them, sent to the model in one batch with the decision, and answered by
//! the model's revised proposal — in one round, none lost or moved to another hunk.

use expect_test::expect;
use scripted_llm::Reply;
use serde_json::{Value, json};

use super::review::{actions_at, last_diagnostics, propose, tool_result, type_in};
use super::{WAIT, start};

const CALC: &str =
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";

/// The model's `edit` of calc.py: each (old, new) pair one replacement.
fn edit_calc(id: &str, pairs: &[(&str, &str)]) -> Reply {
    let edits: Vec<Value> = pairs.iter().map(|(old, new)| json!({"oldText": old, "newText": new})).collect();
    Reply::tool_call(id, "edit", json!({"path": "calc.py", "edits": edits}))
}

/// Runs the "Comment on this change" action offered on `line`, with `comment` added as a client
/// does once the user typed it.
async fn comment_at(lsp: &super::Session, uri: &str, line: u32, comment: &str) -> Value {
    let actions = actions_at(lsp, uri, line, 0).await;
    let action = actions
        .iter()
        .find(|action| action["title"].as_str().is_some_and(|title| title.starts_with("Comment on this change")))
        .unwrap_or_else(|| panic!("no comment action on line {line}: {actions:?}"));
    let mut argument = action["command"]["arguments"][0].clone();
    assert_eq!(argument.get("comment"), None, "the client asks for the comment");
    argument["comment"] = json!(comment);
    lsp.client.command("reins.edit.comment", argument).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_comment_review_resolves_in_one_round() {
    let replies = vec![
        edit_calc("c1", &[("def add(a, b):", "def plus(a, b):"), ("def sub", "def minus"), ("def mul", "def times")]),
        edit_calc(
            "c2",
            &[
                ("def add(a, b):", "def total(a, b):"),
                ("def sub(a, b):", "def difference(a, b):"),
                // Beside the third comment's line, not on it: the revision may be made before
                // the editor's change that applied the third hunk arrives.
                ("    return a * b", "    \"\"\"a times b\"\"\"\n    return a * b"),
            ],
        ),
        Reply::text("done"),
    ];
    let lsp = start(&[("calc.py", CALC)], replies, json!({})).await;
    lsp.open("calc.py", "python", CALC).await;
    let uri = lsp.uri("calc.py");
    let (run_id, edit) = propose(&lsp, "better names", None).await;
    let id = edit["id"].as_str().unwrap().to_string();
    assert_eq!(edit["hunks"].as_array().unwrap().len(), 3);

    // A client that runs the action without asking is told what is missing.
    let missing = lsp.client.command("reins.edit.comment", json!({"id": id, "hunk": 0})).await.unwrap_err();
    assert_eq!(missing.data_code(), Some("invalid_argument"), "{missing}");

    comment_at(&lsp, &uri, 0, "call it total").await;
    comment_at(&lsp, &uri, 4, "first draft").await;
    // A second comment on a hunk replaces the first.
    comment_at(&lsp, &uri, 4, "call it difference").await;
    let all = comment_at(&lsp, &uri, 8, "times is good; add a docstring").await;
    expect![[r#"{"id":"ID","comments":[{"hunk":0,"comment":"call it total"},{"hunk":1,"comment":"call it difference"},{"hunk":2,"comment":"times is good; add a docstring"}]}"#]]
        .assert_eq(&all.to_string().replace(&id, "ID"));

    // The user types a line above: the hunks, and their comments, move down with the text.
    type_in(&lsp, "calc.py", 2, ((0, 0), (0, 0)), "# calc\n").await;
    lsp.client
        .wait_for(WAIT, |n| {
            n["method"] == "textDocument/publishDiagnostics"
                && n["params"]["version"] == 2
                && n["params"]["diagnostics"].as_array().is_some_and(|d| d.len() == 3)
        })
        .await
        .unwrap();
    expect![[r#"
        [
            "1 \"reins\" 3: agent edit ID (hunk 1 of 3): replace `add` with `plus`; accept, reject or comment on it with a code action\nyour comment: call it total",
            "5 \"reins\" 3: agent edit ID (hunk 2 of 3): replace `sub` with `minus`; accept, reject or comment on it with a code action\nyour comment: call it difference",
            "9 \"reins\" 3: agent edit ID (hunk 3 of 3): replace `mul` with `times`; accept, reject or comment on it with a code action\nyour comment: times is good; add a docstring",
        ]
    "#]]
    .assert_debug_eq(&last_diagnostics(&lsp, &uri).iter().map(|d| d.replace(&id, "ID")).collect::<Vec<_>>());
    let commented: Vec<Value> = lsp
        .client
        .notifications()
        .into_iter()
        .filter(|n| n["params"]["event"]["type"] == "edit_commented")
        .map(|n| n["params"]["event"]["range"]["start"]["line"].clone())
        .collect();
    assert_eq!(commented, [json!(0), json!(4), json!(4), json!(8)]);

    // One decision sends every comment: the third hunk applied, the other two not.
    let accepted = lsp.client.command("reins.edit.accept", json!({"id": id, "hunks": [2]})).await.unwrap();
    assert_eq!(accepted["outcome"], "partially_applied");
    // The editor applies it, as a real one does.
    type_in(&lsp, "calc.py", 3, ((9, 4), (9, 7)), "times").await;
    let revision = lsp
        .client
        .wait_for(WAIT, |n| {
            n["params"]["runId"] == run_id
                && n["params"]["event"]["type"] == "edit_proposed"
                && n["params"]["event"]["edit"]["id"] != id.as_str()
        })
        .await
        .unwrap();
    let told = tool_result(&lsp, 1);
    let batch = told.split_once("The user's comments").map(|(_, batch)| batch).unwrap_or_else(|| panic!("{told}"));
    expect![[r#"
         on this change to calc.py, with the decision on each hunk (lines as calc.py now reads):
        hunk 1 (line 2): rejected — comment: call it total
        hunk 2 (line 6): rejected — comment: call it difference
        hunk 3 (line 10): applied — comment: times is good; add a docstring"#]]
    .assert_eq(batch);
    assert_eq!(told.matches("comment:").count(), 3, "{told}");

    // The revision answers all three comments, each named by its edit and hunk.
    let revision = &revision["params"]["event"]["edit"];
    let resolves: Vec<String> = revision["resolves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{}#{} {}", c["id"].as_str().unwrap().replace(&id, "ID"), c["hunk"], c["comment"]))
        .collect();
    assert_eq!(
        resolves,
        [r#"ID#0 "call it total""#, r#"ID#1 "call it difference""#, r#"ID#2 "times is good; add a docstring""#]
    );
    let revision_id = revision["id"].as_str().unwrap();
    lsp.client.command("reins.edit.accept", json!({"id": revision_id})).await.unwrap();
    let events = lsp.run_events(&run_id).await;
    assert_eq!(events.last().unwrap()["reason"], "final_answer");
}
