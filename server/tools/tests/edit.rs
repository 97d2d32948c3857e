//! The `edit` tool's rules as data: a file's text and the call's arguments in, the resulting file
//! (or the error the model reads) out — run through the tool's prepare step over an in-memory
//! workspace — plus runs through execute that show what the model is told.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use expect_test::{Expect, expect};
use reins_agent::{FileChange, Proposal, Tool, ToolContext};
use reins_ai::Content;
use reins_tools::{Edit, EditTool, TextFile, Workspace, WorkspaceError, apply_edits};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Files in a map: enough of a workspace to test rules without a disk.
struct MemoryWorkspace {
    roots: Vec<PathBuf>,
    files: Mutex<HashMap<PathBuf, String>>,
}

impl MemoryWorkspace {
    fn with_file(name: &str, text: &str) -> Arc<Self> {
        let root = PathBuf::from("/ws");
        let files = HashMap::from([(root.join(name), text.to_string())]);
        Arc::new(Self { roots: vec![root], files: Mutex::new(files) })
    }

    fn file(&self, name: &str) -> Option<String> {
        self.files.lock().unwrap().get(&self.roots[0].join(name)).cloned()
    }

    fn set_file(&self, name: &str, text: &str) {
        self.files.lock().unwrap().insert(self.roots[0].join(name), text.to_string());
    }
}

#[async_trait]
impl Workspace for MemoryWorkspace {
    fn roots(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }

    fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        Ok(self.roots[0].join(path))
    }

    async fn read_text(&self, path: &Path) -> Result<TextFile, WorkspaceError> {
        match self.files.lock().unwrap().get(path) {
            Some(text) => Ok(TextFile { text: text.clone(), version: None }),
            None => Err(WorkspaceError::NotFound(path.to_path_buf())),
        }
    }

    async fn apply(&self, change: &FileChange) -> Result<(), WorkspaceError> {
        let mut files = self.files.lock().unwrap();
        if files.get(&change.path) != change.before.as_ref() {
            return Err(WorkspaceError::Stale { path: change.path.clone(), expected: None, actual: None });
        }
        files.insert(change.path.clone(), change.after.clone());
        Ok(())
    }
}

/// Edits `a.py` holding `file_text` with `args_json`; shows the proposed file (CR as `\r`, a BOM
/// as `<BOM>`, then any notes) or the error the model would read.
fn check_edit(file_text: &str, args_json: &str, expect: Expect) {
    let tool = EditTool::new(MemoryWorkspace::with_file("a.py", file_text));
    let args: Value = serde_json::from_str(args_json).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let actual = match runtime.block_on(Tool::prepare(&tool, &args)) {
        Err(err) => format!("error: {err}"),
        Ok(prepared) => match prepared.proposal {
            Some(Proposal::FileChange(change)) => render(&change),
            other => panic!("edit proposed {other:?}"),
        },
    };
    expect.assert_eq(&actual);
}

fn render(change: &FileChange) -> String {
    let mut out = change.after.replace('\u{feff}', "<BOM>").replace('\r', "\\r");
    for note in &change.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}

#[test]
fn replaces_the_one_occurrence() {
    check_edit(
        "x = 1\ny = 2\n",
        r#"{"path": "a.py", "edits": [{"oldText": "x = 1", "newText": "x = 10"}]}"#,
        expect![[r#"
            x = 10
            y = 2
        "#]],
    );
}

#[test]
fn deletes_with_empty_new_text() {
    check_edit(
        "keep\ndrop me\nkeep too\n",
        r#"{"path": "a.py", "edits": [{"oldText": "drop me\n", "newText": ""}]}"#,
        expect![[r#"
            keep
            keep too
        "#]],
    );
}

#[test]
fn matches_every_edit_against_the_original_text() {
    // Applied one after another, the second edit would undo the first; against the original
    // they swap the two lines.
    check_edit(
        "a = 1\nb = 2\nc = 3\n",
        r#"{"path": "a.py", "edits": [
            {"oldText": "a = 1", "newText": "b = 2"},
            {"oldText": "b = 2", "newText": "a = 1"}
        ]}"#,
        expect![[r#"
            b = 2
            a = 1
            c = 3
        "#]],
    );
}

#[test]
fn refuses_overlapping_edits() {
    check_edit(
        "def f():\n    return 1\n",
        r#"{"path": "a.py", "edits": [
            {"oldText": "def f():\n    return", "newText": "def g():\n    return"},
            {"oldText": "return 1", "newText": "return 2"}
        ]}"#,
        expect![[r#"
            error: edits[0] and edits[1] overlap in a.py (around line 2); each edit must change a separate part of the file, so merge them into one edit
            None of the edits were applied."#]],
    );
}

#[test]
fn one_failing_edit_applies_none() {
    check_edit(
        "a = 1\nb = 2\n",
        r#"{"path": "a.py", "edits": [
            {"oldText": "a = 1", "newText": "a = 10"},
            {"oldText": "c = 3", "newText": "c = 30"}
        ]}"#,
        expect![[r#"
            error: edits[1]: could not find oldText in a.py. The most similar part of the file is line 1 (though not very similar), shown with line numbers, which are not part of the file:
                1 | a = 1
                2 | b = 2
            What differs (- your oldText, + the file):
            - c = 3
            + a = 1

            Read a.py again and copy oldText exactly as it is now, including whitespace and indentation.
            None of the edits were applied."#]],
    );
}

#[test]
fn not_found_shows_the_closest_region() {
    check_edit(
        "import os\n\ndef load(path):\n    with open(path) as f:\n        return f.read()\n\ndef save(path, text):\n    with open(path, 'w') as f:\n        f.write(text)\n",
        r#"{"path": "a.py", "edits": [{"oldText": "def save(path, data):\n    with open(path, 'w') as f:", "newText": "x"}]}"#,
        expect![[r#"
            error: could not find oldText in a.py. The most similar part of the file is lines 7-8 (no other region comes close), shown with line numbers, which are not part of the file:
                5 |         return f.read()
                6 | 
                7 | def save(path, text):
                8 |     with open(path, 'w') as f:
                9 |         f.write(text)
            What differs (- your oldText, + the file):
            - def save(path, data):
            + def save(path, text):

            Read a.py again and copy oldText exactly as it is now, including whitespace and indentation."#]],
    );
}

#[test]
fn not_found_in_an_empty_file_says_it_is_empty() {
    check_edit(
        "",
        r#"{"path": "a.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]}"#,
        expect![[r#"
            error: could not find oldText in a.py (a.py is empty; use write to give it content)
            Read a.py again and copy oldText exactly as it is now, including whitespace and indentation."#]],
    );
}

#[test]
fn refuses_an_ambiguous_match() {
    check_edit(
        "x = 1\nx = 1\n",
        r#"{"path": "a.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]}"#,
        expect![[
            r#"error: found 2 occurrences of the text in a.py, at lines 1, 2; add more surrounding context to make it unique, or set replaceAll"#
        ]],
    );
}

#[test]
fn replace_all_changes_every_occurrence() {
    check_edit(
        "x = 1\ny = x + 1\nx = 1\n",
        r#"{"path": "a.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}], "replaceAll": true}"#,
        expect![[r#"
            x = 2
            y = x + 1
            x = 2
        "#]],
    );
}

#[test]
fn refuses_an_empty_old_text() {
    check_edit(
        "x = 1\n",
        r#"{"path": "a.py", "edits": [{"oldText": "", "newText": "y = 2\n"}]}"#,
        expect![[
            r#"error: oldText is empty; it must quote the text to replace. To insert, quote a neighbouring line in oldText and repeat it in newText; to create a file, use write"#
        ]],
    );
}

#[test]
fn refuses_a_no_op_edit() {
    check_edit(
        "x = 1\n",
        r#"{"path": "a.py", "edits": [{"oldText": "x = 1", "newText": "x = 1"}]}"#,
        expect![[r#"error: oldText and newText are identical, so this edit would change nothing"#]],
    );
}

#[test]
fn refuses_an_edit_that_leaves_the_file_as_it_was() {
    // The loose match finds the curly-quoted text, and newText is exactly what is already there.
    check_edit(
        "s = “hi”\n",
        r#"{"path": "a.py", "edits": [{"oldText": "s = \"hi\"", "newText": "s = “hi”"}]}"#,
        expect![[r#"error: these edits would leave a.py unchanged: the matched text already reads as newText"#]],
    );
}

#[test]
fn refuses_no_edits() {
    check_edit(
        "x = 1\n",
        r#"{"path": "a.py", "edits": []}"#,
        expect![[r#"error: no edits given: pass at least one {oldText, newText} pair in edits"#]],
    );
}

#[test]
fn points_to_write_for_a_missing_file() {
    check_edit(
        "x = 1\n",
        r#"{"path": "new.py", "edits": [{"oldText": "a", "newText": "b"}]}"#,
        expect![[r#"error: new.py does not exist; edit only changes existing files, so use write to create it"#]],
    );
}

#[test]
fn names_the_field_of_invalid_arguments() {
    check_edit(
        "x = 1\n",
        r#"{"path": "a.py", "edits": [{"old_text": "x", "newText": "y"}]}"#,
        expect![
            "error: invalid arguments: edits[0].old_text: unknown field `old_text`, expected `oldText` or `newText`"
        ],
    );
}

#[test]
fn keeps_crlf_line_endings_and_the_bom() {
    // The model sends LF; the new lines take the file's CRLF, and the one LF-only line outside
    // the edit stays as it was.
    check_edit(
        "\u{feff}a\r\nb\r\nc\nd\r\n",
        r#"{"path": "a.py", "edits": [{"oldText": "a\nb\n", "newText": "a\nB\nB2\n"}]}"#,
        expect![[r#"
            <BOM>a\r
            B\r
            B2\r
            c
            d\r
        "#]],
    );
}

#[test]
fn matches_at_the_start_of_a_file_with_a_bom() {
    check_edit(
        "\u{feff}first\r\nsecond\r\n",
        r#"{"path": "a.py", "edits": [{"oldText": "first\nsecond", "newText": "only"}]}"#,
        expect![[r#"
            <BOM>only\r
        "#]],
    );
}

#[test]
fn matches_ignoring_trailing_whitespace_and_changes_nothing_else() {
    // The unchanged first line keeps its trailing spaces; the spaces after the match stay too.
    check_edit(
        "def f():  \n    return 1   \nx = 1\t\n",
        r#"{"path": "a.py", "edits": [{"oldText": "def f():\n    return 1", "newText": "def f():\n    return 2"}]}"#,
        expect![[r#"
            def f():  
                return 2   
            x = 1	
            note: matched after ignoring trailing whitespace
        "#]],
    );
}

#[test]
fn a_loose_old_text_must_end_a_line_when_its_trailing_space_was_dropped() {
    check_edit(
        "foo(a,b)\n",
        r#"{"path": "a.py", "edits": [{"oldText": "foo(a, ", "newText": "foo(a, c"}]}"#,
        expect![[r#"
            error: could not find oldText in a.py. The most similar part of the file is line 1 (no other region comes close), shown with line numbers, which are not part of the file:
                1 | foo(a,b)
            What differs (- your oldText, + the file):
            - foo(a, 
            + foo(a,b)

            Read a.py again and copy oldText exactly as it is now, including whitespace and indentation."#]],
    );
}

#[test]
fn loose_match_in_a_crlf_file_keeps_the_untouched_lines_bytes() {
    check_edit(
        "a  \r\nb\r\nc\r\n",
        r#"{"path": "a.py", "edits": [{"oldText": "a\r\nb", "newText": "a\nB"}]}"#,
        expect![[r#"
            a  \r
            B\r
            c\r
            note: matched after ignoring trailing whitespace
        "#]],
    );
}

#[test]
fn matches_ascii_text_against_typographic_characters() {
    check_edit(
        "print(“hello — world”)\u{a0}# it’s\nnext()\n",
        r#"{"path": "a.py", "edits": [{"oldText": "print(\"hello - world\") # it's", "newText": "print(\"hi\")"}]}"#,
        expect![[r#"
            print(“hi”)
            next()
            note: matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms
        "#]],
    );
}

#[test]
fn prefers_an_exact_typographic_match() {
    // Loosely, both lines match; exactly, only the first does, and exact wins.
    check_edit(
        "a = “x”\nb = \"x\"\n",
        r#"{"path": "a.py", "edits": [{"oldText": "“x”", "newText": "'x'"}]}"#,
        expect![[r#"
            a = 'x'
            b = "x"
        "#]],
    );
}

#[test]
fn refuses_an_ambiguous_loose_match() {
    check_edit(
        "x = 1  \nx = 1 \n",
        r#"{"path": "a.py", "edits": [{"oldText": "x = 1\n", "newText": "x = 2\n"}]}"#,
        expect![[
            r#"error: found 2 occurrences of the text in a.py when ignoring trailing whitespace (none match exactly), at lines 1, 2; add more surrounding context to make it unique, or set replaceAll"#
        ]],
    );
}

#[test]
fn lines_repeated_unchanged_keep_the_files_bytes() {
    check_edit(
        "  a = ‘x’\n  b = 1\n  c = ‘y’\n",
        r#"{"path": "a.py", "edits": [{"oldText": "  a = 'x'\n  b = 1\n  c = 'y'\n", "newText": "  a = 'x'\n  b = 2\n  c = 'y'\n"}]}"#,
        expect![[r#"
              a = ‘x’
              b = 2
              c = ‘y’
            note: matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms
        "#]],
    );
}

#[test]
fn lines_written_back_in_another_spelling_keep_the_files_bytes() {
    // The first line comes back with smart quotes and trailing spaces the file does not have:
    // only the normalisation tells it apart from oldText, so it is not a change.
    check_edit(
        "say(“hi”)\nx = 1\n",
        r#"{"path": "a.py", "edits": [{"oldText": "say(\"hi\")\nx = 1\n", "newText": "say(“hi”)  \nx = 2\n"}]}"#,
        expect![[r#"
            say(“hi”)
            x = 2
            note: matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms
        "#]],
    );
}

#[test]
fn lines_appended_after_a_quote_without_a_final_newline_keep_its_last_line() {
    // The quote's last line has no line break and newText repeats it before new lines: it is not
    // a change, so it keeps the file's quotes, with or without a final newline in newText.
    check_edit(
        "title = “Hello”\nrest = 1\n",
        r#"{"path": "a.py", "edits": [{"oldText": "title = \"Hello\"", "newText": "title = \"Hello\"\nsub = 2"}]}"#,
        expect![[r#"
            title = “Hello”
            sub = 2
            rest = 1
            note: matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms
        "#]],
    );
    check_edit(
        "intro\r\ntitle = “Hello”\r\nrest = 1\r\n",
        r#"{"path": "a.py", "edits": [{"oldText": "intro\ntitle = \"Hello\"", "newText": "intro\ntitle = \"Hello\"\nsub = 2\n"}]}"#,
        expect![[r#"
            intro\r
            title = “Hello”\r
            sub = 2\r
            \r
            rest = 1\r
            note: matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms
        "#]],
    );
}

#[test]
fn deleting_the_last_line_of_a_quote_without_a_final_newline_keeps_the_line_before() {
    check_edit(
        "a = ‘x’\nb = 1\nc = 2\n",
        r#"{"path": "a.py", "edits": [{"oldText": "a = 'x'\nb = 1", "newText": "a = 'x'"}]}"#,
        expect![[r#"
            a = ‘x’
            c = 2
            note: matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms
        "#]],
    );
}

#[test]
fn a_line_break_the_model_removes_goes_and_the_line_keeps_its_bytes() {
    check_edit(
        "a = ‘x’\nb = 1\n",
        r#"{"path": "a.py", "edits": [{"oldText": "a = 'x'\n", "newText": "a = 'x'"}]}"#,
        expect![[r#"
            a = ‘x’b = 1
            note: matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms
        "#]],
    );
}

#[test]
fn trailing_whitespace_stays_on_the_line_a_quote_without_a_final_newline_ends_on() {
    // oldText matches "a = 1" exactly, short of the line's trailing spaces (a Markdown hard
    // break); the line appended after it does not take them away from it.
    let edit = Edit { old_text: "a = 1".to_string(), new_text: "a = 1\nb = 2".to_string() };
    let applied = apply_edits("a = 1  \nc = 3\n", &[edit], false, "a.md").unwrap();
    assert_eq!(applied.text, "a = 1  \nb = 2\nc = 3\n");
}

#[test]
fn changed_lines_keep_the_files_typography_where_they_repeat_old_text() {
    check_edit(
        "msg = “it’s fine” — ok\n",
        r#"{"path": "a.py", "edits": [{"oldText": "msg = \"it's fine\" - ok", "newText": "msg = \"it's great\" - ok, \"really\""}]}"#,
        expect![[r#"
            msg = “it’s great” — ok, "really"
            note: matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms
        "#]],
    );
}

#[test]
fn a_whole_line_quoted_without_its_indentation_takes_it_along() {
    check_edit(
        "if x:\n    a()\n    b()\n",
        r#"{"path": "a.py", "edits": [{"oldText": "a()\n", "newText": ""}]}"#,
        expect![[r#"
            if x:
                b()
        "#]],
    );
    check_edit(
        "if x:\n    a()\n    b()\n",
        r#"{"path": "a.py", "edits": [{"oldText": "a()\n", "newText": "c()\na()\n"}]}"#,
        expect![[r#"
            if x:
                c()
                a()
                b()
        "#]],
    );
}

#[test]
fn handles_multibyte_text() {
    check_edit(
        "msg = \"héllo 👋\"\nnom = \"日本語\"\n",
        r#"{"path": "a.py", "edits": [{"oldText": "👋", "newText": "🌍"}, {"oldText": "日本", "newText": "中"}]}"#,
        expect![[r#"
            msg = "héllo 🌍"
            nom = "中語"
        "#]],
    );
    check_edit(
        "say(“👋 日本”)   \n",
        r#"{"path": "a.py", "edits": [{"oldText": "say(\"👋 日本\")", "newText": "say(\"🌍\")"}]}"#,
        expect![[r#"
            say(“🌍”)   
            note: matched after treating typographic quotes, dashes and Unicode spaces as their ASCII forms
        "#]],
    );
}

fn no_updates(_: &str) {}

fn context() -> ToolContext<'static> {
    ToolContext { tool_call_id: "call_1", cancel: CancellationToken::new(), on_update: &no_updates }
}

fn text_of(content: &[Content]) -> String {
    content
        .iter()
        .map(|block| match block {
            Content::Text { text } => text.as_str(),
            _ => "",
        })
        .collect()
}

#[tokio::test]
async fn execute_writes_the_file_and_reports_notes_and_diff() {
    let workspace = MemoryWorkspace::with_file("a.py", "def f():   \n    return 1\n\n\nprint(f())\n");
    let tool = EditTool::new(workspace.clone());
    let args = serde_json::json!({"path": "a.py", "edits": [{"oldText": "def f():\n    return 1", "newText": "def f():\n    return 2"}]});
    let prepared = Tool::prepare(&tool, &args).await.unwrap();
    let proposal = prepared.proposal.clone();
    let output = Tool::execute(&tool, prepared, proposal, context()).await.unwrap();

    expect![[r#"
        Edited a.py: 1 replacement
        Note: matched after ignoring trailing whitespace

        @@ -1,4 +1,4 @@
         def f():   
        -    return 1
        +    return 2
         
         "#]]
    .assert_eq(&text_of(&output.content));
    expect![[r#"
        --- a.py
        +++ a.py
        @@ -1,5 +1,5 @@
         def f():   
        -    return 1
        +    return 2
         
         
         print(f())
    "#]]
    .assert_eq(output.details.as_ref().unwrap()["diff"].as_str().unwrap());
    assert_eq!(workspace.file("a.py").unwrap(), "def f():   \n    return 2\n\n\nprint(f())\n");
}

#[tokio::test]
async fn execute_refuses_when_the_file_changed_after_prepare() {
    let workspace = MemoryWorkspace::with_file("a.py", "x = 1\n");
    let tool = EditTool::new(workspace.clone());
    let args = serde_json::json!({"path": "a.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]});
    let prepared = Tool::prepare(&tool, &args).await.unwrap();
    let proposal = prepared.proposal.clone();
    workspace.set_file("a.py", "x = 1\ny = 1\n");
    let err = Tool::execute(&tool, prepared, proposal, context()).await.unwrap_err();

    expect![[r#"/ws/a.py changed since the edit was prepared (version None, now None); nothing was changed. Read a.py again and redo the edit"#]]
        .assert_eq(&err.to_string());
    assert_eq!(workspace.file("a.py").unwrap(), "x = 1\ny = 1\n");
}

#[test]
fn schema_tells_the_model_the_rules() {
    let tool = EditTool::new(MemoryWorkspace::with_file("a.py", ""));
    let spec = Tool::spec(&tool);
    assert_eq!(spec.name, "edit");
    expect![[r#"
        {
          "required": [
            "path",
            "edits"
          ],
          "type": "object",
          "properties": {
            "path": {
              "type": "string"
            },
            "edits": {
              "type": "array",
              "items": {
                "required": [
                  "oldText",
                  "newText"
                ],
                "type": "object",
                "properties": {
                  "oldText": {
                    "type": "string"
                  },
                  "newText": {
                    "type": "string"
                  }
                }
              },
              "minItems": 1
            },
            "replaceAll": {
              "description": "Replace every match of each oldText (renames).",
              "type": "boolean"
            }
          }
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&spec.parameters).unwrap());
}

#[test]
fn reindents_new_text_to_the_files_tabs() {
    check_edit(
        "func f() {\n\tif ok {\n\t\trun()\n\t}\n}\n",
        r#"{"path": "a.py", "edits": [{"oldText": "if ok {\n    run()\n}", "newText": "if ok {\n    run()\n    stop()\n}"}]}"#,
        expect![[r#"
            func f() {
            	if ok {
            		run()
            		stop()
            	}
            }
            note: matched after ignoring indentation; newText was re-indented to the file's indentation
        "#]],
    );
}

#[test]
fn strips_line_numbers_copied_from_a_listing() {
    check_edit(
        "a = 1\nb = 2\n",
        r#"{"path": "a.py", "edits": [{"oldText": "   1→a = 1\n   2→b = 2", "newText": "   1→a = 1\n   2→b = 3"}]}"#,
        expect![[r#"
            a = 1
            b = 3
            note: matched after removing line-number prefixes copied from read output
        "#]],
    );
}

#[test]
fn reads_escapes_written_literally_only_when_the_literal_fails() {
    check_edit(
        "x = 1\ny = 2\n",
        r#"{"path": "a.py", "edits": [{"oldText": "x = 1\\ny = 2", "newText": "x = 1\\ny = 3"}]}"#,
        expect![[r#"
            x = 1
            y = 3
            note: matched after reading \n, \t and \" written literally as the characters they stand for
        "#]],
    );
}

#[test]
fn lands_past_stale_context_keeping_the_files_version_of_it() {
    check_edit(
        "limit = 10\nrun(limit)\n",
        r#"{"path": "a.py", "edits": [{"oldText": "limit = 5\nrun(limit)", "newText": "limit = 5\nrun_twice(limit)"}]}"#,
        expect![[r#"
            limit = 10
            run_twice(limit)
            note: matched although 1 of oldText's unchanged context lines differ from the file (line 1 reads "limit = 10", not "limit = 5"); the lines you changed matched exactly, and the file's own version of the context lines was kept
        "#]],
    );
}

#[test]
fn refuses_a_stale_changed_line_with_a_diff_against_the_closest_region() {
    check_edit(
        "x = 1\ny = 2\n",
        r#"{"path": "a.py", "edits": [{"oldText": "x = 1\ny = 3", "newText": "x = 1\ny = 4"}]}"#,
        expect![[r#"
            error: could not find oldText in a.py. The most similar part of the file is lines 1-2 (no other region comes close), shown with line numbers, which are not part of the file:
                1 | x = 1
                2 | y = 2
            What differs (- your oldText, + the file):
            - y = 3
            + y = 2

            Read a.py again and copy oldText exactly as it is now, including whitespace and indentation."#]],
    );
}

#[test]
fn mixed_line_endings_stay_per_line() {
    check_edit(
        "a = 1\nb = 2\r\nc = 3\n",
        r#"{"path": "a.py", "edits": [{"oldText": "a = 1\nb = 2\nc = 3", "newText": "a = 10\nb = 20\nc = 30"}]}"#,
        expect![[r#"
            a = 10
            b = 20\r
            c = 30
        "#]],
    );
}
