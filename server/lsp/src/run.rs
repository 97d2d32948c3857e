//! `reins run`: one prompt against the workspace, answered in the terminal or as JSON events.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use reins_agent::{AgentEvent, TurnEndReason};
use reins_ai::Content;
use reins_harness::{
    ApprovalPolicy, Harness, HarnessError, HarnessEvent, HarnessEventSink, HarnessOptions, LiveSettings, SessionId,
    Settings,
};
use reins_tools::{FsWorkspace, Workspace};
use tokio::signal::unix::{SignalKind, signal};

use crate::terminal::{HumanOutput, TerminalApprover};

#[derive(Debug, Default)]
pub struct RunArgs {
    pub model: Option<String>,
    pub yes: bool,
    pub json: bool,
    pub max_turns: Option<u32>,
    pub cwd: Option<PathBuf>,
    pub session: SessionChoice,
    pub prompt: String,
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
    pub fn parse(args: impl Iterator<Item = OsString>) -> Result<Self, String> {
        use lexopt::prelude::*;
        let mut parser = lexopt::Parser::from_args(args);
        let mut out = RunArgs::default();
        let mut words: Vec<String> = Vec::new();
        let (mut continue_recent, mut session, mut fork, mut no_session) = (false, None, None, false);
        let err = |e: lexopt::Error| e.to_string();
        while let Some(arg) = parser.next().map_err(err)? {
            match arg {
                Long("model") | Short('m') => out.model = Some(parser.value().map_err(err)?.string().map_err(err)?),
                Long("yes") | Short('y') => out.yes = true,
                Long("json") => out.json = true,
                Long("max-turns") => {
                    let n: u32 = parser.value().map_err(err)?.parse().map_err(err)?;
                    if n == 0 {
                        return Err("--max-turns must be at least 1".into());
                    }
                    out.max_turns = Some(n);
                }
                Long("cwd") | Short('C') => out.cwd = Some(parser.value().map_err(err)?.into()),
                Long("continue") | Short('c') => continue_recent = true,
                Long("session") | Short('s') => session = Some(parser.value().map_err(err)?.string().map_err(err)?),
                Long("fork") => fork = Some(parser.value().map_err(err)?.string().map_err(err)?),
                Long("no-session") => no_session = true,
                Value(word) => words.push(word.string().map_err(err)?),
                _ => return Err(arg.unexpected().to_string()),
            }
        }
        out.prompt = words.join(" ");
        out.session = match (continue_recent, session, fork, no_session) {
            (false, None, None, false) => SessionChoice::New,
            (true, None, None, false) => SessionChoice::Continue,
            (false, Some(session), None, false) => SessionChoice::Open(session),
            (_, session, Some(entry_id), false) => SessionChoice::Fork { session, entry_id },
            (false, None, None, true) => SessionChoice::None,
            _ => return Err("--continue, --session and --no-session exclude each other".into()),
        };
        if out.prompt.trim().is_empty() {
            return Err("run needs a prompt".into());
        }
        Ok(out)
    }
}

pub fn main(args: RunArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => return fail(&format!("cannot start the async runtime: {err}")),
    };
    runtime.block_on(run(args))
}

async fn run(args: RunArgs) -> ExitCode {
    let root = match args.cwd.clone().map(Ok).unwrap_or_else(std::env::current_dir) {
        Ok(root) => root,
        Err(err) => return fail(&format!("cannot read the current directory: {err}")),
    };
    let mut settings = load_settings(&root);
    // The command line's word goes over the config's.
    if args.yes {
        settings.approval = ApprovalPolicy::approve_all();
    }
    if let Some(max_turns) = args.max_turns {
        settings.max_turns = Some(max_turns);
    }
    let workspace: Arc<dyn Workspace> = match FsWorkspace::new(vec![root]) {
        Ok(workspace) => Arc::new(workspace),
        Err(err) => return fail(&err.to_string()),
    };
    let events: HarnessEventSink = if args.json {
        Arc::new(|event: HarnessEvent| print_json_event(&event.event))
    } else {
        let human = HumanOutput::new();
        Arc::new(move |event: HarnessEvent| human.show(&event.event))
    };
    let persist = args.session != SessionChoice::None;
    let harness = Harness::new(HarnessOptions {
        settings: LiveSettings::new(settings),
        workspace,
        provider: None,
        approver: Arc::new(TerminalApprover),
        events,
        date: today(),
        persist,
    });

    let started = choose_session(&harness, &args.session, args.model.as_deref())
        .and_then(|session| harness.send(&session, vec![Content::text(args.prompt.clone())]));
    let started = match started {
        Ok(started) => started,
        Err(err) => return fail(&err.to_string()),
    };
    let signalled = cancel_on_signals(&harness, &started.session_id);
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
        TurnEndReason::ToolObservations => fail("stopped after tool results without a final answer"),
    }
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
                std::process::exit(128 + kind.as_raw_value());
            }
            let _ = harness.cancel(&session);
            if signals.recv().await.is_some() {
                std::process::exit(128 + kind.as_raw_value());
            }
        });
    }
    received
}

/// The settings for a workspace: config files (the project's only when trusted), the
/// environment, the auth file. Config problems are reported, and the rest applies.
pub fn load_settings(root: &std::path::Path) -> Settings {
    let settings = Settings::load(|name| std::env::var(name).ok(), Some(root));
    for diagnostic in &settings.diagnostics {
        eprintln!("reins: config: {diagnostic}");
    }
    settings
}

/// The session to run in; `model` switches it (a new session starts with it).
fn choose_session(harness: &Harness, choice: &SessionChoice, model: Option<&str>) -> Result<SessionId, HarnessError> {
    let session = match choice {
        SessionChoice::New | SessionChoice::None => return harness.new_session(None, model),
        SessionChoice::Continue => match harness.continue_recent()? {
            Some(session) => session,
            None => return harness.new_session(None, model),
        },
        SessionChoice::Open(id_or_path) => harness.open_session(id_or_path)?,
        SessionChoice::Fork { session, entry_id } => {
            let source = match session {
                Some(id_or_path) => harness.open_session(id_or_path)?,
                None => harness.continue_recent()?.ok_or_else(|| {
                    HarnessError::InvalidArgument("--fork needs a session: there is none in this workspace".into())
                })?,
            };
            harness.fork(&source, entry_id)?
        }
    };
    if let Some(model) = model {
        harness.set_model(&session, model)?;
    }
    Ok(session)
}

fn print_json_event(event: &AgentEvent) {
    use std::io::Write;
    let line = crate::lsp::to_proto::agent_event(event).to_string();
    let mut stdout = std::io::stdout().lock();
    // A closed pipe only means nobody is listening any more.
    let _ = writeln!(stdout, "{line}").and_then(|_| stdout.flush());
}

fn fail(message: &str) -> ExitCode {
    let one_line = message.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    eprintln!("reins: {one_line}");
    ExitCode::FAILURE
}

/// Today's date, `YYYY-MM-DD`, in UTC.
fn today() -> String {
    humantime::format_rfc3339(std::time::SystemTime::now()).to_string().chars().take(10).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<RunArgs, String> {
        RunArgs::parse(args.iter().map(OsString::from))
    }

    #[test]
    fn parses_options_and_joins_the_prompt() {
        let args = parse(&["--json", "-y", "--model", "m1", "--max-turns", "3", "read", "the README"]).unwrap();
        assert!(args.json && args.yes);
        assert_eq!((args.model.as_deref(), args.max_turns), (Some("m1"), Some(3)));
        assert_eq!(args.prompt, "read the README");
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(parse(&[]).unwrap_err(), "run needs a prompt");
        assert_eq!(parse(&["--max-turns", "0", "x"]).unwrap_err(), "--max-turns must be at least 1");
        assert!(parse(&["--bogus", "x"]).unwrap_err().contains("--bogus"));
        assert!(parse(&["--continue", "--no-session", "x"]).unwrap_err().contains("exclude"));
    }

    #[test]
    fn session_flags() {
        assert_eq!(parse(&["x"]).unwrap().session, SessionChoice::New);
        assert_eq!(parse(&["-c", "x"]).unwrap().session, SessionChoice::Continue);
        assert_eq!(parse(&["--session", "ab12", "x"]).unwrap().session, SessionChoice::Open("ab12".into()));
        assert_eq!(
            parse(&["--session", "ab12", "--fork", "e1", "x"]).unwrap().session,
            SessionChoice::Fork { session: Some("ab12".into()), entry_id: "e1".into() }
        );
        assert_eq!(parse(&["--no-session", "x"]).unwrap().session, SessionChoice::None);
    }
}
