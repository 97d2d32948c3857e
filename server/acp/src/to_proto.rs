//! Every ACP value reins sends, built from the harness's: the schema types of the SDK are the wire
//! shapes, and each is made by one function here — a tool call from its tool's look, its
//! result as content and diffs, the replay of a conversation, session listings, stop reasons,
//! usage, and the errors.

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionId,
    SessionInfo, SessionNotification, SessionUpdate, StopReason, TextContent, ToolCall, ToolCallContent, ToolCallId,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use agent_client_protocol::{Error, ErrorCode, UntypedMessage};
use reins_agent::{FileChange, Todo, TodoStatus, ToolKind as LookKind, ToolLocation, ToolLook, TurnEndReason};
use reins_ai::{Content, Message, Model, StopReason as ModelStop, ToolResultMessage, Usage};
use reins_harness::{FileChangeRecord, HarnessError};
use serde_json::{Value, json};

/// What a replay shows for a turn cancelled before the model said anything.
const CANCELLED: &str = "(cancelled)";
/// What a replay shows between two user messages with no answer recorded between them.
const NO_ANSWER: &str = "(no answer)";
/// Longest title of a notice (its whole text is the content).
const NOTICE_TITLE_CHARS: usize = 120;
/// Longest piece of the client's input an error quotes back (a 5 MB `cwd` is not sent back whole).
const QUOTED_BYTES: usize = 256;
/// Longest error message, whatever it quotes (a harness error naming a huge argument).
const ERROR_MESSAGE_BYTES: usize = 4 * 1024;

/// A `session/update` notification.
pub fn notification(session_id: &str, update: SessionUpdate) -> SessionNotification {
    SessionNotification::new(SessionId::new(session_id), update)
}

/// A `session/update` notification as it goes on the wire: a `tool_call` always says its
/// status, `pending` included, which the schema's types leave out as the default (avante.nvim
/// shows its Allow/Reject buttons only for a call that says `pending`).
pub fn wire_notification(session_id: &str, update: SessionUpdate) -> Result<UntypedMessage, Error> {
    let mut params = serde_json::to_value(notification(session_id, update))?;
    if let Some(update) = params.get_mut("update").and_then(Value::as_object_mut)
        && update.get("sessionUpdate").and_then(Value::as_str) == Some("tool_call")
        && !update.contains_key("status")
    {
        update.insert("status".to_string(), json!("pending"));
    }
    UntypedMessage::new("session/update", params)
}

pub fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

pub fn agent_text(delta: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(text(delta)))
}

/// `available_commands_update`: the slash commands, each with its arguments' hint.
pub fn available_commands(commands: &[reins_harness::SlashCommand]) -> SessionUpdate {
    use agent_client_protocol::v1::schema::{
        AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, UnstructuredCommandInput,
    };
    let commands = commands
        .iter()
        .map(|command| {
            let input = command
                .argument_hint
                .as_ref()
                .map(|hint| AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint)));
            AvailableCommand::new(&command.name, &command.description).input(input)
        })
        .collect();
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands))
}

pub fn agent_thought(delta: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(delta)))
}

/// A user message's blocks, as `user_message_chunk`s (a replayed conversation): what the user
/// sent, so an attached file is its link again, not the copy the model read.
fn user_chunks(content: &[Content], cwd: &Path) -> Vec<SessionUpdate> {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text: body } => Some(match crate::from_proto::unquote(body) {
                Some(name) => {
                    // A path relative to the working directory, an absolute one, or a URI.
                    let uri = if name.contains("://") {
                        name.to_string()
                    } else {
                        crate::from_proto::file_uri(&cwd.join(name))
                    };
                    let shown = Path::new(name).file_name().map_or(name.to_string(), |n| n.to_string_lossy().into());
                    ContentBlock::ResourceLink(agent_client_protocol::v1::schema::ResourceLink::new(shown, uri))
                }
                None => text(body.clone()),
            }),
            Content::Image { data, mime_type } => Some(ContentBlock::Image(
                agent_client_protocol::v1::schema::ImageContent::new(data.clone(), mime_type.clone()),
            )),
            _ => None,
        })
        .map(|block| SessionUpdate::UserMessageChunk(ContentChunk::new(block)))
        .collect()
}

/// The `tool_call` that announces a call: its look (what it does in a few words, its kind, the
/// files it touches, as its tool says) and its input.
pub fn tool_call(id: &str, look: &ToolLook, args: &Value, cwd: &Path, status: ToolCallStatus) -> ToolCall {
    ToolCall::new(ToolCallId::new(id), look.title.clone())
        .kind(kind(look.kind))
        .status(status)
        .locations(locations(&look.locations, cwd))
        .raw_input(args.clone())
}

/// A notice of the harness (an MCP server that could not start) as a failed step of the turn:
/// ACP has no notice update, and unlike an `agent_message_chunk` it is not taken for the agent's
/// words, nor sent into the model's context.
pub fn notice(n: u64, message: &str) -> ToolCall {
    ToolCall::new(ToolCallId::new(format!("reins-notice-{n}")), reins_ai::first_line(message, NOTICE_TITLE_CHARS))
        .kind(ToolKind::Other)
        .status(ToolCallStatus::Failed)
        .content(vec![ToolCallContent::from(text(message))])
}

/// A `tool_call_update` with only a new status.
pub fn tool_status(id: &str, status: ToolCallStatus) -> ToolCallUpdate {
    ToolCallUpdate::new(ToolCallId::new(id), ToolCallUpdateFields::new().status(status))
}

/// The `tool_call_update` that ends a call: completed or failed, with what it answered, the
/// client's terminal it ran in and, for the files it changed, a diff of each, whole file before
/// and after.
pub fn tool_result(result: &ToolResultMessage, changes: &[FileChange], terminal: Option<String>) -> ToolCallUpdate {
    let status = if result.is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
    let mut content: Vec<ToolCallContent> = terminal
        .map(|id| ToolCallContent::Terminal(agent_client_protocol::v1::schema::Terminal::new(id)))
        .into_iter()
        .collect();
    content.extend(changes.iter().map(|change| ToolCallContent::from(diff(change))));
    content.extend(result_content(&result.content));
    let fields = ToolCallUpdateFields::new().status(status).content(content).raw_output(raw_output(result));
    ToolCallUpdate::new(ToolCallId::new(result.tool_call_id.as_str()), fields)
}

/// A running command's output so far.
pub fn tool_output(id: &str, partial: &str) -> ToolCallUpdate {
    let content = vec![ToolCallContent::from(text(fence(partial)))];
    ToolCallUpdate::new(ToolCallId::new(id), ToolCallUpdateFields::new().content(content))
}

/// A file change as a `diff` block: the whole text before (none for a new file) and after.
pub fn diff(change: &FileChange) -> Diff {
    let path = change.moved_to.clone().unwrap_or_else(|| change.path.clone());
    Diff::new(path, change.after.clone()).old_text(change.before.clone())
}

fn result_content(content: &[Content]) -> Vec<ToolCallContent> {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text: body } if !body.is_empty() => Some(ToolCallContent::from(text(body.clone()))),
            Content::Image { data, mime_type } => Some(ToolCallContent::from(ContentBlock::Image(
                agent_client_protocol::v1::schema::ImageContent::new(data.clone(), mime_type.clone()),
            ))),
            _ => None,
        })
        .collect()
}

fn raw_output(result: &ToolResultMessage) -> Value {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let mut output = json!({ "output": texts.join("\n"), "isError": result.is_error });
    if let Some(details) = &result.details {
        output["details"] = details.clone();
    }
    output
}

/// Output as a code block, so the client shows it as it is.
fn fence(output: &str) -> String {
    let fence = reins_harness::fence_for(output);
    let newline = if output.ends_with('\n') { "" } else { "\n" };
    format!("{fence}\n{output}{newline}{fence}")
}

/// The kind of a call, for the client's icon.
pub fn kind(kind: LookKind) -> ToolKind {
    match kind {
        LookKind::Read => ToolKind::Read,
        LookKind::Edit => ToolKind::Edit,
        LookKind::Execute => ToolKind::Execute,
        LookKind::Search => ToolKind::Search,
        LookKind::Fetch => ToolKind::Fetch,
        LookKind::Other => ToolKind::Other,
    }
}

/// The files a call works on, made absolute against `cwd`, with the line a read starts at.
pub fn locations(locations: &[ToolLocation], cwd: &Path) -> Vec<ToolCallLocation> {
    locations
        .iter()
        .map(|location| {
            let path = Path::new(&location.path);
            let path = if path.is_absolute() { path.to_path_buf() } else { cwd.join(path) };
            ToolCallLocation::new(path).line(location.line)
        })
        .collect()
}

/// Why a prompt turn ended, from how the run ended and the last thing the model said.
pub fn stop_reason(reason: TurnEndReason, messages: &[Message]) -> StopReason {
    let last_stop = messages.iter().rev().find_map(|message| match message {
        Message::Assistant(assistant) => Some(assistant.stop_reason),
        _ => None,
    });
    match reason {
        TurnEndReason::Aborted => StopReason::Cancelled,
        TurnEndReason::Refusal => StopReason::Refusal,
        TurnEndReason::MaxTurns | TurnEndReason::RepeatedAction | TurnEndReason::Deadline => {
            StopReason::MaxTurnRequests
        }
        _ if last_stop == Some(ModelStop::Length) => StopReason::MaxTokens,
        _ => StopReason::EndTurn,
    }
}

/// The tokens the session's context takes against the model's window, and what the session
/// cost so far.
pub fn usage(used: u64, model: &Model, session: &Usage) -> UsageUpdate {
    let update = UsageUpdate::new(used, model.context_window);
    if session.cost.total > 0.0 { update.cost(Cost::new(session.cost.total, "USD")) } else { update }
}

/// The session's todo list as the client's plan: every step, in order, of one priority (reins's
/// list has none).
pub fn plan(todos: &[Todo]) -> Plan {
    let entries = todos
        .iter()
        .map(|todo| {
            let status = match todo.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(todo.content.as_str(), PlanEntryPriority::Medium, status)
        })
        .collect();
    Plan::new(entries)
}

/// A conversation as the updates that show it again (`session/load`): the user's messages, the
/// agent's thoughts and answers, and each tool call with its final status and content — an edit
/// with the diff blocks of the live run, from `changes` (by tool call id), and its look from
/// `look` (the harness's, by tool name and arguments).
///
/// A turn cut short shows what arrived of its answer, and a user message never follows another
/// without something of the agent between them (clients merge the two into one).
pub fn replay(
    messages: &[Message],
    changes: &HashMap<String, Vec<FileChange>>,
    cwd: &Path,
    look: impl Fn(&str, &Value) -> ToolLook,
) -> Vec<SessionUpdate> {
    let mut updates: Vec<SessionUpdate> = Vec::new();
    for message in messages {
        match message {
            Message::User(user) => {
                if matches!(updates.last(), Some(SessionUpdate::UserMessageChunk(_))) {
                    updates.push(agent_text(NO_ANSWER));
                }
                updates.extend(user_chunks(&user.content, cwd));
            }
            Message::Assistant(assistant) => {
                let before = updates.len();
                for block in &assistant.content {
                    match block {
                        Content::Thinking { thinking, .. } if !thinking.is_empty() => {
                            updates.push(agent_thought(thinking));
                        }
                        Content::Text { text } if !text.is_empty() => updates.push(agent_text(text)),
                        Content::ToolCall(call) => updates.push(SessionUpdate::ToolCall(tool_call(
                            &call.id,
                            &look(&call.name, &call.arguments),
                            &call.arguments,
                            cwd,
                            ToolCallStatus::Pending,
                        ))),
                        _ => {}
                    }
                }
                let said_nothing = updates.len() == before;
                match assistant.stop_reason {
                    ModelStop::Aborted if said_nothing => updates.push(agent_text(CANCELLED)),
                    ModelStop::Error if said_nothing => updates.push(agent_text(&match &assistant.error {
                        Some(error) => format!("(the answer failed: {error})"),
                        None => "(the answer failed)".to_string(),
                    })),
                    _ => {}
                }
            }
            Message::ToolResult(result) => {
                let changes = changes.get(&result.tool_call_id).map_or(&[][..], Vec::as_slice);
                updates.push(SessionUpdate::ToolCallUpdate(tool_result(result, changes, None)));
            }
        }
    }
    updates
}

/// The changes a session recorded (`reins.file_change`), by tool call id, as the live run had
/// them: whole texts, paths made absolute against `cwd`. A change whose texts are not known (kept
/// as a patch whose file's chain holds no text, or not text) has none; its call shows its text
/// result.
pub fn recorded_changes(records: &[FileChangeRecord], cwd: &Path) -> HashMap<String, Vec<FileChange>> {
    let mut changes: HashMap<String, Vec<FileChange>> = HashMap::new();
    for record in records {
        let files = record.files.iter().filter_map(|file| {
            // A side is whole text, or absent (a creation, a deletion).
            let [before, after] = [&file.before, &file.after].map(|side| match side {
                None => Some(None),
                Some(side) => side.text.as_ref().and_then(|text| text.decode().ok()).map(Some),
            });
            let (before, after) = (before?, after?);
            Some(FileChange {
                path: cwd.join(&file.path),
                delete: after.is_none(),
                before,
                after: after.unwrap_or_default(),
                moved_to: file.moved_to.as_ref().map(|to| cwd.join(to)),
                version: None,
                notes: Vec::new(),
            })
        });
        changes.entry(record.tool_call_id.clone()).or_default().extend(files);
    }
    changes
}

/// A session of `session/list`.
pub fn session_info(info: &reins_harness::SessionInfo, cwd: &Path) -> SessionInfo {
    // The first message without the files it quoted (see `reins_harness::quote_attachment`).
    let first = info.first_message.as_deref().map(|text| {
        let cut = ["Attached file: ", "Attached: "].iter().filter_map(|marker| text.find(marker)).min();
        text[..cut.unwrap_or(text.len())].trim().to_string()
    });
    let title = info.name.clone().or(first.filter(|text| !text.is_empty()));
    let updated =
        humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(info.modified));
    SessionInfo::new(SessionId::new(info.id.as_str()), cwd.to_path_buf()).title(title).updated_at(updated.to_string())
}

/// A value from the client as an error quotes it: its start, with `…` when it was longer.
pub fn quoted(value: &str) -> String {
    cut(value, QUOTED_BYTES)
}

/// `text` cut to `max_bytes`, with `…` when something was cut.
fn cut(text: &str, max_bytes: usize) -> String {
    match reins_ai::cut_bytes(text, max_bytes) {
        (kept, true) => format!("{kept}…"),
        (all, false) => all.to_string(),
    }
}

/// A harness error as a JSON-RPC error: invalid params for what the client got wrong, internal
/// otherwise; `data.code` carries reins's stable code.
pub fn harness_error(error: HarnessError) -> Error {
    let code = match error.code() {
        "invalid_argument" => ErrorCode::INVALID_PARAMS,
        _ => ErrorCode::INTERNAL_ERROR,
    };
    Error::new(code, cut(&error.to_string(), ERROR_MESSAGE_BYTES)).data(json!({ "code": error.code() }))
}

/// An invalid-params error that says what to send instead.
pub fn invalid_params(message: impl Into<String>) -> Error {
    let message = cut(&message.into(), ERROR_MESSAGE_BYTES);
    Error::new(ErrorCode::INVALID_PARAMS, message).data(json!({ "code": "invalid_argument" }))
}

/// The answer to a prompt whose run failed (the provider, the key, the network): what failed and
/// what to do, as the message.
pub fn run_failed(message: String) -> Error {
    Error::new(ErrorCode::INTERNAL_ERROR, message).data(json!({ "code": "run_failed" }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: Option<&str>, first: Option<&str>) -> Value {
        let info = reins_harness::SessionInfo {
            id: "s1".into(),
            path: "/h/s1.jsonl".into(),
            name: name.map(str::to_string),
            first_message: first.map(str::to_string),
            entry_count: 3,
            modified: 1_764_547_200_000,
            parent_session: None,
            usage: Usage::default(),
        };
        serde_json::to_value(session_info(&info, Path::new("/w"))).unwrap()
    }

    #[test]
    fn a_listed_session_is_titled_by_its_name_else_its_first_words_without_attachments() {
        let first = "fix the bug Attached file: src/a.rs ``` fn a() {} ```";
        assert_eq!(
            listed(None, Some(first)),
            json!({"sessionId": "s1", "cwd": "/w", "title": "fix the bug", "updatedAt": "2025-12-01T00:00:00.000Z"})
        );
        assert_eq!(listed(Some("Bug hunt"), Some(first))["title"], "Bug hunt");
        assert_eq!(listed(None, Some("Attached: x.png (not text; its content is not included)")).get("title"), None);
    }

    #[test]
    fn a_call_is_shown_as_its_tool_says_it_looks() {
        let look = ToolLook {
            title: "Read src/a.rs".into(),
            kind: LookKind::Read,
            locations: vec![ToolLocation { path: "src/a.rs".into(), line: Some(10) }, ToolLocation::new("/etc/hosts")],
            summary: "src/a.rs".into(),
        };
        let args = json!({"path": "src/a.rs", "offset": 10});
        let call = tool_call("c1", &look, &args, Path::new("/w"), ToolCallStatus::InProgress);
        assert_eq!(
            serde_json::to_value(call).unwrap(),
            json!({"toolCallId": "c1", "title": "Read src/a.rs", "kind": "read", "status": "in_progress",
                   "locations": [{"path": "/w/src/a.rs", "line": 10}, {"path": "/etc/hosts"}], "rawInput": args})
        );
        let kinds =
            [LookKind::Read, LookKind::Edit, LookKind::Execute, LookKind::Search, LookKind::Fetch, LookKind::Other];
        let names: Vec<Value> = kinds.into_iter().map(|look| serde_json::to_value(kind(look)).unwrap()).collect();
        assert_eq!(names, ["read", "edit", "execute", "search", "fetch", "other"]);
    }

    #[test]
    fn the_todo_list_is_the_plan() {
        let step = |content: &str, status| Todo { content: content.into(), status };
        let todos = [
            step("read", TodoStatus::Completed),
            step("edit", TodoStatus::InProgress),
            step("test", TodoStatus::Pending),
        ];
        expect_test::expect![[r#"{"entries":[{"content":"read","priority":"medium","status":"completed"},{"content":"edit","priority":"medium","status":"in_progress"},{"content":"test","priority":"medium","status":"pending"}]}"#]]
            .assert_eq(&serde_json::to_value(plan(&todos)).unwrap().to_string());
        assert_eq!(serde_json::to_value(plan(&[])).unwrap(), json!({"entries": []}), "an empty list clears the plan");
    }
}
