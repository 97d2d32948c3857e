//! What the after-edit feedback costs: how much later an edit's tool result is ready when the
//! editor answers `reins/diagnostics` at once, against the same edits in a client that does not
//! answer it (so reins never asks). The editor's diagnostics change as soon as it has applied the
//! edit, as a fast linter's would: the feedback then takes two round trips to the editor (before
//! and after the edit). When they do not change at all, reins waits `[diagnostics] settle_ms` by
//! design (the other server may be slow), so that case is not a latency to measure.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};

use crate::lsp::Client;

/// Edits per run, each a turn of its own.
const EDITS: usize = 20;
/// Runs per case.
const RUNS: usize = 3;

/// Runs the measurement and prints it; true when the target was missed.
pub async fn measure(reins: &Path) -> bool {
    match run(reins).await {
        Ok(failed) => failed,
        Err(why) => {
            println!("\ndiagnostics not measured: {why}");
            true
        }
    }
}

async fn run(reins: &Path) -> Result<bool, String> {
    let (mut plain, mut fed) = (Vec::new(), Vec::new());
    let (mut plain_runs, mut fed_runs) = (Vec::new(), Vec::new());
    // Interleaved, so a load that comes and goes on the machine touches both cases alike.
    for _ in 0..RUNS {
        let (times, run) = edit_times(reins, false).await?;
        plain.extend(times);
        plain_runs.push(run);
        let (times, run) = edit_times(reins, true).await?;
        fed.extend(times);
        fed_runs.push(run);
    }
    let median = |samples: &mut Vec<Duration>| {
        samples.sort();
        samples[samples.len() / 2]
    };
    let (plain, fed) = (median(&mut plain), median(&mut fed));
    let added = fed.saturating_sub(plain);
    // The same from whole runs: what a user waits for, events and all.
    let per_run = median(&mut fed_runs).saturating_sub(median(&mut plain_runs)) / EDITS as u32;
    println!("\ndiagnostics (after-edit feedback; {EDITS} edits x {RUNS} runs, medians; the editor answers at once):");
    println!("  edit, client without reins/diagnostics  {:>8.2} ms", ms(plain));
    println!("  edit, with the feedback                 {:>8.2} ms", ms(fed));
    println!("  latency added to an edit's result       {:>8.2} ms", ms(added));
    println!("  the same, from whole runs' times        {:>8.2} ms", ms(per_run));
    let ok = ms(added) < 50.0;
    println!("  [{}] the feedback adds under 50 ms when the editor answers at once", if ok { "ok" } else { "MISSED" });
    Ok(!ok)
}

/// The time of each edit tool call (`tool_execution_start` to `tool_execution_end`, as the client
/// reads them) of one run of [`EDITS`] edits of an open file, and of the whole run (from the
/// message sent to `agent_end`), by a client that answers `reins/diagnostics` when `answers`.
async fn edit_times(reins: &Path, answers: bool) -> Result<(Vec<Duration>, Duration), String> {
    let workspace = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut text: String = (1..=EDITS).map(|n| format!("line {n}\n")).collect();
    std::fs::write(workspace.path().join("a.rs"), &text).map_err(|e| e.to_string())?;
    let mut replies: Vec<Reply> = (1..=EDITS)
        .map(|n| {
            let edit = json!({"oldText": format!("line {n}\n"), "newText": format!("line {n} edited\n")});
            Reply::tool_call(format!("e{n}"), "edit", json!({"path": "a.rs", "edits": [edit]}))
        })
        .collect();
    replies.push(Reply::text("Done."));
    let server = ScriptedServer::start(replies).await;
    let mut client = Client::spawn(reins, workspace.path(), &server.base_url())?;
    let root = format!("file://{}", workspace.path().display());
    let options = json!({"capabilities": {"diagnostics": answers}, "approval": {"edit": "auto"}});
    client
        .request(
            "initialize",
            json!({"processId": null, "rootUri": root, "capabilities": {}, "initializationOptions": options}),
        )
        .await?;
    client.notify("initialized", json!({})).await?;
    let uri = format!("file://{}", workspace.path().join("a.rs").display());
    let mut version = 1;
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "rust", "version": version, "text": text}}),
        )
        .await?;
    let run_started = Instant::now();
    client
        .write(&json!({"jsonrpc": "2.0", "id": "send", "method": "workspace/executeCommand",
            "params": {"command": "reins.chat.send", "arguments": [{"text": "edit every line"}]}}))
        .await?;

    let mut applied = 0;
    let mut started: HashMap<String, Instant> = HashMap::new();
    let mut times = Vec::new();
    loop {
        let message = tokio::time::timeout(Duration::from_secs(60), client.read())
            .await
            .map_err(|_| "the run did not end within a minute".to_string())??;
        let Some(method) = message["method"].as_str() else { continue };
        if let Some(id) = message.get("id") {
            let result = match method {
                "workspace/applyEdit" => {
                    // Applied as an editor would, and told back to the server.
                    applied += 1;
                    text = text.replacen(&format!("line {applied}\n"), &format!("line {applied} edited\n"), 1);
                    version += 1;
                    let change =
                        json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]});
                    client.notify("textDocument/didChange", change).await?;
                    json!({"applied": true})
                }
                // One problem, which changes with every edit the editor has applied.
                "reins/diagnostics" => {
                    let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 4}});
                    let problem = json!({"range": range, "severity": 1, "source": "bench", "message": format!("problem {applied}")});
                    json!({"items": [{"uri": uri, "diagnostics": [problem]}]})
                }
                _ => Value::Null,
            };
            client.write(&json!({"jsonrpc": "2.0", "id": id, "result": result})).await?;
            continue;
        }
        if method != "reins/event" {
            continue;
        }
        let event = &message["params"]["event"];
        let call = event["toolCallId"].as_str().unwrap_or_default().to_string();
        match event["type"].as_str() {
            Some("tool_execution_start") => {
                started.insert(call, Instant::now());
            }
            Some("tool_execution_end") => {
                let told = event["result"]["content"].to_string().contains("new problems");
                if told != answers {
                    return Err(format!("edit {call}: feedback {told}, expected {answers}: {}", event["result"]));
                }
                if let Some(start) = started.remove(&call) {
                    times.push(start.elapsed());
                }
            }
            Some("agent_end") => break,
            _ => {}
        }
    }
    let run = run_started.elapsed();
    client.child.kill().await.ok();
    if times.len() != EDITS || applied != EDITS {
        return Err(format!("{} of {EDITS} edits ran, {applied} through workspace/applyEdit", times.len()));
    }
    Ok((times, run))
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
