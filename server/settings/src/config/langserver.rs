//! Language servers in the config sources: `[lsp_servers.NAME]` with `command`, `args`,
//! `file_patterns` and `root_markers`, laid over the ready-made entries for servers found on
//! `PATH` (pyright, typescript-language-server, gopls, clangd, rust-analyzer): an entry of a
//! ready-made server's name changes only what it sets, `enabled = false` turns one off. The
//! editor's settings may not name commands (a workspace's editor settings may come from the
//! repository), as with `[diagnostics] command`.

use reins_langserver::ServerConfig;

use super::{ConfigLayer, LayerKind, Node, Reader, canonical};

/// One language server as one source describes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LspServerLayer {
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub file_patterns: Option<Vec<String>>,
    pub root_markers: Option<Vec<String>>,
    /// `false` turns off a server a lower source (or the ready-made list) has.
    pub enabled: bool,
}

impl Reader<'_> {
    pub(super) fn lsp_servers(&mut self, path: &str, node: &Node, into: &mut Vec<(String, LspServerLayer)>) {
        for (name, value) in self.table(path, node).unwrap_or_default() {
            let key = format!("{path}.{name}");
            let mut server = LspServerLayer { enabled: true, ..LspServerLayer::default() };
            for (field, value) in self.table(&key, value).unwrap_or_default() {
                let key = format!("{key}.{field}");
                match canonical(field).as_str() {
                    "command" | "args" if self.kind == LayerKind::Editor => {
                        self.error(&key, value, "editor settings cannot run commands; set it in config.toml")
                    }
                    "command" => server.command = self.string(&key, value),
                    "args" => server.args = self.strings(&key, value),
                    "file_patterns" => server.file_patterns = self.strings(&key, value),
                    "root_markers" => server.root_markers = self.strings(&key, value),
                    "enabled" => server.enabled = self.boolean(&key, value).unwrap_or(true),
                    _ => self.unknown(&key, value),
                }
            }
            into.retain(|(known, _)| known != name);
            into.push((name.clone(), server));
        }
    }
}

/// The servers in force: `ready_made` (those found on `PATH`), then each layer's entries in
/// order. A new server needs a `command` and `file_patterns`; one without is left out.
pub(crate) fn lsp_servers<'a>(
    ready_made: Vec<ServerConfig>,
    layers: impl IntoIterator<Item = &'a ConfigLayer>,
) -> Vec<ServerConfig> {
    let mut servers = ready_made;
    for layer in layers {
        for (name, entry) in &layer.lsp_servers {
            let known = servers.iter().position(|server| &server.name == name);
            if !entry.enabled {
                servers.retain(|server| &server.name != name);
                continue;
            }
            let server = match known {
                Some(index) => &mut servers[index],
                None => {
                    let (Some(command), Some(_)) = (&entry.command, &entry.file_patterns) else {
                        tracing::warn!("lsp_servers.{name} needs a command and file_patterns; it was left out");
                        continue;
                    };
                    servers.push(ServerConfig {
                        name: name.clone(),
                        command: command.clone(),
                        args: Vec::new(),
                        file_patterns: Vec::new(),
                        root_markers: Vec::new(),
                    });
                    servers.last_mut().expect("just pushed")
                }
            };
            if let Some(command) = &entry.command {
                server.command = command.clone();
            }
            if let Some(args) = &entry.args {
                server.args = args.clone();
            }
            if let Some(patterns) = &entry.file_patterns {
                server.file_patterns = patterns.clone();
            }
            if let Some(markers) = &entry.root_markers {
                server.root_markers = markers.clone();
            }
        }
    }
    servers
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{ConfigLayer, LayerKind};

    fn layer(text: &str, kind: LayerKind) -> (ConfigLayer, Vec<String>) {
        let (layer, diagnostics) = ConfigLayer::from_toml(Path::new("c.toml"), text, kind);
        (layer, diagnostics.into_iter().map(|d| format!("{}: {}", d.key, d.message)).collect())
    }

    fn summary(servers: &[ServerConfig]) -> Vec<String> {
        servers
            .iter()
            .map(|s| format!("{} {} {:?} {:?} {:?}", s.name, s.command, s.args, s.file_patterns, s.root_markers))
            .collect()
    }

    #[test]
    fn entries_change_ready_made_servers_add_new_ones_and_turn_them_off() {
        let ready_made = reins_langserver::ready_made(|command| command == "pyright-langserver" || command == "clangd");
        let (user, diagnostics) = layer(
            "[lsp_servers.pyright]\ncommand = \"/opt/pyright-langserver\"\n\n\
             [lsp_servers.clangd]\nenabled = false\n\n\
             [lsp_servers.ruby]\ncommand = \"ruby-lsp\"\nfile_patterns = [\"*.rb\"]\nroot_markers = [\"Gemfile\"]\n\n\
             [lsp_servers.half]\nfile_patterns = [\"*.x\"]\n",
            LayerKind::User,
        );
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        expect_test::expect![[r#"
            [
                "pyright /opt/pyright-langserver [\"--stdio\"] [\"*.py\", \"*.pyi\"] [\"pyproject.toml\", \"pyrightconfig.json\", \"setup.py\", \"setup.cfg\", \"requirements.txt\"]",
                "ruby ruby-lsp [] [\"*.rb\"] [\"Gemfile\"]",
            ]
        "#]]
        .assert_debug_eq(&summary(&lsp_servers(ready_made, [&user])));
    }

    #[test]
    fn editor_settings_cannot_name_commands() {
        let (editor, diagnostics) =
            layer("[lsp_servers.evil]\ncommand = \"sh\"\nfile_patterns = [\"*.py\"]\n", LayerKind::Editor);
        assert_eq!(
            diagnostics,
            ["lsp_servers.evil.command: editor settings cannot run commands; set it in config.toml"]
        );
        assert!(lsp_servers(Vec::new(), [&editor]).is_empty());
    }
}
