//! API keys through the language server: with trace logging on, a key from
//! `initializationOptions` and one from the environment are used for real, echoed back by the
//! provider in a 401, and still show nowhere: not in any LSP message, the server's stderr, or
//! any file under the workspace and `REINS_HOME` (session files).

use std::process::Stdio;

use lsp_client::LspClient;
use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};

use super::support::files_containing;
use super::{CANARY_KEY, WAIT, reins_lsp};

/// The key the editor hands over for `baseUrl`.
const EDITOR_KEY: &str = "sk-canary-editor-9b1d7e42";
/// The Anthropic key of the environment.
const ENV_KEY: &str = "sk-ant-canary-env-5c3a0f88";

/// Sends `text` in `session_id` and returns the run's `agent_end` event.
async fn chat(client: &LspClient, session_id: &Value, text: &str) -> Value {
    let started = client.command("reins.chat.send", json!({"text": text, "sessionId": session_id})).await.unwrap();
    let run_id = started["runId"].as_str().unwrap().to_string();
    let end = client
        .wait_for(WAIT, |n| n["params"]["runId"] == run_id && n["params"]["event"]["type"] == "agent_end")
        .await
        .unwrap();
    // The failure's `window/showMessage` and `$/progress` end come after the event.
    let token = format!("reins/run/{run_id}");
    client.wait_for(WAIT, |n| n["params"]["token"] == token && n["params"]["value"]["kind"] == "end").await.unwrap();
    end["params"]["event"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_keys_never_reach_messages_logs_or_session_files() {
    let dir = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let stderr_path = logs.path().join("stderr.log");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let server = ScriptedServer::start(vec![
        Reply::http_error(401, format!("Incorrect API key provided: {EDITOR_KEY}. Check it.")),
        Reply::text("fine, with the editor's key"),
        Reply::http_error(401, format!("invalid x-api-key: {ENV_KEY}")),
        Reply::text("fine, with the environment's key"),
    ])
    .await;
    let mut command = reins_lsp(dir.path(), &["--stdio"]);
    command.env("REINS_LOG", "trace").env("ANTHROPIC_API_KEY", ENV_KEY).stderr(Stdio::from(stderr));
    let client = LspClient::spawn(command).unwrap();
    let options = json!({"baseUrl": server.base_url(), "model": "scripted-model", "apiKey": EDITOR_KEY,
        "providers": {"anthropic": {"baseUrl": server.anthropic_base_url()}}});
    client.initialize(dir.path(), options, &["utf-16"]).await.unwrap();

    // The editor's key, for the OpenAI-compatible endpoint: refused, then accepted.
    let local = client.command("reins.session.new", json!({})).await.unwrap()["sessionId"].clone();
    let refused = chat(&client, &local, "hello").await;
    assert_eq!(refused["reason"], "error", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("Incorrect API key provided"), "{refused}");
    assert_eq!(chat(&client, &local, "again").await["reason"], "final_answer");

    // The environment's key, for Anthropic: refused, then accepted.
    let claude = client.command("reins.session.new", json!({})).await.unwrap()["sessionId"].clone();
    let model = json!({"sessionId": claude, "model": "anthropic/claude-haiku-4-5"});
    client.command("reins.model.set", model).await.unwrap();
    let refused = chat(&client, &claude, "hello").await;
    assert_eq!(refused["reason"], "error", "{refused}");
    assert_eq!(chat(&client, &claude, "again").await["reason"], "final_answer");
    // The key comes again in a settings change, and the registry is listed.
    let settings = json!({"reins": {"baseUrl": server.base_url(), "apiKey": EDITOR_KEY}});
    client.notify("workspace/didChangeConfiguration", json!({"settings": settings})).await;
    let listed = client.command("reins.model.list", json!({})).await.unwrap();
    assert!(listed["models"].as_array().is_some_and(|models| !models.is_empty()), "{listed}");
    let received = client.received();
    // The failure was shown to the user (redacted), so the grep below looks at real messages.
    assert!(received.iter().any(|body| body.contains("Incorrect API key provided")), "{received:?}");
    assert_eq!(client.shutdown().await, Some(0));

    // The keys were really used, so not finding them below means something.
    let (chats, messages) = (server.chat_requests(), server.messages_requests());
    assert_eq!((chats.len(), messages.len()), (2, 2));
    assert_eq!(chats[0].header("authorization"), Some(format!("Bearer {EDITOR_KEY}").as_str()));
    assert_eq!(messages[0].header("x-api-key"), Some(ENV_KEY));
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(stderr.contains("TRACE") || stderr.contains("DEBUG"), "no trace output: {stderr}");
    assert!(stderr.contains("Incorrect API key provided"), "the failure was not logged: {stderr}");

    for key in [EDITOR_KEY, ENV_KEY, CANARY_KEY] {
        let leaked: Vec<&String> = received.iter().filter(|body| body.contains(key)).collect();
        assert!(leaked.is_empty(), "LSP messages hold {key}: {leaked:?}");
        let lines: Vec<&str> = stderr.lines().filter(|line| line.contains(key)).collect();
        assert!(lines.is_empty(), "stderr has {key}: {lines:#?}");
        assert_eq!(files_containing(dir.path(), key), Vec::<String>::new(), "files hold {key}");
    }
    assert!(!files_containing(dir.path(), "fine, with the editor's key").is_empty(), "no session was written");
}
