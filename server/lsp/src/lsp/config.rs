//! The client's settings — `initializationOptions` at start, `workspace/didChangeConfiguration`
//! later — laid over the environment: provider endpoint, key and model, and the approval policy.

use reins_ai::ApiKey;
use reins_harness::{Policy, Settings};
use serde::Deserialize;
use serde_json::Value;

/// What the client may set. Every field is optional; absent fields keep their current value.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientSettings {
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub model: Option<String>,
    #[serde(default)]
    pub approval: ApprovalSettings,
}

/// Per-tool approval policy: `ask`, `auto` or `deny`.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct ApprovalSettings {
    pub edit: Option<PolicyName>,
    pub write: Option<PolicyName>,
    pub bash: Option<PolicyName>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyName {
    Ask,
    Auto,
    Deny,
}

/// The settings in force: the harness's [`Settings`] plus the approval policy per tool.
#[derive(Debug, Clone)]
pub struct Config {
    pub settings: Settings,
    pub approval: ApprovalSettings,
}

impl ClientSettings {
    /// Reads the settings object. `didChangeConfiguration` often wraps it in a section named
    /// after the server (`{"reins": {...}}`); both forms are accepted. Anything unreadable is
    /// reported, and nothing of it is applied.
    pub fn parse(value: &Value) -> Result<Self, String> {
        let value = match value.get("reins") {
            Some(section) => section,
            None => value,
        };
        if value.is_null() {
            return Ok(Self::default());
        }
        serde_path_to_error::deserialize(value)
            .map_err(|err| format!("the reins settings are not valid: {}: {}", err.path(), err.inner()))
    }
}

impl Config {
    pub fn from_env() -> Self {
        Self { settings: Settings::from_env(|name| std::env::var(name).ok()), approval: ApprovalSettings::default() }
    }

    /// Lays the client's settings over these.
    pub fn apply(&mut self, client: ClientSettings) {
        if let Some(url) = client.base_url.filter(|url| !url.trim().is_empty()) {
            self.settings.base_url = url.trim().trim_end_matches('/').to_string();
            self.settings.base_url_configured = true;
        }
        if let Some(key) = client.api_key {
            self.settings.api_key = ApiKey::new(key);
        }
        if let Some(model) = client.model.filter(|model| !model.trim().is_empty()) {
            self.settings.model = model;
        }
        let approval = client.approval;
        self.approval.edit = approval.edit.or(self.approval.edit);
        self.approval.write = approval.write.or(self.approval.write);
        self.approval.bash = approval.bash.or(self.approval.bash);
    }

    /// The policy for one tool: configured, else `ask` for the tools that change things.
    pub fn policy_for(&self, tool: &str) -> Policy {
        let configured = match tool {
            "edit" => self.approval.edit,
            "write" => self.approval.write,
            "bash" => self.approval.bash,
            _ => return Policy::Auto,
        };
        match configured.unwrap_or(PolicyName::Ask) {
            PolicyName::Ask => Policy::Ask,
            PolicyName::Auto => Policy::Auto,
            PolicyName::Deny => Policy::Deny,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config_after(options: Value) -> Result<Config, String> {
        let mut config = Config {
            settings: Settings::from_env(|name| (name == "HOME").then(|| "/home/u".to_string())),
            approval: ApprovalSettings::default(),
        };
        config.apply(ClientSettings::parse(&options)?);
        Ok(config)
    }

    #[test]
    fn client_settings_override_the_environment() {
        let config = config_after(json!({"baseUrl": "http://127.0.0.1:9/v1/", "apiKey": "k", "model": "m",
            "approval": {"edit": "auto", "bash": "deny"}}))
        .unwrap();
        assert_eq!(config.settings.base_url, "http://127.0.0.1:9/v1");
        assert!(config.settings.base_url_configured);
        assert_eq!((config.settings.api_key.expose(), config.settings.model.as_str()), ("k", "m"));
        let policies = ["edit", "write", "bash", "read"].map(|tool| config.policy_for(tool));
        assert_eq!(policies, [Policy::Auto, Policy::Ask, Policy::Deny, Policy::Auto]);
    }

    #[test]
    fn a_reins_section_and_null_are_accepted_and_bad_values_named() {
        assert_eq!(config_after(json!({"reins": {"model": "x"}})).unwrap().settings.model, "x");
        assert!(config_after(Value::Null).is_ok());
        let err = config_after(json!({"approval": {"edit": "sometimes"}})).unwrap_err();
        assert!(err.contains("approval.edit"), "{err}");
    }
}
