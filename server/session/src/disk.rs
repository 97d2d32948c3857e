//! Opening session files without trusting what the directory holds: only regular files are read
//! (a FIFO named like a session would block a reader for ever, a symlink to `/dev/zero` would fill
//! memory), the open itself never blocks, and a file over [`MAX_SESSION_BYTES`] is refused
//! before it is read.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

use crate::error::SessionError;

/// The largest session file reins reads: far above any real conversation (100,000 entries take
/// about 40 MB), far below what would exhaust memory.
pub const MAX_SESSION_BYTES: u64 = 1 << 30;

/// The longest line (one entry) a session may hold: far above a message with a large image or
/// tool output, far below what would make one entry cost gigabytes to read and send. A longer
/// line is skipped with a warning, as a line that cannot be read is.
pub const MAX_ENTRY_BYTES: usize = 32 << 20;

/// Opens `path` with `options`, without blocking, and checks through the open handle (so the
/// answer cannot change between the check and the read) that it is a regular file of at most
/// [`MAX_SESSION_BYTES`].
pub fn open_regular(path: &Path, options: &mut OpenOptions) -> Result<File, SessionError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO for reading waits for a writer; with O_NONBLOCK it returns at once and
        // the type check below refuses it.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|error| SessionError::io(path, error))?;
    let meta = file.metadata().map_err(|error| SessionError::io(path, error))?;
    if !meta.is_file() {
        return Err(SessionError::NotAFile { path: path.to_path_buf(), kind: file_kind(&meta) });
    }
    if meta.len() > MAX_SESSION_BYTES {
        return Err(SessionError::TooLarge { path: path.to_path_buf(), bytes: meta.len() });
    }
    Ok(file)
}

/// Reads a whole session file, refusing what [`open_regular`] refuses; a file that grows past the
/// limit while it is read is refused too.
pub(crate) fn read_session_file(path: &Path) -> Result<Vec<u8>, SessionError> {
    let file = open_regular(path, OpenOptions::new().read(true))?;
    read_all(path, &file)
}

/// Reads the rest of an open session file, at most [`MAX_SESSION_BYTES`].
pub(crate) fn read_all(path: &Path, file: &File) -> Result<Vec<u8>, SessionError> {
    let size = file.metadata().map_or(0, |meta| meta.len());
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(MAX_SESSION_BYTES + 1).read_to_end(&mut bytes).map_err(|error| SessionError::io(path, error))?;
    if bytes.len() as u64 > MAX_SESSION_BYTES {
        return Err(SessionError::TooLarge { path: path.to_path_buf(), bytes: bytes.len() as u64 });
    }
    Ok(bytes)
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}
