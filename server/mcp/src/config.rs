//! What an MCP server is, as the harness hands it over: how to reach it, its limits, which of its
//! tools to offer, and where it was configured. Reading config files and the environment is the
//! harness's job; everything here is already resolved (tokens read, variables passed through).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use reins_ai::ApiKey;

use crate::exposure::Exposure;

/// How long a server may take to start and answer `initialize` and `tools/list` (Codex's default).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one tool call may take (Codex's default).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The name in `mcp__NAME__tool`, unique in its set.
    pub name: String,
    pub transport: Transport,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// When set, only these tools (the server's names) are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// Tools never offered, whatever `enabled_tools` says.
    pub disabled_tools: Vec<String>,
    /// How its tools reach the model; `None`: declared directly unless the MCP tools together
    /// pass the session's threshold (see `exposure`).
    pub exposure: Option<Exposure>,
    /// Where it was configured, for listings and warnings: a file, `editor settings`,
    /// `session/new`.
    pub origin: String,
}

/// How to reach a server.
#[derive(Clone)]
pub enum Transport {
    /// A child process speaking JSON-RPC lines on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Set on top of the environment every server starts from, which carries no provider
        /// keys (see [`crate::Options::base_env`]).
        env: Vec<(String, String)>,
        /// The working directory; the workspace root when `None`.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        /// Sent as `Authorization: Bearer …`.
        bearer_token: Option<ApiKey>,
        headers: Vec<(String, String)>,
    },
}

impl ServerConfig {
    /// A stdio server with the default limits, offering all its tools.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        let transport = Transport::Stdio { command: command.into(), args, env: Vec::new(), cwd: None };
        Self::with_transport(name.into(), transport)
    }

    /// A streamable HTTP server with the default limits, offering all its tools.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        let transport = Transport::Http { url: url.into(), bearer_token: None, headers: Vec::new() };
        Self::with_transport(name.into(), transport)
    }

    fn with_transport(name: String, transport: Transport) -> Self {
        Self {
            name,
            transport,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            exposure: None,
            origin: String::new(),
        }
    }

    /// Whether the tool of this name (the server's name for it) is offered.
    pub fn offers(&self, tool: &str) -> bool {
        let enabled = self.enabled_tools.as_ref().is_none_or(|enabled| enabled.iter().any(|name| name == tool));
        enabled && !self.disabled_tools.iter().any(|name| name == tool)
    }
}

impl Transport {
    /// The command line or the URL, for a person. Secrets (environment values, headers, the
    /// token) are not shown.
    pub fn describe(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => {
                std::iter::once(command).chain(args).map(|word| shell_quote(word)).collect::<Vec<_>>().join(" ")
            }
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

impl PartialEq for Transport {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Transport::Stdio { command, args, env, cwd },
                Transport::Stdio { command: command2, args: args2, env: env2, cwd: cwd2 },
            ) => (command, args, env, cwd) == (command2, args2, env2, cwd2),
            (
                Transport::Http { url, bearer_token, headers },
                Transport::Http { url: url2, bearer_token: token2, headers: headers2 },
            ) => {
                let token = bearer_token.as_ref().map(ApiKey::expose);
                (url, token, headers) == (url2, token2.as_ref().map(ApiKey::expose), headers2)
            }
            _ => false,
        }
    }
}

/// Environment values and header values may be secrets: Debug shows their names only.
impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio { command, args, env, cwd } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.iter().map(|(name, _)| name).collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Transport::Http { url, bearer_token, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("bearer_token", bearer_token)
                .field("headers", &headers.iter().map(|(name, _)| name).collect::<Vec<_>>())
                .finish(),
        }
    }
}

fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,%".contains(c));
    if plain { word.to_string() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_quotes_words_and_hides_secrets() {
        let mut config = ServerConfig::stdio("x", "npx", vec!["-y".into(), "@scope/pkg".into(), "a b".into()]);
        if let Transport::Stdio { env, .. } = &mut config.transport {
            env.push(("TOKEN".into(), "s3cret".into()));
        }
        assert_eq!(config.transport.describe(), "npx -y @scope/pkg 'a b'");
        let debug = format!("{config:?}");
        assert!(debug.contains("TOKEN") && !debug.contains("s3cret"), "{debug}");

        let mut http = ServerConfig::http("d", "https://example.com/mcp");
        if let Transport::Http { bearer_token, headers, .. } = &mut http.transport {
            *bearer_token = Some(ApiKey::new("tok-123"));
            headers.push(("X-Team".into(), "core-secret".into()));
        }
        let debug = format!("{http:?}");
        assert!(!debug.contains("tok-123") && !debug.contains("core-secret"), "{debug}");
    }

    #[test]
    fn enabled_and_disabled_tools() {
        let mut config = ServerConfig::stdio("x", "x", Vec::new());
        assert!(config.offers("echo"));
        config.enabled_tools = Some(vec!["echo".into(), "add".into()]);
        config.disabled_tools = vec!["add".into()];
        assert_eq!((config.offers("echo"), config.offers("add"), config.offers("other")), (true, false, false));
    }
}
