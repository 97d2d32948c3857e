//! Running one assistant message's tool calls: *prepare → gate → execute* for each, with
//! timeouts, retries of read-only calls, truncation, and the `after_tool_call` hook.
//!
//! Scheduling: the calls are split into maximal runs of consecutive read-only calls, which run
//! concurrently, and single mutating calls, which run alone, in order. A read that follows a
//! write therefore sees the write, and two writes never race. Results come back in the calls'
//! order whatever order they finish in.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use reins_ai::{Content, ToolCall, ToolResultMessage, now_ms};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::context::Limits;
use crate::event::{AgentEvent, EventSink, TurnEndReason};
use crate::hooks::{Gate, Hooks};
use crate::look::ToolLook;
use crate::repair::repair_arguments;
use crate::tool::{Tool, ToolContext, ToolError, ToolOutput};

/// Why a run stops from outside the model's control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopCause {
    Aborted,
    Deadline,
}

/// What ends a run early: the caller's cancel token and the wall-clock deadline.
#[derive(Debug, Clone)]
pub(crate) struct Interrupt {
    pub(crate) cancel: CancellationToken,
    pub(crate) deadline: Option<Instant>,
}

/// What the calls of one message share.
pub(crate) struct CallEnv<'a> {
    pub(crate) tools: &'a [Arc<dyn Tool>],
    pub(crate) hooks: &'a dyn Hooks,
    pub(crate) limits: &'a Limits,
    pub(crate) emit: &'a EventSink,
    pub(crate) interrupt: &'a Interrupt,
}

/// A tool call with its arguments read (and repaired if they were malformed).
pub(crate) struct ReadCall<'a> {
    pub(crate) call: &'a ToolCall,
    pub(crate) arguments: Result<Value, String>,
}

/// The result of one call, and whether the run was interrupted while it ran.
pub(crate) struct CallResult {
    pub(crate) result: ToolResultMessage,
    pub(crate) stopped: Option<StopCause>,
}

enum Outcome {
    Done { output: ToolOutput, note: Option<String> },
    Failed(String),
    Stopped(StopCause),
}

impl StopCause {
    pub(crate) fn reason(self) -> TurnEndReason {
        match self {
            StopCause::Aborted => TurnEndReason::Aborted,
            StopCause::Deadline => TurnEndReason::Deadline,
        }
    }

    /// The text of the error result of a call this cause left unfinished.
    pub(crate) fn result_text(self) -> &'static str {
        match self {
            StopCause::Aborted => "aborted: the run was stopped before this call finished",
            StopCause::Deadline => "aborted: the run's time limit passed before this call finished",
        }
    }
}

impl Interrupt {
    /// The cause, if the run must stop now.
    pub(crate) fn stopped(&self) -> Option<StopCause> {
        if self.cancel.is_cancelled() {
            Some(StopCause::Aborted)
        } else if self.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            Some(StopCause::Deadline)
        } else {
            None
        }
    }

    /// Resolves when the run must stop.
    pub(crate) async fn wait(&self) -> StopCause {
        match self.deadline {
            Some(deadline) => tokio::select! {
                _ = self.cancel.cancelled() => StopCause::Aborted,
                _ = tokio::time::sleep_until(deadline) => StopCause::Deadline,
            },
            None => {
                self.cancel.cancelled().await;
                StopCause::Aborted
            }
        }
    }
}

/// Reads a call's arguments: a string holds JSON the provider could not parse, which is repaired
/// if possible; missing arguments are an empty object.
pub(crate) fn read_arguments(call: &ToolCall) -> ReadCall<'_> {
    let arguments = match &call.arguments {
        Value::String(raw) => repair_arguments(raw),
        Value::Null => Ok(Value::Object(Default::default())),
        other => Ok(other.clone()),
    };
    ReadCall { call, arguments }
}

impl CallEnv<'_> {
    fn find(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name)
    }

    fn is_read_only(&self, name: &str) -> bool {
        // An unknown tool does nothing, so it can share a batch with reads.
        self.find(name).is_none_or(|tool| tool.read_only())
    }

    /// Runs `calls` and returns their results in the same order. Once the run is interrupted,
    /// calls not yet started get error results without running.
    pub(crate) async fn run_calls(&self, calls: &[ReadCall<'_>]) -> Vec<CallResult> {
        let mut results = Vec::with_capacity(calls.len());
        let mut start = 0;
        while start < calls.len() {
            let read_only = self.is_read_only(&calls[start].call.name);
            let mut end = start + 1;
            if read_only {
                while end < calls.len() && self.is_read_only(&calls[end].call.name) {
                    end += 1;
                }
            }
            let batch = &calls[start..end];
            match self.interrupt.stopped() {
                Some(cause) => {
                    for read in batch {
                        let result = self.not_run(read.call, &read.arguments, cause.result_text());
                        results.push(CallResult { result, stopped: Some(cause) });
                    }
                }
                None => results.extend(join_all(batch.iter().map(|read| self.run_call(read)).collect()).await),
            }
            start = end;
        }
        results
    }

    /// Reports a call that was not run, with the events a UI expects for any call.
    pub(crate) fn not_run(&self, call: &ToolCall, arguments: &Result<Value, String>, text: &str) -> ToolResultMessage {
        self.emit_start(call, arguments);
        let result = error_result(call, text.to_string());
        self.emit_end(&result);
        result
    }

    async fn run_call(&self, read: &ReadCall<'_>) -> CallResult {
        let call = read.call;
        self.emit_start(call, &read.arguments);
        let call_cancel = self.interrupt.cancel.child_token();
        let outcome = tokio::select! {
            outcome = self.pipeline(read, &call_cancel) => outcome,
            cause = self.interrupt.wait() => Outcome::Stopped(cause),
        };
        // Whatever still runs on the tool's behalf (a child process) is told to stop.
        call_cancel.cancel();
        let (mut result, stopped) = match outcome {
            Outcome::Done { output, note } => {
                if let Some(todos) = output.todos {
                    (self.emit)(AgentEvent::TodoUpdate { tool_call_id: call.id.clone(), todos });
                }
                let mut content = output.content;
                if let Some(note) = note {
                    append_text(&mut content, &note);
                }
                let result = ToolResultMessage {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    content,
                    is_error: false,
                    details: output.details,
                    timestamp: now_ms(),
                };
                (result, None)
            }
            Outcome::Failed(text) => (error_result(call, text), None),
            Outcome::Stopped(cause) => (error_result(call, cause.result_text().to_string()), Some(cause)),
        };
        crate::policy::truncate_content(&mut result.content, self.limits.max_result_bytes);
        if stopped.is_none() {
            self.hooks.after_tool_call(call, &mut result).await;
        }
        self.emit_end(&result);
        CallResult { result, stopped }
    }

    /// prepare → gate → execute, with retries of read-only calls.
    async fn pipeline(&self, read: &ReadCall<'_>, cancel: &CancellationToken) -> Outcome {
        let call = read.call;
        let Some(tool) = self.find(&call.name) else {
            let names: Vec<&str> = self.tools.iter().map(|tool| tool.name()).collect();
            return Outcome::Failed(format!(
                "unknown tool `{}`; the available tools are: {}",
                call.name,
                if names.is_empty() { "(none)".to_string() } else { names.join(", ") }
            ));
        };
        let arguments = match &read.arguments {
            Ok(arguments) => arguments,
            Err(problem) => return Outcome::Failed(problem.clone()),
        };
        let mut prepared = match tool.prepare(arguments).await {
            Ok(prepared) => prepared,
            Err(err) => return Outcome::Failed(err.0),
        };
        let (proposal, note) = match self.hooks.before_tool_call(call, prepared.proposal.as_ref(), cancel).await {
            Gate::Allow => (prepared.proposal.clone(), None),
            Gate::AllowChanged { proposal, note } => (Some(proposal), Some(note)),
            Gate::Block { reason } => return Outcome::Failed(reason),
        };
        let retries = if tool.read_only() { self.limits.read_only_retries } else { 0 };
        let timeout = tool.timeout().unwrap_or(self.limits.tool_timeout);
        let mut attempt = 0;
        loop {
            let on_update = |partial: &str| {
                (self.emit)(AgentEvent::ToolExecutionUpdate {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    partial: partial.to_string(),
                })
            };
            // Each attempt has its own token, so what a timed-out attempt left running is stopped
            // before the next one starts.
            let attempt_cancel = cancel.child_token();
            let cx = ToolContext { tool_call_id: &call.id, cancel: attempt_cancel.clone(), on_update: &on_update };
            let executed = tokio::time::timeout(timeout, tool.execute(prepared, proposal.clone(), cx)).await;
            attempt_cancel.cancel();
            let failure = match executed {
                Ok(Ok(output)) => return Outcome::Done { output, note },
                Ok(Err(err)) => err.0,
                Err(_) => format!("the tool `{}` timed out after {} s and was stopped", call.name, secs(timeout)),
            };
            if attempt >= retries {
                return Outcome::Failed(failure);
            }
            attempt += 1;
            tracing::debug!(tool = %call.name, attempt, %failure, "retrying a read-only tool call");
            // `execute` consumed the prepared input; a read-only call can be prepared again.
            prepared = match tool.prepare(arguments).await {
                Ok(prepared) => prepared,
                Err(ToolError(text)) => return Outcome::Failed(text),
            };
        }
    }

    fn emit_start(&self, call: &ToolCall, arguments: &Result<Value, String>) {
        let args = arguments.as_ref().unwrap_or(&call.arguments).clone();
        // A tool the agent does not have looks like its name and arguments.
        let look = match self.find(&call.name) {
            Some(tool) => tool.look(&args),
            None => ToolLook::plain(&call.name, &args),
        };
        (self.emit)(AgentEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args,
            look,
        });
    }

    fn emit_end(&self, result: &ToolResultMessage) {
        (self.emit)(AgentEvent::ToolExecutionEnd {
            tool_call_id: result.tool_call_id.clone(),
            tool_name: result.tool_name.clone(),
            result: result.clone(),
            is_error: result.is_error,
        });
    }
}

pub(crate) fn error_result(call: &ToolCall, text: String) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![Content::text(text)],
        is_error: true,
        details: None,
        timestamp: now_ms(),
    }
}

fn append_text(content: &mut Vec<Content>, note: &str) {
    match content.iter_mut().rev().find_map(|block| match block {
        Content::Text { text } => Some(text),
        _ => None,
    }) {
        Some(text) => {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(note);
        }
        None => content.push(Content::text(note)),
    }
}

/// Seconds for a message: `600`, `0.05`.
fn secs(duration: Duration) -> String {
    format!("{}", duration.as_secs_f64())
}

/// Polls all `futures` in this task until every one is done; outputs are in input order.
/// (The crate has no `futures` dependency, and spawning would need `'static` borrows.)
async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending { Poll::Pending } else { Poll::Ready(()) }
    })
    .await;
    outputs.into_iter().flatten().collect()
}
