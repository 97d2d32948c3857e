//! What the harness knows about a model: where it is served, how big its window is, what it costs.

use crate::message::{Cost, Usage};

#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// The id the provider knows the model by (`gpt-4.1`, `qwen2.5-coder:7b`).
    pub id: String,
    /// The provider's name, as in `provider/model-id` (`openai`, `ollama`, `deepseek`).
    pub provider: String,
    /// Base URL of the API, with the version segment (`https://api.openai.com/v1`).
    pub base_url: String,
    pub context_window: u64,
    pub max_output: u64,
    pub prices: Prices,
    /// Whether the model streams reasoning.
    pub reasoning: bool,
    /// How this model's API departs from the common Chat Completions shape. Left out of JSON
    /// when there is nothing to say.
    pub compat: Compat,
}

/// Per-model quirks of OpenAI-compatible APIs, kept as data so the request builder has no
/// per-provider branches. The default is the shape every compatible server accepts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Compat {
    /// Send the system prompt with the `developer` role (OpenAI's reasoning models).
    pub developer_role: bool,
    /// Name the output limit `max_completion_tokens`; OpenAI's reasoning models reject `max_tokens`.
    pub max_completion_tokens: bool,
}

/// US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Compat {
    /// No quirks: the common shape.
    pub fn is_plain(&self) -> bool {
        *self == Compat::default()
    }
}

impl Prices {
    /// Fills `usage.cost` from the token counts.
    pub fn apply(&self, usage: &mut Usage) {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        let input = per(usage.input, self.input);
        let output = per(usage.output, self.output);
        let cache_read = per(usage.cache_read, self.cache_read);
        let cache_write = per(usage.cache_write, self.cache_write);
        usage.cost = Cost { input, output, cache_read, cache_write, total: input + output + cache_read + cache_write };
    }
}
