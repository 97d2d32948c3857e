//! OpenAI's Codex CLI as a peer: installed from npm by tests/bench/install-codex.sh, its native
//! binary pointed at the scripted server (which speaks the Responses API, the only one Codex
//! speaks) through a throwaway `CODEX_HOME`, and measured the way reins and pi are — same server,
//! same workspace, same prompts, a 100-turn tool loop.
//!
//! Codex reads files with its shell tool, so its loop calls `exec_command` with `sed -n 'Np'`
//! where reins and pi call `read` with an offset: each is its own way of reading one line. It runs
//! as `codex exec` with approvals and its sandbox off (reins runs with `--yes`, pi's print mode
//! asks nothing). The features that reach the network at startup (plugins, update checks,
//! analytics) are off, as `PI_OFFLINE=1` keeps pi off it; everything else is as shipped.

use std::path::{Path, PathBuf};
use std::process::Output;

use scripted_llm::{Reply, ScriptedServer};
use serde_json::json;

use crate::LOOP_TURNS;
use crate::peer::{Peer, run_install};

/// The Codex the bench compares with.
pub const CODEX_VERSION: &str = "0.171.0";
/// The provider and model declared in the throwaway `config.toml`.
const PROVIDER: &str = "scripted";
const MODEL: &str = "scripted-model";
/// The variable the provider's key is read from; the scripted server ignores the key.
const KEY_VARIABLE: &str = "SCRIPTED_BENCH_KEY";

/// An installed Codex and the home it runs in.
pub struct Codex {
    /// The native binary of the npm install.
    executable: PathBuf,
    /// `HOME` of every run, with `CODEX_HOME` (`codex/`) inside; removed on drop. It is made in
    /// the bench's cache, not in /tmp: Codex declines to set up its helper commands under a
    /// temporary directory, and the figures should be those of a normal install.
    home: tempfile::TempDir,
}

/// The tool loop in Codex's terms: `LOOP_TURNS` shell calls, each printing one line of
/// `lines.txt`, then a final answer.
fn loop_script() -> Vec<Reply> {
    let mut script: Vec<Reply> = (1..=LOOP_TURNS)
        .map(|line| {
            let command = format!("sed -n '{line}p' lines.txt");
            Reply::tool_call(format!("call_{line}"), "exec_command", json!({ "cmd": command }))
        })
        .collect();
    script.push(Reply::text("Done."));
    script
}

impl Codex {
    /// Installs Codex with tests/bench/install-codex.sh (a no-op when it is in the cache).
    pub async fn install() -> Result<Codex, String> {
        if std::env::var_os("BENCH_NO_CODEX").is_some() {
            return Err("BENCH_NO_CODEX is set".into());
        }
        let printed = run_install("install-codex.sh", &format!("Codex {CODEX_VERSION}"), CODEX_VERSION).await?;
        let Some(executable) = printed.lines().next().filter(|line| !line.is_empty()) else {
            return Err(format!("install-codex.sh printed {printed:?}, not Codex's path"));
        };
        let executable = PathBuf::from(executable);
        // The binary's directory is …/reins-bench/codex-VERSION/node_modules/@openai/…; the home
        // goes beside the install.
        let cache = executable
            .ancestors()
            .find(|dir| dir.file_name().is_some_and(|name| name == "node_modules"))
            .and_then(Path::parent)
            .ok_or_else(|| format!("{} is not inside node_modules", executable.display()))?;
        let home = tempfile::Builder::new()
            .prefix("home-")
            .tempdir_in(cache)
            .map_err(|err| format!("cannot make Codex's home: {err}"))?;
        std::fs::create_dir(home.path().join("codex")).map_err(|err| format!("cannot make CODEX_HOME: {err}"))?;
        Ok(Codex { executable, home })
    }

    fn codex_home(&self) -> PathBuf {
        self.home.path().join("codex")
    }
}

impl Peer for Codex {
    const NAME: &'static str = "Codex";

    fn command(&self, workspace: &Path, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(&self.executable);
        command
            .args(args)
            .current_dir(workspace)
            .env("HOME", self.home.path())
            .env("CODEX_HOME", self.codex_home())
            .env(KEY_VARIABLE, "scripted-bench-key");
        command
    }

    fn configure(&self, server: &ScriptedServer) -> Result<(), String> {
        let config = format!(
            "model = \"{MODEL}\"\nmodel_provider = \"{PROVIDER}\"\ncheck_for_update_on_startup = false\n\n\
             [analytics]\nenabled = false\n\n\
             [model_providers.{PROVIDER}]\nname = \"{PROVIDER}\"\nbase_url = \"{}\"\n\
             env_key = \"{KEY_VARIABLE}\"\nwire_api = \"responses\"\n",
            server.base_url()
        );
        let path = self.codex_home().join("config.toml");
        std::fs::write(&path, config).map_err(|err| format!("cannot write {}: {err}", path.display()))
    }

    /// `codex exec` with approvals and its sandbox off, and the features that reach the network
    /// at startup off.
    fn prompt_args<'a>(&self, prompt: &'a str) -> Vec<&'a str> {
        let mut args = vec!["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"];
        for feature in ["plugins", "remote_plugin", "in_app_updates"] {
            args.extend(["--disable", feature]);
        }
        args.push(prompt);
        args
    }

    fn loop_script(&self) -> Vec<Reply> {
        loop_script()
    }

    fn check_version(&self, output: &Output) -> Result<(), String> {
        let version = String::from_utf8_lossy(&output.stdout);
        if version.trim() != format!("codex-cli {CODEX_VERSION}") {
            return Err(format!("`codex --version` printed {version:?}, expected codex-cli {CODEX_VERSION}"));
        }
        Ok(())
    }

    fn binary_bytes(&self) -> Option<u64> {
        std::fs::metadata(&self.executable).map(|meta| meta.len()).ok()
    }
}
