//! Files follow the leaf: what moving a session's leaf does to the files the agent changed, and
//! the checkout that moves both on disk (`reins sessions checkout`). The editor moves the leaf
//! with [`Harness::navigate`] and gets the files as proposals to review instead.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use reins_checkpoints::{CommandRan, FileOutcome, Files, Journal, Plan, SideStore, Status, Written, replay};
use reins_session::{Durability, EntryTag, SessionError, SessionFile, SessionTree};
use reins_tools::WorkspaceError;

use super::landing::landing_in;
use super::{Harness, Landing, LiveSession, agent_context, lock, session_error};
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

/// A checkout of the entry the user picked ([`Harness::checkout_picked`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PickedCheckout {
    /// Where it landed: before the user's message when one was picked.
    pub landing: Landing,
    pub done: CheckedOut,
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
        let file = session.file()?.clone();
        let leaf = lock(&file).leaf().map(str::to_string);
        let done = self.checkout_in(&file, &session.id, entry_id, confirm).await;
        // The conversation follows the leaf wherever it moved (an interrupted checkout finished
        // first moves it too, also when this one then fails).
        let context = {
            let file = lock(&file);
            (file.leaf() != leaf.as_deref()).then(|| agent_context(&file, &session.agent.model()))
        };
        if let Some(context) = context {
            let _ = session.agent.set_messages(context.messages);
        }
        done
    }

    /// Checks out the entry `picked` names (an id, a label, or an unambiguous start of an id) in
    /// the stored session `id_or_path` (else the workspace's most recent one): at one of the
    /// user's messages, before it (see [`Harness::landing`]). A session that is not open here is
    /// not brought to life for it — no agent, tools or prompt are built, as nothing runs in it:
    /// its file is read, held for the checkout and let go. `None`: the workspace has no session.
    pub async fn checkout_picked(
        &self,
        id_or_path: Option<&str>,
        picked: &str,
        confirm: impl FnOnce(&Checkout) -> bool,
    ) -> Result<Option<PickedCheckout>, HarnessError> {
        self.require_persist()?;
        let path = match id_or_path {
            Some(id_or_path) => self.store.find(id_or_path, &self.cwd()).map_err(session_error)?,
            None => match self.store.most_recent(&self.cwd()).map_err(session_error)? {
                Some(path) => path,
                None => return Ok(None),
            },
        };
        let open = lock(&self.sessions).values().find(|live| live.has_path(&path)).map(|live| live.id.clone());
        if let Some(id) = open.or_else(|| self.released_at(&path)) {
            let session = self.session(&id)?;
            let entry = pick_entry(lock(session.file()?).tree(), picked)?;
            let landing = self.landing(&id, &entry)?;
            let done = self.checkout(&id, &landing.entry_id, confirm).await?;
            return Ok(Some(PickedCheckout { landing, done }));
        }
        let file = match id_or_path {
            Some(_) => SessionFile::open(&path).map_err(session_error)?,
            // The newest file is the one the user means; when it cannot be read, say so.
            None => SessionFile::open(&path).map_err(|err| session_error(SessionError::NotContinued(Box::new(err))))?,
        };
        let file = Mutex::new(file);
        lock(&file).hold().map_err(session_error)?;
        let picked = async {
            let (id, landing) = {
                let file = lock(&file);
                let entry = pick_entry(file.tree(), picked)?;
                (file.id().to_string(), landing_in(file.tree(), &entry)?)
            };
            let done = self.checkout_in(&file, &id, &landing.entry_id, confirm).await?;
            Ok::<_, HarnessError>(PickedCheckout { landing, done })
        }
        .await;
        let released = lock(&file).release().map_err(session_error);
        let picked = picked?;
        released?;
        Ok(Some(picked))
    }

    /// The checkout of the session in `file`, whose writer lock is held.
    async fn checkout_in(
        &self,
        file: &Mutex<SessionFile>,
        session_id: &str,
        entry_id: &str,
        confirm: impl FnOnce(&Checkout) -> bool,
    ) -> Result<CheckedOut, HarnessError> {
        let resumed = self.finish_interrupted(file)?;
        let checkout = self.plan_in(file, session_id, entry_id).await?;
        let declined = |checkout| CheckedOut { checkout, written: HashMap::new(), declined: true, resumed: None };
        if checkout.writes() && !confirm(&checkout) {
            return Ok(CheckedOut { resumed, ..declined(checkout) });
        }
        let path = lock(file).path().to_path_buf();
        let inside = self
            .inside_now(checkout.files.iter().filter(|file| file.writes()).map(|file| file.path.as_path()).collect());
        let journal = Journal::write(&path, entry_id, &checkout.files, &inside)
            .map_err(|err| HarnessError::Session(format!("{}: cannot start the checkout: {err}", path.display())))?;
        let written = self.write_journal(file, journal, &inside)?;
        let written = written.into_iter().map(|(file, written)| (file.path, written)).collect();
        Ok(CheckedOut { checkout, written, declined: false, resumed })
    }

    /// Finishes a checkout of the session in `file` that was interrupted (the process was
    /// killed), if there is one: its files, then its leaf.
    fn finish_interrupted(&self, file: &Mutex<SessionFile>) -> Result<Option<Resumed>, HarnessError> {
        let path = lock(file).path().to_path_buf();
        let pending = Journal::pending(&path).map_err(|err| HarnessError::Session(err.to_string()))?;
        let Some(journal) = pending else { return Ok(None) };
        tracing::info!("{}: finishing the checkout of {} that was interrupted", path.display(), journal.target);
        let target = journal.target.clone();
        let inside = self.inside_now(journal.files.iter().map(|file| file.path.as_path()).collect());
        let written = self.write_journal(file, journal, &inside)?;
        let files = written.into_iter().map(|(file, written)| (file.shown, written)).collect();
        Ok(Some(Resumed { target, files }))
    }

    /// Writes the files of a committed journal, moves the leaf to its target, and removes it.
    fn write_journal(
        &self,
        file: &Mutex<SessionFile>,
        journal: Journal,
        inside: &(dyn Fn(&Path) -> bool + Sync),
    ) -> Result<Vec<(reins_checkpoints::JournalFile, Written)>, HarnessError> {
        let written = journal.apply(inside);
        let path = {
            let mut file = lock(file);
            if !file.tree().contains(&journal.target) {
                return Err(HarnessError::Session(format!(
                    "{}: the checkout's entry {} is not in the session",
                    file.path().display(),
                    journal.target
                )));
            }
            // Written now, made durable with the files' renames by the journal's last sync.
            file.set_durability(Durability::Write);
            file.navigate(&journal.target, None).map_err(session_error)?;
            file.path().to_path_buf()
        };
        let files = journal.files.clone();
        if let Err(err) = journal.finish(&path) {
            tracing::warn!("could not complete the checkout's journal (the next checkout finishes it): {err}");
        }
        Ok(files.into_iter().zip(written).collect())
    }

    /// Whether a path is inside the workspace as it is now: `paths` and the directories above
    /// them resolved together at once (see [`inside_workspace`]), any other path when asked.
    fn inside_now(&self, paths: Vec<&Path>) -> impl Fn(&Path) -> bool + use<> {
        let workspace = self.options.workspace.clone();
        let resolved = inside_workspace(workspace.as_ref(), &paths);
        move |path: &Path| match resolved.get(path) {
            Some(inside) => *inside,
            None => path.to_str().is_some_and(|text| workspace.resolve_writable(text).is_ok_and(|real| real == path)),
        }
    }

    /// The plan from the session's leaf to `entry_id`, replayed on the files as they are now.
    pub(super) async fn plan_checkout(&self, session: &LiveSession, entry_id: &str) -> Result<Checkout, HarnessError> {
        self.plan_in(session.file()?, &session.id, entry_id).await
    }

    /// The plan from the leaf of the session in `file` to `entry_id`, replayed on the files as
    /// they are now.
    async fn plan_in(
        &self,
        file: &Mutex<SessionFile>,
        session_id: &str,
        entry_id: &str,
    ) -> Result<Checkout, HarnessError> {
        let (plan, cwd, store) = {
            let file = lock(file);
            let tree = file.tree();
            if !tree.contains(entry_id) {
                return Err(HarnessError::InvalidArgument(format!("session {session_id} has no entry {entry_id}")));
            }
            let plan = Plan::between(tree, tree.leaf(), entry_id).map_err(session_error)?;
            (plan, PathBuf::from(&tree.header().cwd), SideStore::of_session(file.path()))
        };
        let recorded_paths = plan.recorded_paths();
        let paths = self.resolve_recorded(&cwd, &recorded_paths);
        let mut unique: Vec<&Path> = paths.iter().filter_map(|path| path.as_deref().ok()).collect();
        unique.sort();
        unique.dedup();
        let mut current = HashMap::new();
        let mut unreadable: HashMap<&Path, String> = HashMap::new();
        for (path, read) in unique.iter().zip(self.read_current(&unique).await) {
            match read {
                Ok(bytes) => {
                    current.insert(path.to_path_buf(), bytes);
                }
                Err(reason) => {
                    unreadable.insert(path, reason);
                }
            }
        }
        let mut resolved = HashMap::new();
        for (recorded, path) in recorded_paths.iter().zip(&paths) {
            let path = match path {
                Ok(path) => {
                    unreadable.get(path.as_path()).map_or_else(|| Ok(path.clone()), |reason| Err(reason.clone()))
                }
                Err(reason) => Err(reason.clone()),
            };
            resolved.insert(recorded.to_string(), path);
        }
        let files = replay(&plan, Files { resolved, current, store: &store });
        for unreadable in &plan.unreadable {
            tracing::warn!("session {session_id}: a checkpoint entry cannot be read: {unreadable}");
        }
        Ok(Checkout {
            session_id: session_id.to_string(),
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

    /// Each file's content now, in order: the open buffer, else the disk; `None` when there is
    /// no such file.
    async fn read_current(&self, paths: &[&Path]) -> Vec<Result<Option<Vec<u8>>, String>> {
        let texts = self.options.workspace.read_texts(paths).await;
        let each = |(path, text): (&&Path, Result<reins_tools::TextFile, WorkspaceError>)| match text {
            Ok(file) => Ok(Some(file.text.into_bytes())),
            Err(WorkspaceError::NotFound(_)) => Ok(None),
            // Not text: its bytes, from the disk.
            Err(WorkspaceError::Io { .. }) if path.is_file() => {
                reins_checkpoints::read(path).map_err(|err| format!("it cannot be read: {err}"))
            }
            Err(err) => Err(format!("it cannot be read: {err}")),
        };
        paths.iter().zip(texts).map(each).collect()
    }
}

/// The entry `wanted` names in `tree`: an id, a label, or an unambiguous start of an id; the
/// entries a tree view hides (labels, leaf moves) are not picked. Read from the index alone.
pub(super) fn pick_entry(tree: &SessionTree, wanted: &str) -> Result<String, HarnessError> {
    let shown = tree.iter().filter(|entry| !matches!(entry.tag, EntryTag::Label | EntryTag::Leaf));
    let named: Vec<(&str, Option<&str>)> = shown.map(|entry| (entry.id, tree.label(entry.id))).collect();
    pick(named.iter().copied(), &tree.header().id, wanted).map_err(HarnessError::InvalidArgument)
}

/// The one of `entries` (id, label) that `wanted` names.
fn pick<'a>(
    entries: impl Iterator<Item = (&'a str, Option<&'a str>)> + Clone,
    session_id: &str,
    wanted: &str,
) -> Result<String, String> {
    if entries.clone().any(|(id, _)| id == wanted) {
        return Ok(wanted.to_string());
    }
    let labelled: Vec<&str> = entries.clone().filter(|(_, label)| *label == Some(wanted)).map(|(id, _)| id).collect();
    if let [one] = labelled.as_slice() {
        return Ok(one.to_string());
    }
    let starting: Vec<&str> = entries.filter(|(id, _)| id.starts_with(wanted)).map(|(id, _)| id).collect();
    match starting.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(format!("session {session_id} has no entry {wanted:?}; `reins sessions tree` shows its entries")),
        many => Err(format!("{} entries start with {wanted:?}; give more of the id", many.len())),
    }
}

/// Whether each of `files` and each directory above it up to its root is inside the workspace
/// as it is (its real path is itself, writable), resolved together just before a journal is
/// written or applied; a path not asked here is resolved when asked.
fn inside_workspace(workspace: &dyn reins_tools::Workspace, files: &[&Path]) -> HashMap<PathBuf, bool> {
    let roots = workspace.roots();
    let mut paths: Vec<&Path> = Vec::new();
    for file in files {
        paths.extend(file.ancestors().take_while(|path| roots.iter().any(|root| path.starts_with(root))));
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
            path.push(format!("{}: {}", node.role.as_deref().unwrap_or(node.kind), node.preview));
            at = node.parent_id.clone();
        }
        path.reverse();
        path
    }

    #[test]
    fn an_entry_is_picked_by_id_label_or_prefix() {
        let entries = [("abcd1234", Some("before")), ("abff0000", None)];
        let pick = |wanted| pick(entries.iter().copied(), "s", wanted);
        assert_eq!(pick("abff0000").unwrap(), "abff0000");
        assert_eq!(pick("before").unwrap(), "abcd1234");
        assert_eq!(pick("abc").unwrap(), "abcd1234");
        assert_eq!(pick("ab").unwrap_err(), "2 entries start with \"ab\"; give more of the id");
        assert!(pick("zz").unwrap_err().contains("reins sessions tree"));
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
