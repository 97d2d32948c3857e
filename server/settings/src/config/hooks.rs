//! `[[hooks]]` in a config file: commands reins runs on an event (the harness runs them). Only
//! config files set them — the user's, and a trusted project's — never the editor's settings,
//! which a project can bring along (an `.exrc`, a workspace settings file).

use reins_review::ToolPattern;

use super::{LayerKind, Node, Reader, Value, canonical};

/// A hook's timeout when its config gives none, in seconds (Claude Code's too).
pub const DEFAULT_HOOK_TIMEOUT_SECS: u64 = 60;

/// One `[[hooks]]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct HookConfig {
    pub event: HookEvent,
    /// Tool names it applies to: globs, `|` between alternatives (`edit|write`, `mcp__*`); none
    /// or `*`: all. Only tool events look at it.
    pub matcher: Option<String>,
    /// A shell command (`bash -c`).
    pub command: String,
    pub timeout_secs: u64,
    /// The config file that set it.
    pub origin: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    BeforeTool,
    AfterTool,
    AfterEdit,
    RunEnd,
}

impl HookEvent {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "before_tool" => Self::BeforeTool,
            "after_tool" => Self::AfterTool,
            "after_edit" => Self::AfterEdit,
            "run_end" => Self::RunEnd,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::BeforeTool => "before_tool",
            Self::AfterTool => "after_tool",
            Self::AfterEdit => "after_edit",
            Self::RunEnd => "run_end",
        }
    }
}

impl HookConfig {
    /// Whether it runs for a call of `tool` (`None`: an event of no tool).
    pub fn matches(&self, tool: Option<&str>) -> bool {
        let (Some(matcher), Some(tool)) = (self.matcher.as_deref().map(str::trim), tool) else { return true };
        matcher.is_empty()
            || matcher.split('|').map(str::trim).any(|glob| ToolPattern::new(glob).is_ok_and(|glob| glob.matches(tool)))
    }
}

impl Reader<'_> {
    pub(super) fn hooks(&mut self, key: &str, node: &Node, hooks: &mut Vec<HookConfig>) {
        if self.kind == LayerKind::Editor {
            self.error(key, node, "hooks are set only in config.toml (the user's, or a trusted project's)");
            return;
        }
        let Value::List(items) = &node.value else {
            self.error(key, node, "expected a list of hook tables ([[hooks]])");
            return;
        };
        for (index, item) in items.iter().enumerate() {
            let path = format!("{key}[{index}]");
            let Some(fields) = self.table(&path, item) else { continue };
            let (mut event, mut matcher, mut command, mut timeout) = (None, None, None, DEFAULT_HOOK_TIMEOUT_SECS);
            for (field, value) in fields {
                let field_path = format!("{path}.{field}");
                match canonical(field).as_str() {
                    "event" => match self.string(&field_path, value).as_deref().map(HookEvent::parse) {
                        Some(Some(parsed)) => event = Some(parsed),
                        Some(None) => {
                            self.error(&field_path, value, "expected before_tool, after_tool, after_edit or run_end")
                        }
                        None => {}
                    },
                    "matcher" => matcher = self.string(&field_path, value),
                    "command" => command = self.string(&field_path, value).filter(|c| !c.trim().is_empty()),
                    "timeout" => timeout = self.uint(&field_path, value).filter(|t| *t > 0).unwrap_or(timeout),
                    _ => self.unknown(&field_path, value),
                }
            }
            match (event, command) {
                (Some(event), Some(command)) => hooks.push(HookConfig {
                    event,
                    matcher,
                    command,
                    timeout_secs: timeout,
                    origin: self.origin.clone(),
                }),
                _ => self.error(&path, item, "a hook needs an event and a command; it was ignored"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(matcher: Option<&str>) -> HookConfig {
        HookConfig {
            event: HookEvent::BeforeTool,
            matcher: matcher.map(str::to_string),
            command: "true".into(),
            timeout_secs: 1,
            origin: String::new(),
        }
    }

    #[test]
    fn matchers_are_globs_with_alternatives() {
        assert!(hook(None).matches(Some("bash")) && hook(Some("*")).matches(Some("bash")));
        assert!(hook(Some("edit|write")).matches(Some("write")));
        assert!(!hook(Some("edit|write")).matches(Some("bash")));
        assert!(hook(Some("mcp__*")).matches(Some("mcp__docs__search")));
        assert!(hook(Some("bash")).matches(None), "an event of no tool runs every hook of it");
    }
}
