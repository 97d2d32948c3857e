//! Files follow the leaf in the editor: `reins.session.navigate` and `reins.session.fork` with
//! `files: true` turn the recorded file changes into pending edits, one per file, that the user
//! accepts or rejects like any proposal; accepted, an open file's change arrives as a versioned
//! `workspace/applyEdit` (which this test applies as an editor would: to its buffer, then
//! `didChange`), and files where the user's edits overlap the agent's come back as conflicts.

use std::collections::HashMap;

use scripted_llm::Reply;
use serde_json::{Value, json};

use super::{Session, WAIT, start};

const LIB: &str = "fn one() {}\nfn two() {}\nfn three() {}\n";

/// The editor's open buffers: their text and version, changed only by `didChange`s it sends.
#[derive(Default)]
struct Buffers(HashMap<String, (String, i32)>);

impl Buffers {
    async fn open(&mut self, lsp: &Session, relative: &str, text: &str) {
        lsp.open(relative, "rust", text).await;
        self.0.insert(lsp.uri(relative), (text.to_string(), 1));
    }

    /// Replaces a buffer's text, as typing does.
    async fn set(&mut self, lsp: &Session, relative: &str, text: &str) {
        let uri = lsp.uri(relative);
        let (current, version) = self.0.get_mut(&uri).unwrap();
        *version += 1;
        *current = text.to_string();
        let params = json!({"textDocument": {"uri": uri, "version": *version}, "contentChanges": [{"text": text}]});
        lsp.client.notify("textDocument/didChange", params).await;
    }

    /// Applies the `workspace/applyEdit` requests received since `seen` to the open buffers, as
    /// an editor does (versions checked, edits applied, `didChange` sent); returns how many.
    async fn apply_edits(&mut self, lsp: &Session, seen: &mut usize) -> usize {
        let requests: Vec<Value> =
            lsp.client.server_requests().into_iter().filter(|r| r["method"] == "workspace/applyEdit").collect();
        let new = requests[*seen..].to_vec();
        *seen = requests.len();
        for request in &new {
            for change in request["params"]["edit"]["documentChanges"].as_array().unwrap() {
                let uri = change["textDocument"]["uri"].as_str().expect("a text document edit").to_string();
                let (text, version) = self.0.get(&uri).cloned().expect("an edit of an open buffer");
                assert_eq!(change["textDocument"]["version"], version, "the edit names the buffer's version");
                let mut edits: Vec<&Value> = change["edits"].as_array().unwrap().iter().collect();
                edits.sort_by_key(|edit| std::cmp::Reverse(offset(&text, &edit["range"]["start"])));
                let mut text = text;
                for edit in edits {
                    let (start, end) = (offset(&text, &edit["range"]["start"]), offset(&text, &edit["range"]["end"]));
                    text.replace_range(start..end, edit["newText"].as_str().unwrap());
                }
                let relative = uri.strip_prefix(&format!("{}/", lsp_client::file_uri(lsp.root()))).unwrap().to_string();
                self.set(lsp, &relative, &text).await;
            }
        }
        new.len()
    }

    fn text(&self, lsp: &Session, relative: &str) -> String {
        self.0[&lsp.uri(relative)].0.clone()
    }
}

/// The byte offset of an LSP position in ASCII text.
fn offset(text: &str, position: &Value) -> usize {
    let line = position["line"].as_u64().unwrap() as usize;
    let character = position["character"].as_u64().unwrap() as usize;
    let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    start + character
}

/// The id of the tree entry that `matches`.
async fn entry(lsp: &Session, session_id: &str, matches: impl Fn(&Value) -> bool) -> String {
    let tree = lsp.client.command("reins.session.tree", json!({"sessionId": session_id})).await.unwrap();
    let node = tree["nodes"].as_array().unwrap().iter().find(|node| matches(node)).cloned();
    node.unwrap_or_else(|| panic!("no such entry in {tree:#}"))["id"].as_str().unwrap().to_string()
}

/// Waits for the `edit_resolved` of pending edit `id`; its outcome.
async fn resolved(lsp: &Session, id: &str) -> String {
    let event = lsp
        .client
        .wait_for(WAIT, |n| n["params"]["event"]["type"] == "edit_resolved" && n["params"]["event"]["id"] == id)
        .await
        .unwrap_or_else(|err| panic!("{id} was not resolved: {err}"));
    event["params"]["event"]["outcome"].as_str().unwrap().to_string()
}

/// `edits` and `conflicts` of a restore, one line each, ids and URIs left out.
fn summary(answer: &Value) -> Vec<String> {
    let edits = answer["edits"].as_array().unwrap().iter().map(|e| format!("edit {} {}", e["action"], e["path"]));
    let conflicts = answer["conflicts"].as_array().unwrap().iter().map(|c| {
        format!(
            "conflict {} lines {}-{}: {}",
            c["path"], c["range"]["start"]["line"], c["range"]["end"]["line"], c["reason"]
        )
    });
    edits.chain(conflicts).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigate_and_fork_with_files_propose_each_file_and_name_the_conflicts() {
    let edit = |id: &str, old: &str, new: &str| {
        Reply::tool_call(id, "edit", json!({"path": "src/lib.rs", "edits": [{"oldText": old, "newText": new}]}))
    };
    let lsp = start(
        &[("src/lib.rs", LIB), ("README.md", "# demo\n")],
        vec![
            edit("c1", "fn two() {}", "fn two() { 2 }").with_tool_call(
                "c2",
                "write",
                json!({"path": "notes.md", "content": "notes\n"}),
            ),
            Reply::text("run one done"),
            edit("c3", "fn three() {}", "fn three() { 3 }"),
            Reply::tool_call("c4", "bash", json!({"command": "echo hi > untracked.txt"})),
            Reply::text("run two done"),
        ],
        json!({"approval": {"edit": "auto", "write": "auto", "bash": "auto"}}),
    )
    .await;
    let root = lsp.root().to_path_buf();
    let first = lsp.client.command("reins.chat.send", json!({"text": "first"})).await.unwrap();
    lsp.run_events(first["runId"].as_str().unwrap()).await;
    let session_id = first["sessionId"].as_str().unwrap().to_string();
    let second =
        lsp.client.command("reins.chat.send", json!({"text": "second", "sessionId": session_id})).await.unwrap();
    lsp.run_events(second["runId"].as_str().unwrap()).await;
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        "fn one() {}\nfn two() { 2 }\nfn three() { 3 }\n"
    );

    // The user opens the file and types a line of their own (unsaved).
    let mut buffers = Buffers::default();
    let mine = "// mine\nfn one() {}\nfn two() { 2 }\nfn three() { 3 }\n";
    buffers.open(&lsp, "src/lib.rs", "fn one() {}\nfn two() { 2 }\nfn three() { 3 }\n").await;
    buffers.set(&lsp, "src/lib.rs", mine).await;

    // Back to before the first run, files too: one pending edit per file, nothing changed yet.
    let start_entry = entry(&lsp, &session_id, |node| node["role"] == "user" && node["preview"] == "first").await;
    let answer = lsp
        .client
        .command("reins.session.navigate", json!({"sessionId": session_id, "entryId": start_entry, "files": true}))
        .await
        .unwrap();
    assert_eq!(summary(&answer), ["edit \"delete\" \"notes.md\"", "edit \"merge\" \"src/lib.rs\""]);
    assert_eq!(answer["commands"][0]["command"], "echo hi > untracked.txt");
    assert_eq!(answer["commands"][0]["warning"], "a command ran here; its effects on files were not tracked");
    let documented = super::docs::examples()
        .into_iter()
        .rfind(|example| example.kind == "result" && example.name == "reins.session.navigate")
        .unwrap();
    super::docs::same_shape(&documented.json, &answer, "navigate with files").unwrap();
    // At the user's own message the move lands just before it, the message given back.
    assert_eq!(answer["prompt"], "first");
    let tree = lsp.client.command("reins.session.tree", json!({"sessionId": session_id})).await.unwrap();
    let asked = tree["nodes"].as_array().unwrap().iter().find(|node| node["id"] == start_entry.as_str()).unwrap();
    assert_eq!(tree["leaf"], asked["parentId"], "the leaf moved at once");
    assert!(root.join("notes.md").exists(), "the files wait for the user");

    // Each is a pending edit like any proposal: the lib's hunks undo both runs' changes.
    let listed = lsp.client.command("reins.edit.list", json!({"sessionId": session_id})).await.unwrap();
    let lib_edit = listed.as_array().unwrap().iter().find(|e| e["uri"] == lsp.uri("src/lib.rs")).unwrap().clone();
    assert_eq!((lib_edit["tool"].as_str(), lib_edit["toolCallId"].is_null()), (Some("checkout"), true));
    assert_eq!(lib_edit["version"], 2, "against the buffer as the user left it");
    let hunks: Vec<(&str, &str)> = lib_edit["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["oldText"].as_str().unwrap(), h["newText"].as_str().unwrap()))
        .collect();
    // Both runs' changes are on adjacent lines: one hunk, narrowed to what differs.
    assert_eq!(hunks, [(" 2 }\nfn three() { 3 ", "}\nfn three() {")]);

    // Accepting them: the open file through applyEdit (versioned), the closed one on disk.
    let mut seen = 0;
    let ids: Vec<String> =
        answer["edits"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect();
    for id in &ids {
        lsp.client.command("reins.edit.accept", json!({"id": id})).await.unwrap();
    }
    for id in &ids {
        assert_eq!(resolved(&lsp, id).await, "applied");
    }
    assert_eq!(buffers.apply_edits(&lsp, &mut seen).await, 1, "one applyEdit for the open file");
    assert_eq!(buffers.text(&lsp, "src/lib.rs"), format!("// mine\n{LIB}"), "the user's line survived");
    assert!(!root.join("notes.md").exists(), "the created file is gone");
    assert_eq!(std::fs::read_to_string(root.join("README.md")).unwrap(), "# demo\n", "untouched");
    assert!(root.join("untracked.txt").exists(), "what the command did stays");

    // The user now changes the line the second run changed; forward to its end again.
    buffers.set(&lsp, "src/lib.rs", "// mine\nfn one() {}\nfn two() {}\nfn three() { 33 }\n").await;
    let run_two_end = entry(&lsp, &session_id, |node| node["preview"] == "run two done").await;
    let answer = lsp
        .client
        .command("reins.session.navigate", json!({"sessionId": session_id, "entryId": run_two_end, "files": true}))
        .await
        .unwrap();
    expect_test::expect![[r#"
        [
            "edit \"create\" \"notes.md\"",
            "conflict \"src/lib.rs\" lines 3-4: \"your edits overlap the agent's change (the user changed line 4 of the current text, where the edit changes line 3 of the text it was made from)\"",
        ]
    "#]]
    .assert_debug_eq(&summary(&answer));
    super::docs::same_shape(&documented.json, &answer, "navigate with files, a conflict").unwrap();
    // The change the user would make by hand for the file to follow.
    expect_test::expect![[r#"
        --- a/src/lib.rs
        +++ b/src/lib.rs
        @@ -1,3 +1,3 @@
         fn one() {}
         fn two() { 2 }
        -fn three() {}
        +fn three() { 3 }
    "#]]
    .assert_eq(answer["conflicts"][0]["change"].as_str().unwrap());
    let id = answer["edits"][0]["id"].as_str().unwrap().to_string();
    lsp.client.command("reins.edit.accept", json!({"id": id})).await.unwrap();
    assert_eq!(resolved(&lsp, &id).await, "applied");
    assert_eq!(std::fs::read_to_string(root.join("notes.md")).unwrap(), "notes\n");
    assert_eq!(buffers.apply_edits(&lsp, &mut seen).await, 0, "the conflicting file is left as it is");

    // A fork at the first prompt, files too: the edits belong to the new session.
    let forked = lsp
        .client
        .command("reins.session.fork", json!({"sessionId": session_id, "entryId": start_entry, "files": true}))
        .await
        .unwrap();
    let fork_id = forked["sessionId"].as_str().unwrap().to_string();
    assert_ne!(fork_id, session_id);
    let documented = super::docs::examples()
        .into_iter()
        .rfind(|example| example.kind == "result" && example.name == "reins.session.fork")
        .unwrap();
    super::docs::same_shape(&documented.json, &forked, "fork with files").unwrap();
    let forked_summary = summary(&forked);
    assert_eq!(forked_summary.len(), 2, "{forked:#}");
    assert_eq!(forked_summary[0], "edit \"delete\" \"notes.md\"");
    assert!(forked_summary[1].starts_with("conflict \"src/lib.rs\""), "{forked:#}");
    let fork_edit = forked["edits"][0]["id"].as_str().unwrap().to_string();
    let listed = lsp.client.command("reins.edit.list", json!({"sessionId": fork_id})).await.unwrap();
    let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [fork_edit.as_str()], "the fork's restore is the new session's");
    let listed = lsp.client.command("reins.edit.list", json!({"sessionId": session_id})).await.unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 0, "none in the session forked from");
    lsp.client.command("reins.edit.reject", json!({"id": fork_edit})).await.unwrap();
    assert_eq!(resolved(&lsp, &fork_edit).await, "rejected");
    assert!(root.join("notes.md").exists(), "a rejected restore leaves the file");

    let run_one_end = entry(&lsp, &session_id, |node| node["preview"] == "run one done").await;
    // Rejecting a restore leaves the file as it is.
    buffers.set(&lsp, "src/lib.rs", "// mine\nfn one() {}\nfn two() { 2 }\nfn three() { 3 }\n").await;
    let again = lsp
        .client
        .command("reins.session.navigate", json!({"sessionId": session_id, "entryId": run_one_end, "files": true}))
        .await
        .unwrap();
    let restore = again["edits"][0]["id"].as_str().unwrap().to_string();
    lsp.client.command("reins.edit.reject", json!({"id": restore})).await.unwrap();
    assert_eq!(resolved(&lsp, &restore).await, "rejected");
    assert_eq!(buffers.apply_edits(&lsp, &mut seen).await, 0);
}
