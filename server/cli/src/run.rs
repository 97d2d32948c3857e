//! `reins run`: one prompt against the workspace, answered in the terminal or as JSON events.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use reins_agent::{AgentEvent, TurnEndReason};
use reins_ai::ThinkingLevel;
use reins_harness::{
    Executed, Harness, HarnessError, HarnessEvent, HarnessEventSink, HarnessOptions, LiveSettings, SessionId, Settings,
    ToolSet,
};
use reins_tools::{FsWorkspace, Workspace};
use tokio::signal::unix::{SignalKind, signal};

use crate::cli;
use crate::terminal::HumanOutput;
use crate::terminal_review::TerminalApprover;

/// The arguments of `reins run` (see [`crate::cli::Command::Run`]).
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Provider/model-id or a bare id (default: config `model`, $REINS_MODEL, else
    /// qwen2.5-coder:7b); ids not in `reins models` go to OPENAI_BASE_URL
    #[arg(long, short = 'm', value_name = "MODEL", value_parser = cli::non_empty)]
    pub model: Option<String>,
    /// How hard a reasoning model thinks: off, minimal, low, medium, high or xhigh (default: the
    /// session's level, else config `thinking`, else the provider's); kept in the session
    #[arg(long, value_name = "LEVEL", value_parser = thinking_levels())]
    pub thinking: Option<ThinkingLevel>,
    /// The tools offered, comma-separated names and globs: read, write, edit, apply_patch, bash,
    /// ls, grep, find, mcp__SERVER__TOOL, mcp__*, or read-only for read,ls,grep,find (default: the
    /// session's set, else config [tools] enabled, else all); kept in the session
    #[arg(long, value_name = "TOOLS", value_delimiter = ',', value_parser = tool_item)]
    pub tools: Option<Vec<String>>,
    /// Approve every edit, write, command and MCP call without asking; what the config denies
    /// stays denied
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print one JSON object per agent event on stdout, nothing else
    #[arg(long)]
    pub json: bool,
    /// Stop after N model calls (default: the config's limits.max_turns, else 50)
    #[arg(long, value_name = "N", value_parser = cli::at_least_one)]
    pub max_turns: Option<u32>,
    /// The workspace root (default: the project of the current directory: the nearest directory
    /// with a .git at or above it, else the current directory itself)
    #[arg(long, short = 'C', value_name = "DIR", value_parser = cli::directory)]
    pub cwd: Option<PathBuf>,
    /// Continue the workspace's most recent session
    #[arg(long = "continue", short = 'c', conflicts_with_all = ["session", "no_session"])]
    pub continue_recent: bool,
    /// Continue a session by id, id prefix or path
    #[arg(long, short = 's', value_name = "ID", value_parser = cli::non_empty, conflicts_with = "no_session")]
    pub session: Option<String>,
    /// Start a new session from ENTRY of --session (or of the most recent session); at one of
    /// your messages, from before it, the prompt taking its place
    #[arg(long, value_name = "ENTRY", value_parser = cli::non_empty, conflicts_with = "no_session")]
    pub fork: Option<String>,
    /// Keep nothing on disk
    #[arg(long)]
    pub no_session: bool,
    /// Work on a git worktree of the repository (HEAD plus your uncommitted changes) in reins's
    /// data folder, edits applied there without asking; at the end its change is reviewed hunk
    /// by hunk against your files as they are then
    #[arg(long, conflicts_with_all = ["continue_recent", "session", "fork"])]
    pub worktree: bool,
    /// What to ask (the words are joined with spaces)
    #[arg(required = true, value_name = "PROMPT")]
    pub words: Vec<String>,
}

/// Which session a run continues.
#[derive(Debug, Default, PartialEq)]
pub enum SessionChoice {
    /// A new session.
    #[default]
    New,
    /// The workspace's most recent session (a new one if there is none).
    Continue,
    /// A session by id, id prefix or path.
    Open(String),
    /// A new session forked at an entry of the given session (or of the most recent one).
    Fork { session: Option<String>, entry_id: String },
    /// Nothing kept on disk.
    None,
}

impl RunArgs {
    /// The prompt, unless it is blank.
    pub fn prompt(&self) -> Option<String> {
        let prompt = self.words.join(" ");
        (!prompt.trim().is_empty()).then_some(prompt)
    }

    /// Which session the run continues.
    pub fn session(&self) -> SessionChoice {
        match (&self.session, &self.fork) {
            (session, Some(entry_id)) => SessionChoice::Fork { session: session.clone(), entry_id: entry_id.clone() },
            (Some(session), None) => SessionChoice::Open(session.clone()),
            (None, None) if self.continue_recent => SessionChoice::Continue,
            (None, None) if self.no_session => SessionChoice::None,
            (None, None) => SessionChoice::New,
        }
    }
}

pub fn main(args: RunArgs) -> ExitCode {
    // `--json` events wait for the runtime to have nothing left to do, then go out together.
    crate::json_out::runs_here();
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().on_thread_park(crate::json_out::flush).build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(err) => return fail(&format!("cannot start the async runtime: {err}")),
    };
    let code = runtime.block_on(run(args));
    crate::json_out::flush();
    // A prompt cancelled with the run may still be blocked reading the terminal on a thread of
    // its own; dropping the runtime would wait for that read (for the user to press Enter).
    runtime.shutdown_background();
    // That read may have the terminal in single-key mode: the shell gets it back as it was.
    crate::terminal_review::restore_terminal();
    code
}

async fn run(args: RunArgs) -> ExitCode {
    let root = match workspace_root(args.cwd.as_ref()) {
        Ok(root) => root,
        Err(err) => return fail(&format!("cannot read the current directory: {err}")),
    };
    let mut settings = load_settings(&root);
    // The command line's word goes over the config's `ask`, never over its `deny`.
    if args.yes {
        settings.approval = settings.approval.with_asks_approved();
    }
    if let Some(max_turns) = args.max_turns {
        settings.max_turns = Some(max_turns);
    }
    let worktree = match args.worktree {
        true => match crate::worktree_run::create(&root, &settings.data_dir) {
            Ok(worktree) => Some(worktree),
            Err(err) => return fail(&err),
        },
        false => None,
    };
    let root = match &worktree {
        // It touches nothing of the user's: what it does is reviewed at the end.
        Some(worktree) => {
            settings.approval = settings.approval.with_asks_approved();
            let canonical = root.canonicalize().unwrap_or_else(|_| root.clone());
            let inside = canonical.strip_prefix(&worktree.repo).map(Path::to_path_buf).unwrap_or_default();
            worktree.dir.join(inside)
        }
        None => root,
    };
    let workspace: Arc<dyn Workspace> = match FsWorkspace::new(vec![root]) {
        Ok(workspace) => Arc::new(workspace),
        Err(err) => return fail(&err.to_string()),
    };
    let events: HarnessEventSink = if args.json {
        // A subagent's work reaches the JSON as progress of the parent's `task` call.
        Arc::new(|event: HarnessEvent| {
            if event.parent.is_none() {
                print_json_event(&event.event)
            }
        })
    } else {
        let code_diagnostics = &settings.code_diagnostics;
        let human = HumanOutput::new(code_diagnostics.command.clone().filter(|_| code_diagnostics.after_edit));
        Arc::new(move |event: HarnessEvent| match event.parent {
            Some(_) => human.show_nested(&event.event),
            None => human.show(&event.event),
        })
    };
    let session_choice = args.session();
    let persist = session_choice != SessionChoice::None;
    let harness = Harness::new(HarnessOptions {
        settings: LiveSettings::new(settings),
        workspace: workspace.clone(),
        provider: None,
        approver: Arc::new(TerminalApprover::new(workspace.cwd()).after_tool_lines(!args.json)),
        // No editor: `[diagnostics] command` tells the model what its edits broke.
        diagnostics: None,
        events,
        date: reins_harness::today(),
        persist,
        warn: Arc::new(|message: &str| eprintln!("reins: warning: {}", reins_ai::visible(message))),
    });
    // The MCP servers start while the session is set up; the first request waits for them only
    // briefly.
    harness.start_mcp_servers();
    // A skill file that is not quite one loads where it can; the user hears what is wrong with it.
    for warning in &harness.resources().skills.warnings {
        eprintln!("reins: skill: {}", reins_ai::visible(&warning.to_string()));
    }
    let code = run_in(&harness, &args).await;
    if let Some(worktree) = &worktree {
        let approver = TerminalApprover::new(worktree.repo.clone());
        let done = crate::worktree_run::propose(worktree, &approver, args.yes).await;
        if let Err(err) = &done {
            eprintln!("reins: {}", reins_ai::visible_line(err));
        }
        crate::worktree_run::finish(worktree, done.unwrap_or(false));
    }
    // MCP servers stop now, each given a moment to exit on its own.
    harness.shutdown().await;
    code
}

/// The run itself, in `harness`.
async fn run_in(harness: &Arc<Harness>, args: &RunArgs) -> ExitCode {
    let session_choice = args.session();
    let prompt = args.prompt().unwrap_or_default();
    let started = choose_session(harness, &session_choice, args.model.as_deref()).and_then(|session| {
        if let Some(level) = args.thinking
            && let Some(note) = harness.set_thinking(&session, level)?.note
        {
            eprintln!("reins: {}", reins_ai::visible(&note));
        }
        if let Some(tools) = &args.tools {
            harness.set_tools(&session, tools)?;
        }
        Ok(session)
    });
    // A slash command (`/compact`, a template, `/skill:name`) is the harness's to carry out.
    let executed = match started {
        Ok(session) => harness.execute(&session, &prompt).await,
        Err(err) => Err(err),
    };
    let started = match executed {
        Ok(Executed::Started(started)) => started,
        Ok(Executed::Done { session_id, output }) => return command_done(args.json, &session_id, &output),
        Err(err) => return fail(&err.to_string()),
    };
    let signalled = cancel_on_signals(harness, &started.session_id);
    let Ok(outcome) = started.done.await else {
        return fail("the run ended without an outcome");
    };
    let signal = signalled.load(Ordering::Relaxed);
    if signal != 0 && signal != SignalKind::interrupt().as_raw_value() {
        eprintln!("reins: stopped by signal {signal}");
        return ExitCode::from(u8::try_from(128 + signal).unwrap_or(1));
    }

    match outcome.reason {
        TurnEndReason::FinalAnswer => ExitCode::SUCCESS,
        TurnEndReason::Aborted => {
            eprintln!("reins: cancelled");
            ExitCode::from(130)
        }
        TurnEndReason::Error => fail(&harness.settings().run_failure(&outcome.messages, outcome.error.as_deref())),
        TurnEndReason::MaxTurns => fail("stopped: the run reached --max-turns before the model finished"),
        TurnEndReason::RepeatedAction => fail("stopped: the model repeated the same tool call twice in a row"),
        TurnEndReason::Deadline => fail("stopped: the run's time limit passed"),
        TurnEndReason::Budget => fail(&reins_harness::budget_stop(outcome.error.as_deref())),
        TurnEndReason::Refusal => fail(reins_harness::REFUSAL_STOP),
        TurnEndReason::ToolObservations => fail("stopped after tool results without a final answer"),
    }
}

/// The workspace a command works in: `cwd` as given, else the project of the current directory
/// ([`reins_harness::project_root`]), the rule every surface keys sessions by.
pub(crate) fn workspace_root(cwd: Option<&PathBuf>) -> std::io::Result<PathBuf> {
    if let Some(cwd) = cwd {
        return Ok(cwd.clone());
    }
    let here = std::env::current_dir()?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    Ok(reins_harness::project_root(&here, home.as_deref()))
}

/// Cancels the run on SIGINT, SIGTERM, SIGHUP or SIGQUIT: cancelling kills the process groups of
/// the commands it runs, so none outlives reins. A second signal exits at once. Gives the
/// number of the signal that came, 0 while none has.
fn cancel_on_signals(harness: &Arc<Harness>, session: &SessionId) -> Arc<AtomicI32> {
    let received = Arc::new(AtomicI32::new(0));
    let kinds = [SignalKind::interrupt(), SignalKind::terminate(), SignalKind::hangup(), SignalKind::quit()];
    for kind in kinds {
        let Ok(mut signals) = signal(kind) else { continue };
        let (harness, session, received) = (harness.clone(), session.clone(), received.clone());
        tokio::spawn(async move {
            if signals.recv().await.is_none() {
                return;
            }
            if received.swap(kind.as_raw_value(), Ordering::Relaxed) != 0 {
                crate::terminal_review::restore_terminal();
                std::process::exit(128 + kind.as_raw_value());
            }
            let _ = harness.cancel(&session);
            if signals.recv().await.is_some() {
                crate::terminal_review::restore_terminal();
                std::process::exit(128 + kind.as_raw_value());
            }
        });
    }
    received
}

/// The settings for a workspace: config files (the project's only when trusted), the
/// environment, the auth file. Config problems are reported, and the rest applies. At a
/// terminal, a trusted workspace's config files that changed since the user trusted it are
/// applied only if the user says so now.
pub fn load_settings(root: &std::path::Path) -> Settings {
    load_settings_with(root, || Settings::load(|name| std::env::var(name).ok(), Some(root)))
}

/// [`load_settings`] for a command that calls no model and runs no tool (`reins sessions`): the
/// system around is not probed (see [`Settings::load_offline`]).
pub fn load_offline_settings(root: &std::path::Path) -> Settings {
    load_settings_with(root, || Settings::load_offline(|name| std::env::var(name).ok(), Some(root)))
}

fn load_settings_with(root: &std::path::Path, load: impl Fn() -> Settings) -> Settings {
    let mut settings = load();
    if trust_again(&settings, root) {
        settings = load();
    }
    for diagnostic in &settings.diagnostics {
        eprintln!("reins: config: {}", reins_ai::visible(&diagnostic.to_string()));
    }
    settings
}

/// Asks, at a terminal, whether to trust the workspace's changed config files as they are now,
/// and records them if so.
fn trust_again(settings: &Settings, root: &std::path::Path) -> bool {
    use std::io::{BufRead, IsTerminal, Write};
    if settings.changed_config.is_empty() || !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return false;
    }
    let files: Vec<String> =
        settings.changed_config.iter().map(|file| format!("{:?}", file.display().to_string())).collect();
    eprint!(
        "reins: {} changed since you trusted this workspace (a command may have written it); \
         apply it as it is now? [y/N] ",
        files.join(" and ")
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() || !matches!(answer.trim(), "y" | "Y" | "yes") {
        return false;
    }
    match reins_harness::trust(&settings.config_dir, root) {
        Ok(_) => true,
        Err(err) => {
            eprintln!("reins: cannot record the trust: {err}");
            false
        }
    }
}

/// The session to run in; `model` switches it (a new session starts with it).
fn choose_session(harness: &Harness, choice: &SessionChoice, model: Option<&str>) -> Result<SessionId, HarnessError> {
    let session = match choice {
        SessionChoice::New | SessionChoice::None => return harness.new_session(None, model),
        SessionChoice::Continue => match harness.continue_recent()? {
            Some(session) => session,
            None => {
                eprintln!("reins: --continue: there is no session in this workspace yet; starting a new one");
                return harness.new_session(None, model);
            }
        },
        SessionChoice::Open(id_or_path) => harness.open_session(id_or_path)?,
        SessionChoice::Fork { session, entry_id } => {
            let source = match session {
                Some(id_or_path) => harness.open_session(id_or_path)?,
                None => harness.continue_recent()?.ok_or_else(|| {
                    HarnessError::InvalidArgument("--fork needs a session: there is none in this workspace".into())
                })?,
            };
            // At one of the user's messages the fork starts before it: the prompt takes its place.
            let landing = harness.landing(&source, entry_id)?;
            if let Some(text) = &landing.prompt {
                let quoted = format!("\"{}\"", reins_ai::visible_line(&reins_ai::shorten(text.trim(), 80)));
                eprintln!("reins: forked before your message {quoted}; the prompt takes its place");
            }
            harness.fork(&source, &landing.entry_id)?
        }
    };
    if let Some(model) = model {
        harness.set_model(&session, model)?;
    }
    Ok(session)
}

/// The `--thinking` values: named, so that completion offers them (not file names) and a typo
/// lists them.
fn thinking_levels() -> impl clap::builder::TypedValueParser<Value = ThinkingLevel> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(ThinkingLevel::ALL.map(ThinkingLevel::as_str)).try_map(|name| {
        ThinkingLevel::parse(&name).ok_or_else(|| format!("expected one of {}", ThinkingLevel::names()))
    })
}

/// One item of `--tools`: a tool's name, a glob or `read-only`.
fn tool_item(value: &str) -> Result<String, String> {
    ToolSet::parse(&[value]).map(|_| value.trim().to_string())
}

fn print_json_event(event: &AgentEvent) {
    // A tool may keep the run busy a while before it next waits: its start is shown at once.
    crate::json_out::print_json(
        &reins_wire::agent_event(event),
        matches!(event, AgentEvent::ToolExecutionStart { .. }),
    );
}

/// What a built-in command said: a line of text, or one JSON object with `--json`.
fn command_done(json: bool, session_id: &str, output: &str) -> ExitCode {
    let line = match json {
        true => serde_json::json!({"type": "command_done", "sessionId": session_id, "output": output}).to_string(),
        false => reins_ai::visible(output).into_owned(),
    };
    crate::json_out::print(&line, true);
    ExitCode::SUCCESS
}

fn fail(message: &str) -> ExitCode {
    // The events before it come first.
    crate::json_out::flush();
    // A provider's error text, a path: what fails may quote what a server or a file said.
    let one_line = message.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    eprintln!("reins: {}", reins_ai::visible_line(&one_line));
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use clap::error::ErrorKind;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> Result<RunArgs, ErrorKind> {
        let args = ["reins", "run"].into_iter().chain(args.iter().copied());
        match Cli::try_parse_from(args) {
            Ok(Cli { command: Command::Run(args) }) => Ok(args),
            Ok(other) => panic!("not a run: {other:?}"),
            Err(error) => Err(error.kind()),
        }
    }

    #[test]
    fn parses_options_and_joins_the_prompt() {
        let args = parse(&["--json", "-y", "--model", "m1", "--max-turns", "3", "read", "the README"]).unwrap();
        assert!(args.json && args.yes);
        assert_eq!((args.model.as_deref(), args.max_turns), (Some("m1"), Some(3)));
        assert_eq!(args.prompt().as_deref(), Some("read the README"));
        let args = parse(&["--tools", "read, grep,mcp__*", "--tools", "ls", "look"]).unwrap();
        assert_eq!(args.tools.unwrap(), ["read", "grep", "mcp__*", "ls"]);
        assert_eq!(args.words, ["look"]);
        assert_eq!(parse(&["--tools", "", "x"]).unwrap().tools.unwrap(), [""]);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(parse(&[]).unwrap_err(), ErrorKind::MissingRequiredArgument);
        assert_eq!(parse(&["  "]).unwrap().prompt(), None);
        assert_eq!(parse(&["--max-turns", "0", "x"]).unwrap_err(), ErrorKind::ValueValidation);
        assert_eq!(parse(&["--max-turns", "x", "x"]).unwrap_err(), ErrorKind::ValueValidation);
        assert_eq!(parse(&["--model", "", "x"]).unwrap_err(), ErrorKind::ValueValidation);
        assert_eq!(parse(&["--cwd", "/nonexistent/dir", "x"]).unwrap_err(), ErrorKind::ValueValidation);
        assert_eq!(parse(&["--bogus", "x"]).unwrap_err(), ErrorKind::UnknownArgument);
        assert_eq!(parse(&["--tools", "read,rg", "x"]).unwrap_err(), ErrorKind::ValueValidation);
        assert_eq!(parse(&["--continue", "--no-session", "x"]).unwrap_err(), ErrorKind::ArgumentConflict);
        assert_eq!(parse(&["--continue", "--session", "a", "x"]).unwrap_err(), ErrorKind::ArgumentConflict);
    }

    #[test]
    fn session_flags() {
        let session = |args: &[&str]| parse(args).unwrap().session();
        assert_eq!(session(&["x"]), SessionChoice::New);
        assert_eq!(session(&["-c", "x"]), SessionChoice::Continue);
        assert_eq!(session(&["--session", "ab12", "x"]), SessionChoice::Open("ab12".into()));
        assert_eq!(
            session(&["--session", "ab12", "--fork", "e1", "x"]),
            SessionChoice::Fork { session: Some("ab12".into()), entry_id: "e1".into() }
        );
        assert_eq!(session(&["-c", "--fork", "e1", "x"]), SessionChoice::Fork { session: None, entry_id: "e1".into() });
        assert_eq!(session(&["--no-session", "x"]), SessionChoice::None);
    }
}
