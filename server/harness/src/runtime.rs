//! The harness runtime: live sessions, each an [`Agent`] with its tools, prompt, approval gate
//! and session file, and the settings in force, which the harness alone replaces and everything
//! reads from here. The LSP server and the CLI drive it the same way; it reports through one
//! event sink. What is done to sessions is in [`sessions`], runs in [`runs`].

mod checkout;
mod choices;
mod commands;
mod landing;
mod language;
mod last_request;
mod look;
mod marks;
mod release;
mod runs;
mod sessions;
mod subagents;
mod todos;
mod tools;
mod transcript;
mod worktree_agents;

pub use checkout::{CheckedOut, Checkout, PickedCheckout, Resumed};
pub use commands::Executed;
pub use landing::Landing;
pub use last_request::SentRequest;
pub use runs::LateContent;
pub use subagents::{Parent, SUBAGENT_ENTRY, TASK_TOOL};
pub use todos::TODO_ENTRY;
pub(crate) use todos::{todo_data, todo_preview};

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use reins_agent::{Agent, AgentContext, AgentEvent, Hooks, RunOutcome, SharedBudget, Tool};
use reins_ai::{Message, Model, Provider};
use reins_review::Approver;
use reins_session::{Durability, SessionError, SessionFile, SessionStore};
use reins_tools::{DiagnosticSource, DiagnosticsTool, Workspace, builtin_tools_editing_with};
use tokio::sync::{Semaphore, oneshot};
use tokio_util::sync::CancellationToken;

pub(crate) use reins_agent::lock;

use crate::approval::ApprovalGate;
use crate::checkpoint::{FileRecorder, RecordingWorkspace, recorded};
use crate::compaction::{AutoCompact, Estimates, SessionHooks};
use crate::diagnostics::Feedback;
use crate::error::HarnessError;
use crate::hooks::HookRunner;
use crate::mcp_start::Warn;
use crate::prompt::{PromptInputs, build_system_prompt};
use crate::router::LiveRouter;
use crate::sessions::{SessionListing, SessionRecorder};
use crate::skills::AllowedTools;
use choices::Choices;
pub use choices::{SessionUsage, ThinkingSet, ToolsSet};
use last_request::{Recording, RequestSlot};
use reins_settings::LiveSettings;
use reins_settings::Settings;
use reins_settings::ToolSet;
use release::Released;
use subagents::{Spawn, TaskTool};
use tools::ConfiguredServers;
pub(crate) use tools::SessionTools;

pub type SessionId = String;
pub type RunId = String;

/// An agent event, with the session and run it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct HarnessEvent {
    pub session_id: SessionId,
    pub run_id: RunId,
    pub event: AgentEvent,
    /// Where the session was spawned, when it is a subagent at work on a `task` call.
    pub parent: Option<Parent>,
}

pub type HarnessEventSink = Arc<dyn Fn(HarnessEvent) + Send + Sync>;

/// What a harness is built from.
pub struct HarnessOptions {
    /// The settings in force. The harness owns them from now on: only [`Harness::set_settings`]
    /// and [`Harness::choose_model`] replace them; others may hold the handle to read them.
    pub settings: LiveSettings,
    pub workspace: Arc<dyn Workspace>,
    /// The model provider; `None` routes each call by the settings in force.
    pub provider: Option<Arc<dyn Provider>>,
    /// Asks the user where the approval policy in force says `ask`.
    pub approver: Arc<dyn Approver>,
    /// The editor's diagnostics (`reins lsp`): the `diagnostics` tool and after-edit feedback
    /// when the editor can answer. `None` where there is no editor (`reins run`, ACP): the
    /// `[diagnostics] command` gives the feedback instead.
    pub diagnostics: Option<Arc<dyn DiagnosticSource>>,
    /// Where every session's events go.
    pub events: HarnessEventSink,
    /// `YYYY-MM-DD`, for the system prompt.
    pub date: String,
    /// Keep sessions on disk (`false`: `reins run --no-session`).
    pub persist: bool,
    /// Warnings that belong to no run: an MCP server could not start, or stopped.
    pub warn: Warn,
}

/// A run that has started: its id, and its outcome when it ends.
pub struct RunStarted {
    pub session_id: SessionId,
    pub run_id: RunId,
    pub done: oneshot::Receiver<RunOutcome>,
}

pub struct Harness {
    /// Itself, for the tools that start runs (a subagent's `task`).
    me: Weak<Harness>,
    options: HarnessOptions,
    /// The settings in force (`options.settings`, shared with every session's hooks).
    settings: LiveSettings,
    /// The default model [`Harness::choose_model`] chose, and the one the settings alone give.
    model_choice: Mutex<ModelChoice>,
    provider: Arc<dyn Provider>,
    /// The router behind `provider` when none was given, rebuilt when the settings change.
    router: Option<Arc<LiveRouter>>,
    store: SessionStore,
    sessions: Mutex<HashMap<SessionId, Arc<LiveSession>>>,
    /// Sessions released to save their memory and file descriptor (see [`release`]), reopened
    /// from their files on demand.
    released: Mutex<HashMap<SessionId, Released>>,
    reopening: Mutex<()>,
    listing: Mutex<SessionListing>,
    counter: AtomicU64,
    /// The configured MCP servers, which every session joins (see [`tools`]).
    mcp: Mutex<ConfiguredServers>,
    /// The language servers (see [`language`]).
    language: Mutex<language::LanguageState>,
    /// Subagents at work at once, across the harness.
    subagent_slots: Arc<Semaphore>,
}

/// A default model chosen without a session holds until the settings change the model
/// themselves (a `didChangeConfiguration` that names another one).
#[derive(Default)]
struct ModelChoice {
    chosen: Option<String>,
    configured: String,
}

struct LiveSession {
    id: SessionId,
    agent: Agent,
    /// Its built-in tools and MCP servers; shared with the hooks, which refresh the tools
    /// before each turn.
    toolbox: Arc<SessionTools>,
    /// What the session chose for itself (thinking level), from its file or a command.
    choices: Mutex<Choices>,
    /// `None` when sessions are not kept on disk.
    file: Option<Arc<Mutex<SessionFile>>>,
    /// The run in progress. Set before the run is spawned, so a second send fails at once.
    /// Shared with the approval gate, which tells the approver the run of each call.
    running: Arc<Mutex<Option<RunId>>>,
    /// Cancels the harness's own model calls of the current run or operation (compaction,
    /// summaries); the agent's calls are cancelled through the agent. Shared with the hooks.
    cancel: Arc<Mutex<CancellationToken>>,
    tool_env: ToolEnv,
    /// The built-in tools the agent's system prompt was written for.
    prompted: Mutex<Vec<String>>,
    /// The tools the user allowed for the rest of the session (shared with the approval gate);
    /// kept when the session is released.
    allowed: Arc<Mutex<HashSet<String>>>,
    /// The tools a skill forced with `/skill:name` pre-approves for the run it started (shared
    /// with the approval gate); replaced at each send.
    skill_allowed: Arc<Mutex<AllowedTools>>,
    /// When the session was last used, on the harness's counter: the least recently used idle
    /// sessions are released first.
    last_used: AtomicU64,
    /// Where it was spawned, while it works on a `task` call.
    spawn: Mutex<Option<Spawn>>,
    /// The budget of its run in progress, which its subagents pay from too.
    budget: Mutex<Option<Arc<SharedBudget>>>,
    /// The request its agent last sent to the model.
    last_request: RequestSlot,
}

/// What a session's tools work through: the workspace, recording the file changes that land when
/// the session is kept on disk.
pub(crate) struct ToolEnv {
    pub session_id: SessionId,
    pub workspace: Arc<dyn Workspace>,
    pub recorder: Option<Arc<FileRecorder>>,
}

impl ToolEnv {
    /// `tools`, their calls recorded when the session records.
    pub fn wrap(&self, tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
        match &self.recorder {
            Some(recorder) => recorded(tools, recorder),
            None => tools,
        }
    }
}

impl Harness {
    pub fn new(options: HarnessOptions) -> Arc<Self> {
        let settings = options.settings.clone();
        let current = settings.get();
        let store = SessionStore::new(current.data_dir.join("sessions"));
        let (provider, router): (Arc<dyn Provider>, _) = match &options.provider {
            Some(provider) => (provider.clone(), None),
            None => {
                let router = Arc::new(LiveRouter::new(&current));
                (router.clone(), Some(router))
            }
        };
        let model_choice = Mutex::new(ModelChoice { chosen: None, configured: current.model.clone() });
        let options_roots = options.workspace.roots();
        let mcp = crate::mcp_start::servers(
            current.mcp_servers.clone(),
            &current,
            options_roots.clone(),
            options.warn.clone(),
        );
        let subagent_slots = Arc::new(Semaphore::new(current.max_subagents.max(1)));
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            options,
            settings,
            model_choice,
            provider,
            router,
            store,
            sessions: Mutex::new(HashMap::new()),
            released: Mutex::default(),
            reopening: Mutex::default(),
            listing: Mutex::default(),
            counter: AtomicU64::new(0),
            mcp: Mutex::new(ConfiguredServers { servers: mcp, roots: options_roots }),
            language: Mutex::default(),
            subagent_slots,
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> Arc<Settings> {
        self.settings.get()
    }

    /// Puts `next` in force (the editor's settings changed), keeping a default model that
    /// [`Harness::choose_model`] chose unless `next` changes the model itself; answers the
    /// settings now in force and the previous ones. From now on: new sessions take the new
    /// default model; models resolve through the new registry and route to the new endpoints
    /// and keys; each live session's model (the same provider and id) is resolved again, so a
    /// new endpoint or window applies from its next turn; the approval policy applies from the
    /// next tool call, compaction from the next turn, limits from the next run.
    pub fn set_settings(&self, mut next: Settings) -> (Arc<Settings>, Arc<Settings>) {
        {
            let mut choice = lock(&self.model_choice);
            if next.model != choice.configured {
                choice.chosen = None;
            }
            choice.configured = next.model.clone();
            if let Some(model) = &choice.chosen {
                next.model = model.clone();
            }
        }
        let previous = self.settings.get();
        let settings = self.settings.set(next);
        if let Some(router) = &self.router {
            router.replace(&settings);
        }
        self.reconfigure_servers(&settings, &previous);
        for session in lock(&self.sessions).values() {
            let current = session.agent.model();
            session.agent.set_model(settings.resolve_recorded(&current.provider, &current.id));
        }
        (settings, previous)
    }

    /// Makes `model` the default of sessions started from now on (`reins.model.set` without a
    /// session); answers it resolved.
    pub fn choose_model(&self, model: &str) -> Model {
        lock(&self.model_choice).chosen = Some(model.to_string());
        let mut next = (*self.settings.get()).clone();
        next.model = model.to_string();
        self.settings.set(next).resolve_model(None)
    }

    fn cwd(&self) -> PathBuf {
        self.options.workspace.cwd()
    }

    fn go_live_from_file(&self, file: SessionFile) -> SessionId {
        self.go_live_from_file_with(file, Arc::default())
    }

    /// Like [`Harness::go_live_from_file`], with the tools the user already allowed in the
    /// session (one that was released and comes back).
    fn go_live_from_file_with(&self, mut file: SessionFile, allowed: Arc<Mutex<HashSet<String>>>) -> SessionId {
        file.set_durability(Durability::Write);
        let settings = self.settings();
        let context = file.tree().context_within(|recorded| {
            held_tokens(match recorded {
                Some(recorded) => settings.resolve_recorded(&recorded.provider, &recorded.model_id).context_window,
                None => settings.resolve_model(None).context_window,
            })
        });
        let model = match &context.model {
            Some(recorded) => settings.resolve_recorded(&recorded.provider, &recorded.model_id),
            None => settings.resolve_model(None),
        };
        let id = file.id().to_string();
        let mut choices = Choices::default();
        choices.adopt(&context);
        self.go_live(id, Some(file), model, context.messages, choices, allowed)
    }

    /// `choices`: what the session chose for itself (its file records them); the tools offered
    /// are its tool set, else the settings'.
    fn go_live(
        &self,
        id: SessionId,
        file: Option<SessionFile>,
        model: Model,
        messages: Vec<Message>,
        choices: Choices,
        allowed: Arc<Mutex<HashSet<String>>>,
    ) -> SessionId {
        let file = file.map(|file| Arc::new(Mutex::new(file)));
        // A session kept on disk records the file changes of its tools on its path.
        let recorder = file.clone().map(|file| FileRecorder::new(file, self.cwd()));
        let workspace: Arc<dyn Workspace> = match &recorder {
            Some(recorder) => RecordingWorkspace::new(self.options.workspace.clone(), recorder.clone()),
            None => self.options.workspace.clone(),
        };
        let cancel = Arc::new(Mutex::new(CancellationToken::new()));
        let running = Arc::new(Mutex::new(None));
        let skill_allowed: Arc<Mutex<AllowedTools>> = Arc::default();
        let gate = ApprovalGate {
            session_id: id.clone(),
            running: running.clone(),
            allowed: allowed.clone(),
            skill_allowed: skill_allowed.clone(),
            settings: self.settings.clone(),
            approver: self.options.approver.clone(),
        };
        let tool_env = ToolEnv { session_id: id.clone(), workspace, recorder };
        let offered = choices.tools.clone().or_else(|| self.settings().tools_enabled.clone());
        let last_request = RequestSlot::default();
        let (agent, toolbox) =
            self.new_agent(model, messages, offered, gate, file.clone(), cancel.clone(), &tool_env, &last_request);
        let prompted = Mutex::new(toolbox.offered_builtin().iter().map(|tool| tool.name().to_string()).collect());
        let choices = Mutex::new(choices);
        let session = Arc::new(LiveSession {
            id: id.clone(),
            agent,
            toolbox,
            choices,
            file,
            running,
            cancel,
            tool_env,
            prompted,
            allowed,
            skill_allowed,
            last_used: AtomicU64::new(self.next()),
            spawn: Mutex::default(),
            budget: Mutex::default(),
            last_request,
        });
        lock(&self.released).remove(&id);
        lock(&self.sessions).insert(id.clone(), session);
        self.release_idle();
        id
    }

    #[allow(clippy::too_many_arguments)]
    fn new_agent(
        &self,
        model: Model,
        messages: Vec<Message>,
        offered: Option<ToolSet>,
        gate: ApprovalGate,
        file: Option<Arc<Mutex<SessionFile>>>,
        cancel: Arc<Mutex<CancellationToken>>,
        tool_env: &ToolEnv,
        last_request: &RequestSlot,
    ) -> (Agent, Arc<SessionTools>) {
        let settings = self.settings();
        let builtin = self.tools_for(&model, tool_env);
        // MCP tools join at each run and turn, once their servers are up.
        let servers = lock(&self.mcp).servers.clone();
        let session_tools = Arc::new(SessionTools::new(
            builtin,
            servers,
            tool_env.recorder.clone(),
            offered,
            file.as_ref(),
            self.settings.clone(),
        ));
        let tools = session_tools.offered_builtin();
        let messages = messages.into_iter().map(Arc::new).collect();
        let context =
            AgentContext { system_prompt: self.system_prompt(&tools), model, messages, tools, thinking: None };
        let feedback = Feedback {
            settings: self.settings.clone(),
            editor: self.options.diagnostics.clone(),
            language: self.language_servers().map(|servers| servers as Arc<dyn DiagnosticSource>),
            workspace: self.options.workspace.clone(),
            cancel: cancel.clone(),
            state: Mutex::default(),
        };
        let gate_session = gate.session_id.clone();
        let hooks: Arc<dyn Hooks> = Arc::new(SessionHooks {
            gate,
            tools: session_tools.clone(),
            auto_compact: file.map(|file| AutoCompact {
                file,
                provider: self.provider.clone(),
                settings: self.settings.clone(),
                cancel,
                estimates: Estimates::default(),
            }),
            feedback,
            hooks: HookRunner {
                settings: self.settings.clone(),
                workspace: self.options.workspace.clone(),
                session_id: gate_session.clone(),
            },
            edits: Mutex::default(),
        });
        let provider = Arc::new(Recording { inner: self.provider.clone(), slot: last_request.clone() });
        (Agent::new(context, provider, hooks, settings.limits()), session_tools)
    }

    /// The built-in tools a session with `model` gets, with the edit tool in the dialect the
    /// model is trained on (see [`Settings::edit_format_for`]); its tool set picks among them.
    fn tools_for(&self, model: &Model, tool_env: &ToolEnv) -> Vec<Arc<dyn Tool>> {
        let settings = self.settings();
        let format = settings.edit_format_for(model);
        let policy = settings.exec_policy(std::env::vars_os());
        let mut tools = tool_env.wrap(builtin_tools_editing_with(tool_env.workspace.clone(), policy, format));
        if let Some(editor) = self.options.diagnostics.clone().filter(|editor| editor.available()) {
            tools.push(Arc::new(DiagnosticsTool::new(tool_env.workspace.clone(), editor)));
        }
        tools.extend(self.language_tools(tool_env));
        tools.push(Arc::new(TaskTool { harness: self.me.clone(), session_id: tool_env.session_id.clone() }));
        // The skills the prompt names may live outside the workspace: `read` reads them there.
        let skill_dirs: Vec<PathBuf> = self.resources().skills.skills.into_iter().map(|skill| skill.dir).collect();
        crate::skill_read::with_skill_read(tools, &skill_dirs, &tool_env.workspace.roots())
    }

    /// The system prompt of a session with `tools`.
    fn system_prompt(&self, tools: &[Arc<dyn Tool>]) -> String {
        let settings = self.settings();
        let root = self.options.workspace.cwd();
        let mut inputs = PromptInputs::discover(
            &root,
            &root,
            &settings.config_dir,
            settings.is_trusted(&root),
            tools.iter().map(|tool| tool.spec()).collect(),
            self.options.date.clone(),
        );
        inputs.skills = self.resources().skills.skills;
        build_system_prompt(&inputs)
    }

    /// The event sink of one run: records to the session file, then forwards — all but the
    /// run's `agent_end`, which [`Emitter::finish`] forwards once the session is idle again, so a
    /// client that sends the next message as soon as it sees `agent_end` is never told `busy`.
    fn emitter(&self, session: &LiveSession, run_id: &str) -> Emitter {
        let sink = self.options.events.clone();
        let recorder = session.file.clone().map(SessionRecorder::new);
        let (session_id, run_id) = (session.id.clone(), run_id.to_string());
        let spawn = lock(&session.spawn);
        let parent = spawn.as_ref().map(|spawn| spawn.parent.clone());
        let progress = spawn.as_ref().map(|spawn| spawn.progress.clone());
        drop(spawn);
        let held: Arc<Mutex<Option<HarnessEvent>>> = Arc::default();
        let holder = held.clone();
        let forward = sink.clone();
        let settings = self.settings.clone();
        let emit: reins_agent::EventSink = Arc::new(move |mut event: AgentEvent| {
            // A failed run's end says, in one line, what failed and what to do: every surface
            // shows this line, so none has to work it out (or show the raw error chain).
            if let AgentEvent::AgentEnd { reason: reins_agent::TurnEndReason::Error, messages, error, .. } = &mut event
            {
                *error = Some(settings.get().run_failure(messages, error.as_deref()));
            }
            if let Some(recorder) = &recorder {
                recorder.record(&event);
            }
            if let (Some(progress), AgentEvent::ToolExecutionStart { tool_name, args, .. }) = (&progress, &event) {
                let _ = progress.send(subagents::progress_line(tool_name, args));
            }
            let parent = parent.clone();
            let event = HarnessEvent { session_id: session_id.clone(), run_id: run_id.clone(), event, parent };
            let mut held = lock(&holder);
            // An end followed by more events (a retry after compaction) was not the last one.
            if let Some(end) = held.take() {
                forward(end);
            }
            match event.event {
                AgentEvent::AgentEnd { .. } => *held = Some(event),
                _ => forward(event),
            }
        });
        Emitter { emit, held, sink }
    }

    /// A session by id, reopened from its file when it was released.
    fn session(&self, session_id: &str) -> Result<Arc<LiveSession>, HarnessError> {
        if let Some(session) = self.live(session_id) {
            return Ok(session);
        }
        self.reopen(session_id)?;
        self.live(session_id).ok_or_else(|| {
            HarnessError::InvalidArgument(format!("no session {session_id:?} is open; open it or start a new one"))
        })
    }

    /// A session that is open now, marked used.
    fn live(&self, session_id: &str) -> Option<Arc<LiveSession>> {
        let session = lock(&self.sessions).get(session_id).cloned()?;
        session.last_used.store(self.next(), Ordering::Relaxed);
        Some(session)
    }

    /// Marks an idle session busy for an operation that awaits the model (navigating with a
    /// summary, compacting), so that no run starts on the file meanwhile.
    fn claim(&self, session_id: &str) -> Result<(Arc<LiveSession>, Claim), HarnessError> {
        let session = self.session(session_id)?;
        let hold = session.begin("maintenance".to_string())?;
        session.fresh_cancel();
        Ok((session.clone(), Claim { session, _hold: hold }))
    }

    fn running_session(&self, session_id: &str, what: &str) -> Result<Arc<LiveSession>, HarnessError> {
        let session = self.session(session_id)?;
        if lock(&session.running).is_none() {
            return Err(HarnessError::InvalidState(format!(
                "no run is in progress in session {session_id}, so there is nothing to {what}; send a message instead"
            )));
        }
        Ok(session)
    }

    fn require_persist(&self) -> Result<(), HarnessError> {
        if self.options.persist {
            Ok(())
        } else {
            Err(HarnessError::InvalidState("sessions are not kept on disk in this run (--no-session)".into()))
        }
    }

    fn next(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed) + 1
    }
}

impl LiveSession {
    /// Marks the session busy with `what` (a run id, or an operation) and takes its file's writer
    /// lock: `Busy` when something already goes on here, a `session` error when another process
    /// is writing the file.
    fn begin(&self, what: String) -> Result<FileHold, HarnessError> {
        {
            let mut running = lock(&self.running);
            if running.is_some() {
                return Err(HarnessError::Busy);
            }
            *running = Some(what);
        }
        self.hold_file().inspect_err(|_| *lock(&self.running) = None)
    }

    /// Takes the session file's writer lock for a run or an operation, first reading what
    /// another process appended (the agent's conversation then follows the file). Released when
    /// the guard drops; while another process holds it, a `session` error says so.
    fn hold_file(&self) -> Result<FileHold, HarnessError> {
        let Some(file) = &self.file else { return Ok(FileHold(None)) };
        let changed = lock(file).hold().map_err(session_error)?;
        if changed {
            let context = agent_context(&lock(file), &self.agent.model());
            lock(&self.choices).adopt(&context);
            let _ = self.agent.set_messages(context.messages);
        }
        Ok(FileHold(Some(file.clone())))
    }

    /// A new token for the run or operation that starts now.
    fn fresh_cancel(&self) {
        *lock(&self.cancel) = CancellationToken::new();
    }

    fn current_cancel(&self) -> CancellationToken {
        lock(&self.cancel).clone()
    }

    fn file(&self) -> Result<&Arc<Mutex<SessionFile>>, HarnessError> {
        self.file.as_ref().ok_or_else(|| {
            HarnessError::InvalidState(format!("session {} is not kept on disk, so it has no tree", self.id))
        })
    }

    /// Its file's path, when it is kept on disk.
    fn path(&self) -> Option<PathBuf> {
        self.file.as_ref().map(|file| lock(file).path().to_path_buf())
    }

    fn has_path(&self, path: &std::path::Path) -> bool {
        self.file.as_ref().is_some_and(|file| lock(file).path() == path)
    }
}

/// A run's event sink, and the `agent_end` it holds back until the run's session is idle.
struct Emitter {
    emit: reins_agent::EventSink,
    held: Arc<Mutex<Option<HarnessEvent>>>,
    sink: HarnessEventSink,
}

impl Emitter {
    /// Forwards the held `agent_end`, if the run got that far.
    fn finish(&self) {
        let end = lock(&self.held).take();
        if let Some(end) = end {
            (self.sink)(end);
        }
    }
}

/// Releases a [`Harness::claim`]: the session is idle again however the operation ended.
/// The writer lock goes with it (`_hold`), released after the session is marked idle.
struct Claim {
    session: Arc<LiveSession>,
    _hold: FileHold,
}

impl Drop for Claim {
    fn drop(&mut self) {
        *lock(&self.session.running) = None;
    }
}

/// The writer lock of a session file, from [`LiveSession::hold_file`] until it drops.
struct FileHold(Option<Arc<Mutex<SessionFile>>>);

impl Drop for FileHold {
    fn drop(&mut self) {
        if let Some(file) = &self.0 {
            let mut file = lock(file);
            if let Err(err) = file.release() {
                tracing::error!("could not save the session {}: {err}", file.path().display());
            }
        }
    }
}

/// Marks a session idle when its run's task ends, however it ends.
struct IdleOnDrop<'a>(&'a Mutex<Option<RunId>>);

impl Drop for IdleOnDrop<'_> {
    fn drop(&mut self) {
        *lock(self.0) = None;
    }
}

pub(crate) fn session_error(error: SessionError) -> HarnessError {
    HarnessError::Session(error.to_string())
}

/// The context of `file` at its leaf that the agent holds for `model`: only what a request could
/// carry ([`reins_session::SessionTree::context_within`] its window), so that a session far
/// longer than any window is not held whole; the rest stays in the file, where compaction reads it.
pub(crate) fn agent_context(file: &SessionFile, model: &Model) -> reins_session::SessionContext {
    file.tree().context_within(|_| held_tokens(model.context_window))
}

/// The tokens of newest messages an agent holds for a window of `window` tokens: more than four
/// windows by the estimate, so that the window check before a request, which counts bytes / 4
/// over the whole conversation, refuses one that was cut as it would refuse it whole (a
/// message's estimate is at most its bytes); and automatic compaction finds it near the window.
fn held_tokens(window: u64) -> u64 {
    window.saturating_mul(4)
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use reins_ai::{AssistantMessage, Content, EventSink, Request, StopReason};
    use reins_review::{ApprovalRequest, Verdict};
    use reins_tools::FsWorkspace;

    use super::*;

    /// A provider whose first call panics (a bug somewhere below the harness) and whose later
    /// calls answer "fine".
    struct PanicsOnce(Mutex<bool>);

    #[async_trait]
    impl Provider for PanicsOnce {
        async fn stream(&self, request: &Request, _: EventSink<'_>, _: &CancellationToken) -> AssistantMessage {
            let first = std::mem::replace(&mut *lock(&self.0), false);
            assert!(!first, "a bug in the provider");
            AssistantMessage {
                content: vec![Content::text("fine")],
                model: request.model.id.clone(),
                stop_reason: StopReason::Stop,
                ..AssistantMessage::default()
            }
        }
    }

    struct NoApprover;

    #[async_trait]
    impl Approver for NoApprover {
        async fn decide(&self, _: ApprovalRequest<'_>, _: &CancellationToken) -> Verdict {
            Verdict::Reject { reason: "no".into() }
        }
    }

    /// Answers "fine", except summary requests, which wait until they are cancelled.
    struct SummariesHang(tokio::sync::Notify);

    #[async_trait]
    impl Provider for SummariesHang {
        async fn stream(&self, request: &Request, _: EventSink<'_>, cancel: &CancellationToken) -> AssistantMessage {
            if request.system_prompt.starts_with("You are summarizing") {
                self.0.notify_one();
                cancel.cancelled().await;
                return AssistantMessage { stop_reason: StopReason::Aborted, ..AssistantMessage::default() };
            }
            AssistantMessage {
                content: vec![Content::text("fine")],
                stop_reason: StopReason::Stop,
                ..AssistantMessage::default()
            }
        }
    }

    fn harness_with(dir: &std::path::Path, provider: Arc<dyn Provider>, keep_recent_tokens: u64) -> Arc<Harness> {
        let home = dir.join("home");
        let settings = Settings::from_env(|name| (name == "REINS_HOME").then(|| home.display().to_string()));
        let mut settings = settings;
        settings.compaction.keep_recent_tokens = keep_recent_tokens;
        Harness::new(HarnessOptions {
            settings: LiveSettings::new(settings),
            workspace: Arc::new(FsWorkspace::new(vec![dir.to_path_buf()]).unwrap()),
            provider: Some(provider),
            approver: Arc::new(NoApprover),
            diagnostics: None,
            events: Arc::new(|_| {}),
            date: "2026-11-30".into(),
            persist: true,
            warn: Arc::new(|_| {}),
        })
    }

    #[tokio::test]
    async fn cancel_stops_a_compaction_and_frees_the_session() {
        let tmp = tempfile::tempdir().unwrap();
        let provider = Arc::new(SummariesHang(tokio::sync::Notify::new()));
        let harness = harness_with(tmp.path(), provider.clone(), 1);
        let session = harness.new_session(None, None).unwrap();
        for text in ["one", "two"] {
            harness.send(&session, vec![Content::text(text)]).unwrap().done.await.unwrap();
        }

        let compacting = {
            let (harness, session) = (harness.clone(), session.clone());
            tokio::spawn(async move { harness.compact(&session).await })
        };
        provider.0.notified().await;
        assert!(harness.is_running(&session).unwrap(), "a compaction holds the session");
        assert!(harness.cancel(&session).unwrap());
        let result = tokio::time::timeout(std::time::Duration::from_secs(5), compacting).await.unwrap().unwrap();
        assert_eq!(result.unwrap_err().code(), "compaction");
        assert!(!harness.is_running(&session).unwrap());
        assert_eq!(harness.messages(&session).unwrap().len(), 4, "nothing was lost or replaced");
    }

    #[tokio::test]
    async fn a_run_that_panics_leaves_its_session_usable() {
        let tmp = tempfile::tempdir().unwrap();
        let harness = harness_with(tmp.path(), Arc::new(PanicsOnce(Mutex::new(true))), 20_000);
        let session = harness.new_session(None, None).unwrap();

        let started = harness.send(&session, vec![Content::text("hello")]).unwrap();
        assert!(started.done.await.is_err(), "the panicked run has no outcome");
        assert!(!harness.is_running(&session).unwrap(), "the session is not stuck busy");

        let again = harness.send(&session, vec![Content::text("hello again")]).unwrap();
        let outcome = again.done.await.unwrap();
        assert_eq!(outcome.reason, reins_agent::TurnEndReason::FinalAnswer);
    }

    /// Calls `ls` every time, counting the calls.
    struct AlwaysLs(Mutex<u32>);

    #[async_trait]
    impl Provider for AlwaysLs {
        async fn stream(&self, _: &Request, _: EventSink<'_>, _: &CancellationToken) -> AssistantMessage {
            let mut calls = lock(&self.0);
            *calls += 1;
            let call = reins_ai::ToolCall {
                id: format!("c{calls}"),
                name: "ls".into(),
                arguments: serde_json::json!({"path": format!("./{calls}")}),
            };
            AssistantMessage {
                content: vec![Content::ToolCall(call)],
                stop_reason: StopReason::ToolUse,
                ..AssistantMessage::default()
            }
        }
    }

    #[tokio::test]
    async fn settings_changed_between_runs_apply_to_the_next_run() {
        let tmp = tempfile::tempdir().unwrap();
        let provider = Arc::new(AlwaysLs(Mutex::new(0)));
        let harness = harness_with(tmp.path(), provider.clone(), 20_000);
        let session = harness.new_session(None, None).unwrap();
        let mut settings = (*harness.settings()).clone();
        settings.max_turns = Some(3);
        harness.set_settings(settings.clone());
        let outcome = harness.send(&session, vec![Content::text("go")]).unwrap().done.await.unwrap();
        assert_eq!((outcome.reason, *lock(&provider.0)), (reins_agent::TurnEndReason::MaxTurns, 3));

        settings.max_turns = Some(1);
        harness.set_settings(settings);
        let outcome = harness.send(&session, vec![Content::text("again")]).unwrap().done.await.unwrap();
        assert_eq!((outcome.reason, *lock(&provider.0)), (reins_agent::TurnEndReason::MaxTurns, 4));
    }

    #[test]
    fn a_chosen_default_model_holds_until_the_settings_change_the_model() {
        let tmp = tempfile::tempdir().unwrap();
        let harness = harness_with(tmp.path(), Arc::new(AlwaysLs(Mutex::new(0))), 20_000);
        let mut settings = (*harness.settings()).clone();
        settings.model = "a".into();
        harness.set_settings(settings.clone());
        assert_eq!(harness.choose_model("b").id, "b");
        // New settings that keep the model keep the choice too…
        settings.base_url = "http://h/v1".into();
        let (now, before) = harness.set_settings(settings.clone());
        assert_eq!((now.model.as_str(), before.model.as_str(), now.base_url.as_str()), ("b", "b", "http://h/v1"));
        // …until they name another one.
        settings.model = "c".into();
        assert_eq!(harness.set_settings(settings).0.model, "c");
    }

    #[tokio::test]
    async fn a_session_is_idle_by_the_time_its_agent_end_is_out() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let settings = Settings::from_env(|name| (name == "REINS_HOME").then(|| home.display().to_string()));
        let (tx, mut ends) = tokio::sync::mpsc::unbounded_channel();
        let harness = Harness::new(HarnessOptions {
            settings: LiveSettings::new(settings),
            workspace: Arc::new(FsWorkspace::new(vec![tmp.path().to_path_buf()]).unwrap()),
            provider: Some(Arc::new(PanicsOnce(Mutex::new(false)))),
            approver: Arc::new(NoApprover),
            diagnostics: None,
            events: Arc::new(move |event: HarnessEvent| {
                if matches!(event.event, AgentEvent::AgentEnd { .. }) {
                    let _ = tx.send(event.session_id);
                }
            }),
            date: "2026-11-30".into(),
            persist: true,
            warn: Arc::new(|_| {}),
        });
        let session = harness.new_session(None, None).unwrap();
        for text in ["one", "two", "three"] {
            harness.send(&session, vec![Content::text(text)]).unwrap();
            assert_eq!(ends.recv().await.as_ref(), Some(&session));
            assert!(!harness.is_running(&session).unwrap(), "busy after agent_end ({text})");
        }
    }
}
