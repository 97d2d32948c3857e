//! Every JSON the server sends, built from reins values by explicit functions: errors with their
//! stable codes, workspace edits, hunks as `TextEdit`s, pending edits and their events and
//! diagnostics; agent events and messages (`reins/event`, `reins.session.messages`), sessions,
//! models come from `reins-wire`, whose shapes `reins run --json` prints too. The core types carry
//! no serde, so a field renamed in the core cannot change the protocol; `protocol-docs/` is
//! checked against these.

use std::collections::HashMap;

use reins_harness::{HarnessError, SlashCommand};
use reins_review::{Hunk, Located, Outcome, PendingEdit, Resolution, ReviewError, Subject};
use ropey::Rope;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, ErrorCode};
use tower_lsp_server::ls_types::{
    CreateFile, CreateFileOptions, DeleteFile, DeleteFileOptions, Diagnostic, DiagnosticSeverity,
    DocumentChangeOperation, DocumentChanges, NumberOrString, OneOf, OptionalVersionedTextDocumentIdentifier, Range,
    RenameFile, RenameFileOptions, ResourceOp, TextDocumentEdit, TextEdit, Uri, WorkspaceEdit,
};

pub use reins_wire::*;

use crate::documents::{self, PositionEncoding};

/// Longest piece of text quoted in a diagnostic message.
const QUOTE_CHARS: usize = 40;

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

pub fn review_error(err: ReviewError) -> Error {
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

/// One file of a change of several: what the editor is to do with it, in order.
pub enum FileOperation {
    /// Edits of a document (`version` as in [`document_edit`]).
    Edit {
        uri: Uri,
        version: Option<i32>,
        edits: Vec<TextEdit>,
    },
    /// A new file (failing if it exists), then its content.
    Create {
        uri: Uri,
        content: Option<TextEdit>,
    },
    Rename {
        from: Uri,
        to: Uri,
    },
    Delete {
        uri: Uri,
    },
}

/// Several files changed by one `workspace/applyEdit`, in order: `CreateFile`, `RenameFile` and
/// `DeleteFile` beside versioned `TextDocumentEdit`s, none of them overwriting a file.
pub fn file_operations(operations: Vec<FileOperation>) -> WorkspaceEdit {
    let never_overwrite = || Some(false);
    let changes = operations
        .into_iter()
        .flat_map(|operation| match operation {
            FileOperation::Edit { uri, version, edits } => vec![DocumentChangeOperation::Edit(TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier { uri, version },
                edits: edits.into_iter().map(OneOf::Left).collect(),
            })],
            FileOperation::Create { uri, content } => match create_file_edit(uri, content).document_changes {
                Some(DocumentChanges::Operations(operations)) => operations,
                _ => Vec::new(),
            },
            FileOperation::Rename { from, to } => vec![DocumentChangeOperation::Op(ResourceOp::Rename(RenameFile {
                old_uri: from,
                new_uri: to,
                options: Some(RenameFileOptions { overwrite: never_overwrite(), ignore_if_exists: Some(false) }),
                annotation_id: None,
            }))],
            FileOperation::Delete { uri } => vec![DocumentChangeOperation::Op(ResourceOp::Delete(DeleteFile {
                uri,
                options: Some(DeleteFileOptions { recursive: Some(false), ignore_if_not_exists: Some(false) }),
                annotation_id: None,
            }))],
        })
        .collect();
    WorkspaceEdit {
        changes: None,
        document_changes: Some(DocumentChanges::Operations(changes)),
        change_annotations: None,
    }
}

/// A file a restore in the editor proposes back (`edits` of `reins.session.navigate` and
/// `reins.session.fork` with `files: true`): the pending edit that holds it, and what it does
/// (`restore`, `merge`, `create`, `delete`).
pub fn checkout_edit(id: &str, path: &str, uri: Option<String>, action: &str) -> Value {
    json!({"id": id, "path": path, "uri": uri, "action": action})
}

/// A file a restore in the editor leaves as it is (`conflicts` of `reins.session.navigate` and
/// `reins.session.fork` with `files: true`): where the user's edits and the agent's change meet,
/// as whole lines of the file as it is now, and why.
pub fn checkout_conflict(
    path: &str,
    uri: Option<String>,
    entry_id: Option<&str>,
    range: Option<Range>,
    reason: &str,
    change: Option<&str>,
) -> Value {
    json!({"path": path, "uri": uri, "entryId": entry_id, "range": range, "reason": reason, "change": change})
}

/// The params of a `reins/event` notification.
pub fn event_params(session_id: &str, run_id: &str, seq: u64, event: Value) -> Value {
    json!({ "sessionId": session_id, "runId": run_id, "seq": seq, "event": event })
}

/// A subagent's event names the session and `task` call it works for.
pub fn with_parent(mut params: Value, parent: Option<&reins_harness::Parent>) -> Value {
    if let (Some(parent), Value::Object(map)) = (parent, &mut params) {
        map.insert("parentSessionId".into(), json!(parent.session_id));
        map.insert("parentToolCallId".into(), json!(parent.tool_call_id));
    }
    params
}

/// The ranges of `hunks` in `text` (the text they were computed from), in `encoding`.
pub fn hunk_ranges(text: &str, hunks: &[Hunk], encoding: PositionEncoding) -> Vec<Range> {
    let position = |offset: usize, line: usize| documents::position_in(text, offset, line, encoding);
    let range = |hunk: &Hunk| Range {
        start: position(hunk.old_bytes.start, hunk.line),
        end: position(hunk.old_bytes.end, hunk.end_line),
    };
    hunks.iter().map(range).collect()
}

/// One `TextEdit` per hunk, in order; they apply together to `text`, the text the hunks were
/// computed from.
pub fn text_edits(text: &str, hunks: &[Hunk], encoding: PositionEncoding) -> Vec<TextEdit> {
    let ranges = hunk_ranges(text, hunks, encoding);
    hunks.iter().zip(ranges).map(|(hunk, range)| TextEdit { range, new_text: hunk.new_text.clone() }).collect()
}

/// A pending edit as `edit_proposed` and `reins.edit.list` show it; `uri` and `ranges` (one per
/// hunk) place its file in the editor.
pub fn pending_edit(edit: &PendingEdit, uri: &str, ranges: &[Range]) -> Value {
    let mut value = json!({
        "id": edit.id,
        "sessionId": edit.session_id,
        "runId": edit.run_id,
        // A restore of files to an earlier entry comes from no tool call.
        "toolCallId": (!edit.tool_call_id.is_empty()).then_some(&edit.tool_call_id),
        "tool": edit.tool,
    });
    match &edit.subject {
        Subject::Command(command) => {
            value["command"] = json!(command.command);
            value["cwd"] = json!(command.cwd.display().to_string());
            value["notes"] = json!([]);
        }
        Subject::ServerCall(call) => {
            value["call"] = json!({"server": call.server, "tool": call.tool, "arguments": call.arguments});
            value["notes"] = json!([]);
        }
        Subject::Files(files) => {
            // One file per pending edit on this protocol (a patch of several is several).
            let Some(file) = files.first() else { return value };
            let hunks: Vec<Value> = file
                .hunks
                .iter()
                .zip(ranges)
                .map(|(hunk, range)| {
                    json!({"index": hunk.index, "range": range, "oldText": hunk.old_text, "newText": hunk.new_text})
                })
                .collect();
            value["uri"] = json!(uri);
            value["version"] = json!(file.version);
            value["create"] = json!(file.creates());
            value["delete"] = json!(file.delete);
            value["newUri"] = json!(file.moved_to.as_deref().and_then(crate::review::path_uri));
            value["hunks"] = json!(hunks);
            value["diff"] = json!(file.diff);
            value["notes"] = json!(file.notes);
        }
    }
    value["comments"] = comments(edit);
    value["resolves"] = edit
        .resolves
        .iter()
        .map(|comment| json!({"id": comment.edit, "hunk": comment.hunk, "comment": comment.text}))
        .collect();
    value
}

/// The user's comments on the hunks of a pending edit: `[{hunk, comment}]`, by hunk.
pub fn comments(edit: &PendingEdit) -> Value {
    edit.comments.iter().map(|(hunk, comment)| json!({"hunk": hunk, "comment": comment})).collect()
}

/// The result of `reins.edit.comment`: the edit's comments as they are now.
pub fn edit_comments(edit: &PendingEdit) -> Value {
    json!({ "id": edit.id, "comments": comments(edit) })
}

/// The `edit_commented` event: hunk `hunk` of `edit` has this comment now (`null`: none), at
/// `range`, where the hunk is in the buffer now.
pub fn edit_commented(edit: &PendingEdit, hunk: usize, range: Option<Range>) -> Value {
    json!({
        "type": "edit_commented",
        "id": edit.id,
        "hunk": hunk,
        "comment": edit.comments.get(&hunk),
        "range": range,
    })
}

/// The `edit_proposed` event, around a [`pending_edit`].
pub fn edit_proposed(edit: Value) -> Value {
    json!({ "type": "edit_proposed", "edit": edit })
}

/// The `edit_resolved` event: `hunks` for the outcomes that applied something, `reason` for the
/// others (and for `partially_applied`, the user's reason for the hunks left out, if any).
pub fn edit_resolved(resolution: &Resolution) -> Value {
    let mut event = json!({ "type": "edit_resolved", "id": resolution.id, "outcome": resolution.outcome.as_str() });
    if matches!(resolution.outcome, Outcome::Applied | Outcome::PartiallyApplied) {
        event["hunks"] = json!(resolution.hunks);
    }
    if let Some(reason) = &resolution.reason {
        event["reason"] = json!(reason);
    }
    event
}

/// The result of `reins.edit.accept`: what was decided, with the hunks applied.
pub fn edit_accepted(resolution: &Resolution) -> Value {
    json!({ "id": resolution.id, "outcome": resolution.outcome.as_str(), "hunks": resolution.hunks })
}

/// The result of `reins.edit.reject`.
pub fn edit_rejected(resolution: &Resolution) -> Value {
    json!({ "id": resolution.id, "outcome": resolution.outcome.as_str() })
}

/// One Information diagnostic (source `reins`, code = the pending id) per hunk of a pending edit
/// of one file, at `ranges`.
pub fn review_diagnostics(edit: &PendingEdit, ranges: &[Range], conflicts: &[usize]) -> Vec<Diagnostic> {
    let Subject::Files(files) = &edit.subject else { return Vec::new() };
    let Some(file) = files.first() else { return Vec::new() };
    file.hunks
        .iter()
        .zip(ranges)
        .map(|(hunk, range)| {
            let what = match (hunk.old_text.is_empty(), hunk.new_text.is_empty()) {
                (true, _) => format!("insert {}", quote(&hunk.new_text)),
                (false, true) => format!("delete {}", quote(&hunk.old_text)),
                (false, false) => format!("replace {} with {}", quote(&hunk.old_text), quote(&hunk.new_text)),
            };
            // Numbered from 1, as people count and as the editors' own review labels show them.
            let which = format!("agent edit {} (hunk {} of {})", edit.id, hunk.index + 1, file.hunks.len());
            let mut message = match conflicts.contains(&hunk.index) {
                true => format!("{which}: {what}; you changed these lines since, so accepting it will be refused"),
                false => format!("{which}: {what}; accept, reject or comment on it with a code action"),
            };
            if let Some(comment) = edit.comments.get(&hunk.index) {
                message.push_str(&format!("\nyour comment: {}", reins_review::comments::one_line(comment)));
            }
            Diagnostic {
                range: *range,
                severity: Some(DiagnosticSeverity::INFORMATION),
                code: Some(NumberOrString::String(edit.id.clone())),
                source: Some("reins".to_string()),
                message,
                ..Diagnostic::default()
            }
        })
        .collect()
}

/// The ranges of hunks located in the current text ([`reins_review::locate`]): where each is, or
/// the whole line near which one conflicts; and the indexes of those in conflict.
pub fn located_ranges(
    text: &Rope,
    hunks: &[Hunk],
    located: &[Located],
    encoding: PositionEncoding,
) -> (Vec<Range>, Vec<usize>) {
    let mut conflicts = Vec::new();
    let ranges = hunks
        .iter()
        .zip(located)
        .map(|(hunk, located)| match located {
            Located::At(bytes) => documents::range_of(text, bytes.clone(), encoding),
            Located::Conflict { line } => {
                conflicts.push(hunk.index);
                let line = (*line).min(text.len_lines().saturating_sub(1));
                let start = text.line_to_byte(line);
                let end = text.try_line_to_byte(line + 1).unwrap_or(text.len_bytes());
                documents::range_of(text, start..end, encoding)
            }
        })
        .collect();
    (ranges, conflicts)
}

/// The params of `reins/diagnostics`: the documents asked about, or (`None`) every open one.
pub fn diagnostics_request(uris: Option<&[String]>) -> Value {
    match uris {
        Some(uris) => json!({ "uris": uris }),
        None => json!({}),
    }
}

/// The params of `reins/languageServer`: a request for one of the editor's own servers, about
/// the document `uri` (about none in particular when `None`).
pub fn language_server_request(uri: Option<&str>, method: &str, params: Value) -> Value {
    match uri {
        Some(uri) => json!({ "uri": uri, "method": method, "params": params }),
        None => json!({ "method": method, "params": params }),
    }
}

/// The first line of `text`, shortened, in backticks.
fn quote(text: &str) -> String {
    let mut lines = text.lines().filter(|line| !line.trim().is_empty());
    let first = lines.next().unwrap_or("").trim();
    let mut shown = reins_ai::shorten(first, QUOTE_CHARS).into_owned();
    if lines.next().is_some() && !shown.ends_with('…') {
        shown.push('…');
    }
    if shown.is_empty() { "a line break".to_string() } else { format!("`{shown}`") }
}

/// The result of `reins.command.list`: every slash command, built-ins, templates, skills.
pub fn slash_commands(commands: &[SlashCommand]) -> Value {
    let commands: Vec<Value> = commands
        .iter()
        .map(|command| {
            json!({
                "name": command.name,
                "description": command.description,
                "argumentHint": command.argument_hint,
                "kind": command.kind.as_str(),
            })
        })
        .collect();
    json!({ "commands": commands })
}

/// The result of `reins.worktree.list`: the worktree agents of the workspace's repository.
pub fn worktree_agents(agents: &[reins_harness::WorktreeAgent]) -> Value {
    let agents: Vec<Value> = agents
        .iter()
        .map(|agent| {
            json!({
                "id": agent.worktree.id,
                "dir": agent.worktree.dir,
                "status": if agent.running { "running" } else { "finished" },
                "cost": agent.cost,
                "changed": agent.changed,
            })
        })
        .collect();
    json!({ "agents": agents })
}

#[cfg(test)]
mod tests {
    use std::ops::Range as Span;
    use std::path::PathBuf;
    use std::time::Duration;

    use expect_test::{Expect, expect};
    use proptest::prelude::*;
    use reins_review::{FileDiff, apply_hunks, hunks};
    use tower_lsp_server::ls_types::Position;

    use super::*;

    /// The edits that turn `old` into `new`, through the review core's hunks and this module.
    fn edits_of(old: &str, new: &str, encoding: PositionEncoding) -> (Vec<Hunk>, Vec<TextEdit>) {
        let hunks = hunks(old, new, NO_DEADLINE);
        let edits = text_edits(old, &hunks, encoding);
        (hunks, edits)
    }

    /// `text` with `edits` applied as an LSP client applies them: every range refers to `text`,
    /// edits must not overlap, and insertions at the same position keep their order. A position
    /// past the end of its line means the line's end, and a line past the end means the end of
    /// the text, as the specification says; a position inside a character is an error. Written
    /// without the server's position converter, to check it.
    fn apply_text_edits(text: &str, edits: &[TextEdit], encoding: PositionEncoding) -> Result<String, String> {
        let starts = line_starts(text);
        let mut spans = Vec::with_capacity(edits.len());
        for (number, edit) in edits.iter().enumerate() {
            let start =
                byte_at(text, &starts, edit.range.start, encoding).map_err(|why| format!("edit {number}: {why}"))?;
            let end =
                byte_at(text, &starts, edit.range.end, encoding).map_err(|why| format!("edit {number}: {why}"))?;
            if end < start {
                return Err(format!("edit {number}: its range ends before it starts"));
            }
            spans.push((start..end, number));
        }
        // Stable: insertions at one position stay in the order the client received them.
        spans.sort_by_key(|(span, _)| (span.start, span.end));
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut previous = None;
        for (span, number) in spans {
            if span.start < copied {
                let other = previous.unwrap_or(number);
                return Err(format!("edits {other} and {number} overlap"));
            }
            out.push_str(&text[copied..span.start]);
            out.push_str(&edits[number].new_text);
            copied = span.end;
            previous = Some(number);
        }
        out.push_str(&text[copied..]);
        Ok(out)
    }

    /// Byte offset of the start of every LSP line of `text`.
    fn line_starts(text: &str) -> Vec<usize> {
        let mut starts = vec![0];
        let bytes = text.as_bytes();
        for (at, &byte) in bytes.iter().enumerate() {
            if byte == b'\n' || (byte == b'\r' && bytes.get(at + 1) != Some(&b'\n')) {
                starts.push(at + 1);
            }
        }
        starts
    }

    /// The byte offset of an LSP position in `text`, clamped as the specification says.
    fn byte_at(text: &str, starts: &[usize], position: Position, encoding: PositionEncoding) -> Result<usize, String> {
        let Some(&line_start) = starts.get(position.line as usize) else {
            return Ok(text.len());
        };
        let line_end = starts.get(position.line as usize + 1).copied().unwrap_or(text.len());
        let content = text[line_start..line_end].trim_end_matches(['\n', '\r']);
        let wanted = position.character as usize;
        let mut units = 0;
        for (at, character) in content.char_indices() {
            if units == wanted {
                return Ok(line_start + at);
            }
            units += match encoding {
                PositionEncoding::Utf16 => character.len_utf16(),
                PositionEncoding::Utf8 => character.len_utf8(),
            };
            if units > wanted {
                return Err(format!("{}:{} is inside the character {character:?}", position.line, position.character));
            }
        }
        Ok(line_start + content.len())
    }

    const NO_DEADLINE: Duration = Duration::from_secs(60);

    /// Renders the hunks of `old` → `new` one a line, as `#index line:col..line:col "old" -> "new"`,
    /// after checking that their edits turn `old` into `new`.
    fn check_hunks(old: &str, new: &str, encoding: PositionEncoding, expected: Expect) {
        let (hunks, edits) = edits_of(old, new, encoding);
        assert_eq!(apply_text_edits(old, &edits, encoding).as_deref(), Ok(new));
        let rendered: Vec<String> = hunks
            .iter()
            .zip(&edits)
            .map(|(hunk, edit)| {
                let Range { start, end } = edit.range;
                format!(
                    "#{} {}:{}..{}:{} {:?} -> {:?}",
                    hunk.index, start.line, start.character, end.line, end.character, hunk.old_text, hunk.new_text
                )
            })
            .collect();
        expected.assert_eq(&rendered.join("\n"));
    }

    fn utf16(old: &str, new: &str, expected: Expect) {
        check_hunks(old, new, PositionEncoding::Utf16, expected);
    }

    #[test]
    fn a_changed_word_is_an_edit_of_that_word() {
        utf16(
            "fn main() {\n    let count = 1;\n}\n",
            "fn main() {\n    let total = 1;\n}\n",
            expect![[r##"#0 1:8..1:13 "count" -> "total""##]],
        );
    }

    #[test]
    fn inserted_and_deleted_lines_are_whole_lines() {
        utf16("a\nb\nc\n", "a\nnew\nb\nc\n", expect![[r##"#0 1:0..1:0 "" -> "new\n""##]]);
        utf16("a\nb\nc\nd\n", "a\nd\n", expect![[r##"#0 1:0..3:0 "b\nc\n" -> """##]]);
        utf16("a\nb\n", "", expect![[r##"#0 0:0..2:0 "a\nb\n" -> """##]]);
        utf16("", "a\nb", expect![[r##"#0 0:0..0:0 "" -> "a\nb""##]]);
    }

    #[test]
    fn a_large_replacement_spans_exactly_its_lines() {
        utf16(
            "keep\none\ntwo\nthree\nfour\nkeep\n",
            "keep\n1\n2\n3\n4\nkeep\n",
            expect![[r##"#0 1:0..5:0 "one\ntwo\nthree\nfour\n" -> "1\n2\n3\n4\n""##]],
        );
    }

    #[test]
    fn hunks_are_separated_by_unchanged_lines() {
        utf16(
            "a = 1\nb = 2\nc = 3\nd = 4\n",
            "a = 10\nb = 2\nc = 3\nd = 40\n",
            expect![[r##"
            #0 0:4..0:5 "1" -> "10"
            #1 3:4..3:5 "4" -> "40""##]],
        );
    }

    #[test]
    fn columns_count_utf16_units_or_bytes() {
        check_hunks("😀é a\n", "😀é b\n", PositionEncoding::Utf16, expect![[r##"#0 0:4..0:5 "a" -> "b""##]]);
        check_hunks("😀é a\n", "😀é b\n", PositionEncoding::Utf8, expect![[r##"#0 0:7..0:8 "a" -> "b""##]]);
    }

    #[test]
    fn line_breaks_are_lf_crlf_and_lone_cr() {
        utf16("a\rb\rc", "a\rB\rc", expect![[r##"#0 1:0..1:1 "b" -> "B""##]]);
        // Between "\r" and "\n" is no LSP position, so the edit takes the whole "\r\n".
        utf16("a\r\nb\r\n", "a\nb\r\n", expect![[r##"#0 0:1..1:0 "\r\n" -> "\n""##]]);
        utf16("a\nb\n", "a\r\nb\n", expect![[r##"#0 0:1..0:1 "" -> "\r""##]]);
    }

    #[test]
    fn a_missing_final_newline_is_a_change_of_the_last_line() {
        utf16("a\nb", "a\nb\n", expect![[r##"#0 1:1..1:1 "" -> "\n""##]]);
        utf16("a\nb\n", "a\nb", expect![[r##"#0 1:1..2:0 "\n" -> """##]]);
    }

    #[test]
    fn hunks_stay_in_order_when_the_diff_slides_lines() {
        utf16(
            "a\n\r\naa\n\r\n\naaaaa",
            "a\n\na\na\r\n\naaaaa",
            expect![[r##"
            #0 1:0..4:0 "\r\naa\n\r\n" -> ""
            #1 5:0..5:0 "" -> "a\na\r\n\n""##]],
        );
    }

    #[test]
    fn identical_texts_have_no_hunks() {
        utf16("same\r\nthing", "same\r\nthing", expect![""]);
        utf16("", "", expect![""]);
    }

    /// An edit: start (line, character), end, new text.
    type Edit<'a> = ((u32, u32), (u32, u32), &'a str);

    /// Applies `edits` to `text` and renders the result or the error.
    fn check_apply(text: &str, edits: &[Edit<'_>], expected: Expect) {
        let edits: Vec<TextEdit> = edits
            .iter()
            .map(|(start, end, new_text)| TextEdit {
                range: Range { start: Position::new(start.0, start.1), end: Position::new(end.0, end.1) },
                new_text: new_text.to_string(),
            })
            .collect();
        let result = match apply_text_edits(text, &edits, PositionEncoding::Utf16) {
            Ok(text) => format!("{text:?}"),
            Err(why) => format!("error: {why}"),
        };
        expected.assert_eq(&result);
    }

    #[test]
    fn text_edits_apply_as_a_client_applies_them() {
        // Insertions at one position keep their order; ranges refer to the original text.
        check_apply(
            "ab\ncd",
            &[((1, 0), (1, 0), "1"), ((0, 0), (0, 1), "A"), ((1, 0), (1, 0), "2")],
            expect![[r#""Ab\n12cd""#]],
        );
        // Past the end of a line is its end (before "\r\n"); past the last line is the end.
        check_apply("ab\r\ncd", &[((0, 9), (0, 9), "!"), ((7, 0), (8, 0), "?")], expect![[r#""ab!\r\ncd?""#]]);
        check_apply("abcd", &[((0, 0), (0, 2), "x"), ((0, 1), (0, 3), "y")], expect!["error: edits 0 and 1 overlap"]);
        check_apply("😀", &[((0, 1), (0, 2), "x")], expect!["error: edit 0: 0:1 is inside the character '😀'"]);
        check_apply("abc", &[((0, 2), (0, 1), "x")], expect!["error: edit 0: its range ends before it starts"]);
    }

    /// The exact byte offset of `position` in `text`, or `None` if the position is not exactly
    /// on a character boundary of a line (past a line's end, between `\r` and `\n`, inside a
    /// character). Written without the module's line index, to check it.
    fn exact_offset(text: &str, position: Position, encoding: PositionEncoding) -> Option<usize> {
        let (mut line, mut column) = (0u32, 0u32);
        let mut chars = text.char_indices().peekable();
        loop {
            let offset = chars.peek().map_or(text.len(), |(at, _)| *at);
            if (line, column) == (position.line, position.character) {
                return Some(offset);
            }
            let (_, character) = chars.next()?;
            if character == '\r' && chars.peek().is_some_and(|(_, next)| *next == '\n') {
                chars.next();
            }
            if character == '\r' || character == '\n' {
                line += 1;
                column = 0;
            } else {
                column += match encoding {
                    PositionEncoding::Utf16 => character.len_utf16() as u32,
                    PositionEncoding::Utf8 => character.len_utf8() as u32,
                };
            }
        }
    }

    /// The whole lines of `text` (each with its line break) that lie inside the byte range `span`.
    fn whole_lines_within(text: &str, span: Span<usize>) -> Vec<&str> {
        let mut lines = Vec::new();
        let mut start = 0;
        let mut chars = text.char_indices().peekable();
        while let Some((at, character)) = chars.next() {
            let mut end = at + character.len_utf8();
            if character == '\r' && chars.peek().is_some_and(|(_, next)| *next == '\n') {
                chars.next();
                end += 1;
            }
            if character == '\r' || character == '\n' || end == text.len() {
                if span.start <= start && end <= span.end {
                    lines.push(&text[start..end]);
                }
                start = end;
            }
        }
        lines
    }

    /// The properties every diff must have as `TextEdit`s, in both encodings:
    /// - the edits turn `old` into `new`, and their positions are exact (no clamping needed);
    /// - the edits are in order and do not overlap or touch;
    /// - each hunk's `old_text` is what its edit's range and `old_bytes` cover;
    /// - no unchanged line lies inside an edit: no whole line of `old` inside an edit's range is
    ///   also a whole line of `new` inside the text that edit puts in its place (otherwise the
    ///   edit could be split around that line);
    /// - applying any subset of hunks with `apply_hunks` equals applying their `TextEdit`s.
    ///
    /// (The review core checks the properties that do not depend on positions.)
    fn check_properties(old: &str, new: &str, subset: u64) {
        for encoding in [PositionEncoding::Utf16, PositionEncoding::Utf8] {
            let (hunks, edits) = edits_of(old, new, encoding);
            assert_eq!(apply_text_edits(old, &edits, encoding).as_deref(), Ok(new), "{encoding:?}");
            let mut previous_end = None;
            let mut shift: isize = 0;
            for (number, hunk) in hunks.iter().enumerate() {
                assert_eq!(hunk.index, number);
                let start = exact_offset(old, edits[number].range.start, encoding).expect("exact start");
                let end = exact_offset(old, edits[number].range.end, encoding).expect("exact end");
                assert_eq!(start..end, hunk.old_bytes, "{encoding:?} {hunk:?}");
                assert_eq!(&old[start..end], hunk.old_text);
                assert_ne!(hunk.old_text, hunk.new_text);
                if let Some(previous_end) = previous_end {
                    assert!(previous_end < start, "hunks overlap or touch: {hunks:?}");
                }
                previous_end = Some(end);

                let new_start = (start as isize + shift) as usize;
                let removed = whole_lines_within(old, start..end);
                let inserted = whole_lines_within(new, new_start..new_start + hunk.new_text.len());
                for line in &removed {
                    assert!(!inserted.contains(line), "unchanged line {line:?} inside {hunk:?}");
                }
                shift += hunk.new_text.len() as isize - hunk.old_text.len() as isize;
            }
            let chosen: Vec<usize> = (0..hunks.len()).filter(|index| subset & (1 << (index % 64)) != 0).collect();
            let chosen_edits: Vec<TextEdit> = chosen.iter().map(|&index| edits[index].clone()).collect();
            assert_eq!(Ok(apply_hunks(old, &hunks, &chosen)), apply_text_edits(old, &chosen_edits, encoding));
        }
    }

    const PIECES: &[&str] = &["a", "b", "é", "中", "😀", " ", "\n", "\r\n", "\r", "ab\n", "a\r\n"];

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES), 0..24).prop_map(|pieces| pieces.concat())
    }

    /// An old text and a new one made from it by a few splices of pieces, so that they share
    /// lines, as real edits do.
    fn edited_pair() -> impl Strategy<Value = (String, String)> {
        let pieces = || prop::collection::vec(prop::sample::select(PIECES), 0..30);
        let splice = (any::<usize>(), 0..4usize, prop::collection::vec(prop::sample::select(PIECES), 0..4));
        (pieces(), prop::collection::vec(splice, 0..4)).prop_map(|(old, splices)| {
            let mut new = old.clone();
            for (at, removed, inserted) in splices {
                let at = at % (new.len() + 1);
                let removed = removed.min(new.len() - at);
                new.splice(at..at + removed, inserted);
            }
            (old.concat(), new.concat())
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn text_edits_turn_old_into_new_minimally(pair in prop_oneof![edited_pair(), (text(), text())], subset in any::<u64>()) {
            check_properties(&pair.0, &pair.1, subset);
        }
    }

    #[test]
    fn resolved_events_carry_hunks_or_a_reason() {
        let resolution = |outcome, hunks: Vec<usize>, reason: Option<&str>| Resolution {
            id: "e1".into(),
            session_id: "s".into(),
            run_id: "r".into(),
            outcome,
            hunks,
            reason: reason.map(str::to_string),
        };
        assert_eq!(
            edit_resolved(&resolution(Outcome::PartiallyApplied, vec![0], None)).to_string(),
            r#"{"type":"edit_resolved","id":"e1","outcome":"partially_applied","hunks":[0]}"#
        );
        assert_eq!(
            edit_resolved(&resolution(Outcome::PartiallyApplied, vec![0], Some("not that one"))).to_string(),
            r#"{"type":"edit_resolved","id":"e1","outcome":"partially_applied","hunks":[0],"reason":"not that one"}"#
        );
        assert_eq!(
            edit_resolved(&resolution(Outcome::Rejected, vec![], Some("no"))).to_string(),
            r#"{"type":"edit_resolved","id":"e1","outcome":"rejected","reason":"no"}"#
        );
    }

    #[test]
    fn diagnostics_quote_the_change() {
        let change = reins_agent::FileChange {
            path: PathBuf::from("/w/a"),
            before: Some("x = 41\n".into()),
            after: "x = 42\n".into(),
            version: Some(1),
            notes: Vec::new(),
            ..reins_agent::FileChange::default()
        };
        let file = FileDiff::new(&change, &|_| "a".to_string(), 0);
        let ranges = hunk_ranges("x = 41\n", &file.hunks, PositionEncoding::Utf16);
        let edit = PendingEdit {
            id: "e1".into(),
            session_id: "s".into(),
            run_id: "r".into(),
            tool_call_id: "c".into(),
            tool: "edit".into(),
            subject: Subject::Files(vec![file]),
            comments: Default::default(),
            resolves: Vec::new(),
        };
        let diagnostics = review_diagnostics(&edit, &ranges, &[]);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(
            diagnostics[0].message,
            "agent edit e1 (hunk 1 of 1): replace `41` with `42`; accept, reject or comment on it with a code action"
        );
        let conflicting = review_diagnostics(&edit, &ranges, &[0]);
        assert_eq!(
            conflicting[0].message,
            "agent edit e1 (hunk 1 of 1): replace `41` with `42`; you changed these lines since, so accepting it will be refused"
        );
        assert_eq!(diagnostics[0].range, ranges[0]);
        assert_eq!((ranges[0].start.character, ranges[0].end.character), (4, 6));
    }
}
