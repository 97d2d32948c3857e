//! Making many files durable with one sync: a checkout writes tens of files, and a sync of each
//! is one commit of the filesystem's journal and one flush of the disk's cache each (50 files:
//! 6–47× git's time, which syncs none). On Linux, `syncfs(2)` commits every file and every name
//! of a filesystem at once; elsewhere each file is synced on its own. A few files (the
//! directories whose names changed, a session file) are synced each on its own on Linux too:
//! `syncfs` also writes back every other dirty file of the filesystem, other programs' too, which
//! on a busy machine costs more than a few commits of its journal.

use std::fs::File;
use std::io;

/// Up to this many files are synced each on its own.
const EACH_UP_TO: usize = 4;

/// Makes the data of `files` (and the entries of directories among them) durable: one sync per
/// filesystem they are on, or one per file for a few. Answers how many syncs that took.
pub fn sync_together(files: &[&File]) -> io::Result<usize> {
    #[cfg(target_os = "linux")]
    if files.len() > EACH_UP_TO {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        let mut devices = Vec::new();
        for file in files {
            let device = file.metadata()?.dev();
            if devices.contains(&device) {
                continue;
            }
            devices.push(device);
            // SAFETY: the descriptor is open for the call (`file` is borrowed).
            if unsafe { libc::syncfs(file.as_raw_fd()) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        return Ok(devices.len());
    }
    files.iter().try_for_each(|file| file.sync_all())?;
    Ok(files.len())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn fifty_files_of_one_filesystem_take_one_sync() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<File> = (0..50)
            .map(|n| {
                let mut file = File::create(dir.path().join(format!("f{n}"))).unwrap();
                file.write_all(format!("file {n}\n").as_bytes()).unwrap();
                file
            })
            .collect();
        let directory = File::open(dir.path()).unwrap();
        let mut all: Vec<&File> = files.iter().collect();
        all.push(&directory);
        let expected = if cfg!(target_os = "linux") { 1 } else { 51 };
        assert_eq!(sync_together(&all).unwrap(), expected);
        assert_eq!(sync_together(&all[..3]).unwrap(), 3, "a few files are synced each on its own");
        assert_eq!(sync_together(&[]).unwrap(), 0);
    }
}
