//! `reins sandbox-exec` (hidden): runs a command under a sandbox and an environment that another
//! program started it with — an ACP client's terminal, which runs what `bash` asks for in the
//! user's sight. It keeps only the named variables of its environment and runs the command
//! enclosed as `bash` runs its own (namespaces, Landlock and seccomp where they apply), until it
//! ends; what the command left in the background ends with it. The arguments are what
//! `reins_tools::sandbox_exec_args` makes of a tool's exec policy.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitCode;

use reins_tools::{Sandbox, SandboxMode};

/// The arguments of `reins sandbox-exec` (see `crate::cli::Command::SandboxExec`).
#[derive(Debug, clap::Args)]
pub struct SandboxExecArgs {
    /// off, workspace-write or read-only
    #[arg(long)]
    pub mode: String,
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
    let Some(mode) = SandboxMode::parse(&args.mode) else {
        eprintln!("reins: sandbox-exec: unknown mode {:?}", args.mode);
        return ExitCode::from(2);
    };
    let sandbox = Sandbox {
        mode,
        network: args.network,
        writable: args.writable,
        deny_read: args.deny_read,
        read_only: args.read_only,
    };
    let env: Vec<(OsString, OsString)> = std::env::vars_os().filter(|(name, _)| args.keep.contains(name)).collect();
    let Some((program, rest)) = args.command.split_first() else { return ExitCode::from(2) };
    match reins_tools::run_enclosed(&sandbox, &args.roots, program, rest, &env) {
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;
    use reins_tools::{ExecPolicy, Sandbox, SandboxMode};

    use crate::cli::{Cli, Command};

    #[test]
    fn the_command_line_a_terminal_runs_parses_back_into_the_policy() {
        let policy = ExecPolicy {
            env: Some(vec![("PATH".into(), "/secret/bin".into())]),
            sandbox: Sandbox {
                mode: SandboxMode::WorkspaceWrite,
                network: true,
                writable: vec![PathBuf::from("/home/u/.cargo")],
                deny_read: vec![PathBuf::from("/home/u/.ssh")],
                read_only: vec![PathBuf::from("/w/.reins")],
            },
            ..ExecPolicy::default()
        };
        let args = reins_tools::sandbox_exec_args(&policy, &[PathBuf::from("/w")], &["bash", "-c", "ls --all"]);
        assert!(!args.iter().any(|arg| arg.contains("/secret/bin")), "a variable's value is the terminal's own");
        let Ok(Cli { command: Command::SandboxExec(parsed) }) =
            Cli::try_parse_from(["reins"].into_iter().chain(args.iter().map(String::as_str)))
        else {
            panic!("sandbox-exec does not parse {args:?}");
        };
        assert_eq!(SandboxMode::parse(&parsed.mode), Some(SandboxMode::WorkspaceWrite));
        assert!(parsed.network);
        assert_eq!(parsed.roots, [PathBuf::from("/w")]);
        assert_eq!(parsed.writable, policy.sandbox.writable);
        assert_eq!(parsed.deny_read, policy.sandbox.deny_read);
        assert_eq!(parsed.read_only, policy.sandbox.read_only);
        assert_eq!(parsed.keep, ["PATH"]);
        assert_eq!(parsed.command, ["bash", "-c", "ls --all"]);
    }
}
