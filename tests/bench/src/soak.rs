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
//!
//! Which older session a turn goes back to. The pick was `(n * 7 + i) % sessions`, which for
//! the tenth turn of every session is session 2 (and for the fifth, session n - 2, still open):
//! one session, never released, took a turn every ten and grew by 2.6 MB of session file per
//! 1,000 turns — which an open session holds in memory by design (its tree keeps the file's
//! bytes), and which was the whole RSS slope (a dump of the growing mapping held that session's
//! lines). Now the pick is spread by a hash over the
//! sessions long released ([`older_session`]), and the bytes of the session files the server
//! holds open are sampled beside its RSS, so that growth of live sessions shows as what it is.

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
/// Idle sessions the server keeps open (the harness's `KEEP_IDLE_SESSIONS`): a session further
/// back than these and the current one has been released.
const KEPT_OPEN: usize = 8;

/// What the server holds after `turn` turns.
#[derive(Debug, Clone, Copy)]
struct Sample {
    turn: usize,
    rss_kib: u64,
    fds: usize,
    session_files: usize,
    /// Bytes of the session files the server holds open: an open session keeps its file's
    /// bytes in memory.
    open_session_bytes: u64,
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
            let session = match older_session(n, i) {
                Some(older) if i % 5 == 4 => &sessions[older],
                _ => &sessions[n],
            };
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
    let streaming = p99_while_streaming(&mut client, &server, &sessions[0]).await?;
    client.child.kill().await.ok();
    let mut fresh = Client::spawn_with(reins, workspace.path(), &server.base_url(), &[("TMPDIR", tmp.path())])?;
    fresh.initialize(workspace.path()).await?;
    let fresh_list = time_lists(&mut fresh).await?.first;
    fresh.child.kill().await.ok();

    Ok(print(&samples, soak_time, turn, &lists, fresh_list, streaming))
}

/// The session turn `i` of session `n` goes back to: one released long ago (none while there is
/// none), picked by a hash so that the turns spread over all of them. A linear pick modulo the
/// growing count settles on one session (see the module's doc).
fn older_session(n: usize, i: usize) -> Option<usize> {
    let released = n.checked_sub(KEPT_OPEN + 1).filter(|&count| count > 0)?;
    let spread = ((n * TURNS_PER_SESSION + i) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    Some((spread % released as u64) as usize)
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

/// Request times while a session streams, as p99s.
struct Streaming {
    /// A page of [`PAGE`] sessions.
    page: Duration,
    /// `reins.edit.list`, which only reads the server's memory: the floor that the transport,
    /// the streaming run and the machine's load set for any request.
    trivial: Duration,
}

/// The p99s of a page of [`PAGE`] sessions and of a trivial request, taken in turn, while
/// `session` streams a long answer.
async fn p99_while_streaming(
    client: &mut Client,
    server: &ScriptedServer,
    session: &Value,
) -> Result<Streaming, String> {
    server.push(Reply { chunk_delay_ms: 1, ..Reply::text("x".repeat(20_000)).with_chunk_chars(1) });
    let params = command("reins.chat.send", json!({"sessionId": session, "text": "stream"}));
    let started = client.request("workspace/executeCommand", params).await?;
    let run_id = started["runId"].as_str().ok_or("reins.chat.send answered no runId")?.to_string();
    let page = command("reins.session.list", json!({"limit": PAGE}));
    let trivial = command("reins.edit.list", json!({}));
    let (mut pages, mut trivials) = (Vec::with_capacity(STREAMING_SAMPLES), Vec::with_capacity(STREAMING_SAMPLES));
    for _ in 0..STREAMING_SAMPLES {
        let started = Instant::now();
        client.request("workspace/executeCommand", page.clone()).await?;
        pages.push(started.elapsed());
        let started = Instant::now();
        client.request("workspace/executeCommand", trivial.clone()).await?;
        trivials.push(started.elapsed());
    }
    let cancel = command("reins.chat.cancel", json!({"sessionId": session}));
    client.request("workspace/executeCommand", cancel).await.ok();
    client.wait_for_end(&run_id).await.ok();
    Ok(Streaming { page: p99(pages), trivial: p99(trivials) })
}

fn p99(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[(times.len() * 99 / 100).min(times.len() - 1)]
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
    let open: Vec<&std::path::PathBuf> =
        fds.iter().filter(|target| target.extension().is_some_and(|ext| ext == "jsonl")).collect();
    let open_session_bytes = open.iter().map(|path| std::fs::metadata(path).map_or(0, |meta| meta.len())).sum();
    let output_bytes = std::fs::read_dir(tmp)
        .map(|dir| {
            dir.flatten()
                .filter(|entry| entry.file_name().to_string_lossy().starts_with("reins-output-"))
                .flat_map(|entry| std::fs::read_dir(entry.path()).into_iter().flatten().flatten())
                .map(|file| file.metadata().map_or(0, |meta| meta.len()))
                .sum()
        })
        .unwrap_or(0);
    Sample { turn, rss_kib, fds: fds.len(), session_files: open.len(), open_session_bytes, output_bytes }
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
    streaming: Streaming,
) -> bool {
    let mb = |kib: u64| kib as f64 / 1024.0;
    println!("\nall-day soak: {turns} turns over {SESSIONS} sessions in {:.1} s (reins lsp)", soak_time.as_secs_f64());
    let bytes_mb = |bytes: u64| bytes as f64 / 1_048_576.0;
    println!("  {:>6} {:>9} {:>5} {:>9} {:>8} {:>12}", "turn", "RSS MB", "fds", "sessions", "open MB", "output MB");
    for s in samples {
        println!(
            "  {:>6} {:>9.1} {:>5} {:>9} {:>8.1} {:>12.1}",
            s.turn,
            mb(s.rss_kib),
            s.fds,
            s.session_files,
            bytes_mb(s.open_session_bytes),
            bytes_mb(s.output_bytes)
        );
    }
    let rss_slope = slope(samples, |s| mb(s.rss_kib));
    let fd_slope = slope(samples, |s| s.fds as f64);
    let open_slope = slope(samples, |s| bytes_mb(s.open_session_bytes));
    let last = samples.last().map_or(0, |s| s.turn);
    let rss_line = least_squares(samples, WARM_UP, last, |s| mb(s.rss_kib));
    let peak_output = samples.iter().map(|s| s.output_bytes).max().unwrap_or(0) as f64 / 1_048_576.0;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "  RSS slope after {WARM_UP} turns   {rss_slope:>8.2} MB per 1,000 turns \
         (median of {WINDOW}-turn windows; one line through all: {rss_line:.2})"
    );
    println!("  fd slope after {WARM_UP} turns    {fd_slope:>8.2} per 1,000 turns (median of {WINDOW}-turn windows)");
    println!("  open session files' slope      {open_slope:>8.2} MB per 1,000 turns (median of {WINDOW}-turn windows)");
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
    println!(
        "  reins.session.list, a page of {PAGE} while a session streams: p99 {:.2} ms \
         (reins.edit.list, the floor, in turn with it: p99 {:.2} ms)",
        ms(streaming.page),
        ms(streaming.trivial)
    );
    let checks = [
        ("RSS grows under 2 MB per 1,000 turns after warm-up", rss_slope < 2.0),
        ("descriptors do not grow after warm-up", fd_slope <= 0.5),
        ("bash output files stay under 256 MB", peak_output <= 256.0),
        (
            "session.list of 1,000 sessions, a page at a time, under 5 ms",
            lists.listed >= LISTED_SESSIONS && ms(lists.page) < 5.0,
        ),
        ("session.list p99 of 1,000 sessions under 5 ms while a session streams", ms(streaming.page) < 5.0),
    ];
    for (name, ok) in checks {
        println!("  [{}] {name}", if ok { "ok" } else { "MISSED" });
    }
    checks.iter().any(|(_, ok)| !ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_go_back_to_released_sessions_spread_over_them() {
        let mut visits = vec![0; SESSIONS];
        for n in 0..SESSIONS {
            for i in (0..TURNS_PER_SESSION).filter(|i| i % 5 == 4) {
                if let Some(older) = older_session(n, i) {
                    assert!(older + KEPT_OPEN < n, "session {older} is released when session {n} runs");
                    visits[older] += 1;
                }
            }
        }
        let most = visits.iter().max().copied().unwrap_or(0);
        // The linear pick sent 398 of them to session 2, which stayed open and grew.
        assert!(most <= 20, "one session took {most} of {} visits", visits.iter().sum::<usize>());
        assert!(visits.iter().filter(|&&count| count > 0).count() > SESSIONS / 2, "the visits spread");
    }
}
