//! The session's choices a client offers the user: the model (those of the registry with a key at
//! hand), how hard it thinks (the levels the model takes), and the approval mode — as ACP config
//! options (categories `model`, `thought_level`, `mode`), and the mode also as the session modes
//! of clients that know only those. A change applies from the next turn (the model, the level,
//! the tools) or tool call (the approval) and is recorded in the session: the model and level as
//! `--model`/`--thinking` record them, the mode as a `reins.acp.mode` entry (with the tool set
//! it offers), so a loaded session comes back in the mode it was left in.

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue, SessionConfigSelectOption, SessionMode,
    SessionModeState,
};
use reins_ai::ThinkingLevel;
use reins_harness::{ApprovalPolicy, Harness, Policy};
use serde_json::json;

use crate::to_proto;

pub const MODEL: &str = "model";
pub const THINKING: &str = "thinking";
pub const MODE: &str = "mode";
/// The custom entry that records a session's mode.
const MODE_MARK: &str = "reins.acp.mode";
/// The tools whose proposals auto-edit applies without asking.
const EDIT_TOOLS: [&str; 3] = ["edit", "write", "apply_patch"];

/// How much the agent may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Edits, writes, commands and MCP calls ask (as the settings say).
    Ask,
    /// Edits and writes apply; commands and MCP calls ask.
    AutoEdit,
    /// Only the tools that read and search.
    ReadOnly,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Ask, Mode::AutoEdit, Mode::ReadOnly];

    pub fn id(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::AutoEdit => "auto-edit",
            Mode::ReadOnly => "read-only",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Ask => "Ask",
            Mode::AutoEdit => "Auto-edit",
            Mode::ReadOnly => "Read-only",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Mode::Ask => "Edits, writes and commands ask before they run",
            Mode::AutoEdit => "Edits and writes apply without asking; commands still ask",
            Mode::ReadOnly => "Only the tools that read and search: nothing is changed",
        }
    }

    pub fn parse(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|mode| mode.id() == id)
    }

    /// The approval policy of the mode, from the one the settings give: auto-edit turns the
    /// edit tools' `ask` into `auto`; a `deny` stays whatever the mode.
    pub fn approval(self, configured: &ApprovalPolicy) -> ApprovalPolicy {
        let mut policy = configured.clone();
        if self == Mode::AutoEdit {
            for tool in EDIT_TOOLS {
                if policy.for_tool(tool) == Policy::Ask {
                    policy.set(tool, Policy::Auto);
                }
            }
        }
        policy
    }
}

/// A session's mode: the one recorded on its path, else ask.
pub fn mode(harness: &Harness, session_id: &str) -> Mode {
    let marked = harness.marked(session_id, MODE_MARK).ok().flatten();
    marked.and_then(|data| data["mode"].as_str().and_then(Mode::parse)).unwrap_or(Mode::Ask)
}

/// Puts `mode` in force for the session's harness (each ACP session has its own) and records it.
/// `configured` is the approval policy of the settings, which ask restores.
pub fn set_mode(harness: &Harness, session_id: &str, mode: Mode, configured: &ApprovalPolicy) -> Result<(), Error> {
    let was = self::mode(harness, session_id);
    if was != mode && (was == Mode::ReadOnly || mode == Mode::ReadOnly) {
        let tools: Vec<String> = match (mode, &harness.settings().tools_enabled) {
            (Mode::ReadOnly, _) => vec!["read-only".to_string()],
            (_, Some(set)) => set.items().to_vec(),
            (_, None) => vec!["*".to_string()],
        };
        harness.set_tools(session_id, &tools).map_err(to_proto::harness_error)?;
    }
    apply_approval(harness, mode, configured);
    harness.mark(session_id, MODE_MARK, json!({ "mode": mode.id() })).map_err(to_proto::harness_error)
}

/// Puts the approval policy of the session's recorded mode in force (a loaded session); its
/// tool set came back with its file.
pub fn restore(harness: &Harness, session_id: &str, configured: &ApprovalPolicy) {
    let mode = mode(harness, session_id);
    if mode != Mode::Ask {
        apply_approval(harness, mode, configured);
    }
}

fn apply_approval(harness: &Harness, mode: Mode, configured: &ApprovalPolicy) {
    let mut next = (*harness.settings()).clone();
    next.approval = mode.approval(configured);
    harness.set_settings(next);
}

/// The session modes, for clients that know modes but not config options.
pub fn modes(harness: &Harness, session_id: &str) -> SessionModeState {
    let available = Mode::ALL
        .into_iter()
        .map(|mode| SessionMode::new(mode.id(), mode.name()).description(mode.description().to_string()))
        .collect();
    SessionModeState::new(mode(harness, session_id).id(), available)
}

/// The config options of the session as they are now.
pub fn config_options(harness: &Harness, session_id: &str) -> Vec<SessionConfigOption> {
    let mut options = Vec::new();
    let settings = harness.settings();
    if let Ok(model) = harness.session_model(session_id) {
        let current = format!("{}/{}", model.provider, model.id);
        let mut models: Vec<SessionConfigSelectOption> = settings
            .list_models()
            .iter()
            .filter(|listed| listed.key.available())
            .map(|listed| SessionConfigSelectOption::new(listed.address(), listed.address()))
            .collect();
        if !models.iter().any(|option| *option.value.0 == *current) {
            models.insert(0, SessionConfigSelectOption::new(current.clone(), current.clone()));
        }
        options.push(
            SessionConfigOption::select(MODEL, "Model", current, models)
                .description("The model of the next turn (those with a key at hand)".to_string())
                .category(SessionConfigOptionCategory::Model),
        );
        if model.reasoning {
            // The levels that change something for this model.
            let levels: Vec<SessionConfigSelectOption> = ThinkingLevel::ALL
                .into_iter()
                .filter(|&level| level == ThinkingLevel::Off || settings.thinking_note(&model, level).is_none())
                .map(|level| SessionConfigSelectOption::new(level.as_str(), level.as_str()))
                .collect();
            let level = harness.thinking(session_id).ok().flatten().unwrap_or(ThinkingLevel::Off);
            options.push(
                SessionConfigOption::select(THINKING, "Thinking", level.as_str(), levels)
                    .description("How hard the model thinks before it answers".to_string())
                    .category(SessionConfigOptionCategory::ThoughtLevel),
            );
        }
    }
    let modes: Vec<SessionConfigSelectOption> = Mode::ALL
        .into_iter()
        .map(|mode| SessionConfigSelectOption::new(mode.id(), mode.name()).description(mode.description().to_string()))
        .collect();
    options.push(
        SessionConfigOption::select(MODE, "Mode", mode(harness, session_id).id(), modes)
            .description("What the agent may do without asking".to_string())
            .category(SessionConfigOptionCategory::Mode),
    );
    options
}

/// Sets one option from the client's `session/set_config_option`; only the values offered are
/// taken.
pub fn set(
    harness: &Harness,
    session_id: &str,
    config_id: &str,
    value: &SessionConfigOptionValue,
    configured: &ApprovalPolicy,
) -> Result<(), Error> {
    let Some(value) = value.as_value_id().map(|value| value.0.to_string()) else {
        return Err(to_proto::invalid_params(format!(
            "option {} takes one of its values",
            to_proto::quoted(config_id)
        )));
    };
    let offered = config_options(harness, session_id).into_iter().find(|option| *option.id.0 == *config_id);
    let Some(offered) = offered else {
        return Err(to_proto::invalid_params(format!(
            "no option {}: the options are {MODEL}, {THINKING} (for a model that thinks) and {MODE}",
            to_proto::quoted(config_id)
        )));
    };
    let values: Vec<String> = match &offered.kind {
        agent_client_protocol::v1::schema::SessionConfigKind::Select(select) => match &select.options {
            agent_client_protocol::v1::schema::SessionConfigSelectOptions::Ungrouped(options) => {
                options.iter().map(|option| option.value.0.to_string()).collect()
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    if !values.contains(&value) {
        return Err(to_proto::invalid_params(format!(
            "{} is not a value of {config_id}; it takes {}",
            to_proto::quoted(&value),
            values.join(", ")
        )));
    }
    match config_id {
        MODEL => harness.set_model(session_id, &value).map(drop).map_err(to_proto::harness_error),
        THINKING => {
            let level = ThinkingLevel::parse(&value).unwrap_or(ThinkingLevel::Off);
            harness.set_thinking(session_id, level).map(drop).map_err(to_proto::harness_error)
        }
        _ => set_mode(harness, session_id, Mode::parse(&value).unwrap_or(Mode::Ask), configured),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_edit_applies_edits_but_keeps_commands_asking_and_every_deny() {
        let mut configured = ApprovalPolicy::default();
        configured.set("write", Policy::Deny);
        let policy = Mode::AutoEdit.approval(&configured);
        let shown: Vec<String> = ["edit", "apply_patch", "write", "bash", "mcp__x__y"]
            .map(|tool| format!("{tool} {:?}", policy.for_tool(tool)))
            .to_vec();
        assert_eq!(shown, ["edit Auto", "apply_patch Auto", "write Deny", "bash Ask", "mcp__x__y Ask"]);
        let ask = Mode::Ask.approval(&configured);
        assert_eq!(ask.for_tool("edit"), Policy::Ask);
        assert_eq!(Mode::ALL.map(|mode| Mode::parse(mode.id())), Mode::ALL.map(Some));
    }
}
