//! The linear fork against the rebuilt one: on each session and entry, the fast path (when it
//! applies) must write the same file and build the same tree as pushing the path line by line.

use std::collections::HashMap;
use std::path::Path;

use reins_ai::Message;
use serde_json::{Map, Value};

use crate::format::{EntryKind, Header};
use crate::session_file::{Durability, SessionFile};
use crate::store::file_name;

/// Which way a fork was built.
#[derive(Debug, PartialEq)]
enum Route {
    Linear,
    Rebuilt,
}

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"source","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;

fn message(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_string(), |parent| format!("\"{parent}\""));
    let role = if text.starts_with('A') { "assistant" } else { "user" };
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"{role}","content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}}}"#
    )
}

fn linear_messages(ids: &[&str]) -> Vec<String> {
    let mut parent = None;
    let mut lines = Vec::new();
    for (at, id) in ids.iter().enumerate() {
        let text = if at % 2 == 0 { format!("Q {id}") } else { format!("A {id}") };
        lines.push(message(id, parent, &text));
        parent = Some(id);
    }
    lines
}

/// Writes `HEADER` and `lines` (joined by newlines, then `end`) into `dir` and opens it.
fn session_from_lines(dir: &Path, lines: &[String], end: &str) -> SessionFile {
    let path = dir.join("source.jsonl");
    std::fs::write(&path, format!("{HEADER}\n{}{end}", lines.join("\n"))).unwrap();
    let mut session = SessionFile::open(&path).unwrap();
    session.set_durability(Durability::Write);
    session
}

/// Forks `source` at `entry_id` both ways into fresh directories with the same header, asserts
/// that both wrote the same file and built the same tree, and says which way `fork` takes.
fn fork_both_ways(source: &SessionFile, entry_id: &str) -> Route {
    let dir = tempfile::tempdir().unwrap();
    let header = Header::new("fork".into(), "2025-02-02T00:00:00.000Z".into(), "/w".into(), Some("source".into()));
    let rebuilt = source.fork_rebuilt(&dir.path().join("rebuilt"), header.clone(), entry_id).unwrap();
    let Some(mut linear) = source.fork_linear(&dir.path().join("linear"), header, entry_id).unwrap() else {
        return Route::Rebuilt;
    };
    assert_eq!(file_text(source, &linear), file_text(source, &rebuilt), "file of the fork at {entry_id}");
    assert_eq!(tree_summary(source, &linear), tree_summary(source, &rebuilt), "tree of the fork at {entry_id}");
    // What is appended next lands after the copied lines, as the tree says.
    linear.append(EntryKind::message(&Message::user("after the fork"))).unwrap();
    linear.flush().unwrap();
    let on_disk = crate::tree::SessionTree::load(linear.path()).unwrap();
    assert_eq!(on_disk.to_jsonl(), linear.tree().to_jsonl());
    Route::Linear
}

/// The fork's file with the ids and timestamps of the entries it made (labels) made stable.
fn file_text(source: &SessionFile, fork: &SessionFile) -> String {
    let new_ids = new_ids(source, fork);
    let text = std::fs::read_to_string(fork.path()).unwrap();
    let lines = text.split_inclusive('\n').map(|line| {
        let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(line) else { return line.to_string() };
        let Some(id) = map.get("id").and_then(Value::as_str).and_then(|id| new_ids.get(id)).cloned() else {
            return line.to_string();
        };
        map.insert("id".into(), Value::String(id));
        if let Some(parent) = map.get("parentId").and_then(Value::as_str).and_then(|id| new_ids.get(id)).cloned() {
            map.insert("parentId".into(), Value::String(parent));
        }
        map.insert("timestamp".into(), Value::String("now".into()));
        format!("{}\n", Value::Object(map))
    });
    lines.collect()
}

/// Leaf, size, path, labels, name and context of the fork, with its new ids made stable.
fn tree_summary(source: &SessionFile, fork: &SessionFile) -> String {
    let new_ids = new_ids(source, fork);
    let stable = |id: &str| new_ids.get(id).cloned().unwrap_or_else(|| id.to_string());
    let tree = fork.tree();
    let leaf = tree.leaf().map(stable);
    let path: Vec<String> =
        tree.leaf().map(|leaf| tree.path_to_root(leaf).unwrap()).unwrap_or_default().into_iter().map(stable).collect();
    let labels: Vec<(String, Option<&str>)> =
        source.tree().iter().map(|entry| (entry.id.to_string(), tree.label(entry.id))).collect();
    let entries: Vec<(String, Option<String>, crate::format::EntryTag)> =
        tree.iter().map(|entry| (stable(entry.id), entry.parent_id.map(stable), entry.tag)).collect();
    format!(
        "leaf {leaf:?}\nlen {}\npath {path:?}\nentries {entries:?}\nlabels {labels:?}\nname {:?}\ncontext {:?}",
        tree.len(),
        tree.name(),
        fork.context().unwrap()
    )
}

fn new_ids(source: &SessionFile, fork: &SessionFile) -> HashMap<String, String> {
    let fresh = fork.tree().iter().filter(|entry| !source.tree().contains(entry.id));
    fresh.enumerate().map(|(at, entry)| (entry.id.to_string(), format!("new{at}"))).collect()
}

#[test]
fn linear_session_forks_by_copying_at_the_leaf_and_in_the_middle() {
    let dir = tempfile::tempdir().unwrap();
    let source = session_from_lines(dir.path(), &linear_messages(&["a", "b", "c", "d", "e", "f"]), "\n");
    assert_eq!(fork_both_ways(&source, "f"), Route::Linear);
    assert_eq!(fork_both_ways(&source, "c"), Route::Linear);
    assert_eq!(fork_both_ways(&source, "a"), Route::Linear);
}

#[test]
fn entries_appended_since_opening_are_copied_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut source = session_from_lines(dir.path(), &linear_messages(&["a", "b", "c"]), "\n");
    let first = source.append_message(&Message::user("appended one")).unwrap();
    source.append_message(&Message::user("appended two")).unwrap();
    let leaf = source.leaf().unwrap().to_string();
    assert_eq!(fork_both_ways(&source, &leaf), Route::Linear);
    assert_eq!(fork_both_ways(&source, &first), Route::Linear);
    assert_eq!(fork_both_ways(&source, "b"), Route::Linear);
}

#[test]
fn a_session_made_in_memory_forks_from_its_appended_lines() {
    let dir = tempfile::tempdir().unwrap();
    let header = Header::new("made".into(), "2025-01-01T00:00:00.000Z".into(), "/w".into(), None);
    let mut source = SessionFile::create(dir.path(), header, Durability::Write, |_| Ok(())).unwrap();
    let ids: Vec<String> =
        ["one", "two", "three"].iter().map(|text| source.append_message(&Message::user(*text)).unwrap()).collect();
    assert_eq!(fork_both_ways(&source, &ids[2]), Route::Linear);
    assert_eq!(fork_both_ways(&source, &ids[1]), Route::Linear);
    assert!(std::fs::metadata(dir.path().join(file_name(source.tree().header()))).is_ok());
}

#[test]
fn a_branch_is_rebuilt_and_the_prefix_before_it_is_copied() {
    let dir = tempfile::tempdir().unwrap();
    // a → b → c, and d a second child of b.
    let mut lines = linear_messages(&["a", "b", "c"]);
    lines.push(message("d", Some("b"), "Q d"));
    let source = session_from_lines(dir.path(), &lines, "\n");
    assert_eq!(fork_both_ways(&source, "d"), Route::Rebuilt);
    assert_eq!(fork_both_ways(&source, "c"), Route::Linear);
    assert_eq!(fork_both_ways(&source, "b"), Route::Linear);
}

#[test]
fn labels_on_the_path_are_rebuilt_and_labels_after_it_are_recreated() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = linear_messages(&["a", "b", "c"]);
    lines.push(r#"{"type":"label","id":"l1","parentId":"c","timestamp":"2025-01-01T00:00:02.000Z","targetId":"a","label":"start"}"#.into());
    lines.push(message("d", Some("l1"), "Q d"));
    lines.push(r#"{"type":"label","id":"l2","parentId":"d","timestamp":"2025-01-01T00:00:03.000Z","targetId":"b","label":"middle"}"#.into());
    let source = session_from_lines(dir.path(), &lines, "\n");
    assert_eq!(fork_both_ways(&source, "d"), Route::Rebuilt);
    assert_eq!(fork_both_ways(&source, "c"), Route::Linear);
    assert_eq!(fork_both_ways(&source, "b"), Route::Linear);
}

#[test]
fn compactions_and_names_on_a_linear_path_are_copied() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = linear_messages(&["a", "b", "c", "d"]);
    lines.push(r#"{"type":"compaction","id":"k","parentId":"d","timestamp":"2025-01-01T00:00:02.000Z","summary":"Did a to d.","firstKeptEntryId":"c","tokensBefore":900}"#.into());
    lines.push(
        r#"{"type":"session_info","id":"n","parentId":"k","timestamp":"2025-01-01T00:00:03.000Z","name":" Named "}"#
            .into(),
    );
    lines.push(message("e", Some("n"), "Q e"));
    lines.push(message("f", Some("e"), "A f"));
    let mut source = session_from_lines(dir.path(), &lines, "\n");
    source.compact("Did a to e.".into(), "e", 1200, None).unwrap();
    source.append_message(&Message::user("after the second compaction")).unwrap();
    let leaf = source.leaf().unwrap().to_string();
    assert_eq!(fork_both_ways(&source, &leaf), Route::Linear);
    assert_eq!(fork_both_ways(&source, "f"), Route::Linear);
    assert_eq!(fork_both_ways(&source, "d"), Route::Linear);
}

#[test]
fn skipped_lines_and_a_missing_last_newline_keep_the_file_identical() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = linear_messages(&["a", "b", "c"]);
    lines.insert(1, "not json".into());
    lines.insert(3, "   ".into());
    let mut source = session_from_lines(dir.path(), &lines, "");
    assert_eq!(fork_both_ways(&source, "c"), Route::Linear);
    assert_eq!(fork_both_ways(&source, "b"), Route::Linear);
    let appended = source.append_message(&Message::user("after the unterminated line")).unwrap();
    assert_eq!(fork_both_ways(&source, &appended), Route::Linear);
}

#[test]
fn leaf_entries_and_repeated_ids_take_the_rebuilt_fork() {
    let dir = tempfile::tempdir().unwrap();
    let mut source = session_from_lines(dir.path(), &linear_messages(&["a", "b", "c"]), "\n");
    let leaf_entry = source.append_at(EntryKind::Leaf { target_id: "c".into() }, Some("c"), Map::new()).unwrap();
    assert_eq!(fork_both_ways(&source, &leaf_entry), Route::Rebuilt);
    assert_eq!(fork_both_ways(&source, "c"), Route::Linear);

    let dir = tempfile::tempdir().unwrap();
    let mut lines = linear_messages(&["a", "b"]);
    lines.push(message("a", Some("b"), "Q a again"));
    let source = session_from_lines(dir.path(), &lines, "\n");
    assert_eq!(fork_both_ways(&source, "b"), Route::Rebuilt);
}
