//! The command line of `reins sandbox-exec`, which runs a command enclosed as `bash` runs its
//! own when another program starts it (an ACP client's terminal). Built here, beside the
//! sandbox it describes, by whoever hands a command to such a program; the `reins` binary parses
//! it (`sandbox_cmd.rs`).
//!
//! The policy travels in one environment variable rather than as arguments: a client shows the
//! command and arguments it is asked to run (acpx asks "Allow terminal command" with them), and
//! that must be the user's command, not sixty `--deny-read=` flags. The value is the policy
//! itself, not a file naming it: nothing lies on disk between reins writing it and the terminal
//! reading it for a command of the same user to change.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::{ExecPolicy, Sandbox, SandboxMode};
use serde::{Deserialize, Serialize};

/// The variable `reins sandbox-exec` reads its policy from when no `--mode` is given.
pub const POLICY_VAR: &str = "REINS_SANDBOX_POLICY";

/// What `reins sandbox-exec` enforces, as its flags say it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxPolicy {
    pub mode: String,
    #[serde(default)]
    pub network: bool,
    #[serde(default)]
    pub roots: Vec<PathBuf>,
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    #[serde(default)]
    pub deny_read: Vec<PathBuf>,
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    /// Variables of the terminal's environment to keep (all others go): names only, the values
    /// are the terminal's own.
    #[serde(default)]
    pub keep: Vec<String>,
}

/// The arguments and the one variable that make `reins sandbox-exec` run `command` under
/// `policy`, for `roots`: the arguments are the command, so a client shows it as it is.
pub fn sandbox_exec_invocation(
    policy: &ExecPolicy,
    roots: &[PathBuf],
    command: &[&str],
) -> (Vec<String>, (String, String)) {
    let mut args = vec!["sandbox-exec".to_string(), "--".to_string()];
    args.extend(command.iter().map(|word| word.to_string()));
    (args, (POLICY_VAR.to_string(), SandboxPolicy::new(policy, roots).to_value()))
}

impl SandboxPolicy {
    /// The policy of a tool's exec policy, for `roots`.
    pub fn new(policy: &ExecPolicy, roots: &[PathBuf]) -> Self {
        let sandbox = &policy.sandbox;
        let keep = policy.env.iter().flatten().map(|(name, _)| name.to_string_lossy().into_owned()).collect();
        SandboxPolicy {
            mode: sandbox.mode.as_str().to_string(),
            network: sandbox.network,
            roots: roots.to_vec(),
            writable: sandbox.writable.clone(),
            deny_read: sandbox.deny_read.clone(),
            read_only: sandbox.read_only.clone(),
            keep,
        }
    }

    /// The policy in [`POLICY_VAR`]'s value, or what is wrong with it.
    pub fn parse(value: &str) -> Result<Self, String> {
        serde_json::from_str(value).map_err(|err| format!("{POLICY_VAR} is not a sandbox policy: {err}"))
    }

    pub fn to_value(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The sandbox it describes, its roots, and the variables to keep.
    pub fn into_parts(self) -> Result<(Sandbox, Vec<PathBuf>, Vec<OsString>), String> {
        let mode = SandboxMode::parse(&self.mode).ok_or_else(|| format!("unknown mode {:?}", self.mode))?;
        let sandbox = Sandbox {
            mode,
            network: self.network,
            writable: self.writable,
            deny_read: self.deny_read,
            read_only: self.read_only,
        };
        Ok((sandbox, self.roots, self.keep.into_iter().map(OsString::from).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_goes_through_its_variable_whole_and_a_wrong_one_is_refused() {
        let policy = SandboxPolicy {
            mode: "workspace-write".into(),
            network: false,
            roots: vec!["/w".into()],
            writable: vec!["/tmp".into()],
            deny_read: vec!["/home/u/.ssh".into()],
            read_only: vec!["/w/.git".into()],
            keep: vec!["PATH".into()],
        };
        assert_eq!(SandboxPolicy::parse(&policy.to_value()), Ok(policy.clone()));
        let (sandbox, roots, keep) = policy.into_parts().unwrap();
        assert_eq!(
            (sandbox.mode.as_str(), roots, keep),
            ("workspace-write", vec![PathBuf::from("/w")], vec![OsString::from("PATH")])
        );
        assert!(SandboxPolicy::parse(r#"{"mode": "off", "denyRaed": []}"#).unwrap_err().contains("unknown field"));
        let unknown = SandboxPolicy::parse(r#"{"mode": "wide-open"}"#).unwrap().into_parts().unwrap_err();
        assert_eq!(unknown, r#"unknown mode "wide-open""#);
    }
}
