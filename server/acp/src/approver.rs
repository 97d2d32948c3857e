//! The approver of one ACP session: a call the approval policy holds becomes
//! `session/request_permission` with the tool call (its diff, command or arguments) and four
//! options — allow once, allow always (the harness then stops asking for that tool in this
//! session), reject once, reject always (reins then refuses the tool in this session without
//! asking). A rejection reaches the model as the tool's result, in the review core's words, as
//! in the LSP flow. When the turn is cancelled meanwhile, the request counts as cancelled and
//! the call as rejected.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest, SessionId,
    ToolCallContent, ToolCallId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use async_trait::async_trait;
use reins_agent::Proposal;
use reins_harness::{ApprovalRequest, Approver, Verdict};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::events::{Events, Input};
use crate::to_proto;
use reins_agent::lock;

pub const ALLOW_ONCE: &str = "allow_once";
pub const ALLOW_ALWAYS: &str = "allow_always";
pub const REJECT_ONCE: &str = "reject_once";
pub const REJECT_ALWAYS: &str = "reject_always";

pub struct AcpApprover {
    pub events: Events,
    pub cwd: PathBuf,
    /// Tools the user rejected for the rest of the session.
    rejected: Mutex<HashSet<String>>,
}

impl AcpApprover {
    pub fn new(events: Events, cwd: PathBuf) -> Self {
        Self { events, cwd, rejected: Mutex::default() }
    }
}

#[async_trait]
impl Approver for AcpApprover {
    async fn decide(&self, request: ApprovalRequest<'_>, cancel: &CancellationToken) -> Verdict {
        let tool = request.call.name.as_str();
        let subject = subject(tool, request.proposal, &self.cwd);
        if lock(&self.rejected).contains(tool) {
            let reason = format!("the user rejected `{tool}` for the rest of this session; do not try it again");
            return Verdict::Reject { reason: reins_review::notes::rejected_reason(&subject, Some(&reason)) };
        }
        let permission = permission_request(&request, &self.cwd);
        let (answer, answered) = oneshot::channel();
        self.events.send(Input::Permission { request: Box::new(permission), answer });
        let outcome = tokio::select! {
            answered = answered => answered.ok(),
            () = cancel.cancelled() => None,
        };
        let chosen = match outcome {
            Some(Ok(response)) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => Some(selected.option_id.0.to_string()),
                _ => None,
            },
            Some(Err(err)) => {
                tracing::warn!("session/request_permission failed: {}", err.message);
                None
            }
            None => None,
        };
        let session_id = request.session_id.to_string();
        match chosen.as_deref() {
            Some(ALLOW_ONCE) => self.started(&session_id, request.call.id.as_str(), false, tool),
            Some(ALLOW_ALWAYS) => self.started(&session_id, request.call.id.as_str(), true, tool),
            Some(REJECT_ALWAYS) => {
                lock(&self.rejected).insert(tool.to_string());
                Verdict::Reject { reason: reins_review::notes::rejected_reason(&subject, None) }
            }
            Some(REJECT_ONCE) => Verdict::Reject { reason: reins_review::notes::rejected_reason(&subject, None) },
            _ => {
                Verdict::Reject { reason: format!("The user cancelled before deciding on {subject}; it was not run.") }
            }
        }
    }
}

impl AcpApprover {
    /// The call goes ahead: the client sees it running.
    fn started(&self, session_id: &str, call_id: &str, always: bool, tool: &str) -> Verdict {
        if always {
            self.events.send(Input::Allowed { session_id: session_id.to_string(), tool: tool.to_string() });
        }
        let update = to_proto::tool_status(call_id, ToolCallStatus::InProgress);
        self.events.updates(session_id, vec![agent_client_protocol::v1::schema::SessionUpdate::ToolCallUpdate(update)]);
        Verdict::Accept { changed: None, allow_for_session: always }
    }
}

/// How the model is told about the call the user decided on.
fn subject(tool: &str, proposal: &Proposal, cwd: &std::path::Path) -> String {
    let shown = |path: &std::path::Path| reins_tools::display_path(path, cwd);
    match proposal {
        Proposal::FileChange(change) => format!("this {tool} of {}", shown(&change.path)),
        Proposal::FileChanges { files } => {
            let paths: Vec<String> = files.iter().map(|file| shown(&file.path)).collect();
            format!("this {tool} of {}", paths.join(", "))
        }
        Proposal::Command(command) => format!("the command `{}`", command.command),
        Proposal::ServerCall(_) => format!("this call of `{tool}`"),
    }
}

/// The request: the tool call as the client shows it, with what it would do, and the options.
pub fn permission_request(request: &ApprovalRequest<'_>, cwd: &std::path::Path) -> RequestPermissionRequest {
    let call = request.call;
    let content: Vec<ToolCallContent> = match request.proposal {
        Proposal::FileChange(change) => vec![to_proto::diff(change).into()],
        Proposal::FileChanges { files } => files.iter().map(|change| to_proto::diff(change).into()).collect(),
        Proposal::Command(command) => {
            let cwd = reins_tools::display_path(&command.cwd, cwd);
            vec![
                to_proto::text(format!(
                    "```sh\n{}\n```\nin {cwd} (timeout {} s)",
                    command.command, command.timeout_secs
                ))
                .into(),
            ]
        }
        Proposal::ServerCall(server_call) => {
            let arguments = serde_json::to_string_pretty(&server_call.arguments).unwrap_or_default();
            vec![
                to_proto::text(format!(
                    "MCP server `{}`, tool `{}`, with:\n```json\n{arguments}\n```",
                    server_call.server, server_call.tool
                ))
                .into(),
            ]
        }
    };
    let fields = ToolCallUpdateFields::new()
        .title(request.look.title.clone())
        .kind(to_proto::kind(request.look.kind))
        .status(ToolCallStatus::Pending)
        .locations(to_proto::locations(&request.look.locations, cwd))
        .raw_input(call.arguments.clone())
        .content(content);
    let tool_call = ToolCallUpdate::new(ToolCallId::new(call.id.as_str()), fields);
    let option = |id: &str, name: &str, kind| PermissionOption::new(id.to_string(), name.to_string(), kind);
    let options = vec![
        option(ALLOW_ONCE, "Allow", PermissionOptionKind::AllowOnce),
        option(ALLOW_ALWAYS, &format!("Always allow {}", call.name), PermissionOptionKind::AllowAlways),
        option(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
        option(REJECT_ALWAYS, &format!("Always reject {}", call.name), PermissionOptionKind::RejectAlways),
    ];
    RequestPermissionRequest::new(SessionId::new(request.session_id), tool_call, options)
}
