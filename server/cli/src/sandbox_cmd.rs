//! `reins sandbox-exec` (hidden): runs a command under a sandbox and an environment that another
//! program started it with — an ACP client's terminal, which runs what `bash` asks for in the
//! user's sight. It keeps only the named variables of its environment and runs the command
//! enclosed as `bash` runs its own (namespaces, Landlock and seccomp where they apply), until it
//! ends; what the command left in the background ends with it. Its policy is what
//! `reins_tools::sandbox_exec_invocation` makes of a tool's exec policy (one variable, [`POLICY_VAR`]), or the flags below.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitCode;

use reins_tools::{POLICY_VAR, Sandbox, SandboxMode, SandboxPolicy};

/// The arguments of `reins sandbox-exec` (see `crate::cli::Command::SandboxExec`).
#[derive(Debug, clap::Args)]
pub struct SandboxExecArgs {
    /// off, workspace-write or read-only; without it, the whole policy comes from the
    /// REINS_SANDBOX_POLICY variable (see `sandbox_policy`)
    #[arg(long)]
    pub mode: Option<String>,
    /// Allow network connections
    #[arg(long)]
    pub network: bool,
    /// A workspace root (writable in workspace-write)
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// A directory writable besides the roots
    #[arg(long, value_name = "DIR")]
    pub writable: Vec<PathBuf>,
    /// A path the command may not read
    #[arg(long, value_name = "PATH")]
    pub deny_read: Vec<PathBuf>,
    /// A path that stays read-only inside the writable directories
    #[arg(long, value_name = "PATH")]
    pub read_only: Vec<PathBuf>,
    /// A variable of the environment to keep (all others go)
    #[arg(long, value_name = "NAME")]
    pub keep: Vec<OsString>,
    /// The command and its arguments, after `--`
    #[arg(last = true, required = true)]
    pub command: Vec<OsString>,
}

pub fn main(args: SandboxExecArgs) -> ExitCode {
    let (sandbox, roots, keep) = match policy(&args) {
        Ok(policy) => policy,
        Err(message) => {
            eprintln!("reins: sandbox-exec: {message}");
            return ExitCode::from(2);
        }
    };
    let env: Vec<(OsString, OsString)> = std::env::vars_os().filter(|(name, _)| keep.contains(name)).collect();
    let Some((program, rest)) = args.command.split_first() else { return ExitCode::from(2) };
    match reins_tools::run_enclosed(&sandbox, &roots, program, rest, &env) {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            (None, Some(signal)) => ExitCode::from(u8::try_from(128 + signal).unwrap_or(1)),
            (None, None) => ExitCode::from(1),
        },
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("reins: sandbox-exec: cannot run {}: {err}", program.to_string_lossy());
            ExitCode::from(127)
        }
        Err(err) => {
            eprintln!("reins: sandbox-exec: cannot run {} sandboxed: {err}", program.to_string_lossy());
            ExitCode::from(126)
        }
    }
}

/// The sandbox, roots and variables to keep: from the flags when `--mode` is given, else from
/// [`POLICY_VAR`]; with neither, nothing runs.
fn policy(args: &SandboxExecArgs) -> Result<(Sandbox, Vec<PathBuf>, Vec<OsString>), String> {
    let Some(mode) = &args.mode else {
        let value = std::env::var(POLICY_VAR)
            .map_err(|_| format!("no sandbox policy: give --mode and its flags, or {POLICY_VAR}"))?;
        return SandboxPolicy::parse(&value)?.into_parts();
    };
    let mode = SandboxMode::parse(mode).ok_or_else(|| format!("unknown mode {mode:?}"))?;
    let sandbox = Sandbox {
        mode,
        network: args.network,
        writable: args.writable.clone(),
        deny_read: args.deny_read.clone(),
        read_only: args.read_only.clone(),
    };
    Ok((sandbox, args.roots.clone(), args.keep.clone()))
}
