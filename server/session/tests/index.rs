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

/// `first message (entries)` of each session in `index` after a sync, sorted.
fn synced(index: &mut SessionIndex) -> Vec<String> {
    index.sync().unwrap();
    held(index)
}

/// A sync reads again only what changed in the directory, whoever changed it, and the files
/// behind symbolic links each time; what it keeps matches the files after each change.
#[cfg(unix)]
#[test]
fn a_sync_follows_every_change_to_the_directory_and_its_linked_files() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path().join("sessions"));
    let dir = store.dir_for(Path::new(CWD));
    let mut index = SessionIndex::load(&dir);
    // No directory yet: nothing, and the directory made later is read.
    assert!(synced(&mut index).is_empty());
    let mut first = store.create(Path::new(CWD), None).unwrap();
    first.append_message(&Message::user("first")).unwrap();
    first.flush().unwrap();
    assert_eq!(synced(&mut index), ["first (1)"]);
    assert_eq!(synced(&mut index), ["first (1)"]);

    // Appended to, a new file beside it, one renamed, one deleted.
    first.append_message(&Message::user("again")).unwrap();
    first.flush().unwrap();
    assert_eq!(synced(&mut index), ["first (2)"]);
    let mut second = store.create(Path::new(CWD), None).unwrap();
    second.append_message(&Message::user("second")).unwrap();
    second.flush().unwrap();
    assert_eq!(synced(&mut index), ["first (2)", "second (1)"]);
    let second_path = second.path().to_path_buf();
    drop(second);
    let moved = dir.join("moved.jsonl");
    std::fs::rename(&second_path, &moved).unwrap();
    assert_eq!(synced(&mut index), ["first (2)", "second (1)"]);
    assert!(index.summary("moved.jsonl").is_some());
    std::fs::remove_file(&moved).unwrap();
    assert_eq!(synced(&mut index), ["first (2)"]);

    // A session file that links to one elsewhere: its target's writes show too.
    let elsewhere = SessionStore::new(tmp.path().join("elsewhere"));
    let mut target = elsewhere.create(Path::new(CWD), None).unwrap();
    target.append_message(&Message::user("linked")).unwrap();
    target.flush().unwrap();
    std::os::unix::fs::symlink(target.path(), dir.join("linked.jsonl")).unwrap();
    assert_eq!(synced(&mut index), ["first (2)", "linked (1)"]);
    target.append_message(&Message::user("more")).unwrap();
    target.flush().unwrap();
    assert_eq!(synced(&mut index), ["first (2)", "linked (2)"]);

    // A new index of the same directory agrees.
    let mut fresh = SessionIndex::load(&dir);
    assert_eq!(synced(&mut fresh), synced(&mut index));
}

/// `first message (entries)` of each session in `index` as it stands, sorted.
fn held(index: &SessionIndex) -> Vec<String> {
    let mut lines: Vec<String> = index
        .newest_first()
        .iter()
        .filter_map(|(_, name)| index.summary(name))
        .map(|s| format!("{} ({})", s.first_user_message.as_deref().unwrap_or("-"), s.entry_count))
        .collect();
    lines.sort();
    lines
}

/// A cheap sync (for a listing on the caller's thread) takes a few appended turns, and leaves
/// the first reading of the directory and a burst of new sessions to a full sync, which then
/// misses none of what the cheap one was told.
#[cfg(target_os = "linux")]
#[test]
fn a_cheap_sync_takes_a_few_appended_turns_and_leaves_the_rest_to_a_full_one() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let dir = store.dir_for(Path::new(CWD));
    let mut first = store.create(Path::new(CWD), None).unwrap();
    first.append_message(&Message::user("first")).unwrap();
    first.flush().unwrap();
    let mut index = SessionIndex::load(&dir);
    assert!(!index.sync_if_cheap(), "nothing read yet: not cheap");
    assert_eq!(synced(&mut index), ["first (1)"]);

    // A streaming session's save points: cheap, and read on from where the last reading stopped.
    for turn in 2..=4 {
        first.append_message(&Message::user(format!("turn {turn}"))).unwrap();
        first.flush().unwrap();
        assert!(index.sync_if_cheap());
        assert_eq!(held(&index), [format!("first ({turn})")]);
    }
    assert!(index.sync_if_cheap(), "nothing changed: cheap");

    // Twenty new sessions at once: not cheap; the full sync that follows lists every one.
    let mut made = Vec::new();
    for n in 0..20 {
        let mut file = store.create(Path::new(CWD), None).unwrap();
        file.append_message(&Message::user(format!("new {n:02}"))).unwrap();
        file.flush().unwrap();
        made.push(file);
    }
    assert!(!index.sync_if_cheap());
    assert_eq!(held(&index).len(), 1, "the cheap sync read none of them");
    let listed = synced(&mut index);
    assert_eq!(listed.len(), 21);
    assert_eq!(listed[0], "first (4)");
    assert!(index.sync_if_cheap());
}
