//! The command line, parsed by clap (derive): `--help` on every subcommand, `reins help`, typo
//! suggestions, values checked before anything runs, completion scripts. Each subcommand's
//! arguments live beside its code (`run::RunArgs`, `sessions_cmd::SessionsArgs`, …); to add a
//! subcommand, add its `Args` struct there, a variant to [`Command`] and an arm to [`dispatch`].
//!
//! Exit status: 0 on success and for `--help`/`--version`; 2 for a command line that cannot be
//! parsed, with a one-line `reins: …` reason on stderr; whatever the subcommand says otherwise.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use reins_acp as acp;
use reins_lsp as lsp;

use crate::{config_cmd, mcp_cmd, models_cmd, run as run_cmd, sandbox_cmd, sessions_cmd};

const AFTER_HELP: &str = "\
Config: $REINS_HOME/config.toml (else $XDG_CONFIG_HOME/reins/config.toml), then a trusted
project's .mcp.json and .reins/config.toml, then the environment. Keys: the environment,
$REINS_HOME/auth.json (mode 0600), or providers.<name>.api_key_command.

Environment:
  OPENAI_BASE_URL  OpenAI-compatible endpoint, with /v1 (default: Ollama at http://127.0.0.1:11434/v1)
  OPENAI_API_KEY   its API key
  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (without /v1), DEEPSEEK_API_KEY, OPENROUTER_API_KEY, …
  REINS_MODEL      the default model
  REINS_HOME       data and config directory (default: $XDG_CONFIG_HOME/reins, $XDG_DATA_HOME/reins)
  REINS_LOG        log filter for stderr (default: warn)";

/// reins — an LLM coding agent that lives in your editor
#[derive(Debug, Parser)]
#[command(name = "reins", version, arg_required_else_help = true, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the Language Server Protocol on stdin/stdout (or to one client of a socket: --listen)
    ///
    /// stdout carries LSP frames and nothing else; logs go to the client (and to stderr with
    /// REINS_LOG).
    Lsp(lsp::LspArgs),
    /// Serve the Agent Client Protocol on stdin/stdout (Zed, JetBrains, CodeCompanion, …)
    ///
    /// ACP v1, newline-delimited JSON-RPC; stdout carries protocol messages and nothing else,
    /// logs go to stderr (REINS_LOG sets their filter).
    #[command(after_long_help = acp::SETUP_HELP, after_help = acp::SETUP_HELP)]
    Acp(acp::AcpArgs),
    /// Run one prompt against the workspace and print the answer
    ///
    /// The answer streams to stdout; each tool call shows on stderr as one line. Edits, writes
    /// and commands are shown first and run only after you say yes, hunk by hunk: y applies a
    /// hunk, n skips it (you may then give the model a reason), a applies it and the rest, d
    /// skips it and the rest. Without a terminal and without --yes they are refused, and the
    /// model is told why. Exit status: 0 on a final answer, 130 when cancelled, 2 for a command
    /// line that cannot be parsed, else 1 with a one-line reason on stderr.
    Run(run_cmd::RunArgs),
    /// The workspace's sessions: list them, show one's tree, or check out an entry (files too)
    Sessions(sessions_cmd::SessionsArgs),
    /// The known models, and whether a key for each is at hand
    ///
    /// The registry's models with your config's models and providers applied, and the default
    /// model when the registry does not list it; `*` marks the default. Keys are never shown.
    Models(models_cmd::ModelsArgs),
    /// The configuration in force: `reins config check`
    Config(config_cmd::ConfigArgs),
    /// The MCP servers: `reins mcp list [--json]`
    ///
    /// Servers come from [mcp_servers.NAME] in config.toml, a trusted workspace's .mcp.json and
    /// .reins/config.toml; their tools reach the model as mcp__SERVER__TOOL.
    Mcp(mcp_cmd::McpArgs),
    /// Print a completion script for bash, zsh or fish
    ///
    /// For example: `reins completions bash > ~/.local/share/bash-completion/completions/reins`,
    /// `reins completions fish > ~/.config/fish/completions/reins.fish`.
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Run a command sandboxed, as bash's commands are (for an editor's terminal)
    #[command(hide = true)]
    SandboxExec(sandbox_cmd::SandboxExecArgs),
}

/// The shells `reins completions` writes scripts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Parses `args` (the program name first) and runs the subcommand.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    match Cli::try_parse_from(arguments(args)) {
        Ok(cli) => dispatch(cli.command),
        Err(error) => report(error),
    }
}

/// `reins version`, kept from before clap, is `reins --version`. It is not a subcommand, so
/// that a typo of a real one (`reins sesions`) is not offered `version`.
fn arguments(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    if let Some(word) = args.get_mut(1).filter(|word| *word == "version") {
        *word = OsString::from("--version");
    }
    args
}

fn dispatch(command: Command) -> ExitCode {
    match command {
        Command::Lsp(args) => {
            clean_up_after_dead_processes();
            lsp::main(args)
        }
        Command::Acp(args) => {
            clean_up_after_dead_processes();
            acp::main(args)
        }
        Command::Run(args) => match args.prompt() {
            Some(_) => run_cmd::main(args),
            None => report(usage_error("run", ErrorKind::MissingRequiredArgument, "run needs a prompt")),
        },
        Command::Sessions(args) => sessions_cmd::main(args),
        Command::Models(args) => models_cmd::main(args),
        Command::Config(args) => config_cmd::main(args),
        Command::Mcp(args) => mcp_cmd::main(args),
        Command::Completions { shell } => completions(shell),
        Command::SandboxExec(args) => sandbox_cmd::main(args),
    }
}

/// What reins processes that died (crashed, killed) left behind: bash's full-output files. In
/// the background, so a big temporary directory does not delay the start.
fn clean_up_after_dead_processes() {
    std::thread::spawn(reins_tools::remove_abandoned_output);
}

/// An error about the command line of `subcommand`, as clap would raise it.
fn usage_error(subcommand: &str, kind: ErrorKind, message: &str) -> clap::Error {
    let mut command = Cli::command();
    command.build();
    match command.find_subcommand_mut(subcommand) {
        Some(subcommand) => subcommand.error(kind, message),
        None => command.error(kind, message),
    }
}

/// Help and the version go to stdout with status 0; anything else is a usage error: one line
/// `reins: …` (with clap's tips after it) on stderr, status 2.
fn report(error: clap::Error) -> ExitCode {
    if !error.use_stderr() {
        let _ = error.print();
        return ExitCode::SUCCESS;
    }
    if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = error.print();
        return ExitCode::from(2);
    }
    let rendered = error.render().to_string();
    let text = rendered.strip_prefix("error: ").unwrap_or(&rendered);
    eprint!("reins: {text}");
    if !text.ends_with('\n') {
        eprintln!();
    }
    ExitCode::from(2)
}

fn completions(shell: Shell) -> ExitCode {
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "reins", &mut script);
    print(&String::from_utf8_lossy(&script))
}

/// Writes `text` to stdout; a closed pipe is not worth an error.
fn print(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush());
    ExitCode::SUCCESS
}

/// A `DIR` argument: a directory that exists.
pub fn directory(value: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(value);
    if path.is_dir() { Ok(path) } else { Err(format!("{value} is not a directory")) }
}

/// A count that must be at least 1 (`--max-turns`).
pub fn at_least_one(value: &str) -> Result<u32, String> {
    match value.trim().parse::<u32>() {
        Ok(0) => Err("it must be at least 1".to_string()),
        Ok(count) => Ok(count),
        Err(_) => Err("it must be a whole number, at least 1".to_string()),
    }
}

/// An argument that must say something: an id, a model, an entry.
pub fn non_empty(value: &str) -> Result<String, String> {
    if value.trim().is_empty() { Err("it is empty".to_string()) } else { Ok(value.to_string()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parsed command line, or the error's kind.
    pub fn parse(args: &[&str]) -> Result<Command, ErrorKind> {
        let args = std::iter::once("reins").chain(args.iter().copied()).map(OsString::from);
        Cli::try_parse_from(arguments(args)).map(|cli| cli.command).map_err(|error| error.kind())
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn help_version_typos_and_completions() {
        assert_eq!(parse(&["--help"]).unwrap_err(), ErrorKind::DisplayHelp);
        assert_eq!(parse(&["run", "--help"]).unwrap_err(), ErrorKind::DisplayHelp);
        assert_eq!(parse(&["help", "sessions"]).unwrap_err(), ErrorKind::DisplayHelp);
        assert_eq!(parse(&["--version"]).unwrap_err(), ErrorKind::DisplayVersion);
        assert_eq!(parse(&["version"]).unwrap_err(), ErrorKind::DisplayVersion);
        assert!(matches!(parse(&["run", "version"]), Ok(Command::Run(_))));
        assert_eq!(parse(&[]).unwrap_err(), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand);
        assert_eq!(parse(&["rn", "hi"]).unwrap_err(), ErrorKind::InvalidSubcommand);
        assert!(matches!(parse(&["completions", "fish"]), Ok(Command::Completions { shell: Shell::Fish })));
        assert!(matches!(
            parse(&["mcp", "list", "--json"]),
            Ok(Command::Mcp(mcp_cmd::McpArgs { command: mcp_cmd::McpCommand::List { json: true }, cwd: None }))
        ));
        assert_eq!(parse(&["mcp"]).unwrap_err(), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand);
        assert_eq!(parse(&["completions", "tcsh"]).unwrap_err(), ErrorKind::InvalidValue);
        assert_eq!(parse(&["run", "--max-turns", "0", "hi"]).unwrap_err(), ErrorKind::ValueValidation);
        assert_eq!(parse(&["run", "--max-turns", "ten", "hi"]).unwrap_err(), ErrorKind::ValueValidation);
        assert!(
            matches!(parse(&["run", "--max-turns", "3", "hi"]), Ok(Command::Run(args)) if args.max_turns == Some(3))
        );
    }

    #[test]
    fn run_help_names_every_exit_status_and_thinking_completes_to_its_levels() {
        let mut command = Cli::command();
        let help = command.find_subcommand_mut("run").unwrap().render_long_help().to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(help.contains("130 when cancelled, 2 for a command line that cannot be parsed, else 1"), "{help}");
        let mut script = Vec::new();
        clap_complete::generate(clap_complete::Shell::Bash, &mut Cli::command(), "reins", &mut script);
        let script = String::from_utf8(script).unwrap();
        let thinking = &script[script.find("--thinking)").unwrap()..];
        let thinking = &thinking[..thinking.find(";;").unwrap()];
        assert!(thinking.contains("\"off minimal low medium high xhigh\""), "{thinking}");
        assert_eq!(parse(&["run", "--thinking", "lots", "hi"]).unwrap_err(), ErrorKind::InvalidValue);
    }

    /// Every subcommand's words, nested ones too (`sessions tree`), but not clap's `help`.
    fn subcommand_paths(command: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for subcommand in command.get_subcommands().filter(|subcommand| subcommand.get_name() != "help") {
            let mut path = prefix.to_vec();
            path.push(subcommand.get_name().to_string());
            subcommand_paths(subcommand, &path, out);
            out.push(path);
        }
    }

    #[test]
    fn every_subcommand_has_help_that_says_what_it_does() {
        let mut command = Cli::command();
        command.build();
        let mut paths = Vec::new();
        subcommand_paths(&command, &[], &mut paths);
        let names: Vec<String> = paths.iter().map(|path| path.join(" ")).collect();
        for expected in
            ["lsp", "run", "sessions list", "sessions tree", "sessions checkout", "config check", "mcp list"]
        {
            assert!(names.iter().any(|name| name == expected), "{expected} missing from {names:?}");
        }
        for path in paths {
            let args = std::iter::once("reins".to_string()).chain(path.iter().cloned()).chain(["--help".to_string()]);
            let error = Cli::try_parse_from(args).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::DisplayHelp, "{path:?}");
            let help = error.render().to_string();
            assert!(help.contains(&format!("Usage: reins {}", path.join(" "))), "{path:?}: {help}");
            // The first line says what the subcommand does, before the usage.
            assert!(!help.starts_with("Usage:"), "{path:?} has no description: {help}");
        }
    }

    #[test]
    fn a_typo_is_answered_with_a_suggestion() {
        let args = ["reins", "sesions", "list"].map(OsString::from);
        let error = Cli::try_parse_from(arguments(args)).unwrap_err().render().to_string();
        assert!(error.contains("tip: a similar subcommand exists: 'sessions'\n"), "{error}");
    }

    #[test]
    fn every_shell_gets_a_script_naming_the_subcommands() {
        for shell in [clap_complete::Shell::Bash, clap_complete::Shell::Zsh, clap_complete::Shell::Fish] {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "reins", &mut script);
            let script = String::from_utf8(script).unwrap();
            assert!(script.contains("sessions") && script.contains("max-turns"), "{shell}");
        }
    }
}
