//! A terminal the user watches, where `bash` runs its commands instead of in a pipe of its own:
//! an editor's, which the workspace offers ([`crate::Workspace::terminal`]) — an ACP client's
//! `terminal/*`, for instance. The terminal is handed the command's [`ExecPolicy`] and must keep
//! it: the environment without secrets and the sandbox, which the process the terminal starts
//! runs the command in ([`run_enclosed`](crate::run_enclosed)).

use async_trait::async_trait;
use std::path::PathBuf;

use reins_agent::CommandProposal;
use tokio_util::sync::CancellationToken;

/// How a command run in a terminal ended, and what it printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TerminalRun {
    /// The output as the terminal kept it (its tail, when it had to cut).
    pub output: String,
    /// The terminal dropped the start of the output.
    pub truncated: bool,
    pub exit_code: Option<u32>,
    /// The signal that ended it, by name.
    pub signal: Option<String>,
    pub timed_out: bool,
    pub cancelled: bool,
}

#[async_trait]
pub trait Terminal: Send + Sync {
    /// Runs `command` (`bash -c`, in its `cwd`, under `policy` with `roots` as the workspace) for
    /// the tool call `tool_call_id` until it exits, its timeout passes or `cancel` fires, killing
    /// it in the last two cases. `Err` says why the terminal could not run it at all.
    async fn run(
        &self,
        tool_call_id: &str,
        command: &CommandProposal,
        policy: &crate::ExecPolicy,
        roots: &[PathBuf],
        cancel: &CancellationToken,
    ) -> Result<TerminalRun, String>;
}
