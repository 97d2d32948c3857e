//! The server's settings: the harness's [`Settings::load`] (the user's `config.toml`, a trusted
//! workspace's `.reins/config.toml`, the environment, the auth file) with the client's settings —
//! `initializationOptions` at start, each `workspace/didChangeConfiguration` later — as the
//! editor layer on top; and the warning that tells the user which settings could not apply.
//!
//! The editor layer is `initializationOptions` with the latest `didChangeConfiguration` settings
//! merged over it key by key: clients send the latter whether or not anything is configured
//! there (often `{}` right after `initialized`), and that must not undo the former.

use std::path::Path;
use std::sync::{Arc, RwLock};

use reins_harness::{ConfigDiagnostic, KeySource, Settings};
use serde_json::Value;

/// The settings in force, shared by the handlers, the approver and the event pump.
pub struct ServerSettings {
    state: RwLock<State>,
}

struct State {
    current: Arc<Settings>,
    /// The default model `reins.model.set` chose without a session. It holds until the editor's
    /// settings change the model themselves.
    chosen_model: Option<String>,
    /// The default model the settings alone give, to notice when the editor changes it.
    configured_model: String,
    /// `initializationOptions`, without a `reins` wrapper.
    initialization: Value,
}

impl ServerSettings {
    pub fn new(settings: Settings) -> Self {
        let configured_model = settings.model.clone();
        let state =
            State { current: Arc::new(settings), chosen_model: None, configured_model, initialization: Value::Null };
        Self { state: RwLock::new(state) }
    }

    pub fn current(&self) -> Arc<Settings> {
        self.state.read().unwrap_or_else(|poison| poison.into_inner()).current.clone()
    }

    /// Replaces the settings in force with `next`; answers them (with the model chosen by
    /// `reins.model.set` still in force, unless `next` changed the model) and the previous ones.
    pub fn replace(&self, mut next: Settings) -> (Arc<Settings>, Arc<Settings>) {
        let mut state = self.state.write().unwrap_or_else(|poison| poison.into_inner());
        if next.model != state.configured_model {
            state.chosen_model = None;
        }
        state.configured_model = next.model.clone();
        if let Some(model) = &state.chosen_model {
            next.model = model.clone();
        }
        let previous = std::mem::replace(&mut state.current, Arc::new(next));
        (state.current.clone(), previous)
    }

    /// The settings at `initialize`: `loaded` (every source below the editor) with the client's
    /// `initializationOptions`.
    pub fn initialize(&self, loaded: Settings, options: &Value) -> Arc<Settings> {
        let options = unwrap_section(options).clone();
        let next = loaded.with_editor_settings(&options);
        self.state.write().unwrap_or_else(|poison| poison.into_inner()).initialization = options;
        self.replace(next).0
    }

    /// The client's new settings (`didChangeConfiguration`): they replace the previous ones, over
    /// `initializationOptions`. Answers the settings now in force and the previous ones.
    pub fn apply_editor_settings(&self, value: &Value) -> (Arc<Settings>, Arc<Settings>) {
        let (current, mut editor) = {
            let state = self.state.read().unwrap_or_else(|poison| poison.into_inner());
            (state.current.clone(), state.initialization.clone())
        };
        merge(&mut editor, unwrap_section(value));
        self.replace(current.with_editor_settings(&editor))
    }

    /// Makes `model` the default of sessions started from now on (`reins.model.set` without a
    /// session).
    pub fn choose_model(&self, model: &str) -> Arc<Settings> {
        let mut state = self.state.write().unwrap_or_else(|poison| poison.into_inner());
        state.chosen_model = Some(model.to_string());
        let mut next = (*state.current).clone();
        next.model = model.to_string();
        state.current = Arc::new(next);
        state.current.clone()
    }
}

/// Every source below the editor, for the first workspace root.
pub fn load(var: impl Fn(&str) -> Option<String>, root: Option<&Path>) -> Settings {
    Settings::load(var, root)
}

/// The settings object inside a `{"reins": {…}}` section, or the value itself.
fn unwrap_section(value: &Value) -> &Value {
    value.get("reins").unwrap_or(value)
}

/// Lays `over` on `under`: objects key by key, anything else (`null` aside) replaces.
fn merge(under: &mut Value, over: &Value) {
    match (under, over) {
        (_, Value::Null) => {}
        (Value::Object(under), Value::Object(over)) => {
            for (key, value) in over {
                merge(under.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (under, over) => *under = over.clone(),
    }
}

/// The warning for `window/showMessage` about the problems in `next` that `previous` did not
/// have (all of them when there is no previous), or `None` when there are none. Keys never
/// show: a configured key that a message happens to quote is masked.
pub fn warning(next: &Settings, previous: Option<&Settings>) -> Option<String> {
    let fresh: Vec<&ConfigDiagnostic> = next
        .diagnostics
        .iter()
        .filter(|diagnostic| previous.is_none_or(|previous| !previous.diagnostics.contains(diagnostic)))
        .collect();
    if fresh.is_empty() {
        return None;
    }
    let mut text = String::from("reins: some settings were ignored:");
    for diagnostic in fresh {
        text.push_str("\n- ");
        text.push_str(&diagnostic.to_string());
    }
    Some(mask_keys(next, text))
}

/// Whether a model of `provider` can be called: it has a key (or a command that gives one), or
/// it is a local server that needs none.
pub fn key_available(settings: &Settings, provider: &str) -> bool {
    let local = settings.registry.provider(provider).is_some_and(|info| info.local);
    local || !matches!(settings.key_source(provider), KeySource::None)
}

/// Where the endpoint of `provider` is, and whether someone chose it rather than it being the
/// built-in fallback (a local Ollama), for error messages.
pub fn endpoint(settings: &Settings, provider: &str) -> (String, bool) {
    match settings.registry.provider(provider) {
        Some(info) => (info.base_url.clone(), true),
        None => (settings.base_url.clone(), settings.base_url_configured),
    }
}

fn mask_keys(settings: &Settings, mut text: String) -> String {
    for source in settings.keys.values() {
        if let KeySource::Key(key, _) = source {
            let secret = key.expose();
            if secret.len() >= 4 && text.contains(secret) {
                text = text.replace(secret, "…");
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Settings with nothing configured but `options` from the editor.
    fn settings(options: Value) -> Settings {
        let home = std::env::temp_dir().join("reins-lsp-config-test-none");
        load(|name| (name == "REINS_HOME").then(|| home.display().to_string()), None).with_editor_settings(&options)
    }

    #[test]
    fn the_documented_keys_apply() {
        let settings = settings(json!({"baseUrl": "http://127.0.0.1:9/v1/", "apiKey": "k", "model": "m",
            "approval": {"edit": "auto", "bash": "deny"}}));
        assert_eq!(settings.base_url, "http://127.0.0.1:9/v1");
        assert!(settings.base_url_configured);
        assert_eq!((settings.api_key.expose(), settings.model.as_str()), ("k", "m"));
        let policies = ["edit", "write", "bash", "read"].map(|tool| format!("{:?}", settings.approval.for_tool(tool)));
        assert_eq!(policies, ["Auto", "Ask", "Deny", "Auto"]);
        assert!(settings.diagnostics.is_empty(), "{:?}", settings.diagnostics);
    }

    #[test]
    fn bad_values_become_one_warning_of_new_problems_without_keys() {
        let bad = settings(json!({"reins": {"apiKey": "sk-secret-1", "approval": {"edit": "sk-secret-1"},
            "limits": {"maxTurns": 0}}}));
        let text = warning(&bad, None).unwrap();
        expect_test::expect![[r#"
            reins: some settings were ignored:
            - editor settings: approval.edit: expected "ask", "auto" or "deny", found "…"
            - editor settings: limits.maxTurns: expected a number of turns from 1 up"#]]
        .assert_eq(&text);
        assert_eq!(warning(&bad, Some(&bad)), None);
        assert_eq!(warning(&settings(json!({})), None), None);
    }

    #[test]
    fn changes_replace_each_other_over_the_initialization_options() {
        let server = ServerSettings::new(settings(json!({})));
        let started =
            server.initialize(settings(json!({})), &json!({"reins": {"model": "a", "baseUrl": "http://i/v1"}}));
        assert_eq!((started.model.as_str(), started.base_url.as_str()), ("a", "http://i/v1"));
        let (now, _) = server.apply_editor_settings(&json!({"reins": {"approval": {"bash": "deny"}}}));
        assert_eq!((now.model.as_str(), now.base_url.as_str()), ("a", "http://i/v1"));
        assert_eq!(format!("{:?}", now.approval.for_tool("bash")), "Deny");
        let (now, _) = server.apply_editor_settings(&json!({"model": "b"}));
        assert_eq!((now.model.as_str(), now.base_url.as_str()), ("b", "http://i/v1"));
        assert_eq!(format!("{:?}", now.approval.for_tool("bash")), "Ask");
        let (now, _) = server.apply_editor_settings(&Value::Null);
        assert_eq!(now.model, "a");
    }

    #[test]
    fn a_chosen_model_holds_until_the_editor_changes_the_model() {
        let server = ServerSettings::new(settings(json!({"model": "a"})));
        assert_eq!(server.choose_model("b").model, "b");
        let (now, before) = server.apply_editor_settings(&json!({"model": "a", "baseUrl": "http://h/v1"}));
        assert_eq!((now.model.as_str(), before.model.as_str(), now.base_url.as_str()), ("b", "b", "http://h/v1"));
        let (now, _) = server.apply_editor_settings(&json!({"model": "c"}));
        assert_eq!(now.model, "c");
    }

    #[test]
    fn keys_and_endpoints_per_provider() {
        let settings = settings(json!({"providers": {"anthropic": {"apiKey": "x"}}}));
        let available = ["anthropic", "openai", "ollama"].map(|provider| key_available(&settings, provider));
        assert_eq!(available, [true, false, true]);
        assert_eq!(endpoint(&settings, "anthropic"), ("https://api.anthropic.com".to_string(), true));
        assert_eq!(endpoint(&settings, "openai-compatible"), ("http://127.0.0.1:11434/v1".to_string(), false));
    }
}
