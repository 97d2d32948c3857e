//! The loop through `run`: scripted model replies in, transcript and events out.

mod support;

use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use expect_test::{Expect, expect};
use reins_agent::{Gate, Hooks, Limits, NoHooks, Proposal, RunOutcome, SharedBudget, Tool, TurnEndReason, run};
use reins_ai::{Message, StopReason};
use serde_json::json;
use support::*;
use tokio::sync::Barrier;
use tokio_util::sync::CancellationToken;

/// What a run produced, for the checks below.
struct Ran {
    outcome: RunOutcome,
    requests: Vec<reins_ai::Request>,
    recorder: Recorder,
}

async fn run_with(replies: Vec<Reply>, tools: Vec<Arc<dyn Tool>>, hooks: &dyn Hooks, limits: Limits) -> Ran {
    let provider = ScriptedProvider::new(replies);
    let recorder = Recorder::default();
    let outcome = run(
        context(tools),
        vec![Message::user("go")],
        provider.as_ref(),
        hooks,
        &limits,
        &recorder.sink(),
        CancellationToken::new(),
    )
    .await;
    Ran { outcome, requests: provider.requests(), recorder }
}

/// Runs the script and compares the reason, error and transcript of the run.
async fn check_run(replies: Vec<Reply>, tools: Vec<Arc<dyn Tool>>, limits: Limits, expected: Expect) -> Ran {
    let ran = run_with(replies, tools, &NoHooks, limits).await;
    expected.assert_eq(&summary(&ran.outcome));
    ran
}

fn summary(outcome: &RunOutcome) -> String {
    let error = outcome.error.as_deref().map(|error| format!(" ({error})")).unwrap_or_default();
    format!("{:?}{error}\n{}", outcome.reason, transcript(&outcome.messages))
}

fn read() -> Arc<dyn Tool> {
    Arc::new(ReadTool)
}

#[tokio::test]
async fn reads_a_file_then_answers() {
    let ran = check_run(
        vec![calls(&[("t1", "read", json!({"path": "src/main.rs"}))]), answer("It prints hello.")],
        vec![read()],
        Limits::default(),
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call t1 read {"path":"src/main.rs"}
            result t1 read: contents of src/main.rs
            assistant (Stop): It prints hello.
        "#]],
    )
    .await;
    // The second model call sees the call and its result, paired by id, after the prompt.
    expect![[r#"
        user: go
        assistant (ToolUse): call t1 read {"path":"src/main.rs"}
        result t1 read: contents of src/main.rs
    "#]]
    .assert_eq(&sent(&ran.requests[1]));
    assert_eq!(ran.requests[1].tools.iter().map(|tool| tool.name.as_str()).collect::<Vec<_>>(), ["read"]);
    assert_eq!(ran.requests[1].system_prompt, "You are a test.");
    assert_eq!(ran.outcome.usage.total_tokens, 30);
}

#[tokio::test]
async fn events_of_a_simple_run_come_in_order() {
    let ran = run_with(
        vec![calls(&[("t1", "read", json!({"path": "a.rs"}))]), answer("done")],
        vec![read()],
        &NoHooks,
        Limits::default(),
    )
    .await;
    expect![[r#"
        agent_start
        message_start user
        message_end user
        turn_start 1
        message_start assistant
        message_update tool_call t1
        message_end assistant
        tool_execution_start t1
        tool_execution_end t1
        turn_end 1 tool_observations results=1
        turn_start 2
        message_start assistant
        message_update text "done"
        message_end assistant
        turn_end 2 final_answer results=0
        agent_end final_answer messages=4 tokens=30
    "#]]
    .assert_eq(&ran.recorder.kinds());
}

#[tokio::test]
async fn read_only_calls_run_concurrently() {
    // Each call waits for the other: run one after the other, they would time out.
    let barrier: Arc<dyn Tool> = Arc::new(BarrierTool(Arc::new(Barrier::new(2))));
    let limits = Limits { tool_timeout: Duration::from_secs(5), read_only_retries: 0, ..Limits::default() };
    check_run(
        vec![calls(&[("a", "meet", json!({"text": "a"})), ("b", "meet", json!({"text": "b"}))]), answer("ok")],
        vec![barrier],
        limits,
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call a meet {"text":"a"} | call b meet {"text":"b"}
            result a meet: met a
            result b meet: met b
            assistant (Stop): ok
        "#]],
    )
    .await;
}

#[tokio::test]
async fn results_keep_call_order_when_calls_finish_out_of_order() {
    let ran = check_run(
        vec![calls(&[("slow", "sleep", json!({"ms": 300})), ("fast", "sleep", json!({"ms": 1}))]), answer("ok")],
        vec![Arc::new(SleepTool)],
        Limits::default(),
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call slow sleep {"ms":300} | call fast sleep {"ms":1}
            result slow sleep: slept 300 ms
            result fast sleep: slept 1 ms
            assistant (Stop): ok
        "#]],
    )
    .await;
    // They finished in the other order.
    let ends: Vec<String> =
        ran.recorder.kinds().lines().filter(|line| line.starts_with("tool_execution_end")).map(String::from).collect();
    assert_eq!(ends, ["tool_execution_end fast", "tool_execution_end slow"]);
}

#[tokio::test]
async fn mutating_calls_run_one_at_a_time_in_order() {
    let write = Arc::new(WriteTool::default());
    let log = write.log.clone();
    check_run(
        vec![
            calls(&[
                ("w1", "write", json!({"path": "a"})),
                ("w2", "write", json!({"path": "b"})),
                ("r1", "read", json!({"path": "b"})),
            ]),
            answer("ok"),
        ],
        vec![write, read()],
        Limits::default(),
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call w1 write {"path":"a"} | call w2 write {"path":"b"} | call r1 read {"path":"b"}
            result w1 write: wrote a
            result w2 write: wrote b
            result r1 read: contents of b
            assistant (Stop): ok
        "#]],
    )
    .await;
    assert_eq!(*log.lock().unwrap(), ["start a", "end a", "start b", "end b"]);
}

#[tokio::test]
async fn invalid_arguments_name_the_field() {
    check_run(
        vec![calls(&[("t1", "read", json!({"path": 3}))]), answer("sorry")],
        vec![read()],
        Limits::default(),
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call t1 read {"path":3}
            result t1 read error: invalid arguments: path: invalid type: integer `3`, expected a string
            assistant (Stop): sorry
        "#]],
    )
    .await;
}

#[tokio::test]
async fn malformed_arguments_are_repaired() {
    check_run(
        vec![calls(&[("t1", "read", json!("```json\n{path: 'a.rs',"))]), answer("ok")],
        vec![read()],
        Limits::default(),
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call t1 read "```json\n{path: 'a.rs',"
            result t1 read: contents of a.rs
            assistant (Stop): ok
        "#]],
    )
    .await;
}

#[tokio::test]
async fn unrepairable_arguments_are_an_error_result() {
    check_run(
        vec![calls(&[("t1", "read", json!(r#"{"path" "a.rs"}"#))]), answer("ok")],
        vec![read()],
        Limits::default(),
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call t1 read "{\"path\" \"a.rs\"}"
            result t1 read error: the arguments are not valid JSON (expected `:` at line 1 column 9) and could not be repaired, so the call was not run; send a JSON object matching the tool's schema. Received: {"path" "a.rs"}
            assistant (Stop): ok
        "#]],
    )
    .await;
}

#[tokio::test]
async fn unknown_tool_lists_the_available_ones() {
    check_run(
        vec![calls(&[("t1", "cat", json!({"path": "a.rs"}))]), answer("ok")],
        vec![read(), Arc::new(EchoTool)],
        Limits::default(),
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call t1 cat {"path":"a.rs"}
            result t1 cat error: unknown tool `cat`; the available tools are: read, echo
            assistant (Stop): ok
        "#]],
    )
    .await;
}

async fn check_gate(verdict: impl Fn(Option<&Proposal>) -> Gate + Send + Sync + 'static, expected: Expect) {
    let hooks = GateHooks(Box::new(move |_, proposal| verdict(proposal)));
    let ran = run_with(
        vec![calls(&[("t1", "run", json!({"command": "rm -rf /"}))]), answer("ok")],
        vec![Arc::new(RunTool)],
        &hooks,
        Limits::default(),
    )
    .await;
    expected.assert_eq(&summary(&ran.outcome));
}

#[tokio::test]
async fn gate_block_gives_the_reason_to_the_model() {
    check_gate(
        |_| Gate::Block { reason: "the user rejected this command: too dangerous".into() },
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call t1 run {"command":"rm -rf /"}
            result t1 run error: the user rejected this command: too dangerous
            assistant (Stop): ok
        "#]],
    )
    .await;
}

#[tokio::test]
async fn gate_allow_changed_runs_the_changed_proposal_with_a_note() {
    check_gate(
        |proposal| match proposal {
            Some(Proposal::Command(command)) => {
                let mut changed = command.clone();
                changed.command = "ls /".into();
                Gate::AllowChanged { proposal: Proposal::Command(changed), note: "the user changed the command".into() }
            }
            other => Gate::Block { reason: format!("no proposal: {other:?}") },
        },
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call t1 run {"command":"rm -rf /"}
            result t1 run: ran `ls /`
            the user changed the command
            assistant (Stop): ok
        "#]],
    )
    .await;
}

#[tokio::test]
async fn a_tool_that_takes_too_long_is_stopped() {
    let slow = Arc::new(SlowTool { timeout: Some(Duration::from_millis(50)), ..SlowTool::default() });
    check_run(
        vec![calls(&[("t1", "slow", json!({}))]), answer("ok")],
        vec![slow.clone()],
        Limits::default(),
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call t1 slow {}
            result t1 slow error: the tool `slow` timed out after 0.05 s and was stopped
            assistant (Stop): ok
        "#]],
    )
    .await;
    assert!(slow.was_cancelled());
}

#[tokio::test]
async fn failed_read_only_calls_are_retried_and_mutating_ones_are_not() {
    let limits = Limits { read_only_retries: 1, ..Limits::default() };
    check_run(
        vec![calls(&[("r", "flaky_read", json!({})), ("w", "flaky_write", json!({}))]), answer("ok")],
        vec![
            Arc::new(FlakyTool::<true> { failures: 1, calls: AtomicU32::new(0) }),
            Arc::new(FlakyTool::<false> { failures: 1, calls: AtomicU32::new(0) }),
        ],
        limits,
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call r flaky_read {} | call w flaky_write {}
            result r flaky_read: worked on attempt 2
            result w flaky_write error: failure on attempt 1
            assistant (Stop): ok
        "#]],
    )
    .await;
}

#[tokio::test]
async fn long_results_are_truncated_with_a_notice() {
    let limits = Limits { max_result_bytes: 10, ..Limits::default() };
    check_run(
        vec![calls(&[("t1", "echo", json!({"text": "0123456789abcdef"}))]), answer("ok")],
        vec![Arc::new(EchoTool)],
        limits,
        expect![[r#"
            FinalAnswer
            user: go
            assistant (ToolUse): call t1 echo {"text":"0123456789abcdef"}
            result t1 echo: 0123456789
            [output truncated: 10 of 16 bytes shown]
            assistant (Stop): ok
        "#]],
    )
    .await;
}

#[tokio::test]
async fn a_repeated_call_across_turns_stops_the_run_without_running() {
    let write = Arc::new(WriteTool::default());
    let log = write.log.clone();
    let ran = check_run(
        vec![
            calls(&[("t1", "write", json!({"path": "a"}))]),
            calls(&[("t2", "write", json!({"path": "a"}))]),
            answer("never asked"),
        ],
        vec![write],
        Limits::default(),
        expect![[r#"
            RepeatedAction
            user: go
            assistant (ToolUse): call t1 write {"path":"a"}
            result t1 write: wrote a
            assistant (ToolUse): call t2 write {"path":"a"}
            result t2 write error: this call is identical to the previous one (same tool, same arguments), so it was not run again and the run stopped; the previous result stands
        "#]],
    )
    .await;
    assert_eq!(ran.requests.len(), 2);
    assert_eq!(*log.lock().unwrap(), ["start a", "end a"]);
}

#[tokio::test]
async fn a_repeated_call_within_a_message_stops_what_follows() {
    check_run(
        vec![calls(&[
            ("t1", "read", json!({"path": "a"})),
            ("t2", "read", json!({"path": "a"})),
            ("t3", "read", json!({"path": "b"})),
        ])],
        vec![read()],
        Limits::default(),
        expect![[r#"
            RepeatedAction
            user: go
            assistant (ToolUse): call t1 read {"path":"a"} | call t2 read {"path":"a"} | call t3 read {"path":"b"}
            result t1 read: contents of a
            result t2 read error: this call is identical to the previous one (same tool, same arguments), so it was not run again and the run stopped; the previous result stands
            result t3 read error: not run: the run stopped because the call before it repeated the previous call
        "#]],
    )
    .await;
}

#[tokio::test]
async fn max_turns_stops_after_the_last_allowed_turn() {
    let limits = Limits { max_turns: 2, ..Limits::default() };
    let ran = check_run(
        vec![
            calls(&[("t1", "read", json!({"path": "a"}))]),
            calls(&[("t2", "read", json!({"path": "b"}))]),
            answer("never asked"),
        ],
        vec![read()],
        limits,
        expect![[r#"
            MaxTurns
            user: go
            assistant (ToolUse): call t1 read {"path":"a"}
            result t1 read: contents of a
            assistant (ToolUse): call t2 read {"path":"b"}
            result t2 read: contents of b
        "#]],
    )
    .await;
    assert_eq!(ran.requests.len(), 2);
}

#[tokio::test]
async fn deadline_stops_a_running_tool() {
    let limits = Limits { deadline: Some(Duration::from_millis(250)), ..Limits::default() };
    let slow = Arc::new(SlowTool::default());
    check_run(
        vec![calls(&[("t1", "slow", json!({})), ("t2", "read", json!({"path": "a"}))]), answer("never asked")],
        vec![slow.clone(), read()],
        limits,
        expect![[r#"
            Deadline
            user: go
            assistant (ToolUse): call t1 slow {} | call t2 read {"path":"a"}
            result t1 slow error: aborted: the run's time limit passed before this call finished
            result t2 read error: aborted: the run's time limit passed before this call finished
        "#]],
    )
    .await;
    assert!(slow.was_cancelled());
}

#[tokio::test]
async fn deadline_stops_a_model_call() {
    let limits = Limits { deadline: Some(Duration::from_millis(100)), ..Limits::default() };
    check_run(
        vec![Reply::Hang],
        vec![read()],
        limits,
        expect![[r#"
            Deadline
            user: go
            assistant (Aborted): 
        "#]],
    )
    .await;
}

#[tokio::test]
async fn a_length_stop_fails_its_tool_calls_and_goes_on() {
    let cut = calls_message(&[("t1", "read", json!("{\"path\": \"src/ma"))], StopReason::Length);
    check_run(
        vec![Reply::Message(cut), answer("retrying later")],
        vec![read()],
        Limits::default(),
        expect![[r#"
            FinalAnswer
            user: go
            assistant (Length): call t1 read "{\"path\": \"src/ma"
            result t1 read error: the response was cut off by the output limit before the arguments were complete; the call was not run — retry with a shorter call (e.g. split the edit)
            assistant (Stop): retrying later
        "#]],
    )
    .await;
}

#[tokio::test]
async fn a_refusal_ends_the_run_and_runs_none_of_its_calls() {
    let refused = calls_message(&[("t1", "read", json!({"path": "a"}))], StopReason::Refusal);
    check_run(
        vec![Reply::Message(refused), answer("never asked")],
        vec![read()],
        Limits::default(),
        expect![[r#"
        Refusal
        user: go
        assistant (Refusal): call t1 read {"path":"a"}
        result t1 read error: not run: the model refused to answer
    "#]],
    )
    .await;
}

#[tokio::test]
async fn a_provider_error_ends_the_run_with_its_message() {
    let ran = check_run(
        vec![calls(&[("t1", "read", json!({"path": "a"}))])],
        vec![read()],
        Limits::default(),
        expect![[r#"
            Error (provider error: the script has no more replies)
            user: go
            assistant (ToolUse): call t1 read {"path":"a"}
            result t1 read: contents of a
            assistant (Error): 
        "#]],
    )
    .await;
    assert!(ran.recorder.kinds().contains("turn_end 2 error results=0\nagent_end error"));
}

#[tokio::test]
async fn cancelling_mid_tool_aborts_and_pairs_every_call_with_a_result() {
    let slow = Arc::new(SlowTool::default());
    let provider = ScriptedProvider::new(vec![
        calls(&[("t1", "slow", json!({})), ("t2", "read", json!({"path": "a"}))]),
        answer("never asked"),
    ]);
    let recorder = Recorder::default();
    let cancel = CancellationToken::new();
    let canceller = {
        let (started, cancel) = (slow.started.clone(), cancel.clone());
        tokio::spawn(async move {
            started.notified().await;
            cancel.cancel();
        })
    };
    let outcome = run(
        context(vec![slow.clone(), read()]),
        vec![Message::user("go")],
        provider.as_ref(),
        &NoHooks,
        &Limits::default(),
        &recorder.sink(),
        cancel,
    )
    .await;
    canceller.await.unwrap();
    expect![[r#"
        Aborted
        user: go
        assistant (ToolUse): call t1 slow {} | call t2 read {"path":"a"}
        result t1 slow error: aborted: the run was stopped before this call finished
        result t2 read error: aborted: the run was stopped before this call finished
    "#]]
    .assert_eq(&summary(&outcome));
    assert!(slow.was_cancelled());
    assert_eq!(provider.requests().len(), 1);
    assert!(recorder.kinds().contains("tool_execution_update t1 \"working\""));
}

#[tokio::test]
async fn hooks_steer_and_prepare_the_next_turn_in_order() {
    let hooks = QueueHooks::default();
    hooks.steering.lock().unwrap().push(Message::user("before anything"));
    let ran = run_with(
        vec![calls(&[("t1", "read", json!({"path": "a"}))]), answer("done")],
        vec![read()],
        &hooks,
        Limits::default(),
    )
    .await;
    expect![[r#"
        FinalAnswer
        user: go
        user: before anything
        assistant (ToolUse): call t1 read {"path":"a"}
        result t1 read: contents of a
        assistant (Stop): done
    "#]]
    .assert_eq(&summary(&ran.outcome));
    expect![[r#"
        steering_messages
        before_tool_calls 1 t1
        after_tool_call t1
        prepare_next_turn
        steering_messages
        steering_messages
        follow_up_messages
    "#]]
    .assert_eq(&hooks.log());
}

/// A model at $1,000 per million tokens in and out: a token costs a tenth of a cent.
fn priced(message: Reply) -> Reply {
    let Reply::Message(mut message) = message else { return message };
    message.usage.cost.total = (message.usage.input + message.usage.output) as f64 / 1000.0;
    Reply::Message(message)
}

#[tokio::test]
async fn a_run_stops_before_a_call_its_budget_would_not_cover() {
    let provider = ScriptedProvider::new(vec![
        priced(calls(&[("t1", "read", json!({"path": "a"}))])),
        priced(calls(&[("t2", "read", json!({"path": "b"}))])),
        priced(answer("never asked for")),
    ]);
    let mut context = context(vec![read()]);
    context.model.prices = reins_ai::Prices { input: 1000.0, output: 1000.0, ..Default::default() };
    // Each call costs $0.015; the third is estimated at about $0.02 (the last prompt, what came
    // after it and an answer as long as the last), more than the $0.01 left.
    let limits = Limits { max_cost_usd: Some(0.04), ..Limits::default() };
    let recorder = Recorder::default();
    let outcome = run(
        context,
        vec![Message::user("go")],
        provider.as_ref(),
        &NoHooks,
        &limits,
        &recorder.sink(),
        CancellationToken::new(),
    )
    .await;
    expect![[r#"
        Budget (the next model call would cost about $0.0240, more than the $0.0100 left of the budget)
        user: go
        assistant (ToolUse): call t1 read {"path":"a"}
        result t1 read: contents of a
        assistant (ToolUse): call t2 read {"path":"b"}
        result t2 read: contents of b
    "#]]
    .assert_eq(&summary(&outcome));
    assert_eq!(provider.requests().len(), 2);
    assert!(
        recorder.kinds().ends_with("turn_end 2 tool_observations results=1\nagent_end budget messages=5 tokens=30\n")
    );

    // Spent before it started: not even the first call is made.
    let provider = ScriptedProvider::new(vec![answer("no")]);
    let limits = Limits { max_cost_usd: Some(0.0), ..Limits::default() };
    let mut context = support::context(Vec::new());
    context.model.prices.input = 1.0;
    let outcome = run(
        context,
        vec![Message::user("go")],
        provider.as_ref(),
        &NoHooks,
        &limits,
        &recorder.sink(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!((outcome.reason, provider.requests().len()), (reins_agent::TurnEndReason::Budget, 0));
}

#[tokio::test]
async fn the_thinking_level_goes_with_every_call() {
    let provider = ScriptedProvider::new(vec![calls(&[("t1", "read", json!({"path": "a"}))]), answer("done")]);
    let mut context = context(vec![read()]);
    context.thinking = Some(reins_ai::ThinkingLevel::High);
    let recorder = Recorder::default();
    run(
        context,
        vec![Message::user("go")],
        provider.as_ref(),
        &NoHooks,
        &Limits::default(),
        &recorder.sink(),
        CancellationToken::new(),
    )
    .await;
    let levels: Vec<_> = provider.requests().iter().map(|request| request.thinking).collect();
    assert_eq!(levels, [Some(reins_ai::ThinkingLevel::High); 2]);
}

#[tokio::test]
async fn a_shared_budget_counts_what_others_spent_and_is_paid_from() {
    let provider = ScriptedProvider::new(vec![
        priced(calls(&[("t1", "read", json!({"path": "a"}))])),
        priced(answer("never asked for")),
    ]);
    let mut context = context(vec![read()]);
    context.model.prices = reins_ai::Prices { input: 1000.0, output: 1000.0, ..Default::default() };
    // The run's own limit would allow the second call; a subagent spent most of the family's.
    let shared = Arc::new(SharedBudget::new(0.05));
    shared.spend(0.02);
    let limits = Limits { max_cost_usd: Some(1.0), shared_budget: Some(shared.clone()), ..Limits::default() };
    let outcome = run(
        context,
        vec![Message::user("go")],
        provider.as_ref(),
        &NoHooks,
        &limits,
        &Recorder::default().sink(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(outcome.reason, TurnEndReason::Budget, "{:?}", outcome.error);
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(shared.spent(), 0.02 + outcome.usage.cost.total, "the run paid its call from the shared budget");
}

/// A hook that changes the conversation: `prepare_next_turn` replaces it (as automatic compaction
/// does) the first time, `transform_context` prunes what one call sends when `prune` is set.
#[derive(Default)]
struct RewritingHooks {
    replaced: std::sync::Mutex<bool>,
    prune: bool,
}

#[async_trait::async_trait]
impl Hooks for RewritingHooks {
    async fn prepare_next_turn(&self, context: &mut reins_agent::AgentContext) {
        let mut replaced = self.replaced.lock().unwrap();
        if !*replaced {
            *replaced = true;
            context.messages = vec![std::sync::Arc::new(Message::user("summary of the read"))];
        }
    }
    async fn transform_context(&self, messages: &[std::sync::Arc<Message>]) -> Option<Vec<Message>> {
        self.prune.then(|| messages.iter().rev().take(1).map(|message| Message::clone(message)).collect())
    }
}

fn sent(request: &reins_ai::Request) -> String {
    transcript(&request.messages)
}

#[tokio::test]
async fn each_request_carries_the_context_as_a_hook_left_it_and_shares_what_the_last_one_sent() {
    let replies = vec![
        calls(&[("t1", "read", json!({"path": "a.rs"}))]),
        calls(&[("t2", "read", json!({"path": "b.rs"}))]),
        answer("done"),
    ];
    let ran = run_with(replies, vec![read()], &RewritingHooks::default(), Limits::default()).await;
    let requests: Vec<String> = ran.requests.iter().map(sent).collect();
    expect![[r#"
        [
            "user: go\n",
            "user: summary of the read\n",
            "user: summary of the read\nassistant (ToolUse): call t2 read {\"path\":\"b.rs\"}\nresult t2 read: contents of b.rs\n",
        ]
    "#]]
    .assert_debug_eq(&requests);
    // The third request shares the messages of the second instead of copying them.
    let (second, third) = (&ran.requests[1].messages, &ran.requests[2].messages);
    assert!(std::ptr::eq(second.iter().next().unwrap(), third.iter().next().unwrap()));
}

#[tokio::test]
async fn transform_context_changes_what_a_call_sends_and_not_the_conversation() {
    let hooks = RewritingHooks { replaced: std::sync::Mutex::new(true), prune: true };
    let replies = vec![calls(&[("t1", "read", json!({"path": "a.rs"}))]), answer("done")];
    let ran = run_with(replies, vec![read()], &hooks, Limits::default()).await;
    let requests: Vec<String> = ran.requests.iter().map(sent).collect();
    expect![[r#"
        [
            "user: go\n",
            "result t1 read: contents of a.rs\n",
        ]
    "#]]
    .assert_debug_eq(&requests);
    expect![[r#"
        FinalAnswer
        user: go
        assistant (ToolUse): call t1 read {"path":"a.rs"}
        result t1 read: contents of a.rs
        assistant (Stop): done
    "#]]
    .assert_eq(&summary(&ran.outcome));
}
