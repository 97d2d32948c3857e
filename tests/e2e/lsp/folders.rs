//! Workspace folders the client adds and removes: the agent's tools reach a folder's files
//! exactly while it is one of the workspace's, whether the client names it by its real path or
//! through a symlink.

use lsp_client::file_uri;
use scripted_llm::Reply;
use serde_json::{Value, json};

use super::{Session, start};

/// Has the agent `read` `path` (in a new chat) and returns the tool result the model saw next.
async fn read_through_agent(lsp: &Session, path: &str) -> String {
    let before = lsp.server.chat_requests().len();
    lsp.server.push(Reply::tool_call("r1", "read", json!({"path": path})));
    lsp.server.push(Reply::text("read it"));
    let started = lsp.client.command("reins.chat.send", json!({"text": "read that file"})).await.unwrap();
    lsp.run_events(started["runId"].as_str().unwrap()).await;
    let requests = lsp.server.chat_requests();
    assert_eq!(requests.len(), before + 2);
    let messages = requests[before + 1].body["messages"].as_array().unwrap();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    match &tool["content"] {
        Value::String(text) => text.clone(),
        parts => parts.as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect(),
    }
}

/// `workspace/didChangeWorkspaceFolders` adding and removing one folder each (either may be
/// absent).
async fn change_folders(lsp: &Session, added: Option<&std::path::Path>, removed: Option<&std::path::Path>) {
    let folder = |path: &std::path::Path| json!({"uri": file_uri(path), "name": "second"});
    let event = json!({"added": added.map(folder).into_iter().collect::<Vec<_>>(),
        "removed": removed.map(folder).into_iter().collect::<Vec<_>>()});
    lsp.client.notify("workspace/didChangeWorkspaceFolders", json!({"event": event})).await;
}

/// Whether a tool result is the refusal of a path outside the workspace.
fn refused(result: &str) -> bool {
    result.contains("is outside the workspace")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_folder_is_readable_until_it_is_removed() {
    let lsp = start(&[("main.txt", "main\n")], vec![], json!({})).await;
    let elsewhere = tempfile::tempdir().unwrap();
    let second = elsewhere.path().join("second");
    std::fs::create_dir(&second).unwrap();
    std::fs::write(second.join("notes.txt"), "the second folder's notes\n").unwrap();
    let notes = second.join("notes.txt");
    let notes = notes.to_str().unwrap();

    let before = read_through_agent(&lsp, notes).await;
    assert!(refused(&before), "{before}");

    change_folders(&lsp, Some(&second), None).await;
    let added = read_through_agent(&lsp, notes).await;
    assert!(added.contains("the second folder's notes"), "{added}");
    // The first folder is still there.
    let main = read_through_agent(&lsp, "main.txt").await;
    assert!(main.contains("main"), "{main}");

    change_folders(&lsp, None, Some(&second)).await;
    let removed = read_through_agent(&lsp, notes).await;
    assert!(refused(&removed), "{removed}");

    // Named through a symlink (as a macOS temp dir is, /var → /private/var): removing it by the
    // same name removes it.
    let link = elsewhere.path().join("link");
    std::os::unix::fs::symlink(&second, &link).unwrap();
    let through_link = link.join("notes.txt");
    let through_link = through_link.to_str().unwrap();
    change_folders(&lsp, Some(&link), None).await;
    let added = read_through_agent(&lsp, through_link).await;
    assert!(added.contains("the second folder's notes"), "{added}");
    change_folders(&lsp, None, Some(&link)).await;
    let removed = read_through_agent(&lsp, through_link).await;
    assert!(refused(&removed), "{removed}");
}

/// `reins lsp` in `dir` with `REINS_LOG` as given (absent: unset), its stderr in `stderr`, and
/// initialized with `folders` (the first one real).
async fn logging_server(
    dir: &std::path::Path,
    log: Option<&str>,
    stderr: &std::path::Path,
    folders: &[&std::path::Path],
) -> lsp_client::LspClient {
    let mut command = super::reins_lsp(dir, &[]);
    command.env_remove("REINS_LOG");
    if let Some(log) = log {
        command.env("REINS_LOG", log);
    }
    command.stderr(std::fs::File::create(stderr).unwrap());
    let client = lsp_client::LspClient::spawn(command).unwrap();
    let folders: Vec<Value> = folders.iter().map(|path| json!({"uri": file_uri(path), "name": "f"})).collect();
    client
        .request(
            "initialize",
            json!({"processId": null, "rootUri": folders[0]["uri"], "workspaceFolders": folders, "capabilities": {}}),
        )
        .await
        .unwrap();
    client.notify("initialized", json!({})).await;
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_lines_reach_the_client_at_their_level_and_stderr_only_when_asked_without_colours() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-folder");
    let stderr = dir.path().join("stderr.txt");
    let said = |n: &Value| {
        n["method"] == "window/logMessage" && n["params"]["message"].as_str().unwrap_or("").contains("no-such-folder")
    };

    // By default: a warning in the editor's log, as a warning; nothing on stderr.
    let client = logging_server(dir.path(), None, &stderr, &[dir.path(), &missing]).await;
    let logged = client.wait_for(super::WAIT, said).await.unwrap();
    assert_eq!(logged["params"]["type"], 2, "{logged}");
    let message = logged["params"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("reins: workspace folder ") && message.ends_with("does not exist; ignored"),
        "{message}"
    );
    client.shutdown().await;
    assert_eq!(std::fs::read_to_string(&stderr).unwrap(), "", "stderr");

    // With REINS_LOG, stderr has it too, without colour codes (it is not a terminal).
    let client = logging_server(dir.path(), Some("warn"), &stderr, &[dir.path(), &missing]).await;
    client.wait_for(super::WAIT, said).await.unwrap();
    client.shutdown().await;
    let text = std::fs::read_to_string(&stderr).unwrap();
    assert!(text.contains("WARN") && text.contains("no-such-folder"), "{text}");
    assert!(!text.contains('\x1b'), "colour codes on stderr: {text:?}");
}

/// One rule for the project a session belongs to: `reins run` started in a subfolder of a git
/// repository keys its session by the repository's root, so the editor, whose workspace is that
/// root (Neovim's root marker is `.git`), lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_started_in_a_subfolder_at_the_terminal_is_listed_by_the_editor() {
    let files = [(".git/HEAD", "ref: refs/heads/main\n"), ("src/app.py", "x = 1\n")];
    let lsp = start(&files, vec![Reply::text("Hello from the terminal.")], json!({})).await;
    let root = lsp.dir.path();
    let ran = tokio::process::Command::new(env!("CARGO_BIN_EXE_reins"))
        .args(["run", "what is in src?"])
        .current_dir(root.join("src"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", root.join("src"))
        .env("REINS_HOME", root.join(".reins-home-for-test"))
        .env("OPENAI_API_KEY", super::CANARY_KEY)
        .env("OPENAI_BASE_URL", lsp.server.base_url())
        .env("REINS_MODEL", "scripted-model")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    let listed = lsp.client.command("reins.session.list", json!({})).await.unwrap();
    let firsts: Vec<&str> =
        listed["sessions"].as_array().unwrap().iter().filter_map(|s| s["firstMessage"].as_str()).collect();
    assert_eq!(firsts, ["what is in src?"], "{listed}");
}
