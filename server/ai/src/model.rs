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
    /// The `reasoning_effort` values the model takes; none for a model that takes no such field.
    pub reasoning_effort: Efforts,
}

/// How hard a reasoning model thinks: pi's levels. Each provider maps them to what its API takes
/// (`reasoning_effort`, a thinking budget); a model that cannot be told ignores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThinkingLevel {
    Off,
    Minimal,
    Low,
    Medium,
    High,
    XHigh,
}

/// A set of [`ThinkingLevel`]s (without `Off`): the `reasoning_effort` values a model takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Efforts(u8);

/// US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl ThinkingLevel {
    pub const ALL: [ThinkingLevel; 6] = [Self::Off, Self::Minimal, Self::Low, Self::Medium, Self::High, Self::XHigh];

    /// The level's name in settings, commands and session files (pi's spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::XHigh => "xhigh",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.as_str() == name.trim())
    }

    /// The names, for messages: `off|minimal|low|medium|high|xhigh`.
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join("|")
    }
}

impl std::fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Efforts {
    pub const NONE: Efforts = Efforts(0);
    /// `low`, `medium`, `high`: OpenAI's o-series.
    pub const LOW_TO_HIGH: Efforts = Efforts::of(&[ThinkingLevel::Low, ThinkingLevel::Medium, ThinkingLevel::High]);
    /// `minimal` to `high`: GPT-5.
    pub const MINIMAL_TO_HIGH: Efforts = Efforts::LOW_TO_HIGH.with(ThinkingLevel::Minimal);

    pub const fn of(levels: &[ThinkingLevel]) -> Efforts {
        let mut set = Efforts::NONE;
        let mut at = 0;
        while at < levels.len() {
            set = set.with(levels[at]);
            at += 1;
        }
        set
    }

    pub const fn with(self, level: ThinkingLevel) -> Efforts {
        match level {
            ThinkingLevel::Off => self,
            _ => Efforts(self.0 | 1 << level as u8),
        }
    }

    pub fn contains(self, level: ThinkingLevel) -> bool {
        level != ThinkingLevel::Off && self.0 & 1 << level as u8 != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn levels(self) -> impl Iterator<Item = ThinkingLevel> {
        ThinkingLevel::ALL.into_iter().filter(move |level| self.contains(*level))
    }

    /// The value to send for `level`, as pi clamps: the level itself when the model takes it, else
    /// the nearest one above, else the nearest below; `None` for `off` or a model that takes none.
    pub fn clamp(self, level: ThinkingLevel) -> Option<ThinkingLevel> {
        if level == ThinkingLevel::Off {
            return None;
        }
        let above = self.levels().find(|candidate| *candidate >= level);
        above.or_else(|| self.levels().filter(|candidate| *candidate < level).last())
    }
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

impl Model {
    /// Whether the model reads images in its prompt (see [`takes_images`]).
    pub fn takes_images(&self) -> bool {
        takes_images(&self.id)
    }
}

/// Whether a model reads images, by its id (`gpt-4.1`, `anthropic/claude-sonnet-4`, `llava:13b`):
/// OpenAI's GPT-4o, 4.1 and 5 and its o3/o4 reasoning models, Claude 3 and later, Gemini, and the
/// vision variants of open models (LLaVA, Pixtral, Gemma 3, `…-vl`, `…vision…`). Unknown models
/// are taken not to, so a client is never offered what the model would refuse.
pub fn takes_images(model_id: &str) -> bool {
    let id = model_id.rsplit('/').next().unwrap_or(model_id).to_ascii_lowercase();
    let families = [
        "gpt-4o",
        "chatgpt-4o",
        "gpt-4.1",
        "gpt-5",
        "o3",
        "o4",
        "claude-3",
        "claude-sonnet-4",
        "claude-opus-4",
        "claude-haiku-4",
        "gemini",
        "llava",
        "pixtral",
        "gemma3",
        "gemma-3",
        "minicpm-v",
        "grok-4",
        "qwen2.5vl",
    ];
    let text_only = ["gpt-5-codex-mini", "o3-mini", "gemini-embedding"];
    (families.iter().any(|family| id.starts_with(family)) || id.contains("-vl") || id.contains("vision"))
        && !text_only.iter().any(|model| id.starts_with(model))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efforts_clamp_to_the_nearest_level_the_model_takes() {
        use ThinkingLevel::*;
        let clamp = |efforts: Efforts| ThinkingLevel::ALL.map(|level| efforts.clamp(level).map(ThinkingLevel::as_str));
        assert_eq!(
            clamp(Efforts::LOW_TO_HIGH),
            [None, Some("low"), Some("low"), Some("medium"), Some("high"), Some("high")]
        );
        assert_eq!(clamp(Efforts::MINIMAL_TO_HIGH)[1], Some("minimal"));
        assert_eq!(clamp(Efforts::NONE), [None; 6]);
        assert_eq!(Efforts::of(&[Off, XHigh]).levels().collect::<Vec<_>>(), [XHigh]);
        assert_eq!(ThinkingLevel::parse(" xhigh"), Some(XHigh));
        assert_eq!(
            (ThinkingLevel::parse("max"), ThinkingLevel::names().as_str()),
            (None, "off|minimal|low|medium|high|xhigh")
        );
    }

    #[test]
    fn image_input_goes_by_the_model_family() {
        let takes = ["gpt-4.1", "openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5", "gemini-2.5-pro", "llava:13b"];
        let takes_not = ["scripted-model", "qwen2.5-coder:7b", "o3-mini", "deepseek-chat", "gpt-3.5-turbo"];
        assert!(takes.iter().all(|id| takes_images(id)), "{takes:?}");
        assert!(!takes_not.iter().any(|id| takes_images(id)), "{takes_not:?}");
        assert!(takes_images("qwen2.5vl:7b") && takes_images("qwen/qwen2.5-vl-72b-instruct"));
    }
}
