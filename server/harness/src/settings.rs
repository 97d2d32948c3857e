//! Settings from the environment: where the model is served, which model, where reins keeps its
//! data. (Config files come with the providers issue; until then the environment is the config.)

use std::path::{Path, PathBuf};

use reins_ai::{ApiKey, Model, Prices};

/// Ollama's OpenAI-compatible endpoint: the endpoint when nothing is configured, so reins works
/// with a local model and no key.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1";
pub const DEFAULT_MODEL: &str = "qwen2.5-coder:7b";

#[derive(Debug, Clone)]
pub struct Settings {
    /// OpenAI-compatible base URL, with the version segment.
    pub base_url: String,
    /// False when `base_url` is the built-in default rather than the user's choice.
    pub base_url_configured: bool,
    pub api_key: ApiKey,
    pub model: String,
    /// `config.toml`, `trusted-workspaces`, global `AGENTS.md`, `SYSTEM.md`.
    pub config_dir: PathBuf,
    /// Sessions and other state.
    pub data_dir: PathBuf,
}

impl Settings {
    /// Reads `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `REINS_MODEL` and `REINS_HOME` (else the XDG
    /// directories) through `var`, so tests need not touch the process environment.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Self {
        let non_empty = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let configured_url = non_empty("OPENAI_BASE_URL");
        let (config_dir, data_dir) = match non_empty("REINS_HOME") {
            Some(home) => (PathBuf::from(&home), PathBuf::from(home)),
            None => {
                let home = non_empty("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp"));
                let config = non_empty("XDG_CONFIG_HOME").map(PathBuf::from).unwrap_or_else(|| home.join(".config"));
                let data = non_empty("XDG_DATA_HOME").map(PathBuf::from).unwrap_or_else(|| home.join(".local/share"));
                (config.join("reins"), data.join("reins"))
            }
        };
        Settings {
            base_url_configured: configured_url.is_some(),
            base_url: configured_url
                .map(|url| url.trim_end_matches('/').to_string())
                .unwrap_or_else(|| DEFAULT_BASE_URL.to_string()),
            api_key: ApiKey::new(non_empty("OPENAI_API_KEY").unwrap_or_default()),
            model: non_empty("REINS_MODEL").unwrap_or_else(|| DEFAULT_MODEL.to_string()),
            config_dir,
            data_dir,
        }
    }

    /// A workspace is trusted when it, or a directory above it, is listed (one absolute path a
    /// line) in `<config_dir>/trusted-workspaces`. Trust lets the project's `.reins/` prompt
    /// overrides apply.
    pub fn is_trusted(&self, workspace_root: &Path) -> bool {
        let Ok(list) = std::fs::read_to_string(self.config_dir.join("trusted-workspaces")) else {
            return false;
        };
        list.lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .any(|line| workspace_root.starts_with(line))
    }

    /// The model to use, from `--model` or `REINS_MODEL`: known ids get their window and prices.
    pub fn resolve_model(&self, id: Option<&str>) -> Model {
        let id = id.unwrap_or(&self.model);
        let (window, max_output, prices, reasoning) = known_model(id).unwrap_or((128_000, 16_384, [0.0; 4], false));
        Model {
            id: id.to_string(),
            provider: provider_name(&self.base_url).to_string(),
            base_url: self.base_url.clone(),
            context_window: window,
            max_output,
            prices: Prices { input: prices[0], output: prices[1], cache_read: prices[2], cache_write: prices[3] },
            reasoning,
        }
    }
}

/// A few well-known models, so costs are right before the model registry lands:
/// (context window, max output, [input, output, cache read, cache write] $/Mtok, reasons).
fn known_model(id: &str) -> Option<(u64, u64, [f64; 4], bool)> {
    Some(match id {
        "gpt-4.1" => (1_047_576, 32_768, [2.0, 8.0, 0.5, 0.0], false),
        "gpt-4.1-mini" => (1_047_576, 32_768, [0.4, 1.6, 0.1, 0.0], false),
        "gpt-4o" => (128_000, 16_384, [2.5, 10.0, 1.25, 0.0], false),
        "gpt-4o-mini" => (128_000, 16_384, [0.15, 0.6, 0.075, 0.0], false),
        "deepseek-chat" => (128_000, 8_192, [0.27, 1.10, 0.07, 0.0], false),
        "deepseek-reasoner" => (128_000, 65_536, [0.55, 2.19, 0.14, 0.0], true),
        _ => return None,
    })
}

fn provider_name(base_url: &str) -> &'static str {
    if base_url.contains("api.openai.com") {
        "openai"
    } else if base_url.contains("deepseek.com") {
        "deepseek"
    } else if base_url.contains("openrouter.ai") {
        "openrouter"
    } else if base_url.contains(":11434") {
        "ollama"
    } else {
        "openai-compatible"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Settings {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_env(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn defaults_to_local_ollama_and_xdg_dirs() {
        let s = settings(&[("HOME", "/home/u")]);
        assert_eq!(s.base_url, DEFAULT_BASE_URL);
        assert!(!s.base_url_configured);
        assert!(s.api_key.is_empty());
        assert_eq!(s.config_dir, PathBuf::from("/home/u/.config/reins"));
        assert_eq!(s.data_dir, PathBuf::from("/home/u/.local/share/reins"));
        assert_eq!(s.resolve_model(None).provider, "ollama");
    }

    #[test]
    fn environment_overrides() {
        let s = settings(&[
            ("OPENAI_BASE_URL", "https://api.openai.com/v1/"),
            ("OPENAI_API_KEY", "sk-test"),
            ("REINS_MODEL", "gpt-4.1"),
            ("REINS_HOME", "/data/reins"),
        ]);
        assert_eq!(s.base_url, "https://api.openai.com/v1");
        assert!(s.base_url_configured);
        assert_eq!(s.config_dir, PathBuf::from("/data/reins"));
        let model = s.resolve_model(None);
        assert_eq!((model.provider.as_str(), model.context_window, model.prices.output), ("openai", 1_047_576, 8.0));
        assert_eq!(s.resolve_model(Some("my-local")).context_window, 128_000);
        assert!(!format!("{s:?}").contains("sk-test"));
    }

    #[test]
    fn trust_comes_from_the_list_and_covers_subdirectories() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("trusted-workspaces"), "# mine\n/home/u/work\n").unwrap();
        let s = settings(&[("REINS_HOME", tmp.path().to_str().unwrap())]);
        assert!(s.is_trusted(Path::new("/home/u/work/proj")));
        assert!(!s.is_trusted(Path::new("/home/u/workshop")));
        assert!(!s.is_trusted(Path::new("/tmp/clone")));
    }
}
