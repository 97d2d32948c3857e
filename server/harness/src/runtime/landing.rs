//! Where a move along a session's tree lands when the user picks one of their own messages: at
//! the message's parent, with its text given back, as pi does it. A fork, navigation or checkout
//! then redoes the message instead of answering it with a second user message in a row.

use reins_ai::{Content, Message};
use reins_session::SessionTree;

use super::{Harness, lock, session_error};
use crate::error::HarnessError;

/// Where a move to a picked entry lands.
#[derive(Debug, Clone, PartialEq)]
pub struct Landing {
    /// The entry the leaf moves to.
    pub entry_id: String,
    /// The text of the user message that was picked, for the user to edit and send again;
    /// `None` when the entry picked is not a user message.
    pub prompt: Option<String>,
}

impl Harness {
    /// Where a fork, navigation or checkout to `entry_id` of a session lands: a user message's
    /// parent, with the message's text; any other entry (and a user message that starts the
    /// file, with no parent) itself.
    pub fn landing(&self, session_id: &str, entry_id: &str) -> Result<Landing, HarnessError> {
        let session = self.session(session_id)?;
        let file = lock(session.file()?);
        if !file.tree().contains(entry_id) {
            return Err(HarnessError::InvalidArgument(format!("session {session_id} has no entry {entry_id}")));
        }
        landing_in(file.tree(), entry_id)
    }
}

/// Where a move to `entry_id` of `tree` (one of its entries) lands.
pub(super) fn landing_in(tree: &SessionTree, entry_id: &str) -> Result<Landing, HarnessError> {
    let entry = tree.entry(entry_id).map_err(session_error)?;
    let said = entry.message().and_then(|record| match record.into_message()? {
        Message::User(user) => Some(text_of(&user.content)),
        _ => None,
    });
    Ok(match (said, entry.parent_id) {
        (Some(text), Some(parent)) => Landing { entry_id: parent, prompt: Some(text) },
        _ => Landing { entry_id: entry_id.to_string(), prompt: None },
    })
}

/// The text blocks of a message, one after another.
fn text_of(content: &[Content]) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|content| match content {
            Content::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}
