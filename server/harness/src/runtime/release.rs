//! Releasing idle sessions: an editor keeps the harness running all day, through hundreds of
//! sessions, and each open one holds its file open and its conversation in memory. Only the
//! sessions in use stay open — those with a run or an operation going (which includes a pending
//! edit: it waits inside a run), those someone holds right now, and the
//! [`KEEP_IDLE_SESSIONS`] used last (the current one of each client among them); the others are
//! released: their file is flushed and closed, their memory freed, their tools dropped (bash's
//! full-output files with them). A released session comes back from its file when it is named
//! again, as it was: the file holds its conversation, leaf, model, thinking level and tool set;
//! the tools the user allowed for the session are kept here.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use reins_session::SessionFile;

use super::{Harness, SessionId, lock, session_error};
use crate::error::HarnessError;

/// Idle sessions kept open besides those in use: enough for a few clients switching between
/// recent conversations without reading their files again.
pub(crate) const KEEP_IDLE_SESSIONS: usize = 8;

/// What a released session needs to come back as it was.
pub(super) struct Released {
    pub(super) path: PathBuf,
    pub(super) allowed: Arc<Mutex<HashSet<String>>>,
}

impl Harness {
    /// Releases the idle sessions beyond the [`KEEP_IDLE_SESSIONS`] used last. A session is idle
    /// when no run or operation goes on in it and nobody else holds it; sessions not kept on
    /// disk are never released (they could not come back).
    pub(super) fn release_idle(&self) {
        let released = {
            let mut sessions = lock(&self.sessions);
            let mut idle: Vec<(u64, SessionId)> = sessions
                .values()
                .filter(|session| session.file.is_some() && Arc::strong_count(session) == 1)
                .filter(|session| lock(&session.running).is_none())
                .map(|session| (session.last_used.load(Ordering::Relaxed), session.id.clone()))
                .collect();
            if idle.len() <= KEEP_IDLE_SESSIONS {
                return;
            }
            idle.sort_unstable_by_key(|(used, _)| std::cmp::Reverse(*used));
            idle.split_off(KEEP_IDLE_SESSIONS)
                .into_iter()
                .filter_map(|(_, id)| sessions.remove(&id))
                .collect::<Vec<_>>()
        };
        let mut stash = lock(&self.released);
        for session in &released {
            if let Some(file) = &session.file {
                let path = lock(file).path().to_path_buf();
                stash.insert(session.id.clone(), Released { path, allowed: session.allowed.clone() });
            }
        }
        drop(stash);
        // Dropped here, outside the locks: the file is flushed and closed, the tools go.
        drop(released);
        give_back_freed_memory();
    }

    /// Opens a released session again from its file; `Ok` (and nothing opened) when the id
    /// names no released session.
    pub(super) fn reopen(&self, session_id: &str) -> Result<(), HarnessError> {
        // One at a time, so two callers naming the same session do not open it twice.
        let _one = lock(&self.reopening);
        if lock(&self.sessions).contains_key(session_id) {
            return Ok(());
        }
        let Some(released) = lock(&self.released).remove(session_id) else { return Ok(()) };
        match SessionFile::open(&released.path) {
            Ok(file) => {
                self.go_live_from_file_with(file, released.allowed);
                Ok(())
            }
            Err(err) => {
                // Kept, so the session can be named again once the file can be read.
                lock(&self.released).insert(session_id.to_string(), released);
                Err(session_error(err))
            }
        }
    }

    /// The id of the released session stored at `path`, if one is.
    pub(super) fn released_at(&self, path: &std::path::Path) -> Option<SessionId> {
        lock(&self.released).iter().find(|(_, released)| released.path == path).map(|(id, _)| id.clone())
    }

    /// How many sessions are open now (in memory, their files open).
    pub fn open_sessions(&self) -> usize {
        lock(&self.sessions).len()
    }
}

/// Hands the memory freed with released sessions back to the system. glibc keeps freed memory
/// in its arenas (one per thread that allocated, so several under tokio), scattered between
/// live blocks where it cannot shrink the heap: an all-day server's resident size would grow
/// with every session it released. `malloc_trim` also returns whole free pages from inside them.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes the allocator's own locks and touches only its free memory.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use reins_ai::{AssistantMessage, Content, EventSink, Provider, Request, StopReason};
    use reins_review::{ApprovalRequest, Approver, Verdict};
    use reins_tools::FsWorkspace;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::{HarnessOptions, LiveSettings, Settings};

    /// Answers each message with its text, upper-cased.
    struct Echo;

    #[async_trait]
    impl Provider for Echo {
        async fn stream(&self, request: &Request, _: EventSink<'_>, _: &CancellationToken) -> AssistantMessage {
            let last = request.messages.last().map(|message| format!("{message:?}")).unwrap_or_default();
            AssistantMessage {
                content: vec![Content::text(format!("echo {}", last.len()))],
                stop_reason: StopReason::Stop,
                ..AssistantMessage::default()
            }
        }
    }

    struct NoApprover;

    #[async_trait]
    impl Approver for NoApprover {
        async fn decide(&self, _: ApprovalRequest<'_>, _: &CancellationToken) -> Verdict {
            Verdict::Reject { reason: "no".into() }
        }
    }

    fn harness(dir: &std::path::Path) -> Arc<Harness> {
        let home = dir.join("home");
        let settings = Settings::from_env(|name| (name == "REINS_HOME").then(|| home.display().to_string()));
        Harness::new(HarnessOptions {
            settings: LiveSettings::new(settings),
            workspace: Arc::new(FsWorkspace::new(vec![dir.to_path_buf()]).unwrap()),
            provider: Some(Arc::new(Echo)),
            approver: Arc::new(NoApprover),
            diagnostics: None,
            events: Arc::new(|_| {}),
            date: "2026-12-01".into(),
            persist: true,
            warn: Arc::new(|_| {}),
        })
    }

    #[tokio::test]
    async fn only_the_sessions_used_last_stay_open_and_the_others_come_back_from_their_files() {
        let tmp = tempfile::tempdir().unwrap();
        let harness = harness(tmp.path());
        let mut ids = Vec::new();
        for n in 0..30 {
            let id = harness.new_session(None, None).unwrap();
            harness.send(&id, vec![Content::text(format!("message {n}"))]).unwrap().done.await.unwrap();
            ids.push(id);
        }
        assert_eq!(harness.open_sessions(), KEEP_IDLE_SESSIONS);

        // The first session was released long ago: it comes back as it was, and goes on.
        let first = &ids[0];
        assert!(!lock(&harness.sessions).contains_key(first));
        assert!(!harness.is_running(first).unwrap());
        assert_eq!(harness.messages(first).unwrap().len(), 2);
        harness.send(first, vec![Content::text("again")]).unwrap().done.await.unwrap();
        assert_eq!(harness.messages(first).unwrap().len(), 4);
        assert_eq!(harness.open_sessions(), KEEP_IDLE_SESSIONS);
        lock(&harness.session(first).unwrap().allowed).insert("bash".into());

        // Released again by newer sessions, it keeps what the user allowed in it.
        for _ in 0..KEEP_IDLE_SESSIONS {
            harness.new_session(None, None).unwrap();
        }
        assert!(!lock(&harness.sessions).contains_key(first), "released");
        assert_eq!(harness.open_session(first).unwrap(), *first);
        assert!(lock(&harness.live(first).unwrap().allowed).contains("bash"));
        assert_eq!(harness.messages(first).unwrap().len(), 4);
    }

    #[tokio::test]
    async fn a_released_session_frees_its_last_request() {
        let tmp = tempfile::tempdir().unwrap();
        let harness = harness(tmp.path());
        let first = harness.new_session(None, None).unwrap();
        harness.send(&first, vec![Content::text("a long question".repeat(1000))]).unwrap().done.await.unwrap();
        let slot = Arc::downgrade(&harness.session(&first).unwrap().last_request);
        assert!(lock(&slot.upgrade().unwrap()).is_some(), "the request is kept while the session is open");

        for _ in 0..=KEEP_IDLE_SESSIONS {
            harness.new_session(None, None).unwrap();
        }
        assert!(!lock(&harness.sessions).contains_key(&first), "released");
        assert!(slot.upgrade().is_none(), "nothing holds the released session's request");
        // Named again, it comes back without one until its next turn.
        assert_eq!(harness.last_request(&first).unwrap(), None);
    }

    #[tokio::test]
    async fn a_session_someone_holds_is_not_released() {
        let tmp = tempfile::tempdir().unwrap();
        let harness = harness(tmp.path());
        let held_id = harness.new_session(None, None).unwrap();
        let held = harness.session(&held_id).unwrap();
        for _ in 0..2 * KEEP_IDLE_SESSIONS {
            harness.new_session(None, None).unwrap();
        }
        assert!(lock(&harness.sessions).contains_key(&held_id));
        drop(held);
        harness.new_session(None, None).unwrap();
        assert!(!lock(&harness.sessions).contains_key(&held_id));
        assert_eq!(harness.open_sessions(), KEEP_IDLE_SESSIONS);
    }
}
