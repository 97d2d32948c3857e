//! `read` (windows of lines, truncation notices, errors) and `write` (create, overwrite, stale
//! text, changed proposals).

mod support;

use std::os::unix::fs::PermissionsExt;

use expect_test::{Expect, expect};
use reins_agent::{Proposal, Tool, ToolContext};
use reins_tools::{ReadTool, WriteTool};
use support::{Fixture, numbered_lines, outcome, run, summarize};
use tokio_util::sync::CancellationToken;

/// Reads `a.txt` holding `content` with `arguments` and compares the (summarised) answer.
async fn check_read(content: &str, arguments: &str, expected: Expect) {
    let fixture = Fixture::new(&[("a.txt", content)]);
    let tool = ReadTool::new(fixture.workspace.clone());
    let answer = outcome(run(&tool, arguments).await);
    expected.assert_eq(&fixture.redact(&summarize(&answer)));
}

#[tokio::test]
async fn read_returns_plain_text() {
    check_read(
        "fn main() {}\n",
        r#"{"path": "a.txt"}"#,
        expect![[r#"
        fn main() {}
    "#]],
    )
    .await;
}

#[tokio::test]
async fn read_with_offset_and_limit_says_where_to_continue() {
    check_read(
        &numbered_lines(10),
        r#"{"path": "a.txt", "offset": 3, "limit": 2}"#,
        expect![[r#"
        line 3
        line 4

        [Showing lines 3-4 of 10. Use offset=5 to continue.]"#]],
    )
    .await;
}

#[tokio::test]
async fn read_to_the_end_from_an_offset_has_no_notice() {
    check_read(
        &numbered_lines(3),
        r#"{"path": "a.txt", "offset": 2}"#,
        expect![[r#"
        line 2
        line 3
    "#]],
    )
    .await;
}

#[tokio::test]
async fn read_stops_at_2000_lines() {
    check_read(
        &numbered_lines(5234),
        r#"{"path": "a.txt"}"#,
        expect![[r#"
        line 1
        line 2
        … (2002 lines in all) …

        [Showing lines 1-2000 of 5234. Use offset=2001 to continue.]"#]],
    )
    .await;
}

#[tokio::test]
async fn read_continues_from_offset_2001() {
    check_read(
        &numbered_lines(5234),
        r#"{"path": "a.txt", "offset": 2001}"#,
        expect![[r#"
        line 2001
        line 2002
        … (2002 lines in all) …

        [Showing lines 2001-4000 of 5234. Use offset=4001 to continue.]"#]],
    )
    .await;
}

#[tokio::test]
async fn read_stops_at_50_kb() {
    // 1000 lines of 100 bytes: 512 whole lines fit in 50 KB.
    let content = format!("{}\n", "x".repeat(99)).repeat(1000);
    check_read(
        &content,
        r#"{"path": "a.txt"}"#,
        expect![[r#"
        xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
        xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
        … (514 lines in all) …

        [Showing lines 1-512 of 1000 (50.0 KB limit). Use offset=513 to continue.]"#]],
    )
    .await;
}

#[tokio::test]
async fn read_cuts_a_line_longer_than_the_limit() {
    let content = format!("short\n{}\nafter\n", "y".repeat(60 * 1024));
    let fixture = Fixture::new(&[("a.txt", &content)]);
    let tool = ReadTool::new(fixture.workspace.clone());
    let answer = run(&tool, r#"{"path": "a.txt", "offset": 2}"#).await.unwrap();
    let (shown, notice) = answer.rsplit_once("\n\n").unwrap();
    assert_eq!((shown.len(), shown.trim_end().trim_matches('y')), (50 * 1024, ""), "the first 50 KB of the line");
    expect![[r#"[Line 2 is 60.0 KB, longer than the 50.0 KB limit; only its start is shown. Use bash (e.g. `sed -n '2p' a.txt | cut -c 1-1000`) to see parts of it, or offset=3 to continue after it.]"#]]
        .assert_eq(notice);
}

#[tokio::test]
async fn read_beyond_the_end_says_how_long_the_file_is() {
    check_read(
        &numbered_lines(3),
        r#"{"path": "a.txt", "offset": 7}"#,
        expect![[r#"error: offset 7 is beyond the end of a.txt, which has 3 lines"#]],
    )
    .await;
}

#[tokio::test]
async fn read_of_an_empty_file_says_so() {
    check_read("", r#"{"path": "a.txt"}"#, expect!["[a.txt is empty.]"]).await;
}

#[tokio::test]
async fn read_refuses_binary_files() {
    let fixture = Fixture::new(&[]);
    std::fs::write(fixture.path("image.png"), [0x89, b'P', b'N', b'G', 0xff, 0x00]).unwrap();
    let answer = outcome(run(&ReadTool::new(fixture.workspace.clone()), r#"{"path": "image.png"}"#).await);
    expect!["error: $ROOT/image.png: is a binary or non-UTF-8 file; only UTF-8 text files can be read"]
        .assert_eq(&fixture.redact(&answer));
}

#[tokio::test]
async fn read_of_a_missing_file_or_a_directory_fails() {
    let fixture = Fixture::new(&[("dir/a.txt", "a")]);
    let tool = ReadTool::new(fixture.workspace.clone());
    let missing = outcome(run(&tool, r#"{"path": "nope.txt"}"#).await);
    let directory = outcome(run(&tool, r#"{"path": "dir"}"#).await);
    expect![[r#"
        error: $ROOT/nope.txt does not exist
        error: $ROOT/dir: is a directory, not a file; use ls to list it"#]]
    .assert_eq(&fixture.redact(&format!("{missing}\n{directory}")));
}

/// Writes with `arguments` into a workspace holding `files`; shows the answer and then `path`'s
/// content.
async fn check_write(files: &[(&str, &str)], arguments: &str, path: &str, expected: Expect) {
    let fixture = Fixture::new(files);
    let answer = outcome(run(&WriteTool::new(fixture.workspace.clone()), arguments).await);
    let content = std::fs::read_to_string(fixture.path(path)).unwrap_or_else(|err| format!("({err})"));
    expected.assert_eq(&fixture.redact(&format!("{answer}\n---\n{content}")));
}

#[tokio::test]
async fn write_creates_a_file_and_its_directories() {
    check_write(
        &[],
        r#"{"path": "src/new/lib.rs", "content": "pub fn f() {}\n"}"#,
        "src/new/lib.rs",
        expect![[r#"
        Created src/new/lib.rs (14 bytes)
        ---
        pub fn f() {}
    "#]],
    )
    .await;
}

#[tokio::test]
async fn write_overwrites_a_file() {
    check_write(
        &[("a.txt", "old\n")],
        r#"{"path": "a.txt", "content": "new text\n"}"#,
        "a.txt",
        expect![[r#"
        Wrote 9 bytes to a.txt
        ---
        new text
    "#]],
    )
    .await;
}

#[tokio::test]
async fn write_over_a_binary_file_is_refused() {
    let fixture = Fixture::new(&[]);
    std::fs::write(fixture.path("blob"), [0xff, 0xfe]).unwrap();
    let answer = outcome(run(&WriteTool::new(fixture.workspace.clone()), r#"{"path": "blob", "content": "x"}"#).await);
    expect![
        "error: cannot write over blob: $ROOT/blob: is a binary or non-UTF-8 file; only UTF-8 text files can be read"
    ]
    .assert_eq(&fixture.redact(&answer));
    assert_eq!(std::fs::read(fixture.path("blob")).unwrap(), [0xff, 0xfe]);
}

#[tokio::test]
async fn write_keeps_permissions_and_gives_new_files_the_usual_ones() {
    let fixture = Fixture::new(&[("run.sh", "echo old\n")]);
    std::fs::set_permissions(fixture.path("run.sh"), std::fs::Permissions::from_mode(0o751)).unwrap();
    let tool = WriteTool::new(fixture.workspace.clone());
    run(&tool, r#"{"path": "run.sh", "content": "echo new\n"}"#).await.unwrap();
    run(&tool, r#"{"path": "fresh.txt", "content": "x"}"#).await.unwrap();
    std::fs::write(fixture.path("reference.txt"), "x").unwrap();

    let mode = |name: &str| std::fs::metadata(fixture.path(name)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("run.sh"), 0o751);
    assert_eq!(mode("fresh.txt"), mode("reference.txt"));
    // No temporary files are left behind.
    let mut names: Vec<String> = std::fs::read_dir(&fixture.root)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["fresh.txt", "reference.txt", "run.sh"]);
}

/// Prepares a write of `new content` to `a.txt`, lets `meanwhile` change the disk, then executes.
async fn check_stale_write(initial: Option<&str>, meanwhile: &str, expected: Expect) {
    let fixture = Fixture::new(&[]);
    if let Some(initial) = initial {
        std::fs::write(fixture.path("a.txt"), initial).unwrap();
    }
    let tool = WriteTool::new(fixture.workspace.clone());
    let prepared = tool.prepare(&serde_json::json!({"path": "a.txt", "content": "new content"})).await.unwrap();
    std::fs::write(fixture.path("a.txt"), meanwhile).unwrap();
    let proposal = prepared.proposal.clone();
    let cx = ToolContext { tool_call_id: "call-1", cancel: CancellationToken::new(), on_update: &|_| {} };
    let answer =
        outcome(tool.execute(prepared, proposal, cx).await.map(|_| "written".to_string()).map_err(|err| err.0));
    expected.assert_eq(&format!("{answer}\n---\n{}", fixture.read("a.txt")));
}

#[tokio::test]
async fn write_refuses_a_file_changed_since_prepare() {
    check_stale_write(Some("old"), "the user typed this", expect![[r#"
        error: a.txt changed since this write was prepared (it was edited or created meanwhile), so nothing was written; read it again and retry
        ---
        the user typed this"#]])
    .await;
}

#[tokio::test]
async fn write_refuses_to_clobber_a_file_created_since_prepare() {
    check_stale_write(None, "someone else's file", expect![[r#"
        error: a.txt changed since this write was prepared (it was edited or created meanwhile), so nothing was written; read it again and retry
        ---
        someone else's file"#]])
    .await;
}

#[tokio::test]
async fn write_applies_the_proposal_as_the_gate_changed_it() {
    let fixture = Fixture::new(&[("a.txt", "old\n")]);
    let tool = WriteTool::new(fixture.workspace.clone());
    let prepared = tool.prepare(&serde_json::json!({"path": "a.txt", "content": "model's text\n"})).await.unwrap();
    let Some(Proposal::FileChange(mut change)) = prepared.proposal.clone() else {
        panic!("write proposes a file change")
    };
    assert_eq!((change.before.as_deref(), change.version), (Some("old\n"), None));
    change.after = "reviewer's text\n".to_string();
    let cx = ToolContext { tool_call_id: "call-1", cancel: CancellationToken::new(), on_update: &|_| {} };
    tool.execute(prepared, Some(Proposal::FileChange(change)), cx).await.unwrap();
    assert_eq!(fixture.read("a.txt"), "reviewer's text\n");
}
