//! `[[hooks]]` in a config file: commands reins runs on an event (see [`crate::hooks`]). Only
//! config files set them — the user's, and a trusted project's — never the editor's settings,
//! which a project can bring along (an `.exrc`, a workspace settings file).

use super::{LayerKind, Node, Reader, Value, canonical};
use crate::hooks::{DEFAULT_HOOK_TIMEOUT_SECS, HookConfig, HookEvent};

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
