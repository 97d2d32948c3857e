//! Commands in the client's terminal: when the client advertises `terminal`, `bash` runs its
//! command through `terminal/create`, the tool call shows the terminal (a `terminal` content
//! block), and reins waits with `terminal/wait_for_exit`, kills on timeout or cancel with
//! `terminal/kill`, reads `terminal/output` and ends with `terminal/release`. The terminal runs
//! `reins sandbox-exec -- bash -c COMMAND`, its policy in a variable of the terminal's
//! environment, so the command keeps the sandbox and the secret-free environment it would have
//! had in reins's own pipe, and the client shows the command as the model wrote it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, EnvVariable, KillTerminalRequest, ReleaseTerminalRequest, SessionId, SessionUpdate,
    Terminal as TerminalContent, TerminalExitStatus, TerminalId, TerminalOutputRequest, ToolCallContent, ToolCallId,
    ToolCallUpdate, ToolCallUpdateFields, WaitForTerminalExitRequest,
};
use async_trait::async_trait;
use reins_agent::CommandProposal;
use reins_tools::{ExecPolicy, Terminal, TerminalRun};
use tokio_util::sync::CancellationToken;

use crate::events::Events;

/// Bytes of output the client keeps for us (it drops the start beyond that).
const OUTPUT_BYTE_LIMIT: u64 = 1024 * 1024;
/// How long the client has to answer the requests that do not wait for the command.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct AcpTerminal {
    pub cx: ConnectionTo<Client>,
    pub events: Events,
    pub session_id: Arc<OnceLock<String>>,
    /// Terminal ids by tool call, for the call's final update.
    pub shown: Mutex<Vec<(String, String)>>,
}

impl AcpTerminal {
    /// The terminal a call ran in, taken once.
    pub fn take(&self, tool_call_id: &str) -> Option<String> {
        let mut shown = reins_agent::lock(&self.shown);
        let at = shown.iter().position(|(call, _)| call == tool_call_id)?;
        Some(shown.remove(at).1)
    }
}

#[async_trait]
impl Terminal for AcpTerminal {
    async fn run(
        &self,
        tool_call_id: &str,
        command: &CommandProposal,
        policy: &ExecPolicy,
        roots: &[PathBuf],
        cancel: &CancellationToken,
    ) -> Result<TerminalRun, String> {
        let session = SessionId::new(self.session_id.get().ok_or("the session is not ready")?.as_str());
        let reins = std::env::current_exe().map_err(|err| format!("cannot find the reins program: {err}"))?;
        let (args, (name, value)) =
            reins_tools::sandbox_exec_invocation(policy, roots, &["bash", "-c", &command.command]);
        let create = CreateTerminalRequest::new(session.clone(), reins.display().to_string())
            .args(args)
            .env(vec![EnvVariable::new(name, value)])
            .cwd(command.cwd.clone())
            .output_byte_limit(OUTPUT_BYTE_LIMIT);
        let created = answer(self.cx.send_request(create).block_task()).await?;
        let id = created.terminal_id;
        reins_agent::lock(&self.shown).push((tool_call_id.to_string(), id.0.to_string()));
        let content = vec![ToolCallContent::Terminal(TerminalContent::new(id.clone()))];
        let update = ToolCallUpdate::new(ToolCallId::new(tool_call_id), ToolCallUpdateFields::new().content(content));
        self.events.updates(&session.0, vec![SessionUpdate::ToolCallUpdate(update)]);

        // However this ends — even dropped mid-way, as a cancelled run drops its tool call —
        // the command is killed and the terminal released.
        let mut cleanup = Cleanup { cx: self.cx.clone(), session: session.clone(), id: id.clone(), armed: true };
        let wait = self.cx.send_request(WaitForTerminalExitRequest::new(session.clone(), id.clone())).block_task();
        let timeout = tokio::time::sleep(Duration::from_secs(command.timeout_secs.max(1)));
        let exit: Option<TerminalExitStatus> = tokio::select! {
            exited = wait => exited.ok().map(|response| response.exit_status),
            () = timeout => None,
            () = cancel.cancelled() => return Ok(TerminalRun { cancelled: true, ..TerminalRun::default() }),
        };
        let timed_out = exit.is_none();
        if timed_out {
            let kill = KillTerminalRequest::new(session.clone(), id.clone());
            if let Err(err) = answer(self.cx.send_request(kill).block_task()).await {
                tracing::warn!("terminal/kill failed: {err}");
            }
        }
        let output =
            answer(self.cx.send_request(TerminalOutputRequest::new(session.clone(), id.clone())).block_task()).await;
        cleanup.armed = false;
        let release = ReleaseTerminalRequest::new(session, id);
        if let Err(err) = answer(self.cx.send_request(release).block_task()).await {
            tracing::debug!("terminal/release failed: {err}");
        }
        let output = output?;
        let status = exit.or(output.exit_status).unwrap_or_default();
        Ok(TerminalRun {
            output: output.output,
            truncated: output.truncated,
            exit_code: status.exit_code,
            signal: status.signal,
            timed_out,
            cancelled: false,
        })
    }
}

/// The client's answer within [`CLIENT_TIMEOUT`], or what went wrong.
async fn answer<T>(
    request: impl std::future::Future<Output = Result<T, agent_client_protocol::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(CLIENT_TIMEOUT, request).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(err)) => Err(format!("the editor answered with an error: {}", err.message)),
        Err(_) => Err(format!("the editor did not answer within {} s", CLIENT_TIMEOUT.as_secs())),
    }
}

/// Kills the command and releases its terminal when dropped armed, from a task of its own.
struct Cleanup {
    cx: ConnectionTo<Client>,
    session: SessionId,
    id: TerminalId,
    armed: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (cx, session, id) = (self.cx.clone(), self.session.clone(), self.id.clone());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        runtime.spawn(async move {
            let kill = KillTerminalRequest::new(session.clone(), id.clone());
            if let Err(err) = answer(cx.send_request(kill).block_task()).await {
                tracing::debug!("terminal/kill failed: {err}");
            }
            if let Err(err) = answer(cx.send_request(ReleaseTerminalRequest::new(session, id)).block_task()).await {
                tracing::debug!("terminal/release failed: {err}");
            }
        });
    }
}
