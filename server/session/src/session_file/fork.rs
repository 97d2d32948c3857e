//! Forking a session: a new file holding the path from the root to an entry.
//!
//! The common fork is at an entry of a session that never branched before it: the path is then a
//! prefix of the file, and the new tree takes that prefix's bytes and index as they are
//! ([`SessionTree::linear_prefix`]) instead of re-indexing the path line by line, which is what a
//! branched path needs. Both build the same tree and write the same bytes.

use std::path::Path;

use serde_json::Map;

use crate::error::SessionError;
use crate::format::{Entry, EntryKind, EntryTag, Header};
use crate::store::file_name;
use crate::time::{new_entry_id, new_session_id, now_iso};
use crate::tree::SessionTree;

use super::SessionFile;

impl SessionFile {
    /// A new session file next to this one holding the path from the root to `entry_id` (and the
    /// labels of those entries), with `parentSession` pointing here. Its leaf is `entry_id`; it is
    /// written with this file's durability.
    pub fn fork(&self, entry_id: &str) -> Result<SessionFile, SessionError> {
        let header = Header::new(
            new_session_id(),
            now_iso(),
            self.tree.header().cwd.clone(),
            Some(self.path().to_string_lossy().into_owned()),
        );
        let dir = self.path().parent().map(Path::to_path_buf).unwrap_or_default();
        match self.fork_linear(&dir, header.clone(), entry_id)? {
            Some(fork) => Ok(fork),
            None => self.fork_rebuilt(&dir, header, entry_id),
        }
    }

    /// The fork when the path is a prefix of the file ([`SessionTree::linear_prefix`]); `None`
    /// when it is not.
    pub(crate) fn fork_linear(
        &self,
        dir: &Path,
        header: Header,
        entry_id: &str,
    ) -> Result<Option<SessionFile>, SessionError> {
        let source = &self.tree;
        let last = source.index_of(entry_id)?;
        let path = dir.join(file_name(&header));
        let Some(mut fork) = source.linear_prefix(path, header, last) else { return Ok(None) };
        push_labels(source, &mut fork, 0..=last)?;
        SessionFile::write_new(fork, self.durability).map(Some)
    }

    /// The fork built by pushing each line of the path, for any path.
    pub(crate) fn fork_rebuilt(&self, dir: &Path, header: Header, entry_id: &str) -> Result<SessionFile, SessionError> {
        let source = &self.tree;
        let path_indices = source.path_indices(source.index_of(entry_id)?);
        SessionFile::create(dir, header, self.durability, |fork| {
            fork.reserve(path_indices.iter().map(|&at| source.line_bytes(at).len() + 1).sum(), path_indices.len());
            let mut parent: Option<&str> = None;
            for &at in &path_indices {
                // Labels are written again below from their resolved state, as pi does.
                let tag = source.tag(at);
                if tag == EntryTag::Label {
                    continue;
                }
                let target = if tag == EntryTag::Leaf { source.target_of(at) } else { None };
                let original_parent = source.parent_at(at).map(|index| source.id_at(index));
                // A skipped label may have been a parent; the chain continues from the last kept entry.
                let parent_id = original_parent.filter(|id| fork.contains(id)).or(parent);
                fork.push_line(source.line_bytes(at), source.id_at(at), parent_id, tag, target.as_deref())?;
                parent = Some(source.id_at(at));
            }
            push_labels(source, fork, path_indices.iter().copied())
        })
    }
}

/// Appends to `fork`, in path order, a `label` entry for each entry of `path` (indices in
/// `source`) that has a label and is in the fork.
fn push_labels(
    source: &SessionTree,
    fork: &mut SessionTree,
    path: impl IntoIterator<Item = u32>,
) -> Result<(), SessionError> {
    if !source.has_labels() {
        return Ok(());
    }
    for at in path {
        let id = source.id_at(at);
        let Some(label) = source.label(id).filter(|_| fork.contains(id)) else { continue };
        let entry = Entry {
            id: new_entry_id(|candidate| fork.contains(candidate)),
            parent_id: fork.leaf().map(str::to_string),
            timestamp: now_iso(),
            kind: EntryKind::Label { target_id: id.to_string(), label: Some(label.to_string()) },
            extra: Map::new(),
        };
        fork.push(&entry)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
