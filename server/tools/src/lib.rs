//! The built-in tools — `read`, `write`, `edit`, `bash`, `ls`, `grep`, `find` — each a typed
//! [`reins_agent::Tool`] that works through a [`Workspace`].

mod bash;
mod edit;
mod find;
mod fs;
mod grep;
mod ls;
mod read;
mod truncate;
mod workspace;
mod write;

pub use workspace::{TextFile, Workspace, WorkspaceError};
