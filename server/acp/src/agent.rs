//! The ACP agent: one handler per method, each handing work to a session's harness and returning
//! (a prompt's run goes on in a spawned task and answers through the event task when it ends).
//! The SDK answers methods without a handler with `-32601` and ignores unknown notifications, as
//! the spec asks.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ClientCapabilities, ConfigOptionUpdate, CurrentModeUpdate, Implementation,
    InitializeRequest, InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    PromptResponse, SessionCapabilities, SessionId, SessionListCapabilities, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
    StopReason, UsageUpdate,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Lines};
use reins_harness::{ApprovalPolicy, Executed, Harness, HarnessEvent, HarnessOptions, LiveSettings, Settings};
use reins_tools::FsWorkspace;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::approver::AcpApprover;
use crate::events::{Events, Input, Pump};
use crate::workspace::{AcpWorkspace, ClientTools};
use crate::{from_proto, options, to_proto, transport};
use reins_agent::lock;

/// How long a cancelled run has to end (and save its session) when the client goes away.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Idle sessions kept open besides those prompting; the others are released (see
/// [`State::release_idle`]).
const KEEP_IDLE_SESSIONS: usize = 8;

/// What the handlers share.
pub struct State {
    events: Events,
    /// What the client said it can do (`initialize`).
    client: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Sessions released to free their memory, file and MCP servers, by id: what reopens them
    /// when the client names them again.
    released: Mutex<HashMap<String, Released>>,
    /// Orders the sessions' uses: the least recently used idle ones are released first.
    uses: AtomicU64,
    /// The problems with skill files already told on this connection: each is told once.
    told_skills: Mutex<HashSet<String>>,
}

/// Where a released session works and the MCP servers its client gave it.
struct Released {
    cwd: PathBuf,
    servers: Vec<reins_mcp::ServerConfig>,
}

/// Refuses the root and the user's home directory itself as a session's `cwd`: the session may
/// write anywhere in its workspace, and there that is everything (or every project) the user has.
fn refuse_too_broad(cwd: &Path) -> Result<(), Error> {
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let cwd = canonical(cwd);
    let home = Some(canonical(&reins_harness::user_home(|name| std::env::var(name).ok())));
    let what = match () {
        _ if cwd.parent().is_none() => "the root directory",
        _ if home.as_deref() == Some(cwd.as_path()) => "your home directory",
        _ => return Ok(()),
    };
    Err(to_proto::invalid_params(format!(
        "cwd {} is {what}: a session could write anywhere in it; open a folder inside it instead, such as {}",
        cwd.display(),
        cwd.join("my-project").display()
    )))
}

/// One ACP session: a harness of its own, over the session's `cwd`.
pub struct Session {
    pub id: String,
    pub cwd: PathBuf,
    pub harness: Arc<Harness>,
    pub workspace: Arc<AcpWorkspace>,
    /// A prompt turn is going (from `session/prompt` until its answer is sent).
    pub prompting: Arc<AtomicBool>,
    /// The MCP servers the client gave the session, to give them again when it reopens.
    servers: Vec<reins_mcp::ServerConfig>,
    /// When the session was last used, on [`State::uses`].
    last_used: AtomicU64,
    /// The approval policy of the settings, which the ask mode keeps (see [`options::Mode`]).
    configured: ApprovalPolicy,
}

/// Serves one client on `input`/`output` until the input ends; running turns are then
/// cancelled and their sessions saved.
pub async fn serve(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> Result<(), String> {
    let (sink, lines, writer) = transport::connect(input, output);
    let (events, inputs) = Events::channel();
    let state = Arc::new(State {
        events,
        client: Mutex::default(),
        sessions: Mutex::default(),
        released: Mutex::default(),
        uses: AtomicU64::new(0),
        told_skills: Mutex::default(),
    });
    let served = builder(state.clone())
        .connect_with(Lines::new(sink, lines), async |cx: ConnectionTo<Client>| {
            let pump = Pump::new(cx.clone());
            let pumping = tokio::spawn(pump.run(inputs));
            cx.incoming_closed().await;
            state.shutdown().await;
            pumping.abort();
            Ok(())
        })
        .await;
    // Let the last lines out before the process ends.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    served.map_err(|err| err.message)
}

fn builder(
    state: Arc<State>,
) -> agent_client_protocol::v1::Builder<Agent, impl agent_client_protocol::HandleDispatchFrom<Client>> {
    let (initialize, new, load, list, prompt, cancel) =
        (state.clone(), state.clone(), state.clone(), state.clone(), state.clone(), state.clone());
    let (set_mode, set_option) = (state.clone(), state);
    Agent
        .v1()
        .name("reins")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| responder.respond(initialize.initialize(request)),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let created = new.new_session(request, cx);
                let id = created.as_ref().ok().map(|created| created.session_id.0.to_string());
                let answered = responder.respond_with_result(created);
                // The slash commands, once the client knows the session.
                if let Some(id) = id {
                    new.announce_commands(&id);
                }
                answered
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                load.load_session(request, responder, cx);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                responder.respond_with_result(list.list_sessions(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                prompt.prompt(request, responder, cx);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, cx| {
                responder.respond_with_result(set_mode.set_mode(request, cx))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, cx| {
                responder.respond_with_result(set_option.set_config_option(request, cx))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                cancel.cancel(&notification.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
}

impl State {
    fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        *lock(&self.client) = request.client_capabilities;
        // Images when the default model reads them (sessions take the settings' default model).
        let images = Settings::load(|name| std::env::var(name).ok(), None).resolve_model(None).takes_images();
        let prompts = PromptCapabilities::new().embedded_context(true).image(images);
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(prompts)
            .mcp_capabilities(McpCapabilities::new().http(true).sse(false))
            .session_capabilities(SessionCapabilities::new().list(SessionListCapabilities::new()));
        // Version 1 is the one reins speaks; a client asking for another gets 1 and decides.
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(Implementation::new("reins", env!("CARGO_PKG_VERSION")).title("reins".to_string()))
    }

    /// A harness for `cwd`, with the settings a run there would have, reporting to the client.
    fn harness(&self, cwd: &Path, cx: ConnectionTo<Client>) -> Result<(Arc<Harness>, Arc<AcpWorkspace>), Error> {
        if !cwd.is_absolute() {
            return Err(to_proto::invalid_params(format!(
                "cwd must be an absolute path, not {}",
                to_proto::quoted(&cwd.display().to_string())
            )));
        }
        if !cwd.is_dir() {
            return Err(to_proto::invalid_params(format!(
                "cwd {} is not a directory",
                to_proto::quoted(&cwd.display().to_string())
            )));
        }
        refuse_too_broad(cwd)?;
        let disk =
            FsWorkspace::new(vec![cwd.to_path_buf()]).map_err(|err| to_proto::invalid_params(err.to_string()))?;
        let can = {
            let client = lock(&self.client);
            ClientTools { read: client.fs.read_text_file, write: client.fs.write_text_file, terminal: client.terminal }
        };
        let workspace = Arc::new(AcpWorkspace::new(disk, cx, self.events.clone(), can));
        let settings = Settings::load(|name| std::env::var(name).ok(), Some(cwd));
        for diagnostic in &settings.diagnostics {
            tracing::warn!("config: {diagnostic}");
        }
        let events = self.events.clone();
        let landed = workspace.clone();
        // What the harness warns about (an MCP server that could not start) reaches the user in
        // the session, not only the log.
        let (told, notices) = (workspace.clone(), self.events.clone());
        let warn = Arc::new(move |message: &str| {
            tracing::warn!("{message}");
            if let Some(session_id) = told.session_id() {
                notices.send(Input::Notice { session_id, message: message.to_string() });
            }
        });
        let sink = Arc::new(move |event: HarnessEvent| {
            // The changes a call made, taken as it ends: the next call has not started yet.
            let (changes, terminal) = match &event.event {
                reins_agent::AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                    (landed.take_landed(), landed.take_terminal(tool_call_id))
                }
                _ => (Vec::new(), None),
            };
            events.send(Input::Event { event: Box::new(event), changes, terminal });
        });
        let harness = Harness::new(HarnessOptions {
            settings: LiveSettings::new(settings),
            workspace: workspace.clone(),
            provider: None,
            approver: Arc::new(AcpApprover::new(self.events.clone(), cwd.to_path_buf())),
            diagnostics: None,
            events: sink,
            date: reins_harness::today(),
            persist: true,
            warn,
        });
        Ok((harness, workspace))
    }

    /// Tells the user, once per connection, about the skill files of a session's workspace that
    /// are not quite skills: in the log, and in the session as a notice (ACP has no other place
    /// a client shows), at the start of its next turn.
    fn tell_skill_warnings(&self, harness: &Harness, session_id: &str) {
        let mut skills = harness.resources().skills;
        skills.warnings.retain(|warning| lock(&self.told_skills).insert(warning.to_string()));
        let Some(text) = skills.warning() else { return };
        tracing::warn!("{text}");
        self.events.send(Input::Notice { session_id: session_id.to_string(), message: text });
    }

    /// Puts a session the harness has open in the map and tells the event task about it; then
    /// releases the sessions too many.
    fn register(
        &self,
        id: &str,
        cwd: &Path,
        harness: Arc<Harness>,
        workspace: Arc<AcpWorkspace>,
        servers: Vec<reins_mcp::ServerConfig>,
    ) -> Arc<Session> {
        workspace.set_session(id);
        let configured = harness.settings().approval.clone();
        options::restore(&harness, id, &configured);
        let settings = LiveSettings::new((*harness.settings()).clone());
        self.events.send(Input::Session { session_id: id.to_string(), cwd: cwd.to_path_buf(), settings });
        let prompting = Arc::default();
        let last_used = AtomicU64::new(self.uses.fetch_add(1, Ordering::Relaxed));
        let session = Arc::new(Session {
            id: id.to_string(),
            cwd: cwd.to_path_buf(),
            harness,
            workspace,
            prompting,
            servers,
            last_used,
            configured,
        });
        lock(&self.released).remove(id);
        lock(&self.sessions).insert(id.to_string(), session.clone());
        self.release_idle();
        session
    }

    /// Releases the idle sessions beyond the [`KEEP_IDLE_SESSIONS`] used last: each session has
    /// a harness of its own, with its file, conversation and MCP servers (stopped when no other
    /// session shares them). A session is idle when no prompt turn goes on in it and nothing
    /// else holds it; a released one reopens from its file when the client names it again.
    fn release_idle(&self) {
        let released: Vec<Arc<Session>> = {
            let mut sessions = lock(&self.sessions);
            let mut idle: Vec<(u64, String)> = sessions
                .values()
                .filter(|session| Arc::strong_count(session) == 1 && !session.prompting.load(Ordering::SeqCst))
                .filter(|session| !session.harness.is_running(&session.id).unwrap_or(true))
                .map(|session| (session.last_used.load(Ordering::Relaxed), session.id.clone()))
                .collect();
            if idle.len() <= KEEP_IDLE_SESSIONS {
                return;
            }
            idle.sort_unstable_by_key(|(used, _)| std::cmp::Reverse(*used));
            idle.split_off(KEEP_IDLE_SESSIONS).into_iter().filter_map(|(_, id)| sessions.remove(&id)).collect()
        };
        let mut stash = lock(&self.released);
        for session in &released {
            stash.insert(session.id.clone(), Released { cwd: session.cwd.clone(), servers: session.servers.clone() });
            self.events.send(Input::Released { session_id: session.id.clone() });
        }
    }

    /// Opens a released session again, as `session/load` would without the replay.
    fn reopen(&self, id: &str, cx: ConnectionTo<Client>) -> Result<Arc<Session>, Error> {
        let Some(released) = lock(&self.released).remove(id) else { return Err(not_open(id)) };
        let reopened = self.harness(&released.cwd, cx).and_then(|(harness, workspace)| {
            harness.open_session(id).map_err(to_proto::harness_error)?;
            workspace.set_session(id);
            if !released.servers.is_empty() {
                harness.set_session_servers(id, released.servers.clone()).map_err(to_proto::harness_error)?;
            }
            Ok((harness, workspace))
        });
        match reopened {
            Ok((harness, workspace)) => Ok(self.register(id, &released.cwd, harness, workspace, released.servers)),
            Err(err) => {
                lock(&self.released).insert(id.to_string(), released);
                Err(err)
            }
        }
    }

    fn new_session(&self, request: NewSessionRequest, cx: ConnectionTo<Client>) -> Result<NewSessionResponse, Error> {
        let servers = mcp_servers(request.mcp_servers);
        let (harness, workspace) = self.harness(&request.cwd, cx)?;
        let id = harness.new_session(None, None).map_err(to_proto::harness_error)?;
        // Known before the servers start, so that a server failing at once is told in the session.
        workspace.set_session(&id);
        if !servers.is_empty() {
            harness.set_session_servers(&id, servers.clone()).map_err(to_proto::harness_error)?;
        }
        self.tell_skill_warnings(&harness, &id);
        let session = self.register(&id, &request.cwd, harness, workspace, servers);
        Ok(NewSessionResponse::new(SessionId::new(id.as_str()))
            .modes(options::modes(&session.harness, &id))
            .config_options(options::config_options(&session.harness, &id)))
    }

    /// Opens the session; the event task replays its conversation, then answers.
    fn load_session(
        &self,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        match self.open(request, cx) {
            Ok((id, replay, response)) => {
                self.events.send(Input::Loaded { session_id: id, replay, response: Box::new(response), responder })
            }
            Err(err) => {
                let _ = responder.respond_with_error(err);
            }
        }
    }

    /// The session of `session/load`, open and registered, with the updates that replay it.
    fn open(
        &self,
        request: LoadSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<(String, Vec<SessionUpdate>, LoadSessionResponse), Error> {
        let id = request.session_id.0.to_string();
        if lock(&self.sessions).contains_key(&id) {
            return Err(to_proto::invalid_params(format!(
                "session {} is already open on this connection",
                to_proto::quoted(&id)
            )));
        }
        let servers = mcp_servers(request.mcp_servers);
        // An id from session/list or session/new, never a path: a file anywhere whose header
        // names its own path as its id is not a session of the store.
        if id.is_empty() || id.starts_with('.') || id.contains(['/', '\\']) {
            return Err(to_proto::invalid_params(format!(
                "{} is not a session id (session/list gives them)",
                to_proto::quoted(&id)
            )));
        }
        let (harness, workspace) = self.harness(&request.cwd, cx)?;
        let (opened, recorded_cwd) = harness.open_stored_session(&id).map_err(to_proto::harness_error)?;
        if opened != id {
            return Err(to_proto::invalid_params(format!(
                "{} is not the full id of a session (it is {opened})",
                to_proto::quoted(&id)
            )));
        }
        // Edits of the loaded session would go to `cwd` while its file says it works elsewhere.
        let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if canonical(&recorded_cwd) != canonical(&request.cwd) {
            return Err(to_proto::invalid_params(format!(
                "session {} works in {}, not in {}: load it with cwd {}",
                to_proto::quoted(&id),
                recorded_cwd.display(),
                request.cwd.display(),
                recorded_cwd.display()
            )));
        }
        workspace.set_session(&id);
        if !servers.is_empty() {
            harness.set_session_servers(&id, servers.clone()).map_err(to_proto::harness_error)?;
        }
        let messages = harness.transcript(&id).map_err(to_proto::harness_error)?;
        // A session without its records (not kept on disk) replays its edits as text results.
        let records = harness.file_changes(&id).unwrap_or_default();
        self.tell_skill_warnings(&harness, &id);
        let session = self.register(&id, &request.cwd, harness, workspace, servers);
        let mut replay = to_proto::replay(
            &messages,
            &to_proto::recorded_changes(&records, &session.cwd.canonicalize().unwrap_or_else(|_| session.cwd.clone())),
            &session.cwd,
            |tool, arguments| session.harness.look(&id, tool, arguments),
        );
        // The todo list where the session's leaf is: the client shows the plan it left off with.
        let todos = session.harness.todos(&id).unwrap_or_default();
        if !todos.is_empty() {
            replay.push(SessionUpdate::Plan(to_proto::plan(&todos)));
        }
        replay.extend(usage(&session.harness, &id).map(SessionUpdate::UsageUpdate));
        replay.push(to_proto::available_commands(&session.harness.commands()));
        let response = LoadSessionResponse::new()
            .modes(options::modes(&session.harness, &id))
            .config_options(options::config_options(&session.harness, &id));
        Ok((id, replay, response))
    }

    fn list_sessions(&self, request: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        let cwd = match request.cwd {
            Some(cwd) => cwd,
            None => std::env::current_dir().map_err(|err| to_proto::invalid_params(err.to_string()))?,
        };
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(to_proto::invalid_params(format!(
                "cwd {} is not an absolute directory",
                to_proto::quoted(&cwd.display().to_string())
            )));
        }
        let settings = Settings::load(|name| std::env::var(name).ok(), Some(&cwd));
        let workspace = FsWorkspace::new(vec![cwd.clone()]).map_err(|err| to_proto::invalid_params(err.to_string()))?;
        let lister = Harness::new(HarnessOptions {
            settings: LiveSettings::new(settings),
            workspace: Arc::new(workspace),
            provider: None,
            approver: Arc::new(AcpApprover::new(self.events.clone(), cwd.clone())),
            diagnostics: None,
            events: Arc::new(|_| {}),
            date: reins_harness::today(),
            persist: true,
            warn: Arc::new(|_: &str| {}),
        });
        let sessions = lister.list_sessions().map_err(to_proto::harness_error)?;
        // A session never prompted (every chat a client opens starts one) is nothing to go back to.
        let prompted = sessions.iter().filter(|info| info.first_message.is_some());
        Ok(ListSessionsResponse::new(prompted.map(|info| to_proto::session_info(info, &cwd)).collect()))
    }

    /// An open session, marked used; a released one is opened again.
    fn session(&self, id: &str, cx: ConnectionTo<Client>) -> Result<Arc<Session>, Error> {
        let open = lock(&self.sessions).get(id).cloned();
        match open {
            Some(session) => {
                session.last_used.store(self.uses.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
                Ok(session)
            }
            None => self.reopen(id, cx),
        }
    }

    /// Starts the turn; the event task answers when its run ends.
    fn prompt(&self, request: PromptRequest, responder: Responder<PromptResponse>, cx: ConnectionTo<Client>) {
        let session = match self.session(&request.session_id.0, cx) {
            Ok(session) => session,
            Err(err) => {
                let _ = responder.respond_with_error(err);
                return;
            }
        };
        let images = session.harness.settings().resolve_model(None).takes_images();
        let prompt = match from_proto::prompt(request.prompt, &session.cwd, images) {
            Ok(prompt) => prompt,
            Err(message) => {
                let _ = responder.respond_with_error(to_proto::invalid_params(message));
                return;
            }
        };
        if prompt.is_empty() {
            // Nothing to do (CodeCompanion sends `[]` after a failed turn): the turn ends at once.
            let _ = responder.respond(PromptResponse::new(StopReason::EndTurn));
            return;
        }
        // One turn at a time: the flag is cleared as the turn's answer goes out.
        if session.prompting.swap(true, Ordering::SeqCst) {
            let message = "a prompt is already running in this session; cancel it (session/cancel) or wait";
            let _ = responder.respond_with_error(to_proto::invalid_params(message));
            return;
        }
        let busy = session.prompting.clone();
        self.events.send(Input::Prompt { session_id: session.id.clone(), responder, busy });
        let events = self.events.clone();
        tokio::spawn(async move {
            let content = attach_links(&session, prompt).await;
            let failed = |error: Error| events.send(Input::RunFailed { session_id: session.id.clone(), error });
            if content.is_empty() {
                return failed(to_proto::invalid_params("the prompt is empty; type a message first"));
            }
            // A slash command: a built-in is carried out, a template or skill starts a run.
            let executed = match content.as_slice() {
                [reins_ai::Content::Text { text }] if is_new_command(text) => {
                    Ok(Executed::Done { session_id: session.id.clone(), output: NEW_IN_THE_CLIENT.to_string() })
                }
                [reins_ai::Content::Text { text }] if text.starts_with('/') => {
                    session.harness.execute(&session.id, text).await
                }
                _ => session.harness.send(&session.id, content).map(Executed::Started),
            };
            match executed {
                Ok(Executed::Done { session_id, output }) => {
                    let output = match session_id == session.id {
                        true => output,
                        false => elsewhere(&output, &session_id, &session.id),
                    };
                    let updates = vec![to_proto::agent_text(&output)];
                    events.send(Input::CommandDone { session_id: session.id.clone(), updates });
                }
                Ok(Executed::Started(started)) => {
                    // A run that dies without an outcome (a panic) still answers the prompt.
                    if started.done.await.is_err() {
                        failed(to_proto::run_failed(
                            "the run stopped unexpectedly (an internal error; see the log)".into(),
                        ));
                        return;
                    }
                    let usage = usage(&session.harness, &session.id);
                    events.send(Input::Finished { session_id: session.id.clone(), usage });
                }
                Err(err) => failed(to_proto::harness_error(err)),
            }
        });
    }

    /// `session/set_mode`: the approval mode, from the next tool call.
    fn set_mode(
        &self,
        request: SetSessionModeRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<SetSessionModeResponse, Error> {
        let session = self.session(&request.session_id.0, cx)?;
        let Some(mode) = options::Mode::parse(&request.mode_id.0) else {
            let modes: Vec<&str> = options::Mode::ALL.iter().map(|mode| mode.id()).collect();
            return Err(to_proto::invalid_params(format!(
                "no mode {}; the modes are {}",
                to_proto::quoted(&request.mode_id.0),
                modes.join(", ")
            )));
        };
        options::set_mode(&session.harness, &session.id, mode, &session.configured)?;
        self.changed(&session);
        Ok(SetSessionModeResponse::new())
    }

    /// `session/set_config_option`: the model or thinking level from the next turn, the mode
    /// from the next tool call; answers every option as it is now.
    fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let session = self.session(&request.session_id.0, cx)?;
        options::set(&session.harness, &session.id, &request.config_id.0, &request.value, &session.configured)?;
        self.changed(&session);
        Ok(SetSessionConfigOptionResponse::new(options::config_options(&session.harness, &session.id)))
    }

    /// A choice of the session changed: the event task takes its settings in force, and the
    /// client hears the mode and the options as they are now (a client that knows only one of
    /// the two keeps up).
    fn changed(&self, session: &Session) {
        let settings = LiveSettings::new((*session.harness.settings()).clone());
        self.events.send(Input::Session { session_id: session.id.clone(), cwd: session.cwd.clone(), settings });
        let mode = options::mode(&session.harness, &session.id);
        self.events.updates(
            &session.id,
            vec![
                SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.id())),
                SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options::config_options(
                    &session.harness,
                    &session.id,
                ))),
            ],
        );
    }

    /// Sends the session's slash commands (`available_commands_update`).
    fn announce_commands(&self, session_id: &str) {
        let Some(session) = lock(&self.sessions).get(session_id).cloned() else { return };
        self.events.updates(session_id, vec![to_proto::available_commands(&session.harness.commands())]);
    }

    fn cancel(&self, session_id: &str) {
        let Some(session) = lock(&self.sessions).get(session_id).cloned() else { return };
        if let Err(err) = session.harness.cancel(&session.id) {
            tracing::warn!("cancelling session {session_id}: {err}");
        }
    }

    /// The client went away: cancel what runs, let the runs save their sessions, stop the MCP
    /// servers.
    async fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = lock(&self.sessions).values().cloned().collect();
        for session in &sessions {
            let _ = session.harness.cancel(&session.id);
        }
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        for session in &sessions {
            while session.harness.is_running(&session.id).unwrap_or(false) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            session.harness.shutdown().await;
        }
    }
}

/// What `/new` answers over ACP. ACP has no way for an agent to move its client to another
/// session, and a session started here would be empty, so not even listed: the client's own
/// new-chat command starts one the client shows.
const NEW_IN_THE_CLIENT: &str = "This chat stays as it is: start a new chat from your client (its new \
     session or new thread command), which shows it. An agent cannot move the client to another session.";

/// `/new`, with or without words after it.
fn is_new_command(text: &str) -> bool {
    let text = text.trim();
    text == "/new" || text.starts_with("/new ")
}

/// A command's answer when it made another session (`/fork`): the client stays on this one, so
/// the answer says how to open the other.
fn elsewhere(output: &str, other: &str, this: &str) -> String {
    format!(
        "{output}\nIt is in your client's session list (session/load {other}): open it there to go on from the \
         fork. This chat stays in session {this}."
    )
}

/// How much of its model's window the session's context takes, and what it cost so far.
fn usage(harness: &Harness, session_id: &str) -> Option<UsageUpdate> {
    let used = harness.context_tokens(session_id).ok()?;
    let model = harness.session_model(session_id).ok()?;
    let spent = harness.usage(session_id).map(|usage| usage.total).unwrap_or_default();
    Some(to_proto::usage(used, &model, &spent))
}

fn not_open(id: &str) -> Error {
    to_proto::invalid_params(format!(
        "no session {} is open; create it with session/new or session/load",
        to_proto::quoted(id)
    ))
}

/// The MCP servers of `session/new` or `session/load`; those left out are logged.
fn mcp_servers(servers: Vec<agent_client_protocol::v1::schema::McpServer>) -> Vec<reins_mcp::ServerConfig> {
    let (servers, skipped) = from_proto::mcp_servers(servers);
    for reason in skipped {
        tracing::warn!("{reason}");
    }
    servers
}

/// The linked files of a prompt, read as the agent would read them (through the client when it
/// reads, inside the session's workspace only), quoted after the text.
async fn attach_links(session: &Session, mut prompt: from_proto::Prompt) -> Vec<reins_ai::Content> {
    use reins_tools::Workspace;
    for (name, path) in std::mem::take(&mut prompt.links) {
        let text = match session.workspace.read_text(&path).await {
            Ok(file) => Some(file.text),
            Err(err) => {
                tracing::debug!("a linked file was not read: {err}");
                None
            }
        };
        prompt.attachments.push(from_proto::Attachment { name, text });
    }
    prompt.into_content()
}
