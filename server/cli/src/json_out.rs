//! Standard output of `reins run` (its `--json` events, and the line a built-in command
//! answers with): the events of one wakeup of the run go out in one write. A turn streams tens of deltas; written one by one, each cost the run a system call and
//! its reader a wakeup. What is gathered goes out before the run waits for anything (the
//! runtime's park, [`flush`]), before a tool runs, when an event comes from another thread than
//! the run's, and at the end.

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;

/// Past this, what is gathered goes out at once.
const MAX_PENDING: usize = 64 * 1024;

static PENDING: Mutex<Vec<u8>> = Mutex::new(Vec::new());
/// The thread the run's runtime parks on: only its events may wait for the park.
static RUN_THREAD: OnceLock<ThreadId> = OnceLock::new();

/// The calling thread is the one whose runtime calls [`flush`] before it parks.
pub fn runs_here() {
    let _ = RUN_THREAD.set(std::thread::current().id());
}

/// Adds `line` (one JSON object) to standard output; `now` writes it out at once, with what
/// came before it.
pub fn print(line: &str, now: bool) {
    let mut pending = PENDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    pending.extend_from_slice(line.as_bytes());
    end_line(&mut pending, now);
}

/// [`print`] of `value` as one line of JSON, written straight into what is gathered: a run
/// prints tens of events a turn, none of which needs a string of its own.
pub fn print_json(value: &impl serde::Serialize, now: bool) {
    let mut pending = PENDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let start = pending.len();
    // Wire shapes are plain data and cannot fail to serialize; if one did, what it began is
    // taken back and the line says `null`.
    if serde_json::to_writer(&mut *pending, value).is_err() {
        pending.truncate(start);
        pending.extend_from_slice(b"null");
    }
    end_line(&mut pending, now);
}

fn end_line(pending: &mut Vec<u8>, now: bool) {
    pending.push(b'\n');
    let other_thread = RUN_THREAD.get().is_none_or(|run| *run != std::thread::current().id());
    if now || other_thread || pending.len() > MAX_PENDING {
        write_out(pending);
    }
}

/// Writes out what was gathered.
pub fn flush() {
    let mut pending = PENDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !pending.is_empty() {
        write_out(&mut pending);
    }
}

fn write_out(pending: &mut Vec<u8>) {
    let mut stdout = std::io::stdout().lock();
    // A closed pipe only means nobody is listening any more.
    let _ = stdout.write_all(pending).and_then(|()| stdout.flush());
    pending.clear();
}
