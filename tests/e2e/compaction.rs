//! End-to-end tests of compaction: automatic when the context nears the model's window, and once
//! after the provider says the context is too long — with the real binary, the scripted server
//! and a model whose window the test's config makes small.

mod support;

use scripted_llm::{Reply, ScriptedServer};
use serde_json::Value;
use support::{reins, reins_home, reins_run, workspace};

/// Gives `scripted-model` (the model the e2e runs use) a window of `window` tokens.
fn configure(dir: &std::path::Path, window: u64, auto: bool) {
    let home = reins_home(dir);
    std::fs::create_dir_all(&home).unwrap();
    let config = format!(
        "[compaction]\nauto = {auto}\nreserve_tokens = 100\nkeep_recent_tokens = 50\n\n\
         [[models]]\nid = \"scripted-model\"\nprovider = \"openai-compatible\"\n\
         context_window = {window}\nmax_output = 256\n"
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
}

fn system_prompt(body: &Value) -> &str {
    body["messages"][0]["content"].as_str().unwrap_or_default()
}

fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Two long runs, then a window too small for them: the next run first asks the model for a
/// summary of the older part, then sends the summary in place of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_is_compacted_when_it_nears_the_window() {
    let dir = workspace(&[]);
    let long_question = format!("first question: {}", "the parser module needs work ".repeat(80));
    let server = ScriptedServer::start(vec![
        Reply::text(format!("first answer: {}", "details ".repeat(300))),
        Reply::text("second answer"),
        Reply::text("## Goal\nImprove the parser.\n## Progress\nAsked twice."),
        Reply::text("third answer"),
    ])
    .await;
    configure(dir.path(), 200_000, true);
    assert_eq!(reins_run(&server, dir.path(), &["--continue", &long_question]).await.code, Some(0));
    assert_eq!(reins_run(&server, dir.path(), &["--continue", "second question"]).await.code, Some(0));

    configure(dir.path(), 1_200, true);
    let third = reins_run(&server, dir.path(), &["--continue", "third question"]).await;
    assert_eq!(third.code, Some(0), "stderr: {}", third.stderr);
    assert_eq!(third.stdout, "third answer\n");

    let requests = server.chat_requests();
    assert_eq!(requests.len(), 4);
    let summary_request = &requests[2].body;
    assert!(system_prompt(summary_request).starts_with("You are summarizing"), "{summary_request}");
    let asked = user_texts(summary_request).join("\n");
    assert!(asked.contains("first question: the parser module"), "{asked}");
    assert!(summary_request["tools"].is_null(), "no tools for the summary");

    let users = user_texts(&requests[3].body);
    assert!(users[0].starts_with("The conversation history before this point was compacted"), "{users:?}");
    assert!(users[0].contains("Improve the parser."));
    assert!(!users.iter().any(|text| text.contains("first question")), "the old part is gone: {users:?}");
    assert_eq!(users.last().unwrap(), "third question");

    let list = reins(None, dir.path(), &["sessions", "list", "--json"]).await;
    let list: Value = serde_json::from_str(&list.stdout).unwrap();
    let tree = reins(None, dir.path(), &["sessions", "tree", list[0]["id"].as_str().unwrap(), "--json"]).await;
    let tree: Value = serde_json::from_str(&tree.stdout).unwrap();
    let kinds: Vec<&str> = tree["nodes"].as_array().unwrap().iter().filter_map(|n| n["kind"].as_str()).collect();
    assert!(kinds.contains(&"compaction"), "{kinds:?}");
}

/// The provider refuses the prompt as too long: reins compacts once and retries the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_overflow_error_compacts_once_and_retries() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![
        Reply::text(format!("first answer: {}", "details ".repeat(300))),
        Reply::text("second answer"),
        Reply::http_error(
            400,
            "This model's maximum context length is 1000 tokens. However, you requested 4000 tokens.",
        ),
        Reply::text("## Goal\nKeep going."),
        Reply::text("answer after compaction"),
    ])
    .await;
    configure(dir.path(), 200_000, false);
    assert_eq!(reins_run(&server, dir.path(), &["--continue", "first question"]).await.code, Some(0));
    assert_eq!(reins_run(&server, dir.path(), &["--continue", "second question"]).await.code, Some(0));
    let run = reins_run(&server, dir.path(), &["--continue", "--json", "third question"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);

    let requests = server.chat_requests();
    assert_eq!(requests.len(), 5, "one refused call, one summary, one retry");
    assert!(system_prompt(&requests[3].body).starts_with("You are summarizing"));
    let retried = user_texts(&requests[4].body);
    assert!(retried[0].starts_with("The conversation history before this point was compacted"), "{retried:?}");
    assert_eq!(retried.last().unwrap(), "third question", "the prompt is sent again, once");
    assert_eq!(retried.iter().filter(|text| *text == "third question").count(), 1);
    let end = run.events().into_iter().rev().find(|e| e["type"] == "agent_end").unwrap();
    assert_eq!(end["reason"], "final_answer");
}

/// A session file of `turns` turns (the user asks, the model reads a file, the result comes
/// back, the model answers) recorded with `scripted-model`; the first turn reads `src/first.rs`,
/// every other one `src/lib.rs`. Returns its path and the estimate of its whole context's tokens
/// (characters / 4 per message, as compaction counts them).
fn long_session(dir: &std::path::Path, turns: usize) -> (std::path::PathBuf, u64) {
    let mut lines = vec![format!(
        r#"{{"type":"session","version":3,"id":"0194a3b2-0000-7000-8000-00000000c0de","timestamp":"2025-01-01T00:00:00.000Z","cwd":"{}"}}"#,
        dir.display()
    )];
    let mut tokens = 0;
    let mut estimate = |chars: usize| tokens += chars.div_ceil(4) as u64;
    let model = r#""provider":"openai-compatible","model":"scripted-model""#;
    for turn in 0..turns {
        let path = if turn == 0 { "src/first.rs" } else { "src/lib.rs" };
        let question = format!("Step {turn}: what does {path} do now?");
        let arguments = serde_json::json!({ "path": path }).to_string();
        let contents = format!("fn step_{turn}() {{}}");
        let answer = format!("step_{turn} does nothing yet.");
        estimate(question.len());
        estimate("read".len() + arguments.len());
        estimate(contents.len());
        estimate(answer.len());
        let messages = [
            format!(r#"{{"role":"user","content":[{{"type":"text","text":"{question}"}}],"timestamp":1}}"#),
            format!(
                r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"call_{turn}","name":"read","arguments":{arguments}}}],{model},"stopReason":"toolUse","timestamp":1}}"#
            ),
            format!(
                r#"{{"role":"toolResult","toolCallId":"call_{turn}","toolName":"read","content":[{{"type":"text","text":"{contents}"}}],"isError":false,"timestamp":1}}"#
            ),
            format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"{answer}"}}],{model},"stopReason":"stop","timestamp":1}}"#
            ),
        ];
        for (step, message) in messages.iter().enumerate() {
            let n = turn * 4 + step;
            let parent = if n == 0 { "null".to_string() } else { format!("\"{:08x}\"", n - 1) };
            lines.push(format!(
                r#"{{"type":"message","id":"{n:08x}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{message}}}"#
            ));
        }
    }
    let path = dir.join("long.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    (path, tokens)
}

/// `reins run --session` on a session several times the window (the agent holds only what a
/// request could carry): the run first compacts — the summary request covers the whole path
/// (the files its first turn read, a note of the messages that did not fit) and the compaction
/// records the tokens of the whole context — and then sends the summary with the newest turns.
/// With automatic compaction off the same happens after the window check refuses the request:
/// no request ever carries a conversation cut short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_far_longer_than_the_window_is_compacted_before_it_is_sent() {
    for auto in [true, false] {
        let dir = workspace(&[]);
        let (session, tokens) = long_session(dir.path(), 150);
        configure(dir.path(), 1_000, auto);
        assert!(tokens > 3_000, "the session is several windows long: {tokens} tokens");
        let server = ScriptedServer::start(vec![
            Reply::text("## Goal\nExplain every step.").when("Write the summary now"),
            Reply::text("Steps up to 149 are explained."),
        ])
        .await;
        let session_arg = session.display().to_string();
        let run = reins_run(&server, dir.path(), &["--session", &session_arg, "what is left?"]).await;
        assert_eq!(run.code, Some(0), "auto {auto}, stderr: {}", run.stderr);
        assert_eq!(run.stdout, "Steps up to 149 are explained.\n");

        let requests = server.chat_requests();
        assert_eq!(requests.len(), 2, "auto {auto}: the summary, then the turn");
        let summary_request = &requests[0].body;
        assert!(system_prompt(summary_request).starts_with("You are summarizing"), "{summary_request}");
        let asked = user_texts(summary_request).join("\n");
        assert!(asked.contains("read: src/first.rs, src/lib.rs"), "every summarized turn's files: {asked}");
        assert!(asked.contains("earlier messages are left out"), "{asked}");
        assert!(!asked.contains("Step 0:"), "{asked}");

        let users = user_texts(&requests[1].body);
        assert!(users[0].starts_with("The conversation history before this point was compacted"), "{users:?}");
        assert!(users[0].contains("Explain every step."));
        assert!(users.iter().any(|text| text.contains("Step 149:")), "the newest turn is kept: {users:?}");
        assert!(!users.iter().any(|text| text.contains("Step 0:")), "{users:?}");
        assert_eq!(users.last().unwrap(), "what is left?");

        let text = std::fs::read_to_string(&session).unwrap();
        let compaction: Value = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|entry| entry["type"] == "compaction")
            .expect("a compaction entry");
        // Refused by the window check, the prompt is on the path already when it compacts.
        let prompt = if auto { 0 } else { "what is left?".len().div_ceil(4) as u64 };
        assert_eq!(compaction["tokensBefore"], tokens + prompt, "auto {auto}: the whole context is counted");
    }
}
