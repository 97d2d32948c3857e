//! Choices a surface keeps in a session for itself (the approval mode an ACP client picked), as
//! pi `custom` entries on the session's path: recorded where the choice was made, so a resumed
//! session, or one checked out at an earlier entry, has what held there. pi passes them over.

use reins_session::{EntryKind, EntryTag};
use serde_json::Value;

use super::{Harness, lock, session_error};
use crate::error::HarnessError;

impl Harness {
    /// Records `data` as the session's `custom_type` from here on (nothing when it is already
    /// that). A session not kept on disk keeps nothing.
    pub fn mark(&self, session_id: &str, custom_type: &str, data: Value) -> Result<(), HarnessError> {
        if self.marked(session_id, custom_type)?.as_ref() == Some(&data) {
            return Ok(());
        }
        let session = self.session(session_id)?;
        let Some(file) = &session.file else { return Ok(()) };
        let mut file = lock(file);
        file.append(EntryKind::Custom { custom_type: custom_type.to_string(), data: Some(data) })
            .and_then(|_| file.flush())
            .map_err(session_error)?;
        Ok(())
    }

    /// The latest `custom_type` recorded on the session's current path.
    pub fn marked(&self, session_id: &str, custom_type: &str) -> Result<Option<Value>, HarnessError> {
        let session = self.session(session_id)?;
        let Some(file) = &session.file else { return Ok(None) };
        let file = lock(file);
        let tree = file.tree();
        let Some(leaf) = tree.leaf() else { return Ok(None) };
        // Only the `custom` entries of the path are parsed, newest first.
        let path = tree.path_to_root(leaf).map_err(session_error)?;
        let custom = path.into_iter().filter(|id| tree.get(id).is_some_and(|entry| entry.tag == EntryTag::Custom));
        for id in custom {
            match tree.entry(id).map_err(session_error)?.kind {
                EntryKind::Custom { custom_type: kind, data: Some(data) } if kind == custom_type => {
                    return Ok(Some(data));
                }
                _ => {}
            }
        }
        Ok(None)
    }
}
