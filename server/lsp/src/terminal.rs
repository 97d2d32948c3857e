//! The terminal face of `reins run`: the streamed answer on stdout, tool calls and usage on
//! stderr, and y/N approval of proposals read from the controlling terminal.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;

use async_trait::async_trait;
use reins_agent::{AgentEvent, FileChange, Proposal};
use reins_ai::StreamEvent;
use reins_harness::{ApprovalRequest, Approver, Verdict};
use reins_review::diff;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// How long the diff of a proposal may search before settling for coarser hunks.
const HUNK_DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_millis(200);

/// Prints agent events for a person.
pub struct HumanOutput {
    color: bool,
    state: Mutex<OutputState>,
}

#[derive(Default)]
struct OutputState {
    /// The last character written to stdout was not a newline.
    mid_line: bool,
    thinking: bool,
    turns: u32,
}

impl HumanOutput {
    pub fn new() -> Self {
        Self { color: std::io::stderr().is_terminal(), state: Mutex::new(OutputState::default()) }
    }

    pub fn show(&self, event: &AgentEvent) {
        let Ok(mut state) = self.state.lock() else { return };
        let mut out = std::io::stdout().lock();
        let mut err = std::io::stderr().lock();
        // Write errors (a closed pipe) are not worth failing the run over.
        let _ = self.write_event(event, &mut state, &mut out, &mut err);
    }

    fn write_event(
        &self,
        event: &AgentEvent,
        state: &mut OutputState,
        out: &mut impl Write,
        err: &mut impl Write,
    ) -> std::io::Result<()> {
        match event {
            AgentEvent::TurnStart { turn } => state.turns = *turn,
            AgentEvent::MessageUpdate { delta: StreamEvent::Text { delta, .. } } => {
                if state.thinking {
                    state.thinking = false;
                    writeln!(err, "{}", self.paint("", "0"))?;
                }
                write!(out, "{delta}")?;
                out.flush()?;
                state.mid_line = !delta.ends_with('\n');
            }
            AgentEvent::MessageUpdate { delta: StreamEvent::Thinking { delta, .. } } => {
                state.thinking = true;
                write!(err, "{}", self.paint(delta, "2"))?;
            }
            AgentEvent::ToolExecutionStart { tool_name, args, .. } => {
                end_line(state, out)?;
                writeln!(err, "{} {}", self.paint(&format!("● {tool_name}"), "1;36"), summarize_args(tool_name, args))?;
            }
            AgentEvent::ToolExecutionEnd { result, is_error, .. } => {
                let text = result.text();
                let first = text.lines().next().unwrap_or_default();
                if *is_error {
                    writeln!(err, "  {}", self.paint(&format!("✗ {}", clip(first, 160)), "31"))?;
                } else {
                    writeln!(err, "  {}", self.paint(&format!("✓ {} lines", text.lines().count()), "2"))?;
                }
            }
            AgentEvent::AgentEnd { usage, .. } => {
                end_line(state, out)?;
                writeln!(
                    err,
                    "{}",
                    self.paint(
                        &format!(
                            "— {} turn(s) · {} in · {} out · ${:.4}",
                            state.turns,
                            usage.input + usage.cache_read,
                            usage.output,
                            usage.cost.total
                        ),
                        "2"
                    )
                )?;
            }
            _ => {}
        }
        Ok(())
    }

    fn paint(&self, text: &str, code: &str) -> String {
        if self.color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
    }
}

fn end_line(state: &mut OutputState, out: &mut impl Write) -> std::io::Result<()> {
    if state.mid_line {
        writeln!(out)?;
        state.mid_line = false;
    }
    out.flush()
}

/// One line saying what a tool call is about: its path, command or pattern.
fn summarize_args(tool: &str, args: &Value) -> String {
    let field = |name: &str| args.get(name).and_then(Value::as_str);
    let summary = match tool {
        "bash" => field("command").map(|c| format!("$ {c}")),
        "grep" | "find" => field("pattern").map(|p| format!("{p} {}", field("path").unwrap_or(""))),
        "apply_patch" => field("input").map(|input| reins_tools::patch_paths(input).join(", ")),
        _ => field("path").map(str::to_string),
    };
    clip(summary.as_deref().unwrap_or("").trim(), 120)
}

fn clip(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Asks on the controlling terminal. Without one, nothing can be approved: the call is blocked
/// with a reason that tells the user about `--yes`.
pub struct TerminalApprover;

#[async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, request: ApprovalRequest<'_>, cancel: &CancellationToken) -> Verdict {
        let question = render_proposal(request.proposal, std::io::stderr().is_terminal());
        let tool = request.call.name.clone();
        let ask = tokio::task::spawn_blocking(move || ask_on_tty(&question));
        let answer = tokio::select! {
            answer = ask => answer.unwrap_or(Err("the approval prompt failed".into())),
            _ = cancel.cancelled() => return Verdict::Reject { reason: "cancelled".into() },
        };
        match answer {
            Ok(Answer::Yes) => Verdict::Accept { changed: None, allow_for_session: false },
            Ok(Answer::No(reason)) if reason.is_empty() => {
                Verdict::Reject { reason: format!("the user rejected this {tool} call") }
            }
            Ok(Answer::No(reason)) => {
                Verdict::Reject { reason: format!("the user rejected this {tool} call: {reason}") }
            }
            Err(why) => Verdict::Reject {
                reason: format!(
                    "{tool} needs the user's approval, which could not be asked ({why}); the user can rerun with --yes"
                ),
            },
        }
    }
}

enum Answer {
    Yes,
    No(String),
}

fn ask_on_tty(question: &str) -> Result<Answer, String> {
    let tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty").map_err(|_| "no terminal")?;
    let mut writer = tty.try_clone().map_err(|e| e.to_string())?;
    let mut reader = std::io::BufReader::new(tty);
    write!(writer, "{question}Apply? [y/N] ").and_then(|_| writer.flush()).map_err(|e| e.to_string())?;
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    if matches!(line.trim(), "y" | "Y" | "yes") {
        return Ok(Answer::Yes);
    }
    write!(writer, "Reason for the model (optional): ").and_then(|_| writer.flush()).map_err(|e| e.to_string())?;
    let mut reason = String::new();
    reader.read_line(&mut reason).map_err(|e| e.to_string())?;
    Ok(Answer::No(reason.trim().to_string()))
}

/// The diff of a file change, hunk by hunk as the editor shows them, or the command line of a
/// command, for the y/N question.
pub fn render_proposal(proposal: &Proposal, color: bool) -> String {
    let paint = |line: &str, code: &str| if color { format!("\x1b[{code}m{line}\x1b[0m") } else { line.to_string() };
    match proposal {
        Proposal::FileChange(change) => render_file_change(change, &paint),
        Proposal::FileChanges { files } => files.iter().map(|change| render_file_change(change, &paint)).collect(),
        Proposal::Command(command) => format!(
            "{}\n{}\n",
            paint(&format!("$ {}", command.command), "1"),
            paint(&format!("  in {} (timeout {} s)", command.cwd.display(), command.timeout_secs), "2")
        ),
    }
}

/// One file of a proposal: its notes, a header that says whether it is created, deleted or
/// moved, and its hunks one by one.
fn render_file_change(change: &FileChange, paint: &dyn Fn(&str, &str) -> String) -> String {
    let path = change.path.display().to_string();
    let path = path.trim_start_matches('/');
    let before = change.before.as_deref().unwrap_or("");
    let old_header = if change.before.is_some() { format!("--- a/{path}") } else { "--- /dev/null".into() };
    let new_header = match &change.moved_to {
        _ if change.delete => "+++ /dev/null".to_string(),
        Some(to) => format!("+++ b/{}", to.display().to_string().trim_start_matches('/')),
        None => format!("+++ b/{path}"),
    };
    let mut out = String::new();
    for note in &change.notes {
        out.push_str(&paint(&format!("note: {note}"), "33"));
        out.push('\n');
    }
    out.push_str(&paint(&old_header, "1"));
    out.push('\n');
    out.push_str(&paint(&new_header, "1"));
    out.push('\n');
    // The hunks an editor would offer one by one, each with its own context.
    let hunks = diff::hunks(before, &change.after, HUNK_DIFF_DEADLINE);
    for hunk in &hunks {
        out.push_str(&paint(&format!("hunk {}:", hunk.index), "1;36"));
        out.push('\n');
        let only = diff::apply_hunks(before, &hunks, &[hunk.index]);
        for line in diff::unified_diff(path, before, &only).lines().skip(2) {
            let code = match line.as_bytes().first() {
                Some(b'+') => "32",
                Some(b'-') => "31",
                Some(b'@') => "36",
                _ => "0",
            };
            out.push_str(&paint(line, code));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use expect_test::expect;
    use reins_agent::{CommandProposal, FileChange};

    use super::*;

    #[test]
    fn file_change_renders_as_unified_diff_with_notes() {
        let proposal = Proposal::FileChange(FileChange {
            path: PathBuf::from("/w/a.py"),
            before: Some("x = 1\ny = 2\n".into()),
            after: "x = 1\ny = 3\n".into(),
            version: None,
            notes: vec!["matched after ignoring trailing whitespace".into()],
            ..FileChange::default()
        });
        expect![[r#"
            note: matched after ignoring trailing whitespace
            --- a/w/a.py
            +++ b/w/a.py
            hunk 0:
            @@ -1,2 +1,2 @@
             x = 1
            -y = 2
            +y = 3
        "#]]
        .assert_eq(&render_proposal(&proposal, false));
    }

    #[test]
    fn scattered_changes_render_as_numbered_hunks() {
        let before: String = (1..=12).map(|n| format!("line {n}\n")).collect();
        let after = before.replace("line 2\n", "line two\n").replace("line 11\n", "");
        let proposal = Proposal::FileChange(FileChange {
            path: PathBuf::from("/w/a.txt"),
            before: Some(before),
            after,
            version: None,
            notes: Vec::new(),
            ..FileChange::default()
        });
        expect![[r#"
            --- a/w/a.txt
            +++ b/w/a.txt
            hunk 0:
            @@ -1,5 +1,5 @@
             line 1
            -line 2
            +line two
             line 3
             line 4
             line 5
            hunk 1:
            @@ -8,5 +8,4 @@
             line 8
             line 9
             line 10
            -line 11
             line 12
        "#]]
        .assert_eq(&render_proposal(&proposal, false));
    }

    #[test]
    fn command_renders_with_cwd() {
        let proposal = Proposal::Command(CommandProposal {
            command: "cargo test".into(),
            cwd: PathBuf::from("/w"),
            timeout_secs: 120,
        });
        expect![[r#"
            $ cargo test
              in /w (timeout 120 s)
        "#]]
        .assert_eq(&render_proposal(&proposal, false));
    }

    #[test]
    fn tool_calls_summarize_to_their_subject() {
        assert_eq!(summarize_args("bash", &serde_json::json!({"command": "ls -la"})), "$ ls -la");
        assert_eq!(summarize_args("read", &serde_json::json!({"path": "src/a.rs"})), "src/a.rs");
        assert_eq!(summarize_args("grep", &serde_json::json!({"pattern": "fn main"})), "fn main");
    }
}
