//! Hooks: the user's commands run on the agent's events, in the spirit of Claude Code's and
//! Codex's — before a tool call (which a non-zero exit blocks, its stderr the reason the model
//! gets), after one, after an edit lands (to format the file), at the end of a run. Each gets the
//! event as JSON on stdin and runs enclosed like `bash` (same sandbox, no keys in its
//! environment); one that hangs is killed at its timeout and the run goes on.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reins_ai::{ToolCall, ToolResultMessage};
use reins_tools::{HookRun, Workspace, run_hook};
use serde_json::{Value, json};

use reins_settings::{HookConfig, HookEvent, LiveSettings};

/// The reason a blocking hook gives is cut at this many characters.
const MAX_REASON_CHARS: usize = 2000;

/// Runs a session's hooks: those of the settings in force at each event.
pub(crate) struct HookRunner {
    pub settings: LiveSettings,
    pub workspace: Arc<dyn Workspace>,
    pub session_id: String,
}

impl HookRunner {
    /// The `before_tool` verdict: `Some(reason)` when a hook blocks the call.
    pub async fn before_tool(&self, call: &ToolCall) -> Option<String> {
        let event = json!({"tool_name": call.name, "tool_input": call.arguments});
        for (hook, run) in self.run(HookEvent::BeforeTool, Some(&call.name), event).await {
            match run {
                Some(run) if !run.timed_out && run.code != Some(0) => {
                    let said = run.stderr.trim();
                    let reason = match said.is_empty() {
                        true => format!("a before_tool hook (`{}`) blocked this call", hook.command),
                        false => said.chars().take(MAX_REASON_CHARS).collect(),
                    };
                    return Some(reason);
                }
                _ => {}
            }
        }
        None
    }

    pub async fn after_tool(&self, call: &ToolCall, result: &ToolResultMessage) {
        let output: Vec<&str> = result
            .content
            .iter()
            .filter_map(|block| match block {
                reins_ai::Content::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let output = output.join("\n");
        let event = json!({
            "tool_name": call.name,
            "tool_input": call.arguments,
            "tool_output": output,
            "is_error": result.is_error,
        });
        self.run(HookEvent::AfterTool, Some(&call.name), event).await;
    }

    /// After `call` changed `files` (absolute paths).
    pub async fn after_edit(&self, call: &ToolCall, files: &[PathBuf]) {
        let files: Vec<String> = files.iter().map(|path| path.display().to_string()).collect();
        let event = json!({"tool_name": call.name, "files": files});
        self.run(HookEvent::AfterEdit, Some(&call.name), event).await;
    }

    pub async fn run_end(&self, reason: &str) {
        self.run(HookEvent::RunEnd, None, json!({"reason": reason})).await;
    }

    /// Runs, one after another, the hooks of `event` that match `tool`, each given `fields`
    /// and the event's name, session and working directory; answers each with how it ended
    /// (`None`: it could not start).
    async fn run(&self, event: HookEvent, tool: Option<&str>, mut fields: Value) -> Vec<(HookConfig, Option<HookRun>)> {
        let settings = self.settings.get();
        let hooks: Vec<HookConfig> =
            settings.hooks.iter().filter(|hook| hook.event == event && hook.matches(tool)).cloned().collect();
        if hooks.is_empty() {
            return Vec::new();
        }
        let cwd = self.workspace.cwd();
        if let Value::Object(map) = &mut fields {
            map.insert("event".into(), json!(event.as_str()));
            map.insert("session_id".into(), json!(self.session_id));
            map.insert("cwd".into(), json!(cwd.display().to_string()));
        }
        let stdin = fields.to_string().into_bytes();
        let policy = settings.exec_policy(std::env::vars_os());
        let roots = self.workspace.roots();
        let mut done = Vec::new();
        for hook in hooks {
            let timeout = Duration::from_secs(hook.timeout_secs.min(settings.max_timeout_secs.max(1)));
            let run = match run_hook(&hook.command, &stdin, &cwd, &policy, &roots, timeout).await {
                Ok(run) => {
                    if run.timed_out {
                        tracing::warn!(
                            "{} hook `{}` was killed at its timeout of {timeout:?}",
                            event.as_str(),
                            hook.command
                        );
                    }
                    Some(run)
                }
                Err(err) => {
                    tracing::warn!("{} hook `{}` could not start: {err}", event.as_str(), hook.command);
                    None
                }
            };
            done.push((hook, run));
        }
        done
    }
}
