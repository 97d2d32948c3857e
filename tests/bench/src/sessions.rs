//! Session figures: a 100,000-entry session file opened and its context built, one entry
//! appended and flushed, a fork, and the memory it took — against the session targets; and the
//! same open and context for a session in pi 1.6's shape, as a ratio to today's format.

use std::time::Instant;

use reins_session::SessionFile;

use crate::large_session::{BenchFigures, bench_large_session};

use crate::pi16;

/// Prints the figures and their targets; true when a target is missed.
pub fn measure() -> bool {
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(err) => {
            println!("\nsessions not measured: {err}");
            return true;
        }
    };
    let figures = match bench_large_session(dir.path()) {
        Ok(figures) => figures,
        Err(err) => {
            println!("\nsessions not measured: {err}");
            return true;
        }
    };
    let missed = print(&figures);
    missed | measure_pi16(dir.path(), figures.entries, figures.open_ms + figures.context_ms)
}

/// Open + context of a 100,000-entry pi 1.6 session (the median of three), next to
/// `today_ms`, the same for today's format measured in this run.
fn measure_pi16(dir: &std::path::Path, entries: usize, today_ms: f64) -> bool {
    let path = match pi16::write(&dir.join("pi-1.6"), entries) {
        Ok(path) => path,
        Err(err) => {
            println!(
                "
pi 1.6 session not measured: {err}"
            );
            return true;
        }
    };
    let mut samples = Vec::new();
    let mut messages = 0;
    for _ in 0..3 {
        let started = Instant::now();
        let context = SessionFile::open(&path).and_then(|session| session.context());
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        match context {
            Ok(context) => messages = context.messages.len(),
            Err(err) => {
                println!(
                    "
pi 1.6 session not measured: {err}"
                );
                return true;
            }
        }
    }
    samples.sort_by(f64::total_cmp);
    let ms = samples[1];
    let bytes = std::fs::metadata(&path).map_or(0, |meta| meta.len());
    println!(
        "
pi 1.6 session ({} entries, {:.1} MB: system messages, context edits, checkpoints)",
        entries,
        bytes as f64 / (1024.0 * 1024.0)
    );
    println!(
        "  open + context             {ms:>9.1} ms  (median of 3; {messages} messages; {:.2}x today's format)",
        ms / today_ms
    );
    let ok = ms < 150.0;
    println!("  [{}] open and build the context under 150 ms", if ok { "ok" } else { "MISSED" });
    !ok
}

fn print(f: &BenchFigures) -> bool {
    let mb = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let rss_growth = match (f.rss_before, f.rss_after) {
        (Some(before), Some(after)) => Some(after.saturating_sub(before)),
        _ => None,
    };
    println!("\nsessions ({} entries, {:.1} MB file)", f.entries, mb(f.file_bytes));
    println!(
        "  open + context             {:>9.1} ms  ({:.1} + {:.1}; {} messages)",
        f.open_ms + f.context_ms,
        f.open_ms,
        f.context_ms,
        f.context_messages
    );
    println!("  open + context, no compaction {:>6.1} ms", f.uncompacted_open_ms + f.uncompacted_context_ms);
    println!("  append + flush (write)     {:>9.3} ms  (the turn-end save point)", f.append_write_ms);
    println!("  append + flush (fsync)     {:>9.3} ms  (the run-end save point)", f.append_flush_ms);
    println!(
        "  fork at the leaf           {:>9.1} ms  (median of 5, slowest {:.1}; {:.1} ms with fsync)",
        f.fork_ms, f.fork_max_ms, f.fork_sync_ms
    );
    if let Some(growth) = rss_growth {
        println!(
            "  RSS for the open session   {:>9.1} MB  ({:.2}x the file)",
            mb(growth),
            growth as f64 / f.file_bytes as f64
        );
    }
    let checks = [
        ("open and build the context under 150 ms", f.open_ms + f.context_ms < 150.0),
        ("append and flush one entry under 1 ms", f.append_write_ms < 1.0),
        ("fork under 50 ms", f.fork_ms < 50.0),
        ("RSS under 3x the file size", rss_growth.is_some_and(|growth| growth < 3 * f.file_bytes)),
    ];
    println!("\nsession targets:");
    for (name, ok) in checks {
        println!("  [{}] {name}", if ok { "ok" } else { "MISSED" });
    }
    checks.iter().any(|(_, ok)| !ok)
}
