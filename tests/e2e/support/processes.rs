//! Processes as a test sees them in `/proc`: to wait for the commands a run started and to see
//! them end (a command's own `$!` is a pid of its namespace, so they are found by command line).

use std::time::{Duration, Instant};

/// Waits until every one of `command_lines` runs, and gives their pids as this test sees them.
pub async fn wait_for(command_lines: &[String]) -> Vec<i32> {
    let started = Instant::now();
    loop {
        let pids: Vec<Option<i32>> = command_lines.iter().map(|line| running(line)).collect();
        if pids.iter().all(Option::is_some) {
            return pids.into_iter().flatten().collect();
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the commands never started: {pids:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The process running exactly `command_line` (its words joined by spaces).
pub fn running(command_line: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
        let words = std::fs::read(entry.path().join("cmdline")).ok()?;
        let words: Vec<String> = words
            .split(|&byte| byte == 0)
            .filter(|word| !word.is_empty())
            .map(|word| String::from_utf8_lossy(word).into_owned())
            .collect();
        (words.join(" ") == command_line).then_some(pid)
    })
}

/// The first child of `pid`.
pub fn child_of(pid: i32) -> Option<i32> {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

/// Waits up to five seconds for `pid` to end (or linger only as a zombie).
pub async fn wait_until_gone(pid: i32) -> bool {
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) if stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')) => return true,
            Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    false
}
