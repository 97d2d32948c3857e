//! The worktree agents of the workspace's repository, as the editor lists them: each with its
//! state, the files it changed and what its sessions cost.

use crate::sessions::SessionListing;
use crate::worktrees::{Worktree, WorktreeAgent};

use super::Harness;

impl Harness {
    /// The worktree agents of this workspace's repository, oldest first (none outside git).
    pub fn worktree_agents(&self) -> Vec<WorktreeAgent> {
        let settings = self.settings();
        let mut agents = Worktree::agents(&settings.data_dir, &self.cwd());
        for agent in &mut agents {
            let files = self.store.files(&agent.worktree.dir).unwrap_or_default();
            agent.cost = SessionListing::default().list(&files).iter().map(|session| session.usage.cost.total).sum();
        }
        agents
    }
}
