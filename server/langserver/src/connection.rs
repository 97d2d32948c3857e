//! One running language server: the process (in a group of its own, behind the guard that ends
//! the group with reins), its `Content-Length` frames read by `reins-jsonrpc`'s reader, requests
//! waiting for their answers, the server's own requests answered at once, the documents it was
//! told about, and the diagnostics it published.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use ls_types::Uri;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use reins_jsonrpc::{FrameReader, Item, MAX_FRAME_BYTES, Reader, frame};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

use reins_tools::{Sandbox, SandboxMode};

use crate::config::ServerConfig;
use crate::encoding::Encoding;

/// How long `initialize` may take: less than the `lsp` tool's own time limit, so that the model
/// is told which server hangs rather than that the tool timed out.
const START_TIMEOUT: Duration = Duration::from_secs(45);
/// Stderr lines kept to explain a crash.
const STDERR_TAIL: usize = 20;

/// An answer, or why there is none: the server's error answer, or the server stopped.
type Answer = Result<Value, Failure>;

enum Failure {
    Answered(String),
    Stopped(String),
}

/// A document as the server was last told of it.
struct Document {
    version: i32,
    text: String,
}

/// What a server published for one file, and for which version of it.
#[derive(Clone)]
pub(crate) struct Published {
    pub version: Option<i32>,
    pub diagnostics: Vec<ls_types::Diagnostic>,
    /// Published since the text was last synced (a server need not say which version it read).
    pub current: bool,
}

#[derive(Default)]
struct State {
    pending: HashMap<i64, oneshot::Sender<Answer>>,
    documents: HashMap<PathBuf, Document>,
    published: HashMap<PathBuf, Published>,
    stderr: Vec<String>,
    /// Work the server reported begun and not yet ended (`$/progress`): loading a project,
    /// indexing. Answers given meanwhile may be incomplete.
    progress: std::collections::HashSet<String>,
    /// Why it stopped, once it did.
    ended: Option<String>,
    /// A request the server left unanswered past its time (id, method, seconds waited): until
    /// it answers that one, it is taken to hang and asked nothing more, so that each question
    /// does not wait the whole time again.
    hung: Option<(i64, String, u64)>,
}

pub(crate) struct Connection {
    pub name: String,
    encoding: OnceLock<Encoding>,
    capabilities: OnceLock<Value>,
    group: Pid,
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    state: Arc<Mutex<State>>,
    next_id: AtomicI64,
    /// Bumped at every publishDiagnostics, so waiters wake.
    published: watch::Sender<u64>,
    /// The enclosure's control socket, when the server runs sandboxed: dropped with the
    /// connection, it ends the server and everything it started.
    control: Mutex<Option<std::os::unix::net::UnixStream>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Connection {
    /// Starts `config`'s server in `root` with `env` as its whole environment and initializes
    /// it; fails with a sentence naming the server when it cannot be started, crashes or does
    /// not answer in time.
    pub async fn start(
        config: &ServerConfig,
        root: &Path,
        env: &[(OsString, OsString)],
        (sandbox, roots): (&Sandbox, &[PathBuf]),
    ) -> Result<Arc<Connection>, String> {
        let name = &config.name;
        let mut command = tokio::process::Command::new(&config.command);
        command
            .args(&config.args)
            .current_dir(root)
            // Provider keys stay with reins: `env` is the tool environment, without them.
            .env_clear()
            .envs(env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so that stopping it stops what it started (tsserver, workers).
            .process_group(0)
            .kill_on_drop(true);
        let reins = std::process::id() as libc::pid_t;
        // SAFETY: the guard makes only async-signal-safe calls (see reins-mcp's guard.rs).
        unsafe {
            command.pre_exec(move || reins_mcp::fork_guard(reins));
        }
        // Confined as bash's commands are; its wait status then comes through the control
        // socket (the process reins started is the enclosure's supervisor), and closing the
        // socket ends the server and all it started.
        let control = match sandbox.mode {
            SandboxMode::Off => None,
            _ => Some(
                reins_tools::enclose(command.as_std_mut(), sandbox, roots)
                    .map_err(|err| format!("cannot start the language server {name} in the sandbox: {err}"))?,
            ),
        };
        let mut child = command.spawn().map_err(|err| match err.kind() {
            std::io::ErrorKind::NotFound => {
                format!("the language server {name} (`{}`) is not installed or not on PATH", config.command)
            }
            _ => format!("cannot start the language server {name} (`{}`): {err}", config.command),
        })?;
        let (Some(stdin), Some(stdout), Some(stderr), Some(pid)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take(), child.id())
        else {
            return Err(format!("cannot start the language server {name}: its streams were not set up"));
        };
        let state = Arc::new(Mutex::new(State::default()));
        let (outgoing, receiver) = mpsc::unbounded_channel();
        let (published, _) = watch::channel(0);
        let connection = Arc::new(Connection {
            name: name.clone(),
            encoding: OnceLock::new(),
            capabilities: OnceLock::new(),
            group: Pid::from_raw(pid as i32),
            outgoing,
            state: state.clone(),
            next_id: AtomicI64::new(1),
            published,
            control: Mutex::new(None),
        });
        tokio::spawn(write_frames(stdin, receiver));
        let (stderr_sender, mut stderr_done) = watch::channel(false);
        let stderr_state = state.clone();
        tokio::spawn(async move {
            read_stderr(stderr, stderr_state).await;
            let _ = stderr_sender.send(true);
        });
        let reader = Arc::downgrade(&connection);
        tokio::spawn(async move {
            read_frames(stdout, reader).await;
        });
        let watcher = Arc::downgrade(&connection);
        let status_socket = match &control {
            Some(control) => Some(
                control
                    .try_clone()
                    .and_then(|socket| {
                        socket.set_nonblocking(true)?;
                        tokio::net::UnixStream::from_std(socket)
                    })
                    .map_err(|err| format!("cannot watch the language server {name}: {err}"))?,
            ),
            None => None,
        };
        let enclosed = control.is_some();
        *lock(&connection.control) = control;
        tokio::spawn(async move {
            let status = match status_socket {
                Some(socket) => enclosed_status(socket, &mut child).await,
                None => child.wait().await,
            };
            // Its last words explain the exit: wait a moment for them.
            let _ = tokio::time::timeout(Duration::from_millis(500), stderr_done.wait_for(|done| *done)).await;
            if let Some(connection) = watcher.upgrade() {
                let how = match status {
                    Ok(status) => match status.code() {
                        Some(code) => format!("exited with status {code}"),
                        None => format!("was stopped ({status})"),
                    },
                    Err(err) => format!("could not be waited for: {err}"),
                };
                connection.end(format!("the language server {} {how}", connection.name));
            }
        });
        let initialized =
            tokio::time::timeout(START_TIMEOUT, connection.request("initialize", initialize_params(root, enclosed)))
                .await
                .map_err(|_| {
                    connection.kill();
                    format!(
                        "the language server {name} did not answer `initialize` within {} s",
                        START_TIMEOUT.as_secs()
                    )
                })??;
        connection.notify("initialized", json!({}));
        let capabilities = initialized.get("capabilities").cloned().unwrap_or(Value::Null);
        let _ = connection.encoding.set(Encoding::of(&capabilities));
        let _ = connection.capabilities.set(capabilities);
        Ok(connection)
    }

    /// How the server counts columns (what `initialize` settled).
    pub fn encoding(&self) -> Encoding {
        self.encoding.get().copied().unwrap_or(Encoding::Utf16)
    }

    /// Whether the server answers `prepareRename` (`renameProvider: {prepareProvider: true}`).
    pub fn prepares_rename(&self) -> bool {
        self.capabilities
            .get()
            .and_then(|capabilities| capabilities.pointer("/renameProvider/prepareProvider"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// Whether the server said it can answer `provider` (`referencesProvider`, …).
    pub fn can(&self, provider: &str) -> bool {
        self.capabilities
            .get()
            .and_then(|capabilities| capabilities.get(provider))
            .is_some_and(|value| !value.is_null() && value != &Value::Bool(false))
    }

    /// Sends a request and waits for its answer (an error answer is a sentence).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let (_, receiver) = self.send_request(method, params)?;
        let sent = std::time::Instant::now();
        let answer = receiver.await;
        timing(method, sent);
        self.answer(method, answer)
    }

    /// Sends a request and waits at most `timeout` for its answer; a server that lets it pass
    /// is taken to hang (see `State::hung`), and fails every request at once until it answers.
    pub async fn request_within(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, String> {
        if let Some((_, asked, secs)) = &lock(&self.state).hung {
            return Err(self.hangs(asked, *secs));
        }
        let (id, receiver) = self.send_request(method, params)?;
        let sent = std::time::Instant::now();
        match tokio::time::timeout(timeout, receiver).await {
            Ok(answer) => {
                timing(method, sent);
                self.answer(method, answer)
            }
            Err(_) => {
                let mut state = lock(&self.state);
                // Unless it answered just now.
                if state.pending.contains_key(&id) {
                    state.hung.get_or_insert((id, method.to_string(), timeout.as_secs()));
                }
                Err(self.hangs(method, timeout.as_secs()))
            }
        }
    }

    fn hangs(&self, method: &str, secs: u64) -> String {
        format!(
            "the language server {} has not answered {method}, asked more than {secs} s ago: it hangs, and is not \
             asked again until it answers",
            self.name
        )
    }

    /// Sends a request; its answer will come through the receiver.
    fn send_request(&self, method: &str, params: Value) -> Result<(i64, oneshot::Receiver<Answer>), String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        {
            let mut state = lock(&self.state);
            if let Some(ended) = &state.ended {
                return Err(ended.clone());
            }
            state.pending.insert(id, sender);
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        Ok((id, receiver))
    }

    /// The answer to `method` as the caller wants it: the result, or a sentence.
    fn answer(&self, method: &str, answer: Result<Answer, oneshot::error::RecvError>) -> Result<Value, String> {
        let stopped = || Failure::Stopped(format!("the language server {} stopped", self.name));
        match answer.unwrap_or_else(|_| Err(stopped())) {
            Ok(answer) => Ok(answer),
            Err(Failure::Answered(err)) => {
                Err(format!("the language server {} answered {method} with an error: {err}", self.name))
            }
            Err(Failure::Stopped(why)) => Err(why),
        }
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn send(&self, message: Value) {
        let _ = self.outgoing.send(frame(message.to_string().as_bytes()));
    }

    /// Why the server stopped, if it did.
    pub fn ended(&self) -> Option<String> {
        lock(&self.state).ended.clone()
    }

    /// Tells the server the file's text as it is on disk now (opening it first), so that its
    /// answers and diagnostics are about what the tools see. Answers the version told.
    pub fn sync(&self, path: &Path, language_id: &str) -> Result<i32, String> {
        let text = std::fs::read_to_string(path).map_err(|err| format!("{}: {err}", path.display()))?;
        let uri = uri_of(path)?;
        let mut state = lock(&self.state);
        match state.documents.get_mut(path) {
            Some(document) if document.text == text => Ok(document.version),
            Some(document) => {
                document.version += 1;
                document.text = text.clone();
                let version = document.version;
                if let Some(published) = state.published.get_mut(path) {
                    published.current = false;
                }
                drop(state);
                self.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
                );
                Ok(version)
            }
            None => {
                state.documents.insert(path.to_path_buf(), Document { version: 1, text: text.clone() });
                drop(state);
                self.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uri, "languageId": language_id, "version": 1, "text": text}}),
                );
                Ok(1)
            }
        }
    }

    /// Tells the server of every file it has open whose text on disk changed since (a rename or
    /// an edit elsewhere), so it answers about the files as they are.
    pub fn resync_open(&self) {
        let open: Vec<PathBuf> = lock(&self.state).documents.keys().cloned().collect();
        for path in open {
            if let Err(err) = self.sync(&path, crate::config::language_id(&path)) {
                tracing::debug!("{}: {err}", self.name);
            }
        }
    }

    /// Whether the server reports work in progress (a project loading, an index being built).
    pub fn busy(&self) -> bool {
        !lock(&self.state).progress.is_empty()
    }

    /// Waits until the server reports no work in progress, or `timeout` passes.
    pub async fn idle(&self, timeout: Duration) {
        let mut changes = self.published.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        while self.busy() {
            if tokio::time::timeout_at(deadline, changes.changed()).await.map_or(true, |changed| changed.is_err()) {
                return;
            }
        }
    }

    /// Whether the server was told of `path`.
    pub fn is_open(&self, path: &Path) -> bool {
        lock(&self.state).documents.contains_key(path)
    }

    /// The text the server was last told for `path`, else the file on disk.
    pub fn text_of(&self, path: &Path) -> Option<String> {
        if let Some(document) = lock(&self.state).documents.get(path) {
            return Some(document.text.clone());
        }
        crate::answers::disk_text(path)
    }

    /// What the server last published for `path`.
    pub fn published(&self, path: &Path) -> Option<Published> {
        lock(&self.state).published.get(path).cloned()
    }

    /// Waits until the server publishes diagnostics for `path` at `version` (or without a
    /// version, after `since`), or `timeout` passes.
    pub async fn wait_published(&self, path: &Path, version: i32, timeout: Duration) -> Option<Published> {
        let mut changes = self.published.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(published) = self.published(path)
                && published.current
                && published.version.is_none_or(|published| published >= version)
            {
                return Some(published);
            }
            if tokio::time::timeout_at(deadline, changes.changed()).await.map_or(true, |changed| changed.is_err()) {
                return None;
            }
        }
    }

    /// Asks the server to stop, then ends its process group.
    pub async fn stop(&self) {
        if self.ended().is_none() {
            let _ = tokio::time::timeout(Duration::from_secs(2), self.request("shutdown", Value::Null)).await;
            self.notify("exit", Value::Null);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.kill();
    }

    pub fn kill(&self) {
        let _ = killpg(self.group, Signal::SIGKILL);
    }

    /// The server stopped: every waiting request fails with `why` and its stderr's last lines.
    fn end(&self, why: String) {
        let mut state = lock(&self.state);
        if state.ended.is_some() {
            return;
        }
        let tail = state.stderr.join("\n");
        let why = if tail.trim().is_empty() { why } else { format!("{why}; it said: {tail}") };
        state.ended = Some(why.clone());
        for (_, waiter) in state.pending.drain() {
            let _ = waiter.send(Err(Failure::Stopped(why.clone())));
        }
    }

    /// A message from the server: an answer, a notification, or a request of its own.
    fn receive(&self, message: Value) {
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").cloned();
        match (method, id) {
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { return };
                let answer = match message.get("error") {
                    Some(error) => Err(Failure::Answered(
                        error.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_string(),
                    )),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let mut state = lock(&self.state);
                if state.hung.as_ref().is_some_and(|(hung, ..)| *hung == id) {
                    state.hung = None;
                }
                if let Some(waiter) = state.pending.remove(&id) {
                    let _ = waiter.send(answer);
                }
            }
            (Some(method), Some(id)) => {
                let result = server_request(method, message.get("params"));
                self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
            }
            (Some("$/progress"), None) => {
                let Some(params) = message.get("params") else { return };
                let token = params.get("token").map(Value::to_string).unwrap_or_default();
                match params.pointer("/value/kind").and_then(Value::as_str) {
                    Some("begin") => {
                        lock(&self.state).progress.insert(token);
                    }
                    Some("end") => {
                        lock(&self.state).progress.remove(&token);
                    }
                    _ => return,
                }
                self.published.send_modify(|count| *count += 1);
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                let Some(params) = message.get("params") else { return };
                let Ok(params) = serde_json::from_value::<ls_types::PublishDiagnosticsParams>(params.clone()) else {
                    return;
                };
                let Some(path) = params.uri.to_file_path().map(|path| path.into_owned()) else { return };
                let published = Published { version: params.version, diagnostics: params.diagnostics, current: true };
                lock(&self.state).published.insert(path, published);
                self.published.send_modify(|count| *count += 1);
            }
            _ => {}
        }
    }
}

/// The wait status of an enclosed server, which its enclosure sends through the control socket
/// (closed without one: it was killed); the supervisor reins started is reaped too.
async fn enclosed_status(
    mut socket: tokio::net::UnixStream,
    child: &mut tokio::process::Child,
) -> std::io::Result<std::process::ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = [0u8; 4];
    let status = match socket.read_exact(&mut status).await {
        Ok(_) => std::process::ExitStatus::from_raw(i32::from_ne_bytes(status)),
        Err(_) => std::process::ExitStatus::from_raw(libc::SIGKILL),
    };
    let _ = child.wait().await;
    Ok(status)
}

/// The server's own time, for the bench to weigh the tool's time against.
fn timing(method: &str, sent: std::time::Instant) {
    tracing::debug!(target: "reins_langserver::timing", "{method} answered in {} us", sent.elapsed().as_micros());
}

/// What reins answers a server's own request: no configuration, progress tokens accepted,
/// registrations acknowledged; it never lets a server change files itself.
fn server_request(method: &str, params: Option<&Value>) -> Value {
    match method {
        "workspace/configuration" => {
            let items = params.and_then(|params| params.get("items")).and_then(Value::as_array).map_or(0, Vec::len);
            Value::Array(vec![Value::Null; items])
        }
        "workspace/applyEdit" => {
            json!({"applied": false, "failureReason": "reins applies edits only through its tools"})
        }
        "workspace/workspaceFolders" => Value::Null,
        _ => Value::Null,
    }
}

/// The params of `initialize`. An enclosed server sees its own processes only: reins's process
/// id would look dead to it (pyright exits at once), so none is given; the enclosure ends the
/// server with reins instead.
fn initialize_params(root: &Path, enclosed: bool) -> Value {
    let uri = uri_of(root).unwrap_or_else(|_| Uri::from_file_path("/").expect("the root path is a URI"));
    let name = root.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    json!({
        "processId": if enclosed { Value::Null } else { json!(std::process::id()) },
        "clientInfo": {"name": "reins", "version": env!("CARGO_PKG_VERSION")},
        "rootUri": uri,
        "rootPath": root,
        "workspaceFolders": [{"uri": uri, "name": name}],
        "capabilities": {
            "general": {"positionEncodings": ["utf-8", "utf-16"]},
            "workspace": {
                "workspaceEdit": {"documentChanges": true, "resourceOperations": ["create", "rename", "delete"]},
                "symbol": {},
                "configuration": true,
                "workspaceFolders": true,
            },
            "textDocument": {
                "synchronization": {"didSave": false},
                "definition": {"linkSupport": true},
                "typeDefinition": {"linkSupport": true},
                "implementation": {"linkSupport": true},
                "references": {},
                "hover": {"contentFormat": ["plaintext", "markdown"]},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                "rename": {"prepareSupport": true},
                "callHierarchy": {},
                "publishDiagnostics": {"versionSupport": true},
            },
            "window": {"workDoneProgress": true},
        },
    })
}

/// The `file://` URI of an absolute path.
pub(crate) fn uri_of(path: &Path) -> Result<Uri, String> {
    Uri::from_file_path(path).ok_or_else(|| format!("{} cannot be named by a URI", path.display()))
}

async fn write_frames(mut stdin: tokio::process::ChildStdin, mut frames: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(frame) = frames.recv().await {
        if stdin.write_all(&frame).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

async fn read_frames(mut stdout: tokio::process::ChildStdout, connection: std::sync::Weak<Connection>) {
    let mut reader = FrameReader::new(MAX_FRAME_BYTES);
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = match stdout.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let Some(connection) = connection.upgrade() else { return };
        for item in reader.feed(&buffer[..read]) {
            match item {
                Item::Body(body) => match serde_json::from_slice::<Value>(&body) {
                    Ok(message) => connection.receive(message),
                    Err(err) => tracing::debug!("{}: a frame that is not JSON: {err}", connection.name),
                },
                Item::Oversized { length, .. } => {
                    tracing::warn!("{}: skipped a frame of {length} bytes", connection.name)
                }
                Item::Skipped { bytes, reason } => {
                    tracing::debug!("{}: skipped {bytes} bytes: {reason}", connection.name)
                }
            }
        }
    }
    // A server that closed its output has usually exited: give its exit a moment to be told.
    tokio::time::sleep(Duration::from_secs(1)).await;
    if let Some(connection) = connection.upgrade() {
        connection.end(format!("the language server {} closed its output", connection.name));
    }
}

async fn read_stderr(stderr: tokio::process::ChildStderr, state: Arc<Mutex<State>>) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "reins_langserver::stderr", "{line}");
        let mut state = lock(&state);
        state.stderr.push(line);
        if state.stderr.len() > STDERR_TAIL {
            state.stderr.remove(0);
        }
    }
}

/// A connection no one holds any more takes its server with it.
impl Drop for Connection {
    fn drop(&mut self) {
        self.kill();
    }
}

impl crate::answers::Texts for Connection {
    fn encoding(&self) -> Encoding {
        Connection::encoding(self)
    }

    fn text_of(&self, path: &Path) -> Option<String> {
        Connection::text_of(self, path)
    }
}
