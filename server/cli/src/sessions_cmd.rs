//! `reins sessions list|tree`: the workspace's sessions and a session's tree, for people or as
//! JSON. (`reins sessions checkout` is in `checkout_cmd`.) What a session file says (titles,
//! ids, previews, labels) is shown through `reins_ai::visible_line`: a crafted file cannot steer
//! the terminal.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use reins_ai::visible_line;
use reins_harness::{Harness, HarnessOptions, LiveSettings, SessionInfo, SessionTreeView, Warn};
use reins_tools::FsWorkspace;

use serde_json::Value;

use crate::checkout_cmd::CheckoutRequest;
use crate::cli;
use crate::terminal_review::TerminalApprover;
use reins_wire as to_proto;

/// The arguments of the subcommand (see `crate::cli::Command`).
#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub command: SessionsCommand,
    /// Print JSON instead of text: for list and tree the shapes of reins.session.list and
    /// reins.session.tree, for checkout a report of every file, conflict and untracked command
    #[arg(long, global = true)]
    pub json: bool,
    /// The workspace root (default: the project of the current directory, as for `reins run`)
    #[arg(long, short = 'C', value_name = "DIR", value_parser = cli::directory, global = true)]
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, PartialEq, clap::Subcommand)]
pub enum SessionsCommand {
    /// The workspace's sessions, newest first, with tokens and cost
    List,
    /// A session's tree; * marks the current position
    Tree {
        /// Id, id prefix or file path (default: the workspace's most recent session)
        #[arg(value_parser = cli::non_empty)]
        session: Option<String>,
    },
    /// A session's branch as a standalone page on stdout: messages, tool calls folded, diffs
    /// coloured, usage; nothing in the HTML loads from the network
    Export {
        /// The entry the branch ends at (default: the session's current position)
        #[arg(value_parser = cli::non_empty)]
        entry: Option<String>,
        /// Id, id prefix or file path (default: the workspace's most recent session)
        #[arg(long, short = 's', value_name = "ID", value_parser = cli::non_empty)]
        session: Option<String>,
        /// html or md
        #[arg(long, default_value = "html", value_parser = export_format)]
        format: reins_harness::ExportFormat,
    },
    /// Move a session to an earlier (or another) entry, and the files the agent changed with it
    ///
    /// The changes recorded after ENTRY are undone and those on its path redone, each merged
    /// with the files as they are, so your own edits stay. A file where your edits and the
    /// agent's change overlap is left as it is and named. Changes made by commands (bash) are
    /// not tracked: a warning names them. At a terminal it shows each file and asks first. At one
    /// of your messages it moves to just before it and prints the message, to send again.
    /// An entry stands for the state right after it: checking out an edit's own entry (its tool
    /// result) keeps that edit; to undo it, check out the entry before it. Neovim's R in
    /// :ReinsTree moves the same way.
    /// Exit status: 0 when every file came along, 3 when some were left as they are, 1 when
    /// nothing was changed.
    Checkout {
        /// The entry: an id from `reins sessions tree`, an unambiguous start of one, or a label
        #[arg(value_parser = cli::non_empty)]
        entry: String,
        /// Id, id prefix or file path (default: the workspace's most recent session)
        #[arg(long, short = 's', value_name = "ID", value_parser = cli::non_empty)]
        session: Option<String>,
        /// Change the files without asking
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

pub fn main(args: SessionsArgs) -> ExitCode {
    if let SessionsCommand::Checkout { entry, session, yes } = args.command {
        let request = CheckoutRequest { entry, session, yes, json: args.json, cwd: args.cwd };
        return crate::checkout_cmd::main(request);
    }
    // Written as it is made, through a buffer: a tree of a million entries is never one string.
    let mut stdout = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
    match run(&args, &mut stdout) {
        Ok(()) => {
            let _ = stdout.flush();
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("reins: {}", reins_ai::visible(&message));
            ExitCode::FAILURE
        }
    }
}

/// A harness over `cwd` (else the current directory) with no model: what `reins sessions` and
/// `reins sessions checkout` read and move sessions and files with.
pub(crate) fn offline_harness(cwd: Option<&PathBuf>, warn: Warn) -> Result<Arc<Harness>, String> {
    let root = crate::run::workspace_root(cwd).map_err(|e| format!("cannot read the current directory: {e}"))?;
    let settings = crate::run::load_offline_settings(&root);
    let workspace = FsWorkspace::new(vec![root.clone()]).map_err(|e| e.to_string())?;
    Ok(Harness::new(HarnessOptions {
        settings: LiveSettings::new(settings),
        workspace: Arc::new(workspace),
        provider: None,
        approver: Arc::new(TerminalApprover::new(root)),
        diagnostics: None,
        events: Arc::new(|_| {}),
        date: String::new(),
        persist: true,
        warn,
    }))
}

/// Runs the subcommand, writing what it prints to `out`. A failure to write (a closed pipe) ends
/// it quietly: there is no one left to tell.
fn run(args: &SessionsArgs, out: &mut dyn Write) -> Result<(), String> {
    let harness = offline_harness(args.cwd.as_ref(), Arc::new(|_| {}))?;
    // Sessions are kept per workspace: when there is none, the user learns which one was looked in.
    let workspace = crate::run::workspace_root(args.cwd.as_ref()).unwrap_or_default();
    let none = format!("no sessions in this workspace ({}) yet", visible_line(&workspace.display().to_string()));
    match &args.command {
        SessionsCommand::List => {
            let list = harness.list_sessions().map_err(|e| e.to_string())?;
            if list.is_empty() && !args.json {
                let _ = writeln!(out, "{none}");
                return Ok(());
            }
            if args.json {
                let json = Value::Array(list.iter().map(to_proto::session_info).collect());
                let written = serde_json::to_writer_pretty(&mut *out, &json);
                json_written(out, written)
            } else {
                let _ = out.write_all(render_list(&list, terminal_width()).as_bytes());
                Ok(())
            }
        }
        SessionsCommand::Tree { session } => {
            let tree = harness.peek_tree(session.as_deref()).map_err(|e| e.to_string())?;
            if args.json {
                let written = serde_json::to_writer_pretty(&mut *out, &to_proto::SessionTreeJson(&tree));
                json_written(out, written)
            } else {
                let _ = render_tree(&tree, terminal_width(), out);
                Ok(())
            }
        }
        SessionsCommand::Export { entry, session, format } => {
            let id = match session {
                Some(id_or_path) => harness.open_session(id_or_path),
                None => harness
                    .continue_recent()
                    .and_then(|id| id.ok_or(reins_harness::HarnessError::InvalidArgument(none))),
            };
            let id = id.map_err(|e| e.to_string())?;
            let page = harness.export(&id, entry.as_deref(), *format).map_err(|e| e.to_string())?;
            let _ = out.write_all(page.as_bytes());
            Ok(())
        }
        SessionsCommand::Checkout { .. } => Err("checkout is handled by checkout_cmd".into()),
    }
}

/// What writing JSON to the output came to: a closed pipe is no failure (no one is left to tell).
fn json_written(out: &mut dyn Write, written: serde_json::Result<()>) -> Result<(), String> {
    match written.and_then(|()| out.write_all(b"\n").map_err(serde_json::Error::io)) {
        Err(err) if !err.is_io() => Err(err.to_string()),
        _ => Ok(()),
    }
}

/// A `--format` value.
fn export_format(value: &str) -> Result<reins_harness::ExportFormat, String> {
    reins_harness::ExportFormat::parse(value).ok_or_else(|| "expected html or md".to_string())
}

/// The sessions, a line each, cut to `width` when there is one.
fn render_list(list: &[SessionInfo], width: Option<usize>) -> String {
    if list.is_empty() {
        return "no sessions in this workspace yet\n".into();
    }
    let mut out = fit("ID        MODIFIED (UTC)     ENTRIES     TOKENS      COST  NAME / FIRST MESSAGE\n", width);
    for session in list {
        let modified = humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(session.modified),
        )
        .to_string();
        let modified = modified.get(..16).unwrap_or(&modified).replace('T', " ");
        let title = session.name.clone().or_else(|| session.first_message.clone()).unwrap_or_default();
        let title = visible_line(&title);
        let id = visible_line(&session.id);
        let id: String = id.chars().take(8).collect();
        let usage = &session.usage;
        let tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
        let cost = format!("${:.4}", usage.cost.total);
        out.push_str(&fit(
            &format!("{id:<8}  {modified:<17}  {:>7}  {tokens:>9}  {cost:>8}  {title}\n", session.entry_count),
            width,
        ));
    }
    out
}

/// How deep the tree's text indents at most (in branch levels): deeper branches start at this
/// depth, so the text stays about as long as the file however the branches nest.
const MAX_INDENT: usize = 32;

/// The tree as pi's `/tree` draws it: a chain of entries (one child each) runs down at one
/// indent, and where a branch splits, each branch starts with `├─` (`└─` for the last) under the
/// entry it splits from; `*` marks the leaf. With `width`, each line is cut to fit it. Linear in
/// the entries, and each entry is shown once: a crafted file's duplicated id, or an entry named
/// as its own parent, cannot make it loop or repeat. Written to `out` a line at a time.
fn render_tree(tree: &SessionTreeView, width: Option<usize>, out: &mut dyn Write) -> std::io::Result<()> {
    let mut line = match &tree.name {
        Some(name) => format!("{} ({})\n", visible_line(&tree.session_id), visible_line(name)),
        None => format!("{}\n", visible_line(&tree.session_id)),
    };
    cut_to_width(&mut line, width);
    out.write_all(line.as_bytes())?;
    let children = Children::of(tree);
    let mut shown = vec![false; tree.nodes.len()];
    // Whether an id's children were taken (by the first of its entries shown).
    let mut taken = vec![false; tree.nodes.len()];
    let mut kids: Vec<usize> = Vec::new();
    // Each entry with the rails of the branches around it and its own branch's first rail.
    let mut stack: Vec<(usize, String, &str)> =
        children.roots.iter().rev().map(|&index| (index as usize, String::new(), "")).collect();
    // Entries no root leads to (a cycle through duplicated ids) are shown after, as roots.
    let mut unshown = 0..tree.nodes.len();
    while let Some((index, rails, branch)) =
        stack.pop().or_else(|| unshown.find(|&index| !shown[index]).map(|index| (index, String::new(), "")))
    {
        if std::mem::replace(&mut shown[index], true) {
            continue;
        }
        let node = &tree.nodes[index];
        let marker = if tree.leaf.as_deref() == Some(node.id.as_str()) { "*" } else { " " };
        let what = visible_line(node.role.as_deref().unwrap_or(node.kind));
        let (id, preview) = (visible_line(&node.id), visible_line(&node.preview));
        line.clear();
        let _ = write!(line, "{marker} {rails}{branch}{id} {what}: {preview}");
        if let Some(label) = &node.label {
            let _ = write!(line, " [{}]", visible_line(label));
        }
        line.push('\n');
        cut_to_width(&mut line, width);
        out.write_all(line.as_bytes())?;
        // Taken, not borrowed: a second entry of the same id finds its children shown.
        kids.clear();
        let key = children.key[index] as usize;
        if !std::mem::replace(&mut taken[key], true) {
            kids.extend(children.of_key(key).iter().map(|&child| child as usize).filter(|&child| !shown[child]));
        }
        // Under a branch's first entry its rail goes on while later branches follow.
        let mut rails = rails;
        if rails.chars().count() < MAX_INDENT * 3 {
            rails.push_str(match branch {
                "├─ " => "│  ",
                "└─ " => "   ",
                _ => "",
            });
        }
        // A chain (one child) stays at the same indent, so long conversations do not drift right.
        let last = kids.len().saturating_sub(1);
        for (n, &child) in kids.iter().enumerate().rev() {
            let branch = match (last, n == last) {
                (0, _) => "",
                (_, true) => "└─ ",
                (_, false) => "├─ ",
            };
            let rails = if n == 0 { std::mem::take(&mut rails) } else { rails.clone() };
            stack.push((child, rails, branch));
        }
    }
    Ok(())
}

/// Who is whose child in a tree view, by position: the children of every entry of one id are
/// filed under that id's first entry (its key), in file order, in one array. Linear in the
/// entries, and a few integers each where a map of lists would cost an allocation per parent.
struct Children {
    /// Per entry: the first entry with its id.
    key: Vec<u32>,
    /// `kids[starts[key]..starts[key + 1]]` are the children filed under `key`.
    starts: Vec<u32>,
    kids: Vec<u32>,
    /// Entries whose parent is not in the view, in file order.
    roots: Vec<u32>,
}

impl Children {
    fn of(tree: &SessionTreeView) -> Children {
        const NO_PARENT: u32 = u32::MAX;
        let count = tree.nodes.len();
        let mut first: HashMap<&str, u32> = HashMap::with_capacity(count);
        let key: Vec<u32> =
            tree.nodes.iter().zip(0..).map(|(node, index)| *first.entry(node.id.as_str()).or_insert(index)).collect();
        let parents: Vec<u32> = tree
            .nodes
            .iter()
            .map(|node| node.parent_id.as_deref().and_then(|parent| first.get(parent).copied()).unwrap_or(NO_PARENT))
            .collect();
        drop(first);
        let mut starts = vec![0u32; count + 1];
        for &parent in parents.iter().filter(|&&parent| parent != NO_PARENT) {
            starts[parent as usize + 1] += 1;
        }
        for at in 0..count {
            starts[at + 1] += starts[at];
        }
        let mut next = starts.clone();
        let mut kids = vec![0u32; starts[count] as usize];
        let mut roots = Vec::new();
        for (index, &parent) in (0..).zip(&parents) {
            if parent == NO_PARENT {
                roots.push(index);
            } else {
                kids[next[parent as usize] as usize] = index;
                next[parent as usize] += 1;
            }
        }
        Children { key, starts, kids, roots }
    }

    fn of_key(&self, key: usize) -> &[u32] {
        &self.kids[self.starts[key] as usize..self.starts[key + 1] as usize]
    }
}

/// Cuts `line` (ending in a new line) to `width` characters with `…`, when there is a width.
fn cut_to_width(line: &mut String, width: Option<usize>) {
    let Some(width) = width.filter(|&width| width > 1) else { return };
    let text = line.trim_end_matches('\n');
    if let Some((past, _)) = text.char_indices().nth(width) {
        let keep = text.char_indices().nth(width - 1).map_or(past, |(at, _)| at);
        line.truncate(keep);
        line.push_str("…\n");
    }
}

/// `line` (ending in a new line) cut to `width` characters with `…`, when there is a width.
fn fit(line: &str, width: Option<usize>) -> String {
    let mut line = line.to_string();
    cut_to_width(&mut line, width);
    line
}

/// The terminal's width when stdout is one, for lines that should not wrap.
fn terminal_width() -> Option<usize> {
    terminal_size::terminal_size_of(std::io::stdout()).map(|(width, _)| usize::from(width.0))
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use reins_harness::TreeNode;

    use super::*;

    fn rendered(tree: &SessionTreeView, width: Option<usize>) -> String {
        let mut out = Vec::new();
        render_tree(tree, width, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn node(id: &str, parent: Option<&str>, role: &str, preview: &str) -> TreeNode {
        TreeNode {
            id: id.into(),
            parent_id: parent.map(str::to_string),
            kind: "message",
            role: Some(role.to_string().into()),
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
              ├─ c3 user: first try [old]
              └─ d4 user: second try
            *    e5 assistant: ok
        "#]]
        .assert_eq(&rendered(&tree, None));
    }

    #[test]
    fn branch_points_are_drawn_and_lines_fit_the_width() {
        let nodes = vec![
            node("a1", None, "user", "hello"),
            node("b2", Some("a1"), "assistant", "hi"),
            node("c3", Some("b2"), "user", "one"),
            node("d4", Some("b2"), "user", "two"),
            node("e5", Some("c3"), "assistant", "e"),
            node("f6", Some("e5"), "user", "f"),
            node("g7", Some("e5"), "user", "a long message that goes on past the width"),
            node("h8", Some("d4"), "assistant", "h"),
        ];
        let tree = SessionTreeView { session_id: "s1".into(), name: None, leaf: Some("g7".into()), nodes };
        expect![[r#"
            s1
              a1 user: hello
              b2 assistant: hi
              ├─ c3 user: one
              │  e5 assistant: e
              │  ├─ f6 user: f
            * │  └─ g7 user: a long message that goes on past the width
              └─ d4 user: two
                 h8 assistant: h
        "#]]
        .assert_eq(&rendered(&tree, None));
        expect![[r#"
            s1
              a1 user: hello
              b2 assistant: hi
              ├─ c3 user: one
              │  e5 assistant: e
              │  ├─ f6 user: f
            * │  └─ g7 user: a long…
              └─ d4 user: two
                 h8 assistant: h
        "#]]
        .assert_eq(&rendered(&tree, Some(24)));
    }

    #[test]
    fn each_entry_shows_once_whatever_its_ids_say() {
        let nodes = vec![
            node("a1", None, "user", "hello"),
            node("b2", Some("a1"), "assistant", "hi"),
            // A duplicated id naming itself as parent, and a cycle no root leads to.
            node("a1", Some("a1"), "user", "again"),
            node("c3", Some("d4"), "user", "c"),
            node("d4", Some("c3"), "user", "d"),
        ];
        let tree = SessionTreeView { session_id: "s1".into(), name: None, leaf: Some("b2".into()), nodes };
        expect![[r#"
            s1
              a1 user: hello
            * ├─ b2 assistant: hi
              └─ a1 user: again
              c3 user: c
              d4 user: d
        "#]]
        .assert_eq(&rendered(&tree, None));
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
        .assert_eq(&render_list(&[session], None));
    }

    #[test]
    fn parses_subcommands() {
        use clap::Parser;

        use crate::cli::{Cli, Command};
        let parse = |args: &[&str]| {
            let args = ["reins", "sessions"].into_iter().chain(args.iter().copied());
            match Cli::try_parse_from(args).map(|cli| cli.command) {
                Ok(Command::Sessions(args)) => Ok((args.command, args.json)),
                Ok(other) => panic!("not sessions: {other:?}"),
                Err(error) => Err(error.kind()),
            }
        };
        assert_eq!(parse(&["list", "--json"]).unwrap(), (SessionsCommand::List, true));
        assert_eq!(parse(&["--json", "list"]).unwrap(), (SessionsCommand::List, true));
        assert_eq!(parse(&["tree", "ab"]).unwrap().0, SessionsCommand::Tree { session: Some("ab".into()) });
        assert_eq!(parse(&["tree"]).unwrap().0, SessionsCommand::Tree { session: None });
        assert!(parse(&["frob"]).is_err());
    }

    #[test]
    fn the_json_flag_says_what_each_subcommand_prints() {
        use clap::CommandFactory;

        let mut cli = crate::cli::Cli::command();
        cli.build();
        let checkout = cli.find_subcommand_mut("sessions").unwrap().find_subcommand_mut("checkout").unwrap();
        let help = checkout.render_long_help().to_string();
        assert!(help.contains("for checkout a report of every file, conflict and untracked command"), "{help}");
    }
}
