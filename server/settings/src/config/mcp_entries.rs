//! MCP servers in the config sources: `[mcp_servers.NAME]` in a config file (Codex's shape),
//! `mcpServers` in the editor's settings, and a trusted project's `.mcp.json` (the format Claude
//! Code and others share: `{"mcpServers": {NAME: {command, args, env} | {type: "http", url,
//! headers}}}`, with `${VAR}` and `${VAR:-default}` in its strings).
//!
//! Only the user's own config.toml may pass variables of reins's environment to a server
//! (`env_vars`, `bearer_token_env_var`); a project's `.mcp.json` may name variables, but not
//! ones that look secret, as with `[tools] pass_env`.

use std::path::Path;
use std::time::Duration;

use reins_mcp::Exposure;

use super::{ConfigDiagnostic, ConfigLayer, LayerKind, Node, Reader, Value, canonical, json_node};

/// One MCP server as one source describes it. A later source's server of the same name replaces
/// it whole.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerLayer {
    /// `None` only with `enabled = false`, which turns off a server a lower source configured.
    pub transport: Option<McpTransportLayer>,
    pub startup_timeout: Option<Duration>,
    pub tool_timeout: Option<Duration>,
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Vec<String>,
    /// `exposure = "direct" | "deferred"`.
    pub exposure: Option<Exposure>,
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum McpTransportLayer {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        /// Variables passed through from reins's environment.
        env_vars: Vec<String>,
        cwd: Option<String>,
    },
    Http {
        url: String,
        /// The variable holding the bearer token.
        bearer_token_env_var: Option<String>,
        headers: Vec<(String, String)>,
    },
}

/// What the fields of one server entry said, before they are checked together.
#[derive(Default)]
struct Fields {
    kind: Option<String>,
    command: Option<String>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    env_vars: Vec<String>,
    cwd: Option<String>,
    url: Option<String>,
    bearer_token_env_var: Option<String>,
    headers: Vec<(String, String)>,
}

impl ConfigLayer {
    /// Reads a project's `.mcp.json`; `var` looks up the variables its strings name.
    pub fn from_mcp_json(
        path: &Path,
        text: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> (Self, Vec<ConfigDiagnostic>) {
        let origin = path.display().to_string();
        let mut diagnostics = Vec::new();
        let problem = |line: Option<usize>, key: &str, message: String| ConfigDiagnostic {
            origin: origin.clone(),
            line,
            key: key.to_string(),
            message,
        };
        let mut value: serde_json::Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(err) => {
                let message = err.to_string();
                diagnostics.push(problem(Some(err.line()), "(syntax)", message));
                return (Self::default(), diagnostics);
            }
        };
        let Some(servers) = value.get_mut("mcpServers") else {
            diagnostics.push(problem(None, "(root)", "no `mcpServers` object; nothing to read".into()));
            return (Self::default(), diagnostics);
        };
        expand_vars(servers, "mcpServers", &var, &mut |key, message| diagnostics.push(problem(None, &key, message)));
        let root = json_node(servers);
        let mut reader = Reader { origin: origin.clone(), kind: LayerKind::Project, diagnostics: &mut diagnostics };
        let mut layer = Self::default();
        for (name, node) in reader.table("mcpServers", &root).unwrap_or_default() {
            if let Some(server) = reader.mcp_server(&format!("mcpServers.{name}"), node) {
                layer.mcp_servers.push((name.clone(), server));
            }
        }
        (layer, diagnostics)
    }
}

impl Reader<'_> {
    /// `[mcp_servers]`: one table per server, by name.
    pub(super) fn mcp_servers(&mut self, path: &str, node: &Node, into: &mut Vec<(String, McpServerLayer)>) {
        for (name, value) in self.table(path, node).unwrap_or_default() {
            if name.trim().is_empty() {
                self.error(path, value, "a server needs a name");
                continue;
            }
            if let Some(server) = self.mcp_server(&format!("{path}.{name}"), value) {
                into.retain(|(known, _)| known != name);
                into.push((name.clone(), server));
            }
        }
    }

    fn mcp_server(&mut self, path: &str, node: &Node) -> Option<McpServerLayer> {
        let entries = self.table(path, node)?;
        let mut fields = Fields::default();
        let mut server = McpServerLayer {
            transport: None,
            startup_timeout: None,
            tool_timeout: None,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            exposure: None,
            enabled: true,
        };
        let own_config = self.kind == LayerKind::User;
        for (field, value) in entries {
            let key = format!("{path}.{field}");
            match canonical(field).as_str() {
                "type" | "transport" => fields.kind = self.string(&key, value),
                "command" => fields.command = self.string(&key, value),
                "args" => fields.args = self.words(&key, value),
                "env" => fields.env = self.string_map(&key, value),
                "cwd" => fields.cwd = self.string(&key, value),
                "url" => fields.url = self.string(&key, value),
                "http_headers" | "headers" => fields.headers = self.string_map(&key, value),
                "env_vars" | "bearer_token_env_var" if !own_config => self.error(
                    &key,
                    value,
                    "only your own config.toml can pass variables of reins's environment to a server",
                ),
                "env_vars" => fields.env_vars = self.strings(&key, value).unwrap_or_default(),
                "bearer_token_env_var" => fields.bearer_token_env_var = self.string(&key, value),
                "startup_timeout_sec" => server.startup_timeout = self.seconds(&key, value),
                "tool_timeout_sec" => server.tool_timeout = self.seconds(&key, value),
                "enabled_tools" => server.enabled_tools = self.strings(&key, value),
                "disabled_tools" => server.disabled_tools = self.strings(&key, value).unwrap_or_default(),
                "enabled" => server.enabled = self.boolean(&key, value).unwrap_or(true),
                "exposure" => match self.string(&key, value).as_deref() {
                    Some("direct") => server.exposure = Some(Exposure::Direct),
                    Some("deferred") => server.exposure = Some(Exposure::Deferred),
                    Some(other) => {
                        self.error(&key, value, &format!("expected \"direct\" or \"deferred\", found {other:?}"))
                    }
                    None => {}
                },
                _ => self.unknown(&key, value),
            }
        }
        // `enabled = false` alone turns a server off; it needs nothing else.
        if server.enabled || fields.command.is_some() || fields.url.is_some() {
            server.transport = self.mcp_transport(path, node, fields);
        }
        if server.transport.is_none() && server.enabled {
            return None;
        }
        Some(server)
    }

    /// The transport the fields describe, or `None` (reported) when they do not add up.
    fn mcp_transport(&mut self, path: &str, node: &Node, fields: Fields) -> Option<McpTransportLayer> {
        let Fields { kind, command, args, env, env_vars, cwd, url, bearer_token_env_var, headers } = fields;
        let kind = kind.map(|kind| canonical(&kind).replace('-', "_"));
        let error = |reader: &mut Self, message: &str| {
            reader.error(path, node, message);
            None
        };
        match (kind.as_deref(), command, url) {
            (Some("sse"), _, _) => error(
                self,
                "the SSE transport is not supported; give the server's streamable HTTP endpoint as `url` (often …/mcp)",
            ),
            (Some(other), _, _) if !["stdio", "http", "streamable_http"].contains(&other) => {
                error(self, &format!("unknown transport type {other:?}; expected \"stdio\" or \"http\""))
            }
            (_, Some(_), Some(_)) => {
                error(self, "set either `command` (a stdio server) or `url` (a streamable HTTP server), not both")
            }
            (Some("stdio") | None, Some(command), None) => {
                Some(McpTransportLayer::Stdio { command, args, env, env_vars, cwd })
            }
            (Some("http" | "streamable_http") | None, None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return error(self, &format!("`url` must start with http:// or https://, found {url:?}"));
                }
                Some(McpTransportLayer::Http { url, bearer_token_env_var, headers })
            }
            (Some("stdio"), None, _) => error(self, "a stdio server needs a `command`"),
            (Some(_), _, None) => error(self, "an HTTP server needs a `url`"),
            (None, None, None) => {
                error(self, "a server needs a `command` (a stdio server) or a `url` (a streamable HTTP server)")
            }
            _ => error(self, "set either `command` (a stdio server) or `url` (a streamable HTTP server)"),
        }
    }

    /// A list of strings taken as they are (an argument may be empty or have spaces).
    fn words(&mut self, path: &str, node: &Node) -> Vec<String> {
        let Value::List(items) = &node.value else {
            self.mismatch::<()>(path, node, "a list of strings");
            return Vec::new();
        };
        let mut words = Vec::new();
        for (index, item) in items.iter().enumerate() {
            match &item.value {
                Value::Str(word) => words.push(word.clone()),
                _ => {
                    self.mismatch::<()>(&format!("{path}[{index}]"), item, "a string");
                }
            }
        }
        words
    }

    /// A table of strings (`env`, `http_headers`), names as written.
    fn string_map(&mut self, path: &str, node: &Node) -> Vec<(String, String)> {
        let mut map = Vec::new();
        for (name, value) in self.table(path, node).unwrap_or_default() {
            match &value.value {
                Value::Str(text) => map.push((name.clone(), text.clone())),
                Value::Int(n) => map.push((name.clone(), n.to_string())),
                Value::Bool(b) => map.push((name.clone(), b.to_string())),
                _ => {
                    self.mismatch::<()>(&format!("{path}.{name}"), value, "a string");
                }
            }
        }
        map
    }

    fn seconds(&mut self, path: &str, node: &Node) -> Option<Duration> {
        match self.float(path, node)? {
            0.0 => {
                self.error(path, node, "expected a number of seconds above 0");
                None
            }
            seconds => Some(Duration::from_secs_f64(seconds.min(86_400.0))),
        }
    }
}

/// Replaces `${VAR}` and `${VAR:-default}` in every string under `value`. A variable whose name
/// looks secret is not expanded (a project's file may not pass secrets), nor is one that is not
/// set and has no default; each is reported.
fn expand_vars(
    value: &mut serde_json::Value,
    path: &str,
    var: &impl Fn(&str) -> Option<String>,
    report: &mut impl FnMut(String, String),
) {
    match value {
        serde_json::Value::String(text) if text.contains("${") => *text = expand(text, path, var, report),
        serde_json::Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                expand_vars(item, &format!("{path}[{index}]"), var, report);
            }
        }
        serde_json::Value::Object(fields) => {
            for (name, item) in fields.iter_mut() {
                expand_vars(item, &format!("{path}.{name}"), var, report);
            }
        }
        _ => {}
    }
}

fn expand(
    text: &str,
    path: &str,
    var: &impl Fn(&str) -> Option<String>,
    report: &mut impl FnMut(String, String),
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        if reins_tools::looks_secret(name) {
            report(
                path.to_string(),
                format!(
                    "${{{name}}} names a secret, which a project's file may not pass to a server; it was left empty \
                     (configure the server in your own config.toml with env_vars or bearer_token_env_var)"
                ),
            );
        } else {
            match var(name).or(default.map(str::to_string)) {
                Some(value) => out.push_str(&value),
                None => {
                    report(path.to_string(), format!("${{{name}}} is not set and has no default; it was left empty"))
                }
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check(kind: LayerKind, toml: &str, expected: Expect) {
        let (layer, diagnostics) = ConfigLayer::from_toml(Path::new("/u/config.toml"), toml, kind);
        let mut out: Vec<String> =
            layer.mcp_servers.iter().map(|(name, server)| format!("{name}: {server:?}")).collect();
        out.extend(diagnostics.iter().map(ToString::to_string));
        expected.assert_eq(&out.join("\n"));
    }

    #[test]
    fn codex_shaped_servers() {
        check(
            LayerKind::User,
            r#"
[mcp_servers.everything]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-everything", ""]
env = { TOKEN = "t-1", PORT = 8080 }
env_vars = ["GITHUB_TOKEN"]
cwd = "/srv"
startup_timeout_sec = 2.5
tool_timeout_sec = 60
enabled_tools = ["echo"]

[mcp_servers.docs]
url = "https://example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"
http_headers = { "X-Team" = "core" }
disabled_tools = ["delete"]
exposure = "deferred"

[mcp_servers.off]
enabled = false
"#,
            expect![[r#"
                everything: McpServerLayer { transport: Some(Stdio { command: "npx", args: ["-y", "@modelcontextprotocol/server-everything", ""], env: [("TOKEN", "t-1"), ("PORT", "8080")], env_vars: ["GITHUB_TOKEN"], cwd: Some("/srv") }), startup_timeout: Some(2.5s), tool_timeout: Some(60s), enabled_tools: Some(["echo"]), disabled_tools: [], exposure: None, enabled: true }
                docs: McpServerLayer { transport: Some(Http { url: "https://example.com/mcp", bearer_token_env_var: Some("DOCS_TOKEN"), headers: [("X-Team", "core")] }), startup_timeout: None, tool_timeout: None, enabled_tools: None, disabled_tools: ["delete"], exposure: Some(Deferred), enabled: true }
                off: McpServerLayer { transport: None, startup_timeout: None, tool_timeout: None, enabled_tools: None, disabled_tools: [], exposure: None, enabled: false }"#]],
        );
    }

    #[test]
    fn bad_servers_are_named_with_their_line() {
        check(
            LayerKind::User,
            r#"
[mcp_servers.both]
command = "x"
url = "http://h/mcp"

[mcp_servers.neither]
args = ["a"]

[mcp_servers.legacy]
type = "sse"
url = "http://h/sse"

[mcp_servers.ftp]
url = "ftp://h/mcp"

[mcp_servers.typo]
comand = "x"
tool_timeout_sec = 0
exposure = "lazy"
"#,
            expect![[r#"
                /u/config.toml:2: mcp_servers.both: set either `command` (a stdio server) or `url` (a streamable HTTP server), not both
                /u/config.toml:6: mcp_servers.neither: a server needs a `command` (a stdio server) or a `url` (a streamable HTTP server)
                /u/config.toml:9: mcp_servers.legacy: the SSE transport is not supported; give the server's streamable HTTP endpoint as `url` (often …/mcp)
                /u/config.toml:13: mcp_servers.ftp: `url` must start with http:// or https://, found "ftp://h/mcp"
                /u/config.toml:17: mcp_servers.typo.comand: unknown key; it was ignored
                /u/config.toml:18: mcp_servers.typo.tool_timeout_sec: expected a number of seconds above 0
                /u/config.toml:19: mcp_servers.typo.exposure: expected "direct" or "deferred", found "lazy"
                /u/config.toml:16: mcp_servers.typo: a server needs a `command` (a stdio server) or a `url` (a streamable HTTP server)"#]],
        );
    }

    #[test]
    fn only_your_own_config_passes_variables_through() {
        check(
            LayerKind::Project,
            "[mcp_servers.gh]\ncommand = \"gh-mcp\"\nenv_vars = [\"GITHUB_TOKEN\"]\n",
            expect![[r#"
                gh: McpServerLayer { transport: Some(Stdio { command: "gh-mcp", args: [], env: [], env_vars: [], cwd: None }), startup_timeout: None, tool_timeout: None, enabled_tools: None, disabled_tools: [], exposure: None, enabled: true }
                /u/config.toml:3: mcp_servers.gh.env_vars: only your own config.toml can pass variables of reins's environment to a server"#]],
        );
    }

    #[test]
    fn editor_settings_are_camel_case_and_claude_shaped() {
        let (layer, diagnostics) = ConfigLayer::from_json(&serde_json::json!({"mcpServers": {
            "web": {"type": "http", "url": "http://127.0.0.1:3001/mcp", "headers": {"X-Team": "core"}},
            "local": {"command": "node", "args": ["s.js"], "startupTimeoutSec": 3, "bearerTokenEnvVar": "T"}
        }}));
        let servers: Vec<String> =
            layer.mcp_servers.iter().map(|(name, server)| format!("{name}: {:?}", server.transport)).collect();
        assert_eq!(
            servers,
            // JSON objects keep the order they were written in.
            [
                r#"web: Some(Http { url: "http://127.0.0.1:3001/mcp", bearer_token_env_var: None, headers: [("X-Team", "core")] })"#,
                r#"local: Some(Stdio { command: "node", args: ["s.js"], env: [], env_vars: [], cwd: None })"#
            ]
        );
        assert_eq!(
            diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "editor settings: mcpServers.local.bearerTokenEnvVar: only your own config.toml can pass variables of reins's environment to a server"
            ]
        );
    }

    #[test]
    fn mcp_json_expands_variables_but_not_secrets() {
        let text = r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "server-filesystem", "${HOME}/src", "${DEPTH:-3}"]},
            "gh": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
            "bad": {"command": 7}
        }}"#;
        let var = |name: &str| (name == "HOME").then(|| "/home/u".to_string());
        let (layer, diagnostics) = ConfigLayer::from_mcp_json(Path::new("/w/.mcp.json"), text, var);
        let servers: Vec<String> =
            layer.mcp_servers.iter().map(|(name, server)| format!("{name}: {:?}", server.transport)).collect();
        expect![[r#"
            fs: Some(Stdio { command: "npx", args: ["-y", "server-filesystem", "/home/u/src", "3"], env: [], env_vars: [], cwd: None })
            gh: Some(Http { url: "https://api.example.com/mcp", bearer_token_env_var: None, headers: [("Authorization", "Bearer ")] })"#]]
        .assert_eq(&servers.join("\n"));
        expect![[r#"
            /w/.mcp.json: mcpServers.gh.headers.Authorization: ${GITHUB_TOKEN} names a secret, which a project's file may not pass to a server; it was left empty (configure the server in your own config.toml with env_vars or bearer_token_env_var)
            /w/.mcp.json: mcpServers.bad.command: expected a string, found an integer
            /w/.mcp.json: mcpServers.bad: a server needs a `command` (a stdio server) or a `url` (a streamable HTTP server)"#]]
        .assert_eq(&diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"));

        let (_, diagnostics) =
            ConfigLayer::from_mcp_json(Path::new("/w/.mcp.json"), "{\"mcpServers\": {\n  \"x\": }", |_| None);
        assert_eq!(diagnostics[0].line, Some(2));
    }
}
