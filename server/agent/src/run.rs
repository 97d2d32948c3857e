//! One run of the loop: append the prompts, then turn after turn stream the assistant's message
//! and run its tool calls, until the model answers without tools and nothing is queued, or a
//! limit, an error or the caller stops it.

use std::sync::Arc;
use std::time::Duration;

use reins_ai::{
    AssistantMessage, Message, Messages, Provider, ProviderError, ProviderErrorKind, Request, StopReason, StreamEvent,
    ToolResultMessage, ToolSpec, Usage, now_ms,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::context::{AgentContext, Limits};
use crate::event::{AgentEvent, EventSink, TurnEndReason};
use crate::exec::{CallEnv, Interrupt, ReadCall, StopCause, read_arguments};
use crate::hooks::Hooks;
use crate::policy::{RepeatDetector, message_chars, next_call_cost, over_window};
use crate::tool::Tool;

/// How long a provider may take to return after its call was cancelled before the loop gives up
/// on it and records an empty aborted message.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

const LENGTH_CUT_TEXT: &str = "the response was cut off by the output limit before the arguments were complete; \
     the call was not run — retry with a shorter call (e.g. split the edit)";
const REPEAT_TEXT: &str = "this call is identical to the previous one (same tool, same arguments), so it was not run \
     again and the run stopped; the previous result stands";
const AFTER_REPEAT_TEXT: &str = "not run: the run stopped because the call before it repeated the previous call";
const PROVIDER_FAILED_TEXT: &str = "not run: the model's response failed before the call could be run";
const REFUSED_TEXT: &str = "not run: the model refused to answer";

/// What a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// Why the last turn (and so the run) ended.
    pub reason: TurnEndReason,
    /// The messages this run added to the context, in order.
    pub messages: Vec<Message>,
    /// Usage and cost of every model call in the run.
    pub usage: Usage,
    /// What went wrong, when `reason` is `error`; what the budget would not cover (`budget`).
    pub error: Option<String>,
}

/// A run's state while it goes.
struct Run<'a> {
    context: AgentContext,
    /// The messages the last request carried, each with its [`message_chars`], counted once
    /// rather than before every call.
    sent: Vec<(Arc<Message>, usize)>,
    added: Vec<Message>,
    usage: Usage,
    provider: &'a dyn Provider,
    hooks: &'a dyn Hooks,
    limits: &'a Limits,
    emit: &'a EventSink,
    interrupt: Interrupt,
    repeats: RepeatDetector,
    /// The tools' specs as sent to the model, built once (a schema takes work to render) and
    /// again only when `prepare_next_turn` changes the tools.
    specs: ToolSpecs,
}

#[derive(Default)]
struct ToolSpecs {
    of: Vec<Arc<dyn Tool>>,
    specs: Arc<Vec<ToolSpec>>,
}

impl ToolSpecs {
    fn for_tools(&mut self, tools: &[Arc<dyn Tool>]) -> Arc<Vec<ToolSpec>> {
        let same = self.of.len() == tools.len() && self.of.iter().zip(tools).all(|(a, b)| Arc::ptr_eq(a, b));
        if !same {
            self.of = tools.to_vec();
            self.specs = Arc::new(tools.iter().map(|tool| tool.spec()).collect());
        }
        self.specs.clone()
    }
}

/// How a turn ended, and whether the run goes on.
enum TurnEnd {
    /// Tool results go back to the model; steering is delivered first.
    Observations,
    /// The model was done, but the user queued these messages.
    Queued(Vec<Message>),
    Stop {
        reason: TurnEndReason,
        error: Option<String>,
    },
}

/// Runs the loop from `context` with `prompts` until the run ends. Never fails: failures end the
/// run with reason `error` and a message, and the returned messages always leave every tool call
/// paired with exactly one result.
pub async fn run(
    context: AgentContext,
    prompts: Vec<Message>,
    provider: &dyn Provider,
    hooks: &dyn Hooks,
    limits: &Limits,
    emit: &EventSink,
    cancel: CancellationToken,
) -> RunOutcome {
    let deadline = limits.deadline.map(|limit| Instant::now() + limit);
    let mut run = Run {
        context,
        sent: Vec::new(),
        added: Vec::new(),
        usage: Usage::default(),
        provider,
        hooks,
        limits,
        emit,
        interrupt: Interrupt { cancel, deadline },
        repeats: RepeatDetector::default(),
        specs: ToolSpecs::default(),
    };
    emit(AgentEvent::AgentStart);
    for prompt in prompts {
        run.append_announced(prompt);
    }
    let (reason, error) = run.turns().await;
    let outcome = RunOutcome { reason, messages: run.added, usage: run.usage, error };
    emit(AgentEvent::AgentEnd {
        reason: outcome.reason,
        messages: outcome.messages.clone(),
        usage: outcome.usage.clone(),
        error: outcome.error.clone(),
    });
    outcome
}

impl Run<'_> {
    async fn turns(&mut self) -> (TurnEndReason, Option<String>) {
        // Steering sent before the run started goes with the prompts.
        let steering = self.hooks.steering_messages();
        self.deliver(steering);
        let mut turn = 0;
        loop {
            if let Some(cause) = self.interrupt.stopped() {
                return (cause.reason(), None);
            }
            if let Some(over) = self.over_budget() {
                return (TurnEndReason::Budget, Some(over));
            }
            turn += 1;
            let queued = match self.turn(turn).await {
                TurnEnd::Observations => None,
                TurnEnd::Queued(messages) => Some(messages),
                TurnEnd::Stop { reason, error } => return (reason, error),
            };
            self.hooks.prepare_next_turn(&mut self.context).await;
            // Steering waits until the current tools are done, and goes before the next model call.
            let messages = queued.unwrap_or_else(|| self.hooks.steering_messages());
            self.deliver(messages);
        }
    }

    /// One model call and its tool calls; emits `turn_start` … `turn_end`.
    async fn turn(&mut self, turn: u32) -> TurnEnd {
        (self.emit)(AgentEvent::TurnStart { turn });
        let message = self.stream_message().await;
        let calls: Vec<ReadCall<'_>> = message.tool_calls().map(read_arguments).collect();
        let env = CallEnv {
            tools: &self.context.tools,
            hooks: self.hooks,
            limits: self.limits,
            emit: self.emit,
            interrupt: &self.interrupt,
        };

        let stopped = self.interrupt.stopped();
        if message.stop_reason == StopReason::Error {
            let results =
                calls.iter().map(|read| env.not_run(read.call, &read.arguments, PROVIDER_FAILED_TEXT)).collect();
            let error = match &message.error {
                Some(error) => error.to_string(),
                None => "the model's response failed without saying why".to_string(),
            };
            return self.end_turn(turn, message, results, TurnEndReason::Error, Some(error));
        }
        if message.stop_reason == StopReason::Aborted || stopped.is_some() {
            let cause = stopped.unwrap_or(StopCause::Aborted);
            let results =
                calls.iter().map(|read| env.not_run(read.call, &read.arguments, cause.result_text())).collect();
            return self.end_turn(turn, message, results, cause.reason(), None);
        }
        if message.stop_reason == StopReason::Refusal {
            // The run stops: the next turn would only ask the same again.
            let results = calls.iter().map(|read| env.not_run(read.call, &read.arguments, REFUSED_TEXT)).collect();
            return self.end_turn(turn, message, results, TurnEndReason::Refusal, None);
        }
        if calls.is_empty() {
            return self.end_final_answer(turn, message);
        }
        if message.stop_reason == StopReason::Length {
            let results = calls.iter().map(|read| env.not_run(read.call, &read.arguments, LENGTH_CUT_TEXT)).collect();
            let reason = self.observation_reason(turn);
            return self.end_turn(turn, message, results, reason, None);
        }

        // A repeated call is not run, and neither is anything after it.
        let mut repeat_at = None;
        for (index, read) in calls.iter().enumerate() {
            let arguments = read.arguments.as_ref().unwrap_or(&read.call.arguments);
            if self.repeats.is_repeat(read.call, arguments) {
                repeat_at = Some(index);
                break;
            }
        }
        let run_now = &calls[..repeat_at.unwrap_or(calls.len())];
        if !run_now.is_empty() {
            let announced: Vec<_> = run_now.iter().map(|read| read.call.clone()).collect();
            self.hooks.before_tool_calls(turn, &announced).await;
        }
        let executed = env.run_calls(run_now).await;
        let stopped = executed.iter().find_map(|done| done.stopped);
        let mut results: Vec<ToolResultMessage> = executed.into_iter().map(|done| done.result).collect();
        if let Some(repeat_at) = repeat_at {
            for (index, read) in calls.iter().enumerate().skip(repeat_at) {
                let text = if index == repeat_at { REPEAT_TEXT } else { AFTER_REPEAT_TEXT };
                results.push(env.not_run(read.call, &read.arguments, text));
            }
        }
        let reason = match (stopped, repeat_at) {
            (Some(cause), _) => cause.reason(),
            (None, Some(_)) => TurnEndReason::RepeatedAction,
            (None, None) => self.observation_reason(turn),
        };
        self.end_turn(turn, message, results, reason, None)
    }

    /// Why the next model call may not be made: its estimated cost is more than the budget has
    /// left after this run's calls so far.
    fn over_budget(&mut self) -> Option<String> {
        let left = match &self.limits.shared_budget {
            // A budget of turns only: no call is too dear.
            Some(shared) if shared.left().is_infinite() => return None,
            Some(shared) => shared.left(),
            None => self.limits.max_cost_usd? - self.usage.cost.total,
        };
        let specs = self.specs.for_tools(&self.context.tools);
        let next = next_call_cost(&self.context.model, &self.context.system_prompt, &specs, &self.context.messages);
        (next > left).then(|| {
            format!(
                "the next model call would cost about ${next:.4}, more than the ${:.4} left of the budget",
                left.max(0.0)
            )
        })
    }

    /// The turns taken against the limit after `turn`: this run's, or its family's when it shares
    /// a budget (a subagent's turns are its parent's too).
    fn turns_taken(&self, turn: u32) -> u32 {
        let family = self.limits.shared_budget.as_ref().map_or(0, |shared| shared.turns());
        turn.max(family)
    }

    /// The reason a turn whose tool results go back to the model ends with.
    fn observation_reason(&self, turn: u32) -> TurnEndReason {
        match self.interrupt.stopped() {
            Some(cause) => cause.reason(),
            None if self.turns_taken(turn) >= self.limits.max_turns => TurnEndReason::MaxTurns,
            None => TurnEndReason::ToolObservations,
        }
    }

    /// Appends the results, emits `turn_end`, and says whether the run goes on.
    fn end_turn(
        &mut self,
        turn: u32,
        message: AssistantMessage,
        results: Vec<ToolResultMessage>,
        reason: TurnEndReason,
        error: Option<String>,
    ) -> TurnEnd {
        for result in &results {
            self.append(Message::ToolResult(result.clone()));
        }
        (self.emit)(AgentEvent::TurnEnd { turn, reason, message, tool_results: results });
        if reason != TurnEndReason::ToolObservations {
            return TurnEnd::Stop { reason, error };
        }
        TurnEnd::Observations
    }

    /// The model answered without tools: the run ends unless messages are queued.
    fn end_final_answer(&mut self, turn: u32, message: AssistantMessage) -> TurnEnd {
        let reason = TurnEndReason::FinalAnswer;
        (self.emit)(AgentEvent::TurnEnd { turn, reason, message, tool_results: Vec::new() });
        if self.turns_taken(turn) >= self.limits.max_turns {
            // Queued messages stay queued for the next run.
            return TurnEnd::Stop { reason, error: None };
        }
        let mut queued = self.hooks.steering_messages();
        if queued.is_empty() {
            queued = self.hooks.follow_up_messages();
        }
        if queued.is_empty() {
            return TurnEnd::Stop { reason, error: None };
        }
        TurnEnd::Queued(queued)
    }

    /// Streams one assistant message, emitting `message_start`, `message_update`s and
    /// `message_end`, and appends it. The call is cancelled when the run is interrupted.
    async fn stream_message(&mut self) -> AssistantMessage {
        let (messages, chars) = match self.hooks.transform_context(&self.context.messages).await {
            Some(transformed) => {
                let chars = transformed.iter().map(message_chars).sum();
                (Messages::from(transformed), chars)
            }
            None => self.shared_messages(),
        };
        let request = Request {
            model: self.context.model.clone(),
            system_prompt: self.context.system_prompt.clone(),
            messages,
            tools: self.specs.for_tools(&self.context.tools),
            max_tokens: None,
            thinking: self.context.thinking,
        };
        let empty = AssistantMessage {
            provider: request.model.provider.clone(),
            model: request.model.id.clone(),
            timestamp: now_ms(),
            ..AssistantMessage::default()
        };
        (self.emit)(AgentEvent::MessageStart { message: Message::Assistant(empty.clone()) });
        // Counted before sending: a conversation far over the window is refused here (and the
        // harness compacts it), never sent whole.
        if let Some(error) = over_window(&request, chars) {
            let message = AssistantMessage { stop_reason: StopReason::Error, error: Some(error), ..empty };
            (self.emit)(AgentEvent::MessageEnd { message: Message::Assistant(message.clone()) });
            self.append(Message::Assistant(message.clone()));
            return message;
        }

        let emit = self.emit;
        let on_event = move |delta: StreamEvent| emit(AgentEvent::MessageUpdate { delta });
        let call_cancel = self.interrupt.cancel.child_token();
        let provider = self.provider;
        let stream = provider.stream(&request, &on_event, &call_cancel);
        tokio::pin!(stream);
        let message = tokio::select! {
            message = &mut stream => message,
            cause = self.interrupt.wait() => {
                call_cancel.cancel();
                match tokio::time::timeout(CANCEL_GRACE, &mut stream).await {
                    Ok(message) => message,
                    Err(_) => {
                        tracing::warn!("the provider did not return after its call was cancelled");
                        let error = ProviderError::new(ProviderErrorKind::Aborted, cause.result_text());
                        AssistantMessage { stop_reason: StopReason::Aborted, error: Some(error), ..empty }
                    }
                }
            }
        };
        self.usage.add(&message.usage);
        if let Some(shared) = &self.limits.shared_budget {
            shared.spend(message.usage.cost.total);
        }
        (self.emit)(AgentEvent::MessageEnd { message: Message::Assistant(message.clone()) });
        self.append(Message::Assistant(message.clone()));
        message
    }

    /// Appends messages from the user (steering, follow-up) with their events.
    fn deliver(&mut self, messages: Vec<Message>) {
        if messages.is_empty() {
            return;
        }
        // After the user speaks, doing the same thing again may be exactly what was asked.
        self.repeats.reset();
        for message in messages {
            self.append_announced(message);
        }
    }

    fn append_announced(&mut self, message: Message) {
        (self.emit)(AgentEvent::MessageStart { message: message.clone() });
        (self.emit)(AgentEvent::MessageEnd { message: message.clone() });
        self.append(message);
    }

    /// The context's messages for a request, and the characters they add up to (see
    /// [`over_window`]). A hook between turns may have put other messages in the context
    /// (automatic compaction replaces it), so a count is kept only while its message is the
    /// same value.
    fn shared_messages(&mut self) -> (Messages, usize) {
        let messages = &self.context.messages;
        let same = self.sent.iter().zip(messages).take_while(|((sent, _), message)| Arc::ptr_eq(sent, message)).count();
        self.sent.truncate(same);
        self.sent.extend(messages[same..].iter().map(|message| (message.clone(), message_chars(message))));
        let chars = self.sent.iter().map(|(_, chars)| chars).sum();
        (Messages::from(messages.clone()), chars)
    }

    fn append(&mut self, message: Message) {
        self.context.messages.push(Arc::new(message.clone()));
        self.added.push(message);
    }
}
