//! `reins models [--json]`: the models `reins.model.list` lists too (the registry, built-in
//! entries merged with the user's, and the default model when unlisted), each marked with
//! whether a key for its provider is at hand.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use reins_harness::{KeyState, ListedModel};
use serde_json::{Value, json};

use crate::cli;
use reins_wire as to_proto;

/// The arguments of the subcommand (see `crate::cli::Command`).
#[derive(Debug, Default, PartialEq, clap::Args)]
pub struct ModelsArgs {
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// The workspace root, whose trusted .reins/config.toml applies (default: the current directory)
    #[arg(long, short = 'C', value_name = "DIR", value_parser = cli::directory)]
    pub cwd: Option<PathBuf>,
}

pub fn main(args: ModelsArgs) -> ExitCode {
    let root = match args.cwd.clone().map(Ok).unwrap_or_else(std::env::current_dir) {
        Ok(root) => root,
        Err(err) => {
            eprintln!("reins: cannot read the current directory: {err}");
            return ExitCode::FAILURE;
        }
    };
    let models = crate::run::load_settings(&root).list_models();
    let text = if args.json {
        let rows: Vec<Value> = models.iter().map(json_row).collect();
        match serde_json::to_string_pretty(&rows) {
            Ok(json) => json + "\n",
            Err(err) => {
                eprintln!("reins: {err}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        render(&models)
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush());
    ExitCode::SUCCESS
}

/// One model in `--json`: the registry entry, where its calls go, where its key comes from.
fn json_row(model: &ListedModel) -> Value {
    let entry = &model.entry;
    let key = match &model.key {
        KeyState::Configured(source) => Some(source.as_str()),
        KeyState::NotNeeded | KeyState::Missing => None,
    };
    json!({
        "address": model.address(),
        "provider": entry.provider,
        "id": entry.id,
        "contextWindow": entry.context_window,
        "maxOutput": entry.max_output,
        "prices": to_proto::prices(&entry.prices),
        "reasoning": entry.reasoning,
        "baseUrl": model.base_url,
        "key": key,
        "keyNeeded": model.key != KeyState::NotNeeded,
        "default": model.current,
    })
}

fn render(models: &[ListedModel]) -> String {
    let mut out =
        String::from("MODEL                                   CONTEXT   OUTPUT  $IN/M  $OUT/M  REASONS  KEY\n");
    for model in models {
        let marker = if model.current { "*" } else { " " };
        let key = match &model.key {
            KeyState::Configured(source) => format!("yes ({source})"),
            KeyState::NotNeeded => "not needed".to_string(),
            KeyState::Missing => "missing".to_string(),
        };
        let entry = &model.entry;
        out.push_str(&format!(
            "{marker}{:<38} {:>8} {:>8} {:>6} {:>7}  {:<7}  {key}\n",
            model.address(),
            entry.context_window,
            entry.max_output,
            entry.prices.input,
            entry.prices.output,
            if entry.reasoning { "yes" } else { "no" },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use reins_harness::Settings;

    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Settings {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_env(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn marks_keys_and_the_default() {
        let settings = settings(&[
            ("HOME", "/nonexistent"),
            ("ANTHROPIC_API_KEY", "sk-ant-0123456789abcdef"),
            ("REINS_MODEL", "claude-haiku-4-5"),
        ]);
        let text = render(&settings.list_models());
        let line = |address: &str| {
            text.lines().find(|line| line[1..].starts_with(&format!("{address} "))).unwrap_or("").to_string()
        };
        assert!(line("anthropic/claude-haiku-4-5").starts_with('*'));
        assert!(line("anthropic/claude-sonnet-4-5").ends_with("yes (env ANTHROPIC_API_KEY)"));
        assert!(line("openai/gpt-4.1").ends_with("missing"));
        assert!(line("ollama/qwen2.5-coder:7b").ends_with("not needed"));
        assert!(!text.contains("0123456789abcdef"));
    }
}
