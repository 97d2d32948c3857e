//! `reins sessions list|tree`: the workspace's sessions and a session's tree, for people or as
//! JSON.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use reins_harness::{Harness, HarnessOptions, LiveSettings, SessionInfo, SessionTreeView};
use reins_tools::FsWorkspace;

use serde_json::Value;

use crate::lsp::to_proto;
use crate::terminal::TerminalApprover;

#[derive(Debug, PartialEq)]
pub enum SessionsCommand {
    List,
    Tree(String),
}

#[derive(Debug, PartialEq)]
pub struct SessionsArgs {
    pub command: SessionsCommand,
    pub json: bool,
    pub cwd: Option<PathBuf>,
}

impl SessionsArgs {
    pub fn parse(args: impl Iterator<Item = OsString>) -> Result<Self, String> {
        use lexopt::prelude::*;
        let mut parser = lexopt::Parser::from_args(args);
        let err = |e: lexopt::Error| e.to_string();
        let (mut words, mut json, mut cwd) = (Vec::new(), false, None);
        while let Some(arg) = parser.next().map_err(err)? {
            match arg {
                Long("json") => json = true,
                Long("cwd") | Short('C') => cwd = Some(parser.value().map_err(err)?.into()),
                Value(word) => words.push(word.string().map_err(err)?),
                _ => return Err(arg.unexpected().to_string()),
            }
        }
        let command = match words.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["list"] => SessionsCommand::List,
            ["tree", session] => SessionsCommand::Tree(session.to_string()),
            ["tree"] => return Err("sessions tree needs a session id or path".into()),
            _ => return Err("usage: reins sessions list|tree <id|path> [--json]".into()),
        };
        Ok(Self { command, json, cwd })
    }
}

pub fn main(args: SessionsArgs) -> ExitCode {
    match run(&args) {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("reins: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &SessionsArgs) -> Result<String, String> {
    let root = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let settings = crate::run::load_settings(&root);
    let workspace = FsWorkspace::new(vec![root]).map_err(|e| e.to_string())?;
    let harness = Harness::new(HarnessOptions {
        settings: LiveSettings::new(settings),
        workspace: Arc::new(workspace),
        provider: None,
        approver: Arc::new(TerminalApprover),
        events: Arc::new(|_| {}),
        date: String::new(),
        persist: true,
    });
    let to_json = |value: serde_json::Result<String>| value.map(|text| text + "\n").map_err(|e| e.to_string());
    match &args.command {
        SessionsCommand::List => {
            let list = harness.list_sessions().map_err(|e| e.to_string())?;
            let json = || Value::Array(list.iter().map(to_proto::session_info).collect());
            if args.json { to_json(serde_json::to_string_pretty(&json())) } else { Ok(render_list(&list)) }
        }
        SessionsCommand::Tree(id_or_path) => {
            let tree = harness.peek_tree(id_or_path).map_err(|e| e.to_string())?;
            let json = || to_proto::session_tree(&tree);
            if args.json { to_json(serde_json::to_string_pretty(&json())) } else { Ok(render_tree(&tree)) }
        }
    }
}

fn render_list(list: &[SessionInfo]) -> String {
    if list.is_empty() {
        return "no sessions in this workspace yet\n".into();
    }
    let mut out = String::from("ID        MODIFIED (UTC)     ENTRIES     TOKENS      COST  NAME / FIRST MESSAGE\n");
    for session in list {
        let modified = humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(session.modified),
        )
        .to_string();
        let modified = modified.get(..16).unwrap_or(&modified).replace('T', " ");
        let title = session.name.clone().or_else(|| session.first_message.clone()).unwrap_or_default();
        let id: String = session.id.chars().take(8).collect();
        let usage = &session.usage;
        let tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
        let cost = format!("${:.4}", usage.cost.total);
        out.push_str(&format!(
            "{id:<8}  {modified:<17}  {:>7}  {tokens:>9}  {cost:>8}  {title}\n",
            session.entry_count
        ));
    }
    out
}

/// The tree with children indented under their parent; `*` marks the leaf.
fn render_tree(tree: &SessionTreeView) -> String {
    let mut out = match &tree.name {
        Some(name) => format!("{} ({name})\n", tree.session_id),
        None => format!("{}\n", tree.session_id),
    };
    let roots: Vec<&reins_harness::TreeNode> = tree
        .nodes
        .iter()
        .filter(|node| node.parent_id.as_ref().is_none_or(|parent| !tree.nodes.iter().any(|n| &n.id == parent)))
        .collect();
    let mut stack: Vec<(&reins_harness::TreeNode, usize)> = roots.into_iter().rev().map(|node| (node, 0)).collect();
    while let Some((node, depth)) = stack.pop() {
        let marker = if tree.leaf.as_deref() == Some(node.id.as_str()) { "*" } else { " " };
        let what = node.role.as_deref().unwrap_or(&node.kind);
        let label = node.label.as_deref().map(|label| format!(" [{label}]")).unwrap_or_default();
        out.push_str(&format!("{marker} {}{} {what}: {}{label}\n", "  ".repeat(depth), node.id, node.preview));
        let children: Vec<_> =
            tree.nodes.iter().filter(|child| child.parent_id.as_deref() == Some(node.id.as_str())).collect();
        // A chain (one child) stays at the same depth, so long conversations do not drift right.
        let child_depth = if children.len() > 1 { depth + 1 } else { depth };
        stack.extend(children.into_iter().rev().map(|child| (child, child_depth)));
    }
    out
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use reins_harness::TreeNode;

    use super::*;

    fn node(id: &str, parent: Option<&str>, role: &str, preview: &str) -> TreeNode {
        TreeNode {
            id: id.into(),
            parent_id: parent.map(str::to_string),
            kind: "message".into(),
            role: Some(role.into()),
            preview: preview.into(),
            label: None,
            timestamp: String::new(),
        }
    }

    #[test]
    fn tree_indents_branches_and_marks_the_leaf() {
        let mut nodes = vec![
            node("a1", None, "user", "hello"),
            node("b2", Some("a1"), "assistant", "hi"),
            node("c3", Some("b2"), "user", "first try"),
            node("d4", Some("b2"), "user", "second try"),
            node("e5", Some("d4"), "assistant", "ok"),
        ];
        nodes[2].label = Some("old".into());
        let tree =
            SessionTreeView { session_id: "s1".into(), name: Some("demo".into()), leaf: Some("e5".into()), nodes };
        expect![[r#"
            s1 (demo)
              a1 user: hello
              b2 assistant: hi
                c3 user: first try [old]
                d4 user: second try
            *   e5 assistant: ok
        "#]]
        .assert_eq(&render_tree(&tree));
    }

    #[test]
    fn list_shows_tokens_and_cost() {
        let mut usage = reins_ai::Usage { input: 1200, output: 80, cache_read: 300, ..Default::default() };
        usage.cost.total = 0.01234;
        let session = SessionInfo {
            id: "0123456789abcdef".into(),
            path: "/s.jsonl".into(),
            name: None,
            first_message: Some("hello".into()),
            entry_count: 4,
            modified: 0,
            parent_session: None,
            usage,
        };
        expect![[r#"
            ID        MODIFIED (UTC)     ENTRIES     TOKENS      COST  NAME / FIRST MESSAGE
            01234567  1970-01-01 00:00         4       1580   $0.0123  hello
        "#]]
        .assert_eq(&render_list(&[session]));
    }

    #[test]
    fn parses_subcommands() {
        let parse = |args: &[&str]| SessionsArgs::parse(args.iter().map(OsString::from));
        assert_eq!(parse(&["list", "--json"]).unwrap().command, SessionsCommand::List);
        assert_eq!(parse(&["tree", "ab"]).unwrap().command, SessionsCommand::Tree("ab".into()));
        assert!(parse(&["tree"]).is_err());
        assert!(parse(&["frob"]).is_err());
    }
}
