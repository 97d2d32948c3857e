//! Subagents end to end through the harness, against the scripted model server: a parent whose
//! answer holds three `task` calls gets the children's answers in its calls' order while the
//! children work at once; each child is a session of its own linked to the parent; cancelling
//! the parent cancels the children; the children pay from the parent's budget.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reins_agent::{AgentEvent, TurnEndReason};
use reins_ai::{Content, Message, Prices};
use reins_harness::{
    ApprovalRequest, Approver, FALLBACK_PROVIDER, Harness, HarnessEvent, HarnessOptions, LiveSettings, Settings,
    Verdict,
};
use reins_tools::FsWorkspace;
use scripted_llm::{Fault, Reply, ScriptedServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct Yes;

#[async_trait]
impl Approver for Yes {
    async fn decide(&self, _: ApprovalRequest<'_>, _: &CancellationToken) -> Verdict {
        Verdict::Accept { changed: None, allow_for_session: false }
    }
}

/// Every event, as (session, parent session, what).
type Log = Arc<Mutex<Vec<(String, Option<String>, String)>>>;

fn harness(dir: &Path, model: &ScriptedServer, tune: impl FnOnce(&mut Settings)) -> (Arc<Harness>, Log) {
    let home = dir.join("home").display().to_string();
    let url = model.base_url();
    let mut settings = Settings::from_env(|name| match name {
        "REINS_HOME" => Some(home.clone()),
        "OPENAI_BASE_URL" => Some(url.clone()),
        "REINS_MODEL" => Some("scripted".into()),
        _ => None,
    });
    tune(&mut settings);
    let log: Log = Arc::default();
    let events = log.clone();
    let harness = Harness::new(HarnessOptions {
        settings: LiveSettings::new(settings),
        workspace: Arc::new(FsWorkspace::new(vec![dir.to_path_buf()]).unwrap()),
        provider: None,
        approver: Arc::new(Yes),
        diagnostics: None,
        events: Arc::new(move |event: HarnessEvent| {
            let what = match &event.event {
                AgentEvent::AgentStart => "agent_start".to_string(),
                AgentEvent::AgentEnd { reason, .. } => format!("agent_end {reason:?}"),
                AgentEvent::ToolExecutionStart { tool_name, .. } => format!("tool {tool_name}"),
                AgentEvent::ToolExecutionUpdate { partial, .. } => format!("update {partial}"),
                _ => return,
            };
            let parent = event.parent.map(|parent| parent.session_id);
            events.lock().unwrap().push((event.session_id, parent, what));
        }),
        date: "2026-12-02".into(),
        persist: true,
        warn: Arc::new(|_| {}),
    });
    (harness, log)
}

fn task(id: &str, prompt: &str) -> (String, String, serde_json::Value) {
    (id.to_string(), "task".to_string(), json!({ "prompt": prompt }))
}

fn calls(calls: &[(String, String, serde_json::Value)]) -> Reply {
    calls.iter().fold(Reply::default(), |reply, (id, name, args)| reply.with_tool_call(id, name, args.clone()))
}

fn results(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result.text()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn three_children_work_at_once_and_answer_in_the_order_of_the_calls() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "beta lives here\n").unwrap();
    let model = ScriptedServer::start(vec![
        calls(&[
            task("t1", "alpha-job: say A"),
            task("t2", "beta-job: read notes.txt"),
            task("t3", "gamma-job: say C"),
        ]),
        // Each child waits, so all three are at work before any answers; beta answers last.
        Reply::text("answer A").with_delay_ms(300).when("alpha-job"),
        Reply::tool_call("r1", "read", json!({"path": "notes.txt"})).with_delay_ms(300).when("beta-job"),
        Reply::text("answer C").with_delay_ms(300).when("gamma-job"),
        Reply::text("answer B").with_delay_ms(300).when("beta lives here"),
        Reply::text("all done"),
    ])
    .await;
    let (harness, log) = harness(tmp.path(), &model, |_| {});
    let parent = harness.new_session(None, None).unwrap();

    let outcome = harness.send(&parent, vec![Content::text("split the work")]).unwrap().done.await.unwrap();

    assert_eq!(outcome.reason, TurnEndReason::FinalAnswer);
    assert_eq!(results(&outcome.messages), ["answer A", "answer B", "answer C"]);
    let log = log.lock().unwrap().clone();
    let children: Vec<&String> = log
        .iter()
        .filter(|(_, parent_id, what)| parent_id.is_some() && what == "agent_start")
        .map(|(id, ..)| id)
        .collect();
    assert_eq!(children.len(), 3, "{log:#?}");
    let first_end = log.iter().position(|(_, parent_id, what)| parent_id.is_some() && what.starts_with("agent_end"));
    let last_start = log.iter().rposition(|(_, parent_id, what)| parent_id.is_some() && what == "agent_start");
    assert!(last_start < first_end, "every child started before any ended: {log:#?}");
    assert!(log.iter().all(|(id, parent_id, _)| parent_id.is_none() == (id == &parent)), "children name their parent");
    // The beta child's read is a progress line of the parent's call.
    assert!(
        log.iter().any(|(id, _, what)| id == &parent && what.starts_with("update read {\"path\":\"notes.txt\"}")),
        "{log:#?}"
    );

    // Each child is a session of its own, linked to the parent's file, that can be opened again.
    let sessions = harness.list_sessions().unwrap();
    let parent_path = sessions.iter().find(|info| info.id == parent).unwrap().path.clone();
    let linked: Vec<_> =
        sessions.iter().filter(|info| info.parent_session.as_deref() == Some(parent_path.as_str())).collect();
    assert_eq!(linked.len(), 3);
    let beta = linked.iter().find(|info| info.name.as_deref() == Some("task: beta-job: read notes.txt")).unwrap();
    let reopened = harness.open_session(&beta.id).unwrap();
    let texts: Vec<String> = harness
        .messages(&reopened)
        .unwrap()
        .iter()
        .filter_map(|message| match message {
            Message::Assistant(answer) => Some(answer.text()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["", "answer B"]);
    // The parent's tree shows where each child was spawned.
    let tree = harness.tree(&parent).unwrap();
    let spawned =
        tree.nodes.iter().filter(|node| node.kind == "custom" && node.preview.starts_with("subagent")).count();
    assert_eq!(spawned, 3, "{:#?}", tree.nodes);
}

#[tokio::test]
async fn a_child_gets_only_tools_its_parent_has_and_read_only_ones_by_default() {
    let tmp = tempfile::tempdir().unwrap();
    let model = ScriptedServer::start(vec![
        calls(&[
            ("t1".into(), "task".into(), json!({"prompt": "delta-job", "tools": ["read", "bash"]})),
            task("t2", "epsilon-job"),
        ]),
        Reply::text("done epsilon").when("epsilon-job"),
        Reply::text("all done"),
    ])
    .await;
    let (harness, _) = harness(tmp.path(), &model, |_| {});
    let parent = harness.new_session(None, None).unwrap();
    harness.set_tools(&parent, &["read", "ls", "task"]).unwrap();

    let outcome = harness.send(&parent, vec![Content::text("go")]).unwrap().done.await.unwrap();

    let results = results(&outcome.messages);
    assert!(results[0].contains("a subagent can only get tools you have yourself"), "{results:?}");
    assert!(results[0].contains("bash"), "{results:?}");
    assert_eq!(results[1], "done epsilon");
    let child_request =
        model.chat_requests().into_iter().find(|request| request.body.to_string().contains("epsilon-job"));
    let offered: Vec<String> = child_request.unwrap().body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(offered, ["read", "ls", "grep", "find", "todo"]);
}

#[tokio::test]
async fn cancelling_the_parent_cancels_its_children() {
    let tmp = tempfile::tempdir().unwrap();
    let stall = || Reply::fault(Fault::StallAfterHeaders);
    let model = ScriptedServer::start(vec![
        calls(&[task("t1", "zeta-job"), task("t2", "eta-job"), task("t3", "theta-job")]),
        stall().when("zeta-job"),
        stall().when("eta-job"),
        stall().when("theta-job"),
    ])
    .await;
    let (harness, log) = harness(tmp.path(), &model, |_| {});
    let parent = harness.new_session(None, None).unwrap();
    let started = harness.send(&parent, vec![Content::text("go")]).unwrap();
    // Wait until the three children are at work.
    let at_work = || log.lock().unwrap().iter().filter(|(_, p, what)| p.is_some() && what == "agent_start").count();
    tokio::time::timeout(Duration::from_secs(10), async {
        while at_work() < 3 || model.chat_requests().len() < 4 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("three children started");

    assert!(harness.cancel(&parent).unwrap());
    let outcome = tokio::time::timeout(Duration::from_secs(10), started.done).await.unwrap().unwrap();

    assert_eq!(outcome.reason, TurnEndReason::Aborted);
    let ended =
        || log.lock().unwrap().iter().filter(|(_, p, what)| p.is_some() && what.starts_with("agent_end")).count();
    tokio::time::timeout(Duration::from_secs(10), async {
        while ended() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the three children ended");
    let log = log.lock().unwrap().clone();
    let children_ends: Vec<&String> =
        log.iter().filter(|(_, p, what)| p.is_some() && what.starts_with("agent_end")).map(|(.., what)| what).collect();
    assert_eq!(children_ends, ["agent_end Aborted"; 3], "{log:#?}");
    for (child, ..) in log.iter().filter(|(_, p, _)| p.is_some()) {
        assert!(!harness.is_running(child).unwrap(), "child {child} still runs");
    }
}

#[tokio::test]
async fn children_pay_from_the_parents_budget() {
    let tmp = tempfile::tempdir().unwrap();
    // Each call costs $0.03 (30,000 tokens in at $1 per million); the family may spend $0.091.
    let priced = |reply: Reply| reply.with_usage(30_000, 0, 0);
    let model = ScriptedServer::start(vec![
        priced(calls(&[task("t1", "iota-job"), task("t2", "kappa-job")])),
        priced(Reply::text("iota answer")).when("iota-job"),
        priced(Reply::text("kappa answer")).when("kappa-job"),
        priced(Reply::text("never asked for")),
    ])
    .await;
    let (harness, _) = harness(tmp.path(), &model, |settings| {
        let mut entry = settings.registry.models[0].clone();
        (entry.provider, entry.id) = (FALLBACK_PROVIDER.to_string(), "scripted".to_string());
        entry.prices = Prices { input: 1.0, ..Prices::default() };
        settings.registry.upsert_model(entry);
        settings.max_cost_usd = Some(0.091);
    });
    let parent = harness.new_session(None, None).unwrap();

    let outcome = harness.send(&parent, vec![Content::text("go")]).unwrap().done.await.unwrap();

    // Alone the parent had $0.061 left for its second call; the children spent $0.06 of it.
    assert_eq!(outcome.reason, TurnEndReason::Budget, "{:?}", outcome.error);
    assert_eq!(results(&outcome.messages), ["iota answer", "kappa answer"]);
    assert_eq!(model.chat_requests().len(), 3);
    // The parent's file says what its children spent: its usage counts their calls as its
    // `task` calls' own model work, so a later run's budget starts from all of it.
    let usage = harness.usage(&parent).unwrap();
    let kinds: Vec<(&str, String)> =
        usage.calls.iter().map(|call| (call.kind.as_str(), format!("{:.2}", call.usage.cost.total))).collect();
    assert_eq!(kinds, [("assistant", "0.03".to_string()), ("tool", "0.03".to_string()), ("tool", "0.03".to_string())]);
    assert!((usage.total.cost.total - 0.09).abs() < 1e-9, "{}", usage.total.cost.total);
}

#[tokio::test]
async fn children_draw_their_turns_from_the_parents_limit() {
    let tmp = tempfile::tempdir().unwrap();
    // The family may make three model calls: the parent's first and one for each child.
    let model = ScriptedServer::start(vec![
        calls(&[task("t1", "lambda-job"), task("t2", "mu-job")]),
        Reply::text("lambda answer").when("lambda-job"),
        Reply::text("mu answer").when("mu-job"),
        Reply::text("never asked for"),
    ])
    .await;
    let (harness, _) = harness(tmp.path(), &model, |settings| settings.max_turns = Some(3));
    let parent = harness.new_session(None, None).unwrap();

    let outcome = harness.send(&parent, vec![Content::text("go")]).unwrap().done.await.unwrap();

    // Alone the parent had two turns left; its children took them.
    assert_eq!(outcome.reason, TurnEndReason::MaxTurns, "{:?}", outcome.error);
    assert_eq!(results(&outcome.messages), ["lambda answer", "mu answer"]);
    assert_eq!(model.chat_requests().len(), 3);
}
