//! One server's lifecycle: started on first need (within its startup timeout), its tool list kept
//! fresh (`tools/list_changed`), a death reported once and repaired by a restart on the next use
//! while the restart budget lasts, stopped with its process group.
//!
//! A request for tools waits only briefly for a server still starting (see [`STARTING_WAIT`]):
//! the start goes on in the background, and the server's tools join the first request after it
//! is ready. A server that never answers costs a run that wait, not its startup timeout.
//!
//! A server that fails to start stays failed (its reason shows in listings) until its set is
//! built again, as when the configuration changes: retrying a missing command every run would
//! only repeat the same warning.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use reins_agent::lock;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientRequest,
    JsonObject, PaginatedRequestParams, ReadResourceRequestParams, RequestId, ResourceContents, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, Transport};
use crate::connection::Connection;
use crate::http::http_answer;
use crate::oauth::{login_advice, wants_login};
use crate::token_file::TokenFile;
use crate::{Notice, Options};

/// How long a request for tools waits for a server that is starting, once per start, unless the
/// set's options say otherwise: a local server is ready by then, and one that never answers
/// costs a run no more.
pub const STARTING_WAIT: Duration = Duration::from_millis(1500);
/// A call's timeout starts again with each progress notification, up to this many times the
/// timeout in all: a server that reports progress is working, one that says nothing for the
/// whole timeout is stopped.
pub(crate) const PROGRESS_STRETCH: u32 = 10;

/// Where a server is in its life, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Not needed yet.
    Idle,
    Starting,
    Ready,
    /// It stopped after it was ready; the next use restarts it.
    Exited(String),
    /// It could not be started (or restarted); its tools are not offered.
    Failed(String),
    /// It refuses reins without a login (`reins mcp login NAME`), or its login expired and could
    /// not be renewed; the sentence says so. Its tools are not offered.
    NeedsLogin(String),
    /// Shut down with reins or with its session.
    Stopped,
}

/// A tool as the server describes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: Arc<JsonObject>,
    /// `annotations.readOnlyHint`.
    pub(crate) read_only_hint: bool,
}

pub(crate) struct Server {
    pub(crate) config: ServerConfig,
    options: Arc<Options>,
    state: Mutex<State>,
    /// Held while the server starts, so that concurrent users wait for one start.
    starting: tokio::sync::Mutex<()>,
    restarts: AtomicU32,
    /// Changes whenever the tool list may have: a new connection, a fresh listing.
    generation: AtomicU64,
    /// Set once a request waited for the start under way; cleared when the start ends.
    waited: AtomicBool,
    /// Cancelled when the server is stopped: a start under way gives up at once.
    stopping: CancellationToken,
}

enum State {
    Idle,
    Starting,
    Ready(Arc<Live>),
    Exited(String),
    Failed(String),
    /// It wants a login; the token file's modification time then, so that a new login (the
    /// file changed) is tried at once.
    NeedsLogin(String, Option<SystemTime>),
    Stopped,
}

/// Why a server could not be started.
#[derive(Debug)]
pub(crate) enum Unavailable {
    Failed(String),
    /// It refuses reins without a valid login.
    NeedsLogin,
}

impl From<String> for Unavailable {
    fn from(reason: String) -> Self {
        Unavailable::Failed(reason)
    }
}

/// A ready connection and the tools it listed.
struct Live {
    connection: Connection,
    tools: Mutex<Arc<[ServerTool]>>,
}

/// A call in flight: if it is dropped before its answer came (the run was cancelled, the call
/// timed out), the server is told with `notifications/cancelled`.
struct InFlight {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Server {
    pub(crate) fn new(config: ServerConfig, options: Arc<Options>) -> Self {
        Self {
            config,
            options,
            state: Mutex::new(State::Idle),
            starting: tokio::sync::Mutex::new(()),
            restarts: AtomicU32::new(0),
            generation: AtomicU64::new(0),
            waited: AtomicBool::new(false),
            stopping: CancellationToken::new(),
        }
    }

    /// How long a request for tools waits for this server: `None` (until it answers) when it
    /// is ready, failed or stopped; the set's `starting_wait` when the request starts it or is the first
    /// to wait for the start under way; not at all when another request waited already.
    pub(crate) fn patience(&self) -> Option<Duration> {
        let starting = match &*lock(&self.state) {
            State::Idle | State::Exited(_) => false,
            State::Starting => true,
            State::Ready(live) => match live.connection.lost() {
                Some(_) => false,
                None => return None,
            },
            State::Failed(_) | State::NeedsLogin(..) | State::Stopped => return None,
        };
        let waited = self.waited.swap(true, Ordering::SeqCst);
        Some(if starting && waited { Duration::ZERO } else { self.options.starting_wait })
    }

    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    pub(crate) fn state(&self) -> ServerState {
        match &*lock(&self.state) {
            State::Idle => ServerState::Idle,
            State::Starting => ServerState::Starting,
            State::Ready(live) => match live.connection.lost() {
                Some(reason) => ServerState::Exited(reason),
                None => ServerState::Ready,
            },
            State::Exited(reason) => ServerState::Exited(reason.clone()),
            State::Failed(reason) => ServerState::Failed(reason.clone()),
            State::NeedsLogin(reason, _) => ServerState::NeedsLogin(reason.clone()),
            State::Stopped => ServerState::Stopped,
        }
    }

    /// The protocol version agreed on, while the server is up.
    pub(crate) fn protocol(&self) -> Option<String> {
        match &*lock(&self.state) {
            State::Ready(live) => live.connection.protocol(),
            _ => None,
        }
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The tools it listed, if it is up; starts nothing.
    pub(crate) fn listed_tools(&self) -> Option<Arc<[ServerTool]>> {
        match &*lock(&self.state) {
            State::Ready(live) => Some(lock(&live.tools).clone()),
            _ => None,
        }
    }

    /// The server's tools, starting it (or restarting it after it exited) first, and listing
    /// them again if the server said they changed. Empty when the server is not available.
    pub(crate) async fn tools(&self) -> Arc<[ServerTool]> {
        let Ok(live) = self.ready().await else { return Arc::from([]) };
        if live.connection.handler.tools_changed.swap(false, Ordering::SeqCst) {
            let deadline = Instant::now() + self.config.startup_timeout;
            match list_tools(&live.connection, deadline).await {
                // The same list keeps the same tools (and the model's cached prompt).
                Ok(tools) if *tools == **lock(&live.tools) => {}
                Ok(tools) => {
                    *lock(&live.tools) = tools.into();
                    self.generation.fetch_add(1, Ordering::SeqCst);
                }
                Err(err) => tracing::warn!(server = %self.name(), "listing the changed tools failed: {err}"),
            }
        }
        lock(&live.tools).clone()
    }

    /// Calls a tool (`shown`, its public name, is for messages). Progress goes to
    /// `on_progress` and starts the call's timeout again (see [`PROGRESS_STRETCH`]); `cancel`,
    /// the timeout or dropping the future tells the server the call is cancelled. The error is
    /// for the model.
    pub(crate) async fn call(
        &self,
        tool: &str,
        shown: &str,
        arguments: JsonObject,
        cancel: &CancellationToken,
        on_progress: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<Value, String> {
        let live = self.ready().await?;
        // Timed from here: a restart has its own timeout.
        let timeout = self.config.tool_timeout;
        let started = Instant::now();
        let latest = started + timeout * PROGRESS_STRETCH;
        let mut deadline = started + timeout;
        let peer = live.connection.service.peer().clone();
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new(tool.to_string()).with_arguments(arguments),
        ));
        let handle = match peer.send_cancellable_request(request, PeerRequestOptions::no_options()).await {
            Ok(handle) => handle,
            Err(err) => return Err(self.call_failed(&live, err).await),
        };
        let (progress_sender, mut progress) = mpsc::unbounded_channel();
        let _route = live.connection.handler.route_progress(handle.progress_token.clone(), progress_sender);
        let mut in_flight = InFlight { peer, id: Some(handle.id.clone()) };
        let mut answer = handle.rx;
        loop {
            tokio::select! {
                answer = &mut answer => {
                    in_flight.id = None;
                    live.connection.call_answered();
                    return match answer {
                        // rmcp reads a result it finds malformed (an empty `content`, a block type
                        // it does not know) as a custom result: rendered leniently all the same.
                        Ok(Ok(ServerResult::CallToolResult(result))) => Ok(serde_json::to_value(result).unwrap_or_default()),
                        Ok(Ok(ServerResult::CustomResult(result))) => Ok(result.0),
                        Ok(Ok(ServerResult::EmptyResult(_))) => Ok(Value::Object(Default::default())),
                        Ok(Ok(_)) => Err(format!("the MCP server `{}` answered `tools/call` with something else than a tool result", self.name())),
                        Ok(Err(err)) => Err(self.call_failed(&live, err).await),
                        Err(_) => Err(self.call_failed(&live, ServiceError::TransportClosed).await),
                    };
                }
                Some(text) = progress.recv() => {
                    on_progress(&text);
                    deadline = (Instant::now() + timeout).min(latest);
                }
                _ = tokio::time::sleep_until(deadline) => {
                    let seconds = |duration: Duration| duration.as_secs_f64();
                    return Err(if deadline >= latest {
                        format!(
                            "the tool `{shown}` ran for {} s, reporting progress, and was stopped",
                            seconds(latest - started)
                        )
                    } else {
                        format!("the tool `{shown}` timed out after {} s and was stopped", seconds(timeout))
                    });
                }
                _ = cancel.cancelled() => return Err("cancelled".to_string()),
            }
        }
    }

    /// Whether the server says it offers resources, while it is up.
    pub(crate) fn offers_resources(&self) -> bool {
        match &*lock(&self.state) {
            State::Ready(live) => live.connection.offers_resources(),
            _ => false,
        }
    }

    /// One page of the server's resources (as JSON objects) and the cursor of the next.
    pub(crate) async fn list_resources(
        &self,
        cursor: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<(Vec<Value>, Option<String>), String> {
        let live = self.ready().await?;
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let listed = live.connection.service.peer().list_resources(Some(params));
        let result = self.bounded(&live, "resources/list", cancel, listed).await?;
        Ok((result.resources.iter().filter_map(|item| serde_json::to_value(item).ok()).collect(), result.next_cursor))
    }

    /// One page of the server's resource templates (as JSON objects) and the cursor of the next.
    pub(crate) async fn list_resource_templates(
        &self,
        cursor: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<(Vec<Value>, Option<String>), String> {
        let live = self.ready().await?;
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let listed = live.connection.service.peer().list_resource_templates(Some(params));
        let result = self.bounded(&live, "resources/templates/list", cancel, listed).await?;
        let templates = result.resource_templates.iter().filter_map(|item| serde_json::to_value(item).ok()).collect();
        Ok((templates, result.next_cursor))
    }

    /// The contents of the resource at `uri`.
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<ResourceContents>, String> {
        let live = self.ready().await?;
        let read = live.connection.service.read_resource(ReadResourceRequestParams::new(uri));
        Ok(self.bounded(&live, "resources/read", cancel, read).await?.contents)
    }

    /// `request`'s answer within the tool timeout, unless `cancel` comes first; the error is for
    /// the model.
    async fn bounded<T>(
        &self,
        live: &Live,
        method: &str,
        cancel: &CancellationToken,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, String> {
        let timeout = self.config.tool_timeout;
        tokio::select! {
            answer = tokio::time::timeout(timeout, request) => match answer {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(err)) => Err(self.call_failed(live, err).await),
                Err(_) => Err(format!(
                    "the MCP server `{}` did not answer `{method}` within {} s",
                    self.name(),
                    timeout.as_secs_f64()
                )),
            },
            _ = cancel.cancelled() => Err("cancelled".to_string()),
        }
    }

    /// Stops the server; it is not started again.
    pub(crate) async fn stop(&self) {
        self.stopping.cancel();
        let _starting = self.starting.lock().await;
        let previous = std::mem::replace(&mut *lock(&self.state), State::Stopped);
        if let State::Ready(live) = previous {
            match Arc::try_unwrap(live) {
                Ok(live) => live.connection.close().await,
                // A call still holds it; dropping ours kills the process group when it ends.
                Err(live) => drop(live),
            }
        }
    }

    /// A ready connection: the current one, or a new one.
    async fn ready(&self) -> Result<Arc<Live>, String> {
        if let Some(live) = self.current().await {
            return Ok(live);
        }
        let _starting = self.starting.lock().await;
        // Someone else may have started it while we waited.
        if let Some(live) = self.current().await {
            return Ok(live);
        }
        let restart = {
            let mut state = lock(&self.state);
            match &*state {
                State::Failed(reason) => return Err(self.unavailable(reason)),
                // Logged in since? Then start again; else the same advice.
                State::NeedsLogin(reason, modified) => {
                    if self.token_modified() == *modified {
                        return Err(self.unavailable(reason));
                    }
                    false
                }
                State::Stopped => return Err(format!("the MCP server `{}` was stopped", self.name())),
                State::Exited(reason) => {
                    if self.restarts.load(Ordering::SeqCst) >= self.options.max_restarts {
                        let reason = format!("{reason}; gave up after {} restarts", self.options.max_restarts);
                        *state = State::Failed(reason.clone());
                        return Err(self.unavailable(&reason));
                    }
                    true
                }
                State::Idle | State::Starting | State::Ready(_) => false,
            }
        };
        if restart {
            self.restarts.fetch_add(1, Ordering::SeqCst);
        }
        *lock(&self.state) = State::Starting;
        let started = tokio::select! {
            started = self.start() => started,
            _ = self.stopping.cancelled() => Err("it was stopped while starting".to_string().into()),
        };
        self.waited.store(false, Ordering::SeqCst);
        if self.stopping.is_cancelled() {
            *lock(&self.state) = State::Stopped;
            return Err(format!("the MCP server `{}` was stopped", self.name()));
        }
        match started {
            Ok(live) => {
                let live = Arc::new(live);
                *lock(&self.state) = State::Ready(live.clone());
                self.generation.fetch_add(1, Ordering::SeqCst);
                Ok(live)
            }
            Err(Unavailable::NeedsLogin) => {
                let advice = login_advice(self.name());
                (self.options.notify)(Notice {
                    server: self.name().to_string(),
                    message: format!("MCP server `{}`: {advice}; going on without its tools", self.name()),
                });
                *lock(&self.state) = State::NeedsLogin(advice.clone(), self.token_modified());
                Err(self.unavailable(&advice))
            }
            Err(Unavailable::Failed(reason)) => {
                let verb = if restart { "could not be restarted" } else { "could not be started" };
                (self.options.notify)(Notice {
                    server: self.name().to_string(),
                    message: format!("MCP server `{}` {verb}: {reason}; going on without its tools", self.name()),
                });
                *lock(&self.state) = State::Failed(reason.clone());
                Err(self.unavailable(&reason))
            }
        }
    }

    /// The ready connection, if it is still up. A connection found gone is reported once and
    /// becomes `Exited`.
    async fn current(&self) -> Option<Arc<Live>> {
        let live = match &*lock(&self.state) {
            State::Ready(live) => live.clone(),
            _ => return None,
        };
        if live.connection.lost().is_none() {
            return Some(live);
        }
        let reason = live.connection.loss_reason().await;
        {
            let mut state = lock(&self.state);
            // Another caller may have found it gone first.
            if !matches!(&*state, State::Ready(current) if Arc::ptr_eq(current, &live)) {
                return None;
            }
            *state = State::Exited(reason.clone());
        }
        (self.options.notify)(Notice {
            server: self.name().to_string(),
            message: format!("MCP server `{}` stopped: {reason}; it will be restarted when next needed", self.name()),
        });
        None
    }

    async fn start(&self) -> Result<Live, Unavailable> {
        let deadline = Instant::now() + self.config.startup_timeout;
        let connection = Connection::open(&self.config, &self.options, self.token_file(), deadline).await?;
        // A change announced before this listing is in it; one announced later is not.
        connection.handler.tools_changed.store(false, Ordering::SeqCst);
        let tools = list_tools(&connection, deadline).await?;
        tracing::info!(server = %self.name(), tools = tools.len(), "MCP server ready");
        Ok(Live { connection, tools: Mutex::new(tools.into()) })
    }

    /// The model's message for a call that failed below the tool (the server is gone, or
    /// answered with a protocol error).
    async fn call_failed(&self, live: &Live, err: ServiceError) -> String {
        let name = self.name();
        // A login that expired and could not be renewed: the server is there, reins is not let in.
        if let ServiceError::TransportSend(error) = &err
            && wants_login(error)
        {
            let advice = login_advice(name);
            {
                let mut state = lock(&self.state);
                if matches!(&*state, State::Ready(current) if std::ptr::eq(current.as_ref(), live)) {
                    *state = State::NeedsLogin(advice.clone(), self.token_modified());
                }
            }
            (self.options.notify)(Notice {
                server: name.to_string(),
                message: format!("MCP server `{name}`: {advice}; going on without its tools"),
            });
            return format!("the MCP server `{name}` refused the call: {advice}");
        }
        // An HTTP server that answered with an error status is still there.
        if let ServiceError::TransportSend(error) = &err
            && let Some(told) = http_answer(error)
        {
            return format!("the MCP server `{name}` answered the call with {told}");
        }
        match err {
            ServiceError::McpError(error) => format!("the MCP server `{name}` refused the call: {}", error.message),
            _ => {
                let reason = live.connection.loss_reason().await;
                format!(
                    "the MCP server `{name}` stopped during the call ({reason}); it will be restarted on the next call"
                )
            }
        }
    }

    /// Where its OAuth tokens are kept: an HTTP server's without a fixed token, when the set
    /// keeps tokens at all.
    pub(crate) fn token_file(&self) -> Option<TokenFile> {
        match (&self.config.transport, &self.options.token_dir) {
            (Transport::Http { url, bearer_token: None, .. }, Some(dir)) => Some(TokenFile::new(dir, self.name(), url)),
            _ => None,
        }
    }

    /// When its token file last changed, if it has one.
    fn token_modified(&self) -> Option<SystemTime> {
        self.token_file().and_then(|file| std::fs::metadata(file.path()).and_then(|meta| meta.modified()).ok())
    }

    fn unavailable(&self, reason: &str) -> String {
        format!("the MCP server `{}` is not available: {reason}", self.name())
    }
}

async fn list_tools(connection: &Connection, deadline: Instant) -> Result<Vec<ServerTool>, String> {
    let listed = tokio::time::timeout_at(deadline, connection.service.peer().list_all_tools()).await;
    let tools = match listed {
        Ok(Ok(tools)) => tools,
        Ok(Err(err)) => return Err(format!("`tools/list` failed: {err}")),
        Err(_) => return Err("it did not answer `tools/list` within the startup timeout".to_string()),
    };
    Ok(tools
        .into_iter()
        .map(|tool| ServerTool {
            description: tool.description.map(|text| text.into_owned()).or(tool.title).unwrap_or_default(),
            read_only_hint: tool.annotations.as_ref().and_then(|hints| hints.read_only_hint).unwrap_or(false),
            name: tool.name.into_owned(),
            input_schema: tool.input_schema,
        })
        .collect())
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let notification = CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some("reins stopped waiting for the call".into()),
            ));
            if let Err(err) = peer.send_notification(notification.into()).await {
                tracing::debug!("could not send notifications/cancelled: {err}");
            }
        });
    }
}
