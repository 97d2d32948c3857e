//! Replaying a [`Plan`] against the files as they are now: each recorded change is undone or
//! redone as a three-way merge of the agent's change with what the file holds, so the user's own
//! edits elsewhere in the file survive. Nothing is written here; the result says, per file, what
//! it is to hold, or why it is left as it is.
//!
//! Files that a recorded rename links are decided together: if one of them conflicts, none of
//! them changes, so a move is never half undone.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};

use reins_review::merge;

use crate::patch;
use crate::plan::{Direction, Plan, Step};
use crate::record::{Content, FileRecord, Side};
use crate::store::{SideStore, sha256_hex};

/// What checking out does to one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileOutcome {
    /// Absolute, inside the workspace (for a refused path: as recorded).
    pub path: PathBuf,
    /// As recorded (relative to the session's working directory).
    pub shown: String,
    /// The file now; `None` when it does not exist.
    pub current: Option<Vec<u8>>,
    /// What it is to hold; `None`: it is to be deleted. The same as `current` unless the status
    /// is `Restored` or `Merged`.
    pub result: Option<Vec<u8>>,
    /// SHA-256 of `current` and of `result`, where the replay knew them: the journal of a
    /// checkout needs both, and each content is hashed once.
    pub current_sha256: Option<String>,
    pub result_sha256: Option<String>,
    /// How many recorded changes were replayed on it.
    pub changes: usize,
    pub status: Status,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Already as the target has it.
    Unchanged,
    /// To be written as the agent left it at the target.
    Restored,
    /// To be written as the agent left it at the target, with the user's own edits kept.
    Merged,
    /// Left as it is: the agent's change and the user's overlap.
    Conflict(ConflictInfo),
    /// Left as it is: it cannot be touched (outside the workspace, its record unreadable).
    Refused(String),
}

/// Where and why a file cannot be brought along.
#[derive(Debug, Clone, PartialEq)]
pub struct ConflictInfo {
    /// The entry whose change could not be replayed.
    pub entry_id: String,
    /// The lines (from 0, end excluded) of the file as it is now where the user's edits and the
    /// agent's change meet, when known.
    pub lines: Option<Range<usize>>,
    pub reason: String,
    /// The agent's change that could not be replayed, as a unified diff in the direction of the
    /// checkout (what to make by hand for the file to follow), from its texts or its patch.
    pub change: Option<String>,
}

/// The files a plan touches, as they are now.
pub struct Files<'a> {
    /// Each recorded path resolved inside the workspace, or why it cannot be.
    pub resolved: HashMap<String, Result<PathBuf, String>>,
    /// The content now of each resolved path; `None`: no such file.
    pub current: HashMap<PathBuf, Option<Vec<u8>>>,
    pub store: &'a SideStore,
}

/// Why a step could not be replayed.
enum Stop {
    Conflict { path: PathBuf, lines: Option<Range<usize>>, reason: String, change: Option<String> },
    Refused(String),
}

impl FileOutcome {
    /// Whether checking out writes or deletes this file.
    pub fn writes(&self) -> bool {
        matches!(self.status, Status::Restored | Status::Merged) && self.result != self.current
    }

    /// What is done to the file, in a word: `create`, `delete`, `restore`, `merge`, `keep`,
    /// `conflict`, `refused`.
    pub fn action(&self) -> &'static str {
        match (&self.status, &self.current, &self.result) {
            (Status::Conflict(_), ..) => "conflict",
            (Status::Refused(_), ..) => "refused",
            (Status::Unchanged, ..) => "keep",
            (_, None, Some(_)) => "create",
            (_, Some(_), None) => "delete",
            (Status::Merged, ..) => "merge",
            _ => "restore",
        }
    }
}

/// What each file the plan touches is to hold, sorted by path. The files' contents move into
/// the outcomes (a checkout of many files copied each of them twice).
pub fn replay(plan: &Plan, mut files: Files<'_>) -> Vec<FileOutcome> {
    let mut shown: HashMap<PathBuf, String> = HashMap::new();
    let mut refused: BTreeMap<String, String> = BTreeMap::new();
    for recorded in plan.recorded_paths() {
        match files.resolved.get(recorded) {
            Some(Ok(path)) => {
                shown.entry(path.clone()).or_insert_with(|| recorded.to_string());
            }
            Some(Err(reason)) => {
                refused.insert(recorded.to_string(), reason.clone());
            }
            None => {
                refused.insert(recorded.to_string(), "it was not looked up".to_string());
            }
        }
    }
    let resolved = std::mem::take(&mut files.resolved);
    let located = |recorded: &str| resolved.get(recorded).and_then(|path| path.as_ref().ok()).cloned();

    // Files linked by a recorded rename form one group; a step with a refused path refuses its group.
    let mut groups = Groups::default();
    let step_paths: Vec<Vec<PathBuf>> = plan
        .steps
        .iter()
        .map(|step| {
            let recorded = [Some(step.file.path.as_str()), step.file.moved_to.as_deref()];
            recorded.into_iter().flatten().filter_map(located).collect()
        })
        .collect();
    for paths in &step_paths {
        groups.join(paths);
    }
    // Each step to its group, in one pass: the steps of a group keep their order.
    let mut steps_of: HashMap<usize, Vec<&Step>> = HashMap::new();
    for (step, paths) in plan.steps.iter().zip(&step_paths) {
        if let Some(group) = paths.first().and_then(|first| groups.group_of(first)) {
            steps_of.entry(group).or_default().push(step);
        }
    }
    let mut outcomes = Vec::new();
    for (at, group) in groups.all() {
        let steps = steps_of.remove(&at).unwrap_or_default();
        let start = outcomes.len();
        outcomes.extend(replay_group(&group, &steps, &files, &shown, &located, &refused));
        for outcome in &mut outcomes[start..] {
            outcome.current = files.current.remove(&outcome.path).flatten();
        }
    }
    for (recorded, reason) in refused {
        outcomes.push(FileOutcome {
            path: PathBuf::from(&recorded),
            shown: recorded,
            current: None,
            result: None,
            current_sha256: None,
            result_sha256: None,
            changes: 0,
            status: Status::Refused(reason),
        });
    }
    outcomes.sort_by(|a, b| a.shown.cmp(&b.shown));
    outcomes
}

/// Replays `steps` on the files of one group, all or nothing.
fn replay_group(
    group: &[PathBuf],
    steps: &[&Step],
    files: &Files<'_>,
    shown: &HashMap<PathBuf, String>,
    located: &dyn Fn(&str) -> Option<PathBuf>,
    refused: &BTreeMap<String, String>,
) -> Vec<FileOutcome> {
    let current = |path: &Path| files.current.get(path).and_then(Option::as_deref);
    // Each file as it is now is compared with the sides on its way, and its journal names it.
    let current_sha256: HashMap<&PathBuf, String> =
        group.iter().filter_map(|path| Some((path, sha256_hex(files.current.get(path)?.as_ref()?)))).collect();
    let mut state = State {
        files: group
            .iter()
            .map(|path| {
                let held =
                    current(path).map(|bytes| Held::Bytes(Cow::Borrowed(bytes), current_sha256.get(path).cloned()));
                (path.clone(), held)
            })
            .collect(),
        store: files.store,
    };
    let mut merged: Vec<PathBuf> = Vec::new();
    let mut changes: HashMap<PathBuf, usize> = HashMap::new();
    let mut stop: Option<(String, Stop)> = None;
    for step in steps {
        let recorded = [Some(step.file.path.as_str()), step.file.moved_to.as_deref()];
        if let Some(out) = recorded.into_iter().flatten().find(|path| refused.contains_key(*path)) {
            stop = Some((
                step.entry_id.clone(),
                Stop::Refused(format!("it was renamed to or from {out}, which {}", refused[out])),
            ));
            break;
        }
        let (Some(path), final_path) = (located(&step.file.path), step.file.moved_to.as_deref().map(located)) else {
            continue;
        };
        let final_path = final_path.flatten().unwrap_or_else(|| path.clone());
        *changes.entry(path.clone()).or_default() += 1;
        if final_path != path {
            *changes.entry(final_path.clone()).or_default() += 1;
        }
        match replay_step(step, &path, &final_path, &mut state) {
            Ok(Some(merged_at)) => merged.push(merged_at),
            Ok(None) => {}
            Err(why) => {
                stop = Some((step.entry_id.clone(), why));
                break;
            }
        }
    }
    // What each file ends with is read now (and checked against its hash), and only that.
    let mut results: HashMap<&PathBuf, Ended> = HashMap::new();
    if stop.is_none() {
        for path in group {
            match state.take(path) {
                Ok(bytes) => {
                    results.insert(path, bytes);
                }
                Err((entry_id, why)) => {
                    stop = Some((entry_id, why));
                    break;
                }
            }
        }
    }
    let shown_of = |path: &PathBuf| shown.get(path).cloned().unwrap_or_else(|| path.display().to_string());
    group
        .iter()
        .map(|path| {
            let current = current(path);
            let changes = changes.get(path).copied().unwrap_or(0);
            let status = match &stop {
                Some((entry_id, Stop::Conflict { path: at, lines, reason, change })) => {
                    let here = at == path;
                    Status::Conflict(ConflictInfo {
                        entry_id: entry_id.clone(),
                        lines: if here { lines.clone() } else { None },
                        change: if here { change.clone() } else { None },
                        reason: if here {
                            reason.clone()
                        } else {
                            format!(
                                "left as it is with {}, which a recorded rename links it to: {reason}",
                                shown_of(at)
                            )
                        },
                    })
                }
                Some((_, Stop::Refused(reason))) => Status::Refused(reason.clone()),
                None => {
                    let result = results.get(path).and_then(|(bytes, _)| bytes.as_deref());
                    if result == current {
                        Status::Unchanged
                    } else if merged.contains(path) {
                        Status::Merged
                    } else {
                        Status::Restored
                    }
                }
            };
            let current_sha256 = current_sha256.get(path).cloned();
            let (result, result_sha256) = match status {
                Status::Restored | Status::Merged => {
                    results.remove(path).map_or((None, None), |(bytes, hash)| (bytes.map(Cow::into_owned), hash))
                }
                _ => (current.map(<[u8]>::to_vec), current_sha256.clone()),
            };
            FileOutcome {
                path: path.clone(),
                shown: shown_of(path),
                // Moved in by the caller, once nothing borrows it.
                current: None,
                result,
                current_sha256,
                result_sha256,
                changes,
                status,
            }
        })
        .collect()
}

/// What a file holds as the replay goes.
enum Held<'p> {
    /// These bytes (the file's own, until a step changes them), with their SHA-256 once it is
    /// known.
    Bytes(Cow<'p, [u8]>, Option<String>),
    /// Exactly the content of a recorded side (of the change recorded by the entry), not read
    /// yet. A file's chain of changes compares it with each side on the way, which their hashes
    /// do, so only the side it ends with is read (and checked against its hash then).
    Side(&'p str, &'p Side),
    /// What recorded patches make of the file: the content of the last one's side if the
    /// records are sound.
    Patched(Patched<'p>),
}

/// A chain of recorded patches, each made of the file holding its other side, applied only
/// when the bytes are needed: a chain an undo ends by deleting the file is never applied (each
/// step compares sides by their hashes). It is checked against the last side's hash when it is
/// applied, not at each patch: a patch that did not give its side is found at the end of the
/// chain (whatever follows from a wrong text cannot hash to the side it ends with).
struct Patched<'p> {
    /// What the first patch applies to.
    base: Base<'p>,
    /// Each patch in order: its entry, its hunks, whether it is undone.
    patches: Vec<(&'p str, &'p [patch::PatchHunk], bool)>,
    /// What the last patch gives.
    side: &'p Side,
}

/// Where a chain of patches starts.
enum Base<'p> {
    /// No file (a creation redone by its patch).
    Nothing,
    Bytes(Cow<'p, [u8]>),
    Side(&'p str, &'p Side),
}

/// What a file ends with (`None`: no file), with its SHA-256 when known.
type Ended<'p> = (Option<Cow<'p, [u8]>>, Option<String>);

/// The files of a group as the replay goes; `None`: no such file.
struct State<'p> {
    files: HashMap<PathBuf, Option<Held<'p>>>,
    store: &'p SideStore,
}

impl<'p> State<'p> {
    fn exists(&self, path: &Path) -> bool {
        matches!(self.files.get(path), Some(Some(_)))
    }

    fn set(&mut self, path: &Path, held: Option<Held<'p>>) {
        self.files.insert(path.to_path_buf(), held);
    }

    /// Whether the file at `path` holds exactly `side` (see [`Side::matches`]), each content
    /// hashed at most once.
    fn holds(&mut self, path: &Path, side: &Side) -> bool {
        match self.files.get_mut(path) {
            Some(Some(Held::Bytes(bytes, hash))) => {
                bytes.len() as u64 == side.size && *hash.get_or_insert_with(|| sha256_hex(bytes)) == side.sha256
            }
            Some(Some(Held::Side(_, held) | Held::Patched(Patched { side: held, .. }))) => {
                held.size == side.size && held.sha256 == side.sha256
            }
            _ => false,
        }
    }

    /// The bytes at `path` (`None`: no such file), a recorded side read for it, patches
    /// applied and checked.
    fn bytes(&mut self, path: &Path) -> Result<Option<&[u8]>, Stop> {
        let Some(Some(held)) = self.files.get_mut(path) else { return Ok(None) };
        match held {
            Held::Side(_, side) => {
                *held = Held::Bytes(Cow::Owned(read_side(side, self.store)?), Some(side.sha256.clone()));
            }
            Held::Patched(patched) => {
                let side = patched.side;
                let empty = Patched { base: Base::Nothing, patches: Vec::new(), side };
                let bytes = std::mem::replace(patched, empty).apply(self.store).map_err(|(_, why)| why)?;
                *held = Held::Bytes(Cow::Owned(bytes), Some(side.sha256.clone()));
            }
            Held::Bytes(..) => {}
        }
        match held {
            Held::Bytes(bytes, _) => Ok(Some(&**bytes)),
            Held::Side(..) | Held::Patched(..) => Ok(None),
        }
    }

    /// What the file at `path` ends with, with its hash when known; the error names the entry
    /// whose side cannot be read.
    fn take(&mut self, path: &Path) -> Result<Ended<'p>, (String, Stop)> {
        match self.files.remove(path).flatten() {
            None => Ok((None, None)),
            Some(Held::Bytes(bytes, hash)) => Ok((Some(bytes), hash)),
            // Read and checked against the side's hash.
            Some(Held::Side(entry_id, side)) => read_side(side, self.store)
                .map(|bytes| (Some(Cow::Owned(bytes)), Some(side.sha256.clone())))
                .map_err(|why| (entry_id.to_string(), why)),
            Some(Held::Patched(patched)) => {
                let hash = patched.side.sha256.clone();
                patched.apply(self.store).map(|bytes| (Some(Cow::Owned(bytes)), Some(hash)))
            }
        }
    }

    /// What a file is to hold as `side`, when it holds exactly the other side at `base` (`None`:
    /// nothing): the side itself, to read when needed, or the record's patch, to apply to what
    /// the file holds at `base` when needed (which it takes from there).
    fn becomes(
        &mut self,
        entry_id: &'p str,
        side: &'p Side,
        patch: Option<&'p [patch::PatchHunk]>,
        base: Option<&Path>,
        reverse: bool,
    ) -> Result<Held<'p>, Stop> {
        if side.text.is_some() || side.stored {
            return Ok(Held::Side(entry_id, side));
        }
        let Some(patch) = patch else {
            return Err(Stop::Refused("its record holds neither its content nor a patch".to_string()));
        };
        let base = match base.and_then(|base| self.files.remove(base)).flatten() {
            None => Base::Nothing,
            Some(Held::Bytes(bytes, _)) => Base::Bytes(bytes),
            Some(Held::Side(entry_id, side)) => Base::Side(entry_id, side),
            Some(Held::Patched(mut chain)) => {
                chain.patches.push((entry_id, patch, reverse));
                chain.side = side;
                return Ok(Held::Patched(chain));
            }
        };
        Ok(Held::Patched(Patched { base, patches: vec![(entry_id, patch, reverse)], side }))
    }
}

impl Patched<'_> {
    /// The chain's bytes, checked against the last side's hash; the error names the entry whose
    /// patch or side is at fault.
    fn apply(self, store: &SideStore) -> Result<Vec<u8>, (String, Stop)> {
        let first = self.patches.first().map_or("", |(entry_id, ..)| entry_id).to_string();
        let not_text = || Stop::Refused("its record holds neither its content nor a patch".to_string());
        let mut text: Cow<'_, str> = match self.base {
            Base::Nothing => Cow::Borrowed(""),
            Base::Bytes(Cow::Borrowed(bytes)) => {
                Cow::Borrowed(std::str::from_utf8(bytes).map_err(|_| (first.clone(), not_text()))?)
            }
            Base::Bytes(Cow::Owned(bytes)) => {
                Cow::Owned(String::from_utf8(bytes).map_err(|_| (first.clone(), not_text()))?)
            }
            Base::Side(entry_id, side) => Cow::Owned(
                read_side(side, store)
                    .and_then(|bytes| String::from_utf8(bytes).map_err(|_| not_text()))
                    .map_err(|why| (entry_id.to_string(), why))?,
            ),
        };
        let last = self.patches.last().map_or("", |(entry_id, ..)| entry_id).to_string();
        for (entry_id, hunks, reverse) in self.patches {
            text = Cow::Owned(patch::apply(&text, hunks, reverse).map_err(|conflict| {
                let why = Stop::Refused(format!("its recorded patch does not apply: {}", conflict.description));
                (entry_id.to_string(), why)
            })?);
        }
        checked(text.into_owned().into_bytes(), self.side).map_err(|why| (last, why))
    }
}

/// `bytes`, which a recorded patch made to be `side`, when they are.
fn checked(bytes: Vec<u8>, side: &Side) -> Result<Vec<u8>, Stop> {
    match side.matches(&bytes) {
        true => Ok(bytes),
        false => Err(Stop::Refused("its recorded patch does not give the content its record names".to_string())),
    }
}

/// A side's whole content, checked against its hash.
fn read_side(side: &Side, store: &SideStore) -> Result<Vec<u8>, Stop> {
    match side.content(store).map_err(|err| Stop::Refused(missing(&err)))? {
        Content::Bytes(bytes) => Ok(bytes),
        Content::Patched => Err(Stop::Refused("its record holds neither its content nor a patch".to_string())),
    }
}

/// Replays one step on `state`; `Some(path)` when it merged with the user's edits there.
fn replay_step<'p>(
    step: &'p Step,
    path: &Path,
    final_path: &Path,
    state: &mut State<'p>,
) -> Result<Option<PathBuf>, Stop> {
    let record = &step.file;
    let entry_id = step.entry_id.as_str();
    let store = state.store;
    let (from, to, from_at, to_at) = match step.direction {
        Direction::Redo => (&record.before, &record.after, path, final_path),
        Direction::Undo => (&record.after, &record.before, final_path, path),
    };
    let reverse = step.direction == Direction::Undo;
    let conflict = |at: &Path, lines: Option<Range<usize>>, reason: String| Stop::Conflict {
        path: at.to_path_buf(),
        lines,
        reason,
        change: None,
    };
    // Where the user's edits meet the agent's: the change to make by hand, when the texts are kept.
    let overlapping = |at: &Path, lines: Option<Range<usize>>, reason: String| Stop::Conflict {
        path: at.to_path_buf(),
        lines,
        reason,
        change: change_diff(record, from, to, reverse, store),
    };
    match (from, to) {
        (None, None) => Ok(None),
        // The file comes into being at `to_at` (a creation redone, a deletion undone).
        (None, Some(to)) => {
            if !state.exists(to_at) {
                let held = state.becomes(entry_id, to, record.patch.as_deref(), None, reverse)?;
                state.set(to_at, Some(held));
                return Ok(None);
            }
            if state.holds(to_at, to) {
                return Ok(None);
            }
            Err(conflict(to_at, None, "a file with other content is there now, and it is left as it is".to_string()))
        }
        // The file goes (a deletion redone, a creation undone): unless the user wrote in it.
        (Some(from), None) => {
            if !state.exists(from_at) {
                return Ok(None);
            }
            if state.holds(from_at, from) {
                state.set(from_at, None);
                return Ok(None);
            }
            let now = state.bytes(from_at)?.unwrap_or_default();
            let merged = merge_into(from, &[], record.patch.as_deref(), now, reverse, store)
                .map_err(|(lines, reason)| overlapping(from_at, lines, reason))?;
            let merged_at = (!merged.is_empty()).then(|| from_at.to_path_buf());
            state.set(from_at, (!merged.is_empty()).then_some(Held::Bytes(Cow::Owned(merged), None)));
            Ok(merged_at)
        }
        // The content changes (and moves from `from_at` to `to_at` for a rename).
        (Some(from), Some(to)) => {
            let moving = from_at != to_at;
            if !state.exists(from_at) {
                if moving && state.holds(to_at, to) {
                    return Ok(None);
                }
                return Err(conflict(
                    from_at,
                    None,
                    "it was deleted since, so the change cannot be replayed on it".to_string(),
                ));
            }
            if moving && state.exists(to_at) {
                return Err(conflict(to_at, None, "a file is there now, so the rename cannot be replayed".to_string()));
            }
            let (held, merged) = if state.holds(from_at, to) {
                (state.files.remove(from_at).flatten(), false)
            } else if state.holds(from_at, from) {
                (Some(state.becomes(entry_id, to, record.patch.as_deref(), Some(from_at), reverse)?), false)
            } else {
                let to_bytes = match to.content(store).map_err(|err| Stop::Refused(missing(&err)))? {
                    Content::Bytes(bytes) => Some(bytes),
                    Content::Patched => None,
                };
                let now = state.bytes(from_at)?.unwrap_or_default();
                let merged = merge_into(
                    from,
                    to_bytes.as_deref().unwrap_or_default(),
                    record.patch.as_deref(),
                    now,
                    reverse,
                    store,
                )
                .map_err(|(lines, reason)| overlapping(from_at, lines, reason))?;
                (Some(Held::Bytes(Cow::Owned(merged), None)), true)
            };
            if moving {
                state.set(from_at, None);
            }
            state.set(to_at, held);
            Ok(merged.then(|| to_at.to_path_buf()))
        }
    }
}

/// The change from side `from` to side `to` (absent: no file) of `record` as a unified diff: of
/// the texts, or of the patch when the record keeps one instead (`reverse`: undone).
fn change_diff(
    record: &FileRecord,
    from: &Option<Side>,
    to: &Option<Side>,
    reverse: bool,
    store: &SideStore,
) -> Option<String> {
    let path = record.final_path();
    if let Some(hunks) = record.patch.as_deref().filter(|hunks| !hunks.is_empty()) {
        return Some(patch::unified(path, hunks, reverse));
    }
    let text = |side: &Option<Side>| match side {
        None => Some(String::new()),
        Some(side) => match side.content(store) {
            Ok(Content::Bytes(bytes)) => String::from_utf8(bytes).ok(),
            _ => None,
        },
    };
    let diff = reins_review::unified_diff(path, &text(from)?, &text(to)?);
    (!diff.is_empty()).then_some(diff)
}

/// `now` with the agent's change from `from` to `to` merged in (three-way, with `from` as the
/// base), or by the patch when the record keeps one instead of the texts. The error is the
/// conflicting lines of `now` and why.
fn merge_into(
    from: &Side,
    to: &[u8],
    patch: Option<&[patch::PatchHunk]>,
    now: &[u8],
    reverse: bool,
    store: &SideStore,
) -> Result<Vec<u8>, (Option<Range<usize>>, String)> {
    let not_text =
        || (None, "it is not a text file and changed since, so the change cannot be merged into it".to_string());
    let now = std::str::from_utf8(now).map_err(|_| not_text())?;
    let from_bytes = match from.content(store).map_err(|err| (None, missing(&err)))? {
        Content::Bytes(bytes) => bytes,
        Content::Patched => {
            let patch = patch.ok_or_else(|| (None, "its record holds neither its content nor a patch".to_string()))?;
            return patch::apply(now, patch, reverse)
                .map(String::into_bytes)
                .map_err(|conflict| (Some(conflict.lines), overlap(&conflict.description)));
        }
    };
    let base = std::str::from_utf8(&from_bytes).map_err(|_| not_text())?;
    let target = std::str::from_utf8(to).map_err(|_| not_text())?;
    merge::rebase(base, target, now)
        .map(String::into_bytes)
        .map_err(|conflict| (Some(conflict.lines), overlap(&conflict.description)))
}

fn overlap(detail: &str) -> String {
    let detail = detail.strip_prefix("the file changed after the edit was proposed: ").unwrap_or(detail);
    format!("your edits overlap the agent's change ({detail})")
}

fn missing(err: &std::io::Error) -> String {
    format!("its recorded content cannot be read: {err}")
}

/// Paths joined into groups: union-find, so a plan of thousands of files is grouped in about as
/// many steps.
#[derive(Default)]
struct Groups {
    index: HashMap<PathBuf, usize>,
    /// Per path (in order of first mention): the path it was joined to, itself at a group's root.
    parent: Vec<usize>,
    paths: Vec<PathBuf>,
}

impl Groups {
    fn join(&mut self, paths: &[PathBuf]) {
        let mut roots = paths.iter().map(|path| {
            let at = match self.index.get(path) {
                Some(&at) => at,
                None => {
                    self.index.insert(path.clone(), self.paths.len());
                    self.parent.push(self.paths.len());
                    self.paths.push(path.clone());
                    self.paths.len() - 1
                }
            };
            self.root(at)
        });
        let Some(first) = roots.next() else { return };
        let rest: Vec<usize> = roots.collect();
        for root in rest {
            let first = self.root(first);
            self.parent[root] = first;
        }
    }

    fn root(&mut self, mut at: usize) -> usize {
        while self.parent[at] != at {
            self.parent[at] = self.parent[self.parent[at]];
            at = self.parent[at];
        }
        at
    }

    /// The group of a path that was joined (its root's number).
    fn group_of(&mut self, path: &Path) -> Option<usize> {
        let at = self.index.get(path).copied()?;
        Some(self.root(at))
    }

    /// Every group by its number, each path once, in order of first mention.
    fn all(mut self) -> Vec<(usize, Vec<PathBuf>)> {
        let mut groups: Vec<(usize, Vec<PathBuf>)> = Vec::new();
        let mut slot: HashMap<usize, usize> = HashMap::new();
        for at in 0..self.paths.len() {
            let root = self.root(at);
            let next = groups.len();
            let slot = *slot.entry(root).or_insert(next);
            if slot == next {
                groups.push((root, Vec::new()));
            }
            groups[slot].1.push(std::mem::take(&mut self.paths[at]));
        }
        groups
    }
}
