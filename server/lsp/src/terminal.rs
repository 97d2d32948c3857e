//! The terminal face of `reins run`: the streamed answer on stdout, tool calls and usage on
//! stderr. Proposals are reviewed in [`crate::terminal_review`].

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use reins_agent::AgentEvent;
use reins_ai::{StreamEvent, first_line, shorten};
use serde_json::Value;

/// The tools whose result starts with what they changed, which the terminal shows.
const CHANGES_FILES: [&str; 3] = ["edit", "write", "apply_patch"];

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
            AgentEvent::ToolExecutionEnd { tool_name, result, is_error, .. } => {
                let text = result.text();
                if *is_error {
                    writeln!(err, "  {}", self.paint(&format!("✗ {}", first_line(&text, 160)), "31"))?;
                } else if CHANGES_FILES.contains(&tool_name.as_str()) {
                    // What landed ("Edited a.txt as changed by the reviewer"), not a line count.
                    writeln!(err, "  {}", self.paint(&format!("✓ {}", first_line(&text, 160)), "2"))?;
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
        // A tool of an MCP server: its arguments, on one line.
        _ if tool.starts_with("mcp__") => Some(serde_json::to_string(args).unwrap_or_default()),
        _ => field("path").map(str::to_string),
    };
    shorten(summary.as_deref().unwrap_or("").trim(), 120).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_summarize_to_their_subject() {
        assert_eq!(summarize_args("bash", &serde_json::json!({"command": "ls -la"})), "$ ls -la");
        assert_eq!(summarize_args("read", &serde_json::json!({"path": "src/a.rs"})), "src/a.rs");
        assert_eq!(summarize_args("grep", &serde_json::json!({"pattern": "fn main"})), "fn main");
        assert_eq!(
            summarize_args("mcp__everything__echo", &serde_json::json!({"message": "hi"})),
            r#"{"message":"hi"}"#
        );
    }
}
