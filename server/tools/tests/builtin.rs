//! The set of built-in tools and the schemas the model sees.

mod support;

use expect_test::expect;
use reins_tools::builtin_tools;
use support::Fixture;

#[test]
fn builtin_tools_are_the_seven_with_their_read_only_flags() {
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
        ]
    "#]]
    .assert_debug_eq(&summary);
}

#[test]
fn grep_schema_uses_camel_case_and_describes_every_field() {
    let fixture = Fixture::new(&[]);
    let tools = builtin_tools(fixture.workspace.clone(), reins_tools::ExecPolicy::default());
    let grep = tools.iter().find(|tool| tool.name() == "grep").unwrap().spec();
    let properties = grep.parameters["properties"].as_object().unwrap();
    let described: Vec<(&str, bool)> = properties
        .iter()
        .map(|(name, schema)| (name.as_str(), schema["description"].as_str().is_some_and(|text| !text.is_empty())))
        .collect();
    expect![[r#"
        [
            (
                "context",
                true,
            ),
            (
                "glob",
                true,
            ),
            (
                "ignoreCase",
                true,
            ),
            (
                "limit",
                true,
            ),
            (
                "literal",
                true,
            ),
            (
                "path",
                true,
            ),
            (
                "pattern",
                true,
            ),
        ]
    "#]]
    .assert_debug_eq(&described);
    assert_eq!(grep.parameters["required"], serde_json::json!(["pattern"]));
}
