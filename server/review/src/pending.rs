//! Pending edits: proposals held for the user's review, and the one state machine that decides
//! them — propose, then accept (all hunks or some, optionally allowing the tool for the rest of
//! the session), reject with a reason, or cancel; an accepted file change is then reported
//! applied, failed or stale by whoever writes it.
//!
//! A pending edit is a value in a map with a oneshot sender; the run that proposed it awaits the
//! receiver in its own task ([`PendingEdits::wait`]), so nothing else ever waits for a person.
//! Deciding is synchronous: it works out what to write (rebasing onto text the user typed
//! meanwhile, or refusing as stale where both changed the same lines), sends that down the
//! oneshot as a [`Verdict`], and returns. An [`Observer`] (a protocol layer) is told of every
//! step, to show it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reins_agent::lock;
use reins_agent::{CommandProposal, FileChange, Proposal, ServerCall};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalRequest, Changed, Verdict};
use crate::comments::{self, Comment, OpenComment};
use crate::diff::{self, Hunk};
use crate::{merge, notes};

/// How long the hunk diff of a proposal may search before settling for coarser hunks.
pub const DIFF_DEADLINE: Duration = Duration::from_millis(100);

/// A proposal waiting for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingEdit {
    /// `e1`, `e2`, …: what accept and reject name.
    pub id: String,
    pub session_id: String,
    pub run_id: String,
    pub tool_call_id: String,
    /// `edit`, `write`, `bash`, …
    pub tool: String,
    pub subject: Subject,
    /// The user's comments on its hunks, by hunk index: the model reads them with the decision.
    pub comments: BTreeMap<usize, String>,
    /// Comments on earlier proposals for the lines this one changes, which it answers.
    pub resolves: Vec<Comment>,
}

/// What a proposal changes.
#[derive(Debug, Clone, PartialEq)]
pub enum Subject {
    /// Files, each with its hunks; hunk indexes run on across the files, so one index names one
    /// hunk of the proposal. (A patch of several files is held as one pending edit per file; see
    /// [`PendingEdits::decide`].)
    Files(Vec<FileDiff>),
    /// A command: nothing changes until it runs.
    Command(CommandProposal),
    /// A tool of the user's MCP server, with its arguments: what it changes, only the server knows.
    ServerCall(ServerCall),
}

/// One file of a proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct FileDiff {
    pub path: PathBuf,
    /// The path as the user and the model read it (relative to the workspace).
    pub shown: String,
    /// The text the hunks apply to; `None` creates the file.
    pub before: Option<String>,
    pub after: String,
    /// The file is deleted (its one hunk removes every line).
    pub delete: bool,
    /// The file is renamed to this path (with `after` as its text there), shown as `moved_shown`.
    pub moved_to: Option<PathBuf>,
    pub moved_shown: Option<String>,
    /// The buffer version `before` was read from, when an editor had the file open.
    pub version: Option<i32>,
    pub hunks: Vec<Hunk>,
    /// The whole change as a unified diff.
    pub diff: String,
    /// How the change was found ("matched after ignoring trailing whitespace").
    pub notes: Vec<String>,
}

/// Where a proposal comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Origin {
    pub session_id: String,
    pub run_id: String,
    pub tool_call_id: String,
    pub tool: String,
}

/// Reads a file as it is now: its text, with the buffer version when an editor has it open;
/// `None` when it does not exist.
pub type ReadCurrent<'a> = &'a dyn Fn(&Path) -> Option<(String, Option<i32>)>;

/// How a pending edit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Applied,
    PartiallyApplied,
    Rejected,
    /// Whoever wrote the change failed (an editor refused it).
    Failed,
    /// The file changed under the proposal where the proposal changes it too.
    Stale,
    Cancelled,
}

/// A decision, or how an accepted change ended: what a reviewer is told.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    pub id: String,
    pub session_id: String,
    pub run_id: String,
    pub outcome: Outcome,
    /// The hunks applied (for `Applied` and `PartiallyApplied`).
    pub hunks: Vec<usize>,
    /// Why: the user's reason, the stale place, the editor's refusal.
    pub reason: Option<String>,
}

/// What the user chose when accepting.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Choice {
    /// Only these hunks; `None`: all of them.
    pub hunks: Option<Vec<usize>>,
    /// Let the tool run without asking for the rest of the session.
    pub allow_for_session: bool,
    /// Why the hunks left out were left out.
    pub reason: Option<String>,
}

/// How writing an accepted change went, as the writer reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    Ok,
    /// The file changed again before the change reached it.
    Stale,
    Failed(String),
}

/// A request about a pending edit that cannot be carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewError {
    NoSuchEdit(String),
    AlreadyDecided(String),
    /// The run that proposed it stopped waiting.
    Gone(String),
    BadHunks(String),
}

/// Shows the review to a person. Called with the review's lock held, in the order things
/// happen: it must not call back into [`PendingEdits`].
pub trait Observer: Send + Sync {
    /// A proposal now waits for the user.
    fn proposed(&self, edit: &PendingEdit);
    /// A pending edit was decided, or an accepted change was written (or not).
    fn resolved(&self, resolution: &Resolution);
    /// The proposals waiting on an existing file changed (one came or went): `waiting` are those
    /// left, oldest first, for marks in the editor.
    fn waiting_on(&self, path: &Path, waiting: &[&PendingEdit]);
    /// The user commented on hunk `hunk` of `edit` (or took the comment back: none is there now).
    fn commented(&self, _edit: &PendingEdit, _hunk: usize) {}
}

/// Every pending edit of a process (all sessions), and the accepted changes not yet written.
pub struct PendingEdits {
    state: Mutex<State>,
    observer: Arc<dyn Observer>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    /// Waiting proposals by number, so listings keep the order they came in.
    waiting: BTreeMap<u64, Waiting>,
    /// Decided pending edits and how each was decided.
    decided: HashMap<String, Outcome>,
    /// Accepted changes on their way to their files, by pending-edit id.
    accepted: HashMap<String, Accepted>,
    /// Which accepted change each file waits for, and the text it is to have.
    writing: HashMap<PathBuf, (String, String)>,
    /// Comments the model has read, until a proposal for their lines answers them.
    open_comments: Vec<OpenComment>,
}

struct Waiting {
    edit: PendingEdit,
    reply: oneshot::Sender<Verdict>,
}

struct Accepted {
    resolution: Resolution,
    /// Files not reported yet.
    left: usize,
}

impl Subject {
    /// What `proposal` changes, with `shown` giving each path as people read it.
    pub fn of(proposal: &Proposal, shown: impl Fn(&Path) -> String) -> Self {
        match proposal {
            Proposal::Command(command) => return Subject::Command(command.clone()),
            Proposal::ServerCall(call) => return Subject::ServerCall(call.clone()),
            _ => {}
        }
        let mut files: Vec<FileDiff> = Vec::new();
        for change in proposal.file_changes() {
            let first_index = files.iter().map(|file| file.hunks.len()).sum();
            files.push(FileDiff::new(change, &shown, first_index));
        }
        Subject::Files(files)
    }

    /// What `proposal` changes, one subject per file (a command is one): what the user reviews
    /// as separate pending edits.
    pub fn each_file(proposal: &Proposal, shown: impl Fn(&Path) -> String) -> Vec<Self> {
        match proposal {
            Proposal::Command(command) => vec![Subject::Command(command.clone())],
            Proposal::ServerCall(call) => vec![Subject::ServerCall(call.clone())],
            _ => {
                let files = proposal.file_changes().iter();
                files.map(|change| Subject::Files(vec![FileDiff::new(change, &shown, 0)])).collect()
            }
        }
    }

    fn files(&self) -> &[FileDiff] {
        match self {
            Subject::Files(files) => files,
            Subject::Command(_) | Subject::ServerCall(_) => &[],
        }
    }

    fn hunk_count(&self) -> usize {
        self.files().iter().map(|file| file.hunks.len()).sum()
    }
}

impl FileDiff {
    /// The hunks of `change`, numbered from `first_index`; `shown` gives paths as people read them.
    pub fn new(change: &FileChange, shown: &dyn Fn(&Path) -> String, first_index: usize) -> Self {
        let before = change.before.as_deref().unwrap_or("");
        let mut hunks = diff::hunks(before, &change.after, DIFF_DEADLINE);
        for hunk in &mut hunks {
            hunk.index += first_index;
        }
        let path_shown = shown(&change.path);
        let moved_shown = change.moved_to.as_deref().map(shown);
        let mut diff = diff::unified_diff(&path_shown, before, &change.after);
        if let Some(to) = &moved_shown {
            // The header names both ends of a move, even when the text stays as it was.
            let body: String = diff.lines().skip(2).map(|line| format!("{line}\n")).collect();
            diff = format!("--- {path_shown}\n+++ {to}\n{body}");
        }
        FileDiff {
            path: change.path.clone(),
            diff,
            shown: path_shown,
            before: change.before.clone(),
            after: change.after.clone(),
            delete: change.delete,
            moved_to: change.moved_to.clone(),
            moved_shown,
            version: change.version,
            hunks,
            notes: change.notes.clone(),
        }
    }

    /// A new file: nothing in the editor to mark.
    pub fn creates(&self) -> bool {
        self.before.is_none()
    }
}

impl Origin {
    pub fn of(request: &ApprovalRequest<'_>) -> Self {
        Origin {
            session_id: request.session_id.to_string(),
            run_id: request.run_id.to_string(),
            tool_call_id: request.call.id.clone(),
            tool: request.call.name.clone(),
        }
    }
}

impl Outcome {
    /// The name clients see.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::PartiallyApplied => "partially_applied",
            Outcome::Rejected => "rejected",
            Outcome::Failed => "failed",
            Outcome::Stale => "stale",
            Outcome::Cancelled => "cancelled",
        }
    }
}

impl ReviewError {
    /// The stable code (as the harness's errors have): `invalid_argument` or `invalid_state`.
    pub fn code(&self) -> &'static str {
        match self {
            ReviewError::NoSuchEdit(_) | ReviewError::BadHunks(_) => "invalid_argument",
            ReviewError::AlreadyDecided(_) | ReviewError::Gone(_) => "invalid_state",
        }
    }
}

impl std::fmt::Display for ReviewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReviewError::NoSuchEdit(id) => {
                write!(f, "no pending edit {id:?}; reins.edit.list shows the pending ones")
            }
            ReviewError::AlreadyDecided(id) => write!(f, "{id} was already decided"),
            ReviewError::Gone(id) => write!(f, "the run that proposed {id} is no longer waiting for it"),
            ReviewError::BadHunks(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ReviewError {}

impl PendingEdits {
    pub fn new(observer: Arc<dyn Observer>) -> Self {
        Self { state: Mutex::new(State::default()), observer }
    }

    /// Holds `subject` for review, tells the observer, and returns the pending edit and the
    /// receiver its run waits on (see [`PendingEdits::wait`]).
    pub fn propose(&self, origin: Origin, subject: Subject) -> (PendingEdit, oneshot::Receiver<Verdict>) {
        let (reply, receiver) = oneshot::channel();
        let mut state = lock(&self.state);
        state.next_id += 1;
        let number = state.next_id;
        let mut resolves = Vec::new();
        for file in subject.files().iter().filter(|file| !file.creates()) {
            resolves.extend(comments::answered(&mut state.open_comments, &origin.session_id, &file.path, &file.hunks));
        }
        let edit = PendingEdit {
            id: format!("e{number}"),
            session_id: origin.session_id,
            run_id: origin.run_id,
            tool_call_id: origin.tool_call_id,
            tool: origin.tool,
            subject,
            comments: BTreeMap::new(),
            resolves,
        };
        self.observer.proposed(&edit);
        state.waiting.insert(number, Waiting { edit: edit.clone(), reply });
        for file in edit.subject.files().iter().filter(|file| !file.creates()) {
            self.tell_waiting_on(&state, &file.path);
        }
        (edit, receiver)
    }

    /// Waits for the verdict on `id` (proposed with `reply`), or until `cancel`. A run that stops
    /// waiting, by `cancel` or by dropping this future, cancels the pending edit.
    pub async fn wait(
        self: &Arc<Self>,
        id: &str,
        reply: oneshot::Receiver<Verdict>,
        cancel: &CancellationToken,
    ) -> Verdict {
        let mut unanswered = CancelOnDrop { edits: self.clone(), id: Some(id.to_string()) };
        tokio::select! {
            biased;
            verdict = reply => {
                unanswered.id = None;
                verdict.unwrap_or_else(|_| Verdict::Reject {
                    reason: "the review of this change was dropped; nothing was changed".into(),
                })
            }
            () = cancel.cancelled() => Verdict::Reject { reason: "cancelled".to_string() },
        }
    }

    /// Holds each file of `proposal` as its own pending edit (a command as one), waits until the
    /// user decided every one or the run stops, and answers for the proposal as a whole: the files
    /// accepted land together, with a note on the ones rejected; if any file went stale, or the
    /// run stopped, none does.
    pub async fn decide(
        self: &Arc<Self>,
        origin: Origin,
        proposal: &Proposal,
        shown: impl Fn(&Path) -> String,
        cancel: &CancellationToken,
    ) -> Verdict {
        let subjects = Subject::each_file(proposal, shown);
        if subjects.len() == 1 {
            let subject = subjects.into_iter().next().unwrap_or(Subject::Files(Vec::new()));
            let (edit, reply) = self.propose(origin, subject);
            return self.wait(&edit.id, reply, cancel).await;
        }
        // All are shown before any is awaited, and each is cancelled if the run stops waiting.
        let proposed: Vec<(PendingEdit, oneshot::Receiver<Verdict>)> =
            subjects.into_iter().map(|subject| self.propose(origin.clone(), subject)).collect();
        let mut guards: Vec<CancelOnDrop> =
            proposed.iter().map(|(edit, _)| CancelOnDrop { edits: self.clone(), id: Some(edit.id.clone()) }).collect();
        let mut verdicts = Vec::with_capacity(proposed.len());
        for ((edit, reply), guard) in proposed.into_iter().zip(&mut guards) {
            let verdict = self.wait(&edit.id, reply, cancel).await;
            guard.id = None;
            let outcome = lock(&self.state).decided.get(&edit.id).copied().unwrap_or(Outcome::Cancelled);
            verdicts.push((edit, outcome, verdict));
        }
        let accepted: Vec<(PathBuf, String)> = verdicts
            .iter()
            .flat_map(|(edit, _, verdict)| match verdict {
                Verdict::Accept { changed: Some(changed), .. } => {
                    changed.files.iter().map(|file| (file.path.clone(), file.after.clone())).collect()
                }
                Verdict::Accept { changed: None, .. } => {
                    edit.subject.files().iter().map(|file| (file.path.clone(), file.after.clone())).collect()
                }
                Verdict::Reject { .. } => Vec::new(),
            })
            .collect();
        let verdict = combine(proposal, verdicts);
        if matches!(verdict, Verdict::Reject { .. }) {
            // The files the user accepted will not be written: their reviews end here.
            let why = "not applied: another file of the same change went stale or was cancelled, so none was";
            for (path, after) in accepted {
                self.written(&path, &after, Written::Failed(why.to_string()));
            }
        }
        verdict
    }

    /// The pending edits, of one session or all, oldest first.
    pub fn list(&self, session_id: Option<&str>) -> Vec<PendingEdit> {
        let state = lock(&self.state);
        let waiting = state.waiting.values().map(|waiting| &waiting.edit);
        waiting.filter(|edit| session_id.is_none_or(|id| edit.session_id == id)).cloned().collect()
    }

    /// The pending edits that change the existing file `path`, oldest first.
    pub fn on_path(&self, path: &Path) -> Vec<PendingEdit> {
        let state = lock(&self.state);
        waiting_on(&state, path).into_iter().cloned().collect()
    }

    /// Comments on hunk `hunk` of `id` (replacing an earlier comment there; a blank one takes it
    /// back). The comments reach the model with the decision on the edit, as one batch.
    pub fn comment(&self, id: &str, hunk: usize, text: &str) -> Result<PendingEdit, ReviewError> {
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        let Some(waiting) = state.waiting.values_mut().find(|waiting| waiting.edit.id == id) else {
            if state.decided.contains_key(id) {
                return Err(ReviewError::AlreadyDecided(id.to_string()));
            }
            return Err(ReviewError::NoSuchEdit(id.to_string()));
        };
        check_hunks(id, &[hunk], &waiting.edit.subject)?;
        let text = text.trim();
        match text.is_empty() {
            true => waiting.edit.comments.remove(&hunk),
            false => waiting.edit.comments.insert(hunk, text.to_string()),
        };
        let edit = waiting.edit.clone();
        self.observer.commented(&edit, hunk);
        for file in edit.subject.files().iter().filter(|file| !file.creates()) {
            self.tell_waiting_on(state, &file.path);
        }
        Ok(edit)
    }

    /// Rejects `id`; the model reads `reason`, and the user's comments with the lines of their
    /// hunks in the files as `current` reads them.
    pub fn reject(
        &self,
        id: &str,
        reason: Option<String>,
        current: ReadCurrent<'_>,
    ) -> Result<Resolution, ReviewError> {
        let waiting = self.take(id, None)?;
        let edit = &waiting.edit;
        let subject = match &edit.subject {
            Subject::Command(command) => format!("the command `{}`", command.command),
            Subject::ServerCall(_) => format!("this call of `{}`", edit.tool),
            Subject::Files(files) => {
                let shown: Vec<&str> = files.iter().map(|file| file.shown.as_str()).collect();
                format!("this {} of {}", edit.tool, shown.join(", "))
            }
        };
        let mut for_model = notes::rejected_reason(&subject, reason.as_deref());
        let starts = starts_now(edit, current);
        for (file, starts) in edit.subject.files().iter().zip(&starts) {
            if let Some(note) = comments::comments_note(&file.shown, &file.hunks, &[], starts, &edit.comments) {
                for_model = format!("{for_model}\n{note}");
            }
        }
        self.keep_comments(edit, &[], &starts);
        let shown = reason.filter(|reason| !reason.trim().is_empty()).unwrap_or_else(|| "rejected".to_string());
        let resolution = resolution(edit, Outcome::Rejected, Vec::new(), Some(shown));
        self.resolve(waiting, &resolution, Verdict::Reject { reason: for_model })?;
        Ok(resolution)
    }

    /// Accepts `id` as `choice` says. `current` reads each file as it is now: a change to text the
    /// user edited meanwhile is rebased onto it, or refused as stale where both touch the same
    /// lines. The resolution says what was decided; for files, the observer hears how it ended
    /// once the writer reports through [`PendingEdits::written`].
    pub fn accept(&self, id: &str, choice: Choice, current: ReadCurrent<'_>) -> Result<Resolution, ReviewError> {
        let waiting = self.take(id, choice.hunks.as_deref())?;
        let allow_for_session = choice.allow_for_session;
        let files = match &waiting.edit.subject {
            Subject::Command(_) | Subject::ServerCall(_) => {
                let resolution = resolution(&waiting.edit, Outcome::Applied, Vec::new(), None);
                self.resolve(waiting, &resolution, Verdict::Accept { changed: None, allow_for_session })?;
                return Ok(resolution);
            }
            Subject::Files(files) => files.clone(),
        };
        let all: Vec<usize> = files.iter().flat_map(|file| file.hunks.iter().map(|hunk| hunk.index)).collect();
        let starts = starts_now(&waiting.edit, current);
        let mut chosen = choice.hunks.unwrap_or_else(|| all.clone());
        chosen.sort_unstable();
        chosen.dedup();
        let outcome = if chosen.len() == all.len() { Outcome::Applied } else { Outcome::PartiallyApplied };
        // A reason only says something about hunks left out; blank is no reason.
        let reason = choice
            .reason
            .map(|reason| reason.trim().to_string())
            .filter(|reason| outcome == Outcome::PartiallyApplied && !reason.is_empty());

        let mut settled = Vec::new();
        let mut stale = Vec::new();
        for (file, starts) in files.iter().zip(&starts) {
            let mine: Vec<usize> = file.hunks.iter().map(|hunk| hunk.index).filter(|i| chosen.contains(i)).collect();
            if mine.is_empty() && !file.hunks.is_empty() {
                continue;
            }
            if let Some(to) = &file.moved_to
                && current(to).is_some()
            {
                stale.push(format!(
                    "{} was not moved: {} was created while the move waited for review.",
                    file.shown,
                    file.moved_shown.as_deref().unwrap_or_default()
                ));
                continue;
            }
            let comments = comments::comments_note(&file.shown, &file.hunks, &mine, starts, &waiting.edit.comments);
            match settle(file, &mine, current(&file.path), reason.as_deref(), comments) {
                Ok(file) => settled.push(file),
                Err(why) => stale.push(why),
            }
        }
        if !stale.is_empty() {
            // The comments still reach the model: the next proposal may answer them.
            for (file, starts) in files.iter().zip(&starts) {
                let comments = &waiting.edit.comments;
                stale.extend(comments::comments_note(&file.shown, &file.hunks, &[], starts, comments));
            }
            self.keep_comments(&waiting.edit, &[], &starts);
            let why = stale.join("\n");
            let resolution = resolution(&waiting.edit, Outcome::Stale, Vec::new(), Some(why.clone()));
            self.resolve(waiting, &resolution, Verdict::Reject { reason: why })?;
            return Ok(resolution);
        }

        // Unchanged: the proposal goes as it was, and its own text is what the writer reports.
        let as_proposed = settled.iter().all(|file| file.note.is_none() && file.current_is_before);
        let verdict = if as_proposed {
            Verdict::Accept { changed: None, allow_for_session }
        } else {
            let note = settled.iter().filter_map(|file| file.note.clone()).collect::<Vec<_>>().join("\n");
            let files = settled.iter().map(|file| file.change.clone()).collect();
            Verdict::Accept { changed: Some(Changed { files, note }), allow_for_session }
        };
        self.keep_comments(&waiting.edit, &chosen, &starts);
        let resolution = resolution(&waiting.edit, outcome, chosen, reason);
        let mut state = lock(&self.state);
        state.decided.insert(id.to_string(), outcome);
        for file in &settled {
            state.writing.insert(file.change.path.clone(), (id.to_string(), file.change.after.clone()));
        }
        let accepted = Accepted { resolution: resolution.clone(), left: settled.len() };
        state.accepted.insert(id.to_string(), accepted);
        for file in files.iter().filter(|file| !file.creates()) {
            self.tell_waiting_on(&state, &file.path);
        }
        if waiting.reply.send(verdict).is_err() {
            forget_accepted(&mut state, id);
            return Err(ReviewError::Gone(id.to_string()));
        }
        Ok(resolution)
    }

    /// The run stopped waiting for `id`: it is rejected with reason "cancelled", or, if it was
    /// accepted at the same moment, its change will not be reported.
    pub fn cancel(&self, id: &str) {
        if let Ok(waiting) = self.take(id, None) {
            let resolution = resolution(&waiting.edit, Outcome::Cancelled, Vec::new(), Some("cancelled".into()));
            let _ = self.resolve(waiting, &resolution, Verdict::Reject { reason: "cancelled".to_string() });
            return;
        }
        let mut state = lock(&self.state);
        if let Some(mut accepted) = forget_accepted(&mut state, id) {
            accepted.resolution.outcome = Outcome::Cancelled;
            accepted.resolution.hunks.clear();
            accepted.resolution.reason = Some("cancelled".into());
            self.observer.resolved(&accepted.resolution);
        }
    }

    /// The writer wrote (or failed to write) `after` to `path`. If that was an accepted change,
    /// the observer hears how the pending edit ended once all its files are reported.
    pub fn written(&self, path: &Path, after: &str, result: Written) {
        let mut state = lock(&self.state);
        let id = match state.writing.get(path) {
            Some((id, expected)) if expected == after => id.clone(),
            _ => return,
        };
        state.writing.remove(path);
        let Some(accepted) = state.accepted.get_mut(&id) else { return };
        accepted.left = accepted.left.saturating_sub(1);
        let failure = match result {
            Written::Ok => None,
            Written::Stale => {
                Some((Outcome::Stale, "the buffer changed again before the change reached the editor".to_string()))
            }
            Written::Failed(reason) => Some((Outcome::Failed, reason)),
        };
        if let Some((outcome, reason)) = failure {
            accepted.resolution.outcome = outcome;
            accepted.resolution.hunks.clear();
            accepted.resolution.reason = Some(reason);
        }
        if accepted.left == 0
            && let Some(accepted) = forget_accepted(&mut state, &id)
        {
            self.observer.resolved(&accepted.resolution);
        }
    }

    /// Takes `id` out of the waiting map (marking it decided), after checking `chosen` hunks.
    fn take(&self, id: &str, chosen: Option<&[usize]>) -> Result<Waiting, ReviewError> {
        let mut state = lock(&self.state);
        let Some(number) = state.waiting.iter().find(|(_, waiting)| waiting.edit.id == id).map(|(n, _)| *n) else {
            if state.decided.contains_key(id) {
                return Err(ReviewError::AlreadyDecided(id.to_string()));
            }
            return Err(ReviewError::NoSuchEdit(id.to_string()));
        };
        if let (Some(chosen), Some(waiting)) = (chosen, state.waiting.get(&number)) {
            check_hunks(id, chosen, &waiting.edit.subject)?;
        }
        // Rejected until the decision says otherwise (see `resolve` and `accept`).
        state.decided.insert(id.to_string(), Outcome::Rejected);
        state.waiting.remove(&number).ok_or_else(|| ReviewError::Gone(id.to_string()))
    }

    /// Tells the observer of a decision, updates the marks, and sends the run its verdict.
    fn resolve(&self, waiting: Waiting, resolution: &Resolution, verdict: Verdict) -> Result<(), ReviewError> {
        let mut state = lock(&self.state);
        state.decided.insert(resolution.id.clone(), resolution.outcome);
        self.observer.resolved(resolution);
        for file in waiting.edit.subject.files().iter().filter(|file| !file.creates()) {
            self.tell_waiting_on(&state, &file.path);
        }
        waiting.reply.send(verdict).map_err(|_| ReviewError::Gone(resolution.id.clone()))
    }

    /// Keeps the comments of `edit`, decided with `chosen` applied to files whose hunks start at
    /// `starts`, open until a proposal for their lines answers them.
    fn keep_comments(&self, edit: &PendingEdit, chosen: &[usize], starts: &[Vec<usize>]) {
        let mut state = lock(&self.state);
        for (file, starts) in edit.subject.files().iter().zip(starts) {
            for (hunk, lines) in file.hunks.iter().zip(comments::result_lines(&file.hunks, chosen, starts)) {
                let Some(text) = edit.comments.get(&hunk.index) else { continue };
                let comment = Comment { edit: edit.id.clone(), hunk: hunk.index, text: text.clone() };
                let path = file.moved_to.clone().unwrap_or_else(|| file.path.clone());
                let open = OpenComment { comment, session_id: edit.session_id.clone(), path, lines };
                state.open_comments.push(open);
            }
        }
    }

    fn tell_waiting_on(&self, state: &State, path: &Path) {
        self.observer.waiting_on(path, &waiting_on(state, path));
    }
}

/// The answer for a proposal of several files from the verdicts on each (in the proposal's order).
fn combine(proposal: &Proposal, verdicts: Vec<(PendingEdit, Outcome, Verdict)>) -> Verdict {
    let failed: Vec<String> = verdicts
        .iter()
        .filter(|(_, outcome, _)| !matches!(outcome, Outcome::Applied | Outcome::PartiallyApplied | Outcome::Rejected))
        .filter_map(|(_, _, verdict)| match verdict {
            Verdict::Reject { reason } => Some(reason.clone()),
            Verdict::Accept { .. } => None,
        })
        .collect();
    if !failed.is_empty() {
        return Verdict::Reject { reason: format!("{}\nNo file of the change was changed.", failed.join("\n")) };
    }
    let allow_for_session =
        verdicts.iter().any(|(_, _, verdict)| matches!(verdict, Verdict::Accept { allow_for_session: true, .. }));
    let mut files = Vec::new();
    let mut notes = Vec::new();
    let mut as_proposed = true;
    for ((_, _, verdict), change) in verdicts.iter().zip(proposal.file_changes()) {
        match verdict {
            Verdict::Accept { changed: None, .. } => files.push(change.clone()),
            Verdict::Accept { changed: Some(changed), .. } => {
                as_proposed = false;
                files.extend(changed.files.iter().cloned());
                notes.push(changed.note.clone());
            }
            Verdict::Reject { reason } => {
                as_proposed = false;
                notes.push(reason.clone());
            }
        }
    }
    if files.is_empty() {
        return Verdict::Reject { reason: notes.join("\n") };
    }
    if as_proposed {
        return Verdict::Accept { changed: None, allow_for_session };
    }
    notes.retain(|note| !note.is_empty());
    Verdict::Accept { changed: Some(Changed { files, note: notes.join("\n") }), allow_for_session }
}

/// One file of an accepted proposal, settled against the file as it is now.
struct Settled {
    change: FileChange,
    /// For the model: some hunks only, or merged into newer text.
    note: Option<String>,
    /// The file is as the proposal found it.
    current_is_before: bool,
}

/// What to write to `file` with the hunks `chosen`, given the file as it is now (`current`), or
/// why nothing can be.
fn settle(
    file: &FileDiff,
    chosen: &[usize],
    current: Option<(String, Option<i32>)>,
    reason: Option<&str>,
    comments: Option<String>,
) -> Result<Settled, String> {
    let before = file.before.as_deref().unwrap_or("");
    let proposed = diff::apply_hunks(before, &file.hunks, chosen);
    let partial = chosen.len() < file.hunks.len();
    let (current_text, after, version, merged) = match current {
        // The file was created while the write waited.
        Some(_) if file.before.is_none() => return Err(notes::created_meanwhile_reason(&file.shown)),
        // A deletion is all or nothing: text typed meanwhile would go with the file.
        Some((current, _)) if file.delete && current != before => {
            return Err(format!(
                "{} was not deleted: it changed while its deletion waited for review. Read it again and decide whether it should still go.",
                file.shown
            ));
        }
        Some((current, version)) if current != before => match merge::rebase(before, &proposed, &current) {
            Ok(merged) => (Some(current), merged, version, true),
            Err(conflict) => return Err(notes::stale_reason(&file.shown, &conflict, &current)),
        },
        Some((current, version)) => (Some(current), proposed, version, false),
        None if file.before.is_some() => {
            return Err(format!(
                "{} was deleted while this change waited for review, so nothing was changed.",
                file.shown
            ));
        }
        None => (None, proposed, None, false),
    };
    let mut notes = Vec::new();
    if partial {
        notes.push(notes::partial_note(&file.shown, &file.hunks, chosen, &after, reason));
    }
    if merged {
        notes.push(notes::merged_note(&file.shown));
    }
    notes.extend(comments);
    let current_is_before = current_text.as_deref() == file.before.as_deref();
    let after = if notes.is_empty() && current_is_before { file.after.clone() } else { after };
    let change = FileChange {
        path: file.path.clone(),
        before: current_text,
        after,
        delete: file.delete,
        moved_to: file.moved_to.clone(),
        version,
        notes: file.notes.clone(),
    };
    let note = (!notes.is_empty()).then(|| notes.join("\n"));
    Ok(Settled { change, note, current_is_before })
}

/// Where the hunks of each file of `edit` start in the file as `current` reads it (only worked
/// out when the user commented: only comments name lines).
fn starts_now(edit: &PendingEdit, current: ReadCurrent<'_>) -> Vec<Vec<usize>> {
    let files = edit.subject.files();
    files
        .iter()
        .map(|file| {
            let before = file.before.as_deref().unwrap_or("");
            match current(&file.path) {
                Some((text, _)) if !edit.comments.is_empty() => comments::current_starts(before, &file.hunks, &text),
                _ => file.hunks.iter().map(|hunk| hunk.line).collect(),
            }
        })
        .collect()
}

/// Checks the hunk indexes of an accept.
fn check_hunks(id: &str, chosen: &[usize], subject: &Subject) -> Result<(), ReviewError> {
    match subject {
        Subject::Command(_) => {
            return Err(ReviewError::BadHunks(format!("{id} is a command; it has no hunks to choose")));
        }
        Subject::ServerCall(_) => {
            return Err(ReviewError::BadHunks(format!("{id} is a call of an MCP tool; it has no hunks to choose")));
        }
        Subject::Files(_) => {}
    }
    if chosen.is_empty() {
        return Err(ReviewError::BadHunks(format!(
            "hunks is empty; name at least one hunk of {id}, or reject it with reins.edit.reject"
        )));
    }
    let count = subject.hunk_count();
    if let Some(missing) = chosen.iter().find(|index| **index >= count) {
        return Err(ReviewError::BadHunks(format!(
            "{id} has no hunk index {missing}; its hunk indexes are 0 to {}",
            count.saturating_sub(1)
        )));
    }
    Ok(())
}

fn resolution(edit: &PendingEdit, outcome: Outcome, hunks: Vec<usize>, reason: Option<String>) -> Resolution {
    Resolution {
        id: edit.id.clone(),
        session_id: edit.session_id.clone(),
        run_id: edit.run_id.clone(),
        outcome,
        hunks,
        reason,
    }
}

/// The waiting proposals that change the existing file `path`.
fn waiting_on<'a>(state: &'a State, path: &Path) -> Vec<&'a PendingEdit> {
    let waiting = state.waiting.values().map(|waiting| &waiting.edit);
    waiting.filter(|edit| edit.subject.files().iter().any(|file| !file.creates() && file.path == path)).collect()
}

/// Drops an accepted change and the files waiting for it.
fn forget_accepted(state: &mut State, id: &str) -> Option<Accepted> {
    state.writing.retain(|_, (waiting_for, _)| waiting_for != id);
    state.accepted.remove(id)
}

/// Cancels a pending edit when its run stops waiting before the user decided.
struct CancelOnDrop {
    edits: Arc<PendingEdits>,
    /// `None` once the verdict arrived.
    id: Option<String>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            self.edits.cancel(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    /// Writes down what the observer hears, one line each.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl Observer for Recorder {
        fn proposed(&self, edit: &PendingEdit) {
            let hunks = edit.subject.hunk_count();
            let line =
                format!("proposed {} {}/{} {} ({hunks} hunks)", edit.id, edit.session_id, edit.run_id, edit.tool);
            lock(&self.0).push(line);
        }
        fn resolved(&self, r: &Resolution) {
            let line = format!("resolved {} {} {:?} {:?}", r.id, r.outcome.as_str(), r.hunks, r.reason);
            lock(&self.0).push(line);
        }
        fn waiting_on(&self, path: &Path, waiting: &[&PendingEdit]) {
            let ids: Vec<&str> = waiting.iter().map(|edit| edit.id.as_str()).collect();
            lock(&self.0).push(format!("waiting on {} {ids:?}", path.display()));
        }
    }

    fn origin(session: &str, call: &str) -> Origin {
        Origin { session_id: session.into(), run_id: "r1".into(), tool_call_id: call.into(), tool: "edit".into() }
    }

    fn change(path: &str, before: Option<&str>, after: &str) -> FileChange {
        FileChange {
            path: PathBuf::from(path),
            before: before.map(str::to_string),
            after: after.to_string(),
            version: Some(1),
            notes: Vec::new(),
            ..FileChange::default()
        }
    }

    fn edit_subject(path: &str, before: Option<&str>, after: &str) -> Subject {
        Subject::of(&Proposal::FileChange(change(path, before, after)), |path| {
            path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default()
        })
    }

    /// A verdict, briefly: the gate's answer with the note or reason and the written text.
    fn verdict(receiver: &mut oneshot::Receiver<Verdict>) -> String {
        match receiver.try_recv() {
            Err(_) => "no verdict".into(),
            Ok(Verdict::Accept { changed: None, allow_for_session }) => {
                format!("accept as proposed {allow_for_session}")
            }
            Ok(Verdict::Accept { changed: Some(changed), allow_for_session }) => {
                let files: Vec<String> = changed.files.iter().map(|f| format!("{:?}", f.after)).collect();
                format!("accept {} {allow_for_session}\nnote: {}", files.join(" "), changed.note)
            }
            Ok(Verdict::Reject { reason }) => format!("reject: {reason}"),
        }
    }

    /// Proposes `before` → `after` for a.txt, lets the file read `current` by then, accepts as
    /// `choice` says, and renders the result, the verdict and what the observer heard.
    fn check_accept(before: &str, after: &str, current: &str, choice: Choice, expected: Expect) {
        let recorder = Arc::new(Recorder::default());
        let edits = PendingEdits::new(recorder.clone());
        let (edit, mut receiver) = edits.propose(origin("s1", "c1"), edit_subject("/w/a.txt", Some(before), after));
        let current = current.to_string();
        let result = match edits.accept(&edit.id, choice, &|_| Some((current.clone(), Some(2)))) {
            Ok(r) => format!("{} {:?} {:?}", r.outcome.as_str(), r.hunks, r.reason),
            Err(err) => format!("error {}: {err}", err.code()),
        };
        let heard = lock(&recorder.0).join("\n");
        expected.assert_eq(&format!("{result}\n{}\n{heard}", verdict(&mut receiver)));
    }

    const FIVE: &str = "one\ntwo\nthree\nfour\nfive\n";
    const FIVE_CHANGED: &str = "ONE\ntwo\nthree\nfour\nFIVE\n";

    #[test]
    fn accepting_everything_goes_as_proposed() {
        check_accept(
            FIVE,
            FIVE_CHANGED,
            FIVE,
            Choice::default(),
            expect![[r#"
                applied [0, 1] None
                accept as proposed false
                proposed e1 s1/r1 edit (2 hunks)
                waiting on /w/a.txt ["e1"]
                waiting on /w/a.txt []"#]],
        );
    }

    #[test]
    fn accepting_some_hunks_tells_the_model_which_and_why() {
        let choice = Choice { hunks: Some(vec![1]), allow_for_session: true, reason: Some(" keep one ".into()) };
        check_accept(
            FIVE,
            FIVE_CHANGED,
            FIVE,
            choice,
            expect![[r#"
                partially_applied [1] Some("keep one")
                accept "one\ntwo\nthree\nfour\nFIVE\n" true
                note: The user applied hunk 2 and did not apply hunk 1 (of 2 hunks) of this change to a.txt. The user's reason for not applying hunk 1: keep one
                a.txt now reads, around the changes:
                    1 | one
                    2 | two
                    3 | three
                    4 | four
                    5 | FIVE
                proposed e1 s1/r1 edit (2 hunks)
                waiting on /w/a.txt ["e1"]
                waiting on /w/a.txt []"#]],
        );
    }

    #[test]
    fn text_changed_meanwhile_is_merged_or_stale() {
        check_accept(
            FIVE,
            FIVE_CHANGED,
            "one\ntwo\nTHREE\nfour\nfive\n",
            Choice::default(),
            expect![[r#"
                applied [0, 1] None
                accept "ONE\ntwo\nTHREE\nfour\nFIVE\n" false
                note: a.txt changed in the editor while this change waited for review; the change was merged into the new text without touching the user's edits.
                proposed e1 s1/r1 edit (2 hunks)
                waiting on /w/a.txt ["e1"]
                waiting on /w/a.txt []"#]],
        );
        check_accept(
            FIVE,
            FIVE_CHANGED,
            "one\ntwo\nthree\nfour\nfive!\n",
            Choice::default(),
            expect![[r#"
                stale [] Some("a.txt was not changed: the file changed after the edit was proposed: the user changed line 5 of the current text, where the edit changes line 5 of the text it was made from. a.txt now reads there:\n    3 | three\n    4 | four\n    5 | five!\nRead the file again and redo the change if it is still needed.")
                reject: a.txt was not changed: the file changed after the edit was proposed: the user changed line 5 of the current text, where the edit changes line 5 of the text it was made from. a.txt now reads there:
                    3 | three
                    4 | four
                    5 | five!
                Read the file again and redo the change if it is still needed.
                proposed e1 s1/r1 edit (2 hunks)
                waiting on /w/a.txt ["e1"]
                resolved e1 stale [] Some("a.txt was not changed: the file changed after the edit was proposed: the user changed line 5 of the current text, where the edit changes line 5 of the text it was made from. a.txt now reads there:\n    3 | three\n    4 | four\n    5 | five!\nRead the file again and redo the change if it is still needed.")
                waiting on /w/a.txt []"#]],
        );
    }

    #[test]
    fn bad_choices_are_refused_and_leave_the_edit_waiting() {
        let choice = |hunks: Vec<usize>| Choice { hunks: Some(hunks), ..Choice::default() };
        check_accept(
            FIVE,
            FIVE_CHANGED,
            FIVE,
            choice(vec![2]),
            expect![[r#"
                error invalid_argument: e1 has no hunk index 2; its hunk indexes are 0 to 1
                no verdict
                proposed e1 s1/r1 edit (2 hunks)
                waiting on /w/a.txt ["e1"]"#]],
        );
        check_accept(
            FIVE,
            FIVE_CHANGED,
            FIVE,
            choice(Vec::new()),
            expect![[r#"
                error invalid_argument: hunks is empty; name at least one hunk of e1, or reject it with reins.edit.reject
                no verdict
                proposed e1 s1/r1 edit (2 hunks)
                waiting on /w/a.txt ["e1"]"#]],
        );
    }

    #[test]
    fn a_rejection_reaches_the_model_and_a_second_decision_is_refused() {
        let recorder = Arc::new(Recorder::default());
        let edits = PendingEdits::new(recorder.clone());
        let (edit, mut receiver) =
            edits.propose(origin("s1", "c1"), edit_subject("/w/a.txt", Some(FIVE), FIVE_CHANGED));
        let rejected = edits.reject(&edit.id, Some(" not now ".into()), &|_| None).unwrap();
        assert_eq!((rejected.outcome, rejected.reason.as_deref()), (Outcome::Rejected, Some(" not now ")));
        assert_eq!(verdict(&mut receiver), "reject: The user rejected this edit of a.txt, saying: not now");
        assert_eq!(edits.reject(&edit.id, None, &|_| None).unwrap_err(), ReviewError::AlreadyDecided("e1".into()));
        let missing = edits.accept("e9", Choice::default(), &|_| None).unwrap_err();
        assert_eq!(missing.to_string(), r#"no pending edit "e9"; reins.edit.list shows the pending ones"#);
        assert!(edits.list(None).is_empty());
    }

    #[test]
    fn sessions_reusing_a_tool_call_id_keep_their_own_edits() {
        let edits = PendingEdits::new(Arc::new(Recorder::default()));
        let (first, _first_rx) = edits.propose(origin("s1", "call_0"), edit_subject("/w/a.txt", Some("a\n"), "A\n"));
        let (second, mut second_rx) =
            edits.propose(origin("s2", "call_0"), edit_subject("/w/b.txt", Some("b\n"), "B\n"));
        let sessions = |session| -> Vec<String> {
            edits
                .list(session)
                .iter()
                .map(|edit| format!("{} {} {}", edit.id, edit.session_id, edit.tool_call_id))
                .collect()
        };
        assert_eq!(sessions(None), ["e1 s1 call_0", "e2 s2 call_0"]);
        assert_eq!(sessions(Some("s2")), ["e2 s2 call_0"]);
        let accepted = edits.accept(&second.id, Choice::default(), &|_| Some(("b\n".into(), None))).unwrap();
        assert_eq!((accepted.session_id.as_str(), accepted.outcome), ("s2", Outcome::Applied));
        assert_eq!(verdict(&mut second_rx), "accept as proposed false");
        assert_eq!(sessions(None), [format!("{} s1 call_0", first.id)]);
    }

    #[test]
    fn a_written_change_is_reported_once_its_file_is_written() {
        let recorder = Arc::new(Recorder::default());
        let edits = PendingEdits::new(recorder.clone());
        let (edit, _rx) = edits.propose(origin("s1", "c1"), edit_subject("/w/a.txt", Some(FIVE), FIVE_CHANGED));
        edits.accept(&edit.id, Choice::default(), &|_| Some((FIVE.into(), Some(1)))).unwrap();
        // Another text for the same file is someone else's write.
        edits.written(Path::new("/w/a.txt"), "other", Written::Ok);
        edits.written(Path::new("/w/a.txt"), FIVE_CHANGED, Written::Failed("the editor refused".into()));
        edits.written(Path::new("/w/a.txt"), FIVE_CHANGED, Written::Ok);
        expect![[r#"
            proposed e1 s1/r1 edit (2 hunks)
            waiting on /w/a.txt ["e1"]
            waiting on /w/a.txt []
            resolved e1 failed [] Some("the editor refused")"#]]
        .assert_eq(&lock(&recorder.0).join("\n"));
    }

    #[test]
    fn comments_go_to_the_model_with_the_decision_and_the_next_proposal_answers_them() {
        let recorder = Arc::new(Recorder::default());
        let edits = PendingEdits::new(recorder.clone());
        let before: String = (1..=12).map(|n| format!("line {n}\n")).collect();
        let after = before.replace("line 2\n", "line two\n").replace("line 6\n", "line six\n").replace("line 11\n", "");
        let (edit, mut receiver) = edits.propose(origin("s1", "c1"), edit_subject("/w/a.txt", Some(&before), &after));
        edits.comment(&edit.id, 0, "spell it 'Two'").unwrap();
        edits.comment(&edit.id, 1, "first draft").unwrap();
        // A second comment on a hunk replaces the first; hunk 3 of 3 is index 2.
        let commented = edits.comment(&edit.id, 1, "  not six, 6  ").unwrap();
        edits.comment(&edit.id, 2, "keep line 11").unwrap();
        assert_eq!(commented.comments.get(&1).map(String::as_str), Some("not six, 6"));
        assert_eq!(edits.comment(&edit.id, 3, "x").unwrap_err().code(), "invalid_argument");
        let choice = Choice { hunks: Some(vec![1]), ..Choice::default() };
        let on_disk = |_: &Path| Some((before.clone(), None));
        edits.accept(&edit.id, choice, &on_disk).unwrap();
        expect![[r#"
            accept "line 1\nline 2\nline 3\nline 4\nline 5\nline six\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\n" false
            note: The user applied hunk 2 and did not apply hunks 1, 3 (of 3 hunks) of this change to a.txt. a.txt now reads, around the changes:
                1 | line 1
                2 | line 2
                3 | line 3
                4 | line 4
                5 | line 5
                6 | line six
                7 | line 7
                8 | line 8
                9 | line 9
               10 | line 10
               11 | line 11
               12 | line 12
            The user's comments on this change to a.txt, with the decision on each hunk (lines as a.txt now reads):
            hunk 1 (line 2): rejected — comment: spell it 'Two'
            hunk 2 (line 6): applied — comment: not six, 6
            hunk 3 (line 11): rejected — comment: keep line 11"#]]
        .assert_eq(&verdict(&mut receiver));
        assert_eq!(edits.comment(&edit.id, 0, "late").unwrap_err().code(), "invalid_state");
        // The revision changes lines 2 and 11 again: it answers those two comments, not the third.
        let now = before.replace("line 6\n", "line six\n");
        let revised = now.replace("line 2\n", "line Two\n").replace("line 11\n", "line eleven\n");
        let (revision, _rx) = edits.propose(origin("s1", "c2"), edit_subject("/w/a.txt", Some(&now), &revised));
        let answered: Vec<String> =
            revision.resolves.iter().map(|c| format!("{}#{} {}", c.edit, c.hunk, c.text)).collect();
        assert_eq!(answered, ["e1#0 spell it 'Two'", "e1#2 keep line 11"]);
        let (again, _rx) = edits.propose(origin("s1", "c3"), edit_subject("/w/a.txt", Some(&now), &revised));
        assert!(again.resolves.is_empty(), "a comment is answered once");
    }

    #[test]
    fn comments_on_a_rejected_edit_follow_the_rejection() {
        let edits = PendingEdits::new(Arc::new(Recorder::default()));
        let (edit, mut receiver) =
            edits.propose(origin("s1", "c1"), edit_subject("/w/a.txt", Some(FIVE), FIVE_CHANGED));
        edits.comment(&edit.id, 1, "five stays").unwrap();
        edits.reject(&edit.id, None, &|_| None).unwrap();
        expect![[r#"
            reject: The user rejected this edit of a.txt.
            The user's comments on this change to a.txt, with the decision on each hunk (lines as a.txt now reads):
            hunk 1 (line 1): rejected
            hunk 2 (line 5): rejected — comment: five stays"#]]
        .assert_eq(&verdict(&mut receiver));
    }

    #[tokio::test]
    async fn a_run_that_stops_waiting_cancels_its_edit() {
        let recorder = Arc::new(Recorder::default());
        let edits = Arc::new(PendingEdits::new(recorder.clone()));
        let (edit, receiver) = edits.propose(origin("s1", "c1"), edit_subject("/w/new.txt", None, "new\n"));
        let cancel = CancellationToken::new();
        cancel.cancel();
        let verdict = edits.wait(&edit.id, receiver, &cancel).await;
        assert_eq!(verdict, Verdict::Reject { reason: "cancelled".into() });
        // A new file has nothing to mark in the editor.
        expect![[r#"
            proposed e1 s1/r1 edit (1 hunks)
            resolved e1 cancelled [] Some("cancelled")"#]]
        .assert_eq(&lock(&recorder.0).join("\n"));
        assert_eq!(edits.accept(&edit.id, Choice::default(), &|_| None).unwrap_err().code(), "invalid_state");
    }

    #[test]
    fn hunks_are_numbered_across_the_files_of_a_proposal() {
        let name = |path: &Path| path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        let recorder = Arc::new(Recorder::default());
        let edits = PendingEdits::new(recorder.clone());
        let files = vec![
            FileDiff::new(&change("/w/a.txt", Some("a\n"), "A\n"), &name, 0),
            FileDiff::new(&change("/w/b.txt", Some("b\nc\nd\n"), "B\nc\nD\n"), &name, 1),
        ];
        let (edit, mut receiver) = edits.propose(origin("s1", "c1"), Subject::Files(files));
        let choice = Choice { hunks: Some(vec![2]), ..Choice::default() };
        let current = |path: &Path| {
            std::fs::read_to_string(path)
                .ok()
                .or_else(|| Some(if path.ends_with("a.txt") { "a\n".into() } else { "b\nc\nd\n".into() }))
        };
        let accepted = edits.accept(&edit.id, choice, &|path| current(path).map(|text| (text, None))).unwrap();
        assert_eq!((accepted.outcome, accepted.hunks.clone()), (Outcome::PartiallyApplied, vec![2]));
        expect![[r#"
            accept "b\nc\nD\n" false
            note: The user applied hunk 3 and did not apply hunk 2 (of the 2 hunks numbered 2 to 3) of this change to b.txt. b.txt now reads, around the changes:
                1 | b
                2 | c
                3 | D"#]]
        .assert_eq(&verdict(&mut receiver));
        edits.written(Path::new("/w/b.txt"), "b\nc\nD\n", Written::Ok);
        expect![[r#"
            proposed e1 s1/r1 edit (3 hunks)
            waiting on /w/a.txt ["e1"]
            waiting on /w/b.txt ["e1"]
            waiting on /w/a.txt []
            waiting on /w/b.txt []
            resolved e1 partially_applied [2] None"#]]
        .assert_eq(&lock(&recorder.0).join("\n"));
    }

    #[tokio::test]
    async fn a_proposal_of_several_files_is_one_pending_edit_per_file_answered_as_a_whole() {
        let recorder = Arc::new(Recorder::default());
        let edits = Arc::new(PendingEdits::new(recorder.clone()));
        let proposal = Proposal::FileChanges {
            files: vec![
                change("/w/a.txt", Some("a\n"), "A\n"),
                FileChange { delete: true, ..change("/w/b.txt", Some("b\n"), "") },
                FileChange { moved_to: Some(PathBuf::from("/w/d.txt")), ..change("/w/c.txt", Some("c\n"), "c\n") },
            ],
        };
        let name = |path: &Path| path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        let waiting = {
            let (edits, proposal) = (edits.clone(), proposal.clone());
            tokio::spawn(
                async move { edits.decide(origin("s1", "c1"), &proposal, name, &CancellationToken::new()).await },
            )
        };
        while edits.list(None).len() < 3 {
            tokio::task::yield_now().await;
        }
        let shown: Vec<String> = edits
            .list(None)
            .iter()
            .map(|edit| match &edit.subject {
                Subject::Files(files) => {
                    let file = &files[0];
                    format!(
                        "{} {} delete={} moved={:?} hunks={}",
                        edit.id,
                        file.shown,
                        file.delete,
                        file.moved_shown,
                        file.hunks.len()
                    )
                }
                Subject::Command(_) => "command".into(),
                Subject::ServerCall(_) => "call".into(),
            })
            .collect();
        assert_eq!(
            shown,
            [
                "e1 a.txt delete=false moved=None hunks=1",
                "e2 b.txt delete=true moved=None hunks=1",
                "e3 c.txt delete=false moved=Some(\"d.txt\") hunks=0"
            ]
        );
        let current = |path: &Path| match name(path).as_str() {
            "a.txt" => Some(("a\n".to_string(), None)),
            "b.txt" => Some(("b\n".to_string(), None)),
            "c.txt" => Some(("c\n".to_string(), None)),
            _ => None,
        };
        edits.accept("e1", Choice::default(), &current).unwrap();
        edits.reject("e2", Some("keep b".into()), &|_| None).unwrap();
        edits.accept("e3", Choice::default(), &current).unwrap();
        let Verdict::Accept { changed: Some(changed), .. } = waiting.await.unwrap() else {
            panic!("expected a changed accept")
        };
        let files: Vec<String> = changed
            .files
            .iter()
            .map(|file| format!("{} -> {:?}", name(&file.path), file.moved_to.as_deref().map(name)))
            .collect();
        assert_eq!(files, ["a.txt -> None", "c.txt -> Some(\"d.txt\")"]);
        assert_eq!(changed.note, "The user rejected this edit of b.txt, saying: keep b");
    }
}
