//! The full-output files bash keeps, over the whole process: each lives until its session is
//! released (its tool's directory goes), and together they stay under
//! [`MAX_TOTAL_OUTPUT_BYTES`] — past it, the oldest go first, whichever session kept them — so a
//! server that runs all day does not fill the temporary directory.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

/// The most bytes of full-output files the process keeps at once: sixteen files at the cap of
/// one ([`crate::DEFAULT_MAX_OUTPUT_FILE_BYTES`]).
pub const MAX_TOTAL_OUTPUT_BYTES: u64 = 256 * 1024 * 1024;

/// The files kept, oldest first, with their sizes.
struct Kept {
    files: VecDeque<(PathBuf, u64)>,
    bytes: u64,
}

static KEPT: Mutex<Kept> = Mutex::new(Kept::new());

impl Kept {
    const fn new() -> Self {
        Kept { files: VecDeque::new(), bytes: 0 }
    }

    /// Counts a new file, then removes the oldest until the total fits `cap` (the new file
    /// stays, whatever its size). Files already gone — their session was released — are
    /// forgotten first. Answers the files removed.
    fn keep(&mut self, path: PathBuf, bytes: u64, cap: u64) -> Vec<PathBuf> {
        self.files.retain(|(path, _)| path.exists());
        self.files.push_back((path, bytes));
        self.bytes = self.files.iter().map(|(_, bytes)| bytes).sum();
        let mut removed = Vec::new();
        while self.bytes > cap && self.files.len() > 1 {
            let Some((old, bytes)) = self.files.pop_front() else { break };
            self.bytes -= bytes;
            if let Err(err) = std::fs::remove_file(&old) {
                tracing::debug!("bash: removing the old output file {}: {err}", old.display());
            }
            removed.push(old);
        }
        removed
    }
}

/// Counts `path`, a full-output file just kept, against the process's total; the oldest files
/// go when the total passes [`MAX_TOTAL_OUTPUT_BYTES`].
pub(crate) fn keep(path: PathBuf) {
    let bytes = std::fs::metadata(&path).map_or(0, |meta| meta.len());
    KEPT.lock().unwrap_or_else(PoisonError::into_inner).keep(path, bytes, MAX_TOTAL_OUTPUT_BYTES);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_files_go_once_the_total_passes_the_cap_and_gone_files_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: usize| {
            let path = dir.path().join(name);
            std::fs::write(&path, vec![b'x'; bytes]).unwrap();
            path
        };
        let mut kept = Kept::new();
        let name = |paths: Vec<PathBuf>| -> Vec<String> {
            paths.iter().map(|path| path.file_name().unwrap().to_string_lossy().into_owned()).collect()
        };
        assert_eq!(name(kept.keep(file("a", 40), 40, 100)), Vec::<String>::new());
        assert_eq!(name(kept.keep(file("b", 40), 40, 100)), Vec::<String>::new());
        assert_eq!(name(kept.keep(file("c", 40), 40, 100)), ["a"]);
        assert!(!dir.path().join("a").exists() && dir.path().join("b").exists());
        // A session released: its file is gone and no longer counts.
        std::fs::remove_file(dir.path().join("b")).unwrap();
        assert_eq!(name(kept.keep(file("d", 40), 40, 100)), Vec::<String>::new());
        assert_eq!(kept.bytes, 80);
        // A file over the cap alone stays; every older one goes.
        assert_eq!(name(kept.keep(file("e", 500), 500, 100)), ["c", "d"]);
        assert_eq!(kept.bytes, 500);
    }
}
