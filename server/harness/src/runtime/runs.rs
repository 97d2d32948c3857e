//! The run side of the harness: one run at a time per session, sent in the background, steered
//! and followed up while it goes, cancelled; compaction before a run near the window and once
//! after a provider says the context is too long.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use reins_agent::{AgentEvent, RunOutcome, SharedBudget, TurnEndReason};
use reins_ai::{Content, Message, Usage, UserMessage, now_ms};
use reins_session::{SessionFile, estimate_tokens};
use tokio::sync::oneshot;

use super::{Harness, IdleOnDrop, LiveSession, RunStarted, agent_context, lock};
use crate::compaction::{compact_and_reload, near_window, overflowed};
use crate::error::HarnessError;
use crate::hooks::HookRunner;
use reins_settings::CompactionSettings;
use reins_settings::Settings;

impl Harness {
    /// Sends a user message; the run goes on in the background. `Busy` if one is going.
    /// A message that starts with a template or skill command (`/review`, `/skill:name`) is
    /// expanded first; a built-in command is refused (see [`Harness::execute`]).
    pub fn send(self: &Arc<Self>, session_id: &str, mut content: Vec<Content>) -> Result<RunStarted, HarnessError> {
        if content.iter().all(|block| matches!(block, Content::Text { text } if text.trim().is_empty())) {
            return Err(HarnessError::InvalidArgument("the message is empty".into()));
        }
        self.expand_message(session_id, &mut content)?;
        self.send_later(session_id, Box::pin(std::future::ready(content)))
    }

    /// Like [`Harness::send`], for a message whose content is still being gathered (the editor's
    /// diagnostics around an asked-about selection): the run is started — and the session busy —
    /// at once, and the message goes to the model once `content` is ready. Cancelling meanwhile
    /// ends the run before it begins.
    pub fn send_later(self: &Arc<Self>, session_id: &str, content: LateContent) -> Result<RunStarted, HarnessError> {
        let session = self.session(session_id)?;
        let run_id = format!("r{}", self.next());
        let hold = session.begin(run_id.clone())?;
        session.fresh_cancel();
        let (done_tx, done) = oneshot::channel();
        let emitter = self.emitter(&session, &run_id);
        let harness = self.clone();
        let task_session = session.clone();
        tokio::spawn(async move {
            let outcome = {
                // Cleared even if the run panics, so the session does not stay busy for ever.
                let _idle = IdleOnDrop(&task_session.running);
                let _hold = hold;
                let cancel = task_session.current_cancel();
                let content = tokio::select! {
                    content = content => Some(content),
                    () = cancel.cancelled() => None,
                };
                match content {
                    Some(content) => {
                        let message = Message::User(UserMessage { content, timestamp: now_ms() });
                        harness.run_to_end(&task_session, message, emitter.emit.clone()).await
                    }
                    None => Some(aborted_before_start(&emitter.emit)),
                }
            };
            emitter.finish();
            drop(task_session);
            // The session is idle now: it may be the one too many kept open.
            harness.release_idle();
            if let Some(outcome) = outcome {
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
        // The settings in force when the run starts hold for all of it (the approval policy and
        // automatic compaction between turns read them again as they go).
        let settings = self.settings();
        session.agent.set_limits(self.limits_for(session, &settings));
        // The tool set in force, and the MCP servers' tools as they are now (waiting for servers
        // still starting).
        self.refresh_tools(session);
        let model = session.agent.model();
        session.agent.set_tools(session.toolbox.current(&model).await);
        if let Some(note) = session.apply_thinking(&settings, &session.agent.model()) {
            (self.options.warn)(&note);
        }
        if let Some(file) = &session.file
            && settings.compaction.auto
        {
            self.compact_if_near_window(session, file, &settings.compaction, estimate_tokens(&message)).await;
            // Cancelled while compacting: the run ends before it starts.
            if session.current_cancel().is_cancelled() {
                return Some(aborted_before_start(&emit));
            }
        }
        let mut outcome = session.agent.prompt(vec![message], emit.clone()).await.ok()?;
        if let Some(file) = &session.file {
            if overflowed(&outcome) {
                let model = session.agent.model();
                let settings = self.settings().compaction.clone();
                let cancel = session.current_cancel();
                match compact_and_reload(file, self.provider.as_ref(), &model, &settings, &cancel).await {
                    Ok((_, messages)) => {
                        let _ = session.agent.set_messages(messages);
                        // The budget left after what the first attempt and the compaction spent.
                        session.agent.set_limits(self.limits_for(session, &self.settings()));
                        if let Ok(retried) = session.agent.prompt(Vec::new(), emit).await {
                            outcome = retried;
                        }
                    }
                    Err(err) => tracing::warn!("compaction after a context overflow failed: {err}"),
                }
            }
            let context = agent_context(&lock(file), &session.agent.model());
            let _ = session.agent.set_messages(context.messages);
        }
        let hooks = HookRunner {
            settings: self.settings.clone(),
            workspace: self.options.workspace.clone(),
            session_id: session.id.clone(),
        };
        hooks.run_end(&snake_case(&format!("{:?}", outcome.reason))).await;
        Some(outcome)
    }

    /// The loop's limits for the next run of `session`: the settings', with what the session's
    /// budget has left.
    fn limits_for(&self, session: &LiveSession, settings: &Settings) -> reins_agent::Limits {
        let mut limits = settings.limits();
        limits.max_cost_usd = settings.max_cost_usd.map(|max| max - session.spent());
        // A subagent pays from its parent's run's budget, dollars and turns; a session's own run
        // opens one that its subagents will pay from (turns only, without a cost limit).
        let inherited = lock(&session.spawn).as_ref().map(|spawn| spawn.budget.clone());
        let budget = match inherited {
            Some(budget) => budget,
            None => Some(Arc::new(SharedBudget::new(limits.max_cost_usd.unwrap_or(f64::INFINITY)))),
        };
        *lock(&session.budget) = budget.clone();
        limits.shared_budget = budget;
        limits
    }

    /// Compacts before a run whose prompt would bring the context near the window; a failure is
    /// logged and the run goes on uncompacted (the provider may still take it).
    async fn compact_if_near_window(
        &self,
        session: &LiveSession,
        file: &Mutex<SessionFile>,
        settings: &CompactionSettings,
        prompt_tokens: u64,
    ) {
        // Read in place: the conversation may be far longer than the window.
        let near = session.agent.with_context(|context| {
            let message_tokens = context.messages.iter().map(|message| estimate_tokens(message)).sum();
            near_window(context, message_tokens, prompt_tokens, settings.reserve_tokens)
        });
        if !near {
            return;
        }
        let model = session.agent.model();
        let cancel = session.current_cancel();
        match compact_and_reload(file, self.provider.as_ref(), &model, settings, &cancel).await {
            Ok((_, messages)) => {
                let _ = session.agent.set_messages(messages);
            }
            Err(err) => tracing::warn!("automatic compaction failed; going on without it: {err}"),
        }
    }

    /// Queues a message for the running run, delivered after its current tools finish.
    pub fn steer(&self, session_id: &str, text: String) -> Result<(), HarnessError> {
        let session = self.running_session(session_id, "steer")?;
        session.agent.steer(Message::user(self.expand_queued(text)?));
        Ok(())
    }

    /// Queues a message to continue with when the running run would stop.
    pub fn follow_up(&self, session_id: &str, text: String) -> Result<(), HarnessError> {
        let session = self.running_session(session_id, "follow up")?;
        session.agent.follow_up(Message::user(self.expand_queued(text)?));
        Ok(())
    }

    /// Cancels the running run, if any; true when there was one.
    pub fn cancel(&self, session_id: &str) -> Result<bool, HarnessError> {
        let Some(session) = self.live(session_id) else { return self.released_or_unknown(session_id) };
        let running = lock(&session.running).is_some();
        if running {
            session.agent.abort();
            lock(&session.cancel).cancel();
        }
        Ok(running)
    }

    /// Whether a run is going in the session.
    pub fn is_running(&self, session_id: &str) -> Result<bool, HarnessError> {
        match self.live(session_id) {
            Some(session) => Ok(lock(&session.running).is_some()),
            None => self.released_or_unknown(session_id),
        }
    }

    /// `false` (nothing runs) for a released session, the error of an unknown one.
    fn released_or_unknown(&self, session_id: &str) -> Result<bool, HarnessError> {
        if lock(&self.released).contains_key(session_id) {
            return Ok(false);
        }
        self.session(session_id).map(|session| lock(&session.running).is_some())
    }
}

/// `FinalAnswer` → `final_answer`, as the protocols name a run's end.
fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The content of a message still being gathered (see [`Harness::send_later`]).
pub type LateContent = Pin<Box<dyn Future<Output = Vec<Content>> + Send>>;

/// The outcome of a run cancelled before its first model call, announced with its `agent_end`.
fn aborted_before_start(emit: &reins_agent::EventSink) -> RunOutcome {
    let outcome =
        RunOutcome { reason: TurnEndReason::Aborted, messages: Vec::new(), usage: Usage::default(), error: None };
    emit(AgentEvent::AgentEnd { reason: outcome.reason, messages: Vec::new(), usage: Usage::default(), error: None });
    outcome
}
