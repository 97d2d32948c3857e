//! The side store: file contents a session's records refer to by hash rather than hold (binary
//! files), in a directory next to the session file (`<session>.files/<sha256>`). A fork reads its
//! parent sessions' stores too, since its records were copied from them.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// How many parent sessions a fork's store looks through (a cycle of `parentSession`s ends here).
const MAX_PARENTS: usize = 16;

#[derive(Debug, Clone, Default)]
pub struct SideStore {
    /// Where new contents go (this session's directory), then the parents' directories.
    dirs: Vec<PathBuf>,
}

impl SideStore {
    /// The store in `dir` alone.
    pub fn new(dir: PathBuf) -> Self {
        SideStore { dirs: vec![dir] }
    }

    /// The store of the session file at `session`, reading through the stores of the sessions it
    /// was forked from (their paths from each file's header).
    pub fn of_session(session: &Path) -> Self {
        let mut dirs = vec![store_dir(session)];
        let mut current = session.to_path_buf();
        for _ in 0..MAX_PARENTS {
            let Some(parent) = parent_session(&current) else { break };
            if dirs.contains(&store_dir(&parent)) {
                break;
            }
            dirs.push(store_dir(&parent));
            current = parent;
        }
        SideStore { dirs }
    }

    /// Keeps `bytes` (once: the name is their hash) and returns their hash.
    pub fn put(&self, bytes: &[u8]) -> io::Result<String> {
        let hash = sha256_hex(bytes);
        let Some(dir) = self.dirs.first() else { return Err(io::Error::other("the side store has no directory")) };
        let path = dir.join(&hash);
        if path.exists() {
            return Ok(hash);
        }
        std::fs::create_dir_all(dir)?;
        let mut temp = tempfile::Builder::new().prefix(".put-").tempfile_in(dir)?;
        temp.write_all(bytes)?;
        temp.as_file().sync_all()?;
        temp.persist(&path).map_err(|err| err.error)?;
        Ok(hash)
    }

    /// The bytes stored under `hash`, checked against it.
    pub fn get(&self, hash: &str) -> io::Result<Vec<u8>> {
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{hash:?} is not a SHA-256 hash")));
        }
        for dir in &self.dirs {
            match read_regular(&dir.join(hash)) {
                Ok(bytes) if sha256_hex(&bytes) == hash => return Ok(bytes),
                Ok(_) => tracing::warn!("{}: the stored content does not match its hash", dir.join(hash).display()),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => return Err(err),
            }
        }
        Err(io::Error::new(io::ErrorKind::NotFound, format!("no stored content {hash} next to the session")))
    }
}

/// `<dir>/<name>.jsonl` → `<dir>/<name>.files`.
pub fn store_dir(session: &Path) -> PathBuf {
    session.with_extension("files")
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Hex SHA-256 of the file at `path`, read through a buffer on the stack (a checkout hashes
/// every file it writes, and reading each whole into fresh memory cost more than the hash);
/// `None` when there is no such file. Anything but a regular file (a FIFO put there) is an
/// error, never waited on.
pub fn sha256_of_file(path: &Path) -> std::io::Result<Option<String>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    let mut hasher = Sha256::new();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match file.read(&mut buffer) {
            Ok(0) => return Ok(Some(hex(&hasher.finalize()))),
            Ok(read) => hasher.update(&buffer[..read]),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
}

fn hex(digest: &[u8]) -> String {
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        hex.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        hex.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    hex
}

/// The bytes of the regular file at `path` (a FIFO or a device planted in a store is refused
/// without blocking).
fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file =
        reins_session::open_regular(path, std::fs::OpenOptions::new().read(true)).map_err(|err| match err {
            reins_session::SessionError::Io { source, .. } => source,
            other => io::Error::new(io::ErrorKind::InvalidData, other.to_string()),
        })?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The `parentSession` of the session file at `path`, read from its header line alone. The
/// header names any path: only a regular file is read, and opening it never blocks (a FIFO
/// would hold the run's checkpoints, or a checkout, for ever).
fn parent_session(path: &Path) -> Option<PathBuf> {
    use std::io::{BufRead, BufReader, Read};
    let file = match reins_session::open_regular(path, std::fs::OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(reins_session::SessionError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return None,
        Err(err) => {
            tracing::warn!("not reading the stored contents of parent session {}: {err}", path.display());
            return None;
        }
    };
    let mut line = Vec::new();
    BufReader::new(file.take(1 << 20)).read_until(b'\n', &mut line).ok()?;
    let header = reins_session::Header::parse(std::str::from_utf8(&line).ok()?.trim()).ok()?;
    header.parent_session.map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_are_kept_by_hash_and_checked_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = SideStore::new(dir.path().join("s.files"));
        let hash = store.put(b"\x00\x01binary").unwrap();
        assert_eq!(store.put(b"\x00\x01binary").unwrap(), hash);
        assert_eq!(store.get(&hash).unwrap(), b"\x00\x01binary");
        std::fs::write(dir.path().join("s.files").join(&hash), b"tampered").unwrap();
        assert_eq!(store.get(&hash).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(store.get("../../etc/passwd").unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_fork_reads_its_parents_stores() {
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("a.jsonl");
        let child = dir.path().join("b.jsonl");
        std::fs::write(&parent, "{\"type\":\"session\",\"version\":3,\"id\":\"a\",\"cwd\":\"/w\"}\n").unwrap();
        let header = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"b\",\"cwd\":\"/w\",\"parentSession\":{:?}}}\n",
            parent.display().to_string()
        );
        std::fs::write(&child, header).unwrap();
        let hash = SideStore::of_session(&parent).put(b"from the parent").unwrap();
        assert_eq!(SideStore::of_session(&child).get(&hash).unwrap(), b"from the parent");
        // A session that names itself as its parent does not loop.
        std::fs::write(
            &parent,
            format!(
                "{{\"type\":\"session\",\"version\":3,\"id\":\"a\",\"cwd\":\"/w\",\"parentSession\":{:?}}}\n",
                parent.display().to_string()
            ),
        )
        .unwrap();
        assert_eq!(SideStore::of_session(&parent).dirs.len(), 1);
    }

    #[test]
    fn a_parent_that_is_not_a_regular_file_is_skipped_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let (fifo, child) = (dir.path().join("fifo.jsonl"), dir.path().join("b.jsonl"));
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let header = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"b\",\"cwd\":\"/w\",\"parentSession\":{:?}}}\n",
            fifo.display().to_string()
        );
        std::fs::write(&child, header).unwrap();
        // Returns (reading the FIFO's header would wait for a writer for ever), and looks no
        // further than the FIFO's own store.
        assert_eq!(SideStore::of_session(&child).dirs.len(), 2);
        // Nor is a FIFO planted in a store under a hash read.
        let store = SideStore::new(dir.path().join("s.files"));
        let hash = sha256_hex(b"x");
        std::fs::create_dir_all(dir.path().join("s.files")).unwrap();
        assert!(
            std::process::Command::new("mkfifo")
                .arg(dir.path().join("s.files").join(&hash))
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(store.get(&hash).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
