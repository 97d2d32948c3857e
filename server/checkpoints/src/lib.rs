//! Files follow the session tree. Every change a tool makes to a file is recorded on the
//! session's path where it landed (a pi `custom` entry, [`record`]); moving the leaf can bring the
//! files along: the changes after the target are undone and those on its path redone
//! ([`Plan`]), each as a three-way merge with the file as it is now, so the user's own edits
//! survive and a file where they overlap the agent's change is left alone and named
//! ([`replay`]). On disk, a checkout goes through a journal, so a killed one finishes when run
//! again ([`Journal`]).
//!
//! Commands (`bash`, MCP tools) change files in ways nobody records: their entries only say that
//! they ran, so a checkout can warn that their effects were not tracked.

mod disk;
mod durable;
mod patch;
mod plan;
pub mod record;
mod replay;
mod store;
mod texts;

pub use disk::{Journal, JournalFile, Written, journal_dir, read};
pub use patch::PatchHunk;
pub use plan::{CommandRan, Direction, Plan, Step};
pub use record::{COMMAND, CommandRecord, FILE_CHANGE, FileChangeRecord, FileRecord, Landed, Text, describe_files};
pub use replay::{ConflictInfo, FileOutcome, Files, Status, replay};
pub use store::{SideStore, sha256_hex, store_dir};
pub use texts::{read_sized, rebuild_texts};

/// What a restore says about a command that ran on the way.
pub const UNTRACKED_WARNING: &str = "a command ran here; its effects on files were not tracked";

#[cfg(test)]
mod tests;
