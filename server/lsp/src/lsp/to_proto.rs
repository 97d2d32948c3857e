//! Conversions from reins values to LSP and JSON-RPC values: errors with their stable codes,
//! workspace edits, event notifications.

use std::collections::HashMap;

use reins_harness::{HarnessError, ModelEntry, Settings};
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, ErrorCode};
use tower_lsp_server::ls_types::{
    CreateFile, CreateFileOptions, DocumentChangeOperation, DocumentChanges, OneOf,
    OptionalVersionedTextDocumentIdentifier, ResourceOp, TextDocumentEdit, TextEdit, Uri, WorkspaceEdit,
};

/// LSP's "request failed" code: the request was well formed but could not be carried out.
const REQUEST_FAILED: i64 = -32803;

/// A JSON-RPC error whose `data.code` is the harness's stable code. Invalid arguments are
/// `-32602` (invalid params); every other failure is `-32803` (request failed).
pub fn error(code: &'static str, message: impl Into<String>) -> Error {
    let rpc_code =
        if code == "invalid_argument" { ErrorCode::InvalidParams } else { ErrorCode::ServerError(REQUEST_FAILED) };
    Error { code: rpc_code, message: message.into().into(), data: Some(json!({ "code": code })) }
}

pub fn invalid_argument(message: impl Into<String>) -> Error {
    error("invalid_argument", message)
}

pub fn harness_error(err: HarnessError) -> Error {
    error(err.code(), err.to_string())
}

/// The answer to a request whose handler panicked: the server keeps serving.
pub fn internal_error(what: &str) -> Error {
    Error {
        code: ErrorCode::InternalError,
        message: format!("reins failed while handling {what}; the server logged the details and keeps running").into(),
        data: Some(json!({ "code": "internal" })),
    }
}

/// Edits of one document as versioned `documentChanges`; `version` is `None` for a document
/// the editor does not have open (its text on disk is what the edits apply to).
pub fn document_edit(uri: &str, version: Option<i32>, edits: Vec<TextEdit>) -> WorkspaceEdit {
    let uri: Uri = match uri.parse() {
        Ok(uri) => uri,
        // The URI came from the editor's own didOpen or from a path, so it parses.
        Err(_) => return WorkspaceEdit::default(),
    };
    let edit = TextDocumentEdit {
        text_document: OptionalVersionedTextDocumentIdentifier { uri, version },
        edits: edits.into_iter().map(OneOf::Left).collect(),
    };
    WorkspaceEdit {
        changes: None::<HashMap<Uri, Vec<TextEdit>>>,
        document_changes: Some(DocumentChanges::Edits(vec![edit])),
        change_annotations: None,
    }
}

/// A new file: `CreateFile` (failing if it exists), then its content inserted.
pub fn create_file_edit(uri: Uri, content: Option<TextEdit>) -> WorkspaceEdit {
    let create = CreateFile {
        uri: uri.clone(),
        options: Some(CreateFileOptions { overwrite: Some(false), ignore_if_exists: Some(false) }),
        annotation_id: None,
    };
    let mut operations = vec![DocumentChangeOperation::Op(ResourceOp::Create(create))];
    if let Some(content) = content {
        operations.push(DocumentChangeOperation::Edit(TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier { uri, version: None },
            edits: vec![OneOf::Left(content)],
        }));
    }
    WorkspaceEdit {
        changes: None,
        document_changes: Some(DocumentChanges::Operations(operations)),
        change_annotations: None,
    }
}

/// A value as a command result.
pub fn json(value: &impl serde::Serialize) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(|err| error("invalid_state", format!("cannot encode the result: {err}")))
}

/// The answer of `reins.model.list`: the registry's models (and the default model, when the
/// registry does not list it), each addressed `provider/id`, with whether a key is there for it
/// — never the key — and which one is the default of new sessions.
pub fn model_list(settings: &Settings) -> Value {
    let default = settings.resolve_model(None);
    let listed = settings.registry.model(&default.provider, &default.id).is_some();
    let unlisted = (!listed).then(|| ModelEntry {
        provider: default.provider.clone(),
        id: default.id.clone(),
        context_window: default.context_window,
        max_output: default.max_output,
        prices: default.prices.clone(),
        reasoning: default.reasoning,
        compat: default.compat.clone(),
        base_url: None,
    });
    let models: Vec<Value> = settings
        .registry
        .models
        .iter()
        .chain(unlisted.as_ref())
        .map(|entry| {
            json!({
                "id": format!("{}/{}", entry.provider, entry.id),
                "provider": entry.provider,
                "name": entry.id,
                "contextWindow": entry.context_window,
                "maxOutput": entry.max_output,
                "reasoning": entry.reasoning,
                "prices": entry.prices,
                "keyAvailable": crate::lsp::config::key_available(settings, &entry.provider),
                "current": entry.provider == default.provider && entry.id == default.id,
            })
        })
        .collect();
    json!({ "models": models })
}

/// The params of a `reins/event` notification.
pub fn event_params(session_id: &str, run_id: &str, seq: u64, event: Value) -> Value {
    json!({ "sessionId": session_id, "runId": run_id, "seq": seq, "event": event })
}
