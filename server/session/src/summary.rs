//! What a listing shows of a session file, read in one pass over its lines without keeping them:
//! a listing of a 300 MB session, or of one holding a gigabyte line, costs a buffer and the
//! longest line it reads (at most [`MAX_ENTRY_BYTES`]), not the file. It counts the lines the
//! tree would index and reads each as the tree reads it, so a summary is the one a loaded
//! [`SessionTree`] gives.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use reins_ai::Usage;
use serde::Deserialize;

use crate::disk::{MAX_ENTRY_BYTES, MAX_SESSION_BYTES, open_regular};
use crate::error::SessionError;
use crate::format::{CURRENT_VERSION, EntryTag, Envelope, Header};
use crate::message::MessageRecord;
use crate::tree::SessionTree;
use crate::usage::line_call;

/// One session as a listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    pub id: String,
    pub path: PathBuf,
    pub cwd: String,
    pub name: Option<String>,
    /// The text of the first user message, if there is one.
    pub first_user_message: Option<String>,
    pub entry_count: usize,
    pub modified: SystemTime,
    pub parent_session: Option<String>,
    /// Tokens and cost of every model call in the file, on every branch: what the session cost.
    pub usage: Usage,
}

/// A line as the reader hands it over: whole, or only its length when it is over the limit.
enum Line {
    Whole,
    TooLong(usize),
}

/// The `name` of a `session_info` line.
#[derive(Deserialize, Default)]
#[serde(default)]
struct NameLine {
    name: Option<String>,
}

/// The `message` of a `message` line.
#[derive(Deserialize)]
struct MessageLine {
    message: MessageRecord,
}

/// Where a summary's reading of its file stopped, after the last whole line: a file that only
/// grew since (a session that streams) is read on from there rather than from its start, so that
/// a listing costs the bytes appended, not the file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReadMark {
    /// The file read (device, inode): another file put in its place is read whole.
    file: (u64, u64),
    /// The bytes read, up to and with the last newline.
    offset: u64,
    /// The last bytes before `offset` (at most [`TAIL_BYTES`]), compared again before reading
    /// on: a file rewritten in place is read whole.
    tail: Vec<u8>,
}

impl ReadMark {
    /// The bytes read, up to and with the last newline.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }
}

/// How many bytes before a [`ReadMark`] are compared before reading on.
const TAIL_BYTES: usize = 64;

/// Reads a session for a listing (without locking it).
pub fn summarize(path: &Path) -> Result<SessionSummary, SessionError> {
    summarize_from(path, None).map(|(summary, _)| summary)
}

/// Reads a session for a listing (without locking it), from where `earlier` (its summary and
/// mark, from an earlier call) stopped when the file is the one read then and only grew since,
/// else whole. Gives the summary and where this reading stopped (none for a file whose last line
/// is not whole yet, or an older version's file, which the tree migrates).
pub(crate) fn summarize_from(
    path: &Path,
    earlier: Option<(SessionSummary, &ReadMark)>,
) -> Result<(SessionSummary, Option<ReadMark>), SessionError> {
    let file = open_regular(path, OpenOptions::new().read(true))?;
    let meta = file.metadata().map_err(|error| SessionError::io(path, error))?;
    let modified = meta.modified().map_err(|error| SessionError::io(path, error))?;
    let identity = file_identity(&meta);
    if let Some((mut summary, mark)) = earlier
        && mark.file == identity
        && mark.offset <= meta.len()
        && tail_matches(&file, mark)
    {
        let mut reader = BufReader::with_capacity(64 << 10, &file);
        reader.seek(SeekFrom::Start(mark.offset)).map_err(|error| SessionError::io(path, error))?;
        summary.modified = modified;
        summary.path = path.to_path_buf();
        let read = read_entries(path, &mut reader.take(MAX_SESSION_BYTES + 1 - mark.offset), &mut summary)?;
        let mark = read.and_then(|read| make_mark(&file, identity, mark.offset + read));
        return Ok((summary, mark));
    }
    let mut reader = BufReader::with_capacity(64 << 10, (&file).take(MAX_SESSION_BYTES + 1));
    let mut line = Vec::new();
    let (read, header_bytes) = read_line(&mut reader, &mut line).map_err(|error| SessionError::io(path, error))?;
    let header = match read {
        Some(Line::Whole) => {
            let text = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line);
            let text =
                std::str::from_utf8(text).map_err(|_| SessionError::format(path, 1, "the header is not UTF-8"))?;
            Header::parse(text.trim()).map_err(|reason| SessionError::format(path, 1, reason))?
        }
        Some(Line::TooLong(len)) => {
            return Err(SessionError::format(path, 1, format!("the header line is {} MB long", len >> 20)));
        }
        None => return Err(SessionError::format(path, 1, "the file is empty")),
    };
    if header.version < CURRENT_VERSION {
        // Older files are rare and small; the tree migrates them.
        return Ok((summarize_tree(&SessionTree::load(path)?, modified)?, None));
    }
    let mut summary = SessionSummary {
        id: header.id,
        path: path.to_path_buf(),
        cwd: header.cwd,
        name: None,
        first_user_message: None,
        entry_count: 0,
        modified,
        parent_session: header.parent_session,
        usage: Usage::default(),
    };
    let read = read_entries(path, &mut reader, &mut summary)?;
    let mark = read.filter(|_| header_bytes.whole).and_then(|read| make_mark(&file, identity, header_bytes.len + read));
    Ok((summary, mark))
}

/// Folds the entries `reader` holds into `summary`, line by line. Gives the bytes read when a
/// newline ended the last of them; none when the last line is not whole yet (a writer half-way
/// through it): its summary counted that line, and reading on from before it would count it again.
fn read_entries(
    path: &Path,
    reader: &mut impl BufRead,
    summary: &mut SessionSummary,
) -> Result<Option<u64>, SessionError> {
    let mut line = Vec::new();
    let mut read_bytes = 0;
    loop {
        let (read, bytes) = read_line(reader, &mut line).map_err(|error| SessionError::io(path, error))?;
        let Some(read) = read else { return Ok(Some(read_bytes)) };
        fold_line(read, &line, summary);
        if !bytes.whole {
            return Ok(None);
        }
        read_bytes += bytes.len;
    }
}

/// Folds one line of a session file into `summary`.
fn fold_line(read: Line, line: &[u8], summary: &mut SessionSummary) {
    if matches!(read, Line::TooLong(_)) || line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let Ok(text) = std::str::from_utf8(line) else { return };
    let Ok(envelope) = serde_json::from_str::<Envelope>(text) else { return };
    if envelope.id.is_none() {
        return;
    }
    summary.entry_count += 1;
    let tag = EntryTag::from_type(&envelope.kind);
    match tag {
        EntryTag::SessionInfo => {
            let name = serde_json::from_str::<NameLine>(text).unwrap_or_default().name;
            summary.name = name.map(|name| name.trim().to_string()).filter(|name| !name.is_empty());
        }
        EntryTag::Message if summary.first_user_message.is_none() => {
            summary.first_user_message = serde_json::from_str::<MessageLine>(text)
                .ok()
                .filter(|line| line.message.role == "user")
                .map(|line| line.message.plain_text())
                .filter(|text| !text.is_empty());
        }
        _ => {}
    }
    if let Some(call) = line_call(tag, text.as_bytes()) {
        summary.usage.add(&call.usage);
    }
}

/// The mark after `offset` bytes of `file`, when they end a line.
fn make_mark(file: &File, identity: (u64, u64), offset: u64) -> Option<ReadMark> {
    let meta = file.metadata().ok()?;
    if file_identity(&meta) != identity || offset == 0 {
        return None;
    }
    let start = offset.saturating_sub(TAIL_BYTES as u64);
    let mut tail = vec![0; (offset - start) as usize];
    read_exact_at(file, &mut tail, start).ok()?;
    (tail.last() == Some(&b'\n')).then_some(ReadMark { file: identity, offset, tail })
}

/// Whether the bytes before `mark` are still those read.
fn tail_matches(file: &File, mark: &ReadMark) -> bool {
    let mut tail = vec![0; mark.tail.len()];
    let start = mark.offset - mark.tail.len() as u64;
    read_exact_at(file, &mut tail, start).is_ok() && tail == mark.tail
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(_file: &File, _buf: &mut [u8], _offset: u64) -> std::io::Result<()> {
    Err(std::io::Error::other("no positioned reads here"))
}

#[cfg(unix)]
fn file_identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn file_identity(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// The summary of a loaded tree.
fn summarize_tree(tree: &SessionTree, modified: SystemTime) -> Result<SessionSummary, SessionError> {
    let first_user_message = tree
        .iter()
        .filter(|entry| entry.tag == EntryTag::Message)
        .filter_map(|entry| tree.entry(entry.id).ok()?.message())
        .find(|record| record.role == "user" && !record.plain_text().is_empty())
        .map(|record| record.plain_text());
    let header = tree.header();
    Ok(SessionSummary {
        id: header.id.clone(),
        path: tree.path().to_path_buf(),
        cwd: header.cwd.clone(),
        name: tree.name().map(str::to_string),
        first_user_message,
        entry_count: tree.len(),
        modified,
        parent_session: header.parent_session.clone(),
        usage: tree.total_usage(),
    })
}

/// How many bytes a line took in the file, and whether a newline ended it.
#[derive(Debug, Clone, Copy)]
struct LineBytes {
    len: u64,
    whole: bool,
}

/// Reads the next line into `line` (without its newline), or only past it when it is longer
/// than [`MAX_ENTRY_BYTES`]; `None` at the end of the file.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<(Option<Line>, LineBytes)> {
    line.clear();
    let mut len = 0;
    let mut any = false;
    let mut whole = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            break;
        }
        any = true;
        let (chunk, done) = match memchr::memchr(b'\n', available) {
            Some(at) => (&available[..at], true),
            None => (available, false),
        };
        len += chunk.len();
        if len <= MAX_ENTRY_BYTES {
            line.extend_from_slice(chunk);
        } else if !line.is_empty() {
            // Over the limit: what was kept goes, the rest is only counted.
            *line = Vec::new();
        }
        let consumed = chunk.len() + usize::from(done);
        reader.consume(consumed);
        if done {
            whole = true;
            break;
        }
    }
    let bytes = LineBytes { len: len as u64 + u64::from(whole), whole };
    Ok((
        match (any, len > MAX_ENTRY_BYTES) {
            (false, _) => None,
            (true, false) => Some(Line::Whole),
            (true, true) => Some(Line::TooLong(len)),
        },
        bytes,
    ))
}

#[cfg(test)]
mod tests;
