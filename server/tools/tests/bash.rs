//! `bash`: output and exit codes, timeouts and cancellation that kill the whole process group
//! (grandchildren included), partial output, and truncation that keeps the full output in a file.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use expect_test::{Expect, expect};
use reins_agent::{CommandProposal, Proposal, Tool, ToolContext};
use reins_tools::{BashTool, ExecPolicy};
use support::{Fixture, outcome, run, run_with};
use tokio_util::sync::CancellationToken;

/// Runs `command` (with `timeout` seconds, if given) in an empty workspace.
async fn check_bash(command: &str, timeout: Option<u64>, expected: Expect) {
    let fixture = Fixture::new(&[]);
    let arguments = serde_json::json!({"command": command, "timeout": timeout}).to_string();
    let answer = outcome(run(&BashTool::new(fixture.workspace.clone()), &arguments).await);
    expected.assert_eq(&answer);
}

/// Whether process `pid` has ended (it may linger as a zombie until its new parent reaps it).
fn has_ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name, which is in parentheses: "123 (sleep) Z ...".
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

#[tokio::test]
async fn background_processes_run_on_while_the_tool_lives_and_end_with_it() {
    let fixture = Fixture::new(&[]);
    let tool = BashTool::new(fixture.workspace.clone());
    let command = "sleep 30.4 > /dev/null 2>&1 & nohup sleep 30.5 > /dev/null 2>&1 & \
                   setsid sleep 30.6 > /dev/null 2>&1 & (setsid sh -c 'sleep 30.7 & :' > /dev/null 2>&1 &); echo started";
    let arguments = serde_json::json!({ "command": command }).to_string();
    expect![[r#"
        started

        [Processes the command started still run in the background; they end when reins ends.]"#]]
    .assert_eq(&outcome(run(&tool, &arguments).await));
    let lines = ["sleep 30.4", "sleep 30.5", "sleep 30.6", "sleep 30.7"];
    let mut pids = Vec::new();
    for line in lines {
        pids.push(wait_until_running(line).await.unwrap_or_else(|| panic!("{line} ended")));
    }
    // Another command does not end them.
    assert_eq!(outcome(run(&tool, r#"{"command": "echo again"}"#).await), "again\n");
    assert!(pids.iter().all(|&pid| !has_ended(pid)));
    drop(tool);
    for (pid, line) in pids.iter().zip(lines) {
        assert!(wait_until_ended(*pid).await, "{line} outlived the tool");
    }
}

/// Waits up to two seconds for a process running exactly `command_line`: `nohup` and `setsid`
/// start the command after the tool has answered, so it may not run yet when it answers.
async fn wait_until_running(command_line: &str) -> Option<i32> {
    for _ in 0..40 {
        if let Some(pid) = running(command_line) {
            return Some(pid);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Waits up to two seconds for `pid` to end.
async fn wait_until_ended(pid: i32) -> bool {
    for _ in 0..40 {
        if has_ended(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// The process running exactly `command line` (its words joined by spaces), as this test sees
/// it: a command's own `$!` is a pid of its namespace.
fn running(command_line: &str) -> Option<i32> {
    std::fs::read_dir("/proc").unwrap().flatten().find_map(|entry| {
        let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
        let words = std::fs::read(entry.path().join("cmdline")).ok()?;
        let words: Vec<String> = words
            .split(|&byte| byte == 0)
            .filter(|word| !word.is_empty())
            .map(|w| String::from_utf8_lossy(w).into())
            .collect();
        (words.join(" ") == command_line && !has_ended(pid)).then_some(pid)
    })
}

#[tokio::test]
async fn stdout_and_stderr_share_one_stream_in_order() {
    check_bash(
        "echo out; echo err >&2; echo out again",
        None,
        expect![[r#"
        out
        err
        out again
    "#]],
    )
    .await;
}

#[tokio::test]
async fn runs_in_the_working_directory() {
    let fixture = Fixture::new(&[("marker.txt", "")]);
    let answer = run(&BashTool::new(fixture.workspace.clone()), r#"{"command": "ls; pwd"}"#).await.unwrap();
    assert_eq!(fixture.redact(&answer), "marker.txt\n$ROOT\n");
}

#[tokio::test]
async fn a_command_without_output_says_so() {
    check_bash("true", None, expect!["(no output)"]).await;
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_with_the_output_and_the_code() {
    check_bash(
        "echo partial; exit 2",
        None,
        expect![[r#"
        error: partial

        Command exited with code 2"#]],
    )
    .await;
}

#[tokio::test]
async fn stdin_is_empty() {
    check_bash(
        "cat; echo done",
        None,
        expect![[r#"
        done
    "#]],
    )
    .await;
}

#[tokio::test]
async fn timeout_kills_grandchildren_and_returns_promptly() {
    let fixture = Fixture::new(&[]);
    let tool = BashTool::new(fixture.workspace.clone());
    let started = Instant::now();
    // The background sleep holds the output pipe open and would keep a naive reader waiting.
    let answer =
        outcome(run(&tool, r#"{"command": "sleep 30.1 & echo $! > pid; echo waiting; sleep 30", "timeout": 1}"#).await);
    let elapsed = started.elapsed();
    expect![[r#"
        error: waiting

        Command timed out after 1 s and was killed, with the processes it started."#]]
    .assert_eq(&answer);
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert!(running("sleep 30.1").is_none(), "the background sleep survived the timeout");
}

#[tokio::test]
async fn cancel_kills_the_command_and_its_children() {
    let fixture = Fixture::new(&[]);
    let tool = BashTool::new(fixture.workspace.clone());
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let pid_file = fixture.path("pid");
    tokio::spawn(async move {
        // Cancel once the command has started its child, not at a guessed moment.
        while !std::fs::read_to_string(&pid_file).is_ok_and(|pid| pid.ends_with('\n')) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        canceller.cancel();
    });
    let started = Instant::now();
    let answer = outcome(
        run_with(&tool, r#"{"command": "(sleep 30.2; echo late) & echo $! > pid; sleep 30"}"#, cancel, &|_| {}).await,
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    expect![[r#"
        error: (no output)

        Command was cancelled and killed."#]]
    .assert_eq(&answer);
    let mut survivor = running("sleep 30.2");
    for _ in 0..40 {
        if survivor.is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        survivor = running("sleep 30.2");
    }
    assert_eq!(survivor, None, "the background subshell survived cancellation");
}

#[tokio::test]
async fn a_background_process_holding_the_output_does_not_block_the_result() {
    let fixture = Fixture::new(&[]);
    let tool = BashTool::new(fixture.workspace.clone());
    let started = Instant::now();
    let answer = outcome(run(&tool, r#"{"command": "sleep 30.3 & echo $! > pid; echo started"}"#).await);
    assert!(started.elapsed() < Duration::from_secs(10));
    // It was left running; it ends with the tool.
    let pid = running("sleep 30.3").expect("the background sleep runs on");
    drop(tool);
    assert!(wait_until_ended(pid).await, "the background sleep outlived the tool");
    expect![[r#"
        started

        [The command exited but a background process it started still holds the output open; its further output is not captured. Redirect a background process's output (`cmd > log 2>&1 &`) to keep it running.]"#]]
    .assert_eq(&answer);
}

#[tokio::test]
async fn long_output_keeps_the_tail_and_the_full_output_in_a_file_deleted_with_the_tool() {
    let fixture = Fixture::new(&[]);
    let tool = BashTool::new(fixture.workspace.clone());
    let answer = run(&tool, r#"{"command": "seq 1 5000"}"#).await.unwrap();
    let (shown, notice) = answer.rsplit_once("\n\n").unwrap();
    let expected_tail: String = (3001..=5000).map(|n| format!("{n}\n")).collect();
    assert_eq!(format!("{shown}\n"), expected_tail);
    let full_path = notice.split("Full output: ").nth(1).unwrap().trim_end_matches(']');
    let full = std::fs::read_to_string(full_path).unwrap();
    assert_eq!(full, (1..=5000).map(|n| format!("{n}\n")).collect::<String>());
    expect!["[Showing lines 3001-5000 of 5000 (9.8 KB of 23.3 KB). Full output: $FILE]"]
        .assert_eq(&notice.replace(full_path, "$FILE"));
    // The session that needed the file is over when its tools go.
    let dir = std::path::Path::new(full_path).parent().unwrap().to_path_buf();
    drop(tool);
    assert!(!dir.exists(), "{} was left behind", dir.display());
}

#[tokio::test]
async fn the_full_output_file_is_capped_and_says_where_it_was_cut() {
    let fixture = Fixture::new(&[]);
    let policy = ExecPolicy { max_output_file_bytes: 100_000, ..ExecPolicy::default() };
    let tool = BashTool::with_policy(fixture.workspace.clone(), policy);
    let answer = outcome(run(&tool, r#"{"command": "yes | head -c 1000000; echo; echo last"}"#).await);
    let full_path = answer.split(": ").last().unwrap().trim_end_matches(']');
    let full = std::fs::read(full_path).unwrap();
    assert_eq!(&full[..100_000], "y\n".repeat(50_000).as_bytes());
    expect![[r#"

        [reins: the output was cut here, after its first 97.7 KB; the command wrote 976.6 KB in all. Its last lines are in the tool result.]
    "#]]
    .assert_eq(&String::from_utf8_lossy(&full[100_000..]));
    expect![
        "[Showing lines 498003-500002 of 500002 (3.9 KB of 976.6 KB). Full output, cut after its first 97.7 KB: $FILE]"
    ]
    .assert_eq(&answer.rsplit_once("\n\n").unwrap().1.replace(full_path, "$FILE"));
    assert!(
        answer.contains("y\n\nlast") || answer.contains("y\nlast"),
        "the tail is shown: {}",
        &answer[answer.len() - 300..]
    );
}

#[tokio::test]
async fn output_directories_of_processes_that_are_gone_are_removed() {
    // A pid that is not running: the highest the kernel may hand out, plus one.
    let max_pid: i64 = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    let abandoned = std::env::temp_dir().join(format!("reins-output-{}-test", max_pid + 1));
    std::fs::create_dir_all(&abandoned).unwrap();
    std::fs::write(abandoned.join("bash-1.log"), "old").unwrap();
    let fixture = Fixture::new(&[]);
    let tool = BashTool::new(fixture.workspace.clone());
    run(&tool, r#"{"command": "seq 1 3000"}"#).await.unwrap();
    assert!(!abandoned.exists());
}

#[tokio::test]
async fn the_timeout_is_clamped_to_the_maximum() {
    let fixture = Fixture::new(&[]);
    let policy = ExecPolicy { max_timeout_secs: 1, ..ExecPolicy::default() };
    let tool = BashTool::with_policy(fixture.workspace.clone(), policy);
    let started = Instant::now();
    let arguments = serde_json::json!({"command": "echo started; sleep 30", "timeout": u64::MAX}).to_string();
    let answer = outcome(run(&tool, &arguments).await);
    assert!(started.elapsed() < Duration::from_secs(10));
    expect![[r#"
        error: started

        Command timed out after 1 s and was killed, with the processes it started."#]]
    .assert_eq(&answer);
    let description = tool.spec().description;
    assert!(description.contains("at most 1)"), "{description}");
}

#[tokio::test]
async fn the_command_gets_exactly_the_policys_environment() {
    let fixture = Fixture::new(&[]);
    let env = vec![("PATH".into(), std::env::var_os("PATH").unwrap()), ("ONLY_THIS".into(), "1".into())];
    let policy = ExecPolicy { env: Some(env), ..ExecPolicy::default() };
    let tool = BashTool::with_policy(fixture.workspace.clone(), policy);
    let answer = run(&tool, r#"{"command": "env | grep -v -E '^(PWD|SHLVL|_)=' | sort"}"#).await.unwrap();
    assert_eq!(answer, format!("ONLY_THIS=1\nPATH={}\n", std::env::var("PATH").unwrap()));
}

/// Runs `command`, whose output is too long, and shows the answer with the full output's path
/// redacted after checking that file holds `full_bytes` bytes.
async fn check_long_output(command: &str, full_bytes: u64, expected: Expect) {
    let fixture = Fixture::new(&[]);
    let arguments = serde_json::json!({"command": command}).to_string();
    let tool = BashTool::new(fixture.workspace.clone());
    let answer = outcome(run(&tool, &arguments).await);
    let full_path = answer.split("Full output: ").nth(1).unwrap().split(']').next().unwrap();
    assert_eq!(std::fs::metadata(full_path).unwrap().len(), full_bytes);
    let answer = answer.replace(full_path, "$FILE");
    expected.assert_eq(&answer.replace(&"a".repeat(50 * 1024), "<50 KB of a>"));
}

#[tokio::test]
async fn a_failing_command_with_long_output_keeps_its_tail_and_code() {
    check_long_output(
        "head -c 100000 /dev/zero | tr '\\0' 'a'; echo; echo boom; exit 3",
        100_006,
        expect![[r#"
        error: boom

        [Showing lines 2-2 of 2 (5 B of 97.7 KB). Full output: $FILE]

        Command exited with code 3"#]],
    )
    .await;
}

#[tokio::test]
async fn a_single_line_longer_than_the_limit_keeps_its_end() {
    check_long_output(
        "head -c 100000 /dev/zero | tr '\\0' 'a'",
        100_000,
        expect![[r#"
        <50 KB of a>

        [Showing the last 50.0 KB of line 1 (the output is 97.7 KB). Full output: $FILE]"#]],
    )
    .await;
}

#[tokio::test]
async fn partial_output_is_streamed() {
    let fixture = Fixture::new(&[]);
    let updates = Arc::new(Mutex::new(Vec::<String>::new()));
    let collected = updates.clone();
    let on_update = move |text: &str| collected.lock().unwrap().push(text.to_string());
    let answer = run_with(
        &BashTool::new(fixture.workspace.clone()),
        r#"{"command": "echo first; sleep 0.3; echo second"}"#,
        CancellationToken::new(),
        &on_update,
    )
    .await
    .unwrap();
    assert_eq!(answer, "first\nsecond\n");
    let updates = updates.lock().unwrap();
    assert_eq!(updates.first().map(String::as_str), Some("first\n"), "{updates:?}");
}

#[tokio::test]
async fn runs_the_command_as_the_gate_changed_it() {
    let fixture = Fixture::new(&[]);
    let tool = BashTool::new(fixture.workspace.clone());
    let prepared = tool.prepare(&serde_json::json!({"command": "echo model"})).await.unwrap();
    assert_eq!(
        prepared.proposal,
        Some(Proposal::Command(CommandProposal {
            command: "echo model".into(),
            cwd: fixture.root.clone(),
            timeout_secs: 120
        }))
    );
    let changed = Proposal::Command(CommandProposal {
        command: "echo reviewer".into(),
        cwd: fixture.root.clone(),
        timeout_secs: 5,
    });
    let cx = ToolContext { tool_call_id: "call-1", cancel: CancellationToken::new(), on_update: &|_| {} };
    let output = tool.execute(prepared, Some(changed), cx).await.unwrap();
    assert_eq!(output.content, vec![reins_ai::Content::text("reviewer\n")]);
}
