//! The MCP servers in force: the servers of every config source, a later source's server
//! replacing an earlier one of the same name, resolved into what reins-mcp starts (variables
//! looked up in the snapshot of the environment taken at load).

use std::collections::BTreeMap;
use std::path::Path;

use reins_ai::ApiKey;
use reins_mcp::{DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, ServerConfig, Transport};

use crate::config::{ConfigDiagnostic, ConfigLayer, McpServerLayer, McpTransportLayer, Source};

/// One MCP server in force, and where it was configured.
struct McpServerSetting<'a> {
    name: &'a str,
    source: &'a Source,
    server: &'a McpServerLayer,
}

/// The servers of `layers`, in order, resolved: each source's servers replace earlier ones of
/// the same name, and `enabled = false` removes one. `env` is the snapshot of the variables
/// reins read at load; one a server names that is not set is left out and reported.
pub(crate) fn mcp_servers<'a>(
    layers: impl IntoIterator<Item = (&'a Source, &'a ConfigLayer)>,
    env: &BTreeMap<String, String>,
    home: &Path,
    diagnostics: &mut Vec<ConfigDiagnostic>,
) -> Vec<ServerConfig> {
    let mut servers: Vec<McpServerSetting> = Vec::new();
    for (source, layer) in layers {
        for (name, server) in &layer.mcp_servers {
            servers.retain(|known| known.name != name);
            if server.enabled && server.transport.is_some() {
                servers.push(McpServerSetting { name, source, server });
            }
        }
    }
    servers.iter().filter_map(|server| server.resolve(env, home, diagnostics)).collect()
}

/// The variables the servers of `layer` pass through: looked up once, at load.
pub(crate) fn mcp_variables(layer: &ConfigLayer) -> impl Iterator<Item = &String> {
    layer.mcp_servers.iter().flat_map(|(_, server)| match &server.transport {
        Some(McpTransportLayer::Stdio { env_vars, .. }) => env_vars.iter().collect::<Vec<_>>(),
        Some(McpTransportLayer::Http { bearer_token_env_var, .. }) => bearer_token_env_var.iter().collect(),
        None => Vec::new(),
    })
}

impl McpServerSetting<'_> {
    fn resolve(
        &self,
        env: &BTreeMap<String, String>,
        home: &Path,
        diagnostics: &mut Vec<ConfigDiagnostic>,
    ) -> Option<ServerConfig> {
        let mut missing = |key: String, var: &str| {
            diagnostics.push(ConfigDiagnostic {
                origin: self.source.to_string(),
                line: None,
                key,
                message: format!("{var} is not set, so the server starts without it"),
            })
        };
        let name = self.name;
        let transport = match self.server.transport.clone()? {
            McpTransportLayer::Stdio { command, args, env: own, env_vars, cwd } => {
                let mut vars: Vec<(String, String)> = Vec::new();
                for var in env_vars {
                    match env.get(&var) {
                        Some(value) => vars.push((var, value.clone())),
                        None => missing(format!("mcp_servers.{name}.env_vars"), &var),
                    }
                }
                // The server's own `env` wins over a variable passed through.
                vars.retain(|(var, _)| !own.iter().any(|(name, _)| name == var));
                vars.extend(own);
                let cwd = cwd.map(|cwd| match cwd.strip_prefix("~/") {
                    Some(rest) => home.join(rest),
                    None => cwd.into(),
                });
                Transport::Stdio { command, args, env: vars, cwd }
            }
            McpTransportLayer::Http { url, bearer_token_env_var, headers } => {
                let bearer_token = bearer_token_env_var.and_then(|var| match env.get(&var) {
                    Some(token) => Some(ApiKey::new(token.clone())),
                    None => {
                        missing(format!("mcp_servers.{name}.bearer_token_env_var"), &var);
                        None
                    }
                });
                Transport::Http { url, bearer_token, headers }
            }
        };
        Some(ServerConfig {
            name: self.name.to_string(),
            transport,
            startup_timeout: self.server.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT),
            tool_timeout: self.server.tool_timeout.unwrap_or(DEFAULT_TOOL_TIMEOUT),
            enabled_tools: self.server.enabled_tools.clone(),
            disabled_tools: self.server.disabled_tools.clone(),
            exposure: self.server.exposure,
            origin: self.source.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Settings;

    /// Settings for a project at `dir/w`, with `dir/home` as REINS_HOME, the files given
    /// (relative to `dir`) and the environment `vars`.
    fn load(dir: &Path, files: &[(&str, &str)], vars: &[(&str, &str)], trusted: bool) -> Settings {
        for (path, text) in files {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::create_dir_all(dir.join("home")).unwrap();
        std::fs::create_dir_all(dir.join("w")).unwrap();
        if trusted {
            std::fs::write(dir.join("home/trusted-workspaces"), format!("{}\n", dir.join("w").display())).unwrap();
        }
        let home = dir.join("home").display().to_string();
        let var = |name: &str| match name {
            "REINS_HOME" => Some(home.clone()),
            _ => vars.iter().find(|(var, _)| *var == name).map(|(_, value)| value.to_string()),
        };
        Settings::load(var, Some(&dir.join("w")))
    }

    fn servers(settings: &Settings) -> Vec<String> {
        settings
            .mcp_servers
            .iter()
            .map(|server| format!("{} = {} ({:?})", server.name, server.transport.describe(), server.transport))
            .collect()
    }

    const USER: &str = r#"
[mcp_servers.everything]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-everything"]
env = { MODE = "user" }
env_vars = ["GITHUB_TOKEN", "NOT_SET"]

[mcp_servers.docs]
url = "https://example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"

[mcp_servers.gone]
command = "old-server"
"#;

    #[test]
    fn sources_layer_by_name_and_variables_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("home/config.toml", USER),
            (
                "w/.mcp.json",
                r#"{"mcpServers": {"fs": {"command": "fs-server", "args": ["${HOME}"]}, "docs": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#,
            ),
            ("w/.reins/config.toml", "[mcp_servers.gone]\nenabled = false\n"),
        ];
        let vars = [("GITHUB_TOKEN", "ghp-secret"), ("DOCS_TOKEN", "docs-secret"), ("HOME", "/home/u")];
        let settings = load(dir.path(), &files, &vars, true);
        assert_eq!(
            servers(&settings),
            [
                r#"everything = npx -y @modelcontextprotocol/server-everything (Stdio { command: "npx", args: ["-y", "@modelcontextprotocol/server-everything"], env: ["GITHUB_TOKEN", "MODE"], cwd: None })"#,
                // The project's `docs` replaces the user's (and JSON objects keep their order).
                r#"fs = fs-server /home/u (Stdio { command: "fs-server", args: ["/home/u"], env: [], cwd: None })"#,
                r#"docs = http://127.0.0.1:9/mcp (Http { url: "http://127.0.0.1:9/mcp", bearer_token: None, headers: [] })"#,
            ]
        );
        assert_eq!(settings.mcp_servers[0].origin, dir.path().join("home/config.toml").display().to_string());
        assert_eq!(settings.mcp_servers[2].origin, dir.path().join("w/.mcp.json").display().to_string());
        let Transport::Stdio { env, .. } = &settings.mcp_servers[0].transport else { panic!() };
        assert!(env.contains(&("GITHUB_TOKEN".to_string(), "ghp-secret".to_string())));
        let problems: Vec<String> = settings.diagnostics.iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [format!(
                "{}: mcp_servers.everything.env_vars: NOT_SET is not set, so the server starts without it",
                dir.path().join("home/config.toml").display()
            )]
        );
        // The bearer token's variable is a key: tools never see it.
        let tool_env = settings.tool_env([("DOCS_TOKEN".into(), "docs-secret".into()), ("LANG".into(), "C".into())]);
        assert_eq!(tool_env, [("LANG".into(), "C".into())]);
    }

    #[test]
    fn the_bearer_token_comes_from_its_variable_and_editor_servers_come_last() {
        let dir = tempfile::tempdir().unwrap();
        let settings = load(dir.path(), &[("home/config.toml", USER)], &[("DOCS_TOKEN", "docs-secret")], false);
        let Transport::Http { bearer_token, .. } = &settings.mcp_servers[1].transport else { panic!() };
        assert_eq!(bearer_token.as_ref().map(ApiKey::expose), Some("docs-secret"));
        assert!(!format!("{settings:?}").contains("docs-secret"), "Debug shows no token");

        let editor = settings.with_editor_settings(&serde_json::json!({"mcpServers": {
            "docs": {"command": "docs-local"}, "extra": {"url": "http://127.0.0.1:1/mcp"}
        }}));
        let names: Vec<(&str, &str)> =
            editor.mcp_servers.iter().map(|server| (server.name.as_str(), server.origin.as_str())).collect();
        assert_eq!(
            names[..],
            [
                ("everything", names[0].1),
                ("gone", names[1].1),
                ("docs", "editor settings"),
                ("extra", "editor settings")
            ]
        );
    }

    #[test]
    fn an_untrusted_projects_mcp_json_is_ignored_and_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let files = [("w/.mcp.json", r#"{"mcpServers": {"fs": {"command": "fs-server"}}}"#)];
        let settings = load(dir.path(), &files, &[], false);
        assert!(settings.mcp_servers.is_empty());
        let problems: Vec<String> = settings.diagnostics.iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains(".mcp.json: (file): ignored: this workspace is not trusted"), "{problems:?}");
    }
}
