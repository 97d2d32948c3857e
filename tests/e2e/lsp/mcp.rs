//! MCP servers in `reins lsp`: servers from the client's settings (`mcpServers`), listed by
//! `reins.mcp.list` as protocol-docs/mcp.md documents it, a failing one shown with
//! `window/showMessage`, a call held for the user as a pending edit, servers rebuilt when the
//! settings change and stopped at shutdown.

use std::path::Path;
use std::time::Duration;

use scripted_llm::Reply;
use serde_json::{Value, json};

use super::{WAIT, start};

/// The reference server over stdio, started through a shell that writes its pid to `pid_file`
/// (`exec` keeps the pid).
fn everything(pid_file: &Path) -> Value {
    let js = super::support::mcp_prefix().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let script = format!("echo $$ > '{}'; exec node '{}' stdio", pid_file.display(), js.display());
    json!({"command": "sh", "args": ["-c", script]})
}

fn alive(pid_file: &Path) -> bool {
    let Ok(pid) = std::fs::read_to_string(pid_file) else { return false };
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).is_ok_and(|stat| !stat.contains(") Z "))
}

async fn gone(pid_file: &Path) {
    for _ in 0..100 {
        if !alive(pid_file) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server of {} is still running", pid_file.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reins_mcp_list_shows_each_server_as_documented_and_warns_of_one_that_fails() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("everything.pid");
    let servers = json!({"everything": everything(&pid_file), "ghost": {"command": "reins-no-such-server"}});
    let lsp = start(&[], Vec::new(), json!({"mcpServers": servers})).await;

    let listed = lsp.client.command("reins.mcp.list", json!({})).await.unwrap();
    let servers = listed["servers"].as_array().unwrap();
    let names: Vec<(&str, &str, &str)> = servers
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["origin"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("everything", "editor settings", "ready"), ("ghost", "editor settings", "failed")]);
    let everything = &servers[0];
    assert!(everything["tools"].as_array().unwrap().iter().any(|tool| tool["name"] == "mcp__everything__echo"
        && tool["tool"] == "echo"
        && tool["description"] == "Echoes back the input string"));
    assert_eq!(everything["reason"], Value::Null);
    assert!(servers[1]["reason"].as_str().unwrap().contains("cannot start `reins-no-such-server`"));
    let documented = super::docs::example("result", "reins.mcp.list");
    super::docs::same_shape(&documented, &listed, "reins.mcp.list").unwrap();

    let warning = lsp
        .client
        .wait_for(WAIT, |n| {
            n["method"] == "window/showMessage"
                && n["params"]["message"].as_str().is_some_and(|m| m.contains("`ghost`"))
        })
        .await
        .unwrap();
    assert_eq!(warning["params"]["type"], 2, "a warning");
    assert_eq!(
        warning["params"]["message"],
        "reins: MCP server `ghost` could not be started: cannot start `reins-no-such-server`: it was not found; is it \
         installed and on PATH?; going on without its tools"
    );

    // The settings change: the server is turned off (a change is laid over initializationOptions
    // key by key, so it says `enabled: false` rather than leaving the server out), so it stops.
    assert!(alive(&pid_file));
    let off = json!({"settings": {"mcpServers": {"everything": {"enabled": false}, "ghost": {"enabled": false}}}});
    lsp.client.notify("workspace/didChangeConfiguration", off).await;
    gone(&pid_file).await;
    let listed = lsp.client.command("reins.mcp.list", json!({})).await.unwrap();
    assert_eq!(listed, json!({"servers": []}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_call_is_held_for_the_user_and_runs_once_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("everything.pid");
    let lsp = start(
        &[],
        vec![
            Reply::tool_call("call_1", "mcp__everything__echo", json!({"message": "may I?"})),
            Reply::text("It echoed."),
        ],
        json!({"mcpServers": {"everything": everything(&pid_file)}}),
    )
    .await;
    let (run_id, edit) = super::review::propose(&lsp, "echo something", None).await;
    let edit = &edit;
    assert_eq!(edit["tool"], "mcp__everything__echo");
    assert_eq!(edit["call"], json!({"server": "everything", "tool": "echo", "arguments": {"message": "may I?"}}));
    let listed = lsp.client.command("reins.edit.list", json!({})).await.unwrap();
    assert_eq!(listed[0]["call"]["tool"], "echo", "{listed}");

    lsp.client.command("reins.edit.accept", json!({"id": edit["id"]})).await.unwrap();
    let events = lsp.run_events(&run_id).await;
    let end = events.iter().find(|e| e["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "Echo: may I?");
    let requests = lsp.server.chat_requests();
    assert!(requests[1].body["messages"].to_string().contains("Echo: may I?"));

    // Shutting down stops the server's process.
    assert!(alive(&pid_file));
    assert_eq!(lsp.client.shutdown().await, Some(0));
    gone(&pid_file).await;
}
