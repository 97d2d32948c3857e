//! What a run that stopped short tells the user, in the same words on every surface (the LSP
//! server's `agent_end`, ACP's last message, `reins run`'s exit line).

/// How a run ends when the model (or its provider's content filter) declined to answer.
pub const REFUSAL_STOP: &str = "stopped: the model refused to answer; rephrase the request or pick another model";

/// How a run stopped by the session budget ends: what the next call would have cost, and what to
/// do about it.
pub fn budget_stop(error: Option<&str>) -> String {
    let why = error.unwrap_or("the next model call would cost more than the budget has left");
    format!("stopped: {why} (limits.max_cost_usd); raise it in config.toml to go on")
}
