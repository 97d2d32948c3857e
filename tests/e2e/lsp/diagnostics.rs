//! The editor's diagnostics over stdio: a client that advertises
//! `initializationOptions.capabilities.diagnostics` answers `reins/diagnostics` with scripted
//! diagnostics that change once an edit is applied; the model sees exactly the problems its edit
//! added, can ask for the editor's problems with the `diagnostics` tool, and an ask about a
//! selection carries those of the lines around it. A client without the capability is never
//! asked, and an editor that does not answer holds nothing up.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use expect_test::{Expect, expect};
use scripted_llm::Reply;
use serde_json::{Value, json};

use super::{Session, last_user_text, start};

const LIB: &str = "fn a() -> u32 {\n    1\n}\n\nfn b() -> u32 {\n    let unused = 2;\n    2\n}\n";

/// An LSP diagnostic on `line` (0-based).
fn diagnostic(line: u32, severity: u8, source: &str, code: Option<&str>, message: &str) -> Value {
    let range = json!({"start": {"line": line, "character": 4}, "end": {"line": line, "character": 9}});
    let mut diagnostic = json!({"range": range, "severity": severity, "source": source, "message": message});
    if let Some(code) = code {
        diagnostic["code"] = json!(code);
    }
    diagnostic
}

/// What the editor knows before the edit: an old error, an old warning.
fn before() -> Vec<Value> {
    vec![
        diagnostic(1, 1, "rustc", Some("E0599"), "no method named `old` found"),
        diagnostic(5, 2, "rustc", None, "unused variable: `unused`"),
    ]
}

/// After the edit: the old problems moved down a line, a new error and a new warning, and
/// reins's own pending-edit diagnostic (which is never reins's business to report back).
fn after() -> Vec<Value> {
    vec![
        diagnostic(2, 1, "rustc", Some("E0599"), "no method named `old` found"),
        diagnostic(6, 2, "rustc", None, "unused variable: `unused`"),
        diagnostic(1, 1, "rustc", Some("E0308"), "mismatched types\nexpected `u32`, found `&str`"),
        diagnostic(1, 2, "clippy", Some("needless_return"), "unneeded `return` statement"),
        diagnostic(1, 3, "reins", Some("e9"), "agent edit e9 (hunk 1 of 1)"),
    ]
}

/// The test client answers `reins/diagnostics` about `relative` with `before` until the server
/// applied an edit, and with `after` from then on; answers how many times it was asked.
fn script_diagnostics(lsp: &Session, relative: &str, before: Vec<Value>, after: Vec<Value>) -> Arc<AtomicUsize> {
    let edited = Arc::new(AtomicBool::new(false));
    let asked = Arc::new(AtomicUsize::new(0));
    let applied = edited.clone();
    lsp.client.on_request("workspace/applyEdit", move |_| {
        applied.store(true, Ordering::SeqCst);
        Some(Ok(json!({"applied": true})))
    });
    let uri = lsp.uri(relative);
    let count = asked.clone();
    lsp.client.on_request("reins/diagnostics", move |_| {
        count.fetch_add(1, Ordering::SeqCst);
        let diagnostics = if edited.load(Ordering::SeqCst) { &after } else { &before };
        Some(Ok(json!({"items": [{"uri": uri, "diagnostics": diagnostics}]})))
    });
    asked
}

/// `initializationOptions` of a client that answers `reins/diagnostics`, with edits applied
/// without review, and `extra` laid over them.
fn answering(extra: Value) -> Value {
    let mut options = json!({"capabilities": {"diagnostics": true}, "approval": {"edit": "auto"}});
    for (key, value) in extra.as_object().cloned().unwrap_or_default() {
        options[key] = value;
    }
    options
}

/// The model's `edit` of src/lib.rs, then a final answer.
fn edit_then_answer() -> Vec<Reply> {
    let edits = json!([{"oldText": "    1\n", "newText": "    return \"one\";\n"}]);
    vec![Reply::tool_call("c1", "edit", json!({"path": "src/lib.rs", "edits": edits})), Reply::text("done")]
}

/// Runs `prompt` to its end; answers the run's events.
async fn run(lsp: &Session, prompt: &str) -> Vec<Value> {
    let started = lsp.client.command("reins.chat.send", json!({"text": prompt})).await.unwrap();
    lsp.run_events(started["runId"].as_str().unwrap()).await
}

/// The text of the last tool result the model saw in its request `index`.
fn tool_result(lsp: &Session, index: usize) -> String {
    let requests = lsp.server.chat_requests();
    let messages = requests[index].body["messages"].as_array().unwrap();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    match &tool["content"] {
        Value::String(text) => text.clone(),
        parts => parts.as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect(),
    }
}

/// The names of the tools offered in model request `index`.
fn offered_tools(lsp: &Session, index: usize) -> Vec<String> {
    let requests = lsp.server.chat_requests();
    let tools = requests[index].body["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().map(|tool| tool["function"]["name"].as_str().unwrap().to_string()).collect()
}

fn diagnostics_requests(lsp: &Session) -> Vec<Value> {
    let requests = lsp.client.server_requests().into_iter();
    requests.filter(|r| r["method"] == "reins/diagnostics").map(|r| r["params"].clone()).collect()
}

/// The model edits src/lib.rs in a client that answers with [`before`] and [`after`] under
/// `options`; the tool result the model sees next is `expected`.
async fn check_feedback(options: Value, expected: Expect) {
    let lsp = start(&[("src/lib.rs", LIB)], edit_then_answer(), answering(options)).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    script_diagnostics(&lsp, "src/lib.rs", before(), after());
    run(&lsp, "make a return a string").await;
    expected.assert_eq(&tool_result(&lsp, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_sees_exactly_the_errors_its_edit_added() {
    check_feedback(
        json!({}),
        expect![[r#"
            Edited src/lib.rs: 1 replacement

            @@ -1,4 +1,4 @@
             fn a() -> u32 {
            -    1
            +    return "one";
             }

            The edit resulted in these new problems:
            src/lib.rs:2:5: error[E0308]: mismatched types expected `u32`, found `&str` (rustc)"#]],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_warnings_are_told_when_the_settings_say_so() {
    check_feedback(
        json!({"diagnostics": {"warnings": true}}),
        expect![[r#"
            Edited src/lib.rs: 1 replacement

            @@ -1,4 +1,4 @@
             fn a() -> u32 {
            -    1
            +    return "one";
             }

            The edit resulted in these new problems:
            src/lib.rs:2:5: error[E0308]: mismatched types expected `u32`, found `&str` (rustc)
            src/lib.rs:2:5: warning[needless_return]: unneeded `return` statement (clippy)"#]],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_can_be_turned_off() {
    let options = answering(json!({"diagnostics": {"afterEdit": false}}));
    let lsp = start(&[("src/lib.rs", LIB)], edit_then_answer(), options).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    let asked = script_diagnostics(&lsp, "src/lib.rs", before(), after());
    run(&lsp, "make a return a string").await;
    assert!(tool_result(&lsp, 1).starts_with("Edited src/lib.rs"));
    assert!(!tool_result(&lsp, 1).contains("new problems"));
    assert_eq!(asked.load(Ordering::SeqCst), 0, "the editor is not asked for nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_is_asked_about_the_edited_file_before_and_after_and_the_model_gets_the_tool() {
    let lsp = start(&[("src/lib.rs", LIB)], edit_then_answer(), answering(json!({}))).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    script_diagnostics(&lsp, "src/lib.rs", before(), after());
    run(&lsp, "edit").await;
    let uri = lsp.uri("src/lib.rs");
    // Before the edit, and once after it: the diagnostics had changed by then.
    assert_eq!(diagnostics_requests(&lsp), [json!({"uris": [uri]}), json!({"uris": [uri]})]);
    assert!(offered_tools(&lsp, 0).contains(&"diagnostics".to_string()), "{:?}", offered_tools(&lsp, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_the_capability_is_never_asked() {
    let replies = vec![
        Reply::tool_call(
            "c1",
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "    1\n", "newText": "    return \"one\";\n"}]}),
        ),
        Reply::text("done"),
        Reply::text("answered"),
    ];
    let lsp = start(&[("src/lib.rs", LIB)], replies, json!({"approval": {"edit": "auto"}})).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    let asked = script_diagnostics(&lsp, "src/lib.rs", before(), after());
    run(&lsp, "edit").await;
    let range = json!({"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}});
    let started = lsp.client.command("reins.ask", json!({"uri": lsp.uri("src/lib.rs"), "range": range})).await.unwrap();
    lsp.run_events(started["runId"].as_str().unwrap()).await;
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    assert!(diagnostics_requests(&lsp).is_empty());
    assert!(!offered_tools(&lsp, 0).contains(&"diagnostics".to_string()));
    assert!(!tool_result(&lsp, 1).contains("new problems"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_stops_answering_holds_an_edit_no_longer_than_settle_ms() {
    let lsp =
        start(&[("src/lib.rs", LIB)], edit_then_answer(), answering(json!({"diagnostics": {"settleMs": 600}}))).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    // It answers the question before the edit, and none after.
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    let uri = lsp.uri("src/lib.rs");
    lsp.client.on_request("reins/diagnostics", move |_| {
        (count.fetch_add(1, Ordering::SeqCst) == 0).then(|| Ok(json!({"items": [{"uri": uri, "diagnostics": []}]})))
    });
    let begun = Instant::now();
    let events = run(&lsp, "edit").await;
    let elapsed = begun.elapsed();
    assert!(elapsed < Duration::from_secs(3), "the edit took {elapsed:?}");
    let ended = events.iter().find(|e| e["type"] == "tool_execution_end").unwrap();
    assert_eq!(ended["isError"], false);
    assert!(!tool_result(&lsp, 1).contains("new problems"));
    assert_eq!(asked.load(Ordering::SeqCst), 2, "asked before, then once more until settle_ms passed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_never_answers_holds_an_edit_a_second_at_most() {
    let lsp = start(&[("src/lib.rs", LIB)], edit_then_answer(), answering(json!({}))).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    lsp.client.on_request("reins/diagnostics", |_| None);
    let begun = Instant::now();
    run(&lsp, "edit").await;
    let elapsed = begun.elapsed();
    assert!(elapsed < Duration::from_millis(2500), "the edit took {elapsed:?}");
    assert!(tool_result(&lsp, 1).starts_with("Edited src/lib.rs"));
    assert!(!tool_result(&lsp, 1).contains("new problems"));
    // Without an answer before the edit there is nothing to compare with: it is not asked again.
    assert_eq!(diagnostics_requests(&lsp).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_know_the_method_is_asked_once() {
    let replies = vec![
        Reply::tool_call(
            "c1",
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "    1\n", "newText": "    10\n"}]}),
        ),
        Reply::tool_call(
            "c2",
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "    2\n", "newText": "    20\n"}]}),
        ),
        Reply::text("done"),
    ];
    let lsp = start(&[("src/lib.rs", LIB)], replies, answering(json!({}))).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    // The test client answers methods it does not handle with -32601.
    run(&lsp, "edit twice").await;
    assert_eq!(diagnostics_requests(&lsp).len(), 1);
    assert!(tool_result(&lsp, 2).starts_with("Edited src/lib.rs"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_diagnostics_tool_lists_the_problems_of_open_files_inside_the_workspace() {
    let replies = vec![
        Reply::tool_call("c1", "diagnostics", json!({"paths": ["src/lib.rs", "src/closed.rs"]})),
        Reply::tool_call("c2", "diagnostics", json!({})),
        Reply::tool_call("c3", "diagnostics", json!({"paths": ["../outside.rs"]})),
        Reply::text("done"),
    ];
    let lsp = start(&[("src/lib.rs", LIB), ("src/closed.rs", "")], replies, answering(json!({}))).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    let uri = lsp.uri("src/lib.rs");
    lsp.client.on_request("reins/diagnostics", move |params| {
        let mut items = vec![json!({"uri": uri, "diagnostics": after()})];
        if params.get("uris").is_none() {
            // Every open file: one outside the workspace too, which the model must not see.
            items.push(json!({"uri": "file:///etc/hosts", "diagnostics": [diagnostic(0, 1, "x", None, "secret")]}));
        }
        Some(Ok(json!({"items": items})))
    });
    run(&lsp, "what is wrong?").await;
    expect![[r#"
        src/lib.rs:2:5: error[E0308]: mismatched types expected `u32`, found `&str` (rustc)
        src/lib.rs:2:5: warning[needless_return]: unneeded `return` statement (clippy)
        src/lib.rs:3:5: error[E0599]: no method named `old` found (rustc)
        src/lib.rs:7:5: warning: unused variable: `unused` (rustc)

        [The editor has no diagnostics for: src/closed.rs (not open in it, or nothing there checks it).]"#]]
    .assert_eq(&tool_result(&lsp, 1));
    let all = tool_result(&lsp, 2);
    assert!(all.starts_with("src/lib.rs:2:5: error[E0308]") && !all.contains("secret"), "{all}");
    assert!(tool_result(&lsp, 3).contains("outside"), "{}", tool_result(&lsp, 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_carries_the_diagnostics_of_the_lines_around_the_selection() {
    let text: String = (1..=30).map(|n| format!("line {n}\n")).collect();
    let lsp = start(&[("notes.py", &text)], vec![Reply::text("ok")], answering(json!({}))).await;
    lsp.open("notes.py", "python", &text).await;
    let uri = lsp.uri("notes.py");
    let answer = json!({"items": [{"uri": uri, "diagnostics": [
        diagnostic(2, 2, "pyflakes", None, "six lines above"),
        diagnostic(3, 2, "pyflakes", None, "five lines above"),
        diagnostic(9, 1, "pyflakes", None, "in the selection"),
        diagnostic(14, 3, "pyflakes", None, "five lines below"),
        diagnostic(15, 1, "pyflakes", None, "six lines below"),
        diagnostic(9, 3, "reins", Some("e1"), "agent edit e1"),
    ]}]});
    lsp.client.on_request("reins/diagnostics", move |_| Some(Ok(answer.clone())));
    let range = json!({"start": {"line": 8, "character": 0}, "end": {"line": 10, "character": 0}});
    let started = lsp
        .client
        .command("reins.ask", json!({"uri": lsp.uri("notes.py"), "range": range, "question": "Why?"}))
        .await
        .unwrap();
    lsp.run_events(started["runId"].as_str().unwrap()).await;
    expect![[r#"
        Why?

        Selection: notes.py lines 9-10 (python)
        ```python
        line 9
        line 10
        ```
        Diagnostics in the selection and the 5 lines before and after it:
        - line 4: warning: five lines above (pyflakes)
        - line 10: error: in the selection (pyflakes)
        - line 15: info: five lines below (pyflakes)"#]]
    .assert_eq(&last_user_text(&lsp.server.chat_requests()[0].body));
}
