//! What the model is sent for a position in the tree: the messages on the path from the root to a
//! leaf, with the latest compaction applied, and the model and thinking level in force there.
//!
//! The rules follow pi's `buildSessionContext` and the message conversion of its providers (so the
//! same file gives the same request), plus one guarantee pi leaves to each provider: the result is
//! always valid to send — every tool call is answered exactly once, right after its assistant
//! message, and no result is left without its call.

use std::collections::{HashMap, HashSet, VecDeque};

use reins_ai::{AssistantMessage, Content, Message, StopReason, ToolResultMessage, UserMessage};
use serde::Deserialize;

use crate::compaction::estimate_tokens;
use crate::error::SessionError;
use crate::format::{ContextLine, Entry, EntryKind, EntryTag, SystemRecord};
use crate::message::ContentField;
use crate::message::{branch_summary_text, compaction_summary_text, user_message};
use crate::time::ms_from_iso;
use crate::tree::SessionTree;

/// The text of the result reins puts in for a tool call that never got one.
pub const INTERRUPTED_RESULT: &str = "interrupted";

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionContext {
    pub messages: Vec<Message>,
    /// From the latest `model_change` or assistant message on the path.
    pub model: Option<ModelRef>,
    /// From the latest `thinking_level_change` on the path; `None` when never set (pi: "off").
    pub thinking_level: Option<String>,
    /// The tools the session offers the model at this point, as recorded by pi 1.6's system
    /// messages (and reins's `active_tools_change`); `None` when the path records none.
    pub active_tools: Option<Vec<String>>,
    /// How many of the oldest messages [`SessionTree::context_within`] left out (none for
    /// [`SessionTree::context`]).
    pub left_out: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: String,
    pub model_id: String,
}

impl SessionTree {
    /// The context at the current leaf (empty for a session without entries).
    pub fn context(&self) -> Result<SessionContext, SessionError> {
        match self.leaf_index() {
            Some(leaf) => Ok(self.context_at(leaf)),
            None => Ok(SessionContext::default()),
        }
    }

    /// The context at entry `leaf`.
    pub fn context_for(&self, leaf: &str) -> Result<SessionContext, SessionError> {
        Ok(self.context_at(self.index_of(leaf)?))
    }

    fn context_at(&self, leaf: u32) -> SessionContext {
        let mut messages = Vec::new();
        let (model, thinking_level, active_tools) = self.walk_context(leaf, &mut |message| messages.push(message));
        SessionContext { messages, model, thinking_level, active_tools, left_out: 0 }
    }

    /// The context at the current leaf with only as many of its newest messages as a request
    /// could carry: when they come to more than `max_tokens` ([`estimate_tokens`]), the oldest
    /// are left out, down to the fewest newest that still come to more — so that a check
    /// against the window still finds the context over it, and a session of a million messages
    /// is not held whole. `max_tokens` is given the model recorded at the leaf (to look up its
    /// window). A context within the limit is [`SessionTree::context`]'s.
    pub fn context_within(&self, max_tokens: impl FnOnce(Option<&ModelRef>) -> u64) -> SessionContext {
        let Some(leaf) = self.leaf_index() else { return SessionContext::default() };
        let (model, _) = self.settings(&self.path_indices(leaf));
        let max_tokens = max_tokens(model.as_ref());
        let mut newest: VecDeque<(u64, Message)> = VecDeque::new();
        let (mut tokens, mut left_out) = (0, 0);
        let (model, thinking_level, active_tools) = self.walk_context(leaf, &mut |message| {
            let estimate = estimate_tokens(&message);
            tokens += estimate;
            newest.push_back((estimate, message));
            while let Some(&(oldest, _)) = newest.front()
                && newest.len() > 1
                && tokens - oldest > max_tokens
            {
                tokens -= oldest;
                newest.pop_front();
                left_out += 1;
            }
        });
        let messages = newest.into_iter().map(|(_, message)| message).collect();
        SessionContext { messages, model, thinking_level, active_tools, left_out }
    }

    /// The estimate of the tokens of the context at the current leaf ([`estimate_context_tokens`]
    /// of its messages), counted a message at a time: the messages are never all held at once.
    pub fn context_tokens(&self) -> u64 {
        let mut tokens = 0;
        if let Some(leaf) = self.leaf_index() {
            self.walk_context(leaf, &mut |message| tokens += estimate_tokens(&message));
        }
        tokens
    }

    /// Hands the messages of the context at entry `leaf` to `sink` in order, made valid to send
    /// as they go ([`repair_tool_pairs`]), and answers the model, thinking level and tools in
    /// force there.
    fn walk_context(
        &self,
        leaf: u32,
        sink: &mut dyn FnMut(Message),
    ) -> (Option<ModelRef>, Option<String>, Option<Vec<String>>) {
        let path = self.path_indices(leaf);
        let (model, thinking_level) = self.settings(&path);
        let mut repair = Repair::default();
        let mut tools = ActiveTools::default();
        let compaction_at = path.iter().rposition(|&index| self.tag(index) == EntryTag::Compaction);
        // The entries the context is built from, as pi's `buildContextEntries`: with a compaction,
        // its summary, the kept entries before it (without system messages: the compaction's own
        // checkpoint stands for them) and everything after it.
        let entries: Vec<u32> = match compaction_at {
            Some(at) => {
                let compaction = self.fields(path[at]);
                let timestamp = entry_ms(&compaction);
                repair.push(
                    user_message(
                        vec![Content::text(compaction_summary_text(compaction.summary.as_deref().unwrap_or_default()))],
                        timestamp,
                    ),
                    sink,
                );
                if let Some(checkpoint) = &compaction.system_message {
                    tools.apply(checkpoint);
                }
                // As pi: kept entries run from `firstKeptEntryId` to the compaction; when that entry
                // is not on the path, nothing before the compaction is kept.
                let first_kept = compaction.first_kept_entry_id.as_deref();
                let kept_from = path[..at].iter().position(|&index| Some(self.id_at(index)) == first_kept);
                let kept = kept_from.map_or(&path[..0], |from| &path[from..at]);
                let kept = kept.iter().copied().filter(|&index| !self.is_system_message(index));
                kept.chain(path[at + 1..].iter().copied()).collect()
            }
            None => path,
        };
        let edits = self.context_edits(&entries);
        for &index in &entries {
            // A `context_edit` replaces the content of its target, or (no replacement) leaves
            // it out of the context.
            let edit = edits.get(self.id_at(index)).map(|&edit| self.fields(edit).replacement);
            if let Some(None) = edit {
                continue;
            }
            if self.tag(index) == EntryTag::ActiveToolsChange {
                tools.set(self.parse_entry(index).ok());
                continue;
            }
            let Some((message, editable)) = self.context_message(index, &mut tools) else { continue };
            let message = match edit {
                Some(Some(replacement)) if editable => with_content(message, replacement.content),
                _ => message,
            };
            repair.push(message, sink);
        }
        repair.finish(sink);
        (model, thinking_level, tools.names)
    }

    /// The latest `context_edit` among `entries` for each target, by target id.
    fn context_edits(&self, entries: &[u32]) -> HashMap<String, u32> {
        let mut edits = HashMap::new();
        for &index in entries.iter().filter(|&&index| self.tag(index) == EntryTag::ContextEdit) {
            if let Some(target) = self.fields(index).target_id {
                edits.insert(target, index);
            }
        }
        edits
    }

    fn is_system_message(&self, index: u32) -> bool {
        self.tag(index) == EntryTag::Message
            && self.fields(index).message.is_some_and(|message| message.role == "system")
    }

    /// The message entry `index` contributes, if any, and whether a `context_edit` may replace
    /// its content (pi replaces that of user, assistant, tool result and custom messages). A
    /// pi 1.6 system message contributes no message (reins sends its own system prompt) but
    /// changes the active tools.
    fn context_message(&self, index: u32, tools: &mut ActiveTools) -> Option<(Message, bool)> {
        match self.tag(index) {
            EntryTag::Message => {
                let record = self.fields(index).message?;
                if record.role == "system" {
                    let line: SystemLine = serde_json::from_slice(self.line_bytes(index)).unwrap_or_default();
                    tools.apply(&line.message);
                    return None;
                }
                let editable = matches!(record.role.as_str(), "user" | "assistant" | "toolResult" | "custom");
                Some((record.into_message()?, editable))
            }
            EntryTag::CustomMessage => {
                let fields = self.fields(index);
                let timestamp = entry_ms(&fields);
                Some((user_message(fields.content?.into_content(), timestamp), true))
            }
            EntryTag::BranchSummary => {
                let fields = self.fields(index);
                let summary = fields.summary.as_deref().filter(|summary| !summary.is_empty())?;
                Some((user_message(vec![Content::text(branch_summary_text(summary))], entry_ms(&fields)), false))
            }
            _ => None,
        }
    }

    /// The model and thinking level in force at the end of `path`, scanning back from its end so
    /// that only a few entries are parsed.
    fn settings(&self, path: &[u32]) -> (Option<ModelRef>, Option<String>) {
        let mut model = None;
        let mut thinking_level = None;
        for &index in path.iter().rev() {
            if model.is_some() && thinking_level.is_some() {
                break;
            }
            match self.tag(index) {
                EntryTag::ModelChange if model.is_none() => {
                    let fields = self.fields(index);
                    if let (Some(provider), Some(model_id)) = (fields.provider, fields.model_id) {
                        model = Some(ModelRef { provider, model_id });
                    }
                }
                EntryTag::Message if model.is_none() => {
                    let Some(message) = self.fields(index).message else { continue };
                    if message.role == "assistant" {
                        model = Some(ModelRef {
                            provider: message.provider.unwrap_or_default(),
                            model_id: message.model.unwrap_or_default(),
                        });
                    }
                }
                EntryTag::ThinkingLevelChange if thinking_level.is_none() => {
                    thinking_level = self.fields(index).thinking_level;
                }
                _ => {}
            }
        }
        (model, thinking_level)
    }

    /// The line of entry `index` read for context building; a line whose fields have unexpected
    /// shapes contributes nothing rather than failing the whole context.
    pub(crate) fn fields(&self, index: u32) -> ContextLine {
        serde_json::from_slice(self.line_bytes(index)).unwrap_or_else(|error| {
            tracing::warn!(
                "{}: entry {} cannot be read for the context: {error}",
                self.path().display(),
                self.id_at(index)
            );
            ContextLine::default()
        })
    }
}

/// The tool set replayed along the path.
#[derive(Default)]
struct ActiveTools {
    names: Option<Vec<String>>,
}

impl ActiveTools {
    /// A pi 1.6 system message: tools added and removed (the first one adds them all).
    fn apply(&mut self, system: &SystemRecord) {
        if system.tools_added.is_empty() && system.tools_removed.is_empty() {
            return;
        }
        let names = self.names.get_or_insert_with(Vec::new);
        names.retain(|name| !system.tools_removed.iter().any(|removed| removed.name == *name));
        for added in &system.tools_added {
            if !names.contains(&added.name) {
                names.push(added.name.clone());
            }
        }
    }

    /// A reins `active_tools_change`: the whole set.
    fn set(&mut self, entry: Option<Entry>) {
        if let Some(Entry { kind: EntryKind::ActiveToolsChange { tools }, .. }) = entry {
            self.names = Some(tools);
        }
    }
}

/// The `message` of a pi 1.6 system message entry, for its tool changes.
#[derive(Deserialize, Default)]
#[serde(default)]
struct SystemLine {
    message: SystemRecord,
}

/// `message` with its content replaced by a `context_edit`'s.
fn with_content(message: Message, content: Option<ContentField>) -> Message {
    let content = content.map(ContentField::into_content).unwrap_or_default();
    match message {
        Message::User(user) => Message::User(UserMessage { content, ..user }),
        Message::Assistant(assistant) => Message::Assistant(AssistantMessage { content, ..assistant }),
        Message::ToolResult(result) => Message::ToolResult(ToolResultMessage { content, ..result }),
    }
}

fn entry_ms(fields: &ContextLine) -> u64 {
    fields.timestamp.as_deref().and_then(ms_from_iso).unwrap_or(0)
}

/// Makes a message list valid to send: assistant messages that failed, were refused or were aborted are dropped
/// (as pi's providers do: they may hold half a tool call), each remaining tool call is followed
/// by exactly one result (a synthetic error result [`INTERRUPTED_RESULT`] where none was
/// recorded), results without a call or answering a call twice are dropped, and a user message
/// that arrived between a call and its result moves after the results.
pub fn repair_tool_pairs(messages: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut repair = Repair::default();
    for message in messages {
        repair.push(message, &mut |message| out.push(message));
    }
    repair.finish(&mut |message| out.push(message));
    out
}

/// [`repair_tool_pairs`] a message at a time: what it holds back is only what follows the latest
/// assistant message, so a long context can be repaired as it streams.
#[derive(Default)]
struct Repair {
    open: OpenCalls,
}

impl Repair {
    fn push(&mut self, message: Message, out: &mut dyn FnMut(Message)) {
        let open = &mut self.open;
        match message {
            Message::Assistant(assistant)
                if matches!(assistant.stop_reason, StopReason::Error | StopReason::Aborted | StopReason::Refusal) =>
            {
                tracing::debug!("leaving a failed assistant message out of the context");
            }
            Message::Assistant(assistant) => {
                open.close(out);
                open.calls = assistant.tool_calls().map(|call| (call.id.clone(), call.name.clone())).collect();
                out(Message::Assistant(assistant));
            }
            Message::ToolResult(result) => {
                let expected = open.calls.iter().any(|(id, _)| *id == result.tool_call_id);
                if expected && open.answered.insert(result.tool_call_id.clone()) {
                    open.results.push(Message::ToolResult(result));
                } else {
                    tracing::debug!("leaving an orphan result for {} out of the context", result.tool_call_id);
                }
            }
            Message::User(user) => {
                if open.calls.is_empty() {
                    out(Message::User(user));
                } else {
                    open.held.push(Message::User(user));
                }
            }
        }
    }

    fn finish(mut self, out: &mut dyn FnMut(Message)) {
        self.open.close(out);
    }
}

/// The tool calls of the latest assistant message still waiting for results.
#[derive(Default)]
struct OpenCalls {
    calls: Vec<(String, String)>,
    answered: HashSet<String>,
    results: Vec<Message>,
    /// Messages that came before all results were in.
    held: Vec<Message>,
}

impl OpenCalls {
    fn close(&mut self, out: &mut dyn FnMut(Message)) {
        self.results.drain(..).for_each(&mut *out);
        for (id, name) in self.calls.drain(..) {
            if !self.answered.contains(&id) {
                out(Message::ToolResult(ToolResultMessage {
                    tool_call_id: id,
                    tool_name: name,
                    content: vec![Content::text(INTERRUPTED_RESULT)],
                    is_error: true,
                    details: None,
                    timestamp: 0,
                }));
            }
        }
        self.answered.clear();
        self.held.drain(..).for_each(out);
    }
}
