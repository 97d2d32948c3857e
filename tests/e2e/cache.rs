//! End-to-end tests of what makes provider caches work: every request repeats the one before it
//! byte for byte and adds to its end — turn after turn, across `--continue`, and after a model
//! change up to the change — and against a server that plays Anthropic's prompt cache, each call
//! reads what the call before it wrote, and after a compaction the tools and system prompt are
//! still read from the cache.

mod support;

use scripted_llm::{CacheUsage, PrefixCache, RecordedRequest, Reply, ScriptedServer};
use serde_json::json;
use support::{CANARY_KEY, Run, reins_command, reins_home, reins_run, workspace};

/// The raw body as text, and where its `messages` array's items start and end.
struct Body {
    text: String,
    messages: std::ops::Range<usize>,
}

impl Body {
    fn of(request: &RecordedRequest) -> Body {
        let text = String::from_utf8(request.raw_body.clone()).unwrap();
        let start = text.find(r#""messages":["#).unwrap() + r#""messages":["#.len();
        let end = text.find(r#"],"stream":"#).unwrap();
        Body { messages: start..end, text }
    }

    fn before_messages(&self) -> &str {
        &self.text[..self.messages.start]
    }

    fn messages(&self) -> &str {
        &self.text[self.messages.clone()]
    }

    fn after_messages(&self) -> &str {
        &self.text[self.messages.end..]
    }
}

/// `next` is `previous` with messages added at the end: everything before and after the
/// messages the same bytes, and the earlier messages the same bytes too.
fn check_extends(previous: &RecordedRequest, next: &RecordedRequest, what: &str) {
    let (previous, next) = (Body::of(previous), Body::of(next));
    assert_eq!(previous.before_messages(), next.before_messages(), "{what}: the model or system prompt moved");
    assert_eq!(previous.after_messages(), next.after_messages(), "{what}: the tools or options moved");
    assert!(
        next.messages().starts_with(&format!("{},", previous.messages())),
        "{what}: the earlier messages changed:\n{}\n---\n{}",
        previous.messages(),
        next.messages()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_extends_the_one_before_it_byte_for_byte() {
    let dir = workspace(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "read", json!({"path": "a.txt"})),
        Reply::tool_call("c2", "read", json!({"path": "b.txt"})),
        Reply::text("Both read."),
        Reply::text("Still here."),
        Reply::text("Another model, same conversation."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--yes", "read a.txt and b.txt"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let run = reins_run(&server, dir.path(), &["--continue", "and now?"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let run = reins_run(&server, dir.path(), &["--continue", "--model", "other-model", "and with you?"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    let requests = server.chat_requests();
    assert_eq!(requests.len(), 5);
    check_extends(&requests[0], &requests[1], "second turn");
    check_extends(&requests[1], &requests[2], "third turn");
    check_extends(&requests[2], &requests[3], "--continue");
    // Another model: the model field changes, the conversation up to the change does not, and
    // neither do the system prompt and the tools.
    let (before, after) = (Body::of(&requests[3]), Body::of(&requests[4]));
    assert!(after.text.starts_with(r#"{"model":"other-model","#), "{}", after.text);
    let skip_model =
        |body: &Body| body.before_messages()[body.before_messages().find(r#""messages""#).unwrap()..].to_string();
    assert_eq!(skip_model(&before), skip_model(&after));
    assert!(after.messages().starts_with(&format!("{},", before.messages())));
    assert_eq!(before.after_messages(), after.after_messages());
}

/// `reins run ARGS` against `server` as the Anthropic endpoint, with Claude Sonnet 4.5.
async fn run_anthropic(server: &ScriptedServer, dir: &std::path::Path, args: &[&str]) -> Run {
    let mut full = vec!["run", "--model", "anthropic/claude-sonnet-4-5"];
    full.extend_from_slice(args);
    let output = reins_command(None, dir, &full)
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
        .env("ANTHROPIC_API_KEY", CANARY_KEY)
        .output()
        .await
        .unwrap();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Each call reads from the cache exactly what the call before it put there (up to its last
/// breakpoint), and writes only what is new.
fn check_reads_the_previous_prefix(usage: &[CacheUsage]) {
    assert_eq!(usage[0].cache_read, 0);
    for pair in usage.windows(2) {
        assert_eq!(pair[1].cache_read, pair[0].cache_read + pair[0].cache_write, "{usage:?}");
        assert!(pair[1].cache_write > 0 && pair[1].input == 0, "{usage:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_calls_read_the_cached_prefix_turn_after_turn_and_after_compaction() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "read", json!({"path": "a.txt"})),
        Reply::text(format!("It says alpha. {}", "More detail. ".repeat(1000))),
        Reply::text("Still here."),
        // The compaction's summary, then the answer after it.
        Reply::text("## Goal\nRead a.txt.\n## Progress\nDone."),
        Reply::text("Compacted and answering."),
    ])
    .await;
    server.simulate_prefix_cache();
    let run = run_anthropic(&server, dir.path(), &["--yes", "what does a.txt say?"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let run = run_anthropic(&server, dir.path(), &["--continue", "and now?"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let usage = server.cache_usage();
    assert_eq!(usage.len(), 3);
    check_reads_the_previous_prefix(&usage);

    // A window so small that the next run compacts first, yet large enough for the summary request
    // (a request beyond the window is not sent).
    let home = reins_home(dir.path());
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[compaction]\nreserve_tokens = 3000\nkeep_recent_tokens = 50\n\n[[models]]\nid = \"claude-sonnet-4-5\"\n\
         provider = \"anthropic\"\ncontext_window = 6000\n",
    )
    .unwrap();
    let run = run_anthropic(&server, dir.path(), &["--continue", "and after compacting?"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let requests = server.messages_requests();
    let (before, summary, after) = (&requests[2].body, &requests[3].body, &requests[4].body);
    assert!(summary["system"][0]["text"].as_str().unwrap().starts_with("You are summarizing"));
    // The tools and the system prompt, with its breakpoint, are what they were: read from the
    // cache, and the new conversation is written after them.
    assert_eq!((&before["tools"], &before["system"]), (&after["tools"], &after["system"]));
    // After the compaction (call 3 is its summary), exactly the tools and the system prompt are
    // read from the cache, and the compacted conversation is written after them.
    let mut head = after.clone();
    head["messages"] = json!([]);
    let tools_and_system = PrefixCache::default().request(&head).cache_write;
    let usage = server.cache_usage();
    assert!(tools_and_system > 1000, "{tools_and_system}");
    assert_eq!((usage[4].cache_read, usage[4].input), (tools_and_system, 0), "{usage:?}");
    assert!(usage[4].cache_write > 0, "{usage:?}");
}
