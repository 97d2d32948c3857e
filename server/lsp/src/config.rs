//! The editor's layer of the settings: `initializationOptions` at start and each
//! `workspace/didChangeConfiguration` later, laid over the harness's [`Settings::load`] (the
//! user's `config.toml`, a trusted workspace's `.reins/config.toml`, the environment, the auth
//! file); and the warning that tells the user which settings could not apply. The settings in
//! force are the harness's ([`reins_harness::Harness::set_settings`]).
//!
//! The editor layer is `initializationOptions` with the latest `didChangeConfiguration` settings
//! laid over it key by key: clients send the latter whether or not anything is configured there
//! (often `{}` right after `initialized`), and that must not undo the former. The two are read
//! apart ([`Settings::with_editor_layers`]), so a bad value in a change is ignored and leaves the
//! `initializationOptions` value in force.

use std::path::Path;
use std::sync::{PoisonError, RwLock};

use reins_harness::{ConfigDiagnostic, KeySource, Settings};
use serde_json::Value;

/// What the editor said at `initialize`, to lay each later change over.
#[derive(Default)]
pub struct EditorSettings {
    /// `initializationOptions`, without a `reins` wrapper.
    initialization: RwLock<Value>,
}

impl EditorSettings {
    /// Keeps the client's `initializationOptions`; answers them as the editor layer. What the
    /// client says it can do (`capabilities`) is not a setting.
    pub fn initialize(&self, options: &Value) -> Value {
        let mut options = unwrap_section(options).clone();
        if let Value::Object(fields) = &mut options {
            fields.remove("capabilities");
        }
        *self.initialization.write().unwrap_or_else(PoisonError::into_inner) = options.clone();
        options
    }

    /// The editor's settings after `didChangeConfiguration` sent `value`, earliest first: the
    /// `initializationOptions`, then `value` (which replaces the previous change).
    pub fn changed(&self, value: &Value) -> [Value; 2] {
        let initialization = self.initialization.read().unwrap_or_else(PoisonError::into_inner).clone();
        [initialization, unwrap_section(value).clone()]
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
        let editor = EditorSettings::default();
        let base = settings(json!({}));
        let changed = |value: &Value| base.with_editor_layers(&editor.changed(value).each_ref());
        let started =
            base.with_editor_settings(&editor.initialize(&json!({"reins": {"model": "a", "baseUrl": "http://i/v1"}})));
        assert_eq!((started.model.as_str(), started.base_url.as_str()), ("a", "http://i/v1"));
        let now = changed(&json!({"reins": {"approval": {"bash": "deny"}}}));
        assert_eq!((now.model.as_str(), now.base_url.as_str()), ("a", "http://i/v1"));
        assert_eq!(format!("{:?}", now.approval.for_tool("bash")), "Deny");
        let now = changed(&json!({"model": "b"}));
        assert_eq!((now.model.as_str(), now.base_url.as_str()), ("b", "http://i/v1"));
        assert_eq!(format!("{:?}", now.approval.for_tool("bash")), "Ask");
        let now = changed(&Value::Null);
        assert_eq!(now.model, "a");
        // Null is "not set", not a bad value.
        let now = changed(&json!({"model": null, "apiKey": null}));
        assert_eq!((now.model.as_str(), now.diagnostics.len()), ("a", 0));
    }

    #[test]
    fn a_bad_value_in_a_change_is_reported_and_leaves_the_good_one_in_force() {
        let editor = EditorSettings::default();
        let base = settings(json!({}));
        let started = base.with_editor_settings(&editor.initialize(&json!({"apiKey": "sk-good", "model": "a"})));
        for bad in [json!(42), json!({"key": "x"}), json!(["sk-other"]), json!(true), json!("")] {
            let now = base.with_editor_layers(&editor.changed(&json!({"apiKey": bad, "model": 7})).each_ref());
            assert_eq!((now.api_key.expose(), now.model.as_str()), ("sk-good", "a"), "after {bad}");
            let text = warning(&now, Some(&started)).unwrap_or_else(|| panic!("no warning for {bad}"));
            assert!(text.contains("apiKey") && text.contains("model") && !text.contains("sk-good"), "{text}");
        }
    }
}
