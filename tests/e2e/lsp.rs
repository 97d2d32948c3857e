//! End-to-end tests of `reins lsp`: the real binary over stdio (and TCP), the LSP test client,
//! and a scripted OpenAI-compatible server on 127.0.0.1, in a temp workspace.

#[path = "lsp/checkpoints.rs"]
mod checkpoints;
#[path = "lsp/comments.rs"]
mod comments;
#[path = "lsp/diagnostics.rs"]
mod diagnostics;
#[path = "support/doc_examples.rs"]
mod doc_examples;
#[path = "lsp/docs.rs"]
mod docs;
#[path = "lsp/folders.rs"]
mod folders;
#[path = "lsp/helix.rs"]
mod helix;
#[path = "lsp/listen.rs"]
mod listen;
#[path = "lsp/listing.rs"]
mod listing;
#[path = "lsp/mcp.rs"]
mod mcp;
#[path = "lsp/review.rs"]
mod review;
#[path = "lsp/secrets.rs"]
mod secrets;
#[path = "lsp/settings.rs"]
mod settings;
#[path = "lsp/soak.rs"]
mod soak;
#[path = "support/mod.rs"]
mod support;
#[path = "lsp/sync.rs"]
mod sync;
#[path = "lsp/transport.rs"]
mod transport;
#[path = "lsp/worktrees.rs"]
mod worktrees;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use expect_test::expect;
use lsp_client::{LspClient, file_uri};
use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};

/// A key that must never show up in anything reins prints.
const CANARY_KEY: &str = "sk-canary-lsp-0c9d22f1";
const WAIT: Duration = Duration::from_secs(20);

/// A running `reins lsp` with its workspace and model server.
pub struct Session {
    pub client: LspClient,
    pub dir: tempfile::TempDir,
    pub server: ScriptedServer,
}

impl Session {
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn uri(&self, relative: &str) -> String {
        file_uri(&self.root().join(relative))
    }

    /// `didOpen` of a workspace file with `text` (which need not match the disk).
    pub async fn open(&self, relative: &str, language: &str, text: &str) {
        let uri = self.uri(relative);
        self.client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}}),
            )
            .await;
    }

    /// The `reins/event` notifications of one run, events only, once its `agent_end` arrived.
    pub async fn run_events(&self, run_id: &str) -> Vec<Value> {
        let done = self
            .client
            .wait_for(WAIT, |n| {
                n["method"] == "reins/event"
                    && n["params"]["runId"] == run_id
                    && n["params"]["event"]["type"] == "agent_end"
            })
            .await;
        done.unwrap_or_else(|err| panic!("run {run_id} did not end: {err}"));
        self.client
            .notifications()
            .into_iter()
            .filter(|n| n["method"] == "reins/event" && n["params"]["runId"] == run_id)
            .map(|n| n["params"]["event"].clone())
            .collect()
    }
}

/// Starts the server in a workspace holding `files`, against a scripted model playing `replies`,
/// initialized with `options` laid over `{baseUrl}`.
pub async fn start(files: &[(&str, &str)], replies: Vec<Reply>, options: Value) -> Session {
    start_with(files, replies, options, json!({})).await
}

/// [`start`] with `workspace` laid over the client's workspace capabilities.
pub async fn start_with(files: &[(&str, &str)], replies: Vec<Reply>, options: Value, workspace: Value) -> Session {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let server = ScriptedServer::start(replies).await;
    let client = LspClient::spawn(reins_lsp(dir.path(), &["--stdio"])).unwrap();
    let mut init = json!({"baseUrl": server.base_url(), "model": "scripted-model"});
    for (key, value) in options.as_object().cloned().unwrap_or_default() {
        init[key] = value;
    }
    let result = client.initialize_with(dir.path(), init, &["utf-16"], workspace).await.unwrap();
    assert_eq!(result["capabilities"]["positionEncoding"], "utf-16");
    Session { client, dir, server }
}

/// `reins lsp ARGS` in `workspace`, with a clean environment.
pub fn reins_lsp(workspace: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_reins"));
    command
        .arg("lsp")
        .args(args)
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", workspace)
        .env("REINS_HOME", workspace.join(".reins-home-for-test"))
        .env("OPENAI_API_KEY", CANARY_KEY)
        .env("REINS_LOG", "warn")
        // A test's MCP servers are in its first request however loaded the machine.
        .env("REINS_MCP_STARTUP_WAIT", "60");
    command
}

/// Event types with runs of `message_update` collapsed to one (how many arrive is timing).
fn event_types(events: &[Value]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for event in events {
        let kind = event["type"].as_str().unwrap_or("?");
        if kind == "message_update" && out.last() == Some(&"message_update") {
            continue;
        }
        out.push(kind);
    }
    out.join("\n")
}

/// The concatenated text deltas of a run.
fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "message_update" && e["delta"]["kind"] == "text")
        .map(|e| e["delta"]["delta"].as_str().unwrap())
        .collect()
}

/// The text of the last user message of a recorded model request.
fn last_user_text(body: &Value) -> String {
    let message = body["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "user").unwrap();
    match &message["content"] {
        Value::String(text) => text.clone(),
        parts => parts.as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_streams_events_to_agent_end_with_progress() {
    let answer = "Hello from the scripted model, streamed in small pieces.";
    let lsp = start(&[], vec![Reply::text(answer).with_chunk_chars(4)], json!({})).await;

    let started = lsp.client.command("reins.chat.send", json!({"text": "say hello"})).await.unwrap();
    let run_id = started["runId"].as_str().unwrap().to_string();
    assert!(started["sessionId"].is_string());
    let events = lsp.run_events(&run_id).await;
    expect![[r#"
        agent_start
        message_start
        message_end
        turn_start
        message_start
        message_update
        message_end
        turn_end
        agent_end"#]]
    .assert_eq(&event_types(&events));
    assert_eq!(streamed_text(&events), answer);
    assert_eq!(events.last().unwrap()["reason"], "final_answer");

    // seq goes up by one per notification on the connection.
    let seqs: Vec<u64> = lsp
        .client
        .notifications()
        .iter()
        .filter(|n| n["method"] == "reins/event")
        .map(|n| n["params"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());

    // $/progress: a server-created token, begin with the prompt, end with the outcome.
    let token = format!("reins/run/{run_id}");
    let created = lsp.client.server_requests();
    assert!(created.iter().any(|r| r["method"] == "window/workDoneProgress/create" && r["params"]["token"] == token));
    lsp.client.wait_for(WAIT, |n| n["method"] == "$/progress" && n["params"]["value"]["kind"] == "end").await.unwrap();
    let progress: Vec<String> = lsp
        .client
        .notifications()
        .iter()
        .filter(|n| n["method"] == "$/progress" && n["params"]["token"] == token)
        .map(|n| format!("{} {}", n["params"]["value"]["kind"], n["params"]["value"]["message"]))
        .collect();
    assert_eq!(progress, [r#""begin" "say hello""#, r#""end" "done""#]);
    assert_eq!(lsp.client.shutdown().await, Some(0));
}

/// `reins.session.lastRequest` answers the request as the model server received it — its URL and
/// its JSON body, exactly — with a key that a message quotes redacted; both `null` before the
/// session's first model call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_request_is_what_the_model_server_received_with_keys_redacted() {
    let lsp = start(&[], vec![Reply::text("ok")], json!({"apiKey": CANARY_KEY})).await;
    let session = lsp.client.command("reins.session.new", json!({})).await.unwrap();
    let session_id = session["sessionId"].as_str().unwrap();
    let before = lsp.client.command("reins.session.lastRequest", json!({"sessionId": session_id})).await.unwrap();
    assert_eq!(before, json!({"url": null, "body": null}));

    let text = format!("my key is {CANARY_KEY}, keep it");
    let started = lsp.client.command("reins.chat.send", json!({"text": text, "sessionId": session_id})).await.unwrap();
    lsp.run_events(started["runId"].as_str().unwrap()).await;
    let last = lsp.client.command("reins.session.lastRequest", json!({"sessionId": session_id})).await.unwrap();
    let received = lsp.server.chat_requests().pop().unwrap();
    assert_eq!(last["url"], format!("{}/chat/completions", lsp.server.base_url().trim_end_matches('/')));
    let redacted: Value = serde_json::from_str(&received.body.to_string().replace(CANARY_KEY, "<redacted>")).unwrap();
    assert_eq!(last["body"], redacted);
    assert!(last["body"].to_string().contains("my key is <redacted>, keep it"));
    assert!(!last.to_string().contains(CANARY_KEY));
}

/// The model server dies mid-answer: `agent_end` says so in one line with what to do. A client
/// that shows it in a chat (`capabilities.chat`) gets no `window/showMessage` repeating it;
/// another client does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_answer_is_one_line_shown_once() {
    for chat in [true, false] {
        let cut =
            Reply::text("The first part arrives, then the server dies").with_chunk_chars(5).with_cut_after_chunks(4);
        let lsp = start(&[], vec![cut, Reply::text("back")], json!({"capabilities": {"chat": chat}})).await;
        let failed = lsp.client.command("reins.chat.send", json!({"text": "talk"})).await.unwrap();
        let events = lsp.run_events(failed["runId"].as_str().unwrap()).await;
        let error = events.last().unwrap()["error"].as_str().unwrap().to_string();
        assert!(error.contains("stopped mid-answer") && error.ends_with(')') && !error.contains('\n'), "{error}");
        assert!(error.contains("check that it is still running, then send again"), "{error}");
        // Events go out in order: once the next run ended, the failure's message would have come.
        let session = json!({"text": "again", "sessionId": failed["sessionId"]});
        let next = lsp.client.command("reins.chat.send", session).await.unwrap();
        lsp.run_events(next["runId"].as_str().unwrap()).await;
        let shown: Vec<Value> = lsp
            .client
            .notifications()
            .into_iter()
            .filter(|n| n["method"] == "window/showMessage" && n["params"]["type"] == 1)
            .collect();
        assert_eq!(shown.len(), usize::from(!chat), "chat {chat}: {shown:?}");
        if let Some(shown) = shown.first() {
            assert_eq!(shown["params"]["message"], format!("reins: {error}"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_deltas_are_coalesced_without_losing_a_character() {
    let answer: String = (0..300).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let reply = Reply { chunk_delay_ms: 2, ..Reply::text(answer.clone()).with_chunk_chars(1) };
    let lsp = start(&[], vec![reply], json!({})).await;
    let begun = std::time::Instant::now();
    let started = lsp.client.command("reins.chat.send", json!({"text": "stream"})).await.unwrap();
    let events = lsp.run_events(started["runId"].as_str().unwrap()).await;
    let elapsed = begun.elapsed().as_secs_f64();
    assert_eq!(streamed_text(&events), answer);
    let updates = events.iter().filter(|e| e["type"] == "message_update").count();
    // 300 deltas arrived; at most ~30 notifications a second (plus one at each edge) went out.
    let allowed = (elapsed * 30.0).ceil() as usize + 2;
    assert!(updates <= allowed && updates < 300, "{updates} updates in {elapsed:.2}s (allowed {allowed})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_on_a_selection_sends_the_buffer_selection_path_and_diagnostics() {
    let disk = "fn answer() -> u32 {\n    41\n}\n";
    let buffer = "// unsaved\nfn answer() -> u32 {\n    \"42\"\n}\n";
    let lsp = start(
        &[("src/lib.rs", disk)],
        vec![Reply::tool_call("c1", "read", json!({"path": "src/lib.rs"})), Reply::text("It returns a string.")],
        json!({}),
    )
    .await;
    lsp.open("src/lib.rs", "rust", buffer).await;
    let uri = lsp.uri("src/lib.rs");
    let diagnostic = json!({"range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 8}},
        "severity": 1, "source": "rustc", "message": "mismatched types"});
    let actions = lsp
        .client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 1, "character": 0}, "end": {"line": 4, "character": 0}},
                "context": {"diagnostics": [diagnostic]}}),
        )
        .await
        .unwrap();
    let explain = actions.as_array().unwrap().iter().find(|a| a["title"] == "Agent: explain this").unwrap();
    let command = &explain["command"];
    assert_eq!(command["command"], "reins.ask");
    let started = lsp.client.command("reins.ask", command["arguments"][0].clone()).await.unwrap();
    let events = lsp.run_events(started["runId"].as_str().unwrap()).await;
    assert_eq!(events.last().unwrap()["reason"], "final_answer");

    let requests = lsp.server.chat_requests();
    expect![[r#"
        Explain what this code does and how it works.

        Selection: src/lib.rs lines 2-4 (rust)
        ```rust
        fn answer() -> u32 {
            "42"
        }
        ```
        Diagnostics in the selection:
        - line 3: error: mismatched types (rustc)"#]]
    .assert_eq(&last_user_text(&requests[0].body));
    // The agent's read tool sees the open buffer, not the disk.
    let tool_message = requests[1].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert!(tool_message["content"].to_string().contains("unsaved"), "{tool_message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_streaming_run() {
    let slow = Reply { chunk_delay_ms: 30, ..Reply::text("word ".repeat(200)).with_chunk_chars(5) };
    let lsp = start(&[], vec![slow], json!({})).await;
    let started = lsp.client.command("reins.chat.send", json!({"text": "talk a lot"})).await.unwrap();
    let (session_id, run_id) = (started["sessionId"].clone(), started["runId"].as_str().unwrap().to_string());
    lsp.client
        .wait_for(WAIT, |n| n["params"]["runId"] == run_id && n["params"]["event"]["type"] == "message_update")
        .await
        .unwrap();
    let cancelled = lsp.client.command("reins.chat.cancel", json!({"sessionId": session_id})).await.unwrap();
    assert_eq!(cancelled, json!({"cancelled": true}));
    let events = lsp.run_events(&run_id).await;
    assert_eq!(events.last().unwrap()["reason"], "aborted");
    assert!(streamed_text(&events).len() < 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_while_busy_is_refused_with_the_busy_code() {
    let slow = Reply { chunk_delay_ms: 30, ..Reply::text("word ".repeat(100)).with_chunk_chars(5) };
    let lsp = start(&[], vec![slow], json!({})).await;
    let started = lsp.client.command("reins.chat.send", json!({"text": "first"})).await.unwrap();
    let session_id = started["sessionId"].clone();
    let err =
        lsp.client.command("reins.chat.send", json!({"text": "second", "sessionId": session_id})).await.unwrap_err();
    assert_eq!((err.code, err.data_code()), (-32803, Some("busy")));
    assert!(err.message.contains("already in progress"), "{err}");
    // Steering is what a busy session accepts.
    lsp.client.command("reins.chat.steer", json!({"sessionId": session_id, "text": "hurry"})).await.unwrap();
    lsp.client.command("reins.chat.cancel", json!({"sessionId": session_id})).await.unwrap();
    lsp.run_events(started["runId"].as_str().unwrap()).await;
    let idle =
        lsp.client.command("reins.chat.steer", json!({"sessionId": session_id, "text": "late"})).await.unwrap_err();
    assert_eq!(idle.data_code(), Some("invalid_state"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_errors_and_the_server_keeps_answering() {
    let lsp = start(&[], vec![], json!({})).await;
    let check = |answer: Result<Value, lsp_client::RpcError>| match answer {
        Ok(value) => format!("ok {value}"),
        Err(err) => format!("{} {}", err.code, err.data_code().unwrap_or("-")),
    };
    // Not JSON at all: answered with a parse error (id null), and the connection survives.
    lsp.client.send_frame(b"{this is not json").await;
    // JSON, but not a JSON-RPC message.
    lsp.client.send_frame(br#"{"hello": "world"}"#).await;
    let unknown_method = lsp.client.request("reins/noSuchMethod", json!({})).await;
    let unknown_command = lsp.client.command("reins.nope", json!({})).await;
    let wrong_shape = lsp.client.command("reins.chat.send", json!({"text": 42})).await;
    let not_an_object = lsp
        .client
        .request("workspace/executeCommand", json!({"command": "reins.chat.cancel", "arguments": ["s"]}))
        .await;
    let no_session = lsp.client.command("reins.session.messages", json!({"sessionId": "missing"})).await;
    let empty = lsp.client.command("reins.chat.send", json!({"text": "  "})).await;
    let results = [unknown_method, unknown_command, wrong_shape, not_an_object, no_session, empty].map(check);
    assert_eq!(
        results,
        [
            "-32601 -",
            "-32602 invalid_argument",
            "-32602 invalid_argument",
            "-32602 invalid_argument",
            "-32602 invalid_argument",
            "-32602 invalid_argument"
        ]
    );
    let orphans = lsp.client.orphan_errors();
    let codes: Vec<&Value> = orphans.iter().map(|answer| &answer["error"]["code"]).collect();
    assert_eq!(codes, [&json!(-32700), &json!(-32600)], "{orphans:?}");
    // And the next request is served.
    let created = lsp.client.command("reins.session.new", json!({"name": "after errors"})).await.unwrap();
    let messages =
        lsp.client.command("reins.session.messages", json!({"sessionId": created["sessionId"]})).await.unwrap();
    assert_eq!(messages["messages"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denied_edits_are_refused_and_auto_edits_reach_the_editor_as_minimal_edits() {
    let write =
        || Reply::tool_call("c1", "edit", json!({"path": "a.txt", "edits": [{"oldText": "one", "newText": "two"}]}));
    // approval.edit = deny: the model is told not to try again, and nothing is asked.
    let lsp =
        start(&[("a.txt", "one\n")], vec![write(), Reply::text("ok")], json!({"approval": {"edit": "deny"}})).await;
    let started = lsp.client.command("reins.chat.send", json!({"text": "edit"})).await.unwrap();
    let events = lsp.run_events(started["runId"].as_str().unwrap()).await;
    assert!(!events.iter().any(|e| e["type"] == "edit_proposed"));
    let tool = lsp.server.chat_requests()[1].body["messages"][3]["content"].to_string();
    assert!(tool.contains("do not allow the `edit` tool"), "{tool}");
    assert_eq!(std::fs::read_to_string(lsp.root().join("a.txt")).unwrap(), "one\n");

    // approval.edit = auto and the file open: the change goes to the editor as applyEdit, as
    // the smallest edit that makes it (the line break stays untouched).
    let lsp =
        start(&[("a.txt", "one\n")], vec![write(), Reply::text("ok")], json!({"approval": {"edit": "auto"}})).await;
    lsp.open("a.txt", "plaintext", "one\r\n").await;
    let started = lsp.client.command("reins.chat.send", json!({"text": "edit"})).await.unwrap();
    let events = lsp.run_events(started["runId"].as_str().unwrap()).await;
    let end = events.iter().find(|e| e["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["isError"], false, "{end}");
    let apply = lsp.client.server_requests().into_iter().find(|r| r["method"] == "workspace/applyEdit").unwrap();
    expect![[r#"{"documentChanges":[{"textDocument":{"uri":"file:///ROOT/a.txt","version":1},"edits":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":3}},"newText":"two"}]}]}"#]]
    .assert_eq(&apply["params"]["edit"].to_string().replace(&file_uri(lsp.root()), "file:///ROOT"));
    // The disk is the editor's business: nothing was written behind its back.
    assert_eq!(std::fs::read_to_string(lsp.root().join("a.txt")).unwrap(), "one\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration_changes_apply_to_the_next_model_call() {
    let lsp = start(&[], vec![Reply::text("one"), Reply::text("two")], json!({})).await;
    let first = lsp.client.command("reins.chat.send", json!({"text": "a"})).await.unwrap();
    lsp.run_events(first["runId"].as_str().unwrap()).await;
    lsp.client
        .notify("workspace/didChangeConfiguration", json!({"settings": {"reins": {"model": "other-model"}}}))
        .await;
    let second = lsp.client.command("reins.chat.send", json!({"text": "b"})).await.unwrap();
    lsp.run_events(second["runId"].as_str().unwrap()).await;
    let models: Vec<Value> = lsp.server.chat_requests().iter().map(|r| r.body["model"].clone()).collect();
    assert_eq!(models, [json!("scripted-model"), json!("other-model")]);
    let set = lsp
        .client
        .command("reins.model.set", json!({"sessionId": first["sessionId"], "model": "third"}))
        .await
        .unwrap();
    assert_eq!(set["model"]["id"], "third");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_list_fork_navigate_and_messages_round_trip() {
    let lsp = start(&[], vec![Reply::text("first answer"), Reply::text("second answer")], json!({})).await;
    let command = |name: &'static str, argument: Value| {
        let client = &lsp.client;
        async move { client.command(name, argument).await.unwrap_or_else(|err| panic!("{name}: {err}")) }
    };
    let texts = |messages: &Value| -> Vec<String> {
        messages["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let text: String = m["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect();
                format!("{}: {text}", m["role"].as_str().unwrap())
            })
            .collect()
    };

    let first = command("reins.chat.send", json!({"text": "one"})).await;
    lsp.run_events(first["runId"].as_str().unwrap()).await;
    let session = first["sessionId"].clone();
    let tree = command("reins.session.tree", json!({"sessionId": session})).await;
    let answer_entry =
        tree["nodes"].as_array().unwrap().iter().find(|n| n["role"] == "assistant").unwrap()["id"].clone();
    assert_eq!(tree["leaf"], answer_entry);

    let second = command("reins.chat.send", json!({"text": "two", "sessionId": session})).await;
    lsp.run_events(second["runId"].as_str().unwrap()).await;
    let all = command("reins.session.messages", json!({"sessionId": session})).await;
    assert_eq!(texts(&all), ["user: one", "assistant: first answer", "user: two", "assistant: second answer"]);

    // A fork at the first answer holds the conversation up to there.
    let fork = command("reins.session.fork", json!({"sessionId": session, "entryId": answer_entry})).await;
    assert_ne!(fork["sessionId"], session);
    let forked = command("reins.session.messages", json!({"sessionId": fork["sessionId"]})).await;
    assert_eq!(texts(&forked), ["user: one", "assistant: first answer"]);

    // Navigating back moves the original session's leaf; labels and names show in tree and list.
    command("reins.session.navigate", json!({"sessionId": session, "entryId": answer_entry})).await;
    let back = command("reins.session.messages", json!({"sessionId": session})).await;
    assert_eq!(texts(&back), ["user: one", "assistant: first answer"]);
    let tree = command("reins.session.tree", json!({"sessionId": session})).await;
    assert_eq!(tree["leaf"], answer_entry);
    command("reins.session.label", json!({"sessionId": session, "entryId": answer_entry, "label": "good point"})).await;
    command("reins.session.rename", json!({"sessionId": session, "name": "numbers"})).await;
    let tree = command("reins.session.tree", json!({"sessionId": session})).await;
    let labelled = tree["nodes"].as_array().unwrap().iter().find(|n| n["id"] == answer_entry).unwrap();
    assert_eq!(labelled["label"], "good point");

    let list = command("reins.session.list", json!({})).await;
    let mut names: Vec<String> =
        list["sessions"].as_array().unwrap().iter().map(|s| format!("{} {}", s["name"], s["id"] == session)).collect();
    names.sort();
    assert_eq!(names, ["\"numbers\" true", "null false"]);
    // A page at a time: `limit` bounds the answer, `nextCursor` asks for the rest.
    let ids =
        |page: &Value| -> Vec<Value> { page["sessions"].as_array().unwrap().iter().map(|s| s["id"].clone()).collect() };
    let first_page = command("reins.session.list", json!({"limit": 1})).await;
    let cursor = first_page["nextCursor"].clone();
    assert!(cursor.is_string(), "no nextCursor: {first_page}");
    let second_page = command("reins.session.list", json!({"limit": 1, "cursor": cursor})).await;
    assert_eq!(second_page.get("nextCursor"), None);
    assert_eq!([ids(&first_page), ids(&second_page)].concat(), ids(&list));
    let refused = lsp.client.command("reins.session.list", json!({"cursor": "not a cursor"})).await.unwrap_err();
    assert_eq!(refused.data_code(), Some("invalid_argument"));
    let opened = command("reins.session.open", json!({"sessionId": session})).await;
    assert_eq!(opened["sessionId"], session);
}

/// Issue 28, item 4: a fork or a move to one of the user's messages lands before it and gives its
/// text back to edit (as pi does), so the next message takes its place: the model never gets two
/// user messages in a row. Any other entry is itself, with nothing given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_or_navigate_at_a_user_message_gives_it_back_to_edit() {
    let replies = vec![Reply::text("Tidied."), Reply::text("Smaller."), Reply::text("Smaller still.")];
    let lsp = start(&[], replies, json!({})).await;
    let command = |name: &'static str, argument: Value| {
        let client = &lsp.client;
        async move { client.command(name, argument).await.unwrap_or_else(|err| panic!("{name}: {err}")) }
    };
    // The roles of the conversation the model got last, its system prompt left out.
    let roles = || -> Vec<String> {
        let requests = lsp.server.chat_requests();
        let messages = requests.last().unwrap().body["messages"].as_array().unwrap().clone();
        messages.iter().map(|m| m["role"].as_str().unwrap().to_string()).filter(|role| role != "system").collect()
    };
    let run = |started: Value| {
        let lsp = &lsp;
        async move { lsp.run_events(started["runId"].as_str().unwrap()).await }
    };

    let first = command("reins.chat.send", json!({"text": "Tidy up calc.py"})).await;
    let session = first["sessionId"].clone();
    run(first).await;
    let tree = command("reins.session.tree", json!({"sessionId": session})).await;
    let node = |role: &str| tree["nodes"].as_array().unwrap().iter().find(|n| n["role"] == role).unwrap()["id"].clone();
    let (asked, answered) = (node("user"), node("assistant"));

    let fork = command("reins.session.fork", json!({"sessionId": session, "entryId": asked})).await;
    assert_eq!(fork["prompt"], "Tidy up calc.py", "{fork}");
    let forked = command("reins.session.messages", json!({"sessionId": fork["sessionId"]})).await;
    assert_eq!(forked["messages"], json!([]));
    run(command("reins.chat.send", json!({"text": "try again but smaller", "sessionId": fork["sessionId"]})).await)
        .await;
    assert_eq!(roles(), ["user"]);

    let navigated = command("reins.session.navigate", json!({"sessionId": session, "entryId": asked})).await;
    assert_eq!(navigated, json!({"prompt": "Tidy up calc.py"}));
    run(command("reins.chat.send", json!({"text": "smaller still", "sessionId": session})).await).await;
    assert_eq!(roles(), ["user"]);

    let at_answer = command("reins.session.fork", json!({"sessionId": session, "entryId": answered})).await;
    assert_eq!(at_answer.get("prompt"), None, "{at_answer}");
    let kept = command("reins.session.messages", json!({"sessionId": at_answer["sessionId"]})).await;
    assert_eq!(kept["messages"].as_array().unwrap().len(), 2, "{kept}");
}

/// Issue 11, item 17: a session open in the editor is not locked; the terminal continues it, and
/// the editor's next message comes after the terminal's turn. While one side runs, the other is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_and_terminal_take_turns_on_one_session() {
    let lsp = start(
        &[],
        vec![
            Reply::text("editor answer"),
            Reply::text("terminal answer"),
            Reply::text("slow editor answer").with_delay_ms(3000),
            Reply::text("last answer"),
        ],
        json!({}),
    )
    .await;
    let first = lsp.client.command("reins.chat.send", json!({"text": "from the editor"})).await.unwrap();
    lsp.run_events(first["runId"].as_str().unwrap()).await;
    let session = first["sessionId"].as_str().unwrap().to_string();
    let terminal = |prompt: &str| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_reins"));
        command
            .args(["run", "--session", session.as_str(), prompt])
            .current_dir(lsp.root())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", lsp.root())
            .env("REINS_HOME", lsp.root().join(".reins-home-for-test"))
            .env("OPENAI_API_KEY", CANARY_KEY)
            .env("OPENAI_BASE_URL", lsp.server.base_url())
            .env("REINS_MODEL", "scripted-model")
            .stdin(Stdio::null());
        command
    };

    let run = terminal("from the terminal").output().await.unwrap();
    assert!(run.status.success(), "the open session is not locked: {}", String::from_utf8_lossy(&run.stderr));

    // The editor's next run starts from the terminal's turn, and holds the session while it runs.
    let second =
        lsp.client.command("reins.chat.send", json!({"text": "editor again", "sessionId": session})).await.unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let refused = terminal("while the editor runs").output().await.unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("being written by another reins process"), "{refused:?}");
    lsp.run_events(second["runId"].as_str().unwrap()).await;
    let requests = lsp.server.chat_requests();
    let texts: Vec<String> = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|m| {
            let text = match &m["content"] {
                Value::String(text) => text.clone(),
                parts => parts.as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect(),
            };
            format!("{}: {text}", m["role"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        texts,
        [
            "user: from the editor",
            "assistant: editor answer",
            "user: from the terminal",
            "assistant: terminal answer",
            "user: editor again"
        ]
    );
}
