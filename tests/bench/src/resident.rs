//! Where a process's resident memory is: its anonymous pages (heap, stacks, relocated data) and
//! the pages of files it maps (the binary's code and read-only data, shared libraries), read from
//! `/proc/PID/status`. An idle `reins lsp` is mostly the second kind, so a smaller binary, and
//! code that is not run kept out of the pages that are, is what makes it small.

use std::path::Path;
use std::time::Duration;

use crate::lsp::Client;

/// How long the idle server is left alone before it is measured: past its start-up work.
const SETTLE: Duration = Duration::from_millis(1500);

/// Resident memory of a process, in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Resident {
    pub total_kib: u64,
    pub anonymous_kib: u64,
    pub file_kib: u64,
}

impl Resident {
    /// The resident memory of process `pid` now; `None` where `/proc` cannot tell.
    pub fn of(pid: u32) -> Option<Resident> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |name: &str| -> Option<u64> {
            let line = status.lines().find(|line| line.starts_with(name))?;
            line[name.len()..].split_whitespace().next()?.parse().ok()
        };
        Some(Resident { total_kib: field("VmRSS:")?, anonymous_kib: field("RssAnon:")?, file_kib: field("RssFile:")? })
    }
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
