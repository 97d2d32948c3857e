//! The protocol docs are tested: every JSON example in `protocol-docs/` parses, every documented
//! request is accepted by the server, every documented result and notification has the shape the
//! server really produces.

use scripted_llm::Reply;
use serde_json::{Value, json};

pub(super) use super::doc_examples::examples;
pub(super) use super::doc_examples::same_shape;
use super::{WAIT, start};

/// Commands that cannot succeed in this scripted setting; they must still be *accepted* (fail
/// for a reason other than `invalid_argument`), and their documented result is not compared.
/// `compact` comes after `navigate` moved the session's leaf to its first message, so there is
/// nothing to compact (compaction itself is tested in tests/e2e/compaction.rs).
const MAY_FAIL: &[&str] = &["reins.session.compact"];

/// Commands that need a run in progress in the session they name: they are sent while one is
/// held (see [`HeldRun`]).
const NEED_A_RUN: &[&str] = &["reins.chat.steer", "reins.chat.followUp"];

/// Whether an example is of a worktree agent, which needs a git repository and a finished run:
/// tests/e2e/lsp/worktrees.rs runs those (`reins.worktree.list` runs here too).
pub(super) fn of_worktree_agents(example: &super::doc_examples::Example) -> bool {
    let event = example.json["event"]["type"].as_str().unwrap_or_default();
    (example.name.starts_with("reins.worktree.") && example.name != "reins.worktree.list")
        || example.json.get("worktree").is_some()
        || event.starts_with("worktree_")
}

/// The documented example of `kind` (`command`, `result`, …) for `name`.
pub(super) fn example(kind: &str, name: &str) -> Value {
    examples()
        .into_iter()
        .find(|example| example.kind == kind && example.name == name)
        .unwrap_or_else(|| panic!("protocol-docs has no {kind} example for {name}"))
        .json
}

/// A run of the examples' session held in progress by a pending edit (no clock involved), so
/// `steer` and `followUp` have a run to queue for.
struct HeldRun {
    run_id: String,
    edit_id: String,
}

/// Live ids and URIs that stand in for the examples' ones.
struct Live<'a> {
    session_id: &'a str,
    entry_id: &'a str,
    uri: &'a str,
    /// The pending edit a command's `id` names.
    edit_id: &'a str,
}

/// Replaces example ids and URIs with live ones.
fn substitute(value: &Value, live: &Live<'_>) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let value = match key.as_str() {
                        "sessionId" => json!(live.session_id),
                        "entryId" => json!(live.entry_id),
                        "uri" => json!(live.uri),
                        "id" => json!(live.edit_id),
                        _ => substitute(value, live),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, live)).collect()),
        other => other.clone(),
    }
}

/// Starts a run in a new session whose model edits src/lib.rs, and waits for the proposal.
/// Returns the run id and the pending edit's id.
async fn pending_edit(lsp: &super::Session, old: &str, new: &str) -> (String, String) {
    let edits = json!([{"oldText": old, "newText": new}]);
    lsp.server.push(Reply::tool_call("call_2", "edit", json!({"path": "src/lib.rs", "edits": edits})));
    let started = lsp.client.command("reins.chat.send", json!({"text": "edit it"})).await.unwrap();
    let run_id = started["runId"].as_str().unwrap().to_string();
    let proposed = lsp
        .client
        .wait_for(WAIT, |n| n["params"]["runId"] == run_id && n["params"]["event"]["type"] == "edit_proposed")
        .await
        .unwrap();
    (run_id, proposed["params"]["event"]["edit"]["id"].as_str().unwrap().to_string())
}

/// Starts a run in `session_id` whose model proposes an edit, and waits for the proposal.
async fn hold_a_run(lsp: &super::Session, session_id: &str) -> HeldRun {
    let edits = json!([{"oldText": "// the answer", "newText": "// held"}]);
    lsp.server.push(Reply::tool_call("call_3", "edit", json!({"path": "src/lib.rs", "edits": edits})));
    let started =
        lsp.client.command("reins.chat.send", json!({"text": "hold on", "sessionId": session_id})).await.unwrap();
    let run_id = started["runId"].as_str().unwrap().to_string();
    let proposed = lsp
        .client
        .wait_for(WAIT, |n| n["params"]["runId"] == run_id && n["params"]["event"]["type"] == "edit_proposed")
        .await
        .unwrap();
    HeldRun { run_id, edit_id: proposed["params"]["event"]["edit"]["id"].as_str().unwrap().to_string() }
}

/// Lets the held run go on (its edit rejected) with `replies` for its next model calls, waits for
/// its end, and returns the last user text of each model request it made after the hold.
async fn release(lsp: &super::Session, held: HeldRun, replies: usize) -> Vec<String> {
    let before = lsp.server.chat_requests().len();
    (0..replies).for_each(|_| lsp.server.push(Reply::text("ok")));
    lsp.client.command("reins.edit.reject", json!({"id": held.edit_id, "reason": "not now"})).await.unwrap();
    let events = lsp.run_events(&held.run_id).await;
    assert_eq!(events.last().unwrap()["reason"], "final_answer");
    lsp.server.chat_requests()[before..].iter().map(|request| super::last_user_text(&request.body)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_example_matches_the_server() {
    let examples = examples();
    assert!(examples.len() > 30, "found only {} examples", examples.len());
    let source = "// the answer\nfn answer() -> u32 {\n    \"42\"\n}\n";
    // The documented initializationOptions, as a client sends them.
    let mut options = json!({});
    for example in examples.iter().filter(|e| e.kind == "initialization") {
        for (key, value) in example.json.as_object().cloned().unwrap_or_default() {
            // Each document says what the client answers: the capabilities add up.
            match (options.get_mut(&key), value) {
                (Some(Value::Object(have)), Value::Object(more)) if key == "capabilities" => have.extend(more),
                (_, value) => options[key] = value,
            }
        }
    }
    let lsp = start(
        &[("src/lib.rs", source)],
        vec![Reply::tool_call("call_1", "read", json!({"path": "src/lib.rs"})), Reply::text("It reads a file.")],
        options,
    )
    .await;
    lsp.open("src/lib.rs", "rust", source).await;
    let uri = lsp.uri("src/lib.rs");
    // The client answers the server's requests with the documented results, about the live file.
    for example in examples.iter().filter(|e| e.kind == "client-result") {
        let live = Live { session_id: "", entry_id: "", uri: &uri, edit_id: "" };
        let answer = substitute(&example.json, &live);
        lsp.client.on_request(&example.name, move |_| Some(Ok(answer.clone())));
    }

    // A session with a finished run, so trees have entries and events have been seen.
    let first = lsp.client.command("reins.chat.send", json!({"text": "hello"})).await.unwrap();
    lsp.run_events(first["runId"].as_str().unwrap()).await;
    let session_id = first["sessionId"].as_str().unwrap().to_string();
    let tree = lsp.client.command("reins.session.tree", json!({"sessionId": session_id})).await.unwrap();
    let entry_id = tree["nodes"].as_array().unwrap().iter().find(|n| n["role"] == "user").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Two pending edits of the open file, from two sessions: one to accept, one to reject. Each
    // run's next model call, after the decision, gets the reply pushed just before it.
    let (accept_run, accept_id) = pending_edit(&lsp, "\"42\"", "42").await;
    let (reject_run, reject_id) = pending_edit(&lsp, "// the answer", "// The answer").await;

    // Each command's answers in the order its examples come (navigate has one with files).
    let mut results: std::collections::HashMap<String, Vec<Value>> = Default::default();
    let mut held: Option<HeldRun> = None;
    let mut queued: Vec<String> = Vec::new();
    for example in examples.iter().filter(|e| (e.kind == "command" || e.kind == "request") && !of_worktree_agents(e)) {
        let edit_id = if example.name == "reins.edit.reject" { &reject_id } else { &accept_id };
        let live = Live { session_id: &session_id, entry_id: &entry_id, uri: &uri, edit_id };
        let params = substitute(&example.json, &live);
        let needs_a_run = NEED_A_RUN.contains(&example.name.as_str());
        if needs_a_run && held.is_none() {
            held = Some(hold_a_run(&lsp, &session_id).await);
        } else if !needs_a_run && let Some(run) = held.take() {
            // One more model call per queued message: each is a turn of its own.
            let seen = release(&lsp, run, queued.len()).await;
            assert_eq!(seen, queued, "the queued messages reached the model, in order");
        }
        if needs_a_run {
            queued.push(params["text"].as_str().unwrap().to_string());
        }
        let answer = if example.kind == "command" {
            if ["reins.chat.send", "reins.ask", "reins.edit.accept", "reins.edit.reject"]
                .contains(&example.name.as_str())
            {
                lsp.server.push(Reply::text("ok"));
            }
            lsp.client.command(&example.name, params).await
        } else {
            lsp.client.request(&example.name, params).await
        };
        match answer {
            Ok(result) => {
                if let Some(run_id) = result.get("runId").and_then(Value::as_str) {
                    lsp.run_events(run_id).await;
                }
                results.entry(example.name.clone()).or_default().push(result);
            }
            Err(err) => {
                assert!(
                    MAY_FAIL.contains(&example.name.as_str()),
                    "{}: {} was refused: {err}",
                    example.place,
                    example.name
                );
                assert_ne!(
                    err.data_code(),
                    Some("invalid_argument"),
                    "{}: {} was not accepted: {err}",
                    example.place,
                    example.name
                );
            }
        }
    }

    if let Some(run) = held.take() {
        let seen = release(&lsp, run, queued.len()).await;
        assert_eq!(seen, queued, "the queued messages reached the model, in order");
    }
    assert_eq!(queued.len(), NEED_A_RUN.len(), "every command that needs a run was sent to a held one");

    // The decided edits' runs go on to their end (and `edit_resolved` of the accepted one
    // follows the editor's answer to applyEdit).
    lsp.run_events(&accept_run).await;
    lsp.run_events(&reject_run).await;

    // A subagent's run, for the documented subagent notifications: the child lists src, then
    // answers; the parent answers with what it got.
    lsp.server.push(Reply::tool_call("call_5", "task", json!({"prompt": "list src"})));
    lsp.server.push(Reply::tool_call("call_6", "ls", json!({"path": "src"})));
    lsp.server.push(Reply::text("lib.rs"));
    lsp.server.push(Reply::text("src holds lib.rs"));
    let delegating = lsp.client.command("reins.chat.send", json!({"text": "what is in src?"})).await.unwrap();
    lsp.run_events(delegating["runId"].as_str().unwrap()).await;

    // A run that keeps a todo list, for the documented `todo_update`.
    let todos = json!({"todos": [
        {"content": "Read the parser", "status": "completed"},
        {"content": "Fix the off-by-one", "status": "in_progress"},
        {"content": "Run the tests", "status": "pending"},
    ]});
    lsp.server.push(Reply::tool_call("call_7", "todo", todos));
    lsp.server.push(Reply::text("on it"));
    let planning = lsp.client.command("reins.chat.send", json!({"text": "plan the fix"})).await.unwrap();
    lsp.run_events(planning["runId"].as_str().unwrap()).await;

    // A failing run, for the documented failure notifications.
    lsp.server.push(Reply::http_error(401, "bad key"));
    let failing = lsp.client.command("reins.chat.send", json!({"text": "fail"})).await.unwrap();
    lsp.run_events(failing["runId"].as_str().unwrap()).await;
    lsp.client.wait_for(WAIT, |n| n["method"] == "window/showMessage").await.unwrap();
    lsp.client
        .wait_for(WAIT, |n| {
            n["method"] == "$/progress"
                && n["params"]["token"] == format!("reins/run/{}", failing["runId"].as_str().unwrap())
                && n["params"]["value"]["kind"] == "end"
        })
        .await
        .unwrap();

    // The `lsp` tool asks the editor's own language server (`reins/languageServer`), and the
    // documented answer reaches the model as reins's lines.
    lsp.server.push(Reply::tool_call(
        "call_7",
        "lsp",
        json!({"operation": "definition", "path": "src/lib.rs", "line": 2, "symbol": "answer"}),
    ));
    lsp.server.push(Reply::text("It is defined there."));
    let looking = lsp.client.command("reins.chat.send", json!({"text": "where is answer?"})).await.unwrap();
    lsp.run_events(looking["runId"].as_str().unwrap()).await;
    let told = lsp.server.chat_requests().iter().any(|request| {
        request.body["messages"].as_array().is_some_and(|messages| {
            messages.iter().any(|m| m["role"] == "tool" && m["content"] == "src/lib.rs:\n  2:4: fn answer() -> u32 {")
        })
    });
    assert!(told, "the editor's definition did not reach the model as src/lib.rs:2:4");

    let notifications = lsp.client.notifications();
    let mut checked = 0;
    let mut answered: std::collections::HashMap<&str, usize> = Default::default();
    for example in examples.iter().filter(|example| !of_worktree_agents(example)) {
        let outcome = match example.kind.as_str() {
            "result" | "response" => match results.get(&example.name).and_then(|answers| {
                let nth = answered.entry(&example.name).or_default();
                *nth += 1;
                answers.get(*nth - 1)
            }) {
                Some(actual) => same_shape(&example.json, actual, &example.name),
                None if MAY_FAIL.contains(&example.name.as_str()) => continue,
                None => Err(format!("{} was never answered", example.name)),
            },
            "notification" => {
                let matches = |n: &&Value| {
                    n["method"] == example.name.as_str()
                        && n["params"]["event"]["type"] == example.json["event"]["type"]
                        && n["params"]["event"]["delta"]["kind"] == example.json["event"]["delta"]["kind"]
                        && n["params"]["event"]["outcome"] == example.json["event"]["outcome"]
                        && n["params"]["value"]["kind"] == example.json["value"]["kind"]
                        && (example.json["event"]["toolName"] != "task" || n["params"]["event"]["toolName"] == "task")
                        && n["params"].get("parentSessionId").is_some() == example.json.get("parentSessionId").is_some()
                };
                match notifications.iter().find(matches) {
                    Some(actual) => same_shape(&example.json, &actual["params"], &example.name),
                    None => Err(format!("the server never sent a {} like this", example.name)),
                }
            }
            "error" => {
                let ok = example.json["code"].is_i64()
                    && example.json["message"].is_string()
                    && example.json["data"]["code"].is_string();
                if ok { Ok(()) } else { Err("an error needs code, message and data.code".to_string()) }
            }
            "settings" => {
                lsp.client.notify("workspace/didChangeConfiguration", json!({"settings": example.json})).await;
                Ok(())
            }
            "server-request" => {
                let sent = lsp.client.server_requests().into_iter().find(|r| r["method"] == example.name.as_str());
                match sent {
                    Some(sent) => same_shape(&example.json, &sent["params"], &example.name),
                    None => Err(format!("the server never sent a {} request", example.name)),
                }
            }
            // Answered above; what the answer is used for is checked below.
            "client-result" | "initialization" => Ok(()),
            _ => continue,
        };
        outcome.unwrap_or_else(|err| panic!("{}: {err}", example.place));
        checked += 1;
    }
    assert!(checked > 20, "only {checked} examples were checked");
    // The documented answer to `reins/diagnostics` reached the model with the ask.
    let asked = lsp.server.chat_requests().iter().map(|r| super::last_user_text(&r.body)).find(|text| {
        text.contains("Diagnostics in the selection and the 5 lines before and after it:\n- line 3: error: [E0308]")
    });
    assert!(asked.is_some(), "no ask carried the editor's diagnostics");
    // Documented settings were taken without complaint, and the server still answers.
    assert!(
        !lsp.client.notifications().iter().any(|n| n["method"] == "window/showMessage" && n["params"]["type"] == 2)
    );
    lsp.client.command("reins.session.list", json!({})).await.unwrap();
}
