//! Agent events on their way to the client as `session/update` notifications, and the answers
//! to `session/prompt` once a run ends. One task owns the sending, fed by an unbounded channel
//! from the harnesses' synchronous event sinks, so the agent loop never waits for the client and
//! updates leave in event order; permission requests go through the same channel, so a
//! `session/request_permission` never overtakes the `tool_call` it is about.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_client_protocol::v1::schema::{
    LoadSessionResponse, PromptResponse, RequestPermissionRequest, RequestPermissionResponse, SessionUpdate,
    ToolCallStatus, UsageUpdate,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};
use reins_agent::{AgentEvent, FileChange, TurnEndReason};
use reins_ai::StreamEvent;
use reins_harness::{HarnessEvent, LiveSettings};
use reins_review::without_asking;
use tokio::sync::{mpsc, oneshot};

use crate::to_proto;

/// What the event task receives.
pub enum Input {
    /// An agent event, with the file changes that landed during the call, and the client's
    /// terminal it ran in, when it ends one.
    Event { event: Box<HarnessEvent>, changes: Vec<FileChange>, terminal: Option<String> },
    /// A session is open, or its settings changed: where it works, and the settings its harness
    /// has in force.
    Session { session_id: String, cwd: PathBuf, settings: LiveSettings },
    /// A session was released: what the task knows of it goes (it comes back with `Session`).
    Released { session_id: String },
    /// The user allowed `tool` for the rest of the session.
    Allowed { session_id: String, tool: String },
    /// A session's prompt turn started: answer `responder` when its run ends, clearing `busy`
    /// just before.
    Prompt { session_id: String, responder: Responder<PromptResponse>, busy: Arc<AtomicBool> },
    /// A built-in slash command ended the prompt turn: its updates, then the answer `end_turn`.
    CommandDone { session_id: String, updates: Vec<SessionUpdate> },
    /// The run could not start, or its task ended without an outcome (a panic).
    RunFailed { session_id: String, error: Error },
    /// A session's run ended and its session was saved: send how much of the window its
    /// context takes now, then the answer its `agent_end` made.
    Finished { session_id: String, usage: Option<UsageUpdate> },
    /// Notifications to send now, in order (an update of the approver).
    Updates { session_id: String, updates: Vec<SessionUpdate> },
    /// A loaded session's conversation, to replay before `responder` answers `session/load`
    /// (the spec: the whole replay, then the answer).
    Loaded {
        session_id: String,
        replay: Vec<SessionUpdate>,
        response: Box<LoadSessionResponse>,
        responder: Responder<LoadSessionResponse>,
    },
    /// Something the user should know about the session (an MCP server that could not start):
    /// shown in its running turn, else at the start of its next one.
    Notice { session_id: String, message: String },
    /// Ask the client; the answer (or the error) goes to `answer`.
    Permission {
        request: Box<RequestPermissionRequest>,
        answer: oneshot::Sender<Result<RequestPermissionResponse, Error>>,
    },
}

/// The sending side of the event task.
#[derive(Clone)]
pub struct Events {
    tx: mpsc::UnboundedSender<Input>,
}

/// What the updates of a session need to know about it.
struct SessionState {
    cwd: PathBuf,
    settings: LiveSettings,
    /// Tools the user allowed for the session: their calls start `in_progress`, not `pending`.
    allowed: HashSet<String>,
}

pub struct Pump {
    cx: ConnectionTo<Client>,
    prompts: HashMap<String, (Responder<PromptResponse>, Arc<AtomicBool>)>,
    /// The answers of runs that ended, until their session is saved ([`Input::Finished`]).
    ended: HashMap<String, Result<PromptResponse, Error>>,
    sessions: HashMap<String, SessionState>,
    /// Notices waiting for their session's next turn.
    notices: HashMap<String, Vec<String>>,
    /// Notices sent so far (their tool call ids).
    told: u64,
}

impl Events {
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<Input>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }

    pub fn send(&self, input: Input) {
        // A closed channel means the connection is going away; nobody is listening.
        let _ = self.tx.send(input);
    }

    pub fn updates(&self, session_id: &str, updates: Vec<SessionUpdate>) {
        self.send(Input::Updates { session_id: session_id.to_string(), updates });
    }
}

impl Pump {
    pub fn new(cx: ConnectionTo<Client>) -> Self {
        Self {
            cx,
            prompts: HashMap::new(),
            ended: HashMap::new(),
            sessions: HashMap::new(),
            notices: HashMap::new(),
            told: 0,
        }
    }

    pub async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Input>) {
        while let Some(input) = rx.recv().await {
            self.input(input);
        }
    }

    fn input(&mut self, input: Input) {
        match input {
            Input::Event { event, changes, terminal } => self.event(*event, changes, terminal),
            Input::Session { session_id, cwd, settings } => match self.sessions.get_mut(&session_id) {
                // Its settings changed (a mode): what the user allowed stays allowed.
                Some(state) => state.settings = settings,
                None => {
                    self.sessions.insert(session_id, SessionState { cwd, settings, allowed: HashSet::new() });
                }
            },
            Input::Released { session_id } => {
                self.sessions.remove(&session_id);
                self.notices.remove(&session_id);
            }
            Input::Allowed { session_id, tool } => {
                if let Some(state) = self.sessions.get_mut(&session_id) {
                    state.allowed.insert(tool);
                }
            }
            Input::Prompt { session_id, responder, busy } => {
                for message in self.notices.remove(&session_id).unwrap_or_default() {
                    self.notice(&session_id, &message);
                }
                self.prompts.insert(session_id, (responder, busy));
            }
            Input::Notice { session_id, message } => {
                if self.prompts.contains_key(&session_id) {
                    self.notice(&session_id, &message);
                } else {
                    self.notices.entry(session_id).or_default().push(message);
                }
            }
            Input::RunFailed { session_id, error } => {
                self.ended.remove(&session_id);
                if let Some((responder, busy)) = self.prompts.remove(&session_id) {
                    busy.store(false, Ordering::SeqCst);
                    let _ = responder.respond_with_error(error);
                }
            }
            Input::Finished { session_id, usage } => {
                if let Some(usage) = usage {
                    self.notify(&session_id, SessionUpdate::UsageUpdate(usage));
                }
                let ended = self.ended.remove(&session_id).unwrap_or_else(|| {
                    Err(to_proto::run_failed("the run ended without saying how (see the log)".into()))
                });
                if let Some((responder, busy)) = self.prompts.remove(&session_id) {
                    busy.store(false, Ordering::SeqCst);
                    let _ = match ended {
                        Ok(response) => responder.respond(response),
                        Err(error) => responder.respond_with_error(error),
                    };
                }
            }
            Input::CommandDone { session_id, updates } => {
                for update in updates {
                    self.notify(&session_id, update);
                }
                if let Some((responder, busy)) = self.prompts.remove(&session_id) {
                    busy.store(false, Ordering::SeqCst);
                    let _ =
                        responder.respond(PromptResponse::new(agent_client_protocol::v1::schema::StopReason::EndTurn));
                }
            }
            Input::Updates { session_id, updates } => {
                for update in updates {
                    self.notify(&session_id, update);
                }
            }
            Input::Loaded { session_id, replay, response, responder } => {
                for update in replay {
                    self.notify(&session_id, update);
                }
                let _ = responder.respond(*response);
            }
            Input::Permission { request, answer } => {
                let sent = self.cx.send_request(*request);
                tokio::spawn(async move {
                    let _ = answer.send(sent.block_task().await);
                });
            }
        }
    }

    fn notify(&self, session_id: &str, update: SessionUpdate) {
        let sent = to_proto::wire_notification(session_id, update)
            .and_then(|notification| self.cx.send_notification(notification));
        if let Err(err) = sent {
            tracing::debug!("a session/update was not sent: {err}");
        }
    }

    fn notice(&mut self, session_id: &str, message: &str) {
        self.told += 1;
        self.notify(session_id, SessionUpdate::ToolCall(to_proto::notice(self.told, message)));
    }

    fn event(&mut self, event: HarnessEvent, changes: Vec<FileChange>, terminal: Option<String>) {
        // A subagent's session is not one the client opened: its work shows as progress of the
        // parent's `task` call.
        if event.parent.is_some() {
            return;
        }
        let session_id = event.session_id.as_str();
        match &event.event {
            AgentEvent::MessageUpdate { delta: StreamEvent::Text { delta, .. } } if !delta.is_empty() => {
                self.notify(session_id, to_proto::agent_text(delta));
            }
            AgentEvent::MessageUpdate { delta: StreamEvent::Thinking { delta, .. } } if !delta.is_empty() => {
                self.notify(session_id, to_proto::agent_thought(delta));
            }
            AgentEvent::ToolExecutionStart { tool_call_id, tool_name, args, look } => {
                let Some(state) = self.sessions.get(session_id) else { return };
                let allowed = state.allowed.contains(tool_name);
                let asks = without_asking(&state.settings.get().approval, tool_name, allowed, true).is_none();
                let status = if asks { ToolCallStatus::Pending } else { ToolCallStatus::InProgress };
                let call = to_proto::tool_call(tool_call_id, look, args, &state.cwd, status);
                self.notify(session_id, SessionUpdate::ToolCall(call));
            }
            AgentEvent::ToolExecutionUpdate { tool_call_id, partial, .. } => {
                self.notify(session_id, SessionUpdate::ToolCallUpdate(to_proto::tool_output(tool_call_id, partial)));
            }
            AgentEvent::ToolExecutionEnd { result, .. } => {
                self.notify(
                    session_id,
                    SessionUpdate::ToolCallUpdate(to_proto::tool_result(result, &changes, terminal)),
                );
            }
            AgentEvent::TodoUpdate { todos, .. } => {
                self.notify(session_id, SessionUpdate::Plan(to_proto::plan(todos)));
            }
            AgentEvent::AgentEnd { reason, messages, error, .. } => {
                if !self.prompts.contains_key(session_id) {
                    return;
                }
                let Some(settings) = self.sessions.get(session_id).map(|state| state.settings.get()) else { return };
                // Answered once the run's task has saved the session (`Input::Finished`).
                let answer = if *reason == TurnEndReason::Error {
                    Err(to_proto::run_failed(settings.run_failure(messages, error.as_deref())))
                } else {
                    Ok(PromptResponse::new(to_proto::stop_reason(*reason, messages)))
                };
                self.ended.insert(session_id.to_string(), answer);
            }
            _ => {}
        }
    }
}
