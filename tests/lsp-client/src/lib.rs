//! A small LSP client for tests and benchmarks.
//!
//! [`LspClient`] talks JSON-RPC with `Content-Length` framing over a child process's stdio (or
//! any byte stream), matches responses to requests, records every notification and every request
//! from the server, and answers those requests the way a simple editor would (progress tokens
//! accepted, `workspace/applyEdit` applied to the documents it opened, then `didChange`).
//! [`ClientDocument`] keeps the client's copy of a text and produces UTF-16 ranges for
//! incremental changes.

mod document;
mod framing;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::sync::{Notify, oneshot};

pub use document::ClientDocument;

/// How long [`LspClient::request`] waits for an answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A JSON-RPC error answer (or a transport failure, with code 0).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    /// `data.code`: the server's stable error code.
    pub fn data_code(&self) -> Option<&str> {
        self.data.as_ref()?.get("code")?.as_str()
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error {}: {} (data {:?})", self.code, self.message, self.data)
    }
}

type Writer = Box<dyn AsyncWrite + Unpin + Send>;
type Answer = Result<Value, RpcError>;

/// Answers a request from the server, given its params: `Some(Ok(result))`, `Some(Err(error))`
/// (a JSON-RPC error object), or `None` to leave it unanswered (an editor that hangs).
pub type RequestHandler = Arc<dyn Fn(&Value) -> Option<Result<Value, Value>> + Send + Sync>;

#[derive(Default)]
struct Shared {
    pending: Mutex<HashMap<i64, oneshot::Sender<Answer>>>,
    /// `{method, params}` of every notification, in arrival order.
    notifications: Mutex<Vec<Value>>,
    /// Every request the server sent, `{id, method, params}`.
    server_requests: Mutex<Vec<Value>>,
    /// Answers to responses with a null id (the server could not read a message).
    orphan_errors: Mutex<Vec<Value>>,
    /// The body of every frame the server sent, as text, in arrival order.
    received: Mutex<Vec<String>>,
    /// What `workspace/applyEdit` is answered with.
    apply_edit_answer: Mutex<Option<Value>>,
    /// Handlers of server requests set by the test, by method; they win over the built-in answers.
    handlers: Mutex<HashMap<String, RequestHandler>>,
    /// The documents this client opened, with their versions, as its `didOpen`/`didChange` said:
    /// an applied `workspace/applyEdit` changes them and is followed by a `didChange`, as in an
    /// editor.
    documents: Mutex<HashMap<String, (ClientDocument, i64)>>,
    /// Answer `workspace/applyEdit` and apply nothing, as Neovim did with an edit for an older
    /// version than its buffer's.
    drop_edits: std::sync::atomic::AtomicBool,
    arrived: Notify,
}

pub struct LspClient {
    writer: Arc<tokio::sync::Mutex<Writer>>,
    shared: Arc<Shared>,
    next_id: AtomicI64,
    child: Option<Child>,
    reader: tokio::task::JoinHandle<()>,
}

impl LspClient {
    /// Spawns `command` with piped stdio (stderr is inherited, so server logs show in test
    /// output) and talks to it.
    pub fn spawn(mut command: Command) -> std::io::Result<Self> {
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the child has no piped stdio"));
        };
        let mut client = Self::over(stdout, stdin);
        client.child = Some(child);
        Ok(client)
    }

    /// A client over any pair of byte streams (a TCP connection).
    pub fn over(
        read: impl AsyncRead + Unpin + Send + 'static,
        write: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Self {
        let shared = Arc::new(Shared::default());
        let writer: Arc<tokio::sync::Mutex<Writer>> = Arc::new(tokio::sync::Mutex::new(Box::new(write)));
        let reader = tokio::spawn(read_loop(read, shared.clone(), writer.clone()));
        Self { writer, shared, next_id: AtomicI64::new(1), child: None, reader }
    }

    /// The server's process id, when this client spawned it.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// Sends a request and waits for its answer.
    pub async fn request(&self, method: &str, params: Value) -> Answer {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        match tokio::time::timeout(REQUEST_TIMEOUT, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(transport_error(format!("the server closed the connection before answering {method}"))),
            Err(_) => Err(transport_error(format!("no answer to {method} within {REQUEST_TIMEOUT:?}"))),
        }
    }

    /// `workspace/executeCommand` with one object argument.
    pub async fn command(&self, command: &str, argument: Value) -> Answer {
        self.request("workspace/executeCommand", json!({"command": command, "arguments": [argument]})).await
    }

    pub async fn notify(&self, method: &str, params: Value) {
        track(&self.shared, method, &params);
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    /// The client's copy of an open document: its text and version.
    pub fn document(&self, uri: &str) -> Option<(String, i64)> {
        lock(&self.shared.documents).get(uri).map(|(document, version)| (document.text.clone(), *version))
    }

    /// Sends `body` in a frame as it is (for malformed-message tests).
    pub async fn send_frame(&self, body: &[u8]) {
        self.write(&framing::frame(body)).await;
    }

    /// Sends `bytes` as they are, framing included (for broken-framing tests).
    pub async fn send_raw(&self, bytes: &[u8]) {
        self.write(bytes).await;
    }

    /// `initialize` with one workspace folder and `initializationOptions`, then `initialized`.
    /// Offers only UTF-16 unless `encodings` says otherwise. Returns the initialize result.
    pub async fn initialize(&self, root: &Path, options: Value, encodings: &[&str]) -> Answer {
        self.initialize_with(root, options, encodings, json!({})).await
    }

    /// [`LspClient::initialize`], with `workspace` laid over the client's workspace capabilities
    /// (`{"workspaceEdit": {"documentChanges": true}}`).
    pub async fn initialize_with(&self, root: &Path, options: Value, encodings: &[&str], workspace: Value) -> Answer {
        let uri = file_uri(root);
        let mut workspace_capabilities = json!({"applyEdit": true, "workspaceFolders": true});
        for (key, value) in workspace.as_object().cloned().unwrap_or_default() {
            workspace_capabilities[key] = value;
        }
        let result = self
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": uri,
                    "workspaceFolders": [{"uri": uri, "name": "root"}],
                    "initializationOptions": options,
                    "capabilities": {
                        "general": {"positionEncodings": encodings},
                        "window": {"workDoneProgress": true},
                        "workspace": workspace_capabilities,
                    },
                }),
            )
            .await?;
        self.notify("initialized", json!({})).await;
        Ok(result)
    }

    /// Every notification so far, `{method, params}`.
    pub fn notifications(&self) -> Vec<Value> {
        lock(&self.shared.notifications).clone()
    }

    /// Every request the server sent so far, `{id, method, params}`.
    pub fn server_requests(&self) -> Vec<Value> {
        lock(&self.shared.server_requests).clone()
    }

    /// Error answers the server sent with a null id (to messages it could not read).
    pub fn orphan_errors(&self) -> Vec<Value> {
        lock(&self.shared.orphan_errors).clone()
    }

    /// The body of every frame the server sent so far (answers, requests, notifications and
    /// frames that are not JSON alike), as text: for checking that something never went out.
    pub fn received(&self) -> Vec<String> {
        lock(&self.shared.received).clone()
    }

    /// Sets the answer to `workspace/applyEdit` (default `{"applied": true}`).
    pub fn answer_apply_edit_with(&self, answer: Value) {
        *lock(&self.shared.apply_edit_answer) = Some(answer);
    }

    /// From now on, `workspace/applyEdit` is answered (`applied: true` by default) but nothing
    /// is applied and no `didChange` follows: an editor that drops an edit and says it applied it.
    pub fn drop_apply_edits(&self) {
        self.shared.drop_edits.store(true, Ordering::SeqCst);
    }

    /// Answers the server's `method` requests with `handler` from now on, instead of the built-in
    /// answer (or the "not handled" error).
    pub fn on_request(
        &self,
        method: &str,
        handler: impl Fn(&Value) -> Option<Result<Value, Value>> + Send + Sync + 'static,
    ) {
        lock(&self.shared.handlers).insert(method.to_string(), Arc::new(handler));
    }

    /// Waits until some notification satisfies `found`, and returns it.
    pub async fn wait_for(&self, timeout: Duration, found: impl Fn(&Value) -> bool) -> Result<Value, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.shared.arrived.notified();
            if let Some(hit) = lock(&self.shared.notifications).iter().find(|n| found(n)) {
                return Ok(hit.clone());
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                let methods: Vec<String> =
                    self.notifications().iter().map(|n| n["method"].as_str().unwrap_or("?").to_string()).collect();
                return Err(format!("timed out after {timeout:?}; notifications so far: {methods:?}"));
            }
        }
    }

    /// Waits until some frame the server sent (of any kind) satisfies `found`, and returns it.
    pub async fn wait_for_frame(&self, timeout: Duration, found: impl Fn(&Value) -> bool) -> Result<Value, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.shared.arrived.notified();
            let hit = lock(&self.shared.received)
                .iter()
                .filter_map(|body| serde_json::from_str::<Value>(body).ok())
                .find(|frame| found(frame));
            if let Some(hit) = hit {
                return Ok(hit);
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return Err(format!("timed out after {timeout:?}; frames so far: {:?}", self.received()));
            }
        }
    }

    /// `shutdown`, `exit`, and the server's exit code.
    pub async fn shutdown(self) -> Option<i32> {
        let _ = self.request("shutdown", Value::Null).await;
        self.exit().await
    }

    /// `exit` (whether or not `shutdown` came first), and the server's exit code.
    pub async fn exit(mut self) -> Option<i32> {
        self.notify("exit", Value::Null).await;
        let child = self.child.as_mut()?;
        match tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
            Ok(Ok(status)) => status.code(),
            _ => None,
        }
    }

    async fn send(&self, message: &Value) {
        self.write(&framing::frame(message.to_string().as_bytes())).await;
    }

    async fn write(&self, bytes: &[u8]) {
        let mut writer = self.writer.lock().await;
        // A server that went away shows up as a missing answer, with a clearer message.
        let _ = writer.write_all(bytes).await;
        let _ = writer.flush().await;
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// `file:///…` for a path (percent-encoding the few characters tests use).
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for c in path.to_string_lossy().chars() {
        match c {
            ' ' => uri.push_str("%20"),
            '#' => uri.push_str("%23"),
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3F"),
            c => uri.push(c),
        }
    }
    uri
}

async fn read_loop(read: impl AsyncRead + Unpin, shared: Arc<Shared>, writer: Arc<tokio::sync::Mutex<Writer>>) {
    let mut reader = tokio::io::BufReader::new(read);
    while let Ok(Some(body)) = framing::read_frame(&mut reader).await {
        lock(&shared.received).push(String::from_utf8_lossy(&body).into_owned());
        shared.arrived.notify_waiters();
        let Ok(message) = serde_json::from_slice::<Value>(&body) else { continue };
        let method = message.get("method").and_then(Value::as_str).map(str::to_string);
        let id = message.get("id").cloned().filter(|id| !id.is_null());
        match (method, id) {
            (Some(method), Some(id)) => {
                lock(&shared.server_requests).push(json!({"id": id, "method": method, "params": message["params"]}));
                let handler = lock(&shared.handlers).get(&method).cloned();
                let answer = match handler {
                    Some(handler) => match handler(&message["params"]) {
                        Some(answer) => answer,
                        None => {
                            shared.arrived.notify_waiters();
                            continue;
                        }
                    },
                    None => answer_server_request(&shared, &method),
                };
                let mut writer = writer.lock().await;
                let answer = match answer {
                    Ok(result)
                        if method == "workspace/applyEdit"
                            && result["applied"] == true
                            && !shared.drop_edits.load(Ordering::SeqCst) =>
                    {
                        // As an editor: the buffers change, the server hears it, then the answer.
                        let (result, changes) = apply_edit(&shared, &message["params"]["edit"], result);
                        for change in changes {
                            let frame = json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": change});
                            let _ = writer.write_all(&framing::frame(frame.to_string().as_bytes())).await;
                        }
                        Ok(result)
                    }
                    answer => answer,
                };
                let reply = match answer {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
                };
                let _ = writer.write_all(&framing::frame(reply.to_string().as_bytes())).await;
                let _ = writer.flush().await;
                drop(writer);
                shared.arrived.notify_waiters();
            }
            (Some(method), None) => {
                lock(&shared.notifications).push(json!({"method": method, "params": message["params"]}));
                shared.arrived.notify_waiters();
            }
            (None, Some(id)) => {
                let answer = match message.get("error") {
                    Some(error) => Err(RpcError {
                        code: error["code"].as_i64().unwrap_or(0),
                        message: error["message"].as_str().unwrap_or("").to_string(),
                        data: error.get("data").cloned(),
                    }),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                if let Some(tx) = id.as_i64().and_then(|id| lock(&shared.pending).remove(&id)) {
                    let _ = tx.send(answer);
                }
            }
            (None, None) => {
                lock(&shared.orphan_errors).push(message);
                shared.arrived.notify_waiters();
            }
        }
    }
    // The server closed its output: fail every waiting request.
    lock(&shared.pending).clear();
}

/// Keeps the client's copy of the documents it opened in step with what it tells the server.
fn track(shared: &Shared, method: &str, params: &Value) {
    let uri = params["textDocument"]["uri"].as_str().unwrap_or_default().to_string();
    let version = params["textDocument"]["version"].as_i64().unwrap_or(0);
    let mut documents = lock(&shared.documents);
    match method {
        "textDocument/didOpen" => {
            let text = params["textDocument"]["text"].as_str().unwrap_or_default();
            documents.insert(uri, (ClientDocument::new(text), version));
        }
        "textDocument/didChange" => {
            if let Some((document, known)) = documents.get_mut(&uri) {
                for change in params["contentChanges"].as_array().into_iter().flatten() {
                    document.apply(change);
                }
                *known = version;
            }
        }
        "textDocument/didClose" => {
            documents.remove(&uri);
        }
        _ => {}
    }
}

/// Applies a workspace edit the client answers `applied: true` to to the documents it has open,
/// as an editor does: an edit naming another version than the document's is refused (the answer
/// becomes `applied: false`), and each changed document's `didChange` (its whole text, the next
/// version) is returned to be sent before the answer.
fn apply_edit(shared: &Shared, edit: &Value, result: Value) -> (Value, Vec<Value>) {
    let mut documents = lock(&shared.documents);
    let mut changes = Vec::new();
    for change in edit["documentChanges"].as_array().into_iter().flatten() {
        let uri = change["textDocument"]["uri"].as_str().unwrap_or_default();
        let Some((document, version)) = documents.get_mut(uri) else { continue };
        let named = &change["textDocument"]["version"];
        if !named.is_null() && named.as_i64() != Some(*version) {
            let reason = format!("{uri} is at version {version}, the edit was made for version {named}");
            return (json!({"applied": false, "failureReason": reason}), Vec::new());
        }
        let mut edits: Vec<&Value> = change["edits"].as_array().into_iter().flatten().collect();
        let start = |edit: &Value| {
            let position = &edit["range"]["start"];
            (position["line"].as_u64().unwrap_or(0), position["character"].as_u64().unwrap_or(0))
        };
        // Last first, so that each range still names the text it was made for.
        edits.sort_by_key(|edit| std::cmp::Reverse(start(edit)));
        for edit in edits {
            document.apply(edit);
        }
        *version += 1;
        changes.push(json!({
            "textDocument": {"uri": uri, "version": *version},
            "contentChanges": [{"text": document.text}],
        }));
    }
    (result, changes)
}

fn answer_server_request(shared: &Shared, method: &str) -> Result<Value, Value> {
    match method {
        "window/workDoneProgress/create" | "client/registerCapability" | "client/unregisterCapability" => {
            Ok(Value::Null)
        }
        "workspace/applyEdit" => Ok(lock(&shared.apply_edit_answer).clone().unwrap_or(json!({"applied": true}))),
        "workspace/configuration" => Ok(json!([])),
        "window/showMessageRequest" => Ok(Value::Null),
        _ => Err(json!({"code": -32601, "message": format!("the test client does not handle {method}")})),
    }
}

fn transport_error(message: String) -> RpcError {
    RpcError { code: 0, message, data: None }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
