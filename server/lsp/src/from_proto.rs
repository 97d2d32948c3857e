//! Conversions from LSP values to reins values: URIs to paths, command arguments to typed
//! structs with errors that name the offending field, the editor's diagnostics.

use std::path::PathBuf;

use ropey::Rope;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tower_lsp_server::jsonrpc::Error;
use tower_lsp_server::ls_types::{Diagnostic, DiagnosticSeverity, NumberOrString, Uri};

use crate::documents::{self, PositionEncoding};
use crate::to_proto;

/// The file a `file:` URI names, canonicalised when it exists (so it matches the paths the
/// workspace resolves); `None` for other schemes.
pub fn file_path(uri: &Uri) -> Option<PathBuf> {
    let path = uri.to_file_path()?.into_owned();
    match std::fs::canonicalize(&path) {
        Ok(real) => Some(real),
        // A new, unsaved file: canonicalise its directory.
        Err(_) => match (path.parent().and_then(|parent| std::fs::canonicalize(parent).ok()), path.file_name()) {
            (Some(parent), Some(name)) => Some(parent.join(name)),
            _ => Some(path),
        },
    }
}

/// A URI given as a string in a command argument.
pub fn uri(text: &str) -> Result<Uri, Error> {
    text.parse().map_err(|_| to_proto::invalid_argument(format!("{text:?} is not a valid URI")))
}

/// The single object argument of a command. No argument reads as `{}`, so commands whose
/// fields are all optional can be called bare.
pub fn argument<T: DeserializeOwned>(command: &str, arguments: Vec<Value>) -> Result<T, Error> {
    let value = match arguments.len() {
        0 => Value::Object(Default::default()),
        1 => arguments.into_iter().next().unwrap_or(Value::Null),
        n => {
            return Err(to_proto::invalid_argument(format!(
                "{command} takes one object argument, but {n} arguments were given"
            )));
        }
    };
    if !value.is_object() {
        return Err(to_proto::invalid_argument(format!("{command} takes one object argument, not {value}")));
    }
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let at = if path == "." { String::new() } else { format!("{path}: ") };
        to_proto::invalid_argument(format!("{command}: {at}{}", err.inner()))
    })
}

/// The answer to `reins/diagnostics`, `{items: [{uri, diagnostics}]}`: each item's URI and its
/// diagnostics. An item or a diagnostic that is not what the protocol says is skipped (and
/// logged), so one odd entry costs only itself; an answer without `items` is an error.
pub fn diagnostics_answer(answer: Value) -> Result<Vec<(String, Vec<Diagnostic>)>, String> {
    let Some(items) = answer.get("items").and_then(Value::as_array) else {
        return Err(format!("the editor answered reins/diagnostics without an `items` list: {}", short(&answer)));
    };
    let mut out = Vec::new();
    for item in items {
        let (Some(uri), Some(diagnostics)) =
            (item.get("uri").and_then(Value::as_str), item.get("diagnostics").and_then(Value::as_array))
        else {
            tracing::warn!("reins/diagnostics: skipped an item without a uri and a diagnostics list: {}", short(item));
            continue;
        };
        let read = diagnostics
            .iter()
            .filter_map(|diagnostic| match serde_json::from_value::<Diagnostic>(diagnostic.clone()) {
                Ok(diagnostic) => Some(diagnostic),
                Err(err) => {
                    tracing::warn!("reins/diagnostics: skipped a diagnostic of {uri} ({err}): {}", short(diagnostic));
                    None
                }
            })
            .collect();
        out.push((uri.to_string(), read));
    }
    Ok(out)
}

/// The answer to `reins/languageServer`: `null` when none of the editor's servers for the file
/// offers the method, else `{server, positionEncoding, result}` (or `error` in place of
/// `result` when the server answered with one). Anything else is an error.
pub fn language_server_answer(answer: Value) -> Result<Option<reins_langserver::EditorAnswer>, String> {
    if answer.is_null() {
        return Ok(None);
    }
    let Some(fields) = answer.as_object() else {
        return Err(format!(
            "the editor answered reins/languageServer with neither null nor an object: {}",
            short(&answer)
        ));
    };
    let server = fields.get("server").and_then(Value::as_str).unwrap_or("of the editor").to_string();
    let encoding = match fields.get("positionEncoding").and_then(Value::as_str) {
        Some("utf-8") => reins_langserver::Encoding::Utf8,
        Some("utf-32") => reins_langserver::Encoding::Utf32,
        _ => reins_langserver::Encoding::Utf16,
    };
    let result = match (fields.get("result"), fields.get("error")) {
        (_, Some(error)) => Err(match error.get("message").and_then(Value::as_str) {
            Some(message) => message.to_string(),
            None => short(error),
        }),
        (Some(result), None) => Ok(result.clone()),
        (None, None) => {
            return Err(format!("the editor answered reins/languageServer without a result: {}", short(&answer)));
        }
    };
    Ok(Some(reins_langserver::EditorAnswer { server, encoding, result }))
}

/// An LSP diagnostic as reins's tools see it: 1-based line, and a 1-based column in characters
/// of `text` (the open buffer) when there is one. reins's copy of the buffer may lag behind the
/// editor's (clients hold changes back a moment): where the position lies past the end of its
/// line there, the column is taken as given.
pub fn diagnostic(diagnostic: &Diagnostic, text: Option<&Rope>, encoding: PositionEncoding) -> reins_tools::Diagnostic {
    let start = diagnostic.range.start;
    let line = start.line as usize;
    let within = text.filter(|rope| line < rope.len_lines()).filter(|rope| {
        let units = match encoding {
            PositionEncoding::Utf16 => rope.line(line).len_utf16_cu(),
            PositionEncoding::Utf8 => rope.line(line).len_bytes(),
        };
        (start.character as usize) < units
    });
    let column = match within {
        Some(rope) => documents::char_index(rope, start, encoding) - rope.line_to_char(line),
        None => start.character as usize,
    };
    let severity = match diagnostic.severity {
        Some(DiagnosticSeverity::WARNING) => reins_tools::Severity::Warning,
        Some(DiagnosticSeverity::INFORMATION) => reins_tools::Severity::Information,
        Some(DiagnosticSeverity::HINT) => reins_tools::Severity::Hint,
        // An unknown severity is the client's to interpret, and LSP's default is an error.
        _ => reins_tools::Severity::Error,
    };
    reins_tools::Diagnostic {
        line: start.line.saturating_add(1),
        column: u32::try_from(column).unwrap_or(u32::MAX).saturating_add(1),
        severity,
        source: diagnostic.source.clone().filter(|source| !source.trim().is_empty()),
        code: diagnostic.code.as_ref().map(|code| match code {
            NumberOrString::Number(number) => number.to_string(),
            NumberOrString::String(text) => text.clone(),
        }),
        message: diagnostic.message.clone(),
    }
}

/// A value for a log line, cut short.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tower_lsp_server::ls_types::{Position, Range};

    use super::*;

    #[test]
    fn language_server_answers_read_as_answer_failure_none_or_error() {
        let read = |answer: Value| match language_server_answer(answer) {
            Ok(Some(answer)) => format!("{} {:?} {:?}", answer.server, answer.encoding, answer.result),
            Ok(None) => "none offers it".to_string(),
            Err(err) => format!("error: {err}"),
        };
        assert_eq!(
            read(json!({"server": "pyright", "positionEncoding": "utf-8", "result": [1]})),
            "pyright Utf8 Ok(Array [Number(1)])"
        );
        assert_eq!(read(json!({"server": "clangd", "result": null})), "clangd Utf16 Ok(Null)");
        assert_eq!(
            read(json!({"server": "gopls", "error": {"code": -32803, "message": "no identifier here"}})),
            "gopls Utf16 Err(\"no identifier here\")"
        );
        assert_eq!(read(Value::Null), "none offers it");
        assert_eq!(
            read(json!({"server": "pyright"})),
            "error: the editor answered reins/languageServer without a result: {\"server\":\"pyright\"}"
        );
        assert_eq!(
            read(json!([1])),
            "error: the editor answered reins/languageServer with neither null nor an object: [1]"
        );
    }

    fn column(text: &str, line: u32, character: u32, encoding: PositionEncoding) -> u32 {
        let at = Position { line, character };
        let lsp = Diagnostic { range: Range { start: at, end: at }, message: "m".into(), ..Diagnostic::default() };
        diagnostic(&lsp, Some(&Rope::from_str(text)), encoding).column
    }

    #[test]
    fn columns_count_characters_and_trust_the_editor_past_a_line_reins_has_not_seen_grow() {
        let text = "a\nlet é = \"𝄞\"; x\n";
        assert_eq!(column(text, 1, 15, PositionEncoding::Utf8), 12, "`;`, after é (2 bytes) and 𝄞 (4)");
        assert_eq!(column(text, 1, 13, PositionEncoding::Utf16), 13, "after `;`, 𝄞 counting 2 units");
        assert_eq!(column(text, 0, 40, PositionEncoding::Utf16), 41, "the line grew in the editor");
        assert_eq!(column(text, 9, 3, PositionEncoding::Utf16), 4, "so did the file");
    }
}
