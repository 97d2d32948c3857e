//! `bash`: runs a shell command in the working directory and reports its output and exit code.
//!
//! The command runs enclosed (`namespace.rs`): in namespaces of its own where the kernel allows,
//! under an init that ends everything it started, grandchildren included, when the tool lets go
//! of its control socket — at a timeout, a cancelled run, when the tool goes, or when reins ends.
//! Background processes it leaves may run on until then; the result says so. stdout and stderr share one pipe, which keeps their lines in
//! the order they were written. The result keeps the tail of the output (errors and summaries come
//! last); the full output of a long command is kept in a file whose path the result gives, up to a
//! cap. Those files live in a directory of the tool's own, deleted with the tool (when its
//! session ends), or by the next reins to start after a crash.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use reins_agent::{
    CommandProposal, Proposal, ToolContext, ToolError, ToolKind, ToolLook, ToolOutput, TypedTool, string_argument,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

use crate::exec::{DEFAULT_TIMEOUT_SECS, ExecPolicy, SandboxMode};
use crate::new_repositories::RepositorySnapshot;
use crate::sandbox::sandbox_support;
use crate::truncate::{MAX_BYTES, MAX_LINES, format_size, truncate_tail};
use crate::{Terminal, Workspace};

/// The longest a command is shown in a call's title.
const TITLE_COMMAND_CHARS: usize = 80;
/// Names the directories that hold full output: `reins-output-PID-XXXXXX`.
const OUTPUT_DIR_PREFIX: &str = "reins-output-";
/// How long to keep reading after the shell exited while a background process still holds the
/// output pipe open.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// Minimum time between two partial-output updates.
const UPDATE_INTERVAL: Duration = Duration::from_millis(200);
/// Bytes of output kept in memory once the full output has gone to a file: enough for the tail
/// that is shown, with room to find a line start.
const TAIL_KEEP: usize = 2 * MAX_BYTES;
/// How long the command's supervisor may take to leave once the shell ended; longer, and the
/// shell left processes running in the background.
const LINGER_CHECK: Duration = Duration::from_millis(200);

#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashInput {
    // Run with `bash -c` in the working directory, stdin empty.
    pub command: String,
    /// Seconds.
    pub timeout: Option<u64>,
}

pub struct BashTool {
    workspace: Arc<dyn Workspace>,
    policy: ExecPolicy,
    /// Where full output goes, made at the first long output and deleted with the tool.
    output_dir: Arc<Mutex<Option<tempfile::TempDir>>>,
    /// Commands whose shell ended but whose background processes run on: they end when this
    /// goes (the tool, with its session) or reins ends.
    lingering: Arc<Mutex<Vec<Lingering>>>,
}

/// A command still running in the background: its supervisor, and the control socket whose
/// closing ends it.
struct Lingering {
    supervisor: Child,
    _control: tokio::net::UnixStream,
}

impl BashTool {
    /// A `bash` with the default [`ExecPolicy`]: this process's environment, no sandbox.
    pub fn new(workspace: Arc<dyn Workspace>) -> Self {
        Self::with_policy(workspace, ExecPolicy::default())
    }

    pub fn with_policy(workspace: Arc<dyn Workspace>, policy: ExecPolicy) -> Self {
        Self { workspace, policy, output_dir: Arc::default(), lingering: Arc::default() }
    }

    /// The sandbox in a sentence for the model, or nothing when commands are not sandboxed.
    fn sandbox_description(&self) -> String {
        if !self.sandboxed() {
            return String::new();
        }
        let sandbox = &self.policy.sandbox;
        let writes = match sandbox.mode {
            SandboxMode::ReadOnly => "nowhere but the temporary directory",
            _ => "only inside the workspace and the temporary directory",
        };
        let network = if sandbox.network { "" } else { "; there is no network access" };
        let kept = if crate::namespace_support().is_ok() {
            "; .git, .mcp.json and .reins/ are read-only; a command sees only its own processes"
        } else {
            ""
        };
        format!(" Sandbox: commands read files but write {writes}{kept}{network}.")
    }

    /// The layers of the sandbox in force here, named for the model and the user.
    fn enforced_by(&self) -> String {
        let layers: Vec<&str> = crate::protections(&self.policy.sandbox)
            .into_iter()
            .filter(|(in_force, _)| *in_force)
            .map(|(_, line)| match line.split(':').next() {
                Some("namespaces") => "namespaces",
                Some("landlock") => "Landlock",
                _ => "seccomp",
            })
            .collect();
        layers.join(", ")
    }

    /// Whether commands actually run sandboxed.
    fn sandboxed(&self) -> bool {
        self.policy.sandbox.mode != SandboxMode::Off && sandbox_support().is_ok()
    }

    /// What the model should know when a sandboxed command failed on a denial: which of the
    /// sandbox's limits it may have met, and what it can do.
    fn denial_notice(&self, output: &str, roots: &[PathBuf]) -> Option<String> {
        let denied = ["Permission denied", "Operation not permitted", "Read-only file system"];
        if !self.sandboxed() || !denied.iter().any(|words| output.contains(words)) {
            return None;
        }
        let sandbox = &self.policy.sandbox;
        let mut writable: Vec<String> = Vec::new();
        if sandbox.mode == SandboxMode::WorkspaceWrite {
            writable.extend(roots.iter().chain(&sandbox.writable).map(|path| path.display().to_string()));
        }
        writable.push(std::env::temp_dir().display().to_string());
        let network = if sandbox.network { "" } else { " and the network is off" };
        Some(format!(
            "[The command ran in reins's `{}` sandbox ({}): it may write only under {}, not in .git, .mcp.json \
             or .reins/; secrets such as ~/.ssh cannot be read{network}. If the error above is such a denial, \
             work inside those directories instead; only the user can widen the sandbox ([sandbox] in reins's \
             config.toml).]",
            sandbox.mode.as_str(),
            self.enforced_by(),
            writable.join(", ")
        ))
    }

    /// The timeout a call gets: what it asked for (or the default), from 1 s to the maximum.
    fn timeout_secs(&self, asked: Option<u64>) -> u64 {
        asked.unwrap_or(DEFAULT_TIMEOUT_SECS).clamp(1, self.policy.max_timeout_secs.max(1))
    }
}

/// Why the command stopped before it finished by itself.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Interrupted {
    TimedOut,
    Cancelled,
}

/// Ends the command, whole, when dropped (the run was aborted while the command ran) unless
/// disarmed: shuts its control socket, on which its supervisor ends it (the init its namespace;
/// without namespaces, the subreaper its children, then its group). Nothing is killed from here:
/// killing the supervisor first would orphan what the subreaper would have caught. It is
/// disarmed once the shell ended: a finished shell's background jobs are left alone.
struct GroupKiller {
    control: Option<RawFd>,
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
    /// Bytes written to `full`; it stops at `full_cap`.
    full_bytes: u64,
    full_cap: u64,
    output_dir: Arc<Mutex<Option<tempfile::TempDir>>>,
}

#[async_trait]
impl TypedTool for BashTool {
    type Input = BashInput;
    const NAME: &'static str = "bash";
    const READ_ONLY: bool = false;

    fn look(&self, arguments: &Value) -> ToolLook {
        let command = string_argument(arguments, "command");
        let title = match command {
            Some(command) => {
                let line = command.lines().next().unwrap_or("");
                let shown = reins_ai::shorten(line, TITLE_COMMAND_CHARS);
                let more = if shown.len() < command.trim_end().len() && !shown.ends_with('…') { " …" } else { "" };
                format!("Run `{shown}`{more}")
            }
            None => "Run a command".to_string(),
        };
        let summary = command.map(|command| format!("$ {command}")).unwrap_or_default();
        ToolLook { title, kind: ToolKind::Execute, locations: Vec::new(), summary }
    }
    fn description(&self) -> String {
        format!(
            "Run a bash command in the working directory; stdout and stderr come together, and a \
             non-zero exit is an error. Output keeps its last {MAX_LINES} lines or {} (the full \
             output is saved to a file the result names). Killed with every process it started after \
             timeout seconds (default {DEFAULT_TIMEOUT_SECS}, at most {}); to keep a server running, \
             background it: `cmd > log 2>&1 &`.{}",
            format_size(MAX_BYTES),
            self.policy.max_timeout_secs,
            self.sandbox_description()
        )
    }

    async fn prepare(&self, input: &BashInput) -> Result<Option<Proposal>, ToolError> {
        if input.command.trim().is_empty() {
            return Err(ToolError::new("command is empty"));
        }
        Ok(Some(Proposal::Command(CommandProposal {
            command: input.command.clone(),
            cwd: self.workspace.cwd(),
            timeout_secs: self.timeout_secs(input.timeout),
        })))
    }

    async fn execute(
        &self,
        input: BashInput,
        proposal: Option<Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        // The gate may have changed the command; what it allowed is what runs.
        let mut proposal = match proposal {
            Some(Proposal::Command(proposal)) => proposal,
            _ => CommandProposal { command: input.command, cwd: self.workspace.cwd(), timeout_secs: 0 },
        };
        // Whatever the gate left there, the maximum holds.
        proposal.timeout_secs = self.timeout_secs(Some(proposal.timeout_secs));
        // In the editor's terminal when it has one (which keeps the policy: see `Terminal`).
        if let Some(terminal) = self.workspace.terminal() {
            return self.run_in_terminal(terminal.as_ref(), &proposal, &cx).await;
        }
        self.run(&proposal, &cx).await
    }
}

impl BashTool {
    /// Runs the command in the workspace's terminal (the editor's), and answers as [`Self::run`]
    /// does: the tail of the output, and why it stopped when it did not exit with 0.
    async fn run_in_terminal(
        &self,
        terminal: &dyn Terminal,
        proposal: &CommandProposal,
        cx: &ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let roots = self.workspace.roots();
        let run = terminal
            .run(cx.tool_call_id, proposal, &self.policy, &roots, &cx.cancel)
            .await
            .map_err(|err| ToolError::new(format!("could not run the command in the editor's terminal: {err}")))?;
        let shown = truncate_tail(&run.output, MAX_LINES, MAX_BYTES);
        let mut text = if shown.kept.trim().is_empty() { "(no output)".to_string() } else { shown.kept.clone() };
        if shown.is_cut() || run.truncated {
            text = format!("[Only the end of the output is shown; the editor's terminal has the rest.]\n{text}");
        }
        let details = serde_json::json!({ "exitCode": run.exit_code, "terminal": true });
        let denial = self.denial_notice(&text, &roots);
        let ending = match (run.timed_out, run.cancelled, run.exit_code, &run.signal) {
            (true, _, _, _) => format!(
                "Command timed out after {} s and was killed, with the processes it started.",
                proposal.timeout_secs
            ),
            (_, true, _, _) => "Command was cancelled and killed.".to_string(),
            (_, _, Some(0), _) => return Ok(ToolOutput::text(text).with_details(details)),
            (_, _, Some(code), _) => format!("Command exited with code {code}"),
            (_, _, None, Some(signal)) => format!("Command was killed by {signal}"),
            (_, _, None, None) => "Command ended without an exit status".to_string(),
        };
        let mut text = with_notice(text, &ending);
        if let Some(notice) = denial {
            text = with_notice(text, &notice);
        }
        Err(ToolError::new(text))
    }

    async fn run(&self, proposal: &CommandProposal, cx: &ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        let roots = self.workspace.roots();
        let repositories = RepositorySnapshot::take(&self.policy.sandbox, &roots);
        let (mut child, mut output_pipe, mut control) =
            spawn(&proposal.command, &proposal.cwd, &self.policy, &roots)
                .map_err(|err| ToolError::new(format!("could not start the command: {err}")))?;
        let mut killer = GroupKiller { control: Some(control.as_raw_fd()) };
        let mut log = OutputLog::new(self.output_dir.clone(), self.policy.max_output_file_bytes);
        let mut buf = vec![0u8; 16 * 1024];
        let mut last_update: Option<Instant> = None;
        let mut interrupted = None;
        let deadline = tokio::time::sleep(Duration::from_secs(proposal.timeout_secs));
        tokio::pin!(deadline);

        // Until the shell exits: read its output, and stop it on timeout or cancellation.
        let mut pipe_open = true;
        let mut shell_status = Box::pin(shell_status(&mut control));
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
                status = &mut shell_status => break status,
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
        drop(shell_status);
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
        // The supervisor leaves at once unless the shell left processes behind: they run on.
        let lingers = interrupted.is_none() && tokio::time::timeout(LINGER_CHECK, child.wait()).await.is_err();
        if lingers {
            let mut lingering = self.lingering.lock().unwrap_or_else(PoisonError::into_inner);
            lingering.retain_mut(|lingering| matches!(lingering.supervisor.try_wait(), Ok(None)));
            lingering.push(Lingering { supervisor: child, _control: control });
            if !held_open {
                text = with_notice(
                    text,
                    "[Processes the command started still run in the background; they end when reins ends.]",
                );
            }
        }
        if held_open && interrupted.is_none() {
            text = with_notice(
                text,
                "[The command exited but a background process it started still holds the output open; \
             its further output is not captured. Redirect a background process's output \
             (`cmd > log 2>&1 &`) to keep it running.]",
            );
        }
        if let Some(repositories) = &repositories
            && let Some(notice) = repositories.notice(&repositories.disarm_new())
        {
            text = with_notice(text, &notice);
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
        let mut text = with_notice(text, &ending);
        if let Some(notice) = self.denial_notice(&text, &roots) {
            text = with_notice(text, &notice);
        }
        Err(ToolError::new(text))
    }
}

/// `text`, a blank line, and `notice`.
fn with_notice(text: String, notice: &str) -> String {
    let mut text = text;
    text.truncate(text.trim_end_matches('\n').len());
    text.push_str("\n\n");
    text.push_str(notice);
    text
}

/// Starts `bash -c command` (or `sh -c` where there is no bash) enclosed, in its own process
/// group, with stdout and stderr on one pipe whose read end is returned, with the command's
/// control socket.
fn spawn(
    command: &str,
    cwd: &Path,
    policy: &ExecPolicy,
    roots: &[PathBuf],
) -> io::Result<(Child, tokio::net::unix::pipe::Receiver, tokio::net::UnixStream)> {
    let (sender, receiver) = tokio::net::unix::pipe::pipe()?;
    let writer = sender.into_blocking_fd()?;
    let (child, control) = match spawn_shell("bash", command, cwd, policy, roots, &writer) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => spawn_shell("sh", command, cwd, policy, roots, &writer)?,
        other => other?,
    };
    // Our copy of the write end goes now, so the pipe ends when the command's processes close it.
    drop(writer);
    control.set_nonblocking(true)?;
    Ok((child, receiver, tokio::net::UnixStream::from_std(control)?))
}

/// The shell's wait status, which the command's init writes on the control socket when the
/// shell ends; a socket closed without it means the command was killed whole.
async fn shell_status(control: &mut tokio::net::UnixStream) -> io::Result<ExitStatus> {
    let mut status = [0u8; 4];
    match control.read_exact(&mut status).await {
        Ok(_) => Ok(ExitStatus::from_raw(i32::from_ne_bytes(status))),
        Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => Ok(ExitStatus::from_raw(nix::libc::SIGKILL)),
        Err(err) => Err(err),
    }
}

/// Starts one shell, enclosed and confined to the policy's sandbox, with only the policy's
/// environment.
fn spawn_shell(
    shell: &str,
    command: &str,
    cwd: &Path,
    policy: &ExecPolicy,
    roots: &[PathBuf],
    writer: &OwnedFd,
) -> io::Result<(Child, std::os::unix::net::UnixStream)> {
    // `Command` holds its copies of the write end until it is dropped at the end of this function.
    let mut child = Command::new(shell);
    child
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer.try_clone()?))
        .stderr(Stdio::from(writer.try_clone()?))
        .process_group(0);
    if let Some(env) = &policy.env {
        child.env_clear().envs(env.iter().map(|(name, value)| (name, value)));
    }
    let control = crate::namespace::enclose(child.as_std_mut(), &policy.sandbox, roots)?;
    Ok((child.spawn()?, control))
}

fn describe_signal(status: ExitStatus) -> String {
    match status.signal().and_then(|number| Signal::try_from(number).ok()) {
        Some(signal) => format!("signal {}", signal.as_str()),
        None => "a signal".to_string(),
    }
}

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(control) = self.control {
            // SAFETY: the socket is open while the killer is armed (the run owns both).
            unsafe { nix::libc::shutdown(control, nix::libc::SHUT_WR) };
        }
    }

    fn disarm(&mut self) {
        self.control = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

impl OutputLog {
    fn new(output_dir: Arc<Mutex<Option<tempfile::TempDir>>>, full_cap: u64) -> Self {
        Self {
            tail: Vec::new(),
            total_bytes: 0,
            newlines: 0,
            full: None,
            full_failed: false,
            full_bytes: 0,
            full_cap,
            output_dir,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.total_bytes += chunk.len();
        self.newlines += chunk.iter().filter(|&&byte| byte == b'\n').count();
        self.tail.extend_from_slice(chunk);
        if self.full.is_some() {
            self.write_full(chunk);
        } else if !self.full_failed && (self.total_bytes > MAX_BYTES || self.newlines >= MAX_LINES) {
            match full_output_file(&self.output_dir) {
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
        let room = self.full_cap.saturating_sub(self.full_bytes);
        let chunk = &chunk[..chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        if chunk.is_empty() {
            return;
        }
        self.full_bytes += chunk.len() as u64;
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
        let cut = self.full_bytes < self.total_bytes as u64;
        let mut full = self.full;
        if let Some(file) = full.as_mut().filter(|_| cut) {
            let marker = format!(
                "\n[reins: the output was cut here, after its first {}; the command wrote {} in all. \
                 Its last lines are in the tool result.]\n",
                format_size(self.full_bytes as usize),
                format_size(self.total_bytes)
            );
            if let Err(err) = file.write_all(marker.as_bytes()) {
                tracing::warn!("bash: writing the full output failed: {err}");
            }
        }
        // The file stays until the tool's directory goes (see `BashTool::output_dir`).
        let full_output = full.and_then(|file| match file.keep() {
            Ok((_, path)) => {
                crate::output_files::keep(path.clone());
                Some(path)
            }
            Err(err) => {
                tracing::warn!("bash: keeping the full output failed: {err}");
                None
            }
        });
        let where_full = match &full_output {
            Some(path) if cut => format!(
                "Full output, cut after its first {}: {}",
                format_size(self.full_bytes as usize),
                path.display()
            ),
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

/// A new file for one command's full output, in the tool's directory (made now if need be).
fn full_output_file(output_dir: &Mutex<Option<tempfile::TempDir>>) -> io::Result<tempfile::NamedTempFile> {
    let mut dir = output_dir.lock().unwrap_or_else(PoisonError::into_inner);
    if dir.is_none() {
        remove_abandoned_output_dirs(&std::env::temp_dir());
        let made = tempfile::Builder::new().prefix(&format!("{OUTPUT_DIR_PREFIX}{}-", std::process::id())).tempdir()?;
        *dir = Some(made);
    }
    let dir = dir.as_ref().map(|dir| dir.path().to_path_buf()).unwrap_or_default();
    tempfile::Builder::new().prefix("bash-").suffix(".log").tempfile_in(dir)
}

/// Removes the output directories that reins processes which are gone (crashed, killed) left in
/// the temporary directory: a long-running reins calls it at start.
pub fn remove_abandoned_output() {
    remove_abandoned_output_dirs(&std::env::temp_dir());
}

/// Removes the output directories that reins processes which are gone (crashed, killed) left
/// in `temp`.
fn remove_abandoned_output_dirs(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(OUTPUT_DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        // Signal 0 only asks whether the process exists; EPERM means it does, as another user's.
        let gone = nix::sys::signal::kill(Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH);
        // Another user's directory cannot be removed from a sticky temporary directory anyway.
        if gone && entry.file_type().is_ok_and(|file_type| file_type.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
