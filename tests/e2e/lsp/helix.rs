//! What Helix sends, replayed against `reins lsp` (Helix is not packaged here). The shapes come
//! from Helix's source (helix-editor/helix at 079a789e8): `Client::initialize` in
//! helix-lsp/src/client.rs for the capabilities, `code_actions_for_range` in
//! helix-term/src/commands/lsp.rs for the code-action context, `Client::command` for
//! `workspace/executeCommand`, and application.rs for how it answers the server (`applyEdit`
//! applied only at the version it has; diagnostics of another version dropped). The server is
//! configured as editors/helix/languages.toml configures it, the model named only by the
//! environment.

use std::path::Path;

use lsp_client::{LspClient, file_uri};
use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};

use super::{WAIT, reins_lsp};

/// Helix's `ClientCapabilities` (helix-lsp/src/client.rs, `initialize`), as it serializes them.
fn helix_capabilities() -> Value {
    let symbol_kinds: Vec<u32> = (1..=26).collect();
    json!({
        "workspace": {
            "configuration": true,
            "didChangeConfiguration": {"dynamicRegistration": false},
            "workspaceFolders": true,
            "applyEdit": true,
            "symbol": {"dynamicRegistration": false, "symbolKind": {"valueSet": symbol_kinds}},
            "executeCommand": {"dynamicRegistration": false},
            "inlayHint": {"refreshSupport": false},
            "workspaceEdit": {
                "documentChanges": true,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "abort",
                "normalizesLineEndings": false
            },
            "didChangeWatchedFiles": {"dynamicRegistration": true, "relativePatternSupport": true},
            "fileOperations": {"willCreate": true, "didCreate": true, "willRename": true, "didRename": true,
                "willDelete": true, "didDelete": true},
            "diagnostic": {"refreshSupport": true}
        },
        "textDocument": {
            "completion": {
                "completionItem": {
                    "snippetSupport": true,
                    "resolveSupport": {"properties": ["documentation", "detail", "additionalTextEdits"]},
                    "insertReplaceSupport": true,
                    "deprecatedSupport": true,
                    "tagSupport": {"valueSet": [1]}
                },
                "completionItemKind": {}
            },
            "hover": {"contentFormat": ["markdown"]},
            "signatureHelp": {"signatureInformation": {"documentationFormat": ["markdown"],
                "parameterInformation": {"labelOffsetSupport": true}, "activeParameterSupport": true}},
            "rename": {"dynamicRegistration": false, "prepareSupport": true, "honorsChangeAnnotations": false},
            "formatting": {"dynamicRegistration": false},
            "codeAction": {
                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["", "quickfix", "refactor",
                    "refactor.extract", "refactor.inline", "refactor.rewrite", "source", "source.organizeImports",
                    "source.fixAll"]}},
                "isPreferredSupport": true,
                "disabledSupport": true,
                "dataSupport": true,
                "resolveSupport": {"properties": ["edit", "command"]}
            },
            "diagnostic": {"dynamicRegistration": false, "relatedDocumentSupport": true},
            "publishDiagnostics": {"versionSupport": true, "tagSupport": {"valueSet": [1, 2]}},
            "inlayHint": {"dynamicRegistration": false},
            "documentLink": {"dynamicRegistration": false, "tooltipSupport": false},
            "callHierarchy": {"dynamicRegistration": false},
            "documentSymbol": {"dynamicRegistration": false, "symbolKind": {"valueSet": symbol_kinds},
                "hierarchicalDocumentSymbolSupport": false}
        },
        "window": {
            "showMessage": {"messageActionItem": {"additionalPropertiesSupport": true}},
            "workDoneProgress": true,
            "showDocument": {"support": true}
        },
        "general": {"positionEncodings": ["utf-8", "utf-32", "utf-16"]}
    })
}

/// `[language-server.reins]` of editors/helix/languages.toml: what Helix starts and sends.
fn reins_server_config() -> toml::Table {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../editors/helix/languages.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let table: toml::Table = text.parse().unwrap();
    table["language-server"]["reins"].as_table().unwrap().clone()
}

/// A session as Helix has it: the server started as languages.toml says, `initialize` as Helix
/// sends it, then `initialized` (and `didChangeConfiguration` only when there is a config).
struct Helix {
    client: LspClient,
    dir: tempfile::TempDir,
    _model: ScriptedServer,
}

impl Helix {
    async fn start(files: &[(&str, &str)], replies: Vec<Reply>) -> (Helix, Value) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            std::fs::write(dir.path().join(path), text).unwrap();
        }
        let model = ScriptedServer::start(replies).await;
        let server = reins_server_config();
        assert_eq!(server["command"].as_str(), Some("reins"));
        let args: Vec<&str> = server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        assert_eq!(args, ["lsp"]);
        let mut command = reins_lsp(dir.path(), &[]);
        // The model as a user names it, outside the editor's config.
        command.env("OPENAI_BASE_URL", model.base_url()).env("REINS_MODEL", "scripted-model");
        let client = LspClient::spawn(command).unwrap();
        let root = dir.path().to_str().unwrap();
        let mut params = json!({
            "processId": std::process::id(),
            "workspaceFolders": [{"uri": file_uri(dir.path()), "name": "helix"}],
            "rootPath": root,
            "rootUri": file_uri(dir.path()),
            "capabilities": helix_capabilities(),
            "clientInfo": {"name": "helix", "version": "25.07.1 (079a789e8)"}
        });
        let config = server.get("config").map(|config| serde_json::to_value(config).unwrap());
        if let Some(config) = &config {
            params["initializationOptions"] = config.clone();
        }
        let result = client.request("initialize", params).await.unwrap();
        client.notify("initialized", json!({})).await;
        if let Some(config) = config {
            client.notify("workspace/didChangeConfiguration", json!({"settings": config})).await;
        }
        (Helix { client, dir, _model: model }, result)
    }

    fn uri(&self, name: &str) -> String {
        file_uri(&self.dir.path().join(name))
    }

    /// `textDocument/codeAction` as Helix asks on a selection: the diagnostics it overlaps, no
    /// `only`, invoked by the user. Returns the titles and the actions.
    async fn code_actions(&self, name: &str, range: Value, diagnostics: Value) -> (Vec<String>, Vec<Value>) {
        let params = json!({"textDocument": {"uri": self.uri(name)}, "range": range,
            "context": {"diagnostics": diagnostics, "triggerKind": 1}});
        let actions = self.client.request("textDocument/codeAction", params).await.unwrap();
        let actions = actions.as_array().unwrap().clone();
        let titles = actions.iter().map(|action| action["title"].as_str().unwrap().to_string()).collect();
        (titles, actions)
    }

    /// Runs a picked code action as Helix does: no edit to apply (reins's actions carry a
    /// command only, and the server offers no resolve), then `workspace/executeCommand` with
    /// the command's arguments.
    async fn run(&self, action: &Value) -> Value {
        assert!(action.get("edit").is_none() && action.get("disabled").is_none(), "{action}");
        let command = &action["command"];
        let params = json!({"command": command["command"], "arguments": command["arguments"]});
        self.client.request("workspace/executeCommand", params).await.unwrap()
    }

    /// The last diagnostics published for `name` that Helix would keep: of `version`.
    async fn diagnostics_at(&self, name: &str, version: i64) -> Vec<Value> {
        let uri = self.uri(name);
        let published = self
            .client
            .wait_for(WAIT, |n| {
                n["method"] == "textDocument/publishDiagnostics"
                    && n["params"]["uri"] == uri
                    && n["params"]["version"] == version
            })
            .await
            .unwrap();
        let newest = self
            .client
            .notifications()
            .into_iter()
            .rev()
            .find(|n| n["method"] == "textDocument/publishDiagnostics" && n["params"]["uri"] == uri)
            .unwrap_or(published);
        assert_eq!(newest["params"]["version"], version, "Helix drops diagnostics of another version: {newest}");
        newest["params"]["diagnostics"].as_array().unwrap().clone()
    }
}

const APP: &str =
    "def greet(name):\n    return \"héllo \" + name\n\n\ndef shout(name):\n    return greet(name).upper()\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helix_runs_an_agent_code_action_and_reviews_an_edit_through_plain_lsp() {
    let replies = vec![
        Reply::text("greet builds a greeting."),
        Reply::tool_call(
            "c1",
            "edit",
            json!({"path": "app.py", "edits": [
                {"oldText": "return \"héllo \" + name", "newText": "return f\"héllo {name}\""},
                {"oldText": "return greet(name).upper()", "newText": "return greet(name).upper() + \"!\""}]}),
        ),
        Reply::text("Kept the f-string."),
    ];
    let (helix, result) = Helix::start(&[("app.py", APP)], replies).await;
    let capabilities = &result["capabilities"];
    assert_eq!(capabilities["positionEncoding"], "utf-8", "Helix offers utf-8 first");
    assert_eq!(capabilities["codeActionProvider"], true, "no resolve: Helix runs the command as it came");
    assert!(capabilities["executeCommandProvider"]["commands"].as_array().unwrap().contains(&json!("reins.ask")));
    assert_eq!(capabilities["textDocumentSync"]["change"], 2, "incremental, as Helix sends changes");
    helix
        .client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": helix.uri("app.py"), "languageId": "python", "version": 0, "text": APP}}),
        )
        .await;

    // space-a on a selection (Helix's cursor is a one-character selection, so there always is one).
    let selection = json!({"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 28}});
    let (titles, actions) = helix.code_actions("app.py", selection.clone(), json!([])).await;
    assert_eq!(
        titles,
        ["Ask agent about selection", "Agent: explain this", "Agent: review this", "Agent: write tests for this"]
    );
    let started = helix.run(&actions[1]).await;
    let token = format!("reins/run/{}", started["runId"].as_str().unwrap());
    // What Helix shows: the progress in its status line, from begin to "done".
    let end = helix
        .client
        .wait_for(WAIT, |n| {
            n["method"] == "$/progress" && n["params"]["token"] == token && n["params"]["value"]["kind"] == "end"
        })
        .await
        .unwrap();
    assert_eq!(end["params"]["value"]["message"], "done");
    assert!(
        helix.client.server_requests().iter().any(|r| r["method"] == "window/workDoneProgress/create"),
        "the token is created first, as Helix expects"
    );

    // The next action proposes an edit: two diagnostics at the version Helix has (0), with
    // utf-8 columns (the é is two bytes).
    let (_, actions) = helix.code_actions("app.py", selection, json!([])).await;
    helix.run(&actions[2]).await;
    let diagnostics = helix.diagnostics_at("app.py", 0).await;
    let ranges: Vec<String> = diagnostics
        .iter()
        .map(|d| {
            format!(
                "{}:{}-{}:{}",
                d["range"]["start"]["line"],
                d["range"]["start"]["character"],
                d["range"]["end"]["line"],
                d["range"]["end"]["character"]
            )
        })
        .collect();
    // `"héllo " + name` ends at byte 27 of its line (character 26 in UTF-16).
    assert_eq!(ranges, ["1:11-1:27", "5:30-5:30"], "{diagnostics:?}");
    assert!(diagnostics[0]["message"].as_str().unwrap().contains("(hunk 1 of 2)"), "{diagnostics:?}");

    // The user types a line at the top (version 1): Helix keeps only diagnostics of version 1,
    // and they moved down a line.
    helix
        .client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": helix.uri("app.py"), "version": 1}, "contentChanges": [
                {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "# app\n"}]}),
        )
        .await;
    let moved = helix.diagnostics_at("app.py", 1).await;
    let lines: Vec<u64> = moved.iter().map(|d| d["range"]["start"]["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [2, 6]);

    // space-a on the first hunk's line, with the diagnostic Helix has there: accept only it.
    let cursor = json!({"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 5}});
    let (titles, actions) = helix.code_actions("app.py", cursor, json!([moved[0].clone()])).await;
    assert_eq!(&titles[..3], ["Accept agent edit", "Accept only hunk 1 of 2 (reject the other)", "Reject agent edit"]);
    let accepted = helix.run(&actions[1]).await;
    assert_eq!(accepted["outcome"], "partially_applied");
    // The edit comes as Helix applies it: versioned document changes at the version it has.
    let request = loop {
        let found = helix.client.server_requests().into_iter().find(|r| r["method"] == "workspace/applyEdit");
        if let Some(request) = found {
            break request;
        }
        helix.client.wait_for_frame(WAIT, |f| f["method"] == "workspace/applyEdit").await.unwrap();
    };
    let change = &request["params"]["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"], json!({"uri": helix.uri("app.py"), "version": 1}));
    assert_eq!(change["edits"].as_array().unwrap().len(), 1, "hunk 1 only: {change}");
    assert_eq!(change["edits"][0]["range"]["start"]["line"], 2);
    // Decided: the diagnostics go.
    helix
        .client
        .wait_for(WAIT, |n| n["method"] == "textDocument/publishDiagnostics" && n["params"]["diagnostics"] == json!([]))
        .await
        .unwrap();
    assert_eq!(helix.client.shutdown().await, Some(0));
}
