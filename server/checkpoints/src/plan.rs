//! What moving a session's leaf does to the files: the file changes recorded after the target on
//! the current path are undone, newest first, and those on the path from the common ancestor to
//! the target are redone, oldest first.

use reins_session::{EntryTag, SessionError, SessionTree};
use serde::Deserialize;

use crate::record::{COMMAND, CommandRecord, FILE_CHANGE, FileChangeRecord, FileRecord};

/// A custom entry's type, read without the rest of its line.
#[derive(Deserialize)]
struct CustomType {
    #[serde(rename = "customType", default)]
    custom_type: String,
}

/// A custom entry's `data`, read straight into its record.
#[derive(Deserialize)]
struct Data<T> {
    data: T,
}

/// Which way a recorded change is replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Taken back: the file goes from the change's `after` to its `before`.
    Undo,
    /// Made again: from `before` to `after`.
    Redo,
}

/// One recorded file change to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The `reins.file_change` entry that recorded it.
    pub entry_id: String,
    pub direction: Direction,
    pub file: FileRecord,
}

/// A command on the way whose effects on files were not recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRan {
    pub entry_id: String,
    pub direction: Direction,
    pub tool: String,
    pub command: Option<String>,
}

/// The file side of moving a leaf from `from` to `target`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    pub from: Option<String>,
    pub target: String,
    /// The last entry both paths share (`None`: they share nothing, or there was no leaf).
    pub ancestor: Option<String>,
    /// Undo steps (newest first), then redo steps (oldest first).
    pub steps: Vec<Step>,
    pub commands: Vec<CommandRan>,
    /// Records on the way that could not be read: `entry id: reason`.
    pub unreadable: Vec<String>,
}

impl Plan {
    /// The plan for moving the leaf of `tree` from `from` (its leaf) to `target`.
    pub fn between(tree: &SessionTree, from: Option<&str>, target: &str) -> Result<Plan, SessionError> {
        let target_path: Vec<&str> = tree.path_to_root(target)?.into_iter().rev().collect();
        let from_path: Vec<&str> = match from {
            Some(from) => tree.path_to_root(from)?.into_iter().rev().collect(),
            None => Vec::new(),
        };
        let shared = target_path.iter().zip(&from_path).take_while(|(a, b)| a == b).count();
        let mut plan = Plan {
            from: from.map(str::to_string),
            target: target.to_string(),
            ancestor: shared.checked_sub(1).map(|at| target_path[at].to_string()),
            ..Plan::default()
        };
        for id in from_path[shared..].iter().rev() {
            plan.add(tree, id, Direction::Undo);
        }
        for id in &target_path[shared..] {
            plan.add(tree, id, Direction::Redo);
        }
        Ok(plan)
    }

    /// Adds what entry `id` recorded, if it is a checkpoint entry.
    fn add(&mut self, tree: &SessionTree, id: &str, direction: Direction) {
        if tree.get(id).is_none_or(|entry| entry.tag != EntryTag::Custom) {
            return;
        }
        let Some(line) = tree.line(id) else { return self.unreadable.push(format!("{id}: the line is not UTF-8")) };
        // Only the type first: other extensions' custom entries are not read further.
        let custom_type = match serde_json::from_str::<CustomType>(line) {
            Ok(CustomType { custom_type }) => custom_type,
            Err(err) => return self.unreadable.push(format!("{id}: {err}")),
        };
        match custom_type.as_str() {
            FILE_CHANGE => match serde_json::from_str::<Data<FileChangeRecord>>(line) {
                Ok(Data { data }) if data.version > FileChangeRecord::VERSION => {
                    self.unreadable.push(format!("{id}: written by a newer reins (version {})", data.version))
                }
                Ok(Data { data: record }) => {
                    let mut files = record.files;
                    // A call's changes are taken back in the reverse of the order they landed.
                    if direction == Direction::Undo {
                        files.reverse();
                    }
                    self.steps.extend(files.into_iter().map(|file| Step { entry_id: id.to_string(), direction, file }));
                }
                Err(err) => self.unreadable.push(format!("{id}: {err}")),
            },
            COMMAND => match serde_json::from_str::<Data<CommandRecord>>(line) {
                Ok(Data { data: record }) => self.commands.push(CommandRan {
                    entry_id: id.to_string(),
                    direction,
                    tool: record.tool,
                    command: record.command,
                }),
                Err(err) => self.unreadable.push(format!("{id}: {err}")),
            },
            _ => {}
        }
    }

    /// Every path the steps name (each once, in order of first mention), as recorded.
    pub fn recorded_paths(&self) -> Vec<&str> {
        let mut paths: Vec<&str> = Vec::new();
        for step in &self.steps {
            for path in [Some(step.file.path.as_str()), step.file.moved_to.as_deref()].into_iter().flatten() {
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
        }
        paths
    }
}
