//! The `reins` binary: `reins lsp` (the language server) and `reins run` (one prompt, in the
//! terminal). A library only so that the bench can measure the language server's own code; the
//! binary is `src/main.rs`, which calls [`main`].
//!
//! stdout is reserved: in `run --json` mode it carries only JSON events, and in LSP mode only
//! LSP frames. Logs go to stderr through `tracing` (`REINS_LOG=debug`).

mod config_cmd;
mod lsp;
mod models_cmd;
mod run;
mod sessions_cmd;
mod terminal;

use std::path::Path;
use std::process::ExitCode;

/// What the bench measures of the language server: a proposal's hunks as `TextEdit`s.
pub use lsp::{PositionEncoding, text_edits};

const USAGE: &str = "\
reins — an LLM coding agent that lives in your editor

Usage:
  reins lsp [--stdio]             serve the Language Server Protocol on stdin/stdout
  reins lsp --listen ADDR:PORT    serve one LSP client over TCP (e.g. 127.0.0.1:9257)
  reins run [OPTIONS] PROMPT...   run one prompt against the workspace and print the answer
  reins sessions list [--json]    the workspace's sessions, newest first
  reins sessions tree ID [--json] a session's tree (ID: id, id prefix or file path)
  reins models [--json]           the known models, and whether a key for each is at hand
  reins config check              the effective configuration, where each value came from, problems
  reins --version                 print the version

Options for run:
  --model M        provider/model-id or a bare id (default: config `model`, $REINS_MODEL,
                   else qwen2.5-coder:7b); ids not in `reins models` go to OPENAI_BASE_URL
  --yes, -y        approve every edit, write and command without asking
  --json           print one JSON object per agent event on stdout, nothing else
  --max-turns N    stop after N model calls (default 50)
  --cwd DIR        the workspace root (default: the current directory)
  --continue, -c   continue the workspace's most recent session
  --session ID     continue a session by id, id prefix or path
  --fork ENTRY     start a new session from ENTRY of --session (or of the most recent one)
  --no-session     keep nothing on disk

Config: $REINS_HOME/config.toml (else $XDG_CONFIG_HOME/reins/config.toml), then a trusted
project's .reins/config.toml, then the environment. Keys: environment, $REINS_HOME/auth.json
(mode 0600), or providers.<name>.api_key_command.

Environment:
  OPENAI_BASE_URL  OpenAI-compatible endpoint, with /v1 (default: Ollama at http://127.0.0.1:11434/v1)
  OPENAI_API_KEY   its API key
  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (without /v1), DEEPSEEK_API_KEY, OPENROUTER_API_KEY, …
  REINS_MODEL      the default model
  REINS_HOME       data and config directory (default: $XDG_CONFIG_HOME/reins, $XDG_DATA_HOME/reins)
  REINS_LOG        log filter for stderr (default: warn)
";

/// Runs the command line in `std::env::args`.
pub fn main() -> ExitCode {
    init_tracing();
    let mut args = std::env::args_os().skip(1);
    let Some(command) = args.next() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    match command.to_str() {
        Some("--version" | "-V" | "version") => {
            #[allow(clippy::print_stdout)]
            {
                println!("reins {}", env!("CARGO_PKG_VERSION"));
            }
            ExitCode::SUCCESS
        }
        Some("--help" | "-h" | "help") => {
            eprint!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some("lsp") => match lsp::LspArgs::parse(args) {
            Ok(lsp_args) => lsp::main(lsp_args),
            Err(message) => {
                eprintln!("reins: {message}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("sessions") => match sessions_cmd::SessionsArgs::parse(args) {
            Ok(sessions_args) => sessions_cmd::main(sessions_args),
            Err(message) => {
                eprintln!("reins: {message}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("models") => match models_cmd::ModelsArgs::parse(args) {
            Ok(models_args) => models_cmd::main(models_args),
            Err(message) => {
                eprintln!("reins: {message}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("config") => match config_cmd::ConfigArgs::parse(args) {
            Ok(config_args) => config_cmd::main(config_args),
            Err(message) => {
                eprintln!("reins: {message}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("run") => match run::RunArgs::parse(args) {
            Ok(run_args) => run::main(run_args),
            Err(message) => {
                eprintln!("reins: {message}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        _ => {
            eprintln!("reins: unknown command {:?}\n\n{USAGE}", command);
            ExitCode::from(2)
        }
    }
}

/// Logs to stderr (colored only on a terminal: an editor's log would show the escape codes), and
/// in `reins lsp` to the client instead, unless `REINS_LOG` asks for stderr too.
fn init_tracing() {
    use std::io::IsTerminal;

    use tracing_subscriber::prelude::*;
    let explicit = std::env::var_os("REINS_LOG").is_some();
    let mut filter = tracing_subscriber::EnvFilter::try_from_env("REINS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // The LSP framework traces every frame whole, and the client's settings carry API keys.
    if let Ok(quiet) = "tower_lsp_server::codec=off".parse() {
        filter = filter.add_directive(quiet);
    }
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(tracing_subscriber::filter::filter_fn(move |_| explicit || !lsp::logs_to_client()));
    tracing_subscriber::registry().with(filter).with(stderr).with(lsp::ClientLog).init();
}

/// A path as people read it: relative to `root` when inside it.
pub(crate) fn display_path(path: &Path, root: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(relative) => relative.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}
