//! After-edit feedback: the problems the agent's edits caused, appended to the tool result so the
//! model notices what it broke.
//!
//! With an editor that answers ([`DiagnosticSource`]), each edit or write of a file open in it is
//! bracketed: the file's diagnostics just before the change is applied, and again after the
//! editor applied it — as soon as they changed, or once `settle_ms` passed. Without an editor
//! (`reins run`, ACP), a configured command (`cargo check --message-format short`) runs once
//! after the last file-changing call of each turn that changed files, and its problems are
//! compared with those of its previous run (the first edit of a run runs it once before, for a
//! baseline). Either way only the errors — and, by setting, warnings — that were not there
//! before are told, at most [`MAX_TOLD`], and nothing at all when nothing new came: the other
//! tool may simply be slow, so silence never claims the edit is clean.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reins_agent::{Proposal, Tool, ToolContext};
use reins_ai::{Content, ToolCall, ToolResultMessage};
use reins_tools::{
    BashTool, Diagnostic, DiagnosticSource, EditFormat, FileDiagnostics, Workspace, display_path, parse_problems,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::runtime::lock;
use reins_settings::LiveSettings;

/// The first line of the feedback; the problems follow, one a line.
pub const NEW_PROBLEMS: &str = "The edit resulted in these new problems:";
/// Problems told after one edit at most.
pub const MAX_TOLD: usize = 20;
/// How often the editor is asked again while its diagnostics have not changed yet.
const POLL: Duration = Duration::from_millis(100);
/// How long the editor may take to answer before an edit; the edit waits that long at most.
const BEFORE_TIMEOUT: Duration = Duration::from_secs(1);

/// The after-edit feedback of one session, driven by its hooks.
pub(crate) struct Feedback {
    pub settings: LiveSettings,
    /// The editor's diagnostics (`reins lsp`); `None` where there is no editor.
    pub editor: Option<Arc<dyn DiagnosticSource>>,
    /// The language servers reins started (`reins run`, ACP): used where there is no editor
    /// and no `[diagnostics] command`.
    pub language: Option<Arc<dyn DiagnosticSource>>,
    pub workspace: Arc<dyn Workspace>,
    /// The session's token for the harness's own work (see `LiveSession::cancel`): cancelling the
    /// run stops a wait or a command.
    pub cancel: Arc<Mutex<CancellationToken>>,
    pub state: Mutex<FeedbackState>,
}

#[derive(Default)]
pub(crate) struct FeedbackState {
    /// Editor: the files of each file-changing call about to run, with their problems before.
    before: HashMap<String, Vec<FileDiagnostics>>,
    /// The turn whose calls run now (a smaller one starts a new run).
    turn: u32,
    /// Command: the last file-changing call of this turn, after which the command runs…
    last_change: Option<String>,
    /// … if a change of this turn landed.
    landed: bool,
    /// Command: the problems of its last run in this run of the agent.
    baseline: Baseline,
}

#[derive(Default)]
enum Baseline {
    #[default]
    Unknown,
    /// The command failed or timed out: no feedback for the rest of the run.
    Failed,
    Known(Vec<FileDiagnostics>),
}

/// Where the feedback comes from, under the settings in force.
enum Mode {
    Editor(Arc<dyn DiagnosticSource>),
    Command { command: String, timeout: Duration },
    Off,
}

/// Whether a tool changes files (and so gets feedback).
fn changes_files(tool: &str) -> bool {
    [EditFormat::Edit.tool_name(), EditFormat::ApplyPatch.tool_name(), "write", "rename"].contains(&tool)
}

impl Feedback {
    fn mode(&self) -> Mode {
        let settings = self.settings.get();
        let diagnostics = &settings.code_diagnostics;
        match (&self.editor, &diagnostics.command) {
            _ if !diagnostics.after_edit => Mode::Off,
            (Some(editor), _) if editor.available() => Mode::Editor(editor.clone()),
            // An editor that cannot answer has the files in its buffers: a command would check
            // what is on disk, which is not what the agent edited.
            (Some(_), _) => Mode::Off,
            (None, None) => match &self.language {
                Some(language) if language.available() => Mode::Editor(language.clone()),
                _ => Mode::Off,
            },
            (None, Some(command)) => Mode::Command {
                command: command.clone(),
                timeout: Duration::from_secs(diagnostics.command_timeout_secs.max(1)),
            },
        }
    }

    fn settle(&self) -> (Duration, bool) {
        let settings = self.settings.get();
        (Duration::from_millis(settings.code_diagnostics.settle_ms), settings.code_diagnostics.warnings)
    }

    /// A turn's calls are about to run.
    pub async fn turn_starts(&self, turn: u32, calls: &[ToolCall]) {
        let mut state = lock(&self.state);
        if turn <= state.turn {
            // A new run: what the command said last time may no longer hold.
            state.baseline = Baseline::Unknown;
        }
        state.turn = turn;
        state.last_change = calls.iter().rev().find(|call| changes_files(&call.name)).map(|call| call.id.clone());
        state.landed = false;
    }

    /// The gate allowed `call`, which changes files as `proposal` says: what there was before.
    pub async fn before_change(&self, call: &ToolCall, proposal: &Proposal, cancel: &CancellationToken) {
        match self.mode() {
            Mode::Editor(editor) => {
                let changes: Vec<_> = proposal
                    .file_changes()
                    .iter()
                    .filter(|change| !change.delete && change.moved_to.is_none())
                    .collect();
                let paths: Vec<PathBuf> = changes.iter().map(|change| change.path.clone()).collect();
                if paths.is_empty() {
                    return;
                }
                let answer = tokio::select! {
                    answer = editor.diagnostics(Some(&paths), BEFORE_TIMEOUT) => answer,
                    () = cancel.cancelled() => return,
                };
                let files = match answer {
                    Ok(files) => files,
                    Err(err) => {
                        tracing::debug!("no diagnostics before {}: {err}", call.id);
                        return;
                    }
                };
                // A file the editor has open, or one the change creates (it had no problems).
                let before: Vec<FileDiagnostics> = changes
                    .iter()
                    .filter_map(|change| match files.iter().find(|file| file.path == change.path) {
                        Some(file) => Some(moved_by(file, change)),
                        None if change.before.is_none() => {
                            Some(FileDiagnostics { path: change.path.clone(), diagnostics: Vec::new() })
                        }
                        None => None,
                    })
                    .collect();
                if !before.is_empty() {
                    lock(&self.state).before.insert(call.id.clone(), before);
                }
            }
            Mode::Command { command, timeout } => {
                if !matches!(lock(&self.state).baseline, Baseline::Unknown) {
                    return;
                }
                let baseline = match self.run_command(&command, timeout).await {
                    Some(problems) => Baseline::Known(problems),
                    None => Baseline::Failed,
                };
                lock(&self.state).baseline = baseline;
            }
            Mode::Off => {}
        }
    }

    /// `call` finished with `result`: the new problems are appended to it.
    pub async fn after_call(&self, call: &ToolCall, result: &mut ToolResultMessage) {
        let before = lock(&self.state).before.remove(&call.id);
        let (settle, warnings) = self.settle();
        let told = match self.mode() {
            Mode::Editor(editor) => match before {
                Some(before) if !result.is_error => {
                    let after = self.settled(editor.as_ref(), &before, settle).await;
                    after.map(|after| new_problems(&before, &after, warnings)).unwrap_or_default()
                }
                _ => Vec::new(),
            },
            Mode::Command { command, timeout } => {
                let run_now = {
                    let mut state = lock(&self.state);
                    state.landed |= changes_files(&call.name) && !result.is_error;
                    state.landed && state.last_change.as_deref() == Some(&call.id)
                };
                let baseline = match &lock(&self.state).baseline {
                    Baseline::Known(baseline) if run_now => Some(baseline.clone()),
                    _ => None,
                };
                let Some(baseline) = baseline else { return };
                let after = self.run_command(&command, timeout).await;
                let told = after.as_ref().map(|after| new_problems(&baseline, after, warnings)).unwrap_or_default();
                lock(&self.state).baseline = after.map_or(Baseline::Failed, Baseline::Known);
                told
            }
            Mode::Off => Vec::new(),
        };
        if !told.is_empty() {
            append(result, &feedback_text(&told, &self.workspace.cwd()));
        }
    }

    /// The editor's diagnostics of `before`'s files once they all changed, or as they are when
    /// `settle` passed; `None` when the editor did not answer.
    async fn settled(
        &self,
        editor: &dyn DiagnosticSource,
        before: &[FileDiagnostics],
        settle: Duration,
    ) -> Option<Vec<FileDiagnostics>> {
        let paths: Vec<PathBuf> = before.iter().map(|file| file.path.clone()).collect();
        let deadline = Instant::now() + settle;
        let cancel = lock(&self.cancel).clone();
        let mut latest = None;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now()).max(POLL);
            let answer = tokio::select! {
                answer = editor.diagnostics(Some(&paths), wait) => answer,
                () = cancel.cancelled() => return None,
            };
            match answer {
                Ok(files) => latest = Some(files),
                Err(err) => {
                    tracing::debug!("the editor's diagnostics after an edit: {err}");
                    break;
                }
            }
            if latest.as_deref().is_some_and(|after| all_changed(before, after)) || Instant::now() + POLL >= deadline {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                () = cancel.cancelled() => return None,
            }
        }
        latest
    }

    /// Runs the diagnostics command as the `bash` tool runs commands (environment without
    /// secrets, sandbox), and reads its problems; `None` when it timed out or the run was
    /// cancelled.
    async fn run_command(&self, command: &str, timeout: Duration) -> Option<Vec<FileDiagnostics>> {
        let settings = self.settings.get();
        let bash = BashTool::with_policy(self.workspace.clone(), settings.exec_policy(std::env::vars_os()));
        // The command's own limit is above ours: ours stops it (dropping the call kills it).
        let arguments = serde_json::json!({"command": command, "timeout": timeout.as_secs() + 5});
        let prepared = bash.prepare(&arguments).await.ok()?;
        let proposal = prepared.proposal.clone();
        let cancel = lock(&self.cancel).child_token();
        let quiet = |_: &str| {};
        let cx = ToolContext { tool_call_id: "diagnostics-command", cancel: cancel.clone(), on_update: &quiet };
        let output = tokio::select! {
            output = tokio::time::timeout(timeout, bash.execute(prepared, proposal, cx)) => output,
            () = cancel.cancelled() => return None,
        };
        let text = match output {
            Ok(Ok(output)) => output
                .content
                .iter()
                .filter_map(|block| match block {
                    Content::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
            // A failing exit is what a compiler does when it finds errors.
            Ok(Err(error)) => error.0,
            Err(_) => {
                tracing::warn!("the diagnostics command `{command}` did not finish within {} s", timeout.as_secs());
                return None;
            }
        };
        Some(self.files_of(&text))
    }

    /// A command's problems by file, paths made absolute (relative ones start at the working
    /// directory).
    fn files_of(&self, output: &str) -> Vec<FileDiagnostics> {
        let mut files: Vec<FileDiagnostics> = Vec::new();
        for (path, diagnostic) in parse_problems(output) {
            let path = self.workspace.resolve(&path).unwrap_or_else(|_| PathBuf::from(&path));
            match files.iter_mut().find(|file| file.path == path) {
                Some(file) => file.diagnostics.push(diagnostic),
                None => files.push(FileDiagnostics { path, diagnostics: vec![diagnostic] }),
            }
        }
        files
    }
}

/// `file`'s problems where `change` moves their lines.
fn moved_by(file: &FileDiagnostics, change: &reins_agent::FileChange) -> FileDiagnostics {
    let mut moved = file.clone();
    if let Some(before) = &change.before {
        let map = LineMap::new(before, &change.after);
        for diagnostic in &mut moved.diagnostics {
            diagnostic.line = map.line(diagnostic.line);
        }
    }
    moved
}

/// Whether every file of `before` has other problems in `after` (positions aside: an edit moves
/// them), or is gone from it.
fn all_changed(before: &[FileDiagnostics], after: &[FileDiagnostics]) -> bool {
    before.iter().all(|old| match after.iter().find(|new| new.path == old.path) {
        Some(new) => identities(&old.diagnostics) != identities(&new.diagnostics),
        None => true,
    })
}

fn identities(diagnostics: &[Diagnostic]) -> Vec<(reins_tools::Severity, Option<&str>, Option<&str>, &str)> {
    let mut all: Vec<_> = diagnostics.iter().map(Diagnostic::identity).collect();
    all.sort();
    all
}

/// The errors (and warnings, with `warnings`) of `after` that `before` did not have, in file and
/// line order. Each problem before accounts for one after it that is the same problem (all but
/// the position, see [`Diagnostic::identity`]), the nearest by line first: so of two `TODO`s after
/// an edit that added one, the one the edit added is told, and a second copy of a problem is new.
/// A file `before` does not list had none.
pub fn new_problems(
    before: &[FileDiagnostics],
    after: &[FileDiagnostics],
    warnings: bool,
) -> Vec<(PathBuf, Diagnostic)> {
    let mut told = Vec::new();
    for file in after {
        let old = before.iter().find(|old| old.path == file.path).map_or(&[][..], |old| old.diagnostics.as_slice());
        for diagnostic in unmatched(old, &file.diagnostics) {
            if diagnostic.is_reported(warnings) {
                told.push((file.path.clone(), diagnostic.clone()));
            }
        }
    }
    told.sort_by(|(a, x), (b, y)| (a, x.line, x.column).cmp(&(b, y.line, y.column)));
    told
}

/// Pairs of problems one identity group may weigh against each other; past that, they are
/// paired in line order.
const MAX_PAIRS: usize = 100_000;

/// The problems of `after` that no problem of `before` accounts for (see [`new_problems`]).
fn unmatched<'a>(before: &[Diagnostic], after: &'a [Diagnostic]) -> Vec<&'a Diagnostic> {
    type Group = (Vec<u32>, Vec<usize>);
    let mut groups: HashMap<_, Group> = HashMap::new();
    for diagnostic in before {
        groups.entry(diagnostic.identity()).or_default().0.push(diagnostic.line);
    }
    for (index, diagnostic) in after.iter().enumerate() {
        groups.entry(diagnostic.identity()).or_default().1.push(index);
    }
    let mut matched = vec![false; after.len()];
    for (old_lines, new_indexes) in groups.values_mut() {
        if old_lines.is_empty() || new_indexes.is_empty() {
            continue;
        }
        if old_lines.len() * new_indexes.len() > MAX_PAIRS {
            old_lines.sort_unstable();
            new_indexes.sort_by_key(|&index| after[index].line);
            for &index in new_indexes.iter().take(old_lines.len()) {
                matched[index] = true;
            }
            continue;
        }
        // (distance, line after, which before, which after), nearest first.
        let mut pairs: Vec<(u32, u32, usize, usize)> = Vec::with_capacity(old_lines.len() * new_indexes.len());
        for (old, &old_line) in old_lines.iter().enumerate() {
            for &index in new_indexes.iter() {
                let new_line = after[index].line;
                pairs.push((old_line.abs_diff(new_line), new_line, old, index));
            }
        }
        pairs.sort_unstable();
        let mut used = vec![false; old_lines.len()];
        let mut left = old_lines.len().min(new_indexes.len());
        for (_, _, old, index) in pairs {
            if left == 0 {
                break;
            }
            if !used[old] && !matched[index] {
                used[old] = true;
                matched[index] = true;
                left -= 1;
            }
        }
    }
    after.iter().zip(matched).filter(|(_, matched)| !matched).map(|(diagnostic, _)| diagnostic).collect()
}

/// Where the lines of a file's text before a change are after it (1-based): a line the change
/// replaced goes to the start of what replaced it. Problems from before the change are moved
/// with it, so each is weighed against the problems that are where it now is.
struct LineMap(Vec<reins_review::LineChange>);

impl LineMap {
    fn new(before: &str, after: &str) -> Self {
        let (old, new) = (reins_review::split_lines(before), reins_review::split_lines(after));
        LineMap(reins_review::line_changes(&old, &new, Duration::from_millis(50)))
    }

    fn line(&self, line: u32) -> u32 {
        let at = line.saturating_sub(1) as usize;
        let mut shift: isize = 0;
        for change in &self.0 {
            if at < change.old.start {
                break;
            }
            if at < change.old.end {
                let within = (at - change.old.start).min(change.new.len().saturating_sub(1));
                return (change.new.start + within + 1) as u32;
            }
            shift = change.new.end as isize - change.old.end as isize;
        }
        (at as isize + shift + 1).max(1) as u32
    }
}

/// [`NEW_PROBLEMS`], then at most [`MAX_TOLD`] problems, one a line, paths relative to `cwd`.
pub fn feedback_text(told: &[(PathBuf, Diagnostic)], cwd: &Path) -> String {
    let mut text = NEW_PROBLEMS.to_string();
    for (path, diagnostic) in told.iter().take(MAX_TOLD) {
        text.push('\n');
        text.push_str(&diagnostic.line_for(&display_path(path, cwd)));
    }
    if told.len() > MAX_TOLD {
        text.push_str(&format!("\n… and {} more.", told.len() - MAX_TOLD));
    }
    text
}

/// `text` as a paragraph of its own at the end of `result`.
fn append(result: &mut ToolResultMessage, text: &str) {
    match result.content.iter_mut().rev().find_map(|block| match block {
        Content::Text { text } => Some(text),
        _ => None,
    }) {
        Some(last) => {
            last.truncate(last.trim_end().len());
            if !last.is_empty() {
                last.push_str("\n\n");
            }
            last.push_str(text);
        }
        None => result.content.push(Content::text(text)),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use reins_tools::Severity;

    use super::*;

    fn problem(line: u32, severity: Severity, message: &str) -> Diagnostic {
        Diagnostic { line, column: 1, severity, source: Some("lint".into()), code: None, message: message.into() }
    }

    fn file(path: &str, diagnostics: Vec<Diagnostic>) -> FileDiagnostics {
        FileDiagnostics { path: PathBuf::from(path), diagnostics }
    }

    #[test]
    fn only_problems_that_were_not_there_before_are_told_wherever_they_moved() {
        let before = [file(
            "/w/a.rs",
            vec![problem(3, Severity::Error, "old error"), problem(5, Severity::Warning, "old warning")],
        )];
        let after = [
            file(
                "/w/a.rs",
                vec![
                    problem(9, Severity::Error, "old error"),
                    problem(2, Severity::Error, "old error"),
                    problem(4, Severity::Warning, "new warning"),
                    problem(6, Severity::Hint, "new hint"),
                    problem(1, Severity::Error, "new error"),
                ],
            ),
            file("/w/b.rs", vec![problem(7, Severity::Error, "elsewhere")]),
        ];
        let told = |warnings| {
            let told = new_problems(&before, &after, warnings);
            feedback_text(&told, Path::new("/w"))
        };
        expect![[r#"
            The edit resulted in these new problems:
            a.rs:1:1: error: new error (lint)
            a.rs:9:1: error: old error (lint)
            b.rs:7:1: error: elsewhere (lint)"#]]
        .assert_eq(&told(false));
        assert!(told(true).contains("a.rs:4:1: warning: new warning (lint)"));
        assert!(!told(true).contains("hint"));
    }

    #[test]
    fn of_two_same_problems_the_one_nearest_an_old_one_is_the_old_one() {
        // A TODO on line 2; an edit of line 1 adds another: the one on line 1 is new.
        let before = [file("/w/a.py", vec![problem(2, Severity::Error, "TODO left here")])];
        let after = [file(
            "/w/a.py",
            vec![problem(1, Severity::Error, "TODO left here"), problem(2, Severity::Error, "TODO left here")],
        )];
        let told = new_problems(&before, &after, false);
        assert_eq!(told.iter().map(|(_, d)| d.line).collect::<Vec<_>>(), [1]);
        // Three copies where there were two: one is new, whatever the order they come in.
        let before = [file("/w/a.py", vec![problem(5, Severity::Error, "x"), problem(9, Severity::Error, "x")])];
        let after = [file(
            "/w/a.py",
            vec![problem(9, Severity::Error, "x"), problem(7, Severity::Error, "x"), problem(5, Severity::Error, "x")],
        )];
        assert_eq!(new_problems(&before, &after, false).iter().map(|(_, d)| d.line).collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn lines_before_a_change_are_moved_where_the_change_puts_them() {
        let map = LineMap::new("a\nb\nc\nd\n", "a\nnew\nnew\nb\nd\n");
        // a stays, b moves down two, c (replaced by nothing) goes where d now is, d moves down one.
        assert_eq!([1, 2, 3, 4].map(|line| map.line(line)), [1, 4, 5, 5]);
        let map = LineMap::new("a\nb\nc\n", "a\nB\nc\n");
        assert_eq!([1, 2, 3, 9].map(|line| map.line(line)), [1, 2, 3, 9]);
        let map = LineMap::new("a\nb\nc\n", "c\n");
        assert_eq!([1, 2, 3].map(|line| map.line(line)), [1, 1, 1]);
    }

    #[test]
    fn at_most_twenty_are_told() {
        let after =
            [file("/w/a.rs", (1..=25).map(|line| problem(line, Severity::Error, &format!("e{line}"))).collect())];
        let text = feedback_text(&new_problems(&[], &after, false), Path::new("/w"));
        assert_eq!(text.lines().count(), 1 + MAX_TOLD + 1);
        assert!(text.ends_with("a.rs:20:1: error: e20 (lint)\n… and 5 more."), "{text}");
    }

    #[test]
    fn a_change_is_a_change_of_problems_not_of_positions() {
        let before = [file("/w/a.rs", vec![problem(3, Severity::Error, "e")])];
        assert!(!all_changed(&before, &[file("/w/a.rs", vec![problem(4, Severity::Error, "e")])]));
        assert!(all_changed(&before, &[file("/w/a.rs", vec![])]));
        assert!(all_changed(&before, &[]), "a file that is gone will not change any more");
    }

    #[test]
    fn feedback_is_a_paragraph_of_its_own() {
        let mut result = ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "edit".into(),
            content: vec![Content::text("Edited a.rs\n")],
            is_error: false,
            details: None,
            timestamp: 0,
        };
        append(&mut result, "The edit resulted in these new problems:\nx");
        assert_eq!(result.text(), "Edited a.rs\n\nThe edit resulted in these new problems:\nx");
    }
}
