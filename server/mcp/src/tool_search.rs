//! `tool_search`: the model's way to the MCP tools that are not declared (see `exposure`). It
//! finds tools by words, a regular expression or their names, answers their names and one-line
//! descriptions, and declares them from the next request on.

use std::sync::Arc;

use async_trait::async_trait;
use reins_agent::{ToolContext, ToolError, ToolKind, ToolLook, ToolOutput, TypedTool, string_argument};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::exposure::Declared;

/// The tool's name.
pub const TOOL_SEARCH: &str = "tool_search";
/// How many tools one search declares unless it asks for another number, and at most.
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 20;
/// How much of the description the names of the deferred tools may take, in bytes: past it,
/// the rest are counted (the model finds them by searching).
const NAMES_BUDGET: usize = 7_000;
/// The longest one-line description in a result, in chars.
const LINE_MAX: usize = 120;

/// A deferred tool as the search knows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The public name, `mcp__server__tool`.
    pub(crate) name: String,
    pub(crate) server: String,
    /// The server's name for it.
    pub(crate) tool: String,
    pub(crate) description: String,
}

pub(crate) struct ToolSearch {
    catalogue: Vec<Entry>,
    declared: Arc<Declared>,
    description: String,
}

/// Finds tools of the user's MCP servers that are not declared yet.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchInput {
    /// Words to find in the tools' names and descriptions (any order, any case); `/pattern/` for
    /// a regular expression; `select:NAME,NAME` for tools by name.
    query: String,
    /// How many tools to declare at most (5 unless given, up to 20).
    limit: Option<usize>,
}

impl ToolSearch {
    /// A search over `catalogue` (the deferred tools, in the servers' order) that declares what
    /// it finds in `declared`.
    pub(crate) fn new(catalogue: Vec<Entry>, declared: Arc<Declared>) -> Self {
        let description = describe(&catalogue);
        Self { catalogue, declared, description }
    }

    /// Matches of `query`, best first, at most `limit`.
    fn find(&self, query: &str, limit: usize) -> Result<Vec<&Entry>, String> {
        let query = query.trim();
        if let Some(names) = query.strip_prefix("select:") {
            let wanted: Vec<&str> = names.split(',').map(str::trim).filter(|name| !name.is_empty()).collect();
            let found = wanted
                .iter()
                .filter_map(|name| self.catalogue.iter().find(|entry| entry.name == *name || entry.tool == *name))
                .take(limit)
                .collect();
            return Ok(found);
        }
        if let Some(pattern) = query.strip_prefix('/').and_then(|rest| rest.strip_suffix('/')) {
            let regex = regex::RegexBuilder::new(pattern)
                .case_insensitive(true)
                .size_limit(1 << 20)
                .build()
                .map_err(|err| format!("invalid regular expression: {err}"))?;
            let found = self
                .catalogue
                .iter()
                .filter(|entry| regex.is_match(&entry.name) || regex.is_match(&entry.description))
                .take(limit)
                .collect();
            return Ok(found);
        }
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        if words.is_empty() {
            return Err("the query is empty: give words, /pattern/ or select:NAME".to_string());
        }
        let mut scored: Vec<(usize, &Entry)> =
            self.catalogue.iter().map(|entry| (score(entry, &words), entry)).filter(|(score, _)| *score > 0).collect();
        // Stable: of equal scores, the servers' order.
        scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
        Ok(scored.into_iter().take(limit).map(|(_, entry)| entry).collect())
    }
}

#[async_trait]
impl TypedTool for ToolSearch {
    type Input = SearchInput;
    const NAME: &'static str = TOOL_SEARCH;
    const READ_ONLY: bool = true;

    fn description(&self) -> String {
        self.description.clone()
    }

    fn look(&self, arguments: &Value) -> ToolLook {
        let query = string_argument(arguments, "query").unwrap_or("");
        ToolLook {
            title: format!("Search tools for `{query}`"),
            kind: ToolKind::Search,
            locations: Vec::new(),
            summary: query.to_string(),
        }
    }

    async fn execute(
        &self,
        input: SearchInput,
        _proposal: Option<reins_agent::Proposal>,
        _cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let limit = input.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let found = self.find(&input.query, limit).map_err(ToolError::new)?;
        if found.is_empty() {
            return Ok(ToolOutput::text(format!(
                "No tool matches {:?}. Try other words, a /pattern/, or select:NAME with a name from this tool's description.",
                input.query
            )));
        }
        let names: Vec<String> = found.iter().map(|entry| entry.name.clone()).collect();
        self.declared.add_found(&names);
        let lines: Vec<String> =
            found.iter().map(|entry| format!("- {}: {}", entry.name, one_line(&entry.description))).collect();
        let count = if found.len() == 1 { "1 tool".to_string() } else { format!("{} tools", found.len()) };
        Ok(ToolOutput::text(format!(
            "Found {count}, declared from your next request on: call them by these names.\n{}",
            lines.join("\n")
        ))
        .with_details(serde_json::json!({ "found": names })))
    }
}

/// How well `entry` matches `words`: a word in the name counts twice, one in the description once.
fn score(entry: &Entry, words: &[String]) -> usize {
    let name = entry.name.to_lowercase();
    let description = entry.description.to_lowercase();
    words
        .iter()
        .map(|word| {
            if name.contains(word.as_str()) {
                2
            } else if description.contains(word.as_str()) {
                1
            } else {
                0
            }
        })
        .sum()
}

/// The tool's description: what it does, and the deferred tools by server (their names as far as
/// the budget goes).
fn describe(catalogue: &[Entry]) -> String {
    let mut text = String::from(
        "Finds tools of the user's MCP servers that are not declared yet, and declares them: the tools \
         found can be called from your next request on. Search here before you say a tool is missing.\n\
         Tools to find, by server:",
    );
    let mut budget = NAMES_BUDGET;
    let mut servers: Vec<&str> = catalogue.iter().map(|entry| entry.server.as_str()).collect();
    servers.dedup();
    for server in servers {
        let tools: Vec<&str> =
            catalogue.iter().filter(|entry| entry.server == server).map(|entry| entry.tool.as_str()).collect();
        text.push_str(&format!("\n- {server} ({}): ", tools.len()));
        let mut shown = 0;
        for tool in &tools {
            if tool.len() + 2 > budget {
                break;
            }
            if shown > 0 {
                text.push_str(", ");
            }
            text.push_str(tool);
            budget -= tool.len() + 2;
            shown += 1;
        }
        if shown < tools.len() {
            text.push_str(&format!("{}and {} more", if shown > 0 { ", " } else { "" }, tools.len() - shown));
        }
    }
    text
}

/// The first line of `description`, cut at `LINE_MAX` chars.
fn one_line(description: &str) -> String {
    let line = description.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("");
    match line.char_indices().nth(LINE_MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn entry(server: &str, tool: &str, description: &str) -> Entry {
        Entry {
            name: format!("mcp__{server}__{tool}"),
            server: server.into(),
            tool: tool.into(),
            description: description.into(),
        }
    }

    fn search() -> ToolSearch {
        let catalogue = vec![
            entry("billing", "create_invoice", "Creates an invoice for a customer.\nMore lines."),
            entry("billing", "list_invoices", "Lists the invoices of a customer."),
            entry("git", "git_log", "Shows the commit log of a repository, newest first."),
            entry("git", "git_diff", "Shows what changed in a repository's working tree."),
        ];
        ToolSearch::new(catalogue, Declared::unrecorded())
    }

    fn check_find(query: &str, expected: Expect) {
        let search = search();
        let found = match search.find(query, 3) {
            Ok(found) => found.iter().map(|entry| entry.name.as_str()).collect::<Vec<_>>().join(" "),
            Err(err) => format!("error: {err}"),
        };
        expected.assert_eq(&found);
    }

    #[test]
    fn words_regex_and_names_find_tools() {
        check_find("invoice customer", expect!["mcp__billing__create_invoice mcp__billing__list_invoices"]);
        check_find("REPOSITORY log", expect!["mcp__git__git_log mcp__git__git_diff"]);
        check_find("/^mcp__git__.*diff$/", expect!["mcp__git__git_diff"]);
        check_find(
            "select:git_log, mcp__billing__list_invoices",
            expect!["mcp__git__git_log mcp__billing__list_invoices"],
        );
        check_find("weather", expect![""]);
        check_find("  ", expect!["error: the query is empty: give words, /pattern/ or select:NAME"]);
        check_find(
            "/(unclosed/",
            expect![[r#"
            error: invalid regular expression: regex parse error:
                (unclosed
                ^
            error: unclosed group"#]],
        );
    }

    #[test]
    fn the_description_lists_the_tools_by_server() {
        expect![[r#"
            Finds tools of the user's MCP servers that are not declared yet, and declares them: the tools found can be called from your next request on. Search here before you say a tool is missing.
            Tools to find, by server:
            - billing (2): create_invoice, list_invoices
            - git (2): git_log, git_diff"#]]
        .assert_eq(&search().description);
    }

    #[test]
    fn past_the_budget_names_are_counted() {
        let catalogue: Vec<Entry> =
            (0..1000).map(|n| entry("big", &format!("tool_number_{n:04}"), "A tool.")).collect();
        let description = describe(&catalogue);
        assert!(description.len() < NAMES_BUDGET + 400, "{}", description.len());
        assert!(description.ends_with("more"), "{}", &description[description.len() - 40..]);
    }

    #[test]
    fn a_search_looks_like_its_query() {
        let look = TypedTool::look(&search(), &serde_json::json!({"query": "archive invoice"}));
        assert_eq!(
            (look.title.as_str(), look.kind, look.summary.as_str()),
            ("Search tools for `archive invoice`", ToolKind::Search, "archive invoice")
        );
    }

    #[test]
    fn one_line_is_the_first_line_cut_short() {
        assert_eq!(one_line("\n  First.\nSecond."), "First.");
        assert_eq!(one_line(&"é".repeat(200)).chars().count(), LINE_MAX + 1);
    }
}
