//! `grep`, `find` and `ls` over a temporary tree: .gitignore and hidden files, binary files, open
//! buffers, globbing, sorting and limits.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use expect_test::{Expect, expect};
use reins_agent::FileChange;
use reins_tools::{FindTool, FsWorkspace, GrepTool, LsTool, ReadTool, TextFile, Workspace, WorkspaceError};
use support::{Fixture, outcome, run};

/// A small project: sources, an ignored build directory, a hidden directory and a binary file.
fn project() -> Fixture {
    let fixture = Fixture::new(&[
        (".gitignore", "target/\n*.log\n"),
        ("src/main.rs", "fn main() {\n    let answer = 42;\n    println!(\"{answer}\");\n}\n"),
        ("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n"),
        ("src/nested/deep.rs", "// the answer is here too\n"),
        ("README.md", "The Answer lives in src.\n"),
        ("target/debug/out.rs", "answer in build output\n"),
        ("run.log", "answer in a log\n"),
        (".hidden/notes.md", "answer in a hidden dir\n"),
    ]);
    std::fs::write(fixture.path("data.bin"), b"answer\0\x01\x02binary").unwrap();
    fixture
}

/// A workspace over the disk where some files are open in an "editor" with unsaved text.
struct EditorWorkspace {
    disk: FsWorkspace,
    buffers: Vec<(PathBuf, String)>,
}

#[async_trait]
impl Workspace for EditorWorkspace {
    fn roots(&self) -> Vec<PathBuf> {
        self.disk.roots()
    }
    fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        self.disk.resolve(path)
    }
    async fn read_text(&self, path: &Path) -> Result<TextFile, WorkspaceError> {
        match self.buffers.iter().find(|(open, _)| open == path) {
            Some((_, text)) => Ok(TextFile { text: text.clone(), version: Some(7) }),
            None => self.disk.read_text(path).await,
        }
    }
    async fn apply(&self, change: &FileChange) -> Result<(), WorkspaceError> {
        self.disk.apply(change).await
    }
    fn open_buffers(&self) -> Vec<(PathBuf, String)> {
        self.buffers.clone()
    }
}

async fn check_grep(arguments: &str, expected: Expect) {
    let fixture = project();
    let answer = outcome(run(&GrepTool::new(fixture.workspace.clone()), arguments).await);
    expected.assert_eq(&answer);
}

#[tokio::test]
async fn grep_respects_gitignore_and_skips_hidden_and_binary_files() {
    check_grep(
        r#"{"pattern": "answer"}"#,
        expect![[r#"
        src/lib.rs:1: pub fn answer() -> u32 {
        src/main.rs:2:     let answer = 42;
        src/main.rs:3:     println!("{answer}");
        src/nested/deep.rs:1: // the answer is here too"#]],
    )
    .await;
}

#[tokio::test]
async fn grep_ignores_case_and_filters_by_glob() {
    check_grep(
        r#"{"pattern": "answer", "ignoreCase": true, "glob": "*.md"}"#,
        expect!["README.md:1: The Answer lives in src."],
    )
    .await;
    check_grep(
        r#"{"pattern": "answer", "glob": "src/*.rs"}"#,
        expect![[r#"
        src/lib.rs:1: pub fn answer() -> u32 {
        src/main.rs:2:     let answer = 42;
        src/main.rs:3:     println!("{answer}");"#]],
    )
    .await;
}

#[tokio::test]
async fn grep_shows_context_lines() {
    check_grep(
        r#"{"pattern": "42", "path": "src", "context": 1}"#,
        expect![[r#"
        src/lib.rs-1- pub fn answer() -> u32 {
        src/lib.rs:2:     42
        src/lib.rs-3- }
        --
        src/main.rs-1- fn main() {
        src/main.rs:2:     let answer = 42;
        src/main.rs-3-     println!("{answer}");"#]],
    )
    .await;
}

#[tokio::test]
async fn grep_stops_at_the_limit_with_a_notice() {
    check_grep(
        r#"{"pattern": "answer", "limit": 2}"#,
        expect![[r#"
        src/lib.rs:1: pub fn answer() -> u32 {
        src/main.rs:2:     let answer = 42;

        [Showing the first 2 matches; there are more. Narrow the pattern, path or glob, or raise limit.]"#]],
    )
    .await;
}

#[tokio::test]
async fn grep_literal_and_invalid_patterns() {
    check_grep(r#"{"pattern": "{answer}", "literal": true}"#, expect![[r#"src/main.rs:3:     println!("{answer}");"#]])
        .await;
    check_grep(
        r#"{"pattern": "fn (", "path": "src"}"#,
        expect!["error: invalid regular expression `fn (`: unclosed group. Set literal=true to search for the text as written."],
    )
    .await;
    check_grep(
        r#"{"pattern": "a\\nb"}"#,
        expect![[r#"error: invalid regular expression `a\nb`: the literal "\n" is not allowed in a regex. Set literal=true to search for the text as written."#]],
    )
    .await;
    check_grep(r#"{"pattern": "nothing like this"}"#, expect!["No matches found for nothing like this"]).await;
}

#[tokio::test]
async fn grep_cuts_long_lines() {
    let fixture = Fixture::new(&[("long.txt", &format!("needle {}\n", "z".repeat(1000)))]);
    let answer = run(&GrepTool::new(fixture.workspace.clone()), r#"{"pattern": "needle"}"#).await.unwrap();
    assert_eq!(answer, format!("long.txt:1: needle {}…", "z".repeat(493)));
}

#[tokio::test]
async fn grep_and_read_see_open_buffers_instead_of_the_disk() {
    let fixture = project();
    let lib = fixture.path("src/lib.rs");
    let unsaved = fixture.path("src/unsaved.rs");
    let workspace: Arc<dyn Workspace> = Arc::new(EditorWorkspace {
        disk: FsWorkspace::new(vec![fixture.root.clone()]).unwrap(),
        buffers: vec![
            (lib, "pub fn renamed() -> u32 {\n    let answer_in_buffer = 1;\n}\n".to_string()),
            (unsaved, "const ANSWER_NEW: u32 = 1; // answer\n".to_string()),
        ],
    });
    let grep = outcome(run(&GrepTool::new(workspace.clone()), r#"{"pattern": "answer", "path": "src"}"#).await);
    expect![[r#"
        src/lib.rs:2:     let answer_in_buffer = 1;
        src/main.rs:2:     let answer = 42;
        src/main.rs:3:     println!("{answer}");
        src/nested/deep.rs:1: // the answer is here too
        src/unsaved.rs:1: const ANSWER_NEW: u32 = 1; // answer"#]]
    .assert_eq(&grep);
    let read = outcome(run(&ReadTool::new(workspace), r#"{"path": "src/lib.rs", "limit": 1}"#).await);
    expect![[r#"
        pub fn renamed() -> u32 {

        [Showing lines 1-1 of 3. Use offset=2 to continue.]"#]]
    .assert_eq(&read);
}

async fn check_find(arguments: &str, expected: Expect) {
    let fixture = project();
    let answer = outcome(run(&FindTool::new(fixture.workspace.clone()), arguments).await);
    expected.assert_eq(&answer);
}

#[tokio::test]
async fn find_matches_file_names_at_any_depth() {
    check_find(
        r#"{"pattern": "*.rs"}"#,
        expect![[r#"
        src/lib.rs
        src/main.rs
        src/nested/deep.rs"#]],
    )
    .await;
}

#[tokio::test]
async fn find_with_a_slash_matches_relative_paths() {
    check_find(
        r#"{"pattern": "src/*.rs"}"#,
        expect![[r#"
        src/lib.rs
        src/main.rs"#]],
    )
    .await;
    check_find(r#"{"pattern": "**/deep.rs"}"#, expect!["src/nested/deep.rs"]).await;
    check_find(r#"{"pattern": "*.rs", "path": "src/nested"}"#, expect!["src/nested/deep.rs"]).await;
}

#[tokio::test]
async fn find_respects_gitignore_and_hidden_files() {
    check_find(r#"{"pattern": "*.log"}"#, expect!["No files found matching *.log in ."]).await;
    check_find(r#"{"pattern": "notes.md"}"#, expect!["No files found matching notes.md in ."]).await;
}

#[tokio::test]
async fn find_stops_at_the_limit_and_reports_bad_globs() {
    check_find(
        r#"{"pattern": "*", "limit": 2}"#,
        expect![[r#"
        README.md
        data.bin

        [Showing 2 of 5 files. Use a more specific pattern or path, or raise limit.]"#]],
    )
    .await;
    check_find(
        r#"{"pattern": "src/[a-"}"#,
        expect![
            "error: invalid glob pattern `src/[a-`: error parsing glob 'src/[a-': unclosed character class; missing ']'"
        ],
    )
    .await;
}

async fn check_ls(arguments: &str, expected: Expect) {
    let fixture = project();
    let answer = outcome(run(&LsTool::new(fixture.workspace.clone()), arguments).await);
    expected.assert_eq(&fixture.redact(&answer));
}

#[tokio::test]
async fn ls_lists_sorted_entries_with_dotfiles_and_directory_slashes() {
    check_ls(
        "{}",
        expect![[r#"
        .gitignore
        .hidden/
        data.bin
        README.md
        run.log
        src/
        target/"#]],
    )
    .await;
    check_ls(
        r#"{"path": "src"}"#,
        expect![[r#"
        lib.rs
        main.rs
        nested/"#]],
    )
    .await;
}

#[tokio::test]
async fn ls_stops_at_the_limit_and_reports_missing_directories() {
    check_ls(
        r#"{"limit": 3}"#,
        expect![[r#"
        .gitignore
        .hidden/
        data.bin

        [Showing 3 of 7 entries. Raise limit, or use find or grep to narrow down.]"#]],
    )
    .await;
    check_ls(r#"{"path": "nope"}"#, expect!["error: cannot list nope: it does not exist"]).await;
}
