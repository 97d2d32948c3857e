//! The effective settings: the user's `config.toml`, a trusted project's `.reins/config.toml`,
//! the environment, then the editor's settings — later sources win — plus API keys from the
//! environment, the auth file or a command. Every value remembers where it came from, and every
//! bad setting becomes a [`ConfigDiagnostic`] while the rest applies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reins_agent::Limits;
use reins_ai::{ApiKey, ClientOptions, Compat, Message, Model, Prices, ProviderError, ThinkingLevel};
use reins_tools::{
    DEFAULT_MAX_OUTPUT_FILE_BYTES, DEFAULT_MAX_TIMEOUT_SECS, EditFormat, ExecPolicy, Sandbox, SandboxMode,
};

use crate::auth::{self, AuthKeys};
use crate::compaction::CompactionSettings;
use crate::config::{ConfigDiagnostic, ConfigLayer, EditFormatChoice, LayerKind, Source, trim_url};
use crate::diagnostics::DiagnosticsSettings;
use crate::registry::{Api, FALLBACK_PROVIDER, ProviderInfo, Registry, blank_entry};
use crate::tool_set::ToolSet;
use crate::trust;
use reins_mcp::ServerConfig;
use reins_review::ApprovalPolicy;

mod mcp_servers;
use mcp_servers::{mcp_servers, mcp_variables};

/// Ollama's OpenAI-compatible endpoint: the endpoint when nothing is configured, so reins works
/// with a local model and no key.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1";
pub const DEFAULT_MODEL: &str = "qwen2.5-coder:7b";
/// MCP tools are deferred when they would take more than a tenth of the context window (Claude
/// Code's default for its tool search).
pub const DEFAULT_MCP_DEFERRED_ABOVE: f64 = 0.1;

#[derive(Debug, Clone)]
pub struct Settings {
    /// The OpenAI-compatible endpoint for models the registry does not know, with `/v1`.
    pub base_url: String,
    /// False when `base_url` is the built-in default rather than the user's choice.
    pub base_url_configured: bool,
    /// The key for `base_url`.
    pub api_key: ApiKey,
    /// The default model's address (`provider/id` or a bare id).
    pub model: String,
    /// `config.toml`, `auth.json`, `trusted-workspaces`, global `AGENTS.md`, `SYSTEM.md`.
    pub config_dir: PathBuf,
    /// Sessions and other state.
    pub data_dir: PathBuf,
    /// Built-in providers and models, with the user's additions and endpoints applied.
    pub registry: Registry,
    pub approval: ApprovalPolicy,
    pub compaction: CompactionSettings,
    pub max_turns: Option<u32>,
    /// `[limits] max_cost_usd`: what one session may spend on model calls, in US dollars; a run
    /// stops (reason `budget`) before a call that would take the session past it.
    pub max_cost_usd: Option<f64>,
    /// `[limits] max_subagents`: how many subagents (`task` calls) work at once; more wait.
    pub max_subagents: usize,
    /// `thinking`: how hard reasoning models think in sessions that have not chosen a level
    /// (`None`: each provider's default).
    pub thinking: Option<ThinkingLevel>,
    /// `[limits] stream_idle_timeout`: the longest a model's stream may go without content
    /// (keep-alives do not count), in seconds; also the longest wait for its first byte.
    pub stream_idle_timeout_secs: u64,
    /// `[tools] max_timeout`: the longest a `bash` call may run, in seconds.
    pub max_timeout_secs: u64,
    /// `[tools] pass_env`: globs of variables that reach tools although their names look secret
    /// (never reins's own key variables).
    pub pass_env: Vec<String>,
    /// `[tools] enabled`: the tools sessions offer unless they chose their own; `None`: all of
    /// them (the built-in ones and every MCP server's).
    pub tools_enabled: Option<ToolSet>,
    /// `[tools] mcp_deferred_above`: past this share of the model's context window, MCP tools
    /// (of servers without an `exposure`) are found through `tool_search` instead of declared.
    pub mcp_deferred_above: f64,
    /// `[tools] mcp_startup_wait` (or `REINS_MCP_STARTUP_WAIT`, in seconds): how long a model
    /// request waits for MCP servers still starting, once per start; they join when ready.
    pub mcp_startup_wait: Duration,
    /// What commands may touch, with `~` expanded.
    pub sandbox: Sandbox,
    /// `[tools] edit_format`: which edit tool models get.
    pub edit_format: EditFormatChoice,
    /// `[diagnostics]`: how the problems the agent's edits caused are told to it (not to be
    /// confused with `diagnostics`, the problems of the config itself).
    pub code_diagnostics: DiagnosticsSettings,
    /// Where each setting in force came from, by key (`model`, `approval.bash`,
    /// `providers.anthropic.base_url`, `providers.anthropic.api_key`).
    pub origins: BTreeMap<String, Source>,
    /// Where each provider's key comes from.
    pub keys: BTreeMap<String, KeySource>,
    /// The MCP servers in force, in the order configured, with where each came from.
    pub mcp_servers: Vec<ServerConfig>,
    /// The language servers reins may start (`[lsp_servers]` over those found on `PATH`).
    pub lsp_servers: Vec<reins_langserver::ServerConfig>,
    /// `[[hooks]]` of the config files, the user's first (a project's only when trusted).
    pub hooks: Vec<crate::config::HookConfig>,
    /// What was wrong in the config; those settings were ignored.
    pub diagnostics: Vec<ConfigDiagnostic>,
    /// A trusted workspace's configuration files that changed since the user trusted it, and
    /// so were ignored (see `trust.rs`).
    pub changed_config: Vec<PathBuf>,
    /// The sources below the editor's settings, kept to lay new editor settings over.
    base: Arc<Base>,
}

/// Where a provider's key comes from. `Debug` never shows a key.
#[derive(Debug, Clone)]
pub enum KeySource {
    Key(ApiKey, Source),
    /// Run when the provider is first used.
    Command(String),
    None,
}

/// Everything read once at load: the file layers, the environment, the auth file.
#[derive(Default)]
struct Base {
    config_dir: PathBuf,
    data_dir: PathBuf,
    home: PathBuf,
    /// Every variable reins reads a key from: never passed to a tool.
    key_vars: Vec<String>,
    layers: Vec<(Source, ConfigLayer)>,
    /// The environment variables reins reads, looked up once.
    env: BTreeMap<String, String>,
    auth: Option<(PathBuf, AuthKeys)>,
    diagnostics: Vec<ConfigDiagnostic>,
    /// Whether the system around is looked at: the sandbox probed (a forked process) and the
    /// ready-made language servers looked for on `PATH`. Only a command that runs tools needs it.
    probe_system: bool,
}

/// Shows the variables' names only: their values include keys.
impl std::fmt::Debug for Base {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Base")
            .field("layers", &self.layers.len())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

/// Variables read whatever the config says (`PATH`: where the ready-made language servers are).
const FIXED_VARS: &[&str] =
    &["OPENAI_BASE_URL", "OPENAI_API_KEY", "REINS_MODEL", "REINS_MCP_STARTUP_WAIT", "PATH", "RUSTUP_HOME"];

/// What a sandboxed command may not read, under the home directory; reins's auth file is added.
const SECRET_PATHS: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".kube",
    ".docker/config.json",
    ".config/gcloud",
    ".config/gh/hosts.yml",
    ".git-credentials",
    ".netrc",
    ".pypirc",
    ".password-store",
    ".local/share/keyrings",
];

/// The folder of the reins home that holds MCP servers' OAuth tokens.
const MCP_TOKEN_DIR: &str = "auth";

impl Settings {
    /// The user's config file, the environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`,
    /// `REINS_MODEL`, each provider's key and base URL variables, `REINS_HOME` else the XDG
    /// directories) and the auth file, read through `var` so tests need not touch the process
    /// environment. No project config: see [`Settings::load`].
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Self {
        Self::load(var, None)
    }

    /// Like [`Settings::from_env`], plus `<project>/.reins/config.toml` when the project is
    /// trusted (an untrusted project's config is ignored entirely).
    pub fn load(var: impl Fn(&str) -> Option<String>, project: Option<&Path>) -> Self {
        Self::load_probing(var, project, true)
    }

    /// [`Settings::load`] for a command that calls no model and runs no tool (`reins sessions`,
    /// a checkout): the system around is not looked at, so no process is forked to probe the
    /// sandbox and `PATH` is not searched for language servers (`lsp_servers` is empty).
    pub fn load_offline(var: impl Fn(&str) -> Option<String>, project: Option<&Path>) -> Self {
        Self::load_probing(var, project, false)
    }

    fn load_probing(var: impl Fn(&str) -> Option<String>, project: Option<&Path>, probe_system: bool) -> Self {
        let non_empty = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let home = crate::home::user_home(&var);
        let (config_dir, data_dir) = match non_empty("REINS_HOME") {
            Some(home) => (PathBuf::from(&home), PathBuf::from(home)),
            None => {
                let config = non_empty("XDG_CONFIG_HOME").map(PathBuf::from).unwrap_or_else(|| home.join(".config"));
                let data = non_empty("XDG_DATA_HOME").map(PathBuf::from).unwrap_or_else(|| home.join(".local/share"));
                (config.join("reins"), data.join("reins"))
            }
        };
        let mut base = Base { config_dir, data_dir, home, probe_system, ..Base::default() };
        let user_file = base.config_dir.join("config.toml");
        if let Some((layer, diagnostics)) = ConfigLayer::from_file(&user_file, LayerKind::User) {
            base.layers.push((Source::File(user_file), layer));
            base.diagnostics.extend(diagnostics);
        }
        let mut changed_config = Vec::new();
        if let Some(root) = project {
            // Trust and the files it covers are decided on the real path (`trusted/../evil` is evil).
            let root = &root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
            let project_file = root.join(".reins").join("config.toml");
            let mcp_json = root.join(".mcp.json");
            if trust::is_trusted(&base.config_dir, root) {
                for (file, state) in trust::check_files(&base.config_dir, root) {
                    if state == trust::FileTrust::Changed && file.exists() {
                        base.diagnostics.push(ConfigDiagnostic {
                            origin: file.display().to_string(),
                            line: None,
                            key: "(file)".into(),
                            message: format!(
                                "ignored: it changed since you trusted this workspace (a command may have written \
                                 it); review it, then run `reins config trust -C {}` to apply it",
                                root.display()
                            ),
                        });
                        changed_config.push(file);
                    }
                }
                if !changed_config.contains(&mcp_json)
                    && let Some((layer, diagnostics)) = read_mcp_json(&mcp_json, &non_empty)
                {
                    base.layers.push((Source::File(mcp_json), layer));
                    base.diagnostics.extend(diagnostics);
                }
                if !changed_config.contains(&project_file)
                    && let Some((layer, diagnostics)) = ConfigLayer::from_file(&project_file, LayerKind::Project)
                {
                    base.layers.push((Source::File(project_file), layer));
                    base.diagnostics.extend(diagnostics);
                }
            } else {
                for file in [mcp_json, project_file].into_iter().filter(|file| file.exists()) {
                    base.diagnostics.push(ConfigDiagnostic {
                        origin: file.display().to_string(),
                        line: None,
                        key: "(file)".into(),
                        message: format!(
                            "ignored: this workspace is not trusted (list it in {} to apply it)",
                            base.config_dir.join("trusted-workspaces").display()
                        ),
                    });
                }
            }
        }
        // Every variable any provider or layer names, looked up now: later recomputations (new
        // editor settings) read this snapshot, never the process environment.
        let registry = Registry::default();
        let mut names: Vec<String> = FIXED_VARS.iter().map(|name| name.to_string()).collect();
        base.key_vars.push("OPENAI_API_KEY".to_string());
        for provider in &registry.providers {
            names.extend(provider.base_url_env.iter().chain(&provider.api_key_env).cloned());
            base.key_vars.extend(provider.api_key_env.iter().cloned());
        }
        for (_, layer) in &base.layers {
            names.extend(mcp_variables(layer).cloned());
            // A server's bearer token is a key: no tool sees its variable.
            base.key_vars.extend(layer.mcp_servers.iter().filter_map(|(_, server)| match &server.transport {
                Some(crate::config::McpTransportLayer::Http { bearer_token_env_var, .. }) => {
                    bearer_token_env_var.clone()
                }
                _ => None,
            }));
            names.extend(layer.providers.values().filter_map(|provider| provider.api_key_env.clone()));
            base.key_vars.extend(layer.providers.values().filter_map(|provider| provider.api_key_env.clone()));
        }
        base.env = names.into_iter().filter_map(|name| non_empty(&name).map(|value| (name, value))).collect();
        match auth::read_auth_file(&base.config_dir) {
            Ok(auth) => base.auth = auth,
            Err(message) => base.diagnostics.push(ConfigDiagnostic {
                origin: base.config_dir.join("auth.json").display().to_string(),
                line: None,
                key: "(file)".into(),
                message,
            }),
        }
        let mut settings = compose(Arc::new(base), &[]);
        settings.changed_config = changed_config;
        settings
    }

    /// These settings with the editor's settings (`initializationOptions`, or the object
    /// `didChangeConfiguration` sends: camelCase JSON, optionally under `reins`) laid on top,
    /// replacing any editor settings applied before. Bad values land in `diagnostics`.
    pub fn with_editor_settings(&self, value: &serde_json::Value) -> Settings {
        self.with_editor_layers(&[value])
    }

    /// Like [`Settings::with_editor_settings`] for several editor settings objects, earliest
    /// first (`initializationOptions`, then the latest `didChangeConfiguration`). Each is read on
    /// its own, so a bad value in a later one is reported and ignored and the earlier one's value
    /// stays in force: a wrong-typed `apiKey` never erases a good key.
    pub fn with_editor_layers(&self, values: &[&serde_json::Value]) -> Settings {
        let mut layers = Vec::new();
        let mut diagnostics = Vec::new();
        for value in values {
            let (layer, found) = ConfigLayer::from_json(value);
            layers.push(layer);
            for diagnostic in found {
                if !diagnostics.contains(&diagnostic) {
                    diagnostics.push(diagnostic);
                }
            }
        }
        let mut settings = compose(self.base.clone(), &layers);
        settings.diagnostics.extend(diagnostics);
        settings
    }

    /// A workspace is trusted when it, or a directory above it, is listed (one absolute path a
    /// line) in `<config_dir>/trusted-workspaces`. Trust lets the project's `.reins/` config and
    /// prompt overrides apply.
    pub fn is_trusted(&self, workspace_root: &Path) -> bool {
        trust::is_trusted(&self.config_dir, workspace_root)
    }

    /// Where `reins mcp login` keeps the OAuth tokens of MCP servers, one file each (commands
    /// cannot read it: see the sandbox's `deny_read`).
    pub fn mcp_token_dir(&self) -> PathBuf {
        self.config_dir.join(MCP_TOKEN_DIR)
    }

    /// The user's home directory (`~/.agents/skills` and pi's folders are under it).
    pub fn home(&self) -> &Path {
        &self.base.home
    }

    /// The model `id` names (`provider/id` or bare), else the configured default.
    pub fn resolve_model(&self, id: Option<&str>) -> Model {
        self.registry.resolve(id.unwrap_or(&self.model), &self.base_url)
    }

    /// The edit tool `model` gets: `[tools] edit_format` when set, else what the model's registry
    /// entry says (for a model the registry does not list, what its family is trained on).
    pub fn edit_format_for(&self, model: &Model) -> EditFormat {
        match self.edit_format {
            EditFormatChoice::Fixed(format) => format,
            EditFormatChoice::Auto => match self.registry.model(&model.provider, &model.id) {
                Some(entry) => entry.edit_format,
                None => EditFormat::trained_on(&model.id),
            },
        }
    }

    /// The model a session file recorded: `provider` is trusted only when reins knows it.
    pub fn resolve_recorded(&self, provider: &str, id: &str) -> Model {
        if provider == FALLBACK_PROVIDER || self.registry.provider(provider).is_some() {
            self.resolve_model(Some(&format!("{provider}/{id}")))
        } else {
            self.resolve_model(Some(id))
        }
    }

    /// Where the key for `provider` comes from (the fallback endpoint's key may have been set
    /// directly in `api_key`).
    pub fn key_source(&self, provider: &str) -> KeySource {
        if provider == FALLBACK_PROVIDER && !self.api_key.is_empty() {
            let source = self.keys.get(FALLBACK_PROVIDER).and_then(|key| match key {
                KeySource::Key(_, source) => Some(source.clone()),
                _ => None,
            });
            return KeySource::Key(self.api_key.clone(), source.unwrap_or(Source::Editor));
        }
        self.keys.get(provider).cloned().unwrap_or(KeySource::None)
    }

    /// The key for `provider`, running its `api_key_command` if that is where it comes from.
    /// An empty key means none is configured (fine for local servers).
    pub fn api_key_for(&self, provider: &str) -> Result<ApiKey, String> {
        match self.key_source(provider) {
            KeySource::Key(key, _) => Ok(key),
            KeySource::Command(command) => auth::run_key_command(&command, auth::KEY_COMMAND_TIMEOUT)
                .map_err(|reason| format!("no API key for {provider}: {reason}")),
            KeySource::None => Ok(ApiKey::default()),
        }
    }

    /// How tools start processes under these settings: `vars` (this process's environment) without
    /// secrets, the sandbox, the limits. MCP servers take the same environment, but for the
    /// user's ssh-agent (`SSH_AUTH_SOCK`), which commands get only with the network on: it
    /// signs in to servers, which is the network's business.
    pub fn exec_policy(&self, vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>) -> ExecPolicy {
        let mut env = self.tool_env(vars);
        if !self.sandbox.network && self.sandbox.mode != SandboxMode::Off {
            env.retain(|(name, _)| name != "SSH_AUTH_SOCK");
        }
        ExecPolicy {
            env: Some(env),
            sandbox: self.sandbox.clone(),
            max_timeout_secs: self.max_timeout_secs,
            max_output_file_bytes: DEFAULT_MAX_OUTPUT_FILE_BYTES,
        }
    }

    /// `vars` without reins's key variables, without any variable holding a key reins knows,
    /// and without other secret-looking names unless `[tools] pass_env` lets them through
    /// (see [`reins_tools::tool_env`]).
    pub fn tool_env(
        &self,
        vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    ) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        reins_tools::tool_env(vars, &self.base.key_vars, &self.known_keys(), &self.pass_env)
    }

    /// Every key these settings hold (the providers', `api_key`, the auth file's): what must
    /// never be shown or handed on. Keys a key command prints are not known until it runs.
    pub fn known_keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self
            .keys
            .values()
            .filter_map(|source| match source {
                KeySource::Key(key, _) => Some(key.expose()),
                _ => None,
            })
            .collect();
        keys.push(self.api_key.expose());
        if let Some((_, auth)) = &self.base.auth {
            keys.extend(auth.values().map(ApiKey::expose));
        }
        keys
    }

    /// A failed model call as the user reads it: what went wrong and what to do about it, naming
    /// the endpoint of the model that failed (and saying how to configure one when that is the
    /// built-in default nobody chose).
    pub fn provider_failure(&self, error: &ProviderError, provider: &str, model: &str) -> String {
        let model = self.resolve_recorded(provider, model);
        let configured = self.base_url_configured || model.base_url != self.base_url;
        crate::failure::provider_failure(error, &model.base_url, configured)
    }

    /// Why a run that ended in error failed: its last provider failure, else the run's `error`.
    pub fn run_failure(&self, messages: &[Message], error: Option<&str>) -> String {
        let failed = messages.iter().rev().find_map(|message| match message {
            Message::Assistant(assistant) => Some((assistant.error.as_ref()?, assistant)),
            _ => None,
        });
        match failed {
            Some((failure, assistant)) => self.provider_failure(failure, &assistant.provider, &assistant.model),
            None => error.unwrap_or("the run failed").to_string(),
        }
    }

    /// How model calls are made under these settings: the stream idle timeout, and no retries
    /// when the default local endpoint refuses the connection; the rest are the client's defaults.
    pub fn client_options(&self) -> ClientOptions {
        ClientOptions {
            idle_timeout: Duration::from_secs(self.stream_idle_timeout_secs),
            final_refusal_urls: vec![DEFAULT_BASE_URL.to_string()],
            ..ClientOptions::default()
        }
    }

    /// The loop's limits these settings set (the turn limit); the rest are the agent's defaults.
    pub fn limits(&self) -> Limits {
        let defaults = Limits::default();
        Limits { max_turns: self.max_turns.unwrap_or(defaults.max_turns), ..defaults }
    }

    /// Why thinking level `level` changes nothing for `model`: it does not reason, or it speaks
    /// Chat Completions and its entry lists no `reasoning_effort` it takes. `None` when it does
    /// (and for `off`, which asks for nothing).
    pub fn thinking_note(&self, model: &Model, level: ThinkingLevel) -> Option<String> {
        let name = format!("{}/{}", model.provider, model.id);
        let api = self.registry.provider(&model.provider).map_or(Api::OpenAi, |provider| provider.api);
        match level {
            ThinkingLevel::Off => None,
            _ if !model.reasoning => Some(format!(
                "{name} does not reason, so thinking level {level} changes nothing (mark a model that does with \
                 reasoning = true in its [[models]] entry)"
            )),
            _ if api == Api::OpenAi && model.compat.reasoning_effort.is_empty() => Some(format!(
                "{name} takes no reasoning_effort, so thinking level {level} changes nothing (list the levels its \
                 server takes with reasoning_effort in its [[models]] entry)"
            )),
            _ => None,
        }
    }

    /// Where a setting came from (`default` when nothing set it).
    pub fn origin(&self, key: &str) -> Source {
        self.origins.get(key).cloned().unwrap_or(Source::Default)
    }
}

/// Lays the sources over the defaults in order: files, environment, editor settings.
fn compose(base: Arc<Base>, editor: &[ConfigLayer]) -> Settings {
    let mut settings = Settings {
        base_url: DEFAULT_BASE_URL.to_string(),
        base_url_configured: false,
        api_key: ApiKey::default(),
        model: DEFAULT_MODEL.to_string(),
        config_dir: base.config_dir.clone(),
        data_dir: base.data_dir.clone(),
        registry: Registry::default(),
        approval: ApprovalPolicy::default(),
        compaction: CompactionSettings::default(),
        max_turns: None,
        max_cost_usd: None,
        max_subagents: 4,
        thinking: None,
        stream_idle_timeout_secs: ClientOptions::default().idle_timeout.as_secs(),
        max_timeout_secs: DEFAULT_MAX_TIMEOUT_SECS,
        pass_env: Vec::new(),
        tools_enabled: None,
        mcp_deferred_above: DEFAULT_MCP_DEFERRED_ABOVE,
        mcp_startup_wait: reins_mcp::STARTING_WAIT,
        edit_format: EditFormatChoice::Auto,
        code_diagnostics: DiagnosticsSettings::default(),
        sandbox: Sandbox {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            writable: Vec::new(),
            deny_read: SECRET_PATHS
                .iter()
                .map(|path| base.home.join(path))
                .chain([base.config_dir.join("auth.json"), base.config_dir.join(MCP_TOKEN_DIR)])
                .collect(),
            // What reins reads as the user's own word: which workspaces are trusted, the config.
            read_only: vec![base.config_dir.clone()],
        },
        origins: BTreeMap::new(),
        keys: BTreeMap::new(),
        mcp_servers: Vec::new(),
        lsp_servers: Vec::new(),
        hooks: base.layers.iter().flat_map(|(_, layer)| layer.hooks.clone()).collect(),
        diagnostics: base.diagnostics.clone(),
        changed_config: Vec::new(),
        base: base.clone(),
    };
    let mut key_env: BTreeMap<String, (String, Source)> = BTreeMap::new();
    let mut key_command: BTreeMap<String, (String, Source)> = BTreeMap::new();
    let mut literal_keys: BTreeMap<String, ApiKey> = BTreeMap::new();
    for (source, layer) in &base.layers {
        apply_layer(&mut settings, layer, source, &mut key_env, &mut key_command);
    }
    apply_env(&mut settings, &base.env);
    let layers = base.layers.iter().map(|(source, layer)| (source, layer));
    let editor_layers = editor.iter().map(|layer| (&Source::Editor, layer));
    settings.mcp_servers = mcp_servers(layers.chain(editor_layers), &base.env, &base.home, &mut settings.diagnostics);
    let path_var = base.env.get("PATH").map(std::ffi::OsStr::new);
    let rustup_home = base.env.get("RUSTUP_HOME").map_or_else(|| base.home.join(".rustup"), PathBuf::from);
    let on_path = |command: &str| base.probe_system && reins_langserver::on_path(path_var, &rustup_home, command);
    let ready_made = reins_langserver::ready_made(on_path);
    let all_layers = base.layers.iter().map(|(_, layer)| layer).chain(editor.iter());
    settings.lsp_servers = crate::config::lsp_servers(ready_made, all_layers);
    for layer in editor {
        apply_layer(&mut settings, layer, &Source::Editor, &mut key_env, &mut key_command);
        literal_keys.extend(layer.providers.iter().filter_map(|(name, p)| Some((name.clone(), p.api_key.clone()?))));
        if let Some(key) = &layer.api_key {
            literal_keys.insert(FALLBACK_PROVIDER.to_string(), key.clone());
        }
    }

    if base.probe_system
        && settings.sandbox.mode != SandboxMode::Off
        && let Err(reason) = reins_tools::sandbox_support()
    {
        settings.diagnostics.push(ConfigDiagnostic {
            origin: "this system".into(),
            line: None,
            key: "sandbox.mode".into(),
            message: format!(
                "{reason}, so bash runs without a sandbox; set sandbox.mode = \"off\" in config.toml to say that is intended"
            ),
        });
    }

    let names: Vec<String> = settings
        .registry
        .providers
        .iter()
        .map(|provider| provider.name.clone())
        .chain([FALLBACK_PROVIDER.to_string()])
        .collect();
    for name in names {
        let builtin_env = match name.as_str() {
            FALLBACK_PROVIDER => Some("OPENAI_API_KEY".to_string()),
            _ => settings.registry.provider(&name).and_then(|provider| provider.api_key_env.clone()),
        };
        let env_name = key_env.get(&name).map(|(var, _)| var.clone()).or(builtin_env);
        let auth = base.auth.as_ref();
        let source = if let Some(key) = literal_keys.get(&name) {
            KeySource::Key(key.clone(), Source::Editor)
        } else if let Some((var, value)) = env_name.as_ref().and_then(|var| Some((var, base.env.get(var)?))) {
            KeySource::Key(ApiKey::new(value.clone()), Source::Env(var.clone()))
        } else if let Some((path, key)) = auth.and_then(|(path, keys)| Some((path, keys.get(&name)?))) {
            KeySource::Key(key.clone(), Source::AuthFile(path.clone()))
        } else if let Some((command, _)) = key_command.get(&name) {
            KeySource::Command(command.clone())
        } else {
            KeySource::None
        };
        settings.keys.insert(name, source);
    }
    // The fallback endpoint speaks OpenAI's protocol under OpenAI's variables: without a key of
    // its own it uses the `openai` provider's.
    if matches!(settings.keys.get(FALLBACK_PROVIDER), Some(KeySource::None) | None) {
        let openai = settings.keys.get("openai").cloned().unwrap_or(KeySource::None);
        settings.keys.insert(FALLBACK_PROVIDER.to_string(), openai);
    }
    if let Some(KeySource::Key(key, _)) = settings.keys.get(FALLBACK_PROVIDER) {
        settings.api_key = key.clone();
    }
    settings
}

fn apply_layer(
    settings: &mut Settings,
    layer: &ConfigLayer,
    source: &Source,
    key_env: &mut BTreeMap<String, (String, Source)>,
    key_command: &mut BTreeMap<String, (String, Source)>,
) {
    let set = |settings: &mut Settings, key: String| {
        settings.origins.insert(key, source.clone());
    };
    // The plain keys, then the [diagnostics] ones (each declared once, in `config.rs`).
    let mut set_plain = |settings: &mut Settings, key: &str| set(settings, key.to_string());
    layer.apply(settings, &mut set_plain);
    layer.diagnostics.apply(settings, &mut set_plain);
    for (tool, policy) in &layer.approval {
        settings.approval.set(tool, *policy);
        set(settings, format!("approval.{tool}"));
    }
    let home = settings.base.home.clone();
    let expand = |path: &String| match path.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(path),
    };
    let sandbox = &layer.sandbox;
    if let Some(mode) = sandbox.mode {
        settings.sandbox.mode = mode;
        set(settings, "sandbox.mode".into());
    }
    if let Some(network) = sandbox.network {
        settings.sandbox.network = network;
        set(settings, "sandbox.network".into());
    }
    if let Some(writable) = &sandbox.writable {
        settings.sandbox.writable = writable.iter().map(expand).collect();
        set(settings, "sandbox.writable".into());
    }
    if !sandbox.deny_read.is_empty() {
        settings.sandbox.deny_read.extend(sandbox.deny_read.iter().map(expand));
        set(settings, "sandbox.deny_read".into());
    }
    for (name, provider) in &layer.providers {
        if name == FALLBACK_PROVIDER {
            if let Some(url) = &provider.base_url {
                settings.base_url = url.clone();
                settings.base_url_configured = true;
                set(settings, "base_url".into());
            }
        } else {
            let mut info = settings.registry.provider(name).cloned().unwrap_or_else(|| new_provider(name, ""));
            if let Some(api) = provider.api {
                info.api = api;
            }
            if let Some(url) = &provider.base_url {
                info.base_url = url.clone();
                set(settings, format!("providers.{name}.base_url"));
            }
            settings.registry.upsert_provider(info);
        }
        if let Some(var) = &provider.api_key_env {
            key_env.insert(name.clone(), (var.clone(), source.clone()));
        }
        if let Some(command) = &provider.api_key_command {
            key_command.insert(name.clone(), (command.clone(), source.clone()));
        }
    }
    for model in &layer.models {
        let provider = model.provider.clone().unwrap_or_else(|| FALLBACK_PROVIDER.to_string());
        if provider != FALLBACK_PROVIDER && settings.registry.provider(&provider).is_none() {
            let url = model.base_url.clone().unwrap_or_else(|| settings.base_url.clone());
            let mut info = new_provider(&provider, &url);
            info.api = model.api.unwrap_or(Api::OpenAi);
            settings.registry.upsert_provider(info);
            set(settings, format!("providers.{provider}.base_url"));
        }
        let mut entry =
            settings.registry.model(&provider, &model.id).cloned().unwrap_or_else(|| blank_entry(&provider, &model.id));
        entry.base_url = model.base_url.clone().or(entry.base_url);
        entry.context_window = model.context_window.unwrap_or(entry.context_window);
        entry.edit_format = model.edit_format.unwrap_or(entry.edit_format);
        entry.max_output = model.max_output.unwrap_or(entry.max_output);
        let [input, output, cache_read, cache_write] = model.prices;
        let old = entry.prices.clone();
        entry.prices = Prices {
            input: input.unwrap_or(old.input),
            output: output.unwrap_or(old.output),
            cache_read: cache_read.unwrap_or(old.cache_read),
            cache_write: cache_write.unwrap_or(old.cache_write),
        };
        entry.reasoning = model.reasoning.unwrap_or(entry.reasoning);
        entry.compat = Compat {
            developer_role: model.developer_role.unwrap_or(entry.compat.developer_role),
            max_completion_tokens: model.max_completion_tokens.unwrap_or(entry.compat.max_completion_tokens),
            reasoning_effort: model.reasoning_effort.unwrap_or(entry.compat.reasoning_effort),
        };
        set(settings, format!("models.{provider}/{}", model.id));
        settings.registry.upsert_model(entry);
    }
}

/// `REINS_MODEL`, `REINS_MCP_STARTUP_WAIT`, `OPENAI_BASE_URL` and every provider's base URL
/// variable.
fn apply_env(settings: &mut Settings, env: &BTreeMap<String, String>) {
    if let Some(model) = env.get("REINS_MODEL") {
        settings.model = model.trim().to_string();
        settings.origins.insert("model".into(), Source::Env("REINS_MODEL".into()));
    }
    let wait = env.get("REINS_MCP_STARTUP_WAIT").and_then(|seconds| seconds.trim().parse::<f64>().ok());
    if let Some(seconds) = wait.filter(|seconds| seconds.is_finite() && *seconds >= 0.0) {
        settings.mcp_startup_wait = Duration::from_secs_f64(seconds.min(3_600.0));
        settings.origins.insert("tools.mcp_startup_wait".into(), Source::Env("REINS_MCP_STARTUP_WAIT".into()));
    }
    if let Some(url) = env.get("OPENAI_BASE_URL") {
        settings.base_url = trim_url(url);
        settings.base_url_configured = true;
        settings.origins.insert("base_url".into(), Source::Env("OPENAI_BASE_URL".into()));
    }
    let mut changed = Vec::new();
    for provider in &mut settings.registry.providers {
        let Some(var) = &provider.base_url_env else { continue };
        if let Some(url) = env.get(var) {
            provider.base_url = trim_url(url);
            changed.push((format!("providers.{}.base_url", provider.name), Source::Env(var.clone())));
        }
    }
    settings.origins.extend(changed);
}

fn new_provider(name: &str, base_url: &str) -> ProviderInfo {
    ProviderInfo {
        name: name.to_string(),
        api: Api::OpenAi,
        base_url: base_url.to_string(),
        base_url_env: None,
        api_key_env: None,
        local: false,
    }
}

/// A project's `.mcp.json`, when there is one.
fn read_mcp_json(path: &Path, var: &impl Fn(&str) -> Option<String>) -> Option<(ConfigLayer, Vec<ConfigDiagnostic>)> {
    crate::config::read_source(path, |text| ConfigLayer::from_mcp_json(path, text, var))
}

#[cfg(test)]
mod tests;
