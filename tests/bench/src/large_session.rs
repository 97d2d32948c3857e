//! The session figures' workload: a 100,000-entry session file in today's format, opened and its
//! context built, one entry appended and flushed, a fork at the leaf, and the memory that took —
//! through the session crate's public API.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use reins_ai::Message;
use reins_session::{Durability, Header, SessionFile};

/// 2025-01-01T00:00:00Z, where the session starts.
const JANUARY_2025_MS: u64 = 1_735_689_600_000;

const BENCH_ENTRIES: usize = 100_000;

/// Measurements of one run of [`bench_large_session`]; times in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchFigures {
    pub entries: usize,
    pub file_bytes: u64,
    /// Open (lock, read, index) the file.
    pub open_ms: f64,
    /// Build the context at the leaf. The session is compacted every 5,000 entries, as a long
    /// session is (100,000 messages would not fit any model's window), so the context holds the
    /// latest summary, the ~1,000 entries it kept and the ~2,500 after it.
    pub context_ms: f64,
    pub context_messages: usize,
    /// The worst case: the same number of entries without any compaction, all 100,000 messages
    /// in the context (open and build).
    pub uncompacted_open_ms: f64,
    pub uncompacted_context_ms: f64,
    /// Append one message and flush it with [`Durability::Sync`] (one write, one fdatasync).
    pub append_flush_ms: f64,
    /// Append one message and flush it with [`Durability::Write`] (one write).
    pub append_write_ms: f64,
    /// Fork at the leaf: a new file holding the whole path, written ([`Durability::Write`]);
    /// the median of five forks.
    pub fork_ms: f64,
    /// The slowest of those five (a stalled disk shows here).
    pub fork_max_ms: f64,
    /// The same fork written and synced ([`Durability::Sync`]).
    pub fork_sync_ms: f64,
    /// Resident memory of the process before opening and after building the context, in bytes
    /// (`None` where /proc is not available).
    pub rss_before: Option<u64>,
    pub rss_after: Option<u64>,
}

/// Writes a 100,000-entry session into `dir` and measures it (see [`BenchFigures`]).
pub fn bench_large_session(dir: &Path) -> Result<BenchFigures, String> {
    let path = write_large_session(dir, BENCH_ENTRIES, Some(5_000)).map_err(|error| error.to_string())?;
    let file_bytes = std::fs::metadata(&path).map_err(|error| error.to_string())?.len();

    let rss_before = resident_bytes();
    let started = Instant::now();
    let mut session = SessionFile::open(&path).map_err(|error| error.to_string())?;
    let open_ms = elapsed_ms(started);
    let started = Instant::now();
    let context = session.context().map_err(|error| error.to_string())?;
    let context_ms = elapsed_ms(started);
    let rss_after = resident_bytes();
    let context_messages = context.messages.len();
    drop(context);

    let started = Instant::now();
    session.append_message(&Message::user("one more question")).map_err(|error| error.to_string())?;
    session.flush().map_err(|error| error.to_string())?;
    let append_flush_ms = elapsed_ms(started);
    session.set_durability(Durability::Write);
    let started = Instant::now();
    session.append_message(&Message::user("and another one")).map_err(|error| error.to_string())?;
    session.flush().map_err(|error| error.to_string())?;
    let append_write_ms = elapsed_ms(started);

    let leaf = session.leaf().unwrap_or_default().to_string();
    // One fork writes the whole path (~40 MB); a single sample says more about the disk's mood
    // than about the fork, so the figure is the median of five.
    let mut fork_samples = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let fork = session.fork(&leaf).map_err(|error| error.to_string())?;
        fork_samples.push(elapsed_ms(started));
        let path = fork.path().to_path_buf();
        drop(fork);
        let _ = std::fs::remove_file(path);
    }
    fork_samples.sort_by(f64::total_cmp);
    let fork_ms = fork_samples[fork_samples.len() / 2];
    let fork_max_ms = fork_samples.last().copied().unwrap_or(fork_ms);
    session.set_durability(Durability::Sync);
    let started = Instant::now();
    let fork = session.fork(&leaf).map_err(|error| error.to_string())?;
    let fork_sync_ms = elapsed_ms(started);
    drop(fork);

    drop(session);
    let (uncompacted_open_ms, uncompacted_context_ms) = {
        let path =
            write_large_session(&dir.join("uncompacted"), BENCH_ENTRIES, None).map_err(|error| error.to_string())?;
        let started = Instant::now();
        let session = SessionFile::open(&path).map_err(|error| error.to_string())?;
        let open_ms = elapsed_ms(started);
        let started = Instant::now();
        session.context().map_err(|error| error.to_string())?;
        (open_ms, elapsed_ms(started))
    };
    Ok(BenchFigures {
        entries: BENCH_ENTRIES,
        file_bytes,
        open_ms,
        context_ms,
        context_messages,
        uncompacted_open_ms,
        uncompacted_context_ms,
        append_flush_ms,
        append_write_ms,
        fork_ms,
        fork_max_ms,
        fork_sync_ms,
        rss_before,
        rss_after,
    })
}

/// Writes a linear session of `entries` entries shaped like a coding run (user asks, assistant
/// calls `read`, the result comes back, assistant answers), with a compaction every
/// `compaction_every` entries keeping the last ~1,000 entries before it, and returns its path.
pub(crate) fn write_large_session(
    dir: &Path,
    entries: usize,
    compaction_every: Option<usize>,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let start_ms = JANUARY_2025_MS;
    let header =
        Header::new("0194a3b2-0000-7000-8000-000000000001".into(), iso_from_ms(start_ms), "/work/bench".into(), None);
    let path = dir.join(format!("{}_{}.jsonl", header.timestamp.replace([':', '.'], "-"), header.id));
    let mut out = String::with_capacity(entries * 420);
    out.push_str(&header.to_line());
    out.push('\n');
    let usage = r#"{"input":1200,"output":80,"cacheRead":0,"cacheWrite":0,"totalTokens":1280,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    let mut user_ids: Vec<usize> = Vec::new();
    let mut step = 0;
    for n in 0..entries {
        let id = format!("{n:08x}");
        let parent = if n == 0 { "null".to_string() } else { format!("\"{:08x}\"", n - 1) };
        let ms = start_ms + n as u64 * 1000;
        let stamp = iso_from_ms(ms);
        if compaction_every.is_some_and(|every| n % every == every / 2) {
            let kept = user_ids.iter().rev().find(|&&at| at + 1000 <= n).copied().unwrap_or(0);
            out.push_str(&format!(
                r#"{{"type":"compaction","id":"{id}","parentId":{parent},"timestamp":"{stamp}","summary":"Goal: read every module and explain it.\nProgress: modules up to {} done.","firstKeptEntryId":"{kept:08x}","tokensBefore":180000}}"#,
                step / 4
            ));
            out.push('\n');
            continue;
        }
        let turn = step / 4;
        let message = match step % 4 {
            0 => {
                user_ids.push(n);
                format!(
                    r#"{{"role":"user","content":[{{"type":"text","text":"Step {turn}: look at src/module_{turn}.rs and tell me what the function there does."}}],"timestamp":{ms}}}"#
                )
            }
            1 => format!(
                r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"call_{turn}","name":"read","arguments":{{"path":"src/module_{turn}.rs"}}}}],"api":"openai-completions","provider":"scripted","model":"bench-model","usage":{usage},"stopReason":"toolUse","timestamp":{ms}}}"#
            ),
            2 => format!(
                r#"{{"role":"toolResult","toolCallId":"call_{turn}","toolName":"read","content":[{{"type":"text","text":"pub fn step_{turn}(input: &str) -> usize {{\n    input.lines().filter(|line| !line.trim().is_empty()).count()\n}}\n"}}],"isError":false,"timestamp":{ms}}}"#
            ),
            _ => format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"`step_{turn}` counts the non-blank lines of its input and returns that number."}}],"api":"openai-completions","provider":"scripted","model":"bench-model","usage":{usage},"stopReason":"stop","timestamp":{ms}}}"#
            ),
        };
        step += 1;
        out.push_str(&format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{stamp}","message":{message}}}"#
        ));
        out.push('\n');
    }
    std::fs::File::create(&path)?.write_all(out.as_bytes())?;
    Ok(path)
}

/// An ISO timestamp (UTC) of `ms` since the epoch, for the days the session spans (January 2025).
fn iso_from_ms(ms: u64) -> String {
    let secs = (ms - JANUARY_2025_MS) / 1000;
    let (day, rest) = (1 + secs / 86_400, secs % 86_400);
    format!("2025-01-{day:02}T{:02}:{:02}:{:02}.{:03}Z", rest / 3600, rest / 60 % 60, rest % 60, ms % 1000)
}

fn elapsed_ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

/// VmRSS of this process from /proc, in bytes.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
