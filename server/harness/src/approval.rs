//! The approval gate of one session: the `before_tool_call` hook that evaluates the approval
//! policy in force ([`reins_review::without_asking`]) and, where it says `ask`, asks the
//! [`Approver`] — telling it which session and run the call belongs to, since tool-call ids come
//! from the model and repeat across sessions.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use reins_agent::{Gate, Proposal, ToolLook};
use reins_ai::ToolCall;
use reins_review::{ApprovalRequest, Approver, without_asking};
use tokio_util::sync::CancellationToken;

use crate::runtime::{RunId, SessionId, lock};
use crate::skills::AllowedTools;
use reins_settings::LiveSettings;

pub(crate) struct ApprovalGate {
    pub session_id: SessionId,
    /// The session's run in progress (see `LiveSession::running`).
    pub running: Arc<Mutex<Option<RunId>>>,
    /// Tools the user allowed for the rest of the session when accepting.
    pub allowed: Arc<Mutex<HashSet<String>>>,
    /// Tools the skill that started the run pre-approves (`allowed-tools`); `deny` still wins.
    pub skill_allowed: Arc<Mutex<AllowedTools>>,
    pub settings: LiveSettings,
    pub approver: Arc<dyn Approver>,
}

impl ApprovalGate {
    pub async fn before_tool_call(
        &self,
        call: &ToolCall,
        look: &ToolLook,
        proposal: Option<&Proposal>,
        cancel: &CancellationToken,
    ) -> Gate {
        let allowed =
            lock(&self.allowed).contains(&call.name) || lock(&self.skill_allowed).covers(&call.name, proposal);
        let policy = &self.settings.get().approval;
        let mut answer = without_asking(policy, &call.name, allowed, proposal.is_some());
        // A server's word that its tool changes nothing, where the user said to take it.
        let hinted = matches!(proposal, Some(Proposal::ServerCall(server_call)) if server_call.read_only_hint);
        if answer.is_none() && hinted && policy.trusts_mcp_read_only() {
            answer = Some(Gate::Allow);
        }
        let (Some(proposal), None) = (proposal, &answer) else { return answer.unwrap_or(Gate::Allow) };
        let run_id = lock(&self.running).clone().unwrap_or_default();
        let request = ApprovalRequest { session_id: &self.session_id, run_id: &run_id, call, look, proposal };
        let (gate, allow_for_session) = self.approver.decide(request, cancel).await.into_gate();
        if allow_for_session {
            lock(&self.allowed).insert(call.name.clone());
        }
        gate
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use async_trait::async_trait;
    use reins_agent::CommandProposal;
    use reins_review::{ApprovalPolicy, Policy, Verdict};

    use super::*;
    use reins_settings::Settings;

    /// Writes down who asked, and allows the tool for the session.
    struct Recorder(Mutex<Vec<String>>);

    #[async_trait]
    impl Approver for Recorder {
        async fn decide(&self, request: ApprovalRequest<'_>, _: &CancellationToken) -> Verdict {
            let asked = format!("{} {}/{} {}", request.call.name, request.session_id, request.run_id, request.call.id);
            lock(&self.0).push(asked);
            Verdict::Accept { changed: None, allow_for_session: true }
        }
    }

    fn gate(policy: ApprovalPolicy, approver: Arc<Recorder>) -> ApprovalGate {
        let mut settings = Settings::from_env(|_| None);
        settings.approval = policy;
        ApprovalGate {
            session_id: "s1".into(),
            running: Arc::new(Mutex::new(Some("r7".into()))),
            allowed: Arc::default(),
            skill_allowed: Arc::default(),
            settings: LiveSettings::new(settings),
            approver,
        }
    }

    async fn call(gate: &ApprovalGate, tool: &str) -> Gate {
        run(gate, tool, "ls").await
    }

    /// A call of `tool` proposing to run `command`.
    async fn run(gate: &ApprovalGate, tool: &str, command: &str) -> Gate {
        let call = ToolCall { id: "c1".into(), name: tool.into(), arguments: serde_json::json!({}) };
        let proposal =
            Proposal::Command(CommandProposal { command: command.into(), cwd: PathBuf::from("/w"), timeout_secs: 120 });
        let look = ToolLook::plain(tool, &call.arguments);
        gate.before_tool_call(&call, &look, Some(&proposal), &CancellationToken::new()).await
    }

    #[tokio::test]
    async fn a_skills_bash_rule_passes_its_plain_commands_asks_for_the_rest_and_deny_wins() {
        let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
        let gate = gate(ApprovalPolicy::default(), recorder.clone());
        let rule = reins_review::CommandRule::parse("git:*").unwrap();
        *lock(&gate.skill_allowed) = AllowedTools { tools: Vec::new(), commands: vec![rule] };
        assert_eq!(run(&gate, "bash", "git status").await, Gate::Allow);
        assert!(lock(&recorder.0).is_empty(), "a plain git command is not asked about");
        assert_eq!(run(&gate, "bash", "git status; rm -rf x").await, Gate::Allow);
        assert_eq!(*lock(&recorder.0), ["bash s1/r7 c1"], "a compound command is asked about");
        // The user's `deny` wins over the skill's rule.
        let gate = self::gate(ApprovalPolicy::default(), recorder.clone());
        *lock(&gate.skill_allowed) =
            AllowedTools { tools: Vec::new(), commands: vec![reins_review::CommandRule::parse("git:*").unwrap()] };
        let mut denied = ApprovalPolicy::default();
        denied.set("bash", Policy::Deny);
        let mut settings = (*gate.settings.get()).clone();
        settings.approval = denied;
        gate.settings.set(settings);
        assert!(matches!(run(&gate, "bash", "git status").await, Gate::Block { .. }), "deny wins");
        assert_eq!(lock(&recorder.0).len(), 1);
    }

    #[tokio::test]
    async fn the_approver_learns_the_session_and_run_and_allowing_for_the_session_stops_asking() {
        let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
        let gate = gate(ApprovalPolicy::default(), recorder.clone());
        assert_eq!(call(&gate, "read").await, Gate::Allow);
        assert_eq!(call(&gate, "bash").await, Gate::Allow);
        assert_eq!(call(&gate, "bash").await, Gate::Allow);
        assert_eq!(call(&gate, "edit").await, Gate::Allow);
        assert_eq!(*lock(&recorder.0), ["bash s1/r7 c1", "edit s1/r7 c1"]);
    }

    #[tokio::test]
    async fn the_policy_in_force_applies_from_the_next_call() {
        let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
        let gate = gate(ApprovalPolicy::default(), recorder.clone());
        let mut settings = (*gate.settings.get()).clone();
        settings.approval.set("bash", Policy::Deny);
        gate.settings.set(settings);
        assert!(
            matches!(call(&gate, "bash").await, Gate::Block { reason } if reason.contains("do not allow the `bash` tool"))
        );
        assert!(lock(&recorder.0).is_empty());
    }
}
