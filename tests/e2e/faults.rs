//! The provider fault matrix through the real binary: `reins run` against a scripted server that
//! misbehaves in one way, for each API. Every fault ends in a retry that succeeds or one clean
//! line on stderr within its bound, and the session stays valid: every line of its file is JSON,
//! and `reins run --continue` carries the conversation on.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use expect_test::{Expect, expect};
use scripted_llm::{Fault, Reply, ScriptedServer};
use serde_json::Value;
use support::{reins_command, reins_home, transcript, workspace};

/// No fault may hold `reins run` longer than this (retries and their waits included).
const BOUND: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, Debug)]
enum Api {
    OpenAi,
    Anthropic,
}

/// Configures the workspace's reins home: both test models get a small output limit (so an
/// endless stream meets the cap soon), and `settings` is added.
fn configure(dir: &Path, settings: &str) {
    let home = reins_home(dir);
    std::fs::create_dir_all(&home).unwrap();
    let config = format!(
        "{settings}\n\
         [[models]]\nid = \"scripted-model\"\nprovider = \"openai-compatible\"\nmax_output = 1000\n\n\
         [[models]]\nid = \"scripted-claude\"\nprovider = \"anthropic\"\nmax_output = 1000\n"
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
}

/// `reins ARGS` against `server` in the API's way, failed when it takes longer than [`BOUND`].
async fn run(api: Api, server: &ScriptedServer, dir: &Path, args: &[&str]) -> (support::Run, Duration) {
    let mut command = reins_command(Some(&server.base_url()), dir, args);
    // Retries are logged (at info, as `--json` and the editor carry them as events): shown here.
    command.env("REINS_LOG", "warn,reins_ai::transport=info");
    if let Api::Anthropic = api {
        command
            .env("REINS_MODEL", "anthropic/scripted-claude")
            .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
            .env("ANTHROPIC_API_KEY", support::CANARY_KEY);
    }
    let started = Instant::now();
    let output = tokio::time::timeout(BOUND, command.output())
        .await
        .unwrap_or_else(|_| panic!("{api:?}: reins {args:?} took over {BOUND:?}"))
        .expect("run reins");
    let run = support::Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(!run.stdout.contains(support::CANARY_KEY) && !run.stderr.contains(support::CANARY_KEY));
    (run, started.elapsed())
}

/// Plays `replies` to a first `reins run`, then continues the session with a good answer, and
/// renders what each step showed: exit code, stderr, the stop reason of the faulted answer, the
/// requests made, and what the continuing request carried of the first exchange.
async fn play(api: Api, settings: &str, replies: Vec<Reply>) -> String {
    let dir = workspace(&[]);
    configure(dir.path(), settings);
    let server = ScriptedServer::start(replies).await;
    let (first, took) = run(api, &server, dir.path(), &["run", "--json", "first question"]).await;
    let requests = server.requests().len();
    let stop = first
        .events()
        .iter()
        .rev()
        .find(|event| event["type"] == "message_end" && event["message"]["role"] == "assistant")
        .map(|event| event["message"]["stopReason"].as_str().unwrap_or("?").to_string())
        .unwrap_or_else(|| "none".into());
    // Each retry is announced (a warning), and a failure ends in one line.
    let (retries, rest): (Vec<&str>, Vec<&str>) =
        first.stderr.lines().partition(|line| line.contains("INFO model call failed, retrying: "));
    let mut lines = vec![format!("exit {:?} after {requests} requests, stop {stop}", first.code.unwrap_or(-1))];
    lines.extend(retries.iter().map(|line| retry_notice(line)));
    lines.extend(rest.iter().map(|line| format!("stderr {:?}", redact(line))));
    assert!(took < BOUND, "{api:?} took {took:?}");

    lines.push(format!("session: {}", check_session_files(dir.path())));
    server.push(Reply::text("recovered"));
    let (next, _) = run(api, &server, dir.path(), &["run", "--continue", "second question"]).await;
    assert_eq!((next.code, next.stdout.as_str()), (Some(0), "recovered\n"), "{api:?}: {}", next.stderr);
    check_session_files(dir.path());
    let last = server.requests().pop().unwrap();
    let carried = match api {
        Api::OpenAi => transcript(&last.body),
        Api::Anthropic => anthropic_transcript(&last.body),
    };
    lines.push("continued with:".into());
    lines.extend(carried.lines().filter(|line| !line.starts_with("system")).map(|line| format!("  {line}")));
    lines.join("\n")
}

/// Plays the fault, built per API, to both APIs; both must render as `expected`.
async fn check(settings: &str, replies: impl Fn(Api) -> Vec<Reply>, expected: Expect) {
    let openai = play(Api::OpenAi, settings, replies(Api::OpenAi)).await;
    let anthropic = play(Api::Anthropic, settings, replies(Api::Anthropic)).await;
    let anthropic = anthropic.replace("/v1/messages", "/v1/chat/completions");
    assert_eq!(openai, anthropic, "the APIs differ");
    expected.assert_eq(&openai);
}

/// Checks that the workspace has one session file, every line of it a JSON entry with a `type`,
/// and renders its messages: `role` or `role (stop reason, N bytes of text)`.
fn check_session_files(dir: &Path) -> String {
    let root = reins_home(dir).join("sessions");
    let files: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .flat_map(|workspace| std::fs::read_dir(workspace.path()).unwrap().flatten())
        .collect();
    assert_eq!(files.len(), 1, "one session");
    let text = std::fs::read_to_string(files[0].path()).unwrap();
    assert!(text.ends_with('\n'), "a torn last line");
    let mut messages = Vec::new();
    for line in text.lines() {
        let entry: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(entry["type"].is_string(), "{line}");
        let message = &entry["message"];
        let Some(role) = message["role"].as_str() else { continue };
        let text: usize = message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|block| block["text"].as_str())
            .map(str::len)
            .sum();
        messages.push(match message["stopReason"].as_str() {
            Some(stop) => format!("{role} ({stop}, {text} bytes of text)"),
            None => role.to_string(),
        });
    }
    messages.join(", ")
}

/// The Anthropic request's messages, in the shape of [`transcript`].
fn anthropic_transcript(body: &Value) -> String {
    let mut lines = Vec::new();
    for message in body["messages"].as_array().unwrap() {
        // One line per block: the API merges what Chat Completions sends as separate messages.
        let role = message["role"].as_str().unwrap();
        match &message["content"] {
            Value::String(text) => lines.push(format!("{role}: {text:?}")),
            Value::Array(blocks) => {
                for block in blocks {
                    lines.push(format!("{role}: {:?}", block["text"].as_str().unwrap_or("<non-text>")));
                }
            }
            _ => lines.push(format!("{role}:")),
        }
    }
    lines.join("\n")
}

/// `retry after 429 in 1000 ms` from a retry warning: the wait only when the server asked for
/// one (Retry-After), as the backoff's own waits are jittered.
fn retry_notice(line: &str) -> String {
    let field = |name: &str| {
        let start = line.find(&format!(" {name}="))? + name.len() + 2;
        line[start..].split(' ').next()
    };
    let status = field("status").unwrap_or("a broken connection");
    match status {
        "429" => format!("retry after {status} in {} ms", field("delay_ms").unwrap_or("?")),
        _ => format!("retry after {status}"),
    }
}

/// The port of 127.0.0.1 URLs, and byte counts that depend on chunking, as fixed words.
fn redact(text: &str) -> String {
    let marker = "127.0.0.1:";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at + marker.len()]);
        rest = rest[at + marker.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push_str("PORT");
    }
    out.push_str(rest);
    out
}

fn ok() -> Reply {
    Reply::text("fine")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_success_status_with_an_html_page_says_what_came() {
    let html = "<!DOCTYPE html><html><head><title>Sign in to the network</title></head></html>";
    check(
        "",
        |_| vec![Reply::fault(Fault::Body { status: 200, content_type: "text/html".into(), body: html.into() })],
        expect![[r#"
            exit 1 after 1 requests, stop error
            stderr "reins: provider error: http://127.0.0.1:PORT/v1/chat/completions answered with Content-Type text/html, 78 bytes: \"<!DOCTYPE html><html><head><title>Sign in to the network</title></head></html>\" instead of a stream of completion events"
            session: user, assistant (error, 0 bytes of text)
            continued with:
              user: "first question"
              user: "second question""#]],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_success_status_with_plain_json_or_nothing_says_what_came() {
    let json = r#"{"id":"x","object":"chat.completion","choices":[]}"#;
    check(
        "",
        |_| vec![Reply::fault(Fault::Body { status: 200, content_type: "application/json".into(), body: json.into() })],
        expect![[r#"
            exit 1 after 1 requests, stop error
            stderr "reins: provider error: http://127.0.0.1:PORT/v1/chat/completions answered with Content-Type application/json, 50 bytes: \"{\\\"id\\\":\\\"x\\\",\\\"object\\\":\\\"chat.completion\\\",\\\"choices\\\":[]}\" instead of a stream of completion events"
            session: user, assistant (error, 0 bytes of text)
            continued with:
              user: "first question"
              user: "second question""#]],
    )
    .await;
    check(
        "",
        |_| vec![Reply::fault(Fault::Body { status: 200, content_type: "text/event-stream".into(), body: "".into() })],
        expect![[r#"
            exit 1 after 1 requests, stop error
            stderr "reins: provider error: http://127.0.0.1:PORT/v1/chat/completions answered with an empty body instead of a stream of completion events"
            session: user, assistant (error, 0 bytes of text)
            continued with:
              user: "first question"
              user: "second question""#]],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stream_stops_at_the_output_cap_and_keeps_its_text() {
    check(
        "",
        |_| vec![Reply::fault(Fault::Endless { every_ms: 0 })],
        expect![[r#"
            exit 1 after 1 requests, stop error
            stderr "reins: provider error: http://127.0.0.1:PORT/v1/chat/completions sent over 65 KB of output without finishing, far past the 1000-token output limit asked for; stopped reading"
            session: user, assistant (error, 65544 bytes of text)
            continued with:
              user: "first question"
              user: "second question""#]],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_overload_and_resets_are_retried() {
    check(
        "",
        |_| {
            vec![
                Reply::http_error(429, "slow down").with_retry_after(1),
                Reply::http_error(529, "overloaded"),
                Reply::fault(Fault::ResetBeforeHeaders),
                ok(),
            ]
        },
        expect![[r#"
            exit 0 after 4 requests, stop stop
            retry after 429 in 1000 ms
            retry after 529
            retry after a broken connection
            session: user, assistant (stop, 4 bytes of text)
            continued with:
              user: "first question"
              assistant: "fine"
              user: "second question""#]],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_that_last_end_in_one_line() {
    check(
        "",
        |_| vec![Reply::http_error(503, "down for maintenance"); 4],
        expect![[r#"
            exit 1 after 4 requests, stop error
            retry after 503
            retry after 503
            retry after 503
            stderr "reins: provider error (HTTP 503): down for maintenance"
            session: user, assistant (error, 0 bytes of text)
            continued with:
              user: "first question"
              user: "second question""#]],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_mid_stream_keeps_the_text_and_is_not_retried() {
    check(
        "",
        |api| {
            // Past the role chunk (OpenAI) or message_start, ping and block start (Anthropic).
            let events = match api {
                Api::OpenAi => 3,
                Api::Anthropic => 5,
            };
            vec![Reply::text("partial answer").with_chunk_chars(4).with_cut_after_chunks(events)]
        },
        expect![[r#"
            exit 1 after 1 requests, stop error
            stderr "reins: the model server stopped mid-answer (what arrived is kept); check that it is still running, then send again (the stream from http://127.0.0.1:PORT/v1/chat/completions broke: error decoding response body)"
            session: user, assistant (error, 8 bytes of text)
            continued with:
              user: "first question"
              user: "second question""#]],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alives_alone_end_at_the_idle_timeout() {
    check(
        "[limits]\nstream_idle_timeout = 1\n",
        |_| vec![Reply::fault(Fault::KeepAliveOnly { every_ms: 100 })],
        expect![[r#"
            exit 1 after 1 requests, stop error
            stderr "reins: provider error: http://127.0.0.1:PORT/v1/chat/completions sent only keep-alives, no content, for 1.0 s (the idle timeout)"
            session: user, assistant (error, 0 bytes of text)
            continued with:
              user: "first question"
              user: "second question""#]],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalls_before_and_after_the_headers_end_at_the_idle_timeout() {
    let expected = || {
        expect![[r#"
            exit 1 after 1 requests, stop error
            stderr "reins: provider error: http://127.0.0.1:PORT/v1/chat/completions sent nothing for 1.0 s (the idle timeout)"
            session: user, assistant (error, 0 bytes of text)
            continued with:
              user: "first question"
              user: "second question""#]]
    };
    let settings = "[limits]\nstream_idle_timeout = 1\n";
    check(settings, |_| vec![Reply::fault(Fault::StallBeforeHeaders)], expected()).await;
    check(settings, |_| vec![Reply::fault(Fault::StallAfterHeaders)], expected()).await;
}
