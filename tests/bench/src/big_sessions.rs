//! Big and crafted sessions through the release binary (issue 24, items 9 and 11): the text of
//! `reins sessions tree` on a 1,000,000-entry session, which must stay linear (it was quadratic:
//! 40,000 entries took 45 s), beside `--json`; and the peak memory of reading such a session,
//! against a ceiling of about twice the file, and of listing it (a line at a time), and of one
//! `reins run --session` turn on it against the scripted model.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use scripted_llm::{Reply, ScriptedServer};

use crate::large_session::write_large_session;

/// Entries of the session the figures are taken on.
const ENTRIES: usize = 1_000_000;

/// Prints the figures and their targets; true when a target is missed.
pub async fn measure(reins: &Path) -> bool {
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(err) => {
            println!("\nbig sessions not measured: {err}");
            return true;
        }
    };
    // In the store of the workspace `dir`, so that `sessions list` lists it.
    let workspace = dir.path().canonicalize().unwrap_or_else(|_| dir.path().to_path_buf());
    let store = dir.path().join("reins-home/sessions").join(reins_session::encode_cwd(&workspace));
    let path = match write_large_session(&store, ENTRIES, None) {
        Ok(path) => path,
        Err(err) => {
            println!("\nbig sessions not measured: {err}");
            return true;
        }
    };
    let file_bytes = std::fs::metadata(&path).map_or(0, |meta| meta.len());
    let mb = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    println!("\nbig sessions ({ENTRIES} entries, {:.1} MB file)", mb(file_bytes));
    let path = path.display().to_string();
    let mut checks = Vec::new();
    for (what, args) in [
        ("sessions list", vec!["sessions", "list"]),
        ("sessions tree", vec!["sessions", "tree", &path]),
        ("sessions tree --json", vec!["sessions", "tree", "--json", &path]),
    ] {
        let command = reins_command(reins, dir.path(), &args);
        let started = Instant::now();
        let peak = crate::peak_rss_and_cpu_of(&command).await;
        let seconds = started.elapsed().as_secs_f64();
        match peak {
            Ok((kib, cpu_seconds)) => {
                let bytes = kib * 1024;
                // The CPU time beside the wall time: on a loaded machine the wall time is mostly
                // waiting.
                println!(
                    "  {what:<22} {seconds:>7.1} s ({cpu_seconds:.1} s CPU)   peak RSS {:>7.1} MB ({:.2}x the file)",
                    mb(bytes),
                    bytes as f64 / file_bytes as f64
                );
                match what {
                    // A listing reads a line at a time: a tenth of the file is generous.
                    "sessions list" => {
                        checks.push(("sessions list peak RSS under a tenth of the file", bytes * 10 <= file_bytes))
                    }
                    "sessions tree" => {
                        checks.push(("sessions tree of 1M entries under 10 s", seconds < 10.0));
                        checks.push(("sessions tree peak RSS at most 2x the file", bytes <= 2 * file_bytes));
                    }
                    _ => {
                        checks.push(("sessions tree --json of 1M entries under 10 s", seconds < 10.0));
                        checks.push(("sessions tree --json peak RSS at most 2x the file", bytes <= 2 * file_bytes));
                    }
                }
            }
            Err(why) => {
                println!("  {what:<22} failed: {why}");
                checks.push(("the sessions commands run", false));
            }
        }
    }
    // Last: the run appends to the session (a compaction, the new turn).
    match run_on_session(reins, dir.path(), &path).await {
        Ok(run) => {
            let bytes = run.peak_kib * 1024;
            println!(
                "  {:<22} {:>7.1} s   peak RSS {:>7.1} MB ({:.2}x the file); {} model requests, the largest {:.1} MB",
                "run --session",
                run.seconds,
                mb(bytes),
                bytes as f64 / file_bytes as f64,
                run.requests,
                mb(run.largest_request),
            );
            checks.push(("run --session peak RSS at most 2x the file", bytes <= 2 * file_bytes));
        }
        Err(why) => {
            println!("  {:<22} failed: {why}", "run --session");
            checks.push(("run --session on the big session runs", false));
        }
    }
    println!("\nbig session targets:");
    for (name, ok) in &checks {
        println!("  [{}] {name}", if *ok { "ok" } else { "MISSED" });
    }
    checks.iter().any(|(_, ok)| !ok)
}

/// What one turn of `reins run --session` on the big session took.
struct RunFigures {
    seconds: f64,
    peak_kib: u64,
    /// Model requests made (a compaction's summary and the turn), and the largest body sent.
    requests: usize,
    largest_request: u64,
}

/// One scripted turn of `reins run --session PATH` in `dir` (a compaction's summary first, when
/// the run asks for one), with its time and peak memory.
async fn run_on_session(reins: &Path, dir: &Path, path: &str) -> Result<RunFigures, String> {
    let script = vec![
        Reply::text("Goal: read every module. Progress: all of them explained.").when("Write the summary now"),
        Reply::text("Every module is explained above."),
    ];
    let server = ScriptedServer::start(script).await;
    let mut command = reins_command(reins, dir, &["run", "--yes", "--session", path, "what is left to read?"]);
    command
        .env("HOME", dir)
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("REINS_MODEL", "scripted");
    let started = Instant::now();
    let peak_kib = crate::peak_rss_kib_of(&command).await?;
    let seconds = started.elapsed().as_secs_f64();
    let requests = server.chat_requests();
    let largest_request = requests.iter().map(|request| request.raw_body.len() as u64).max().unwrap_or(0);
    Ok(RunFigures { seconds, peak_kib, requests: requests.len(), largest_request })
}

/// `reins ARGS` in `dir` with its own `REINS_HOME`, output thrown away.
fn reins_command(reins: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(reins);
    command
        .args(args)
        .current_dir(dir)
        .env("REINS_HOME", dir.join("reins-home"))
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}
