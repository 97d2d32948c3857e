//! The set of built-in tools and the schemas the model sees.

mod support;

use expect_test::expect;
use reins_tools::builtin_tools;
use support::Fixture;

#[test]
fn builtin_tools_are_the_eight_with_their_read_only_flags() {
    let fixture = Fixture::new(&[]);
    let tools = builtin_tools(fixture.workspace.clone(), reins_tools::ExecPolicy::default());
    let summary: Vec<String> = tools
        .iter()
        .map(|tool| format!("{}{}", tool.name(), if tool.read_only() { " (read-only)" } else { "" }))
        .collect();
    expect![[r#"
        [
            "read (read-only)",
            "write",
            "edit",
            "bash",
            "ls (read-only)",
            "grep (read-only)",
            "find (read-only)",
            "todo (read-only)",
        ]
    "#]]
    .assert_debug_eq(&summary);
}

/// Every definition exactly as the model gets it (and pays for on every call): a change in
/// length shows up here first. The default policy has no sandbox, so bash says nothing
/// of one.
#[test]
fn definitions_are_lean() {
    let fixture = Fixture::new(&[]);
    let tools = builtin_tools(fixture.workspace.clone(), reins_tools::ExecPolicy::default());
    let lines: Vec<String> = tools
        .iter()
        .map(|tool| {
            let spec = tool.spec();
            format!("{}: {}\n  {}", spec.name, spec.description, spec.parameters)
        })
        .collect();
    expect![[r#"
        read: Read a UTF-8 text file as the user sees it (unsaved editor changes included). Output stops at 2000 lines or 50.0 KB; a notice gives the offset to continue from.
          {"required":["path"],"properties":{"path":{"type":"string"},"offset":{"description":"First line to read, 1-based.","type":"integer"},"limit":{"description":"Lines to read.","type":"integer"}},"type":"object"}
        write: Create a file, or replace all of its content; parent directories are created.
          {"required":["path","content"],"properties":{"path":{"type":"string"},"content":{"type":"string"}},"type":"object"}
        edit: Replace exact text in an existing file. Each oldText is copied from the file as it is now, whitespace included, with enough context to match exactly one place; edits are matched against the original, must not overlap, and apply together or not at all.
          {"required":["path","edits"],"type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"required":["oldText","newText"],"type":"object","properties":{"oldText":{"type":"string"},"newText":{"type":"string"}}},"minItems":1},"replaceAll":{"description":"Replace every match of each oldText (renames).","type":"boolean"}}}
        bash: Run a bash command in the working directory; stdout and stderr come together, and a non-zero exit is an error. Output keeps its last 2000 lines or 50.0 KB (the full output is saved to a file the result names). Killed with every process it started after timeout seconds (default 120, at most 1800); to keep a server running, background it: `cmd > log 2>&1 &`.
          {"required":["command"],"properties":{"command":{"type":"string"},"timeout":{"description":"Seconds.","type":"integer"}},"type":"object"}
        ls: List a directory, sorted, dotfiles included; directories end in `/`. At most 500 entries unless limit says otherwise.
          {"properties":{"path":{"description":"Default: the working directory.","type":"string"},"limit":{"type":"integer"}},"type":"object"}
        grep: Search file contents (unsaved editor changes included), respecting .gitignore and skipping hidden and binary files. Prints `path:line: text` (context: `path-line- text`), at most 100 matches unless limit says otherwise; lines cut at 500 characters.
          {"required":["pattern"],"properties":{"pattern":{"description":"Rust regex, one line at a time; plain text with `literal`.","type":"string"},"path":{"description":"File or directory; default: the working directory.","type":"string"},"glob":{"description":"Only files matching this glob (`*.rs`, `src/**/*.ts`).","type":"string"},"ignoreCase":{"type":"boolean"},"literal":{"type":"boolean"},"context":{"description":"Lines shown around each match.","type":"integer"},"limit":{"type":"integer"}},"type":"object"}
        find: Find files by glob, respecting .gitignore and skipping hidden files. Paths come sorted, at most 1000 unless limit says otherwise.
          {"required":["pattern"],"properties":{"pattern":{"description":"Glob: `*.rs`, `src/**/*.ts`. Without a `/` it matches names at any depth.","type":"string"},"path":{"description":"Directory to search; default: the working directory.","type":"string"},"limit":{"type":"integer"}},"type":"object"}
        todo: Keep a todo list the user sees, for work of three steps or more. Send the whole list each time (it replaces the last one); mark one step in_progress as you start it and completed as soon as it is done.
          {"required":["todos"],"properties":{"todos":{"description":"The whole list; an empty one clears it.","type":"array","items":{"type":"object","properties":{"content":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"type":"object"}"#]].assert_eq(&lines.join("\n"));
}
