//! `reins sessions checkout ENTRY`: moves a session's leaf to ENTRY and brings the files the agent
//! changed along — the changes after ENTRY undone, those on its path redone — keeping the user's
//! own edits. A file where the user's edits and the agent's change overlap is left as it is and
//! named. At a terminal, without `--yes`, it shows what each file will go through and asks first.
//!
//! Exit status: 0 when every file came along; 3 when the leaf moved but some files were left as
//! they are (conflicts); 1 when nothing was changed (an error, or the user said no).
//!
//! Paths, ids and commands come from a session file, which may be crafted: the plan and the
//! report show them through `reins_ai::visible_line`, so none can steer the terminal.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use reins_ai::{visible, visible_line};
use reins_harness::{
    CheckedOut, Checkout, ConflictInfo, Direction, FileOutcome, PickedCheckout, Resumed, Status, UNTRACKED_WARNING,
    Written,
};
use serde_json::{Value, json};

use reins_wire as to_proto;

/// Exit status when the leaf moved but some files were left as they are.
const LEFT_BEHIND: u8 = 3;

/// What `reins sessions checkout` was asked.
#[derive(Debug, PartialEq)]
pub struct CheckoutRequest {
    pub entry: String,
    pub session: Option<String>,
    pub yes: bool,
    pub json: bool,
    pub cwd: Option<PathBuf>,
}

pub fn main(request: CheckoutRequest) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => return fail(&format!("cannot start the async runtime: {err}")),
    };
    match runtime.block_on(run(&request)) {
        Ok(code) => code,
        Err(message) => fail(&message),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("reins: {}", visible(message));
    ExitCode::FAILURE
}

async fn run(request: &CheckoutRequest) -> Result<ExitCode, String> {
    let warn = Arc::new(|message: &str| eprintln!("reins: warning: {}", visible(message)));
    let harness = crate::sessions_cmd::offline_harness(request.cwd.as_ref(), warn)?;
    let mut asked = Asked::NotNeeded;
    let confirm = |checkout: &Checkout| {
        if request.yes {
            return true;
        }
        asked = ask(checkout);
        asked == Asked::Yes
    };
    let picked = harness.checkout_picked(request.session.as_deref(), &request.entry, confirm).await;
    let PickedCheckout { landing, done } = picked.map_err(|e| e.to_string())?.ok_or_else(|| {
        let workspace = crate::run::workspace_root(request.cwd.as_ref()).unwrap_or_default();
        let workspace = visible(&workspace.display().to_string()).into_owned();
        format!("no sessions in this workspace ({workspace}) yet; nothing to check out")
    })?;
    if done.declined {
        return Err(match asked {
            Asked::NoTerminal => {
                eprint!("{}", render_plan(&done.checkout));
                "this checkout changes files; confirm it at a terminal, or pass --yes".to_string()
            }
            _ => "nothing was changed".to_string(),
        });
    }
    let text = match request.json {
        true => serde_json::to_string_pretty(&report_json(&done)).map_err(|e| e.to_string())? + "\n",
        false => render_report(&done),
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush());
    if let Some(prompt) = &landing.prompt {
        let quoted = format!("\"{}\"", reins_ai::visible_line(&reins_ai::shorten(prompt.trim(), 200)));
        eprintln!("reins: checked out before your message {quoted}; edit it and send it again with reins run -c");
    }
    Ok(match done.left_behind() {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::from(LEFT_BEHIND),
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Asked {
    NotNeeded,
    Yes,
    No,
    NoTerminal,
}

/// Shows the plan on the controlling terminal and asks whether to go ahead.
fn ask(checkout: &Checkout) -> Asked {
    let Ok(tty) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty") else {
        return Asked::NoTerminal;
    };
    let Ok(mut writer) = tty.try_clone() else { return Asked::NoTerminal };
    let question = format!("{}Check out and change these files? [y/N] ", render_plan(checkout));
    if write!(writer, "{question}").and_then(|_| writer.flush()).is_err() {
        return Asked::NoTerminal;
    }
    let mut line = String::new();
    match BufReader::new(tty).read_line(&mut line) {
        Ok(_) if matches!(line.trim(), "y" | "Y" | "yes") => Asked::Yes,
        _ => Asked::No,
    }
}

/// What the checkout will do, file by file, and the commands whose effects it cannot undo.
fn render_plan(checkout: &Checkout) -> String {
    let from = checkout.from.as_deref().map(|from| format!(" (now at {})", visible_line(from))).unwrap_or_default();
    let (target, session) = (visible_line(&checkout.target), short(&checkout.session_id));
    let mut out = format!("Checking out {target} in session {session}{from}:\n");
    let width = checkout.files.iter().map(|file| shown(file).chars().count()).max().unwrap_or(0);
    for file in &checkout.files {
        let (shown, what) = (shown(file), visible_line(&describe(file)).into_owned());
        out.push_str(&format!("  {:<8} {shown:<width$}  {what}\n", file.action()));
    }
    if checkout.files.is_empty() {
        out.push_str("  no file changes are recorded on the way\n");
    }
    for command in &checkout.commands {
        out.push_str(&format!("  ! {}\n", visible_line(&command_warning(command))));
    }
    out
}

/// How a checkout went: the files left as they are, the warnings, and what comes next.
fn render_report(done: &CheckedOut) -> String {
    let checkout = &done.checkout;
    let mut out = String::new();
    if let Some(Resumed { target, files }) = &done.resumed {
        let finished = files.iter().filter(|(_, written)| *written == Written::Done).count();
        let target = visible_line(target);
        out.push_str(&format!("Finished the interrupted checkout of {target} first ({finished} file(s) written).\n"));
    }
    let moved = checkout.files.iter().filter(|file| file.writes());
    let written = |file: &&FileOutcome| done.written.get(&file.path);
    let brought =
        moved.clone().filter(|file| matches!(written(file), Some(Written::Done | Written::AlreadyDone))).count();
    let left = done.left_behind();
    let target = visible_line(&checkout.target);
    out.push_str(&format!("Checked out {target} in session {}: ", short(&checkout.session_id)));
    out.push_str(&match (brought, left) {
        (0, 0) => "no file needed to change.\n".to_string(),
        (brought, 0) => format!("{brought} file(s) brought along.\n"),
        (brought, left) => format!("{brought} file(s) brought along, {left} left as they are.\n"),
    });
    for file in &checkout.files {
        match (&file.status, written(&file)) {
            (Status::Conflict(_) | Status::Refused(_), _) => {
                let what = visible_line(&describe(file)).into_owned();
                out.push_str(&format!("  {:<8} {}: {what}\n", file.action(), shown(file)));
                if let Status::Conflict(ConflictInfo { change: Some(change), .. }) = &file.status {
                    out.push_str("      the agent's change it would take (make it by hand for the file to follow):\n");
                    change.lines().for_each(|line| out.push_str(&format!("      {}\n", visible_line(line))));
                }
            }
            (_, Some(Written::ChangedMeanwhile)) => out.push_str(&format!(
                "  changed  {}: it changed while the checkout ran, so it was left as it is\n",
                shown(file)
            )),
            (_, Some(Written::Failed(reason))) => {
                out.push_str(&format!("  failed   {}: {}\n", shown(file), visible_line(reason)));
            }
            _ => {}
        }
    }
    for command in &checkout.commands {
        out.push_str(&format!("  ! {}\n", visible_line(&command_warning(command))));
    }
    if left > 0 {
        out.push_str("Edit the files named above by hand if they should follow too.\n");
    }
    out.push_str(&format!("`reins run --continue` continues from {target}.\n"));
    out
}

/// One file's line in the plan.
fn describe(file: &FileOutcome) -> String {
    let changes = match file.changes {
        1 => "1 recorded change".to_string(),
        n => format!("{n} recorded changes"),
    };
    match &file.status {
        Status::Unchanged => format!("already as it was there ({changes})"),
        Status::Restored => changes,
        Status::Merged => format!("{changes}, keeping your own edits"),
        Status::Conflict(info) => {
            let lines = info.lines.as_ref().map(|lines| match lines.len() {
                0 => format!("at line {}: ", lines.start + 1),
                1 => format!("line {}: ", lines.start + 1),
                _ => format!("lines {}-{}: ", lines.start + 1, lines.end),
            });
            format!("{}{}; left as it is", lines.unwrap_or_default(), info.reason)
        }
        Status::Refused(reason) => format!("not touched: {reason}"),
    }
}

fn command_warning(command: &reins_harness::CommandRan) -> String {
    let what = match &command.command {
        Some(line) => format!("{}: {line}", command.tool),
        None => command.tool.clone(),
    };
    let when = match command.direction {
        Direction::Undo => "after the entry",
        Direction::Redo => "on the way to it",
    };
    format!("{UNTRACKED_WARNING} ({} {when}: {what})", command.entry_id)
}

fn short(id: &str) -> String {
    visible_line(id).chars().take(8).collect()
}

/// A file's path as the plan and the report show it.
fn shown(file: &FileOutcome) -> std::borrow::Cow<'_, str> {
    visible_line(&file.shown)
}

fn report_json(done: &CheckedOut) -> Value {
    let checkout = &done.checkout;
    let files: Vec<Value> =
        checkout.files.iter().map(|file| to_proto::checkout_file(file, done.written.get(&file.path))).collect();
    let resumed = done.resumed.as_ref().map(|Resumed { target, files }| {
        let files: Vec<Value> = files
            .iter()
            .map(|(path, written)| json!({"path": path, "written": to_proto::written_name(written)}))
            .collect();
        json!({"entryId": target, "files": files})
    });
    json!({
        "sessionId": checkout.session_id,
        "entryId": checkout.target,
        "from": checkout.from,
        "files": files,
        "commands": to_proto::checkout_commands(&checkout.commands),
        "leftBehind": done.left_behind(),
        "resumed": resumed,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use expect_test::expect;
    use reins_harness::{CommandRan, ConflictInfo};

    use super::*;

    fn file(shown: &str, current: Option<&str>, result: Option<&str>, changes: usize, status: Status) -> FileOutcome {
        FileOutcome {
            path: PathBuf::from("/w").join(shown),
            shown: shown.into(),
            current: current.map(|text| text.as_bytes().to_vec()),
            result: result.map(|text| text.as_bytes().to_vec()),
            current_sha256: None,
            result_sha256: None,
            changes,
            status,
        }
    }

    fn checkout() -> Checkout {
        let conflict = ConflictInfo {
            entry_id: "c3c3c3c3".into(),
            lines: Some(3..6),
            reason: "your edits overlap the agent's change".into(),
            change: Some("--- a/config.toml\n+++ b/config.toml\n@@ -1 +1 @@\n-x = 2\n+x = 1\n".into()),
        };
        Checkout {
            session_id: "0193b7a2-5c1e".into(),
            from: Some("f9f9f9f9".into()),
            target: "a1a1a1a1".into(),
            files: vec![
                file("src/lib.rs", Some("new"), Some("old"), 2, Status::Restored),
                file("src/main.rs", Some("new mine"), Some("old mine"), 1, Status::Merged),
                file("notes.md", None, Some("notes"), 1, Status::Restored),
                file("config.toml", Some("x"), Some("x"), 1, Status::Conflict(conflict)),
                file("../out.txt", None, None, 0, Status::Refused("it is outside the workspace".into())),
            ],
            commands: vec![CommandRan {
                entry_id: "b2b2b2b2".into(),
                direction: Direction::Undo,
                tool: "bash".into(),
                command: Some("cargo fmt".into()),
            }],
            unreadable: Vec::new(),
        }
    }

    #[test]
    fn the_plan_names_each_file_and_warns_of_commands() {
        expect![[r#"
            Checking out a1a1a1a1 in session 0193b7a2 (now at f9f9f9f9):
              restore  src/lib.rs   2 recorded changes
              merge    src/main.rs  1 recorded change, keeping your own edits
              create   notes.md     1 recorded change
              conflict config.toml  lines 4-6: your edits overlap the agent's change; left as it is
              refused  ../out.txt   not touched: it is outside the workspace
              ! a command ran here; its effects on files were not tracked (b2b2b2b2 after the entry: bash: cargo fmt)
        "#]]
        .assert_eq(&render_plan(&checkout()));
    }

    #[test]
    fn a_crafted_session_cannot_steer_the_terminal_through_the_plan() {
        let mut checkout = checkout();
        checkout.files.truncate(1);
        checkout.files[0].shown = "a.rs\x1b[2K\r  restore  b.rs\n\u{202e}sr.c".into();
        checkout.commands[0].command = Some("rm -rf ~\x1b]0;title\x07".into());
        expect![[r#"
            Checking out a1a1a1a1 in session 0193b7a2 (now at f9f9f9f9):
              restore  a.rs^[[2K^M  restore  b.rs^J<U+202E>sr.c  2 recorded changes
              ! a command ran here; its effects on files were not tracked (b2b2b2b2 after the entry: bash: rm -rf ~^[]0;title^G)
        "#]]
        .assert_eq(&render_plan(&checkout));
    }

    #[test]
    fn the_report_says_what_was_left_and_how_to_go_on() {
        let checkout = checkout();
        let mut written: HashMap<PathBuf, Written> =
            checkout.files.iter().filter(|file| file.writes()).map(|file| (file.path.clone(), Written::Done)).collect();
        written.insert(PathBuf::from("/w/notes.md"), Written::ChangedMeanwhile);
        let done = CheckedOut {
            checkout,
            written,
            declined: false,
            resumed: Some(Resumed { target: "a1a1a1a1".into(), files: Vec::new() }),
        };
        expect![[r#"
            Finished the interrupted checkout of a1a1a1a1 first (0 file(s) written).
            Checked out a1a1a1a1 in session 0193b7a2: 2 file(s) brought along, 3 left as they are.
              changed  notes.md: it changed while the checkout ran, so it was left as it is
              conflict config.toml: lines 4-6: your edits overlap the agent's change; left as it is
                  the agent's change it would take (make it by hand for the file to follow):
                  --- a/config.toml
                  +++ b/config.toml
                  @@ -1 +1 @@
                  -x = 2
                  +x = 1
              refused  ../out.txt: not touched: it is outside the workspace
              ! a command ran here; its effects on files were not tracked (b2b2b2b2 after the entry: bash: cargo fmt)
            Edit the files named above by hand if they should follow too.
            `reins run --continue` continues from a1a1a1a1.
        "#]]
        .assert_eq(&render_report(&done));
        assert_eq!(report_json(&done)["files"][3]["conflict"]["lines"], json!({"start": 3, "end": 6}));
    }
}
