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
