//! Edit review figures: how long a proposal of 10 scattered edits in a 20,000-line file takes to
//! become hunks (the review core) and `TextEdit`s (the language server's positions), against
//! its 10 ms target.

use std::time::{Duration, Instant};

use reins_lsp::{PositionEncoding, text_edits};

const FILE_LINES: usize = 20_000;
const EDITS: usize = 10;
const RUNS: usize = 21;
const TARGET: Duration = Duration::from_millis(10);

/// Prints the figure and its target; true when the target is missed.
pub fn measure() -> bool {
    let (old, new) = proposal();
    let mut samples = Vec::with_capacity(RUNS);
    let mut hunk_count = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        let hunks = reins_review::hunks(&old, &new, Duration::from_secs(1));
        let edits = text_edits(&old, &hunks, PositionEncoding::Utf16);
        samples.push(start.elapsed());
        hunk_count = edits.len();
    }
    samples.sort();
    let median = samples[samples.len() / 2];
    println!("\nedit review ({FILE_LINES} lines, {EDITS} scattered edits)");
    println!("  hunks + TextEdits          {:>9.2} ms  ({hunk_count} hunks)", median.as_secs_f64() * 1000.0);
    let checks = [("proposal ready under 10 ms", median < TARGET), ("one hunk per edit", hunk_count == EDITS)];
    println!("\nedit review targets:");
    for (name, ok) in checks {
        println!("  [{}] {name}", if ok { "ok" } else { "MISSED" });
    }
    checks.iter().any(|(_, ok)| !ok)
}

/// A source-like file and the same file with `EDITS` edits spread through it: renamed words,
/// inserted lines and deleted lines, with a few non-ASCII characters to count in UTF-16.
fn proposal() -> (String, String) {
    let line = |n: usize| format!("    let value_{n} = compute({n}, \"text é 中 {n}\"); // step {n}\n");
    let every = FILE_LINES / EDITS;
    let mut old = String::new();
    let mut new = String::new();
    for n in 0..FILE_LINES {
        let original = line(n);
        old.push_str(&original);
        if n % every != every / 2 {
            new.push_str(&original);
            continue;
        }
        match (n / every) % 3 {
            0 => new.push_str(&original.replace("compute", "evaluate")),
            1 => {
                new.push_str(&original);
                new.push_str("    tracing::debug!(\"checked 😀\");\n");
            }
            _ => {}
        }
    }
    (old, new)
}
