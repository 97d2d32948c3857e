//! Paths are confined to the workspace roots: `..`, absolute paths outside, and symlinks that
//! lead out (to a file or a directory, at any level) are refused for read, write and ls.

mod support;

use std::sync::Arc;

use expect_test::{Expect, expect};
use reins_agent::Tool;
use reins_tools::{FindTool, FsWorkspace, GrepTool, LsTool, ReadTool, Workspace, WriteTool};
use support::{Fixture, outcome, run};

/// The fixture's escape hatches: `link-file` → a file outside, `link-dir` → a directory outside,
/// `dangling` → a missing file outside, `inner` → a directory inside.
fn fixture() -> Fixture {
    let fixture = Fixture::new(&[("inside.txt", "inside\n"), ("sub/deeper.txt", "deeper\n")]);
    fixture.symlink(&fixture.outside.join("secret.txt"), "link-file");
    fixture.symlink(&fixture.outside, "link-dir");
    fixture.symlink(&fixture.outside.join("missing.txt"), "dangling");
    fixture.symlink(&fixture.path("sub"), "inner");
    fixture
}

/// Runs each tool (read, write, ls) on `path` and shows what each answered.
fn check_path(path: &str, expected: Expect) {
    let fixture = fixture();
    let path = path.replace("$OUTSIDE", &fixture.outside.display().to_string());
    let workspace: Arc<dyn Workspace> = fixture.workspace.clone();
    let tools: [(&str, Box<dyn Tool>, String); 3] = [
        ("read", Box::new(ReadTool::new(workspace.clone())), format!(r#"{{"path": "{path}"}}"#)),
        ("write", Box::new(WriteTool::new(workspace.clone())), format!(r#"{{"path": "{path}", "content": "x"}}"#)),
        ("ls", Box::new(LsTool::new(workspace)), format!(r#"{{"path": "{path}"}}"#)),
    ];
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut report = String::new();
    for (name, tool, arguments) in tools {
        let answer = outcome(runtime.block_on(run(tool.as_ref(), &arguments)));
        report.push_str(&format!("{name}: {}\n", fixture.redact(&answer)));
    }
    expected.assert_eq(&report);
    // Nothing outside was touched.
    assert_eq!(std::fs::read_to_string(fixture.outside.join("secret.txt")).unwrap(), "secret\n");
    assert!(!fixture.outside.join("missing.txt").exists());
}

#[test]
fn parent_dir_escape_is_refused() {
    check_path(
        "../outside/secret.txt",
        expect![[r#"
            read: error: ../outside/secret.txt is outside the workspace ($ROOT); only files inside it can be used
            write: error: ../outside/secret.txt is outside the workspace ($ROOT); only files inside it can be used
            ls: error: ../outside/secret.txt is outside the workspace ($ROOT); only files inside it can be used
        "#]],
    );
}

#[test]
fn parent_dir_escape_through_a_subdirectory_is_refused() {
    check_path(
        "sub/../../outside",
        expect![[r#"
            read: error: sub/../../outside is outside the workspace ($ROOT); only files inside it can be used
            write: error: sub/../../outside is outside the workspace ($ROOT); only files inside it can be used
            ls: error: sub/../../outside is outside the workspace ($ROOT); only files inside it can be used
        "#]],
    );
}

#[test]
fn absolute_path_outside_is_refused() {
    check_path(
        "$OUTSIDE/secret.txt",
        expect![[r#"
            read: error: $OUTSIDE/secret.txt is outside the workspace ($ROOT); only files inside it can be used
            write: error: $OUTSIDE/secret.txt is outside the workspace ($ROOT); only files inside it can be used
            ls: error: $OUTSIDE/secret.txt is outside the workspace ($ROOT); only files inside it can be used
        "#]],
    );
}

#[test]
fn symlink_to_a_file_outside_is_refused() {
    check_path(
        "link-file",
        expect![[r#"
            read: error: link-file is outside the workspace ($ROOT); only files inside it can be used
            write: error: link-file is outside the workspace ($ROOT); only files inside it can be used
            ls: error: link-file is outside the workspace ($ROOT); only files inside it can be used
        "#]],
    );
}

#[test]
fn symlink_to_a_directory_outside_is_refused_at_any_level() {
    check_path(
        "link-dir/secret.txt",
        expect![[r#"
            read: error: link-dir/secret.txt is outside the workspace ($ROOT); only files inside it can be used
            write: error: link-dir/secret.txt is outside the workspace ($ROOT); only files inside it can be used
            ls: error: link-dir/secret.txt is outside the workspace ($ROOT); only files inside it can be used
        "#]],
    );
    check_path(
        "link-dir/new/file.txt",
        expect![[r#"
            read: error: link-dir/new/file.txt is outside the workspace ($ROOT); only files inside it can be used
            write: error: link-dir/new/file.txt is outside the workspace ($ROOT); only files inside it can be used
            ls: error: link-dir/new/file.txt is outside the workspace ($ROOT); only files inside it can be used
        "#]],
    );
}

#[test]
fn dangling_symlink_to_outside_is_refused() {
    check_path(
        "dangling",
        expect![[r#"
            read: error: dangling is outside the workspace ($ROOT); only files inside it can be used
            write: error: dangling is outside the workspace ($ROOT); only files inside it can be used
            ls: error: dangling is outside the workspace ($ROOT); only files inside it can be used
        "#]],
    );
}

#[test]
fn paths_inside_are_accepted_however_spelled() {
    check_path(
        "inner/../sub/./deeper.txt",
        expect![[r#"
            read: deeper

            write: Wrote 1 byte to sub/deeper.txt
            ls: error: cannot list sub/deeper.txt: it is a file, not a directory; use read to see its content
        "#]],
    );
}

#[test]
fn a_tilde_path_is_refused_rather_than_taken_literally() {
    check_path(
        "~/notes.txt",
        expect![[r#"
            read: error: ~/notes.txt: a path starting with `~` is not expanded; give it relative to the working directory, or absolute
            write: error: ~/notes.txt: a path starting with `~` is not expanded; give it relative to the working directory, or absolute
            ls: error: ~/notes.txt: a path starting with `~` is not expanded; give it relative to the working directory, or absolute
        "#]],
    );
    let fixture = fixture();
    assert!(!fixture.path("~").exists());
    // A name that merely starts with `~` is an ordinary file.
    assert_eq!(fixture.workspace.resolve("~backup").unwrap(), fixture.path("~backup"));
}

#[test]
fn a_second_root_accepts_absolute_paths() {
    let fixture = fixture();
    let workspace = FsWorkspace::new(vec![fixture.root.clone(), fixture.outside.clone()]).unwrap();
    let secret = fixture.outside.join("secret.txt");
    assert_eq!(workspace.resolve(&secret.display().to_string()).unwrap(), secret);
    assert_eq!(workspace.resolve("link-file").unwrap(), secret);
}

/// Runs a walking tool (`grep`, `find`, `ls`) with `arguments` over the fixture and shows its
/// answer, with the fixture's paths redacted.
fn check_walk(tool: &str, arguments: &str, expected: Expect) {
    let fixture = fixture();
    let workspace: Arc<dyn Workspace> = fixture.workspace.clone();
    let tool: Box<dyn Tool> = match tool {
        "grep" => Box::new(GrepTool::new(workspace)),
        "find" => Box::new(FindTool::new(workspace)),
        _ => Box::new(LsTool::new(workspace)),
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let answer = outcome(runtime.block_on(run(tool.as_ref(), arguments)));
    expected.assert_eq(&fixture.redact(&answer));
}

#[test]
fn grep_does_not_read_through_a_symlink_that_leads_out() {
    check_walk(
        "grep",
        r#"{"pattern": "secret|inside|deeper"}"#,
        expect![[r#"
        inside.txt:1: inside
        sub/deeper.txt:1: deeper"#]],
    );
    check_walk(
        "grep",
        r#"{"pattern": "secret", "path": "link-file"}"#,
        expect![[r#"error: link-file is outside the workspace ($ROOT); only files inside it can be used"#]],
    );
}

#[test]
fn find_does_not_list_symlinks_that_lead_out() {
    check_walk(
        "find",
        r#"{"pattern": "*"}"#,
        expect![[r#"
        inside.txt
        sub/deeper.txt"#]],
    );
}

#[test]
fn ls_names_a_symlink_that_leads_out_without_following_it() {
    check_walk(
        "ls",
        r#"{}"#,
        expect![[r#"
        dangling -> (outside the workspace)
        inner/
        inside.txt
        link-dir -> (outside the workspace)
        link-file -> (outside the workspace)
        sub/"#]],
    );
}
