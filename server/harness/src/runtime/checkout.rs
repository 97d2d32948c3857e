//! Files follow the leaf: what moving a session's leaf does to the files the agent changed, and
//! the checkout that moves both on disk (`reins sessions checkout`). The editor moves the leaf
//! with [`Harness::navigate`] and gets the files as proposals to review instead.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use reins_checkpoints::{CommandRan, FileOutcome, Files, Journal, Plan, SideStore, Status, Written, replay};
use reins_session::Durability;
use reins_tools::WorkspaceError;

use super::{Harness, LiveSession, lock, session_error};
use crate::error::HarnessError;

/// What moving a session's leaf to an entry does (or would do) to the files.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkout {
    pub session_id: String,
    /// The leaf before the move.
    pub from: Option<String>,
    pub target: String,
    /// Every file a recorded change on the way touches, by path.
    pub files: Vec<FileOutcome>,
    /// Commands on the way whose effects on files were not recorded.
    pub commands: Vec<CommandRan>,
    /// Records on the way that could not be read.
    pub unreadable: Vec<String>,
}

/// A checkout carried out on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedOut {
    pub checkout: Checkout,
    /// How writing each file went, for the files the checkout writes, by path.
    pub written: HashMap<PathBuf, Written>,
    /// The user said no: nothing was changed.
    pub declined: bool,
    /// An interrupted checkout that was finished first.
    pub resumed: Option<Resumed>,
}

/// A checkout that had been interrupted (the process was killed), finished when the next one
/// started.
#[derive(Debug, Clone, PartialEq)]
pub struct Resumed {
    /// The entry it moved the leaf to.
    pub target: String,
    /// How writing each of its files went, by path as recorded.
    pub files: Vec<(String, Written)>,
}

impl Checkout {
    /// Whether the checkout changes any file.
    pub fn writes(&self) -> bool {
        self.files.iter().any(FileOutcome::writes)
    }

    /// The files left as they are because the agent's change and the user's overlap.
    pub fn conflicts(&self) -> impl Iterator<Item = &FileOutcome> {
        self.files.iter().filter(|file| matches!(file.status, Status::Conflict(_) | Status::Refused(_)))
    }
}

impl CheckedOut {
    /// Files that could not be brought along: conflicts, refusals, and files that changed while
    /// the checkout wrote or failed to be written.
    pub fn left_behind(&self) -> usize {
        let failed = self.written.values().filter(|written| !matches!(written, Written::Done | Written::AlreadyDone));
        self.checkout.conflicts().count() + failed.count()
    }
}

impl Harness {
    /// What moving the leaf of `session_id` to `entry_id` would do to the files, nothing changed:
    /// each recorded change after the entry undone and each on its path redone, merged with the
    /// files as they are now (open buffers first).
    pub async fn checkout_preview(&self, session_id: &str, entry_id: &str) -> Result<Checkout, HarnessError> {
        let session = self.session(session_id)?;
        self.plan_checkout(&session, entry_id).await
    }

    /// Moves the leaf of `session_id` to `entry_id` and the files with it, on disk, after
    /// `confirm` saw what it will do (when it writes any file) and said yes. A file the user
    /// changed where the agent did too is left as it is; the result names it. A checkout of this
    /// session that was interrupted is finished first.
    pub async fn checkout(
        &self,
        session_id: &str,
        entry_id: &str,
        confirm: impl FnOnce(&Checkout) -> bool,
    ) -> Result<CheckedOut, HarnessError> {
        self.require_persist()?;
        let (session, _claim) = self.claim(session_id)?;
        let resumed = self.finish_interrupted(&session)?;
        let checkout = self.plan_checkout(&session, entry_id).await?;
        let declined = |checkout| CheckedOut { checkout, written: HashMap::new(), declined: true, resumed: None };
        if checkout.writes() && !confirm(&checkout) {
            return Ok(CheckedOut { resumed, ..declined(checkout) });
        }
        let file = session.file()?.clone();
        let path = lock(&file).path().to_path_buf();
        let journal = Journal::write(&path, entry_id, &checkout.files)
            .map_err(|err| HarnessError::Session(format!("{}: cannot start the checkout: {err}", path.display())))?;
        let written = self.write_journal(&session, journal)?;
        let written = written.into_iter().map(|(file, written)| (file.path, written)).collect();
        Ok(CheckedOut { checkout, written, declined: false, resumed })
    }

    /// Finishes a checkout of `session` that was interrupted (the process was killed), if there
    /// is one: its files, then its leaf.
    fn finish_interrupted(&self, session: &LiveSession) -> Result<Option<Resumed>, HarnessError> {
        let path = lock(session.file()?).path().to_path_buf();
        let pending = Journal::pending(&path).map_err(|err| HarnessError::Session(err.to_string()))?;
        let Some(journal) = pending else { return Ok(None) };
        tracing::info!("{}: finishing the checkout of {} that was interrupted", path.display(), journal.target);
        let target = journal.target.clone();
        let written = self.write_journal(session, journal)?;
        let files = written.into_iter().map(|(file, written)| (file.shown, written)).collect();
        Ok(Some(Resumed { target, files }))
    }

    /// Writes the files of a committed journal, moves the leaf to its target, and removes it.
    fn write_journal(
        &self,
        session: &LiveSession,
        journal: Journal,
    ) -> Result<Vec<(reins_checkpoints::JournalFile, Written)>, HarnessError> {
        let workspace = self.options.workspace.clone();
        let inside_now = inside_workspace(workspace.as_ref(), &journal);
        let inside = move |path: &Path| match inside_now.get(path) {
            Some(inside) => *inside,
            None => path.to_str().is_some_and(|text| workspace.resolve_writable(text).is_ok_and(|real| real == path)),
        };
        let written = journal.apply(&inside);
        let file = session.file()?.clone();
        let context = {
            let mut file = lock(&file);
            if !file.tree().contains(&journal.target) {
                return Err(HarnessError::Session(format!(
                    "{}: the checkout's entry {} is not in the session",
                    file.path().display(),
                    journal.target
                )));
            }
            file.set_durability(Durability::Sync);
            let moved = file.navigate(&journal.target, None);
            file.set_durability(Durability::Write);
            moved.map_err(session_error)?;
            file.context().map_err(session_error)?
        };
        let _ = session.agent.set_messages(context.messages);
        let files = journal.files.clone();
        if let Err(err) = journal.remove() {
            tracing::warn!("could not remove the finished checkout's journal: {err}");
        }
        Ok(files.into_iter().zip(written).collect())
    }

    /// The plan from the session's leaf to `entry_id`, replayed on the files as they are now.
    pub(super) async fn plan_checkout(&self, session: &LiveSession, entry_id: &str) -> Result<Checkout, HarnessError> {
        let file = session.file()?.clone();
        let (plan, cwd, store) = {
            let file = lock(&file);
            let tree = file.tree();
            if !tree.contains(entry_id) {
                return Err(HarnessError::InvalidArgument(format!("session {} has no entry {entry_id}", session.id)));
            }
            let plan = Plan::between(tree, tree.leaf(), entry_id).map_err(session_error)?;
            (plan, PathBuf::from(&tree.header().cwd), SideStore::of_session(file.path()))
        };
        let mut resolved = HashMap::new();
        let mut current = HashMap::new();
        let recorded_paths = plan.recorded_paths();
        for (recorded, path) in recorded_paths.iter().zip(self.resolve_recorded(&cwd, &recorded_paths)) {
            if let Ok(path) = &path
                && !current.contains_key(path)
            {
                match self.read_current(path).await {
                    Ok(bytes) => {
                        current.insert(path.clone(), bytes);
                    }
                    Err(reason) => {
                        resolved.insert(recorded.to_string(), Err(reason));
                        continue;
                    }
                }
            }
            resolved.insert(recorded.to_string(), path);
        }
        let files = replay(&plan, &Files { resolved, current, store: &store });
        for unreadable in &plan.unreadable {
            tracing::warn!("session {}: a checkpoint entry cannot be read: {unreadable}", session.id);
        }
        Ok(Checkout {
            session_id: session.id.clone(),
            from: plan.from,
            target: plan.target,
            files,
            commands: plan.commands,
            unreadable: plan.unreadable,
        })
    }

    /// Each recorded path (relative to the session's working directory) inside the workspace,
    /// or why it is not; resolved together, so the directories they share are resolved once.
    fn resolve_recorded(&self, cwd: &Path, recorded: &[&str]) -> Vec<Result<PathBuf, String>> {
        let full: Vec<PathBuf> = recorded.iter().map(|recorded| cwd.join(recorded)).collect();
        let utf8: Vec<&str> = full.iter().filter_map(|full| full.to_str()).collect();
        let mut resolved = self.options.workspace.resolve_all_writable(&utf8).into_iter();
        let why = |err| match err {
            WorkspaceError::OutsideRoots { .. } => "it is outside the workspace".to_string(),
            WorkspaceError::GitDir(_) => "it is inside .git, which only git and the user change".to_string(),
            other => other.to_string(),
        };
        let not_utf8 = || Err("its path is not UTF-8".to_string());
        let each = |full: &PathBuf| match full.to_str() {
            Some(_) => resolved.next().map_or_else(not_utf8, |answer| answer.map_err(why)),
            None => not_utf8(),
        };
        full.iter().map(each).collect()
    }

    /// A file's content now: the open buffer, else the disk; `None` when there is no such file.
    async fn read_current(&self, path: &Path) -> Result<Option<Vec<u8>>, String> {
        match self.options.workspace.read_text(path).await {
            Ok(file) => Ok(Some(file.text.into_bytes())),
            Err(WorkspaceError::NotFound(_)) => Ok(None),
            // Not text: its bytes, from the disk.
            Err(WorkspaceError::Io { .. }) if path.is_file() => {
                reins_checkpoints::read(path).map_err(|err| format!("it cannot be read: {err}"))
            }
            Err(err) => Err(format!("it cannot be read: {err}")),
        }
    }
}

/// Whether each file of `journal` and each directory above it up to its root is inside the
/// workspace as it is (its real path is itself, writable), resolved together just before the
/// journal is applied; a path not asked here is resolved when asked.
fn inside_workspace(workspace: &dyn reins_tools::Workspace, journal: &Journal) -> HashMap<PathBuf, bool> {
    let roots = workspace.roots();
    let mut paths: Vec<&Path> = Vec::new();
    for file in &journal.files {
        paths.extend(file.path.ancestors().take_while(|path| roots.iter().any(|root| path.starts_with(root))));
    }
    paths.sort();
    paths.dedup();
    let texts: Vec<&str> = paths.iter().filter_map(|path| path.to_str()).collect();
    let answers = workspace.resolve_all_writable(&texts);
    texts
        .iter()
        .zip(answers)
        .map(|(text, real)| (PathBuf::from(text), real.is_ok_and(|real| real == Path::new(text))))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use reins_ai::{AssistantMessage, Content, EventSink, Provider, Request, StopReason, ToolCall};
    use reins_review::{ApprovalPolicy, ApprovalRequest, Approver, Verdict};
    use reins_tools::FsWorkspace;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::{HarnessOptions, LiveSettings, Settings};

    /// Answers each model call with the next of its messages: tool calls, then a final text.
    struct Script(Mutex<Vec<AssistantMessage>>);

    impl Script {
        fn new(replies: Vec<AssistantMessage>) -> Arc<Self> {
            Arc::new(Script(Mutex::new(replies.into_iter().rev().collect())))
        }
    }

    #[async_trait]
    impl Provider for Script {
        async fn stream(&self, _: &Request, _: EventSink<'_>, _: &CancellationToken) -> AssistantMessage {
            lock(&self.0).pop().unwrap_or_else(|| text("out of script"))
        }
    }

    fn call(id: &str, name: &str, arguments: serde_json::Value) -> AssistantMessage {
        let call = ToolCall { id: id.into(), name: name.into(), arguments };
        AssistantMessage {
            content: vec![Content::ToolCall(call)],
            stop_reason: StopReason::ToolUse,
            ..Default::default()
        }
    }

    fn text(text: &str) -> AssistantMessage {
        AssistantMessage { content: vec![Content::text(text)], stop_reason: StopReason::Stop, ..Default::default() }
    }

    struct Refuse;

    #[async_trait]
    impl Approver for Refuse {
        async fn decide(&self, _: ApprovalRequest<'_>, _: &CancellationToken) -> Verdict {
            Verdict::Reject { reason: "no".into() }
        }
    }

    fn harness(dir: &Path, provider: Arc<dyn reins_ai::Provider>) -> Arc<Harness> {
        let home = dir.join(".home");
        let mut settings = Settings::from_env(|name| (name == "REINS_HOME").then(|| home.display().to_string()));
        settings.approval = ApprovalPolicy::approve_all();
        Harness::new(HarnessOptions {
            settings: LiveSettings::new(settings),
            workspace: Arc::new(FsWorkspace::new(vec![dir.to_path_buf()]).unwrap()),
            provider: Some(provider),
            approver: Arc::new(Refuse),
            diagnostics: None,
            events: Arc::new(|_| {}),
            date: "2026-12-01".into(),
            persist: true,
            warn: Arc::new(|_| {}),
        })
    }

    /// Each entry of the session's path as `kind: what`, for the tree as the agent left it.
    fn path_of(harness: &Harness, session: &str) -> Vec<String> {
        let tree = harness.tree(session).unwrap();
        let mut at = tree.leaf.clone();
        let mut path = Vec::new();
        while let Some(id) = at {
            let node = tree.nodes.iter().find(|node| node.id == id).unwrap();
            path.push(format!("{}: {}", node.role.as_deref().unwrap_or(&node.kind), node.preview));
            at = node.parent_id.clone();
        }
        path.reverse();
        path
    }

    #[tokio::test]
    async fn changes_are_recorded_where_they_land_and_checked_out_with_the_leaf() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("keep.txt"), "the user's\n").unwrap();
        let provider = Script::new(vec![
            call("c1", "write", serde_json::json!({"path": "a.txt", "content": "one\n"})),
            text("wrote it"),
            call("c2", "edit", serde_json::json!({"path": "a.txt", "edits": [{"oldText": "one", "newText": "two"}]})),
            call("c3", "bash", serde_json::json!({"command": "echo made > made.txt"})),
            text("edited it"),
        ]);
        let harness = harness(&root, provider);
        let session = harness.new_session(None, None).unwrap();
        harness.send(&session, vec![Content::text("write")]).unwrap().done.await.unwrap();
        harness.send(&session, vec![Content::text("edit")]).unwrap().done.await.unwrap();
        expect_test::expect![[r#"
            [
                "model_change: openai-compatible/qwen2.5-coder:7b",
                "user: write",
                "assistant: write(…)",
                "custom: create a.txt",
                "toolResult: write: Created a.txt (4 bytes)",
                "assistant: wrote it",
                "user: edit",
                "assistant: edit(…)",
                "custom: edit a.txt",
                "toolResult: edit: Edited a.txt: 1 replacement @@ -1 +1 @@ -one +two",
                "assistant: bash(…)",
                "custom: bash: echo made > made.txt (its effects on files are not tracked)",
                "toolResult: bash: (no output)",
                "assistant: edited it",
            ]
        "#]]
        .assert_debug_eq(&path_of(&harness, &session));

        let tree = harness.tree(&session).unwrap();
        let wrote_it = tree.nodes.iter().find(|node| node.preview == "wrote it").unwrap().id.clone();
        std::fs::write(root.join("a.txt"), "two\nmine\n").unwrap();
        let preview = harness.checkout_preview(&session, &wrote_it).await.unwrap();
        assert_eq!(preview.commands.len(), 1);
        let done = harness.checkout(&session, &wrote_it, |_| true).await.unwrap();
        assert_eq!(done.left_behind(), 0);
        assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "one\nmine\n");
        assert_eq!(std::fs::read_to_string(root.join("made.txt")).unwrap(), "made\n", "not tracked");
        assert_eq!(std::fs::read_to_string(root.join("keep.txt")).unwrap(), "the user's\n");
        assert_eq!(harness.tree(&session).unwrap().leaf.as_deref(), Some(wrote_it.as_str()));
        assert_eq!(harness.messages(&session).unwrap().len(), 4, "the conversation is back at the first answer");

        // And forward again, to the end of the second run.
        let end = tree.leaf.clone().unwrap();
        let declined = harness.checkout(&session, &end, |_| false).await.unwrap();
        assert!(declined.declined);
        assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "one\nmine\n");
        harness.checkout(&session, &end, |_| true).await.unwrap();
        assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "two\nmine\n");
    }
}
