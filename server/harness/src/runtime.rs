//! The harness runtime: live sessions, each an [`Agent`] with its tools, prompt and approval
//! gate, and the run queue rules (one run at a time per session; steer and follow up while it
//! goes). The LSP server and the CLI drive it the same way; it reports through one event sink.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use reins_agent::{Agent, AgentContext, AgentEvent, Hooks, Limits, RunOutcome, Tool};
use reins_ai::{Content, Message, Model, Provider, UserMessage, now_ms};
use reins_tools::{Workspace, builtin_tools};
use tokio::sync::oneshot;

use crate::approval::{ApprovalGate, ApprovalPolicy, Approver};
use crate::error::HarnessError;
use crate::prompt::{PromptInputs, build_system_prompt};
use crate::settings::Settings;

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

/// What a harness is built from.
pub struct HarnessOptions {
    pub settings: Settings,
    pub workspace: Arc<dyn Workspace>,
    pub provider: Arc<dyn Provider>,
    pub approver: Arc<dyn Approver>,
    pub policy: ApprovalPolicy,
    pub limits: Limits,
    /// Where every session's events go.
    pub events: HarnessEventSink,
    /// `YYYY-MM-DD`, for the system prompt.
    pub date: String,
}

/// A run that has started: its id, and its outcome when it ends.
pub struct RunStarted {
    pub session_id: SessionId,
    pub run_id: RunId,
    pub done: oneshot::Receiver<RunOutcome>,
}

pub struct Harness {
    options: HarnessOptions,
    sessions: Mutex<HashMap<SessionId, Arc<LiveSession>>>,
    counter: AtomicU64,
}

struct LiveSession {
    id: SessionId,
    agent: Agent,
    /// The run in progress. Set before the run is spawned, so a second send fails at once.
    running: Mutex<Option<RunId>>,
}

impl Harness {
    pub fn new(options: HarnessOptions) -> Arc<Self> {
        Arc::new(Self { options, sessions: Mutex::new(HashMap::new()), counter: AtomicU64::new(0) })
    }

    pub fn settings(&self) -> &Settings {
        &self.options.settings
    }

    /// Starts a new, empty session with the configured model.
    pub fn new_session(&self, _name: Option<String>) -> Result<SessionId, HarnessError> {
        let id = format!("s{}-{:x}", self.next(), now_ms());
        let model = self.options.settings.resolve_model(None);
        let agent = self.new_agent(model, Vec::new());
        let session = Arc::new(LiveSession { id: id.clone(), agent, running: Mutex::new(None) });
        lock(&self.sessions).insert(id.clone(), session);
        Ok(id)
    }

    /// Sends a user message; the run goes on in the background. `Busy` if one is going.
    pub fn send(self: &Arc<Self>, session_id: &str, content: Vec<Content>) -> Result<RunStarted, HarnessError> {
        if content.is_empty() {
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
        let (done_tx, done) = oneshot::channel();
        let sink = self.options.events.clone();
        let (sid, rid) = (session.id.clone(), run_id.clone());
        let emit: reins_agent::EventSink = Arc::new(move |event| {
            sink(HarnessEvent { session_id: sid.clone(), run_id: rid.clone(), event });
        });
        let message = Message::User(UserMessage { content, timestamp: now_ms() });
        let task_session = session.clone();
        tokio::spawn(async move {
            let outcome = task_session.agent.prompt(vec![message], emit).await;
            *lock(&task_session.running) = None;
            if let Ok(outcome) = outcome {
                let _ = done_tx.send(outcome);
            }
        });
        Ok(RunStarted { session_id: session.id.clone(), run_id, done })
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
        }
        Ok(running)
    }

    /// The conversation so far, as the model sees it.
    pub fn messages(&self, session_id: &str) -> Result<Vec<Message>, HarnessError> {
        Ok(self.session(session_id)?.agent.messages())
    }

    pub fn session_ids(&self) -> Vec<SessionId> {
        lock(&self.sessions).keys().cloned().collect()
    }

    /// Switches the model of a session; takes effect at its next turn.
    pub fn set_model(&self, session_id: &str, model_id: &str) -> Result<Model, HarnessError> {
        if model_id.trim().is_empty() {
            return Err(HarnessError::InvalidArgument("the model id is empty".into()));
        }
        let model = self.options.settings.resolve_model(Some(model_id));
        self.session(session_id)?.agent.set_model(model.clone());
        Ok(model)
    }

    fn new_agent(&self, model: Model, messages: Vec<Message>) -> Agent {
        let workspace = &self.options.workspace;
        let tools: Vec<Arc<dyn Tool>> = builtin_tools(workspace.clone());
        let root = workspace.cwd();
        let inputs = PromptInputs::discover(
            &root,
            &root,
            &self.options.settings.config_dir,
            self.options.settings.is_trusted(&root),
            tools.iter().map(|tool| tool.spec()).collect(),
            self.options.date.clone(),
        );
        let context = AgentContext { system_prompt: build_system_prompt(&inputs), model, messages, tools };
        let hooks: Arc<dyn Hooks> =
            Arc::new(ApprovalGate { policy: self.options.policy.clone(), approver: self.options.approver.clone() });
        Agent::new(context, self.options.provider.clone(), hooks, self.options.limits.clone())
    }

    fn session(&self, session_id: &str) -> Result<Arc<LiveSession>, HarnessError> {
        lock(&self.sessions)
            .get(session_id)
            .cloned()
            .ok_or_else(|| HarnessError::InvalidArgument(format!("no session {session_id:?} is open")))
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

    fn next(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// A poisoned lock only means another thread panicked mid-update; the data is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
