//! What a checkpoint entry holds: the on-disk contract of the two `custom` entries reins writes
//! on a session's path (pi ignores custom entries, so these sessions still open in pi).
//!
//! `reins.file_change` records the files one tool call changed, where the change landed:
//!
//! ```json
//! {"type":"custom","customType":"reins.file_change","data":{"version":1,"toolCallId":"call_1","tool":"edit",
//!  "files":[{"path":"src/lib.rs","before":{"sha256":"9f…","size":12,"text":"fn a() {}\n"},
//!            "after":{"sha256":"4c…","size":14,"text":"fn a() { 1 }\n"}}]}}
//! ```
//!
//! A side is `null` where the file did not exist (before a creation, after a deletion); `movedTo`
//! names the new place of a renamed file. A text file's creation, deletion or small edit keeps the
//! texts whole; an edit of a few lines in a larger file keeps a patch (hunks with three lines of
//! context) and only the hashes of the sides; a file that is not UTF-8 keeps its sides in the
//! session's side store, by hash (`"stored": true`).
//!
//! `reins.command` records that a tool whose effects on files cannot be known ran (a `bash`
//! command, an MCP tool): `{"version":1,"toolCallId":"call_2","tool":"bash","command":"cargo fmt"}`.

use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::patch::{self, PatchHunk};
use crate::store::{SideStore, sha256_hex};

/// `customType` of the entry recording the files one tool call changed.
pub const FILE_CHANGE: &str = "reins.file_change";
/// `customType` of the entry recording that a command ran whose file changes were not tracked.
pub const COMMAND: &str = "reins.command";

/// The version of both records' `data`.
const VERSION: u32 = FileChangeRecord::VERSION;

/// Why a record whose side's `text` is other JSON is refused.
pub(crate) const NOT_A_STRING: &str = "a side's text is not a string";

/// Sides of a text file up to this many bytes together are always kept whole.
const ALWAYS_WHOLE_BYTES: usize = 4 * 1024;
/// Larger sides are kept whole only while they are at most this many times their patch. An edit
/// of a few lines in a usual source file is a patch a fiftieth of the texts: kept whole, each edit
/// would hold the file twice, and a session of a day's edits would be megabytes that every
/// checkout and every resume reads.
const WHOLE_UP_TO_PATCH_TIMES: usize = 2;

/// The files one tool call changed (`data` of a `reins.file_change` entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeRecord {
    #[serde(default)]
    pub version: u32,
    #[serde(default)]
    pub tool_call_id: String,
    #[serde(default)]
    pub tool: String,
    pub files: Vec<FileRecord>,
}

/// One file's change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileRecord {
    /// Relative to the session's working directory when inside it, else absolute.
    pub path: String,
    /// The file was renamed to this path, with `after` as its content there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<String>,
    /// `None`: the file did not exist (the change created it).
    pub before: Option<Side>,
    /// `None`: the change deleted the file.
    pub after: Option<Side>,
    /// For text too large to keep whole: the hunks that turn `before` into `after`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Vec<PatchHunk>>,
}

/// One side of a change: the file's content, or what identifies it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// Hex SHA-256 of the bytes.
    pub sha256: String,
    pub size: u64,
    /// The whole text, for small text files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Text>,
    /// The bytes are in the side store under `sha256`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stored: bool,
}

/// A side's whole text as the session holds it: still JSON, decoded only when it is read. A
/// checkout compares most sides with the files by their hashes alone, and reads the text of only
/// the side a file ends with.
#[derive(Debug, Clone)]
pub struct Text(Json);

#[derive(Debug, Clone)]
enum Json {
    Own(Box<RawValue>),
    /// A JSON string where the session file's bytes hold it, shared with the session's tree.
    InPlace(Arc<Vec<u8>>, Range<usize>),
}

/// A command that ran (`data` of a `reins.command` entry): what it did to files is not known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandRecord {
    #[serde(default)]
    pub version: u32,
    #[serde(default)]
    pub tool_call_id: String,
    pub tool: String,
    /// The command line, for `bash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// A change that landed, as the recorder gets it: bytes, not yet a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Landed {
    pub path: String,
    pub moved_to: Option<String>,
    pub before: Option<Vec<u8>>,
    pub after: Option<Vec<u8>>,
}

/// How a side's content can be had back.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// The whole bytes.
    Bytes(Vec<u8>),
    /// Only the hash: the record's patch turns one side into the other.
    Patched,
}

impl FileChangeRecord {
    /// The version of the records this reins writes and reads.
    pub const VERSION: u32 = 1;

    /// The record of `landed`, keeping the sides of binary files in `store`.
    pub fn new(tool_call_id: &str, tool: &str, landed: &[Landed], store: &SideStore) -> std::io::Result<Self> {
        let files = landed.iter().map(|landed| FileRecord::new(landed, store)).collect::<std::io::Result<_>>()?;
        Ok(FileChangeRecord { version: VERSION, tool_call_id: tool_call_id.to_string(), tool: tool.to_string(), files })
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    pub fn parse(data: &Value) -> Result<Self, String> {
        let record: FileChangeRecord = serde_json::from_value(data.clone()).map_err(|err| err.to_string())?;
        if record.version > VERSION {
            return Err(format!("written by a newer reins (version {})", record.version));
        }
        Ok(record)
    }
}

impl CommandRecord {
    pub fn new(tool_call_id: &str, tool: &str, command: Option<&str>) -> Self {
        CommandRecord {
            version: VERSION,
            tool_call_id: tool_call_id.to_string(),
            tool: tool.to_string(),
            command: command.map(str::to_string),
        }
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    pub fn parse(data: &Value) -> Result<Self, String> {
        serde_json::from_value(data.clone()).map_err(|err| err.to_string())
    }
}

impl FileRecord {
    /// Text kept whole when small, as a patch when large; binary sides go to `store`.
    pub fn new(landed: &Landed, store: &SideStore) -> std::io::Result<Self> {
        let before = landed.before.as_deref();
        let after = landed.after.as_deref();
        let mut record = FileRecord {
            path: landed.path.clone(),
            moved_to: landed.moved_to.clone(),
            before: None,
            after: None,
            patch: None,
        };
        match (text(before), text(after)) {
            (Ok(old), Ok(new)) => {
                let size = old.map_or(0, str::len) + new.map_or(0, str::len);
                // A creation or a deletion has one side, which its patch would hold whole too.
                let patch = (size > ALWAYS_WHOLE_BYTES && old.is_some() && new.is_some())
                    .then(|| patch::make(old.unwrap_or(""), new.unwrap_or("")))
                    .filter(|patch| size > WHOLE_UP_TO_PATCH_TIMES * patch::size(patch));
                match patch {
                    None => {
                        record.before = old.map(Side::whole);
                        record.after = new.map(Side::whole);
                    }
                    Some(patch) => {
                        record.before = old.map(|text| Side::hash_only(text.as_bytes()));
                        record.after = new.map(|text| Side::hash_only(text.as_bytes()));
                        record.patch = Some(patch);
                    }
                }
            }
            _ => {
                record.before = before.map(|bytes| Side::stored(bytes, store)).transpose()?;
                record.after = after.map(|bytes| Side::stored(bytes, store)).transpose()?;
            }
        }
        Ok(record)
    }

    /// Where the file is after the change.
    pub fn final_path(&self) -> &str {
        self.moved_to.as_deref().unwrap_or(&self.path)
    }

    /// "edit src/a.rs", "create notes.md", "delete old.txt", "move a.rs → b.rs": for summaries.
    pub fn describe(&self) -> String {
        match (&self.before, &self.after, &self.moved_to) {
            (_, _, Some(to)) => format!("move {} → {to}", self.path),
            (None, _, None) => format!("create {}", self.path),
            (Some(_), None, None) => format!("delete {}", self.path),
            (Some(_), Some(_), None) => format!("edit {}", self.path),
        }
    }
}

impl Side {
    fn whole(text: &str) -> Self {
        Side { text: Some(Text::new(text)), ..Side::hash_only(text.as_bytes()) }
    }

    fn hash_only(bytes: &[u8]) -> Self {
        Side { sha256: sha256_hex(bytes), size: bytes.len() as u64, text: None, stored: false }
    }

    fn stored(bytes: &[u8], store: &SideStore) -> std::io::Result<Self> {
        store.put(bytes)?;
        Ok(Side { stored: true, ..Side::hash_only(bytes) })
    }

    /// The side's content: its text, the bytes from `store`, or [`Content::Patched`]. A text
    /// that is not what the side's hash and size say (a crafted or corrupt session) is refused:
    /// the hash is what the checkout checks the file against, so the text must be what it names.
    pub fn content(&self, store: &SideStore) -> std::io::Result<Content> {
        if let Some(text) = &self.text {
            let text = text.decode().map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err))?;
            if !self.matches(text.as_bytes()) {
                let message = "the recorded text does not match its sha256";
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, message));
            }
            return Ok(Content::Bytes(text.into_bytes()));
        }
        if self.stored {
            return store.get(&self.sha256).map(Content::Bytes);
        }
        Ok(Content::Patched)
    }

    /// Whether `bytes` are this side's content.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        bytes.len() as u64 == self.size && sha256_hex(bytes) == self.sha256
    }
}

impl Text {
    pub fn new(text: &str) -> Self {
        // A string always serializes.
        Text(Json::Own(serde_json::value::to_raw_value(text).unwrap_or_else(|_| RawValue::NULL.to_owned())))
    }

    /// The text `raw` is, read in place when it lies in `shared` (the bytes of the session file
    /// the line was read from), else copied. `None` when it is not a JSON string.
    pub(crate) fn in_place(raw: &RawValue, shared: Option<&Arc<Vec<u8>>>) -> Option<Text> {
        let json = raw.get();
        if !json.starts_with('"') {
            return None;
        }
        // Where `raw` starts in `shared`, when it is a slice of it.
        let at = shared.and_then(|bytes| {
            let start = (json.as_ptr() as usize).checked_sub(bytes.as_ptr() as usize)?;
            (start + json.len() <= bytes.len()).then_some((bytes, start))
        });
        Some(match at {
            Some((bytes, start)) => Text(Json::InPlace(Arc::clone(bytes), start..start + json.len())),
            None => Text(Json::Own(raw.to_owned())),
        })
    }

    /// The text itself.
    pub fn decode(&self) -> Result<String, serde_json::Error> {
        match &self.0 {
            Json::Own(raw) => serde_json::from_str(raw.get()),
            Json::InPlace(bytes, range) => serde_json::from_slice(&bytes[range.clone()]),
        }
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.decode().ok() == other.decode().ok()
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Json::Own(raw) => raw.serialize(serializer),
            Json::InPlace(..) => self.decode().map_err(serde::ser::Error::custom)?.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        if !raw.get().starts_with('"') {
            return Err(serde::de::Error::custom(NOT_A_STRING));
        }
        Ok(Text(Json::Own(raw)))
    }
}

/// The side as text, when it is UTF-8 (or absent).
fn text(side: Option<&[u8]>) -> Result<Option<&str>, std::str::Utf8Error> {
    side.map(std::str::from_utf8).transpose()
}

/// A one-line description of a record's changes, for a tree view: "edit src/a.rs, create b.rs".
pub fn describe_files(record: &FileChangeRecord) -> String {
    record.files.iter().map(FileRecord::describe).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    fn landed(path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> Landed {
        Landed {
            path: path.into(),
            moved_to: None,
            before: before.map(<[u8]>::to_vec),
            after: after.map(<[u8]>::to_vec),
        }
    }

    #[test]
    fn small_text_is_kept_whole_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let store = SideStore::new(dir.path().join("s.files"));
        let record =
            FileChangeRecord::new("call_1", "edit", &[landed("a.txt", Some(b"one\n"), Some(b"two\n"))], &store)
                .unwrap();
        let value = record.to_value();
        expect![[r#"{"version":1,"toolCallId":"call_1","tool":"edit","files":[{"path":"a.txt","before":{"sha256":"2c8b08da5ce60398e1f19af0e5dccc744df274b826abe585eaba68c525434806","size":4,"text":"one\n"},"after":{"sha256":"27dd8ed44a83ff94d557f9fd0412ed5a8cbca69ea04922d88c01184a07300a5a","size":4,"text":"two\n"}}]}"#]]
        .assert_eq(&value.to_string());
        assert_eq!(FileChangeRecord::parse(&value).unwrap(), record);
        assert!(!dir.path().join("s.files").exists(), "text needs no side store");
    }

    #[test]
    fn large_text_keeps_a_patch_and_binary_goes_to_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = SideStore::new(dir.path().join("s.files"));
        let old: String = (0..20_000).map(|n| format!("line {n}\n")).collect();
        let new = old.replace("line 500\n", "LINE 500\n");
        let record = FileRecord::new(&landed("big.txt", Some(old.as_bytes()), Some(new.as_bytes())), &store).unwrap();
        let patch = record.patch.as_ref().unwrap();
        assert_eq!((patch.len(), record.before.as_ref().unwrap().text.is_none()), (1, true));
        assert!(serde_json::to_string(&record).unwrap().len() < 500, "a patch, not the file");

        let binary = FileRecord::new(&landed("logo.png", None, Some(&[0x89, b'P', 0xff, 0])), &store).unwrap();
        let after = binary.after.as_ref().unwrap();
        assert!(after.stored && after.text.is_none());
        assert_eq!(after.content(&store).unwrap(), Content::Bytes(vec![0x89, b'P', 0xff, 0]));
        assert_eq!(binary.describe(), "create logo.png");
    }

    #[test]
    fn an_edit_keeps_whichever_is_smaller_with_whole_texts_preferred() {
        let dir = tempfile::tempdir().unwrap();
        let store = SideStore::new(dir.path().join("s.files"));
        let kept = |old: Option<&str>, new: Option<&str>| {
            let landed = landed("f.rs", old.map(str::as_bytes), new.map(str::as_bytes));
            let record = FileRecord::new(&landed, &store).unwrap();
            let whole =
                [&record.before, &record.after].iter().all(|side| side.as_ref().is_none_or(|s| s.text.is_some()));
            match (whole, &record.patch) {
                (true, None) => "whole",
                (false, Some(_)) => "patch",
                _ => "both or neither",
            }
        };
        let file: String = (0..400).map(|n| format!("line {n}: some content\n")).collect();
        let one_line = file.replace("line 200: some", "line 200: other");
        let most: String = file.lines().map(|line| format!("{}\n", line.to_uppercase())).collect();
        let small = "fn main() {}\n".repeat(100);
        assert_eq!(kept(Some(&file), Some(&one_line)), "patch", "a few lines of a larger file");
        assert_eq!(kept(Some(&file), Some(&most)), "whole", "the patch would be as large as the texts");
        assert_eq!(kept(Some(&small), Some(&small.replacen("main", "run", 1))), "whole", "a small file");
        assert_eq!(kept(None, Some(&file)), "whole", "a creation");
        assert_eq!(kept(Some(&file), None), "whole", "a deletion");
    }

    #[test]
    fn a_text_is_read_in_place_from_the_bytes_it_lies_in_and_copied_otherwise() {
        let line = r#"{"text":"a \"quoted\"\nline\n","other":3}"#;
        let shared = Arc::new(line.as_bytes().to_vec());
        let in_shared = std::str::from_utf8(&shared).unwrap();
        let raw = |text: &'static str| -> &'static RawValue { serde_json::from_str::<&RawValue>(text).unwrap() };
        let parsed: std::collections::HashMap<&str, &RawValue> = serde_json::from_str(in_shared).unwrap();
        let text = Text::in_place(parsed["text"], Some(&shared)).unwrap();
        assert!(matches!(&text.0, Json::InPlace(_, range) if &line[range.clone()] == parsed["text"].get()));
        assert_eq!(text.decode().unwrap(), "a \"quoted\"\nline\n");
        assert_eq!(text, Text::new("a \"quoted\"\nline\n"));
        assert_eq!(serde_json::to_string(&text).unwrap(), r#""a \"quoted\"\nline\n""#);
        // Not in the shared bytes: copied.
        let elsewhere = Text::in_place(raw(r#""x""#), Some(&shared)).unwrap();
        assert!(matches!(&elsewhere.0, Json::Own(_)));
        assert_eq!(elsewhere.decode().unwrap(), "x");
        assert!(Text::in_place(parsed["other"], Some(&shared)).is_none(), "not a string");
        assert!(serde_json::from_str::<Text>("3").is_err());
    }

    #[test]
    fn a_record_from_a_newer_reins_or_of_another_shape_is_refused() {
        let newer = serde_json::json!({"version": 9, "files": []});
        assert_eq!(FileChangeRecord::parse(&newer).unwrap_err(), "written by a newer reins (version 9)");
        assert!(FileChangeRecord::parse(&serde_json::json!({"files": 3})).is_err());
        let command = CommandRecord::parse(&serde_json::json!({"tool": "bash", "command": "make"})).unwrap();
        assert_eq!(command.command.as_deref(), Some("make"));
    }
}
