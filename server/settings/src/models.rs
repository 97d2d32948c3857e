//! The model listing both faces show (`reins models`, `reins.model.list`): the registry's models,
//! and the default model when the registry does not list it, each with where its endpoint is,
//! whether a key is at hand for it — never the key — and which one new sessions take.

use crate::registry::ModelEntry;
use crate::settings::{KeySource, Settings};

/// One model of the listing.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedModel {
    pub entry: ModelEntry,
    /// The endpoint its calls go to.
    pub base_url: String,
    pub key: KeyState,
    /// The default model of new sessions.
    pub current: bool,
}

/// Whether a model can be called as far as keys go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyState {
    /// A key is configured; where it comes from (`env ANTHROPIC_API_KEY`, `api_key_command`).
    Configured(String),
    /// None is, and none is needed: the provider is a local server (Ollama, LM Studio) or the
    /// model's endpoint is on this machine (a llama.cpp server on 127.0.0.1).
    NotNeeded,
    Missing,
}

impl ListedModel {
    /// `provider/id`, as `--model` and `reins.model.set` take it.
    pub fn address(&self) -> String {
        format!("{}/{}", self.entry.provider, self.entry.id)
    }
}

impl KeyState {
    /// The model can be called: a key is there or none is needed.
    pub fn available(&self) -> bool {
        !matches!(self, KeyState::Missing)
    }
}

impl Settings {
    /// The models to list, the registry's first.
    pub fn list_models(&self) -> Vec<ListedModel> {
        let default = self.resolve_model(None);
        let unlisted = self.registry.model(&default.provider, &default.id).is_none().then(|| ModelEntry {
            provider: default.provider.clone(),
            id: default.id.clone(),
            context_window: default.context_window,
            max_output: default.max_output,
            prices: default.prices.clone(),
            reasoning: default.reasoning,
            compat: default.compat.clone(),
            base_url: None,
            edit_format: self.edit_format_for(&default),
        });
        let entries = self.registry.models.iter().cloned().chain(unlisted);
        entries
            .map(|entry| {
                let model = self.resolve_model(Some(&format!("{}/{}", entry.provider, entry.id)));
                let local = self.registry.provider(&entry.provider).is_some_and(|info| info.local)
                    || on_this_machine(&model.base_url);
                let key = match self.key_source(&entry.provider) {
                    KeySource::Key(_, source) => KeyState::Configured(source.to_string()),
                    KeySource::Command(_) => KeyState::Configured("api_key_command".to_string()),
                    KeySource::None if local => KeyState::NotNeeded,
                    KeySource::None => KeyState::Missing,
                };
                let current = entry.provider == default.provider && entry.id == default.id;
                ListedModel { base_url: model.base_url, key, current, entry }
            })
            .collect()
    }
}

/// Whether `base_url` names this machine (a loopback address or `localhost`).
fn on_this_machine(base_url: &str) -> bool {
    let rest = base_url.split_once("://").map_or(base_url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = match host_port.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|address| address.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Settings {
        Settings::from_env(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    /// Some rows of the listing: address, key state, current.
    fn check(settings: &Settings, addresses: &[&str]) -> Vec<String> {
        let listed = settings.list_models();
        addresses
            .iter()
            .map(|address| {
                let model = listed.iter().find(|model| model.address() == *address).expect(address);
                format!("{address} {:?} {}", model.key, model.current)
            })
            .collect()
    }

    #[test]
    fn keys_at_hand_local_servers_and_the_unlisted_default() {
        let settings = settings(&[
            ("HOME", "/nonexistent"),
            ("ANTHROPIC_API_KEY", "sk-ant-0123456789abcdef"),
            ("REINS_MODEL", "my-local-model"),
        ]);
        let rows = check(
            &settings,
            &[
                "anthropic/claude-haiku-4-5",
                "openai/gpt-4.1",
                "ollama/qwen2.5-coder:7b",
                "openai-compatible/my-local-model",
            ],
        );
        assert_eq!(
            rows,
            [
                r#"anthropic/claude-haiku-4-5 Configured("env ANTHROPIC_API_KEY") false"#,
                "openai/gpt-4.1 Missing false",
                "ollama/qwen2.5-coder:7b NotNeeded false",
                // Unlisted, so served by the default endpoint: Ollama on 127.0.0.1.
                "openai-compatible/my-local-model NotNeeded true",
            ]
        );
        assert_eq!(settings.list_models().iter().filter(|model| model.current).count(), 1);
        let remote = self::settings(&[
            ("HOME", "/nonexistent"),
            ("REINS_MODEL", "my-model"),
            ("OPENAI_BASE_URL", "https://models.example.com/v1"),
        ]);
        assert_eq!(check(&remote, &["openai-compatible/my-model"]), ["openai-compatible/my-model Missing true"]);
    }

    #[test]
    fn this_machine_is_a_loopback_address_or_localhost() {
        for url in ["http://127.0.0.1:8080/v1", "http://localhost/v1", "http://[::1]:1234/v1", "http://127.1.2.3"] {
            assert!(on_this_machine(url), "{url}");
        }
        for url in ["https://api.openai.com/v1", "http://10.1.2.3:8000/v1", "http://localhost.example.com/v1", ""] {
            assert!(!on_this_machine(url), "{url}");
        }
    }
}
