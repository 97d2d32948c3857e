//! Paths are confined to the workspace roots: `..`, absolute paths outside, and symlinks that
//! lead out (to a file or a directory, at any level) are refused for read, write and ls.

mod support;

use std::sync::Arc;

use expect_test::{Expect, expect};
use reins_agent::Tool;
use reins_tools::{ApplyPatchTool, EditTool, FindTool, FsWorkspace, GrepTool, LsTool, ReadTool, Workspace, WriteTool};
use serde_json::json;
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

/// Runs `write`, `edit` and `apply_patch` on `path` in a git workspace (with a nested repository
/// in `vendor/lib` and `gitlink` → `.git`) and shows what each answered.
fn check_git_write(path: &str, expected: Expect) {
    let fixture = Fixture::new(&[
        (".git/config", "[core]\n"),
        (".git/hooks/pre-commit.sample", "#!/bin/sh\n"),
        ("vendor/lib/.git/config", "[core]\n"),
        ("notes.git", "not git's\n"),
    ]);
    fixture.symlink(&fixture.path(".git"), "gitlink");
    let workspace: Arc<dyn Workspace> = fixture.workspace.clone();
    let patch = format!("*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch");
    let tools: [(&str, Box<dyn Tool>, String); 3] = [
        ("write", Box::new(WriteTool::new(workspace.clone())), json!({"path": path, "content": "x"}).to_string()),
        (
            "edit",
            Box::new(EditTool::new(workspace.clone())),
            json!({"path": path, "edits": [{"oldText": "[core]", "newText": "[core]\nfsmonitor = x"}]}).to_string(),
        ),
        ("apply_patch", Box::new(ApplyPatchTool::new(workspace)), json!({"input": patch}).to_string()),
    ];
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut report = String::new();
    for (name, tool, arguments) in tools {
        let answer = outcome(runtime.block_on(run(tool.as_ref(), &arguments)));
        report.push_str(&format!("{name}: {}\n", fixture.redact(&answer)));
    }
    expected.assert_eq(&report);
    assert_eq!(fixture.read(".git/config"), "[core]\n");
    assert!(!fixture.path(".git/hooks/pre-commit").exists());
}

#[test]
fn git_metadata_is_never_written() {
    check_git_write(
        ".git/config",
        expect![[r#"
            write: error: $ROOT/.git/config is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there
            edit: error: $ROOT/.git/config is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there
            apply_patch: error: $ROOT/.git/config is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there (line 2 of the patch). Nothing was changed.
        "#]],
    );
    check_git_write(
        ".git/hooks/pre-commit",
        expect![[r#"
            write: error: $ROOT/.git/hooks/pre-commit is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there
            edit: error: $ROOT/.git/hooks/pre-commit is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there
            apply_patch: error: $ROOT/.git/hooks/pre-commit is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there (line 2 of the patch). Nothing was changed.
        "#]],
    );
    check_git_write(
        "gitlink/config",
        expect![[r#"
            write: error: $ROOT/.git/config is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there
            edit: error: $ROOT/.git/config is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there
            apply_patch: error: $ROOT/.git/config is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there (line 2 of the patch). Nothing was changed.
        "#]],
    );
    check_git_write(
        "vendor/lib/.git/config",
        expect![[r#"
            write: error: $ROOT/vendor/lib/.git/config is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there
            edit: error: $ROOT/vendor/lib/.git/config is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there
            apply_patch: error: $ROOT/vendor/lib/.git/config is inside .git, which only git and the user change (a hook or config written there would run outside the sandbox); tools do not write there (line 2 of the patch). Nothing was changed.
        "#]],
    );
}

#[test]
fn a_name_that_merely_ends_in_git_is_written() {
    check_git_write(
        "notes.git",
        expect![[r#"
            write: Wrote 1 byte to notes.git
            edit: error: could not find oldText in notes.git. The most similar part of the file is line 1 (though not very similar), shown with line numbers, which are not part of the file:
                1 | x
            What differs (- your oldText, + the file):
            - [core]
            + x

            Read notes.git again and copy oldText exactly as it is now, including whitespace and indentation.
            apply_patch: error: notes.git already exists; *** Add File only creates files. Use *** Update File: notes.git to change it
            Nothing was changed.
        "#]],
    );
}

/// A checkout resolves its files together, sharing their directories' resolution: each answer is
/// the one the path gets alone, symlinks, escapes, `.git` and missing directories included.
#[test]
fn paths_resolved_together_resolve_as_each_alone() {
    let fixture = fixture();
    std::fs::create_dir_all(fixture.path(".git")).unwrap();
    let outside = format!("{}/secret.txt", fixture.outside.display());
    let paths = [
        "inside.txt",
        "sub/deeper.txt",
        "sub/new.txt",
        "inner/deeper.txt",
        "inner/new.txt",
        "link-file",
        "link-dir/secret.txt",
        "link-dir/new/file.txt",
        "dangling",
        "missing/dir/file.txt",
        "missing/dir/other.txt",
        "inner/../sub/./deeper.txt",
        "../outside/secret.txt",
        outside.as_str(),
        ".git/config",
        "sub/.git/hooks/x",
        "inside.txt/below",
    ];
    let together = fixture.workspace.resolve_all_writable(&paths);
    let alone: Vec<_> = paths.iter().map(|path| fixture.workspace.resolve_writable(path)).collect();
    assert_eq!(together, alone);
    let inside = together.iter().filter(|answer| answer.is_ok()).count();
    assert_eq!(inside, 8, "{together:#?}");
}
