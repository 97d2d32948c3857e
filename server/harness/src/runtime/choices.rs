//! What a session chose for itself — how hard its model thinks, which tools it offers — recorded
//! in its file (pi's `thinking_level_change`, reins's `active_tools_change`, which pi passes over)
//! so that a resumed session keeps it, and what the settings give where it chose nothing. Also
//! what a session cost, call by call.

use reins_ai::{Model, ThinkingLevel, Usage};
use reins_session::{CallUsage, EntryKind, SessionContext};

use super::{Harness, LiveSession, lock, session_error};
use crate::error::HarnessError;
use reins_settings::Settings;
use reins_settings::ToolSet;

/// A session's own choices; `None` follows the settings in force.
#[derive(Debug, Default)]
pub(super) struct Choices {
    pub(super) thinking: Option<ThinkingLevel>,
    /// Its tool set: from `--tools`, `reins.session.setTools`, or what its file records (pi 1.6
    /// records the tools it offered too).
    pub(super) tools: Option<ToolSet>,
    /// The model and level the user was last told cannot go together, so it is said once.
    noted: Option<(String, ThinkingLevel)>,
}

/// A thinking level put in force, and why it changes nothing for the session's model, if so.
#[derive(Debug, Clone, PartialEq)]
pub struct ThinkingSet {
    pub level: ThinkingLevel,
    pub note: Option<String>,
}

/// A tool set put in force: as given (`read-only` spelled out), and the built-in tools it offers
/// the session's model (the MCP servers' tools it names join at each turn, once their servers
/// are up).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsSet {
    pub tools: Vec<String>,
    pub offered: Vec<String>,
}

/// What a session cost: the calls of its current branch, and every call it records.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionUsage {
    pub calls: Vec<CallUsage>,
    /// Every branch, and the summaries of compactions and branch summaries.
    pub total: Usage,
}

impl Choices {
    /// Takes the choices recorded on the file's current path.
    pub(super) fn adopt(&mut self, context: &SessionContext) {
        self.thinking = context.thinking_level.as_deref().and_then(ThinkingLevel::parse);
        self.tools = context.active_tools.as_deref().map(ToolSet::recorded);
    }
}

impl Harness {
    /// Sets how hard the session's model thinks, from its next turn; recorded in the session file
    /// when it differs from what the session chose before. The answer says when the model cannot
    /// be told (it does not reason, or its API takes no level).
    pub fn set_thinking(&self, session_id: &str, level: ThinkingLevel) -> Result<ThinkingSet, HarnessError> {
        let session = self.session(session_id)?;
        let changed = lock(&session.choices).thinking != Some(level);
        if changed && let Some(file) = &session.file {
            let mut file = lock(file);
            file.append(EntryKind::ThinkingLevelChange { thinking_level: level.as_str().to_string() })
                .and_then(|_| file.flush())
                .map_err(session_error)?;
        }
        lock(&session.choices).thinking = Some(level);
        session.agent.set_thinking(Some(level));
        let model = session.agent.model();
        let note = self.settings().thinking_note(&model, level);
        // Said here, so not again at the next run.
        lock(&session.choices).noted = note.as_ref().map(|_| (address(&model), level));
        Ok(ThinkingSet { level, note })
    }

    /// Chooses the tools the session offers the model from its next turn: names and globs (see
    /// [`ToolSet`]); recorded in the session file when it differs from the session's set before,
    /// so the session keeps it when resumed. The system prompt follows at the next run.
    pub fn set_tools<S: AsRef<str>>(&self, session_id: &str, items: &[S]) -> Result<ToolsSet, HarnessError> {
        let set = ToolSet::parse(items).map_err(HarnessError::InvalidArgument)?;
        let session = self.session(session_id)?;
        let changed = lock(&session.choices).tools.as_ref() != Some(&set);
        if changed && let Some(file) = &session.file {
            let mut file = lock(file);
            file.append(EntryKind::ActiveToolsChange { tools: set.items().to_vec() })
                .and_then(|_| file.flush())
                .map_err(session_error)?;
        }
        let tools = set.items().to_vec();
        lock(&session.choices).tools = Some(set);
        self.refresh_tools(&session);
        let offered = session.toolbox.offered_builtin().iter().map(|tool| tool.name().to_string()).collect();
        Ok(ToolsSet { tools, offered })
    }

    /// Puts the session's tool set in force (its own, else the settings'), and writes the system
    /// prompt again for the built-in tools it offers when they changed: it speaks of what they
    /// can do, so an ask-only session is not told how to edit.
    pub(super) fn refresh_tools(&self, session: &LiveSession) {
        let set = lock(&session.choices).tools.clone().or_else(|| self.settings().tools_enabled.clone());
        session.toolbox.set_offered(set);
        let offered = session.toolbox.offered_builtin();
        let names: Vec<String> = offered.iter().map(|tool| tool.name().to_string()).collect();
        let mut prompted = lock(&session.prompted);
        if *prompted != names {
            session.agent.set_system_prompt(self.system_prompt(&offered));
            *prompted = names;
        }
    }

    /// The thinking level in force in a session: its own, else the settings' (`None`: the
    /// provider's default).
    pub fn thinking(&self, session_id: &str) -> Result<Option<ThinkingLevel>, HarnessError> {
        let session = self.session(session_id)?;
        Ok(session.thinking_in_force(&self.settings()))
    }

    /// What a session cost: the model calls on its current branch, each with its usage and cost
    /// (cache reads and writes apart), and the total of every call the file records.
    pub fn usage(&self, session_id: &str) -> Result<SessionUsage, HarnessError> {
        let session = self.session(session_id)?;
        let file = lock(session.file()?);
        let calls = file.tree().path_usage(None).map_err(session_error)?;
        Ok(SessionUsage { calls, total: file.tree().total_usage() })
    }
}

impl LiveSession {
    pub(super) fn thinking_in_force(&self, settings: &Settings) -> Option<ThinkingLevel> {
        lock(&self.choices).thinking.or(settings.thinking)
    }

    /// Puts the session's level in force for a run with `model`; the first run of a model that
    /// cannot take the level says so (once per model and level).
    pub(super) fn apply_thinking(&self, settings: &Settings, model: &Model) -> Option<String> {
        let level = self.thinking_in_force(settings);
        self.agent.set_thinking(level);
        let note = settings.thinking_note(model, level?)?;
        let key = (address(model), level?);
        let mut choices = lock(&self.choices);
        if choices.noted.as_ref() == Some(&key) {
            return None;
        }
        choices.noted = Some(key);
        Some(note)
    }

    /// US dollars the session has spent on model calls: every call its file records, or (not
    /// kept on disk) every answer in its conversation.
    pub(super) fn spent(&self) -> f64 {
        self.used().cost.total
    }

    /// The tokens and dollars of every model call the session made (see [`Self::spent`]).
    pub(super) fn used(&self) -> reins_ai::Usage {
        match &self.file {
            Some(file) => lock(file).tree().total_usage(),
            None => {
                let mut total = reins_ai::Usage::default();
                for message in self.agent.messages() {
                    if let reins_ai::Message::Assistant(assistant) = message {
                        total.add(&assistant.usage);
                    }
                }
                total
            }
        }
    }
}

fn address(model: &Model) -> String {
    format!("{}/{}", model.provider, model.id)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use reins_ai::{AssistantMessage, Content, EventSink, Provider, Request, StopReason};
    use reins_review::{ApprovalRequest, Approver, Verdict};
    use reins_tools::FsWorkspace;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::{HarnessOptions, LiveSettings};

    /// Answers "fine" at a cost of a cent, keeping each request's thinking level, and the names
    /// of its tools with whether its system prompt speaks of proposals (edits and commands).
    #[derive(Default)]
    struct Cent(Mutex<Vec<Option<ThinkingLevel>>>, Mutex<Vec<(Vec<String>, bool)>>);

    #[async_trait]
    impl Provider for Cent {
        async fn stream(&self, request: &Request, _: EventSink<'_>, _: &CancellationToken) -> AssistantMessage {
            lock(&self.0).push(request.thinking);
            let tools = request.tools.iter().map(|tool| tool.name.clone()).collect();
            lock(&self.1).push((tools, request.system_prompt.contains("proposals")));
            let mut usage = Usage { input: 100, output: 10, ..Usage::default() };
            usage.cost.total = 0.01;
            AssistantMessage {
                content: vec![Content::text("fine")],
                provider: request.model.provider.clone(),
                model: request.model.id.clone(),
                usage,
                stop_reason: StopReason::Stop,
                ..AssistantMessage::default()
            }
        }
    }

    struct NoApprover;

    #[async_trait]
    impl Approver for NoApprover {
        async fn decide(&self, _: ApprovalRequest<'_>, _: &CancellationToken) -> Verdict {
            Verdict::Reject { reason: "no".into() }
        }
    }

    fn harness(dir: &std::path::Path, provider: Arc<Cent>, adjust: impl FnOnce(&mut Settings)) -> Arc<Harness> {
        let home = dir.join("home");
        let mut settings = Settings::from_env(|name| (name == "REINS_HOME").then(|| home.display().to_string()));
        adjust(&mut settings);
        Harness::new(HarnessOptions {
            settings: LiveSettings::new(settings),
            workspace: Arc::new(FsWorkspace::new(vec![dir.to_path_buf()]).unwrap()),
            provider: Some(provider),
            approver: Arc::new(NoApprover),
            diagnostics: None,
            events: Arc::new(|_| {}),
            date: "2026-11-30".into(),
            persist: true,
            warn: Arc::new(|_| {}),
        })
    }

    async fn send(harness: &Arc<Harness>, session: &str, text: &str) -> reins_agent::RunOutcome {
        harness.send(session, vec![Content::text(text)]).unwrap().done.await.unwrap()
    }

    #[tokio::test]
    async fn a_sessions_thinking_level_is_recorded_and_kept_when_it_is_resumed() {
        let tmp = tempfile::tempdir().unwrap();
        let provider = Arc::new(Cent::default());
        let first = harness(tmp.path(), provider.clone(), |settings| settings.thinking = Some(ThinkingLevel::Low));
        let session = first.new_session(None, Some("anthropic/claude-sonnet-4-5")).unwrap();
        send(&first, &session, "one").await;
        let set = first.set_thinking(&session, ThinkingLevel::High).unwrap();
        assert_eq!(set, ThinkingSet { level: ThinkingLevel::High, note: None });
        // Setting it again records nothing more.
        first.set_thinking(&session, ThinkingLevel::High).unwrap();
        send(&first, &session, "two").await;
        let levels = |file: &std::path::Path| {
            std::fs::read_to_string(file)
                .unwrap()
                .lines()
                .filter(|line| line.contains("thinking_level_change"))
                .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["thinkingLevel"].to_string())
                .collect::<Vec<_>>()
        };
        let path = first.list_sessions().unwrap()[0].path.clone();
        assert_eq!(levels(std::path::Path::new(&path)), [r#""high""#]);

        // Another process resumes it: the session's level wins over the settings'.
        let second = harness(tmp.path(), provider.clone(), |settings| settings.thinking = Some(ThinkingLevel::Minimal));
        let resumed = second.continue_recent().unwrap().unwrap();
        assert_eq!(second.thinking(&resumed).unwrap(), Some(ThinkingLevel::High));
        send(&second, &resumed, "three").await;
        let sent = lock(&provider.0).clone();
        assert_eq!(sent, [Some(ThinkingLevel::Low), Some(ThinkingLevel::High), Some(ThinkingLevel::High)]);
        // A new session follows the settings.
        let fresh = second.new_session(None, None).unwrap();
        assert_eq!(second.thinking(&fresh).unwrap(), Some(ThinkingLevel::Minimal));
    }

    #[tokio::test]
    async fn a_sessions_tool_set_is_recorded_and_kept_when_it_is_resumed() {
        let tmp = tempfile::tempdir().unwrap();
        let provider = Arc::new(Cent::default());
        let enabled = ToolSet::parse(&["read", "bash"]).unwrap();
        let first = harness(tmp.path(), provider.clone(), |settings| settings.tools_enabled = Some(enabled));
        let session = first.new_session(None, Some("anthropic/claude-sonnet-4-5")).unwrap();
        send(&first, &session, "one").await;
        let set = first.set_tools(&session, &["read-only"]).unwrap();
        let read_only = ["read", "ls", "grep", "find", "todo"].map(String::from).to_vec();
        let mut spelled = read_only.clone();
        spelled.extend(["diagnostics".into(), "lsp".into()]);
        assert_eq!(set, ToolsSet { tools: spelled, offered: read_only.clone() });
        // Setting it again records nothing more; an unknown tool changes nothing.
        first.set_tools(&session, &["read-only"]).unwrap();
        let err = first.set_tools(&session, &["read", "rg"]).unwrap_err();
        assert!(matches!(&err, HarnessError::InvalidArgument(reason) if reason.starts_with("unknown tool `rg`")));
        send(&first, &session, "two").await;
        let path = first.list_sessions().unwrap()[0].path.clone();
        let recorded: Vec<String> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|line| line.contains("active_tools_change"))
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["tools"].to_string())
            .collect();
        assert_eq!(recorded, [r#"["read","ls","grep","find","todo","diagnostics","lsp"]"#]);

        // Another process resumes it: the session's set wins over the settings' (all tools).
        let second = harness(tmp.path(), provider.clone(), |_| {});
        let resumed = second.continue_recent().unwrap().unwrap();
        send(&second, &resumed, "three").await;
        // A new session follows the settings.
        let fresh = second.new_session(None, Some("anthropic/claude-sonnet-4-5")).unwrap();
        send(&second, &fresh, "four").await;
        let all = ["read", "write", "edit", "bash", "ls", "grep", "find", "todo", "task"].map(String::from).to_vec();
        let sent = lock(&provider.1).clone();
        // The system prompt speaks of proposals only while a tool that makes them is offered.
        let expected = [
            (vec!["read".to_string(), "bash".to_string()], true),
            (read_only.clone(), false),
            (read_only, false),
            (all, true),
        ];
        assert_eq!(sent, expected);
    }

    #[tokio::test]
    async fn a_model_that_cannot_think_is_named_once() {
        let tmp = tempfile::tempdir().unwrap();
        let harness = harness(tmp.path(), Arc::new(Cent::default()), |_| {});
        let session = harness.new_session(None, Some("qwen2.5-coder:7b")).unwrap();
        let set = harness.set_thinking(&session, ThinkingLevel::High).unwrap();
        expect_test::expect![[r#"openai-compatible/qwen2.5-coder:7b does not reason, so thinking level high changes nothing (mark a model that does with reasoning = true in its [[models]] entry)"#]]
        .assert_eq(set.note.as_deref().unwrap());
        let live = harness.session(&session).unwrap();
        let settings = harness.settings();
        let model = live.agent.model();
        assert_eq!(live.apply_thinking(&settings, &model), None, "said when it was set");
        assert_eq!(harness.set_thinking(&session, ThinkingLevel::Off).unwrap().note, None);
        let o3 = settings.resolve_model(Some("openai/o3"));
        assert_eq!(settings.thinking_note(&o3, ThinkingLevel::XHigh), None);
        let reasoner = settings.resolve_model(Some("deepseek/deepseek-reasoner"));
        assert!(settings.thinking_note(&reasoner, ThinkingLevel::Low).unwrap().contains("takes no reasoning_effort"));
    }

    #[tokio::test]
    async fn a_session_budget_stops_the_run_that_would_pass_it_and_counts_earlier_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let provider = Arc::new(Cent::default());
        let harness = harness(tmp.path(), provider.clone(), |settings| settings.max_cost_usd = Some(0.025));
        let session = harness.new_session(None, Some("anthropic/claude-sonnet-4-5")).unwrap();
        for text in ["one", "two"] {
            assert_eq!(send(&harness, &session, text).await.reason, reins_agent::TurnEndReason::FinalAnswer);
        }
        // $0.02 spent: the third call, estimated from the last (100 tokens in, 10 out), would
        // pass $0.025 only if it cost more than a half cent; at Sonnet's prices it does not…
        assert_eq!(send(&harness, &session, "three").await.reason, reins_agent::TurnEndReason::FinalAnswer);
        // …but with $0.03 spent nothing is left.
        let outcome = send(&harness, &session, "four").await;
        assert_eq!(outcome.reason, reins_agent::TurnEndReason::Budget);
        assert!(outcome.error.unwrap().contains("more than the $0.0000 left of the budget"));
        assert_eq!(lock(&provider.0).len(), 3);
        let usage = harness.usage(&session).unwrap();
        assert_eq!((usage.calls.len(), (usage.total.cost.total * 100.0).round()), (3, 3.0));
    }
}
