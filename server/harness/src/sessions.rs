//! Sessions as the harness shows them: listings, trees, and the recorder that writes a run's
//! messages to the session file at save points.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;

use reins_agent::AgentEvent;
use reins_ai::{Content, Message, Usage};
use reins_session::format::Envelope;
use reins_session::{
    Durability, Entry, EntryKind, EntryTag, IndexSave, SessionFile, SessionIndex, SessionSummary, SessionTree,
    TreeOutline,
};

use crate::error::HarnessError;
use crate::runtime::{lock, session_error};

/// One session in a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub id: String,
    pub path: String,
    pub name: Option<String>,
    pub first_message: Option<String>,
    pub entry_count: usize,
    /// Milliseconds since the Unix epoch.
    pub modified: u64,
    /// Forked from this session file.
    pub parent_session: Option<String>,
    /// Tokens and cost of every model call in the file, on every branch: what the session cost.
    pub usage: Usage,
}

impl From<SessionSummary> for SessionInfo {
    fn from(summary: SessionSummary) -> Self {
        SessionInfo {
            id: summary.id,
            path: summary.path.display().to_string(),
            name: summary.name,
            first_message: summary.first_user_message.map(|text| preview(&text, 200)),
            entry_count: summary.entry_count,
            modified: summary.modified.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0),
            usage: summary.usage,
            parent_session: summary.parent_session,
        }
    }
}

/// Listings of a workspace's sessions from its session index (see [`SessionIndex`]), kept up
/// to date by re-reading only the files that changed since (editors ask often; a session file
/// can be tens of megabytes, and a workspace may hold a thousand).
#[derive(Default)]
pub struct SessionListing {
    index: Option<SessionIndex>,
}

impl SessionListing {
    /// The sessions stored in `dir` (a workspace's session directory), newest first. The index
    /// is written before this returns (a command may exit right after).
    pub fn list(&mut self, dir: &Path) -> Result<Vec<SessionInfo>, HarnessError> {
        let (page, save) = self.page_and_save(dir, None, None)?;
        if let Some(save) = save {
            save.write();
        }
        Ok(page.sessions)
    }

    /// The page of the sessions stored in `dir` after `cursor`, of at most `limit` sessions
    /// (see [`SessionPage`]). The index is brought up to date with what changed in the
    /// directory ([`SessionIndex::sync`]); only the page's sessions are copied out of it, the
    /// rest is ordered by time and name alone, so a page costs about the same at ten sessions or
    /// a thousand. The index, when it is due to be written, is written by a thread of its own
    /// after the page is made, so that no listing waits for it.
    pub fn page(
        &mut self,
        dir: &Path,
        cursor: Option<&str>,
        limit: Option<usize>,
    ) -> Result<SessionPage, HarnessError> {
        let (page, save) = self.page_and_save(dir, cursor, limit)?;
        Self::write_later(save);
        Ok(page)
    }

    /// [`SessionListing::page`] on the caller's thread, when that is cheap: the index of `dir`
    /// was synced before and only a few files changed since, each read on from where its last
    /// reading stopped (see [`SessionIndex::sync_if_cheap`]). `None` when it is not, for the
    /// caller to call [`SessionListing::page`] where blocking is fine: an editor lists often,
    /// and a listing handed to a pool of threads waits for a core behind a streaming run.
    pub fn page_if_cheap(
        &mut self,
        dir: &Path,
        cursor: Option<&str>,
        limit: Option<usize>,
    ) -> Option<Result<SessionPage, HarnessError>> {
        let index = self.index.as_mut().filter(|index| index.dir() == dir)?;
        if !index.sync_if_cheap() {
            return None;
        }
        Some(Self::page_of(index, cursor, limit).map(|(page, save)| {
            Self::write_later(save);
            page
        }))
    }

    /// The page of [`SessionListing::page`], and the index to write when it is due.
    fn page_and_save(
        &mut self,
        dir: &Path,
        cursor: Option<&str>,
        limit: Option<usize>,
    ) -> Result<(SessionPage, Option<IndexSave>), HarnessError> {
        let index = match &mut self.index {
            Some(index) if index.dir() == dir => index,
            slot => slot.insert(SessionIndex::load(dir)),
        };
        index.sync().map_err(session_error)?;
        Self::page_of(index, cursor, limit)
    }

    /// The page of the sessions `index` holds after `cursor`, of at most `limit`, and the
    /// index to write when it is due.
    fn page_of(
        index: &mut SessionIndex,
        cursor: Option<&str>,
        limit: Option<usize>,
    ) -> Result<(SessionPage, Option<IndexSave>), HarnessError> {
        if limit == Some(0) {
            return Err(HarnessError::InvalidArgument("limit must be 1 or more".into()));
        }
        let after = cursor.map(parse_cursor).transpose()?;
        let save = index.take_save();
        let order = index.newest_first();
        let path_of = |name: &str| index.dir().join(name).display().to_string();
        let first = match after {
            Some((modified, path)) => {
                order.partition_point(|&(time, name)| (time, path_of(name).as_str()) >= (modified, path))
            }
            None => 0,
        };
        let rest = &order[first..];
        let shown = limit.map_or(rest.len(), |limit| limit.min(rest.len()));
        let sessions: Vec<SessionInfo> =
            rest[..shown].iter().filter_map(|(_, name)| index.summary(name)).map(SessionInfo::from).collect();
        let next_cursor = if shown < rest.len() {
            sessions.last().map(|last| format!("{}:{}", last.modified, last.path))
        } else {
            None
        };
        Ok((SessionPage { sessions, next_cursor }, save))
    }

    /// Writes `save`, when there is one, from a thread of its own.
    fn write_later(save: Option<IndexSave>) {
        if let Some(save) = save {
            let spawned = std::thread::Builder::new().name("reins-index".into()).spawn(move || save.write());
            if let Err(err) = spawned {
                tracing::warn!("could not write the session index: {err}");
            }
        }
    }
}

/// A cursor's session time and path, as [`SessionPage`] gives them.
fn parse_cursor(cursor: &str) -> Result<(u64, &str), HarnessError> {
    cursor.split_once(':').and_then(|(modified, path)| Some((modified.parse::<u64>().ok()?, path))).ok_or_else(|| {
        HarnessError::InvalidArgument(format!(
            "{cursor:?} is not a cursor that reins.session.list gave (it gives `nextCursor`)"
        ))
    })
}

/// One page of a listing: at most the number of sessions asked for, newest first, and the cursor
/// that asks for the next page when there is one. A cursor names the last session of its page by
/// time and path, so sessions created between two pages do not shift the next one.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPage {
    pub sessions: Vec<SessionInfo>,
    pub next_cursor: Option<String>,
}

impl SessionPage {
    /// The page of `sessions` (newest first, as [`SessionListing::list`] gives them) after
    /// `cursor` (from an earlier page; `None`: the first page), of at most `limit` sessions
    /// (`None`: all of them).
    pub fn of(
        mut sessions: Vec<SessionInfo>,
        cursor: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Self, HarnessError> {
        if limit == Some(0) {
            return Err(HarnessError::InvalidArgument("limit must be 1 or more".into()));
        }
        if let Some(cursor) = cursor {
            let (modified, path) = parse_cursor(cursor)?;
            let first = sessions.partition_point(|s| (s.modified, s.path.as_str()) >= (modified, path));
            sessions.drain(..first);
        }
        let next_cursor = match limit {
            Some(limit) if sessions.len() > limit => {
                sessions.truncate(limit);
                sessions.last().map(|last| format!("{}:{}", last.modified, last.path))
            }
            _ => None,
        };
        Ok(SessionPage { sessions, next_cursor })
    }
}

/// A session's whole tree, for a tree view.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionTreeView {
    pub session_id: String,
    pub name: Option<String>,
    pub leaf: Option<String>,
    pub nodes: Vec<TreeNode>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode {
    pub id: String,
    pub parent_id: Option<String>,
    /// The entry's type in the file: `message`, `compaction`, `branch_summary`, `model_change`, …
    pub kind: &'static str,
    /// For messages: `user`, `assistant`, `toolResult` (or a role pi has and reins does not).
    pub role: Option<Cow<'static, str>>,
    /// A one-line excerpt.
    pub preview: String,
    pub label: Option<String>,
    pub timestamp: String,
}

impl SessionTreeView {
    /// The view of a tree already in memory (a live session's).
    pub fn of(session_id: &str, tree: &SessionTree) -> Self {
        // The few entries not shown (labels, `leaf` entries, lines that do not read), for the
        // position below: a set of every shown id would cost tens of megabytes on a long session.
        let mut hidden: HashSet<&str> = HashSet::new();
        let mut nodes: Vec<TreeNode> = Vec::with_capacity(tree.len());
        for (indexed, line) in tree.lines() {
            match shown(indexed.tag, line) {
                Some(node) => nodes.push(TreeNode {
                    label: tree.label(indexed.id).map(str::to_string),
                    id: indexed.id.to_string(),
                    // The parent as the tree has it, which differs from the line's in a repaired
                    // file (a broken cycle, a skipped parent).
                    parent_id: indexed.parent_id.map(str::to_string),
                    ..node
                }),
                None => {
                    hidden.insert(indexed.id);
                }
            }
        }
        let leaf = shown_leaf(tree.leaf(), &hidden, |id| tree.get(id).and_then(|entry| entry.parent_id));
        SessionTreeView { session_id: session_id.to_string(), name: tree.name().map(str::to_string), leaf, nodes }
    }

    /// The view of the session file at `path`, read a line at a time without locking it: each
    /// node is made as its line goes by, and the file is never held whole (a long session's
    /// view costs its nodes and the index, not the file as well).
    pub fn scan(path: &Path) -> Result<Self, reins_session::SessionError> {
        let mut nodes: Vec<TreeNode> = Vec::new();
        // The outline's number of each node, and of each entry not shown.
        let (mut numbers, mut hidden_numbers): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        // A message is shown from the same parse that indexes its line; any other line is read
        // again in full.
        let outline = TreeOutline::scan_read(path, read_line, |number, tag, line, read| {
            match read.flatten().or_else(|| shown(tag, line)) {
                Some(node) => {
                    nodes.push(node);
                    numbers.push(number);
                }
                None => hidden_numbers.push(number),
            }
        })?;
        // Ids, parents (as repaired) and labels are the outline's once every line is read.
        let labels = outline.has_labels();
        for (node, &number) in nodes.iter_mut().zip(&numbers) {
            if let Some(entry) = outline.entry(number) {
                node.id = entry.id.to_string();
                node.parent_id = entry.parent_id.map(str::to_string);
                node.label = labels.then(|| outline.label(entry.id)).flatten().map(str::to_string);
            }
        }
        drop(numbers);
        let hidden: HashSet<&str> =
            hidden_numbers.iter().filter_map(|&number| outline.entry(number)).map(|entry| entry.id).collect();
        let leaf = shown_leaf(outline.leaf(), &hidden, |id| outline.get(id).and_then(|entry| entry.parent_id));
        Ok(SessionTreeView {
            session_id: outline.header().id.clone(),
            name: outline.name().map(str::to_string),
            leaf,
            nodes,
        })
    }
}

/// Labels and `leaf` entries are not shown, so the position is the nearest shown entry, walked
/// to from the leaf through `parent` (the tree has no cycles: they are broken as it loads).
fn shown_leaf<'a>(
    leaf: Option<&'a str>,
    hidden: &HashSet<&str>,
    parent: impl Fn(&str) -> Option<&'a str>,
) -> Option<String> {
    let mut leaf = leaf;
    while let Some(id) = leaf.filter(|id| hidden.contains(id)) {
        leaf = parent(id);
    }
    leaf.map(str::to_string)
}

/// What a tree view shows of an entry of kind `tag` from its line (id, parent and label left
/// for the caller), or `None` for one it does not show: a label, a `leaf` entry, a line that does
/// not read.
fn shown(tag: EntryTag, line: &str) -> Option<TreeNode> {
    // Messages, nearly every line of a long session, are read straight into what shows of them;
    // any other line, or a message that does not read so, in full.
    let message = (tag == EntryTag::Message).then(|| serde_json::from_str::<MessageLine>(line).ok()).flatten();
    if let Some(node) = message.and_then(|MessageLine { timestamp, message }| message_node(timestamp, message)) {
        return Some(node);
    }
    let entry = Entry::parse(line).ok()?;
    if matches!(entry.kind, EntryKind::Label { .. } | EntryKind::Leaf { .. }) {
        return None;
    }
    let (kind, role, text) = describe(&entry.kind);
    Some(TreeNode {
        id: String::new(),
        parent_id: None,
        kind,
        role: role.map(role_name),
        preview: preview(&text, 120),
        label: None,
        timestamp: entry.timestamp,
    })
}

/// A line read for [`TreeOutline::scan_read`]: its envelope and, for a message that
/// [`message_node`] shows, its node (`None`: [`shown`] reads the line).
fn read_line(line: &str) -> Option<(Envelope<'_>, Option<TreeNode>)> {
    let ShownLine { kind, id, parent_id, target_id, timestamp, message } = serde_json::from_str(line).ok()?;
    let node = match (timestamp, message) {
        (Some(timestamp), Some(message)) if EntryTag::from_type(&kind) == EntryTag::Message => {
            message_node(timestamp, message)
        }
        _ => None,
    };
    Some((Envelope { kind, id, parent_id, target_id }, node))
}

/// The fields of a line that indexing reads ([`Envelope`]'s, declared alike) and those of a
/// `message` line a tree view shows, in one parse.
#[derive(serde::Deserialize)]
struct ShownLine<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "parentId", default, borrow)]
    parent_id: Option<Cow<'a, str>>,
    #[serde(rename = "targetId", default, borrow)]
    target_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<ShownMessage<'a>>,
}

/// The fields of a `message` line a tree view shows, borrowed from the line where the JSON has
/// no escapes: the rest of the line (tool arguments, usage, details) is skipped unread.
#[derive(serde::Deserialize)]
struct MessageLine<'a> {
    #[serde(borrow)]
    timestamp: Cow<'a, str>,
    #[serde(borrow)]
    message: ShownMessage<'a>,
}

/// A role as a tree node keeps it: reins's own roles without an allocation each.
fn role_name(role: String) -> Cow<'static, str> {
    match role.as_str() {
        "user" => Cow::Borrowed("user"),
        "assistant" => Cow::Borrowed("assistant"),
        "toolResult" => Cow::Borrowed("toolResult"),
        _ => Cow::Owned(role),
    }
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShownMessage<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(default, borrow)]
    content: Option<ShownContent<'a>>,
    #[serde(default, borrow)]
    tool_name: Option<Cow<'a, str>>,
}

/// A message's content: a plain string (pi allows one) or blocks.
enum ShownContent<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<ShownBlock<'a>>),
}

#[derive(serde::Deserialize)]
struct ShownBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for ShownContent<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for ContentVisitor<'a> {
            type Value = ShownContent<'a>;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a string or an array of content blocks")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(ShownContent::Text(Cow::Borrowed(text)))
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(ShownContent::Text(Cow::Owned(text.to_string())))
            }
            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(ShownContent::Text(Cow::Owned(text)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                while let Some(block) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(ShownContent::Blocks(blocks))
            }
        }
        deserializer.deserialize_any(ContentVisitor(std::marker::PhantomData))
    }
}

/// The node of a user, assistant or tool result message (id, parent and label left for the
/// caller) — the same as reading the message in full and taking [`message_preview`] of it;
/// `None` for another role (the line is then read in full, as any line).
fn message_node(timestamp: Cow<'_, str>, message: ShownMessage<'_>) -> Option<TreeNode> {
    // The text blocks joined by `separator`; one block is borrowed as it is.
    let texts = |separator: &str| -> Cow<'_, str> {
        match &message.content {
            Some(ShownContent::Text(text)) => Cow::Borrowed(&**text),
            Some(ShownContent::Blocks(blocks)) => {
                let mut texts = blocks
                    .iter()
                    .filter(|block| block.kind == "text")
                    .map(|block| block.text.as_deref().unwrap_or_default());
                match (texts.next(), texts.next()) {
                    (None, _) => Cow::Borrowed(""),
                    (Some(only), None) => Cow::Borrowed(only),
                    (Some(first), Some(second)) => {
                        let mut joined = [first, second].join(separator);
                        for text in texts {
                            joined.push_str(separator);
                            joined.push_str(text);
                        }
                        Cow::Owned(joined)
                    }
                }
            }
            None => Cow::Borrowed(""),
        }
    };
    let (role, text) = match &*message.role {
        "user" => ("user", texts(" ")),
        "assistant" => {
            let text = texts("");
            if text.trim().is_empty() {
                let calls: Vec<String> = match &message.content {
                    Some(ShownContent::Blocks(blocks)) => blocks
                        .iter()
                        .filter(|block| block.kind == "toolCall")
                        .map(|block| format!("{}(…)", block.name.as_deref().unwrap_or_default()))
                        .collect(),
                    _ => Vec::new(),
                };
                ("assistant", Cow::Owned(calls.join(", ")))
            } else {
                ("assistant", text)
            }
        }
        "toolResult" => {
            let text = format!("{}: {}", message.tool_name.as_deref().unwrap_or_default(), texts(""));
            ("toolResult", Cow::Owned(text))
        }
        _ => return None,
    };
    Some(TreeNode {
        id: String::new(),
        parent_id: None,
        kind: "message",
        role: Some(Cow::Borrowed(role)),
        preview: preview(&text, 120),
        label: None,
        timestamp: timestamp.into_owned(),
    })
}

fn describe(kind: &EntryKind) -> (&'static str, Option<String>, String) {
    match kind {
        EntryKind::Message(value) => {
            let record = serde_json::from_value::<reins_session::MessageRecord>(value.clone()).ok();
            let role = record.as_ref().map(|record| record.role.clone());
            let text = record.and_then(|record| record.into_message()).map(|m| message_preview(&m)).unwrap_or_default();
            ("message", role, text)
        }
        EntryKind::ModelChange { provider, model_id } => ("model_change", None, format!("{provider}/{model_id}")),
        EntryKind::ThinkingLevelChange { thinking_level } => ("thinking_level_change", None, thinking_level.clone()),
        EntryKind::ActiveToolsChange { tools } => ("active_tools_change", None, tools.join(", ")),
        EntryKind::Compaction { summary, .. } => ("compaction", None, summary.clone()),
        EntryKind::BranchSummary { summary, .. } => ("branch_summary", None, summary.clone()),
        EntryKind::Custom { custom_type, data } => ("custom", None, custom_preview(custom_type, data.as_ref())),
        EntryKind::CustomMessage { custom_type, .. } => ("custom_message", None, custom_type.clone()),
        EntryKind::Label { label, .. } => ("label", None, label.clone().unwrap_or_default()),
        EntryKind::SessionInfo { name } => ("session_info", None, name.clone().unwrap_or_default()),
        EntryKind::Leaf { target_id } => ("leaf", None, target_id.clone()),
        EntryKind::ContextEdit { target_id, replacement } => {
            let what = if replacement.is_some() { "replaces" } else { "leaves out" };
            ("context_edit", None, format!("{what} {target_id}"))
        }
        EntryKind::Unknown(kind) => ("unknown", None, kind.clone()),
    }
}

/// What a checkpoint entry recorded ("edit src/a.rs, create b.rs"; "bash: make (not tracked)");
/// another custom entry by its type.
fn custom_preview(custom_type: &str, data: Option<&serde_json::Value>) -> String {
    let data = data.cloned().unwrap_or_default();
    match custom_type {
        reins_checkpoints::FILE_CHANGE => match reins_checkpoints::FileChangeRecord::parse(&data) {
            Ok(record) => reins_checkpoints::describe_files(&record),
            Err(_) => custom_type.to_string(),
        },
        reins_checkpoints::COMMAND => match reins_checkpoints::CommandRecord::parse(&data) {
            Ok(record) => {
                let what = record.command.map_or(record.tool.clone(), |command| format!("{}: {command}", record.tool));
                format!("{what} (its effects on files are not tracked)")
            }
            Err(_) => custom_type.to_string(),
        },
        crate::runtime::SUBAGENT_ENTRY => {
            let field = |name: &str| data.get(name).and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
            format!("subagent {}: {}", field("sessionId"), field("name"))
        }
        crate::runtime::TODO_ENTRY => crate::runtime::todo_preview(&data),
        _ => custom_type.to_string(),
    }
}

fn message_preview(message: &Message) -> String {
    match message {
        Message::User(user) => blocks_preview(&user.content),
        Message::Assistant(assistant) => {
            let text = assistant.text();
            if !text.trim().is_empty() {
                return text;
            }
            let calls: Vec<String> = assistant.tool_calls().map(|call| format!("{}(…)", call.name)).collect();
            calls.join(", ")
        }
        Message::ToolResult(result) => format!("{}: {}", result.tool_name, result.text()),
    }
}

fn blocks_preview(blocks: &[Content]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first `max_chars` characters of `text` on one line.
pub fn preview(text: &str, max_chars: usize) -> String {
    // Only the words that can show are joined: one more character than fits decides the cut.
    // Never longer than `text`: its words with one space between.
    let mut one_line = String::with_capacity(text.len().min(4 * max_chars + 8));
    let mut chars = 0;
    for word in text.split_whitespace() {
        if chars > max_chars {
            break;
        }
        if !one_line.is_empty() {
            one_line.push(' ');
            chars += 1;
        }
        one_line.push_str(word);
        chars += word.chars().count();
    }
    // Not cut (nearly always): the line as it is, without a copy.
    let cut = match reins_ai::shorten(&one_line, max_chars) {
        Cow::Owned(cut) => Some(cut),
        Cow::Borrowed(_) => None,
    };
    cut.unwrap_or(one_line)
}

/// Writes a run's messages to its session file as the events go by: the user's messages are
/// written when they are sent, the model's are queued when they end and flushed at the save
/// points, `turn_end` and `agent_end`, so the file follows the event order and a crash loses at
/// most the model's part of the turn in progress.
#[derive(Clone)]
pub struct SessionRecorder {
    file: Arc<Mutex<SessionFile>>,
}

impl SessionRecorder {
    pub fn new(file: Arc<Mutex<SessionFile>>) -> Self {
        Self { file }
    }

    pub fn record(&self, event: &AgentEvent) {
        let mut file = lock(&self.file);
        let result = match event {
            // What the user typed is written at once (as pi does), so a crash before the answer
            // never loses it; the model's messages wait for the turn's save point.
            AgentEvent::MessageEnd { message: message @ Message::User(_) } => {
                file.append_message(message).and_then(|_| file.flush())
            }
            AgentEvent::MessageEnd { message } => file.append_message(message).map(drop),
            // Where the call was made, so the list follows the leaf (see `runtime/todos.rs`).
            AgentEvent::TodoUpdate { todos, .. } => {
                let data = crate::runtime::todo_data(todos);
                file.append(EntryKind::Custom { custom_type: crate::runtime::TODO_ENTRY.to_string(), data: Some(data) })
                    .map(drop)
            }
            AgentEvent::TurnEnd { tool_results, .. } => tool_results
                .iter()
                .try_for_each(|result| file.append_message(&Message::ToolResult(result.clone())).map(drop))
                .and_then(|()| file.flush()),
            // The end of a run is worth an fsync; turn ends only need the write to survive a
            // killed process, and an fsync per turn would cost more than the turn itself.
            AgentEvent::AgentEnd { .. } => {
                file.set_durability(Durability::Sync);
                let flushed = file.flush();
                file.set_durability(Durability::Write);
                flushed
            }
            _ => Ok(()),
        };
        if let Err(err) = result {
            tracing::error!("could not save the session {}: {err}", file.path().display());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use reins_ai::Message;
    use reins_session::SessionStore;

    use super::*;

    fn info(modified: u64, path: &str) -> SessionInfo {
        SessionInfo {
            id: path.into(),
            path: path.into(),
            name: None,
            first_message: None,
            entry_count: 0,
            modified,
            parent_session: None,
            usage: Default::default(),
        }
    }

    /// The paths of each page of `sessions` by `limit`, following the cursors.
    fn pages(sessions: &[SessionInfo], limit: usize) -> Vec<Vec<String>> {
        let mut pages = Vec::new();
        let mut cursor = None;
        loop {
            let page = SessionPage::of(sessions.to_vec(), cursor.as_deref(), Some(limit)).unwrap();
            pages.push(page.sessions.iter().map(|s| s.path.clone()).collect());
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return pages,
            }
        }
    }

    #[test]
    fn pages_follow_their_cursors_through_equal_times_and_new_sessions() {
        let sessions = [info(9, "/s/e"), info(7, "/s/d"), info(7, "/s/c:x"), info(7, "/s/b"), info(1, "/s/a")];
        assert_eq!(pages(&sessions, 2), [vec!["/s/e", "/s/d"], vec!["/s/c:x", "/s/b"], vec!["/s/a"]]);
        assert_eq!(pages(&sessions, 5), [vec!["/s/e", "/s/d", "/s/c:x", "/s/b", "/s/a"]]);
        let all = SessionPage::of(sessions.to_vec(), None, None).unwrap();
        assert_eq!((all.sessions.len(), all.next_cursor), (5, None));

        // A session created after the first page does not shift the second.
        let first = SessionPage::of(sessions.to_vec(), None, Some(2)).unwrap();
        let mut grown = sessions.to_vec();
        grown.insert(0, info(10, "/s/new"));
        let second = SessionPage::of(grown, first.next_cursor.as_deref(), Some(2)).unwrap();
        assert_eq!(second.sessions.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(), ["/s/c:x", "/s/b"]);
    }

    #[test]
    fn a_bad_cursor_or_limit_is_an_invalid_argument() {
        for (cursor, limit) in [(Some("nonsense"), Some(2)), (Some(":/s/a"), None), (None, Some(0))] {
            let error = SessionPage::of(vec![info(1, "/s/a")], cursor, limit).unwrap_err();
            assert_eq!(error.code(), "invalid_argument", "{cursor:?} {limit:?}");
        }
    }

    #[test]
    fn listing_rereads_only_changed_files_and_drops_deleted_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let store = SessionStore::new(tmp.path());
        let cwd = Path::new("/w");
        let mut first = store.create(cwd, None).unwrap();
        first.append_message(&Message::user("first")).unwrap();
        first.flush().unwrap();
        let mut second = store.create(cwd, None).unwrap();
        second.append_message(&Message::user("second")).unwrap();
        second.flush().unwrap();

        let mut listing = SessionListing::default();
        let firsts = |list: &[SessionInfo]| {
            let mut names: Vec<String> = list.iter().filter_map(|s| s.first_message.clone()).collect();
            names.sort();
            names
        };
        assert_eq!(firsts(&listing.list(&store.dir_for(cwd)).unwrap()), ["first", "second"]);

        // A cached entry that no longer matches its file is read again.
        second.append_message(&Message::user("more")).unwrap();
        second.flush().unwrap();
        let list = listing.list(&store.dir_for(cwd)).unwrap();
        let counts: Vec<usize> = {
            let mut counts: Vec<usize> = list.iter().map(|s| s.entry_count).collect();
            counts.sort();
            counts
        };
        assert_eq!(counts, [1, 2]);

        let first_path = first.path().to_path_buf();
        drop(first);
        std::fs::remove_file(first_path).unwrap();
        assert_eq!(firsts(&listing.list(&store.dir_for(cwd)).unwrap()), ["second"]);
        assert!(listing.list(&SessionStore::new(tmp.path().join("missing")).dir_for(cwd)).unwrap().is_empty());
    }

    #[test]
    fn pages_from_the_index_walk_the_whole_listing_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let store = SessionStore::new(tmp.path());
        let cwd = Path::new("/w");
        for n in 0..7 {
            let mut file = store.create(cwd, None).unwrap();
            file.append_message(&Message::user(format!("m{n}"))).unwrap();
            file.flush().unwrap();
        }
        let dir = store.dir_for(cwd);
        let mut listing = SessionListing::default();
        let whole = listing.list(&dir).unwrap();
        assert_eq!(whole.len(), 7);
        let expected = SessionPage::of(whole.clone(), None, Some(3)).unwrap();
        let (mut walked, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
        loop {
            let page = listing.page(&dir, cursor.as_deref(), Some(3)).unwrap();
            if pages == 0 {
                assert_eq!(page, expected);
            }
            pages += 1;
            assert!(page.sessions.len() <= 3);
            walked.extend(page.sessions);
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(walked, whole);
        assert!(listing.page(&dir, Some("nonsense"), Some(3)).is_err());
        assert!(listing.page(&dir, None, Some(0)).is_err());
    }

    /// The page a listing gives on the caller's thread is the page the full listing gives, turn
    /// after turn; with no index read yet, or another directory's, it leaves the work to `page`.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_cheap_page_is_the_full_page_and_follows_new_turns() {
        let tmp = tempfile::tempdir().unwrap();
        let store = SessionStore::new(tmp.path());
        let cwd = Path::new("/w");
        let mut file = store.create(cwd, None).unwrap();
        file.append_message(&Message::user("first")).unwrap();
        file.flush().unwrap();
        let dir = store.dir_for(cwd);
        let mut listing = SessionListing::default();
        assert!(listing.page_if_cheap(&dir, None, Some(5)).is_none(), "no index read yet");
        let full = listing.page(&dir, None, Some(5)).unwrap();
        assert_eq!(full.sessions[0].entry_count, 1);
        for turn in 2..=3 {
            file.append_message(&Message::user(format!("turn {turn}"))).unwrap();
            file.flush().unwrap();
            let cheap = listing.page_if_cheap(&dir, None, Some(5)).expect("one session grew: cheap").unwrap();
            assert_eq!(cheap.sessions[0].entry_count, turn);
            assert_eq!(cheap, listing.page(&dir, None, Some(5)).unwrap());
        }
        assert!(listing.page_if_cheap(&dir, None, Some(0)).unwrap().is_err(), "a bad limit is still refused");
        assert!(listing.page_if_cheap(&tmp.path().join("elsewhere"), None, Some(5)).is_none());
    }

    /// A scan reads each message once, with its envelope ([`read_line`]); what it shows must be
    /// what reading the lines one by one shows ([`SessionTreeView::of`] a loaded tree), on pi's
    /// files and on lines that only the slow way reads.
    #[test]
    fn a_scanned_view_is_the_view_of_the_loaded_tree() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../session/tests/fixtures");
        let mut files: Vec<std::path::PathBuf> = ["pi", "pi-1.6"]
            .iter()
            .flat_map(|dir| std::fs::read_dir(fixtures.join(dir)).unwrap())
            .map(|file| file.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            .collect();
        assert!(files.len() >= 10, "{files:?}");

        let tmp = tempfile::tempdir().unwrap();
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
        let at = r#""timestamp":"2025-01-01T00:00:00.000Z""#;
        let lines = [
            header.to_string(),
            format!(r#"{{"type":"message","id":"a","parentId":null,{at},"message":{{"role":"user","content":"plain\ttext \u001b[31m"}}}}"#),
            format!(r#"{{"type":"message","id":"b","parentId":"a",{at},"message":{{"role":"assistant","content":[{{"type":"text","text":"one"}},{{"type":"thinking","thinking":"x"}},{{"type":"text","text":"two"}}]}}}}"#),
            format!(r#"{{"type":"message","id":"c","parentId":"b",{at},"message":{{"role":"assistant","content":[{{"type":"toolCall","id":"t","name":"read","arguments":{{}}}},{{"type":"toolCall","id":"u","name":"bash","arguments":{{}}}}]}}}}"#),
            format!(r#"{{"type":"message","id":"d","parentId":"c",{at},"message":{{"role":"toolResult","toolCallId":"t","toolName":"read","content":[{{"type":"text","text":"a"}},{{"type":"text","text":"b"}}],"isError":false}}}}"#),
            format!(r#"{{"type":"message","id":"e","parentId":"d",{at},"message":{{"role":"user","content":[{{"type":"text","text":"x"}},{{"type":"text","text":"y"}}]}}}}"#),
            // Roles reins does not have, no timestamp, a timestamp that is a number, no message.
            format!(r#"{{"type":"message","id":"f","parentId":"e",{at},"message":{{"role":"bashExecution","command":"ls","output":"x"}}}}"#),
            r#"{"type":"message","id":"g","parentId":"f","message":{"role":"user","content":"no time"}}"#.to_string(),
            r#"{"type":"message","id":"h","parentId":"g","timestamp":5,"message":{"role":"user","content":"odd time"}}"#.to_string(),
            format!(r#"{{"type":"message","id":"i","parentId":"h",{at},"message":null}}"#),
            format!(r#"{{"type":"message","id":"j","parentId":"i",{at},"message":{{"role":"user","content":"twice"}},"message":{{"role":"user","content":"again"}}}}"#),
            // A parent later in the file, an id twice, a label, an escaped id, a compaction.
            format!(r#"{{"type":"message","id":"k","parentId":"m",{at},"message":{{"role":"user","content":"early"}}}}"#),
            format!(r#"{{"type":"message","id":"\u006d","parentId":"j",{at},"message":{{"role":"user","content":"escaped id"}}}}"#),
            format!(r#"{{"type":"message","id":"a","parentId":"m",{at},"message":{{"role":"user","content":"again a"}}}}"#),
            format!(r#"{{"type":"label","id":"l","parentId":"a",{at},"targetId":"b","label":"mark"}}"#),
            format!(r#"{{"type":"compaction","id":"n","parentId":"l",{at},"summary":"sum","firstKeptEntryId":"a","tokensBefore":5}}"#),
            format!(r#"{{"type":"message","id":"o","parentId":"n",{at},"message":{{"role":"user","content":"{}"}}}}"#, "word ".repeat(40)),
            "not json".to_string(),
            format!(r#"{{"type":"leaf","id":"p","parentId":"o",{at},"targetId":"e"}}"#),
        ];
        let crafted = tmp.path().join("crafted.jsonl");
        std::fs::write(&crafted, lines.join("\n") + "\n").unwrap();
        files.push(crafted);

        for path in files {
            let tree = SessionTree::load(&path).unwrap();
            let loaded = SessionTreeView::of(&tree.header().id, &tree);
            assert_eq!(SessionTreeView::scan(&path).unwrap(), loaded, "{}", path.display());
        }
    }
}
