//! What moving a session's leaf does to the files: the file changes recorded after the target on
//! the current path are undone, newest first, and those on the path from the common ancestor to
//! the target are redone, oldest first.

use std::collections::HashSet;
use std::sync::Arc;

use reins_session::{EntryTag, SessionError, SessionTree};
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::patch::PatchHunk;
use crate::record::{COMMAND, CommandRecord, FILE_CHANGE, FileChangeRecord, FileRecord, NOT_A_STRING, Side, Text};

/// A custom entry's `data`, read straight into its record.
#[derive(Deserialize)]
struct Data<T> {
    data: T,
}

/// A `reins.file_change` record ([`FileChangeRecord`]) read with its texts left in the line:
/// a session of megabytes keeps them where they are, and a checkout reads few of them.
#[derive(Deserialize)]
struct FileChangeInPlace<'a> {
    #[serde(default)]
    version: u32,
    #[serde(borrow)]
    files: Vec<FileInPlace<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileInPlace<'a> {
    path: String,
    #[serde(default)]
    moved_to: Option<String>,
    #[serde(borrow)]
    before: Option<SideInPlace<'a>>,
    #[serde(borrow)]
    after: Option<SideInPlace<'a>>,
    #[serde(default)]
    patch: Option<Vec<PatchHunk>>,
}

#[derive(Deserialize)]
struct SideInPlace<'a> {
    sha256: String,
    size: u64,
    #[serde(default, borrow)]
    text: Option<&'a RawValue>,
    #[serde(default)]
    stored: bool,
}

/// What a custom entry's line records, read in one pass: its `customType` first (reins and pi
/// write it before `data`), then `data` straight into the record that type names, or skipped
/// without being built for other extensions' entries.
enum Recorded<'a> {
    FileChange(FileChangeInPlace<'a>),
    Command(CommandRecord),
    Other,
    /// `data` came before `customType`: the line is read again for it.
    DataFirst(String),
}

impl<'de> Deserialize<'de> for Recorded<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = Recorded<'de>;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a custom entry")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Recorded<'de>, A::Error> {
                let (mut custom_type, mut recorded, mut data_first) = (None::<String>, None, false);
                while let Some(key) = map.next_key::<String>()? {
                    match (key.as_str(), custom_type.as_deref()) {
                        ("customType", _) => custom_type = Some(map.next_value()?),
                        ("data", Some(FILE_CHANGE)) => recorded = Some(Recorded::FileChange(map.next_value()?)),
                        ("data", Some(COMMAND)) => recorded = Some(Recorded::Command(map.next_value()?)),
                        ("data", None) => {
                            data_first = true;
                            map.next_value::<IgnoredAny>()?;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                match (custom_type, recorded) {
                    (_, Some(recorded)) => Ok(recorded),
                    (Some(custom_type), None) if data_first => Ok(Recorded::DataFirst(custom_type)),
                    (Some(custom_type), None) if custom_type == FILE_CHANGE || custom_type == COMMAND => {
                        Err(serde::de::Error::missing_field("data"))
                    }
                    _ => Ok(Recorded::Other),
                }
            }
        }
        deserializer.deserialize_map(Fields)
    }
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
        let recorded = match serde_json::from_str::<Recorded>(line) {
            Ok(Recorded::DataFirst(custom_type)) if custom_type == FILE_CHANGE => {
                serde_json::from_str::<Data<FileChangeInPlace>>(line).map(|Data { data }| Recorded::FileChange(data))
            }
            Ok(Recorded::DataFirst(custom_type)) if custom_type == COMMAND => {
                serde_json::from_str::<Data<CommandRecord>>(line).map(|Data { data }| Recorded::Command(data))
            }
            recorded => recorded,
        };
        match recorded {
            Ok(Recorded::FileChange(record)) if record.version > FileChangeRecord::VERSION => {
                self.unreadable.push(format!("{id}: written by a newer reins (version {})", record.version))
            }
            Ok(Recorded::FileChange(record)) => {
                let shared = tree.shared_bytes(id);
                let files: Option<Vec<FileRecord>> =
                    record.files.into_iter().map(|file| file.into_record(shared.as_ref())).collect();
                let Some(mut files) = files else { return self.unreadable.push(format!("{id}: {NOT_A_STRING}")) };
                // A call's changes are taken back in the reverse of the order they landed.
                if direction == Direction::Undo {
                    files.reverse();
                }
                self.steps.extend(files.into_iter().map(|file| Step { entry_id: id.to_string(), direction, file }));
            }
            Ok(Recorded::Command(record)) => self.commands.push(CommandRan {
                entry_id: id.to_string(),
                direction,
                tool: record.tool,
                command: record.command,
            }),
            Ok(Recorded::Other | Recorded::DataFirst(_)) => {}
            Err(err) => self.unreadable.push(format!("{id}: {err}")),
        }
    }

    /// Every path the steps name (each once, in order of first mention), as recorded.
    pub fn recorded_paths(&self) -> Vec<&str> {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut paths: Vec<&str> = Vec::new();
        for step in &self.steps {
            for path in [Some(step.file.path.as_str()), step.file.moved_to.as_deref()].into_iter().flatten() {
                if seen.insert(path) {
                    paths.push(path);
                }
            }
        }
        paths
    }
}

impl FileInPlace<'_> {
    /// The record, its texts in `shared` (the session file's bytes) where they are there;
    /// `None` when a side's text is not a string.
    fn into_record(self, shared: Option<&Arc<Vec<u8>>>) -> Option<FileRecord> {
        let side = |side: Option<SideInPlace>| -> Option<Option<Side>> {
            let Some(side) = side else { return Some(None) };
            let text = match side.text {
                Some(raw) => Some(Text::in_place(raw, shared)?),
                None => None,
            };
            Some(Some(Side { sha256: side.sha256, size: side.size, text, stored: side.stored }))
        };
        Some(FileRecord {
            path: self.path,
            moved_to: self.moved_to,
            before: side(self.before)?,
            after: side(self.after)?,
            patch: self.patch,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn a_record_is_read_whatever_the_order_of_its_fields_and_others_are_skipped() {
        let data = r#"{"version":1,"toolCallId":"c","tool":"edit","files":[{"path":"a.txt","before":null,"after":{"sha256":"x","size":1,"text":"a"}}]}"#;
        let lines = [
            r#"{"type":"session","version":3,"id":"s","cwd":"/w"}"#.to_string(),
            format!(r#"{{"type":"custom","id":"a1","parentId":null,"customType":"reins.file_change","data":{data}}}"#),
            // `data` before `customType`: read again for it.
            format!(r#"{{"type":"custom","data":{data},"id":"b2","parentId":"a1","customType":"reins.file_change"}}"#),
            r#"{"type":"custom","id":"c3","parentId":"b2","customType":"other.ext","data":{"files":3}}"#.to_string(),
            r#"{"type":"custom","id":"d4","parentId":"c3","customType":"reins.command"}"#.to_string(),
            r#"{"type":"custom","id":"e5","parentId":"d4","customType":"reins.command","data":{"tool":"bash"}}"#
                .to_string(),
        ];
        let tree = SessionTree::from_bytes(Path::new("s.jsonl"), (lines.join("\n") + "\n").into_bytes()).unwrap();
        let plan = Plan::between(&tree, None, "e5").unwrap();
        let entries: Vec<&str> = plan.steps.iter().map(|step| step.entry_id.as_str()).collect();
        assert_eq!(entries, ["a1", "b2"]);
        assert_eq!(plan.commands.len(), 1);
        assert_eq!(plan.unreadable, ["d4: missing field `data` at line 1 column 72"]);
    }
}
