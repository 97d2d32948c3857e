//! Conversions from LSP values to reins values: URIs to paths, command arguments to typed
//! structs with errors that name the offending field.

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tower_lsp_server::jsonrpc::Error;
use tower_lsp_server::ls_types::Uri;

use crate::lsp::to_proto;

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
