//! One run of a user's hook command: a shell command started enclosed and confined exactly like
//! `bash`'s (the same sandbox, the same secret-free environment), given the event as JSON on its
//! stdin, its stdout and stderr kept apart (the harness reads a verdict from them), and killed
//! with everything it started at its timeout.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::ExecPolicy;

/// What a hook says is kept up to this much of each stream.
const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// How a hook run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRun {
    /// The exit code; `None` when it was killed (by its timeout, or a signal).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

/// Runs `command` with `bash -c` (`sh -c` without bash) in `cwd`, `stdin` on its standard
/// input, for at most `timeout`.
pub async fn run_hook(
    command: &str,
    stdin: &[u8],
    cwd: &Path,
    policy: &ExecPolicy,
    roots: &[PathBuf],
    timeout: Duration,
) -> io::Result<HookRun> {
    let (mut child, control) = match spawn("bash", command, cwd, policy, roots) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => spawn("sh", command, cwd, policy, roots)?,
        other => other?,
    };
    control.set_nonblocking(true)?;
    let mut control = tokio::net::UnixStream::from_std(control)?;
    let (mut input, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let stdin = stdin.to_vec();
    // A hook that never reads its input must not hold this up: the write gives up with it.
    let feed = tokio::spawn(async move {
        if let Some(input) = input.as_mut() {
            let _ = input.write_all(&stdin).await;
        }
    });
    let stdout = tokio::spawn(read_capped(stdout));
    let stderr = tokio::spawn(read_capped(stderr));
    let mut timed_out = false;
    let status = tokio::select! {
        status = shell_status(&mut control) => status?,
        () = tokio::time::sleep(timeout) => {
            timed_out = true;
            // Closing reins's end of the control socket ends the command and all it started.
            // SAFETY: the socket is open: `control` lives until the end of this function.
            unsafe { nix::libc::shutdown(control.as_raw_fd(), nix::libc::SHUT_WR) };
            ExitStatus::from_raw(nix::libc::SIGKILL)
        }
    };
    feed.abort();
    drop(control);
    let _ = child.wait().await;
    let stdout = stdout.await.unwrap_or_default();
    let stderr = stderr.await.unwrap_or_default();
    let code = if timed_out { None } else { status.code() };
    Ok(HookRun { code, stdout, stderr, timed_out })
}

fn spawn(
    shell: &str,
    command: &str,
    cwd: &Path,
    policy: &ExecPolicy,
    roots: &[PathBuf],
) -> io::Result<(tokio::process::Child, std::os::unix::net::UnixStream)> {
    let mut child = Command::new(shell);
    child
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(env) = &policy.env {
        child.env_clear().envs(env.iter().map(|(name, value)| (name, value)));
    }
    let control = crate::namespace::enclose(child.as_std_mut(), &policy.sandbox, roots)?;
    Ok((child.spawn()?, control))
}

/// The shell's wait status from the command's init; a socket closed without one: killed.
async fn shell_status(control: &mut tokio::net::UnixStream) -> io::Result<ExitStatus> {
    let mut status = [0u8; 4];
    match control.read_exact(&mut status).await {
        Ok(_) => Ok(ExitStatus::from_raw(i32::from_ne_bytes(status))),
        Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => Ok(ExitStatus::from_raw(nix::libc::SIGKILL)),
        Err(err) => Err(err),
    }
}

/// A stream to its end, keeping the first [`MAX_OUTPUT_BYTES`].
async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut stream) = stream else { return String::new() };
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = MAX_OUTPUT_BYTES.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(command: &str, timeout_ms: u64) -> HookRun {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let policy = ExecPolicy::default();
        run_hook(
            command,
            b"{\"event\":\"x\"}",
            &root,
            &policy,
            std::slice::from_ref(&root),
            Duration::from_millis(timeout_ms),
        )
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn the_event_arrives_on_stdin_and_the_streams_come_back_apart() {
        let done = run("cat; echo err >&2; exit 3", 20_000).await;
        assert_eq!(
            done,
            HookRun { code: Some(3), stdout: "{\"event\":\"x\"}".into(), stderr: "err\n".into(), timed_out: false }
        );
    }

    #[tokio::test]
    async fn a_hook_that_hangs_is_killed_at_its_timeout_with_what_it_started() {
        let started = std::time::Instant::now();
        let done = run("sleep 30 & sleep 30; echo never", 300).await;
        assert!(done.timed_out && done.code.is_none() && done.stdout.is_empty(), "{done:?}");
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    }
}
