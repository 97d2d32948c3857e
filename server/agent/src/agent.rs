//! `Agent`: the stateful handle the harness drives. It owns a context, runs one prompt at a time
//! through [`run`](crate::run), and queues the steering and follow-up messages a user sends while
//! a run is going.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use reins_ai::{Message, Model, Provider, ThinkingLevel, ToolCall, ToolResultMessage};
use tokio_util::sync::CancellationToken;

use crate::context::{AgentContext, Limits};
use crate::event::EventSink;
use crate::hooks::{Gate, Hooks};
use crate::lock::lock;
use crate::run::{RunOutcome, run};
use crate::tool::{Proposal, Tool};

/// A handle on one conversation. Cheap to clone; clones share the same state.
#[derive(Clone)]
pub struct Agent {
    shared: Arc<Shared>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error("a run is already in progress; wait for it to end, steer it, or abort it")]
    Busy,
}

struct Shared {
    provider: Arc<dyn Provider>,
    hooks: Arc<dyn Hooks>,
    state: Mutex<State>,
    queues: Queues,
}

struct State {
    context: AgentContext,
    limits: Limits,
    /// The running run's number and cancel token.
    running: Option<(u64, CancellationToken)>,
    runs_started: u64,
}

#[derive(Default)]
struct Queues {
    steering: Mutex<Vec<Message>>,
    follow_up: Mutex<Vec<Message>>,
}

/// The harness's hooks with the agent's queues added to their steering and follow-up messages.
struct QueuedHooks<'a> {
    inner: &'a dyn Hooks,
    queues: &'a Queues,
}

/// Marks the run as over even if the `prompt` future is dropped midway.
struct RunningGuard<'a> {
    shared: &'a Shared,
    run: u64,
}

impl AgentError {
    /// A stable code clients switch on.
    pub fn code(&self) -> &'static str {
        match self {
            AgentError::Busy => "busy",
        }
    }
}

impl Agent {
    pub fn new(context: AgentContext, provider: Arc<dyn Provider>, hooks: Arc<dyn Hooks>, limits: Limits) -> Self {
        let state = State { context, limits, running: None, runs_started: 0 };
        let shared = Shared { provider, hooks, state: Mutex::new(state), queues: Queues::default() };
        Self { shared: Arc::new(shared) }
    }

    /// Runs `messages` to the end of the run and appends what the run added to the context.
    /// Fails at once with `Busy` if a run is going; prompts are not queued. Dropping the future
    /// midway ends the run without adding its messages to the context; use [`Agent::abort`] to
    /// stop a run and keep what it did.
    pub async fn prompt(&self, messages: Vec<Message>, emit: EventSink) -> Result<RunOutcome, AgentError> {
        let (context, limits, cancel, guard) = {
            let mut state = lock(&self.shared.state);
            if state.running.is_some() {
                return Err(AgentError::Busy);
            }
            state.runs_started += 1;
            let cancel = CancellationToken::new();
            state.running = Some((state.runs_started, cancel.clone()));
            let guard = RunningGuard { shared: &self.shared, run: state.runs_started };
            (state.context.clone(), state.limits.clone(), cancel, guard)
        };
        let hooks = QueuedHooks { inner: self.shared.hooks.as_ref(), queues: &self.shared.queues };
        let outcome = run(context, messages, self.shared.provider.as_ref(), &hooks, &limits, &emit, cancel).await;
        lock(&self.shared.state).context.messages.extend(outcome.messages.iter().cloned().map(Arc::new));
        drop(guard);
        Ok(outcome)
    }

    /// Queues a message for the running run: it is delivered after the current tool calls finish,
    /// before the next model call. When idle, it goes with the next prompt.
    pub fn steer(&self, message: Message) {
        lock(&self.shared.queues.steering).push(message);
    }

    /// Queues a message to continue with when the run would otherwise end.
    pub fn follow_up(&self, message: Message) {
        lock(&self.shared.queues.follow_up).push(message);
    }

    /// Cancels the running run, if any; it ends with reason `aborted`.
    pub fn abort(&self) {
        if let Some((_, cancel)) = &lock(&self.shared.state).running {
            cancel.cancel();
        }
    }

    pub fn is_running(&self) -> bool {
        lock(&self.shared.state).running.is_some()
    }

    /// The conversation so far (without the messages of a run still going).
    pub fn messages(&self) -> Vec<Message> {
        lock(&self.shared.state).context.messages.iter().map(|message| Message::clone(message)).collect()
    }

    /// Replaces the conversation (to resume a session or move to another branch). Refused while
    /// a run is going.
    pub fn set_messages(&self, messages: Vec<Message>) -> Result<(), AgentError> {
        let mut state = lock(&self.shared.state);
        if state.running.is_some() {
            return Err(AgentError::Busy);
        }
        state.context.messages = messages.into_iter().map(Arc::new).collect();
        Ok(())
    }

    /// Takes effect at the next run; a running run keeps the model it started with (its
    /// `prepare_next_turn` hook may change it between turns).
    pub fn set_model(&self, model: Model) {
        lock(&self.shared.state).context.model = model;
    }

    /// Takes effect at the next run.
    pub fn set_thinking(&self, thinking: Option<ThinkingLevel>) {
        lock(&self.shared.state).context.thinking = thinking;
    }

    /// Takes effect at the next run.
    pub fn set_limits(&self, limits: Limits) {
        lock(&self.shared.state).limits = limits;
    }

    /// Takes effect at the next run.
    pub fn set_system_prompt(&self, system_prompt: String) {
        lock(&self.shared.state).context.system_prompt = system_prompt;
    }

    /// Takes effect at the next run.
    pub fn set_tools(&self, tools: Vec<Arc<dyn Tool>>) {
        lock(&self.shared.state).context.tools = tools;
    }

    pub fn context(&self) -> AgentContext {
        lock(&self.shared.state).context.clone()
    }

    /// The model of the next run, without copying the conversation as [`Agent::context`] does
    /// (a long session's may hold a million messages).
    pub fn model(&self) -> Model {
        lock(&self.shared.state).context.model.clone()
    }

    /// Reads the context in place, without copying it.
    pub fn with_context<R>(&self, read: impl FnOnce(&AgentContext) -> R) -> R {
        read(&lock(&self.shared.state).context)
    }
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.shared.state);
        if state.running.as_ref().is_some_and(|(run, _)| *run == self.run) {
            state.running = None;
        }
    }
}

#[async_trait]
impl Hooks for QueuedHooks<'_> {
    async fn transform_context(&self, messages: &[Arc<Message>]) -> Option<Vec<Message>> {
        self.inner.transform_context(messages).await
    }
    async fn before_tool_call(&self, call: &ToolCall, proposal: Option<&Proposal>, cancel: &CancellationToken) -> Gate {
        self.inner.before_tool_call(call, proposal, cancel).await
    }
    async fn before_tool_calls(&self, turn: u32, calls: &[ToolCall]) {
        self.inner.before_tool_calls(turn, calls).await
    }
    async fn after_tool_call(&self, call: &ToolCall, result: &mut ToolResultMessage) {
        self.inner.after_tool_call(call, result).await
    }
    async fn prepare_next_turn(&self, context: &mut AgentContext) {
        self.inner.prepare_next_turn(context).await
    }
    fn steering_messages(&self) -> Vec<Message> {
        let mut messages = self.inner.steering_messages();
        messages.append(&mut lock(&self.queues.steering));
        messages
    }
    fn follow_up_messages(&self) -> Vec<Message> {
        let mut messages = self.inner.follow_up_messages();
        messages.append(&mut lock(&self.queues.follow_up));
        messages
    }
}
