//! The editor's own diagnostics — those of its other language servers and linters, which reins,
//! being one more server, never sees through LSP — asked for with the server→client request
//! `reins/diagnostics`, only of clients that said they answer it
//! (`initializationOptions.capabilities.diagnostics`). They feed the agent's `diagnostics` tool,
//! the feedback after its edits, and asks about a selection.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reins_tools::{DiagnosticSource, FileDiagnostics};
use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::ErrorCode;
use tower_lsp_server::ls_types::Diagnostic;
use tower_lsp_server::ls_types::request::Request;

use crate::documents::Documents;
use crate::{from_proto, lock, to_proto};

/// `reins/diagnostics {uris?}` → `{items: [{uri, diagnostics}]}`.
enum DiagnosticsRequest {}

impl Request for DiagnosticsRequest {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "reins/diagnostics";
}

pub struct EditorDiagnostics {
    client: Client,
    documents: Arc<Mutex<Documents>>,
    /// The client said it answers `reins/diagnostics`.
    capable: AtomicBool,
    /// … but then answered that it does not know the method: it is not asked again.
    refused: AtomicBool,
}

impl EditorDiagnostics {
    pub fn new(client: Client, documents: Arc<Mutex<Documents>>) -> Self {
        Self { client, documents, capable: AtomicBool::new(false), refused: AtomicBool::new(false) }
    }

    /// What the client said at `initialize`: `capabilities.diagnostics` in its
    /// `initializationOptions` (or in their `reins` section).
    pub fn initialize(&self, options: &Value) {
        let said = |options: &Value| options.pointer("/capabilities/diagnostics").and_then(Value::as_bool);
        let capable = said(options).or_else(|| options.get("reins").and_then(said)).unwrap_or(false);
        self.capable.store(capable, Ordering::Relaxed);
    }

    /// Whether the editor is asked at all.
    pub fn can_answer(&self) -> bool {
        self.capable.load(Ordering::Relaxed) && !self.refused.load(Ordering::Relaxed)
    }

    /// The editor's diagnostics of `uris` (of every file it has open when `None`), by URI,
    /// without reins's own (its pending edits').
    pub async fn request(
        &self,
        uris: Option<&[String]>,
        timeout: Duration,
    ) -> Result<Vec<(String, Vec<Diagnostic>)>, String> {
        if !self.can_answer() {
            return Err("the editor does not answer reins/diagnostics".into());
        }
        let params = to_proto::diagnostics_request(uris);
        let answer = match tokio::time::timeout(timeout, self.client.send_request::<DiagnosticsRequest>(params)).await {
            Err(_) => {
                return Err(format!("the editor did not answer reins/diagnostics within {} ms", timeout.as_millis()));
            }
            Ok(Err(err)) if err.code == ErrorCode::MethodNotFound => {
                self.refused.store(true, Ordering::Relaxed);
                tracing::warn!(
                    "the editor said it answers reins/diagnostics but does not know the method; it is not asked again"
                );
                return Err(err.message.to_string());
            }
            Ok(Err(err)) => return Err(format!("the editor failed to answer reins/diagnostics: {}", err.message)),
            Ok(Ok(answer)) => answer,
        };
        let mut items = from_proto::diagnostics_answer(answer)?;
        for (_, diagnostics) in &mut items {
            diagnostics.retain(|diagnostic| diagnostic.source.as_deref() != Some("reins"));
        }
        Ok(items)
    }
}

#[async_trait]
impl DiagnosticSource for EditorDiagnostics {
    fn available(&self) -> bool {
        self.can_answer()
    }

    async fn diagnostics(&self, paths: Option<&[PathBuf]>, timeout: Duration) -> Result<Vec<FileDiagnostics>, String> {
        // Only files the editor has open can have its diagnostics.
        let uris: Option<Vec<String>> = paths.map(|paths| {
            let documents = lock(&self.documents);
            paths.iter().filter_map(|path| documents.by_path(path).map(|document| document.uri.clone())).collect()
        });
        if uris.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Vec::new());
        }
        let items = self.request(uris.as_deref(), timeout).await?;
        let items: Vec<(String, PathBuf, Vec<Diagnostic>)> = items
            .into_iter()
            .filter_map(|(uri, diagnostics)| {
                let path = uri.parse().ok().and_then(|parsed| from_proto::file_path(&parsed))?;
                // The client may say more than it was asked.
                let asked = paths.is_none_or(|paths| paths.contains(&path));
                asked.then_some((uri, path, diagnostics))
            })
            .collect();
        let documents = lock(&self.documents);
        let mut files: Vec<FileDiagnostics> = Vec::new();
        for (uri, path, diagnostics) in items {
            let rope = documents.get(&uri).or_else(|| documents.by_path(&path)).map(|document| &document.rope);
            let diagnostics: Vec<reins_tools::Diagnostic> = diagnostics
                .iter()
                .map(|diagnostic| from_proto::diagnostic(diagnostic, rope, documents.encoding))
                .collect();
            match files.iter_mut().find(|file| file.path == path) {
                Some(file) => file.diagnostics.extend(diagnostics),
                None => files.push(FileDiagnostics { path, diagnostics }),
            }
        }
        Ok(files)
    }
}
