//! A session file indexed in memory as a tree of entries.
//!
//! The tree keeps the file's bytes once and, per entry, only its id, its parent, its kind and
//! where its line is; entries are parsed in full only when asked for (building a context parses
//! just the path). That keeps a 100,000-entry file fast to open and its memory close to the file
//! size, and writes every line pi wrote back byte for byte.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::disk::{MAX_ENTRY_BYTES, read_session_file};
use crate::error::SessionError;
use crate::format::{CURRENT_VERSION, ContextLine, Entry, EntryKind, EntryTag, Envelope, Header};
use crate::migrate::migrate;

const NO_PARENT: u32 = u32::MAX;

pub struct SessionTree {
    path: PathBuf,
    header: Header,
    /// The file as read (or as migrated); lines appended since live in `tail`. Shared with the
    /// forks that copy a prefix of it, so a fork does not copy the file.
    base: Arc<Vec<u8>>,
    tail: Vec<u8>,
    nodes: Vec<Node>,
    /// Keys share their allocation with the nodes' ids.
    by_id: HashMap<Arc<str>, u32>,
    /// Current label per entry index.
    labels: HashMap<u32, String>,
    name: Option<String>,
    leaf: Option<u32>,
    pub(crate) load: LoadReport,
}

/// What loading found that the writer must know before it appends.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LoadReport {
    /// Byte offset of a torn (unparseable, unterminated) last line, to be cut off.
    pub torn_at: Option<usize>,
    /// The last line is complete but has no newline: the next write starts with one.
    pub needs_newline: bool,
    /// The file was an older version and `base` holds it migrated: the file must be rewritten.
    pub migrated: bool,
}

/// What indexing carries from line to line until the last one.
pub(crate) struct Indexing {
    line_number: usize,
    /// Entries whose parent was not indexed yet: (entry, parent id).
    unresolved: Vec<(u32, String)>,
    /// Entries whose line is skipped although its id could be read (the line is not UTF-8, or
    /// too long): id → parent id, so that their children hang from their parent instead of
    /// coming loose.
    spliced: HashMap<String, Option<String>>,
}

impl Indexing {
    /// Before the first entry's line: the header is line 1.
    pub(crate) fn new() -> Indexing {
        Indexing { line_number: 1, unresolved: Vec::new(), spliced: HashMap::new() }
    }
}

#[derive(Clone)]
struct Node {
    id: Arc<str>,
    start: u64,
    len: u32,
    parent: u32,
    tag: EntryTag,
}

/// A line queued for writing, taken off one tree to be pushed onto another.
pub(crate) struct PendingLine {
    pub bytes: Vec<u8>,
    pub id: String,
    pub parent_id: Option<String>,
    pub tag: EntryTag,
    pub target_id: Option<String>,
}

/// One entry as the index knows it, borrowed from the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EntryRef<'a> {
    pub id: &'a str,
    pub parent_id: Option<&'a str>,
    pub tag: EntryTag,
}

impl SessionTree {
    /// Reads and indexes a session file without locking it (for listing and viewing).
    pub fn load(path: &Path) -> Result<SessionTree, SessionError> {
        let bytes = read_session_file(path)?;
        SessionTree::from_bytes(path, bytes)
    }

    /// Indexes the bytes of a session file; `path` is only for messages.
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<SessionTree, SessionError> {
        let header_end = memchr::memchr(b'\n', &bytes).unwrap_or(bytes.len());
        let header = header_of(path, &bytes[..header_end])?;
        if header.version < CURRENT_VERSION {
            return SessionTree::from_old_version(path, &bytes, header.version);
        }
        let mut tree = SessionTree::empty(path.to_path_buf(), header);
        tree.load.needs_newline = header_end == bytes.len();
        tree.index(&bytes, header_end + 1);
        tree.base = Arc::new(bytes);
        Ok(tree)
    }

    fn from_old_version(path: &Path, bytes: &[u8], version: u64) -> Result<SessionTree, SessionError> {
        let mut lines: Vec<Map<String, Value>> = Vec::new();
        for (number, line) in bytes.split(|&b| b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Value>(line) {
                Ok(Value::Object(map)) => lines.push(map),
                _ => tracing::warn!("{}:{}: skipping a line that is not a JSON object", path.display(), number + 1),
            }
        }
        migrate(&mut lines, version);
        let mut migrated = String::new();
        for line in &lines {
            migrated.push_str(&Value::Object(line.clone()).to_string());
            migrated.push('\n');
        }
        let mut tree = SessionTree::from_bytes(path, migrated.into_bytes())?;
        tree.load.migrated = true;
        Ok(tree)
    }

    fn index(&mut self, bytes: &[u8], mut start: usize) {
        let mut indexing = Indexing::new();
        while start < bytes.len() {
            let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |at| start + at);
            self.index_line(&mut indexing, &bytes[start..end], start, end == bytes.len());
            start = end + 1;
        }
        self.finish_index(indexing);
    }

    /// Indexes one line (without its newline) that starts at byte `start` of the file; `is_last`
    /// when no newline ends it. True when it became an entry (the last node).
    pub(crate) fn index_line(&mut self, indexing: &mut Indexing, line: &[u8], start: usize, is_last: bool) -> bool {
        indexing.line_number += 1;
        let line_number = indexing.line_number;
        let path = self.path.display();
        if line.iter().all(u8::is_ascii_whitespace) {
            return false;
        }
        // Every indexed line is UTF-8, so reading one in full later cannot fail on that.
        let envelope = match std::str::from_utf8(line) {
            // One entry of gigabytes would cost gigabytes in every view and request: skipped,
            // with its ids read in place so that its children keep their place.
            _ if line.len() > MAX_ENTRY_BYTES => {
                let ids = serde_json::from_slice::<Envelope>(line).ok().and_then(|envelope| {
                    Some((envelope.id?.into_owned(), envelope.parent_id.map(|parent| parent.into_owned())))
                });
                let megabytes = line.len() >> 20;
                Err((format!("its line is {megabytes} MB, over the limit of {} MB", MAX_ENTRY_BYTES >> 20), ids))
            }
            Ok(text) => serde_json::from_str::<Envelope>(text).map_err(|error| (error.to_string(), None)),
            Err(_) => {
                let lossy = String::from_utf8_lossy(line);
                let ids = serde_json::from_str::<Envelope>(&lossy).ok().and_then(|envelope| {
                    Some((envelope.id?.into_owned(), envelope.parent_id.map(|parent| parent.into_owned())))
                });
                Err(("the line is not valid UTF-8".to_string(), ids))
            }
        };
        match envelope {
            Ok(envelope) => self.add_envelope(indexing, &envelope, line, start, is_last),
            Err((reason, Some((id, parent_id)))) => {
                tracing::warn!("{path}:{line_number}: skipping entry {id}: {reason}");
                indexing.spliced.insert(id, parent_id);
                self.load.needs_newline |= is_last;
                false
            }
            Err((reason, None)) if is_last => {
                tracing::warn!(
                    "{path}:{line_number}: skipping a torn last line ({reason}); it will be cut off before the next write"
                );
                self.load.torn_at = Some(start);
                false
            }
            Err((reason, None)) => {
                tracing::warn!("{path}:{line_number}: skipping a malformed line: {reason}");
                false
            }
        }
    }

    /// [`SessionTree::index_line`] of a line whose envelope the caller read: `line` is UTF-8, at
    /// most [`MAX_ENTRY_BYTES`] long, and `envelope` is what [`Envelope`] reads from it.
    pub(crate) fn index_envelope(
        &mut self,
        indexing: &mut Indexing,
        envelope: &Envelope,
        line: &[u8],
        start: usize,
        is_last: bool,
    ) -> bool {
        indexing.line_number += 1;
        self.add_envelope(indexing, envelope, line, start, is_last)
    }

    fn add_envelope(
        &mut self,
        indexing: &mut Indexing,
        envelope: &Envelope,
        line: &[u8],
        start: usize,
        is_last: bool,
    ) -> bool {
        let added = self.add_indexed(envelope, start, line, &mut indexing.unresolved);
        self.load.needs_newline |= is_last;
        added
    }

    /// Hangs the entries whose parent came after them, once every line is indexed.
    pub(crate) fn finish_index(&mut self, indexing: Indexing) {
        let Indexing { unresolved, spliced, .. } = indexing;
        if unresolved.is_empty() {
            // Every parent came before its child: the tree cannot have a cycle.
            return;
        }
        for (index, parent_id) in unresolved {
            // Through skipped entries to the nearest one that is in the tree (or to the root).
            let mut parent_id = Some(parent_id);
            for _ in 0..=spliced.len() {
                match parent_id.as_deref().map(|id| (self.by_id.get(id), spliced.get(id))) {
                    Some((None, Some(grandparent))) => parent_id = grandparent.clone(),
                    _ => break,
                }
            }
            let Some(parent_id) = parent_id else { continue };
            match self.by_id.get(parent_id.as_str()) {
                Some(&parent) if parent != index => self.nodes[index as usize].parent = parent,
                _ => tracing::warn!(
                    "{}: entry {} has an unknown parent {parent_id}",
                    self.path.display(),
                    self.nodes[index as usize].id
                ),
            }
        }
        self.break_cycles();
    }

    /// Parents that point forward in the file can form a cycle (a hand-edited or corrupt file),
    /// which would hide its entries from every view and repeat them in a context. Each cycle is
    /// reported and broken at the entry that comes first in the file, which becomes a root: the
    /// same file always gives the same tree.
    fn break_cycles(&mut self) {
        const NEW: u32 = 0;
        const DONE: u32 = u32::MAX;
        // Per node: NEW, DONE, or the number of the walk that is visiting it.
        let mut state = vec![NEW; self.nodes.len()];
        for start in 0..self.nodes.len() as u32 {
            let walk = start + 1;
            let mut current = start;
            while current != NO_PARENT && state[current as usize] == NEW {
                state[current as usize] = walk;
                current = self.nodes[current as usize].parent;
            }
            if current != NO_PARENT && state[current as usize] == walk {
                // `current` is on a cycle that this walk closed: go round it once.
                let mut cycle = vec![current];
                let mut next = self.nodes[current as usize].parent;
                while next != current {
                    cycle.push(next);
                    next = self.nodes[next as usize].parent;
                }
                let first = cycle.iter().copied().min().unwrap_or(current);
                let ids: Vec<&str> = cycle.iter().map(|&index| &*self.nodes[index as usize].id).collect();
                tracing::warn!(
                    "{}: the entries {} are each other's parents (a cycle); {} is shown as a root",
                    self.path.display(),
                    ids.join(", "),
                    self.nodes[first as usize].id
                );
                self.nodes[first as usize].parent = NO_PARENT;
                for index in cycle {
                    state[index as usize] = DONE;
                }
            }
            let mut current = start;
            while current != NO_PARENT && state[current as usize] == walk {
                state[current as usize] = DONE;
                current = self.nodes[current as usize].parent;
            }
        }
    }

    fn add_indexed(
        &mut self,
        envelope: &Envelope,
        start: usize,
        line: &[u8],
        unresolved: &mut Vec<(u32, String)>,
    ) -> bool {
        let Some(id) = envelope.id.as_deref() else {
            tracing::warn!("{}: skipping an entry without an id", self.path.display());
            return false;
        };
        let index = self.nodes.len() as u32;
        let parent = match envelope.parent_id.as_deref() {
            None => NO_PARENT,
            Some(parent_id) => match self.by_id.get(parent_id) {
                Some(&parent) => parent,
                None => {
                    unresolved.push((index, parent_id.to_string()));
                    NO_PARENT
                }
            },
        };
        let tag = EntryTag::from_type(&envelope.kind);
        let id: Arc<str> = id.into();
        self.nodes.push(Node { id: Arc::clone(&id), start: start as u64, len: line.len() as u32, parent, tag });
        self.by_id.insert(id, index);
        let target = envelope.target_id.as_deref().and_then(|target| self.by_id.get(target).copied());
        self.after_add(index, line, target);
        true
    }

    /// Keeps labels, name and leaf current after entry `index` was added.
    fn after_add(&mut self, index: u32, line: &[u8], target: Option<u32>) {
        let tag = self.nodes[index as usize].tag;
        self.leaf = Some(index);
        match tag {
            EntryTag::Label | EntryTag::SessionInfo => {
                let fields: ContextLine = serde_json::from_slice(line).unwrap_or_default();
                if tag == EntryTag::SessionInfo {
                    self.name = fields.name.map(|name| name.trim().to_string()).filter(|name| !name.is_empty());
                } else if let Some(target) = target {
                    match fields.label.filter(|label| !label.is_empty()) {
                        Some(label) => self.labels.insert(target, label),
                        None => self.labels.remove(&target),
                    };
                }
            }
            EntryTag::Leaf => {
                let parent = self.nodes[index as usize].parent;
                self.leaf = target.or((parent != NO_PARENT).then_some(parent));
            }
            _ => {}
        }
    }

    /// A tree with a header and no entries yet, for a file about to be written.
    pub(crate) fn empty(path: PathBuf, header: Header) -> SessionTree {
        SessionTree {
            path,
            header,
            base: Arc::default(),
            tail: Vec::new(),
            nodes: Vec::new(),
            by_id: HashMap::new(),
            labels: HashMap::new(),
            name: None,
            leaf: None,
            load: LoadReport::default(),
        }
    }

    /// Makes room for `entries` more entries of `bytes` bytes in all.
    pub(crate) fn reserve(&mut self, bytes: usize, entries: usize) {
        self.tail.reserve_exact(bytes);
        self.nodes.reserve_exact(entries);
        self.by_id.reserve(entries);
    }

    /// A tree for a fork (at `path`, with `header`) holding entries `0..=last` of this one, built
    /// without parsing a line: `None` unless those entries are exactly the path from the root to
    /// `last`, in file order, with no `label` or `leaf` entry (which a fork rewrites) and no id
    /// twice. The fork shares this tree's file bytes and copies only its index and the appended
    /// lines it holds, so it is what pushing each line of the path would build.
    pub(crate) fn linear_prefix(&self, path: PathBuf, header: Header, last: u32) -> Option<SessionTree> {
        let count = last as usize + 1;
        let prefix = self.nodes.get(..count)?;
        let is_path = prefix.iter().enumerate().all(|(at, node)| {
            let parent = if at == 0 { NO_PARENT } else { at as u32 - 1 };
            node.parent == parent && !matches!(node.tag, EntryTag::Label | EntryTag::Leaf)
        });
        if !is_path {
            return None;
        }
        // Cloning the map copies its table without hashing; worth it when most entries stay.
        let by_id: HashMap<Arc<str>, u32> = if count * 2 >= self.nodes.len() {
            let mut by_id = self.by_id.clone();
            if count < self.nodes.len() {
                by_id.retain(|_, index| *index <= last);
            }
            by_id
        } else {
            prefix.iter().zip(0..).map(|(node, index)| (Arc::clone(&node.id), index)).collect()
        };
        if by_id.len() != count {
            return None;
        }
        let mut nodes = prefix.to_vec();
        let base_len = self.base.len();
        let end = nodes[last as usize].start as usize + nodes[last as usize].len as usize;
        // Appended lines always end with a newline; the fork's tail is theirs up to `last`.
        let tail = if end > base_len { self.tail[..end + 1 - base_len].to_vec() } else { Vec::new() };
        let base = if (nodes[0].start as usize) < base_len {
            Arc::clone(&self.base)
        } else {
            // Nothing from the file: do not keep it alive, and index the copied tail from 0.
            for node in &mut nodes {
                node.start -= base_len as u64;
            }
            Arc::default()
        };
        let mut fork = SessionTree { base, tail, nodes, by_id, ..SessionTree::empty(path, header) };
        for index in 0..fork.nodes.len() as u32 {
            if fork.nodes[index as usize].tag == EntryTag::SessionInfo {
                let line = fork.line_bytes(index).to_vec();
                fork.after_add(index, &line, None);
            }
        }
        fork.leaf = Some(last);
        Some(fork)
    }

    /// The lines of the entries held in `base`, each with its newline, as few slices to write in
    /// order: one per run of lines that follow each other in `base`.
    pub(crate) fn base_runs(&self) -> Vec<&[u8]> {
        let base = self.base.as_slice();
        let mut runs = Vec::new();
        let mut push_run = |(start, end): (usize, usize)| {
            if end < base.len() {
                runs.push(&base[start..=end]);
            } else {
                // The file's last line had no newline.
                runs.push(&base[start..end]);
                runs.push(b"\n".as_slice());
            }
        };
        let mut run: Option<(usize, usize)> = None;
        for node in self.nodes.iter().take_while(|node| (node.start as usize) < base.len()) {
            let (start, end) = (node.start as usize, node.start as usize + node.len as usize);
            run = match run {
                Some((run_start, run_end)) if run_end + 1 == start => Some((run_start, end)),
                Some(previous) => {
                    push_run(previous);
                    Some((start, end))
                }
                None => Some((start, end)),
            };
        }
        if let Some(last) = run {
            push_run(last);
        }
        runs
    }

    /// Adds an entry in memory, after the lines already there; the caller writes it.
    pub(crate) fn push(&mut self, entry: &Entry) -> Result<(), SessionError> {
        let target = match &entry.kind {
            EntryKind::Label { target_id, .. } | EntryKind::Leaf { target_id } => Some(target_id.as_str()),
            _ => None,
        };
        self.push_line(entry.to_line().as_bytes(), &entry.id, entry.parent_id.as_deref(), entry.kind.tag(), target)
    }

    /// Adds a line whose id, parent, kind and target the caller already knows.
    pub(crate) fn push_line(
        &mut self,
        line: &[u8],
        id: &str,
        parent_id: Option<&str>,
        tag: EntryTag,
        target_id: Option<&str>,
    ) -> Result<(), SessionError> {
        if self.by_id.contains_key(id) {
            return Err(SessionError::Invalid(format!("{}: entry id {id} is taken", self.path.display())));
        }
        let parent = match parent_id {
            None => NO_PARENT,
            Some(parent_id) => self.index_of(parent_id)?,
        };
        let target = target_id.map(|target| self.index_of(target)).transpose()?;
        let start = self.base.len() + self.tail.len();
        self.tail.extend_from_slice(line);
        self.tail.push(b'\n');
        let index = self.nodes.len() as u32;
        let id: Arc<str> = id.into();
        self.nodes.push(Node { id: Arc::clone(&id), start: start as u64, len: line.len() as u32, parent, tag });
        self.by_id.insert(id, index);
        self.after_add(index, line, target);
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The number of entries (the header is not one).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The current position: the last entry, or the target of a trailing `leaf` entry.
    pub fn leaf(&self) -> Option<&str> {
        self.leaf.map(|index| &*self.nodes[index as usize].id)
    }

    /// The session's name from its latest `session_info` entry.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    pub fn label(&self, id: &str) -> Option<&str> {
        // Most sessions have no label: no need to look the id up.
        if self.labels.is_empty() {
            return None;
        }
        self.by_id.get(id).and_then(|index| self.labels.get(index)).map(String::as_str)
    }

    pub(crate) fn has_labels(&self) -> bool {
        !self.labels.is_empty()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    pub fn get(&self, id: &str) -> Option<EntryRef<'_>> {
        self.by_id.get(id).map(|&index| self.entry_ref(index))
    }

    /// Every entry in file order.
    pub fn iter(&self) -> impl Iterator<Item = EntryRef<'_>> {
        (0..self.nodes.len() as u32).map(|index| self.entry_ref(index))
    }

    /// Every entry in file order with its line as in the file (UTF-8, without its newline): each
    /// line its own, also where a crafted file repeats an id.
    pub fn lines(&self) -> impl Iterator<Item = (EntryRef<'_>, &str)> {
        // Every indexed line was checked to be UTF-8 when it was indexed.
        (0..self.nodes.len() as u32)
            .map(|index| (self.entry_ref(index), std::str::from_utf8(self.line_bytes(index)).unwrap_or_default()))
    }

    /// Every entry in file order, parsed in full, beside what the index knows of it: each line
    /// its own, also where a crafted file repeats an id.
    pub fn entries(&self) -> impl Iterator<Item = (EntryRef<'_>, Result<Entry, SessionError>)> {
        (0..self.nodes.len() as u32).map(|index| (self.entry_ref(index), self.parse_entry(index)))
    }

    /// The direct children of `id`, in file order (`None`: the roots).
    pub fn children(&self, id: Option<&str>) -> Vec<&str> {
        let parent = match id {
            Some(id) => match self.by_id.get(id) {
                Some(&index) => index,
                None => return Vec::new(),
            },
            None => NO_PARENT,
        };
        self.nodes.iter().filter(|node| node.parent == parent).map(|node| &*node.id).collect()
    }

    /// The ids from `id` up to the root, `id` first.
    pub fn path_to_root(&self, id: &str) -> Result<Vec<&str>, SessionError> {
        let path = self.path_indices(self.index_of(id)?);
        Ok(path.iter().rev().map(|&index| &*self.nodes[index as usize].id).collect())
    }

    /// The entry's line exactly as in the file.
    pub fn line(&self, id: &str) -> Option<&str> {
        let &index = self.by_id.get(id)?;
        std::str::from_utf8(self.line_bytes(index)).ok()
    }

    /// The bytes the file held when it was read, shared, when the line of entry `id` is among
    /// them (`None` for a line appended since). A reader may keep parts of the line without
    /// copying them (a checkout leaves megabytes of recorded texts where they are).
    pub fn shared_bytes(&self, id: &str) -> Option<Arc<Vec<u8>>> {
        let node = &self.nodes[*self.by_id.get(id)? as usize];
        let end = node.start as usize + node.len as usize;
        (end <= self.base.len()).then(|| Arc::clone(&self.base))
    }

    /// The entry parsed in full.
    pub fn entry(&self, id: &str) -> Result<Entry, SessionError> {
        let index = self.index_of(id)?;
        self.parse_entry(index)
    }

    /// The entries from the root to `id`, parsed in full.
    pub fn path_entries(&self, id: &str) -> Result<Vec<Entry>, SessionError> {
        let path = self.path_indices(self.index_of(id)?);
        path.into_iter().map(|index| self.parse_entry(index)).collect()
    }

    /// The header and every entry, as the file would hold them now.
    pub fn to_jsonl(&self) -> String {
        let mut out = self.header.to_line();
        out.push('\n');
        for index in 0..self.nodes.len() as u32 {
            out.push_str(&String::from_utf8_lossy(self.line_bytes(index)));
            out.push('\n');
        }
        out
    }

    pub(crate) fn parse_entry(&self, index: u32) -> Result<Entry, SessionError> {
        let line = std::str::from_utf8(self.line_bytes(index))
            .map_err(|_| SessionError::Invalid(format!("{}: entry is not UTF-8", self.path.display())))?;
        Entry::parse(line).map_err(|reason| {
            SessionError::Invalid(format!("{}: entry {}: {reason}", self.path.display(), self.nodes[index as usize].id))
        })
    }

    pub(crate) fn index_of(&self, id: &str) -> Result<u32, SessionError> {
        self.by_id
            .get(id)
            .copied()
            .ok_or_else(|| SessionError::UnknownEntry { path: self.path.clone(), id: id.to_string() })
    }

    pub(crate) fn leaf_index(&self) -> Option<u32> {
        self.leaf
    }

    /// The target of a `label` or `leaf` entry, read from its line.
    pub(crate) fn target_of(&self, index: u32) -> Option<String> {
        let envelope: Envelope = serde_json::from_slice(self.line_bytes(index)).ok()?;
        envelope.target_id.map(|target| target.into_owned())
    }

    pub(crate) fn parent_at(&self, index: u32) -> Option<u32> {
        let parent = self.nodes[index as usize].parent;
        (parent != NO_PARENT).then_some(parent)
    }

    pub(crate) fn tag(&self, index: u32) -> EntryTag {
        self.nodes[index as usize].tag
    }

    pub(crate) fn id_at(&self, index: u32) -> &str {
        &self.nodes[index as usize].id
    }

    /// Indices from the root to `index`. A cycle (a corrupt file) ends the walk.
    pub(crate) fn path_indices(&self, index: u32) -> Vec<u32> {
        let mut path = Vec::new();
        let mut current = index;
        while current != NO_PARENT && path.len() <= self.nodes.len() {
            path.push(current);
            current = self.nodes[current as usize].parent;
        }
        path.reverse();
        path
    }

    pub(crate) fn line_bytes(&self, index: u32) -> &[u8] {
        let node = &self.nodes[index as usize];
        let start = node.start as usize;
        let end = start + node.len as usize;
        if start < self.base.len() {
            &self.base[start..end]
        } else {
            &self.tail[start - self.base.len()..end - self.base.len()]
        }
    }

    /// The lines appended since load from byte `flushed` of the tail on (those not written yet),
    /// with what it takes to push them again onto another tree.
    pub(crate) fn pending_lines(&self, flushed: usize) -> Vec<PendingLine> {
        let from = (self.base.len() + flushed) as u64;
        (0..self.nodes.len() as u32)
            .filter(|&index| self.nodes[index as usize].start >= from)
            .map(|index| {
                let tag = self.tag(index);
                PendingLine {
                    bytes: self.line_bytes(index).to_vec(),
                    id: self.id_at(index).to_string(),
                    parent_id: self.parent_at(index).map(|parent| self.id_at(parent).to_string()),
                    tag,
                    target_id: matches!(tag, EntryTag::Label | EntryTag::Leaf).then(|| self.target_of(index)).flatten(),
                }
            })
            .collect()
    }

    /// Bytes appended since load, for the writer.
    pub(crate) fn tail(&self) -> &[u8] {
        &self.tail
    }

    pub(crate) fn entry_ref(&self, index: u32) -> EntryRef<'_> {
        let node = &self.nodes[index as usize];
        let parent_id = (node.parent != NO_PARENT).then(|| &*self.nodes[node.parent as usize].id);
        EntryRef { id: &node.id, parent_id, tag: node.tag }
    }
}

/// The header of a session file from its first line (without the newline).
pub(crate) fn header_of(path: &Path, line: &[u8]) -> Result<Header, SessionError> {
    // An editor may have saved the file with a byte order mark; it is not part of the header.
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = std::str::from_utf8(line).map_err(|_| SessionError::format(path, 1, "the header is not UTF-8"))?;
    Header::parse(line.trim()).map_err(|reason| SessionError::format(path, 1, reason))
}

impl std::fmt::Debug for SessionTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTree")
            .field("path", &self.path)
            .field("id", &self.header.id)
            .field("entries", &self.nodes.len())
            .field("leaf", &self.leaf())
            .finish()
    }
}
