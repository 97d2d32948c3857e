use std::io::Cursor;

use super::*;

const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;

/// Writes `lines` as a session file and checks that the one-pass summary is the loaded tree's.
fn check_same_as_tree(lines: &[&[u8]]) -> SessionSummary {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, lines.join(&b"\n"[..])).unwrap();
    let summary = summarize(&path).unwrap();
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    assert_eq!(summary, summarize_tree(&SessionTree::load(&path).unwrap(), modified).unwrap());
    summary
}

fn message(id: &str, parent: &str, role: &str, text: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"t","message":{{"role":"{role}","content":[{{"type":"text","text":"{text}"}}],"usage":{{"input":10,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":12,"cost":{{"input":0.5,"output":0.25,"cacheRead":0,"cacheWrite":0,"total":0.75}}}}}}}}"#
    )
}

#[test]
fn a_summary_is_the_trees() {
    let user = message("a1", "null", "user", "");
    let user2 = message("a2", "\"a1\"", "user", "where is the parser?");
    let answer = message("a3", "\"a2\"", "assistant", "here");
    let named = br#"{"type":"session_info","id":"a4","parentId":"a3","timestamp":"t","name":"  parser  "}"#;
    let summary = check_same_as_tree(&[
        HEADER.as_bytes(),
        user.as_bytes(),
        b"",
        user2.as_bytes(),
        b"not json",
        b"{\"type\":\"message\",\"parentId\":\"a1\"}",
        b"{\"type\":\"label\",\"id\":\"\xff\xfe\",\"targetId\":\"a1\"}",
        answer.as_bytes(),
        named,
        br#"{"type":"compaction","id":"a5","parentId":"a4","timestamp":"t","summary":"s","firstKeptEntryId":"a2","tokensBefore":9,"usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}"#,
        // A duplicated id that names itself as its parent still counts, as the tree counts it.
        br#"{"type":"session_info","id":"a4","parentId":"a4","timestamp":"t","name":""}"#,
        br#"{"type":"message","id":"a6","parentId":"a5","timest"#,
    ]);
    assert_eq!(summary.entry_count, 6);
    assert_eq!(summary.name, None);
    assert_eq!(summary.first_user_message.as_deref(), Some("where is the parser?"));
    assert_eq!(summary.usage.total_tokens, 2 + 12);
}

#[test]
fn a_line_over_the_limit_is_skipped_as_the_tree_skips_it() {
    let huge = format!(
        r#"{{"type":"message","id":"b2","parentId":"b1","timestamp":"t","message":{{"role":"user","content":"{}"}}}}"#,
        "x".repeat(MAX_ENTRY_BYTES)
    );
    let user = message("b1", "null", "assistant", "hi");
    let after = message("b3", "\"b2\"", "user", "after the big one");
    let summary = check_same_as_tree(&[HEADER.as_bytes(), user.as_bytes(), huge.as_bytes(), after.as_bytes()]);
    assert_eq!(summary.entry_count, 2);
    assert_eq!(summary.first_user_message.as_deref(), Some("after the big one"));
}

#[test]
fn an_older_version_is_summarized_through_its_migration() {
    let v1 = br#"{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let user = br#"{"type":"message","timestamp":"t","message":{"role":"user","content":"old question"}}"#;
    let summary = check_same_as_tree(&[v1, user]);
    assert_eq!(summary.first_user_message.as_deref(), Some("old question"));
}

#[test]
fn the_reader_keeps_no_line_over_the_limit() {
    let mut text = vec![b'y'; MAX_ENTRY_BYTES + 10];
    text.extend_from_slice(b"\nshort\nlast");
    let mut reader = BufReader::with_capacity(4096, Cursor::new(text));
    let mut line = Vec::new();
    assert!(
        matches!(read_line(&mut reader, &mut line).unwrap().0, Some(Line::TooLong(len)) if len == MAX_ENTRY_BYTES + 10)
    );
    assert!(line.capacity() < MAX_ENTRY_BYTES, "the skipped line's bytes were kept");
    assert!(matches!(read_line(&mut reader, &mut line).unwrap().0, Some(Line::Whole)));
    assert_eq!(line, b"short");
    assert!(matches!(read_line(&mut reader, &mut line).unwrap().0, Some(Line::Whole)));
    assert_eq!(line, b"last");
    assert!(read_line(&mut reader, &mut line).unwrap().0.is_none());
}

/// Appends `lines` (each with its newline) to the file at `path`.
fn append(path: &Path, lines: &[&str]) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
}

#[test]
fn a_file_that_grew_is_read_on_from_its_mark() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, format!("{HEADER}\n{}\n", message("a1", "null", "user", "first question"))).unwrap();
    let (summary, mark) = summarize_from(&path, None).unwrap();
    let mark = mark.expect("a file of whole lines has a mark");
    assert_eq!(mark.offset, std::fs::metadata(&path).unwrap().len());

    let named = r#"{"type":"session_info","id":"a3","parentId":"a2","timestamp":"t","name":"streamed"}"#;
    append(&path, &[&message("a2", "\"a1\"", "assistant", "an answer"), named]);
    let (grown, grown_mark) = summarize_from(&path, Some((summary.clone(), &mark))).unwrap();
    assert_eq!(grown, summarize(&path).unwrap(), "reading on gives the whole file's summary");
    // Usage counts the assistant's message only.
    assert_eq!((grown.entry_count, grown.name.as_deref(), grown.usage.total_tokens), (3, Some("streamed"), 12));
    assert_eq!(grown_mark.unwrap().offset, std::fs::metadata(&path).unwrap().len());

    // Only the appended bytes are read: a change before the mark that leaves its last bytes alone
    // goes unseen (session files are only appended to).
    let text = std::fs::read_to_string(&path).unwrap().replacen("first question", "other question", 1);
    std::fs::write(&path, &text).unwrap();
    let (unseen, _) = summarize_from(&path, Some((summary.clone(), &mark))).unwrap();
    assert_eq!(unseen.first_user_message.as_deref(), Some("first question"));
}

#[test]
fn a_file_rewritten_or_replaced_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, format!("{HEADER}\n{}\n", message("a1", "null", "user", "first question"))).unwrap();
    let (summary, mark) = summarize_from(&path, None).unwrap();
    let mark = mark.unwrap();

    // Rewritten in place: the bytes before the mark differ.
    std::fs::write(&path, format!("{HEADER}\n{}\n", message("b1", "null", "user", "a newer question, longer")))
        .unwrap();
    let (rewritten, _) = summarize_from(&path, Some((summary.clone(), &mark))).unwrap();
    assert_eq!(rewritten.first_user_message.as_deref(), Some("a newer question, longer"));
    assert_eq!(rewritten.entry_count, 1);

    // Shorter than the mark.
    std::fs::write(&path, format!("{HEADER}\n")).unwrap();
    let (shorter, _) = summarize_from(&path, Some((summary.clone(), &mark))).unwrap();
    assert_eq!((shorter.entry_count, shorter.first_user_message), (0, None));

    // Another file renamed into its place, the same bytes and more.
    let other = dir.path().join("other.jsonl");
    let mut text = format!("{HEADER}\n{}\n", message("a1", "null", "user", "first question"));
    text.push_str(&message("a2", "\"a1\"", "assistant", "an answer"));
    text.push('\n');
    std::fs::write(&other, text.replacen("first question", "third question", 1)).unwrap();
    std::fs::rename(&other, &path).unwrap();
    let (replaced, _) = summarize_from(&path, Some((summary, &mark))).unwrap();
    assert_eq!(replaced.first_user_message.as_deref(), Some("third question"));
    assert_eq!(replaced.entry_count, 2);
}

#[test]
fn a_line_not_yet_whole_is_counted_and_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let first = message("a1", "null", "user", "first question");
    std::fs::write(&path, format!("{HEADER}\n{first}")).unwrap();
    let (summary, mark) = summarize_from(&path, None).unwrap();
    assert_eq!(summary.entry_count, 1, "a last line without its newline still counts, as the tree counts it");
    assert!(mark.is_none(), "no mark after a line that may still grow");

    // A writer half-way through a line: read whole next time.
    std::fs::write(&path, format!("{HEADER}\n{first}\n{{\"type\":\"mess")).unwrap();
    let (half, mark) = summarize_from(&path, None).unwrap();
    assert_eq!((half.entry_count, mark), (1, None));
    append(&path, &[r#"age","id":"a2","parentId":"a1","timestamp":"t","message":{"role":"assistant","content":[]}}"#]);
    let (done, mark) = summarize_from(&path, None).unwrap();
    assert_eq!(done.entry_count, 2);
    assert!(mark.is_some());
}
