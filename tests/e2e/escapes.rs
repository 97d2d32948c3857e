//! The escapes-and-secrets suite, through the real binary and the scripted model server: every
//! tool tries every way out of the workspace, and bash tries every way to a key, with a canary
//! key in every variable reins reads. Afterwards no canary may show in anything reins wrote or
//! sent: stdout, stderr, the session files, the requests (tool results included).

mod support;

use support::processes::{child_of, wait_for, wait_until_gone};

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{CANARY_KEY, reins_command, workspace};

/// The canary of variable `name`: distinct per variable, so a leak names its source.
fn canary(name: &str) -> String {
    format!("sk-canary-{}", name.to_lowercase().replace('_', "-"))
}

/// Every variable reins reads a key from: `OPENAI_API_KEY` and each known provider's.
fn key_variables() -> Vec<String> {
    let mut names: Vec<String> = reins_harness::Registry::default()
        .providers
        .iter()
        .filter_map(|provider| provider.api_key_env.clone())
        .collect();
    names.push("OPENAI_API_KEY".into());
    names.sort();
    names.dedup();
    names
}

/// A home directory outside the workspace with secrets where people keep them, and reins's own
/// directory there with an auth file.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        std::fs::create_dir_all(path.join(".ssh")).unwrap();
        std::fs::write(path.join(".ssh/id_ed25519"), canary("ssh")).unwrap();
        std::fs::create_dir_all(path.join("reins")).unwrap();
        let auth = json!({"deepseek": {"key": canary("auth-file")}}).to_string();
        std::fs::write(path.join("reins/auth.json"), auth).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path.join("reins/auth.json"), std::fs::Permissions::from_mode(0o600)).unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn reins_home(&self) -> PathBuf {
        self.path().join("reins")
    }
}

/// `reins run --json --yes PROMPT` with the canaries in the environment and `home` as HOME.
fn command(server: &ScriptedServer, dir: &Path, home: &Home, extra: &[&str]) -> tokio::process::Command {
    let mut args = vec!["run", "--json", "--yes"];
    args.extend_from_slice(extra);
    args.push("go");
    let mut command = reins_command(Some(&server.base_url()), dir, &args);
    command.env("HOME", home.path()).env("REINS_HOME", home.reins_home());
    for name in key_variables().iter().filter(|name| *name != "OPENAI_API_KEY") {
        command.env(name, canary(name));
    }
    command
}

/// Every canary (the scripted server's key included) found in `text`.
fn canaries_in(text: &str) -> Vec<String> {
    let mut all: Vec<String> = key_variables().iter().map(|name| canary(name)).collect();
    all.extend([canary("ssh"), canary("auth-file"), CANARY_KEY.to_string()]);
    all.into_iter().filter(|canary| text.contains(canary.as_str())).collect()
}

/// Every regular file under `dir` whose bytes contain `needle`; links are not followed.
fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => stack.push(path),
                Ok(kind)
                    if kind.is_file()
                        && String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).contains(needle) =>
                {
                    found.push(path.display().to_string())
                }
                _ => {}
            }
        }
    }
    found
}

/// The tool results the model was sent, in call order, as `(is error, text)`.
fn tool_results(server: &ScriptedServer) -> Vec<(String, String)> {
    let requests = server.chat_requests();
    let Some(last) = requests.last() else { return Vec::new() };
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| {
            let id = message["tool_call_id"].as_str().unwrap_or_default().to_string();
            let text = match &message["content"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (id, text)
        })
        .collect()
}

/// Runs the calls, one turn each, and checks that nothing reins wrote or sent holds a canary.
async fn check_no_canary(calls: Vec<(&str, Value)>) -> (ScriptedServer, Vec<(String, String)>) {
    let dir = workspace(&[("inside.txt", "inside\n")]);
    let home = Home::new();
    std::os::unix::fs::symlink(home.path().join(".ssh/id_ed25519"), dir.path().join("key-link")).unwrap();
    std::os::unix::fs::symlink(home.path().join(".ssh"), dir.path().join("ssh-link")).unwrap();
    std::os::unix::fs::symlink(home.path().join(".ssh/missing"), dir.path().join("dangling")).unwrap();
    let mut replies: Vec<Reply> = calls
        .iter()
        .enumerate()
        .map(|(index, (tool, arguments))| {
            let arguments = arguments.to_string().replace("$HOME", &home.path().display().to_string());
            Reply::tool_call(format!("c{index}"), *tool, serde_json::from_str(&arguments).unwrap())
        })
        .collect();
    replies.push(Reply::text("done"));
    let server = ScriptedServer::start(replies).await;
    let output = command(&server, dir.path(), &home, &[]).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(canaries_in(&stdout), Vec::<String>::new(), "stdout leaked: {stdout}");
    assert_eq!(canaries_in(&stderr), Vec::<String>::new(), "stderr leaked: {stderr}");
    for request in server.requests() {
        let body = request.body.to_string();
        assert_eq!(canaries_in(&body), Vec::<String>::new(), "a request leaked: {body}");
        let headers = format!("{:?}", request.headers);
        assert_eq!(canaries_in(&headers.replace(CANARY_KEY, "")), Vec::<String>::new(), "{headers}");
    }
    let sessions = home.reins_home().join("sessions");
    assert!(sessions.is_dir(), "the run kept its session");
    for canary in key_variables().iter().map(|name| canary(name)).chain([canary("ssh"), CANARY_KEY.to_string()]) {
        assert_eq!(files_containing(&sessions, &canary), Vec::<String>::new(), "a session file holds {canary}");
        assert_eq!(files_containing(dir.path(), &canary), Vec::<String>::new(), "the workspace got {canary}");
    }
    let results = tool_results(&server);
    assert_eq!(results.len(), calls.len(), "{results:?}");
    (server, results)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tool_reaches_a_key_or_a_secret_file_by_any_path() {
    let paths = [
        "../outside.txt",
        "$HOME/.ssh/id_ed25519",
        "~/.ssh/id_ed25519",
        "key-link",
        "ssh-link/id_ed25519",
        "dangling",
        "$HOME/reins/auth.json",
    ];
    let mut calls: Vec<(&str, Value)> = Vec::new();
    for path in paths {
        calls.push(("read", json!({"path": path})));
        calls.push(("write", json!({"path": path, "content": "overwritten"})));
        calls.push(("edit", json!({"path": path, "edits": [{"oldText": "sk", "newText": "xx"}]})));
        calls.push(("ls", json!({"path": path})));
        calls.push(("grep", json!({"pattern": "sk-canary", "path": path})));
        calls.push(("find", json!({"pattern": "*", "path": path})));
    }
    // The walks from the root meet the links on their own.
    calls.push(("grep", json!({"pattern": "canary"})));
    calls.push(("find", json!({"pattern": "*"})));
    let (_, results) = check_no_canary(calls.clone()).await;
    for ((tool, arguments), (_, text)) in calls.iter().zip(&results) {
        let walk_from_root = arguments.get("path").is_none();
        assert!(
            walk_from_root || text.contains("outside the workspace") || text.contains("is not expanded"),
            "{tool} {arguments}: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_sees_no_key_in_its_environment_nor_in_reins() {
    let commands = [
        "env",
        "cat /proc/$PPID/environ | tr '\\0' '\\n'",
        "cat /proc/$PPID/cmdline | tr '\\0' ' '",
        "cat $HOME/.ssh/id_ed25519",
        "cat $HOME/reins/auth.json",
        "grep -r sk-canary $HOME",
    ];
    let calls: Vec<(&str, Value)> = commands.iter().map(|command| ("bash", json!({"command": command}))).collect();
    let (_, results) = check_no_canary(calls).await;
    // Not vacuous: the commands ran and saw the environment.
    assert!(results[0].1.contains("PATH="), "{}", results[0].1);
    if reins_tools::namespace_support().is_ok() {
        // The shell's parent is the command's init, which keeps its memory (reins's) closed.
        assert!(results[1].1.contains("/proc/1/environ: Permission denied"), "{}", results[1].1);
    } else {
        assert!(results[1].1.contains("PATH="), "{}", results[1].1);
    }
    if reins_tools::sandbox_support().is_ok() {
        // Landlock denies it; the namespace hides it.
        let denied = ["Permission denied", "No such file or directory"];
        assert!(denied.iter().any(|words| results[3].1.contains(words)), "{}", results[3].1);
    }
}

/// Starts `reins run` whose model calls bash to start `sleep`s in the background (plainly,
/// with `nohup`, with `setsid`) and in the foreground, waits for them, sends `signal` to reins,
/// and checks that reins and every sleep end. `mark` makes the sleeps this test's own.
async fn check_signal_ends_the_commands(signal: nix::sys::signal::Signal, mark: u32) {
    let dir = workspace(&[]);
    let home = Home::new();
    let sleeps = sleeps(mark);
    let script = format!(
        "{0} & nohup {1} > /dev/null 2>&1 & setsid {2} > /dev/null 2>&1 & echo started > started; {3}",
        sleeps[0], sleeps[1], sleeps[2], sleeps[3]
    );
    let server =
        ScriptedServer::start(vec![Reply::tool_call("c1", "bash", json!({"command": script})), Reply::text("never")])
            .await;
    let mut child = command(&server, dir.path(), &home, &[]).stdout(Stdio::null()).spawn().unwrap();
    let pids = wait_for(&sleeps).await;
    // `setsid` execs reins when it may start a session itself, else runs it as its child.
    let id = child.id().unwrap() as i32;
    let comm = std::fs::read_to_string(format!("/proc/{id}/comm")).unwrap_or_default();
    let reins = if comm.trim() == "setsid" { child_of(id).expect("reins runs under setsid") } else { id };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(reins), signal).unwrap();
    tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("reins ended").unwrap();
    for (pid, line) in pids.iter().zip(&sleeps) {
        assert!(wait_until_gone(*pid).await, "{line} outlived reins after {signal}");
    }
}

/// Four `sleep`s no other test starts.
fn sleeps(mark: u32) -> Vec<String> {
    (1..=4).map(|n| format!("sleep 400.{mark}{n}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_reins_run_ends_the_commands_it_started() {
    check_signal_ends_the_commands(nix::sys::signal::Signal::SIGTERM, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_to_reins_run_ends_the_commands_it_started() {
    check_signal_ends_the_commands(nix::sys::signal::Signal::SIGHUP, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_to_reins_run_ends_the_commands_it_started() {
    check_signal_ends_the_commands(nix::sys::signal::Signal::SIGKILL, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_processes_end_when_reins_run_finishes() {
    let dir = workspace(&[]);
    let home = Home::new();
    let sleeps = sleeps(4);
    let script = format!(
        "{0} > /dev/null 2>&1 & nohup {1} > /dev/null 2>&1 & setsid {2} > /dev/null 2>&1 & (setsid sh -c '{3} & :' > /dev/null 2>&1 &); \
         echo started",
        sleeps[0], sleeps[1], sleeps[2], sleeps[3]
    );
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "bash", json!({"command": script})),
        Reply::text("done").with_delay_ms(1000),
    ])
    .await;
    let child = command(&server, dir.path(), &home, &[]).spawn().unwrap();
    // They run on while reins does.
    let pids = wait_for(&sleeps).await;
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    // And the model was told so.
    let results = tool_results(&server);
    assert!(results[0].1.contains("still run in the background"), "{}", results[0].1);
    for (pid, line) in pids.iter().zip(&sleeps) {
        assert!(wait_until_gone(*pid).await, "{line} outlived reins run");
    }
}

/// Every way out of the sandbox that a command in a git workspace tried, one a line, each
/// printing what it got: `git config core.fsmonitor`, an executable hook, a planted `.mcp.json`
/// and `.reins/config.toml`, the environment of every process in sight (the shell that started
/// reins holds a canary key), and the sockets that reach past the network switch.
const ESCAPES: &str = r#"git config core.fsmonitor 'touch pwned-fsmonitor' 2>&1 | sed 's/^error: //'
{ printf '#!/bin/sh\ntouch pwned-hook\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo hook written; } 2>&1
{ echo '{"mcpServers": {"evil": {"command": "touch", "args": ["pwned-mcp"]}}}' > .mcp.json && echo .mcp.json written; } 2>&1
{ echo 'approval.bash = "auto"' > .reins/config.toml && echo config written; } 2>&1
echo "canaries in sight: $(cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c sk-canary-parent)"
python3 -c 'import socket
for name in ("AF_VSOCK", "AF_NETLINK"):
    try: socket.socket(getattr(socket, name), socket.SOCK_STREAM if name == "AF_VSOCK" else socket.SOCK_RAW); print(name, "open")
    except OSError as e: print(name, "refused")'
echo still writable > inside.txt && cat inside.txt"#;

/// What [`ESCAPES`] prints when the sandbox holds.
const HELD: &str = "could not lock config file .git/config: Read-only file system
bash: line 2: .git/hooks/pre-commit: Read-only file system
bash: line 3: .mcp.json: Read-only file system
bash: line 4: .reins/config.toml: Read-only file system
canaries in sight: 0
AF_VSOCK refused
AF_NETLINK refused
still writable
";

/// A git workspace with the files reins trusts, trusted by the user.
fn trusted_git_workspace(home: &Home) -> tempfile::TempDir {
    let dir = workspace(&[(".mcp.json", "{\"mcpServers\": {}}\n"), (".reins/config.toml", "\n")]);
    let status = std::process::Command::new("git").args(["init", "-q"]).current_dir(dir.path()).status().unwrap();
    assert!(status.success());
    std::fs::write(home.reins_home().join("trusted-workspaces"), format!("{}\n", dir.path().display())).unwrap();
    dir
}

/// After [`ESCAPES`]: nothing changed where the user's git and reins would run it unconfined.
fn check_nothing_escaped(dir: &Path) {
    let config = std::fs::read_to_string(dir.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    assert!(!dir.join(".git/hooks/pre-commit").exists());
    assert_eq!(std::fs::read_to_string(dir.join(".mcp.json")).unwrap(), "{\"mcpServers\": {}}\n");
    assert_eq!(std::fs::read_to_string(dir.join(".reins/config.toml")).unwrap(), "\n");
    // The user's git status runs no hook or monitor of the command's.
    let status = std::process::Command::new("git").arg("status").current_dir(dir).output().unwrap();
    assert!(status.status.success());
    let planted: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("pwned"))
        .collect();
    assert_eq!(planted, Vec::<String>::new());
}

/// `command` started by a shell that stays its parent, with a canary key in its environment.
fn under_a_shell_with_a_key(command: &tokio::process::Command) -> tokio::process::Command {
    let inner = command.as_std();
    let mut shell = tokio::process::Command::new("sh");
    shell.args(["-c", "\"$@\"; exit $?", "sh"]).arg(inner.get_program()).args(inner.get_args()).env_clear();
    for (name, value) in inner.get_envs() {
        if let Some(value) = value {
            shell.env(name, value);
        }
    }
    if let Some(dir) = inner.get_current_dir() {
        shell.current_dir(dir);
    }
    shell.env("PARENT_SHELL_API_KEY", "sk-canary-parent").stdin(Stdio::null()).kill_on_drop(true);
    shell
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxed_bash_in_reins_run_gets_no_way_out() {
    if let Err(reason) = reins_tools::namespace_support() {
        eprintln!("skipped: {reason}");
        return;
    }
    let home = Home::new();
    let dir = trusted_git_workspace(&home);
    let server =
        ScriptedServer::start(vec![Reply::tool_call("c1", "bash", json!({"command": ESCAPES})), Reply::text("done")])
            .await;
    let output = under_a_shell_with_a_key(&command(&server, dir.path(), &home, &[])).output().await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let results = tool_results(&server);
    assert_eq!(results[0].1, HELD, "{results:?}");
    check_nothing_escaped(dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reins_sandbox_exec_gets_no_way_out_either() {
    if let Err(reason) = reins_tools::namespace_support() {
        eprintln!("skipped: {reason}");
        return;
    }
    let home = Home::new();
    let dir = trusted_git_workspace(&home);
    let root = format!("--root={}", dir.path().display());
    let mut exec = tokio::process::Command::new(env!("CARGO_BIN_EXE_reins"));
    exec.args(["sandbox-exec", "--mode", "workspace-write", &root, "--keep", "PATH", "--keep", "HOME", "--"])
        .args(["bash", "-c", ESCAPES])
        .current_dir(dir.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path());
    let output = under_a_shell_with_a_key(&exec).stderr(Stdio::piped()).output().await.unwrap();
    let printed = String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
    for line in HELD.lines() {
        assert!(printed.contains(line), "{line:?} missing from:\n{printed}");
    }
    check_nothing_escaped(dir.path());
}

/// The `.git` of a repository a workspace is a folder of (here in the temporary directory,
/// which commands may write) and of one inside the workspace stay read-only too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_repositories_around_the_workspace_keep_their_git_read_only() {
    if let Err(reason) = reins_tools::namespace_support() {
        eprintln!("skipped: {reason}");
        return;
    }
    let home = Home::new();
    let repository = workspace(&[("work/inside.txt", "inside\n")]);
    let root = repository.path().join("work");
    let nested = root.join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    for dir in [repository.path(), nested.as_path()] {
        let status = std::process::Command::new("git").args(["init", "-q"]).current_dir(dir).status().unwrap();
        assert!(status.success());
    }
    let escapes = "git config core.fsmonitor 'touch pwned-outer' 2>&1 | sed 's/^error: //'
git -C vendor/lib config core.fsmonitor 'touch pwned-inner' 2>&1 | sed 's/^error: //'
{ echo 'touch pwned' > ../.git/hooks/pre-commit; } 2>&1
{ echo 'touch pwned' > vendor/lib/.git/hooks/pre-commit; } 2>&1
echo still writable > vendor/lib/inside.txt && cat vendor/lib/inside.txt";
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_reins"))
        .args(["sandbox-exec", "--mode", "workspace-write", &format!("--root={}", root.display()), "--keep", "PATH"])
        .args(["--keep", "HOME", "--", "bash", "-c", escapes])
        .current_dir(&root)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        printed,
        "could not lock config file .git/config: Read-only file system
could not lock config file .git/config: Read-only file system
bash: line 3: ../.git/hooks/pre-commit: Read-only file system
bash: line 4: vendor/lib/.git/hooks/pre-commit: Read-only file system
still writable
",
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    for dir in [repository.path(), nested.as_path()] {
        let config = std::fs::read_to_string(dir.join(".git/config")).unwrap();
        assert!(!config.contains("fsmonitor"), "{config}");
        assert!(!dir.join(".git/hooks/pre-commit").exists());
    }
}

/// A repository the command makes itself (none of its metadata existed to be made read-only):
/// a monitor, a hook and an alias planted in it; a monitor in one whose git directory lies in
/// the temporary directory (`--separate-git-dir`, here `$OUT`), and in one reached through a
/// `commondir` file.
const NEW_REPOSITORIES: &str = r#"git init -q made && git -C made config core.fsmonitor 'touch pwned-fsmonitor'
printf '#!/bin/sh\ntouch pwned-hook\n' > made/.git/hooks/post-checkout && chmod +x made/.git/hooks/post-checkout
git -C made config alias.st '!touch pwned-alias'
git init -q --separate-git-dir="$OUT/apart.git" apart && git -C apart config core.fsmonitor 'touch pwned-apart'
git init -q --bare "$OUT/common.git" && git -C "$OUT/common.git" config core.fsmonitor 'touch pwned-common'
mkdir -p via/.git && echo 'ref: refs/heads/main' > via/.git/HEAD && echo "$OUT/common.git" > via/.git/commondir
echo made"#;

/// After a command made repositories and planted code in them, nothing of it runs when the user
/// works in them with git: the hooks are renamed and the config keeps only keys that run nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_a_command_makes_runs_nothing_unconfined() {
    if let Err(reason) = reins_tools::namespace_support() {
        eprintln!("skipped: {reason}");
        return;
    }
    let home = Home::new();
    let dir = trusted_git_workspace(&home);
    // In the temporary directory, outside the workspace (made before: Landlock lets commands
    // create nothing right in a directory that holds a denied path, here `/tmp`).
    let out = tempfile::tempdir().unwrap();
    let script = NEW_REPOSITORIES.replace("$OUT", &out.path().display().to_string());
    let server =
        ScriptedServer::start(vec![Reply::tool_call("c1", "bash", json!({"command": script})), Reply::text("done")])
            .await;
    let output = command(&server, dir.path(), &home, &[]).output().await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let results = tool_results(&server);
    let result = &results[0].1;
    assert!(result.starts_with("made\n"), "{result}");
    // The model (and the user, who sees the tool's result) learn what was disabled and where.
    assert!(result.contains("made/.git: hook post-checkout"), "{result}");
    assert!(result.contains("core.fsmonitor"), "{result}");
    assert!(result.contains("alias.st"), "{result}");
    assert!(result.contains("apart.git: config core.fsmonitor"), "{result}");
    assert!(result.contains("common.git: config core.fsmonitor"), "{result}");
    // The user's own git in the made repositories: status (the monitor), checkout (the hook), the alias.
    for (repo, args) in [
        ("made", &["status"][..]),
        ("made", &["commit", "-q", "--allow-empty", "-m", "first"]),
        ("made", &["checkout", "-q", "-b", "other"]),
        ("made", &["st"]),
        ("apart", &["status"]),
        ("via", &["status"]),
    ] {
        let run = std::process::Command::new("git")
            .args(["-c", "user.name=u", "-c", "user.email=u@example.com"])
            .args(args)
            .current_dir(dir.path().join(repo))
            .output()
            .unwrap();
        if args != ["st"] {
            assert!(run.status.success(), "git {args:?} in {repo}: {}", String::from_utf8_lossy(&run.stderr));
        }
    }
    let mut planted = Vec::new();
    let mut pending = vec![dir.path().to_path_buf(), out.path().to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with("pwned") {
                planted.push(entry.path().display().to_string());
            }
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            }
        }
    }
    assert_eq!(planted, Vec::<String>::new());
    // What was there is kept aside for the user, not deleted.
    assert!(dir.path().join("made/.git/hooks/post-checkout.reins-disabled").exists());
    let aside = std::fs::read_to_string(dir.path().join("made/.git/config.reins-disabled")).unwrap();
    assert!(aside.contains("fsmonitor"), "{aside}");
}
