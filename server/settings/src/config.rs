//! Config layers: what one source — the user's `config.toml`, a trusted project's
//! `.reins/config.toml`, or the editor's settings (JSON, camelCase) — sets, read key by key so
//! that one bad value is reported with its file, line and key and the rest still applies.
//!
//! Keys are snake_case in TOML and camelCase in JSON; both spellings are accepted everywhere.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reins_ai::{ApiKey, Efforts, ThinkingLevel};
use reins_tools::{EditFormat, SandboxMode};
use toml::de::{DeTable, DeValue};

use crate::Settings;
use crate::registry::Api;
use crate::tool_set::ToolSet;
use reins_review::{Policy, ToolPattern};

#[macro_use]
mod keys;
mod hooks;
pub use hooks::{DEFAULT_HOOK_TIMEOUT_SECS, HookConfig, HookEvent};
mod mcp_entries;
pub use mcp_entries::{McpServerLayer, McpTransportLayer};
mod langserver;
pub use langserver::LspServerLayer;
pub(crate) use langserver::lsp_servers;

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    Env(String),
    /// The editor's `initializationOptions` or `didChangeConfiguration`.
    Editor,
    AuthFile(PathBuf),
    Command,
}

/// Which kind of source a layer is; it decides what the layer may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    /// `config.toml` in the user's config dir: anything but a literal key.
    User,
    /// A trusted project's `.reins/config.toml`: no keys, key variables or key commands.
    Project,
    /// The editor's settings: keys, but no key commands or key variables (a workspace's editor
    /// settings may come from the repository).
    Editor,
}

/// A problem with one setting; the setting is ignored and everything else applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigDiagnostic {
    /// The file, or `editor settings`.
    pub origin: String,
    pub line: Option<usize>,
    /// The key's path, such as `approval.bash` or `models[1].context_window`.
    pub key: String,
    pub message: String,
}

keys! {
    /// What one source sets; `None` and empty maps leave the value below in force.
    pub struct ConfigLayer {
        "model" => model: String =
            |r, path, node| r.string(path, node),
            |s, model| s.model = model;
        /// The OpenAI-compatible endpoint for models the registry does not know.
        "base_url" => base_url: String =
            |r, path, node| r.string(path, node).map(|url| trim_url(&url)),
            |s, url| {
                s.base_url = url;
                s.base_url_configured = true;
            };
        /// How hard reasoning models think, unless a session says otherwise.
        "thinking" => thinking: ThinkingLevel =
            |r, path, node| r.thinking(path, node),
            |s, level| s.thinking = Some(level);
        "compaction.auto" => compaction_auto: bool =
            |r, path, node| r.boolean(path, node),
            |s, auto| s.compaction.auto = auto;
        "compaction.reserve_tokens" => reserve_tokens: u64 =
            |r, path, node| r.uint(path, node),
            |s, tokens| s.compaction.reserve_tokens = tokens;
        "compaction.keep_recent_tokens" => keep_recent_tokens: u64 =
            |r, path, node| r.uint(path, node),
            |s, tokens| s.compaction.keep_recent_tokens = tokens;
        "limits.max_turns" => max_turns: u32 =
            |r, path, node| r.count_from_one(path, node, "expected a number of turns from 1 up"),
            |s, turns| s.max_turns = Some(turns);
        /// `[limits] max_cost_usd`: what one session may spend on model calls, in US dollars.
        "limits.max_cost_usd" => max_cost_usd: f64 =
            |r, path, node| r.float(path, node),
            |s, dollars| s.max_cost_usd = Some(dollars);
        /// `[limits] max_subagents`: subagents (`task` calls) at work at once.
        "limits.max_subagents" => max_subagents: usize =
            |r, path, node| r.count_from_one(path, node, "expected a number of subagents from 1 up"),
            |s, count| s.max_subagents = count;
        /// `[limits] stream_idle_timeout`, in seconds.
        "limits.stream_idle_timeout" => stream_idle_timeout: u64 =
            |r, path, node| r.seconds_from_one(path, node),
            |s, seconds| s.stream_idle_timeout_secs = seconds;
        /// `[tools]`: the longest timeout a `bash` call may ask for, in seconds.
        "tools.max_timeout" => max_timeout: u64 =
            |r, path, node| r.seconds_from_one(path, node),
            |s, seconds| s.max_timeout_secs = seconds;
        /// `[tools] enabled`: the tools offered (names and globs), unless a session chose its own.
        "tools.enabled" => tools_enabled: ToolSet =
            |r, path, node| match r.strings(path, node).map(|items| ToolSet::parse(&items)) {
                Some(Ok(set)) => Some(set),
                Some(Err(reason)) => r.refuse(path, node, &reason),
                None => None,
            },
            |s, enabled| s.tools_enabled = Some(enabled);
        /// `[tools]`: globs of variables passed to tools although their names look secret.
        "tools.pass_env" => pass_env: Vec<String> =
            |r, path, node| match r.kind {
                LayerKind::User => r.strings(path, node),
                _ => r.refuse(path, node, "only your own config.toml can pass secrets to tools"),
            },
            |s, pass| s.pass_env = pass;
        /// `[tools]`: which edit tool models get (`auto`: as the model's registry entry says).
        "tools.edit_format" => edit_format: EditFormatChoice =
            |r, path, node| r.edit_format(path, node, true),
            |s, format| s.edit_format = format;
        /// `[tools] mcp_deferred_above`: the share of the context window past which MCP tools are
        /// found through `tool_search` instead of declared.
        "tools.mcp_deferred_above" => mcp_deferred_above: f64 =
            |r, path, node| r.float(path, node),
            |s, share| s.mcp_deferred_above = share;
        /// `[tools] mcp_startup_wait`: how long a request waits for MCP servers still starting.
        "tools.mcp_startup_wait" => mcp_startup_wait: Duration =
            |r, path, node| r.float(path, node).map(|seconds| Duration::from_secs_f64(seconds.min(3_600.0))),
            |s, wait| s.mcp_startup_wait = wait;
    }
    others {
        pub api_key: Option<ApiKey>,
        pub approval: BTreeMap<String, Policy>,
        pub sandbox: SandboxLayer,
        pub diagnostics: DiagnosticsLayer,
        pub providers: BTreeMap<String, ProviderLayer>,
        pub models: Vec<ModelLayer>,
        /// `[mcp_servers.NAME]`, in the order written.
        pub mcp_servers: Vec<(String, McpServerLayer)>,
        /// `[lsp_servers.NAME]`, in the order written.
        pub lsp_servers: Vec<(String, LspServerLayer)>,
        /// `[[hooks]]`, in the order written.
        pub hooks: Vec<HookConfig>,
    }
}

keys! {
    /// `[diagnostics]`: the problems the agent's edits caused, told to it.
    pub struct DiagnosticsLayer {
        "diagnostics.after_edit" => after_edit: bool =
            |r, path, node| r.boolean(path, node),
            |s, after_edit| s.code_diagnostics.after_edit = after_edit;
        /// Milliseconds.
        "diagnostics.settle_ms" => settle_ms: u64 =
            |r, path, node| match r.uint(path, node) {
                Some(ms) if ms > 60_000 => r.refuse(path, node, "expected milliseconds from 0 to 60000"),
                ms => ms,
            },
            |s, ms| s.code_diagnostics.settle_ms = ms;
        "diagnostics.warnings" => warnings: bool =
            |r, path, node| r.boolean(path, node),
            |s, warnings| s.code_diagnostics.warnings = warnings;
        "diagnostics.command" => command: String =
            |r, path, node| match r.kind {
                LayerKind::Editor => r.refuse(path, node, "editor settings cannot run commands; set it in config.toml"),
                _ => r.string(path, node),
            },
            |s, command| s.code_diagnostics.command = Some(command);
        /// Seconds.
        "diagnostics.command_timeout" => command_timeout: u64 =
            |r, path, node| r.seconds_from_one(path, node),
            |s, seconds| s.code_diagnostics.command_timeout_secs = seconds;
    }
}

/// `[tools] edit_format`: one dialect for every model, or each model's own (`auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EditFormatChoice {
    #[default]
    Auto,
    Fixed(EditFormat),
}

/// `[sandbox]`. Paths may start with `~/`. Only the user's own config may loosen the sandbox.
#[derive(Debug, Clone, Default)]
pub struct SandboxLayer {
    pub mode: Option<SandboxMode>,
    pub network: Option<bool>,
    pub writable: Option<Vec<String>>,
    /// Added to the built-in list of secrets.
    pub deny_read: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct ProviderLayer {
    pub api: Option<Api>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub api_key_command: Option<String>,
    pub api_key: Option<ApiKey>,
}

/// A `[[models]]` entry: extends the registry, or overrides the fields it sets of a known model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelLayer {
    pub id: String,
    pub provider: Option<String>,
    pub api: Option<Api>,
    pub base_url: Option<String>,
    pub context_window: Option<u64>,
    pub max_output: Option<u64>,
    /// input, output, cache read, cache write ($ per million tokens).
    pub prices: [Option<f64>; 4],
    pub reasoning: Option<bool>,
    pub developer_role: Option<bool>,
    pub max_completion_tokens: Option<bool>,
    /// `true` (`low`, `medium`, `high`), `false`, or the list of levels the model takes.
    pub reasoning_effort: Option<Efforts>,
    pub edit_format: Option<EditFormat>,
}

/// A parsed value with the line it is on (TOML only).
#[derive(Debug)]
struct Node {
    value: Value,
    line: Option<usize>,
}

#[derive(Debug)]
enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    List(Vec<Node>),
    Table(Vec<(String, Node)>),
    Other(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(path) => write!(f, "{}", path.display()),
            Source::Env(name) => write!(f, "env {name}"),
            Source::Editor => f.write_str("editor settings"),
            Source::AuthFile(path) => write!(f, "{}", path.display()),
            Source::Command => f.write_str("api_key_command"),
        }
    }
}

impl fmt::Display for ConfigDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}: {}", self.origin, self.key, self.message),
            None => write!(f, "{}: {}: {}", self.origin, self.key, self.message),
        }
    }
}

impl ConfigLayer {
    /// Reads a TOML config file's text. A syntax error skips only what the parser could not
    /// recover.
    pub fn from_toml(path: &Path, text: &str, kind: LayerKind) -> (Self, Vec<ConfigDiagnostic>) {
        let origin = path.display().to_string();
        let lines = LineIndex::new(text);
        let (table, errors) = DeTable::parse_recoverable(text);
        let mut diagnostics: Vec<ConfigDiagnostic> = errors
            .iter()
            .map(|error| ConfigDiagnostic {
                origin: origin.clone(),
                line: error.span().map(|span| lines.line(span.start)),
                key: "(syntax)".into(),
                message: error.message().trim().to_string(),
            })
            .collect();
        let root = toml_table(table.get_ref(), &lines);
        let mut reader = Reader { origin, kind, diagnostics: &mut diagnostics };
        let layer = reader.layer(&root);
        (layer, diagnostics)
    }

    /// Reads the editor's settings object (`{"reins": {…}}` or the object itself).
    pub fn from_json(value: &serde_json::Value) -> (Self, Vec<ConfigDiagnostic>) {
        let value = value.get("reins").unwrap_or(value);
        let mut diagnostics = Vec::new();
        if value.is_null() {
            return (Self::default(), diagnostics);
        }
        let root = json_node(value);
        let mut reader =
            Reader { origin: "editor settings".into(), kind: LayerKind::Editor, diagnostics: &mut diagnostics };
        let layer = reader.layer(&root);
        (layer, diagnostics)
    }

    /// Reads a config file; a missing file is no layer.
    pub fn from_file(path: &Path, kind: LayerKind) -> Option<(Self, Vec<ConfigDiagnostic>)> {
        read_source(path, |text| Self::from_toml(path, text, kind))
    }
}

/// `read(text)` of the file at `path`; `None` when there is no file, and an empty layer with the
/// reason when it cannot be read.
pub(crate) fn read_source(
    path: &Path,
    read: impl FnOnce(&str) -> (ConfigLayer, Vec<ConfigDiagnostic>),
) -> Option<(ConfigLayer, Vec<ConfigDiagnostic>)> {
    match std::fs::read_to_string(path) {
        Ok(text) => Some(read(&text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => Some((
            ConfigLayer::default(),
            vec![ConfigDiagnostic {
                origin: path.display().to_string(),
                line: None,
                key: "(file)".into(),
                message: format!("cannot read: {error}"),
            }],
        )),
    }
}

/// Reads the keys of one layer, reporting each bad one.
struct Reader<'a> {
    origin: String,
    kind: LayerKind,
    diagnostics: &'a mut Vec<ConfigDiagnostic>,
}

impl Reader<'_> {
    fn layer(&mut self, root: &Node) -> ConfigLayer {
        let mut layer = ConfigLayer::default();
        let Some(entries) = self.table("", root) else { return layer };
        for (key, node) in entries {
            let name = canonical(key);
            // A dotted key (`"limits.max_turns" = 3`) is one odd name, not a path.
            if !name.contains('.') && layer.read(self, &name, key, node) {
                continue;
            }
            match name.as_str() {
                "api_key" => layer.api_key = self.key(key, node),
                "approval" => {
                    for (tool, value) in self.table(key, node).unwrap_or_default() {
                        let path = format!("{key}.{tool}");
                        // A glob on tool names: `"mcp__docs__*" = "auto"`.
                        if ToolPattern::is_glob(tool)
                            && let Err(message) = ToolPattern::new(tool)
                        {
                            self.error(&path, value, &message);
                            continue;
                        }
                        if let Some(policy) = self.policy(&path, value) {
                            layer.approval.insert(tool.clone(), policy);
                        }
                    }
                }
                "compaction" | "limits" | "tools" => {
                    self.section(key, node, |reader, name, path, value| layer.read(reader, name, path, value))
                }
                "diagnostics" => self
                    .section(key, node, |reader, name, path, value| layer.diagnostics.read(reader, name, path, value)),
                "sandbox" => layer.sandbox = self.sandbox(key, node),
                "mcp_servers" => self.mcp_servers(key, node, &mut layer.mcp_servers),
                "lsp_servers" => self.lsp_servers(key, node, &mut layer.lsp_servers),
                "hooks" => self.hooks(key, node, &mut layer.hooks),
                "providers" => {
                    for (name, value) in self.table(key, node).unwrap_or_default() {
                        let provider = self.provider(&format!("{key}.{name}"), value);
                        layer.providers.insert(name.clone(), provider);
                    }
                }
                "models" => match &node.value {
                    Value::List(items) => {
                        for (index, item) in items.iter().enumerate() {
                            if let Some(model) = self.model(&format!("{key}[{index}]"), item) {
                                layer.models.push(model);
                            }
                        }
                    }
                    _ => self.error(key, node, "expected a list of model tables ([[models]])"),
                },
                _ => self.unknown(key, node),
            }
        }
        layer
    }

    fn sandbox(&mut self, path: &str, node: &Node) -> SandboxLayer {
        let mut sandbox = SandboxLayer::default();
        let user = self.kind == LayerKind::User;
        let tighten_only = "only your own config.toml can loosen the sandbox; here it can only be tightened";
        for (field, value) in self.table(path, node).unwrap_or_default() {
            let key = format!("{path}.{field}");
            match canonical(field).as_str() {
                "mode" => match self.string(&key, value).as_deref().map(|name| (name, SandboxMode::parse(name))) {
                    Some((_, Some(mode))) if user || mode == SandboxMode::ReadOnly => sandbox.mode = Some(mode),
                    Some((_, Some(_))) => self.error(&key, value, tighten_only),
                    Some((name, None)) => self.error(
                        &key,
                        value,
                        &format!("expected \"off\", \"workspace-write\" or \"read-only\", found {name:?}"),
                    ),
                    None => {}
                },
                "network" => match self.boolean(&key, value) {
                    Some(true) if !user => self.error(&key, value, tighten_only),
                    network => sandbox.network = network.or(sandbox.network),
                },
                "writable" if !user => self.error(&key, value, tighten_only),
                "writable" => sandbox.writable = self.strings(&key, value),
                "deny_read" => sandbox.deny_read = self.strings(&key, value).unwrap_or_default(),
                _ => self.unknown(&key, value),
            }
        }
        sandbox
    }

    /// The fields of section `key` (`[limits]`), each read by `read` (its canonical path, its
    /// path as written, its value), which says whether the key is known.
    fn section(&mut self, key: &str, node: &Node, mut read: impl FnMut(&mut Self, &str, &str, &Node) -> bool) {
        let section = canonical(key);
        for (field, value) in self.table(key, node).unwrap_or_default() {
            let path = format!("{key}.{field}");
            if !read(self, &format!("{section}.{}", canonical(field)), &path, value) {
                self.unknown(&path, value);
            }
        }
    }

    fn provider(&mut self, path: &str, node: &Node) -> ProviderLayer {
        let mut provider = ProviderLayer::default();
        for (field, value) in self.table(path, node).unwrap_or_default() {
            let key = format!("{path}.{field}");
            match canonical(field).as_str() {
                "api" => provider.api = self.api(&key, value),
                "base_url" => provider.base_url = self.string(&key, value).map(|url| trim_url(&url)),
                "api_key" => provider.api_key = self.key(&key, value),
                "api_key_env" | "api_key_command" if self.kind != LayerKind::User => {
                    let message = match self.kind {
                        LayerKind::Project => {
                            "a project's config cannot choose API keys; set it in your own config.toml"
                        }
                        _ => "editor settings cannot name key variables or run commands; set it in config.toml",
                    };
                    self.error(&key, value, message);
                }
                "api_key_env" => provider.api_key_env = self.string(&key, value),
                "api_key_command" => provider.api_key_command = self.string(&key, value),
                _ => self.unknown(&key, value),
            }
        }
        provider
    }

    fn model(&mut self, path: &str, node: &Node) -> Option<ModelLayer> {
        let entries = self.table(path, node)?;
        let mut model = ModelLayer::default();
        for (field, value) in entries {
            let key = format!("{path}.{field}");
            match canonical(field).as_str() {
                "id" => model.id = self.string(&key, value).unwrap_or_default(),
                "provider" => model.provider = self.string(&key, value),
                "api" => model.api = self.api(&key, value),
                "base_url" => model.base_url = self.string(&key, value).map(|url| trim_url(&url)),
                "context_window" => model.context_window = self.uint(&key, value),
                "max_output" => model.max_output = self.uint(&key, value),
                "reasoning" => model.reasoning = self.boolean(&key, value),
                "developer_role" => model.developer_role = self.boolean(&key, value),
                "max_completion_tokens" => model.max_completion_tokens = self.boolean(&key, value),
                "reasoning_effort" => model.reasoning_effort = self.efforts(&key, value),
                "edit_format" => {
                    model.edit_format = match self.edit_format(&key, value, false) {
                        Some(EditFormatChoice::Fixed(format)) => Some(format),
                        _ => None,
                    }
                }
                "prices" => {
                    for (name, price) in self.table(&key, value).unwrap_or_default() {
                        let price_key = format!("{key}.{name}");
                        let slot = match canonical(name).as_str() {
                            "input" => 0,
                            "output" => 1,
                            "cache_read" => 2,
                            "cache_write" => 3,
                            _ => {
                                self.unknown(&price_key, price);
                                continue;
                            }
                        };
                        model.prices[slot] = self.float(&price_key, price);
                    }
                }
                _ => self.unknown(&key, value),
            }
        }
        if model.id.trim().is_empty() {
            self.error(path, node, "a model needs an `id`; this entry was skipped");
            return None;
        }
        Some(model)
    }

    fn key(&mut self, path: &str, node: &Node) -> Option<ApiKey> {
        if self.kind != LayerKind::Editor {
            self.error(
                path,
                node,
                "API keys do not belong in config files; use an environment variable, auth.json (mode 0600) \
                 or providers.<name>.api_key_command",
            );
            return None;
        }
        self.string(path, node).map(ApiKey::new)
    }

    fn policy(&mut self, path: &str, node: &Node) -> Option<Policy> {
        match self.string(path, node)?.as_str() {
            "ask" => Some(Policy::Ask),
            "auto" => Some(Policy::Auto),
            "deny" => Some(Policy::Deny),
            other => {
                self.error(path, node, &format!("expected \"ask\", \"auto\" or \"deny\", found {other:?}"));
                None
            }
        }
    }

    /// `"edit"`, `"apply_patch"`, or (where `auto` is allowed) `"auto"`.
    fn edit_format(&mut self, path: &str, node: &Node, auto: bool) -> Option<EditFormatChoice> {
        match self.string(path, node)?.as_str() {
            "edit" => Some(EditFormatChoice::Fixed(EditFormat::Edit)),
            "apply_patch" => Some(EditFormatChoice::Fixed(EditFormat::ApplyPatch)),
            "auto" if auto => Some(EditFormatChoice::Auto),
            other => {
                let expected =
                    if auto { "\"auto\", \"edit\" or \"apply_patch\"" } else { "\"edit\" or \"apply_patch\"" };
                self.error(path, node, &format!("expected {expected}, found {other:?}"));
                None
            }
        }
    }

    fn thinking(&mut self, path: &str, node: &Node) -> Option<ThinkingLevel> {
        let name = self.string(path, node)?;
        let level = ThinkingLevel::parse(&name);
        if level.is_none() {
            self.error(path, node, &format!("expected one of {}, found {name:?}", ThinkingLevel::names()));
        }
        level
    }

    fn efforts(&mut self, path: &str, node: &Node) -> Option<Efforts> {
        match &node.value {
            Value::Bool(true) => Some(Efforts::LOW_TO_HIGH),
            Value::Bool(false) => Some(Efforts::NONE),
            Value::List(_) => {
                let mut efforts = Efforts::NONE;
                for name in self.strings(path, node)? {
                    match ThinkingLevel::parse(&name).filter(|level| *level != ThinkingLevel::Off) {
                        Some(level) => efforts = efforts.with(level),
                        None => {
                            let expected = "expected levels of minimal|low|medium|high|xhigh";
                            self.error(path, node, &format!("{expected}, found {name:?}"));
                            return None;
                        }
                    }
                }
                Some(efforts)
            }
            _ => self.mismatch(path, node, "true, false or a list of levels"),
        }
    }

    fn api(&mut self, path: &str, node: &Node) -> Option<Api> {
        match self.string(path, node)?.as_str() {
            "openai" => Some(Api::OpenAi),
            "anthropic" => Some(Api::Anthropic),
            other => {
                self.error(path, node, &format!("expected \"openai\" or \"anthropic\", found {other:?}"));
                None
            }
        }
    }

    fn string(&mut self, path: &str, node: &Node) -> Option<String> {
        match &node.value {
            Value::Str(text) if !text.trim().is_empty() => Some(text.trim().to_string()),
            Value::Str(_) => {
                self.error(path, node, "is empty");
                None
            }
            _ => self.mismatch(path, node, "a string"),
        }
    }

    fn strings(&mut self, path: &str, node: &Node) -> Option<Vec<String>> {
        let Value::List(items) = &node.value else { return self.mismatch(path, node, "a list of strings") };
        let mut strings = Vec::new();
        for (index, item) in items.iter().enumerate() {
            strings.extend(self.string(&format!("{path}[{index}]"), item));
        }
        Some(strings)
    }

    fn uint(&mut self, path: &str, node: &Node) -> Option<u64> {
        match node.value {
            Value::Int(n) if n >= 0 => Some(n as u64),
            _ => self.mismatch(path, node, "a whole number, 0 or more"),
        }
    }

    /// A count from 1 up that fits `T`; `message` says what was expected otherwise.
    fn count_from_one<T: TryFrom<u64>>(&mut self, path: &str, node: &Node, message: &str) -> Option<T> {
        match self.uint(path, node).map(|n| (n, T::try_from(n))) {
            Some((n, Ok(value))) if n > 0 => Some(value),
            Some(_) => self.refuse(path, node, message),
            None => None,
        }
    }

    fn seconds_from_one(&mut self, path: &str, node: &Node) -> Option<u64> {
        self.count_from_one(path, node, "expected a number of seconds from 1 up")
    }

    fn float(&mut self, path: &str, node: &Node) -> Option<f64> {
        match node.value {
            Value::Int(n) if n >= 0 => Some(n as f64),
            Value::Float(x) if x >= 0.0 && x.is_finite() => Some(x),
            _ => self.mismatch(path, node, "a number, 0 or more"),
        }
    }

    fn boolean(&mut self, path: &str, node: &Node) -> Option<bool> {
        match node.value {
            Value::Bool(b) => Some(b),
            _ => self.mismatch(path, node, "true or false"),
        }
    }

    fn table<'n>(&mut self, path: &str, node: &'n Node) -> Option<&'n [(String, Node)]> {
        match &node.value {
            Value::Table(entries) => Some(entries),
            // Lua (Neovim) encodes an empty table as `[]`: in the editor's JSON an empty list is
            // an empty table, not worth a warning.
            Value::List(items) if items.is_empty() && self.kind == LayerKind::Editor => Some(&[]),
            _ => self.mismatch(path, node, "a table"),
        }
    }

    fn mismatch<T>(&mut self, path: &str, node: &Node, expected: &str) -> Option<T> {
        let found = match &node.value {
            Value::Str(_) => "a string",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Bool(_) => "a boolean",
            Value::List(_) => "a list",
            Value::Table(_) => "a table",
            Value::Other(kind) => kind,
        };
        self.error(path, node, &format!("expected {expected}, found {found}"));
        None
    }

    /// Reports `message` about the value at `path`, which is not taken.
    fn refuse<T>(&mut self, path: &str, node: &Node, message: &str) -> Option<T> {
        self.error(path, node, message);
        None
    }

    fn unknown(&mut self, path: &str, node: &Node) {
        self.error(path, node, "unknown key; it was ignored");
    }

    fn error(&mut self, path: &str, node: &Node, message: &str) {
        self.diagnostics.push(ConfigDiagnostic {
            origin: self.origin.clone(),
            line: node.line,
            key: if path.is_empty() { "(root)".into() } else { path.to_string() },
            message: message.to_string(),
        });
    }
}

/// `baseUrl` → `base_url`; snake_case stays as it is.
fn canonical(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

pub(crate) fn trim_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_string()
}

/// Byte offset → 1-based line.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(at, _)| at + 1)).collect();
        Self { starts }
    }

    fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset)
    }
}

fn toml_table(table: &DeTable<'_>, lines: &LineIndex) -> Node {
    let mut keyed: Vec<_> = table.iter().collect();
    // In the order they are written, so diagnostics come out in file order.
    keyed.sort_by_key(|(key, _)| key.span().start);
    let entries = keyed
        .into_iter()
        .map(|(key, value)| {
            let mut node = toml_node(value.get_ref(), value.span().start, lines);
            // A key's line is where the key is written (a table's header, for tables).
            node.line = Some(lines.line(key.span().start));
            (key.get_ref().to_string(), node)
        })
        .collect();
    Node { value: Value::Table(entries), line: Some(1) }
}

fn toml_node(value: &DeValue<'_>, offset: usize, lines: &LineIndex) -> Node {
    let line = Some(lines.line(offset));
    let value = match value {
        DeValue::String(text) => Value::Str(text.to_string()),
        DeValue::Integer(n) => match i64::from_str_radix(&n.as_str().replace('_', ""), n.radix()) {
            Ok(n) => Value::Int(n),
            Err(_) => Value::Other("an integer out of range"),
        },
        DeValue::Float(x) => match x.as_str().replace('_', "").parse::<f64>() {
            Ok(x) => Value::Float(x),
            Err(_) => Value::Other("an unreadable float"),
        },
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(_) => Value::Other("a date"),
        DeValue::Array(items) => {
            Value::List(items.iter().map(|item| toml_node(item.get_ref(), item.span().start, lines)).collect())
        }
        DeValue::Table(table) => return Node { line, ..toml_table(table, lines) },
    };
    Node { value, line }
}

fn json_node(value: &serde_json::Value) -> Node {
    use serde_json::Value as Json;
    let value = match value {
        Json::String(text) => Value::Str(text.clone()),
        Json::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(n), _) => Value::Int(n),
            (None, Some(x)) => Value::Float(x),
            _ => Value::Other("a number out of range"),
        },
        Json::Bool(b) => Value::Bool(*b),
        Json::Array(items) => Value::List(items.iter().map(json_node).collect()),
        // A key set to null is not set: editors send null for a setting the user left empty.
        Json::Object(fields) => {
            Value::Table(fields.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), json_node(v))).collect())
        }
        Json::Null => Value::Other("null"),
    };
    Node { value, line: None }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    /// The diagnostics of a user config file, one a line.
    fn diagnostics(kind: LayerKind, text: &str) -> String {
        let (_, diagnostics) = ConfigLayer::from_toml(Path::new("/home/u/.config/reins/config.toml"), text, kind);
        diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn reads_every_section() {
        let text = r#"
model = "anthropic/claude-sonnet-4-5"
base_url = "http://127.0.0.1:8080/v1/"
thinking = "high"

[approval]
bash = "deny"
edit = "auto"

[compaction]
auto = false
reserve_tokens = 1000
keep_recent_tokens = 2000

[tools]
enabled = ["read-only", "mcp__docs__*"]
mcp_deferred_above = 0.05
mcp_startup_wait = 0.5

[limits]
max_turns = 7
max_cost_usd = 2.5

[providers.lab]
base_url = "http://10.0.0.2:8000/v1"
api_key_env = "LAB_KEY"
api_key_command = "pass show lab"

[[models]]
id = "big"
provider = "lab"
context_window = 32768
prices = { input = 1, output = 2.5 }
developer_role = true
reasoning_effort = ["minimal", "high"]
"#;
        let (layer, diagnostics) = ConfigLayer::from_toml(Path::new("c.toml"), text, LayerKind::User);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(layer.model.as_deref(), Some("anthropic/claude-sonnet-4-5"));
        assert_eq!(layer.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
        assert_eq!(layer.approval.get("bash"), Some(&Policy::Deny));
        assert_eq!((layer.compaction_auto, layer.reserve_tokens, layer.max_turns), (Some(false), Some(1000), Some(7)));
        assert_eq!((layer.thinking, layer.max_cost_usd), (Some(ThinkingLevel::High), Some(2.5)));
        let enabled = layer.tools_enabled.unwrap();
        assert_eq!(enabled.items(), ["read", "ls", "grep", "find", "todo", "diagnostics", "lsp", "mcp__docs__*"]);
        assert_eq!(layer.mcp_deferred_above, Some(0.05));
        assert_eq!(layer.mcp_startup_wait, Some(Duration::from_millis(500)));
        let lab = &layer.providers["lab"];
        assert_eq!(
            (lab.api_key_env.as_deref(), lab.api_key_command.as_deref()),
            (Some("LAB_KEY"), Some("pass show lab"))
        );
        assert_eq!(layer.models[0].prices, [Some(1.0), Some(2.5), None, None]);
        assert_eq!(layer.models[0].developer_role, Some(true));
        let efforts = layer.models[0].reasoning_effort.unwrap();
        assert_eq!(efforts.levels().map(ThinkingLevel::as_str).collect::<Vec<_>>(), ["minimal", "high"]);
    }

    #[test]
    fn bad_values_name_file_line_and_key_and_the_rest_loads() {
        let text = "model = \"m\"\nthinking = \"max\"\n[approval]\nbash = \"sometimes\"\nedit = \"auto\"\n[limits]\n\
                    max_turns = \"ten\"\nmax_cost_usd = -1\n[tools]\nenabled = [\"read\", \"grep_all\"]\n[[models]]\nprovider = \"x\"\n[compaction]\nreserve = 3\n";
        expect![[r#"
            /home/u/.config/reins/config.toml:2: thinking: expected one of off|minimal|low|medium|high|xhigh, found "max"
            /home/u/.config/reins/config.toml:4: approval.bash: expected "ask", "auto" or "deny", found "sometimes"
            /home/u/.config/reins/config.toml:7: limits.max_turns: expected a whole number, 0 or more, found a string
            /home/u/.config/reins/config.toml:8: limits.max_cost_usd: expected a number, 0 or more, found an integer
            /home/u/.config/reins/config.toml:10: tools.enabled: unknown tool `grep_all`; the tools are read, write, edit, apply_patch, bash, ls, grep, find, todo, diagnostics, lsp, rename, task, and mcp__<server>__<tool> for MCP servers' (globs such as mcp__* work too), or read-only for read, ls, grep, find, todo, diagnostics, lsp
            /home/u/.config/reins/config.toml:11: models[0]: a model needs an `id`; this entry was skipped
            /home/u/.config/reins/config.toml:14: compaction.reserve: unknown key; it was ignored"#]]
        .assert_eq(&diagnostics(LayerKind::User, text));
        let (layer, _) = ConfigLayer::from_toml(Path::new("c.toml"), text, LayerKind::User);
        assert_eq!((layer.model.as_deref(), layer.approval.get("edit")), (Some("m"), Some(&Policy::Auto)));
    }

    #[test]
    fn every_plain_key_is_read_at_the_path_it_is_declared_with() {
        for path in ConfigLayer::PLAIN_KEYS.iter().chain(DiagnosticsLayer::PLAIN_KEYS) {
            // A table is no plain key's value: each says so under its own path, none is unknown.
            let text = match path.split_once('.') {
                Some((section, field)) => format!("[{section}]\n{field} = {{}}\n"),
                None => format!("{path} = {{}}\n"),
            };
            let found = diagnostics(LayerKind::User, &text);
            assert!(found.contains(&format!(": {path}: expected ")), "{path}: {found}");
        }
    }

    #[test]
    fn a_syntax_error_is_reported_with_its_line() {
        expect![[
            r#"/home/u/.config/reins/config.toml:2: (syntax): string values must be quoted, expected literal string"#
        ]]
        .assert_eq(&diagnostics(LayerKind::User, "model = \"m\"\nbase_url = http://x\n"));
    }

    #[test]
    fn keys_are_refused_where_they_do_not_belong() {
        let text = "api_key = \"sk-1\"\n[providers.openai]\napi_key_env = \"X\"\napi_key_command = \"cat k\"\n";
        expect![[r#"
            /home/u/.config/reins/config.toml:1: api_key: API keys do not belong in config files; use an environment variable, auth.json (mode 0600) or providers.<name>.api_key_command
            /home/u/.config/reins/config.toml:3: providers.openai.api_key_env: a project's config cannot choose API keys; set it in your own config.toml
            /home/u/.config/reins/config.toml:4: providers.openai.api_key_command: a project's config cannot choose API keys; set it in your own config.toml"#]]
        .assert_eq(&diagnostics(LayerKind::Project, text));
        assert!(!diagnostics(LayerKind::Project, text).contains("sk-1"));
    }

    #[test]
    fn editor_settings_are_camel_case_json() {
        let (layer, diagnostics) = ConfigLayer::from_json(&serde_json::json!({"reins": {
            "baseUrl": "http://h/v1", "apiKey": "k", "approval": {"bash": "deny"},
            "limits": {"maxTurns": 3}, "providers": {"anthropic": {"baseUrl": "http://a", "apiKeyCommand": "x"}}
        }}));
        assert_eq!(
            (layer.base_url.as_deref(), layer.api_key.map(|k| k.expose().to_string())),
            (Some("http://h/v1"), Some("k".into()))
        );
        assert_eq!((layer.max_turns, layer.providers["anthropic"].base_url.as_deref()), (Some(3), Some("http://a")));
        assert_eq!(
            diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "editor settings: providers.anthropic.apiKeyCommand: editor settings cannot name key variables or run commands; set it in config.toml"
            ]
        );
    }

    #[test]
    fn diagnostics_are_read_and_only_config_files_run_commands() {
        let text = "[diagnostics]\nafter_edit = false\nsettle_ms = 300\nwarnings = true\n\
                    command = \"cargo check --message-format short\"\ncommand_timeout = 30\n";
        let (layer, problems) = ConfigLayer::from_toml(Path::new("c.toml"), text, LayerKind::User);
        assert!(problems.is_empty(), "{problems:?}");
        let found = &layer.diagnostics;
        assert_eq!((found.after_edit, found.settle_ms, found.warnings), (Some(false), Some(300), Some(true)));
        assert_eq!(
            (found.command.as_deref(), found.command_timeout),
            (Some("cargo check --message-format short"), Some(30))
        );
        expect![[r#"
            /home/u/.config/reins/config.toml:2: diagnostics.settle_ms: expected milliseconds from 0 to 60000
            /home/u/.config/reins/config.toml:3: diagnostics.command_timeout: expected a number of seconds from 1 up
            /home/u/.config/reins/config.toml:4: diagnostics.wait: unknown key; it was ignored"#]]
        .assert_eq(&diagnostics(LayerKind::User, "[diagnostics]\nsettle_ms = 60001\ncommand_timeout = 0\nwait = 1\n"));
        let (layer, problems) = ConfigLayer::from_json(&serde_json::json!({"diagnostics": {
            "afterEdit": true, "settleMs": 100, "command": "make"
        }}));
        assert_eq!((layer.diagnostics.settle_ms, layer.diagnostics.command), (Some(100), None));
        assert_eq!(
            problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["editor settings: diagnostics.command: editor settings cannot run commands; set it in config.toml"]
        );
    }

    #[test]
    fn an_empty_list_is_an_empty_table_in_editor_settings() {
        let read = |value| {
            let (_, diagnostics) = ConfigLayer::from_json(&value);
            diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>()
        };
        assert!(read(serde_json::json!([])).is_empty());
        assert!(read(serde_json::json!({"approval": [], "limits": [], "providers": {"lab": []}})).is_empty());
        assert_eq!(
            read(serde_json::json!({"approval": ["ask"]})),
            ["editor settings: approval: expected a table, found a list"]
        );
        assert_eq!(read(serde_json::json!(["x"])), ["editor settings: (root): expected a table, found a list"]);
    }
}
