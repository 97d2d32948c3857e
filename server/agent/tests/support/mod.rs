//! Test doubles for the loop: a scripted provider that replays canned assistant messages and
//! records the requests it got, a few tiny tools, and renderers that turn runs into text.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::{
    AgentContext, AgentEvent, CommandProposal, EventSink, Gate, Hooks, Proposal, Tool, ToolContext, ToolError,
    ToolOutput, TypedTool,
};
use reins_ai::{
    AssistantMessage, Content, Message, Model, Prices, Provider, ProviderError, ProviderErrorKind, Request, StopReason,
    StreamEvent, ToolCall, Usage,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{Barrier, Notify};
use tokio_util::sync::CancellationToken;

// ---- the scripted provider -------------------------------------------------------------------

/// One model call's behaviour.
pub enum Reply {
    Message(AssistantMessage),
    /// Streams nothing until cancelled, then ends aborted.
    Hang,
}

#[derive(Default)]
pub struct ScriptedProvider {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Request>>,
}

impl ScriptedProvider {
    pub fn new(replies: Vec<Reply>) -> Arc<Self> {
        Arc::new(Self { replies: Mutex::new(replies.into()), requests: Mutex::default() })
    }
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    async fn stream(
        &self,
        request: &Request,
        on_event: reins_ai::EventSink<'_>,
        cancel: &CancellationToken,
    ) -> AssistantMessage {
        self.requests.lock().unwrap().push(request.clone());
        let reply = self.replies.lock().unwrap().pop_front();
        match reply {
            Some(Reply::Message(message)) => {
                for (index, block) in message.content.iter().enumerate() {
                    match block {
                        Content::Text { text } => on_event(StreamEvent::Text { index, delta: text.clone() }),
                        Content::ToolCall(call) => on_event(StreamEvent::ToolCall {
                            index,
                            id: call.id.clone(),
                            name: call.name.clone(),
                            arguments_delta: call.arguments.to_string(),
                        }),
                        _ => {}
                    }
                }
                message
            }
            Some(Reply::Hang) => {
                cancel.cancelled().await;
                AssistantMessage {
                    stop_reason: StopReason::Aborted,
                    error: Some(ProviderError::new(ProviderErrorKind::Aborted, "cancelled")),
                    ..AssistantMessage::default()
                }
            }
            None => AssistantMessage {
                stop_reason: StopReason::Error,
                error: Some(ProviderError::new(ProviderErrorKind::Protocol, "the script has no more replies")),
                ..AssistantMessage::default()
            },
        }
    }
}

/// A final answer.
pub fn answer(text: &str) -> Reply {
    Reply::Message(AssistantMessage {
        content: vec![Content::text(text)],
        usage: Usage { input: 10, output: 5, total_tokens: 15, ..Usage::default() },
        stop_reason: StopReason::Stop,
        ..AssistantMessage::default()
    })
}

/// A message calling tools: `(id, name, arguments)`.
pub fn calls(calls: &[(&str, &str, Value)]) -> Reply {
    Reply::Message(calls_message(calls, StopReason::ToolUse))
}

pub fn calls_message(calls: &[(&str, &str, Value)], stop_reason: StopReason) -> AssistantMessage {
    let content = calls
        .iter()
        .map(|(id, name, arguments)| {
            Content::ToolCall(ToolCall { id: id.to_string(), name: name.to_string(), arguments: arguments.clone() })
        })
        .collect();
    AssistantMessage {
        content,
        usage: Usage { input: 10, output: 5, total_tokens: 15, ..Usage::default() },
        stop_reason,
        ..AssistantMessage::default()
    }
}

pub fn model() -> Model {
    Model {
        id: "scripted".into(),
        provider: "test".into(),
        base_url: "http://127.0.0.1:1/v1".into(),
        context_window: 100_000,
        max_output: 4_000,
        prices: Prices::default(),
        reasoning: false,
        compat: Default::default(),
    }
}

pub fn context(tools: Vec<Arc<dyn Tool>>) -> AgentContext {
    AgentContext {
        system_prompt: "You are a test.".into(),
        model: model(),
        messages: Vec::new(),
        tools,
        thinking: None,
    }
}

// ---- events ----------------------------------------------------------------------------------

/// An event sink that keeps what it receives.
#[derive(Clone, Default)]
pub struct Recorder(Arc<Mutex<Vec<AgentEvent>>>);

impl Recorder {
    pub fn sink(&self) -> EventSink {
        let events = self.0.clone();
        Arc::new(move |event| events.lock().unwrap().push(event))
    }
    pub fn events(&self) -> Vec<AgentEvent> {
        self.0.lock().unwrap().clone()
    }
    /// One line per event, with what tells events apart.
    pub fn kinds(&self) -> String {
        let mut out = String::new();
        for event in self.events() {
            let line = match event {
                AgentEvent::AgentStart => "agent_start".to_string(),
                AgentEvent::TurnStart { turn } => format!("turn_start {turn}"),
                AgentEvent::MessageStart { message } => format!("message_start {}", role(&message)),
                AgentEvent::MessageUpdate { delta } => match delta {
                    StreamEvent::Text { delta, .. } => format!("message_update text {delta:?}"),
                    StreamEvent::Thinking { .. } => "message_update thinking".to_string(),
                    StreamEvent::ToolCall { id, .. } => format!("message_update tool_call {id}"),
                    StreamEvent::Retry { attempt, .. } => format!("message_update retry {attempt}"),
                },
                AgentEvent::MessageEnd { message } => format!("message_end {}", role(&message)),
                AgentEvent::ToolExecutionStart { tool_call_id, .. } => format!("tool_execution_start {tool_call_id}"),
                AgentEvent::ToolExecutionUpdate { tool_call_id, partial, .. } => {
                    format!("tool_execution_update {tool_call_id} {partial:?}")
                }
                AgentEvent::ToolExecutionEnd { tool_call_id, is_error, .. } => {
                    format!("tool_execution_end {tool_call_id}{}", if is_error { " (error)" } else { "" })
                }
                AgentEvent::TodoUpdate { tool_call_id, todos } => {
                    format!("todo_update {tool_call_id} items={}", todos.len())
                }
                AgentEvent::TurnEnd { turn, reason, tool_results, .. } => {
                    format!("turn_end {turn} {} results={}", json_name(&reason), tool_results.len())
                }
                AgentEvent::AgentEnd { reason, messages, usage, .. } => format!(
                    "agent_end {} messages={} tokens={}",
                    json_name(&reason),
                    messages.len(),
                    usage.total_tokens
                ),
            };
            writeln!(out, "{line}").unwrap();
        }
        out
    }
}

fn role(message: &Message) -> &'static str {
    match message {
        Message::User(_) => "user",
        Message::Assistant(_) => "assistant",
        Message::ToolResult(_) => "tool_result",
    }
}

/// The reason as the protocol names it.
fn json_name(reason: &reins_agent::TurnEndReason) -> &'static str {
    use reins_agent::TurnEndReason;
    match reason {
        TurnEndReason::FinalAnswer => "final_answer",
        TurnEndReason::ToolObservations => "tool_observations",
        TurnEndReason::MaxTurns => "max_turns",
        TurnEndReason::RepeatedAction => "repeated_action",
        TurnEndReason::Deadline => "deadline",
        TurnEndReason::Budget => "budget",
        TurnEndReason::Refusal => "refusal",
        TurnEndReason::Aborted => "aborted",
        TurnEndReason::Error => "error",
    }
}

/// The conversation as text, one message per line.
pub fn transcript<'a>(messages: impl IntoIterator<Item = &'a Message>) -> String {
    let mut out = String::new();
    for message in messages {
        match message {
            Message::User(user) => {
                writeln!(out, "user: {}", text_of(&user.content)).unwrap();
            }
            Message::Assistant(assistant) => {
                let mut parts = Vec::new();
                for block in &assistant.content {
                    match block {
                        Content::Text { text } => parts.push(text.clone()),
                        Content::ToolCall(call) => {
                            parts.push(format!("call {} {} {}", call.id, call.name, call.arguments))
                        }
                        _ => {}
                    }
                }
                writeln!(out, "assistant ({:?}): {}", assistant.stop_reason, parts.join(" | ")).unwrap();
            }
            Message::ToolResult(result) => {
                let error = if result.is_error { " error" } else { "" };
                writeln!(out, "result {} {}{error}: {}", result.tool_call_id, result.tool_name, result.text()).unwrap();
            }
        }
    }
    out
}

fn text_of(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

// ---- tools -----------------------------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
pub struct PathInput {
    pub path: String,
}

/// Read-only: answers with a fixed text per path.
pub struct ReadTool;

#[async_trait]
impl TypedTool for ReadTool {
    type Input = PathInput;
    const NAME: &'static str = "read";
    const READ_ONLY: bool = true;
    fn description(&self) -> String {
        "Reads a file.".into()
    }
    async fn execute(
        &self,
        input: PathInput,
        _: Option<Proposal>,
        _: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("contents of {}", input.path)))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct TextInput {
    pub text: String,
}

/// Read-only: answers with its input.
pub struct EchoTool;

#[async_trait]
impl TypedTool for EchoTool {
    type Input = TextInput;
    const NAME: &'static str = "echo";
    const READ_ONLY: bool = true;
    fn description(&self) -> String {
        "Echoes.".into()
    }
    async fn execute(
        &self,
        input: TextInput,
        _: Option<Proposal>,
        _: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(input.text))
    }
}

/// Read-only: waits until as many calls as the barrier needs are waiting. Calls that ran one
/// after another would never get there.
pub struct BarrierTool(pub Arc<Barrier>);

#[async_trait]
impl TypedTool for BarrierTool {
    type Input = TextInput;
    const NAME: &'static str = "meet";
    const READ_ONLY: bool = true;
    fn description(&self) -> String {
        "Waits for company.".into()
    }
    async fn execute(
        &self,
        input: TextInput,
        _: Option<Proposal>,
        _: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        self.0.wait().await;
        Ok(ToolOutput::text(format!("met {}", input.text)))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct SleepInput {
    pub ms: u64,
}

/// Read-only: sleeps, then reports how long.
pub struct SleepTool;

#[async_trait]
impl TypedTool for SleepTool {
    type Input = SleepInput;
    const NAME: &'static str = "sleep";
    const READ_ONLY: bool = true;
    fn description(&self) -> String {
        "Sleeps.".into()
    }
    async fn execute(
        &self,
        input: SleepInput,
        _: Option<Proposal>,
        _: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(Duration::from_millis(input.ms)).await;
        Ok(ToolOutput::text(format!("slept {} ms", input.ms)))
    }
}

/// Mutating: logs when each call starts and ends, sleeping in between so overlapping calls would
/// interleave in the log.
#[derive(Default)]
pub struct WriteTool {
    pub log: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl TypedTool for WriteTool {
    type Input = PathInput;
    const NAME: &'static str = "write";
    const READ_ONLY: bool = false;
    fn description(&self) -> String {
        "Writes a file.".into()
    }
    async fn execute(
        &self,
        input: PathInput,
        _: Option<Proposal>,
        _: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        self.log.lock().unwrap().push(format!("start {}", input.path));
        tokio::time::sleep(Duration::from_millis(30)).await;
        self.log.lock().unwrap().push(format!("end {}", input.path));
        Ok(ToolOutput::text(format!("wrote {}", input.path)))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct CommandInput {
    pub command: String,
}

/// Mutating, with a proposal the gate sees: runs (pretends to run) the command it was allowed.
pub struct RunTool;

#[async_trait]
impl TypedTool for RunTool {
    type Input = CommandInput;
    const NAME: &'static str = "run";
    const READ_ONLY: bool = false;
    fn description(&self) -> String {
        "Runs a command.".into()
    }
    async fn prepare(&self, input: &CommandInput) -> Result<Option<Proposal>, ToolError> {
        Ok(Some(Proposal::Command(CommandProposal {
            command: input.command.clone(),
            cwd: PathBuf::from("/work"),
            timeout_secs: 10,
        })))
    }
    async fn execute(
        &self,
        _: CommandInput,
        proposal: Option<Proposal>,
        _: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        match proposal {
            Some(Proposal::Command(command)) => Ok(ToolOutput::text(format!("ran `{}`", command.command))),
            other => Err(ToolError::new(format!("unexpected proposal {other:?}"))),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct NoInput {}

/// Fails its first `failures` calls. `RO` picks read-only (`flaky_read`) or mutating
/// (`flaky_write`).
pub struct FlakyTool<const RO: bool> {
    pub failures: u32,
    pub calls: AtomicU32,
}

#[async_trait]
impl<const RO: bool> TypedTool for FlakyTool<RO> {
    type Input = NoInput;
    const NAME: &'static str = if RO { "flaky_read" } else { "flaky_write" };
    const READ_ONLY: bool = RO;
    fn description(&self) -> String {
        "Fails at first.".into()
    }
    async fn execute(&self, _: NoInput, _: Option<Proposal>, _: ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if call <= self.failures {
            Err(ToolError::new(format!("failure on attempt {call}")))
        } else {
            Ok(ToolOutput::text(format!("worked on attempt {call}")))
        }
    }
}

/// Mutating: reports progress, says it started, then waits for `proceed` (or ten seconds).
/// Keeps the cancel token it was given, so a test can check the tool was told to stop.
#[derive(Default)]
pub struct SlowTool {
    pub timeout: Option<Duration>,
    pub started: Arc<Notify>,
    pub proceed: Arc<Notify>,
    pub cancel_seen: Mutex<Option<CancellationToken>>,
}

#[async_trait]
impl TypedTool for SlowTool {
    type Input = NoInput;
    const NAME: &'static str = "slow";
    const READ_ONLY: bool = false;
    fn description(&self) -> String {
        "Takes its time.".into()
    }
    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
    async fn execute(&self, _: NoInput, _: Option<Proposal>, cx: ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        *self.cancel_seen.lock().unwrap() = Some(cx.cancel.clone());
        (cx.on_update)("working");
        self.started.notify_one();
        tokio::select! {
            _ = self.proceed.notified() => Ok(ToolOutput::text("slow done")),
            _ = tokio::time::sleep(Duration::from_secs(10)) => Ok(ToolOutput::text("slept 10 s")),
        }
    }
}

impl SlowTool {
    pub fn was_cancelled(&self) -> bool {
        self.cancel_seen.lock().unwrap().as_ref().is_some_and(CancellationToken::is_cancelled)
    }
}

// ---- hooks -----------------------------------------------------------------------------------

type Verdict = Box<dyn Fn(&ToolCall, Option<&Proposal>) -> Gate + Send + Sync>;

/// A gate that decides with a function.
pub struct GateHooks(pub Verdict);

#[async_trait]
impl Hooks for GateHooks {
    async fn before_tool_call(&self, call: &ToolCall, proposal: Option<&Proposal>, _: &CancellationToken) -> Gate {
        (self.0)(call, proposal)
    }
}

/// Hooks with a steering queue that log which hook ran when.
#[derive(Default)]
pub struct QueueHooks {
    pub steering: Mutex<Vec<Message>>,
    calls: Mutex<Vec<String>>,
}

impl QueueHooks {
    pub fn log(&self) -> String {
        self.calls.lock().unwrap().iter().map(|call| format!("{call}\n")).collect()
    }
    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
}

#[async_trait]
impl Hooks for QueueHooks {
    async fn before_tool_calls(&self, turn: u32, calls: &[ToolCall]) {
        let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
        self.record(format!("before_tool_calls {turn} {}", ids.join(" ")));
    }
    async fn after_tool_call(&self, call: &ToolCall, _: &mut reins_ai::ToolResultMessage) {
        self.record(format!("after_tool_call {}", call.id));
    }
    async fn prepare_next_turn(&self, _: &mut AgentContext) {
        self.record("prepare_next_turn".into());
    }
    fn steering_messages(&self) -> Vec<Message> {
        self.record("steering_messages".into());
        std::mem::take(&mut *self.steering.lock().unwrap())
    }
    fn follow_up_messages(&self) -> Vec<Message> {
        self.record("follow_up_messages".into());
        Vec::new()
    }
}
