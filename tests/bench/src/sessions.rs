//! Session figures: a 100,000-entry session file opened and its context built, one entry
//! appended and flushed, a fork, and the memory it took — against the session targets.

use reins_session::{BenchFigures, bench_large_session};

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
    print(&figures)
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
