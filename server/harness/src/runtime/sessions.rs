//! The session side of the harness: starting, opening, listing, forking, navigating, labelling,
//! renaming and compacting sessions, a session's model, and its conversation.

use std::path::PathBuf;

use reins_ai::{Message, Model, now_ms};
use reins_checkpoints::{FILE_CHANGE, FileChangeRecord};
use reins_session::{Durability, EntryKind, EntryTag, SessionError, SessionFile};
use reins_tools::{EditFormat, edit_tool};

use super::{Checkout, Harness, SessionId, agent_context, lock, session_error};
use crate::compaction::{Compacted, branch_messages, compact_and_reload};
use crate::error::HarnessError;
use crate::sessions::{SessionInfo, SessionPage, SessionTreeView};
use crate::summary::branch_summary;

/// What a fork's name adds to its source's.
const FORK_MARK: &str = " (fork)";

impl Harness {
    /// Starts a new, empty session with the configured model.
    pub fn new_session(&self, name: Option<String>, model: Option<&str>) -> Result<SessionId, HarnessError> {
        let model = self.settings().resolve_model(model.filter(|model| !model.trim().is_empty()));
        if !self.options.persist {
            let id = format!("mem-{}-{:x}", self.next(), now_ms());
            return Ok(self.go_live(id, None, model, Vec::new(), Default::default(), Default::default()));
        }
        let mut file = self.store.create(&self.cwd(), None).map_err(session_error)?;
        file.set_durability(Durability::Write);
        file.append(EntryKind::ModelChange { provider: model.provider.clone(), model_id: model.id.clone() })
            .map_err(session_error)?;
        if let Some(name) = name.filter(|name| !name.trim().is_empty()) {
            file.set_name(&name).map_err(session_error)?;
        }
        file.flush().map_err(session_error)?;
        let id = file.id().to_string();
        Ok(self.go_live(id, Some(file), model, Vec::new(), Default::default(), Default::default()))
    }

    /// Opens a session by id (or unique prefix) or path, and continues from its leaf.
    pub fn open_session(&self, id_or_path: &str) -> Result<SessionId, HarnessError> {
        if let Some(live) = self.live(id_or_path) {
            return Ok(live.id.clone());
        }
        self.require_persist()?;
        if lock(&self.released).contains_key(id_or_path) {
            return self.session(id_or_path).map(|live| live.id.clone());
        }
        let path = self.store.find(id_or_path, &self.cwd()).map_err(session_error)?;
        if let Some(id) = self.open_at(&path)? {
            return Ok(id);
        }
        let file = SessionFile::open(&path).map_err(session_error)?;
        Ok(self.go_live_from_file(file))
    }

    /// Opens a session of the store by id, never by path (for clients that name sessions by id
    /// alone, such as ACP's `session/load`), and gives the working directory its file records.
    pub fn open_stored_session(&self, id: &str) -> Result<(SessionId, PathBuf), HarnessError> {
        self.require_persist()?;
        let path = self.store.find_id(id, &self.cwd()).map_err(session_error)?;
        let file = SessionFile::open(&path).map_err(session_error)?;
        let cwd = PathBuf::from(&file.tree().header().cwd);
        if let Some(live) = lock(&self.sessions).values().find(|live| live.has_path(&path)) {
            return Ok((live.id.clone(), cwd));
        }
        Ok((self.go_live_from_file(file), cwd))
    }

    /// Opens the most recent session of this workspace, if there is one; an error when that one
    /// cannot be opened.
    pub fn continue_recent(&self) -> Result<Option<SessionId>, HarnessError> {
        self.require_persist()?;
        let Some(path) = self.store.most_recent(&self.cwd()).map_err(session_error)? else { return Ok(None) };
        if let Some(id) = self.open_at(&path)? {
            return Ok(Some(id));
        }
        // The newest file is the one the user means; when it cannot be read, say so rather than
        // continue an older one or start over.
        let file =
            SessionFile::open(&path).map_err(|error| session_error(SessionError::NotContinued(Box::new(error))))?;
        Ok(Some(self.go_live_from_file(file)))
    }

    /// The session at `path` when it is open or released (then opened again), else `None`.
    fn open_at(&self, path: &std::path::Path) -> Result<Option<SessionId>, HarnessError> {
        let live = lock(&self.sessions).values().find(|live| live.has_path(path)).map(|live| live.id.clone());
        match live.or_else(|| self.released_at(path)) {
            Some(id) => self.session(&id).map(|live| Some(live.id.clone())),
            None => Ok(None),
        }
    }

    /// The sessions of this workspace, newest first.
    pub fn list_sessions(&self) -> Result<Vec<SessionInfo>, HarnessError> {
        if !self.options.persist {
            return Ok(Vec::new());
        }
        lock(&self.listing).list(&self.store.dir_for(&self.cwd()))
    }

    /// A page of this workspace's sessions (see [`SessionPage`]).
    pub fn list_sessions_page(&self, cursor: Option<&str>, limit: Option<usize>) -> Result<SessionPage, HarnessError> {
        if !self.options.persist {
            return SessionPage::of(Vec::new(), cursor, limit);
        }
        lock(&self.listing).page(&self.store.dir_for(&self.cwd()), cursor, limit)
    }

    /// [`Harness::list_sessions_page`] on the caller's thread when that is cheap (see
    /// [`crate::sessions::SessionListing::page_if_cheap`]); `None` when it is not, or another listing is under
    /// way, for the caller to call `list_sessions_page` where blocking is fine.
    pub fn list_sessions_page_if_cheap(
        &self,
        cursor: Option<&str>,
        limit: Option<usize>,
    ) -> Option<Result<SessionPage, HarnessError>> {
        if !self.options.persist {
            return Some(SessionPage::of(Vec::new(), cursor, limit));
        }
        let mut listing = self.listing.try_lock().ok()?;
        listing.page_if_cheap(&self.store.dir_for(&self.cwd()), cursor, limit)
    }

    /// The tree of a session by id (or unique prefix) or path, else of the workspace's most
    /// recent session, read without opening it.
    pub fn peek_tree(&self, id_or_path: Option<&str>) -> Result<SessionTreeView, HarnessError> {
        let path = match id_or_path {
            Some(id_or_path) => self.store.find(id_or_path, &self.cwd()).map_err(session_error)?,
            None => self.store.most_recent(&self.cwd()).map_err(session_error)?.ok_or_else(|| {
                let workspace = self.cwd();
                HarnessError::InvalidArgument(format!(
                    "there are no sessions in this workspace ({}) yet",
                    workspace.display()
                ))
            })?,
        };
        SessionTreeView::scan(&path).map_err(session_error)
    }

    /// A session's tree and current leaf.
    pub fn tree(&self, session_id: &str) -> Result<SessionTreeView, HarnessError> {
        let session = self.session(session_id)?;
        let file = session.file()?;
        let file = lock(file);
        Ok(SessionTreeView::of(&session.id, file.tree()))
    }

    /// A new session holding the path from the root to `entry_id`; continues from there.
    pub fn fork(&self, session_id: &str, entry_id: &str) -> Result<SessionId, HarnessError> {
        let session = self.session(session_id)?;
        let forked = {
            let mut file = lock(session.file()?);
            file.flush().map_err(session_error)?;
            file.fork(entry_id).map_err(session_error)?
        };
        // The fork carries the path's name; marked, it is told apart from its source in a list.
        let name =
            forked.tree().name().filter(|name| !name.ends_with(FORK_MARK)).map(|name| format!("{name}{FORK_MARK}"));
        let id = self.go_live_from_file(forked);
        if let Some(name) = name {
            self.rename(&id, &name)?;
        }
        Ok(id)
    }

    /// A new session holding the path from the root to `entry_id`, and what bringing the files
    /// from the source's leaf to that entry would do to them (nothing is changed: the editor
    /// proposes it).
    pub async fn fork_with_files(
        &self,
        session_id: &str,
        entry_id: &str,
    ) -> Result<(SessionId, Checkout), HarnessError> {
        let mut checkout = self.checkout_preview(session_id, entry_id).await?;
        let forked = self.fork(session_id, entry_id)?;
        checkout.session_id = forked.clone();
        Ok((forked, checkout))
    }

    /// Moves the session's position to `entry_id`; the next message continues from there. With
    /// `summarize`, the model first writes a summary of the branch being left, which the new
    /// position's context carries. With `files`, answers what bringing the files along would do
    /// to them, worked out before the move (nothing is changed: the editor proposes it).
    pub async fn navigate(
        &self,
        session_id: &str,
        entry_id: &str,
        summarize: bool,
        files: bool,
    ) -> Result<Option<Checkout>, HarnessError> {
        let (session, _claim) = self.claim(session_id)?;
        let file = session.file()?.clone();
        let left_behind = {
            let mut file = lock(&file);
            file.flush().map_err(session_error)?;
            if !file.tree().contains(entry_id) {
                return Err(HarnessError::InvalidArgument(format!("session {session_id} has no entry {entry_id}")));
            }
            if summarize { branch_messages(file.tree(), entry_id)? } else { Vec::new() }
        };
        let checkout = match files {
            true => Some(self.plan_checkout(&session, entry_id).await?),
            false => None,
        };
        let summary = if left_behind.is_empty() {
            None
        } else {
            let model = session.agent.model();
            let cancel = session.current_cancel();
            Some(branch_summary(self.provider.as_ref(), &model, &left_behind, &cancel).await?)
        };
        let context = {
            let mut file = lock(&file);
            file.navigate(entry_id, summary).map_err(session_error)?;
            agent_context(&file, &session.agent.model())
        };
        lock(&session.choices).adopt(&context);
        session.agent.set_messages(context.messages).map_err(|_| HarnessError::Busy)?;
        Ok(checkout)
    }

    /// Sets (or with `None` clears) the label of an entry.
    pub fn label(&self, session_id: &str, entry_id: &str, label: Option<&str>) -> Result<(), HarnessError> {
        let session = self.session(session_id)?;
        let mut file = lock(session.file()?);
        file.label(entry_id, label.filter(|label| !label.trim().is_empty())).map_err(session_error)?;
        file.flush().map_err(session_error)
    }

    /// Names the session.
    pub fn rename(&self, session_id: &str, name: &str) -> Result<(), HarnessError> {
        let session = self.session(session_id)?;
        let mut file = lock(session.file()?);
        file.set_name(name).map_err(session_error)?;
        file.flush().map_err(session_error)
    }

    /// Summarizes the older part of the conversation so that it fits the window again.
    pub async fn compact(&self, session_id: &str) -> Result<Compacted, HarnessError> {
        let (session, _claim) = self.claim(session_id)?;
        let model = session.agent.model();
        let file = session.file()?.clone();
        let settings = self.settings().compaction.clone();
        let (compacted, messages) =
            compact_and_reload(&file, self.provider.as_ref(), &model, &settings, &session.current_cancel()).await?;
        session.agent.set_messages(messages).map_err(|_| HarnessError::Busy)?;
        Ok(compacted)
    }

    /// The files each tool call changed on the session's current path (its `reins.file_change`
    /// entries), oldest first: what a replayed edit shows as its diff. An edit kept as a patch
    /// gets its texts where its file's other changes, or the file as it is now, give them.
    pub fn file_changes(&self, session_id: &str) -> Result<Vec<FileChangeRecord>, HarnessError> {
        let (mut changes, cwd) = self.recorded_changes(session_id)?;
        let workspace = self.options.workspace.clone();
        let mut now = |recorded: &str, size: u64| {
            let full = cwd.join(recorded);
            let real = workspace.resolve(full.to_str()?).ok()?;
            reins_checkpoints::read_sized(&real, size)
        };
        reins_checkpoints::rebuild_texts(&mut changes, &mut now);
        Ok(changes)
    }

    /// The `reins.file_change` records of the session's current path, oldest first, and the
    /// working directory their paths are relative to.
    fn recorded_changes(&self, session_id: &str) -> Result<(Vec<FileChangeRecord>, PathBuf), HarnessError> {
        let session = self.session(session_id)?;
        let file = lock(session.file()?);
        let tree = file.tree();
        let cwd = PathBuf::from(&tree.header().cwd);
        let Some(leaf) = tree.leaf() else { return Ok((Vec::new(), cwd)) };
        // Only the `custom` entries of the path are parsed.
        let path = tree.path_to_root(leaf).map_err(session_error)?;
        let mut changes = Vec::new();
        for id in path.into_iter().rev() {
            if !tree.get(id).is_some_and(|entry| entry.tag == EntryTag::Custom) {
                continue;
            }
            if let EntryKind::Custom { custom_type, data: Some(data) } = tree.entry(id).map_err(session_error)?.kind
                && custom_type == FILE_CHANGE
                && let Ok(change) = FileChangeRecord::parse(&data)
            {
                changes.push(change);
            }
        }
        Ok((changes, cwd))
    }

    /// The conversation so far, as the model sees it.
    pub fn messages(&self, session_id: &str) -> Result<Vec<Message>, HarnessError> {
        Ok(self.session(session_id)?.agent.messages())
    }

    /// Switches the model of a session; takes effect at its next turn and is recorded in the file
    /// (when it changes).
    pub fn set_model(&self, session_id: &str, model_id: &str) -> Result<Model, HarnessError> {
        if model_id.trim().is_empty() {
            return Err(HarnessError::InvalidArgument("the model id is empty".into()));
        }
        let session = self.session(session_id)?;
        let model = self.settings().resolve_model(Some(model_id));
        let current = session.agent.model();
        if (current.provider.as_str(), current.id.as_str()) == (model.provider.as_str(), model.id.as_str()) {
            // Nothing changes, and the file needs no entry saying so.
            session.agent.set_model(model.clone());
            return Ok(model);
        }
        if let Some(file) = &session.file {
            let mut file = lock(file);
            file.append(EntryKind::ModelChange { provider: model.provider.clone(), model_id: model.id.clone() })
                .and_then(|_| file.flush())
                .map_err(session_error)?;
        }
        // A model trained on the other edit dialect gets the other edit tool, in the same place.
        let format = self.settings().edit_format_for(&model);
        let other = match format {
            EditFormat::Edit => EditFormat::ApplyPatch,
            EditFormat::ApplyPatch => EditFormat::Edit,
        };
        let mut tools = session.toolbox.builtin();
        if let Some(slot) = tools.iter_mut().find(|tool| tool.name() == other.tool_name()) {
            *slot = session.tool_env.wrap(vec![edit_tool(session.tool_env.workspace.clone(), format)]).remove(0);
            // The prompt names no dialect, so it stays; the MCP servers' tools join again at the
            // next run or turn.
            session.toolbox.set_builtin(tools);
            session.agent.set_tools(session.toolbox.offered_builtin());
        }
        session.agent.set_model(model.clone());
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use reins_review::{ApprovalRequest, Approver, Verdict};
    use reins_tools::FsWorkspace;
    use tokio_util::sync::CancellationToken;

    use crate::{Harness, HarnessOptions, LiveSettings, Settings};

    struct NoApprover;

    #[async_trait]
    impl Approver for NoApprover {
        async fn decide(&self, _: ApprovalRequest<'_>, _: &CancellationToken) -> Verdict {
            Verdict::Reject { reason: "no".into() }
        }
    }

    #[test]
    fn a_fork_is_named_after_its_source_and_told_apart_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let settings = Settings::from_env(|name| (name == "REINS_HOME").then(|| home.display().to_string()));
        let harness = Harness::new(HarnessOptions {
            settings: LiveSettings::new(settings),
            workspace: Arc::new(FsWorkspace::new(vec![dir.path().to_path_buf()]).unwrap()),
            provider: None,
            approver: Arc::new(NoApprover),
            diagnostics: None,
            events: Arc::new(|_| {}),
            date: String::new(),
            persist: true,
            warn: Arc::new(|_| {}),
        });
        let source = harness.new_session(Some("tidy calc".into()), None).unwrap();
        let leaf = harness.tree(&source).unwrap().leaf.unwrap();
        let fork = harness.fork(&source, &leaf).unwrap();
        let again = harness.fork(&fork, &harness.tree(&fork).unwrap().leaf.unwrap()).unwrap();
        let names: Vec<Option<String>> =
            [&source, &fork, &again].map(|id| harness.tree(id).unwrap().name).into_iter().collect();
        let expected = [Some("tidy calc"), Some("tidy calc (fork)"), Some("tidy calc (fork)")];
        assert_eq!(names, expected.map(|name| name.map(str::to_string)));
    }
}
