//! A tree read a line at a time ([`TreeOutline::scan`]) is the tree a load indexes: the same
//! entries with the same (repaired) parents, labels, name and leaf, and each line handed over as
//! the loaded tree holds it — on pi's files and on a crafted one.

use std::path::{Path, PathBuf};

use reins_session::{EntryTag, SessionTree, TreeOutline};

/// Everything a view reads of a tree, from a loaded one.
fn loaded(path: &Path) -> Vec<String> {
    let tree = SessionTree::load(path).unwrap();
    let mut seen = vec![format!("{} {:?} {:?}", tree.header().id, tree.name(), tree.leaf())];
    for (entry, line) in tree.lines() {
        seen.push(format!("{} {:?} {:?} {:?} {line}", entry.id, entry.parent_id, entry.tag, tree.label(entry.id)));
    }
    seen
}

/// The same from a scan.
fn scanned(path: &Path) -> Vec<String> {
    let mut lines: Vec<(u32, EntryTag, String)> = Vec::new();
    let outline = TreeOutline::scan(path, |number, tag, line| lines.push((number, tag, line.to_string()))).unwrap();
    assert_eq!(lines.len(), outline.len(), "each entry is handed over once");
    let mut seen = vec![format!("{} {:?} {:?}", outline.header().id, outline.name(), outline.leaf())];
    for (number, tag, line) in lines {
        let entry = outline.entry(number).unwrap();
        assert_eq!(entry.tag, tag);
        seen.push(format!("{} {:?} {:?} {:?} {line}", entry.id, entry.parent_id, entry.tag, outline.label(entry.id)));
    }
    assert!(outline.entry(outline.len() as u32).is_none());
    seen
}

#[test]
fn a_scan_of_each_pi_file_is_its_loaded_tree() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["pi", "pi-1.6"] {
        for file in std::fs::read_dir(fixtures.join(dir)).unwrap() {
            files.push(file.unwrap().path());
        }
    }
    files.retain(|path| path.extension().is_some_and(|ext| ext == "jsonl"));
    assert!(files.len() >= 10, "{files:?}");
    for path in files {
        assert_eq!(scanned(&path), loaded(&path), "{}", path.display());
    }
}

#[test]
fn a_scan_of_a_crafted_file_is_its_loaded_tree() {
    let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let message = |id: &str, parent: &str, text: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"{text}"}}}}"#
        )
    };
    let mut text = String::from('\u{feff}');
    for line in [
        header.to_string(),
        message("a", "null", "one"),
        // A parent that comes later in the file.
        message("b", "\"c\"", "two"),
        message("c", "\"a\"", "three"),
        String::new(),
        "   ".to_string(),
        // x → y → x: a cycle, broken at x.
        message("x", "\"y\"", "four"),
        message("y", "\"x\"", "five"),
        // The same id twice.
        message("c", "\"b\"", "six"),
        "not json".to_string(),
        r#"{"type":"label","id":"l1","parentId":"c","timestamp":"2025-01-01T00:00:00.000Z","targetId":"a","label":"start"}"#
            .to_string(),
        r#"{"type":"session_info","id":"n1","parentId":"l1","timestamp":"2025-01-01T00:00:00.000Z","name":" crafted "}"#
            .to_string(),
        r#"{"type":"leaf","id":"f1","parentId":"n1","timestamp":"2025-01-01T00:00:00.000Z","targetId":"b"}"#.to_string(),
    ] {
        text.push_str(&line);
        text.push('\n');
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crafted.jsonl");
    // A line that is not UTF-8 with a child, and a torn last line.
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(message("u", "\"a\"", "caf").as_bytes());
    bytes.extend_from_slice(b"\xE9\n");
    bytes.extend_from_slice(message("v", "\"u\"", "after").as_bytes());
    bytes.extend_from_slice(b"\n{\"type\":\"message\",\"id\":\"tor");
    std::fs::write(&path, &bytes).unwrap();
    let seen = scanned(&path);
    assert_eq!(seen, loaded(&path));
    assert_eq!(seen[0], r#"s Some("crafted") Some("v")"#);
    // The line that is not UTF-8 is skipped: its child has no parent left and is a root.
    assert!(seen.iter().any(|line| line.starts_with("v None")), "{seen:#?}");

    // A file that is only a header, without its newline.
    std::fs::write(&path, header).unwrap();
    assert_eq!(scanned(&path), loaded(&path));
    // Not a session.
    std::fs::write(&path, "not json\n").unwrap();
    assert!(TreeOutline::scan(&path, |_, _, _| {}).is_err());
}
