//! One live connection to a server, through rmcp: a child process in its own process group
//! (stderr to the log, killed with its group when the connection goes or reins dies) or a streamable HTTP
//! session, and the client side of the protocol (roots, progress, `tools/list_changed`).
//!
//! Roots and logging are deprecated from protocol 2026-07-28 on (SEP-2577), but every server
//! before it still asks for roots and sends log messages, so both are kept.
#![allow(deprecated)]

use std::collections::{HashMap, VecDeque};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use reins_agent::lock;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ListRootsResult, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, Root, RootsCapabilities,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::Options;
use crate::announced::Announced;
use crate::config::{ServerConfig, Transport};
use crate::http::http_client;
use crate::oauth;
use crate::probe::{Era, Probe};
use crate::server::Unavailable;
use crate::stdio::LineTransport;
use crate::token_file::TokenFile;

/// The variables of reins's environment a stdio server gets (Codex's list, and the locale and
/// XDG folders): a secret's name need not look secret (`DATABASE_URL` with a password in it), so
/// servers get what every program needs and what their config names, nothing else.
const ORDINARY_VARIABLES: &[&str] = &[
    "HOME",
    "LOGNAME",
    "USER",
    "PATH",
    "SHELL",
    "TERM",
    "TMPDIR",
    "TZ",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME",
];

/// How many of a server's last stderr lines are kept for error messages.
const STDERR_TAIL_LINES: usize = 20;
/// Longest stderr line kept, in bytes.
const STDERR_LINE_MAX: usize = 500;
/// How long a stopping server may take to exit after its stdin closes before its group is killed.
const EXIT_GRACE: Duration = Duration::from_millis(500);

pub(crate) type Service = RunningService<RoleClient, Handler>;

/// A started connection.
pub(crate) struct Connection {
    pub(crate) service: Service,
    pub(crate) handler: Handler,
    /// The child process of a stdio server.
    pub(crate) process: Option<Process>,
}

/// The client side of the protocol for one connection.
#[derive(Clone)]
pub(crate) struct Handler {
    server: Arc<str>,
    roots: Arc<[Root]>,
    /// Set when the server says its tools changed; cleared when they are listed again.
    pub(crate) tools_changed: Arc<AtomicBool>,
    /// Calls in flight that want progress, by progress token.
    progress: Arc<Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<String>>>>,
}

/// A stdio server's child process, the leader of its own process group.
pub(crate) struct Process {
    group: Pid,
    /// The exit status, once the process has exited.
    exited: watch::Receiver<Option<ExitStatus>>,
    stderr: StderrTail,
    /// Set when the server's stderr has ended.
    stderr_done: watch::Receiver<bool>,
}

/// The last lines a server wrote to stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

/// Stops routing progress of a call when the call ends.
pub(crate) struct ProgressRoute {
    handler: Handler,
    token: ProgressToken,
}

impl Connection {
    /// Starts the server and runs the `initialize` handshake, by `deadline`. An HTTP server with
    /// a stored login (`login`, its token file) gets its token, renewed as needed.
    pub(crate) async fn open(
        config: &ServerConfig,
        context: &Options,
        login: Option<TokenFile>,
        deadline: Instant,
    ) -> Result<Self, Unavailable> {
        let handler = Handler::new(&config.name, &context.roots);
        let waited = format!("{} s", config.startup_timeout.as_secs_f64());
        match &config.transport {
            Transport::Stdio { command, args, env, cwd } => {
                let cwd = cwd.as_deref().or(context.roots.first().map(PathBuf::as_path));
                let (mut process, stdout, stdin) =
                    Process::spawn(&config.name, command, args, &context.base_env, env, cwd)?;
                let mut transport = Probe::new(Announced::new(
                    LineTransport::new(&config.name, stdout, stdin),
                    handler.tools_changed.clone(),
                ));
                let patience = (Instant::now() + config.startup_timeout / 2).min(deadline);
                let era = match tokio::time::timeout_at(patience, transport.era(&handler.get_info())).await {
                    Ok(Ok(era)) => era,
                    Ok(Err(reason)) => return Err(process.failure(&reason).await.into()),
                    Err(_) => Era::Initialize,
                };
                let lifecycle = match era {
                    Era::Discover => ClientLifecycleMode::Discover { preferred_versions: preferred_versions() },
                    Era::Initialize => ClientLifecycleMode::Initialize,
                };
                match tokio::time::timeout_at(deadline, handler.clone().serve_with_lifecycle(transport, lifecycle))
                    .await
                {
                    Ok(Ok(service)) => Ok(Self { service, handler, process: Some(process) }),
                    Ok(Err(err)) => Err(process
                        .failure(&format!("the `initialize` handshake failed: {}", init_error(&err)))
                        .await
                        .into()),
                    Err(_) => Err(process
                        .timed_out(format!("it did not answer `initialize` within {waited} (startup_timeout_sec)"))
                        .into()),
                }
            }
            Transport::Http { url, bearer_token, headers } => {
                let client = http_client(headers)?;
                let mut transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = bearer_token {
                    transport_config = transport_config.auth_header(token.expose());
                }
                let waited_out = || {
                    Unavailable::from(format!(
                        "{url} did not answer `initialize` within {waited} (startup_timeout_sec)"
                    ))
                };
                // A login is used only when one is stored; without one, a server that wants one
                // says so with its 401.
                let opened = match login.filter(TokenFile::exists) {
                    None => serve_http(&handler, client, transport_config, deadline).await,
                    Some(file) => match tokio::time::timeout_at(deadline, oauth::authorized(client, url, file)).await {
                        Ok(Ok(client)) => serve_http(&handler, client, transport_config, deadline).await,
                        Ok(Err(oauth::Refusal::NeedsLogin)) => return Err(Unavailable::NeedsLogin),
                        Ok(Err(oauth::Refusal::Failed(reason))) => return Err(Unavailable::Failed(reason)),
                        Err(_) => return Err(waited_out()),
                    },
                };
                match opened {
                    Ok(Ok(service)) => Ok(Self { service, handler, process: None }),
                    Ok(Err(err)) if oauth::wants_login(&err) => Err(Unavailable::NeedsLogin),
                    Ok(Err(err)) => Err(format!("cannot connect to {url}: {}", init_error(&err)).into()),
                    Err(_) => Err(waited_out()),
                }
            }
        }
    }

    /// The protocol version the server and reins agreed on.
    pub(crate) fn protocol(&self) -> Option<String> {
        self.service.peer().peer_info().map(|info| info.protocol_version.to_string())
    }

    /// Whether the server said it offers resources.
    pub(crate) fn offers_resources(&self) -> bool {
        self.service.peer().peer_info().is_some_and(|info| info.capabilities.resources.is_some())
    }

    /// After a call: a streamable HTTP server sends `tools/list_changed` on an event stream of
    /// its own, in no order with the call's answer, so when it may change its tools the next
    /// turn lists them again rather than offer a list the call may have changed.
    pub(crate) fn call_answered(&self) {
        let announces =
            self.service.peer().peer_info().is_some_and(|info| {
                info.capabilities.tools.as_ref().is_some_and(|tools| tools.list_changed == Some(true))
            });
        if self.process.is_none() && announces {
            self.handler.tools_changed.store(true, Ordering::SeqCst);
        }
    }

    /// Why the connection is gone, or `None` while it is up.
    pub(crate) fn lost(&self) -> Option<String> {
        if let Some(process) = &self.process
            && let Some(status) = *process.exited.borrow()
        {
            return Some(process.describe_exit(status));
        }
        self.service.peer().is_transport_closed().then(|| "the connection closed".to_string())
    }

    /// Why the connection is gone, once it is: the process's exit and last stderr lines say
    /// more than a closed pipe, so they are waited for a moment.
    pub(crate) async fn loss_reason(&self) -> String {
        if let Some(process) = &self.process {
            let mut exited = process.exited.clone();
            let mut stderr_done = process.stderr_done.clone();
            let _ = tokio::time::timeout(EXIT_GRACE, async {
                let _ = exited.wait_for(Option::is_some).await;
                let _ = stderr_done.wait_for(|done| *done).await;
            })
            .await;
        }
        self.lost().unwrap_or_else(|| "the connection closed".to_string())
    }

    /// Closes the connection: stdin closes (or the HTTP session ends), then the process group
    /// is killed if it has not exited within a short grace.
    pub(crate) async fn close(mut self) {
        let _ = self.service.close_with_timeout(EXIT_GRACE).await;
        if let Some(mut process) = self.process.take() {
            let _ = tokio::time::timeout(EXIT_GRACE, process.exited.wait_for(Option::is_some)).await;
            process.kill();
        }
    }
}

/// Serves the client side of the protocol over streamable HTTP through `client`, by `deadline`.
async fn serve_http<C: StreamableHttpClient>(
    handler: &Handler,
    client: C,
    config: StreamableHttpClientTransportConfig,
    deadline: Instant,
) -> Result<Result<Service, ClientInitializeError>, tokio::time::error::Elapsed> {
    let transport =
        Announced::new(StreamableHttpClientTransport::with_client(client, config), handler.tools_changed.clone());
    tokio::time::timeout_at(deadline, handler.clone().serve_with_lifecycle(transport, lifecycle())).await
}

impl Handler {
    fn new(server: &str, roots: &[PathBuf]) -> Self {
        let roots = roots
            .iter()
            .filter_map(|root| {
                let uri = reqwest::Url::from_file_path(root).ok()?;
                let name = root.file_name().map(|name| name.to_string_lossy().into_owned());
                let mut root = Root::new(uri.to_string());
                root.name = name;
                Some(root)
            })
            .collect();
        Self { server: server.into(), roots, tools_changed: Arc::new(AtomicBool::new(false)), progress: Arc::default() }
    }

    /// Routes the progress notifications of a call to `sender` until the route is dropped.
    pub(crate) fn route_progress(&self, token: ProgressToken, sender: mpsc::UnboundedSender<String>) -> ProgressRoute {
        lock(&self.progress).insert(token.clone(), sender);
        ProgressRoute { handler: self.clone(), token }
    }
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        lock(&self.handler.progress).remove(&self.token);
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if !self.roots.is_empty() {
            let mut roots = RootsCapabilities::default();
            roots.list_changed = Some(false);
            capabilities.roots = Some(roots);
        }
        // What `initialize` asks for; a server answers with this or its own newest.
        ClientConfig::new(capabilities, Implementation::new("reins", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn list_roots(&self, _: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(self.roots.to_vec()))
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "MCP server says its tools changed");
        self.tools_changed.store(true, Ordering::SeqCst);
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        let Some(sender) = lock(&self.progress).get(&params.progress_token).cloned() else { return };
        let mut text = match params.total {
            Some(total) => format!("progress {}/{}", params.progress, total),
            None => format!("progress {}", params.progress),
        };
        if let Some(message) = params.message.filter(|message| !message.is_empty()) {
            text.push_str(&format!(": {message}"));
        }
        let _ = sender.send(text);
    }

    async fn on_logging_message(&self, params: LoggingMessageNotificationParam, _: NotificationContext<RoleClient>) {
        let server = &self.server;
        let data = &params.data;
        match params.level {
            LoggingLevel::Debug => tracing::debug!(target: "reins_mcp::server_log", %server, %data),
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(target: "reins_mcp::server_log", %server, %data)
            }
            _ => tracing::warn!(target: "reins_mcp::server_log", %server, %data),
        }
    }
}

impl Process {
    fn spawn(
        server: &str,
        command: &str,
        args: &[String],
        base_env: &[(std::ffi::OsString, std::ffi::OsString)],
        env: &[(String, String)],
        cwd: Option<&Path>,
    ) -> Result<(Self, tokio::process::ChildStdout, tokio::process::ChildStdin), String> {
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args)
            .env_clear()
            .envs(base_env.iter().filter(|(name, _)| ordinary(name)).map(|(name, value)| (name, value)))
            .envs(env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so that stopping it stops what it started (npx starts node).
            .process_group(0)
            .kill_on_drop(true);
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        // If reins dies without cleaning up, the server's whole group dies too.
        let reins = std::process::id() as libc::pid_t;
        // SAFETY: the guard makes only async-signal-safe calls (see guard.rs).
        unsafe {
            cmd.pre_exec(move || crate::guard::fork_guard(reins));
        }
        let mut child = cmd.spawn().map_err(|err| match err.kind() {
            std::io::ErrorKind::NotFound => {
                format!("cannot start `{command}`: it was not found; is it installed and on PATH?")
            }
            _ => format!("cannot start `{command}`: {err}"),
        })?;
        let (Some(stdout), Some(stdin), Some(stderr), Some(pid)) =
            (child.stdout.take(), child.stdin.take(), child.stderr.take(), child.id())
        else {
            return Err(format!("cannot start `{command}`: its standard streams were not set up"));
        };
        let group = Pid::from_raw(pid as i32);
        let stderr_tail = StderrTail::default();
        let (stderr_sender, stderr_done) = watch::channel(false);
        let (server_name, tail) = (server.to_string(), stderr_tail.clone());
        tokio::spawn(async move {
            log_stderr(server_name, stderr, tail).await;
            let _ = stderr_sender.send(true);
        });
        let (exit_sender, exited) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await;
            let _ = exit_sender.send(Some(status.unwrap_or_else(|_| ExitStatus::from_raw(0))));
        });
        Ok((Self { group, exited, stderr: stderr_tail, stderr_done }, stdout, stdin))
    }

    /// Kills the process group (ESRCH — it is gone already — is fine).
    pub(crate) fn kill(&self) {
        let _ = killpg(self.group, Signal::SIGKILL);
    }

    /// How the process ended, with its last stderr lines when it exited by itself (a server
    /// that was killed said nothing about it).
    pub(crate) fn describe_exit(&self, status: ExitStatus) -> String {
        match (status.code(), status.signal()) {
            (Some(code), _) => self.stderr.append_to(format!("the server exited with status {code}")),
            (None, Some(signal)) => match Signal::try_from(signal) {
                Ok(signal) => format!("the server was killed by {}", signal.as_str()),
                Err(_) => format!("the server was killed by signal {signal}"),
            },
            _ => "the server exited".to_string(),
        }
    }

    /// The reason a start failed: `reason`, or how the process ended if it did, with its stderr.
    async fn failure(&mut self, reason: &str) -> String {
        // The process may be on its way out; its exit says more than a closed pipe does.
        let _ = tokio::time::timeout(EXIT_GRACE, async {
            let _ = self.exited.wait_for(Option::is_some).await;
            let _ = self.stderr_done.wait_for(|done| *done).await;
        })
        .await;
        match *self.exited.borrow() {
            Some(status) => self.describe_exit(status),
            None => self.stderr.append_to(reason.to_string()),
        }
    }

    /// The reason a start timed out, with what the server wrote to stderr.
    fn timed_out(&self, reason: String) -> String {
        self.stderr.append_to(reason)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = lock(&self.0);
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// `reason`, followed by the last stderr lines when there are any.
    fn append_to(&self, reason: String) -> String {
        let lines = lock(&self.0);
        // Stack traces and banners come first; the last few lines say what went wrong.
        let last: Vec<&str> = lines.iter().rev().take(5).rev().map(String::as_str).collect();
        if last.is_empty() { reason } else { format!("{reason}; its stderr ends with: {}", last.join(" | ")) }
    }
}

fn ordinary(name: &std::ffi::OsStr) -> bool {
    name.to_str().is_some_and(|name| ORDINARY_VARIABLES.contains(&name))
}

/// Sends each stderr line of a server to the log (never to stdout) and keeps the last ones.
async fn log_stderr(server: String, stderr: ChildStderr, tail: StderrTail) {
    let mut lines = BufReader::new(stderr).split(b'\n');
    while let Ok(Some(line)) = lines.next_segment().await {
        let mut line = String::from_utf8_lossy(&line).trim_end().to_string();
        if line.is_empty() {
            continue;
        }
        if let (kept, true) = reins_ai::cut_bytes(&line, STDERR_LINE_MAX) {
            let end = kept.len();
            line.truncate(end);
            line.push('…');
        }
        tracing::info!(target: "reins_mcp::stderr", %server, "{line}");
        tail.push(line);
    }
}

/// How an HTTP connection begins: `server/discover` with the newest versions first, and when the
/// server refuses it (every server before 2026-07-28 does), the `initialize` handshake, asking
/// for the newest version that has one; such a server answers with its own newest. (A stdio
/// server is asked first: see `probe.rs`.)
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: preferred_versions(),
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// The versions reins speaks, newest first.
fn preferred_versions() -> Vec<ProtocolVersion> {
    ProtocolVersion::KNOWN_VERSIONS.iter().rev().cloned().collect()
}

/// What went wrong in the handshake, in a person's words: the innermost cause of a transport
/// failure (`Connection refused (os error 111)`), not rmcp's chain of wrapper types.
fn init_error(err: &ClientInitializeError) -> String {
    match err {
        ClientInitializeError::TransportError { error, .. } => {
            let mut cause: &(dyn std::error::Error + 'static) = error;
            loop {
                if let Some(source) = cause.source() {
                    cause = source;
                } else if let Some(http) = cause.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                    match http {
                        // rmcp does not chain the HTTP client's error as a source.
                        StreamableHttpError::Client(inner) => cause = inner,
                        StreamableHttpError::UnexpectedContentType(kind) => {
                            break format!(
                                "it answered with {} instead of MCP; is this the server's MCP endpoint (often …/mcp)?",
                                kind.as_deref().unwrap_or("no content type")
                            );
                        }
                        StreamableHttpError::UnexpectedServerResponse(told) => break told.to_string(),
                        other => break other.to_string(),
                    }
                } else {
                    break cause.to_string();
                }
            }
        }
        ClientInitializeError::JsonRpcError(error) => format!("the server refused: {}", error.message),
        ClientInitializeError::ConnectionClosed(_) => "the connection closed before the server answered".to_string(),
        // The server refused `server/discover` as an older one does, then failed `initialize`.
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => init_error(fallback),
        other => other.to_string(),
    }
}
