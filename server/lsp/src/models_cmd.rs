//! `reins models [--json]`: the model registry, built-in entries merged with the user's, each
//! marked with whether a key for its provider is at hand.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use reins_harness::{KeySource, ModelEntry, Settings};
use serde::Serialize;

#[derive(Debug, Default, PartialEq)]
pub struct ModelsArgs {
    pub json: bool,
    pub cwd: Option<PathBuf>,
}

/// One row of the listing.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ModelRow<'a> {
    /// `provider/id`, as `--model` takes it.
    address: String,
    #[serde(flatten)]
    entry: &'a ModelEntry,
    base_url: String,
    /// Where the key comes from (`env ANTHROPIC_API_KEY`, `api_key_command`), if anywhere.
    key: Option<String>,
    default: bool,
}

impl ModelsArgs {
    pub fn parse(args: impl Iterator<Item = OsString>) -> Result<Self, String> {
        use lexopt::prelude::*;
        let mut parser = lexopt::Parser::from_args(args);
        let err = |e: lexopt::Error| e.to_string();
        let mut out = ModelsArgs::default();
        while let Some(arg) = parser.next().map_err(err)? {
            match arg {
                Long("json") => out.json = true,
                Long("cwd") | Short('C') => out.cwd = Some(parser.value().map_err(err)?.into()),
                _ => return Err(arg.unexpected().to_string()),
            }
        }
        Ok(out)
    }
}

pub fn main(args: ModelsArgs) -> ExitCode {
    let root = match args.cwd.clone().map(Ok).unwrap_or_else(std::env::current_dir) {
        Ok(root) => root,
        Err(err) => {
            eprintln!("reins: cannot read the current directory: {err}");
            return ExitCode::FAILURE;
        }
    };
    let settings = crate::run::load_settings(&root);
    let rows = rows(&settings);
    let text = if args.json {
        match serde_json::to_string_pretty(&rows) {
            Ok(json) => json + "\n",
            Err(err) => {
                eprintln!("reins: {err}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        render(&rows)
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush());
    ExitCode::SUCCESS
}

fn rows(settings: &Settings) -> Vec<ModelRow<'_>> {
    let default = settings.resolve_model(None);
    settings
        .registry
        .models
        .iter()
        .map(|entry| {
            let model = settings.resolve_model(Some(&format!("{}/{}", entry.provider, entry.id)));
            let key = match settings.key_source(&entry.provider) {
                KeySource::Key(_, source) => Some(source.to_string()),
                KeySource::Command(_) => Some("api_key_command".to_string()),
                KeySource::None => None,
            };
            ModelRow {
                address: format!("{}/{}", entry.provider, entry.id),
                entry,
                base_url: model.base_url,
                key,
                default: default.provider == entry.provider && default.id == entry.id,
            }
        })
        .collect()
}

fn render(rows: &[ModelRow<'_>]) -> String {
    let mut out =
        String::from("MODEL                                   CONTEXT   OUTPUT  $IN/M  $OUT/M  REASONS  KEY\n");
    for row in rows {
        let marker = if row.default { "*" } else { " " };
        let local = row.base_url.contains("127.0.0.1") || row.base_url.contains("localhost");
        let key = match (&row.key, local) {
            (Some(source), _) => format!("yes ({source})"),
            (None, true) => "not needed".to_string(),
            (None, false) => "missing".to_string(),
        };
        out.push_str(&format!(
            "{marker}{:<38} {:>8} {:>8} {:>6} {:>7}  {:<7}  {key}\n",
            row.address,
            row.entry.context_window,
            row.entry.max_output,
            row.entry.prices.input,
            row.entry.prices.output,
            if row.entry.reasoning { "yes" } else { "no" },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
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
        let text = render(&rows(&settings));
        let line = |address: &str| {
            text.lines().find(|line| line[1..].starts_with(&format!("{address} "))).unwrap_or("").to_string()
        };
        assert!(line("anthropic/claude-haiku-4-5").starts_with('*'));
        assert!(line("anthropic/claude-sonnet-4-5").ends_with("yes (env ANTHROPIC_API_KEY)"));
        assert!(line("openai/gpt-4.1").ends_with("missing"));
        assert!(line("ollama/qwen2.5-coder:7b").ends_with("not needed"));
        assert!(!text.contains("0123456789abcdef"));
    }

    #[test]
    fn parses_flags() {
        let parse = |args: &[&str]| ModelsArgs::parse(args.iter().map(OsString::from));
        assert_eq!(parse(&["--json"]).unwrap(), ModelsArgs { json: true, cwd: None });
        assert!(parse(&["--bogus"]).is_err());
    }
}
