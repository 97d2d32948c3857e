//! `reins acp`: the Agent Client Protocol (v1) on stdin/stdout, for Zed, JetBrains IDEs, Emacs
//! agent-shell, CodeCompanion, avante.nvim and other ACP clients.
//!
//! A thin translation, as the LSP layer is: the official SDK (`agent-client-protocol`) decodes
//! and encodes, [`to_proto`] and [`from_proto`] turn the harness's values into the schema's and
//! back, and the harness does the work. Each ACP session gets a harness of its own, built for
//! the session's `cwd` (settings, trust, workspace roots), so that the requests reins sends back
//! to the client — `fs/*`, `terminal/*`, `session/request_permission`, all of which name the
//! session — come from a workspace, approver and events sink that know it. The sessions live in
//! the same store, in the same files, as those of `reins lsp` and `reins run`.
//!
//! stdout carries only protocol lines ([`transport`]); logs go to stderr, which ACP clients keep
//! as the agent's log.

mod agent;
mod approver;
mod events;
mod from_proto;
mod options;
mod terminal;
mod to_proto;
mod transport;
mod workspace;

use std::process::ExitCode;

/// The arguments of `reins acp` (see the `reins` binary's `cli::Command::Acp`).
#[derive(Debug, Default, PartialEq, clap::Args)]
pub struct AcpArgs {}

/// What `reins acp --help` says after the options: how to add reins to the usual clients.
pub const SETUP_HELP: &str = r#"Setup in Zed (settings.json):
  "agent_servers": {
    "reins": {
      "type": "custom",
      "command": "reins",
      "args": ["acp"],
      "env": { "REINS_MODEL": "openai/gpt-4.1" }
    }
  }
then open the agent panel, + → reins. Keys come from the environment and reins's config, as
for `reins lsp` (no `authenticate` step).

CodeCompanion (a standalone ACP adapter running `reins acp`, made the chat's adapter under
`interactions`), avante.nvim (`acp_providers`, with the keys and REINS_MODEL in its `env`, and
`behaviour.auto_approve_tool_permissions = false`), Emacs agent-shell and acpx
(`acpx --agent "reins acp"`): see the README's "Agent panels (ACP)" for each setup.

Other clients (JetBrains AI Assistant): run `reins acp` as a custom ACP agent over stdio.

What reins does for the client: sessions are reins sessions (`reins sessions list` shows them,
`reins run --session ID` continues them); edits, writes, commands and MCP calls ask through the
client's permission dialog (allow once/always, reject once/always) unless config's [approval]
or the session's mode (ask, auto-edit, read-only) says otherwise; the model and thinking level
are session options too; with the client's fs capability the agent reads unsaved buffers and writes through
the editor, and with its terminal capability commands run in the editor's terminal."#;

pub fn main(_args: AcpArgs) -> ExitCode {
    let runtime = match reins_harness::start_runtime() {
        Ok(runtime) => runtime,
        Err(message) => {
            eprintln!("reins: {message}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(agent::serve(tokio::io::stdin(), tokio::io::stdout()));
    // Runs still going have been cancelled and their sessions saved; nothing else is waited for.
    runtime.shutdown_background();
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("reins: {message}");
            ExitCode::FAILURE
        }
    }
}
