//! Reviewing proposals over stdio: a model's edit, write or command is held as a pending edit
//! (event, diagnostics, code actions) until `reins.edit.accept` / `reins.edit.reject`, or the
//! run is cancelled; accepted file changes reach the editor as versioned `workspace/applyEdit`,
//! and the next model request says exactly what happened.

use expect_test::expect;
use lsp_client::file_uri;
use scripted_llm::Reply;
use serde_json::{Value, json};

use super::{Session, WAIT, start, start_with};

const LIB: &str = "fn a() -> u32 {\n    1\n}\n// b\nfn b() -> u32 {\n    2\n}\n";

/// The model's `edit` of src/lib.rs: each (old, new) pair one replacement.
fn edit_lib(id: &str, pairs: &[(&str, &str)]) -> Reply {
    let edits: Vec<Value> = pairs.iter().map(|(old, new)| json!({"oldText": old, "newText": new})).collect();
    Reply::tool_call(id, "edit", json!({"path": "src/lib.rs", "edits": edits}))
}

/// Sends `prompt` (in `session_id`, or a new session) and waits for the run's proposal.
/// Returns the run id and the pending edit.
pub(super) async fn propose(lsp: &Session, prompt: &str, session_id: Option<&Value>) -> (String, Value) {
    let mut argument = json!({"text": prompt});
    if let Some(session_id) = session_id {
        argument["sessionId"] = session_id.clone();
    }
    let started = lsp.client.command("reins.chat.send", argument).await.unwrap();
    let run_id = started["runId"].as_str().unwrap().to_string();
    let proposed = lsp
        .client
        .wait_for(WAIT, |n| n["params"]["runId"] == run_id && n["params"]["event"]["type"] == "edit_proposed")
        .await
        .unwrap_or_else(|err| panic!("no proposal: {err}"));
    (run_id, proposed["params"]["event"]["edit"].clone())
}

/// The hunks of a pending edit, one line each: index, range, old → new.
fn hunks(edit: &Value) -> String {
    edit["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let (start, end) = (&h["range"]["start"], &h["range"]["end"]);
            format!(
                "{} {}:{}-{}:{} {:?} -> {:?}",
                h["index"],
                start["line"],
                start["character"],
                end["line"],
                end["character"],
                h["oldText"].as_str().unwrap(),
                h["newText"].as_str().unwrap()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `edit_*` events of a run, compactly: type, outcome, hunks, reason.
fn review_events(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"].as_str().is_some_and(|t| t.starts_with("edit_")))
        .map(|e| match e["type"].as_str().unwrap() {
            "edit_proposed" => format!("edit_proposed {}", e["edit"]["tool"]),
            _ => format!("edit_resolved {} hunks={} reason={}", e["outcome"], e["hunks"], e["reason"]),
        })
        .collect()
}

/// The `workspace/applyEdit` edits the client received, with the workspace URI shortened.
fn applied_edits(lsp: &Session) -> Vec<String> {
    lsp.client
        .server_requests()
        .into_iter()
        .filter(|r| r["method"] == "workspace/applyEdit")
        .map(|r| r["params"]["edit"].to_string().replace(&file_uri(lsp.root()), "file:///ROOT"))
        .collect()
}

/// The text of the last tool result in model request `index`, and whether it is an error (the
/// scripted server records the OpenAI-style `tool` message; errors are marked by the harness).
pub(super) fn tool_result(lsp: &Session, index: usize) -> String {
    let requests = lsp.server.chat_requests();
    let messages = requests[index].body["messages"].as_array().unwrap();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    match &tool["content"] {
        Value::String(text) => text.clone(),
        parts => parts.as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect(),
    }
}

/// The last diagnostics published for `uri`: (line, message) pairs.
pub(super) fn last_diagnostics(lsp: &Session, uri: &str) -> Vec<String> {
    let published = lsp
        .client
        .notifications()
        .into_iter()
        .rev()
        .find(|n| n["method"] == "textDocument/publishDiagnostics" && n["params"]["uri"] == uri)
        .unwrap_or_else(|| panic!("no diagnostics for {uri}"));
    published["params"]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let (line, source, message) = (&d["range"]["start"]["line"], &d["source"], d["message"].as_str().unwrap());
            format!("{line} {source} {}: {message}", d["severity"])
        })
        .collect()
}

/// [`last_diagnostics`] with the pending edit's id `id` written as `e1`.
fn diagnostics_of(lsp: &Session, uri: &str, id: &str) -> Vec<String> {
    last_diagnostics(lsp, uri).iter().map(|d| d.replace(id, "e1")).collect()
}

/// The code actions at the cursor `(line, character)` of `uri`.
pub(super) async fn actions_at(lsp: &Session, uri: &str, line: u32, character: u32) -> Vec<Value> {
    let at = json!({"line": line, "character": character});
    let params =
        json!({"textDocument": {"uri": uri}, "range": {"start": at, "end": at}, "context": {"diagnostics": []}});
    let actions = lsp.client.request("textDocument/codeAction", params).await.unwrap();
    actions.as_array().unwrap().clone()
}

/// A `didChange` replacing `range` ((line, character), (line, character)) with `text`.
pub(super) async fn type_in(lsp: &Session, relative: &str, version: i32, range: ((u32, u32), (u32, u32)), text: &str) {
    let ((sl, sc), (el, ec)) = range;
    lsp.client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": lsp.uri(relative), "version": version}, "contentChanges": [{
                "range": {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}, "text": text}]}),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepting_one_hunk_applies_only_it_and_tells_the_model_which() {
    let replies = vec![edit_lib("c1", &[("    1", "    10"), ("    2", "    20")]), Reply::text("done")];
    let lsp = start(&[("src/lib.rs", LIB)], replies, json!({})).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    let uri = lsp.uri("src/lib.rs");
    let (run_id, edit) = propose(&lsp, "make them bigger", None).await;
    assert_eq!(
        (edit["tool"].as_str(), edit["version"].as_i64(), edit["create"].as_bool()),
        (Some("edit"), Some(1), Some(false))
    );
    expect![[r#"
        0 1:4-1:5 "1" -> "10"
        1 5:4-5:5 "2" -> "20""#]]
    .assert_eq(&hunks(&edit));
    assert!(edit["diff"].as_str().unwrap().starts_with("--- a/src/lib.rs\n+++ b/src/lib.rs\n"), "{edit}");

    // A plain client sees it too: diagnostics on the hunks, code actions on their lines.
    lsp.client
        .wait_for(WAIT, |n| n["method"] == "textDocument/publishDiagnostics" && n["params"]["diagnostics"] != json!([]))
        .await
        .unwrap();
    let id = edit["id"].as_str().unwrap();
    expect![[r#"
        [
            "1 \"reins\" 3: agent edit e1 (hunk 1 of 2): replace `1` with `10`; accept, reject or comment on it with a code action",
            "5 \"reins\" 3: agent edit e1 (hunk 2 of 2): replace `2` with `20`; accept, reject or comment on it with a code action",
        ]
    "#]]
    .assert_debug_eq(&diagnostics_of(&lsp, &uri, id));
    let offered: Vec<String> = actions_at(&lsp, &uri, 5, 5)
        .await
        .iter()
        .map(|a| format!("{} {}", a["title"].as_str().unwrap(), a["command"]["arguments"][0]["hunks"]))
        .collect();
    assert_eq!(
        offered,
        [
            "Accept agent edit null",
            "Accept only hunk 2 of 2 (reject the other) [1]",
            "Reject agent edit null",
            "Comment on this change (hunk 2 of 2) null"
        ]
    );

    let listed = lsp.client.command("reins.edit.list", json!({})).await.unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let accepted = lsp.client.command("reins.edit.accept", json!({"id": id, "hunks": [0]})).await.unwrap();
    assert_eq!(accepted, json!({"id": id, "outcome": "partially_applied", "hunks": [0]}));
    let events = lsp.run_events(&run_id).await;
    assert_eq!(
        review_events(&events),
        ["edit_proposed \"edit\"", "edit_resolved \"partially_applied\" hunks=[0] reason=null"]
    );
    // Only the first hunk went to the editor, against the version the user saw.
    expect![[r#"
        [
            "{\"documentChanges\":[{\"textDocument\":{\"uri\":\"file:///ROOT/src/lib.rs\",\"version\":1},\"edits\":[{\"range\":{\"start\":{\"line\":1,\"character\":4},\"end\":{\"line\":1,\"character\":5}},\"newText\":\"10\"}]}]}",
        ]
    "#]]
    .assert_debug_eq(&applied_edits(&lsp));
    expect![[r#"
        Edited src/lib.rs as changed by the reviewer

        @@ -1,4 +1,4 @@
         fn a() -> u32 {
        -    1
        +    10
         }
         // b
        The user applied hunk 1 and did not apply hunk 2 (of 2 hunks) of this change to src/lib.rs. src/lib.rs now reads, around the changes:
            1 | fn a() -> u32 {
            2 |     10
            3 | }
            4 | // b
            5 | fn b() -> u32 {
            6 |     2
            7 | }"#]]
    .assert_eq(&tool_result(&lsp, 1));
    assert_eq!(last_diagnostics(&lsp, &uri), Vec::<String>::new());
    assert_eq!(lsp.client.command("reins.edit.list", json!({})).await.unwrap(), json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reason_for_the_hunks_left_out_of_a_partial_accept_reaches_the_model() {
    let replies = vec![edit_lib("c1", &[("    1", "    10"), ("    2", "    20")]), Reply::text("done")];
    let lsp = start(&[("src/lib.rs", LIB)], replies, json!({})).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    let (run_id, edit) = propose(&lsp, "make them bigger", None).await;
    let id = edit["id"].as_str().unwrap();

    let accepted = lsp
        .client
        .command("reins.edit.accept", json!({"id": id, "hunks": [1], "reason": "a must stay 1"}))
        .await
        .unwrap();
    assert_eq!(accepted, json!({"id": id, "outcome": "partially_applied", "hunks": [1]}));
    let events = lsp.run_events(&run_id).await;
    assert_eq!(
        review_events(&events),
        ["edit_proposed \"edit\"", "edit_resolved \"partially_applied\" hunks=[1] reason=\"a must stay 1\""]
    );
    let told = tool_result(&lsp, 1);
    assert!(
        told.contains(
            "The user applied hunk 2 and did not apply hunk 1 (of 2 hunks) of this change to src/lib.rs. \
             The user's reason for not applying hunk 1: a must stay 1\n"
        ),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_reaches_the_model_with_its_reason_and_decided_ids_are_refused() {
    let replies = vec![edit_lib("c1", &[("    1", "    10")]), Reply::text("ok, leaving it")];
    let lsp = start(&[("src/lib.rs", LIB)], replies, json!({})).await;
    let (run_id, edit) = propose(&lsp, "bigger", None).await;
    // Not open: the hunks apply to the disk's text.
    assert_eq!(edit["version"], Value::Null);
    let id = edit["id"].as_str().unwrap();
    let mine = lsp.client.command("reins.edit.list", json!({"sessionId": edit["sessionId"]})).await.unwrap();
    assert_eq!(mine[0]["id"], id);
    let others = lsp.client.command("reins.edit.list", json!({"sessionId": "someone-else"})).await.unwrap();
    assert_eq!(others, json!([]));

    let rejected = lsp.client.command("reins.edit.reject", json!({"id": id, "reason": "keep it at 1"})).await.unwrap();
    assert_eq!(rejected, json!({"id": id, "outcome": "rejected"}));
    let events = lsp.run_events(&run_id).await;
    assert_eq!(
        review_events(&events),
        ["edit_proposed \"edit\"", "edit_resolved \"rejected\" hunks=null reason=\"keep it at 1\""]
    );
    let end = events.iter().find(|e| e["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["isError"], true);
    assert_eq!(tool_result(&lsp, 1), "The user rejected this edit of src/lib.rs, saying: keep it at 1");
    assert!(applied_edits(&lsp).is_empty());
    assert_eq!(std::fs::read_to_string(lsp.root().join("src/lib.rs")).unwrap(), LIB);

    let again = lsp.client.command("reins.edit.accept", json!({"id": id})).await.unwrap_err();
    assert_eq!(again.data_code(), Some("invalid_state"), "{again}");
    let unknown = lsp.client.command("reins.edit.reject", json!({"id": "e404"})).await.unwrap_err();
    assert_eq!(unknown.data_code(), Some("invalid_argument"), "{unknown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_diagnostics_of_a_pending_edit_follow_the_users_typing() {
    let replies = vec![edit_lib("c1", &[("    1", "    10"), ("    2", "    20")]), Reply::text("done")];
    let lsp = start(&[("src/lib.rs", LIB)], replies, json!({})).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    let uri = lsp.uri("src/lib.rs");
    let (_, edit) = propose(&lsp, "make them bigger", None).await;
    let id = edit["id"].as_str().unwrap();
    let published = |version: i64| {
        let uri = uri.clone();
        move |n: &Value| {
            n["method"] == "textDocument/publishDiagnostics"
                && n["params"]["uri"] == uri
                && n["params"]["version"] == version
        }
    };
    lsp.client.wait_for(WAIT, published(1)).await.unwrap();

    // Two lines typed at the top: both hunks move down two lines, and say so at version 2.
    type_in(&lsp, "src/lib.rs", 2, ((0, 0), (0, 0)), "// one\n// two\n").await;
    lsp.client.wait_for(WAIT, published(2)).await.unwrap();
    expect![[r#"
        [
            "3 \"reins\" 3: agent edit e1 (hunk 1 of 2): replace `1` with `10`; accept, reject or comment on it with a code action",
            "7 \"reins\" 3: agent edit e1 (hunk 2 of 2): replace `2` with `20`; accept, reject or comment on it with a code action",
        ]
    "#]]
    .assert_debug_eq(&diagnostics_of(&lsp, &uri, id));
    // The code actions are where the hunks are now.
    let actions = actions_at(&lsp, &uri, 7, 0).await;
    assert_eq!(actions.len(), 4, "{actions:?}");

    // The user rewrites the line of hunk 2: it is marked as refused-if-accepted, hunk 1 stays.
    type_in(&lsp, "src/lib.rs", 3, ((7, 4), (7, 5)), "3").await;
    lsp.client.wait_for(WAIT, published(3)).await.unwrap();
    expect![[r#"
        [
            "3 \"reins\" 3: agent edit e1 (hunk 1 of 2): replace `1` with `10`; accept, reject or comment on it with a code action",
            "7 \"reins\" 3: agent edit e1 (hunk 2 of 2): replace `2` with `20`; you changed these lines since, so accepting it will be refused",
        ]
    "#]]
    .assert_debug_eq(&diagnostics_of(&lsp, &uri, id));

    // Accepting hunk 1 alone still works, merged into the new text; then the diagnostics clear.
    let accepted = lsp.client.command("reins.edit.accept", json!({"id": id, "hunks": [0]})).await.unwrap();
    assert_eq!(accepted["outcome"], "partially_applied");
    lsp.client
        .wait_for(WAIT, |n| {
            n["method"] == "textDocument/publishDiagnostics"
                && n["params"]["uri"] == uri
                && n["params"]["diagnostics"] == json!([])
        })
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_before_accepting_rebases_or_goes_stale_but_never_overwrites() {
    let replies = vec![
        edit_lib("c1", &[("    1", "    10")]),
        Reply::text("done"),
        edit_lib("c2", &[("    2", "    20")]),
        Reply::text("I will read it again"),
    ];
    let lsp = start(&[("src/lib.rs", LIB)], replies, json!({})).await;
    lsp.open("src/lib.rs", "rust", LIB).await;

    // The user adds a line at the top meanwhile: the change is rebased onto version 2.
    let (run_id, edit) = propose(&lsp, "first", None).await;
    type_in(&lsp, "src/lib.rs", 2, ((0, 0), (0, 0)), "// typed\n").await;
    let accepted = lsp.client.command("reins.edit.accept", json!({"id": edit["id"]})).await.unwrap();
    assert_eq!(accepted["outcome"], "applied");
    lsp.run_events(&run_id).await;
    expect![[r#"
        [
            "{\"documentChanges\":[{\"textDocument\":{\"uri\":\"file:///ROOT/src/lib.rs\",\"version\":2},\"edits\":[{\"range\":{\"start\":{\"line\":2,\"character\":4},\"end\":{\"line\":2,\"character\":5}},\"newText\":\"10\"}]}]}",
        ]
    "#]]
    .assert_debug_eq(&applied_edits(&lsp));
    assert!(
        tool_result(&lsp, 1).ends_with("the change was merged into the new text without touching the user's edits.")
    );

    // The editor applied it (version 3, and told the server before answering); then the user
    // rewrites the very line the next change touches: stale, and the model sees the current text.
    assert_eq!(lsp.client.document(&lsp.uri("src/lib.rs")).map(|(_, version)| version), Some(3));
    let (run_id, edit) = propose(&lsp, "second", Some(&edit["sessionId"])).await;
    type_in(&lsp, "src/lib.rs", 4, ((6, 4), (6, 5)), "22").await;
    let stale = lsp.client.command("reins.edit.accept", json!({"id": edit["id"]})).await.unwrap();
    assert_eq!((stale["outcome"].as_str(), &stale["hunks"]), (Some("stale"), &json!([])));
    let events = lsp.run_events(&run_id).await;
    let resolved = review_events(&events);
    assert!(
        resolved[1].starts_with("edit_resolved \"stale\" hunks=null reason=\"src/lib.rs was not changed"),
        "{resolved:?}"
    );
    expect![[r#"
        src/lib.rs was not changed: the file changed after the edit was proposed: the user changed line 7 of the current text, where the edit changes line 7 of the text it was made from. src/lib.rs now reads there:
            5 | // b
            6 | fn b() -> u32 {
            7 |     22
            8 | }
        Read the file again and redo the change if it is still needed."#]]
    .assert_eq(&tool_result(&lsp, 3));
    assert_eq!(applied_edits(&lsp).len(), 1, "nothing more went to the editor");
    let text = lsp.client.request("reins/debug/documentText", json!({"uri": lsp.uri("src/lib.rs")})).await.unwrap();
    assert_eq!(text["text"], "// typed\nfn a() -> u32 {\n    10\n}\n// b\nfn b() -> u32 {\n    22\n}\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_file_is_created_through_the_editor_and_allow_for_session_stops_asking() {
    let replies = vec![
        Reply::tool_call("c1", "write", json!({"path": "notes/new/hello.txt", "content": "hi\n"})),
        Reply::tool_call("c2", "write", json!({"path": "second.txt", "content": "two\n"})),
        Reply::text("written"),
    ];
    let editor =
        json!({"workspaceEdit": {"documentChanges": true, "resourceOperations": ["create", "rename", "delete"]}});
    let lsp = start_with(&[], replies, json!({}), editor).await;
    let (run_id, edit) = propose(&lsp, "write two files", None).await;
    assert_eq!((edit["create"].as_bool(), &edit["version"]), (Some(true), &Value::Null));
    assert_eq!(hunks(&edit), r#"0 0:0-0:0 "" -> "hi\n""#);
    let accepted =
        lsp.client.command("reins.edit.accept", json!({"id": edit["id"], "allowForSession": true})).await.unwrap();
    assert_eq!(accepted["outcome"], "applied");
    let events = lsp.run_events(&run_id).await;
    // The second write was not held: the user allowed `write` for the session.
    assert_eq!(review_events(&events), ["edit_proposed \"write\"", "edit_resolved \"applied\" hunks=[0] reason=null"]);
    expect![[r#"
        [
            "{\"documentChanges\":[{\"kind\":\"create\",\"uri\":\"file:///ROOT/notes/new/hello.txt\",\"options\":{\"overwrite\":false,\"ignoreIfExists\":false}},{\"textDocument\":{\"uri\":\"file:///ROOT/notes/new/hello.txt\",\"version\":null},\"edits\":[{\"range\":{\"start\":{\"line\":0,\"character\":0},\"end\":{\"line\":0,\"character\":0}},\"newText\":\"hi\\n\"}]}]}",
            "{\"documentChanges\":[{\"kind\":\"create\",\"uri\":\"file:///ROOT/second.txt\",\"options\":{\"overwrite\":false,\"ignoreIfExists\":false}},{\"textDocument\":{\"uri\":\"file:///ROOT/second.txt\",\"version\":null},\"edits\":[{\"range\":{\"start\":{\"line\":0,\"character\":0},\"end\":{\"line\":0,\"character\":0}},\"newText\":\"two\\n\"}]}]}",
        ]
    "#]]
    .assert_debug_eq(&applied_edits(&lsp));
    assert_eq!(tool_result(&lsp, 1), "Created notes/new/hello.txt (3 bytes)");
    // The editor creates the file (this test client only says it did); the server made the
    // directory for it and wrote nothing itself.
    assert!(lsp.root().join("notes/new").is_dir());
    assert!(!lsp.root().join("notes/new/hello.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_is_held_with_its_cwd_and_a_rejected_one_never_runs() {
    let replies = vec![Reply::tool_call("c1", "bash", json!({"command": "touch marker"})), Reply::text("fine")];
    let lsp = start(&[], replies, json!({})).await;
    let (run_id, edit) = propose(&lsp, "run it", None).await;
    let root = lsp.root().canonicalize().unwrap();
    assert_eq!((edit["command"].as_str(), edit["cwd"].as_str()), (Some("touch marker"), root.to_str()));
    assert!(edit.get("uri").is_none() && edit.get("hunks").is_none(), "{edit}");
    let bad = lsp.client.command("reins.edit.accept", json!({"id": edit["id"], "hunks": [0]})).await.unwrap_err();
    assert_eq!(bad.data_code(), Some("invalid_argument"));
    lsp.client.command("reins.edit.reject", json!({"id": edit["id"], "reason": "not now"})).await.unwrap();
    let events = lsp.run_events(&run_id).await;
    assert_eq!(
        review_events(&events),
        ["edit_proposed \"bash\"", "edit_resolved \"rejected\" hunks=null reason=\"not now\""]
    );
    assert_eq!(tool_result(&lsp, 1), "The user rejected the command `touch marker`, saying: not now");
    assert!(!lsp.root().join("marker").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_run_rejects_its_pending_edits() {
    let lsp = start(&[("src/lib.rs", LIB)], vec![edit_lib("c1", &[("    1", "    10")])], json!({})).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    let (run_id, edit) = propose(&lsp, "bigger", None).await;
    let cancelled = lsp.client.command("reins.chat.cancel", json!({"sessionId": edit["sessionId"]})).await.unwrap();
    assert_eq!(cancelled, json!({"cancelled": true}));
    let events = lsp.run_events(&run_id).await;
    assert_eq!(events.last().unwrap()["reason"], "aborted");
    assert_eq!(
        review_events(&events),
        ["edit_proposed \"edit\"", "edit_resolved \"cancelled\" hunks=null reason=\"cancelled\""]
    );
    assert_eq!(lsp.client.command("reins.edit.list", json!({})).await.unwrap(), json!([]));
    assert_eq!(last_diagnostics(&lsp, &lsp.uri("src/lib.rs")), Vec::<String>::new());
    let late = lsp.client.command("reins.edit.accept", json!({"id": edit["id"]})).await.unwrap_err();
    assert_eq!(late.data_code(), Some("invalid_state"));
    assert!(applied_edits(&lsp).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_the_editor_refuses_is_reported_as_failed() {
    let lsp =
        start(&[("src/lib.rs", LIB)], vec![edit_lib("c1", &[("    1", "    10")]), Reply::text("hm")], json!({})).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    lsp.client.answer_apply_edit_with(json!({"applied": false, "failureReason": "the buffer is read-only"}));
    let (run_id, edit) = propose(&lsp, "bigger", None).await;
    let accepted = lsp.client.command("reins.edit.accept", json!({"id": edit["id"]})).await.unwrap();
    assert_eq!(accepted["outcome"], "applied", "what was decided; the event says what happened");
    let events = lsp.run_events(&run_id).await;
    assert_eq!(
        review_events(&events),
        ["edit_proposed \"edit\"", "edit_resolved \"failed\" hunks=null reason=\"the buffer is read-only\""]
    );
    let result = tool_result(&lsp, 1);
    assert!(result.ends_with("was not applied: the buffer is read-only"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loose_match_shows_its_note_in_the_proposal() {
    // The file has trailing spaces and a typographic quote; the model's oldText has neither.
    let file = "fn a() -> u32 {   \n    1\n}\n// it’s b\nfn b() -> u32 {\n    2\n}\n";
    let replies = vec![
        edit_lib("c1", &[("fn a() -> u32 {\n    1", "fn a() -> u32 {\n    10"), ("// it's b", "// it's bee")]),
        Reply::text("done"),
    ];
    let lsp = start(&[("src/lib.rs", file)], replies, json!({"approval": {"edit": "ask"}})).await;
    lsp.open("src/lib.rs", "rust", file).await;
    let (run_id, edit) = propose(&lsp, "bigger", None).await;
    expect![[r#"["edits[0]: matched after ignoring trailing whitespace","edits[1]: matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms"]"#]].assert_eq(&edit["notes"].to_string());
    expect![[r#"
        0 1:4-1:5 "1" -> "10"
        1 3:8-3:9 "b" -> "bee""#]]
    .assert_eq(&hunks(&edit));
    lsp.client.command("reins.edit.accept", json!({"id": edit["id"]})).await.unwrap();
    lsp.run_events(&run_id).await;
    // The model is told too (the diff that follows keeps the file's trailing spaces).
    let result = tool_result(&lsp, 1);
    expect![[r#"
        Edited src/lib.rs: 2 replacements
        Note: edits[0]: matched after ignoring trailing whitespace
        Note: edits[1]: matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms"#]]
    .assert_eq(&result.lines().take(3).collect::<Vec<_>>().join("\n"));
}

/// The model's `edit` of `path`, replacing `old` with `new`.
fn edit_file(id: &str, path: &str, old: &str, new: &str) -> Reply {
    Reply::tool_call(id, "edit", json!({"path": path, "edits": [{"oldText": old, "newText": new}]}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_whose_models_reuse_a_tool_call_id_keep_their_own_edits() {
    // Both models call their first tool `call_0`, as many providers number calls per response.
    let replies = vec![
        edit_file("call_0", "a.txt", "a", "A"),
        edit_file("call_0", "b.txt", "b", "B"),
        Reply::text("b done"),
        edit_file("call_0", "a.txt", "a", "AA"),
        Reply::text("a done"),
    ];
    let lsp = start(&[("a.txt", "a\n"), ("b.txt", "b\n")], replies, json!({})).await;
    let (run_a, edit_a) = propose(&lsp, "change a", None).await;
    let (run_b, edit_b) = propose(&lsp, "change b", None).await;
    let origin = |edit: &Value| {
        format!(
            "{} {} {} {}",
            edit["runId"],
            edit["toolCallId"],
            edit["uri"].as_str().unwrap_or("").rsplit('/').next().unwrap(),
            edit["hunks"][0]["newText"]
        )
    };
    assert_eq!(origin(&edit_a), format!("\"{run_a}\" \"call_0\" a.txt \"A\""));
    assert_eq!(origin(&edit_b), format!("\"{run_b}\" \"call_0\" b.txt \"B\""));
    let (session_a, session_b) = (edit_a["sessionId"].clone(), edit_b["sessionId"].clone());
    assert_ne!(session_a, session_b);
    let listed = lsp.client.command("reins.edit.list", json!({"sessionId": session_b})).await.unwrap();
    assert_eq!(listed.as_array().unwrap().iter().map(|e| e["id"].clone()).collect::<Vec<_>>(), [edit_b["id"].clone()]);

    // Allowing `edit` for session B leaves session A asking.
    let accepted =
        lsp.client.command("reins.edit.accept", json!({"id": edit_b["id"], "allowForSession": true})).await.unwrap();
    assert_eq!(accepted["outcome"], "applied");
    let events_b = lsp.run_events(&run_b).await;
    assert_eq!(review_events(&events_b), ["edit_proposed \"edit\"", "edit_resolved \"applied\" hunks=[0] reason=null"]);
    lsp.client.command("reins.edit.reject", json!({"id": edit_a["id"], "reason": "not a"})).await.unwrap();
    let first_a = edit_a["id"].clone();
    let again = lsp
        .client
        .wait_for(WAIT, |n| {
            let event = &n["params"]["event"];
            n["params"]["runId"] == run_a && event["type"] == "edit_proposed" && event["edit"]["id"] != first_a
        })
        .await
        .unwrap_or_else(|err| panic!("session A was not asked again: {err}"));
    let again = &again["params"]["event"]["edit"];
    assert_eq!((&again["sessionId"], &again["toolCallId"]), (&session_a, &json!("call_0")));
    lsp.client.command("reins.edit.accept", json!({"id": again["id"]})).await.unwrap();
    let events_a = lsp.run_events(&run_a).await;
    assert_eq!(
        review_events(&events_a),
        [
            "edit_proposed \"edit\"",
            "edit_resolved \"rejected\" hunks=null reason=\"not a\"",
            "edit_proposed \"edit\"",
            "edit_resolved \"applied\" hunks=[0] reason=null"
        ]
    );
    // Each session's model read its own outcome.
    assert_eq!(tool_result(&lsp, 2), "Edited b.txt: 1 replacement\n\n@@ -1 +1 @@\n-b\n+B");
    assert_eq!(tool_result(&lsp, 3), "The user rejected this edit of a.txt, saying: not a");
}

/// A multi-file patch, held as one pending edit per file, each reviewed on its own.
const A_PY: &str = "def one():\n    return 1\n\n\n\ndef two():\n    return 2\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_is_reviewed_file_by_file_and_what_was_accepted_lands_together() {
    let patch = "*** Begin Patch\n*** Update File: src/a.py\n@@ def one():\n-    return 1\n+    return 10\n\
                 @@ def two():\n-    return 2\n+    return 20\n*** Update File: src/b.py\n@@\n-b = 1\n+b = 2\n\
                 *** Delete File: old.txt\n*** Update File: m.py\n*** Move to: pkg/n.py\n*** End Patch";
    let replies = vec![Reply::tool_call("c1", "apply_patch", json!({ "input": patch })), Reply::text("done")];
    let editor =
        json!({"workspaceEdit": {"documentChanges": true, "resourceOperations": ["create", "rename", "delete"]}});
    let files = [("src/a.py", A_PY), ("src/b.py", "b = 1\n"), ("old.txt", "bye\n"), ("m.py", "m = 1\n")];
    let lsp = start_with(&files, replies, json!({"tools": {"editFormat": "apply_patch"}}), editor).await;
    lsp.open("src/a.py", "python", A_PY).await;
    let started = lsp.client.command("reins.chat.send", json!({"text": "tidy up"})).await.unwrap();
    let run_id = started["runId"].as_str().unwrap().to_string();
    // Every file of the patch is proposed at once, each as its own pending edit.
    lsp.client
        .wait_for(WAIT, |n| n["params"]["runId"] == run_id && n["params"]["event"]["edit"]["uri"] == lsp.uri("m.py"))
        .await
        .unwrap();
    let listed = lsp.client.command("reins.edit.list", json!({})).await.unwrap();
    let pending: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|edit| {
            let uri = edit["uri"].as_str().unwrap().replace(&file_uri(lsp.root()), "");
            let new_uri = edit["newUri"].as_str().map(|uri| uri.replace(&file_uri(lsp.root()), ""));
            format!(
                "{} {} {uri} version={} create={} delete={} newUri={new_uri:?} hunks={}",
                edit["id"].as_str().unwrap(),
                edit["tool"].as_str().unwrap(),
                edit["version"],
                edit["create"],
                edit["delete"],
                edit["hunks"].as_array().unwrap().len()
            )
        })
        .collect();
    expect![[r#"
        [
            "e1 apply_patch /src/a.py version=1 create=false delete=false newUri=None hunks=2",
            "e2 apply_patch /src/b.py version=null create=false delete=false newUri=None hunks=1",
            "e3 apply_patch /old.txt version=null create=false delete=true newUri=None hunks=1",
            "e4 apply_patch /m.py version=null create=false delete=false newUri=Some(\"/pkg/n.py\") hunks=0",
        ]
    "#]]
    .assert_debug_eq(&pending);
    // The run waits until every file is decided: some hunks of one, none of another, all of the rest.
    let client = &lsp.client;
    let accepted = client.command("reins.edit.accept", json!({"id": "e1", "hunks": [0], "reason": "two stays"})).await;
    assert_eq!(accepted.unwrap()["outcome"], "partially_applied");
    client.command("reins.edit.reject", json!({"id": "e2", "reason": "b is fine"})).await.unwrap();
    client.command("reins.edit.accept", json!({"id": "e3"})).await.unwrap();
    client.command("reins.edit.accept", json!({"id": "e4"})).await.unwrap();
    let events = lsp.run_events(&run_id).await;
    expect![[r#"
        [
            "edit_proposed \"apply_patch\"",
            "edit_proposed \"apply_patch\"",
            "edit_proposed \"apply_patch\"",
            "edit_proposed \"apply_patch\"",
            "edit_resolved \"rejected\" hunks=null reason=\"b is fine\"",
            "edit_resolved \"partially_applied\" hunks=[0] reason=\"two stays\"",
            "edit_resolved \"applied\" hunks=[0] reason=null",
            "edit_resolved \"applied\" hunks=[] reason=null",
        ]
    "#]]
    .assert_debug_eq(&review_events(&events));
    // One workspace edit: the open buffer's hunk against its version, the deletion, the move.
    expect![[r#"
        [
            "{\"documentChanges\":[{\"textDocument\":{\"uri\":\"file:///ROOT/src/a.py\",\"version\":1},\"edits\":[{\"range\":{\"start\":{\"line\":1,\"character\":11},\"end\":{\"line\":1,\"character\":12}},\"newText\":\"10\"}]},{\"kind\":\"delete\",\"uri\":\"file:///ROOT/old.txt\",\"options\":{\"recursive\":false,\"ignoreIfNotExists\":false}},{\"kind\":\"rename\",\"oldUri\":\"file:///ROOT/m.py\",\"newUri\":\"file:///ROOT/pkg/n.py\",\"options\":{\"overwrite\":false,\"ignoreIfExists\":false}}]}",
        ]
    "#]]
    .assert_debug_eq(&applied_edits(&lsp));
    expect![[r#"
        Applied the patch:
        - changed src/a.py
        - deleted old.txt
        - moved m.py to pkg/n.py

        --- src/a.py
        +++ src/a.py
        @@ -1,4 +1,4 @@
         def one():
        -    return 1
        +    return 10


        The user applied hunk 1 and did not apply hunk 2 (of 2 hunks) of this change to src/a.py. The user's reason for not applying hunk 2: two stays
        src/a.py now reads, around the changes:
            1 | def one():
            2 |     return 10
            3 |
            4 |
            5 |
            6 | def two():
            7 |     return 2
        The user rejected this apply_patch of src/b.py, saying: b is fine"#]].assert_eq(&trim_line_ends(&tool_result(&lsp, 1)));
}

/// `text` without spaces at line ends (a diff's blank context line is one space), for
/// expectations that cannot show them.
fn trim_line_ends(text: &str) -> String {
    text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_file_that_went_stale_stops_every_file_of_it() {
    let patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-a = 1\n+a = 2\n*** Update File: b.py\n@@\n-b = 1\n+b = 2\n*** End Patch";
    let replies = vec![Reply::tool_call("c1", "apply_patch", json!({ "input": patch })), Reply::text("done")];
    let lsp =
        start(&[("a.py", "a = 1\n"), ("b.py", "b = 1\n")], replies, json!({"tools": {"editFormat": "apply_patch"}}))
            .await;
    lsp.open("b.py", "python", "b = 1\n").await;
    let started = lsp.client.command("reins.chat.send", json!({"text": "bump"})).await.unwrap();
    let run_id = started["runId"].as_str().unwrap().to_string();
    lsp.client
        .wait_for(WAIT, |n| n["params"]["runId"] == run_id && n["params"]["event"]["edit"]["uri"] == lsp.uri("b.py"))
        .await
        .unwrap();
    // The user types on the line the patch changes in b.py, then accepts both files.
    type_in(&lsp, "b.py", 2, ((0, 4), (0, 5)), "7").await;
    lsp.client.command("reins.edit.accept", json!({"id": "e1"})).await.unwrap();
    let b = lsp.client.command("reins.edit.accept", json!({"id": "e2"})).await.unwrap();
    assert_eq!(b["outcome"], "stale");
    let events = lsp.run_events(&run_id).await;
    expect![[r#"
        [
            "edit_proposed \"apply_patch\"",
            "edit_proposed \"apply_patch\"",
            "edit_resolved \"stale\" hunks=null reason=\"b.py was not changed: the file changed after the edit was proposed: the user changed line 1 of the current text, where the edit changes line 1 of the text it was made from. b.py now reads there:\\n    1 | b = 7\\nRead the file again and redo the change if it is still needed.\"",
            "edit_resolved \"failed\" hunks=null reason=\"not applied: another file of the same change went stale or was cancelled, so none was\"",
        ]
    "#]].assert_debug_eq(&review_events(&events));
    assert!(applied_edits(&lsp).is_empty(), "{:?}", applied_edits(&lsp));
    assert_eq!(std::fs::read_to_string(lsp.root().join("a.py")).unwrap(), "a = 1\n");
    let result = tool_result(&lsp, 1);
    assert!(
        result.starts_with("b.py was not changed") && result.ends_with("No file of the change was changed."),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_the_editor_refuses_for_a_newer_version_is_rebased_onto_it_and_sent_again() {
    let replies = vec![edit_lib("c1", &[("    2", "    20")]), Reply::text("done")];
    let lsp = start(&[("src/lib.rs", LIB)], replies, json!({"approval": {"edit": "auto"}})).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    // The user typed a line at the top just before the edit arrived: the editor, at version 2,
    // refuses the edit made for version 1, then hears the keystroke's didChange.
    let answers = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = answers.clone();
    lsp.client.on_request("workspace/applyEdit", move |_| {
        Some(Ok(match counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => json!({"applied": false, "failureReason": "src/lib.rs is at version 2, the edit was made for version 1"}),
            _ => json!({"applied": true}),
        }))
    });
    let started = lsp.client.command("reins.chat.send", json!({"text": "edit"})).await.unwrap();
    lsp.client.wait_for_frame(WAIT, |frame| frame["method"] == "workspace/applyEdit").await.unwrap();
    type_in(&lsp, "src/lib.rs", 2, ((0, 0), (0, 0)), "// typed\n").await;
    let events = lsp.run_events(started["runId"].as_str().unwrap()).await;
    let end = events.iter().find(|event| event["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["isError"], false, "{end}");
    let versions: Vec<Value> = applied_edits(&lsp)
        .iter()
        .map(|edit| {
            serde_json::from_str::<Value>(edit).unwrap()["documentChanges"][0]["textDocument"]["version"].clone()
        })
        .collect();
    assert_eq!(versions, [json!(1), json!(2)], "sent again for the version the editor is at");
    let expected = "// typed\nfn a() -> u32 {\n    1\n}\n// b\nfn b() -> u32 {\n    20\n}\n";
    assert_eq!(lsp.client.document(&lsp.uri("src/lib.rs")).unwrap().0, expected, "the editor's buffer");
    let text = lsp.client.request("reins/debug/documentText", json!({"uri": lsp.uri("src/lib.rs")})).await.unwrap();
    assert_eq!(text["text"], expected, "the server's copy: where the next edit starts from");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_the_editor_says_it_applied_but_its_buffer_does_not_show_is_reported_as_not_applied() {
    let replies = vec![edit_lib("c1", &[("    2", "    20")]), Reply::text("done")];
    let lsp = start(&[("src/lib.rs", LIB)], replies, json!({"approval": {"edit": "auto"}})).await;
    lsp.open("src/lib.rs", "rust", LIB).await;
    // Neovim before the plugin checked versions: the buffer had moved on (the user typed), so it
    // dropped the edit and answered `applied: true`.
    lsp.client.drop_apply_edits();
    let started = lsp.client.command("reins.chat.send", json!({"text": "edit"})).await.unwrap();
    lsp.client.wait_for_frame(WAIT, |frame| frame["method"] == "workspace/applyEdit").await.unwrap();
    type_in(&lsp, "src/lib.rs", 2, ((0, 0), (0, 0)), "// typed\n").await;
    let events = lsp.run_events(started["runId"].as_str().unwrap()).await;
    let end = events.iter().find(|event| event["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["isError"], true, "never 'Edited': {end}");
    let told = tool_result(&lsp, 1);
    assert!(told.contains("the editor answered that it applied the edit, but its buffer does not show it"), "{told}");
    assert_eq!(applied_edits(&lsp).len(), 1, "not sent again on top of what the editor may hold");
}
