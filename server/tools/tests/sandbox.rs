//! The bash sandbox, enforced by this machine's kernel (namespaces, Landlock, seccomp): writes
//! only where allowed, `.git` and trusted config read-only, reads everywhere but the denied
//! paths, no other process in sight, only Unix sockets unless the network is allowed, and a
//! denial the model can act on. Where the kernel can do none of it, the tests check that this is
//! reported. The answers shown are those of the namespaces, which this machine has.

mod support;

use std::path::PathBuf;

use expect_test::{Expect, expect};
use reins_tools::{BashTool, ExecPolicy, Sandbox, SandboxMode, sandbox_support};
use support::{Fixture, outcome, run};

/// The fixture with `outside/hidden/key.txt`, which the sandbox denies, beside `outside/secret.txt`.
/// Its directory is not in the temporary directory: a denied path inside a writable directory
/// would keep commands from making new entries right in it.
fn fixture() -> Fixture {
    let fixture = Fixture::new_in(&fixture_base(), &[("inside.txt", "inside\n")]);
    std::fs::create_dir_all(fixture.outside.join("hidden")).unwrap();
    std::fs::write(fixture.outside.join("hidden/key.txt"), "key\n").unwrap();
    fixture
}

/// Cargo's test directory, unless the checkout itself lies in a temporary directory (a clone in
/// /tmp): then a directory under $HOME, so that the denied path stays out of the writable ones.
fn fixture_base() -> PathBuf {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let temporary = [std::env::temp_dir(), PathBuf::from("/tmp"), PathBuf::from("/var/tmp"), PathBuf::from("/dev/shm")];
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match home {
        Some(home) if temporary.iter().any(|dir| target.starts_with(dir)) => {
            let base = home.join(".cache/reins-sandbox-tests");
            std::fs::create_dir_all(&base).unwrap();
            base
        }
        _ => target,
    }
}

fn sandbox(fixture: &Fixture, mode: SandboxMode, network: bool) -> Sandbox {
    Sandbox {
        mode,
        network,
        writable: Vec::new(),
        deny_read: vec![fixture.outside.join("hidden")],
        read_only: vec![fixture.root.join("kept")],
    }
}

/// Runs `command` under `sandbox` and shows the answer with the fixture's paths and the
/// temporary directory redacted. `None` where the kernel cannot sandbox.
async fn sandboxed(fixture: &Fixture, sandbox: Sandbox, command: &str) -> Option<String> {
    if let Err(reason) = sandbox_support() {
        assert!(reason.contains("Landlock") && reason.contains("namespace"), "{reason}");
        eprintln!("skipped: {reason}");
        return None;
    }
    let policy = ExecPolicy { sandbox, ..ExecPolicy::default() };
    let tool = BashTool::with_policy(fixture.workspace.clone(), policy);
    let arguments = serde_json::json!({ "command": command }).to_string();
    let answer = outcome(run(&tool, &arguments).await);
    Some(fixture.redact(&answer).replace(&std::env::temp_dir().display().to_string(), "$TMP"))
}

async fn check(mode: SandboxMode, network: bool, command: &str, expected: Expect) {
    let fixture = fixture();
    let sandbox = sandbox(&fixture, mode, network);
    let command = command.replace("$OUTSIDE", &fixture.outside.display().to_string());
    if let Some(answer) = sandboxed(&fixture, sandbox, &command).await {
        expected.assert_eq(&answer);
    }
}

#[tokio::test]
async fn workspace_write_writes_in_the_workspace_and_temp() {
    check(
        SandboxMode::WorkspaceWrite,
        false,
        "echo new > made.txt && mkdir -p sub/dir && mv made.txt sub/dir/ && cat sub/dir/made.txt \
         && t=$(mktemp) && echo tmp > $t && cat $t && rm $t && echo quiet > /dev/null && ls / > /dev/null && echo ok",
        expect![[r#"
            new
            tmp
            ok
        "#]],
    )
    .await;
}

#[tokio::test]
async fn a_write_outside_is_denied_with_a_notice_the_model_can_act_on() {
    let fixture = fixture();
    let command = format!("cat {0}/secret.txt; echo no > {0}/new.txt", fixture.outside.display());
    let Some(answer) = sandboxed(&fixture, sandbox(&fixture, SandboxMode::WorkspaceWrite, false), &command).await
    else {
        return;
    };
    expect![[r#"
        error: secret
        bash: line 1: $OUTSIDE/new.txt: Read-only file system

        Command exited with code 1

        [The command ran in reins's `workspace-write` sandbox (namespaces, Landlock, seccomp): it may write only under $ROOT, $TMP, not in .git, .mcp.json or .reins/; secrets such as ~/.ssh cannot be read and the network is off. If the error above is such a denial, work inside those directories instead; only the user can widen the sandbox ([sandbox] in reins's config.toml).]"#]]
    .assert_eq(&answer);
    assert!(!fixture.outside.join("new.txt").exists());
}

#[tokio::test]
async fn read_only_writes_nowhere_but_temp() {
    check(
        SandboxMode::ReadOnly,
        false,
        "cat inside.txt; echo x > $(mktemp) && echo temp ok; echo x >> inside.txt",
        expect![[r#"
            error: inside
            temp ok
            bash: line 1: inside.txt: Read-only file system

            Command exited with code 1

            [The command ran in reins's `read-only` sandbox (namespaces, Landlock, seccomp): it may write only under $TMP, not in .git, .mcp.json or .reins/; secrets such as ~/.ssh cannot be read and the network is off. If the error above is such a denial, work inside those directories instead; only the user can widen the sandbox ([sandbox] in reins's config.toml).]"#]],
    )
    .await;
}

#[tokio::test]
async fn denied_paths_cannot_be_read_though_their_directory_lists() {
    check(
        SandboxMode::WorkspaceWrite,
        true,
        "cat $OUTSIDE/hidden/key.txt; ls $OUTSIDE; cat $OUTSIDE/secret.txt",
        expect![[r#"
            cat: $OUTSIDE/hidden/key.txt: No such file or directory
            hidden
            secret.txt
            secret
        "#]],
    )
    .await;
}

#[tokio::test]
async fn the_network_is_off_unless_allowed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo tcp open || echo tcp refused; \
         (echo hi > /dev/udp/127.0.0.1/{port}) 2>/dev/null && echo udp open || echo udp refused"
    );
    let fixture = fixture();
    let Some(off) = sandboxed(&fixture, sandbox(&fixture, SandboxMode::WorkspaceWrite, false), &command).await else {
        return;
    };
    assert_eq!(off, "tcp refused\nudp refused\n");
    let on = sandboxed(&fixture, sandbox(&fixture, SandboxMode::WorkspaceWrite, true), &command).await.unwrap();
    assert_eq!(on, "tcp open\nudp open\n");
}

#[tokio::test]
async fn a_command_cannot_signal_or_inspect_reins() {
    // As reins makes itself (the harness does, when it starts).
    nix::sys::prctl::set_dumpable(false).unwrap();
    check(
        SandboxMode::WorkspaceWrite,
        true,
        "kill -0 $PPID 2>/dev/null && echo signalled; (exec 3< /proc/$PPID/mem) 2>/dev/null && echo opened; \
         ls /proc/$PPID/root/ >/dev/null 2>&1 && echo listed; echo done",
        expect![[r#"
            done
        "#]],
    )
    .await;
}

#[tokio::test]
async fn off_runs_with_the_users_rights() {
    let fixture = fixture();
    let command = format!("cat {}/hidden/key.txt", fixture.outside.display());
    let tool = BashTool::with_policy(
        fixture.workspace.clone(),
        ExecPolicy { sandbox: sandbox(&fixture, SandboxMode::Off, false), ..ExecPolicy::default() },
    );
    let arguments = serde_json::json!({ "command": command }).to_string();
    assert_eq!(outcome(run(&tool, &arguments).await), "key\n");
    let _: PathBuf = fixture.root.clone();
}

/// `git` run in `dir`, which must succeed.
fn git(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Whether the sandbox's own namespaces are at work here; where not, say why and skip.
fn namespaces() -> bool {
    match reins_tools::namespace_support() {
        Ok(()) => true,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            false
        }
    }
}

#[tokio::test]
async fn git_metadata_and_trusted_config_are_read_only_in_a_writable_workspace() {
    if !namespaces() {
        return;
    }
    let fixture = fixture();
    git(&fixture.root, &["init", "-q"]);
    std::fs::write(fixture.root.join(".mcp.json"), "{}\n").unwrap();
    std::fs::create_dir_all(fixture.root.join(".reins")).unwrap();
    std::fs::write(fixture.root.join(".reins/config.toml"), "").unwrap();
    let command = "git config core.fsmonitor 'touch pwned'; \
                   echo 'touch pwned' > .git/hooks/pre-commit; \
                   echo '{\"mcpServers\": {}}' > .mcp.json; echo x > .reins/config.toml; echo x > .reins/new.toml; \
                   mv .git .git-old; mount -o remount,rw .git 2>&1 | head -c 0; umount .git 2>&1 | head -c 0; \
                   echo 'touch pwned' > .git/hooks/post-checkout; \
                   echo still writable > inside.txt && cat inside.txt";
    let answer = sandboxed(&fixture, sandbox(&fixture, SandboxMode::WorkspaceWrite, false), command).await.unwrap();
    expect![[r#"
        error: could not lock config file .git/config: Read-only file system
        bash: line 1: .git/hooks/pre-commit: Read-only file system
        bash: line 1: .mcp.json: Read-only file system
        bash: line 1: .reins/config.toml: Read-only file system
        bash: line 1: .reins/new.toml: Read-only file system
        mv: cannot move '.git' to '.git-old': Device or resource busy
        bash: line 1: .git/hooks/post-checkout: Read-only file system
        still writable
    "#]]
    .assert_eq(&answer);
    let config = std::fs::read_to_string(fixture.root.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    assert!(!fixture.root.join(".git/hooks/pre-commit").exists());
    assert_eq!(std::fs::read_to_string(fixture.root.join(".mcp.json")).unwrap(), "{}\n");
}

#[tokio::test]
async fn a_worktrees_git_directory_is_read_only_too() {
    if !namespaces() {
        return;
    }
    // The main repository in the temporary directory, writable to commands; the worktree is
    // the workspace, its `.git` a file naming the real git directory.
    let main = tempfile::tempdir().unwrap();
    git(main.path(), &["init", "-q"]);
    git(main.path(), &["commit", "-q", "--allow-empty", "-m", "first"]);
    let fixture = fixture();
    std::fs::remove_dir_all(&fixture.root).unwrap();
    git(main.path(), &["worktree", "add", "-q", &fixture.root.display().to_string()]);
    let command = "{ git config core.fsmonitor 'touch pwned'; \
                   echo x > \"$(git rev-parse --git-common-dir)/hooks/pre-commit\"; \
                   echo x > \"$(git rev-parse --git-dir)/HEAD\"; } 2>&1 | sed 's|/[^:]*/||'";
    let answer = sandboxed(&fixture, sandbox(&fixture, SandboxMode::WorkspaceWrite, false), command).await.unwrap();
    expect![[r#"
        error: could not lock config file config: Read-only file system
        bash: line 1: pre-commit: Read-only file system
        bash: line 1: HEAD: Read-only file system
    "#]]
    .assert_eq(&answer);
    let config = std::fs::read_to_string(main.path().join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
}

/// What the git-metadata escapes below print: the config (core.fsmonitor) and a hook of the
/// repository that holds the working directory, with paths cut down to their last name.
const GIT_ESCAPES: &str = "{ git config core.fsmonitor 'touch pwned'; \
                           echo x > \"$(git rev-parse --absolute-git-dir)/hooks/pre-commit\"; } 2>&1 | sed 's|/[^:]*/||'";

#[tokio::test]
async fn the_git_directory_of_a_repository_the_workspace_lies_in_is_read_only() {
    if !namespaces() {
        return;
    }
    // The repository in the temporary directory, writable to commands; the workspace is a folder
    // of it, so its `.git` is above every root.
    let fixture = Fixture::new(&[("inside.txt", "inside\n")]);
    let repository = fixture.root.parent().unwrap().to_path_buf();
    git(&repository, &["init", "-q"]);
    let sandbox = Sandbox { mode: SandboxMode::WorkspaceWrite, ..Sandbox::default() };
    let answer = sandboxed(&fixture, sandbox, GIT_ESCAPES).await.unwrap();
    expect![[r#"
        error: could not lock config file .git/config: Read-only file system
        bash: line 1: pre-commit: Read-only file system
    "#]]
    .assert_eq(&answer);
    let config = std::fs::read_to_string(repository.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    assert!(!repository.join(".git/hooks/pre-commit").exists());
}

#[tokio::test]
async fn the_git_directories_of_repositories_inside_the_workspace_are_read_only() {
    if !namespaces() {
        return;
    }
    let fixture = fixture();
    let nested = fixture.root.join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    let command = format!(
        "cd vendor/lib && {GIT_ESCAPES}; cd ../.. && echo still writable > vendor/lib/file.txt && cat vendor/lib/file.txt"
    );
    let answer = sandboxed(&fixture, sandbox(&fixture, SandboxMode::WorkspaceWrite, false), &command).await.unwrap();
    expect![[r#"
        error: could not lock config file .git/config: Read-only file system
        bash: line 1: pre-commit: Read-only file system
        still writable
    "#]]
    .assert_eq(&answer);
    let config = std::fs::read_to_string(nested.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    assert!(!nested.join(".git/hooks/pre-commit").exists());
}

#[tokio::test]
async fn other_processes_are_out_of_sight_and_their_keys_with_them() {
    if !namespaces() {
        return;
    }
    // A process outside the command, of the same user, with a key in its environment: as the
    // shell or the editor that started reins would be.
    let mut holder =
        std::process::Command::new("sleep").arg("60.8").env("REINS_TEST_KEY", "sk-canary-proc").spawn().unwrap();
    let command = format!(
        "cat /proc/{}/environ 2>&1 | sed 's/^cat: .*: /cat: /'; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' \
         | grep -c sk-canary-proc; ls /proc | grep -c '^[0-9]'; echo $$",
        holder.id()
    );
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::Off] {
        let fixture = fixture();
        let answer = sandboxed(&fixture, sandbox(&fixture, mode, false), &command).await.unwrap();
        // No such process; no canary; the shell, its pipeline and the init; the shell is 2.
        assert!(answer.starts_with("cat: No such file or directory\n0\n"), "{mode:?}: {answer}");
        let lines: Vec<&str> = answer.lines().collect();
        assert!(lines[2].parse::<u32>().unwrap() <= 6, "{mode:?}: {answer}");
        assert_eq!(lines[3], "2", "{mode:?}: {answer}");
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
}

#[tokio::test]
async fn with_the_network_off_only_unix_sockets_open() {
    let probe = |family: &str| {
        format!(
            "python3 -c 'import socket\ntry:\n socket.socket(socket.{family}, socket.SOCK_DGRAM if \"{family}\" != \
             \"AF_VSOCK\" else socket.SOCK_STREAM); print(\"{family} open\")\nexcept OSError as e: print(\"{family} \
             refused\", e.errno)'"
        )
    };
    let command = ["AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK", "AF_VSOCK", "AF_PACKET"].map(probe).join("; ");
    check(
        SandboxMode::WorkspaceWrite,
        false,
        &command,
        expect![[r#"
            AF_UNIX open
            AF_INET refused 1
            AF_INET6 refused 1
            AF_NETLINK refused 1
            AF_VSOCK refused 1
            AF_PACKET refused 1
        "#]],
    )
    .await;
}

#[tokio::test]
async fn reins_own_configuration_stays_read_only_inside_a_writable_directory() {
    if !namespaces() {
        return;
    }
    let fixture = fixture();
    std::fs::create_dir_all(fixture.root.join("kept")).unwrap();
    std::fs::write(fixture.root.join("kept/trusted-workspaces"), "/home/u/work\n").unwrap();
    let command =
        "echo / >> kept/trusted-workspaces; echo x > kept/trusted-files; echo ok > beside.txt && cat beside.txt";
    let answer = sandboxed(&fixture, sandbox(&fixture, SandboxMode::WorkspaceWrite, false), command).await.unwrap();
    expect![[r#"
        bash: line 1: kept/trusted-workspaces: Read-only file system
        bash: line 1: kept/trusted-files: Read-only file system
        ok
    "#]]
    .assert_eq(&answer);
    assert_eq!(std::fs::read_to_string(fixture.root.join("kept/trusted-workspaces")).unwrap(), "/home/u/work\n");
}
