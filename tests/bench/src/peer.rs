//! The pi coding agent as a peer: installed by tests/pi-interop/install.sh (the install the
//! interop test uses: npm into a cache dir, Node 22 from npm where pi 1.6 needs it), pointed at the
//! scripted server through a throwaway agent dir, and measured the way reins is — same server,
//! same workspace, same prompts, same 100-turn tool loop.
//!
//! pi is run in print mode (`pi -p`), which runs tools without asking. Its config, sessions and
//! `HOME` live in a temp dir, so nothing touches the real home; `PI_OFFLINE=1` keeps it off the
//! network at startup. Its other defaults (sessions saved, context files and skills discovered)
//! are kept: the figures are what `pi -p` costs as shipped.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use serde_json::json;

use crate::{Figures, LOOP_TURNS, median_of, peak_resident_of, tool_loop_script};

/// The pi the bench compares with first (the current one), and the one before it.
pub const PI_VERSIONS: [&str; 2] = ["1.6.0", "0.73.1"];
/// The provider and model declared in the throwaway `models.json`.
const PROVIDER: &str = "scripted";
const MODEL: &str = "scripted-model";
/// A peer's run that takes longer than this is stuck, not slow.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// npm may have to download ~100 packages (and Node 22) on the first run.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(900);

/// An installed pi and the sandbox it runs in.
pub struct Pi {
    pub version: &'static str,
    /// `node_modules/.bin/pi` of the cached install (a `#!/usr/bin/env node` script).
    executable: PathBuf,
    /// The directory of the node that runs it, first on its `PATH`.
    node_dir: PathBuf,
    /// `HOME` and `PI_CODING_AGENT_DIR` (`agent/`) of every run; removed on drop.
    sandbox: tempfile::TempDir,
}

/// A peer agent, measured as reins is: same server, same workspace, same prompts, a 100-turn tool
/// loop in its own terms.
pub trait Peer {
    /// Its name in the bench's messages.
    const NAME: &'static str;
    /// The peer run in `workspace` with `args`, in its throwaway home.
    fn command(&self, workspace: &Path, args: &[&str]) -> std::process::Command;
    /// Points the peer at `server` (each server has its own port).
    fn configure(&self, server: &ScriptedServer) -> Result<(), String>;
    /// The arguments that answer `prompt` without asking anything.
    fn prompt_args<'a>(&self, prompt: &'a str) -> Vec<&'a str>;
    /// The tool loop's script: `LOOP_TURNS` calls that each read one line of `lines.txt`, then
    /// "Done.".
    fn loop_script(&self) -> Vec<Reply>;
    /// `Err` unless `--version` printed the version that was installed.
    fn check_version(&self, output: &Output) -> Result<(), String>;
    /// The size of its binary, when it is one file.
    fn binary_bytes(&self) -> Option<u64>;
}

/// Measures an installed peer; `Err` says why it could not be measured.
pub async fn measure<P: Peer>(peer: &P, workspace: &Path) -> Result<Figures, String> {
    // Timed samples cannot return errors through `median_of`; the first one is kept here.
    let failure = RefCell::new(None);
    let keep = |sample: Result<Duration, String>| match sample {
        Ok(elapsed) => elapsed,
        Err(why) => {
            failure.borrow_mut().get_or_insert(why);
            Duration::ZERO
        }
    };
    let check = || failure.borrow_mut().take().map_or(Ok(()), Err);

    let startup = median_of(11, || async { keep(time_version(peer, workspace).await) }).await;
    check()?;
    let one_turn = median_of(7, || async {
        keep(time_prompt(peer, workspace, vec![Reply::text("Hello.")], "say hello", "Hello.").await)
    })
    .await;
    check()?;
    let loop_time = median_of(5, || async {
        keep(time_prompt(peer, workspace, peer.loop_script(), "read the file line by line", "Done.").await)
    })
    .await;
    check()?;
    let per_turn_overhead = loop_time.saturating_sub(one_turn) / LOOP_TURNS as u32;

    let server = ScriptedServer::start(peer.loop_script()).await;
    peer.configure(&server)?;
    let peak = peak_resident_of(&peer.command(workspace, &peer.prompt_args("read the file line by line")))
        .await
        .map_err(|why| format!("{} peak RSS: {why}", P::NAME))?;
    all_replies_played(P::NAME, &server)?;

    Ok(Figures {
        startup,
        one_turn,
        per_turn_overhead,
        peak_rss_kib: Some(peak.parts.total_kib),
        turn: Some(peak.parts),
        loop_cpu: Some(peak.cpu()),
        idle_lsp: None,
        binary_bytes: peer.binary_bytes(),
        overhead_floor: None,
    })
}

async fn time_version<P: Peer>(peer: &P, workspace: &Path) -> Result<Duration, String> {
    let (elapsed, output) = run_timed(P::NAME, peer.command(workspace, &["--version"])).await?;
    peer.check_version(&output)?;
    Ok(elapsed)
}

/// One run of `prompt` against a fresh server playing `script`; checks that every reply was
/// played and that the peer printed `final_answer`, so a run that stopped early cannot look fast.
async fn time_prompt<P: Peer>(
    peer: &P,
    workspace: &Path,
    script: Vec<Reply>,
    prompt: &str,
    final_answer: &str,
) -> Result<Duration, String> {
    let server = ScriptedServer::start(script).await;
    peer.configure(&server)?;
    let (elapsed, output) = run_timed(P::NAME, peer.command(workspace, &peer.prompt_args(prompt))).await?;
    all_replies_played(P::NAME, &server)?;
    let printed = String::from_utf8_lossy(&output.stdout);
    if printed.trim() != final_answer {
        return Err(format!("{} printed {printed:?}, expected {final_answer:?}", P::NAME));
    }
    Ok(elapsed)
}

impl Pi {
    /// Installs `version` with tests/pi-interop/install.sh (a no-op when it is in the cache).
    pub async fn install(version: &'static str) -> Result<Pi, String> {
        if std::env::var_os("BENCH_NO_PI").is_some() {
            return Err("BENCH_NO_PI is set".into());
        }
        let printed = run_install("../pi-interop/install.sh", &format!("pi {version}"), version).await?;
        let mut lines = printed.lines();
        let (Some(executable), Some(node_dir)) = (lines.next(), lines.next()) else {
            return Err(format!("install.sh printed {printed:?}, not pi's path and node's"));
        };
        let sandbox = tempfile::tempdir().map_err(|err| format!("cannot make pi's temp dir: {err}"))?;
        std::fs::create_dir(sandbox.path().join("agent"))
            .map_err(|err| format!("cannot make pi's agent dir: {err}"))?;
        Ok(Pi { version, executable: executable.into(), node_dir: node_dir.into(), sandbox })
    }

    /// pi with its sandboxed environment, run in `workspace` (where its tools resolve paths).
    pub fn command(&self, workspace: &Path, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(&self.executable);
        let path = std::env::var_os("PATH").unwrap_or_default();
        let path = std::env::join_paths(std::iter::once(self.node_dir.clone()).chain(std::env::split_paths(&path)))
            .unwrap_or_default();
        command
            .args(args)
            .current_dir(workspace)
            .env("PATH", path)
            .env("HOME", self.sandbox.path())
            .env("PI_CODING_AGENT_DIR", self.agent_dir())
            .env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("PI_TELEMETRY", "0");
        command
    }

    fn agent_dir(&self) -> PathBuf {
        self.sandbox.path().join("agent")
    }

    /// Points pi's `scripted` provider at `server` (each server has its own port).
    pub fn configure(&self, server: &ScriptedServer) -> Result<(), String> {
        self.configure_api(server.base_url(), "openai-completions", MODEL, false)
    }

    /// Points pi's `scripted` provider at `base_url`, speaking `api` (`openai-completions` or
    /// `anthropic-messages`), with one model `model`.
    pub fn configure_api(&self, base_url: String, api: &str, model: &str, reasoning: bool) -> Result<(), String> {
        let models = json!({
            "providers": {
                PROVIDER: {
                    "baseUrl": base_url,
                    "api": api,
                    // pi wants a key for every provider; the scripted server ignores it.
                    "apiKey": "scripted-bench-key",
                    "models": [{ "id": model, "reasoning": reasoning }],
                }
            }
        });
        let path = self.agent_dir().join("models.json");
        std::fs::write(&path, models.to_string()).map_err(|err| format!("cannot write {}: {err}", path.display()))
    }
}

impl Peer for Pi {
    const NAME: &'static str = "pi";

    fn command(&self, workspace: &Path, args: &[&str]) -> std::process::Command {
        Pi::command(self, workspace, args)
    }

    fn configure(&self, server: &ScriptedServer) -> Result<(), String> {
        Pi::configure(self, server)
    }

    fn prompt_args<'a>(&self, prompt: &'a str) -> Vec<&'a str> {
        print_args(prompt).to_vec()
    }

    fn loop_script(&self) -> Vec<Reply> {
        tool_loop_script()
    }

    fn check_version(&self, output: &Output) -> Result<(), String> {
        // pi 0.73 prints its version on stderr.
        let version = [output.stdout.as_slice(), output.stderr.as_slice()].concat();
        let version = String::from_utf8_lossy(&version);
        if version.trim() != self.version {
            return Err(format!("`pi --version` printed {version:?}, expected {}", self.version));
        }
        Ok(())
    }

    fn binary_bytes(&self) -> Option<u64> {
        None
    }
}

pub fn print_args(prompt: &str) -> [&str; 6] {
    ["--provider", PROVIDER, "--model", MODEL, "-p", prompt]
}

/// Wall time from spawn to exit of the `peer`'s `command`; `Err` (with its stderr) when it fails
/// or hangs.
pub async fn run_timed(peer: &str, command: std::process::Command) -> Result<(Duration, Output), String> {
    let mut command = tokio::process::Command::from(command);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let start = Instant::now();
    let output = tokio::time::timeout(RUN_TIMEOUT, command.output())
        .await
        .map_err(|_| format!("{peer} did not finish within {RUN_TIMEOUT:?}"))?
        .map_err(|err| format!("cannot run {peer}: {err}"))?;
    let elapsed = start.elapsed();
    if !output.status.success() {
        return Err(format!("{peer} failed ({}): {}", output.status, tail(&output.stderr)));
    }
    Ok((elapsed, output))
}

pub fn all_replies_played(peer: &str, server: &ScriptedServer) -> Result<(), String> {
    match server.remaining() {
        0 => Ok(()),
        left => Err(format!("{peer} stopped with {left} scripted replies unplayed")),
    }
}

/// Runs the install script at `script` (relative to this crate) for `version` of `peer`, and
/// returns what it printed on stdout.
pub async fn run_install(script: &str, peer: &str, version: &str) -> Result<String, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
    let install = tokio::process::Command::new("bash")
        .arg(&script)
        .arg(version)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(INSTALL_TIMEOUT, install)
        .await
        .map_err(|_| format!("installing {peer} took longer than {INSTALL_TIMEOUT:?}"))?
        .map_err(|err| format!("cannot run {}: {err}", script.display()))?;
    if !output.status.success() {
        return Err(format!("installing {peer} failed: {}", tail(&output.stderr)));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The last lines of a process's output, enough to say what went wrong.
pub fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}
