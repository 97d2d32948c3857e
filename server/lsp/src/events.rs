//! Agent events on their way to the editor: `reins/event` notifications (text deltas coalesced
//! per run, a sequence number per connection), `$/progress` per run, and `window/showMessage`
//! when a run fails.
//!
//! One task owns all of it, fed by an unbounded channel from the harness's synchronous event
//! sink, so the agent loop never waits for the editor and notifications leave in event order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reins_agent::{AgentEvent, TurnEndReason};
use reins_ai::{Content, Message, StreamEvent, Usage};
use reins_harness::{HarnessEvent, HarnessEventSink, LiveSettings, Parent, REFUSAL_STOP, budget_stop};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::{Notification, Progress};
use tower_lsp_server::ls_types::{
    Diagnostic, MessageType, NumberOrString, ProgressParams, ProgressParamsValue, Uri, WorkDoneProgress,
    WorkDoneProgressBegin, WorkDoneProgressEnd, WorkDoneProgressReport,
};

use crate::to_proto;

/// At most this many text-delta notifications a second per run (one per interval).
const DELTA_INTERVAL: Duration = Duration::from_millis(33);
/// How long the editor has to answer `window/workDoneProgress/create`.
const PROGRESS_CREATE_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest prompt shown as a progress message.
const PROGRESS_PROMPT_CHARS: usize = 80;

/// The `reins/event` notification.
pub enum ReinsEvent {}

impl Notification for ReinsEvent {
    type Params = Value;
    const METHOD: &'static str = "reins/event";
}

/// What the event task receives.
pub enum Input {
    Event(Box<HarnessEvent>),
    /// A run's task finished; `clean` is false when it ended without an outcome (a panic).
    RunFinished {
        session_id: String,
        run_id: String,
        clean: bool,
    },
    /// An event of the edit review (`edit_proposed`, `edit_resolved`), sent in order with the
    /// run's agent events.
    Review {
        session_id: String,
        run_id: String,
        event: Value,
    },
    /// The review diagnostics of one document (empty clears them).
    Diagnostics {
        uri: Uri,
        diagnostics: Vec<Diagnostic>,
        version: Option<i32>,
    },
}

/// The sending side of the event task.
#[derive(Clone)]
pub struct Events {
    tx: mpsc::UnboundedSender<Input>,
    /// The client shows a run's failure in a chat of its own (see [`Events::initialize`]).
    chat: Arc<AtomicBool>,
}

type RunKey = (String, String);

#[derive(Clone, Copy, PartialEq, Eq)]
enum DeltaKind {
    Text,
    Thinking,
}

/// Deltas held back to be sent as one notification.
struct PendingDelta {
    kind: DeltaKind,
    index: usize,
    text: String,
    due: Instant,
}

enum ProgressStep {
    Begin(String),
    Report(String),
    End(String),
}

struct Pump {
    client: Client,
    /// The harness's settings in force, read for what a failure message says to do.
    settings: LiveSettings,
    work_done_progress: Arc<AtomicBool>,
    chat: Arc<AtomicBool>,
    seq: u64,
    pending: HashMap<RunKey, PendingDelta>,
    last_delta_sent: HashMap<RunKey, Instant>,
    progress: HashMap<RunKey, mpsc::UnboundedSender<ProgressStep>>,
    begun: HashSet<RunKey>,
    ended: HashSet<RunKey>,
    /// Where the runs of subagents at work were spawned (their events name it).
    parents: HashMap<RunKey, Parent>,
}

impl Events {
    /// Starts the event task. `work_done_progress` says whether the client takes `$/progress`
    /// (known after `initialize`).
    pub fn start(client: Client, settings: LiveSettings, work_done_progress: Arc<AtomicBool>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let chat = Arc::new(AtomicBool::new(false));
        let pump = Pump {
            client,
            settings,
            work_done_progress,
            chat: chat.clone(),
            seq: 0,
            pending: HashMap::new(),
            last_delta_sent: HashMap::new(),
            progress: HashMap::new(),
            begun: HashSet::new(),
            ended: HashSet::new(),
            parents: HashMap::new(),
        };
        tokio::spawn(pump.run(rx));
        Self { tx, chat }
    }

    /// What the client said at `initialize`: `capabilities.chat` in its `initializationOptions`
    /// (or in their `reins` section) says it shows a failed run's `agent_end` error in a chat, so
    /// a `window/showMessage` would say it a second time (in Neovim, behind a hit-enter prompt).
    pub fn initialize(&self, options: &Value) {
        let said = |options: &Value| options.pointer("/capabilities/chat").and_then(Value::as_bool);
        let chat = said(options).or_else(|| options.get("reins").and_then(said)).unwrap_or(false);
        self.chat.store(chat, Ordering::Relaxed);
    }

    /// The harness's event sink: never blocks.
    pub fn sink(&self) -> HarnessEventSink {
        let tx = self.tx.clone();
        Arc::new(move |event| {
            // A closed channel means the server is shutting down; nobody is listening.
            let _ = tx.send(Input::Event(Box::new(event)));
        })
    }

    pub fn run_finished(&self, session_id: String, run_id: String, clean: bool) {
        let _ = self.tx.send(Input::RunFinished { session_id, run_id, clean });
    }

    pub fn review(&self, session_id: String, run_id: String, event: Value) {
        let _ = self.tx.send(Input::Review { session_id, run_id, event });
    }

    pub fn diagnostics(&self, uri: Uri, diagnostics: Vec<Diagnostic>, version: Option<i32>) {
        let _ = self.tx.send(Input::Diagnostics { uri, diagnostics, version });
    }
}

impl Pump {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Input>) {
        loop {
            let next_due = self.pending.values().map(|pending| pending.due).min();
            tokio::select! {
                input = rx.recv() => match input {
                    Some(Input::Event(event)) => self.event(*event).await,
                    Some(Input::RunFinished { session_id, run_id, clean }) => {
                        self.run_finished((session_id, run_id), clean).await;
                    }
                    Some(Input::Review { session_id, run_id, event }) => {
                        let key = (session_id, run_id);
                        self.flush(&key).await;
                        self.send_value(&key, event).await;
                    }
                    Some(Input::Diagnostics { uri, diagnostics, version }) => {
                        self.client.publish_diagnostics(uri, diagnostics, version).await;
                    }
                    None => break,
                },
                () = sleep_until(next_due), if next_due.is_some() => self.flush_due().await,
            }
        }
        let keys: Vec<RunKey> = self.pending.keys().cloned().collect();
        for key in keys {
            self.flush(&key).await;
        }
    }

    async fn event(&mut self, event: HarnessEvent) {
        let key = (event.session_id, event.run_id);
        if let Some(parent) = event.parent {
            self.parents.insert(key.clone(), parent);
        }
        if let AgentEvent::MessageUpdate { delta } = &event.event
            && let Some((kind, index, text)) = mergeable(delta)
        {
            if let Some(pending) = self.pending.get_mut(&key)
                && pending.kind == kind
                && pending.index == index
            {
                pending.text.push_str(text);
                return;
            }
            self.flush(&key).await;
            let now = Instant::now();
            let due = self.last_delta_sent.get(&key).map_or(now, |sent| (*sent + DELTA_INTERVAL).max(now));
            self.pending.insert(key, PendingDelta { kind, index, text: text.to_string(), due });
            return;
        }
        self.flush(&key).await;
        self.progress_for(&key, &event.event).await;
        if let AgentEvent::AgentEnd { reason, messages, usage, error } = &event.event {
            self.ended.insert(key.clone());
            self.last_delta_sent.remove(&key);
            if *reason == TurnEndReason::Error {
                // A provider failure: the client shows what to do, not only what failed.
                let error = Some(self.outcome(*reason, messages, error.as_deref()));
                let end =
                    AgentEvent::AgentEnd { reason: *reason, messages: messages.clone(), usage: usage.clone(), error };
                return self.send(&key, &end).await;
            }
        }
        self.send(&key, &event.event).await;
    }

    async fn flush_due(&mut self) {
        let now = Instant::now();
        let due: Vec<RunKey> =
            self.pending.iter().filter(|(_, pending)| pending.due <= now).map(|(key, _)| key.clone()).collect();
        for key in due {
            self.flush(&key).await;
        }
    }

    async fn flush(&mut self, key: &RunKey) {
        let Some(pending) = self.pending.remove(key) else { return };
        let delta = match pending.kind {
            DeltaKind::Text => StreamEvent::Text { index: pending.index, delta: pending.text },
            DeltaKind::Thinking => StreamEvent::Thinking { index: pending.index, delta: pending.text },
        };
        self.last_delta_sent.insert(key.clone(), Instant::now());
        self.send(key, &AgentEvent::MessageUpdate { delta }).await;
    }

    async fn send(&mut self, key: &RunKey, event: &AgentEvent) {
        self.send_value(key, to_proto::to_value(&to_proto::agent_event(event))).await;
        if matches!(event, AgentEvent::AgentEnd { .. }) {
            self.parents.remove(key);
        }
    }

    async fn send_value(&mut self, key: &RunKey, event: Value) {
        self.seq += 1;
        let params = to_proto::event_params(&key.0, &key.1, self.seq, event);
        let params = to_proto::with_parent(params, self.parents.get(key));
        self.client.send_notification::<ReinsEvent>(params).await;
    }

    /// `$/progress` and `window/showMessage` for the events that matter to a person.
    async fn progress_for(&mut self, key: &RunKey, event: &AgentEvent) {
        match event {
            AgentEvent::AgentStart if self.work_done_progress.load(Ordering::Relaxed) => {
                let (tx, rx) = mpsc::unbounded_channel();
                self.progress.insert(key.clone(), tx);
                tokio::spawn(report_progress(self.client.clone(), format!("reins/run/{}", key.1), rx));
            }
            AgentEvent::MessageStart { message: Message::User(user) } if self.begun.insert(key.clone()) => {
                let prompt = user.content.iter().find_map(|content| match content {
                    Content::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                });
                self.step(key, ProgressStep::Begin(progress_line(prompt.unwrap_or("working"))));
            }
            AgentEvent::MessageUpdate { delta: StreamEvent::Retry { attempt, max_retries, delay_ms, reason } } => {
                let line =
                    format!("{reason}; retrying ({attempt}/{max_retries}) in {:.1} s…", *delay_ms as f64 / 1000.0);
                self.step(key, ProgressStep::Report(progress_line(&line)));
            }
            AgentEvent::ToolExecutionStart { look, .. } => {
                self.step(key, ProgressStep::Report(progress_line(&look.title)));
            }
            AgentEvent::AgentEnd { reason, messages, error, .. } => {
                let outcome = self.outcome(*reason, messages, error.as_deref());
                self.step(key, ProgressStep::End(outcome.clone()));
                self.progress.remove(key);
                self.begun.remove(key);
                let shown_in_chat = self.chat.load(Ordering::Relaxed);
                if !shown_in_chat && !matches!(reason, TurnEndReason::FinalAnswer | TurnEndReason::Aborted) {
                    self.client.show_message(MessageType::ERROR, format!("reins: {outcome}")).await;
                }
            }
            _ => {}
        }
    }

    fn step(&self, key: &RunKey, step: ProgressStep) {
        if let Some(tx) = self.progress.get(key) {
            let _ = tx.send(step);
        }
    }

    /// One line saying how a run ended, with what the user can do about a failure.
    fn outcome(&self, reason: TurnEndReason, messages: &[Message], error: Option<&str>) -> String {
        match reason {
            TurnEndReason::FinalAnswer => "done".to_string(),
            TurnEndReason::Aborted => "cancelled".to_string(),
            TurnEndReason::MaxTurns => "stopped: the run reached its turn limit".to_string(),
            TurnEndReason::RepeatedAction => "stopped: the model repeated the same tool call".to_string(),
            TurnEndReason::Deadline => "stopped: the run's time limit passed".to_string(),
            TurnEndReason::Budget => budget_stop(error),
            TurnEndReason::Refusal => REFUSAL_STOP.to_string(),
            TurnEndReason::ToolObservations => "stopped after tool results without a final answer".to_string(),
            TurnEndReason::Error => self.settings.get().run_failure(messages, error),
        }
    }

    /// A run's task ended. Without an `agent_end` (the run panicked), the client still gets one,
    /// so its UI does not wait forever, and the user is told.
    async fn run_finished(&mut self, key: RunKey, clean: bool) {
        if self.ended.remove(&key) {
            return;
        }
        self.flush(&key).await;
        let message = if clean {
            "the run ended without reporting an outcome".to_string()
        } else {
            "the run stopped unexpectedly (an internal error; see the server log)".to_string()
        };
        tracing::error!("session {} run {}: {message}", key.0, key.1);
        let end = AgentEvent::AgentEnd {
            reason: TurnEndReason::Error,
            messages: Vec::new(),
            usage: Usage::default(),
            error: Some(message.clone()),
        };
        self.progress_for(&key, &end).await;
        self.ended.remove(&key);
        self.send(&key, &end).await;
    }
}

/// Text and thinking deltas merge; tool-call deltas carry ids and go as they come.
fn mergeable(delta: &StreamEvent) -> Option<(DeltaKind, usize, &str)> {
    match delta {
        StreamEvent::Text { index, delta } => Some((DeltaKind::Text, *index, delta)),
        StreamEvent::Thinking { index, delta } => Some((DeltaKind::Thinking, *index, delta)),
        StreamEvent::ToolCall { .. } | StreamEvent::Retry { .. } => None,
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// Creates the progress token (in this task, never in a handler), then reports the run's steps.
/// If the client refuses or does not answer, the steps are dropped: progress is a courtesy.
async fn report_progress(client: Client, token: String, mut steps: mpsc::UnboundedReceiver<ProgressStep>) {
    let token = NumberOrString::String(token);
    match tokio::time::timeout(PROGRESS_CREATE_TIMEOUT, client.create_work_done_progress(token.clone())).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => return tracing::debug!("the client refused a progress token: {}", err.message),
        Err(_) => return tracing::debug!("the client did not answer window/workDoneProgress/create"),
    }
    let mut begun = false;
    while let Some(step) = steps.recv().await {
        let value = match step {
            ProgressStep::Begin(message) => {
                begun = true;
                begin(&message)
            }
            ProgressStep::Report(message) if begun => WorkDoneProgress::Report(WorkDoneProgressReport {
                cancellable: Some(false),
                message: Some(message),
                percentage: None,
            }),
            ProgressStep::Report(_) => continue,
            ProgressStep::End(message) => {
                if !begun {
                    send_progress(&client, &token, begin("reins")).await;
                }
                send_progress(&client, &token, WorkDoneProgress::End(WorkDoneProgressEnd { message: Some(message) }))
                    .await;
                return;
            }
        };
        send_progress(&client, &token, value).await;
    }
}

fn begin(message: &str) -> WorkDoneProgress {
    WorkDoneProgress::Begin(WorkDoneProgressBegin {
        title: "reins".to_string(),
        cancellable: Some(false),
        message: Some(message.to_string()),
        percentage: None,
    })
}

async fn send_progress(client: &Client, token: &NumberOrString, value: WorkDoneProgress) {
    let params = ProgressParams { token: token.clone(), value: ProgressParamsValue::WorkDone(value) };
    client.send_notification::<Progress>(params).await;
}

/// The first line of `text`, cut to a progress message's length.
fn progress_line(text: &str) -> String {
    reins_ai::first_line(text, PROGRESS_PROMPT_CHARS - 1).into_owned()
}
