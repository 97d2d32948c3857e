//! The newest part of a path, as compacting reads it (`SessionTree::recent_path_entries`): the
//! whole path when it is within the budget, only its newest entries beyond it, and always back
//! to what the latest compaction kept.

use std::path::Path;

use reins_ai::Message;
use reins_session::SessionStore;

fn ids(entries: &[reins_session::Entry]) -> Vec<&str> {
    entries.iter().map(|entry| entry.id.as_str()).collect()
}

#[test]
fn a_path_is_read_back_from_its_leaf_as_far_as_the_budget_or_the_kept_entries() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = SessionStore::new(dir.path()).create(Path::new("/w"), None).unwrap();
    // Ten messages of 100 characters: 25 tokens each.
    let mut written = Vec::new();
    for n in 0..10 {
        written.push(file.append_message(&Message::user(format!("{n}{}", "x".repeat(99)))).unwrap());
    }
    let leaf = written[9].clone();
    let whole = file.tree().path_entries(&leaf).unwrap();
    assert_eq!(file.tree().recent_path_entries(&leaf, 1000).unwrap(), whole);
    // Past 60 tokens after the third message back.
    assert_eq!(ids(&file.tree().recent_path_entries(&leaf, 60).unwrap()), &written[7..]);

    // A compaction that kept the last four: once the walk reaches it (4 tokens in), it goes
    // back to them whatever the budget.
    let compaction = file.compact("summary".into(), &written[6], 250, None).unwrap();
    let after = file.append_message(&Message::user("after")).unwrap();
    let recent = file.tree().recent_path_entries(&after, 5).unwrap();
    let mut expected: Vec<&str> = written[6..].iter().map(String::as_str).collect();
    expected.extend([compaction.as_str(), after.as_str()]);
    assert_eq!(ids(&recent), expected);
    // A budget spent before the compaction: it is not seen.
    assert_eq!(ids(&file.tree().recent_path_entries(&after, 1).unwrap()), [after.as_str()]);
}
