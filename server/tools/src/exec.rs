//! How tools start processes: the environment a command gets, the sandbox it runs in, and its
//! limits. The harness decides them from the settings and hands them down as one value, so that
//! every way of running a command (this crate's `bash`, an editor's terminal) obeys the same one.

use std::ffi::OsString;
use std::path::PathBuf;

/// A command's timeout when the call names none.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// The longest timeout a call may ask for, unless configured otherwise.
pub const DEFAULT_MAX_TIMEOUT_SECS: u64 = 1800;
/// How much of a command's output is kept in its full-output file.
pub const DEFAULT_MAX_OUTPUT_FILE_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct ExecPolicy {
    /// A command's whole environment. `None` passes this process's own environment on unfiltered:
    /// for tests only; the harness always sets it (see `reins_harness::Settings::tool_env`).
    pub env: Option<Vec<(OsString, OsString)>>,
    pub sandbox: Sandbox,
    /// A call's timeout is clamped to this.
    pub max_timeout_secs: u64,
    /// The full-output file of a long command stops growing here; the result says where it was cut.
    pub max_output_file_bytes: u64,
}

/// What a command may touch. Enforced by the kernel in the command's own process, before it
/// starts: namespaces of its own (`namespace.rs`), then Landlock and seccomp (`sandbox.rs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sandbox {
    pub mode: SandboxMode,
    /// Whether commands may open network connections (IP sockets).
    pub network: bool,
    /// Directories writable besides the workspace roots and the temporary directory
    /// (`workspace-write` only), such as `~/.cargo`.
    pub writable: Vec<PathBuf>,
    /// Files and directories a command may not read (nor write): `~/.ssh`, reins's auth file…
    pub deny_read: Vec<PathBuf>,
    /// Files and directories that stay read-only inside the writable ones, besides each root's
    /// `.git`, `.mcp.json` and `.reins/`: reins's own configuration (`trusted-workspaces`…).
    /// Held where commands get namespaces of their own.
    pub read_only: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SandboxMode {
    /// Commands run with the user's full rights.
    #[default]
    Off,
    /// Commands write only under the workspace roots, the temporary directory and
    /// [`Sandbox::writable`].
    WorkspaceWrite,
    /// Commands write nowhere but the temporary directory.
    ReadOnly,
}

impl Default for ExecPolicy {
    fn default() -> Self {
        Self {
            env: None,
            sandbox: Sandbox::default(),
            max_timeout_secs: DEFAULT_MAX_TIMEOUT_SECS,
            max_output_file_bytes: DEFAULT_MAX_OUTPUT_FILE_BYTES,
        }
    }
}

impl SandboxMode {
    /// The name used in settings and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [SandboxMode::Off, SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly]
            .into_iter()
            .find(|mode| mode.as_str() == name)
    }
}

/// Names of variables that hold secrets by convention (matched case-insensitively anywhere in
/// the name): `OPENAI_API_KEY`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `PGPASSWORD`…
const SECRET_NAME_PARTS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// The environment for a tool's process: `vars` without secrets. A variable is left out when its
/// name is in `never` (the key variables reins itself reads), when its value is one of
/// `secret_values` (the keys reins holds, whatever variable carries them), or when its name looks
/// like a secret ([`SECRET_NAME_PARTS`]) and no glob of `pass` (`GITHUB_TOKEN`, `NPM_*`) names it.
/// `never` and `secret_values` win over `pass`. MCP servers are started with this too.
pub fn tool_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    never: &[String],
    secret_values: &[&str],
    pass: &[String],
) -> Vec<(OsString, OsString)> {
    let passes = |name: &str| pass.iter().any(|glob| glob_match(glob, name));
    let mut kept: Vec<(OsString, OsString)> = vars
        .into_iter()
        .filter(|(name, value)| {
            let name = name.to_string_lossy();
            let value = value.to_string_lossy();
            let looks_secret = looks_secret(&name);
            !never.iter().any(|never| *never == name)
                && !secret_values.iter().any(|secret| !secret.is_empty() && value.contains(secret))
                && (!looks_secret || passes(&name))
        })
        .collect();
    kept.sort();
    kept
}

/// Whether a variable's name says it holds a secret (`*KEY*`, `*TOKEN*`, `*SECRET*`, …).
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
}

/// `*` matches any run of characters; everything else matches itself.
fn glob_match(glob: &str, name: &str) -> bool {
    match glob.split_once('*') {
        None => glob == name,
        Some((prefix, rest)) => {
            let Some(tail) = name.strip_prefix(prefix) else { return false };
            (0..=tail.len()).filter(|&at| tail.is_char_boundary(at)).any(|at| glob_match(rest, &tail[at..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)], never: &[&str], secrets: &[&str], pass: &[&str]) -> Vec<String> {
        let vars = vars.iter().map(|(name, value)| (OsString::from(name), OsString::from(value)));
        let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        tool_env(vars, &owned(never), secrets, &owned(pass))
            .into_iter()
            .map(|(name, value)| format!("{}={}", name.to_string_lossy(), value.to_string_lossy()))
            .collect()
    }

    #[test]
    fn secrets_are_left_out_and_the_rest_passes() {
        let vars = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("OPENAI_API_KEY", "sk-1"),
            ("GITHUB_TOKEN", "ghp"),
            ("aws_secret_access_key", "a"),
            ("PGPASSWORD", "p"),
            ("MY_LLM", "sk-1"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
        ];
        assert_eq!(
            env(&vars, &["OPENAI_API_KEY"], &["sk-1"], &[]),
            ["HOME=/home/u", "PATH=/usr/bin", "SSH_AUTH_SOCK=/tmp/agent"]
        );
    }

    #[test]
    fn the_pass_list_lets_conventional_names_through_but_never_reins_keys() {
        let vars = [("GITHUB_TOKEN", "ghp"), ("NPM_TOKEN", "n"), ("OPENAI_API_KEY", "sk-1"), ("OTHER", "x sk-1 y")];
        assert_eq!(
            env(&vars, &["OPENAI_API_KEY"], &["sk-1"], &["GITHUB_TOKEN", "NPM_*", "OPENAI_API_KEY", "OTHER"]),
            ["GITHUB_TOKEN=ghp", "NPM_TOKEN=n"]
        );
    }

    #[test]
    fn globs() {
        for (glob, name, expected) in [
            ("NPM_*", "NPM_TOKEN", true),
            ("NPM_*", "XNPM_TOKEN", false),
            ("*_TOKEN", "GH_TOKEN", true),
            ("A", "AB", false),
            ("*", "", true),
        ] {
            assert_eq!(glob_match(glob, name), expected, "{glob} {name}");
        }
    }
}
