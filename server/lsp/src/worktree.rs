//! Worktree agents from the editor: `reins.session.new {worktree: true}` starts a session in a
//! harness of its own over a new git worktree (the harness's [`Harness::start_worktree`]), where
//! its edits land without asking while the user keeps working. When one of its runs ends, its
//! whole change comes back as one proposal against the user's files as they are then (open
//! buffers first): a pending edit per file, reviewed hunk by hunk like any edit and applied with
//! `workspace/applyEdit`, and the files where the user changed the same lines named as conflicts,
//! never written. Once nothing of it is left to land, the worktree is removed; otherwise it stays
//! (a killed server leaves it too) for `reins.worktree.review` to propose again, or
//! `reins.worktree.discard` to drop.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use reins_agent::FileChange;
use reins_harness::{Harness, HarnessError, Merged, Worktree};
use reins_review::Origin;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;

use crate::documents::Documents;
use crate::events::Events;
use crate::review::{Reviews, path_uri};
use crate::workspace::EditorWorkspace;
use crate::{lock, to_proto};

/// The tool the pending edits of a worktree's review name (no tool call made them).
const TOOL: &str = "worktree";

/// The worktree agents this server started, and what their reviews need.
pub struct WorktreeAgents {
    /// Each live agent's worktree and harness, by its session id.
    live: Mutex<HashMap<String, Live>>,
    reviews: Arc<Reviews>,
    workspace: Arc<EditorWorkspace>,
    documents: Arc<Mutex<Documents>>,
    events: Events,
}

#[derive(Clone)]
struct Live {
    worktree: Worktree,
    harness: Arc<Harness>,
}

impl WorktreeAgents {
    pub fn new(
        reviews: Arc<Reviews>,
        workspace: Arc<EditorWorkspace>,
        documents: Arc<Mutex<Documents>>,
        events: Events,
    ) -> Self {
        Self { live: Mutex::default(), reviews, workspace, documents, events }
    }

    /// `reins.session.new {worktree: true}`: a worktree of the workspace's repository and a
    /// session in the harness that works there; answers `{sessionId, worktree: {id, dir}}`.
    pub fn start(&self, main: &Harness, name: Option<String>) -> std::result::Result<Value, HarnessError> {
        let (worktree, harness) = main.start_worktree()?;
        let session_id = match harness.new_session(name, None) {
            Ok(session_id) => session_id,
            Err(err) => {
                let _ = worktree.remove();
                return Err(err);
            }
        };
        let answer = json!({"sessionId": session_id, "worktree": {"id": worktree.id, "dir": worktree.dir}});
        lock(&self.live).insert(session_id, Live { worktree, harness });
        Ok(answer)
    }

    /// The harness of worktree agent session `session_id`, when it is one.
    pub fn harness_of(&self, session_id: &str) -> Option<Arc<Harness>> {
        lock(&self.live).get(session_id).map(|live| live.harness.clone())
    }

    /// Every live agent's harness (to shut their MCP servers down with the server's).
    pub fn harnesses(&self) -> Vec<Arc<Harness>> {
        lock(&self.live).values().map(|live| live.harness.clone()).collect()
    }

    /// A run of session `session_id` ended: if it is a worktree agent's, its change is proposed.
    pub async fn run_finished(self: &Arc<Self>, main: Arc<Harness>, session_id: &str) {
        let Some(live) = lock(&self.live).get(session_id).cloned() else { return };
        if let Err(err) = self.review(main, live.worktree).await {
            tracing::warn!("the review of worktree agent {session_id}: {}", err.message);
        }
    }

    /// `reins.worktree.review {id}`: proposes the agent's change of worktree `id` (found on
    /// disk, so one a killed server left works too), replacing its earlier review's pending
    /// edits; answers the review and sends it as a `worktree_review` event too.
    pub async fn review_by_id(self: &Arc<Self>, main: Arc<Harness>, id: String) -> Result<Value> {
        let found = main.clone();
        let worktree = on_blocking(move || found.worktree(&id)).await?;
        self.review(main, worktree).await
    }

    async fn review(self: &Arc<Self>, main: Arc<Harness>, worktree: Worktree) -> Result<Value> {
        let run_id = format!("worktree-{}", worktree.id);
        for id in self.reviews.pending_in_run(&run_id) {
            let _ = self.reviews.reject(&id, Some("a new review of the same worktree replaced this one".into()));
        }
        let documents = self.documents.clone();
        let read = worktree.clone();
        let (merged, (session_id, answer)) = on_blocking(move || {
            let merged = read.merge_onto(&|path: &Path| current_text(&documents, path).map(|(text, _)| text))?;
            Ok((merged, main.worktree_session(&read)))
        })
        .await?;
        let session_id = session_id.unwrap_or_else(|| run_id.clone());
        let origin = Origin {
            session_id: session_id.clone(),
            run_id: run_id.clone(),
            tool_call_id: String::new(),
            tool: TOOL.into(),
        };
        let cwd = reins_tools::Workspace::cwd(self.workspace.as_ref());
        let mut edits = Vec::new();
        let mut conflicts = Vec::new();
        let mut deciding = Vec::new();
        for file in merged {
            let path = worktree.repo.join(&file.path);
            let shown = reins_tools::display_path(&path, &cwd);
            let uri = path_uri(&path);
            match self.change_of(&path, &file) {
                Ok(None) => {}
                Ok(Some(change)) => {
                    let action = match (&change.before, change.delete) {
                        (None, _) => "create",
                        (Some(_), true) => "delete",
                        (Some(_), false) => "merge",
                    };
                    let (id, done) = self.reviews.propose_change(origin.clone(), change, self.workspace.clone());
                    deciding.push(done);
                    edits.push(to_proto::checkout_edit(&id, &shown, uri, action));
                }
                Err(reason) => conflicts.push(json!({
                    "path": shown,
                    "uri": uri,
                    "reason": reason,
                    "agentFile": worktree.dir.join(&file.path),
                })),
            }
        }
        let review = json!({
            "id": worktree.id,
            "sessionId": session_id,
            "dir": worktree.dir,
            "summary": answer.unwrap_or_default(),
            "edits": edits,
            "conflicts": conflicts,
        });
        let mut event = review.clone();
        event["type"] = json!("worktree_review");
        self.events.review(session_id.clone(), run_id.clone(), event);
        let agents = self.clone();
        tokio::spawn(async move {
            for done in deciding {
                let _ = done.await;
            }
            agents.remove_if_landed(worktree, session_id, run_id).await;
        });
        Ok(review)
    }

    /// The pending edit that lands `file`'s merge on the user's file: `None` when it is there
    /// already, the reason when both changed the same lines.
    fn change_of(&self, path: &Path, file: &Merged) -> std::result::Result<Option<FileChange>, String> {
        let after = match &file.result {
            Ok(after) if *after == file.current => return Ok(None),
            Ok(after) => after.clone(),
            Err(conflict) => return Err(conflict.description.clone()),
        };
        let version = current_text(&self.documents, path).and_then(|(_, version)| version);
        Ok(Some(FileChange {
            path: path.to_path_buf(),
            before: file.current.clone(),
            delete: after.is_none(),
            after: after.unwrap_or_default(),
            moved_to: None,
            version,
            notes: vec![format!("the worktree agent's change of {}, with your own edits since kept", file.path)],
        }))
    }

    /// The review is decided: when nothing of the agent's change is left to land, the worktree
    /// goes (and a `worktree_removed` event says so); otherwise it is kept for another review.
    async fn remove_if_landed(&self, worktree: Worktree, session_id: String, run_id: String) {
        let documents = self.documents.clone();
        let landed = worktree.clone();
        let removed = on_blocking(move || {
            if !landed.dir.exists() {
                // Discarded meanwhile.
                return Ok(false);
            }
            let merged = landed.merge_onto(&|path: &Path| current_text(&documents, path).map(|(text, _)| text))?;
            let done = merged.iter().all(|file| file.result.as_ref().is_ok_and(|after| *after == file.current));
            if done {
                landed.remove()?;
            }
            Ok(done)
        })
        .await;
        match removed {
            Ok(true) => {
                lock(&self.live).retain(|_, live| live.worktree.id != worktree.id);
                let event = json!({"type": "worktree_removed", "id": worktree.id});
                self.events.review(session_id, run_id, event);
            }
            // Or discarded while it was merged.
            Ok(false) => {}
            Err(_) if !worktree.dir.exists() => {}
            Err(err) => tracing::warn!("worktree {}: {}", worktree.id, err.message),
        }
    }

    /// `reins.worktree.discard {id}`: stops its agent if it runs here, drops its pending
    /// edits and removes the worktree with what the agent did in it.
    pub async fn discard(&self, main: Arc<Harness>, id: String) -> Result<Value> {
        let found = main.clone();
        let wanted = id.clone();
        let worktree = on_blocking(move || found.worktree(&wanted)).await?;
        let live: Vec<(String, Live)> = {
            let mut live = lock(&self.live);
            let ids: Vec<String> =
                live.iter().filter(|(_, live)| live.worktree.id == id).map(|(session, _)| session.clone()).collect();
            ids.into_iter().filter_map(|session| live.remove(&session).map(|live| (session, live))).collect()
        };
        for (session_id, live) in live {
            let _ = live.harness.cancel(&session_id);
            live.harness.shutdown().await;
        }
        for edit in self.reviews.pending_in_run(&format!("worktree-{id}")) {
            let _ = self.reviews.reject(&edit, Some("the worktree was discarded".into()));
        }
        on_blocking(move || worktree.remove()).await?;
        Ok(json!({"removed": id}))
    }
}

/// The user's text of `path` now, with the buffer's version when it is open (`None`: absent).
fn current_text(documents: &Mutex<Documents>, path: &Path) -> Option<(String, Option<i32>)> {
    if let Some(document) = lock(documents).by_path(path) {
        return Some((document.text(), Some(document.version)));
    }
    std::fs::read(path).ok().map(|bytes| (String::from_utf8_lossy(&bytes).into_owned(), None))
}

/// git and the disk, off the workers that serve requests.
async fn on_blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::result::Result<T, HarnessError> + Send + 'static,
) -> Result<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(to_proto::harness_error),
        Err(err) => {
            tracing::error!("a worktree operation failed: {err}");
            Err(to_proto::internal_error("the worktree operation"))
        }
    }
}
