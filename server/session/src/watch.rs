//! What changed in a session directory since it was last asked, so that a listing re-reads only
//! those files: on Linux an inotify watch of the directory names each file created, written,
//! touched, renamed or deleted — by this process or any other (pi, another reins). Where there
//! is no watch (another system, no inotify left, the directory not made yet, a lost event), the
//! answer is "anything", and the caller reads the whole directory again, as it did before.
//!
//! What a watch of the directory cannot see: writes to the target of a symbolic link (the
//! index reads those files again each time), through a hard link in another directory, or from
//! another machine to a network file system; those show in the next process.

use std::collections::HashSet;
use std::path::Path;

/// The changes since the last call of [`DirWatch::changes`].
#[derive(Debug, PartialEq)]
pub enum Changes {
    /// Only these file names changed (none: nothing did).
    Named(HashSet<String>),
    /// Anything may have changed: read the directory again.
    Unknown,
}

/// A watch of one session directory.
#[derive(Debug, Default)]
pub struct DirWatch {
    #[cfg(target_os = "linux")]
    inotify: Option<rustix::fd::OwnedFd>,
}

#[cfg(target_os = "linux")]
impl DirWatch {
    /// The changes in `dir` since the last call; [`Changes::Unknown`] the first time (the watch
    /// starts then, before the caller reads the directory, so no change falls in between) and
    /// whenever the watch cannot say.
    pub fn changes(&mut self, dir: &Path) -> Changes {
        use rustix::fs::inotify::{self, ReadFlags};
        use rustix::io::Errno;

        let Some(fd) = &self.inotify else {
            self.inotify = start(dir);
            return Changes::Unknown;
        };
        let mut names = HashSet::new();
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 16 << 10];
        let mut reader = inotify::Reader::new(fd, &mut buf);
        let lost = ReadFlags::QUEUE_OVERFLOW | ReadFlags::IGNORED | ReadFlags::UNMOUNT;
        let gone = ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF;
        let kept = loop {
            match reader.next() {
                // Events were dropped, or the directory itself went: watch anew.
                Ok(event) if event.events().intersects(lost | gone) => break false,
                Ok(event) => {
                    if let Some(name) = event.file_name().and_then(|name| name.to_str().ok()) {
                        names.insert(name.to_string());
                    }
                }
                Err(Errno::AGAIN) => break true,
                Err(Errno::INTR) => continue,
                Err(err) => {
                    tracing::debug!("the watch of {} failed: {err}; reading the directory", dir.display());
                    break false;
                }
            }
        };
        if kept {
            Changes::Named(names)
        } else {
            self.inotify = None;
            Changes::Unknown
        }
    }
}

/// A non-blocking inotify watch of `dir`'s entries, `None` when one cannot be had.
#[cfg(target_os = "linux")]
fn start(dir: &Path) -> Option<rustix::fd::OwnedFd> {
    use rustix::fs::inotify::{self, CreateFlags, WatchFlags};

    let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()?;
    let what = WatchFlags::CREATE
        | WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::DELETE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::ONLYDIR;
    inotify::add_watch(&fd, dir, what).ok()?;
    Some(fd)
}

#[cfg(not(target_os = "linux"))]
impl DirWatch {
    /// Always [`Changes::Unknown`]: the caller reads the directory.
    pub fn changes(&mut self, _dir: &Path) -> Changes {
        Changes::Unknown
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn named(names: &[&str]) -> Changes {
        Changes::Named(names.iter().map(|name| name.to_string()).collect())
    }

    #[test]
    fn a_watch_names_the_files_created_written_renamed_and_deleted_since_it_was_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("sessions");
        let mut watch = DirWatch::default();
        // No directory yet: no watch, and again no watch until it is made.
        assert_eq!(watch.changes(&dir), Changes::Unknown);
        assert_eq!(watch.changes(&dir), Changes::Unknown);
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(watch.changes(&dir), Changes::Unknown);
        assert_eq!(watch.changes(&dir), named(&[]));

        std::fs::write(dir.join("a.jsonl"), "one\n").unwrap();
        assert_eq!(watch.changes(&dir), named(&["a.jsonl"]));
        assert_eq!(watch.changes(&dir), named(&[]));
        {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new().append(true).open(dir.join("a.jsonl")).unwrap();
            file.write_all(b"two\n").unwrap();
        }
        std::fs::rename(dir.join("a.jsonl"), dir.join("b.jsonl")).unwrap();
        assert_eq!(watch.changes(&dir), named(&["a.jsonl", "b.jsonl"]));
        std::fs::remove_file(dir.join("b.jsonl")).unwrap();
        assert_eq!(watch.changes(&dir), named(&["b.jsonl"]));

        // The directory goes: the watch says so, and starts again once there is one.
        std::fs::remove_dir(&dir).unwrap();
        assert_eq!(watch.changes(&dir), Changes::Unknown);
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(watch.changes(&dir), Changes::Unknown);
        assert_eq!(watch.changes(&dir), named(&[]));
    }
}
