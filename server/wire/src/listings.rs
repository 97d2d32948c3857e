//! The JSON of what reins lists and reports outside a run — models, sessions and their trees and
//! usage, checkouts, MCP servers — as the language server answers `reins.*` commands and the CLI
//! prints with `--json`: one function per shape, so the two cannot drift apart.

use reins_ai::{Model, Prices};
use reins_harness::{
    CommandRan, Compacted, FileOutcome, ListedModel, SentRequest, SessionInfo, SessionPage, SessionTreeView,
    SessionUsage, Settings, Status, ToolsSet, TreeNode, UNTRACKED_WARNING, Written,
};
use reins_mcp::{ServerState, ServerStatus};
use serde::Serialize;
use serde_json::{Value, json};

use crate::events::{to_value, usage};

/// The answer of `reins.model.list`: the models [`Settings::list_models`] lists, each addressed
/// `provider/id`, with whether a key is there for it — never the key — and which one is the
/// default of new sessions.
pub fn model_list(settings: &Settings) -> Value {
    let models: Vec<Value> = settings.list_models().iter().map(listed_model).collect();
    json!({ "models": models })
}

fn listed_model(model: &ListedModel) -> Value {
    let entry = &model.entry;
    json!({
        "id": model.address(),
        "provider": entry.provider,
        "name": entry.id,
        "contextWindow": entry.context_window,
        "maxOutput": entry.max_output,
        "reasoning": entry.reasoning,
        "prices": prices(&entry.prices),
        "keyAvailable": model.key.available(),
        "current": model.current,
    })
}

/// A model as reins resolved it (`reins.model.set`).
pub fn model(model: &Model) -> Value {
    let mut value = json!({
        "id": model.id,
        "provider": model.provider,
        "baseUrl": model.base_url,
        "contextWindow": model.context_window,
        "maxOutput": model.max_output,
        "prices": prices(&model.prices),
        "reasoning": model.reasoning,
    });
    if !model.compat.is_plain() {
        value["compat"] = json!({
            "developerRole": model.compat.developer_role,
            "maxCompletionTokens": model.compat.max_completion_tokens,
        });
    }
    value
}

/// $ per million tokens.
pub fn prices(prices: &Prices) -> Value {
    json!({
        "input": prices.input,
        "output": prices.output,
        "cacheRead": prices.cache_read,
        "cacheWrite": prices.cache_write,
    })
}

/// The answer of `reins.session.list`: `nextCursor` only when a `limit` left sessions out.
pub fn session_page(page: &SessionPage) -> Value {
    let sessions: Vec<Value> = page.sessions.iter().map(session_info).collect();
    match &page.next_cursor {
        Some(cursor) => json!({ "sessions": sessions, "nextCursor": cursor }),
        None => json!({ "sessions": sessions }),
    }
}

/// One session of `reins.session.list` (and `reins sessions list --json`).
pub fn session_info(session: &SessionInfo) -> Value {
    json!({
        "id": session.id,
        "path": session.path,
        "name": session.name,
        "firstMessage": session.first_message,
        "entryCount": session.entry_count,
        "modified": session.modified,
        "parentSession": session.parent_session,
        "usage": usage(&session.usage),
    })
}

/// The answer of `reins.session.setTools`: the set as it is recorded, and the built-in tools it
/// offers the session's model.
pub fn tools_set(set: &ToolsSet) -> Value {
    json!({ "tools": set.tools, "offered": set.offered })
}

/// The answer of `reins.session.lastRequest`: where the session's last model call went and its
/// body; both `null` before its first call.
pub fn sent_request(request: Option<&SentRequest>) -> Value {
    match request {
        Some(request) => json!({ "url": request.url, "body": request.body }),
        None => json!({ "url": null, "body": null }),
    }
}

/// The answer of `reins.session.usage`: the model calls of the current branch, then the total of
/// every call the session records.
pub fn session_usage(usage: &SessionUsage) -> Value {
    let calls: Vec<Value> = usage
        .calls
        .iter()
        .map(|call| {
            json!({
                "entryId": call.entry_id,
                "timestamp": call.timestamp,
                "kind": call.kind,
                "provider": call.provider,
                "model": call.model,
                "usage": self::usage(&call.usage),
            })
        })
        .collect();
    json!({ "calls": calls, "total": self::usage(&usage.total) })
}

/// The answer of `reins.session.compact`.
pub fn compacted(compacted: &Compacted) -> Value {
    json!({ "tokensBefore": compacted.tokens_before, "tokensAfter": compacted.tokens_after })
}

/// The answer of `reins.session.tree` (and `reins sessions tree --json`).
pub fn session_tree(tree: &SessionTreeView) -> Value {
    to_value(&SessionTreeJson(tree))
}

/// [`session_tree`] as serde writes it, a node at a time: the JSON of a million-entry tree is
/// never held as values (`reins sessions tree --json` writes it straight out).
pub struct SessionTreeJson<'a>(pub &'a SessionTreeView);

impl Serialize for SessionTreeJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Nodes<'a>(&'a [TreeNode]);
        impl Serialize for Nodes<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.iter().map(tree_node))
            }
        }
        let tree = self.0;
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("sessionId", &tree.session_id)?;
        map.serialize_entry("name", &tree.name)?;
        map.serialize_entry("leaf", &tree.leaf)?;
        map.serialize_entry("nodes", &Nodes(&tree.nodes))?;
        map.end()
    }
}

/// One file of a checkout, as `reins sessions checkout --json` prints it: what is done to it
/// (`restore`, `merge`, `create`, `delete`, `keep`, `conflict`, `refused`), how many recorded
/// changes it took, how writing it went, and the conflict that kept it as it is.
pub fn checkout_file(file: &FileOutcome, written: Option<&Written>) -> Value {
    let conflict = match &file.status {
        Status::Conflict(info) => json!({
            "entryId": info.entry_id,
            "lines": info.lines.as_ref().map(|lines| json!({"start": lines.start, "end": lines.end})),
            "reason": info.reason,
            "change": info.change,
        }),
        Status::Refused(reason) => json!({"entryId": null, "lines": null, "reason": reason, "change": null}),
        _ => Value::Null,
    };
    json!({
        "path": file.shown,
        "action": file.action(),
        "changes": file.changes,
        "written": written.map(written_name),
        "conflict": conflict,
    })
}

/// How writing a file of a checkout went, in a word (`done`, `already_done`, `changed_meanwhile`,
/// `failed: …`).
pub fn written_name(written: &Written) -> String {
    match written {
        Written::Done => "done".to_string(),
        Written::AlreadyDone => "already_done".to_string(),
        Written::ChangedMeanwhile => "changed_meanwhile".to_string(),
        Written::Failed(reason) => format!("failed: {reason}"),
    }
}

/// Commands on the way of a checkout, each with the warning that their effects on files were
/// not tracked.
pub fn checkout_commands(commands: &[CommandRan]) -> Value {
    let commands: Vec<Value> = commands
        .iter()
        .map(|command| {
            json!({
                "entryId": command.entry_id,
                "tool": command.tool,
                "command": command.command,
                "warning": UNTRACKED_WARNING,
            })
        })
        .collect();
    Value::Array(commands)
}

/// One node of `reins.session.tree`, written straight from the view (no `Value` per node: a
/// tree may have a million).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TreeNodeJson<'a> {
    id: &'a str,
    parent_id: Option<&'a str>,
    kind: &'a str,
    role: Option<&'a str>,
    preview: &'a str,
    label: Option<&'a str>,
    timestamp: &'a str,
}

fn tree_node(node: &TreeNode) -> TreeNodeJson<'_> {
    TreeNodeJson {
        id: &node.id,
        parent_id: node.parent_id.as_deref(),
        kind: node.kind,
        role: node.role.as_deref(),
        preview: &node.preview,
        label: node.label.as_deref(),
        timestamp: &node.timestamp,
    }
}

/// The result of `reins.mcp.list` (and of `reins mcp list --json`): each server, where it was
/// configured, how it is reached, its state, the protocol version agreed on, and its tools.
pub fn mcp_servers(statuses: &[ServerStatus]) -> Value {
    let servers: Vec<Value> = statuses
        .iter()
        .map(|status| {
            let (state, reason) = match &status.state {
                ServerState::Idle => ("idle", None),
                ServerState::Starting => ("starting", None),
                ServerState::Ready => ("ready", None),
                ServerState::Exited(reason) => ("exited", Some(reason)),
                ServerState::Failed(reason) => ("failed", Some(reason)),
                ServerState::NeedsLogin(reason) => ("needs_login", Some(reason)),
                ServerState::Stopped => ("stopped", None),
            };
            let tools: Vec<Value> = status
                .tools
                .iter()
                .map(|tool| json!({"name": tool.name, "tool": tool.tool, "description": tool.description}))
                .collect();
            json!({
                "name": status.name,
                "origin": status.origin,
                "transport": status.transport,
                "state": state,
                "reason": reason,
                "loggedIn": status.logged_in,
                "protocol": status.protocol,
                "tools": tools,
            })
        })
        .collect();
    json!({ "servers": servers })
}
