//! How each built-in tool's calls look to a person (`Tool::look`): the title, kind, files and
//! one-line summary that every surface shows. Pinned here, by the tool, so that renaming an
//! argument fails this test and not three surfaces.

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use expect_test::{Expect, expect};
use reins_agent::{Tool, ToolLook};
use reins_tools::{ApplyPatchTool, DiagnosticSource, DiagnosticsTool, FileDiagnostics, builtin_tools};
use serde_json::{Value, json};
use support::Fixture;

/// An editor that has no diagnostics: the `diagnostics` tool needs one to exist.
struct NoEditor;

#[async_trait]
impl DiagnosticSource for NoEditor {
    fn available(&self) -> bool {
        false
    }
    async fn diagnostics(&self, _: Option<&[PathBuf]>, _: Duration) -> Result<Vec<FileDiagnostics>, String> {
        Ok(Vec::new())
    }
}

fn tools() -> Vec<Arc<dyn Tool>> {
    let fixture = Fixture::new(&[]);
    let mut tools = builtin_tools(fixture.workspace.clone(), reins_tools::ExecPolicy::default());
    tools.push(Arc::new(ApplyPatchTool::new(fixture.workspace.clone())));
    tools.push(Arc::new(DiagnosticsTool::new(fixture.workspace.clone(), Arc::new(NoEditor))));
    tools
}

fn render(look: &ToolLook) -> String {
    let locations: Vec<String> = look
        .locations
        .iter()
        .map(|location| match location.line {
            Some(line) => format!("{}:{line}", location.path),
            None => location.path.clone(),
        })
        .collect();
    // A summary keeps the command's line breaks; each surface shows it on one line.
    let summary = look.summary.replace('\n', "⏎");
    format!("{} | {:?} | [{}] | {summary}", look.title, look.kind, locations.join(", "))
}

/// Each tool's look for `arguments`, one line a tool, in the order of `calls`.
fn check_looks(calls: &[(&str, Value)], expected: Expect) {
    let tools = tools();
    let lines: Vec<String> = calls
        .iter()
        .map(|(name, arguments)| match tools.iter().find(|tool| tool.name() == *name) {
            Some(tool) => format!("{name}: {}", render(&tool.look(arguments))),
            None => format!("{name}: no such tool"),
        })
        .collect();
    expected.assert_eq(&(lines.join("\n") + "\n"));
}

#[test]
fn each_tool_says_how_its_call_looks() {
    let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-a\n+b\n*** Add File: b.txt\n+x\n*** End Patch";
    check_looks(
        &[
            ("read", json!({"path": "src/a.rs", "offset": 40})),
            ("write", json!({"path": "notes.md", "content": "x"})),
            ("edit", json!({"path": "src/a.rs", "edits": []})),
            ("apply_patch", json!({"input": patch})),
            ("bash", json!({"command": "cargo test --workspace\necho done"})),
            ("ls", json!({"path": "src"})),
            ("grep", json!({"pattern": "fn main", "path": "src"})),
            ("find", json!({"pattern": "*.rs"})),
            ("diagnostics", json!({"paths": ["src/a.rs", "b.rs"]})),
            (
                "todo",
                json!({"todos": [{"content": "read", "status": "completed"}, {"content": "fix it", "status": "in_progress"}, {"content": "test", "status": "pending"}]}),
            ),
        ],
        expect![[r#"
            read: Read src/a.rs | Read | [src/a.rs:40] | src/a.rs
            write: Write notes.md | Edit | [notes.md] | notes.md
            edit: Edit src/a.rs | Edit | [src/a.rs] | src/a.rs
            apply_patch: Patch src/a.rs, b.txt | Edit | [src/a.rs, b.txt] | src/a.rs, b.txt
            bash: Run `cargo test --workspace` … | Execute | [] | $ cargo test --workspace⏎echo done
            ls: List src | Search | [src] | src
            grep: Search for `fn main` in src | Search | [src] | fn main src
            find: Find `*.rs` in . | Search | [] | *.rs 
            diagnostics: diagnostics | Other | [] | src/a.rs, b.rs
            todo: Todo list: 1 of 3 done | Other | [] | fix it
        "#]],
    );
}

#[test]
fn a_call_without_its_arguments_still_looks_like_something() {
    check_looks(
        &[
            ("read", json!({})),
            ("write", json!({"path": 3})),
            ("edit", json!(null)),
            ("apply_patch", json!({"input": "not a patch"})),
            ("bash", json!({"command": ""})),
            ("ls", json!({})),
            ("grep", json!({})),
            ("find", json!({"path": "src"})),
            ("diagnostics", json!({})),
            ("todo", json!({"todos": "not a list"})),
        ],
        expect![[r#"
            read: Read a file | Read | [] | 
            write: Write a file | Edit | [] | 
            edit: Edit a file | Edit | [] | 
            apply_patch: Apply a patch | Edit | [] | 
            bash: Run a command | Execute | [] | 
            ls: List . | Search | [] | 
            grep: Search for `` in . | Search | [] | 
            find: Find `` in src | Search | [src] | 
            diagnostics: diagnostics | Other | [] | 
            todo: Todo list: 0 of 0 done | Other | [] | 
        "#]],
    );
}
