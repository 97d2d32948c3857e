//! The editor's own language servers — the rust-analyzer or pyright it runs for its buffers —
//! asked for the `lsp` and `rename` tools with the server→client request `reins/languageServer`,
//! only of clients that said they answer it (`initializationOptions.capabilities.languageServers`):
//! the editor passes the request to a server attached to the file and returns its raw answer,
//! which reins reads as it reads its own servers'. So no second copy of a server runs beside the
//! editor's; where the editor has none for a file, reins starts its own.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use reins_langserver::{Editor, EditorAnswer, Encoding, REQUEST_TIMEOUT};
use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::ErrorCode;
use tower_lsp_server::ls_types::request::Request;

use crate::documents::{Documents, PositionEncoding};
use crate::{from_proto, lock, to_proto};

/// `reins/languageServer {uri?, method, params}` → `null | {server, positionEncoding, result | error}`.
enum LanguageServerRequest {}

impl Request for LanguageServerRequest {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "reins/languageServer";
}

pub struct EditorLanguage {
    client: Client,
    documents: Arc<Mutex<Documents>>,
    /// The client said it answers `reins/languageServer`.
    capable: AtomicBool,
    /// … but then answered that it does not know the method: it is not asked again.
    refused: AtomicBool,
}

impl EditorLanguage {
    pub fn new(client: Client, documents: Arc<Mutex<Documents>>) -> Self {
        Self { client, documents, capable: AtomicBool::new(false), refused: AtomicBool::new(false) }
    }

    /// What the client said at `initialize`: `capabilities.languageServers` in its
    /// `initializationOptions` (or in their `reins` section).
    pub fn initialize(&self, options: &Value) {
        let said = |options: &Value| options.pointer("/capabilities/languageServers").and_then(Value::as_bool);
        let capable = said(options).or_else(|| options.get("reins").and_then(said)).unwrap_or(false);
        self.capable.store(capable, Ordering::Relaxed);
    }
}

#[async_trait]
impl Editor for EditorLanguage {
    fn available(&self) -> bool {
        self.capable.load(Ordering::Relaxed) && !self.refused.load(Ordering::Relaxed)
    }

    fn encoding(&self) -> Encoding {
        match lock(&self.documents).encoding {
            PositionEncoding::Utf8 => Encoding::Utf8,
            PositionEncoding::Utf16 => Encoding::Utf16,
        }
    }

    /// The open buffer's text (what the editor's servers see), else the file's.
    fn text_of(&self, path: &Path) -> Option<String> {
        if let Some(document) = lock(&self.documents).by_path(path) {
            return Some(document.text());
        }
        reins_langserver::disk_text(path)
    }

    async fn request(&self, path: Option<&Path>, method: &str, params: Value) -> Result<Option<EditorAnswer>, String> {
        if !self.available() {
            return Err("the editor does not answer reins/languageServer".into());
        }
        let uri = match path {
            Some(path) => Some(
                tower_lsp_server::ls_types::Uri::from_file_path(path)
                    .ok_or_else(|| format!("{} cannot be named by a URI", path.display()))?
                    .to_string(),
            ),
            None => None,
        };
        let params = to_proto::language_server_request(uri.as_deref(), method, params);
        let sent = self.client.send_request::<LanguageServerRequest>(params);
        let answer = match tokio::time::timeout(REQUEST_TIMEOUT, sent).await {
            Err(_) => {
                return Err(format!(
                    "the editor did not answer {method} (reins/languageServer) within {} s",
                    REQUEST_TIMEOUT.as_secs()
                ));
            }
            Ok(Err(err)) if err.code == ErrorCode::MethodNotFound => {
                self.refused.store(true, Ordering::Relaxed);
                tracing::warn!(
                    "the editor said it answers reins/languageServer but does not know the method; it is not asked again"
                );
                return Err(err.message.to_string());
            }
            Ok(Err(err)) => return Err(format!("the editor failed to answer {method}: {}", err.message)),
            Ok(Ok(answer)) => answer,
        };
        from_proto::language_server_answer(answer)
    }
}
