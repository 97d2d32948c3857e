//! Tool sets: which tools a session offers the model, as tool names and globs (`read`,
//! `mcp__github__*`) — from `--tools`, `[tools] enabled`, `reins.session.setTools`, or what the
//! session recorded. Fewer tools make every request smaller, and the read-only set is the natural
//! mode for asking about code.

use reins_review::ToolPattern;
use reins_tools::EditFormat;

/// The built-in tools, in the order they are offered (`edit` or `apply_patch`, by model;
/// `diagnostics` only where an editor answers `reins/diagnostics`; `lsp` and `rename` only where
/// there are language servers).
pub const BUILTIN_TOOLS: [&str; 13] = [
    "read",
    "write",
    "edit",
    "apply_patch",
    "bash",
    "ls",
    "grep",
    "find",
    "todo",
    "diagnostics",
    "lsp",
    "rename",
    "task",
];
/// The tools that change nothing: what a session that only answers questions needs (`todo`
/// too: the user still sees the steps of a long investigation).
pub const READ_ONLY_TOOLS: [&str; 7] = ["read", "ls", "grep", "find", "todo", "diagnostics", "lsp"];
/// The prefix of MCP servers' tools (`mcp__server__tool`).
const MCP_PREFIX: &str = "mcp__";

/// Names and globs of the tools offered; a tool is offered when one matches its name. `edit` and
/// `apply_patch` stand for each other (a model gets one of them), and `read-only` stands for
/// [`READ_ONLY_TOOLS`].
#[derive(Debug, Clone)]
pub struct ToolSet {
    /// As given (after `read-only` is spelled out): recorded in the session file like this.
    items: Vec<String>,
    patterns: Vec<ToolPattern>,
}

impl ToolSet {
    /// Reads a list of names and globs. A plain name must be a built-in tool or an MCP tool
    /// (`mcp__…`); a glob must parse. Blank items are skipped; an empty list offers no tools.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<ToolSet, String> {
        let mut spelled = Vec::new();
        for item in items.iter().map(|item| item.as_ref().trim()).filter(|item| !item.is_empty()) {
            match item {
                "read-only" => spelled.extend(READ_ONLY_TOOLS.map(String::from)),
                _ => spelled.push(item.to_string()),
            }
        }
        let mut patterns = Vec::new();
        for item in &spelled {
            if !ToolPattern::is_glob(item) && !BUILTIN_TOOLS.contains(&item.as_str()) && !item.starts_with(MCP_PREFIX) {
                return Err(format!(
                    "unknown tool `{item}`; the tools are {}, and mcp__<server>__<tool> for MCP servers' (globs such \
                     as mcp__* work too), or read-only for {}",
                    BUILTIN_TOOLS.join(", "),
                    READ_ONLY_TOOLS.join(", ")
                ));
            }
            patterns.push(ToolPattern::new(item)?);
        }
        Ok(ToolSet { items: spelled, patterns })
    }

    /// The set a session file recorded (reins's `active_tools_change`, pi 1.6's tool loadout):
    /// names reins does not know (another agent's tools) are left out rather than refused.
    pub fn recorded(items: &[String]) -> ToolSet {
        let known: Vec<&String> =
            items.iter().filter(|item| ToolSet::parse(std::slice::from_ref(*item)).is_ok()).collect();
        ToolSet::parse(&known).unwrap_or_else(|_| ToolSet { items: Vec::new(), patterns: Vec::new() })
    }

    /// Whether the tool named `name` is offered.
    pub fn offers(&self, name: &str) -> bool {
        let matches = |name: &str| self.patterns.iter().any(|pattern| pattern.matches(name));
        let editors = [EditFormat::Edit.tool_name(), EditFormat::ApplyPatch.tool_name()];
        matches(name) || (editors.contains(&name) && editors.iter().any(|editor| matches(editor)))
    }

    /// The names and globs, as given.
    pub fn items(&self) -> &[String] {
        &self.items
    }
}

/// Two sets are the same when they say the same.
impl PartialEq for ToolSet {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(items: &[&str]) -> Vec<&'static str> {
        let set = ToolSet::parse(items).unwrap();
        [
            "read",
            "write",
            "edit",
            "apply_patch",
            "bash",
            "ls",
            "grep",
            "find",
            "todo",
            "diagnostics",
            "lsp",
            "rename",
            "mcp__docs__search",
            "mcp__gh__issue",
        ]
        .into_iter()
        .filter(|name| set.offers(name))
        .collect()
    }

    #[test]
    fn names_globs_and_the_read_only_set() {
        assert_eq!(offered(&["read", "grep"]), ["read", "grep"]);
        assert_eq!(offered(&["read-only"]), ["read", "ls", "grep", "find", "todo", "diagnostics", "lsp"]);
        assert_eq!(offered(&["read", "mcp__*"]), ["read", "mcp__docs__search", "mcp__gh__issue"]);
        assert_eq!(offered(&["mcp__docs__search", " "]), ["mcp__docs__search"]);
        assert_eq!(offered(&["*"]).len(), 14);
        assert!(offered(&[]).is_empty());
        // A model gets one edit dialect: naming either offers the one it gets.
        assert_eq!(offered(&["apply_patch"]), ["edit", "apply_patch"]);
        assert_eq!(
            ToolSet::parse(&["read-only", "bash"]).unwrap().items(),
            ["read", "ls", "grep", "find", "todo", "diagnostics", "lsp", "bash"]
        );
    }

    #[test]
    fn unknown_names_and_bad_globs_say_what_there_is() {
        expect_test::expect![[r#"unknown tool `rg`; the tools are read, write, edit, apply_patch, bash, ls, grep, find, todo, diagnostics, lsp, rename, task, and mcp__<server>__<tool> for MCP servers' (globs such as mcp__* work too), or read-only for read, ls, grep, find, todo, diagnostics, lsp"#]]
        .assert_eq(&ToolSet::parse(&["read", "rg"]).unwrap_err());
        assert_eq!(
            ToolSet::parse(&["mcp__["]).unwrap_err(),
            "`mcp__[` is not a valid pattern: unclosed character class; missing ']'"
        );
    }
}
