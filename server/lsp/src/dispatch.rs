//! Carrying out a parsed [`Command`]: each returns at once with its result; runs go on in the
//! background and report through `reins/event`. Also [`guarded`], which keeps a panicking
//! handler from taking the server down.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use reins_ai::{Content, ThinkingLevel};
use reins_harness::{Harness, HarnessError};
use reins_tools::Workspace;
use ropey::Rope;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{Diagnostic, Range};

use crate::ask::{self, Selection};
use crate::checkout;
use crate::commands::{Ask, ChatSend, Command, ModelSet};
use crate::documents::{self, PositionEncoding};
use crate::server::State;
use crate::{from_proto, lock, to_proto};

/// How long an ask waits for the editor's diagnostics around the selection.
const ASK_TIMEOUT: Duration = Duration::from_secs(1);

/// Runs a handler's work in its own task: if it panics, the panic is logged and the request is
/// answered with an internal error, and the server goes on serving.
pub async fn guarded<T, F>(what: &str, work: F) -> Result<T>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    match tokio::spawn(work).await {
        Ok(result) => result,
        Err(err) => {
            tracing::error!("the handler for {what} failed: {err}");
            Err(to_proto::internal_error(what))
        }
    }
}

/// Session operations read and write files with blocking I/O (a fork copies a whole path, a
/// listing reads every changed file): they run on the blocking pool, not on the workers that
/// serve requests.
/// `answer` with the text of the user message a fork or a move landed before, when it did.
fn given_back(mut answer: Value, prompt: Option<String>) -> Value {
    if let (Some(prompt), Some(fields)) = (prompt, answer.as_object_mut()) {
        fields.insert("prompt".to_string(), json!(prompt));
    }
    answer
}

async fn on_disk<T: Send + 'static>(
    harness: &Arc<Harness>,
    work: impl FnOnce(&Harness) -> std::result::Result<T, HarnessError> + Send + 'static,
) -> Result<T> {
    let harness = harness.clone();
    match tokio::task::spawn_blocking(move || work(&harness)).await {
        Ok(result) => result.map_err(to_proto::harness_error),
        Err(err) => {
            tracing::error!("a session operation failed: {err}");
            Err(to_proto::internal_error("the session operation"))
        }
    }
}

pub async fn execute(state: &State, command: Command) -> Result<Value> {
    let harness = &state.harness;
    let empty = || Ok(json!({}));
    match command {
        Command::ChatSend(send) => chat_send(state, send).await,
        Command::ChatSteer(steer) => state
            .harness_for(&steer.session_id)
            .steer(&steer.session_id, steer.text)
            .map_err(to_proto::harness_error)
            .and_then(|()| empty()),
        Command::ChatFollowUp(follow) => state
            .harness_for(&follow.session_id)
            .follow_up(&follow.session_id, follow.text)
            .map_err(to_proto::harness_error)
            .and_then(|()| empty()),
        Command::ChatCancel(session) => {
            let harness = state.harness_for(&session.session_id);
            let cancelled = harness.cancel(&session.session_id).map_err(to_proto::harness_error)?;
            Ok(json!({ "cancelled": cancelled }))
        }
        Command::Ask(ask) => ask_about_selection(state, ask).await,
        Command::SessionNew(new) if new.worktree => {
            // git makes the worktree: off the handler's thread.
            let (worktrees, name) = (state.worktrees.clone(), new.name);
            on_disk(harness, move |harness| worktrees.start(harness, name)).await
        }
        Command::SessionNew(new) => Ok(json!({ "sessionId": state.new_session(new.name)? })),
        Command::SessionList(list) => {
            // Answered here when the index is warm: handed to the blocking pool, a listing waits
            // for a core behind a streaming run (p99 6 ms against 2 ms for an in-memory request).
            let page = match harness.list_sessions_page_if_cheap(list.cursor.as_deref(), list.limit) {
                Some(page) => page.map_err(to_proto::harness_error)?,
                None => {
                    let (cursor, limit) = (list.cursor, list.limit);
                    on_disk(harness, move |harness| harness.list_sessions_page(cursor.as_deref(), limit)).await?
                }
            };
            Ok(to_proto::session_page(&page))
        }
        Command::SessionOpen(session) => {
            let session_id = on_disk(harness, move |harness| harness.open_session(&session.session_id)).await?;
            Ok(json!({ "sessionId": session_id }))
        }
        Command::SessionMessages(session) => {
            let messages = state.harness_for(&session.session_id).messages(&session.session_id);
            let messages = messages.map_err(to_proto::harness_error)?;
            let messages: Vec<_> = messages.iter().map(to_proto::message).collect();
            // The todo list where the leaf is, for the chat to show again with the conversation.
            let todos = harness.todos(&session.session_id).map_err(to_proto::harness_error)?;
            let todos = to_proto::todos(&todos);
            Ok(json!({ "sessionId": session.session_id, "messages": messages, "todos": todos }))
        }
        Command::SessionTree(session) => {
            let owner = state.harness_for(&session.session_id);
            let tree = on_disk(&owner, move |harness| harness.tree(&session.session_id)).await?;
            Ok(to_proto::session_tree(&tree))
        }
        // At one of the user's messages, a fork or a move lands before it and the answer gives
        // its text back (`prompt`) for the user to edit and send again.
        Command::SessionFork(fork) if fork.files => {
            let landing = harness.landing(&fork.session_id, &fork.entry_id).map_err(to_proto::harness_error)?;
            let (session_id, checkout) =
                harness.fork_with_files(&fork.session_id, &landing.entry_id).await.map_err(to_proto::harness_error)?;
            let mut answer = checkout::propose(state, &checkout);
            answer["sessionId"] = json!(session_id);
            Ok(given_back(answer, landing.prompt))
        }
        Command::SessionFork(fork) => {
            let (session_id, prompt) = on_disk(harness, move |harness| {
                let landing = harness.landing(&fork.session_id, &fork.entry_id)?;
                Ok((harness.fork(&fork.session_id, &landing.entry_id)?, landing.prompt))
            })
            .await?;
            Ok(given_back(json!({ "sessionId": session_id }), prompt))
        }
        Command::SessionNavigate(navigate) => {
            let landing = harness.landing(&navigate.session_id, &navigate.entry_id).map_err(to_proto::harness_error)?;
            let checkout = harness
                .navigate(&navigate.session_id, &landing.entry_id, navigate.summarize, navigate.files)
                .await
                .map_err(to_proto::harness_error)?;
            let answer = match checkout {
                Some(checkout) => checkout::propose(state, &checkout),
                None => json!({}),
            };
            Ok(given_back(answer, landing.prompt))
        }
        Command::SessionLabel(label) => {
            on_disk(harness, move |harness| harness.label(&label.session_id, &label.entry_id, label.label.as_deref()))
                .await?;
            empty()
        }
        Command::SessionRename(rename) => {
            on_disk(harness, move |harness| harness.rename(&rename.session_id, &rename.name)).await?;
            empty()
        }
        Command::SessionCompact(session) => {
            let compacted = harness.compact(&session.session_id).await.map_err(to_proto::harness_error)?;
            Ok(to_proto::compacted(&compacted))
        }
        Command::SessionSetThinking(set) => {
            let level = ThinkingLevel::parse(&set.level).ok_or_else(|| {
                let names = ThinkingLevel::names();
                to_proto::invalid_argument(format!(
                    "reins.session.setThinking: level: expected one of {names}, found {:?}",
                    set.level
                ))
            })?;
            let set = harness.set_thinking(&set.session_id, level).map_err(to_proto::harness_error)?;
            Ok(json!({ "thinkingLevel": set.level.as_str(), "note": set.note }))
        }
        Command::SessionSetTools(set) => {
            let set = on_disk(harness, move |harness| harness.set_tools(&set.session_id, &set.tools)).await?;
            Ok(to_proto::tools_set(&set))
        }
        Command::SessionUsage(session) => {
            let owner = state.harness_for(&session.session_id);
            let usage = on_disk(&owner, move |harness| harness.usage(&session.session_id)).await?;
            Ok(to_proto::session_usage(&usage))
        }
        Command::SessionLastRequest(session) => {
            let owner = state.harness_for(&session.session_id);
            let sent = on_disk(&owner, move |harness| harness.last_request(&session.session_id)).await?;
            Ok(to_proto::sent_request(sent.as_ref()))
        }
        Command::ModelList => Ok(to_proto::model_list(&harness.settings())),
        Command::ModelSet(set) => model_set(state, set),
        Command::EditAccept(accept) => {
            state.reviews.accept(&accept.id, accept.hunks, accept.allow_for_session, accept.reason)
        }
        Command::EditReject(reject) => state.reviews.reject(&reject.id, reject.reason),
        Command::EditComment(comment) => {
            let Some(text) = comment.comment else {
                return Err(to_proto::invalid_argument(
                    "reins.edit.comment: comment is missing; a client running the code action \"Comment on this change\" asks the user for it and adds it to the argument",
                ));
            };
            state.reviews.comment(&comment.id, comment.hunk, &text)
        }
        Command::EditList(list) => Ok(state.reviews.list(list.session_id.as_deref())),
        Command::McpList(list) => {
            // Waits for servers still starting, each within its startup timeout.
            let servers = harness.mcp_servers(list.session_id.as_deref()).await.map_err(to_proto::harness_error)?;
            Ok(to_proto::mcp_servers(&servers))
        }
        Command::SlashCommands => Ok(to_proto::slash_commands(&harness.commands())),
        // git answers for each worktree: off the handler's thread.
        Command::WorktreeList => Ok(to_proto::worktree_agents(&on_disk(harness, |h| Ok(h.worktree_agents())).await?)),
        Command::WorktreeReview(worktree) => state.worktrees.review_by_id(harness.clone(), worktree.id).await,
        Command::WorktreeDiscard(worktree) => state.worktrees.discard(harness.clone(), worktree.id).await,
    }
}

async fn chat_send(state: &State, send: ChatSend) -> Result<Value> {
    if send.text.trim().is_empty() {
        return Err(to_proto::invalid_argument("reins.chat.send: text is empty; type a message first"));
    }
    let mut selections = Vec::new();
    for context in send.context {
        selections.push(selection(state, &context.uri, context.range, context.diagnostics).await?);
    }
    if send.text.starts_with('/') && selections.is_empty() {
        // A slash command: a built-in is carried out, a template or skill starts a run.
        return state.execute(send.session_id, &send.text).await;
    }
    let text = ask::message(&send.text, &selections);
    state.start_run(send.session_id, vec![Content::text(text)])
}

async fn ask_about_selection(state: &State, ask: Ask) -> Result<Value> {
    if ask.range.start == ask.range.end {
        return Err(to_proto::invalid_argument("reins.ask: the range is empty; select the code to ask about"));
    }
    let question = ask.question.filter(|question| !question.trim().is_empty());
    let question = question.unwrap_or_else(|| ask::DEFAULT_QUESTION.to_string());
    let given = ask
        .diagnostics
        .into_iter()
        .filter(|diagnostic| ask::overlaps(diagnostic, ask.range) && diagnostic.source.as_deref() != Some("reins"))
        .collect();
    let mut selection = selection(state, &ask.uri, Some(ask.range), given).await?;
    if !state.diagnostics.can_answer() {
        let text = ask::message(&question, &[selection]);
        return state.start_run(ask.session_id, vec![Content::text(text)]);
    }
    // The editor is asked once the run has started: this handler does not wait for it.
    let editor = state.diagnostics.clone();
    let content = async move {
        let uri = ask.uri;
        match editor.request(Some(std::slice::from_ref(&uri)), ASK_TIMEOUT).await {
            Ok(items) => {
                let (first, last) = ask::line_span(selection.range);
                let lines = first.saturating_sub(ask::LINES_AROUND)..=last.saturating_add(ask::LINES_AROUND);
                selection.diagnostics = items
                    .into_iter()
                    .flat_map(|(_, diagnostics)| diagnostics)
                    .filter(|diagnostic| lines.contains(&(diagnostic.range.start.line + 1)))
                    .collect();
                selection
                    .diagnostics
                    .sort_by_key(|diagnostic| (diagnostic.range.start.line, diagnostic.range.start.character));
                selection.lines_around = ask::LINES_AROUND;
            }
            Err(err) => tracing::debug!("asking about {uri} without the editor's diagnostics: {err}"),
        }
        vec![Content::text(ask::message(&question, &[selection]))]
    };
    state.start_run_later(ask.session_id, Box::pin(content))
}

fn model_set(state: &State, set: ModelSet) -> Result<Value> {
    let harness = &state.harness;
    if set.model.trim().is_empty() {
        return Err(to_proto::invalid_argument("reins.model.set: model is empty"));
    }
    let model = match set.session_id {
        Some(session_id) => harness.set_model(&session_id, &set.model).map_err(to_proto::harness_error)?,
        None => harness.choose_model(set.model.trim()),
    };
    Ok(json!({ "model": to_proto::model(&model) }))
}

/// A piece of a document: from the open buffer when there is one, else from the disk (inside
/// the workspace only).
async fn selection(state: &State, uri: &str, range: Option<Range>, diagnostics: Vec<Diagnostic>) -> Result<Selection> {
    let parsed = from_proto::uri(uri)?;
    let path = from_proto::file_path(&parsed);
    let open = {
        let documents = lock(&state.documents);
        let document =
            documents.get(parsed.as_str()).or_else(|| path.as_deref().and_then(|path| documents.by_path(path)));
        document.map(|document| (document.rope.clone(), document.language_id.clone(), documents.encoding))
    };
    let (rope, language_id, encoding) = match open {
        Some(open) => open,
        None => {
            let path = path
                .as_deref()
                .ok_or_else(|| to_proto::invalid_argument(format!("{uri} is not open and not a file")))?;
            let file =
                state.workspace.read_text(path).await.map_err(|err| to_proto::invalid_argument(err.to_string()))?;
            (Rope::from_str(&file.text), String::new(), PositionEncoding::Utf16)
        }
    };
    let range = range.unwrap_or_else(|| Range {
        start: Default::default(),
        end: documents::position_of(&rope, rope.len_chars(), encoding),
    });
    let start = documents::char_index(&rope, range.start, encoding);
    let end = documents::char_index(&rope, range.end, encoding).max(start);
    Ok(Selection {
        path: display_path(state, path.as_deref(), uri),
        range,
        language_id,
        text: rope.slice(start..end).to_string(),
        diagnostics,
        lines_around: 0,
    })
}

/// The path relative to the workspace root when inside it; the URI for non-files.
fn display_path(state: &State, path: Option<&Path>, uri: &str) -> String {
    match path {
        Some(path) => reins_tools::display_path(path, &state.workspace.cwd()),
        None => uri.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_handler_becomes_an_internal_error() {
        let answer: Result<()> = guarded("reins.test", async { panic!("boom") }).await;
        let err = answer.unwrap_err();
        assert_eq!(err.code, tower_lsp_server::jsonrpc::ErrorCode::InternalError);
        assert_eq!(err.data.unwrap()["code"], "internal");
        let fine: Result<u8> = guarded("reins.test", async { Ok(7) }).await;
        assert_eq!(fine.unwrap(), 7);
    }
}
