//! The model registry: which providers and models reins knows, as data — endpoints, key
//! variables, context windows, prices and API quirks — so adding a model is adding a row.
//!
//! Models are addressed as `provider/model-id`. A bare id resolves through the registry; an id it
//! does not know goes to the configured OpenAI-compatible endpoint (the `openai-compatible`
//! provider: `OPENAI_BASE_URL`, by default a local Ollama), so any local model works unlisted.

use reins_ai::{Compat, Efforts, Model, Prices};
use reins_tools::EditFormat;

/// The provider that serves ids the registry does not know: `OPENAI_BASE_URL` and its key.
pub const FALLBACK_PROVIDER: &str = "openai-compatible";

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Chat Completions (`{base_url}/chat/completions`, base URL with `/v1`).
    OpenAi,
    /// Messages (`{base_url}/v1/messages`, base URL without `/v1`).
    Anthropic,
}

/// A provider as data: where it is, and which environment variables configure it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderInfo {
    pub name: String,
    pub api: Api,
    /// The endpoint in force (the default, unless config or the environment changed it).
    pub base_url: String,
    pub base_url_env: Option<String>,
    pub api_key_env: Option<String>,
    /// Local servers are reached by the `provider/` prefix only: a bare id of theirs goes to the
    /// configured OpenAI-compatible endpoint, which is where a local model usually is.
    pub local: bool,
}

/// One model of one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelEntry {
    pub provider: String,
    pub id: String,
    pub context_window: u64,
    pub max_output: u64,
    pub prices: Prices,
    pub reasoning: bool,
    pub compat: Compat,
    /// Overrides the provider's endpoint for this model only.
    pub base_url: Option<String>,
    /// How the model edits files: `apply_patch` for the families trained on it.
    pub edit_format: EditFormat,
}

/// Providers and models: the built-in ones, extended or overridden by the user's config.
#[derive(Debug, Clone, PartialEq)]
pub struct Registry {
    pub providers: Vec<ProviderInfo>,
    pub models: Vec<ModelEntry>,
}

/// Window and output limit for a model nobody described.
const UNKNOWN_WINDOW: u64 = 128_000;
const UNKNOWN_MAX_OUTPUT: u64 = 16_384;

/// (name, api, default base URL, base URL variable, key variable, local).
type ProviderRow = (&'static str, Api, &'static str, Option<&'static str>, Option<&'static str>, bool);

const PROVIDERS: &[ProviderRow] = &[
    ("openai", Api::OpenAi, "https://api.openai.com/v1", Some("OPENAI_BASE_URL"), Some("OPENAI_API_KEY"), false),
    (
        "anthropic",
        Api::Anthropic,
        "https://api.anthropic.com",
        Some("ANTHROPIC_BASE_URL"),
        Some("ANTHROPIC_API_KEY"),
        false,
    ),
    ("deepseek", Api::OpenAi, "https://api.deepseek.com", Some("DEEPSEEK_BASE_URL"), Some("DEEPSEEK_API_KEY"), false),
    (
        "openrouter",
        Api::OpenAi,
        "https://openrouter.ai/api/v1",
        Some("OPENROUTER_BASE_URL"),
        Some("OPENROUTER_API_KEY"),
        false,
    ),
    ("ollama", Api::OpenAi, "http://127.0.0.1:11434/v1", None, None, true),
    ("lmstudio", Api::OpenAi, "http://127.0.0.1:1234/v1", None, None, true),
];

/// Quirks of OpenAI's reasoning models: `developer` role, `max_completion_tokens`, and the
/// `reasoning_effort` values they take.
const O_SERIES: Compat =
    Compat { developer_role: true, max_completion_tokens: true, reasoning_effort: Efforts::LOW_TO_HIGH };
const GPT_5: Compat = Compat { reasoning_effort: Efforts::MINIMAL_TO_HIGH, ..O_SERIES };
const PLAIN: Compat = Compat { developer_role: false, max_completion_tokens: false, reasoning_effort: Efforts::NONE };
/// A plain model that takes `reasoning_effort` (gpt-oss).
const EFFORT: Compat = Compat { reasoning_effort: Efforts::LOW_TO_HIGH, ..PLAIN };

/// (provider, id, context window, max output, [input, output, cache read, cache write] $/Mtok,
/// reasons, compat).
type ModelRow = (&'static str, &'static str, u64, u64, [f64; 4], bool, Compat);

const MODELS: &[ModelRow] = &[
    ("openai", "gpt-4.1", 1_047_576, 32_768, [2.0, 8.0, 0.5, 0.0], false, PLAIN),
    ("openai", "gpt-4.1-mini", 1_047_576, 32_768, [0.4, 1.6, 0.1, 0.0], false, PLAIN),
    ("openai", "gpt-4.1-nano", 1_047_576, 32_768, [0.1, 0.4, 0.025, 0.0], false, PLAIN),
    ("openai", "gpt-4o", 128_000, 16_384, [2.5, 10.0, 1.25, 0.0], false, PLAIN),
    ("openai", "gpt-4o-mini", 128_000, 16_384, [0.15, 0.6, 0.075, 0.0], false, PLAIN),
    ("openai", "o3", 200_000, 100_000, [2.0, 8.0, 0.5, 0.0], true, O_SERIES),
    ("openai", "o4-mini", 200_000, 100_000, [1.1, 4.4, 0.275, 0.0], true, O_SERIES),
    ("openai", "gpt-5", 400_000, 128_000, [1.25, 10.0, 0.125, 0.0], true, GPT_5),
    ("openai", "gpt-5-mini", 400_000, 128_000, [0.25, 2.0, 0.025, 0.0], true, GPT_5),
    ("anthropic", "claude-sonnet-4-5", 200_000, 64_000, [3.0, 15.0, 0.3, 3.75], true, PLAIN),
    ("anthropic", "claude-sonnet-4-0", 200_000, 64_000, [3.0, 15.0, 0.3, 3.75], true, PLAIN),
    ("anthropic", "claude-opus-4-1", 200_000, 32_000, [15.0, 75.0, 1.5, 18.75], true, PLAIN),
    ("anthropic", "claude-haiku-4-5", 200_000, 64_000, [1.0, 5.0, 0.1, 1.25], true, PLAIN),
    ("anthropic", "claude-3-5-haiku-latest", 200_000, 8_192, [0.8, 4.0, 0.08, 1.0], false, PLAIN),
    ("deepseek", "deepseek-chat", 128_000, 8_192, [0.27, 1.10, 0.07, 0.0], false, PLAIN),
    ("deepseek", "deepseek-reasoner", 128_000, 65_536, [0.55, 2.19, 0.14, 0.0], true, PLAIN),
    ("openrouter", "anthropic/claude-sonnet-4.5", 200_000, 64_000, [3.0, 15.0, 0.3, 3.75], true, PLAIN),
    ("openrouter", "openai/gpt-4.1", 1_047_576, 32_768, [2.0, 8.0, 0.5, 0.0], false, PLAIN),
    ("openrouter", "qwen/qwen3-coder", 262_144, 65_536, [0.22, 0.95, 0.0, 0.0], false, PLAIN),
    ("ollama", "qwen2.5-coder:7b", 32_768, 8_192, [0.0; 4], false, PLAIN),
    ("ollama", "qwen3-coder:30b", 262_144, 65_536, [0.0; 4], false, PLAIN),
    ("ollama", "gpt-oss:20b", 131_072, 32_768, [0.0; 4], true, EFFORT),
    ("lmstudio", "qwen/qwen3-coder-30b", 262_144, 65_536, [0.0; 4], false, PLAIN),
];

impl Default for Registry {
    /// The built-in providers and models.
    fn default() -> Self {
        let providers = PROVIDERS
            .iter()
            .map(|&(name, api, base_url, base_url_env, api_key_env, local)| ProviderInfo {
                name: name.into(),
                api,
                base_url: base_url.into(),
                base_url_env: base_url_env.map(Into::into),
                api_key_env: api_key_env.map(Into::into),
                local,
            })
            .collect();
        let models = MODELS
            .iter()
            .map(
                |&(
                    provider,
                    id,
                    context_window,
                    max_output,
                    [input, output, cache_read, cache_write],
                    reasoning,
                    ref compat,
                )| {
                    ModelEntry {
                        provider: provider.into(),
                        id: id.into(),
                        context_window,
                        max_output,
                        prices: Prices { input, output, cache_read, cache_write },
                        reasoning,
                        compat: compat.clone(),
                        base_url: None,
                        edit_format: EditFormat::trained_on(id),
                    }
                },
            )
            .collect();
        Self { providers, models }
    }
}

impl Registry {
    pub fn provider(&self, name: &str) -> Option<&ProviderInfo> {
        self.providers.iter().find(|provider| provider.name == name)
    }

    /// Adds a provider, or replaces the one of the same name.
    pub fn upsert_provider(&mut self, provider: ProviderInfo) {
        match self.providers.iter_mut().find(|known| known.name == provider.name) {
            Some(known) => *known = provider,
            None => self.providers.push(provider),
        }
    }

    /// Adds a model, or replaces the one with the same provider and id.
    pub fn upsert_model(&mut self, entry: ModelEntry) {
        match self.models.iter_mut().find(|known| known.provider == entry.provider && known.id == entry.id) {
            Some(known) => *known = entry,
            None => self.models.push(entry),
        }
    }

    pub fn model(&self, provider: &str, id: &str) -> Option<&ModelEntry> {
        self.models.iter().find(|entry| entry.provider == provider && entry.id == id)
    }

    /// The model `address` names (`provider/id` or a bare id). `fallback_url` is the configured
    /// OpenAI-compatible endpoint, for ids the registry does not know.
    pub fn resolve(&self, address: &str, fallback_url: &str) -> Model {
        let address = address.trim();
        if let Some((provider, id)) = address.split_once('/') {
            if provider == FALLBACK_PROVIDER {
                return self.fallback(id, fallback_url);
            }
            if let Some(entry) = self.model(provider, id) {
                return self.to_model(entry, fallback_url);
            }
            // A known provider with a model nobody listed: the user knows it exists there.
            if let Some(info) = self.provider(provider) {
                return Model {
                    id: id.to_string(),
                    provider: info.name.clone(),
                    base_url: info.base_url.clone(),
                    context_window: UNKNOWN_WINDOW,
                    max_output: UNKNOWN_MAX_OUTPUT,
                    prices: Prices::default(),
                    reasoning: false,
                    compat: Compat::default(),
                };
            }
        }
        let hosted = self.models.iter().find(|entry| {
            entry.id == address && self.provider(&entry.provider).is_some_and(|provider| !provider.local)
        });
        match hosted {
            Some(entry) => self.to_model(entry, fallback_url),
            None => self.fallback(address, fallback_url),
        }
    }

    /// A model served by the configured OpenAI-compatible endpoint; a local entry of the same id
    /// lends its window and limits.
    fn fallback(&self, id: &str, fallback_url: &str) -> Model {
        let known = self
            .models
            .iter()
            .find(|entry| entry.id == id && self.provider(&entry.provider).is_none_or(|provider| provider.local));
        Model {
            id: id.to_string(),
            provider: FALLBACK_PROVIDER.to_string(),
            base_url: fallback_url.to_string(),
            context_window: known.map_or(UNKNOWN_WINDOW, |entry| entry.context_window),
            max_output: known.map_or(UNKNOWN_MAX_OUTPUT, |entry| entry.max_output),
            prices: known.map(|entry| entry.prices.clone()).unwrap_or_default(),
            reasoning: known.is_some_and(|entry| entry.reasoning),
            compat: known.map(|entry| entry.compat.clone()).unwrap_or_default(),
        }
    }

    fn to_model(&self, entry: &ModelEntry, fallback_url: &str) -> Model {
        let base_url = entry.base_url.clone().unwrap_or_else(|| match self.provider(&entry.provider) {
            Some(provider) => provider.base_url.clone(),
            None => fallback_url.to_string(),
        });
        Model {
            id: entry.id.clone(),
            provider: entry.provider.clone(),
            base_url,
            context_window: entry.context_window,
            max_output: entry.max_output,
            prices: entry.prices.clone(),
            reasoning: entry.reasoning,
            compat: entry.compat.clone(),
        }
    }
}

/// A model entry for an id nobody described, with the defaults for unknown models.
pub(crate) fn blank_entry(provider: &str, id: &str) -> ModelEntry {
    ModelEntry {
        provider: provider.to_string(),
        id: id.to_string(),
        context_window: UNKNOWN_WINDOW,
        max_output: UNKNOWN_MAX_OUTPUT,
        prices: Prices::default(),
        reasoning: false,
        compat: Compat::default(),
        base_url: None,
        edit_format: EditFormat::trained_on(id),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    /// `provider base_url window` of what `address` resolves to.
    fn resolve(address: &str) -> String {
        let model = Registry::default().resolve(address, "http://127.0.0.1:8080/v1");
        format!("{}/{} {} {}", model.provider, model.id, model.base_url, model.context_window)
    }

    #[test]
    fn addresses_resolve_through_the_registry() {
        let resolved = [
            "anthropic/claude-sonnet-4-5",
            "claude-haiku-4-5",
            "gpt-4.1",
            "deepseek/deepseek-chat",
            "openrouter/qwen/qwen3-coder",
            "anthropic/claude-next",
            "my-local-model",
            "qwen2.5-coder:7b",
            "ollama/qwen2.5-coder:7b",
            "openai-compatible/gpt-4.1",
            "nobody/model",
        ]
        .map(resolve)
        .join("\n");
        expect![[r#"
            anthropic/claude-sonnet-4-5 https://api.anthropic.com 200000
            anthropic/claude-haiku-4-5 https://api.anthropic.com 200000
            openai/gpt-4.1 https://api.openai.com/v1 1047576
            deepseek/deepseek-chat https://api.deepseek.com 128000
            openrouter/qwen/qwen3-coder https://openrouter.ai/api/v1 262144
            anthropic/claude-next https://api.anthropic.com 128000
            openai-compatible/my-local-model http://127.0.0.1:8080/v1 128000
            openai-compatible/qwen2.5-coder:7b http://127.0.0.1:8080/v1 32768
            ollama/qwen2.5-coder:7b http://127.0.0.1:11434/v1 32768
            openai-compatible/gpt-4.1 http://127.0.0.1:8080/v1 128000
            openai-compatible/nobody/model http://127.0.0.1:8080/v1 128000"#]]
        .assert_eq(&resolved);
    }

    #[test]
    fn quirks_and_prices_are_data() {
        let registry = Registry::default();
        let o3 = registry.resolve("o3", "");
        assert!(o3.compat.developer_role && o3.compat.max_completion_tokens && o3.reasoning);
        let sonnet = registry.resolve("claude-sonnet-4-5", "");
        assert_eq!((sonnet.prices.cache_read, sonnet.prices.cache_write), (0.3, 3.75));
        assert_eq!(registry.provider("anthropic").map(|p| p.api), Some(Api::Anthropic));
    }

    #[test]
    fn user_entries_override_and_extend() {
        let mut registry = Registry::default();
        registry.upsert_model(ModelEntry { context_window: 64_000, ..blank_entry("deepseek", "deepseek-chat") });
        registry.upsert_model(ModelEntry {
            base_url: Some("http://10.0.0.2:8000/v1".into()),
            ..blank_entry("lab", "big-model")
        });
        assert_eq!(registry.resolve("deepseek-chat", "").context_window, 64_000);
        let lab = registry.resolve("lab/big-model", "http://fallback/v1");
        assert_eq!((lab.provider.as_str(), lab.base_url.as_str()), ("lab", "http://10.0.0.2:8000/v1"));
    }
}
