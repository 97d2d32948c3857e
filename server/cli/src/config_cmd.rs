//! `reins config check`: the effective configuration, each value with where it came from, keys
//! masked, which of the sandbox's protections hold on this system, and every problem found in the
//! config files. `reins config trust`: trusts the workspace with its config files as they are.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use reins_harness::{EditFormatChoice, FALLBACK_PROVIDER, KeySource, Policy, Settings, mask};
use reins_mcp::Transport;

use crate::cli;

/// The arguments of the subcommand (see `crate::cli::Command`).
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
    /// The workspace root, whose trusted .reins/config.toml applies (default: the current directory)
    #[arg(long, short = 'C', value_name = "DIR", value_parser = cli::directory, global = true)]
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, PartialEq, clap::Subcommand)]
pub enum ConfigCommand {
    /// Every setting in force, where it came from (keys masked), the sandbox's protections, and
    /// the problems found; exit status 1 when there are problems
    Check,
    /// Trust the workspace (its .mcp.json and .reins/config.toml apply) as its files are now;
    /// run it again after reviewing a change to them
    Trust,
}

/// Tools whose approval policy is always shown.
const TOOLS: &[&str] = &["read", "ls", "grep", "find", "edit", "apply_patch", "write", "bash"];

pub fn main(args: ConfigArgs) -> ExitCode {
    let root = match args.cwd.clone().map(Ok).unwrap_or_else(std::env::current_dir) {
        Ok(root) => root,
        Err(err) => {
            eprintln!("reins: cannot read the current directory: {err}");
            return ExitCode::FAILURE;
        }
    };
    if args.command == ConfigCommand::Trust {
        return trust(&root);
    }
    // Diagnostics are part of the report here, not warnings on stderr.
    let settings = Settings::load(|name| std::env::var(name).ok(), Some(&root));
    let text = report(&settings) + &reins_harness::describe_resources(&settings, &root);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush());
    if settings.diagnostics.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Trusts `root` as it is now, and says so.
fn trust(root: &std::path::Path) -> ExitCode {
    let settings = Settings::load(|name| std::env::var(name).ok(), None);
    match reins_harness::trust(&settings.config_dir, root) {
        Ok(root) => {
            let files: Vec<String> = reins_harness::TRUSTED_FILES
                .iter()
                .filter(|name| root.join(name).exists())
                .map(|name| name.to_string())
                .collect();
            let files = if files.is_empty() { "no config files yet".to_string() } else { files.join(", ") };
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "trusted {} ({files}, as they are now)", root.display());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("reins: cannot trust {}: {err}", root.display());
            ExitCode::FAILURE
        }
    }
}

/// One `key  value  (source)` line per setting, the sandbox's protections, then the problems.
pub fn report(settings: &Settings) -> String {
    let mut lines: Vec<(String, String, String)> = Vec::new();
    let row = |key: &str, value: String| (key.to_string(), value, settings.origin(key).to_string());
    lines.push(row("model", settings.model.clone()));
    lines.push(row("base_url", settings.base_url.clone()));
    let thinking = settings.thinking.map_or("provider default", |level| level.as_str());
    lines.push(row("thinking", thinking.to_string()));
    let mut tools: Vec<String> = TOOLS.iter().map(|tool| tool.to_string()).collect();
    for tool in settings.origins.keys().filter_map(|key| key.strip_prefix("approval.")) {
        if !tools.iter().any(|known| known == tool) {
            tools.push(tool.to_string());
        }
    }
    for tool in tools {
        let policy = match settings.approval.for_tool(&tool) {
            Policy::Ask => "ask",
            Policy::Auto => "auto",
            Policy::Deny => "deny",
        };
        lines.push(row(&format!("approval.{tool}"), policy.to_string()));
    }
    lines.push(row("compaction.auto", settings.compaction.auto.to_string()));
    lines.push(row("compaction.reserve_tokens", settings.compaction.reserve_tokens.to_string()));
    lines.push(row("compaction.keep_recent_tokens", settings.compaction.keep_recent_tokens.to_string()));
    lines.push(row("limits.max_turns", settings.max_turns.map_or("50".to_string(), |turns| turns.to_string())));
    let budget = settings.max_cost_usd.map_or("none".to_string(), |dollars| format!("${dollars}"));
    lines.push(row("limits.max_cost_usd", budget));
    lines.push(row("limits.stream_idle_timeout", format!("{} s", settings.stream_idle_timeout_secs)));
    let enabled = settings.tools_enabled.as_ref().map_or("all".to_string(), |set| set.items().join(", "));
    lines.push(row("tools.enabled", enabled));
    lines.push(row("tools.max_timeout", format!("{} s", settings.max_timeout_secs)));
    let edit_format = match settings.edit_format {
        EditFormatChoice::Auto => "auto",
        EditFormatChoice::Fixed(format) => format.tool_name(),
    };
    lines.push(row("tools.edit_format", edit_format.to_string()));
    let code_diagnostics = &settings.code_diagnostics;
    lines.push(row("diagnostics.after_edit", code_diagnostics.after_edit.to_string()));
    lines.push(row("diagnostics.settle_ms", format!("{} ms", code_diagnostics.settle_ms)));
    lines.push(row("diagnostics.warnings", code_diagnostics.warnings.to_string()));
    lines.push(row("diagnostics.command", code_diagnostics.command.clone().unwrap_or_else(|| "<none>".to_string())));
    lines.push(row("diagnostics.command_timeout", format!("{} s", code_diagnostics.command_timeout_secs)));
    lines.push(row("sandbox.mode", settings.sandbox.mode.as_str().to_string()));
    lines.push(row("sandbox.network", settings.sandbox.network.to_string()));
    for provider in &settings.registry.providers {
        lines.push(row(&format!("providers.{}.base_url", provider.name), provider.base_url.clone()));
    }
    let names = settings.registry.providers.iter().map(|provider| provider.name.as_str()).chain([FALLBACK_PROVIDER]);
    for name in names {
        let (value, origin) = match settings.key_source(name) {
            KeySource::Key(key, source) => (mask(&key), source.to_string()),
            KeySource::Command(_) => ("<from api_key_command>".to_string(), "config".to_string()),
            KeySource::None => ("<none>".to_string(), "-".to_string()),
        };
        lines.push((format!("providers.{name}.api_key"), value, origin));
    }
    for key in settings.origins.keys().filter(|key| key.starts_with("models.")) {
        lines.push(row(key, "custom entry".to_string()));
    }
    for server in &settings.mcp_servers {
        let origin = server.origin.clone();
        let key = format!("mcp_servers.{}", server.name);
        lines.push((key.clone(), server.transport.describe(), origin.clone()));
        // Values may be secrets: names only, and a masked token.
        let (names, token) = match &server.transport {
            Transport::Stdio { env, .. } => (env.iter().map(|(name, _)| format!("{name}=<set>")).collect(), None),
            Transport::Http { headers, bearer_token, .. } => {
                (headers.iter().map(|(name, _)| format!("{name}: <set>")).collect::<Vec<_>>(), bearer_token.as_ref())
            }
        };
        if !names.is_empty() {
            let field = if matches!(server.transport, Transport::Stdio { .. }) { "env" } else { "http_headers" };
            lines.push((format!("{key}.{field}"), names.join(", "), origin.clone()));
        }
        if let Some(token) = token {
            lines.push((format!("{key}.bearer_token"), mask(token), origin));
        }
    }
    let key_width = lines.iter().map(|(key, _, _)| key.len()).max().unwrap_or(0);
    let value_width = lines.iter().map(|(_, value, _)| value.chars().count()).max().unwrap_or(0).min(40);
    let mut out = String::new();
    for (key, value, origin) in &lines {
        out.push_str(&format!("{key:<key_width$}  {value:<value_width$}  ({origin})\n"));
    }
    out.push_str("\nsandbox protection on this system:\n");
    for (in_force, line) in reins_tools::protections(&settings.sandbox) {
        let state = if in_force { "in force" } else { "not in force" };
        out.push_str(&format!("  {state:<12}  {line}\n"));
    }
    if settings.diagnostics.is_empty() {
        out.push_str("\nno problems found\n");
    } else {
        out.push_str(&format!("\n{} problem(s):\n", settings.diagnostics.len()));
        for diagnostic in &settings.diagnostics {
            out.push_str(&format!("  {diagnostic}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_masked_and_sources_named() {
        let vars = [
            ("HOME", "/nonexistent"),
            ("ANTHROPIC_API_KEY", "sk-ant-api03-abcdefghijklmnop"),
            ("OPENAI_API_KEY", "short"),
            ("REINS_MODEL", "claude-sonnet-4-5"),
        ];
        let settings = Settings::from_env(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()));
        let text = report(&settings);
        let line = |key: &str| text.lines().find(|line| line.starts_with(&format!("{key} "))).unwrap_or("").to_string();
        let squeeze = |line: String| line.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(squeeze(line("model")), "model claude-sonnet-4-5 (env REINS_MODEL)");
        assert_eq!(
            squeeze(line("providers.anthropic.api_key")),
            "providers.anthropic.api_key sk-…mnop (env ANTHROPIC_API_KEY)"
        );
        assert_eq!(squeeze(line("providers.openai.api_key")), "providers.openai.api_key <set> (env OPENAI_API_KEY)");
        assert_eq!(squeeze(line("approval.bash")), "approval.bash ask (default)");
        assert!(!text.contains("abcdefghijklmnop") && text.ends_with("no problems found\n"));
    }

    #[test]
    fn mcp_servers_are_listed_with_their_origin_and_secrets_masked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "[mcp_servers.gh]\ncommand = \"gh-mcp\"\nenv = { GH_HOST = \"ghe.example.com\" }\n\
             [mcp_servers.docs]\nurl = \"https://example.com/mcp\"\nbearer_token_env_var = \"DOCS_TOKEN\"\n\
             http_headers = { \"X-Team\" = \"core-team-secret\" }\n",
        )
        .unwrap();
        let home = dir.path().display().to_string();
        let vars = [("REINS_HOME", home.as_str()), ("DOCS_TOKEN", "docs-0123456789abcdef")];
        let settings = Settings::from_env(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()));
        let text = report(&settings);
        let squeeze = |line: &str| line.split_whitespace().collect::<Vec<_>>().join(" ");
        let origin = dir.path().join("config.toml").display().to_string();
        let mcp: Vec<String> = text.lines().filter(|line| line.starts_with("mcp_servers.")).map(squeeze).collect();
        assert_eq!(
            mcp,
            [
                format!("mcp_servers.gh gh-mcp ({origin})"),
                format!("mcp_servers.gh.env GH_HOST=<set> ({origin})"),
                format!("mcp_servers.docs https://example.com/mcp ({origin})"),
                format!("mcp_servers.docs.http_headers X-Team: <set> ({origin})"),
                format!("mcp_servers.docs.bearer_token …cdef ({origin})"),
            ]
        );
        assert!(!text.contains("0123456789") && !text.contains("core-team-secret") && !text.contains("ghe.example"));
    }
}
