//! `reins mcp list [--json]`: the MCP servers in force for the workspace, where each was
//! configured, whether it starts (each is started, as a run would), and the tools it offers.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

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
}

/// A tool description is cut to this many characters in the listing.
const DESCRIPTION_CHARS: usize = 80;

pub fn main(args: McpArgs) -> ExitCode {
    let McpCommand::List { json } = args.command;
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
        session.tools().await;
        let statuses = session.status();
        servers.stop().await;
        statuses
    });
    let text = if json {
        let json = crate::lsp::mcp_servers_json(&statuses);
        format!("{}\n", serde_json::to_string_pretty(&json).unwrap_or_default())
    } else {
        report(&statuses)
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush());
    let failed = statuses.iter().any(|status| matches!(status.state, ServerState::Failed(_)));
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
            ServerState::Ready => "ready".to_string(),
            ServerState::Exited(reason) => format!("exited: {reason}"),
            ServerState::Failed(reason) => format!("failed: {reason}"),
            ServerState::Stopped => "stopped".to_string(),
        };
        out.push_str(&format!("{}  {}\n", status.name, status.transport));
        out.push_str(&format!("  from   {}\n", status.origin));
        out.push_str(&format!("  state  {state}\n"));
        if !status.tools.is_empty() {
            out.push_str(&format!("  tools  {}\n", status.tools.len()));
            let width = status.tools.iter().map(|tool| tool.name.len()).max().unwrap_or(0);
            for tool in &status.tools {
                let description = reins_ai::first_line(&tool.description, DESCRIPTION_CHARS);
                out.push_str(format!("    {:<width$}  {description}", tool.name).trim_end());
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
                tools: Vec::new(),
            },
        ];
        expect![[r#"
            everything  npx -y @modelcontextprotocol/server-everything
              from   /home/u/.config/reins/config.toml
              state  ready
              tools  2
                mcp__everything__echo     Echoes back the input string
                mcp__everything__get-sum
            docs  https://docs.example.com/mcp
              from   /w/.mcp.json
              state  failed: cannot connect to https://docs.example.com/mcp: refused
        "#]]
        .assert_eq(&report(&statuses));
        assert_eq!(report(&[]).lines().count(), 1);
    }
}
