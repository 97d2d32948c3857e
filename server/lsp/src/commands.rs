//! The `reins.*` commands of `workspace/executeCommand`: each takes one object argument, parsed
//! here into a typed [`Command`] (or a clear `invalid_argument` error naming the field).

use serde::Deserialize;
use serde_json::Value;
use tower_lsp_server::jsonrpc::Error;
use tower_lsp_server::ls_types::{Diagnostic, Range};

use crate::{from_proto, to_proto};

/// Every command the server offers, as listed in `executeCommandProvider`.
pub const COMMANDS: &[&str] = &[
    "reins.chat.send",
    "reins.chat.steer",
    "reins.chat.followUp",
    "reins.chat.cancel",
    "reins.ask",
    "reins.session.new",
    "reins.session.list",
    "reins.session.open",
    "reins.session.messages",
    "reins.session.tree",
    "reins.session.fork",
    "reins.session.navigate",
    "reins.session.label",
    "reins.session.rename",
    "reins.session.compact",
    "reins.session.setThinking",
    "reins.session.setTools",
    "reins.session.usage",
    "reins.session.lastRequest",
    "reins.model.list",
    "reins.model.set",
    "reins.edit.accept",
    "reins.edit.reject",
    "reins.edit.comment",
    "reins.edit.list",
    "reins.mcp.list",
    "reins.command.list",
    "reins.worktree.list",
    "reins.worktree.review",
    "reins.worktree.discard",
];

#[derive(Debug, PartialEq)]
pub enum Command {
    ChatSend(ChatSend),
    ChatSteer(SessionText),
    ChatFollowUp(SessionText),
    ChatCancel(SessionRef),
    Ask(Ask),
    SessionNew(SessionNew),
    SessionList(SessionList),
    SessionOpen(SessionRef),
    SessionMessages(SessionRef),
    SessionTree(SessionRef),
    SessionFork(Fork),
    SessionNavigate(Navigate),
    SessionLabel(Label),
    SessionRename(Rename),
    SessionCompact(SessionRef),
    SessionSetThinking(SetThinking),
    SessionSetTools(SetTools),
    SessionUsage(SessionRef),
    SessionLastRequest(SessionRef),
    ModelList,
    ModelSet(ModelSet),
    EditAccept(EditAccept),
    EditReject(EditReject),
    EditComment(EditComment),
    EditList(EditList),
    McpList(McpList),
    SlashCommands,
    WorktreeList,
    WorktreeReview(WorktreeRef),
    WorktreeDiscard(WorktreeRef),
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatSend {
    pub text: String,
    /// Absent: a new session is started for the message.
    pub session_id: Option<String>,
    /// Pieces of documents quoted after the text.
    #[serde(default)]
    pub context: Vec<ContextRef>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextRef {
    pub uri: String,
    /// Absent: the whole document.
    pub range: Option<Range>,
    /// Diagnostics the client quotes with the piece (the chat's `#diagnostics`).
    #[serde(default)]
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionText {
    pub session_id: String,
    pub text: String,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionRef {
    pub session_id: String,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ask {
    pub uri: String,
    pub range: Range,
    /// Absent: [`crate::ask::DEFAULT_QUESTION`].
    pub question: Option<String>,
    /// Diagnostics the client knows of in the range (the code action's context carries them).
    #[serde(default)]
    pub diagnostics: Vec<Diagnostic>,
    /// Absent: a new session.
    pub session_id: Option<String>,
}

/// A page of the listing: at most `limit` sessions after `cursor` (an earlier page's `nextCursor`).
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionList {
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionNew {
    pub name: Option<String>,
    /// Start the session on a git worktree of its own (a worktree agent).
    #[serde(default)]
    pub worktree: bool,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreeRef {
    /// The worktree agent's id (`reins.worktree.list`).
    pub id: String,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Navigate {
    pub session_id: String,
    pub entry_id: String,
    /// Summarize the branch being left, so the new position keeps what it learned.
    #[serde(default)]
    pub summarize: bool,
    /// Bring the files the agent changed along, as pending edits to review.
    #[serde(default)]
    pub files: bool,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fork {
    pub session_id: String,
    pub entry_id: String,
    /// Bring the files the agent changed along, as pending edits of the new session.
    #[serde(default)]
    pub files: bool,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Label {
    pub session_id: String,
    pub entry_id: String,
    /// `null` (or empty) clears the label.
    pub label: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rename {
    pub session_id: String,
    pub name: String,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetTools {
    pub session_id: String,
    /// Tool names and globs (`read`, `mcp__docs__*`), or `read-only`.
    pub tools: Vec<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetThinking {
    pub session_id: String,
    /// `off`, `minimal`, `low`, `medium`, `high` or `xhigh`.
    pub level: String,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelSet {
    /// Absent: the default model of sessions started from now on.
    pub session_id: Option<String>,
    pub model: String,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditAccept {
    /// The pending edit's id.
    pub id: String,
    /// Only these hunks (by index); absent: all of them.
    pub hunks: Option<Vec<usize>>,
    /// Also let this tool run without asking for the rest of the session.
    #[serde(default)]
    pub allow_for_session: bool,
    /// Why the hunks not in `hunks` were not accepted; told to the model.
    pub reason: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditReject {
    pub id: String,
    /// Told to the model.
    pub reason: Option<String>,
}

/// A comment on one hunk of a pending edit. The code action "Comment on this change" carries no
/// `comment`: the client asks the user for it (as for `reins.ask`'s question).
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditComment {
    pub id: String,
    /// The hunk's index (from 0, as `reins.edit.accept`'s `hunks`).
    pub hunk: usize,
    /// Told to the model with the decision on the edit; blank takes the hunk's comment back.
    pub comment: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditList {
    /// Absent: the pending edits of every session.
    pub session_id: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpList {
    /// Absent: the configured servers; with a session, also the servers of its own.
    pub session_id: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArguments {}

impl Command {
    pub fn parse(command: &str, arguments: Vec<Value>) -> Result<Self, Error> {
        fn arg<T: serde::de::DeserializeOwned>(command: &str, arguments: Vec<Value>) -> Result<T, Error> {
            from_proto::argument(command, arguments)
        }
        Ok(match command {
            "reins.chat.send" => Command::ChatSend(arg(command, arguments)?),
            "reins.chat.steer" => Command::ChatSteer(arg(command, arguments)?),
            "reins.chat.followUp" => Command::ChatFollowUp(arg(command, arguments)?),
            "reins.chat.cancel" => Command::ChatCancel(arg(command, arguments)?),
            "reins.ask" => Command::Ask(arg(command, arguments)?),
            "reins.session.new" => Command::SessionNew(arg(command, arguments)?),
            "reins.session.list" => Command::SessionList(arg(command, arguments)?),
            "reins.session.open" => Command::SessionOpen(arg(command, arguments)?),
            "reins.session.messages" => Command::SessionMessages(arg(command, arguments)?),
            "reins.session.tree" => Command::SessionTree(arg(command, arguments)?),
            "reins.session.fork" => Command::SessionFork(arg(command, arguments)?),
            "reins.session.navigate" => Command::SessionNavigate(arg(command, arguments)?),
            "reins.session.label" => Command::SessionLabel(arg(command, arguments)?),
            "reins.session.rename" => Command::SessionRename(arg(command, arguments)?),
            "reins.session.compact" => Command::SessionCompact(arg(command, arguments)?),
            "reins.session.setThinking" => Command::SessionSetThinking(arg(command, arguments)?),
            "reins.session.setTools" => Command::SessionSetTools(arg(command, arguments)?),
            "reins.session.usage" => Command::SessionUsage(arg(command, arguments)?),
            "reins.session.lastRequest" => Command::SessionLastRequest(arg(command, arguments)?),
            "reins.model.list" => {
                let NoArguments {} = arg(command, arguments)?;
                Command::ModelList
            }
            "reins.model.set" => Command::ModelSet(arg(command, arguments)?),
            "reins.edit.accept" => Command::EditAccept(arg(command, arguments)?),
            "reins.edit.reject" => Command::EditReject(arg(command, arguments)?),
            "reins.edit.comment" => Command::EditComment(arg(command, arguments)?),
            "reins.edit.list" => Command::EditList(arg(command, arguments)?),
            "reins.mcp.list" => Command::McpList(arg(command, arguments)?),
            "reins.command.list" => {
                let NoArguments {} = arg(command, arguments)?;
                Command::SlashCommands
            }
            "reins.worktree.list" => {
                let NoArguments {} = arg(command, arguments)?;
                Command::WorktreeList
            }
            "reins.worktree.review" => Command::WorktreeReview(arg(command, arguments)?),
            "reins.worktree.discard" => Command::WorktreeDiscard(arg(command, arguments)?),
            _ => {
                return Err(to_proto::invalid_argument(format!(
                    "unknown command {command:?}; the reins commands are: {}",
                    COMMANDS.join(", ")
                )));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Parses a command and shows it, or the error's code and message.
    fn check(command: &str, arguments: Value) -> String {
        let arguments = match arguments {
            Value::Array(items) => items,
            other => vec![other],
        };
        match Command::parse(command, arguments) {
            Ok(command) => format!("{command:?}"),
            Err(err) => format!("error {} {}: {}", err.code, err.data.unwrap()["code"], err.message),
        }
    }

    #[test]
    fn commands_parse_into_typed_values() {
        assert_eq!(
            check("reins.chat.send", json!({"text": "hi", "sessionId": "s1"})),
            r#"ChatSend(ChatSend { text: "hi", session_id: Some("s1"), context: [] })"#
        );
        assert_eq!(check("reins.model.list", json!([])), "ModelList");
        assert_eq!(check("reins.mcp.list", json!([])), "McpList(McpList { session_id: None })");
        assert_eq!(check("reins.session.new", json!([])), "SessionNew(SessionNew { name: None, worktree: false })");
        assert_eq!(
            check("reins.edit.accept", json!({"id": "e1", "hunks": [0, 2], "allowForSession": true})),
            r#"EditAccept(EditAccept { id: "e1", hunks: Some([0, 2]), allow_for_session: true, reason: None })"#
        );
        assert_eq!(
            check("reins.edit.accept", json!({"id": "e1", "hunks": [1], "reason": "keep the old name"})),
            r#"EditAccept(EditAccept { id: "e1", hunks: Some([1]), allow_for_session: false, reason: Some("keep the old name") })"#
        );
        assert_eq!(check("reins.edit.list", json!([])), "EditList(EditList { session_id: None })");
        assert_eq!(
            check("reins.session.setTools", json!({"sessionId": "s1", "tools": ["read", "mcp__*"]})),
            r#"SessionSetTools(SetTools { session_id: "s1", tools: ["read", "mcp__*"] })"#
        );
        assert_eq!(
            check("reins.edit.reject", json!({"id": "e1", "hunks": [0]})),
            r#"error -32602 "invalid_argument": reins.edit.reject: hunks: unknown field `hunks`, expected `id` or `reason`"#
        );
    }

    #[test]
    fn wrong_shapes_are_invalid_arguments_naming_the_field() {
        assert_eq!(
            check("reins.chat.send", json!({"text": 5})),
            r#"error -32602 "invalid_argument": reins.chat.send: text: invalid type: integer `5`, expected a string"#
        );
        assert_eq!(
            check("reins.chat.steer", json!({"sessionId": "s1"})),
            r#"error -32602 "invalid_argument": reins.chat.steer: missing field `text`"#
        );
        assert_eq!(
            check("reins.chat.cancel", json!(["s1"])),
            r#"error -32602 "invalid_argument": reins.chat.cancel takes one object argument, not "s1""#
        );
        assert_eq!(
            check("reins.chat.cancel", json!([{}, {}])),
            r#"error -32602 "invalid_argument": reins.chat.cancel takes one object argument, but 2 arguments were given"#
        );
        assert!(
            check("reins.bogus", json!({}))
                .starts_with(r#"error -32602 "invalid_argument": unknown command "reins.bogus""#)
        );
        assert!(check("reins.chat.send", json!({"text": "x", "sesionId": "s"})).contains("unknown field `sesionId`"));
    }
}
