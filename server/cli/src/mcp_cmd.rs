//! `reins mcp list [--json]`: the MCP servers in force for the workspace, where each was
//! configured, whether it starts (each is started, as a run would), and the tools it offers.
//! `reins mcp login NAME` / `logout NAME`: an OAuth login to a streamable HTTP server, kept in
//! the reins home for the runs that follow, or forgotten.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use reins_ai::visible_line;
use reins_harness::configured_servers;
use reins_mcp::{ServerState, ServerStatus, SessionServers};

use crate::cli;

/// The arguments of the subcommand (see `crate::cli::Command`).
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
    /// The workspace root, whose trusted .mcp.json and .reins/config.toml apply (default: the
    /// current directory)
    #[arg(long, short = 'C', value_name = "DIR", value_parser = cli::directory, global = true)]
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, PartialEq, clap::Subcommand)]
pub enum McpCommand {
    /// Each MCP server in force, where it was configured, its state (each is started, as a run
    /// would) and its tools; exit status 1 when one could not start
    List {
        /// Print the servers as one JSON object (the shape of reins.mcp.list)
        #[arg(long)]
        json: bool,
    },
    /// Log in to a streamable HTTP server that uses OAuth: opens the authorization page in the
    /// browser ($BROWSER, else the system's), or prints its URL, and keeps the tokens (mode 0600)
    /// in the reins home; runs send them and renew them
    Login {
        /// The server's name in the config
        name: String,
    },
    /// Forget the login of `reins mcp login NAME`
    Logout {
        /// The server's name in the config
        name: String,
    },
}

/// A tool description is cut to this many characters in the listing.
const DESCRIPTION_CHARS: usize = 80;

pub fn main(args: McpArgs) -> ExitCode {
    let json = match args.command {
        McpCommand::List { json } => json,
        McpCommand::Login { name } => return crate::mcp_login::login(args.cwd, &name),
        McpCommand::Logout { name } => return crate::mcp_login::logout(args.cwd, &name),
    };
    let root = match args.cwd.clone().map(Ok).unwrap_or_else(std::env::current_dir) {
        Ok(root) => root,
        Err(err) => {
            eprintln!("reins: cannot read the current directory: {err}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("reins: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let settings = crate::run::load_settings(&root);
    // The listing says why a server failed; the warnings would only repeat it.
    let servers = configured_servers(&settings, vec![root], Arc::new(|_| {}));
    let statuses = runtime.block_on(async {
        let session = SessionServers::global(servers.clone());
        session.start().await;
        let statuses = session.status();
        servers.stop().await;
        statuses
    });
    let text = if json {
        let json = reins_wire::mcp_servers(&statuses);
        format!("{}\n", serde_json::to_string_pretty(&json).unwrap_or_default())
    } else {
        report(&statuses)
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush());
    let failed =
        statuses.iter().any(|status| matches!(status.state, ServerState::Failed(_) | ServerState::NeedsLogin(_)));
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// One block per server: its name, state and transport, where it was configured, its tools.
fn report(statuses: &[ServerStatus]) -> String {
    if statuses.is_empty() {
        return "no MCP servers are configured ([mcp_servers.NAME] in config.toml, or a trusted workspace's \
                .mcp.json)\n"
            .to_string();
    }
    let mut out = String::new();
    for status in statuses {
        let state = match &status.state {
            ServerState::Idle => "idle".to_string(),
            ServerState::Starting => "starting".to_string(),
            ServerState::Ready => match &status.protocol {
                Some(protocol) => format!("ready, MCP {protocol}"),
                None => "ready".to_string(),
            },
            ServerState::Exited(reason) => format!("exited: {reason}"),
            ServerState::Failed(reason) => format!("failed: {reason}"),
            ServerState::NeedsLogin(reason) => format!("needs login: {reason}"),
            ServerState::Stopped => "stopped".to_string(),
        };
        let state = if status.logged_in { format!("{state} (logged in)") } else { state };
        let (name, transport) = (visible_line(&status.name), visible_line(&status.transport));
        out.push_str(&format!("{name}  {transport}\n"));
        out.push_str(&format!("  from   {}\n", visible_line(&status.origin)));
        out.push_str(&format!("  state  {}\n", visible_line(&state)));
        if !status.tools.is_empty() {
            out.push_str(&format!("  tools  {}\n", status.tools.len()));
            let names: Vec<_> = status.tools.iter().map(|tool| visible_line(&tool.name)).collect();
            let width = names.iter().map(|name| name.chars().count()).max().unwrap_or(0);
            for (tool, name) in status.tools.iter().zip(&names) {
                let description =
                    visible_line(&reins_ai::first_line(&tool.description, DESCRIPTION_CHARS)).into_owned();
                out.push_str(format!("    {name:<width$}  {description}").trim_end());
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use reins_mcp::ToolInfo;

    use super::*;

    #[test]
    fn the_listing_names_state_origin_and_tools() {
        let statuses = vec![
            ServerStatus {
                name: "everything".into(),
                origin: "/home/u/.config/reins/config.toml".into(),
                transport: "npx -y @modelcontextprotocol/server-everything".into(),
                state: ServerState::Ready,
                logged_in: false,
                protocol: Some("2025-11-25".into()),
                tools: vec![
                    ToolInfo {
                        name: "mcp__everything__echo".into(),
                        tool: "echo".into(),
                        description: "Echoes back the input string\nMore.".into(),
                    },
                    ToolInfo {
                        name: "mcp__everything__get-sum".into(),
                        tool: "get-sum".into(),
                        description: String::new(),
                    },
                ],
            },
            ServerStatus {
                name: "docs".into(),
                origin: "/w/.mcp.json".into(),
                transport: "https://docs.example.com/mcp".into(),
                state: ServerState::Failed("cannot connect to https://docs.example.com/mcp: refused".into()),
                logged_in: false,
                protocol: None,
                tools: Vec::new(),
            },
            ServerStatus {
                name: "linear".into(),
                origin: "/home/u/.config/reins/config.toml".into(),
                transport: "https://mcp.linear.app/mcp".into(),
                state: ServerState::NeedsLogin("it needs you to log in: run `reins mcp login linear`".into()),
                logged_in: false,
                protocol: None,
                tools: Vec::new(),
            },
            ServerStatus {
                name: "notion".into(),
                origin: "/home/u/.config/reins/config.toml".into(),
                transport: "https://mcp.notion.com/mcp".into(),
                state: ServerState::Ready,
                logged_in: true,
                protocol: Some("2025-11-25".into()),
                tools: Vec::new(),
            },
        ];
        expect![[r#"
            everything  npx -y @modelcontextprotocol/server-everything
              from   /home/u/.config/reins/config.toml
              state  ready, MCP 2025-11-25
              tools  2
                mcp__everything__echo     Echoes back the input string
                mcp__everything__get-sum
            docs  https://docs.example.com/mcp
              from   /w/.mcp.json
              state  failed: cannot connect to https://docs.example.com/mcp: refused
            linear  https://mcp.linear.app/mcp
              from   /home/u/.config/reins/config.toml
              state  needs login: it needs you to log in: run `reins mcp login linear`
            notion  https://mcp.notion.com/mcp
              from   /home/u/.config/reins/config.toml
              state  ready, MCP 2025-11-25 (logged in)
        "#]]
        .assert_eq(&report(&statuses));
        assert_eq!(report(&[]).lines().count(), 1);
    }

    #[test]
    fn what_a_server_says_of_its_tools_cannot_steer_the_terminal() {
        let status = ServerStatus {
            name: "evil".into(),
            origin: "/w/.mcp.json".into(),
            transport: "node evil.mjs".into(),
            state: ServerState::Ready,
            logged_in: false,
            protocol: None,
            tools: vec![ToolInfo {
                name: "mcp__evil__x\x1b[2J".into(),
                tool: "x\x1b[2J".into(),
                description: "harmless\x1b]52;c;cm0gLXJmIH4K\x07\u{9b}1A".into(),
            }],
        };
        expect![[r#"
            evil  node evil.mjs
              from   /w/.mcp.json
              state  ready
              tools  1
                mcp__evil__x^[[2J  harmless^[]52;c;cm0gLXJmIH4K^G<U+009B>1A
        "#]]
        .assert_eq(&report(&[status]));
    }
}
