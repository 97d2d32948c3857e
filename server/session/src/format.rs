//! The lines of a session file, version 3 of pi's format: a header, then one entry per line.
//!
//! This module is the file-format contract. [`Entry`] and [`Header`] are parsed and written
//! explicitly; fields this version does not know stay in `extra` and entry kinds it does not know
//! become [`EntryKind::Unknown`], so both are written back as equivalent JSON. Lines are written
//! with `type`, `id`, `parentId`, `timestamp` first, as pi does.

use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;

use crate::message::{ContentField, MessageRecord};

pub const CURRENT_VERSION: u64 = 3;

/// The first line of a session file.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub version: u64,
    pub id: String,
    pub timestamp: String,
    pub cwd: String,
    /// The file this session was forked from.
    pub parent_session: Option<String>,
    pub extra: Map<String, Value>,
}

/// One line after the header: a node of the session tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// 8 hex characters in files written by pi or reins.
    pub id: String,
    /// `None` for a root.
    pub parent_id: Option<String>,
    /// ISO 8601, UTC.
    pub timestamp: String,
    pub kind: EntryKind,
    /// Fields of the line this version does not know (e.g. `details`, `fromHook`).
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    /// The message object exactly as on disk; [`MessageRecord`] reads it.
    Message(Value),
    ModelChange {
        provider: String,
        model_id: String,
    },
    ThinkingLevelChange {
        thinking_level: String,
    },
    /// A reins addition (pi ignores it): the tools the model may call from here on.
    ActiveToolsChange {
        tools: Vec<String>,
    },
    Compaction {
        summary: String,
        first_kept_entry_id: String,
        tokens_before: u64,
    },
    BranchSummary {
        from_id: String,
        summary: String,
    },
    /// Extension state; never sent to the model.
    Custom {
        custom_type: String,
        data: Option<Value>,
    },
    /// Extension text that reaches the model as a user message.
    CustomMessage {
        custom_type: String,
        content: Value,
        display: Option<bool>,
    },
    /// `label: None` clears the label of `target_id`.
    Label {
        target_id: String,
        label: Option<String>,
    },
    /// `name: None` (or empty) clears the name.
    SessionInfo {
        name: Option<String>,
    },
    /// pi 1.6: from here on, the context shows `target_id`'s message with `replacement`'s
    /// `content` instead of its own, or (`None`) leaves it out. The target itself is unchanged.
    ContextEdit {
        target_id: String,
        replacement: Option<Value>,
    },
    /// A reins addition: the position moved to `target_id` without a new message. Its `parentId`
    /// is the target too, so pi (which takes the last line as the leaf) lands in the same place.
    Leaf {
        target_id: String,
    },
    /// A kind this version does not know; its fields are all in `extra`.
    Unknown(String),
}

/// The kind of an entry without its data: what the tree index keeps per line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryTag {
    Message,
    ModelChange,
    ThinkingLevelChange,
    ActiveToolsChange,
    Compaction,
    BranchSummary,
    Custom,
    CustomMessage,
    Label,
    SessionInfo,
    Leaf,
    ContextEdit,
    /// pi 1.6: the usage of a model call that is not an assistant message (cache warming).
    Usage,
    Unknown,
}

/// Just enough of a line to index it, borrowed from the line where possible; every other field
/// is skipped without allocating. Public for a reader that parses each line once for more than
/// these fields (see [`crate::TreeOutline::scan_read`]).
#[derive(Deserialize)]
pub struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(rename = "parentId", default, borrow)]
    pub parent_id: Option<Cow<'a, str>>,
    #[serde(rename = "targetId", default, borrow)]
    pub target_id: Option<Cow<'a, str>>,
}

/// Every field that building a context reads, for any entry kind; flat so that parsing a long
/// path stays fast.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ContextLine {
    pub timestamp: Option<String>,
    pub message: Option<MessageRecord>,
    pub summary: Option<String>,
    pub first_kept_entry_id: Option<String>,
    pub tokens_before: Option<u64>,
    pub content: Option<ContentField>,
    pub provider: Option<String>,
    pub model_id: Option<String>,
    pub thinking_level: Option<String>,
    pub label: Option<String>,
    pub name: Option<String>,
    pub target_id: Option<String>,
    /// `context_edit`: `None` when absent or `null` (the target is left out).
    pub replacement: Option<Replacement>,
    /// `compaction` (pi 1.6): the prompt and tools in force at the compaction.
    pub system_message: Option<SystemRecord>,
}

/// The new content a `context_edit` gives its target.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Replacement {
    pub content: Option<ContentField>,
}

/// The tool changes a pi 1.6 `system` message records (its prompt sections reins does not use).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct SystemRecord {
    pub tools_added: Vec<ToolName>,
    pub tools_removed: Vec<ToolName>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct ToolName {
    pub name: String,
}

impl EntryTag {
    pub fn from_type(kind: &str) -> EntryTag {
        match kind {
            "message" => EntryTag::Message,
            "model_change" => EntryTag::ModelChange,
            "thinking_level_change" => EntryTag::ThinkingLevelChange,
            "active_tools_change" => EntryTag::ActiveToolsChange,
            "compaction" => EntryTag::Compaction,
            "branch_summary" => EntryTag::BranchSummary,
            "custom" => EntryTag::Custom,
            "custom_message" => EntryTag::CustomMessage,
            "label" => EntryTag::Label,
            "session_info" => EntryTag::SessionInfo,
            "leaf" => EntryTag::Leaf,
            "context_edit" => EntryTag::ContextEdit,
            "usage" => EntryTag::Usage,
            _ => EntryTag::Unknown,
        }
    }
}

impl Header {
    pub fn new(id: String, timestamp: String, cwd: String, parent_session: Option<String>) -> Header {
        Header { version: CURRENT_VERSION, id, timestamp, cwd, parent_session, extra: Map::new() }
    }

    /// Parses a header line; a line of another type, or without an id, is not a header.
    pub fn parse(line: &str) -> Result<Header, String> {
        let mut map = parse_object(line)?;
        if map.get("type").and_then(Value::as_str) != Some("session") {
            return Err("the first line is not a session header (`\"type\":\"session\"`)".into());
        }
        map.remove("type");
        let id = take_string(&mut map, "id").ok_or("the session header has no `id`")?;
        // pi treats a header without a version as version 1.
        let version = match map.get("version").and_then(Value::as_u64) {
            Some(version) => {
                map.remove("version");
                version
            }
            None => 1,
        };
        Ok(Header {
            version,
            id,
            timestamp: take_string(&mut map, "timestamp").unwrap_or_default(),
            cwd: take_string(&mut map, "cwd").unwrap_or_default(),
            parent_session: take_string(&mut map, "parentSession"),
            extra: map,
        })
    }

    pub fn to_line(&self) -> String {
        let mut line = LineWriter::new("session");
        line.field("version", &self.version);
        line.field("id", &self.id);
        line.field("timestamp", &self.timestamp);
        line.field("cwd", &self.cwd);
        if let Some(parent) = &self.parent_session {
            line.field("parentSession", parent);
        }
        line.extra(&self.extra);
        line.finish()
    }
}

impl Entry {
    /// Parses one entry line. Known kinds missing a required field are kept as
    /// [`EntryKind::Unknown`] so that nothing is lost.
    pub fn parse(line: &str) -> Result<Entry, String> {
        let mut map = parse_object(line)?;
        let kind_name = take_string(&mut map, "type").ok_or("the entry has no `type`")?;
        let id = take_string(&mut map, "id").ok_or("the entry has no `id`")?;
        let parent_id = match map.get("parentId") {
            Some(Value::String(_)) => take_string(&mut map, "parentId"),
            Some(Value::Null) => {
                map.remove("parentId");
                None
            }
            _ => None,
        };
        let timestamp = take_string(&mut map, "timestamp").unwrap_or_default();
        let kind = take_kind(&kind_name, &mut map).unwrap_or(EntryKind::Unknown(kind_name));
        Ok(Entry { id, parent_id, timestamp, kind, extra: map })
    }

    /// The line of a `message` entry without extra fields, the same as [`Entry::to_line`] of
    /// one holding [`EntryKind::message`], written from the record itself rather than through a
    /// [`Value`] of it: a run writes every message it makes.
    pub fn message_line(id: &str, parent_id: Option<&str>, timestamp: &str, message: &MessageRecord) -> String {
        let mut line = LineWriter::entry("message", id, parent_id, timestamp);
        line.field("message", message);
        line.finish()
    }

    pub fn to_line(&self) -> String {
        let mut line = LineWriter::entry(self.kind.type_name(), &self.id, self.parent_id.as_deref(), &self.timestamp);
        match &self.kind {
            EntryKind::Message(message) => line.field("message", message),
            EntryKind::ModelChange { provider, model_id } => {
                line.field("provider", provider);
                line.field("modelId", model_id);
            }
            EntryKind::ThinkingLevelChange { thinking_level } => line.field("thinkingLevel", thinking_level),
            EntryKind::ActiveToolsChange { tools } => line.field("tools", tools),
            EntryKind::Compaction { summary, first_kept_entry_id, tokens_before } => {
                line.field("summary", summary);
                line.field("firstKeptEntryId", first_kept_entry_id);
                line.field("tokensBefore", tokens_before);
            }
            EntryKind::BranchSummary { from_id, summary } => {
                line.field("fromId", from_id);
                line.field("summary", summary);
            }
            EntryKind::Custom { custom_type, data } => {
                line.field("customType", custom_type);
                if let Some(data) = data {
                    line.field("data", data);
                }
            }
            EntryKind::CustomMessage { custom_type, content, display } => {
                line.field("customType", custom_type);
                line.field("content", content);
                if let Some(display) = display {
                    line.field("display", display);
                }
            }
            EntryKind::Label { target_id, label } => {
                line.field("targetId", target_id);
                if let Some(label) = label {
                    line.field("label", label);
                }
            }
            EntryKind::SessionInfo { name } => {
                if let Some(name) = name {
                    line.field("name", name);
                }
            }
            EntryKind::Leaf { target_id } => line.field("targetId", target_id),
            EntryKind::ContextEdit { target_id, replacement } => {
                line.field("targetId", target_id);
                line.field("replacement", replacement);
            }
            EntryKind::Unknown(_) => {}
        }
        line.extra(&self.extra);
        line.finish()
    }

    /// The message record of a `message` entry.
    pub fn message(&self) -> Option<MessageRecord> {
        match &self.kind {
            EntryKind::Message(value) => MessageRecord::deserialize(value).ok(),
            _ => None,
        }
    }
}

impl EntryKind {
    /// A `message` entry holding a reins message in pi's shape.
    pub fn message(message: &reins_ai::Message) -> EntryKind {
        let record = MessageRecord::from_message(message);
        EntryKind::Message(serde_json::to_value(record).unwrap_or(Value::Null))
    }

    pub fn type_name(&self) -> &str {
        match self {
            EntryKind::Message(_) => "message",
            EntryKind::ModelChange { .. } => "model_change",
            EntryKind::ThinkingLevelChange { .. } => "thinking_level_change",
            EntryKind::ActiveToolsChange { .. } => "active_tools_change",
            EntryKind::Compaction { .. } => "compaction",
            EntryKind::BranchSummary { .. } => "branch_summary",
            EntryKind::Custom { .. } => "custom",
            EntryKind::CustomMessage { .. } => "custom_message",
            EntryKind::Label { .. } => "label",
            EntryKind::SessionInfo { .. } => "session_info",
            EntryKind::Leaf { .. } => "leaf",
            EntryKind::ContextEdit { .. } => "context_edit",
            EntryKind::Unknown(name) => name,
        }
    }

    pub fn tag(&self) -> EntryTag {
        EntryTag::from_type(self.type_name())
    }
}

/// Takes a kind's own fields out of `map`, or returns `None` (leaving `map` as it was) when a
/// required one is missing or has the wrong type.
fn take_kind(kind: &str, map: &mut Map<String, Value>) -> Option<EntryKind> {
    let has_str = |map: &Map<String, Value>, key: &str| map.get(key).is_some_and(Value::is_string);
    let entry = match kind {
        "message" => EntryKind::Message(map.remove("message")?),
        "model_change" if has_str(map, "provider") && has_str(map, "modelId") => {
            EntryKind::ModelChange { provider: take_string(map, "provider")?, model_id: take_string(map, "modelId")? }
        }
        "thinking_level_change" if has_str(map, "thinkingLevel") => {
            EntryKind::ThinkingLevelChange { thinking_level: take_string(map, "thinkingLevel")? }
        }
        "active_tools_change" => {
            let tools: Vec<String> = serde_json::from_value(map.get("tools")?.clone()).ok()?;
            map.remove("tools");
            EntryKind::ActiveToolsChange { tools }
        }
        "compaction"
            if has_str(map, "summary")
                && has_str(map, "firstKeptEntryId")
                && map.get("tokensBefore").is_some_and(Value::is_u64) =>
        {
            let tokens_before = map.remove("tokensBefore")?.as_u64()?;
            EntryKind::Compaction {
                summary: take_string(map, "summary")?,
                first_kept_entry_id: take_string(map, "firstKeptEntryId")?,
                tokens_before,
            }
        }
        "branch_summary" if has_str(map, "fromId") && has_str(map, "summary") => {
            EntryKind::BranchSummary { from_id: take_string(map, "fromId")?, summary: take_string(map, "summary")? }
        }
        "custom" if has_str(map, "customType") => {
            EntryKind::Custom { custom_type: take_string(map, "customType")?, data: map.remove("data") }
        }
        "custom_message" if has_str(map, "customType") && map.contains_key("content") => {
            let display = match map.get("display") {
                Some(Value::Bool(display)) => Some(*display),
                _ => None,
            };
            if display.is_some() {
                map.remove("display");
            }
            EntryKind::CustomMessage {
                custom_type: take_string(map, "customType")?,
                content: map.remove("content")?,
                display,
            }
        }
        "label" if has_str(map, "targetId") => {
            EntryKind::Label { target_id: take_string(map, "targetId")?, label: take_string(map, "label") }
        }
        "session_info" => EntryKind::SessionInfo { name: take_string(map, "name") },
        "leaf" if has_str(map, "targetId") => EntryKind::Leaf { target_id: take_string(map, "targetId")? },
        "context_edit"
            if has_str(map, "targetId") && map.get("replacement").is_some_and(|r| r.is_null() || r.is_object()) =>
        {
            let replacement = map.remove("replacement").filter(|replacement| !replacement.is_null());
            EntryKind::ContextEdit { target_id: take_string(map, "targetId")?, replacement }
        }
        _ => return None,
    };
    Some(entry)
}

fn parse_object(line: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("the line is not a JSON object".into()),
        Err(error) => Err(format!("the line is not valid JSON: {error}")),
    }
}

/// Removes `key` when it holds a string; leaves any other value in place (it stays in `extra`).
fn take_string(map: &mut Map<String, Value>, key: &str) -> Option<String> {
    if !map.get(key).is_some_and(Value::is_string) {
        return None;
    }
    match map.remove(key) {
        Some(Value::String(text)) => Some(text),
        _ => None,
    }
}

/// Writes one JSON object with its keys in the order given.
struct LineWriter {
    out: Vec<u8>,
}

impl LineWriter {
    fn new(kind: &str) -> LineWriter {
        let mut line = LineWriter { out: Vec::with_capacity(256) };
        line.out.extend_from_slice(b"{");
        line.key("type");
        line.value(kind);
        line
    }

    /// The fields every entry starts with, in pi's order.
    fn entry(kind: &str, id: &str, parent_id: Option<&str>, timestamp: &str) -> LineWriter {
        let mut line = LineWriter::new(kind);
        line.field("id", id);
        line.field("parentId", &parent_id);
        line.field("timestamp", timestamp);
        line
    }

    fn field(&mut self, key: &str, value: &(impl serde::Serialize + ?Sized)) {
        self.out.push(b',');
        self.key(key);
        self.value(value);
    }

    fn key(&mut self, key: &str) {
        self.value(key);
        self.out.push(b':');
    }

    /// Written in place: an entry is written once per message, so no string of its own.
    fn value(&mut self, value: &(impl serde::Serialize + ?Sized)) {
        let mark = self.out.len();
        // Serializing plain data (strings, numbers, `Value`, records) cannot fail; if it did,
        // what it began is taken back.
        if serde_json::to_writer(&mut self.out, value).is_err() {
            self.out.truncate(mark);
            self.out.extend_from_slice(b"null");
        }
    }

    fn extra(&mut self, extra: &Map<String, Value>) {
        for (key, value) in extra {
            self.field(key, value);
        }
    }

    fn finish(mut self) -> String {
        self.out.push(b'}');
        // serde_json writes UTF-8 only.
        String::from_utf8(self.out).unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned())
    }
}
