//! The bench command: how fast and how small `reins` is, against a scripted model that answers
//! instantly, so what is measured is reins itself.
//!
//! Run it with `scripts/bench` (which builds the release binaries first). It prints:
//! `reins --version` wall time, one `reins run` turn, harness overhead per turn over a 100-turn
//! tool loop, and peak RSS — each with its target — and, when the pi agent and OpenAI's Codex can
//! be installed from npm, the same figures for them on the same server and the ratios.

// The workspace denies stdout printing because the `reins` binary's stdout carries LSP frames;
// this binary is a report, and stdout is where it goes.
#![allow(clippy::print_stdout)]

mod acp;
mod agents;
mod big_sessions;
mod checkpoints;
mod codex;
mod diagnostics;
mod edit_corpus;
mod langservers;
mod large_session;
mod link_order;
mod lsp;
mod mcp;
mod mcp_tools;
mod peer;
mod pi16;
mod replay;
mod resident;
mod review;
mod sessions;
mod soak;
mod tokens;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use serde_json::json;

/// Lines in the file the tool loop reads: one distinct `offset` per turn, so no call repeats.
pub const LOOP_TURNS: usize = 100;

/// The parts the bench runs on their own, by name (the first argument).
const PARTS: [&str; 15] = [
    "turn",
    "tokens",
    "sessions",
    "big-sessions",
    "edits",
    "checkpoints",
    "diagnostics",
    "mcp",
    "acp",
    "agents",
    "lsp",
    "soak",
    "langservers",
    "editor-day",
    "link-order",
];

/// First argument that turns the bench binary into an RSS wrapper:
/// `reins-bench --peak-rss-to FILE PROGRAM [ARGS…]` (see [`peak_rss_kib_of`]).
const RSS_WRAPPER_FLAG: &str = "--peak-rss-to";

struct Figures {
    startup: Duration,
    one_turn: Duration,
    per_turn_overhead: Duration,
    /// Peak RSS of the tool-loop run; `None` when it could not be measured.
    peak_rss_kib: Option<u64>,
    /// The peaks of the tool-loop run's anonymous and file-backed parts (reins only).
    turn: Option<resident::Resident>,
    /// The CPU time (user and system) of the tool-loop run: the machine's load changes it far
    /// less than it changes the wall times.
    loop_cpu: Option<Duration>,
    /// An initialized, idle `reins lsp` (reins only: the peers have no language server).
    idle_lsp: Option<resident::Resident>,
    /// The size of the `reins` binary on disk (reins only).
    binary_bytes: Option<u64>,
    /// The overhead per turn of a client that only replays reins's requests (reins only; see
    /// [`replay`]): what of the overhead is waiting that no client can remove.
    overhead_floor: Option<Duration>,
}

fn main() {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|first| first == RSS_WRAPPER_FLAG) {
        std::process::exit(run_rss_wrapper(&args[1..]));
    }
    if args.first().is_some_and(|first| first == replay::REPLAY_FLAG) {
        std::process::exit(replay::run_client(&args[1..]));
    }
    // Anything else than a part's name runs nothing: `--help` (or a typo) must not start the
    // whole bench, which takes many minutes.
    if let Some(first) = args.first().filter(|first| first.to_str().is_none_or(|first| !PARTS.contains(&first))) {
        let known = first == "--help" || first == "-h";
        let part = first.to_string_lossy();
        let say = if known { String::new() } else { format!("reins-bench: no part called {part:?}\n") };
        eprintln!("{say}usage: reins-bench [PART]  (no PART: everything)\nparts: {}", PARTS.join(", "));
        std::process::exit(if known { 0 } else { 2 });
    }
    // `reins-bench link-order MAP OUT PROFILE…`: the list of functions linked first (scripts/link-order).
    if args.first().is_some_and(|first| first == "link-order") {
        let [map, out, dirs @ ..] = &args[1..] else {
            eprintln!("usage: reins-bench link-order MAP OUT PROFILE-DIR… (scripts/link-order runs it)");
            std::process::exit(2);
        };
        let dirs: Vec<PathBuf> = dirs.iter().map(PathBuf::from).collect();
        if let Err(why) = link_order::write(Path::new(map), Path::new(out), &dirs) {
            eprintln!("bench: {why}");
            std::process::exit(1);
        }
        std::process::exit(0);
    }
    // `reins-bench editor-day [--idle]`: an editor's short day with reins lsp (or only its
    // start), for scripts/link-order.
    if args.first().is_some_and(|first| first == "editor-day") {
        let idle = args.get(1).is_some_and(|arg| arg == "--idle");
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
        let (Ok(runtime), Some(reins)) = (runtime, reins_binary()) else {
            eprintln!("bench: build the release binary first (scripts/bench)");
            std::process::exit(1);
        };
        if let Err(why) = runtime.block_on(link_order::editor_day(&reins, idle)) {
            eprintln!("bench: {why}");
            std::process::exit(1);
        }
        std::process::exit(0);
    }
    // `reins-bench mcp`: only the MCP figures.
    if args.first().is_some_and(|first| first == "mcp") {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
        let (Ok(runtime), Some(reins)) = (runtime, reins_binary()) else {
            eprintln!("bench: build the release binary first (scripts/bench)");
            std::process::exit(1);
        };
        let failed = runtime.block_on(mcp::measure(&reins));
        std::process::exit(i32::from(failed && std::env::var_os("BENCH_STRICT").is_some()));
    }
    // `reins-bench acp`: only the ACP figures (reins acp beside pi-acp).
    if args.first().is_some_and(|first| first == "acp") {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
        let (Ok(runtime), Some(reins)) = (runtime, reins_binary()) else {
            eprintln!("bench: build the release binary first (scripts/bench)");
            std::process::exit(1);
        };
        let failed = runtime.block_on(acp::measure(&reins));
        std::process::exit(i32::from(failed && std::env::var_os("BENCH_STRICT").is_some()));
    }
    // `reins-bench agents`: only the figures of several agents at once (subagents, worktrees).
    if args.first().is_some_and(|first| first == "agents") {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
        let (Ok(runtime), Some(reins)) = (runtime, reins_binary()) else {
            eprintln!("bench: build the release binary first (scripts/bench)");
            std::process::exit(1);
        };
        let failed = runtime.block_on(agents::measure(&reins));
        std::process::exit(i32::from(failed && std::env::var_os("BENCH_STRICT").is_some()));
    }
    // `reins-bench sessions`: only the session figures (no binary, no model server).
    if args.first().is_some_and(|first| first == "sessions") {
        std::process::exit(i32::from(sessions::measure() && std::env::var_os("BENCH_STRICT").is_some()));
    }
    // `reins-bench edits`: only the edit-corpus figures (pure functions, no binary).
    if args.first().is_some_and(|first| first == "edits") {
        std::process::exit(i32::from(edit_corpus::report() && std::env::var_os("BENCH_STRICT").is_some()));
    }
    // `reins-bench checkpoints`: only the checkout figures (the release binary, no model server).
    if args.first().is_some_and(|first| first == "checkpoints") {
        let Some(reins) = reins_binary() else {
            eprintln!("bench: build the release binary first: cargo build --release -p reins (or use scripts/bench)");
            std::process::exit(1);
        };
        std::process::exit(i32::from(checkpoints::measure(&reins) && std::env::var_os("BENCH_STRICT").is_some()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    let Ok(runtime) = runtime else {
        eprintln!("bench: cannot start the async runtime");
        std::process::exit(1);
    };
    // `reins-bench diagnostics`: only the after-edit feedback's latency (the release binary).
    if args.first().is_some_and(|first| first == "diagnostics") {
        let Some(reins) = reins_binary() else {
            eprintln!("bench: build the release binary first: cargo build --release -p reins (or use scripts/bench)");
            std::process::exit(1);
        };
        let failed = runtime.block_on(diagnostics::measure(&reins));
        std::process::exit(i32::from(failed && std::env::var_os("BENCH_STRICT").is_some()));
    }
    // `reins-bench soak`: only the all-day soak (the release binary, thousands of turns).
    if args.first().is_some_and(|first| first == "soak") {
        let Some(reins) = reins_binary() else {
            eprintln!("bench: build the release binary first: cargo build --release -p reins (or use scripts/bench)");
            std::process::exit(1);
        };
        let failed = runtime.block_on(soak::measure(&reins));
        std::process::exit(i32::from(failed && std::env::var_os("BENCH_STRICT").is_some()));
    }
    // `reins-bench lsp`: only the language server's responsiveness while runs stream.
    if args.first().is_some_and(|first| first == "lsp") {
        let Some(reins) = reins_binary() else {
            eprintln!("bench: build the release binary first: cargo build --release -p reins (or use scripts/bench)");
            std::process::exit(1);
        };
        let failed = runtime.block_on(lsp::measure(&reins));
        std::process::exit(i32::from(failed && std::env::var_os("BENCH_STRICT").is_some()));
    }
    // `reins-bench big-sessions`: only the big and crafted session figures (the release binary).
    if args.first().is_some_and(|first| first == "big-sessions") {
        let Some(reins) = reins_binary() else {
            eprintln!("bench: build the release binary first: cargo build --release -p reins (or use scripts/bench)");
            std::process::exit(1);
        };
        let failed = runtime.block_on(big_sessions::measure(&reins));
        std::process::exit(i32::from(failed && std::env::var_os("BENCH_STRICT").is_some()));
    }
    // `reins-bench langservers`: only the language-server tools' figures (bytes, latency, memory).
    if args.first().is_some_and(|first| first == "langservers") {
        let Some(reins) = reins_binary() else {
            eprintln!("bench: build the release binary first: cargo build --release -p reins (or use scripts/bench)");
            std::process::exit(1);
        };
        let failed = runtime.block_on(langservers::measure(&reins));
        std::process::exit(i32::from(failed && std::env::var_os("BENCH_STRICT").is_some()));
    }
    // `reins-bench tokens`: only the token figures (first request, prompt cache), reins and pi 1.6.
    if args.first().is_some_and(|first| first == "tokens") {
        std::process::exit(runtime.block_on(tokens_only()));
    }
    // `reins-bench turn`: only the first table (startup, turns, memory), reins beside pi 1.6 and
    // Codex.
    if args.first().is_some_and(|first| first == "turn") {
        std::process::exit(runtime.block_on(run(&peer::PI_VERSIONS[..1], false)));
    }
    std::process::exit(runtime.block_on(run(&peer::PI_VERSIONS, true)));
}

async fn tokens_only() -> i32 {
    let Some(reins) = reins_binary() else {
        eprintln!("bench: build the release binary first: cargo build --release -p reins (or use scripts/bench)");
        return 1;
    };
    let load_before = load_average();
    let pis = vec![peer::Pi::install(peer::PI_VERSIONS[0]).await];
    let missed = tokens::measure(&reins, &pis).await;
    print_load(&load_before);
    i32::from(missed && std::env::var_os("BENCH_STRICT").is_some())
}

/// The first table, reins beside the pis of `versions`, and its targets; then, when `everything`,
/// every other part of the bench.
async fn run(versions: &[&'static str], everything: bool) -> i32 {
    let reins = match reins_binary() {
        Some(path) => path,
        None => {
            eprintln!("bench: build the release binary first: cargo build --release -p reins (or use scripts/bench)");
            return 1;
        }
    };
    let workspace = match prepare_workspace() {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!("bench: cannot prepare the workspace: {err}");
            return 1;
        }
    };

    let load_before = load_average();
    let reins_figures = measure_reins(&reins, workspace.path()).await;
    let mut pis = Vec::new();
    let mut peers = Vec::new();
    for &version in versions {
        let pi = peer::Pi::install(version).await;
        let figures = match &pi {
            Ok(pi) => peer::measure(pi, workspace.path()).await,
            Err(why) => Err(why.clone()),
        };
        peers.push((format!("pi {version}"), figures));
        pis.push(pi);
    }
    let codex = match codex::Codex::install().await {
        Ok(codex) => peer::measure(&codex, workspace.path()).await,
        Err(why) => Err(why),
    };
    peers.push((format!("Codex {}", codex::CODEX_VERSION), codex));
    print_figures(&reins_figures, &peers);
    let peer = |prefix: &str| {
        peers.iter().find(|(name, _)| name.starts_with(prefix)).and_then(|(_, figures)| figures.as_ref().ok())
    };
    // What starting any process costs here, measured the same way: on a loaded machine most of
    // the startup figure is the wait for a core, which no program can shorten.
    let floor = start_time(Path::new("true")).await;
    println!("  process start floor: `true --version` takes {:.3} ms here, spawned the same way", ms(floor));
    if let Some(floor) = reins_figures.overhead_floor {
        println!(
            "  overhead floor: a client that only replays reins's requests takes {:.3} ms per turn here",
            ms(floor)
        );
    }
    let mut failed = check_targets(&reins_figures, peer("pi 1.6"), peer("Codex"));
    if !everything {
        print_load(&load_before);
        return i32::from(failed && std::env::var_os("BENCH_STRICT").is_some());
    }
    failed |= tokens::measure(&reins, &pis).await;
    failed |= sessions::measure();
    failed |= lsp::measure(&reins).await;
    failed |= edit_corpus::report();
    failed |= review::measure();
    failed |= mcp::measure(&reins).await;
    failed |= checkpoints::measure(&reins);
    failed |= acp::measure(&reins).await;
    failed |= diagnostics::measure(&reins).await;
    failed |= big_sessions::measure(&reins).await;
    failed |= agents::measure(&reins).await;
    print_load(&load_before);
    if std::env::var_os("BENCH_STRICT").is_none() {
        failed = false;
    }
    i32::from(failed)
}

async fn measure_reins(reins: &Path, workspace: &Path) -> Figures {
    let startup = start_time(reins).await;

    let one_turn = median_of(11, || async {
        let server = ScriptedServer::start(vec![Reply::text("Hello.")]).await;
        let start = Instant::now();
        run_reins(reins, workspace, &server, "say hello").await;
        start.elapsed()
    })
    .await;

    let loop_time = median_of(5, || async {
        let server = ScriptedServer::start(tool_loop_script()).await;
        let start = Instant::now();
        run_reins(reins, workspace, &server, "read the file line by line").await;
        start.elapsed()
    })
    .await;
    let per_turn_overhead = loop_time.saturating_sub(one_turn) / LOOP_TURNS as u32;

    // A separate run of the loop under the wrapper, so the wrapper does not touch the timings.
    let server = ScriptedServer::start(tool_loop_script()).await;
    let peak = peak_resident_of(&reins_command(reins, workspace, &server, "read the file line by line"))
        .await
        .inspect_err(|why| eprintln!("bench: reins peak RSS not measured: {why}"))
        .ok();
    let (peak_rss_kib, turn, loop_cpu) = match peak {
        Some(run) => (Some(run.parts.total_kib), Some(run.parts), Some(run.cpu())),
        None => (None, None, None),
    };
    let bodies: Vec<Vec<u8>> = server.chat_requests().into_iter().map(|request| request.raw_body).collect();
    let overhead_floor = replay::floor_per_turn(&bodies)
        .await
        .inspect_err(|why| eprintln!("bench: the overhead's floor not measured: {why}"))
        .ok();

    let idle_lsp = resident::idle_lsp(reins, workspace)
        .await
        .inspect_err(|why| eprintln!("bench: idle reins lsp not measured: {why}"))
        .ok();

    let binary_bytes = std::fs::metadata(reins).map(|meta| meta.len()).ok();
    Figures {
        startup,
        one_turn,
        per_turn_overhead,
        peak_rss_kib,
        turn,
        loop_cpu,
        idle_lsp,
        binary_bytes,
        overhead_floor,
    }
}

/// The median wall time of `PROGRAM --version`, spawned and waited for as the bench does.
async fn start_time(program: &Path) -> Duration {
    median_of(21, || async {
        let start = Instant::now();
        let _ = tokio::process::Command::new(program).arg("--version").stdout(Stdio::null()).status().await;
        start.elapsed()
    })
    .await
}

/// `LOOP_TURNS` turns, each reading one line of `lines.txt`, then a final answer.
pub fn tool_loop_script() -> Vec<Reply> {
    let mut script: Vec<Reply> = (1..=LOOP_TURNS)
        .map(|line| {
            Reply::tool_call(format!("call_{line}"), "read", json!({"path": "lines.txt", "offset": line, "limit": 1}))
        })
        .collect();
    script.push(Reply::text("Done."));
    script
}

async fn run_reins(reins: &Path, workspace: &Path, server: &ScriptedServer, prompt: &str) {
    let status = tokio::process::Command::from(reins_command(reins, workspace, server, prompt))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .await;
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!("bench: reins run failed: {status:?}");
    }
}

fn reins_command(reins: &Path, workspace: &Path, server: &ScriptedServer, prompt: &str) -> std::process::Command {
    let mut command = std::process::Command::new(reins);
    command
        .args(["run", "--json", "--yes", "--max-turns", "200", prompt])
        .current_dir(workspace)
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("REINS_MODEL", "scripted-model")
        .env("REINS_HOME", workspace.join(".reins-home"));
    command
}

pub fn prepare_workspace() -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    let lines: String = (1..=LOOP_TURNS).map(|n| format!("line {n}\n")).collect();
    std::fs::write(dir.path().join("lines.txt"), lines)?;
    Ok(dir)
}

pub async fn median_of<F, Fut>(runs: usize, mut sample: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Duration>,
{
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        samples.push(sample().await);
    }
    samples.sort();
    samples[samples.len() / 2]
}

/// Peak RSS in KiB of one run of `command` (program, arguments, environment and directory; its
/// stdin and stdout are null), for one process at a time.
pub async fn peak_rss_kib_of(command: &std::process::Command) -> Result<u64, String> {
    peak_resident_of(command).await.map(|run| run.parts.total_kib)
}

/// [`peak_rss_kib_of`], with the peaks of the run's anonymous and file-backed parts, sampled.
///
/// The bench's own `RUSAGE_CHILDREN` mixes every child it ever waited for, and a child's peak
/// starts from the memory of the process that spawned it; so the command runs as the only child
/// of a fresh, small copy of this binary ([`run_rss_wrapper`]), which reports the figure in a
/// file. The floor this leaves is the wrapper's own RSS at spawn time, about 2 MB.
pub async fn peak_resident_of(command: &std::process::Command) -> Result<WrappedRun, String> {
    wrapped_run(command).await
}

/// Peak RSS in KiB and CPU seconds (user and system) of one run of `command`, as
/// [`peak_rss_kib_of`] runs it: on a loaded machine the CPU time says what the wall time cannot.
pub async fn peak_rss_and_cpu_of(command: &std::process::Command) -> Result<(u64, f64), String> {
    wrapped_run(command).await.map(|run| (run.parts.total_kib, run.cpu_seconds))
}

/// What the RSS wrapper reports of one run.
pub struct WrappedRun {
    /// The peaks of the run's resident memory (`total_kib` is the kernel's peak RSS).
    pub parts: resident::Resident,
    /// User and system time of the run.
    pub cpu_seconds: f64,
}

impl WrappedRun {
    pub fn cpu(&self) -> Duration {
        Duration::from_secs_f64(self.cpu_seconds)
    }
}

/// One run of `command` under the RSS wrapper (see [`peak_resident_of`]).
async fn wrapped_run(command: &std::process::Command) -> Result<WrappedRun, String> {
    let exe = std::env::current_exe().map_err(|err| format!("cannot find the bench binary: {err}"))?;
    let scratch = tempfile::tempdir().map_err(|err| format!("cannot make a temp dir: {err}"))?;
    let report = scratch.path().join("peak-rss-kib");
    let mut wrapped = tokio::process::Command::new(exe);
    wrapped.arg(RSS_WRAPPER_FLAG).arg(&report).arg(command.get_program()).args(command.get_args());
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    // stderr is kept for the error: Codex, for one, writes its whole transcript there.
    let output = wrapped
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|err| format!("cannot run the RSS wrapper: {err}"))?;
    if !output.status.success() {
        let program = command.get_program();
        return Err(format!(
            "{program:?} failed under the RSS wrapper ({}): {}",
            output.status,
            peer::tail(&output.stderr)
        ));
    }
    let text = std::fs::read_to_string(&report).map_err(|err| format!("the RSS wrapper left no figure: {err}"))?;
    let numbers: Vec<u64> = text.split_whitespace().filter_map(|number| number.parse().ok()).collect();
    let [peak, anonymous_kib, file_kib, binary_kib, user_us, system_us] = numbers[..] else {
        return Err(format!("the RSS wrapper wrote {text:?}, not six numbers"));
    };
    let parts = resident::Resident { total_kib: peak, anonymous_kib, file_kib, binary_kib };
    Ok(WrappedRun { parts, cpu_seconds: (user_us + system_us) as f64 / 1e6 })
}

/// The wrapper side of [`peak_rss_kib_of`]: runs `PROGRAM ARGS…` as this process's only child,
/// writes its peak RSS and the sampled peaks of its anonymous, file-backed and own-binary parts
/// (KiB), then its user and system time (microseconds), to `FILE`, and exits with the program's
/// exit code.
fn run_rss_wrapper(args: &[OsString]) -> i32 {
    let [report, program, program_args @ ..] = args else {
        eprintln!("bench: usage: reins-bench {RSS_WRAPPER_FLAG} FILE PROGRAM [ARGS...]");
        return 2;
    };
    let mut child = match std::process::Command::new(program).args(program_args).spawn() {
        Ok(child) => child,
        Err(err) => {
            eprintln!("bench: cannot run {program:?}: {err}");
            return 127;
        }
    };
    let (status, parts) = match resident::wait_sampling(&mut child) {
        Ok(done) => done,
        Err(err) => {
            eprintln!("bench: cannot wait for {program:?}: {err}");
            return 2;
        }
    };
    // With a single child, RUSAGE_CHILDREN is that child's peak and time (and of what it waited
    // for).
    let usage = match nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN) {
        Ok(usage) => usage,
        Err(err) => {
            eprintln!("bench: getrusage failed: {err}");
            return 2;
        }
    };
    let micros = |time: nix::sys::time::TimeVal| {
        use nix::sys::time::TimeValLike;
        time.num_microseconds().max(0)
    };
    let figures = format!(
        "{} {} {} {} {} {}",
        usage.max_rss(),
        parts.anonymous_kib,
        parts.file_kib,
        parts.binary_kib,
        micros(usage.user_time()),
        micros(usage.system_time())
    );
    if let Err(err) = std::fs::write(report, figures) {
        eprintln!("bench: cannot write {report:?}: {err}");
        return 2;
    }
    status.code().unwrap_or(1)
}

fn reins_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("REINS_BIN") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let candidate = exe.parent()?.join("reins");
    candidate.exists().then_some(candidate)
}

/// A line of the figures table: its label, the value of a run's figures, the unit.
type Row = (&'static str, fn(&Figures) -> Option<f64>, &'static str);

/// The figures of reins and of each peer (pi, newest first, then Codex) side by side, then the
/// peers' as ratios to reins's: the peers ran on the same machine in the same bench, so the ratios hold up when the
/// machine's load moves the absolute figures.
fn print_figures(reins: &Figures, peers: &[(String, Result<Figures, String>)]) {
    let measured: Vec<(&str, &Figures)> =
        peers.iter().filter_map(|(name, figures)| Some((name.as_str(), figures.as_ref().ok()?))).collect();
    let rows: [Row; 13] = [
        ("startup (--version)", |f| Some(ms(f.startup)), "ms"),
        ("one-turn run", |f| Some(ms(f.one_turn)), "ms"),
        ("overhead per turn (x100)", |f| Some(ms(f.per_turn_overhead)), "ms"),
        ("CPU of the tool loop", |f| f.loop_cpu.map(ms), "ms"),
        ("peak RSS (tool loop)", |f| f.peak_rss_kib.map(|kib| kib as f64 / 1024.0), "MB"),
        ("  anonymous, at most", |f| f.turn.map(|r| r.anonymous_kib as f64 / 1024.0), "MB"),
        ("  file-backed, at most", |f| f.turn.map(|r| r.file_kib as f64 / 1024.0), "MB"),
        ("    of the binary", |f| f.turn.map(|r| r.binary_kib as f64 / 1024.0), "MB"),
        ("idle reins lsp RSS", |f| f.idle_lsp.map(|r| r.total_kib as f64 / 1024.0), "MB"),
        ("  anonymous", |f| f.idle_lsp.map(|r| r.anonymous_kib as f64 / 1024.0), "MB"),
        ("  file-backed", |f| f.idle_lsp.map(|r| r.file_kib as f64 / 1024.0), "MB"),
        ("    of the binary", |f| f.idle_lsp.map(|r| r.binary_kib as f64 / 1024.0), "MB"),
        ("binary size", |f| f.binary_bytes.map(|bytes| bytes as f64 / 1024.0 / 1024.0), "MB"),
    ];
    let show = |value: Option<f64>, unit: &str| match value {
        Some(value) if value < 10.0 => format!("{value:.3} {unit}"),
        Some(value) => format!("{value:.1} {unit}"),
        None => "—".to_string(),
    };
    print!("\n{:<26} {:>12}", "", "reins");
    for (name, _) in &measured {
        print!(" {name:>12}");
    }
    println!();
    for (label, value, unit) in rows {
        print!("  {label:<24} {:>12}", show(value(reins), unit));
        for (_, figures) in &measured {
            print!(" {:>12}", show(value(figures), unit));
        }
        println!();
    }
    if !measured.is_empty() {
        println!("ratios (peer / reins; higher means reins is faster or smaller)");
        for (label, value, _) in rows {
            print!("  {label:<24} {:>12}", "");
            for (_, figures) in &measured {
                let ratio = match (value(figures), value(reins)) {
                    (Some(pi), Some(reins)) if reins > 0.0 => format!("{:.1}x", pi / reins),
                    _ => "—".to_string(),
                };
                print!(" {ratio:>12}");
            }
            println!();
        }
    }
    for (name, figures) in peers {
        if let Err(why) = figures {
            println!("  {name} not measured: {why}");
        }
    }
}

/// `/proc/loadavg`'s three figures, or why they cannot be read.
/// The load average before the bench and now: absolute figures move with it.
fn print_load(before: &str) {
    println!("\nload average (1, 5, 15 min) on {} cores", cores());
    println!("  before the bench  {before}");
    println!("  after the bench   {}", load_average());
}

fn load_average() -> String {
    match std::fs::read_to_string("/proc/loadavg") {
        Ok(text) => text.split_whitespace().take(3).collect::<Vec<_>>().join("  "),
        Err(err) => format!("unknown ({err})"),
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Prints each target with its verdict; true when any is missed. The peak RSS of a turn is held
/// to a tenth of pi 1.6's and to a fifteenth of Codex's in the same run: without the peer's
/// figure it is missed, never guessed.
fn check_targets(figures: &Figures, pi16: Option<&Figures>, codex: Option<&Figures>) -> bool {
    let rss_check = |peer: &str, peer_figures: Option<&Figures>, divisor: u64, share: &str| {
        let peer_kib = peer_figures.and_then(|peer| peer.peak_rss_kib);
        let name = match peer_kib {
            Some(kib) => {
                format!("peak RSS at most {share} of {peer}'s ({:.1} MB)", kib as f64 / divisor as f64 / 1024.0)
            }
            None => format!("peak RSS at most {share} of {peer}'s ({peer} not measured: nothing to compare)"),
        };
        let ok = match (figures.peak_rss_kib, peer_kib) {
            (Some(reins), Some(peer)) => reins <= peer / divisor,
            _ => false,
        };
        (name, ok)
    };
    let idle_ok = figures.idle_lsp.is_some_and(|r| r.total_kib < 8 * 1024);
    let checks = [
        ("startup under 3 ms".to_string(), ms(figures.startup) < 3.0),
        ("one-turn run under 50 ms".to_string(), ms(figures.one_turn) < 50.0),
        ("overhead under 1 ms per turn".to_string(), ms(figures.per_turn_overhead) < 1.0),
        rss_check("pi 1.6", pi16, 10, "a tenth"),
        rss_check("Codex", codex, 15, "a fifteenth"),
        ("idle reins lsp under 8 MB RSS".to_string(), idle_ok),
    ];
    println!("\ntargets:");
    for (name, ok) in &checks {
        println!("  [{}] {name}", if *ok { "ok" } else { "MISSED" });
    }
    // The usual cause after a change of code: functions the link-order list names were renamed
    // (LLVM's `.llvm.N` suffixes follow a codegen unit's contents), so they are spread again.
    if !idle_ok && figures.idle_lsp.is_some_and(|r| r.binary_kib > 4 * 1024) {
        println!("  (over 4 MB of the idle RSS is pages of the binary: run scripts/link-order)");
    }
    checks.iter().any(|(_, ok)| !ok)
}

pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
