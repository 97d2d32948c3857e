//! Conversions from reins values to LSP and JSON-RPC values: errors with their stable codes,
//! workspace edits, event notifications.

use std::collections::HashMap;

use reins_harness::HarnessError;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, ErrorCode};
use tower_lsp_server::ls_types::{
    DocumentChanges, OneOf, OptionalVersionedTextDocumentIdentifier, Position, Range, TextDocumentEdit, TextEdit, Uri,
    WorkspaceEdit,
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

/// One edit replacing the whole of an open buffer at `version`; `end` is the buffer's end.
pub fn whole_document_edit(uri: &str, version: i32, end: (u32, u32), new_text: &str) -> WorkspaceEdit {
    let uri: Uri = match uri.parse() {
        Ok(uri) => uri,
        // The URI came from the editor's own didOpen, so it parsed once already.
        Err(_) => return WorkspaceEdit::default(),
    };
    let range = Range { start: Position::new(0, 0), end: Position::new(end.0, end.1) };
    let edit = TextDocumentEdit {
        text_document: OptionalVersionedTextDocumentIdentifier { uri, version: Some(version) },
        edits: vec![OneOf::Left(TextEdit { range, new_text: new_text.to_string() })],
    };
    WorkspaceEdit {
        changes: None::<HashMap<Uri, Vec<TextEdit>>>,
        document_changes: Some(DocumentChanges::Edits(vec![edit])),
        change_annotations: None,
    }
}

/// A value as a command result.
pub fn json(value: &impl serde::Serialize) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(|err| error("invalid_state", format!("cannot encode the result: {err}")))
}

/// The params of a `reins/event` notification.
pub fn event_params(session_id: &str, run_id: &str, seq: u64, event: Value) -> Value {
    json!({ "sessionId": session_id, "runId": run_id, "seq": seq, "event": event })
}
