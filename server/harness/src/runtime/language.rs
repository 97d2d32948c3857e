//! The language servers behind a session's `lsp` and `rename` tools — the editor's own when it
//! offers them (`reins lsp`), else or besides those reins starts — and, where no editor answers,
//! its after-edit diagnostics. The started ones are those of the settings in force (`[lsp_servers]` over the
//! ones found on `PATH`), for the workspace's roots, built on first need — no server starts
//! until a tool asks about a file of its language — and rebuilt when the servers or the roots
//! change (the old ones stop).

use std::path::PathBuf;
use std::sync::Arc;

use reins_agent::Tool;
use reins_langserver::{Editor, EditorServers, LanguageServers, ServerConfig};
use reins_tools::{LanguageSource, LspTool, RenameTool};

use super::{Harness, ToolEnv, lock};

/// The servers in use, and what they were built from.
#[derive(Default)]
pub(super) struct LanguageState {
    built: Option<Built>,
    /// The editor that passes requests to its own servers, when the surface has one.
    editor: Option<Arc<dyn Editor>>,
}

/// The configs and roots the servers were built for, and the servers (`None` when the workspace
/// had no file of their languages).
type Built = (Vec<ServerConfig>, Vec<PathBuf>, Option<Arc<LanguageServers>>);

impl Harness {
    /// The language servers of the settings in force; `None` when there are none, or the
    /// workspace has no file of their languages.
    pub(super) fn language_servers(&self) -> Option<Arc<LanguageServers>> {
        let configs = self.settings().lsp_servers.clone();
        let roots = self.options.workspace.roots();
        if configs.is_empty() || roots.is_empty() {
            return None;
        }
        let mut state = lock(&self.language);
        if let Some((built_configs, built_roots, servers)) = &state.built
            && built_configs == &configs
            && built_roots == &roots
        {
            return servers.clone();
        }
        // What bash and MCP servers see: no provider key, by name or by value.
        let env = self.settings().tool_env(std::env::vars_os());
        // Confined as bash's commands are.
        let sandbox = self.settings().exec_policy(Vec::new()).sandbox;
        let servers = Some(Arc::new(LanguageServers::new(configs.clone(), roots.clone(), env, sandbox)))
            .filter(|servers| servers.covers_some_file());
        if let Some((_, _, Some(old))) = state.built.replace((configs, roots, servers.clone()))
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move { old.stop().await });
        }
        servers
    }

    /// Asks `editor` first for what the `lsp` and `rename` tools need, from the next session
    /// on (while it says it answers), and the started servers only when it cannot answer.
    pub fn use_editor_servers(&self, editor: Arc<dyn Editor>) {
        lock(&self.language).editor = Some(editor);
    }

    /// `lsp` and `rename` over the editor's servers and the started ones, when there are any.
    pub(super) fn language_tools(&self, tool_env: &ToolEnv) -> Vec<Arc<dyn Tool>> {
        let started = self.language_servers();
        let editor = lock(&self.language).editor.clone().filter(|editor| editor.available());
        let source: Arc<dyn LanguageSource> = match (editor, started) {
            (Some(editor), started) => Arc::new(EditorServers::new(editor, started)),
            (None, Some(started)) => started,
            (None, None) => return Vec::new(),
        };
        let workspace = tool_env.workspace.clone();
        tool_env.wrap(vec![
            Arc::new(LspTool::new(workspace.clone(), source.clone())),
            Arc::new(RenameTool::new(workspace, source)),
        ])
    }

    /// Stops the language servers started so far.
    pub(super) async fn stop_language_servers(&self) {
        let built = lock(&self.language).built.take();
        if let Some((_, _, Some(servers))) = built {
            servers.stop().await;
        }
    }
}
