//! The harness runtime: live sessions, each an [`Agent`] with its tools, prompt, approval gate
//! and session file, and the run rules (one run at a time per session; steer and follow up while
//! it goes; compaction near the context window). The LSP server and the CLI drive it the same
//! way; it reports through one event sink.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use reins_agent::{Agent, AgentContext, AgentEvent, Hooks, Limits, RunOutcome, Tool, TurnEndReason};
use reins_ai::{Content, Message, Model, Provider, Usage, UserMessage, now_ms};
use reins_session::{Durability, EntryKind, SessionError, SessionFile, SessionStore, estimate_tokens};
use reins_tools::{Workspace, builtin_tools};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use reins_review::Approver;

use crate::approval::ApprovalGate;
use crate::compaction::{AutoCompact, SessionHooks, branch_messages, compact_file, near_window, overflowed};
use crate::error::HarnessError;
use crate::live_settings::LiveSettings;
use crate::prompt::{PromptInputs, build_system_prompt};
use crate::sessions::{SessionInfo, SessionListing, SessionRecorder, SessionTreeView};
use crate::settings::Settings;
use crate::summary::branch_summary;

pub type SessionId = String;
pub type RunId = String;

/// An agent event, with the session and run it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct HarnessEvent {
    pub session_id: SessionId,
    pub run_id: RunId,
    pub event: AgentEvent,
}

pub type HarnessEventSink = Arc<dyn Fn(HarnessEvent) + Send + Sync>;

/// When the conversation is compacted, in estimated tokens.
#[derive(Debug, Clone)]
pub struct CompactionSettings {
    /// Compact automatically when the context comes within `reserve_tokens` of the window.
    pub auto: bool,
    pub reserve_tokens: u64,
    /// How much of the newest conversation a compaction keeps verbatim.
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self { auto: true, reserve_tokens: 16_384, keep_recent_tokens: 20_000 }
    }
}

/// What a harness is built from.
pub struct HarnessOptions {
    pub settings: Settings,
    pub workspace: Arc<dyn Workspace>,
    pub provider: Arc<dyn Provider>,
    /// Asks the user where the approval policy in force says `ask`.
    pub approver: Arc<dyn Approver>,
    pub limits: Limits,
    /// Where every session's events go.
    pub events: HarnessEventSink,
    /// `YYYY-MM-DD`, for the system prompt.
    pub date: String,
    /// Keep sessions on disk (`false`: `reins run --no-session`).
    pub persist: bool,
    pub compaction: CompactionSettings,
}

/// A run that has started: its id, and its outcome when it ends.
pub struct RunStarted {
    pub session_id: SessionId,
    pub run_id: RunId,
    pub done: oneshot::Receiver<RunOutcome>,
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    pub tokens_before: u64,
    pub tokens_after: u64,
}

pub struct Harness {
    options: HarnessOptions,
    /// The settings in force: `options.settings` until [`Harness::set_settings`] replaces them.
    settings: LiveSettings,
    store: SessionStore,
    sessions: Mutex<HashMap<SessionId, Arc<LiveSession>>>,
    listing: Mutex<SessionListing>,
    counter: AtomicU64,
}

struct LiveSession {
    id: SessionId,
    agent: Agent,
    /// `None` when sessions are not kept on disk.
    file: Option<Arc<Mutex<SessionFile>>>,
    /// The run in progress. Set before the run is spawned, so a second send fails at once.
    /// Shared with the approval gate, which tells the approver the run of each call.
    running: Arc<Mutex<Option<RunId>>>,
    /// Cancels the harness's own model calls of the current run or operation (compaction,
    /// summaries); the agent's calls are cancelled through the agent. Shared with the hooks.
    cancel: Arc<Mutex<CancellationToken>>,
}

impl Harness {
    pub fn new(options: HarnessOptions) -> Arc<Self> {
        let store = SessionStore::new(options.settings.data_dir.join("sessions"));
        let settings = LiveSettings::new(options.settings.clone());
        Arc::new(Self {
            options,
            settings,
            store,
            sessions: Mutex::new(HashMap::new()),
            listing: Mutex::default(),
            counter: AtomicU64::new(0),
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> Arc<Settings> {
        self.settings.get()
    }

    /// Replaces the settings (the editor's settings changed): sessions started or opened from
    /// now on take the new default model, models resolve through the new registry, and each live
    /// session's model — the same provider and id — is resolved again, so a new endpoint or
    /// window applies from its next turn. The approval policy applies from the next tool call;
    /// limits and compaction stay as the harness was built.
    pub fn set_settings(&self, settings: Settings) {
        let settings = self.settings.set(settings);
        for session in lock(&self.sessions).values() {
            let current = session.agent.context().model;
            session.agent.set_model(settings.resolve_recorded(&current.provider, &current.id));
        }
    }

    fn cwd(&self) -> PathBuf {
        self.options.workspace.cwd()
    }

    // ----- sessions -----

    /// Starts a new, empty session with the configured model.
    pub fn new_session(&self, name: Option<String>, model: Option<&str>) -> Result<SessionId, HarnessError> {
        let model = self.settings().resolve_model(model.filter(|model| !model.trim().is_empty()));
        if !self.options.persist {
            let id = format!("mem-{}-{:x}", self.next(), now_ms());
            return Ok(self.go_live(id, None, model, Vec::new(), None));
        }
        let mut file = self.store.create(&self.cwd(), None).map_err(session_error)?;
        file.set_durability(Durability::Write);
        file.append(EntryKind::ModelChange { provider: model.provider.clone(), model_id: model.id.clone() })
            .map_err(session_error)?;
        if let Some(name) = name.filter(|name| !name.trim().is_empty()) {
            file.set_name(&name).map_err(session_error)?;
        }
        file.flush().map_err(session_error)?;
        let id = file.id().to_string();
        Ok(self.go_live(id, Some(file), model, Vec::new(), None))
    }

    /// Opens a session by id (or unique prefix) or path, and continues from its leaf.
    pub fn open_session(&self, id_or_path: &str) -> Result<SessionId, HarnessError> {
        if let Some(live) = lock(&self.sessions).get(id_or_path) {
            return Ok(live.id.clone());
        }
        self.require_persist()?;
        let path = self.store.find(id_or_path, &self.cwd()).map_err(session_error)?;
        if let Some(live) = lock(&self.sessions).values().find(|live| live.has_path(&path)) {
            return Ok(live.id.clone());
        }
        let file = SessionFile::open(&path).map_err(session_error)?;
        Ok(self.go_live_from_file(file))
    }

    /// Opens the most recent session of this workspace, if there is one; an error when that one
    /// cannot be opened.
    pub fn continue_recent(&self) -> Result<Option<SessionId>, HarnessError> {
        self.require_persist()?;
        let Some(path) = self.store.most_recent(&self.cwd()).map_err(session_error)? else { return Ok(None) };
        if let Some(live) = lock(&self.sessions).values().find(|live| live.has_path(&path)) {
            return Ok(Some(live.id.clone()));
        }
        // The newest file is the one the user means; when it cannot be read, say so rather than
        // continue an older one or start over.
        let file =
            SessionFile::open(&path).map_err(|error| session_error(SessionError::NotContinued(Box::new(error))))?;
        Ok(Some(self.go_live_from_file(file)))
    }

    /// The sessions of this workspace, newest first.
    pub fn list_sessions(&self) -> Result<Vec<SessionInfo>, HarnessError> {
        if !self.options.persist {
            return Ok(Vec::new());
        }
        let files = self.store.files(&self.cwd()).map_err(session_error)?;
        Ok(lock(&self.listing).list(&files))
    }

    /// The tree of a session by id (or unique prefix) or path, read without opening it.
    pub fn peek_tree(&self, id_or_path: &str) -> Result<SessionTreeView, HarnessError> {
        let path = self.store.find(id_or_path, &self.cwd()).map_err(session_error)?;
        let tree = reins_session::SessionTree::load(&path).map_err(session_error)?;
        Ok(SessionTreeView::of(&tree.header().id, &tree))
    }

    /// A session's tree and current leaf.
    pub fn tree(&self, session_id: &str) -> Result<SessionTreeView, HarnessError> {
        let session = self.session(session_id)?;
        let file = session.file()?;
        let file = lock(file);
        Ok(SessionTreeView::of(&session.id, file.tree()))
    }

    /// A new session holding the path from the root to `entry_id`; continues from there.
    pub fn fork(&self, session_id: &str, entry_id: &str) -> Result<SessionId, HarnessError> {
        let session = self.session(session_id)?;
        let forked = {
            let mut file = lock(session.file()?);
            file.flush().map_err(session_error)?;
            file.fork(entry_id).map_err(session_error)?
        };
        Ok(self.go_live_from_file(forked))
    }

    /// Moves the session's position to `entry_id`; the next message continues from there. With
    /// `summarize`, the model first writes a summary of the branch being left, which the new
    /// position's context carries.
    pub async fn navigate(&self, session_id: &str, entry_id: &str, summarize: bool) -> Result<(), HarnessError> {
        let (session, _claim) = self.claim(session_id)?;
        let file = session.file()?.clone();
        let left_behind = {
            let mut file = lock(&file);
            file.flush().map_err(session_error)?;
            if !file.tree().contains(entry_id) {
                return Err(HarnessError::InvalidArgument(format!("session {session_id} has no entry {entry_id}")));
            }
            if summarize { branch_messages(file.tree(), entry_id)? } else { Vec::new() }
        };
        let summary = if left_behind.is_empty() {
            None
        } else {
            let model = session.agent.context().model;
            let cancel = session.current_cancel();
            Some(branch_summary(self.options.provider.as_ref(), &model, &left_behind, &cancel).await?)
        };
        let context = {
            let mut file = lock(&file);
            file.navigate(entry_id, summary).map_err(session_error)?;
            file.context().map_err(session_error)?
        };
        session.agent.set_messages(context.messages).map_err(|_| HarnessError::Busy)
    }

    /// Sets (or with `None` clears) the label of an entry.
    pub fn label(&self, session_id: &str, entry_id: &str, label: Option<&str>) -> Result<(), HarnessError> {
        let session = self.session(session_id)?;
        let mut file = lock(session.file()?);
        file.label(entry_id, label.filter(|label| !label.trim().is_empty())).map_err(session_error)?;
        file.flush().map_err(session_error)
    }

    /// Names the session.
    pub fn rename(&self, session_id: &str, name: &str) -> Result<(), HarnessError> {
        let session = self.session(session_id)?;
        let mut file = lock(session.file()?);
        file.set_name(name).map_err(session_error)?;
        file.flush().map_err(session_error)
    }

    /// Summarizes the older part of the conversation so that it fits the window again.
    pub async fn compact(&self, session_id: &str) -> Result<Compacted, HarnessError> {
        let (session, _claim) = self.claim(session_id)?;
        let model = session.agent.context().model;
        let file = session.file()?.clone();
        let compacted = compact_file(
            &file,
            self.options.provider.as_ref(),
            &model,
            self.options.compaction.keep_recent_tokens,
            &session.current_cancel(),
        )
        .await?;
        let context = lock(&file).context().map_err(session_error)?;
        session.agent.set_messages(context.messages).map_err(|_| HarnessError::Busy)?;
        Ok(compacted)
    }

    // ----- runs -----

    /// Sends a user message; the run goes on in the background. `Busy` if one is going.
    pub fn send(self: &Arc<Self>, session_id: &str, content: Vec<Content>) -> Result<RunStarted, HarnessError> {
        if content.iter().all(|block| matches!(block, Content::Text { text } if text.trim().is_empty())) {
            return Err(HarnessError::InvalidArgument("the message is empty".into()));
        }
        let session = self.session(session_id)?;
        let run_id = format!("r{}", self.next());
        {
            let mut running = lock(&session.running);
            if running.is_some() {
                return Err(HarnessError::Busy);
            }
            *running = Some(run_id.clone());
        }
        session.fresh_cancel();
        let (done_tx, done) = oneshot::channel();
        let emit = self.emitter(&session, &run_id);
        let message = Message::User(UserMessage { content, timestamp: now_ms() });
        let harness = self.clone();
        let task_session = session.clone();
        tokio::spawn(async move {
            // Cleared even if the run panics, so the session does not stay busy for ever.
            let _idle = IdleOnDrop(&task_session.running);
            if let Some(outcome) = harness.run_to_end(&task_session, message, emit).await {
                let _ = done_tx.send(outcome);
            }
        });
        Ok(RunStarted { session_id: session.id.clone(), run_id, done })
    }

    /// One run, and the one retry after a compaction when the provider says the context is too
    /// long. Afterwards the agent's messages are reloaded from the file, the source of truth.
    async fn run_to_end(
        &self,
        session: &LiveSession,
        message: Message,
        emit: reins_agent::EventSink,
    ) -> Option<RunOutcome> {
        if let Some(file) = &session.file
            && self.options.compaction.auto
        {
            self.compact_if_near_window(session, file, estimate_tokens(&message)).await;
            // Cancelled while compacting: the run ends before it starts.
            if session.current_cancel().is_cancelled() {
                let outcome = RunOutcome {
                    reason: TurnEndReason::Aborted,
                    messages: Vec::new(),
                    usage: Usage::default(),
                    error: None,
                };
                emit(AgentEvent::AgentEnd {
                    reason: outcome.reason,
                    messages: Vec::new(),
                    usage: Usage::default(),
                    error: None,
                });
                return Some(outcome);
            }
        }
        let mut outcome = session.agent.prompt(vec![message], emit.clone()).await.ok()?;
        if let Some(file) = &session.file {
            if overflowed(&outcome) {
                let model = session.agent.context().model;
                let compacted = compact_file(
                    file,
                    self.options.provider.as_ref(),
                    &model,
                    self.options.compaction.keep_recent_tokens,
                    &session.current_cancel(),
                )
                .await;
                match compacted.and_then(|_| lock(file).context().map_err(session_error)) {
                    Ok(context) => {
                        let _ = session.agent.set_messages(context.messages);
                        if let Ok(retried) = session.agent.prompt(Vec::new(), emit).await {
                            outcome = retried;
                        }
                    }
                    Err(err) => tracing::warn!("compaction after a context overflow failed: {err}"),
                }
            }
            match lock(file).context() {
                Ok(context) => {
                    let _ = session.agent.set_messages(context.messages);
                }
                Err(err) => tracing::error!("could not reload session {}: {err}", session.id),
            }
        }
        Some(outcome)
    }

    /// Compacts before a run whose prompt would bring the context near the window; a failure is
    /// logged and the run goes on uncompacted (the provider may still take it).
    async fn compact_if_near_window(&self, session: &LiveSession, file: &Mutex<SessionFile>, prompt_tokens: u64) {
        let context = session.agent.context();
        if !near_window(&context, prompt_tokens, self.options.compaction.reserve_tokens) {
            return;
        }
        let compacted = compact_file(
            file,
            self.options.provider.as_ref(),
            &context.model,
            self.options.compaction.keep_recent_tokens,
            &session.current_cancel(),
        )
        .await;
        match compacted.and_then(|_| lock(file).context().map_err(session_error)) {
            Ok(compacted) => {
                let _ = session.agent.set_messages(compacted.messages);
            }
            Err(err) => tracing::warn!("automatic compaction failed; going on without it: {err}"),
        }
    }

    /// Queues a message for the running run, delivered after its current tools finish.
    pub fn steer(&self, session_id: &str, text: String) -> Result<(), HarnessError> {
        let session = self.running_session(session_id, "steer")?;
        session.agent.steer(Message::user(text));
        Ok(())
    }

    /// Queues a message to continue with when the running run would stop.
    pub fn follow_up(&self, session_id: &str, text: String) -> Result<(), HarnessError> {
        let session = self.running_session(session_id, "follow up")?;
        session.agent.follow_up(Message::user(text));
        Ok(())
    }

    /// Cancels the running run, if any; true when there was one.
    pub fn cancel(&self, session_id: &str) -> Result<bool, HarnessError> {
        let session = self.session(session_id)?;
        let running = lock(&session.running).is_some();
        if running {
            session.agent.abort();
            lock(&session.cancel).cancel();
        }
        Ok(running)
    }

    /// The conversation so far, as the model sees it.
    pub fn messages(&self, session_id: &str) -> Result<Vec<Message>, HarnessError> {
        Ok(self.session(session_id)?.agent.messages())
    }

    /// Whether a run is going in the session.
    pub fn is_running(&self, session_id: &str) -> Result<bool, HarnessError> {
        Ok(lock(&self.session(session_id)?.running).is_some())
    }

    pub fn session_ids(&self) -> Vec<SessionId> {
        lock(&self.sessions).keys().cloned().collect()
    }

    /// Switches the model of a session; takes effect at its next turn and is recorded in the file
    /// (when it changes).
    pub fn set_model(&self, session_id: &str, model_id: &str) -> Result<Model, HarnessError> {
        if model_id.trim().is_empty() {
            return Err(HarnessError::InvalidArgument("the model id is empty".into()));
        }
        let session = self.session(session_id)?;
        let model = self.settings().resolve_model(Some(model_id));
        let current = session.agent.context().model;
        if (current.provider.as_str(), current.id.as_str()) == (model.provider.as_str(), model.id.as_str()) {
            // Nothing changes, and the file needs no entry saying so.
            session.agent.set_model(model.clone());
            return Ok(model);
        }
        if let Some(file) = &session.file {
            let mut file = lock(file);
            file.append(EntryKind::ModelChange { provider: model.provider.clone(), model_id: model.id.clone() })
                .and_then(|_| file.flush())
                .map_err(session_error)?;
        }
        session.agent.set_model(model.clone());
        Ok(model)
    }

    // ----- internals -----

    fn go_live_from_file(&self, mut file: SessionFile) -> SessionId {
        file.set_durability(Durability::Write);
        let context = file.context().unwrap_or_default();
        let settings = self.settings();
        let model = match &context.model {
            Some(recorded) => settings.resolve_recorded(&recorded.provider, &recorded.model_id),
            None => settings.resolve_model(None),
        };
        let id = file.id().to_string();
        self.go_live(id, Some(file), model, context.messages, context.active_tools)
    }

    /// `active_tools`: the tools the session recorded as offered (pi 1.6), where reins has them;
    /// `None` offers them all.
    fn go_live(
        &self,
        id: SessionId,
        file: Option<SessionFile>,
        model: Model,
        messages: Vec<Message>,
        active_tools: Option<Vec<String>>,
    ) -> SessionId {
        let file = file.map(|file| Arc::new(Mutex::new(file)));
        let cancel = Arc::new(Mutex::new(CancellationToken::new()));
        let running = Arc::new(Mutex::new(None));
        let gate = ApprovalGate {
            session_id: id.clone(),
            running: running.clone(),
            allowed: Arc::new(Mutex::new(HashSet::new())),
            settings: self.settings.clone(),
            approver: self.options.approver.clone(),
        };
        let agent = self.new_agent(model, messages, active_tools, gate, file.clone(), cancel.clone());
        let session = Arc::new(LiveSession { id: id.clone(), agent, file, running, cancel });
        lock(&self.sessions).insert(id.clone(), session);
        id
    }

    fn new_agent(
        &self,
        model: Model,
        messages: Vec<Message>,
        active_tools: Option<Vec<String>>,
        gate: ApprovalGate,
        file: Option<Arc<Mutex<SessionFile>>>,
        cancel: Arc<Mutex<CancellationToken>>,
    ) -> Agent {
        let workspace = &self.options.workspace;
        let settings = self.settings();
        let mut tools: Vec<Arc<dyn Tool>> = builtin_tools(workspace.clone(), settings.exec_policy(std::env::vars_os()));
        if let Some(active) = active_tools {
            tools.retain(|tool| active.iter().any(|name| *name == tool.spec().name));
        }
        let root = workspace.cwd();
        let inputs = PromptInputs::discover(
            &root,
            &root,
            &settings.config_dir,
            settings.is_trusted(&root),
            tools.iter().map(|tool| tool.spec()).collect(),
            self.options.date.clone(),
        );
        let context = AgentContext { system_prompt: build_system_prompt(&inputs), model, messages, tools };
        let hooks: Arc<dyn Hooks> = Arc::new(SessionHooks {
            gate,
            auto_compact: file.filter(|_| self.options.compaction.auto).map(|file| AutoCompact {
                file,
                provider: self.options.provider.clone(),
                settings: self.options.compaction.clone(),
                cancel,
            }),
        });
        Agent::new(context, self.options.provider.clone(), hooks, self.options.limits.clone())
    }

    /// The event sink of one run: records to the session file, then forwards.
    fn emitter(&self, session: &LiveSession, run_id: &str) -> reins_agent::EventSink {
        let sink = self.options.events.clone();
        let recorder = session.file.clone().map(SessionRecorder::new);
        let (session_id, run_id) = (session.id.clone(), run_id.to_string());
        Arc::new(move |event: AgentEvent| {
            if let Some(recorder) = &recorder {
                recorder.record(&event);
            }
            sink(HarnessEvent { session_id: session_id.clone(), run_id: run_id.clone(), event });
        })
    }

    fn session(&self, session_id: &str) -> Result<Arc<LiveSession>, HarnessError> {
        lock(&self.sessions).get(session_id).cloned().ok_or_else(|| {
            HarnessError::InvalidArgument(format!("no session {session_id:?} is open; open it or start a new one"))
        })
    }

    /// Marks an idle session busy for an operation that awaits the model (navigating with a
    /// summary, compacting), so that no run starts on the file meanwhile.
    fn claim(&self, session_id: &str) -> Result<(Arc<LiveSession>, Claim), HarnessError> {
        let session = self.session(session_id)?;
        {
            let mut running = lock(&session.running);
            if running.is_some() {
                return Err(HarnessError::Busy);
            }
            *running = Some("maintenance".to_string());
        }
        session.fresh_cancel();
        Ok((session.clone(), Claim(session)))
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

    fn has_path(&self, path: &std::path::Path) -> bool {
        self.file.as_ref().is_some_and(|file| lock(file).path() == path)
    }
}

/// Releases a [`Harness::claim`]: the session is idle again however the operation ended.
struct Claim(Arc<LiveSession>);

impl Drop for Claim {
    fn drop(&mut self) {
        *lock(&self.0.running) = None;
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

/// A poisoned lock only means another thread panicked mid-update; the data is still usable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use reins_ai::{AssistantMessage, EventSink, Request, StopReason};
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
        Harness::new(HarnessOptions {
            settings,
            workspace: Arc::new(FsWorkspace::new(vec![dir.to_path_buf()]).unwrap()),
            provider,
            approver: Arc::new(NoApprover),
            limits: Limits::default(),
            events: Arc::new(|_| {}),
            date: "2026-11-30".into(),
            persist: true,
            compaction: CompactionSettings { keep_recent_tokens, ..CompactionSettings::default() },
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
}
