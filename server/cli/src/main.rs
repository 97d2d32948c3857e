//! The `reins` binary, the front door: the command line (clap) and the tracing set-up in front of
//! `reins lsp` (the language server, `reins-lsp`), `reins acp` (the ACP agent, `reins-acp`) and
//! the commands of the terminal: `reins run` (one prompt), `sessions`, `models`, `config`, `mcp`,
//! `sandbox-exec`.
//!
//! stdout is reserved: in `run --json` mode it carries only JSON events, and in LSP mode only
//! LSP frames. Logs go to stderr through `tracing` (`REINS_LOG=debug`).

mod checkout_cmd;
mod cli;
mod config_cmd;
mod json_out;
mod mcp_cmd;
mod mcp_login;
mod models_cmd;
mod pages;
mod run;
mod sandbox_cmd;
mod sessions_cmd;
mod terminal;
mod terminal_review;
mod worktree_run;

use std::process::ExitCode;

/// Runs the command line in `std::env::args`.
fn main() -> ExitCode {
    // Before any thread starts: it rewrites the environment.
    reins_harness::protect_process();
    reins_harness::raise_open_files_limit();
    pages::release_relocation_table();
    // Before any HTTP client is built, by reins or by a library (see reins_ai::http_client).
    reins_ai::install_tls();
    init_tracing();
    cli::run(std::env::args_os())
}

/// Logs to stderr (colored only on a terminal: an editor's log would show the escape codes), and
/// in `reins lsp` to the client instead, unless `REINS_LOG` asks for stderr too.
fn init_tracing() {
    use std::io::IsTerminal;

    use tracing_subscriber::prelude::*;
    let explicit = std::env::var_os("REINS_LOG").is_some();
    // rmcp logs what reins reports itself (a server that cannot be reached): only on request.
    let mut filter = tracing_subscriber::EnvFilter::try_from_env("REINS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp=off,agent_client_protocol=error"));
    // The LSP framework traces every frame whole, and the client's settings carry API keys.
    if let Ok(quiet) = "tower_lsp_server::codec=off".parse() {
        filter = filter.add_directive(quiet);
    }
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(tracing_subscriber::filter::filter_fn(move |_| explicit || !reins_lsp::logs_to_client()));
    tracing_subscriber::registry().with(filter).with(stderr).with(reins_lsp::ClientLog).init();
}
