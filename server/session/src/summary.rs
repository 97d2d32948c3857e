//! What a listing shows of a session file, read in one pass over its lines without keeping them:
//! a listing of a 300 MB session, or of one holding a gigabyte line, costs a buffer and the
//! longest line it reads (at most [`MAX_ENTRY_BYTES`]), not the file. It counts the lines the
//! tree would index and reads each as the tree reads it, so a summary is the one a loaded
//! [`SessionTree`] gives.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read};
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

/// Reads a session for a listing (without locking it).
pub fn summarize(path: &Path) -> Result<SessionSummary, SessionError> {
    let file = open_regular(path, OpenOptions::new().read(true))?;
    let modified = file.metadata().and_then(|meta| meta.modified()).map_err(|error| SessionError::io(path, error))?;
    let mut reader = BufReader::with_capacity(64 << 10, file.take(MAX_SESSION_BYTES + 1));
    let mut line = Vec::new();
    let header = match read_line(&mut reader, &mut line).map_err(|error| SessionError::io(path, error))? {
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
        return summarize_tree(&SessionTree::load(path)?, modified);
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
    while let Some(read) = read_line(&mut reader, &mut line).map_err(|error| SessionError::io(path, error))? {
        if matches!(read, Line::TooLong(_)) || line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(&line) else { continue };
        let Ok(envelope) = serde_json::from_str::<Envelope>(text) else { continue };
        if envelope.id.is_none() {
            continue;
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
    Ok(summary)
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

/// Reads the next line into `line` (without its newline), or only past it when it is longer
/// than [`MAX_ENTRY_BYTES`]; `None` at the end of the file.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Option<Line>> {
    line.clear();
    let mut len = 0;
    let mut any = false;
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
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
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
            break;
        }
    }
    Ok(match (any, len > MAX_ENTRY_BYTES) {
        (false, _) => None,
        (true, false) => Some(Line::Whole),
        (true, true) => Some(Line::TooLong(len)),
    })
}

#[cfg(test)]
mod tests;
