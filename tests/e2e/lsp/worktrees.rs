//! Worktree agents in the editor, as protocol-docs/agents.md documents them: `reins.worktree.list`
//! shows each with its status and the files it changed; `reins.session.new {worktree: true}`
//! starts one, whose change comes back as pending edits reviewed hunk by hunk around the user's
//! typing; a killed server's agent is reviewed from a new one.

use std::path::Path;
use std::time::Duration;

use lsp_client::LspClient;
use reins_harness::Worktree;
use scripted_llm::{Fault, Reply};
use serde_json::{Value, json};

use super::{Session, WAIT, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reins_worktree_list_shows_each_agent_with_what_it_changed() {
    let lsp = start(&[("a.txt", "one\n"), (".gitignore", ".reins-home-for-test\n")], Vec::new(), json!({})).await;
    let listed = lsp.client.command("reins.worktree.list", json!({})).await.unwrap();
    assert_eq!(listed, json!({"agents": []}), "not a git repository yet");
    let git = |script: &str| {
        let status = std::process::Command::new("sh").arg("-c").arg(script).current_dir(lsp.root()).status().unwrap();
        assert!(status.success(), "{script}");
    };
    git("git init -q && git add . && git -c user.name=t -c user.email=t@t commit -qm init");
    // This test's process makes the worktree, as `reins run --worktree` would, and stays alive.
    let worktree = Worktree::create(lsp.root(), &lsp.root().join(".reins-home-for-test"), "w1").unwrap();
    std::fs::write(worktree.dir.join("a.txt"), "ONE\n").unwrap();
    std::fs::write(worktree.dir.join("b.txt"), "b\n").unwrap();

    let listed = lsp.client.command("reins.worktree.list", json!({})).await.unwrap();

    let agent = &listed["agents"][0];
    assert_eq!((agent["id"].as_str(), agent["status"].as_str()), (Some("w1"), Some("running")));
    assert_eq!(agent["changed"], json!(["a.txt", "b.txt"]));
    let documented = super::docs::example("result", "reins.worktree.list");
    super::docs::same_shape(&documented, &listed, "reins.worktree.list").unwrap();
    worktree.remove().unwrap();
}

/// A repository with a.txt and b.txt committed and an uncommitted change to a.txt's last line,
/// its files open in the client.
async fn repository(replies: Vec<Reply>) -> Session {
    let lsp = start(
        &[("a.txt", "one\ntwo\nthree\nfour\nfive\n"), ("b.txt", "b\n"), (".gitignore", ".reins-home-for-test\n")],
        replies,
        json!({}),
    )
    .await;
    git(lsp.root(), "git init -q && git add . && git -c user.name=t -c user.email=t@t commit -qm init");
    std::fs::write(lsp.root().join("a.txt"), "one\ntwo\nthree\nfour\nfive!\n").unwrap();
    lsp.open("a.txt", "plaintext", "one\ntwo\nthree\nfour\nfive!\n").await;
    lsp.open("b.txt", "plaintext", "b\n").await;
    lsp
}

fn git(dir: &Path, script: &str) {
    let status = std::process::Command::new("sh").arg("-c").arg(script).current_dir(dir).status().unwrap();
    assert!(status.success(), "{script}");
}

/// The model of agent `agent` edits a.txt.
fn edit(agent: &str, edits: Value) -> Reply {
    Reply::tool_call(format!("call_{agent}"), "edit", json!({"path": "a.txt", "edits": edits})).when(agent)
}

/// Types `text` as the whole of the open buffer `relative`, as the user does.
async fn type_text(lsp: &Session, relative: &str, text: &str) {
    let uri = lsp.uri(relative);
    let (_, version) = lsp.client.document(&uri).unwrap();
    let params = json!({"textDocument": {"uri": uri, "version": version + 1}, "contentChanges": [{"text": text}]});
    lsp.client.notify("textDocument/didChange", params).await;
}

fn buffer(lsp: &Session, relative: &str) -> String {
    lsp.client.document(&lsp.uri(relative)).unwrap().0
}

/// The documented worktree example of `kind` and `name` (`notification`s by their event type).
fn documented(kind: &str, name: &str) -> Value {
    let examples = super::docs::examples().into_iter().filter(super::docs::of_worktree_agents);
    let mut found = examples
        .filter(|example| example.kind == kind && (example.name == name || example.json["event"]["type"] == name));
    found.next().unwrap_or_else(|| panic!("protocol-docs has no {kind} example for {name}")).json
}

/// Starts a worktree agent with `prompt`, as documented; its session id and worktree id.
async fn agent(lsp: &Session, prompt: &str) -> (String, String) {
    let params = documented("command", "reins.session.new");
    let new = lsp.client.command("reins.session.new", params).await.unwrap();
    super::docs::same_shape(&documented("result", "reins.session.new"), &new, "reins.session.new").unwrap();
    let session_id = new["sessionId"].as_str().unwrap().to_string();
    let sent = json!({"sessionId": session_id, "text": prompt});
    lsp.client.command("reins.chat.send", sent).await.unwrap();
    (session_id, new["worktree"]["id"].as_str().unwrap().to_string())
}

/// The `worktree_review` event of worktree `id`.
async fn review_of(lsp: &Session, id: &str) -> Value {
    let found = lsp
        .client
        .wait_for(Duration::from_secs(60), |n| {
            n["params"]["event"]["type"] == "worktree_review" && n["params"]["event"]["id"] == id
        })
        .await;
    let params = found.unwrap_or_else(|err| panic!("no review of {id}: {err}"))["params"].clone();
    super::docs::same_shape(&documented("notification", "worktree_review"), &params, "worktree_review").unwrap();
    params["event"].clone()
}

/// The `edit_resolved` outcome of pending edit `id`.
async fn resolved(lsp: &Session, id: &str) -> String {
    let event = lsp
        .client
        .wait_for(WAIT, |n| n["params"]["event"]["type"] == "edit_resolved" && n["params"]["event"]["id"] == id)
        .await
        .unwrap_or_else(|err| panic!("{id} was not resolved: {err}"));
    event["params"]["event"]["outcome"].as_str().unwrap().to_string()
}

/// What a review proposes, one line per file, ids and URIs left out.
fn proposed(review: &Value) -> Vec<String> {
    let edits = review["edits"].as_array().unwrap().iter().map(|e| format!("edit {} {}", e["action"], e["path"]));
    let conflicts = review["conflicts"].as_array().unwrap().iter().map(|c| format!("conflict {}", c["path"]));
    edits.chain(conflicts).collect()
}

async fn removed(lsp: &Session, id: &str) {
    let event = lsp
        .client
        .wait_for(WAIT, |n| n["params"]["event"]["type"] == "worktree_removed" && n["params"]["event"]["id"] == id);
    let params = event.await.unwrap_or_else(|err| panic!("worktree {id} was not removed: {err}"))["params"].clone();
    super::docs::same_shape(&documented("notification", "worktree_removed"), &params, "worktree_removed").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_worktree_agents_are_reviewed_hunk_by_hunk_around_the_users_typing() {
    // Each agent changes a.txt in its worktree and answers after a while (the user types
    // meanwhile); the second changes two lines, the third also rewrites b.txt.
    let lsp = repository(vec![
        edit("agent-one", json!([{"oldText": "one", "newText": "ONE"}])),
        Reply::text("one done").with_delay_ms(3000).when("agent-one"),
        edit("agent-two", json!([{"oldText": "two", "newText": "TWO"}, {"oldText": "four", "newText": "FOUR"}])),
        Reply::text("two done").with_delay_ms(3500).when("agent-two"),
        Reply::tool_call("call_b", "write", json!({"path": "b.txt", "content": "agent b\n"})).when("agent-three"),
        edit("agent-three", json!([{"oldText": "three", "newText": "THREE"}])),
        Reply::text("three done").with_delay_ms(4000).when("agent-three"),
    ])
    .await;
    let (one_session, one) = agent(&lsp, "agent-one").await;
    let (_, two) = agent(&lsp, "agent-two").await;
    let (_, three) = agent(&lsp, "agent-three").await;
    // The user types at the end of a.txt and rewrites b.txt while the three work.
    type_text(&lsp, "a.txt", "one\ntwo\nthree\nfour\nfive!\nsix\n").await;
    type_text(&lsp, "b.txt", "user b\n").await;
    let listed = lsp.client.command("reins.worktree.list", json!({})).await.unwrap();
    assert_eq!(listed["agents"].as_array().unwrap().len(), 3, "{listed:#}");

    let review = review_of(&lsp, &one).await;
    assert_eq!(proposed(&review), ["edit \"merge\" \"a.txt\""]);
    assert_eq!((review["summary"].as_str(), review["sessionId"].as_str()), (Some("one done"), Some(&*one_session)));
    let accept = review["edits"][0]["id"].as_str().unwrap();
    lsp.client.command("reins.edit.accept", json!({"id": accept})).await.unwrap();
    assert_eq!(resolved(&lsp, accept).await, "applied");
    // All of it landed: the worktree goes.
    removed(&lsp, &one).await;

    // The second: the TWO hunk accepted, the FOUR one not.
    let review = review_of(&lsp, &two).await;
    assert_eq!(proposed(&review), ["edit \"merge\" \"a.txt\""]);
    let edit_id = review["edits"][0]["id"].as_str().unwrap();
    let pending = lsp.client.command("reins.edit.list", json!({})).await.unwrap();
    let hunks = pending.as_array().unwrap().iter().find(|edit| edit["id"] == edit_id).unwrap()["hunks"].clone();
    let texts: Vec<&str> = hunks.as_array().unwrap().iter().map(|hunk| hunk["newText"].as_str().unwrap()).collect();
    assert_eq!(texts, ["TWO", "FOUR"], "{hunks:#}");
    let choice = json!({"id": edit_id, "hunks": [0], "reason": "keep four"});
    lsp.client.command("reins.edit.accept", choice).await.unwrap();
    assert_eq!(resolved(&lsp, edit_id).await, "partially_applied");

    // The third: b.txt was rewritten by the user too, so it is named and left alone.
    let review = review_of(&lsp, &three).await;
    assert_eq!(proposed(&review), ["edit \"merge\" \"a.txt\"", "conflict \"b.txt\""]);
    let accept = review["edits"][0]["id"].as_str().unwrap();
    lsp.client.command("reins.edit.accept", json!({"id": accept})).await.unwrap();
    assert_eq!(resolved(&lsp, accept).await, "applied");

    // Every accepted line, the user's uncommitted change and their typing; b.txt as they wrote it.
    assert_eq!(buffer(&lsp, "a.txt"), "ONE\nTWO\nTHREE\nfour\nfive!\nsix\n");
    assert_eq!(buffer(&lsp, "b.txt"), "user b\n");
    // The second and third keep their worktrees (a hunk not taken, a conflict); the second is
    // reviewed again on demand (only FOUR is left), then discarded.
    let listed = lsp.client.command("reins.worktree.list", json!({})).await.unwrap();
    let ids: Vec<&str> = listed["agents"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [two.as_str(), three.as_str()]);
    let mut params = documented("command", "reins.worktree.review");
    params["id"] = json!(two);
    let again = lsp.client.command("reins.worktree.review", params).await.unwrap();
    super::docs::same_shape(&documented("result", "reins.worktree.review"), &again, "reins.worktree.review").unwrap();
    let edit_id = again["edits"][0]["id"].as_str().unwrap_or_else(|| panic!("{again:#}"));
    let pending = lsp.client.command("reins.edit.list", json!({})).await.unwrap();
    let hunks = &pending.as_array().unwrap().iter().find(|edit| edit["id"] == edit_id).unwrap()["hunks"];
    assert_eq!(hunks.as_array().unwrap().len(), 1, "{hunks:#}");
    assert_eq!(hunks[0]["newText"], "FOUR");
    let mut params = documented("command", "reins.worktree.discard");
    params["id"] = json!(two);
    let discarded = lsp.client.command("reins.worktree.discard", params).await.unwrap();
    assert_eq!(discarded, json!({"removed": two}));
    super::docs::same_shape(&documented("result", "reins.worktree.discard"), &discarded, "discard").unwrap();
    assert_eq!(resolved(&lsp, edit_id).await, "rejected");
    let listed = lsp.client.command("reins.worktree.list", json!({})).await.unwrap();
    assert_eq!(listed["agents"].as_array().unwrap().len(), 1, "{listed:#}");
    assert_eq!(buffer(&lsp, "a.txt"), "ONE\nTWO\nTHREE\nfour\nfive!\nsix\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_servers_worktree_agent_is_reviewed_from_a_new_one() {
    let lsp = repository(vec![
        edit("agent-four", json!([{"oldText": "one", "newText": "ONE"}])),
        Reply::fault(Fault::StallAfterHeaders).when("agent-four"),
    ])
    .await;
    let (session_id, id) = agent(&lsp, "agent-four").await;
    tokio::time::timeout(Duration::from_secs(30), async {
        while lsp.server.chat_requests().len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the agent edited its worktree");
    git(lsp.root(), &format!("kill -9 {}", lsp.client.pid().unwrap()));

    // A new server in the same workspace finds the agent finished, with its change and session.
    let client = LspClient::spawn(super::reins_lsp(lsp.root(), &["--stdio"])).unwrap();
    let options = json!({"baseUrl": lsp.server.base_url(), "model": "scripted-model"});
    client.initialize_with(lsp.root(), options, &["utf-16"], json!({})).await.unwrap();
    let text = "one\ntwo\nthree\nfour\nfive!\n";
    let open =
        json!({"textDocument": {"uri": lsp.uri("a.txt"), "languageId": "plaintext", "version": 1, "text": text}});
    client.notify("textDocument/didOpen", open).await;
    let listed = client.command("reins.worktree.list", json!({})).await.unwrap();
    let agent = &listed["agents"][0];
    assert_eq!((agent["id"].as_str(), agent["status"].as_str()), (Some(&*id), Some("finished")));
    assert_eq!(agent["changed"], json!(["a.txt"]));

    let review = client.command("reins.worktree.review", json!({"id": id})).await.unwrap();
    assert_eq!(review["sessionId"], session_id, "the agent's session survived");
    assert_eq!(proposed(&review), ["edit \"merge\" \"a.txt\""]);
    let accept = review["edits"][0]["id"].as_str().unwrap();
    client.command("reins.edit.accept", json!({"id": accept})).await.unwrap();
    let gone = client.wait_for(WAIT, |n| n["params"]["event"]["type"] == "worktree_removed").await;
    gone.expect("the worktree went once its change landed");
    assert_eq!(client.document(&lsp.uri("a.txt")).unwrap().0, "ONE\ntwo\nthree\nfour\nfive!\n");
    assert_eq!(client.command("reins.worktree.list", json!({})).await.unwrap(), json!({"agents": []}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_git_a_worktree_session_is_refused_with_the_reason() {
    let lsp = start(&[("a.txt", "one\n")], Vec::new(), json!({})).await;
    let err = lsp.client.command("reins.session.new", json!({"worktree": true})).await.unwrap_err();
    assert_eq!(err.data_code(), Some("invalid_state"));
    assert!(err.message.contains("needs git"), "{}", err.message);
}
