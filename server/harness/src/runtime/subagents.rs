//! Subagents: the `task` tool hands a self-contained job to a child agent with its own context.
//!
//! The child is a session of its own (its file's header names the parent's as `parentSession`,
//! as pi's forks do), so it can be opened and continued like any other; the parent's path gets
//! a `reins.subagent` entry where it was spawned. The child works through the same workspace,
//! approval gate and recorder as any session, with the tools the parent gave it (read-only
//! unless asked, never more than the parent's), and pays from the parent's budget. Only its
//! final answer goes back to the parent's model (and what it spent to the parent's file, as the
//! `task` result's own usage); its events go to every surface, marked with
//! the parent's session and tool call, and each tool it starts is a progress line of the
//! parent's call. Several `task` calls in one answer run at once (the tool is read-only to the
//! loop: what it changes goes through the child's own gate), at most
//! [`Settings::max_subagents`](reins_settings::Settings) at a time.

use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::{
    Proposal, RunOutcome, SharedBudget, ToolContext, ToolError, ToolLook, ToolOutput, TurnEndReason, TypedTool,
    string_argument,
};
use reins_ai::{Content, Message, now_ms};
use reins_session::{Durability, EntryKind, UsageRecord};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Harness, SessionId, lock, session_error};
use crate::error::HarnessError;
use reins_settings::{READ_ONLY_TOOLS, ToolSet};

/// The tool's name.
pub const TASK_TOOL: &str = "task";
/// The `custom` entry on the parent's path that says where a child was spawned.
pub const SUBAGENT_ENTRY: &str = "reins.subagent";
/// How long a child may work before the parent's call gives up on it.
const TASK_TIMEOUT: Duration = Duration::from_secs(3600);
/// A progress line is cut to this many characters.
const PROGRESS_CHARS: usize = 120;

/// Where a child session was spawned: the parent's session and the `task` call.
#[derive(Debug, Clone, PartialEq)]
pub struct Parent {
    pub session_id: SessionId,
    pub tool_call_id: String,
}

/// What a child session carries while its task runs.
pub(crate) struct Spawn {
    pub parent: Parent,
    /// The parent's run's budget, which the child pays from.
    pub budget: Option<Arc<SharedBudget>>,
    /// Progress lines for the parent's call.
    pub progress: mpsc::UnboundedSender<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskInput {
    /// The whole job, self-contained: the subagent sees nothing of this conversation.
    pub prompt: String,
    /// A few words saying what the job is (the subagent's session is named after it).
    pub description: Option<String>,
    /// The tools the subagent may use, among yours. Default: read, ls, grep, find, todo.
    pub tools: Option<Vec<String>>,
}

/// The `task` tool of one session.
pub(crate) struct TaskTool {
    pub harness: Weak<Harness>,
    pub session_id: SessionId,
}

#[async_trait]
impl TypedTool for TaskTool {
    type Input = TaskInput;
    const NAME: &'static str = TASK_TOOL;
    // The loop runs read-only calls of one answer together: that makes several tasks concurrent.
    // What a child changes goes through its own approval gate.
    const READ_ONLY: bool = true;

    fn description(&self) -> String {
        "Hand a self-contained job to a subagent with its own fresh context (it sees none of this \
         conversation), and get back only its final answer. Use it for searches and investigations \
         whose details you do not need to keep; several task calls in one answer run at the same time. \
         The subagent gets read-only tools unless you name others of yours in `tools`."
            .to_string()
    }

    fn timeout(&self) -> Option<Duration> {
        Some(TASK_TIMEOUT)
    }

    /// The job's short description (else its prompt's first line), not the call's JSON.
    fn look(&self, arguments: &Value) -> ToolLook {
        let prompt = string_argument(arguments, "prompt").and_then(|prompt| prompt.lines().next());
        let gist = string_argument(arguments, "description").or(prompt).unwrap_or("");
        ToolLook { title: format!("Subagent: {gist}"), summary: gist.to_string(), ..ToolLook::default() }
    }

    async fn prepare(&self, input: &TaskInput) -> Result<Option<Proposal>, ToolError> {
        if input.prompt.trim().is_empty() {
            return Err(ToolError::new("the prompt is empty; say what the subagent should do"));
        }
        let harness = self.harness()?;
        harness.child_tools(&self.session_id, input.tools.as_deref()).map_err(|err| ToolError::new(err.to_string()))?;
        Ok(None)
    }

    async fn execute(
        &self,
        input: TaskInput,
        _proposal: Option<Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let harness = self.harness()?;
        let fail = |err: HarnessError| ToolError::new(format!("the subagent could not start: {err}"));
        let _slot = tokio::select! {
            slot = harness.subagent_slots.clone().acquire_owned() => slot.map_err(|_| ToolError::new("subagents are shut down"))?,
            () = cx.cancel.cancelled() => return Err(ToolError::new("cancelled before the subagent started")),
        };
        let parent = Parent { session_id: self.session_id.clone(), tool_call_id: cx.tool_call_id.to_string() };
        let (progress, mut lines) = mpsc::unbounded_channel();
        let child = harness.spawn_child(&parent, &input, progress).map_err(fail)?;
        let mut started = harness.send(&child, vec![Content::text(input.prompt)]).map_err(fail)?;
        // The loop may drop this call when the parent is cancelled: the child is cancelled then too.
        let mut guard = CancelOnDrop { harness: harness.clone(), child: child.clone(), armed: true };
        let mut cancelled = false;
        let outcome = loop {
            tokio::select! {
                Some(line) = lines.recv() => (cx.on_update)(&line),
                outcome = &mut started.done => break outcome.ok(),
                () = cx.cancel.cancelled(), if !cancelled => {
                    // The child ends aborted; its end is still awaited, so nothing of it runs on.
                    cancelled = true;
                    let _ = harness.cancel(&child);
                }
            }
        };
        guard.armed = false;
        harness.end_spawn(&child);
        let session = harness.session(&child).ok();
        let path = session.as_ref().and_then(|session| session.path());
        // What the child spent goes into the parent's file with this result (its `usage`).
        let used = session.map(|session| UsageRecord::from(&session.used()));
        let details = json!({ "sessionId": child, "path": path, "usage": used });
        Ok(ToolOutput::text(answer(outcome.as_ref())).with_details(details))
    }
}

/// Cancels a child whose parent's call went away before the child ended.
struct CancelOnDrop {
    harness: Arc<Harness>,
    child: SessionId,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let _ = self.harness.cancel(&self.child);
        self.harness.end_spawn(&self.child);
    }
}

impl TaskTool {
    fn harness(&self) -> Result<Arc<Harness>, ToolError> {
        self.harness.upgrade().ok_or_else(|| ToolError::new("reins is shutting down"))
    }
}

impl Harness {
    /// The tool set a child of `parent` gets for `asked` (default: the read-only tools): each
    /// one must be a tool the parent is offered; `task` itself is not handed down.
    fn child_tools(&self, parent: &str, asked: Option<&[String]>) -> Result<ToolSet, HarnessError> {
        let session = self.session(parent)?;
        let items: Vec<String> = match asked {
            Some(asked) => asked.to_vec(),
            None => READ_ONLY_TOOLS.iter().map(|name| name.to_string()).collect(),
        };
        let set = ToolSet::parse(&items).map_err(HarnessError::InvalidArgument)?;
        let refused: Vec<&str> = set
            .items()
            .iter()
            .map(String::as_str)
            .filter(|item| *item == TASK_TOOL || (asked.is_some() && !session.toolbox.offers(item)))
            .collect();
        if !refused.is_empty() {
            return Err(HarnessError::InvalidArgument(format!(
                "a subagent can only get tools you have yourself, and not `{TASK_TOOL}`: {} cannot be given",
                refused.join(", ")
            )));
        }
        Ok(set)
    }

    /// Starts the child session of a `task` call: on disk (when sessions are), linked to the
    /// parent's file, with the parent's model and the tools asked for, and an entry on the
    /// parent's path that names it.
    fn spawn_child(
        &self,
        parent: &Parent,
        input: &TaskInput,
        progress: mpsc::UnboundedSender<String>,
    ) -> Result<SessionId, HarnessError> {
        let parent_session = self.session(&parent.session_id)?;
        let tools = self.child_tools(&parent.session_id, input.tools.as_deref())?;
        let model = parent_session.agent.model();
        let name = input.description.clone().filter(|text| !text.trim().is_empty()).unwrap_or_else(|| {
            let first = input.prompt.lines().next().unwrap_or_default();
            reins_ai::shorten(first, 60).into_owned()
        });
        let id = match &parent_session.file {
            Some(parent_file) => {
                let parent_path = lock(parent_file).path().to_path_buf();
                let mut file = self.store.create(&self.cwd(), Some(&parent_path)).map_err(session_error)?;
                file.set_durability(Durability::Write);
                file.append(EntryKind::ModelChange { provider: model.provider.clone(), model_id: model.id.clone() })
                    .and_then(|_| file.set_name(&format!("task: {name}")))
                    .and_then(|_| file.flush())
                    .map_err(session_error)?;
                let id = file.id().to_string();
                let data =
                    json!({ "sessionId": id, "path": file.path(), "toolCallId": parent.tool_call_id, "name": name });
                let mut parent_file = lock(parent_file);
                parent_file
                    .append(EntryKind::Custom { custom_type: SUBAGENT_ENTRY.to_string(), data: Some(data) })
                    .and_then(|_| parent_file.flush())
                    .map_err(session_error)?;
                drop(parent_file);
                self.go_live(id, Some(file), model, Vec::new(), Default::default(), Default::default())
            }
            None => {
                let id = format!("mem-{}-{:x}", self.next(), now_ms());
                self.go_live(id, None, model, Vec::new(), Default::default(), Default::default())
            }
        };
        self.set_tools(&id, tools.items())?;
        let budget = lock(&parent_session.budget).clone();
        let child = self.session(&id)?;
        *lock(&child.spawn) = Some(Spawn { parent: parent.clone(), budget, progress });
        Ok(id)
    }

    /// The child's task is over: from now on it is a session like any other.
    fn end_spawn(&self, child: &str) {
        if let Some(session) = self.live(child) {
            *lock(&session.spawn) = None;
        }
    }

    /// The parent of a session spawned by a `task` call still running, if it is one.
    pub fn parent_of(&self, session_id: &str) -> Option<Parent> {
        let session = self.live(session_id)?;
        lock(&session.spawn).as_ref().map(|spawn| spawn.parent.clone())
    }
}

/// What the parent's model reads: the child's final answer, or how it stopped and what it said.
fn answer(outcome: Option<&RunOutcome>) -> String {
    let Some(outcome) = outcome else { return "The subagent failed without an answer.".to_string() };
    let last = outcome.messages.iter().rev().find_map(|message| match message {
        Message::Assistant(assistant) if !assistant.text().trim().is_empty() => Some(assistant.text()),
        _ => None,
    });
    match (outcome.reason, last) {
        (TurnEndReason::FinalAnswer, Some(text)) => text,
        (TurnEndReason::FinalAnswer, None) => "The subagent finished without saying anything.".to_string(),
        (reason, last) => {
            let why = outcome.error.as_deref().map(|error| format!(": {error}")).unwrap_or_default();
            let said = last.map(|text| format!("\nIts last words:\n{text}")).unwrap_or_default();
            format!("The subagent stopped before it finished ({}){why}.{said}", stopped_why(reason))
        }
    }
}

/// Why a run stopped, in words.
fn stopped_why(reason: TurnEndReason) -> &'static str {
    match reason {
        TurnEndReason::FinalAnswer | TurnEndReason::ToolObservations => "it ended",
        TurnEndReason::MaxTurns => "it reached its turn limit",
        TurnEndReason::RepeatedAction => "it repeated a call",
        TurnEndReason::Deadline => "it ran out of time",
        TurnEndReason::Budget => "the budget is spent",
        TurnEndReason::Refusal => "the model refused",
        TurnEndReason::Aborted => "it was cancelled",
        TurnEndReason::Error => "it failed",
    }
}

/// One progress line for a tool a child started: its name and arguments, cut short.
pub(crate) fn progress_line(tool_name: &str, args: &serde_json::Value) -> String {
    let args = args.to_string();
    let line = format!("{tool_name} {args}");
    reins_ai::shorten(&line, PROGRESS_CHARS).into_owned()
}
