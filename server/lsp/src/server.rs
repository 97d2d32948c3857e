//! The language server: LSP handlers that hand work to the owners of state and return.
//!
//! Document changes are applied synchronously at the top of their handlers, before any `.await`,
//! so they take effect in arrival order whatever the dispatcher interleaves. Nothing here awaits
//! the editor: agent runs, progress and `workspace/applyEdit` live in spawned tasks. Every
//! handler runs guarded, so a panic becomes an error answer and the server keeps serving.

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use reins_ai::Content;
use reins_harness::{Executed, Harness, HarnessOptions, LateContent, LiveSettings, RunStarted, Settings};
use reins_tools::{FsWorkspace, Workspace};
use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{
    CodeActionParams, CodeActionProviderCapability, CodeActionResponse, DidChangeConfigurationParams,
    DidChangeTextDocumentParams, DidChangeWorkspaceFoldersParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DidSaveTextDocumentParams, ExecuteCommandOptions, ExecuteCommandParams,
    InitializeParams, InitializeResult, InitializedParams, MessageType, OneOf, PositionEncodingKind, SaveOptions,
    ServerCapabilities, ServerInfo, TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    TextDocumentSyncSaveOptions, WorkspaceFoldersServerCapabilities, WorkspaceServerCapabilities,
};
use tower_lsp_server::{Client, LanguageServer};

use crate::code_actions;
use crate::commands::{self, Command};
use crate::config::{self, EditorSettings};
use crate::diagnostics::EditorDiagnostics;
use crate::documents::{Documents, PositionEncoding};
use crate::editor_language::EditorLanguage;
use crate::events::Events;
use crate::review::{ReviewApprover, Reviews};
use crate::workspace::EditorWorkspace;
use crate::worktree::WorktreeAgents;
use crate::{dispatch, from_proto, lock, to_proto};

pub struct Server {
    state: Arc<State>,
}

/// Everything the handlers share.
pub struct State {
    pub client: Client,
    pub documents: Arc<Mutex<Documents>>,
    pub workspace: Arc<EditorWorkspace>,
    /// The editor's diagnostics, when it answers `reins/diagnostics`.
    pub diagnostics: Arc<EditorDiagnostics>,
    /// The editor's own language servers, when it answers `reins/languageServer`.
    pub language: Arc<EditorLanguage>,
    /// The editor's layer of the settings; the settings in force are the harness's.
    pub editor_settings: EditorSettings,
    /// What `initialize` found wrong in the settings and the skill files, shown once the client
    /// is initialized.
    pub startup_warnings: Mutex<Vec<String>>,
    pub events: Events,
    /// The pending edits, waiting for the user.
    pub reviews: Arc<Reviews>,
    pub work_done_progress: Arc<AtomicBool>,
    pub harness: Arc<Harness>,
    /// The worktree agents started here, each in a harness of its own.
    pub worktrees: Arc<WorktreeAgents>,
    initialized: AtomicBool,
}

/// The params of `reins/debug/documentText`.
#[derive(Debug, Deserialize)]
pub struct DocumentTextParams {
    pub uri: String,
}

/// Warnings of the harness that belong to no run (an MCP server could not start, or stopped):
/// `window/showMessage`, and the log.
fn show_warning(client: Client) -> reins_harness::Warn {
    Arc::new(move |message: &str| {
        tracing::warn!("{message}");
        let (client, message) = (client.clone(), format!("reins: {message}"));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { client.show_message(MessageType::WARNING, message).await });
        }
    })
}

impl Server {
    /// A server whose workspace is `fallback` until the client names its folders.
    pub fn new(client: Client, fallback: FsWorkspace) -> Self {
        let documents = Arc::new(Mutex::new(Documents::default()));
        // Until `initialize` names the workspace and brings the client's settings.
        let settings = LiveSettings::new(Settings::from_env(env_var));
        let work_done_progress = Arc::new(AtomicBool::new(false));
        let events = Events::start(client.clone(), settings.clone(), work_done_progress.clone());
        let reviews = Arc::new(Reviews::new(documents.clone(), events.clone()));
        let workspace = Arc::new(EditorWorkspace::new(documents.clone(), client.clone(), fallback, reviews.clone()));
        let diagnostics = Arc::new(EditorDiagnostics::new(client.clone(), documents.clone()));
        let harness = Harness::new(HarnessOptions {
            settings,
            workspace: workspace.clone(),
            provider: None,
            approver: Arc::new(ReviewApprover { reviews: reviews.clone(), workspace: workspace.clone() }),
            diagnostics: Some(diagnostics.clone()),
            events: events.sink(),
            date: reins_harness::today(),
            persist: true,
            warn: show_warning(client.clone()),
        });
        let language = Arc::new(EditorLanguage::new(client.clone(), documents.clone()));
        harness.use_editor_servers(language.clone());
        let worktrees =
            Arc::new(WorktreeAgents::new(reviews.clone(), workspace.clone(), documents.clone(), events.clone()));
        let state = State {
            client,
            documents,
            workspace,
            diagnostics,
            language,
            editor_settings: EditorSettings::default(),
            startup_warnings: Mutex::default(),
            events,
            reviews,
            work_done_progress,
            harness,
            worktrees,
            initialized: AtomicBool::new(false),
        };
        Self { state: Arc::new(state) }
    }

    /// `reins/debug/documentText {uri}` → `{version, text}`: the server's copy of an open
    /// buffer, for tests that check document sync. Documented in protocol-docs as a debug method.
    pub async fn document_text(&self, params: DocumentTextParams) -> Result<Value> {
        let uri = from_proto::uri(&params.uri)?;
        let documents = lock(&self.state.documents);
        match documents.get(uri.as_str()) {
            Some(document) => Ok(json!({ "version": document.version, "text": document.text() })),
            None => Err(to_proto::invalid_argument(format!("{} is not open", params.uri))),
        }
    }

    /// Runs a synchronous piece of a notification handler, logging a panic instead of
    /// unwinding into the dispatcher.
    fn sync_guarded(&self, what: &str, work: impl FnOnce(&State)) {
        if std::panic::catch_unwind(AssertUnwindSafe(|| work(&self.state))).is_err() {
            tracing::error!("the {what} handler panicked; the server keeps running");
        }
    }
}

impl LanguageServer for Server {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let state = self.state.clone();
        dispatch::guarded("initialize", async move { state.initialize(params) }).await
    }

    async fn initialized(&self, _: InitializedParams) {
        // The MCP servers start now, so that the first run finds them ready.
        self.state.harness.start_mcp_servers();
        let warnings = std::mem::take(&mut *lock(&self.state.startup_warnings));
        for warning in warnings {
            self.state.client.show_message(MessageType::WARNING, warning).await;
        }
    }

    async fn shutdown(&self) -> Result<()> {
        // The MCP servers' processes go with the session, not with the editor's next restart.
        self.state.harness.shutdown().await;
        for harness in self.state.worktrees.harnesses() {
            harness.shutdown().await;
        }
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        self.sync_guarded("didOpen", |state| {
            let document = params.text_document;
            let path = from_proto::file_path(&document.uri);
            let uri = document.uri.as_str().to_string();
            // The file as the buffer loads it: what a change on disk later is measured against.
            let disk = path.as_ref().and_then(|path| std::fs::read_to_string(path).ok());
            let mut documents = lock(&state.documents);
            documents.open(uri.clone(), path, document.language_id, document.version, &document.text);
            documents.loaded(&uri, disk.as_deref());
        });
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        self.sync_guarded("didChange", |state| {
            let document = params.text_document;
            lock(&state.documents).change(document.uri.as_str(), document.version, &params.content_changes);
            state.reviews.document_changed(document.uri.as_str());
        });
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        self.sync_guarded("didSave", |state| {
            let uri = &params.text_document.uri;
            let read = || from_proto::file_path(uri).and_then(|path| std::fs::read_to_string(path).ok());
            let written = params.text.or_else(read);
            lock(&state.documents).loaded(uri.as_str(), written.as_deref());
        });
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.sync_guarded("didClose", |state| lock(&state.documents).close(params.text_document.uri.as_str()));
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        self.sync_guarded("didChangeConfiguration", |state| {
            let [initialization, change] = state.editor_settings.changed(&params.settings);
            let next = state.harness.settings().with_editor_layers(&[&initialization, &change]);
            let (settings, previous) = state.harness.set_settings(next);
            if let Some(warning) = config::warning(&settings, Some(&previous)) {
                tracing::warn!("{warning}");
                let client = state.client.clone();
                tokio::spawn(async move { client.show_message(MessageType::WARNING, warning).await });
            }
        });
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        self.sync_guarded("didChangeWorkspaceFolders", |state| {
            let removed: Vec<PathBuf> =
                params.event.removed.iter().filter_map(|folder| from_proto::file_path(&folder.uri)).collect();
            let mut roots: Vec<PathBuf> =
                state.workspace.roots().into_iter().filter(|root| !removed.contains(root)).collect();
            roots.extend(params.event.added.iter().filter_map(|folder| from_proto::file_path(&folder.uri)));
            state.workspace.set_roots(roots);
        });
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let reviews = self.state.reviews.clone();
        dispatch::guarded("textDocument/codeAction", async move {
            let pending = reviews.on_uri(params.text_document.uri.as_str());
            let mut actions = code_actions::for_pending(&pending, params.range);
            actions.extend(code_actions::for_range(&params));
            Ok(Some(actions))
        })
        .await
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let state = self.state.clone();
        let what = params.command.clone();
        dispatch::guarded(&what, async move {
            let command = Command::parse(&params.command, params.arguments)?;
            dispatch::execute(&state, command).await.map(Some)
        })
        .await
    }
}

impl State {
    fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        if self.initialized.swap(true, Ordering::Relaxed) {
            return Err(to_proto::error("invalid_state", "initialize was already called"));
        }
        let offered = params.capabilities.general.as_ref().and_then(|general| general.position_encodings.as_ref());
        let utf8 = offered.is_some_and(|encodings| encodings.contains(&PositionEncodingKind::UTF8));
        lock(&self.documents).encoding = if utf8 { PositionEncoding::Utf8 } else { PositionEncoding::Utf16 };
        let progress = params.capabilities.window.as_ref().and_then(|window| window.work_done_progress);
        self.work_done_progress.store(progress == Some(true), Ordering::Relaxed);
        let workspace_edit =
            params.capabilities.workspace.as_ref().and_then(|workspace| workspace.workspace_edit.as_ref());
        let document_changes = workspace_edit.and_then(|edit| edit.document_changes) == Some(true);
        let operations = workspace_edit.and_then(|edit| edit.resource_operations.clone()).unwrap_or_default();
        self.workspace.set_edit_support(document_changes, &operations);

        #[allow(deprecated)] // rootUri is the fallback for clients without workspace folders.
        let roots: Vec<PathBuf> = match (&params.workspace_folders, &params.root_uri) {
            (Some(folders), _) if !folders.is_empty() => {
                folders.iter().filter_map(|folder| from_proto::file_path(&folder.uri)).collect()
            }
            (_, Some(root)) => from_proto::file_path(root).into_iter().collect(),
            _ => Vec::new(),
        };

        let options = params.initialization_options.as_ref().unwrap_or(&Value::Null);
        self.diagnostics.initialize(options);
        self.language.initialize(options);
        self.events.initialize(options);
        let loaded = config::load(env_var, roots.first().map(PathBuf::as_path));
        self.workspace.set_roots(roots);
        let editor = self.editor_settings.initialize(options);
        let (settings, _) = self.harness.set_settings(loaded.with_editor_settings(&editor));
        // Skill files are read where the workspace is, with its trust: after the settings.
        let skills = self.harness.resources().skills.warning().map(|text| format!("reins: {text}"));
        *lock(&self.startup_warnings) = config::warning(&settings, None).into_iter().chain(skills).collect();

        let encoding = if utf8 { PositionEncodingKind::UTF8 } else { PositionEncodingKind::UTF16 };
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(encoding),
                text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    // What the buffer last wrote is the base for merging a change on disk; with
                    // its text, as the disk may have changed again by the time this is read.
                    save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions { include_text: Some(true) })),
                    ..TextDocumentSyncOptions::default()
                })),
                code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: commands::COMMANDS.iter().map(|command| command.to_string()).collect(),
                    ..ExecuteCommandOptions::default()
                }),
                workspace: Some(WorkspaceServerCapabilities {
                    workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                        supported: Some(true),
                        change_notifications: Some(OneOf::Left(true)),
                    }),
                    file_operations: None,
                }),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo {
                name: "reins".to_string(),
                version: Some(env!("CARGO_PKG_VERSION").to_string()),
            }),
            offset_encoding: None,
        })
    }

    /// Starts a run with `content` in `session_id` (a new session when absent) and watches its
    /// task, so a run that dies without an outcome is still reported.
    pub fn start_run(&self, session_id: Option<String>, content: Vec<Content>) -> Result<Value> {
        let session_id = self.session_or_new(session_id)?;
        let started = self.harness_for(&session_id).send(&session_id, content).map_err(to_proto::harness_error)?;
        Ok(self.watch(started))
    }

    /// A slash command typed in the chat: a built-in answers `{sessionId, output}` (the session
    /// in use afterwards), anything else starts a run like [`State::start_run`].
    pub async fn execute(&self, session_id: Option<String>, text: &str) -> Result<Value> {
        let session_id = self.session_or_new(session_id)?;
        match self.harness_for(&session_id).execute(&session_id, text).await.map_err(to_proto::harness_error)? {
            Executed::Started(started) => Ok(self.watch(started)),
            Executed::Done { session_id, output } => Ok(json!({"sessionId": session_id, "output": output})),
        }
    }

    /// [`State::start_run`] for a message still being gathered (see [`Harness::send_later`]).
    pub fn start_run_later(&self, session_id: Option<String>, content: LateContent) -> Result<Value> {
        let session_id = self.session_or_new(session_id)?;
        let started =
            self.harness_for(&session_id).send_later(&session_id, content).map_err(to_proto::harness_error)?;
        Ok(self.watch(started))
    }

    /// The harness session `session_id` lives in: a worktree agent's own, else the server's.
    pub fn harness_for(&self, session_id: &str) -> Arc<Harness> {
        self.worktrees.harness_of(session_id).unwrap_or_else(|| self.harness.clone())
    }

    fn session_or_new(&self, session_id: Option<String>) -> Result<String> {
        match session_id {
            Some(id) => Ok(id),
            None => self.new_session(None),
        }
    }

    /// Reports the end of a started run however it ends, and proposes a worktree agent's change
    /// then; answers `{sessionId, runId}`.
    fn watch(&self, started: RunStarted) -> Value {
        let events = self.events.clone();
        let (worktrees, main) = (self.worktrees.clone(), self.harness.clone());
        let (session_id, run_id) = (started.session_id.clone(), started.run_id.clone());
        let done = started.done;
        tokio::spawn(async move {
            let clean = done.await.is_ok();
            events.run_finished(session_id.clone(), run_id, clean);
            worktrees.run_finished(main, &session_id).await;
        });
        json!({ "sessionId": started.session_id, "runId": started.run_id })
    }

    /// A new session, with the default model of the settings in force.
    pub fn new_session(&self, name: Option<String>) -> Result<String> {
        self.harness.new_session(name, None).map_err(to_proto::harness_error)
    }
}

/// The process environment, read by the settings.
fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}
