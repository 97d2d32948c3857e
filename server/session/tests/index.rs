//! The session index: listings come from it while it matches the files, and from the files —
//! the truth — when it does not (another program wrote a session, a file went, the index broke).

use std::path::Path;

use reins_ai::Message;
use reins_session::{INDEX_FILE, SessionIndex, SessionStore};

const CWD: &str = "/work/project";

/// `name: first message (entries)` of each listed session, sorted.
fn listed(index: &mut SessionIndex, store: &SessionStore) -> Vec<String> {
    let files = store.files(Path::new(CWD)).unwrap();
    let mut lines: Vec<String> = index
        .summaries(&files)
        .iter()
        .map(|s| {
            let name = s.name.as_deref().unwrap_or("-");
            format!("{name}: {} ({})", s.first_user_message.as_deref().unwrap_or("-"), s.entry_count)
        })
        .collect();
    lines.sort();
    index.save();
    lines
}

#[test]
fn the_index_answers_while_it_matches_the_files_and_the_files_win_when_it_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let dir = store.dir_for(Path::new(CWD));
    let mut first = store.create(Path::new(CWD), None).unwrap();
    first.append_message(&Message::user("first question")).unwrap();
    first.set_name("one").unwrap();
    first.flush().unwrap();
    let mut second = store.create(Path::new(CWD), None).unwrap();
    second.append_message(&Message::user("second question")).unwrap();
    second.flush().unwrap();

    let mut index = SessionIndex::load(&dir);
    assert_eq!(listed(&mut index, &store), ["-: second question (1)", "one: first question (2)"]);
    assert!(dir.join(INDEX_FILE).is_file());

    // A new process reads the index, not the files: an entry changed in the index (its stamp
    // still matching) shows as the index has it.
    let text = std::fs::read_to_string(dir.join(INDEX_FILE)).unwrap();
    std::fs::write(dir.join(INDEX_FILE), text.replace("first question", "from the index")).unwrap();
    let mut index = SessionIndex::load(&dir);
    assert_eq!(listed(&mut index, &store), ["-: second question (1)", "one: from the index (2)"]);

    // Another program appends to a session: its file is read again.
    first.append_message(&Message::user("more")).unwrap();
    first.flush().unwrap();
    assert_eq!(listed(&mut index, &store), ["-: second question (1)", "one: first question (3)"]);

    // A file that goes leaves the list; a broken index is rebuilt from the files.
    let second_path = second.path().to_path_buf();
    drop(second);
    std::fs::remove_file(second_path).unwrap();
    std::fs::write(dir.join(INDEX_FILE), "{ not json").unwrap();
    let mut index = SessionIndex::load(&dir);
    assert_eq!(listed(&mut index, &store), ["one: first question (3)"]);
    let rebuilt = std::fs::read_to_string(dir.join(INDEX_FILE)).unwrap();
    assert!(rebuilt.contains("first question") && !rebuilt.contains("second question"), "{rebuilt}");
}

/// A session that streams changes its file at every save point: listings in between do not
/// write the whole index each time, and what the index file lacks meanwhile a new reader takes
/// from the session file.
#[test]
fn listings_while_a_session_grows_do_not_rewrite_the_index_each_time() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let dir = store.dir_for(Path::new(CWD));
    let mut growing = store.create(Path::new(CWD), None).unwrap();
    growing.append_message(&Message::user("streaming")).unwrap();
    growing.flush().unwrap();
    let mut index = SessionIndex::load(&dir);
    assert_eq!(listed(&mut index, &store), ["-: streaming (1)"]);
    let written = std::fs::read_to_string(dir.join(INDEX_FILE)).unwrap();
    for turn in 2..=5 {
        growing.append_message(&Message::user("more")).unwrap();
        growing.flush().unwrap();
        assert_eq!(listed(&mut index, &store), [format!("-: streaming ({turn})")]);
    }
    assert_eq!(std::fs::read_to_string(dir.join(INDEX_FILE)).unwrap(), written);
    let mut fresh = SessionIndex::load(&dir);
    assert_eq!(listed(&mut fresh, &store), ["-: streaming (5)"]);
}
