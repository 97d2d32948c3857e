//! The all-day soak (issue 34): thousands of turns over hundreds of sessions through one
//! `reins lsp`, as an editor drives it all day — text answers, reads of a 1 MB file, grep, bash
//! with big output — going back to older sessions now and then. Sampled every [`SAMPLE_EVERY`]
//! turns: the server's RSS, its descriptors, the session files it holds open and bash's
//! full-output files; reported as slopes per 1,000 turns after warm-up. Then the workspace is
//! filled to 1,000 sessions and `reins.session.list` timed, in the same server and in a new one
//! (which reads the session index). Targets: under 2 MB and 0 descriptors per 1,000 turns,
//! bounded output files, a listing of 1,000 sessions under 5 ms.
//!
//! How the slope is taken, and why. One least-squares line through nine samples (3,000 turns,
//! a sample every 250, the first 1,000 left out) read 1.95 to 3.93 MB per 1,000 turns on the
//! same binary: the allocator's heap grows in steps (an arena extended, a map's table doubled),
//! and one step among nine points tilts the whole line. Now the soak runs [`SESSIONS`] sessions
//! (4,000 turns), samples every 100 turns, leaves the first [`WARM_UP`] out, and reports the
//! median of the least-squares slopes of windows of [`WINDOW`] turns, one starting every
//! [`WINDOW_STEP`] turns: steady growth tilts every window alike and moves the median, a single
//! step tilts only the windows around it and does not. The least-squares slope over everything
//! after warm-up is printed beside it, as before.

use std::path::Path;
use std::time::{Duration, Instant};

use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};

use crate::lsp::Client;

const SESSIONS: usize = 400;
const TURNS_PER_SESSION: usize = 10;
/// Turns before the slopes are measured: the allocator and the caches settle.
const WARM_UP: usize = 1_000;
const SAMPLE_EVERY: usize = 100;
/// Turns in one window whose slope is taken (see the module's doc).
const WINDOW: usize = 1_000;
/// Turns between the starts of two windows.
const WINDOW_STEP: usize = 250;
const LISTED_SESSIONS: usize = 1_000;

/// What the server holds after `turn` turns.
#[derive(Debug, Clone, Copy)]
struct Sample {
    turn: usize,
    rss_kib: u64,
    fds: usize,
    session_files: usize,
    output_bytes: u64,
}

/// Runs the soak and prints its figures; true when a target is missed.
pub async fn measure(reins: &Path) -> bool {
    match run(reins).await {
        Ok(missed) => missed,
        Err(why) => {
            println!("\nsoak not measured: {why}");
            true
        }
    }
}

async fn run(reins: &Path) -> Result<bool, String> {
    let workspace = tempfile::tempdir().map_err(|e| e.to_string())?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let big: String = (0..20_000).map(|n| format!("line {n} of a big file, with some text to read\n")).collect();
    std::fs::write(workspace.path().join("big.txt"), big).map_err(|e| e.to_string())?;
    std::fs::write(workspace.path().join("a.rs"), "fn answer() -> u32 {\n    42\n}\n").map_err(|e| e.to_string())?;
    let server = ScriptedServer::start(Vec::new()).await;
    let mut client = Client::spawn_with(reins, workspace.path(), &server.base_url(), &[("TMPDIR", tmp.path())])?;
    client.initialize(workspace.path()).await?;
    client.notify("workspace/didChangeConfiguration", json!({"settings": {"approval": {"bash": "auto"}}})).await?;
    let pid = client.child.id().ok_or("the server has no pid")?;

    let started = Instant::now();
    let mut sessions: Vec<Value> = Vec::new();
    let mut samples = vec![sample(pid, 0, tmp.path())];
    let mut turn = 0;
    for n in 0..SESSIONS {
        let created = client.request("workspace/executeCommand", command("reins.session.new", json!({}))).await?;
        sessions.push(created["sessionId"].clone());
        for i in 0..TURNS_PER_SESSION {
            // Every fifth turn goes back to an older session, long released.
            let session = if i % 5 == 4 { &sessions[(n * 7 + i) % sessions.len()] } else { &sessions[n] };
            send_turn(&mut client, &server, session, turn).await?;
            turn += 1;
            if turn % SAMPLE_EVERY == 0 {
                samples.push(sample(pid, turn, tmp.path()));
            }
        }
    }
    let soak_time = started.elapsed();

    // Up to 1,000 sessions, then the listing: in this server, and in a new one.
    for _ in SESSIONS..LISTED_SESSIONS {
        client.request("workspace/executeCommand", command("reins.session.new", json!({}))).await?;
    }
    let lists = time_lists(&mut client).await?;
    let streaming = page_p99_while_streaming(&mut client, &server, &sessions[0]).await?;
    client.child.kill().await.ok();
    let mut fresh = Client::spawn_with(reins, workspace.path(), &server.base_url(), &[("TMPDIR", tmp.path())])?;
    fresh.initialize(workspace.path()).await?;
    let fresh_list = time_lists(&mut fresh).await?.first;
    fresh.child.kill().await.ok();

    Ok(print(&samples, soak_time, turn, &lists, fresh_list, streaming))
}

/// One turn of the kind `turn` picks, to its end.
async fn send_turn(client: &mut Client, server: &ScriptedServer, session: &Value, turn: usize) -> Result<(), String> {
    match turn % 4 {
        0 => {}
        1 => server.push(Reply::tool_call("c1", "read", json!({"path": "big.txt", "offset": 1 + turn % 1000}))),
        2 => server.push(Reply::tool_call("c1", "bash", json!({"command": "seq 1 40000"}))),
        _ => server.push(Reply::tool_call("c1", "grep", json!({"pattern": "answer"}))),
    }
    server.push(Reply::text(format!("answer {turn}")));
    let text = format!("turn {turn}");
    let params = command("reins.chat.send", json!({"sessionId": session, "text": text}));
    let started = client.request("workspace/executeCommand", params).await?;
    let run_id = started["runId"].as_str().ok_or("reins.chat.send answered no runId")?.to_string();
    client.wait_for_end(&run_id).await
}

/// Sessions in a page of the listing, as a picker asks for them.
const PAGE: usize = 50;

/// Times of `reins.session.list` in one server, and how many sessions it lists in all.
struct Lists {
    /// The server's first listing (of every session).
    first: Duration,
    /// The median of 20 listings of every session after it.
    whole: Duration,
    /// The median of 20 first pages of [`PAGE`] sessions.
    page: Duration,
    listed: usize,
}

async fn time_lists(client: &mut Client) -> Result<Lists, String> {
    let list = command("reins.session.list", json!({}));
    let started = Instant::now();
    let answer = client.request("workspace/executeCommand", list.clone()).await?;
    let first = started.elapsed();
    let listed = answer["sessions"].as_array().map_or(0, Vec::len);
    let whole = median_of_20(client, &list).await?;
    let page = median_of_20(client, &command("reins.session.list", json!({"limit": PAGE}))).await?;
    Ok(Lists { first, whole, page, listed })
}

/// Listings timed while a run streams an answer in another session (a delta a millisecond), as
/// an editor's picker lists while the chat is busy.
const STREAMING_SAMPLES: usize = 200;

/// The p99 of a page of [`PAGE`] sessions while `session` streams a long answer.
async fn page_p99_while_streaming(
    client: &mut Client,
    server: &ScriptedServer,
    session: &Value,
) -> Result<Duration, String> {
    server.push(Reply { chunk_delay_ms: 1, ..Reply::text("x".repeat(20_000)).with_chunk_chars(1) });
    let params = command("reins.chat.send", json!({"sessionId": session, "text": "stream"}));
    let started = client.request("workspace/executeCommand", params).await?;
    let run_id = started["runId"].as_str().ok_or("reins.chat.send answered no runId")?.to_string();
    let page = command("reins.session.list", json!({"limit": PAGE}));
    let mut times = Vec::with_capacity(STREAMING_SAMPLES);
    for _ in 0..STREAMING_SAMPLES {
        let started = Instant::now();
        client.request("workspace/executeCommand", page.clone()).await?;
        times.push(started.elapsed());
    }
    let cancel = command("reins.chat.cancel", json!({"sessionId": session}));
    client.request("workspace/executeCommand", cancel).await.ok();
    client.wait_for_end(&run_id).await.ok();
    times.sort();
    Ok(times[(times.len() * 99 / 100).min(times.len() - 1)])
}

/// The median time of 20 `workspace/executeCommand` requests of `params`.
async fn median_of_20(client: &mut Client, params: &Value) -> Result<Duration, String> {
    let mut times = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        client.request("workspace/executeCommand", params.clone()).await?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

fn command(name: &str, argument: Value) -> Value {
    json!({"command": name, "arguments": [argument]})
}

fn sample(pid: u32, turn: usize, tmp: &Path) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let fds: Vec<std::path::PathBuf> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| dir.flatten().filter_map(|fd| std::fs::read_link(fd.path()).ok()).collect())
        .unwrap_or_default();
    let session_files = fds.iter().filter(|target| target.extension().is_some_and(|ext| ext == "jsonl")).count();
    let output_bytes = std::fs::read_dir(tmp)
        .map(|dir| {
            dir.flatten()
                .filter(|entry| entry.file_name().to_string_lossy().starts_with("reins-output-"))
                .flat_map(|entry| std::fs::read_dir(entry.path()).into_iter().flatten().flatten())
                .map(|file| file.metadata().map_or(0, |meta| meta.len()))
                .sum()
        })
        .unwrap_or(0);
    Sample { turn, rss_kib, fds: fds.len(), session_files, output_bytes }
}

/// The median of the least-squares slopes of `value` over windows of [`WINDOW`] turns after
/// warm-up, per 1,000 turns (see the module's doc).
fn slope(samples: &[Sample], value: impl Fn(&Sample) -> f64) -> f64 {
    let last = samples.last().map_or(0, |s| s.turn);
    let mut slopes: Vec<f64> = (WARM_UP..)
        .step_by(WINDOW_STEP)
        .take_while(|start| start + WINDOW <= last)
        .map(|start| least_squares(samples, start, start + WINDOW, &value))
        .collect();
    if slopes.is_empty() {
        return least_squares(samples, WARM_UP, last, &value);
    }
    slopes.sort_by(f64::total_cmp);
    let middle = slopes.len() / 2;
    if slopes.len().is_multiple_of(2) { (slopes[middle - 1] + slopes[middle]) / 2.0 } else { slopes[middle] }
}

/// The least-squares slope of `value` over the samples from turn `from` to `to`, per 1,000 turns.
fn least_squares(samples: &[Sample], from: usize, to: usize, value: impl Fn(&Sample) -> f64) -> f64 {
    let points: Vec<(f64, f64)> =
        samples.iter().filter(|s| (from..=to).contains(&s.turn)).map(|s| (s.turn as f64, value(s))).collect();
    if points.len() < 2 {
        return 0.0;
    }
    let n = points.len() as f64;
    let (mean_x, mean_y) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
    let covariance: f64 = points.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    let variance: f64 = points.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    covariance / variance * 1000.0
}

fn print(
    samples: &[Sample],
    soak_time: Duration,
    turns: usize,
    lists: &Lists,
    fresh_list: Duration,
    streaming_p99: Duration,
) -> bool {
    let mb = |kib: u64| kib as f64 / 1024.0;
    println!("\nall-day soak: {turns} turns over {SESSIONS} sessions in {:.1} s (reins lsp)", soak_time.as_secs_f64());
    println!("  {:>6} {:>9} {:>5} {:>9} {:>12}", "turn", "RSS MB", "fds", "sessions", "output MB");
    for s in samples {
        println!(
            "  {:>6} {:>9.1} {:>5} {:>9} {:>12.1}",
            s.turn,
            mb(s.rss_kib),
            s.fds,
            s.session_files,
            s.output_bytes as f64 / 1_048_576.0
        );
    }
    let rss_slope = slope(samples, |s| mb(s.rss_kib));
    let fd_slope = slope(samples, |s| s.fds as f64);
    let last = samples.last().map_or(0, |s| s.turn);
    let rss_line = least_squares(samples, WARM_UP, last, |s| mb(s.rss_kib));
    let peak_output = samples.iter().map(|s| s.output_bytes).max().unwrap_or(0) as f64 / 1_048_576.0;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "  RSS slope after {WARM_UP} turns   {rss_slope:>8.2} MB per 1,000 turns \
         (median of {WINDOW}-turn windows; one line through all: {rss_line:.2})"
    );
    println!("  fd slope after {WARM_UP} turns    {fd_slope:>8.2} per 1,000 turns (median of {WINDOW}-turn windows)");
    println!("  bash output files at most      {peak_output:>8.1} MB");
    println!(
        "  reins.session.list, {} sessions: first {:.2} ms, then {:.2} ms (median of 20); \
         a new server's first {:.2} ms; a page of {PAGE}: {:.2} ms (median of 20)",
        lists.listed,
        ms(lists.first),
        ms(lists.whole),
        ms(fresh_list),
        ms(lists.page)
    );
    println!("  reins.session.list, a page of {PAGE} while a session streams: p99 {:.2} ms", ms(streaming_p99));
    let checks = [
        ("RSS grows under 2 MB per 1,000 turns after warm-up", rss_slope < 2.0),
        ("descriptors do not grow after warm-up", fd_slope <= 0.5),
        ("bash output files stay under 256 MB", peak_output <= 256.0),
        (
            "session.list of 1,000 sessions, a page at a time, under 5 ms",
            lists.listed >= LISTED_SESSIONS && ms(lists.page) < 5.0,
        ),
        ("session.list p99 of 1,000 sessions under 5 ms while a session streams", ms(streaming_p99) < 5.0),
    ];
    for (name, ok) in checks {
        println!("  [{}] {name}", if ok { "ok" } else { "MISSED" });
    }
    checks.iter().any(|(_, ok)| !ok)
}
