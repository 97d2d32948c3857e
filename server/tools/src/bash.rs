//! `bash`: runs a shell command in the working directory and reports its output and exit code.
//!
//! The command runs in its own process group, so a timeout or a cancelled run kills everything it
//! started, grandchildren included. stdout and stderr share one pipe, which keeps their lines in
//! the order they were written. The result keeps the tail of the output (errors and summaries come
//! last); the full output of a long command is kept in a file whose path the result gives.

use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use reins_agent::{CommandProposal, Proposal, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

use crate::Workspace;
use crate::truncate::{MAX_BYTES, MAX_LINES, format_size, truncate_tail};

const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// How long to keep reading after the shell exited while a background process still holds the
/// output pipe open.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// Minimum time between two partial-output updates.
const UPDATE_INTERVAL: Duration = Duration::from_millis(200);
/// Bytes of output kept in memory once the full output has gone to a file: enough for the tail
/// that is shown, with room to find a line start.
const TAIL_KEEP: usize = 2 * MAX_BYTES;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashInput {
    /// The command to run with `bash -c`, in the working directory. stdin is empty; stdout and
    /// stderr are captured together.
    pub command: String,
    /// Seconds before the command and everything it started are killed (default 120).
    pub timeout: Option<u64>,
}

pub struct BashTool {
    workspace: Arc<dyn Workspace>,
}

impl BashTool {
    pub fn new(workspace: Arc<dyn Workspace>) -> Self {
        Self { workspace }
    }
}

/// Why the command stopped before it finished by itself.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Interrupted {
    TimedOut,
    Cancelled,
}

/// Kills the command's process group when dropped (the run was aborted while the command ran)
/// unless disarmed. It is disarmed once the shell is reaped: the group id may only be reused after
/// that, and a finished shell's background jobs are left alone.
struct GroupKiller {
    group: Option<Pid>,
}

/// The command's output: all of it in memory while it is short; once it passes the limits, all of
/// it in a temporary file and only the tail in memory.
struct OutputLog {
    tail: Vec<u8>,
    total_bytes: usize,
    newlines: usize,
    full: Option<tempfile::NamedTempFile>,
    /// The full output could not be written; the tail is still shown.
    full_failed: bool,
}

#[async_trait]
impl TypedTool for BashTool {
    type Input = BashInput;
    const NAME: &'static str = "bash";
    const READ_ONLY: bool = false;

    fn description(&self) -> String {
        format!(
            "Run a shell command (bash) in the working directory. Returns stdout and stderr together \
             and the exit code; a non-zero exit is reported as an error. Output is cut to its last \
             {MAX_LINES} lines or {}, and then the full output is saved to a file whose path is \
             given. The command is killed, with all processes it started, after `timeout` seconds \
             (default {DEFAULT_TIMEOUT_SECS}). To leave a server running, redirect its output and \
             background it: `cmd > log 2>&1 &`.",
            format_size(MAX_BYTES)
        )
    }

    async fn prepare(&self, input: &BashInput) -> Result<Option<Proposal>, ToolError> {
        if input.command.trim().is_empty() {
            return Err(ToolError::new("command is empty"));
        }
        Ok(Some(Proposal::Command(CommandProposal {
            command: input.command.clone(),
            cwd: self.workspace.cwd(),
            timeout_secs: input.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1),
        })))
    }

    async fn execute(
        &self,
        input: BashInput,
        proposal: Option<Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        // The gate may have changed the command; what it allowed is what runs.
        let proposal = match proposal {
            Some(Proposal::Command(proposal)) => proposal,
            _ => CommandProposal {
                command: input.command,
                cwd: self.workspace.cwd(),
                timeout_secs: input.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1),
            },
        };
        run(&proposal, &cx).await
    }
}

async fn run(proposal: &CommandProposal, cx: &ToolContext<'_>) -> Result<ToolOutput, ToolError> {
    let (mut child, mut output_pipe) = spawn(&proposal.command, &proposal.cwd)
        .map_err(|err| ToolError::new(format!("could not start the command: {err}")))?;
    let mut killer = GroupKiller { group: child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw) };
    let mut log = OutputLog::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut last_update: Option<Instant> = None;
    let mut interrupted = None;
    let deadline = tokio::time::sleep(Duration::from_secs(proposal.timeout_secs));
    tokio::pin!(deadline);

    // Until the shell exits: read its output, and stop it on timeout or cancellation.
    let mut pipe_open = true;
    let status = loop {
        tokio::select! {
            read = output_pipe.read(&mut buf), if pipe_open => match read {
                Ok(0) => pipe_open = false,
                Ok(n) => {
                    log.push(&buf[..n]);
                    if last_update.is_none_or(|at| at.elapsed() >= UPDATE_INTERVAL) {
                        last_update = Some(Instant::now());
                        (cx.on_update)(&log.tail_text());
                    }
                }
                Err(err) => {
                    tracing::warn!("bash: reading the command's output failed: {err}");
                    pipe_open = false;
                }
            },
            status = child.wait() => break status,
            () = &mut deadline, if interrupted.is_none() => {
                interrupted = Some(Interrupted::TimedOut);
                killer.kill();
            }
            () = cx.cancel.cancelled(), if interrupted.is_none() => {
                interrupted = Some(Interrupted::Cancelled);
                killer.kill();
            }
        }
    };
    killer.disarm();

    // Then what is left in the pipe, unless a background process keeps it open.
    let mut held_open = false;
    if pipe_open {
        let drain = tokio::time::sleep(DRAIN_GRACE);
        tokio::pin!(drain);
        loop {
            tokio::select! {
                read = output_pipe.read(&mut buf) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => log.push(&buf[..n]),
                },
                () = &mut drain => {
                    held_open = true;
                    break;
                }
                () = cx.cancel.cancelled() => break,
            }
        }
    }

    let status = status.map_err(|err| ToolError::new(format!("waiting for the command failed: {err}")))?;
    let (mut text, full_output) = log.finish();
    if held_open && interrupted.is_none() {
        text = with_notice(
            text,
            "[The command exited but a background process it started still holds the output open; \
             its further output is not captured. Redirect a background process's output \
             (`cmd > log 2>&1 &`) to keep it running.]",
        );
    }
    let details = serde_json::json!({
        "exitCode": status.code(),
        "fullOutputPath": full_output,
    });
    let ending = match (interrupted, status.code()) {
        (None, Some(0)) => return Ok(ToolOutput::text(text).with_details(details)),
        (Some(Interrupted::TimedOut), _) => format!(
            "Command timed out after {} s and was killed, with the processes it started.",
            proposal.timeout_secs
        ),
        (Some(Interrupted::Cancelled), _) => "Command was cancelled and killed.".to_string(),
        (None, Some(code)) => format!("Command exited with code {code}"),
        (None, None) => format!("Command was killed by {}", describe_signal(status)),
    };
    Err(ToolError::new(with_notice(text, &ending)))
}

/// `text`, a blank line, and `notice`.
fn with_notice(text: String, notice: &str) -> String {
    let mut text = text;
    text.truncate(text.trim_end_matches('\n').len());
    text.push_str("\n\n");
    text.push_str(notice);
    text
}

/// Starts `bash -c command` (or `sh -c` where there is no bash) in its own process group, with
/// stdout and stderr on one pipe whose read end is returned.
fn spawn(command: &str, cwd: &Path) -> io::Result<(Child, tokio::net::unix::pipe::Receiver)> {
    let (sender, receiver) = tokio::net::unix::pipe::pipe()?;
    let writer = sender.into_blocking_fd()?;
    let child = match spawn_shell("bash", command, cwd, &writer) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => spawn_shell("sh", command, cwd, &writer)?,
        other => other?,
    };
    // Our copy of the write end goes now, so the pipe ends when the command's processes close it.
    drop(writer);
    Ok((child, receiver))
}

fn spawn_shell(shell: &str, command: &str, cwd: &Path, writer: &OwnedFd) -> io::Result<Child> {
    // `Command` holds its copies of the write end until it is dropped at the end of this function.
    Command::new(shell)
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer.try_clone()?))
        .stderr(Stdio::from(writer.try_clone()?))
        .process_group(0)
        .spawn()
}

fn describe_signal(status: ExitStatus) -> String {
    match status.signal().and_then(|number| Signal::try_from(number).ok()) {
        Some(signal) => format!("signal {}", signal.as_str()),
        None => "a signal".to_string(),
    }
}

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(group) = self.group {
            // ESRCH (the group is already gone) is the expected failure.
            if let Err(err) = killpg(group, Signal::SIGKILL) {
                tracing::debug!("bash: killing process group {group} failed: {err}");
            }
        }
    }

    fn disarm(&mut self) {
        self.group = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

impl OutputLog {
    fn new() -> Self {
        Self { tail: Vec::new(), total_bytes: 0, newlines: 0, full: None, full_failed: false }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.total_bytes += chunk.len();
        self.newlines += chunk.iter().filter(|&&byte| byte == b'\n').count();
        self.tail.extend_from_slice(chunk);
        if self.full.is_some() {
            self.write_full(chunk);
        } else if !self.full_failed && (self.total_bytes > MAX_BYTES || self.newlines >= MAX_LINES) {
            match tempfile::Builder::new().prefix("reins-bash-").suffix(".log").tempfile() {
                Ok(file) => {
                    self.full = Some(file);
                    let everything = std::mem::take(&mut self.tail);
                    self.write_full(&everything);
                    self.tail = everything;
                }
                Err(err) => {
                    tracing::warn!("bash: cannot create a file for the full output: {err}");
                    self.full_failed = true;
                }
            }
        }
        if self.tail.len() > 2 * TAIL_KEEP {
            self.tail.drain(..self.tail.len() - TAIL_KEEP);
        }
    }

    fn write_full(&mut self, chunk: &[u8]) {
        let written = self.full.as_mut().map(|file| file.write_all(chunk));
        if let Some(Err(err)) = written {
            tracing::warn!("bash: writing the full output failed: {err}");
            self.full = None;
            self.full_failed = true;
        }
    }

    fn total_lines(&self) -> usize {
        let unterminated = self.tail.last().is_some_and(|&byte| byte != b'\n');
        self.newlines + usize::from(unterminated)
    }

    /// The tail as it would be shown, for partial-output updates.
    fn tail_text(&self) -> String {
        truncate_tail(&String::from_utf8_lossy(&self.tail), MAX_LINES, MAX_BYTES).kept
    }

    /// The text for the model (tail and notice) and the path of the full output, if it was kept.
    fn finish(self) -> (String, Option<PathBuf>) {
        let total_lines = self.total_lines();
        let all = String::from_utf8_lossy(&self.tail);
        let shown = truncate_tail(&all, MAX_LINES, MAX_BYTES);
        if !shown.is_cut() && self.total_bytes == self.tail.len() {
            let text = if shown.kept.is_empty() { "(no output)".to_string() } else { shown.kept };
            return (text, None);
        }
        let full_output = self.full.and_then(|file| match file.keep() {
            Ok((_, path)) => Some(path),
            Err(err) => {
                tracing::warn!("bash: keeping the full output failed: {err}");
                None
            }
        });
        let where_full = match &full_output {
            Some(path) => format!("Full output: {}", path.display()),
            None => "The full output could not be saved.".to_string(),
        };
        let notice = if shown.partial_line {
            format!(
                "[Showing the last {} of line {total_lines} (the output is {}). {where_full}]",
                format_size(shown.kept.len()),
                format_size(self.total_bytes)
            )
        } else {
            let first = total_lines + 1 - shown.kept_lines.max(1);
            format!(
                "[Showing lines {first}-{total_lines} of {total_lines} ({} of {}). {where_full}]",
                format_size(shown.kept.len()),
                format_size(self.total_bytes)
            )
        };
        (with_notice(shown.kept, &notice), full_output)
    }
}
