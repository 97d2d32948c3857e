//! Hostile or broken things in a sessions directory (issue 11, items 5–8): FIFOs and devices
//! named like sessions, huge files, the newest file unreadable, parent cycles, lines that are not
//! UTF-8. Each is refused or skipped alone, and never blocks.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use reins_ai::{AssistantMessage, Content, Message, Usage};
use reins_session::{SessionError, SessionFile, SessionStore, SessionTree, summarize};

const CWD: &str = "/w";

/// Runs `work` on another thread and fails the test when it takes more than 10 s: what this
/// file tests used to hang for ever.
fn within_10s<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, wait) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(work());
    });
    wait.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| panic!("{what} blocked"))
}

/// A store in `dir` with one good session holding one exchange; returns the store and that
/// session's path.
fn store_with_a_good_session(dir: &Path) -> (SessionStore, PathBuf) {
    let store = SessionStore::new(dir.join("sessions"));
    let mut session = store.create(Path::new(CWD), None).unwrap();
    session.append_message(&Message::user("hello")).unwrap();
    session.append_message(&answer("hi", 100)).unwrap();
    session.flush().unwrap();
    let path = session.path().to_path_buf();
    (store, path)
}

fn answer(text: &str, input_tokens: u64) -> Message {
    Message::Assistant(AssistantMessage {
        content: vec![Content::text(text)],
        usage: Usage { input: input_tokens, total_tokens: input_tokens, ..Usage::default() },
        ..AssistantMessage::default()
    })
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

#[test]
fn a_fifo_or_a_device_named_like_a_session_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let (store, good) = store_with_a_good_session(dir.path());
    let sessions = good.parent().unwrap().to_path_buf();
    let fifo = sessions.join("2020-01-01T00-00-00-000Z_fifo.jsonl");
    mkfifo(&fifo);
    let zero = sessions.join("2020-01-01T00-00-00-000Z_zero.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();

    let listed = within_10s("listing", move || store.list(Path::new(CWD)).unwrap());
    assert_eq!(listed.iter().map(|s| s.path.clone()).collect::<Vec<_>>(), [good]);

    let (fifo_path, zero_path) = (fifo.clone(), zero.clone());
    let errors = within_10s("opening", move || {
        [
            SessionTree::load(&fifo_path).unwrap_err(),
            SessionFile::open(&fifo_path).unwrap_err(),
            SessionTree::load(&zero_path).unwrap_err(),
            SessionFile::open(&zero_path).unwrap_err(),
        ]
        .map(|error| error.to_string())
    });
    assert!(errors[0].contains("is a FIFO, not a session file"), "{errors:?}");
    assert_eq!(errors[0], errors[1]);
    assert!(errors[2].contains("is a device, not a session file"), "{errors:?}");
    assert_eq!(errors[2], errors[3]);
}

#[test]
fn a_file_over_the_size_limit_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.jsonl");
    // Sparse: no disk space, but a length past the limit.
    std::fs::File::create(&path).unwrap().set_len(reins_session::MAX_SESSION_BYTES + 1).unwrap();
    let error = SessionTree::load(&path).unwrap_err();
    assert!(matches!(error, SessionError::TooLarge { .. }), "{error}");
    assert!(matches!(SessionFile::open(&path).unwrap_err(), SessionError::TooLarge { .. }));
}

#[test]
fn the_most_recent_session_is_the_newest_file_even_when_it_cannot_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let (store, good) = store_with_a_good_session(dir.path());
    let sessions = good.parent().unwrap().to_path_buf();
    let later = std::time::SystemTime::now() + Duration::from_secs(60);
    let newest = sessions.join("2099-01-01T00-00-00-000Z_broken.jsonl");
    let touch = |path: &Path| {
        std::fs::File::options().write(true).open(path).unwrap().set_modified(later).unwrap();
    };
    // Empty, no header, a directory: each is the newest, and none is passed over for the good one.
    std::fs::write(&newest, b"").unwrap();
    touch(&newest);
    assert_eq!(store.most_recent(Path::new(CWD)).unwrap(), Some(newest.clone()));
    std::fs::write(&newest, b"{\"type\":\"message\"}\n").unwrap();
    touch(&newest);
    assert_eq!(store.most_recent(Path::new(CWD)).unwrap(), Some(newest.clone()));
    let error = SessionFile::open(&newest).unwrap_err().to_string();
    assert!(error.contains("not a session header"), "{error}");
    std::fs::remove_file(&newest).unwrap();
    std::os::unix::fs::symlink(sessions.join("gone.jsonl"), &newest).unwrap();
    assert_eq!(store.most_recent(Path::new(CWD)).unwrap(), Some(newest.clone()));
}

#[test]
fn a_header_after_a_byte_order_mark_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let (_, good) = store_with_a_good_session(dir.path());
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(&good).unwrap());
    std::fs::write(&good, bytes).unwrap();
    let mut session = SessionFile::open(&good).unwrap();
    assert_eq!(session.context().unwrap().messages.len(), 2);
    session.append_message(&Message::user("more")).unwrap();
    session.flush().unwrap();
    assert_eq!(SessionTree::load(&good).unwrap().context().unwrap().messages.len(), 3);
}

#[test]
fn a_line_that_is_not_utf8_is_skipped_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (_, path) = store_with_a_good_session(dir.path());
    let leaf = SessionTree::load(&path).unwrap().leaf().unwrap().to_string();
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    // A user message with a byte that is not UTF-8, then an answer to it, with usage.
    file.write_all(
        format!(r#"{{"type":"message","id":"bad00001","parentId":"{leaf}","timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"caf"#).as_bytes(),
    )
    .unwrap();
    file.write_all(b"\xE9\"}}\n").unwrap();
    file.write_all(
        br#"{"type":"message","id":"after001","parentId":"bad00001","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"later"}],"usage":{"input":20,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":20},"stopReason":"stop"}}"#,
    )
    .unwrap();
    file.write_all(b"\n").unwrap();
    drop(file);

    let summary = summarize(&path).unwrap();
    assert_eq!(summary.usage.input, 120, "both answers count");
    assert_eq!(summary.first_user_message.as_deref(), Some("hello"));
    let tree = SessionTree::load(&path).unwrap();
    assert!(!tree.contains("bad00001"));
    // The answer hangs from the skipped line's parent, so the conversation before it stays.
    assert_eq!(tree.get("after001").unwrap().parent_id, Some(leaf.as_str()));
    let texts: Vec<String> = tree.context().unwrap().messages.iter().map(text_of).collect();
    assert_eq!(texts, ["hello", "hi", "later"]);
}

#[test]
fn a_line_over_the_entry_limit_is_skipped_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (_, path) = store_with_a_good_session(dir.path());
    let leaf = SessionTree::load(&path).unwrap().leaf().unwrap().to_string();
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    // A user message one byte over the limit, then an answer to it.
    let huge = "x".repeat(reins_session::MAX_ENTRY_BYTES);
    writeln!(
        file,
        r#"{{"type":"message","id":"big00001","parentId":"{leaf}","timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"{huge}"}}}}"#
    )
    .unwrap();
    writeln!(
        file,
        r#"{{"type":"message","id":"after001","parentId":"big00001","timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"later"}}],"stopReason":"stop"}}}}"#
    )
    .unwrap();
    drop(file);

    let tree = within_10s("indexing a huge line", move || SessionTree::load(&path).unwrap());
    assert!(!tree.contains("big00001"));
    assert_eq!(tree.get("after001").unwrap().parent_id, Some(leaf.as_str()));
    let texts: Vec<String> = tree.context().unwrap().messages.iter().map(text_of).collect();
    assert_eq!(texts, ["hello", "hi", "later"]);
}

#[test]
fn a_parent_cycle_is_broken_at_its_first_entry_and_nothing_repeats() {
    let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let line = |id: &str, parent: &str, role: &str, text: &str| {
        let content = if role == "user" {
            format!("\"{text}\"")
        } else {
            format!(r#"[{{"type":"text","text":"{text}"}}],"stopReason":"stop""#)
        };
        format!(
            r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"{role}","content":{content}}}}}"#
        )
    };
    // a → b → c → a: every entry has a parent, so none is a root; d hangs from c.
    let text = [
        header.to_string(),
        line("a", "c", "user", "one"),
        line("b", "a", "assistant", "two"),
        line("c", "b", "user", "three"),
        line("d", "c", "assistant", "four"),
    ]
    .join("\n");
    let tree = SessionTree::from_bytes(Path::new("cycle.jsonl"), text.into_bytes()).unwrap();
    let roots = tree.children(None);
    assert_eq!(roots, ["a"], "the entry first in the file becomes the root");
    let texts: Vec<String> = tree.context().unwrap().messages.iter().map(text_of).collect();
    assert_eq!(texts, ["one", "two", "three", "four"]);
    assert_eq!(tree.path_to_root("d").unwrap(), ["d", "c", "b", "a"]);
}

fn text_of(message: &Message) -> String {
    match message {
        Message::User(user) => user
            .content
            .iter()
            .filter_map(|block| match block {
                Content::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect(),
        Message::Assistant(assistant) => assistant.text(),
        Message::ToolResult(result) => result.text(),
    }
}
