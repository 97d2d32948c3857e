//! Review at the terminal (`reins run`): each file change is held as a pending edit of the
//! review core and shown hunk by hunk, like `git add -p` — `y` applies a hunk, `n` skips it, `a`
//! applies it and every hunk after it, `d` skips it and every hunk after it, `c` reads a one-line
//! comment on it for the model, `?` explains — and the hunks skipped can come with a reason for
//! the model. The comments go to the model with the decision, in one batch. When stdin is a
//! terminal, a hunk's answer is one key, read without waiting for Enter (as git's
//! `interactive.singleKey`); otherwise answers are lines. The core decides the rest exactly as
//! for an editor: what the model is told, and rebasing onto a file changed on disk meanwhile.
//! A command is a plain y/N. Questions and answers go through the controlling terminal
//! (`/dev/tty`), so `--json` output on stdout stays clean; without a terminal nothing can be
//! approved, and the model is told that the user can rerun with `--yes`. Commands, paths, notes,
//! file contents and MCP calls are shown through `reins_ai::visible`: none can steer the terminal.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use nix::sys::termios::{LocalFlags, SetArg, SpecialCharacterIndices, Termios, tcgetattr, tcsetattr};
use reins_agent::Proposal;
use reins_ai::{visible, visible_line};
use reins_harness::{ApprovalRequest, Approver, Verdict};
use reins_review::diff;
use reins_review::{Choice, FileDiff, Observer, Origin, PendingEdit, PendingEdits, Resolution, Subject};
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

/// What `?` says, and what a file of several hunks shows first.
const LEGEND: &str =
    "y: apply this hunk, n: skip it, a: apply it and all after it, d: skip it and all after it, c: comment on it";

/// What `?` says about the one hunk of a file.
const LEGEND_ONE: &str = "y: apply it, n: skip it, c: comment on it";

/// What the model is told a comment is for, when the user types one.
const COMMENT_PROMPT: &str = "Comment for the model (one line): ";

/// The terminal's settings while a key is read on its own, to put back if reins exits before
/// the read ends ([`restore_terminal`]).
static SAVED_TERMINAL: std::sync::Mutex<Option<(std::fs::File, Termios)>> = std::sync::Mutex::new(None);

/// Asks on the controlling terminal.
pub struct TerminalApprover {
    edits: Arc<PendingEdits>,
    /// The pending edits as the core proposes them, to ask about in that order.
    proposed: Mutex<mpsc::UnboundedReceiver<PendingEdit>>,
    /// Paths are shown relative to it.
    root: PathBuf,
    color: bool,
    /// Each tool's line (`● bash $ cargo test`) is printed before its prompt.
    tool_lines: bool,
}

/// Hands each new pending edit to the prompt.
struct Queue(mpsc::UnboundedSender<PendingEdit>);

impl Observer for Queue {
    fn proposed(&self, edit: &PendingEdit) {
        let _ = self.0.send(edit.clone());
    }
    fn resolved(&self, _: &Resolution) {}
    fn waiting_on(&self, _: &Path, _: &[&PendingEdit]) {}
}

/// What the user answered about the hunks of one pending edit.
#[derive(Debug, PartialEq)]
struct Review {
    chosen: Vec<usize>,
    /// Every hunk was chosen (also: a file moved as it is, which has none, was accepted).
    all: bool,
    /// Why the others were not.
    reason: Option<String>,
    /// The user's comments, by hunk index.
    comments: BTreeMap<usize, String>,
}

/// An answer at a hunk's prompt.
#[derive(Debug, PartialEq)]
enum HunkAnswer {
    /// Apply it or not, and whether that holds for the hunks after it.
    Decide {
        apply: bool,
        for_the_rest: bool,
    },
    Comment,
}

impl TerminalApprover {
    pub fn new(root: PathBuf) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            edits: Arc::new(PendingEdits::new(Arc::new(Queue(tx)))),
            proposed: Mutex::new(rx),
            root,
            color: std::io::stderr().is_terminal(),
            tool_lines: false,
        }
    }

    /// Says that each tool's line is printed before its prompt (not with `--json`), so a command
    /// it shows in full is not printed again.
    pub fn after_tool_lines(self, tool_lines: bool) -> Self {
        Self { tool_lines, ..self }
    }

    /// Asks about each pending edit of a proposal of `count` files as the core proposes them,
    /// and decides it as the user answers.
    async fn ask_each(&self, count: usize, tool: &str) {
        let mut proposed = self.proposed.lock().await;
        for _ in 0..count {
            let Some(edit) = proposed.recv().await else { return };
            let (id, color) = (edit.id.clone(), self.color);
            let asked = tokio::task::spawn_blocking(move || review_on_tty(&edit, color)).await;
            let on_disk = |path: &Path| std::fs::read_to_string(path).ok().map(|text| (text, None));
            if let Ok(Ok(review)) = &asked {
                for (hunk, comment) in &review.comments {
                    if let Err(err) = self.edits.comment(&id, *hunk, comment) {
                        tracing::warn!("the comment on hunk {} of {id} was refused: {err}", hunk + 1);
                    }
                }
            }
            let decided = match asked.unwrap_or_else(|_| Err("the prompt failed".to_string())) {
                Ok(review) if review.all => self.edits.accept(&id, Choice::default(), &on_disk),
                Ok(review) if review.chosen.is_empty() => self.edits.reject(&id, review.reason, &on_disk),
                Ok(review) => {
                    let choice = Choice { hunks: Some(review.chosen), allow_for_session: false, reason: review.reason };
                    self.edits.accept(&id, choice, &on_disk)
                }
                Err(why) => self.edits.reject(&id, Some(not_asked(tool, &why)), &on_disk),
            };
            if let Err(err) = decided {
                tracing::warn!("the review of {id} could not be decided: {err}");
            }
        }
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, request: ApprovalRequest<'_>, cancel: &CancellationToken) -> Verdict {
        let tool = request.call.name.clone();
        // A run cancelled at an earlier prompt asks nothing more.
        if cancel.is_cancelled() {
            return Verdict::Reject { reason: "cancelled".into() };
        }
        let plain = match request.proposal {
            Proposal::Command(command) => {
                let shown = self.tool_lines && shown_in_full(&request.look.summary, command);
                Some((render_command(command, self.color, shown), "Run it? [y/N] "))
            }
            Proposal::ServerCall(call) => Some((render_server_call(call, self.color), "Call it? [y/N] ")),
            Proposal::FileChange(_) | Proposal::FileChanges { .. } => None,
        };
        if let Some((question, prompt)) = plain {
            let ask = tokio::task::spawn_blocking(move || ask_yes_no(&question, prompt));
            let answer = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Verdict::Reject { reason: "cancelled".into() },
                answer = ask => answer.unwrap_or_else(|_| Err("the approval prompt failed".into())),
            };
            return match answer {
                Ok(None) => Verdict::Accept { changed: None, allow_for_session: false },
                Ok(Some(reason)) if reason.is_empty() => {
                    Verdict::Reject { reason: format!("the user rejected this {tool} call") }
                }
                Ok(Some(reason)) => Verdict::Reject { reason: format!("the user rejected this {tool} call: {reason}") },
                Err(why) => Verdict::Reject { reason: not_asked(&tool, &why) },
            };
        }
        if let Err(why) = open_tty() {
            return Verdict::Reject { reason: not_asked(&tool, &why) };
        }
        let shown = |path: &Path| reins_tools::display_path(path, &self.root);
        let decided = self.edits.decide(Origin::of(&request), request.proposal, shown, cancel);
        let asked = self.ask_each(request.proposal.file_changes().len(), &tool);
        tokio::pin!(decided, asked);
        let mut asking = true;
        loop {
            // The verdict first: once the run is cancelled, no further prompt is started.
            tokio::select! {
                biased;
                verdict = &mut decided => return verdict,
                () = &mut asked, if asking => asking = false,
            }
        }
    }
}

/// Why a call was refused when nobody could be asked.
fn not_asked(tool: &str, why: &str) -> String {
    format!("{tool} needs the user's approval, which could not be asked ({why}); the user can rerun with --yes")
}

fn open_tty() -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty").map_err(|_| "no terminal".to_string())
}

/// Asks `question` and `prompt` (y/N): `None` for yes, else the reason for the model (maybe empty).
fn ask_yes_no(question: &str, prompt: &str) -> Result<Option<String>, String> {
    let tty = open_tty()?;
    let mut writer = tty.try_clone().map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(tty);
    let line = ask(&mut reader, &mut writer, &format!("{question}{prompt}"))?;
    if matches!(line.as_deref().map(str::trim), Some("y" | "Y" | "yes")) {
        return Ok(None);
    }
    Ok(Some(ask_reason(&mut reader, &mut writer)?.unwrap_or_default()))
}

/// Shows the hunks of `edit` one by one and asks about each (see the module's doc).
fn review_on_tty(edit: &PendingEdit, color: bool) -> Result<Review, String> {
    let tty = open_tty()?;
    let mut writer = tty.try_clone().map_err(|e| e.to_string())?;
    let keys = std::io::stdin().is_terminal().then(|| tty.try_clone().ok()).flatten();
    review(edit, color, &mut BufReader::new(tty), &mut writer, keys.as_ref())
}

/// [`review_on_tty`] over any reader and writer; with `keys`, the terminal they are, a hunk's
/// answer is one key.
fn review(
    edit: &PendingEdit,
    color: bool,
    reader: &mut impl BufRead,
    writer: &mut impl Write,
    keys: Option<&std::fs::File>,
) -> Result<Review, String> {
    let Subject::Files(files) = &edit.subject else {
        return Ok(Review { chosen: Vec::new(), all: true, reason: None, comments: BTreeMap::new() });
    };
    let paint = |text: &str, code: &str| paint(text, code, color);
    let hunks: Vec<(&FileDiff, &diff::Hunk)> =
        files.iter().flat_map(|file| file.hunks.iter().map(move |hunk| (file, hunk))).collect();
    let mut screen = String::new();
    for file in files {
        screen.push_str(&render_header(file, &paint));
    }
    // The comments on earlier proposals that this one answers.
    for comment in &edit.resolves {
        let line = format!("✓ answers your comment on hunk {}: {}", comment.hunk + 1, visible_line(&comment.text));
        screen.push_str(&paint(&line, "32"));
        screen.push('\n');
    }
    if hunks.len() > 1 {
        screen.push_str(&paint(&format!("{} hunks — {LEGEND}", hunks.len()), "2"));
        screen.push('\n');
    }
    write!(writer, "{screen}").map_err(|e| e.to_string())?;
    if hunks.is_empty() {
        // A file moved as it is: the move is the one thing to decide.
        let answer = ask(reader, writer, "Apply? [y/N] ")?;
        let all = matches!(answer.as_deref().map(str::trim), Some("y" | "Y" | "yes"));
        let reason = if all { None } else { ask_reason(reader, writer)? };
        return Ok(Review { chosen: Vec::new(), all, reason, comments: BTreeMap::new() });
    }
    let mut chosen = Vec::new();
    let mut comments = BTreeMap::new();
    let mut rest: Option<bool> = None;
    for (number, (file, hunk)) in hunks.iter().enumerate() {
        let apply = match rest {
            Some(apply) => apply,
            None => {
                // Numbered from 1 for people, as the editor's code actions are.
                let title = (hunks.len() > 1).then(|| format!("hunk {} of {}:", number + 1, hunks.len()));
                let text = render_hunk(title.as_deref(), file, hunk, &paint);
                write!(writer, "{text}").map_err(|e| e.to_string())?;
                let (prompt, legend) = match hunks.len() {
                    1 => ("Apply? [y,n,c,?] ", LEGEND_ONE),
                    _ => ("Apply this hunk? [y,n,a,d,c,?] ", LEGEND),
                };
                loop {
                    match ask_hunk(reader, writer, keys, prompt, legend, hunks.len() > 1)? {
                        HunkAnswer::Comment => {
                            let comment = ask(reader, writer, COMMENT_PROMPT)?.unwrap_or_default();
                            match comment.trim() {
                                "" => comments.remove(&hunk.index),
                                comment => comments.insert(hunk.index, comment.to_string()),
                            };
                        }
                        HunkAnswer::Decide { apply, for_the_rest } => {
                            if for_the_rest {
                                rest = Some(apply);
                            }
                            break apply;
                        }
                    }
                }
            }
        };
        if apply {
            chosen.push(hunk.index);
        }
    }
    let all = chosen.len() == hunks.len();
    let reason = if all { None } else { ask_reason(reader, writer)? };
    Ok(Review { chosen, all, reason, comments })
}

/// Asks about one hunk until the answer is one of y, n, c — and a, d when `several` hunks are
/// asked about: whether to apply it and whether the answer holds for the hunks after it, or to
/// comment on it. The end of input skips the rest.
fn ask_hunk(
    reader: &mut impl BufRead,
    writer: &mut impl Write,
    keys: Option<&std::fs::File>,
    prompt: &str,
    legend: &str,
    several: bool,
) -> Result<HunkAnswer, String> {
    let decide = |apply, for_the_rest| Ok(HunkAnswer::Decide { apply, for_the_rest });
    loop {
        let answer = match keys {
            Some(tty) => ask_key(reader, writer, tty, prompt)?,
            None => ask(reader, writer, prompt)?,
        };
        let Some(line) = answer else { return decide(false, true) };
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return decide(true, false),
            "" | "n" | "no" => return decide(false, false),
            "a" | "all" if several => return decide(true, true),
            "d" | "done" if several => return decide(false, true),
            "c" | "comment" => return Ok(HunkAnswer::Comment),
            "?" => writeln!(writer, "{legend}").map_err(|e| e.to_string())?,
            other => {
                let keys = if several { "y, n, a, d or c" } else { "y, n or c" };
                writeln!(writer, "{other:?}: answer {keys} (? explains)").map_err(|e| e.to_string())?
            }
        }
    }
}

/// Asks for the model's reason for what was not applied; `None` when none was given.
fn ask_reason(reader: &mut impl BufRead, writer: &mut impl Write) -> Result<Option<String>, String> {
    let reason = ask(reader, writer, "Reason for the model (optional): ")?.unwrap_or_default();
    let reason = reason.trim();
    Ok((!reason.is_empty()).then(|| reason.to_string()))
}

/// Writes `prompt` and reads one key from the terminal `tty` without waiting for Enter (line
/// editing and echo off meanwhile; signals still work, so Ctrl-C cancels), and shows it; `None`
/// at the end of input. Enter is an empty answer, as in line mode.
fn ask_key(
    reader: &mut impl BufRead,
    writer: &mut impl Write,
    tty: &std::fs::File,
    prompt: &str,
) -> Result<Option<String>, String> {
    write!(writer, "{prompt}").and_then(|_| writer.flush()).map_err(|e| e.to_string())?;
    let saved = tcgetattr(tty).map_err(|e| e.to_string())?;
    let mut single = saved.clone();
    single.local_flags.remove(LocalFlags::ICANON | LocalFlags::ECHO);
    single.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
    single.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
    if let Ok(mut remembered) = SAVED_TERMINAL.lock() {
        *remembered = tty.try_clone().ok().map(|tty| (tty, saved.clone()));
    }
    tcsetattr(tty, SetArg::TCSANOW, &single).map_err(|e| e.to_string())?;
    let key = reader.fill_buf().map(|buffer| buffer.first().copied());
    if let Ok(Some(_)) = key {
        reader.consume(1);
    }
    let _ = tcsetattr(tty, SetArg::TCSANOW, &saved);
    if let Ok(mut remembered) = SAVED_TERMINAL.lock() {
        *remembered = None;
    }
    let Some(key) = key.map_err(|e| e.to_string())? else { return Ok(None) };
    let key = match key {
        b'\r' | b'\n' => String::new(),
        key => char::from(key).to_string(),
    };
    writeln!(writer, "{}", visible_line(&key)).map_err(|e| e.to_string())?;
    Ok(Some(key))
}

/// Puts the terminal back as it was if reins exits while a key is read on its own.
pub fn restore_terminal() {
    let Ok(mut remembered) = SAVED_TERMINAL.lock() else { return };
    if let Some((tty, saved)) = remembered.take() {
        let _ = tcsetattr(&tty, SetArg::TCSANOW, &saved);
    }
}

/// Writes `prompt` and reads one line; `None` at the end of input.
fn ask(reader: &mut impl BufRead, writer: &mut impl Write, prompt: &str) -> Result<Option<String>, String> {
    write!(writer, "{prompt}").and_then(|_| writer.flush()).map_err(|e| e.to_string())?;
    let mut line = String::new();
    match reader.read_line(&mut line).map_err(|e| e.to_string())? {
        0 => Ok(None),
        _ => Ok(Some(line)),
    }
}

fn paint(text: &str, code: &str, color: bool) -> String {
    if color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
}

/// A file's notes, then a header that says whether it is created, deleted or moved.
fn render_header(file: &FileDiff, paint: &dyn Fn(&str, &str) -> String) -> String {
    let shown = visible_line(&file.shown);
    let old = if file.before.is_some() { format!("--- a/{shown}") } else { "--- /dev/null".into() };
    let new = match &file.moved_shown {
        _ if file.delete => "+++ /dev/null".to_string(),
        Some(to) => format!("+++ b/{}", visible_line(to)),
        None => format!("+++ b/{shown}"),
    };
    let mut out = String::new();
    for note in &file.notes {
        out.push_str(&paint(&format!("note: {}", visible(note)), "33"));
        out.push('\n');
    }
    for header in [old, new] {
        out.push_str(&paint(&header, "1"));
        out.push('\n');
    }
    out
}

/// One hunk with its own context lines, as a unified diff, under `title` when there is one.
fn render_hunk(
    title: Option<&str>,
    file: &FileDiff,
    hunk: &diff::Hunk,
    paint: &dyn Fn(&str, &str) -> String,
) -> String {
    let before = file.before.as_deref().unwrap_or("");
    let only = diff::apply_hunks(before, &file.hunks, &[hunk.index]);
    let mut out = String::new();
    if let Some(title) = title {
        out.push_str(&paint(title, "1;36"));
        out.push('\n');
    }
    let diff = diff::unified_diff(&file.shown, before, &only);
    for line in visible(&diff).lines().skip(2) {
        let code = match line.as_bytes().first() {
            Some(b'+') => "32",
            Some(b'-') => "31",
            Some(b'@') => "36",
            _ => "0",
        };
        out.push_str(&paint(line, code));
        out.push('\n');
    }
    out
}

/// How much of an MCP call's arguments the question shows, in bytes.
const MAX_SHOWN_ARGUMENTS: usize = 4000;

/// A call of an MCP server's tool: the server, the tool and the arguments, pretty-printed (cut
/// when long).
fn render_server_call(call: &reins_agent::ServerCall, color: bool) -> String {
    let mut arguments = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
    if let (kept, true) = reins_ai::cut_bytes(&arguments, MAX_SHOWN_ARGUMENTS) {
        let (end, more) = (kept.len(), arguments.len() - kept.len());
        arguments.truncate(end);
        arguments.push_str(&format!("\n… ({more} more bytes)"));
    }
    let (server, tool) = (visible_line(&call.server), visible_line(&call.tool));
    let mut out = paint(&format!("MCP server `{server}`, tool `{tool}`, with:"), "1", color);
    out.push('\n');
    for line in visible(&arguments).lines() {
        out.push_str(&format!("  {line}\n"));
    }
    out
}

/// Whether the tool's line above the prompt (`● bash $ cargo test`, its summary cut at 120
/// characters) already showed all of `command`.
fn shown_in_full(summary: &str, command: &reins_agent::CommandProposal) -> bool {
    let line = format!("$ {}", command.command.trim());
    !line.contains(['\n', '\r']) && line.chars().count() <= 120 && summary.trim() == line
}

/// A command's line (unless `shown` already, on the tool's line) and where it runs.
fn render_command(command: &reins_agent::CommandProposal, color: bool, shown: bool) -> String {
    let line = match shown {
        true => String::new(),
        false => format!("{}\n", paint(&format!("$ {}", visible(&command.command)), "1", color)),
    };
    format!(
        "{line}{}\n",
        paint(
            &format!("  in {} (timeout {} s)", visible_line(&command.cwd.display().to_string()), command.timeout_secs),
            "2",
            color
        )
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use expect_test::{Expect, expect};
    use reins_agent::{CommandProposal, FileChange};

    use super::*;

    fn edit_of(change: FileChange) -> PendingEdit {
        let shown = |path: &Path| path.display().to_string().trim_start_matches('/').to_string();
        PendingEdit {
            id: "e1".into(),
            session_id: "s".into(),
            run_id: "r".into(),
            tool_call_id: "c".into(),
            tool: "edit".into(),
            subject: Subject::of(&Proposal::FileChange(change), shown),
            comments: Default::default(),
            resolves: Vec::new(),
        }
    }

    fn change(path: &str, before: &str, after: &str, notes: &[&str]) -> FileChange {
        FileChange {
            path: PathBuf::from(path),
            before: Some(before.into()),
            after: after.into(),
            notes: notes.iter().map(|note| note.to_string()).collect(),
            ..FileChange::default()
        }
    }

    /// Plays `answers` (one a line) to the review of `change`: renders the screen, then the
    /// review.
    fn check_review(change: FileChange, answers: &str, expected: Expect) {
        let mut screen = Vec::new();
        let review = review(&edit_of(change), false, &mut answers.as_bytes(), &mut screen, None);
        expected.assert_eq(&format!("{}\n=> {review:?}", String::from_utf8_lossy(&screen)));
    }

    fn twelve_lines() -> (String, String) {
        let before: String = (1..=12).map(|n| format!("line {n}\n")).collect();
        let after = before.replace("line 2\n", "line two\n").replace("line 11\n", "");
        (before, after)
    }

    #[test]
    fn one_hunk_with_notes_is_one_question() {
        let change =
            change("/w/a.py", "x = 1\ny = 2\n", "x = 1\ny = 3\n", &["matched after ignoring trailing whitespace"]);
        check_review(
            change,
            "y\n",
            expect![[r#"
                note: matched after ignoring trailing whitespace
                --- a/w/a.py
                +++ b/w/a.py
                @@ -1,2 +1,2 @@
                 x = 1
                -y = 2
                +y = 3
                Apply? [y,n,c,?] 
                => Ok(Review { chosen: [0], all: true, reason: None, comments: {} })"#]],
        );
    }

    #[test]
    fn scattered_changes_are_asked_hunk_by_hunk_with_a_reason_for_the_skipped() {
        let (before, after) = twelve_lines();
        check_review(
            change("/w/a.txt", &before, &after, &[]),
            "?\nmaybe\nn\ny\nkeep line 2 as it is\n",
            expect![[r#"
                --- a/w/a.txt
                +++ b/w/a.txt
                2 hunks — y: apply this hunk, n: skip it, a: apply it and all after it, d: skip it and all after it, c: comment on it
                hunk 1 of 2:
                @@ -1,5 +1,5 @@
                 line 1
                -line 2
                +line two
                 line 3
                 line 4
                 line 5
                Apply this hunk? [y,n,a,d,c,?] y: apply this hunk, n: skip it, a: apply it and all after it, d: skip it and all after it, c: comment on it
                Apply this hunk? [y,n,a,d,c,?] "maybe": answer y, n, a, d or c (? explains)
                Apply this hunk? [y,n,a,d,c,?] hunk 2 of 2:
                @@ -8,5 +8,4 @@
                 line 8
                 line 9
                 line 10
                -line 11
                 line 12
                Apply this hunk? [y,n,a,d,c,?] Reason for the model (optional): 
                => Ok(Review { chosen: [1], all: false, reason: Some("keep line 2 as it is"), comments: {} })"#]],
        );
    }

    #[test]
    fn all_and_done_answer_for_the_hunks_after() {
        let (before, after) = twelve_lines();
        let review = |answers: &str| {
            let mut screen = Vec::new();
            let edit = edit_of(change("/w/a.txt", &before, &after, &[]));
            let review = review(&edit, false, &mut answers.as_bytes(), &mut screen, None).unwrap();
            let asked = String::from_utf8(screen).unwrap().matches("Apply this hunk? [y,n,a,d,c,?]").count();
            (review.chosen, review.all, review.reason, asked)
        };
        assert_eq!(review("a\n"), (vec![0, 1], true, None, 1));
        assert_eq!(review("d\n\n"), (vec![], false, None, 1));
        assert_eq!(review("y\nd\nnot that one\n"), (vec![0], false, Some("not that one".to_string()), 2));
        // The end of input skips what is left.
        assert_eq!(review(""), (vec![], false, None, 1));
    }

    #[test]
    fn c_reads_a_comment_and_asks_about_the_hunk_again() {
        let (before, after) = twelve_lines();
        let play = |answers: &str| {
            let mut screen = Vec::new();
            let edit = edit_of(change("/w/a.txt", &before, &after, &[]));
            let review = review(&edit, false, &mut answers.as_bytes(), &mut screen, None).unwrap();
            let asked = String::from_utf8(screen).unwrap().matches("Apply this hunk?").count();
            (review.chosen, review.comments.into_iter().collect::<Vec<_>>(), asked)
        };
        assert_eq!(play("c\n keep 2 \nn\ny\n\n"), (vec![1], vec![(0, "keep 2".to_string())], 3));
        // A blank comment takes the hunk's comment back; a later one replaces it.
        assert_eq!(play("c\nfirst\nc\n\nn\nc\nsecond\nc\nthird\ny\n\n"), (vec![1], vec![(1, "third".to_string())], 6));
        // One hunk: `c` too, and no `a` or `d`.
        let mut screen = Vec::new();
        let edit = edit_of(change("/w/a.py", "x = 1\n", "x = 2\n", &[]));
        let one = review(&edit, false, &mut "a\nc\nwhy 2?\ny\n".as_bytes(), &mut screen, None).unwrap();
        assert_eq!((one.all, one.comments.get(&0).map(String::as_str)), (true, Some("why 2?")));
        let screen = String::from_utf8(screen).unwrap();
        assert!(screen.contains("\"a\": answer y, n or c (? explains)"), "{screen}");
    }

    #[test]
    fn command_renders_with_cwd() {
        let command = CommandProposal { command: "cargo test".into(), cwd: PathBuf::from("/w"), timeout_secs: 120 };
        expect![[r#"
            $ cargo test
              in /w (timeout 120 s)
        "#]]
        .assert_eq(&render_command(&command, false, false));
        // The tool's line above the prompt showed it all: it is not printed twice.
        assert!(shown_in_full("$ cargo test", &command));
        assert_eq!(render_command(&command, false, true), "  in /w (timeout 120 s)\n");
        let long = CommandProposal { command: "cargo test\n  --all".into(), ..command };
        assert!(!shown_in_full("$ cargo test", &long));
    }

    #[test]
    fn a_command_cannot_hide_itself() {
        let command = CommandProposal {
            command: "rm -f important.txt #\x1b[2K\x1b[1A\r$ ls -la".into(),
            cwd: PathBuf::from("/w\x1b[2J"),
            timeout_secs: 120,
        };
        expect![[r#"
            $ rm -f important.txt #^[[2K^[[1A^M$ ls -la
              in /w^[[2J (timeout 120 s)
        "#]]
        .assert_eq(&render_command(&command, false, false));
    }

    #[test]
    fn a_hunk_shows_the_file_escapes_and_all() {
        let change = change("/w/a\x1b[2J.txt", "x = 1\n", "x = \"\x1b]0;t\x07\"\n", &["note\x1b[1A"]);
        check_review(
            change,
            "n\n\n",
            expect![[r#"
                note: note^[[1A
                --- a/w/a^[[2J.txt
                +++ b/w/a^[[2J.txt
                @@ -1 +1 @@
                -x = 1
                +x = "^[]0;t^G"
                Apply? [y,n,c,?] Reason for the model (optional): 
                => Ok(Review { chosen: [], all: false, reason: None, comments: {} })"#]],
        );
    }

    #[test]
    fn an_mcp_call_renders_its_server_tool_and_arguments() {
        let call = reins_agent::ServerCall {
            server: "docs".into(),
            tool: "search".into(),
            arguments: serde_json::json!({"query": "rope", "limit": 3}),
            read_only_hint: false,
        };
        expect![[r#"
            MCP server `docs`, tool `search`, with:
              {
                "query": "rope",
                "limit": 3
              }
        "#]]
        .assert_eq(&render_server_call(&call, false));
        let long = reins_agent::ServerCall {
            server: "s".into(),
            tool: "t".into(),
            arguments: serde_json::json!({"text": "é".repeat(3000)}),
            read_only_hint: false,
        };
        let shown = render_server_call(&long, false);
        assert!(shown.len() < MAX_SHOWN_ARGUMENTS + 200 && shown.contains("more bytes)"), "{shown}");
    }
}
