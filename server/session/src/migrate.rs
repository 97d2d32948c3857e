//! Brings version 1 and 2 session files to version 3 on load, the way pi does:
//! v1 → v2 gives every entry an id and chains each to the one before it (a v1 file is a line, not
//! a tree) and turns a compaction's `firstKeptEntryIndex` into `firstKeptEntryId`;
//! v2 → v3 renames the message role `hookMessage` to `custom`.

use serde_json::{Map, Value};
use std::collections::HashSet;

use crate::format::CURRENT_VERSION;
use crate::time::new_entry_id;

/// Migrates parsed lines (the header first) in place, from `version` to the current one.
pub fn migrate(lines: &mut [Map<String, Value>], version: u64) {
    if version < 2 {
        v1_to_v2(lines);
    }
    if version < 3 {
        v2_to_v3(lines);
    }
    if let Some(header) = lines.first_mut() {
        header.insert("version".into(), Value::from(CURRENT_VERSION));
    }
}

fn v1_to_v2(lines: &mut [Map<String, Value>]) {
    let mut taken = HashSet::new();
    let mut previous: Option<String> = None;
    for index in 0..lines.len() {
        if is_header(&lines[index]) {
            continue;
        }
        let id = new_entry_id(|id| taken.contains(id));
        taken.insert(id.clone());
        let entry = &mut lines[index];
        entry.insert("id".into(), Value::String(id.clone()));
        entry.insert("parentId".into(), previous.map_or(Value::Null, Value::String));
        previous = Some(id);
        if entry.get("type").and_then(Value::as_str) != Some("compaction") {
            continue;
        }
        // The index counts lines from the header (line 0); pi resolves it only to an entry that
        // already has its id, i.e. one before the compaction.
        let Some(kept_index) = entry.get("firstKeptEntryIndex").and_then(Value::as_u64) else { continue };
        let entry_id_at = |at: usize| -> Option<Value> {
            let target = lines.get(at)?;
            if is_header(target) { None } else { target.get("id").cloned() }
        };
        let kept_id = if (kept_index as usize) < index { entry_id_at(kept_index as usize) } else { None };
        let entry = &mut lines[index];
        entry.remove("firstKeptEntryIndex");
        if let Some(kept_id) = kept_id {
            entry.insert("firstKeptEntryId".into(), kept_id);
        }
    }
}

fn v2_to_v3(lines: &mut [Map<String, Value>]) {
    for entry in lines.iter_mut() {
        if entry.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        let Some(Value::Object(message)) = entry.get_mut("message") else { continue };
        if message.get("role").and_then(Value::as_str) == Some("hookMessage") {
            message.insert("role".into(), Value::String("custom".into()));
        }
    }
}

fn is_header(line: &Map<String, Value>) -> bool {
    line.get("type").and_then(Value::as_str) == Some("session")
}
