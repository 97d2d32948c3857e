//! The terminal face of `reins run`: the streamed answer on stdout, tool calls and usage on
//! stderr. Proposals are reviewed in [`crate::terminal_review`]. Everything the model, a tool or
//! a file said is shown through [`visible`], so none of it can steer the terminal.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use reins_agent::{AgentEvent, TodoStatus, ToolKind, ToolLook, TurnEndReason};
use reins_ai::{StreamEvent, first_line, shorten, visible, visible_line};

/// Prints agent events for a person.
pub struct HumanOutput {
    color: bool,
    /// `[diagnostics] command`, when it checks the agent's edits: said at the first edit, since
    /// the edit's result then waits for it.
    check: Option<String>,
    state: Mutex<OutputState>,
}

#[derive(Default)]
struct OutputState {
    /// The last character written to stdout was not a newline.
    mid_line: bool,
    /// The answer's last delta ended in `\r`: held until the next shows whether a `\n` follows.
    held_cr: bool,
    thinking: bool,
    turns: u32,
    /// The check command was named.
    check_named: bool,
    /// Calls that change files ([`ToolKind::Edit`]), from their start to their end.
    edits: HashSet<String>,
}

impl HumanOutput {
    pub fn new(check: Option<String>) -> Self {
        Self { color: std::io::stderr().is_terminal(), check, state: Mutex::new(OutputState::default()) }
    }

    pub fn show(&self, event: &AgentEvent) {
        let Ok(mut state) = self.state.lock() else { return };
        let mut out = std::io::stdout().lock();
        let mut err = std::io::stderr().lock();
        // Write errors (a closed pipe) are not worth failing the run over.
        let _ = self.write_event(event, &mut state, &mut out, &mut err);
    }

    /// A subagent's event: each tool it starts is one indented line under the parent's `task`;
    /// the rest of its work comes back as the task's answer.
    pub fn show_nested(&self, event: &AgentEvent) {
        let AgentEvent::ToolExecutionStart { tool_name, look, .. } = event else { return };
        let Ok(mut state) = self.state.lock() else { return };
        let mut out = std::io::stdout().lock();
        let mut err = std::io::stderr().lock();
        let _ = end_line(&mut state, &mut out);
        let name = self.paint(&format!("↳ {}", visible_line(tool_name)), "36");
        let _ = writeln!(err, "  {name} {}", summary(look));
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
                let delta: Cow<str> = match std::mem::take(&mut state.held_cr) {
                    true => Cow::Owned(format!("\r{delta}")),
                    false => Cow::Borrowed(delta),
                };
                let (delta, held_cr) = match delta.strip_suffix('\r') {
                    Some(before) => (before, true),
                    None => (&*delta, false),
                };
                state.held_cr = held_cr;
                write!(out, "{}", visible(delta))?;
                out.flush()?;
                if !delta.is_empty() {
                    state.mid_line = !delta.ends_with('\n');
                }
            }
            AgentEvent::MessageUpdate { delta: StreamEvent::Thinking { delta, .. } } => {
                state.thinking = true;
                write!(err, "{}", self.paint(&visible(delta), "2"))?;
            }
            // One line of progress for a failed model call that is tried again.
            AgentEvent::MessageUpdate { delta: StreamEvent::Retry { attempt, max_retries, delay_ms, reason } } => {
                end_line(state, out)?;
                let seconds = *delay_ms as f64 / 1000.0;
                let line = format!(
                    "retrying {attempt}/{max_retries} in {seconds:.1} s: {}",
                    visible_line(&first_line(reason, 120))
                );
                writeln!(err, "  {}", self.paint(&line, "2"))?;
            }
            AgentEvent::ToolExecutionStart { tool_call_id, tool_name, look, .. } => {
                end_line(state, out)?;
                let name = visible_line(tool_name);
                writeln!(err, "{} {}", self.paint(&format!("● {name}"), "1;36"), summary(look))?;
                let changes_files = look.kind == ToolKind::Edit;
                if changes_files {
                    state.edits.insert(tool_call_id.clone());
                }
                if let Some(check) = self.check.as_deref().filter(|_| changes_files && !state.check_named) {
                    state.check_named = true;
                    let note = format!(
                        "  the edits are checked with `{}` (diagnostics.command)",
                        visible_line(&shorten(check, 100))
                    );
                    writeln!(err, "{}", self.paint(&note, "2"))?;
                }
            }
            // The list as the call left it, one step a line, under the call's line.
            AgentEvent::TodoUpdate { todos, .. } => {
                end_line(state, out)?;
                for todo in todos {
                    let (mark, code) = match todo.status {
                        TodoStatus::Completed => ("[x]", "2"),
                        TodoStatus::InProgress => ("[>]", "1"),
                        TodoStatus::Pending => ("[ ]", "0"),
                    };
                    let step = visible_line(&shorten(todo.content.trim(), 120)).into_owned();
                    writeln!(err, "  {}", self.paint(&format!("{mark} {step}"), code))?;
                }
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, result, is_error, .. } => {
                let changed_files = state.edits.remove(tool_call_id);
                let text = visible(&result.text()).into_owned();
                if *is_error {
                    writeln!(err, "  {}", self.paint(&format!("✗ {}", first_line(&text, 160)), "31"))?;
                } else if changed_files {
                    // What landed ("Edited a.txt as changed by the reviewer"), not a line count, and
                    // how many new problems the after-edit feedback told the model.
                    let told = match new_problems(&text) {
                        0 => String::new(),
                        1 => " · 1 new problem, told to the model".to_string(),
                        n => format!(" · {n} new problems, told to the model"),
                    };
                    writeln!(err, "  {}", self.paint(&format!("✓ {}{told}", first_line(&text, 160)), "2"))?;
                } else {
                    let lines = match text.lines().count() {
                        1 => "1 line".to_string(),
                        n => format!("{n} lines"),
                    };
                    writeln!(err, "  {}", self.paint(&format!("✓ {lines}"), "2"))?;
                }
            }
            // A run that failed before the model took a token has nothing to count: the failure's
            // line comes alone.
            AgentEvent::AgentEnd { reason: TurnEndReason::Error, usage, .. }
                if usage.input + usage.cache_read + usage.output == 0 =>
            {
                end_line(state, out)?;
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

/// How many new problems the after-edit feedback at the end of a tool result told.
fn new_problems(text: &str) -> usize {
    let Some((_, told)) = text.rsplit_once(reins_harness::NEW_PROBLEMS) else { return 0 };
    let lines: Vec<&str> = told.lines().filter(|line| !line.trim().is_empty()).collect();
    let more = lines.last().and_then(|last| last.strip_prefix("… and ")?.strip_suffix(" more.")?.parse::<usize>().ok());
    match more {
        Some(more) => lines.len() - 1 + more,
        None => lines.len(),
    }
}

fn end_line(state: &mut OutputState, out: &mut impl Write) -> std::io::Result<()> {
    if state.mid_line {
        writeln!(out)?;
        state.mid_line = false;
    }
    out.flush()
}

/// One line saying what a tool call is about, as its tool summed it up: its path, command or
/// pattern.
fn summary(look: &ToolLook) -> String {
    visible_line(&shorten(look.summary.trim(), 120)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(output: &HumanOutput, events: &[AgentEvent]) -> String {
        let (mut state, mut out, mut err) = (OutputState::default(), Vec::new(), Vec::new());
        for event in events {
            output.write_event(event, &mut state, &mut out, &mut err).unwrap();
        }
        String::from_utf8(err).unwrap()
    }

    fn edit(id: &str, text: &str) -> [AgentEvent; 2] {
        let result = reins_ai::ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "edit".into(),
            content: vec![reins_ai::Content::text(text)],
            is_error: false,
            details: None,
            timestamp: 0,
        };
        let args = serde_json::json!({"path": "src/lib.rs"});
        [
            AgentEvent::ToolExecutionStart {
                tool_call_id: id.into(),
                tool_name: "edit".into(),
                args,
                look: ToolLook { kind: ToolKind::Edit, summary: "src/lib.rs".into(), ..ToolLook::default() },
            },
            AgentEvent::ToolExecutionEnd { tool_call_id: id.into(), tool_name: "edit".into(), result, is_error: false },
        ]
    }

    #[test]
    fn the_check_command_is_named_at_the_first_edit_and_what_it_found_is_counted() {
        let output = HumanOutput { color: false, check: Some("cargo check".into()), state: Default::default() };
        let told = "Edited src/lib.rs: 1 replacement\n\nThe edit resulted in these new problems:\n\
                    src/lib.rs:2:5: error: a\nsrc/lib.rs:3:5: error: b";
        let [start, end] = edit("c1", told);
        let [again, quiet] = edit("c2", "Edited src/lib.rs: 1 replacement");
        expect_test::expect![[r#"
            ● edit src/lib.rs
              the edits are checked with `cargo check` (diagnostics.command)
              ✓ Edited src/lib.rs: 1 replacement · 2 new problems, told to the model
            ● edit src/lib.rs
              ✓ Edited src/lib.rs: 1 replacement
        "#]]
        .assert_eq(&shown(&output, &[start, end, again, quiet]));
        let many = format!("{}\n{}… and 25 more.", reins_harness::NEW_PROBLEMS, "x.rs:1:1: error: e\n".repeat(20));
        assert_eq!(new_problems(&many), 45);
        let unchecked = HumanOutput { color: false, check: None, state: Default::default() };
        let [start, end] = edit("c1", "Edited src/lib.rs");
        assert!(!shown(&unchecked, &[start, end]).contains("checked"));
    }

    #[test]
    fn a_result_is_counted_in_lines_one_or_more() {
        let output = HumanOutput { color: false, check: None, state: Default::default() };
        let end = |id: &str, text: &str| AgentEvent::ToolExecutionEnd {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            result: reins_ai::ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "read".into(),
                content: vec![reins_ai::Content::text(text)],
                is_error: false,
                details: None,
                timestamp: 0,
            },
            is_error: false,
        };
        assert_eq!(shown(&output, &[end("c1", "one"), end("c2", "one\ntwo")]), "  ✓ 1 line\n  ✓ 2 lines\n");
    }

    #[test]
    fn a_retry_is_one_line_of_progress() {
        let output = HumanOutput { color: false, check: None, state: Default::default() };
        let reason = "HTTP 503 from http://gpu:8000/v1/chat/completions: busy\nretry later".to_string();
        let retry = StreamEvent::Retry { attempt: 2, max_retries: 3, delay_ms: 1500, reason };
        assert_eq!(
            shown(&output, &[AgentEvent::MessageUpdate { delta: retry }]),
            "  retrying 2/3 in 1.5 s: HTTP 503 from http://gpu:8000/v1/chat/completions: busy\n"
        );
    }

    #[test]
    fn the_answer_and_tool_calls_cannot_steer_the_terminal() {
        let output = HumanOutput { color: false, check: None, state: Default::default() };
        let text =
            |delta: &str| AgentEvent::MessageUpdate { delta: StreamEvent::Text { index: 0, delta: delta.into() } };
        let (mut state, mut out, mut err) = (OutputState::default(), Vec::new(), Vec::new());
        // A line break split between two deltas stays a line break; a lone `\r` is shown.
        for delta in ["Done.\x1b[2J\x1b]52;c;eA==\x07 ok\r", "\nnext\rover\r", "x"] {
            output.write_event(&text(delta), &mut state, &mut out, &mut err).unwrap();
        }
        assert_eq!(String::from_utf8(out).unwrap(), "Done.^[[2J^[]52;c;eA==^G ok\r\nnext^Mover^Mx");
        let command = "rm -f a #\x1b[2K\x1b[1A\n● bash $ ls";
        let start = AgentEvent::ToolExecutionStart {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            args: serde_json::json!({"command": command}),
            look: ToolLook { kind: ToolKind::Execute, summary: format!("$ {command}"), ..ToolLook::default() },
        };
        assert_eq!(shown(&output, &[start]), "● bash $ rm -f a #^[[2K^[[1A^J● bash $ ls\n");
    }

    #[test]
    fn a_todo_list_is_a_line_a_step_and_cannot_steer_the_terminal() {
        let output = HumanOutput { color: false, check: None, state: Default::default() };
        let step = |content: &str, status| reins_agent::Todo { content: content.into(), status };
        let todos = vec![
            step("read the code", TodoStatus::Completed),
            step("fix\x1b[2J the bug\nnow", TodoStatus::InProgress),
            step("run the tests", TodoStatus::Pending),
        ];
        let update = AgentEvent::TodoUpdate { tool_call_id: "c".into(), todos };
        assert_eq!(
            shown(&output, &[update]),
            "  [x] read the code\n  [>] fix^[[2J the bug^Jnow\n  [ ] run the tests\n"
        );
    }
}
