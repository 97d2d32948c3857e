//! The examples of `protocol-docs/`, for the tests that run them against the server
//! (tests/e2e/lsp/docs.rs for the language server, tests/e2e/acp_docs.rs for ACP): each is a
//! `<!-- kind: name -->` marker followed by a ```json block.
// Each test binary that includes this uses a part of it.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// One marked example.
#[derive(Debug)]
pub struct Example {
    /// `file.md:line`, for failure messages.
    pub place: String,
    pub kind: String,
    pub name: String,
    pub json: Value,
}

/// Every example of every file of `protocol-docs/`, file by file (sorted), in document order.
pub fn examples() -> Vec<Example> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../protocol-docs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i].trim();
            if let Some(marker) = line.strip_prefix("<!--").and_then(|rest| rest.strip_suffix("-->")) {
                let marker = marker.trim();
                let (kind, name) = marker.split_once(':').map_or((marker, ""), |(k, n)| (k.trim(), n.trim()));
                let place = format!("{}:{}", file.file_name().unwrap().to_string_lossy(), i + 1);
                assert_eq!(
                    lines.get(i + 1).map(|l| l.trim()),
                    Some("```json"),
                    "{place}: a marker must be followed by a ```json block"
                );
                let end = (i + 2..lines.len())
                    .find(|&j| lines[j].trim() == "```")
                    .unwrap_or_else(|| panic!("{place}: unclosed block"));
                let body = lines[i + 2..end].join("\n");
                let json = serde_json::from_str(&body).unwrap_or_else(|err| panic!("{place}: not JSON: {err}\n{body}"));
                out.push(Example { place, kind: kind.to_string(), name: name.to_string(), json });
                i = end;
            }
            i += 1;
        }
    }
    out
}

/// How the elements of a documented array find their counterparts.
#[derive(Clone, Copy, PartialEq)]
pub enum Elements {
    /// An element with a `title` (an LSP code action) is compared with the one of that title,
    /// others with the first.
    ByTitle,
    /// The first with the first (ACP, where titles are text for people).
    First,
}

/// Whether `actual` has the documented shape: the same keys in objects, the same JSON types;
/// `null` stands for "may be absent or any value"; arrays compare their first elements, or the
/// element of the documented code action's title.
pub fn same_shape(documented: &Value, actual: &Value, path: &str) -> Result<(), String> {
    shape(documented, actual, path, Elements::ByTitle)
}

/// [`same_shape`], with arrays compared as `elements` says.
pub fn shape(documented: &Value, actual: &Value, path: &str, elements: Elements) -> Result<(), String> {
    match (documented, actual) {
        (Value::Null, _) | (_, Value::Null) => Ok(()),
        (Value::Object(doc), Value::Object(real)) => {
            // A documented `null` may also be absent.
            let mut doc_keys: Vec<&String> = doc
                .iter()
                .filter(|(key, value)| !value.is_null() || real.contains_key(*key))
                .map(|(key, _)| key)
                .collect();
            let mut real_keys: Vec<&String> = real.keys().collect();
            doc_keys.sort();
            real_keys.sort();
            if doc_keys != real_keys {
                return Err(format!("{path}: documented keys {doc_keys:?}, the server sends {real_keys:?}"));
            }
            doc.iter().try_for_each(|(key, value)| {
                shape(value, real.get(key).unwrap_or(&Value::Null), &format!("{path}.{key}"), elements)
            })
        }
        (Value::Array(doc), Value::Array(real)) => {
            let title = |doc: &Value| doc.get("title").filter(|_| elements == Elements::ByTitle).cloned();
            let counterpart = |doc: &Value| match title(doc) {
                Some(title) => real.iter().find(|item| item.get("title") == Some(&title)),
                None => real.first(),
            };
            match doc.first().map(|first| (first, counterpart(first))) {
                Some((doc, Some(real))) => shape(doc, real, &format!("{path}[0]"), elements),
                Some((doc, None)) if title(doc).is_some() => Err(format!("{path}: no element titled {}", doc["title"])),
                _ => Ok(()),
            }
        }
        (Value::String(_), Value::String(_))
        | (Value::Bool(_), Value::Bool(_))
        | (Value::Number(_), Value::Number(_)) => Ok(()),
        _ => Err(format!("{path}: documented {documented}, the server sends {actual}")),
    }
}
