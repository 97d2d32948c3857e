//! End-to-end tests of checkpoints (issue 14): `reins run` records the files its tools change on
//! the session's path, and `reins sessions checkout` moves the leaf and the files with it,
//! keeping the user's edits — the real binary, the scripted model, real files.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{Run, reins, reins_command, reins_run, transcript, workspace};

const LIB: &str = "fn one() {}\nfn two() {}\nfn three() {}\n";
const README: &str = "# demo\n";

/// Every file of the workspace (the reins home left out), path → bytes as text.
fn files(dir: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            let relative = path.strip_prefix(dir).unwrap().display().to_string();
            if relative.starts_with(".reins-home") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                found.insert(relative, String::from_utf8(std::fs::read(&path).unwrap()).unwrap());
            }
        }
    }
    found
}

/// Asserts the workspace holds exactly `expected`, byte for byte.
fn check_files(dir: &Path, expected: &[(&str, &str)], when: &str) {
    let expected: BTreeMap<String, String> =
        expected.iter().map(|(path, text)| (path.to_string(), text.to_string())).collect();
    assert_eq!(files(dir), expected, "{when}");
}

fn json_of(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", run.stdout, run.stderr))
}

/// The id of the entry of the session's tree that `matches`.
async fn entry(dir: &Path, matches: impl Fn(&Value) -> bool) -> String {
    let tree = reins(None, dir, &["sessions", "tree", "--json"]).await;
    let tree = json_of(&tree);
    let node = tree["nodes"].as_array().unwrap().iter().find(|node| matches(node));
    node.unwrap_or_else(|| panic!("no such entry in {tree:#}"))["id"].as_str().unwrap().to_string()
}

async fn checkout(dir: &Path, entry: &str, extra: &[&str]) -> Run {
    let mut args = vec!["sessions", "checkout", entry];
    args.extend_from_slice(extra);
    reins(None, dir, &args).await
}

/// Two runs that edit, write and create files, and run a command.
async fn two_runs(dir: &Path) -> ScriptedServer {
    let server = ScriptedServer::start(vec![
        Reply::tool_call(
            "c1",
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "fn two() {}", "newText": "fn two() { 2 }"}]}),
        )
        .with_tool_call("c2", "write", json!({"path": "notes.md", "content": "first notes\n"})),
        Reply::text("run one done"),
        Reply::tool_call(
            "c3",
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "fn three() {}", "newText": "fn three() { 3 }"}]}),
        )
        .with_tool_call("c4", "write", json!({"path": "notes.md", "content": "second notes\n"}))
        .with_tool_call("c5", "write", json!({"path": "new/deep.txt", "content": "deep\n"})),
        Reply::tool_call("c6", "bash", json!({"command": "echo untracked > untracked.txt"})),
        Reply::text("run two done"),
    ])
    .await;
    let first = reins_run(&server, dir, &["--yes", "first"]).await;
    assert_eq!(first.code, Some(0), "stderr: {}", first.stderr);
    let second = reins_run(&server, dir, &["--yes", "--continue", "second"]).await;
    assert_eq!(second.code, Some(0), "stderr: {}", second.stderr);
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_moves_the_files_with_the_leaf_and_keeps_the_users_edits() {
    let dir = workspace(&[("src/lib.rs", LIB), ("README.md", README)]);
    let server = two_runs(dir.path()).await;
    let root = dir.path();
    let run_two = [
        ("README.md", README),
        ("new/deep.txt", "deep\n"),
        ("notes.md", "second notes\n"),
        ("src/lib.rs", "fn one() {}\nfn two() { 2 }\nfn three() { 3 }\n"),
        ("untracked.txt", "untracked\n"),
    ];
    check_files(root, &run_two, "after the two runs");

    // The user edits files by hand: one the agent changed, one it never touched.
    std::fs::write(root.join("src/lib.rs"), "// mine\nfn one() {}\nfn two() { 2 }\nfn three() { 3 }\n").unwrap();
    std::fs::write(root.join("README.md"), "# demo, by hand\n").unwrap();

    let start = entry(root, |node| node["role"] == "user" && node["preview"] == "first").await;
    let run_one_end = entry(root, |node| node["preview"] == "run one done").await;
    let run_two_end = entry(root, |node| node["preview"] == "run two done").await;

    // Before the first run: every change undone; the user's lines stay; the command's file too.
    let back = checkout(root, &start, &["--yes", "--json"]).await;
    assert_eq!(back.code, Some(0), "stderr: {}", back.stderr);
    // At the user's own message the checkout lands just before it, and gives the message back.
    assert!(back.stderr.contains("checked out before your message \"first\""), "{}", back.stderr);
    let tree = json_of(&reins(None, root, &["sessions", "tree", "--json"]).await);
    let asked = tree["nodes"].as_array().unwrap().iter().find(|node| node["id"] == start.as_str()).unwrap();
    assert_eq!(tree["leaf"], asked["parentId"]);
    let start = asked["parentId"].as_str().unwrap().to_string();
    let report = json_of(&back);
    assert_eq!(report["leftBehind"], 0);
    assert_eq!(report["commands"][0]["command"], "echo untracked > untracked.txt");
    assert_eq!(report["commands"][0]["warning"], "a command ran here; its effects on files were not tracked");
    let actions: Vec<String> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| format!("{} {} {}", file["action"], file["path"], file["written"]))
        .collect();
    expect_test::expect![[r#"
        [
            "\"delete\" \"new/deep.txt\" \"done\"",
            "\"delete\" \"notes.md\" \"done\"",
            "\"merge\" \"src/lib.rs\" \"done\"",
        ]
    "#]]
    .assert_debug_eq(&actions);
    let mine_at_start = "// mine\nfn one() {}\nfn two() {}\nfn three() {}\n";
    check_files(
        root,
        &[("README.md", "# demo, by hand\n"), ("src/lib.rs", mine_at_start), ("untracked.txt", "untracked\n")],
        "at the first prompt",
    );
    assert!(!root.join("new").exists(), "the directory the agent created for its file went with it");

    // Forward to the end of the second run, then to the end of the first, then forward again.
    let mine_at_two = "// mine\nfn one() {}\nfn two() { 2 }\nfn three() { 3 }\n";
    let at_two = [
        ("README.md", "# demo, by hand\n"),
        ("new/deep.txt", "deep\n"),
        ("notes.md", "second notes\n"),
        ("src/lib.rs", mine_at_two),
        ("untracked.txt", "untracked\n"),
    ];
    let at_one = [
        ("README.md", "# demo, by hand\n"),
        ("notes.md", "first notes\n"),
        ("src/lib.rs", "// mine\nfn one() {}\nfn two() { 2 }\nfn three() {}\n"),
        ("untracked.txt", "untracked\n"),
    ];
    for (target, expected, when) in [
        (&run_two_end, &at_two[..], "at the end of run two"),
        (&run_one_end, &at_one[..], "at the end of run one"),
        (&run_two_end, &at_two[..], "at the end of run two again"),
        (
            &start,
            &[("README.md", "# demo, by hand\n"), ("src/lib.rs", mine_at_start), ("untracked.txt", "untracked\n")][..],
            "at the start again",
        ),
        (&run_one_end, &at_one[..], "at the end of run one again"),
    ] {
        let moved = checkout(root, target, &["--yes"]).await;
        assert_eq!(moved.code, Some(0), "{when}: {}\n{}", moved.stdout, moved.stderr);
        assert_eq!(moved.stderr, "", "{when}: nothing on stderr when all went well");
        assert!(moved.stdout.contains(&format!("`reins run --continue` continues from {target}")), "{}", moved.stdout);
        check_files(root, expected, when);
        let tree = json_of(&reins(None, root, &["sessions", "tree", "--json"]).await);
        assert_eq!(tree["leaf"], target.as_str(), "{when}");
    }

    // `reins run --continue` goes on from the end of run one: run two is not in the context.
    server.push(Reply::text("continued"));
    let continued = reins_run(&server, root, &["--continue", "third"]).await;
    assert_eq!(continued.code, Some(0), "stderr: {}", continued.stderr);
    let request = server.chat_requests().pop().unwrap();
    let seen = transcript(&request.body);
    assert!(seen.contains("\"first\"") && seen.contains("run one done") && !seen.contains("second"), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overlapping_edit_is_left_alone_named_and_fails_the_exit_status() {
    let dir = workspace(&[("src/lib.rs", LIB), ("README.md", README)]);
    let _server = two_runs(dir.path()).await;
    let root = dir.path();
    let run_one_end = entry(root, |node| node["preview"] == "run one done").await;
    // The user changes the very line run two changed.
    let mine = "fn one() {}\nfn two() { 2 }\nfn three() { 33 }\n";
    std::fs::write(root.join("src/lib.rs"), mine).unwrap();

    // Without a terminal and without --yes nothing changes.
    let refused = checkout(root, &run_one_end, &[]).await;
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(refused.stderr.contains("confirm it at a terminal, or pass --yes"), "{}", refused.stderr);
    assert!(refused.stderr.contains("conflict src/lib.rs"), "the plan is shown: {}", refused.stderr);
    assert_eq!(std::fs::read_to_string(root.join("notes.md")).unwrap(), "second notes\n");

    let moved = checkout(root, &run_one_end, &["--yes"]).await;
    assert_eq!(moved.code, Some(3), "stdout: {}\nstderr: {}", moved.stdout, moved.stderr);
    expect_test::expect![[r#"
        Checked out ENTRY in session SESSION: 2 file(s) brought along, 1 left as they are.
          conflict src/lib.rs: line 3: your edits overlap the agent's change (the user changed line 3 of the current text, where the edit changes line 3 of the text it was made from); left as it is
              the agent's change it would take (make it by hand for the file to follow):
              --- a/src/lib.rs
              +++ b/src/lib.rs
              @@ -1,3 +1,3 @@
               fn one() {}
               fn two() { 2 }
              -fn three() { 3 }
              +fn three() {}
          ! a command ran here; its effects on files were not tracked (ENTRY after the entry: bash: echo untracked > untracked.txt)
        Edit the files named above by hand if they should follow too.
        `reins run --continue` continues from ENTRY.
    "#]]
    .assert_eq(&redact(&moved.stdout));
    check_files(
        root,
        &[("README.md", README), ("notes.md", "first notes\n"), ("src/lib.rs", mine), ("untracked.txt", "untracked\n")],
        "the conflicting file is as the user left it; the others followed",
    );
}

/// Entry and session ids (8 hex characters, a session's first 8) as ENTRY and SESSION.
fn redact(text: &str) -> String {
    let mut out = String::new();
    for word in text.split_inclusive([' ', '\n', '(', ')', ':', '.']) {
        let (core, rest) = word.split_at(word.trim_end_matches([' ', '\n', '(', ')', ':', '.']).len());
        let hex = core.len() == 8 && core.chars().all(|c| c.is_ascii_hexdigit());
        let label = if out.ends_with("session ") { "SESSION" } else { "ENTRY" };
        out.push_str(if hex { label } else { core });
        out.push_str(rest);
    }
    out
}

/// Checkouts of 40 files killed (SIGKILL) at random moments: every file is always either as it
/// was or as it is to be, never half-written, and the same command run again finishes the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_checkout_leaves_each_file_before_or_after_and_finishes_when_run_again() {
    let dir = workspace(&[]);
    let root = dir.path();
    let count = 40;
    let body = |n: usize| format!("file {n}\n{}", "some content to write\n".repeat(200));
    let mut reply = Reply::text("");
    for n in 0..count {
        reply =
            reply.with_tool_call(format!("w{n}"), "write", json!({"path": format!("f{n:02}.txt"), "content": body(n)}));
    }
    let server = ScriptedServer::start(vec![reply, Reply::text("wrote them")]).await;
    let run = reins_run(&server, root, &["--yes", "write them"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    // Before the prompt: where a checkout at the user's message lands.
    let tree = json_of(&reins(None, root, &["sessions", "tree", "--json"]).await);
    let asked = tree["nodes"].as_array().unwrap().iter().find(|node| node["role"] == "user").unwrap();
    let start = asked["parentId"].as_str().unwrap().to_string();
    let end = entry(root, |node| node["preview"] == "wrote them").await;
    let written: BTreeMap<String, String> = (0..count).map(|n| (format!("f{n:02}.txt"), body(n))).collect();

    // How long an uninterrupted checkout takes, to spread the kills over.
    let began = std::time::Instant::now();
    assert_eq!(checkout(root, &start, &["--yes"]).await.code, Some(0));
    let length = began.elapsed().max(Duration::from_millis(20));
    assert_eq!(checkout(root, &end, &["--yes"]).await.code, Some(0));
    assert_eq!(files(root), written);

    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut interrupted = 0;
    for attempt in 0..12 {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let (target, after): (&str, BTreeMap<String, String>) =
            if attempt % 2 == 0 { (&start, BTreeMap::new()) } else { (&end, written.clone()) };
        let before = files(root);
        let mut child = reins_command(None, root, &["sessions", "checkout", target, "--yes"]).spawn().unwrap();
        let kill_at = Duration::from_micros((seed >> 20) % (length.as_micros() as u64 * 12 / 10).max(1));
        let finished = tokio::time::timeout(kill_at, child.wait()).await.is_ok();
        if let Some(pid) = child.id() {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
        }
        let _ = child.wait().await;
        let mut now = files(root);
        // A file being written when the kill came leaves its temporary copy, never itself, half
        // written; running the checkout again removes the copy.
        now.retain(|path, _| !path.starts_with(".reins-checkout-"));
        for (path, text) in &now {
            assert!(
                before.get(path) == Some(text) || after.get(path) == Some(text),
                "attempt {attempt}: {path} is neither before nor after"
            );
        }
        interrupted += usize::from(!finished && now != after);
        let again = checkout(root, target, &["--yes"]).await;
        assert_eq!(again.code, Some(0), "attempt {attempt}: {}\n{}", again.stdout, again.stderr);
        assert_eq!(files(root), after, "attempt {attempt}: run again, the checkout finished");
        let tree = json_of(&reins(None, root, &["sessions", "tree", "--json"]).await);
        assert_eq!(tree["leaf"], target, "attempt {attempt}");
    }
    eprintln!("checkout kill trials: {interrupted} of 12 interrupted midway");
}

/// A call of an MCP server's tool may change files nobody sees: the session records that it
/// ran, and a checkout past it warns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_call_is_recorded_as_untracked_and_a_checkout_past_it_warns() {
    let dir = workspace(&[]);
    let root = dir.path();
    let everything = support::mcp_prefix().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let home = support::reins_home(root);
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n[approval]\n\"mcp__*\" = \"auto\"\n",
            everything.display().to_string()
        ),
    )
    .unwrap();
    let server = ScriptedServer::start(vec![
        Reply::tool_call("m1", "mcp__everything__echo", json!({"message": "hi"})),
        Reply::text("echoed"),
    ])
    .await;
    let run = reins_run(&server, root, &["--yes", "echo through the server"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let tree = json_of(&reins(None, root, &["sessions", "tree", "--json"]).await);
    let recorded: Vec<&str> = tree["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|node| node["kind"] == "custom")
        .map(|node| node["preview"].as_str().unwrap())
        .collect();
    assert_eq!(recorded, ["mcp__everything__echo (its effects on files are not tracked)"]);
    let start = entry(root, |node| node["role"] == "user").await;
    let back = checkout(root, &start, &["--yes", "--json"]).await;
    assert_eq!(back.code, Some(0), "stderr: {}", back.stderr);
    let report = json_of(&back);
    assert_eq!(report["commands"][0]["tool"], "mcp__everything__echo");
    assert_eq!(report["commands"][0]["warning"], "a command ran here; its effects on files were not tracked");
}

/// At a terminal, without `--yes`, the checkout shows what each file goes through and asks:
/// "no" changes nothing, "yes" goes ahead. `--session` picks a session other than the newest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_a_terminal_it_shows_each_file_and_asks_and_takes_another_session() {
    let dir = workspace(&[("src/lib.rs", LIB), ("README.md", README)]);
    let server = two_runs(dir.path()).await;
    let root = dir.path();
    let start = entry(root, |node| node["role"] == "user" && node["preview"] == "first").await;
    let tree = json_of(&reins(None, root, &["sessions", "tree", "--json"]).await);
    let first_session = tree["sessionId"].as_str().unwrap().to_string();
    // A newer session becomes the workspace's most recent.
    server.push(Reply::text("other"));
    assert_eq!(reins_run(&server, root, &["another"]).await.code, Some(0));
    let newest = checkout(root, &start, &["--yes"]).await;
    assert_eq!(newest.code, Some(1));
    assert!(
        newest.stderr.contains("has no entry") && newest.stderr.contains("reins sessions tree"),
        "{}",
        newest.stderr
    );

    let prefix = &first_session[..8];
    let args = ["sessions", "checkout", start.as_str(), "--session", prefix];
    let (screen, code) = support::reins_in_terminal(None, root, &args, &["n"]).await;
    assert_eq!(code, Some(1), "{screen}");
    let plan = redact(&screen.replace("\r\n", "\n"));
    expect_test::expect![[r#"
        Checking out ENTRY in session SESSION (now at ENTRY):
          delete   new/deep.txt  1 recorded change
          delete   notes.md      2 recorded changes
          restore  src/lib.rs    2 recorded changes
          ! a command ran here; its effects on files were not tracked (ENTRY after the entry: bash: echo untracked > untracked.txt)
        Check out and change these files? [y/N] n
        reins: nothing was changed
    "#]]
    .assert_eq(&plan);
    assert_eq!(std::fs::read_to_string(root.join("notes.md")).unwrap(), "second notes\n", "nothing changed");
    let tree = json_of(&reins(None, root, &["sessions", "tree", "--json", prefix]).await);
    assert_ne!(tree["leaf"], start.as_str(), "the leaf stayed");

    let (screen, code) = support::reins_in_terminal(None, root, &args, &["y"]).await;
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("3 file(s) brought along"), "{screen}");
    check_files(
        root,
        &[("README.md", README), ("src/lib.rs", LIB), ("untracked.txt", "untracked\n")],
        "after yes at the terminal",
    );
    // At the user's message the checkout lands just before it.
    let tree = json_of(&reins(None, root, &["sessions", "tree", "--json", prefix]).await);
    let asked = tree["nodes"].as_array().unwrap().iter().find(|node| node["id"] == start.as_str()).unwrap();
    assert_eq!(tree["leaf"], asked["parentId"]);
}

/// `apply_patch` deletes and moves files: both are recorded, undone whole and redone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_that_deletes_moves_and_adds_files_is_undone_and_redone() {
    let dir = workspace(&[("old.txt", "bye\n"), ("a.py", "x = 1\n"), ("keep.txt", "kept\n")]);
    let root = dir.path();
    let home = support::reins_home(root);
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), "[tools]\nedit_format = \"apply_patch\"\n").unwrap();
    let patch = "*** Begin Patch\n*** Add File: docs/new.md\n+# New\n*** Delete File: old.txt\n\
                 *** Update File: a.py\n*** Move to: b.py\n@@\n-x = 1\n+x = 2\n*** End Patch";
    let server = ScriptedServer::start(vec![
        Reply::tool_call("p1", "apply_patch", json!({ "input": patch })),
        Reply::text("patched"),
    ])
    .await;
    let run = reins_run(&server, root, &["--yes", "patch it"]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let before = [("a.py", "x = 1\n"), ("keep.txt", "kept\n"), ("old.txt", "bye\n")];
    let after = [("b.py", "x = 2\n"), ("docs/new.md", "# New\n"), ("keep.txt", "kept\n")];
    check_files(root, &after, "after the patch");
    let recorded = entry(root, |node| node["kind"] == "custom").await;
    let tree = json_of(&reins(None, root, &["sessions", "tree", "--json"]).await);
    let node = tree["nodes"].as_array().unwrap().iter().find(|node| node["id"] == recorded.as_str()).unwrap();
    assert_eq!(node["preview"], "create docs/new.md, delete old.txt, move a.py → b.py");

    let start = entry(root, |node| node["role"] == "user").await;
    let end = entry(root, |node| node["preview"] == "patched").await;
    for (target, expected, when) in
        [(&start, &before[..], "undone"), (&end, &after[..], "redone"), (&start, &before[..], "undone again")]
    {
        let moved = checkout(root, target, &["--yes"]).await;
        assert_eq!(moved.code, Some(0), "{when}: {}\n{}", moved.stdout, moved.stderr);
        check_files(root, expected, when);
        assert_eq!(root.join("docs").exists(), target == &end, "{when}: the patch's directory");
    }
}

/// A file the agent changed that is now a symlink out of the workspace (or sits in a directory
/// that is) is never followed: it is named, and what it points to is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_out_of_the_workspace_is_not_followed() {
    let dir = workspace(&[("src/lib.rs", LIB), ("README.md", README)]);
    let _server = two_runs(dir.path()).await;
    let root = dir.path();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "second notes\n").unwrap();
    std::fs::create_dir(outside.path().join("deep")).unwrap();
    std::fs::write(outside.path().join("deep/deep.txt"), "deep\n").unwrap();
    // The user replaces the agent's note and directory with links to the same contents outside.
    std::fs::remove_file(root.join("notes.md")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("notes.md")).unwrap();
    std::fs::remove_dir_all(root.join("new")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("deep"), root.join("new")).unwrap();

    let start = entry(root, |node| node["role"] == "user" && node["preview"] == "first").await;
    let moved = checkout(root, &start, &["--yes", "--json"]).await;
    assert_eq!(moved.code, Some(3), "stdout: {}\nstderr: {}", moved.stdout, moved.stderr);
    let report = json_of(&moved);
    let files: Vec<String> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| format!("{} {} {}", file["action"], file["path"], file["conflict"]["reason"]))
        .collect();
    expect_test::expect![[r#"
        [
            "\"refused\" \"new/deep.txt\" \"it is outside the workspace\"",
            "\"refused\" \"notes.md\" \"it is outside the workspace\"",
            "\"restore\" \"src/lib.rs\" null",
        ]
    "#]]
    .assert_debug_eq(&files);
    assert_eq!(std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(), "second notes\n");
    assert_eq!(std::fs::read_to_string(outside.path().join("deep/deep.txt")).unwrap(), "deep\n");
    assert!(root.join("notes.md").is_symlink() && root.join("new").is_symlink(), "the links stay");
    assert_eq!(std::fs::read_to_string(root.join("src/lib.rs")).unwrap(), LIB);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crafted_session_cannot_check_out_into_git_metadata() {
    let dir = workspace(&[("src/lib.rs", LIB), ("README.md", README)]);
    let _server = two_runs(dir.path()).await;
    let root = dir.path();
    // The session's records now name a hook where they named the new file: checking out the
    // second run again would write it.
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    let sessions = support::reins_home(root).join("sessions");
    let mut crafted = 0;
    for file in walk(&sessions) {
        let text = std::fs::read_to_string(&file).unwrap();
        if text.contains(r#""path":"new/deep.txt""#) {
            std::fs::write(&file, text.replace(r#""path":"new/deep.txt""#, r#""path":".git/hooks/pre-commit""#))
                .unwrap();
            crafted += 1;
        }
    }
    assert_eq!(crafted, 1, "one session file names new/deep.txt");
    std::fs::remove_dir_all(root.join("new")).unwrap();
    let start = entry(root, |node| node["role"] == "user" && node["preview"] == "first").await;
    let back = checkout(root, &start, &["--yes", "--json"]).await;
    assert!(matches!(back.code, Some(0) | Some(3)), "stdout: {}\nstderr: {}", back.stdout, back.stderr);
    let end = entry(root, |node| node["role"] == "assistant" && node["preview"] == "run two done").await;
    let forth = checkout(root, &end, &["--yes", "--json"]).await;
    let report = json_of(&forth);
    let hook: Vec<String> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|file| file["path"].as_str().is_some_and(|path| path.contains(".git")))
        .map(|file| format!("{} {} {}", file["action"], file["path"], file["conflict"]["reason"]))
        .collect();
    expect_test::expect![[r#"
        [
            "\"refused\" \".git/hooks/pre-commit\" \"it is inside .git, which only git and the user change\"",
        ]
    "#]]
    .assert_debug_eq(&hook);
    assert!(!root.join(".git/hooks/pre-commit").exists(), "the hook was written");
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { found.extend(walk(&path)) } else { found.push(path) }
    }
    found
}
