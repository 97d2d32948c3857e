//! A session's tree read a line at a time, keeping none of the lines: what a view of the whole
//! tree needs besides each line's own fields (ids, parents as repaired, labels, name, leaf), so
//! that viewing a session of a million entries costs its index and the view, never the file.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::disk::{MAX_ENTRY_BYTES, MAX_SESSION_BYTES, open_regular};
use crate::error::SessionError;
use crate::format::{CURRENT_VERSION, EntryTag, Envelope, Header};
use crate::tree::{EntryRef, Indexing, SessionTree, header_of};

/// A line buffer grown past this by a long line is given back before the next line.
const KEEP_LINE_BUFFER: usize = 1 << 20;

/// The index of a session file without its lines (see [`TreeOutline::scan`]).
pub struct TreeOutline {
    tree: SessionTree,
}

impl TreeOutline {
    /// Reads and indexes `path` a line at a time, without locking it, and hands `visit` each
    /// entry's number (see [`TreeOutline::entry`]), kind and line (without its newline) as it
    /// is indexed. Read the entry's parent and label from the outline once it is built: a parent
    /// may come later in the file, and a label always does. Refuses what
    /// [`SessionTree::load`] refuses, and skips the lines it skips.
    pub fn scan(path: &Path, mut visit: impl FnMut(u32, EntryTag, &str)) -> Result<TreeOutline, SessionError> {
        Self::scan_read(path, |_| None::<(Envelope<'_>, ())>, |number, tag, line, _| visit(number, tag, line))
    }

    /// [`TreeOutline::scan`] for a caller that reads each line's JSON itself, so that a line is
    /// parsed once, not once for the index and again for the caller (on a long session that is
    /// most of the time taken). `read` gets each line that is UTF-8 and not too long, and
    /// returns the [`Envelope`] it read from the line with what else it wants of it (`T`, handed
    /// to `visit`), or `None`: the line is then indexed as [`TreeOutline::scan`] does, and
    /// `visit` gets `None`. Its envelope must be what `Envelope`'s own parse reads.
    pub fn scan_read<T>(
        path: &Path,
        mut read: impl FnMut(&str) -> Option<(Envelope<'_>, T)>,
        mut visit: impl FnMut(u32, EntryTag, &str, Option<T>),
    ) -> Result<TreeOutline, SessionError> {
        let file = open_regular(path, OpenOptions::new().read(true))?;
        let mut reader = BufReader::with_capacity(64 << 10, file.take(MAX_SESSION_BYTES + 1));
        let mut line = Vec::new();
        let mut read_line = |line: &mut Vec<u8>| {
            line.clear();
            reader.read_until(b'\n', line).map_err(|error| SessionError::io(path, error))
        };
        let header_len = read_line(&mut line)?;
        let header_ends = line.last() == Some(&b'\n');
        let header = header_of(path, &line[..header_len - usize::from(header_ends)])?;
        if header.version < CURRENT_VERSION {
            // An older file is migrated whole, as loading does: its lines are the migrated ones.
            return Self::migrated(path, line, reader, visit);
        }
        let mut tree = SessionTree::empty(path.to_path_buf(), header);
        tree.load.needs_newline = !header_ends;
        let mut indexing = Indexing::new();
        let mut start = header_len;
        loop {
            if line.capacity() > KEEP_LINE_BUFFER {
                line = Vec::new();
            }
            let read_bytes = read_line(&mut line)?;
            if read_bytes == 0 {
                break;
            }
            if (start + read_bytes) as u64 > MAX_SESSION_BYTES {
                return Err(SessionError::TooLarge { path: path.to_path_buf(), bytes: (start + read_bytes) as u64 });
            }
            let ends = line.last() == Some(&b'\n');
            let body = &line[..read_bytes - usize::from(ends)];
            // What the caller read of the line, when it is one the index reads in place.
            let text = std::str::from_utf8(body).ok().filter(|_| body.len() <= MAX_ENTRY_BYTES);
            match text.and_then(|text| Some((text, read(text)?))) {
                Some((text, (envelope, value))) => {
                    if tree.index_envelope(&mut indexing, &envelope, body, start, !ends) {
                        let index = tree.len() as u32 - 1;
                        visit(index, tree.tag(index), text, Some(value));
                    }
                }
                None => {
                    if tree.index_line(&mut indexing, body, start, !ends) {
                        let index = tree.len() as u32 - 1;
                        // An indexed line is UTF-8 (indexing checked it).
                        if let Ok(text) = std::str::from_utf8(body) {
                            visit(index, tree.tag(index), text, None);
                        }
                    }
                }
            }
            start += read_bytes;
        }
        tree.finish_index(indexing);
        Ok(TreeOutline { tree })
    }

    /// [`TreeOutline::scan`] of a file in an older version: read whole and migrated (such files
    /// come from before reins and are small).
    fn migrated<T>(
        path: &Path,
        mut bytes: Vec<u8>,
        mut rest: impl Read,
        mut visit: impl FnMut(u32, EntryTag, &str, Option<T>),
    ) -> Result<TreeOutline, SessionError> {
        rest.read_to_end(&mut bytes).map_err(|error| SessionError::io(path, error))?;
        if bytes.len() as u64 > MAX_SESSION_BYTES {
            return Err(SessionError::TooLarge { path: path.to_path_buf(), bytes: bytes.len() as u64 });
        }
        let tree = SessionTree::from_bytes(path, bytes)?;
        for (index, (entry, line)) in (0..).zip(tree.lines()) {
            visit(index, entry.tag, line, None);
        }
        Ok(TreeOutline { tree })
    }

    pub fn header(&self) -> &Header {
        self.tree.header()
    }

    /// The session's name from its latest `session_info` entry.
    pub fn name(&self) -> Option<&str> {
        self.tree.name()
    }

    /// The current position (see [`SessionTree::leaf`]).
    pub fn leaf(&self) -> Option<&str> {
        self.tree.leaf()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// The entry [`TreeOutline::scan`] numbered `index`, with its parent as the tree has it.
    pub fn entry(&self, index: u32) -> Option<EntryRef<'_>> {
        ((index as usize) < self.tree.len()).then(|| self.tree.entry_ref(index))
    }

    pub fn get(&self, id: &str) -> Option<EntryRef<'_>> {
        self.tree.get(id)
    }

    pub fn label(&self, id: &str) -> Option<&str> {
        self.tree.label(id)
    }

    /// Whether any entry has a label (most sessions have none).
    pub fn has_labels(&self) -> bool {
        self.tree.has_labels()
    }
}
