//! The server's settings: the client's settings laid over config and environment, problems
//! reported as warnings without keys, each provider routed with its own endpoint and key, and
//! the registry listed by `reins.model.list`.

use expect_test::expect;
use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};

use super::{CANARY_KEY, WAIT, start};

fn is_warning(notification: &Value) -> bool {
    notification["method"] == "window/showMessage" && notification["params"]["type"] == 2
}

/// The `window/showMessage` warnings so far, once one mentioning `awaited` arrived.
async fn warnings(lsp: &super::Session, awaited: &str) -> Vec<String> {
    let mentions = |n: &Value| is_warning(n) && n["params"]["message"].as_str().is_some_and(|m| m.contains(awaited));
    lsp.client.wait_for(WAIT, mentions).await.unwrap_or_else(|err| panic!("no warning about {awaited}: {err}"));
    let notifications = lsp.client.notifications();
    notifications.iter().filter(|n| is_warning(n)).map(|n| n["params"]["message"].as_str().unwrap().into()).collect()
}

/// Sends a message (in `session`, else a new session) and waits for its run to end.
async fn chat(lsp: &super::Session, session: Option<&Value>, text: &str) -> Value {
    let mut params = json!({"text": text});
    if let Some(session) = session {
        params["sessionId"] = session.clone();
    }
    let started = lsp.client.command("reins.chat.send", params).await.unwrap();
    let events = lsp.run_events(started["runId"].as_str().unwrap()).await;
    assert_eq!(events.last().unwrap()["reason"], "final_answer", "{events:?}");
    started["sessionId"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_are_warned_about_without_keys_and_the_rest_applies() {
    let editor_key = "sk-canary-editor-3f1e";
    let options = json!({"apiKey": editor_key, "approval": {"edit": "sometimes"}, "limits": {"maxTurns": "ten"}});
    let lsp = start(&[], vec![Reply::text("fine")], options).await;
    chat(&lsp, None, "hello").await;
    // The client's key reached the model server, in place of the environment's.
    let requests = lsp.server.chat_requests();
    assert_eq!(requests[0].header("authorization"), Some(format!("Bearer {editor_key}").as_str()));

    // A later change: only the problem it brings is reported; the earlier ones were.
    let change = json!({"reins": {"approval": {"bash": 5}}});
    lsp.client.notify("workspace/didChangeConfiguration", json!({"settings": change})).await;
    let shown = warnings(&lsp, "approval.bash").await.join("\n---\n");
    expect![[r#"
        reins: some settings were ignored:
        - editor settings: approval.edit: expected "ask", "auto" or "deny", found "sometimes"
        - editor settings: limits.maxTurns: expected a whole number, 0 or more, found a string
        ---
        reins: some settings were ignored:
        - editor settings: approval.bash: expected a string, found an integer"#]]
    .assert_eq(&shown);
    let everything = serde_json::to_string(&lsp.client.notifications()).unwrap();
    assert!(!everything.contains(editor_key) && !everything.contains(CANARY_KEY));
    // And the server keeps serving.
    lsp.client.command("reins.session.list", json!({})).await.unwrap();
}

/// Issue 11, item 16: a change with a wrong-typed `apiKey` is reported and ignored; the key from
/// `initializationOptions` keeps going out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_typed_key_in_a_change_does_not_erase_the_good_one() {
    let editor_key = "sk-canary-editor-9b2d";
    let lsp = start(&[], vec![Reply::text("one"), Reply::text("two")], json!({"apiKey": editor_key})).await;
    chat(&lsp, None, "hello").await;
    let change = json!({"reins": {"apiKey": 42, "approval": {"bash": "deny"}}});
    lsp.client.notify("workspace/didChangeConfiguration", json!({"settings": change})).await;
    let shown = warnings(&lsp, "apiKey").await.join("\n---\n");
    expect![[r#"
        reins: some settings were ignored:
        - editor settings: apiKey: expected a string, found an integer"#]]
    .assert_eq(&shown);
    chat(&lsp, None, "again").await;
    let requests = lsp.server.chat_requests();
    let keys: Vec<Option<&str>> = requests.iter().map(|request| request.header("authorization")).collect();
    let bearer = format!("Bearer {editor_key}");
    assert_eq!(keys, [Some(bearer.as_str()), Some(bearer.as_str())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_provider_has_its_endpoint_and_key_and_new_endpoints_reach_live_sessions() {
    let lsp = start(&[], vec![Reply::text("from openai-compatible"), Reply::text("from anthropic")], json!({})).await;
    let anthropic_key = "sk-ant-canary-77aa";
    let settings = json!({"model": "scripted-model", "baseUrl": lsp.server.base_url(),
        "providers": {"anthropic": {"baseUrl": lsp.server.anthropic_base_url(), "apiKey": anthropic_key}}});
    lsp.client.notify("workspace/didChangeConfiguration", json!({"settings": settings})).await;

    let local = chat(&lsp, None, "one").await;
    let claude = lsp.client.command("reins.session.new", json!({})).await.unwrap()["sessionId"].clone();
    let set = lsp
        .client
        .command("reins.model.set", json!({"sessionId": claude, "model": "anthropic/claude-haiku-4-5"}))
        .await
        .unwrap();
    assert_eq!(
        (set["model"]["provider"].as_str(), set["model"]["id"].as_str()),
        (Some("anthropic"), Some("claude-haiku-4-5"))
    );
    chat(&lsp, Some(&claude), "two").await;

    let chat_requests = lsp.server.chat_requests();
    let messages_requests = lsp.server.messages_requests();
    assert_eq!((chat_requests.len(), messages_requests.len()), (1, 1));
    assert_eq!(chat_requests[0].header("authorization"), Some(format!("Bearer {CANARY_KEY}").as_str()));
    assert_eq!(messages_requests[0].body["model"], "claude-haiku-4-5");
    assert_eq!(messages_requests[0].header("x-api-key"), Some(anthropic_key));
    assert_eq!(messages_requests[0].header("authorization"), None);

    // A new endpoint reaches the session that is already open, from its next model call.
    let moved = ScriptedServer::start(vec![Reply::text("from the new endpoint")]).await;
    let settings = json!({"model": "scripted-model", "baseUrl": moved.base_url()});
    lsp.client.notify("workspace/didChangeConfiguration", json!({"settings": settings})).await;
    chat(&lsp, Some(&local), "three").await;
    let moved_requests = moved.chat_requests();
    assert_eq!(moved_requests.len(), 1);
    assert_eq!(moved_requests[0].body["model"], "scripted-model");
    assert_eq!(lsp.server.chat_requests().len(), 1);
}

/// Some rows of `reins.model.list`, and which models are marked current.
async fn listed_models(lsp: &super::Session) -> String {
    let listed = lsp.client.command("reins.model.list", json!({})).await.unwrap();
    assert!(!listed.to_string().contains("canary"), "{listed}");
    let models = listed["models"].as_array().unwrap();
    let show = |id: &str| {
        let model = models.iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("{id} is not listed"));
        let (name, window) = (model["name"].as_str().unwrap(), &model["contextWindow"]);
        format!("{id} {name} window={window} key={} current={}", model["keyAvailable"], model["current"])
    };
    let current: Vec<&str> =
        models.iter().filter(|m| m["current"] == true).map(|m| m["id"].as_str().unwrap()).collect();
    let ids = ["openai/gpt-4.1", "anthropic/claude-haiku-4-5", "deepseek/deepseek-chat", "ollama/gpt-oss:20b"];
    let shown: Vec<String> =
        ids.into_iter().chain(["lab/big-model", "openai-compatible/scripted-model"]).map(show).collect();
    format!("{}\ncurrent: {current:?}", shown.join("\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_list_shows_the_registry_with_keys_at_hand_and_the_default() {
    let options = json!({"providers": {"anthropic": {"apiKey": "sk-ant-canary-list"}},
        "models": [{"id": "big-model", "provider": "lab", "baseUrl": "http://127.0.0.1:9/v1", "contextWindow": 65536}]});
    let lsp = start(&[], vec![], options).await;
    expect![[r#"
        openai/gpt-4.1 gpt-4.1 window=1047576 key=true current=false
        anthropic/claude-haiku-4-5 claude-haiku-4-5 window=200000 key=true current=false
        deepseek/deepseek-chat deepseek-chat window=128000 key=false current=false
        ollama/gpt-oss:20b gpt-oss:20b window=131072 key=true current=false
        lab/big-model big-model window=65536 key=true current=false
        openai-compatible/scripted-model scripted-model window=128000 key=true current=true
        current: ["openai-compatible/scripted-model"]"#]]
    .assert_eq(&listed_models(&lsp).await);

    // The default of new sessions follows `reins.model.set` without a session.
    lsp.client.command("reins.model.set", json!({"model": "claude-haiku-4-5"})).await.unwrap();
    let listed = lsp.client.command("reins.model.list", json!({})).await.unwrap();
    let current: Vec<&Value> = listed["models"].as_array().unwrap().iter().filter(|m| m["current"] == true).collect();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["id"], "anthropic/claude-haiku-4-5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reins_models_and_model_list_agree_on_models_keys_and_the_default() {
    // A key from the environment (openai), one from a command (anthropic), a local server that
    // needs none (ollama, and a lab model on 127.0.0.1), a remote lab model with none.
    let config = "[providers.anthropic]\napi_key_command = \"echo sk-ant-from-a-command\"\n\
        [[models]]\nid = \"near\"\nprovider = \"lab\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
        [[models]]\nid = \"far\"\nprovider = \"lab\"\nbase_url = \"http://10.1.2.3:8000/v1\"\n";
    let lsp = start(&[(".reins-home-for-test/config.toml", config)], vec![], json!({})).await;
    let cli = super::support::reins(Some(&lsp.server.base_url()), lsp.root(), &["models", "--json"]).await;
    assert_eq!(cli.code, Some(0), "{}", cli.stderr);
    let cli: Value = serde_json::from_str(&cli.stdout).unwrap();
    let cli: Vec<String> = cli
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let available = !m["key"].is_null() || m["keyNeeded"] == false;
            format!("{} key={available} current={}", m["address"].as_str().unwrap(), m["default"])
        })
        .collect();
    let listed = lsp.client.command("reins.model.list", json!({})).await.unwrap();
    let editor: Vec<String> = listed["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{} key={} current={}", m["id"].as_str().unwrap(), m["keyAvailable"], m["current"]))
        .collect();
    assert_eq!(cli, editor);
    for (model, key) in [
        ("openai/gpt-4.1", true),
        ("anthropic/claude-haiku-4-5", true),
        ("ollama/gpt-oss:20b", true),
        ("lab/near", true), // its endpoint is on this machine
        ("lab/far", false),
        ("deepseek/deepseek-chat", false),
    ] {
        assert!(editor.iter().any(|row| row.starts_with(&format!("{model} key={key} "))), "{model}: {editor:#?}");
    }
    assert!(editor.contains(&"openai-compatible/scripted-model key=true current=true".to_string()), "{editor:#?}");
}

/// Sends a message in `session` and waits for its run to end; answers its events.
async fn run_in(lsp: &super::Session, session: &Value, text: &str) -> Vec<Value> {
    let started = lsp.client.command("reins.chat.send", json!({"sessionId": session, "text": text})).await.unwrap();
    lsp.run_events(started["runId"].as_str().unwrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_and_compaction_changed_mid_session_apply_to_the_next_run() {
    let replies = vec![
        Reply::tool_call("c1", "read", json!({"path": "a.txt"})),
        Reply::text(format!("first answer: {}", "details ".repeat(300))),
        Reply::tool_call("c2", "read", json!({"path": "a.txt"})),
        Reply::text("## Goal\nRead a.txt."),
        Reply::text("third answer"),
    ];
    let lsp = start(&[("a.txt", "alpha\n")], replies, json!({"compaction": {"auto": false}})).await;
    let long_question = format!("first question: {}", "the parser module needs work ".repeat(80));
    let session = chat(&lsp, None, &long_question).await;

    // At most one model call per run from now on.
    let change = json!({"limits": {"maxTurns": 1}});
    lsp.client.notify("workspace/didChangeConfiguration", json!({"settings": change})).await;
    let events = run_in(&lsp, &session, "read it again").await;
    assert_eq!(events.last().unwrap()["reason"], "max_turns", "{events:?}");

    // Compaction on, and a window the conversation no longer fits: the next run compacts first.
    let change = json!({"compaction": {"auto": true, "reserveTokens": 100, "keepRecentTokens": 50},
        "models": [{"id": "scripted-model", "provider": "openai-compatible", "contextWindow": 1200, "maxOutput": 256}]});
    lsp.client.notify("workspace/didChangeConfiguration", json!({"settings": change})).await;
    let events = run_in(&lsp, &session, "third question").await;
    assert_eq!(events.last().unwrap()["reason"], "final_answer", "{events:?}");
    let requests = lsp.server.chat_requests();
    assert_eq!(requests.len(), 5);
    let system = requests[3].body["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.starts_with("You are summarizing"), "{system}");
    let compacted = requests[4].body["messages"][1]["content"].to_string();
    assert!(compacted.contains("compacted into the following summary"), "{compacted}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_enabled_and_set_tools_choose_what_the_next_request_offers() {
    let replies = vec![Reply::text("one"), Reply::text("two"), Reply::text("three")];
    let lsp = start(&[], replies, json!({"tools": {"enabled": ["read", "grep"]}})).await;
    let session = chat(&lsp, None, "hello").await;
    let set = lsp
        .client
        .command("reins.session.setTools", json!({"sessionId": session, "tools": ["read-only", "mcp__docs__*"]}))
        .await
        .unwrap();
    // This client cannot answer reins/diagnostics, and the workspace has no file a language
    // server covers: the set names those tools, the model does not get them.
    assert_eq!(
        set,
        json!({"tools": ["read", "ls", "grep", "find", "todo", "diagnostics", "lsp", "mcp__docs__*"], "offered": ["read", "ls", "grep", "find", "todo"]})
    );
    let refused = lsp
        .client
        .command("reins.session.setTools", json!({"sessionId": session, "tools": ["read", "rg"]}))
        .await
        .unwrap_err();
    assert_eq!(refused.data_code(), Some("invalid_argument"), "{refused}");
    assert!(refused.to_string().contains("unknown tool `rg`"), "{refused}");
    chat(&lsp, Some(&session), "and now?").await;
    // A new session follows the settings.
    chat(&lsp, None, "hello again").await;
    let offered: Vec<Vec<String>> = lsp
        .server
        .chat_requests()
        .iter()
        .map(|request| {
            let tools = request.body["tools"].as_array().cloned().unwrap_or_default();
            tools.iter().map(|tool| tool["function"]["name"].as_str().unwrap().to_string()).collect()
        })
        .collect();
    assert_eq!(offered, [vec!["read", "grep"], vec!["read", "ls", "grep", "find", "todo"], vec!["read", "grep"]]);
}

/// Issue 30: a skill file that is not quite one (no description) is told once at start, beside
/// the settings' problems; the session goes on. A default setup says nothing at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_file_that_is_not_quite_one_is_told_once_and_a_default_setup_is_silent() {
    let quiet = start(&[], vec![Reply::text("fine")], json!({})).await;
    chat(&quiet, None, "hello").await;
    let shown: Vec<Value> =
        quiet.client.notifications().into_iter().filter(|n| n["method"] == "window/showMessage").collect();
    assert!(shown.is_empty(), "a default setup is silent: {shown:?}");

    let half = (".reins-home-for-test/skills/half/SKILL.md", "---\nname: half\n---\nNo description.\n");
    let lsp = start(&[half], vec![Reply::text("fine"), Reply::text("again")], json!({})).await;
    warnings(&lsp, "half").await;
    chat(&lsp, None, "hello").await;
    chat(&lsp, None, "again").await;
    let root = lsp.root().display().to_string();
    let shown: Vec<String> = lsp
        .client
        .notifications()
        .iter()
        .filter(|n| n["method"] == "window/showMessage")
        .map(|n| {
            format!("{} {}", n["params"]["type"], n["params"]["message"].as_str().unwrap().replace(&root, "<root>"))
        })
        .collect();
    expect![[r#"
        2 reins: some skill files are not quite skills:
        - <root>/.reins-home-for-test/skills/half/SKILL.md: description is required; the skill is not loaded"#]]
    .assert_eq(&shown.join("\n---\n"));
}
