//! End-to-end tests of `reins run`: the real binary, a scripted OpenAI-compatible server on
//! 127.0.0.1, real files in a temp workspace.

mod support;

use expect_test::expect;
use scripted_llm::{Reply, ScriptedServer};
use serde_json::json;
use std::path::Path;

use support::{
    CANARY_KEY, CTRL_BACKSLASH, CTRL_C, reins_command, reins_home, reins_in_terminal, reins_run, reins_run_in_terminal,
    reins_run_with, transcript, workspace,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_a_file_then_answers() {
    let dir = workspace(&[("README.md", "# Demo\nreins is an agent in your editor.\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("call_1", "read", json!({"path": "README.md"})).with_usage(120, 10, 0),
        Reply::text("The README says reins is an agent in your editor.").with_usage(200, 12, 100),
    ])
    .await;

    let run = reins_run(&server, dir.path(), &["--json", "--yes", "What does the README say?"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);

    expect![[r#"
        agent_start
        message_start
        message_end
        turn_start
        message_start
        message_update
        message_end
        tool_execution_start
        tool_execution_end
        turn_end
        turn_start
        message_start
        message_update
        message_end
        turn_end
        agent_end"#]]
    .assert_eq(&dedup_updates(&run.event_types()));

    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].header("authorization"), Some(format!("Bearer {CANARY_KEY}").as_str()));
    expect![[r##"
        system: <system prompt>
        user: "What does the README say?"
        assistant: call call_1 read({"path":"README.md"})
        tool: "# Demo\nreins is an agent in your editor.\n" [for call_1]"##]]
    .assert_eq(&transcript(&requests[1].body));

    let events = run.events();
    let end = events.last().unwrap();
    assert_eq!(end["type"], "agent_end");
    assert_eq!(end["reason"], "final_answer");
    assert_eq!(end["usage"]["input"].as_u64().unwrap() + end["usage"]["cacheRead"].as_u64().unwrap(), 320);
    let turn_ends: Vec<&str> =
        events.iter().filter(|e| e["type"] == "turn_end").map(|e| e["reason"].as_str().unwrap()).collect();
    assert_eq!(turn_ends, ["tool_observations", "final_answer"]);
}

/// Consecutive `message_update` lines collapse into one: how many deltas arrive is chunking.
fn dedup_updates(types: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for line in types.lines() {
        if line == "message_update" && out.last() == Some(&"message_update") {
            continue;
        }
        out.push(line);
    }
    out.join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn human_mode_prints_only_the_answer_on_stdout() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "read", json!({"path": "a.txt"})),
        Reply::text("It says alpha.").with_thinking("Let me think."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["what is in a.txt?"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "It says alpha.\n");
    assert!(run.stderr.contains("● read a.txt"), "{}", run.stderr);
    assert!(run.stderr.contains("Let me think."), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagents_tools_show_nested_and_only_the_parents_answer_reaches_stdout() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("t1", "task", json!({"prompt": "read a.txt and say what it holds"})),
        Reply::tool_call("c1", "read", json!({"path": "a.txt"})),
        Reply::text("the child says alpha"),
        Reply::text("It holds alpha."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["what is in a.txt?"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "It holds alpha.\n", "the child's answer goes to the parent, not the terminal");
    assert!(run.stderr.contains("● task read a.txt and say what it holds\n"), "the job, not its JSON: {}", run.stderr);
    assert!(run.stderr.contains("  ↳ read a.txt"), "{}", run.stderr);
    let requests = server.chat_requests();
    assert!(transcript(&requests[3].body).contains("the child says alpha"), "the answer is the task's result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_with_yes_changes_the_file() {
    let dir = workspace(&[("src/lib.rs", "fn answer() -> u32 {\n    41\n}\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call(
            "c1",
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "    41", "newText": "    42"}]}),
        ),
        Reply::text("Fixed."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--json", "--yes", "fix the answer"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(), "fn answer() -> u32 {\n    42\n}\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_or_yes_an_edit_is_refused_and_the_model_is_told() {
    let dir = workspace(&[("a.txt", "one\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "write", json!({"path": "a.txt", "content": "two\n"})),
        Reply::text("Understood, I did not change it."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--json", "overwrite a.txt"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\n");
    let requests = server.chat_requests();
    let tool_message = &requests[1].body["messages"][3];
    assert_eq!(tool_message["role"], "tool");
    let text = tool_message["content"].to_string();
    assert!(text.contains("could not be asked") && text.contains("--yes"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_then_ok_is_retried() {
    let dir = workspace(&[]);
    let server =
        ScriptedServer::start(vec![Reply::http_error(429, "slow down").with_retry_after(0), Reply::text("hello")])
            .await;
    let run = reins_run(&server, dir.path(), &["say hello"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "hello\n");
    assert_eq!(server.chat_requests().len(), 2);
    // The retry is one line of progress for a person, no log line.
    let retrying = run.stderr.lines().find(|line| line.contains("retrying")).unwrap_or_default();
    assert!(retrying.starts_with("  retrying 1/3 in 0.0 s: "), "{}", run.stderr);
    assert!(!run.stderr.contains("WARN"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_stream_keeps_what_arrived_and_fails_with_one_line() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![
        Reply::text("The first part arrives, then the connection drops").with_chunk_chars(5).with_cut_after_chunks(4),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--json", "talk"]).await;
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("reins: the model server stopped mid-answer (what arrived is kept)"),
        "{}",
        run.stderr
    );
    let events = run.events();
    // The run's end carries the same line, for surfaces that show it.
    let told = events.last().unwrap()["error"].as_str().unwrap().to_string();
    assert_eq!(format!("reins: {told}\n"), run.stderr);
    let end = events.iter().rev().find(|e| e["type"] == "message_end").unwrap();
    assert_eq!(end["message"]["stopReason"], "error");
    let text = end["message"]["content"][0]["text"].as_str().unwrap();
    assert!(!text.is_empty() && "The first part arrives, then the connection drops".starts_with(text), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_keeps_what_arrived_and_says_the_model_refused() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("I can't").with_finish_reason("content_filter")]).await;
    let run = reins_run(&server, dir.path(), &["--json", "talk"]).await;
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr, "reins: stopped: the model refused to answer; rephrase the request or pick another model\n");
    let events = run.events();
    let end = events.iter().rev().find(|e| e["type"] == "message_end").unwrap();
    assert_eq!(
        (&end["message"]["stopReason"], &end["message"]["content"][0]["text"]),
        (&json!("refusal"), &json!("I can't"))
    );
    let last = events.last().unwrap();
    assert_eq!((&last["type"], &last["reason"]), (&json!("agent_end"), &json!("refusal")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_tool_arguments_are_repaired_or_reported() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(vec![
        // A missing closing brace is repaired.
        Reply::default().with_raw_tool_call("c1", "read", r#"{"path": "a.txt""#),
        // Not JSON at all: the model gets an error it can act on.
        Reply::default().with_raw_tool_call("c2", "read", "read the file a.txt please"),
        // A wrong type names the field.
        Reply::tool_call("c3", "read", json!({"path": 7})),
        Reply::text("done"),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--json", "read a.txt"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let results: Vec<(bool, String)> = run
        .events()
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .map(|e| (e["isError"].as_bool().unwrap(), e["result"]["content"][0]["text"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0], (false, "alpha\n".to_string()));
    assert!(results[1].0 && results[1].1.contains("not valid JSON"), "{:?}", results[1]);
    assert!(results[2].0 && results[2].1.contains("path"), "{:?}", results[2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_default_endpoint_says_how_to_configure() {
    let dir = workspace(&[]);
    // Nothing listens on this port: bind and drop to find a free one.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let run = reins_run_with(Some(&url), dir.path(), &["hi"]).await;
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains(&url), "{}", run.stderr);

    // Nothing listens at the default local endpoint here: one line saying what to do, without
    // retries (nothing starts a server in the seconds they wait) or log lines before it.
    let unconfigured = reins_run_with(None, dir.path(), &["hi"]).await;
    assert_ne!(unconfigured.code, Some(0));
    assert!(unconfigured.stderr.contains("OPENAI_BASE_URL"), "{}", unconfigured.stderr);
    assert_eq!(unconfigured.stderr.lines().count(), 1, "{}", unconfigured.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_command_lines_exit_nonzero_with_usage() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![]).await;
    let run = reins_run(&server, dir.path(), &["--max-turns", "x", "hi"]).await;
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.starts_with("reins: "), "{}", run.stderr);
    assert!(server.chat_requests().is_empty());
}

/// The command line as a user meets it: help on stdout with status 0, a usage error as one
/// `reins: …` line (with clap's tip) on stderr with status 2, completion scripts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_typos_bad_values_and_completions_at_the_real_binary() {
    let dir = workspace(&[]);
    let reins = |args: &'static [&'static str]| support::reins(None, dir.path(), args);
    for args in [&["--help"][..], &["help"], &["run", "--help"], &["help", "sessions"], &["sessions", "tree", "-h"]] {
        let run = reins(args).await;
        assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""), "{args:?}");
        assert!(run.stdout.contains("Usage: reins"), "{args:?}: {}", run.stdout);
    }
    assert!(reins(&["run", "--help"]).await.stdout.contains("--max-turns <N>"));
    for args in [&["--version"][..], &["version"], &["-V"]] {
        let run = reins(args).await;
        assert_eq!((run.code, run.stdout.as_str()), (Some(0), concat!("reins ", env!("CARGO_PKG_VERSION"), "\n")));
    }

    let typo = reins(&["sesions", "list"]).await;
    assert_eq!(typo.code, Some(2));
    assert!(typo.stderr.starts_with("reins: unrecognized subcommand 'sesions'"), "{}", typo.stderr);
    assert!(typo.stderr.contains("tip: a similar subcommand exists: 'sessions'"), "{}", typo.stderr);
    assert!(typo.stdout.is_empty());
    for args in [
        &["run", "--max-turns", "0", "hi"][..],
        &["run", "--cwd", "/nonexistent/dir", "hi"],
        &["run", "--continue", "--no-session", "hi"],
        &["run", "  "],
        &["lsp", "--listen", "nine"],
        &["sessions", "tree", ""],
        &["completions", "tcsh"],
    ] {
        let run = reins(args).await;
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("reins: "), "{args:?}: {}", run.stderr);
    }
    // With nothing to do, the help goes to stderr and the status says so.
    let bare = reins(&[]).await;
    assert_eq!(bare.code, Some(2));
    assert!(bare.stderr.contains("Usage: reins") && bare.stdout.is_empty(), "{}", bare.stderr);

    let bash = reins(&["completions", "bash"]).await;
    assert_eq!(bash.code, Some(0));
    assert!(bash.stdout.contains("complete -F _reins") && bash.stdout.contains("checkout"), "{}", bash.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_asks_before_an_edit_and_yes_applies_it() {
    let dir = workspace(&[("a.txt", "hello\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call(
            "c1",
            "edit",
            json!({"path": "a.txt", "edits": [{"oldText": "hello", "newText": "hello world"}]}),
        ),
        Reply::text("Done."),
    ])
    .await;
    let screen = reins_run_in_terminal(&server, dir.path(), "change it", &["y"]).await;
    // One hunk: one plain question, no hunk numbers.
    assert!(screen.contains("Apply? [y,n,c,?]") && !screen.contains("hunk 1"), "{screen}");
    assert!(screen.contains("✓ Edited a.txt: 1 replacement"), "{screen}");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "hello world\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_rejection_and_its_reason_reach_the_model() {
    let dir = workspace(&[("a.txt", "hello\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "bash", json!({"command": "rm -rf build"})),
        Reply::text("Understood."),
    ])
    .await;
    let screen = reins_run_in_terminal(&server, dir.path(), "clean up", &["n", "keep the build"]).await;
    // The command shows once: on the tool's line, which the prompt follows.
    assert_eq!(screen.matches("$ rm -rf build").count(), 1, "{screen}");
    assert!(screen.contains("Run it? [y/N]"), "{screen}");
    let requests = server.chat_requests();
    let tool_result = requests[1].body["messages"][3]["content"].to_string();
    assert!(tool_result.contains("the user rejected this bash call: keep the build"), "{tool_result}");
}

/// Runs `reins run --json --yes PROMPT` with `model` against `server` in `dir`: the tools the
/// model was offered and what it read back from its first tool call.
async fn run_with_model(server: &ScriptedServer, dir: &Path, model: &str) -> (Vec<String>, String) {
    let mut command = reins_command(Some(&server.base_url()), dir, &["run", "--json", "--yes", "tidy up"]);
    command.env("REINS_MODEL", model);
    let output = command.output().await.unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    let requests = server.chat_requests();
    let result = requests[1].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    (offered_tools(server), result["content"].as_str().unwrap_or_default().to_string())
}

/// The names of the tools the first request offered the model.
fn offered_tools(server: &ScriptedServer) -> Vec<String> {
    let requests = server.chat_requests();
    let tools = requests[0].body["tools"].as_array().unwrap().iter();
    tools.map(|tool| tool["function"]["name"].as_str().unwrap_or_default().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_trained_on_patches_gets_apply_patch_and_its_patch_lands_whole() {
    let dir = workspace(&[("src/app.py", "def main():\n    print(“hi”)\n"), ("old.txt", "bye\n"), ("a.py", "x = 1\n")]);
    let patch = "*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    print(\"hi\")\n+    print(\"hello\")\n\
                 *** Add File: docs/new.md\n+# New\n*** Delete File: old.txt\n*** Update File: a.py\n*** Move to: b.py\n\
                 @@\n-x = 1\n+x = 2\n*** End Patch";
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "apply_patch", json!({ "input": patch })),
        Reply::text("Done."),
    ])
    .await;
    // gpt-5's registry entry says apply_patch; OPENAI_BASE_URL points the openai provider here.
    let (tools, result) = run_with_model(&server, dir.path(), "gpt-5").await;
    assert!(tools.contains(&"apply_patch".to_string()) && !tools.contains(&"edit".to_string()), "{tools:?}");
    expect![[r#"
        Applied the patch:
        - changed src/app.py
          Note: src/app.py (line 3 of the patch): matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms
        - created docs/new.md (1 lines)
        - deleted old.txt
        - moved a.py to b.py and changed it

        --- src/app.py
        +++ src/app.py
        @@ -1,2 +1,2 @@
         def main():
        -    print(“hi”)
        +    print(“hello”)
        --- a.py
        +++ a.py
        @@ -1 +1 @@
        -x = 1
        +x = 2"#]]
    .assert_eq(&result);
    let read = |path: &str| std::fs::read_to_string(dir.path().join(path)).ok();
    assert_eq!(read("src/app.py").as_deref(), Some("def main():\n    print(“hello”)\n"));
    assert_eq!(read("docs/new.md").as_deref(), Some("# New\n"));
    assert_eq!((read("old.txt"), read("a.py")), (None, None));
    assert_eq!(read("b.py").as_deref(), Some("x = 2\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_with_one_bad_hunk_changes_no_file_and_names_file_and_hunk() {
    let dir = workspace(&[("a.py", "a = 1\n"), ("b.py", "def f():\n    return 1\n")]);
    let patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-a = 1\n+a = 2\n*** Update File: b.py\n@@ def f():\n-    return 2\n+    return 3\n*** End Patch";
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "apply_patch", json!({ "input": patch })),
        Reply::text("I will read b.py again."),
    ])
    .await;
    let (_, result) = run_with_model(&server, dir.path(), "gpt-4.1").await;
    expect![[r#"
        b.py (line 7 of the patch): could not find the hunk's context and '-' lines in b.py. The most similar part of the file is line 2 (no other region comes close), shown with line numbers, which are not part of the file:
            1 | def f():
            2 |     return 1
        What differs (- your hunk, + the file):
        -     return 2
        +     return 1

        Read b.py again and copy the hunk's context and '-' lines exactly as they are now, including whitespace and indentation.
        No file was changed."#]]
    .assert_eq(&result);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.py")).unwrap(), "a = 1\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_models_keep_edit_unless_config_says_apply_patch() {
    let dir = workspace(&[("a.py", "x = 1\n")]);
    let tools = || async {
        let server = ScriptedServer::start(vec![Reply::text("Nothing to do.")]).await;
        let run = reins_run(&server, dir.path(), &["--json", "hello"]).await;
        assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
        offered_tools(&server)
    };
    let before = tools().await;
    assert!(before.contains(&"edit".to_string()) && !before.contains(&"apply_patch".to_string()), "{before:?}");
    std::fs::create_dir_all(reins_home(dir.path())).unwrap();
    std::fs::write(reins_home(dir.path()).join("config.toml"), "[tools]\nedit_format = \"apply_patch\"\n").unwrap();
    let after = tools().await;
    assert!(after.contains(&"apply_patch".to_string()) && !after.contains(&"edit".to_string()), "{after:?}");
}

/// A file of twelve lines, and the model's edit of two places far apart in it.
fn twelve_lines_and_two_edits() -> (String, Reply) {
    let text: String = (1..=12).map(|n| format!("line {n}\n")).collect();
    let edits = json!({"path": "a.txt", "edits": [
        {"oldText": "line 2\n", "newText": "line two\n"},
        {"oldText": "line 11\n", "newText": "line eleven\n"}]});
    (text, Reply::tool_call("c1", "edit", edits))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_asks_hunk_by_hunk_and_the_reason_for_a_skipped_one_reaches_the_model() {
    let (text, edit) = twelve_lines_and_two_edits();
    let dir = workspace(&[("a.txt", &text)]);
    let server = ScriptedServer::start(vec![edit, Reply::text("Done.")]).await;
    let screen = reins_run_in_terminal(&server, dir.path(), "rename them", &["n", "y", "keep line 2"]).await;
    assert!(
        screen.contains("2 hunks") && screen.contains("hunk 1 of 2:") && screen.contains("hunk 2 of 2:"),
        "{screen}"
    );
    assert_eq!(screen.matches("Apply this hunk? [y,n,a,d,c,?]").count(), 2, "{screen}");
    let now = std::fs::read_to_string(dir.path().join("a.txt")).unwrap();
    assert_eq!(now, text.replace("line 11\n", "line eleven\n"));
    let requests = server.chat_requests();
    let tool_result = requests[1].body["messages"][3]["content"].to_string();
    assert!(tool_result.contains("The user applied hunk 2 and did not apply hunk 1"), "{tool_result}");
    assert!(tool_result.contains("The user's reason for not applying hunk 1: keep line 2"), "{tool_result}");
}

/// `c` at a hunk's prompt reads a comment; the three comments go to the model with the decisions
/// in one batch, and the revision that answers them says so — one round, no comment lost or on
/// another hunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comments_typed_at_the_hunk_prompts_reach_the_model_with_the_decisions() {
    let text: String = (1..=12).map(|n| format!("line {n}\n")).collect();
    let edits = json!({"path": "a.txt", "edits": [
        {"oldText": "line 2\n", "newText": "line two\n"},
        {"oldText": "line 6\n", "newText": "line six\n"},
        {"oldText": "line 11\n", "newText": "line eleven\n"}]});
    let revision = json!({"path": "a.txt", "edits": [
        {"oldText": "line 2\n", "newText": "line Two\n"},
        {"oldText": "line six\n", "newText": "line 6 (six)\n"},
        {"oldText": "line 11\n", "newText": "line 11 (eleven)\n"}]});
    let dir = workspace(&[("a.txt", &text)]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "edit", edits),
        Reply::tool_call("c2", "edit", revision),
        Reply::text("Done."),
    ])
    .await;
    let answers = ["c", "capital T please", "n", "c", "keep the digit too", "y", "c", "keep the digits", "n", " ", "a"];
    let screen = reins_run_in_terminal(&server, dir.path(), "spell them out", &answers).await;
    assert_eq!(screen.matches("Comment for the model (one line):").count(), 3, "{screen}");
    let told = server.chat_requests()[1].body["messages"][3]["content"].as_str().unwrap_or_default().to_string();
    let batch = told.split_once("The user's comments").map(|(_, batch)| batch).unwrap_or_else(|| panic!("{told}"));
    expect_test::expect![[r#"
         on this change to a.txt, with the decision on each hunk (lines as a.txt now reads):
        hunk 1 (line 2): rejected — comment: capital T please
        hunk 2 (line 6): applied — comment: keep the digit too
        hunk 3 (line 11): rejected — comment: keep the digits"#]]
    .assert_eq(batch);
    for (hunk, comment) in [(1, "capital T please"), (2, "keep the digit too"), (3, "keep the digits")] {
        let resolved = format!("✓ answers your comment on hunk {hunk}: {comment}");
        assert_eq!(screen.matches(&resolved).count(), 1, "{screen}");
    }
    let expected = text.replace("line 2\n", "line Two\n").replace("line 6\n", "line 6 (six)\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        expected.replace("line 11\n", "line 11 (eleven)\n")
    );
}

/// Ctrl-C at a hunk's prompt cancels the run and reins exits with 130 at once: no further
/// prompt, nothing applied, no further model call. (Before, the blocking read of the terminal
/// kept reins alive until every remaining prompt was answered; the helper fails when the
/// terminal goes quiet without reins exiting.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_a_hunk_prompt_cancels_the_run_and_exits() {
    let (text, edit) = twelve_lines_and_two_edits();
    let dir = workspace(&[("a.txt", &text)]);
    let server = ScriptedServer::start(vec![edit, Reply::text("Done.")]).await;
    let args = ["run", "rename them"];
    let (screen, status) = reins_in_terminal(Some(&server.base_url()), dir.path(), &args, &[CTRL_C]).await;
    assert_eq!(status, Some(130), "{screen}");
    assert_eq!(screen.matches("Apply this hunk? [y,n,a,d,c,?]").count(), 1, "{screen}");
    assert!(screen.contains("reins: cancelled"), "{screen}");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), text);
    assert_eq!(server.chat_requests().len(), 1);
}

/// A signal at a command's `Run it? [y/N]` (here SIGQUIT, from Ctrl-\) stops reins with its
/// status, the command not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_at_a_command_prompt_stops_the_run_and_exits() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "bash", json!({"command": "touch ran"})),
        Reply::text("Done."),
    ])
    .await;
    let args = ["run", "make a file"];
    let (screen, status) = reins_in_terminal(Some(&server.base_url()), dir.path(), &args, &[CTRL_BACKSLASH]).await;
    assert_eq!(status, Some(131), "{screen}");
    assert_eq!(screen.matches("Run it? [y/N]").count(), 1, "{screen}");
    assert!(!dir.path().join("ran").exists());
    assert_eq!(server.chat_requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_terminal_a_applies_the_rest_and_d_skips_it() {
    let (text, edit) = twelve_lines_and_two_edits();
    let dir = workspace(&[("a.txt", &text)]);
    let server = ScriptedServer::start(vec![edit.clone(), Reply::text("Done.")]).await;
    let screen = reins_run_in_terminal(&server, dir.path(), "rename them", &["a"]).await;
    assert_eq!(screen.matches("Apply this hunk? [y,n,a,d,c,?]").count(), 1, "{screen}");
    let expected = text.replace("line 2\n", "line two\n").replace("line 11\n", "line eleven\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), expected);

    let dir = workspace(&[("a.txt", &text)]);
    let server = ScriptedServer::start(vec![edit, Reply::text("Understood.")]).await;
    let screen = reins_run_in_terminal(&server, dir.path(), "rename them", &["d", "not now"]).await;
    assert_eq!(screen.matches("Apply this hunk? [y,n,a,d,c,?]").count(), 1, "{screen}");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), text);
    let tool_result = server.chat_requests()[1].body["messages"][3]["content"].to_string();
    assert!(tool_result.contains("The user rejected this edit of a.txt, saying: not now"), "{tool_result}");
}

/// A "compiler" for the `[diagnostics] command` tests: an error per `TODO` in src/, one error and
/// one warning that were always there, and a summary line; each run leaves a line in checks.log.
const CHECK_SCRIPT: &str = r#"echo ran >> checks.log
echo "   Compiling demo v0.1.0"
grep -n TODO src/*.rs | while IFS=: read -r file line _; do echo "$file:$line:1: error: TODO left in the code"; done
echo "src/old.rs:3:7: error[E0425]: cannot find value \`gone\` in this scope"
echo "src/old.rs:4:1: warning: unused import"
echo "error: could not compile \`demo\` (lib) due to previous errors"
exit 1
"#;

/// A workspace whose config runs `command` after the agent's edits.
fn workspace_checked_by(command: &str, timeout_secs: u64) -> tempfile::TempDir {
    let dir = workspace(&[
        ("src/lib.rs", "fn a() {}\nfn b() {}\n"),
        ("src/old.rs", "fn old() {\n}\nlet x = gone;\nuse std::fmt;\n"),
        ("check.sh", CHECK_SCRIPT),
    ]);
    let home = reins_home(dir.path());
    std::fs::create_dir_all(&home).unwrap();
    let config = format!("[diagnostics]\ncommand = {command:?}\ncommand_timeout = {timeout_secs}\n");
    std::fs::write(home.join("config.toml"), config).unwrap();
    dir
}

/// The text of tool result `call_id` in the last model request.
fn result_of(server: &ScriptedServer, call_id: &str) -> String {
    let requests = server.chat_requests();
    let messages = requests.last().unwrap().body["messages"].as_array().unwrap().clone();
    let result = messages.iter().find(|m| m["tool_call_id"] == call_id).unwrap();
    result["content"].as_str().map(str::to_string).unwrap_or_else(|| result["content"].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diagnostics_command_tells_the_model_the_problems_its_edits_added_once_per_turn() {
    let dir = workspace_checked_by("sh check.sh", 30);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "read", json!({"path": "src/lib.rs"})),
        Reply::tool_call(
            "c2",
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "fn b() {}", "newText": "fn b() {} // TODO first"}]}),
        )
        .with_tool_call("c3", "write", json!({"path": "src/new.rs", "content": "// TODO second\n"})),
        Reply::tool_call(
            "c4",
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "fn a() {}", "newText": "fn a() { }"}]}),
        ),
        Reply::text("Done."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--json", "--yes", "leave some TODOs"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);

    // Not after the read; before the first edit (a baseline) and after the last edit of each turn
    // that changed files.
    assert_eq!(std::fs::read_to_string(dir.path().join("checks.log")).unwrap(), "ran\nran\nran\n");
    assert_eq!(
        result_of(&server, "c2"),
        "Edited src/lib.rs: 1 replacement\n\n@@ -1,2 +1,2 @@\n fn a() {}\n-fn b() {}\n+fn b() {} // TODO first"
    );
    expect![[r#"
        Created src/new.rs (15 bytes)

        The edit resulted in these new problems:
        src/lib.rs:2:1: error: TODO left in the code
        src/new.rs:1:1: error: TODO left in the code"#]]
    .assert_eq(&result_of(&server, "c3"));
    // The TODOs were there before the third edit: nothing new to tell.
    assert!(!result_of(&server, "c4").contains("new problems"), "{}", result_of(&server, "c4"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diagnostics_command_that_hangs_is_stopped_at_its_timeout() {
    let dir = workspace_checked_by("echo ran >> checks.log; sleep 60", 1);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "write", json!({"path": "src/new.rs", "content": "// TODO\n"})),
        Reply::tool_call("c2", "write", json!({"path": "src/newer.rs", "content": "// TODO\n"})),
        Reply::text("Done."),
    ])
    .await;
    let begun = std::time::Instant::now();
    let run = reins_run(&server, dir.path(), &["--json", "--yes", "write files"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert!(begun.elapsed() < std::time::Duration::from_secs(20), "took {:?}", begun.elapsed());
    assert_eq!(result_of(&server, "c1"), "Created src/new.rs (8 bytes)");
    assert_eq!(result_of(&server, "c2"), "Created src/newer.rs (8 bytes)");
    // The baseline timed out: no more runs for the rest of the run.
    assert_eq!(std::fs::read_to_string(dir.path().join("checks.log")).unwrap(), "ran\n");
}

/// The names of the tools a recorded OpenAI-compatible request offers.
fn tool_names(body: &serde_json::Value) -> Vec<String> {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().map(|tool| tool["function"]["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_choose_what_is_offered_and_the_session_keeps_them() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(vec![
        // Offered only read, ls, grep and find, the model tries to write anyway.
        Reply::tool_call("c1", "write", json!({"path": "a.txt", "content": "beta\n"})),
        Reply::text("I cannot write here."),
        Reply::text("Still asking only."),
        Reply::text("Now with bash."),
        Reply::text("A new session follows the config."),
    ])
    .await;
    let run = reins_run(&server, dir.path(), &["--yes", "--tools", "read-only", "overwrite a.txt"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "alpha\n");
    let run = reins_run(&server, dir.path(), &["--continue", "and now?"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let run = reins_run(&server, dir.path(), &["--continue", "--tools", "read,bash", "and with bash?"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    std::fs::create_dir_all(reins_home(dir.path())).unwrap();
    std::fs::write(reins_home(dir.path()).join("config.toml"), "[tools]\nenabled = [\"grep\", \"mcp__*\"]\n").unwrap();
    let run = reins_run(&server, dir.path(), &["hello"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    let requests = server.chat_requests();
    let offered: Vec<Vec<String>> = requests.iter().map(|request| tool_names(&request.body)).collect();
    let read_only = ["read", "ls", "grep", "find", "todo"].map(String::from).to_vec();
    let read_bash = ["read", "bash"].map(String::from).to_vec();
    assert_eq!(offered, [read_only.clone(), read_only.clone(), read_only, read_bash, vec!["grep".to_string()]]);
    let result = &requests[1].body["messages"][3];
    assert_eq!(result["role"], "tool");
    assert!(result["content"].as_str().unwrap().starts_with("unknown tool `write`"), "{result}");
    // A read-only session is not told about proposals; one with bash is.
    let system = |i: usize| requests[i].body["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(!system(0).contains("proposals") && system(3).contains("proposals"), "{}", system(3));
    // The session file records each set once, as it was given (read-only spelled out).
    let files = support::files_containing(&reins_home(dir.path()), "active_tools_change");
    assert_eq!(files.len(), 1, "{files:?}");
    let sets: Vec<serde_json::Value> = std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|entry| entry["type"] == "active_tools_change")
        .map(|entry| entry["tools"].clone())
        .collect();
    assert_eq!(sets, [json!(["read", "ls", "grep", "find", "todo", "diagnostics", "lsp"]), json!(["read", "bash"])]);

    // A name reins does not know is a usage error that lists the tools.
    let run = reins_run(&server, dir.path(), &["--tools", "read,rg", "x"]).await;
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("unknown tool `rg`; the tools are read, write"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_maps_per_provider_and_the_session_keeps_it() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![
        Reply::text("Thought hard."),
        Reply::text("Still thinking hard."),
        Reply::text("Effort chosen."),
        Reply::text("No effort for this one."),
    ])
    .await;
    let anthropic = |args: &[&str]| {
        let mut full = vec!["run", "--model", "anthropic/claude-sonnet-4-5"];
        full.extend_from_slice(args);
        reins_command(None, dir.path(), &full)
            .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
            .env("ANTHROPIC_API_KEY", CANARY_KEY)
            .output()
    };
    let output = anthropic(&["--thinking", "high", "think"]).await.unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let output = anthropic(&["--continue", "again"]).await.unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let requests = server.messages_requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.body["thinking"], json!({"type": "enabled", "budget_tokens": 16384}));
        assert_eq!(request.body["max_tokens"], 64000);
    }
    let files = support::files_containing(&reins_home(dir.path()), "thinking_level_change");
    assert_eq!(files.len(), 1, "{files:?}");

    // An OpenAI-compatible model whose entry lists the efforts it takes gets the nearest one
    // above; one that does not reason gets none, and the user is told once.
    std::fs::write(
        reins_home(dir.path()).join("config.toml"),
        "[[models]]\nid = \"scripted-model\"\nprovider = \"openai-compatible\"\nreasoning = true\n\
         reasoning_effort = [\"low\", \"high\"]\n",
    )
    .unwrap();
    let run = reins_run(&server, dir.path(), &["--thinking", "medium", "how hard?"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    std::fs::remove_file(reins_home(dir.path()).join("config.toml")).unwrap();
    let run = reins_run(&server, dir.path(), &["--thinking", "medium", "and you?"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stderr.matches("does not reason").count(), 1, "{}", run.stderr);
    let efforts: Vec<serde_json::Value> =
        server.chat_requests().iter().map(|request| request.body["reasoning_effort"].clone()).collect();
    assert_eq!(efforts, [json!("high"), serde_json::Value::Null]);

    let run = reins_run(&server, dir.path(), &["--thinking", "max", "x"]).await;
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("[possible values: off, minimal, low, medium, high, xhigh]"), "{}", run.stderr);
}

/// Issue 28: `--continue` where there is no session yet says so, and the run goes on in a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_without_a_session_says_so_and_starts_one() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("hello"), Reply::text("again")]).await;
    let run = reins_run(&server, dir.path(), &["--continue", "hi"]).await;
    assert_eq!((run.code, run.stdout.trim()), (Some(0), "hello"), "{}", run.stderr);
    let said = "reins: --continue: there is no session in this workspace yet; starting a new one";
    assert!(run.stderr.contains(said), "{}", run.stderr);
    let run = reins_run(&server, dir.path(), &["--continue", "hi"]).await;
    assert_eq!((run.code, run.stdout.trim()), (Some(0), "again"), "{}", run.stderr);
    assert!(!run.stderr.contains("no session"), "a session to continue is continued quietly: {}", run.stderr);
}

/// `--json` gathers the events of one wakeup into one write, but nothing waits behind a slow
/// model: each delta is on stdout as it comes, not with the next one or at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_events_go_out_as_the_model_streams() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![
        Reply::text("First part. Second part.").with_chunk_chars(12).with_chunk_delay_ms(1500),
    ])
    .await;
    let mut child = reins_command(Some(&server.base_url()), dir.path(), &["run", "--json", "--yes", "hello"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut deltas = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        let event: serde_json::Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "message_update" && event.to_string().contains("part.") {
            deltas.push((std::time::Instant::now(), event.to_string()));
        }
    }
    assert_eq!(child.wait().await.unwrap().code(), Some(0));
    let [(first_at, first), (second_at, second)] = &deltas[..] else { panic!("two deltas expected: {deltas:?}") };
    assert!(first.contains("First part.") && second.contains("Second part."), "{deltas:?}");
    // The model sends the second part 1.5 s after the first.
    let gap = second_at.duration_since(*first_at);
    assert!(gap >= std::time::Duration::from_millis(700), "the first part waited for the second: {gap:?} apart");
}
