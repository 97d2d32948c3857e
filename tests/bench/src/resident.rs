//! Where a process's resident memory is: its anonymous pages (heap, stacks, relocated data) and
//! the pages of files it maps (the binary's code and read-only data, shared libraries), read from
//! `/proc/PID/status`, and how much of the second kind is the program's own binary (from
//! `/proc/PID/smaps`). An idle `reins lsp` is mostly file-backed pages, so a smaller binary, and
//! code that is not run kept out of the pages that are, is what makes it small.

use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::Duration;

use crate::lsp::Client;

/// How long the idle server is left alone before it is measured: past its start-up work.
const SETTLE: Duration = Duration::from_millis(1500);
/// How often a running process's resident memory is sampled for its peaks.
const SAMPLE_EVERY: Duration = Duration::from_millis(2);
/// One sample in this many also reads the mappings for the binary's part (a longer read).
const MAPPINGS_EVERY: u32 = 25;

/// Resident memory of a process, in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Resident {
    pub total_kib: u64,
    pub anonymous_kib: u64,
    pub file_kib: u64,
    /// The part of `file_kib` that is pages of the program's own executable.
    pub binary_kib: u64,
}

impl Resident {
    /// The resident memory of process `pid` now; `None` where `/proc` cannot tell.
    pub fn of(pid: u32) -> Option<Resident> {
        let resident = Resident::of_status(pid)?;
        Some(Resident { binary_kib: binary_kib(pid).unwrap_or(0), ..resident })
    }

    /// [`Resident::of`] without the binary's part: `/proc/PID/status` alone, cheap to sample.
    fn of_status(pid: u32) -> Option<Resident> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |name: &str| -> Option<u64> {
            let line = status.lines().find(|line| line.starts_with(name))?;
            line[name.len()..].split_whitespace().next()?.parse().ok()
        };
        Some(Resident {
            total_kib: field("VmRSS:")?,
            anonymous_kib: field("RssAnon:")?,
            file_kib: field("RssFile:")?,
            binary_kib: 0,
        })
    }

    /// The larger of each part of `self` and `other` (the parts may peak at different moments).
    fn max(self, other: Resident) -> Resident {
        Resident {
            total_kib: self.total_kib.max(other.total_kib),
            anonymous_kib: self.anonymous_kib.max(other.anonymous_kib),
            file_kib: self.file_kib.max(other.file_kib),
            binary_kib: self.binary_kib.max(other.binary_kib),
        }
    }
}

/// The resident KiB of the mappings of process `pid`'s own executable, from `/proc/PID/smaps`.
fn binary_kib(pid: u32) -> Option<u64> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let exe = exe.to_str()?;
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    let mut ours = false;
    let mut kib = 0;
    for line in smaps.lines() {
        // A mapping's header starts with its address range; its path, if any, is the sixth field.
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or_default();
        if first.contains('-') && !first.ends_with(':') {
            ours = fields.nth(4) == Some(exe);
        } else if ours && first == "Rss:" {
            kib += fields.next().and_then(|value| value.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    Some(kib)
}

/// Waits for `child`, sampling its resident memory meanwhile: its exit status and the peak of
/// each part seen (the kernel keeps only the peak of the whole, VmHWM).
pub fn wait_sampling(child: &mut Child) -> std::io::Result<(ExitStatus, Resident)> {
    let mut peak = Resident::default();
    for sample in 0u32.. {
        if let Some(status) = child.try_wait()? {
            return Ok((status, peak));
        }
        let now = match sample % MAPPINGS_EVERY {
            0 => Resident::of(child.id()),
            _ => Resident::of_status(child.id()),
        };
        if let Some(now) = now {
            peak = peak.max(now);
        }
        std::thread::sleep(SAMPLE_EVERY);
    }
    child.wait().map(|status| (status, peak))
}

/// The resident memory of a `reins lsp` that was initialized and then left idle.
pub async fn idle_lsp(reins: &Path, workspace: &Path) -> Result<Resident, String> {
    // Nothing listens there: an idle server never calls its model.
    let mut client = Client::spawn(reins, workspace, "http://127.0.0.1:9/v1")?;
    client.initialize(workspace).await?;
    tokio::time::sleep(SETTLE).await;
    let pid = client.child.id().ok_or("the server has no pid")?;
    let resident = Resident::of(pid).ok_or_else(|| format!("cannot read /proc/{pid}/status"));
    client.child.kill().await.ok();
    resident
}
