//! The `apply_patch` tool's rules as data: the files of a workspace and a patch in, what the tool
//! proposes for each file (or the error the model reads) out — run through the tool's prepare
//! step — plus runs through execute on disk: all files land together or none does.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use expect_test::{Expect, expect};
use reins_agent::{FileChange, Proposal, Tool, ToolContext};
use reins_tools::{ApplyPatchTool, FsWorkspace, Workspace};
use serde_json::json;
use support::Fixture;
use tokio_util::sync::CancellationToken;

/// Prepares `patch` over a workspace holding `files`; shows each proposed file (created,
/// deleted, moved or changed, with its text after and its notes) or the error.
fn check_patch(files: &[(&str, &str)], patch: &str, expect: Expect) {
    let fixture = Fixture::new(files);
    let tool = ApplyPatchTool::new(fixture.workspace.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let actual = match runtime.block_on(Tool::prepare(&tool, &json!({ "input": patch }))) {
        Err(err) => format!("error: {}", fixture.redact(&err.0)),
        Ok(prepared) => match prepared.proposal {
            Some(Proposal::FileChanges { files }) => {
                files.iter().map(|change| render(&fixture.root, change)).collect::<Vec<_>>().join("\n")
            }
            other => panic!("apply_patch proposed {other:?}"),
        },
    };
    expect.assert_eq(&actual);
}

fn render(root: &Path, change: &FileChange) -> String {
    let shown = |path: &PathBuf| path.strip_prefix(root).unwrap_or(path).display().to_string();
    let what = match (&change.before, &change.moved_to) {
        _ if change.delete => format!("delete {}", shown(&change.path)),
        (None, _) => format!("create {}", shown(&change.path)),
        (Some(_), Some(to)) => format!("move {} -> {}", shown(&change.path), shown(to)),
        (Some(_), None) => format!("change {}", shown(&change.path)),
    };
    let mut out = format!("{what}: {:?}", change.after);
    for note in &change.notes {
        out.push_str(&format!("\n  note: {note}"));
    }
    out
}

#[test]
fn updates_adds_deletes_and_moves_in_one_patch() {
    check_patch(
        &[("src/app.py", "def main():\n    print(\"hi\")\n"), ("old.txt", "bye\n"), ("a.py", "x = 1\ny = 0\n")],
        "*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    print(\"hi\")\n+    print(\"hello\")\n*** Add File: docs/new.md\n+# New\n*** Delete File: old.txt\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n",
        expect![[r##"
            change src/app.py: "def main():\n    print(\"hello\")\n"
            create docs/new.md: "# New\n"
            delete old.txt: ""
            move a.py -> b.py: "x = 2\ny = 0\n""##]],
    );
}

#[test]
fn context_lines_keep_the_files_bytes_under_the_same_normalisations_as_edit() {
    // The model's context has ASCII quotes; the file keeps its own, in the changed line too.
    check_patch(
        &[("a.md", "He said “yes”.\nIt’s done — mostly.\nEnd\n")],
        "*** Begin Patch\n*** Update File: a.md\n@@\n He said \"yes\".\n-It's done - mostly.\n+It's done - fully.\n End\n*** End Patch",
        expect![[r#"
            change a.md: "He said “yes”.\nIt’s done — fully.\nEnd\n"
              note: a.md (line 3 of the patch): matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms"#]],
    );
    check_patch(
        &[("a.py", "class A:\n\tdef f(self):\n\t\treturn 1\n")],
        "*** Begin Patch\n*** Update File: a.py\n@@ class A:\n     def f(self):\n-        return 1\n+        return 2\n*** End Patch",
        expect![[r#"
            change a.py: "class A:\n\tdef f(self):\n\t\treturn 2\n"
              note: a.py (line 3 of the patch): matched after ignoring indentation; newText was re-indented to the file's indentation"#]],
    );
}

#[test]
fn context_with_ascii_quotes_and_without_trailing_spaces_together_lands_keeping_the_files_bytes() {
    // Every context line differs from the file in both ways at once (curly quotes written as
    // ASCII, trailing spaces dropped), which neither normalisation alone nor stale context covers.
    check_patch(
        &[("a.md", "# “Intro”  \nHe said “yes” — twice.  \nShe left.\nThe end.  \n")],
        "*** Begin Patch\n*** Update File: a.md\n@@\n # \"Intro\"\n He said \"yes\" - twice.\n-She left.\n+She stayed.\n The end.\n*** End Patch\n",
        expect![[r##"
            change a.md: "# “Intro”  \nHe said “yes” — twice.  \nShe stayed.\nThe end.  \n"
              note: a.md (line 3 of the patch): matched after ignoring trailing whitespace and treating typographic quotes, dashes and Unicode spaces as their ASCII forms"##]],
    );
}

#[test]
fn typography_and_trailing_whitespace_together_land_only_where_they_are_the_only_differences() {
    // Twice in the file: refused, with both places.
    check_refusal(
        &[("a.md", "He said “yes”.  \nOK.  \nHe said “yes”. \nOK.\t\n")],
        "*** Begin Patch\n*** Update File: a.md\n@@\n He said \"yes\".\n-OK.\n+Fine.\n*** End Patch\n",
        expect![
            "a.md (line 3 of the patch): the hunk's lines match 2 places in a.md when ignoring trailing whitespace and treating typographic quotes, dashes and Unicode spaces as their ASCII forms (none match exactly), at lines 1, 3; add context lines, or an @@ line naming the function or class it is in, so it matches one:"
        ],
    );
    // Other indentation as well: a third kind of difference, refused.
    check_refusal(
        &[("a.md", "  He said “yes”.  \n  She said “no”.  \n  OK.\n")],
        "*** Begin Patch\n*** Update File: a.md\n@@\n He said \"yes\".\n She said \"no\".\n-OK.\n+Fine.\n*** End Patch\n",
        expect![
            "a.md (line 3 of the patch): could not find the hunk's context and '-' lines in a.md. The most similar part of the file is lines 1-3 (no other region comes close), shown with line numbers, which are not part of the file:"
        ],
    );
}

/// Like [`check_patch`] for a patch that must be refused: the first line of the error.
fn check_refusal(files: &[(&str, &str)], patch: &str, expect: Expect) {
    let fixture = Fixture::new(files);
    let tool = ApplyPatchTool::new(fixture.workspace.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let error = match runtime.block_on(Tool::prepare(&tool, &json!({ "input": patch }))) {
        Err(err) => fixture.redact(&err.0),
        Ok(prepared) => panic!("apply_patch landed {:?}", prepared.proposal),
    };
    expect.assert_eq(error.lines().next().unwrap_or_default());
}

#[test]
fn the_at_line_picks_the_place_among_several() {
    let file = "def a():\n    x = 1\n    return x\n\ndef b():\n    x = 1\n    return x\n";
    check_patch(
        &[("a.py", file)],
        "*** Begin Patch\n*** Update File: a.py\n@@ def b():\n     x = 1\n-    return x\n+    return x + 1\n*** End Patch",
        expect![[r#"change a.py: "def a():\n    x = 1\n    return x\n\ndef b():\n    x = 1\n    return x + 1\n""#]],
    );
    // Without it, the hunk matches twice and is refused with both places shown.
    check_patch(
        &[("a.py", file)],
        "*** Begin Patch\n*** Update File: a.py\n     x = 1\n-    return x\n+    return x + 1\n*** End Patch",
        expect![[r#"
            error: a.py (line 3 of the patch): the hunk's lines match 2 places in a.py, at lines 2, 6; add context lines, or an @@ line naming the function or class it is in, so it matches one:
                2 |     x = 1
                3 |     return x
              ...
                6 |     x = 1
                7 |     return x
              ...

            Nothing was changed."#]],
    );
}

#[test]
fn hunks_are_found_in_order_after_each_other() {
    let file = "x = 1\nprint(x)\n\nx = 1\nprint(x)\n";
    check_patch(
        &[("a.py", file)],
        "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n print(x)\n@@\n-x = 1\n+x = 3\n print(x)\n*** End Patch",
        expect![[r#"
            error: a.py, hunk 1 (line 3 of the patch): the hunk's lines match 2 places in a.py, at lines 1, 4; add context lines, or an @@ line naming the function or class it is in, so it matches one:
                1 | x = 1
                2 | print(x)
              ...
                4 | x = 1
                5 | print(x)
              ...

            Nothing was changed."#]],
    );
    check_patch(
        &[("a.py", file)],
        "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n print(x)\n \n@@\n-x = 1\n+x = 3\n print(x)\n*** End Patch",
        expect![[r#"change a.py: "x = 2\nprint(x)\n\nx = 3\nprint(x)\n""#]],
    );
}

#[test]
fn a_hunk_that_is_not_there_names_its_file_and_hunk_and_shows_the_closest_region() {
    check_patch(
        &[("a.py", "def f():\n    return 1\n\ndef g():\n    return 2\n"), ("b.py", "b = 1\n")],
        "*** Begin Patch\n*** Update File: b.py\n-b = 1\n+b = 2\n*** Update File: a.py\n@@\n def f():\n-    return 1\n+    return 10\n@@\n def g():\n-    return 3\n+    return 30\n*** End Patch",
        expect![[r#"
            error: a.py, hunk 2 (line 10 of the patch): could not find the hunk's context and '-' lines in a.py. The most similar part of the file is lines 4-5 (no other region comes close), shown with line numbers, which are not part of the file:
                2 |     return 1
                3 | 
                4 | def g():
                5 |     return 2
            What differs (- your hunk, + the file):
            -     return 3
            +     return 2

            Read a.py again and copy the hunk's context and '-' lines exactly as they are now, including whitespace and indentation.
            No file was changed."#]],
    );
    // An @@ line the file lacks is forgiven when the hunk fits one place, and refused otherwise.
    check_patch(
        &[("a.py", "def main() -> None:\n    x = 1\n")],
        "*** Begin Patch\n*** Update File: a.py\n@@ def main():\n-    x = 1\n+    x = 2\n*** End Patch",
        expect![[r#"
            change a.py: "def main() -> None:\n    x = 2\n"
              note: a.py (line 3 of the patch): the @@ line was not found, but the hunk's lines fit one place (line 2)"#]],
    );
    check_patch(
        &[("a.py", "x = 1\nx = 1\n")],
        "*** Begin Patch\n*** Update File: a.py\n@@ def nowhere():\n-x = 1\n+x = 2\n*** End Patch",
        expect![[r#"
            error: a.py (line 3 of the patch): could not find the @@ line "def nowhere():" in a.py. An @@ line names a line of the file (a function or class) that the hunk comes after; copy it exactly, or leave it out
            Nothing was changed."#]],
    );
}

#[test]
fn files_must_be_as_the_sections_say() {
    check_patch(
        &[("a.py", "x\n")],
        "*** Begin Patch\n*** Add File: a.py\n+y\n*** End Patch",
        expect![[r#"
            error: a.py already exists; *** Add File only creates files. Use *** Update File: a.py to change it
            Nothing was changed."#]],
    );
    check_patch(
        &[],
        "*** Begin Patch\n*** Update File: a.py\n-x\n+y\n*** End Patch",
        expect![[r#"
            error: a.py does not exist; *** Update File changes existing files, so use *** Add File: a.py to create it
            Nothing was changed."#]],
    );
    check_patch(
        &[],
        "*** Begin Patch\n*** Delete File: a.py\n*** End Patch",
        expect![[r#"
            error: a.py does not exist, so *** Delete File: a.py has nothing to delete
            Nothing was changed."#]],
    );
    check_patch(
        &[("a.py", "x\n"), ("b.py", "y\n")],
        "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n*** End Patch",
        expect![[r#"
            error: cannot move a.py to b.py: it already exists. Delete it in the same patch first, or pick another name
            Nothing was changed."#]],
    );
    check_patch(
        &[("a.py", "x\ny\n")],
        "*** Begin Patch\n*** Update File: a.py\n-x\n+X\n*** Update File: ./a.py\n-y\n+Y\n*** End Patch",
        expect![[r#"
            error: a.py appears twice in the patch (as "a.py" and "./a.py"); give each file one section, with all its hunks in it
            No file was changed."#]],
    );
    check_patch(
        &[],
        "*** Begin Patch\n*** Add File: ../outside.txt\n+x\n*** End Patch",
        expect![
            "error: ../outside.txt is outside the workspace ($ROOT); only files inside it can be used (line 2 of the patch). Nothing was changed."
        ],
    );
}

#[test]
fn line_endings_the_bom_and_a_missing_final_newline_are_kept() {
    check_patch(
        &[("a.txt", "\u{feff}one\r\ntwo\r\nthree")],
        "*** Begin Patch\n*** Update File: a.txt\n one\n-two\n-three\n+2\n+3\n*** End Patch",
        expect![[r#"change a.txt: "\u{feff}one\r\n2\r\n3""#]],
    );
    check_patch(
        &[("a.txt", "a\nb\n")],
        "*** Begin Patch\n*** Update File: a.txt\n@@\n b\n+c\n*** End of File\n*** End Patch",
        expect![[r#"change a.txt: "a\nb\nc\n""#]],
    );
}

/// A blank context line is a line of the file, never the nothing after its final line break:
/// the property test once found this hunk landing there, adding a blank line and taking the
/// file's final newline (issue 15). Whitespace-only lines are not matched loosely, so a hunk of
/// blank context that fits only with trailing spaces overlooked is refused, not guessed.
#[test]
fn blank_context_never_matches_past_the_files_last_line() {
    check_patch(
        &[("a.py", " \n \n\n")],
        "*** Begin Patch\n*** Update File: a.py\n@@\n \n \n+zz01b = 1\n*** End Patch",
        expect![[r#"
            error: a.py (line 3 of the patch): could not find the hunk's context and '-' lines in a.py.
            Read a.py again and copy the hunk's context and '-' lines exactly as they are now, including whitespace and indentation.
            Nothing was changed."#]],
    );
    check_patch(
        &[("a.py", "a\n")],
        "*** Begin Patch\n*** Update File: a.py\n a\n \n+b\n*** End Patch",
        expect![[r#"
            change a.py: "a\nb\n"
              note: a.py (line 3 of the patch): matched after ignoring blank lines"#]],
    );
    check_patch(
        &[("a.py", "a\n\n")],
        "*** Begin Patch\n*** Update File: a.py\n a\n \n+b\n*** End Patch",
        expect![[r#"change a.py: "a\n\nb\n""#]],
    );
    // The place at a line start is found though an overlapping one starts mid-line before it.
    check_patch(
        &[("a.py", "v = 1 \n \n \n ")],
        "*** Begin Patch\n*** Update File: a.py\n@@\n  \n  \n+b\n*** End Patch",
        expect![[r#"change a.py: "v = 1 \n \n \nb\n ""#]],
    );
}

#[test]
fn added_lines_alone_go_after_the_at_line_or_at_the_end() {
    check_patch(
        &[("a.py", "import os\n\ndef f():\n    pass\n")],
        "*** Begin Patch\n*** Update File: a.py\n@@ import os\n+import sys\n*** End Patch",
        expect![[r#"change a.py: "import os\nimport sys\n\ndef f():\n    pass\n""#]],
    );
    check_patch(
        &[("a.py", "x = 1")],
        "*** Begin Patch\n*** Update File: a.py\n@@\n+y = 2\n*** End Patch",
        expect![[r#"change a.py: "x = 1\ny = 2\n""#]],
    );
}

/// Applies `patch` through prepare and execute to a workspace on disk holding `files`; the
/// files afterwards (or the error), and what the model read.
async fn run_patch(fixture: &Fixture, patch: &str) -> Result<String, String> {
    let tool = ApplyPatchTool::new(fixture.workspace.clone());
    support::run(&tool, &json!({ "input": patch }).to_string()).await
}

#[tokio::test]
async fn execute_applies_every_file_and_reports_each() {
    let fixture = Fixture::new(&[("a.py", "x = 1\n"), ("gone.txt", "bye\n"), ("m.txt", "m\n")]);
    let output = run_patch(
        &fixture,
        "*** Begin Patch\n*** Update File: a.py\n-x = 1\n+x = 2\n*** Add File: new/b.md\n+# B\n*** Delete File: gone.txt\n*** Update File: m.txt\n*** Move to: moved/m.txt\n*** End Patch",
    )
    .await
    .unwrap();
    expect![[r#"
        Applied the patch:
        - changed a.py
        - created new/b.md (1 lines)
        - deleted gone.txt
        - moved m.txt to moved/m.txt

        --- a.py
        +++ a.py
        @@ -1 +1 @@
        -x = 1
        +x = 2"#]]
    .assert_eq(&output);
    let on_disk: BTreeMap<&str, Option<String>> = ["a.py", "new/b.md", "gone.txt", "m.txt", "moved/m.txt"]
        .into_iter()
        .map(|path| (path, std::fs::read_to_string(fixture.path(path)).ok()))
        .collect();
    expect![[r##"{"a.py": Some("x = 2\n"), "gone.txt": None, "m.txt": None, "moved/m.txt": Some("m\n"), "new/b.md": Some("# B\n")}"##]]
        .assert_eq(&format!("{on_disk:?}"));
}

#[tokio::test]
async fn a_file_that_changed_after_prepare_stops_every_file() {
    let fixture = Fixture::new(&[("a.py", "a = 1\n"), ("b.py", "b = 1\n")]);
    let workspace: Arc<FsWorkspace> = fixture.workspace.clone();
    let tool = ApplyPatchTool::new(workspace.clone());
    let patch =
        "*** Begin Patch\n*** Update File: a.py\n-a = 1\n+a = 2\n*** Update File: b.py\n-b = 1\n+b = 2\n*** End Patch";
    let prepared = Tool::prepare(&tool, &json!({ "input": patch })).await.unwrap();
    std::fs::write(fixture.path("b.py"), "b = 1 # typed\n").unwrap();
    let proposal = prepared.proposal.clone();
    let cx = ToolContext { tool_call_id: "call-1", cancel: CancellationToken::new(), on_update: &|_| {} };
    let result = tool.execute(prepared, proposal, cx).await.map_err(|err| err.0);
    assert!(
        result.as_ref().is_err_and(|err| err.contains("b.py changed since") && err.contains("no file was changed")),
        "{result:?}"
    );
    assert_eq!(fixture.read("a.py"), "a = 1\n");
    assert_eq!(fixture.read("b.py"), "b = 1 # typed\n");
    // A failure midway is undone: the change to a.py is taken back when b.py cannot be written.
    let changes = vec![
        FileChange {
            path: fixture.path("a.py"),
            before: Some("a = 1\n".into()),
            after: "a = 2\n".into(),
            ..FileChange::default()
        },
        FileChange { path: fixture.path("b.py/x"), before: None, after: "x\n".into(), ..FileChange::default() },
    ];
    assert!(workspace.apply_all(&changes).await.is_err());
    assert_eq!(fixture.read("a.py"), "a = 1\n");
}
