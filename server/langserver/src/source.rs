//! The started servers as the tools' [`LanguageSource`] (the `lsp` and `rename` tools) and
//! [`DiagnosticSource`] (after-edit feedback in `reins run` and ACP). Each question syncs the
//! file from disk first, so the server answers about what the tools see.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use ls_types::CallHierarchyItem;
use reins_tools::{Calls, DiagnosticSource, FileDiagnostics, LanguageSource, Lookup, Place, Point, RenameStep, Symbol};
use serde_json::{Value, json};

use crate::answers;
use crate::connection::{Connection, uri_of};
use crate::servers::LanguageServers;

impl LanguageServers {
    /// The server of `path` with the file synced, the params naming `at` in it, and whether
    /// the file was opened just now.
    async fn at(&self, path: &Path, at: Point) -> Result<(std::sync::Arc<Connection>, Value, bool), String> {
        let (connection, _, opened) = self.for_file(path).await?;
        let text = connection.text_of(path).unwrap_or_default();
        let (line, character) = connection.encoding().position(&text, at);
        let params = json!({
            "textDocument": {"uri": uri_of(path)?},
            "position": {"line": line, "character": character},
        });
        Ok((connection, params, opened))
    }

    /// Fails with a sentence when the server said it cannot answer `provider`.
    fn able(connection: &Connection, provider: &str, what: &str) -> Result<(), String> {
        if connection.can(provider) {
            Ok(())
        } else {
            Err(format!("the language server {} does not offer {what}", connection.name))
        }
    }
}

/// The request of a lookup, the capability that offers it, and what it finds, in words.
pub(crate) fn lookup_method(lookup: Lookup) -> (&'static str, &'static str, &'static str) {
    match lookup {
        Lookup::Definition => ("textDocument/definition", "definitionProvider", "definitions"),
        Lookup::TypeDefinition => ("textDocument/typeDefinition", "typeDefinitionProvider", "type definitions"),
        Lookup::Implementation => ("textDocument/implementation", "implementationProvider", "implementations"),
        Lookup::References => ("textDocument/references", "referencesProvider", "references"),
    }
}

/// The request that follows a call hierarchy item one way.
pub(crate) fn calls_method(direction: Calls) -> &'static str {
    match direction {
        Calls::Incoming => "callHierarchy/incomingCalls",
        Calls::Outgoing => "callHierarchy/outgoingCalls",
    }
}

#[async_trait]
impl LanguageSource for LanguageServers {
    fn covers(&self, path: &Path) -> bool {
        LanguageServers::covers(self, path)
    }

    async fn lookup(&self, lookup: Lookup, path: &Path, at: Point) -> Result<Vec<Place>, String> {
        let (connection, mut params, opened) = self.at(path, at).await?;
        let (method, provider, what) = lookup_method(lookup);
        Self::able(&connection, provider, what)?;
        if lookup == Lookup::References {
            params["context"] = json!({"includeDeclaration": true});
        }
        let answer = self.ask(&connection, method, params, opened).await?;
        Ok(answers::places(connection.as_ref(), answer))
    }

    async fn hover(&self, path: &Path, at: Point) -> Result<Option<String>, String> {
        let (connection, params, opened) = self.at(path, at).await?;
        Self::able(&connection, "hoverProvider", "hover")?;
        let answer = self.ask(&connection, "textDocument/hover", params, opened).await?;
        Ok(answers::hover_text(answer))
    }

    async fn document_symbols(&self, path: &Path) -> Result<Vec<Symbol>, String> {
        let (connection, _, opened) = self.for_file(path).await?;
        Self::able(&connection, "documentSymbolProvider", "document symbols")?;
        let params = json!({"textDocument": {"uri": uri_of(path)?}});
        let answer = self.ask(&connection, "textDocument/documentSymbol", params, opened).await?;
        Ok(answers::document_symbols(connection.as_ref(), path, answer))
    }

    async fn workspace_symbols(&self, query: &str, near: Option<&Path>) -> Result<Vec<Symbol>, String> {
        let (connections, opened) = match near {
            Some(path) => {
                let (connection, _, opened) = self.for_file(path).await?;
                (vec![connection], opened)
            }
            None => (self.running(), false),
        };
        if connections.is_empty() {
            return Err("no language server is running yet: give `path`, a file of the language to search".to_string());
        }
        let mut symbols = Vec::new();
        let mut errors = Vec::new();
        for connection in connections {
            if !connection.can("workspaceSymbolProvider") {
                continue;
            }
            match self.ask(&connection, "workspace/symbol", json!({"query": query}), opened).await {
                Ok(answer) => symbols.extend(answers::workspace_symbols(connection.as_ref(), answer)),
                Err(err) => errors.push(err),
            }
        }
        if symbols.is_empty() && !errors.is_empty() {
            return Err(errors.join("; "));
        }
        Ok(symbols)
    }

    async fn calls(&self, direction: Calls, path: &Path, at: Point) -> Result<Vec<(Symbol, Vec<Place>)>, String> {
        let (connection, params, opened) = self.at(path, at).await?;
        Self::able(&connection, "callHierarchyProvider", "call hierarchies")?;
        let answer = self.ask(&connection, "textDocument/prepareCallHierarchy", params, opened).await?;
        let items: Vec<CallHierarchyItem> = serde_json::from_value(answer).unwrap_or_default();
        let Some(item) = items.into_iter().next() else { return Ok(Vec::new()) };
        let params = json!({"item": item});
        let answer = self.request(&connection, calls_method(direction), params).await?;
        Ok(answers::calls(connection.as_ref(), direction, &item, answer))
    }

    async fn rename(&self, path: &Path, at: Point, new_name: &str) -> Result<Vec<RenameStep>, String> {
        let (connection, params, opened) = self.at(path, at).await?;
        Self::able(&connection, "renameProvider", "renaming")?;
        if connection.prepares_rename() {
            let answer = self.ask(&connection, "textDocument/prepareRename", params.clone(), opened).await?;
            if answer.is_null() {
                return Err("the language server says the symbol there cannot be renamed".to_string());
            }
        }
        let mut params = params;
        params["newName"] = json!(new_name);
        connection.idle(std::time::Duration::from_secs(10)).await;
        let answer = self.request(&connection, "textDocument/rename", params).await?;
        answers::rename_steps(connection.as_ref(), answer)
    }
}

#[async_trait]
impl DiagnosticSource for LanguageServers {
    fn available(&self) -> bool {
        !self.is_empty()
    }

    /// The problems a started server publishes for each of `paths` it covers (the server
    /// started and the file synced first), waiting until it published for the text synced or
    /// `timeout` passed; files it has not published for are left out (unknown, not clean).
    async fn diagnostics(&self, paths: Option<&[PathBuf]>, timeout: Duration) -> Result<Vec<FileDiagnostics>, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        let Some(paths) = paths else { return Ok(Vec::new()) };
        // Every file synced before any is waited for: a change in one file (a rename's) changes
        // the problems of the others.
        let mut synced = Vec::new();
        for path in paths.iter().filter(|path| self.covers(path)) {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if let Ok(Ok((connection, version, _))) = tokio::time::timeout(left, self.for_file(path)).await {
                synced.push((path, connection, version));
            }
        }
        for (_, connection, _) in &synced {
            connection.resync_open();
        }
        let mut files = Vec::new();
        for (path, connection, version) in synced {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if let Some(published) = connection.wait_published(path, version, left).await {
                let diagnostics = published
                    .diagnostics
                    .iter()
                    .map(|found| answers::diagnostic(connection.as_ref(), path, found))
                    .collect();
                files.push(FileDiagnostics { path: path.clone(), diagnostics });
            }
        }
        Ok(files)
    }
}
