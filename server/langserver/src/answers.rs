//! The servers' answers read into the tools' terms: locations, hovers, symbols, call hierarchy
//! items, workspace edits and diagnostics, with every column converted by the text of its file
//! as the server sees it. Anything malformed is skipped, never trusted.

use std::path::{Path, PathBuf};

use ls_types::{
    CallHierarchyIncomingCall, CallHierarchyItem, CallHierarchyOutgoingCall, Diagnostic, DiagnosticSeverity,
    DocumentChangeOperation, DocumentChanges, DocumentSymbol, DocumentSymbolResponse, GotoDefinitionResponse, Hover,
    HoverContents, MarkedString, OneOf, Range, ResourceOp, SymbolInformation, SymbolKind, Uri, WorkspaceEdit,
    WorkspaceSymbolResponse,
};
use reins_tools::{Calls, Place, RenameStep, Symbol, TextReplace};
use serde_json::Value;

use crate::encoding::Encoding;

/// Where the columns of a server's answer are counted from: how it counts them, and the text of
/// each file as it sees it.
pub(crate) trait Texts {
    fn encoding(&self) -> Encoding;
    fn text_of(&self, path: &Path) -> Option<String>;
}

/// The largest file read from disk to place an answer's positions: a language server or an
/// editor may name any path, `/dev/zero` included.
const MAX_TEXT_BYTES: u64 = 16 << 20;

/// The text of `path` on disk, when it is a regular file (a FIFO named in an answer would block
/// the read forever) of at most [`MAX_TEXT_BYTES`].
pub fn disk_text(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let regular = |stat: std::fs::Metadata| stat.is_file() && stat.len() <= MAX_TEXT_BYTES;
    // Looked at before the open, which would wait for a FIFO's writer, and again on the open file.
    if !regular(std::fs::metadata(path).ok()?) {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    if !regular(file.metadata().ok()?) {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_TEXT_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The path of a `file://` URI.
pub(crate) fn path_of(uri: &Uri) -> Option<PathBuf> {
    (uri.scheme().as_str() == "file").then(|| uri.to_file_path().map(|path| path.into_owned())).flatten()
}

/// `range` of the file at `path` as a place.
pub(crate) fn place(texts: &dyn Texts, path: &Path, range: &Range) -> Place {
    let text = texts.text_of(path).unwrap_or_default();
    let encoding = texts.encoding();
    Place {
        path: path.to_path_buf(),
        start: encoding.point(&text, range.start.line, range.start.character),
        end: encoding.point(&text, range.end.line, range.end.character),
    }
}

/// A definition-like answer (`Location`, `Location[]`, `LocationLink[]` or null) as places.
pub(crate) fn places(texts: &dyn Texts, answer: Value) -> Vec<Place> {
    if answer.is_null() {
        return Vec::new();
    }
    let Ok(response) = serde_json::from_value::<GotoDefinitionResponse>(answer) else { return Vec::new() };
    let targets: Vec<(Uri, Range)> = match response {
        GotoDefinitionResponse::Scalar(location) => vec![(location.uri, location.range)],
        GotoDefinitionResponse::Array(locations) => {
            locations.into_iter().map(|location| (location.uri, location.range)).collect()
        }
        GotoDefinitionResponse::Link(links) => {
            links.into_iter().map(|link| (link.target_uri, link.target_selection_range)).collect()
        }
    };
    targets.iter().filter_map(|(uri, range)| Some(place(texts, &path_of(uri)?, range))).collect()
}

/// A hover's text: its markup as it is (Markdown reads well to a model), parts one a paragraph.
pub(crate) fn hover_text(answer: Value) -> Option<String> {
    let hover = serde_json::from_value::<Hover>(answer).ok()?;
    let marked = |marked: MarkedString| match marked {
        MarkedString::String(text) => text,
        MarkedString::LanguageString(code) => format!("```{}\n{}\n```", code.language, code.value),
    };
    let text = match hover.contents {
        HoverContents::Scalar(one) => marked(one),
        HoverContents::Array(many) => many.into_iter().map(marked).collect::<Vec<_>>().join("\n\n"),
        HoverContents::Markup(markup) => markup.value,
    };
    Some(text)
}

/// A file's outline, nested symbols after their parent.
pub(crate) fn document_symbols(texts: &dyn Texts, path: &Path, answer: Value) -> Vec<Symbol> {
    let Ok(response) = serde_json::from_value::<DocumentSymbolResponse>(answer) else { return Vec::new() };
    match response {
        DocumentSymbolResponse::Flat(flat) => flat.into_iter().filter_map(|info| information(texts, info)).collect(),
        DocumentSymbolResponse::Nested(nested) => {
            let mut out = Vec::new();
            flatten(texts, path, nested, 0, None, &mut out);
            out
        }
    }
}

fn flatten(
    texts: &dyn Texts,
    path: &Path,
    symbols: Vec<DocumentSymbol>,
    depth: u32,
    container: Option<&str>,
    out: &mut Vec<Symbol>,
) {
    for symbol in symbols {
        out.push(Symbol {
            name: symbol.name.clone(),
            kind: kind_name(symbol.kind).to_string(),
            place: place(texts, path, &symbol.selection_range),
            container: container.map(str::to_string),
            depth,
        });
        if let Some(children) = symbol.children {
            flatten(texts, path, children, depth + 1, Some(&symbol.name), out);
        }
    }
}

#[allow(deprecated)]
fn information(texts: &dyn Texts, info: SymbolInformation) -> Option<Symbol> {
    let path = path_of(&info.location.uri)?;
    Some(Symbol {
        name: info.name,
        kind: kind_name(info.kind).to_string(),
        place: place(texts, &path, &info.location.range),
        container: info.container_name.filter(|name| !name.is_empty()),
        depth: 0,
    })
}

/// `workspace/symbol`'s answer.
pub(crate) fn workspace_symbols(texts: &dyn Texts, answer: Value) -> Vec<Symbol> {
    let Ok(response) = serde_json::from_value::<WorkspaceSymbolResponse>(answer) else { return Vec::new() };
    match response {
        WorkspaceSymbolResponse::Flat(flat) => flat.into_iter().filter_map(|info| information(texts, info)).collect(),
        WorkspaceSymbolResponse::Nested(nested) => nested
            .into_iter()
            .filter_map(|symbol| {
                let (uri, range) = match symbol.location {
                    OneOf::Left(location) => (location.uri, location.range),
                    OneOf::Right(location) => (location.uri, Range::default()),
                };
                let path = path_of(&uri)?;
                Some(Symbol {
                    name: symbol.name,
                    kind: kind_name(symbol.kind).to_string(),
                    place: place(texts, &path, &range),
                    container: symbol.container_name.filter(|name| !name.is_empty()),
                    depth: 0,
                })
            })
            .collect(),
    }
}

/// A call hierarchy item as a symbol (where its name is).
pub(crate) fn call_item(texts: &dyn Texts, item: &CallHierarchyItem) -> Option<Symbol> {
    let path = path_of(&item.uri)?;
    Some(Symbol {
        name: item.name.clone(),
        kind: kind_name(item.kind).to_string(),
        place: place(texts, &path, &item.selection_range),
        container: item.detail.clone().filter(|detail| !detail.is_empty()),
        depth: 0,
    })
}

/// The calls of a call hierarchy `item` (`callHierarchy/incomingCalls` or `outgoingCalls`'s
/// answer): each function that calls it or that it calls, with where the calls are.
pub(crate) fn calls(
    texts: &dyn Texts,
    direction: Calls,
    item: &CallHierarchyItem,
    answer: Value,
) -> Vec<(Symbol, Vec<Place>)> {
    let mut out = Vec::new();
    match direction {
        Calls::Incoming => {
            let calls: Vec<CallHierarchyIncomingCall> = serde_json::from_value(answer).unwrap_or_default();
            for call in calls {
                let Some(caller) = call_item(texts, &call.from) else { continue };
                let sites = call.from_ranges.iter().map(|range| place(texts, &caller.place.path, range)).collect();
                out.push((caller, sites));
            }
        }
        Calls::Outgoing => {
            let calls: Vec<CallHierarchyOutgoingCall> = serde_json::from_value(answer).unwrap_or_default();
            let Some(from) = path_of(&item.uri) else { return out };
            for call in calls {
                let Some(callee) = call_item(texts, &call.to) else { continue };
                let sites = call.from_ranges.iter().map(|range| place(texts, &from, range)).collect();
                out.push((callee, sites));
            }
        }
    }
    out
}

/// `textDocument/rename`'s answer as rename steps, in the server's order: `documentChanges`
/// when it gives them, else `changes` by file.
pub(crate) fn rename_steps(texts: &dyn Texts, answer: Value) -> Result<Vec<RenameStep>, String> {
    if answer.is_null() {
        return Err("the language server has no rename for the symbol there".to_string());
    }
    let edit: WorkspaceEdit = serde_json::from_value(answer)
        .map_err(|err| format!("the language server's rename is not a workspace edit: {err}"))?;
    let replaces = |path: &Path, edits: Vec<ls_types::TextEdit>| -> Vec<TextReplace> {
        edits
            .into_iter()
            .map(|edit| {
                let at = place(texts, path, &edit.range);
                TextReplace { start: at.start, end: at.end, text: edit.new_text }
            })
            .collect()
    };
    let mut steps = Vec::new();
    match edit.document_changes {
        Some(DocumentChanges::Edits(edits)) => {
            for edit in edits {
                let Some(path) = path_of(&edit.text_document.uri) else { continue };
                let edits = edit.edits.into_iter().map(plain_edit).collect();
                steps.push(RenameStep::Edit { edits: replaces(&path, edits), path });
            }
        }
        Some(DocumentChanges::Operations(operations)) => {
            for operation in operations {
                match operation {
                    DocumentChangeOperation::Edit(edit) => {
                        let Some(path) = path_of(&edit.text_document.uri) else { continue };
                        let edits = edit.edits.into_iter().map(plain_edit).collect();
                        steps.push(RenameStep::Edit { edits: replaces(&path, edits), path });
                    }
                    DocumentChangeOperation::Op(ResourceOp::Rename(rename)) => {
                        if let (Some(from), Some(to)) = (path_of(&rename.old_uri), path_of(&rename.new_uri)) {
                            steps.push(RenameStep::Move { from, to });
                        }
                    }
                    DocumentChangeOperation::Op(ResourceOp::Create(create)) => {
                        if let Some(path) = path_of(&create.uri) {
                            steps.push(RenameStep::Create { path });
                        }
                    }
                    DocumentChangeOperation::Op(ResourceOp::Delete(delete)) => {
                        if let Some(path) = path_of(&delete.uri) {
                            steps.push(RenameStep::Delete { path });
                        }
                    }
                }
            }
        }
        None => {
            let mut changes: Vec<(PathBuf, Vec<ls_types::TextEdit>)> = edit
                .changes
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(uri, edits)| Some((path_of(&uri)?, edits)))
                .collect();
            changes.sort_by(|(a, _), (b, _)| a.cmp(b));
            for (path, edits) in changes {
                steps.push(RenameStep::Edit { edits: replaces(&path, edits), path });
            }
        }
    }
    Ok(steps)
}

fn plain_edit(edit: OneOf<ls_types::TextEdit, ls_types::AnnotatedTextEdit>) -> ls_types::TextEdit {
    match edit {
        OneOf::Left(edit) => edit,
        OneOf::Right(annotated) => annotated.text_edit,
    }
}

/// A published diagnostic in the tools' terms (1-based line and column).
pub(crate) fn diagnostic(texts: &dyn Texts, path: &Path, diagnostic: &Diagnostic) -> reins_tools::Diagnostic {
    let at = place(texts, path, &diagnostic.range).start;
    let severity = match diagnostic.severity {
        Some(DiagnosticSeverity::WARNING) => reins_tools::Severity::Warning,
        Some(DiagnosticSeverity::INFORMATION) => reins_tools::Severity::Information,
        Some(DiagnosticSeverity::HINT) => reins_tools::Severity::Hint,
        _ => reins_tools::Severity::Error,
    };
    let code = diagnostic.code.as_ref().map(|code| match code {
        ls_types::NumberOrString::Number(number) => number.to_string(),
        ls_types::NumberOrString::String(text) => text.clone(),
    });
    reins_tools::Diagnostic {
        line: at.line + 1,
        column: at.column + 1,
        severity,
        source: diagnostic.source.clone(),
        code,
        message: diagnostic.message.clone(),
    }
}

/// The word for a symbol kind.
fn kind_name(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::FILE => "file",
        SymbolKind::MODULE => "module",
        SymbolKind::NAMESPACE => "namespace",
        SymbolKind::PACKAGE => "package",
        SymbolKind::CLASS => "class",
        SymbolKind::METHOD => "method",
        SymbolKind::PROPERTY => "property",
        SymbolKind::FIELD => "field",
        SymbolKind::CONSTRUCTOR => "constructor",
        SymbolKind::ENUM => "enum",
        SymbolKind::INTERFACE => "interface",
        SymbolKind::FUNCTION => "function",
        SymbolKind::VARIABLE => "variable",
        SymbolKind::CONSTANT => "constant",
        SymbolKind::STRING => "string",
        SymbolKind::NUMBER => "number",
        SymbolKind::BOOLEAN => "boolean",
        SymbolKind::ARRAY => "array",
        SymbolKind::OBJECT => "object",
        SymbolKind::KEY => "key",
        SymbolKind::NULL => "null",
        SymbolKind::ENUM_MEMBER => "enum member",
        SymbolKind::STRUCT => "struct",
        SymbolKind::EVENT => "event",
        SymbolKind::OPERATOR => "operator",
        SymbolKind::TYPE_PARAMETER => "type parameter",
        _ => "symbol",
    }
}

#[cfg(test)]
mod disk_tests {
    use super::*;

    #[test]
    fn only_regular_files_of_a_bounded_size_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.py");
        std::fs::write(&file, "x = 1\n").unwrap();
        assert_eq!(disk_text(&file).as_deref(), Some("x = 1\n"));
        assert_eq!(disk_text(Path::new("/dev/zero")), None);
        assert_eq!(disk_text(dir.path()), None);
        assert_eq!(disk_text(&dir.path().join("missing")), None);
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert_eq!(disk_text(&fifo), None, "a FIFO is not waited on");
    }
}
