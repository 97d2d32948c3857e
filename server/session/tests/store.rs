//! Session files on disk: create, list, find, append and flush, torn lines, the lock, fork,
//! navigate, label and name.

use std::io::Write;
use std::path::Path;

use reins_ai::Message;
use reins_session::{EntryKind, SessionError, SessionFile, SessionStore, SessionTree, encode_cwd};

fn store(dir: &Path) -> SessionStore {
    SessionStore::new(dir.join("sessions"))
}

/// A session with `turns` user/assistant exchanges, flushed.
fn session_with_turns(store: &SessionStore, cwd: &Path, turns: &[(&str, &str)]) -> SessionFile {
    let mut session = store.create(cwd, None).unwrap();
    for (question, answer) in turns {
        session.append_message(&Message::user(*question)).unwrap();
        session.append_message(&assistant(answer)).unwrap();
    }
    session.flush().unwrap();
    session
}

fn assistant(text: &str) -> Message {
    Message::Assistant(reins_ai::AssistantMessage {
        content: vec![reins_ai::Content::text(text)],
        provider: "scripted".into(),
        model: "m".into(),
        ..Default::default()
    })
}

/// The context at the leaf of the file at `path`, one line per message.
fn context_lines(path: &Path) -> Vec<String> {
    let tree = SessionTree::load(path).unwrap();
    tree.context()
        .unwrap()
        .messages
        .iter()
        .map(|message| match message {
            Message::User(user) => format!("user: {}", text_of(&user.content)),
            Message::Assistant(assistant) => format!("assistant: {}", assistant.text()),
            Message::ToolResult(result) => format!("tool: {}", result.text()),
        })
        .collect()
}

fn text_of(content: &[reins_ai::Content]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            reins_ai::Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn cwd_is_encoded_as_pi_does() {
    assert_eq!(encode_cwd(Path::new("/home/a/my project")), "--home-a-my project--");
    assert_eq!(encode_cwd(Path::new("C:\\work\\x")), "--C--work-x--");
}

#[test]
fn flushed_turns_survive_a_reopen_and_unflushed_ones_do_not_exist_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = session_with_turns(&store, Path::new("/w"), &[("my name is ACai", "hi ACai")]);
    session.append_message(&Message::user("queued, not flushed")).unwrap();
    let path = session.path().to_path_buf();
    assert_eq!(context_lines(&path), ["user: my name is ACai", "assistant: hi ACai"]);
    session.flush().unwrap();
    assert_eq!(context_lines(&path), ["user: my name is ACai", "assistant: hi ACai", "user: queued, not flushed"]);
    assert!(path.starts_with(dir.path().join("sessions/--w--")), "{}", path.display());
}

#[test]
fn two_handles_of_one_file_take_turns_and_each_reads_what_the_other_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut editor = session_with_turns(&store, Path::new("/w"), &[("q", "a")]);
    // Merely open, neither holds the lock: a second handle (another process) opens the file.
    let mut terminal = SessionFile::open(editor.path()).unwrap();

    // The editor runs: while it holds the lock, the terminal cannot start a run.
    assert!(!editor.hold().unwrap(), "nothing changed since it was opened");
    let error = terminal.hold().unwrap_err();
    assert!(matches!(error, SessionError::Locked { .. }), "{error}");
    assert!(error.to_string().contains("is being written by another reins process"), "{error}");
    editor.append_message(&Message::user("from the editor")).unwrap();
    editor.release().unwrap();

    // The terminal's turn: it first reads the editor's entry, and continues after it.
    assert!(terminal.hold().unwrap(), "the editor's entry was read");
    assert_eq!(terminal.leaf(), editor.leaf());
    terminal.append_message(&Message::user("from the terminal")).unwrap();
    terminal.release().unwrap();
    let path = editor.path().to_path_buf();
    assert_eq!(context_lines(&path), ["user: q", "assistant: a", "user: from the editor", "user: from the terminal"]);

    // A write without a run (a label, a name) takes the lock just for its flush; what the
    // editor had queued goes after what the terminal wrote.
    editor.append_message(&Message::user("queued in the editor")).unwrap();
    editor.flush().unwrap();
    let tree = SessionTree::load(&path).unwrap();
    assert_eq!(tree.len(), editor.tree().len(), "the editor's tree is the file");
    assert!(!editor.hold().unwrap() && editor.is_held());
    assert_eq!(
        context_lines(&path),
        ["user: q", "assistant: a", "user: from the editor", "user: queued in the editor"],
        "queued on the editor's own leaf: a branch beside the terminal's message"
    );
}

#[test]
fn a_torn_last_line_is_skipped_and_cut_off_before_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let path = session_with_turns(&store, Path::new("/w"), &[("q", "a")]).path().to_path_buf();
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(br#"{"type":"message","id":"deadbeef","parentId":"#).unwrap();
    drop(file);

    assert_eq!(SessionTree::load(&path).unwrap().len(), 2);
    let mut session = SessionFile::open(&path).unwrap();
    session.append_message(&Message::user("after the crash")).unwrap();
    session.flush().unwrap();
    drop(session);

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("deadbeef"));
    assert!(text.ends_with("}\n"));
    assert_eq!(context_lines(&path), ["user: q", "assistant: a", "user: after the crash"]);
}

#[test]
fn a_last_line_without_newline_gets_one_before_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let path = session_with_turns(&store, Path::new("/w"), &[("q", "a")]).path().to_path_buf();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.trim_end()).unwrap();
    let mut session = SessionFile::open(&path).unwrap();
    session.append_message(&Message::user("next")).unwrap();
    session.flush().unwrap();
    drop(session);
    assert_eq!(context_lines(&path), ["user: q", "assistant: a", "user: next"]);
}

#[test]
fn list_shows_newest_first_with_name_first_message_and_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let cwd = Path::new("/w");
    let first = session_with_turns(&store, cwd, &[("first session", "a")]);
    let first_path = first.path().to_path_buf();
    drop(first);
    let mut second = session_with_turns(&store, cwd, &[("second session", "b"), ("more", "c")]);
    second.set_name("  the second  ").unwrap();
    second.flush().unwrap();
    let second_id = second.id().to_string();
    drop(second);
    // Make the order independent of the clock's resolution.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options().append(true).open(&first_path).unwrap().set_modified(old).unwrap();

    let listed: Vec<_> = store
        .list(cwd)
        .unwrap()
        .into_iter()
        .map(|summary| (summary.name, summary.first_user_message, summary.entry_count))
        .collect();
    assert_eq!(
        listed,
        [
            (Some("the second".to_string()), Some("second session".to_string()), 5),
            (None, Some("first session".to_string()), 2),
        ]
    );
    assert!(store.list(Path::new("/elsewhere")).unwrap().is_empty());
    let recent = store.most_recent(cwd).unwrap().unwrap();
    assert_eq!(store.find(&second_id[..8], cwd).unwrap(), recent);
    assert_eq!(store.open(recent.to_str().unwrap(), cwd).unwrap().id(), second_id);
    let missing = store.find("nope", cwd).unwrap_err();
    assert!(matches!(&missing, SessionError::NotFound { query, .. } if query == "nope"), "{missing}");
}

#[test]
fn navigate_without_summary_survives_a_reload_through_a_leaf_entry() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = session_with_turns(&store, Path::new("/w"), &[("one", "1"), ("two", "2")]);
    let first_answer = session.tree().path_to_root(session.leaf().unwrap()).unwrap()[2].to_string();
    session.navigate(&first_answer, None).unwrap();
    let path = session.path().to_path_buf();
    drop(session);

    assert_eq!(SessionTree::load(&path).unwrap().leaf(), Some(first_answer.as_str()));
    assert_eq!(context_lines(&path), ["user: one", "assistant: 1"]);
    let mut session = SessionFile::open(&path).unwrap();
    session.append_message(&Message::user("two, again")).unwrap();
    drop(session);
    assert_eq!(context_lines(&path), ["user: one", "assistant: 1", "user: two, again"]);
}

#[test]
fn navigate_with_summary_puts_the_summary_in_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = session_with_turns(&store, Path::new("/w"), &[("one", "1"), ("two", "2")]);
    let first_answer = session.tree().path_to_root(session.leaf().unwrap()).unwrap()[2].to_string();
    session.navigate(&first_answer, Some("tried two".into())).unwrap();
    let path = session.path().to_path_buf();
    drop(session);
    let lines = context_lines(&path);
    assert_eq!(lines[..2], ["user: one", "assistant: 1"]);
    assert_eq!(
        lines[2],
        "user: The following is a summary of a branch that this conversation came back from:\n\n<summary>\ntried two</summary>"
    );
}

#[test]
fn fork_copies_the_path_and_its_labels_into_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = session_with_turns(&store, Path::new("/w"), &[("one", "1"), ("two", "2")]);
    let path = session.tree().path_to_root(session.leaf().unwrap()).unwrap();
    let (first_question, first_answer) = (path[3].to_string(), path[2].to_string());
    session.label(&first_question, Some("start")).unwrap();
    let fork = session.fork(&first_answer).unwrap();

    assert_eq!(fork.tree().header().parent_session.as_deref(), Some(session.path().to_str().unwrap()));
    assert_ne!(fork.id(), session.id());
    assert_eq!(fork.tree().label(&first_question), Some("start"));
    let fork_path = fork.path().to_path_buf();
    drop(fork);
    assert_eq!(context_lines(&fork_path), ["user: one", "assistant: 1"]);
    // The fork is a file of its own: the original still has both turns.
    assert_eq!(context_lines(session.path()), ["user: one", "assistant: 1", "user: two", "assistant: 2"]);
}

#[test]
fn labels_and_names_can_be_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = session_with_turns(&store, Path::new("/w"), &[("one", "1")]);
    let leaf = session.leaf().unwrap().to_string();
    session.label(&leaf, Some("keep")).unwrap();
    session.set_name("named").unwrap();
    assert_eq!((session.tree().label(&leaf), session.tree().name()), (Some("keep"), Some("named")));
    session.label(&leaf, None).unwrap();
    session.set_name("").unwrap();
    session.flush().unwrap();
    let tree = SessionTree::load(session.path()).unwrap();
    assert_eq!((tree.label(&leaf), tree.name()), (None, None));
    assert!(session.label("00000000", Some("x")).is_err());
}

#[test]
fn unknown_entry_kinds_are_kept_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let session = session_with_turns(&store, Path::new("/w"), &[("one", "1")]);
    let path = session.path().to_path_buf();
    let leaf = session.leaf().unwrap().to_string();
    drop(session);
    let unknown = format!(
        r#"{{"type":"future_thing","id":"abcd0123","parentId":"{leaf}","timestamp":"2025-01-01T00:00:00.000Z","payload":{{"z":1,"a":[true]}}}}"#
    );
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(file, "{unknown}").unwrap();
    drop(file);

    let mut session = SessionFile::open(&path).unwrap();
    assert_eq!(session.tree().line("abcd0123"), Some(unknown.as_str()));
    session.append(EntryKind::ThinkingLevelChange { thinking_level: "high".into() }).unwrap();
    drop(session);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("{unknown}\n")));
    assert_eq!(SessionTree::load(&path).unwrap().context().unwrap().thinking_level.as_deref(), Some("high"));
}

#[test]
fn a_compaction_entry_replaces_the_summarized_part_of_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = session_with_turns(&store, Path::new("/w"), &[("one", "1"), ("two", "2")]);
    let path = session.tree().path_entries(session.leaf().unwrap()).unwrap();
    let cut = reins_session::find_cut_point(&path, 1).unwrap();
    assert_eq!(cut.first_kept_entry_id, path[3].id);
    session.compact("they said one".into(), &cut.first_kept_entry_id, 40, None).unwrap();
    session.flush().unwrap();
    assert_eq!(
        context_lines(session.path()),
        [
            "user: The conversation history before this point was compacted into the following summary:\n\n<summary>\nthey said one\n</summary>",
            "assistant: 2",
        ]
    );
}

#[test]
fn opening_a_version_1_file_rewrites_it_as_version_3() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}"#,
            "\n",
            r#"{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}"#,
            "\n",
        ),
    )
    .unwrap();
    let mut session = SessionFile::open(&path).unwrap();
    session.append_message(&Message::user("two")).unwrap();
    drop(session);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.lines().next().unwrap().contains(r#""version":3"#), "{text}");
    assert_eq!(context_lines(&path), ["user: one", "user: two"]);
}
