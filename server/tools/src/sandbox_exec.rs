//! The command line of `reins sandbox-exec`, which runs a command enclosed as `bash` runs its
//! own when another program starts it (an ACP client's terminal). Built here, beside the
//! sandbox it describes, by whoever hands a command to such a program; the `reins` binary parses
//! it (`sandbox_cmd.rs`).

use std::path::PathBuf;

use crate::ExecPolicy;

/// The arguments that make `reins sandbox-exec` run `command` under `policy`, for `roots`.
pub fn sandbox_exec_args(policy: &ExecPolicy, roots: &[PathBuf], command: &[&str]) -> Vec<String> {
    let sandbox = &policy.sandbox;
    let mut args = vec!["sandbox-exec".to_string(), "--mode".to_string(), sandbox.mode.as_str().to_string()];
    if sandbox.network {
        args.push("--network".to_string());
    }
    let mut paths = |flag: &str, paths: &[PathBuf]| {
        for path in paths {
            args.push(format!("--{flag}={}", path.display()));
        }
    };
    paths("root", roots);
    paths("writable", &sandbox.writable);
    paths("deny-read", &sandbox.deny_read);
    paths("read-only", &sandbox.read_only);
    // Names only: the values are the terminal's own.
    if let Some(env) = &policy.env {
        args.extend(env.iter().map(|(name, _)| format!("--keep={}", name.to_string_lossy())));
    }
    args.push("--".to_string());
    args.extend(command.iter().map(|word| word.to_string()));
    args
}
