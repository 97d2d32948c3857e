//! The `Agent` handle: one run at a time, queues for steering and follow-ups, abort.

mod support;

use std::sync::Arc;

use expect_test::expect;
use reins_agent::{Agent, AgentError, Limits, NoHooks, Tool, TurnEndReason};
use reins_ai::Message;
use serde_json::json;
use support::*;

fn agent(replies: Vec<Reply>, tools: Vec<Arc<dyn Tool>>) -> (Agent, Arc<ScriptedProvider>) {
    let provider = ScriptedProvider::new(replies);
    let agent = Agent::new(context(tools), provider.clone(), Arc::new(NoHooks), Limits::default());
    (agent, provider)
}

#[test]
fn agent_is_shareable_across_tasks() {
    fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync::<Agent>();
}

#[tokio::test]
async fn prompt_appends_the_run_to_the_context() {
    let (agent, _) = agent(vec![answer("one"), answer("two")], vec![]);
    agent.prompt(vec![Message::user("first")], Recorder::default().sink()).await.unwrap();
    let outcome = agent.prompt(vec![Message::user("second")], Recorder::default().sink()).await.unwrap();
    assert_eq!(outcome.reason, TurnEndReason::FinalAnswer);
    expect![[r#"
        user: first
        assistant (Stop): one
        user: second
        assistant (Stop): two
    "#]]
    .assert_eq(&transcript(&agent.messages()));
    assert!(!agent.is_running());
}

#[tokio::test]
async fn steering_sent_during_a_tool_goes_before_the_next_model_call() {
    let slow = Arc::new(SlowTool::default());
    let (agent, provider) = agent(vec![calls(&[("t1", "slow", json!({}))]), answer("done")], vec![slow.clone()]);
    let running = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.prompt(vec![Message::user("go")], Recorder::default().sink()).await })
    };
    slow.started.notified().await;
    agent.steer(Message::user("also check the tests"));
    slow.proceed.notify_one();
    let outcome = running.await.unwrap().unwrap();
    assert_eq!(outcome.reason, TurnEndReason::FinalAnswer);
    // The second model call already has the steering message, after the tool result.
    expect![[r#"
        user: go
        assistant (ToolUse): call t1 slow {}
        result t1 slow: slow done
        user: also check the tests
    "#]]
    .assert_eq(&transcript(&provider.requests()[1].messages));
}

#[tokio::test]
async fn follow_up_continues_a_run_that_would_stop() {
    let (agent, provider) = agent(vec![answer("first answer"), answer("second answer")], vec![]);
    agent.follow_up(Message::user("and now the docs"));
    let outcome = agent.prompt(vec![Message::user("fix it")], Recorder::default().sink()).await.unwrap();
    expect![[r#"
        user: fix it
        assistant (Stop): first answer
        user: and now the docs
        assistant (Stop): second answer
    "#]]
    .assert_eq(&transcript(&outcome.messages));
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn a_second_prompt_while_running_is_busy_and_abort_ends_the_run() {
    let (agent, _) = agent(vec![Reply::Hang], vec![]);
    let recorder = Recorder::default();
    let running = {
        let (agent, sink) = (agent.clone(), recorder.sink());
        tokio::spawn(async move { agent.prompt(vec![Message::user("go")], sink).await })
    };
    // Wait until the run has reached the model call.
    while !recorder.kinds().contains("message_start assistant") {
        tokio::task::yield_now().await;
    }
    assert!(agent.is_running());
    let busy = agent.prompt(vec![Message::user("again")], Recorder::default().sink()).await;
    assert_eq!(busy.as_ref().map(|_| ()), Err(&AgentError::Busy));
    assert_eq!(busy.unwrap_err().code(), "busy");
    assert_eq!(agent.set_messages(Vec::new()), Err(AgentError::Busy));

    agent.abort();
    let outcome = running.await.unwrap().unwrap();
    assert_eq!(outcome.reason, TurnEndReason::Aborted);
    assert!(!agent.is_running());
    expect![[r#"
        user: go
        assistant (Aborted): 
    "#]]
    .assert_eq(&transcript(&agent.messages()));
}

#[tokio::test]
async fn settings_apply_to_the_next_run() {
    let (agent, provider) = agent(vec![answer("ok")], vec![]);
    agent.set_system_prompt("Be brief.".into());
    let mut model = model();
    model.id = "other".into();
    agent.set_model(model);
    agent.set_messages(vec![Message::user("earlier")]).unwrap();
    agent.prompt(vec![Message::user("now")], Recorder::default().sink()).await.unwrap();
    let request = &provider.requests()[0];
    assert_eq!((request.system_prompt.as_str(), request.model.id.as_str()), ("Be brief.", "other"));
    expect![[r#"
        user: earlier
        user: now
    "#]]
    .assert_eq(&transcript(&request.messages));
    assert_eq!(agent.context().messages.len(), 3);
}
