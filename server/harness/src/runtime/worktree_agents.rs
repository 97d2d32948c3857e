//! The worktree agents of the workspace's repository: each works in a harness of its own, built
//! here over its worktree (see [`Worktree`]) with edits applied without asking and commands
//! sandboxed to it; the editor lists them with their state, the files they changed and what
//! their sessions cost, and reviews each one's change when it is done.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use reins_ai::Message;
use reins_session::SessionFile;
use reins_tools::FsWorkspace;

use crate::error::HarnessError;
use crate::sessions::SessionListing;
use crate::worktrees::{Worktree, WorktreeAgent};
use reins_settings::LiveSettings;

use super::{Harness, HarnessOptions};

/// Worktrees this process made, so that two made in one millisecond get different ids.
static MADE: AtomicU64 = AtomicU64::new(0);

impl Harness {
    /// The worktree agents of this workspace's repository, oldest first (none outside git).
    pub fn worktree_agents(&self) -> Vec<WorktreeAgent> {
        let settings = self.settings();
        let mut agents = Worktree::agents(&settings.data_dir, &self.cwd());
        for agent in &mut agents {
            let sessions = SessionListing::default().list(&self.store.dir_for(&agent.worktree.dir)).unwrap_or_default();
            agent.cost = sessions.iter().map(|session| session.usage.cost.total).sum();
        }
        agents
    }

    /// Makes a worktree of this workspace's repository (HEAD plus the uncommitted changes) and
    /// the harness its agent works in: the same settings, provider, events and approver, with
    /// every `ask` approved (it touches nothing of the user's; a `deny` stays) and the workspace
    /// the worktree (the same folder inside it as this workspace's), which keeps its tools and
    /// sandbox there. Outside git, an `invalid_state` error says that worktrees need it.
    pub fn start_worktree(&self) -> Result<(Worktree, Arc<Harness>), HarnessError> {
        let settings = self.settings();
        let made = MADE.fetch_add(1, Ordering::Relaxed);
        let id = format!("{:x}-{}-{made}", reins_ai::now_ms(), std::process::id());
        let cwd = self.cwd();
        let worktree = Worktree::create(&cwd, &settings.data_dir, &id)?;
        let canonical = cwd.canonicalize().unwrap_or(cwd);
        let inside = canonical.strip_prefix(&worktree.repo).map(Path::to_path_buf).unwrap_or_default();
        let workspace = match FsWorkspace::new(vec![worktree.dir.join(inside)]) {
            Ok(workspace) => workspace,
            Err(err) => {
                let _ = worktree.remove();
                return Err(HarnessError::InvalidState(err.to_string()));
            }
        };
        let mut settings = (*settings).clone();
        settings.approval = settings.approval.with_asks_approved();
        let options = &self.options;
        let harness = Harness::new(HarnessOptions {
            settings: LiveSettings::new(settings),
            workspace: Arc::new(workspace),
            provider: options.provider.clone(),
            approver: options.approver.clone(),
            // The editor's diagnostics are of the user's buffers, not of the worktree.
            diagnostics: None,
            events: options.events.clone(),
            date: options.date.clone(),
            persist: options.persist,
            warn: options.warn.clone(),
        });
        Ok((worktree, harness))
    }

    /// The worktree agent `id` of this workspace's repository, running or finished.
    pub fn worktree(&self, id: &str) -> Result<Worktree, HarnessError> {
        let settings = self.settings();
        let agents = Worktree::agents(&settings.data_dir, &self.cwd());
        agents.into_iter().map(|agent| agent.worktree).find(|worktree| worktree.id == id).ok_or_else(|| {
            HarnessError::InvalidState(format!(
                "no worktree agent {id} in this repository (removed, or never made); reins.worktree.list names them"
            ))
        })
    }

    /// The newest session of the agent of `worktree`, and what it said last there (its last
    /// answer), read from the file: its harness may be gone with a killed process.
    pub fn worktree_session(&self, worktree: &Worktree) -> (Option<String>, Option<String>) {
        let Some(file) =
            self.store.most_recent(&worktree.dir).ok().flatten().and_then(|newest| SessionFile::open(&newest).ok())
        else {
            return (None, None);
        };
        let messages = file.context().map(|context| context.messages).unwrap_or_default();
        let answer = messages.iter().rev().find_map(|message| match message {
            Message::Assistant(answer) if !answer.text().trim().is_empty() => Some(answer.text()),
            _ => None,
        });
        (Some(file.id().to_string()), answer)
    }
}
