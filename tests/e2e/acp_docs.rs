//! protocol-docs/acp.md is tested: its examples run against the real `reins acp`, in document
//! order, over a plain newline-delimited JSON-RPC client (the docs show wire JSON, so the test
//! sends and compares wire JSON). Requests are sent as documented, the client's side answers as
//! documented, and every documented result, `session/update`, request to the client and error
//! must have the shape reins really sends (tests/e2e/support/doc_examples.rs).
//!
//! Markers: `acp-request` (client → reins, its `acp-result` follows), `acp-client-notification`,
//! `acp-update` (a `session/update` of that kind), `acp-agent-request` (reins → client) and its
//! `acp-client-result` (what the client answers), `acp-error`.

#[path = "support/doc_examples.rs"]
mod doc_examples;
mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use doc_examples::{Elements, Example, examples, shape};
use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

const WAIT: Duration = Duration::from_secs(20);
/// What the examples call the workspace and the reference MCP server.
const DOC_ROOT: &str = "/home/me/project";
const DOC_EVERYTHING: &str = "/opt/mcp/server-everything/dist/index.js";
const LIB_BEFORE: &str = "fn answer() -> u32 {\n    41\n}\n";

/// A `reins acp` process and what it sent besides answers.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: i64,
    /// `session/update` params, in order.
    updates: Vec<Value>,
    /// Requests reins sent the client, by method.
    agent_requests: Vec<(String, Value)>,
    /// What the client answers to each method (the documented `acp-client-result`s).
    answers: HashMap<String, Value>,
}

impl Agent {
    fn spawn(dir: &Path, server: &ScriptedServer, answers: HashMap<String, Value>) -> Agent {
        let mut command = support::reins_command(Some(&server.base_url()), dir, &["acp"]);
        // The workspace is the session's cwd, which reins refuses as the home directory itself.
        command.env("HOME", dir.join(".home")).stdin(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = command.spawn().expect("start reins acp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Agent { child, stdin, stdout, next_id: 0, updates: Vec::new(), agent_requests: Vec::new(), answers }
    }

    async fn write(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.stdin.write_all(line.as_bytes()).await.expect("write to reins");
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.write(json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    /// Sends a request and reads until its answer: `Ok(result)` or `Err(error)`. What comes
    /// before is kept (updates) or answered (requests to the client).
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let line = tokio::time::timeout(WAIT, self.stdout.next_line())
                .await
                .unwrap_or_else(|_| panic!("{method}: no answer within {WAIT:?}"))
                .expect("read reins's stdout")
                .unwrap_or_else(|| panic!("{method}: reins closed its stdout"));
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC: {line}");
            match (message.get("method").and_then(Value::as_str), message.get("id")) {
                (Some("session/update"), None) => self.updates.push(message["params"].clone()),
                (Some(asked), Some(asked_id)) => {
                    let answer =
                        self.answers.get(asked).unwrap_or_else(|| panic!("acp.md documents no answer to {asked}"));
                    let answer = json!({"jsonrpc": "2.0", "id": asked_id, "result": answer});
                    self.agent_requests.push((asked.to_string(), message["params"].clone()));
                    self.write(answer).await;
                }
                (None, Some(answered)) if *answered == id => {
                    return match message.get("error") {
                        Some(error) => Err(error.clone()),
                        None => Ok(message["result"].clone()),
                    };
                }
                _ => panic!("{method}: unexpected message {line}"),
            }
        }
    }

    /// Closes stdin, keeps the updates still to come and waits for a clean exit.
    async fn close(mut self) -> (Vec<Value>, Vec<(String, Value)>) {
        drop(self.stdin);
        while let Ok(Ok(Some(line))) = tokio::time::timeout(WAIT, self.stdout.next_line()).await {
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"));
            assert_eq!(message["method"], "session/update", "after the last answer: {line}");
            self.updates.push(message["params"].clone());
        }
        let status = tokio::time::timeout(WAIT, self.child.wait()).await.expect("reins exits").unwrap();
        assert!(status.success(), "reins acp exited with {status} after stdin closed");
        (self.updates, self.agent_requests)
    }
}

/// The example with live values: the test's directory for the documented one, the live session
/// id, the installed reference MCP server.
fn substitute(value: &Value, root: &str, session_id: Option<&str>, everything: &str) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let value = match (key.as_str(), session_id) {
                        ("sessionId", Some(id)) => json!(id),
                        _ => substitute(value, root, session_id, everything),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| substitute(v, root, session_id, everything)).collect())
        }
        Value::String(text) if text == DOC_EVERYTHING => json!(everything),
        Value::String(text) => json!(text.replace(DOC_ROOT, root)),
        other => other.clone(),
    }
}

/// Ok when some message in `candidates` has the documented shape; else the first mismatch.
fn some_matches<'a>(documented: &Value, candidates: impl Iterator<Item = &'a Value>, what: &str) -> Result<(), String> {
    let mut first_error = None;
    for candidate in candidates {
        match shape(documented, candidate, what, Elements::First) {
            Ok(()) => return Ok(()),
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| format!("reins never sent a {what}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acp_example_matches_the_server() {
    let acp: Vec<Example> = examples().into_iter().filter(|e| e.place.starts_with("acp.md:")).collect();
    let known = [
        "acp-request",
        "acp-result",
        "acp-client-notification",
        "acp-update",
        "acp-agent-request",
        "acp-client-result",
        "acp-error",
    ];
    for example in &acp {
        assert!(known.contains(&example.kind.as_str()), "{}: unknown marker kind {}", example.place, example.kind);
    }
    assert!(acp.len() >= 20, "acp.md has only {} examples", acp.len());

    let dir = support::workspace(&[("src/lib.rs", LIB_BEFORE)]);
    let root = dir.path().to_str().unwrap().to_string();
    let everything = support::mcp_prefix()
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string();
    // The documented prompt: the model thinks, edits src/lib.rs, runs the tests (in the
    // client's terminal), keeps its todo list (the plan), then answers.
    let edit = json!({"path": "src/lib.rs", "edits": [{"oldText": "41", "newText": "42"}]});
    let server = ScriptedServer::start(vec![
        Reply::tool_call("call_1", "edit", edit).with_thinking("The answer is off by one."),
        Reply::tool_call("call_2", "bash", json!({"command": "cargo test"})),
        Reply::tool_call(
            "call_3",
            "todo",
            json!({"todos": [
                {"content": "fix the answer", "status": "completed"},
                {"content": "run the tests", "status": "pending"},
            ]}),
        ),
        Reply::text("Fixed."),
    ])
    .await;
    let answers: HashMap<String, Value> = acp
        .iter()
        .filter(|e| e.kind == "acp-client-result")
        .map(|e| (e.name.clone(), substitute(&e.json, &root, None, &everything)))
        .collect();

    let mut agent = Agent::spawn(dir.path(), &server, answers.clone());
    let mut session_id: Option<String> = None;
    let mut initialize = None;
    let mut results: HashMap<String, Value> = HashMap::new();
    let (mut updates, mut agent_requests) = (Vec::new(), Vec::new());
    for example in acp.iter().filter(|e| e.kind == "acp-request" || e.kind == "acp-client-notification") {
        let params = substitute(&example.json, &root, session_id.as_deref(), &everything);
        if example.kind == "acp-client-notification" {
            agent.notify(&example.name, params).await;
            continue;
        }
        if example.name == "session/load" {
            // A session is loaded by a new process, as after the editor restarted.
            let (seen, asked) =
                std::mem::replace(&mut agent, Agent::spawn(dir.path(), &server, answers.clone())).close().await;
            updates.extend(seen);
            agent_requests.extend(asked);
            agent.request("initialize", initialize.clone().expect("initialize is documented first")).await.unwrap();
        }
        if example.name == "initialize" {
            initialize = Some(params.clone());
        }
        let result = agent
            .request(&example.name, params)
            .await
            .unwrap_or_else(|err| panic!("{}: {} was refused: {err}", example.place, example.name));
        if example.name == "session/load" {
            // ACP: the whole conversation is replayed, then `session/load` is answered.
            let replayed =
                agent.updates.iter().filter(|u| u["update"]["sessionUpdate"] == "user_message_chunk").count();
            assert!(replayed > 0, "session/load was answered before its replay: {:?}", agent.updates);
        }
        if example.name == "session/new" {
            session_id = Some(result["sessionId"].as_str().expect("a sessionId").to_string());
        }
        results.insert(example.name.clone(), result);
    }
    // An error to compare the documented ones with: a prompt to a session that is not open.
    let error = agent
        .request("session/prompt", json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}))
        .await
        .expect_err("a prompt to an unknown session fails");
    let (seen, asked) = agent.close().await;
    updates.extend(seen);
    agent_requests.extend(asked);
    assert_eq!(server.remaining(), 0, "the documented prompt played every scripted reply");

    let mut checked = 0;
    for example in &acp {
        let outcome = match example.kind.as_str() {
            "acp-result" => match results.get(&example.name) {
                Some(actual) => shape(&example.json, actual, &example.name, Elements::First),
                None => Err(format!("{} was never answered", example.name)),
            },
            "acp-update" => some_matches(
                &example.json,
                updates.iter().filter(|u| u["update"]["sessionUpdate"] == example.name.as_str()),
                &format!("session/update {}", example.name),
            ),
            "acp-agent-request" => some_matches(
                &example.json,
                agent_requests.iter().filter(|(method, _)| *method == example.name).map(|(_, params)| params),
                &example.name,
            ),
            "acp-error" => shape(&example.json, &error, "error", Elements::First),
            _ => continue,
        };
        outcome.unwrap_or_else(|err| panic!("{}: {err}", example.place));
        checked += 1;
    }
    assert!(checked >= 16, "only {checked} examples were checked");

    // The documented flow did what the docs say: the edit went through the client, and the
    // session was listed and replayed under the documented prompt.
    let writes: Vec<&Value> =
        agent_requests.iter().filter(|(m, _)| m == "fs/write_text_file").map(|(_, p)| p).collect();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0]["content"], "fn answer() -> u32 {\n    42\n}\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(), LIB_BEFORE, "the disk is the client's");
    assert_eq!(results["session/list"]["sessions"][0]["sessionId"], json!(session_id));
    let ran: Vec<&Value> = agent_requests.iter().filter(|(m, _)| m == "terminal/create").map(|(_, p)| p).collect();
    assert_eq!(ran.len(), 1, "the command ran in the client's terminal");
    assert_eq!(ran[0]["args"].as_array().unwrap().last().unwrap(), "cargo test");
    let requests = server.chat_requests();
    // The third model call follows the command (the fourth, the todo list).
    let last_result = requests[2].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(
        last_result["content"].to_string().contains("1 passed"),
        "the model got the terminal's output: {last_result}"
    );
    let replayed: Vec<&Value> =
        updates.iter().filter(|u| u["update"]["sessionUpdate"] == "user_message_chunk").collect();
    assert!(
        replayed.iter().any(|u| u["update"]["content"]["text"].as_str().unwrap_or("").starts_with("Fix the answer")),
        "the load replayed the documented prompt: {replayed:?}"
    );
}
