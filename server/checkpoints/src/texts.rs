//! The whole texts of recorded changes that keep only a patch, for what shows a change as two
//! texts (a session replayed to an ACP client shows each edit as its diff): a file's changes
//! form a chain, each one's `after` the next one's `before`, so a text the chain holds somewhere
//! (a creation's, a small edit's, or the file as it is now at the chain's end) gives its
//! neighbours by their patches. A text is given to a side only when it hashes to the side.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use crate::patch;
use crate::record::{FileChangeRecord, FileRecord, Side, Text};

/// A file's content as the walk along its changes knows it.
#[derive(Clone)]
enum Known {
    Text(String),
    /// No file there.
    Absent,
    Unknown,
}

/// Gives each patch-only side of `records` (oldest first, on one path of a session) its whole
/// text where its chain holds one; `now` reads a recorded path's file as it is now when it has
/// the given size (see [`read_sized`]), for the patch-only sides that end the chains.
pub fn rebuild_texts(records: &mut [FileChangeRecord], now: &mut dyn FnMut(&str, u64) -> Option<Vec<u8>>) {
    // Back from the files as they are now.
    let mut known: HashMap<String, Known> = HashMap::new();
    for file in records.iter_mut().rev().flat_map(|record| record.files.iter_mut().rev()) {
        let after = known.remove(file.final_path()).unwrap_or_else(|| match &file.after {
            Some(side) if side.text.is_none() && !side.stored => now(file.final_path(), side.size)
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .map_or(Known::Unknown, Known::Text),
            // Its own text, or none to give.
            _ => Known::Unknown,
        });
        fill(&mut file.after, &after);
        let before = step(file, &file.after, &file.before, true);
        fill(&mut file.before, &before);
        known.insert(file.path.clone(), before);
    }
    // Forward from the texts the records keep.
    let mut known: HashMap<String, Known> = HashMap::new();
    for file in records.iter_mut().flat_map(|record| record.files.iter_mut()) {
        let before = known.remove(&file.path).unwrap_or(Known::Unknown);
        fill(&mut file.before, &before);
        let after = step(file, &file.before, &file.after, false);
        fill(&mut file.after, &after);
        if file.moved_to.is_some() {
            known.insert(file.path.clone(), Known::Absent);
        }
        known.insert(file.final_path().to_string(), after);
    }
}

/// The bytes of the regular file at `path` when it is `size` bytes long, else `None`: a FIFO,
/// a device or a file grown since is neither waited on nor read whole.
pub fn read_sized(path: &Path, size: u64) -> Option<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() != size {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).ok()?);
    file.by_ref().take(size).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The text of side `to` of `file`, from its text or from side `from`'s by the patch (`reverse`:
/// undone).
fn step(file: &FileRecord, from: &Option<Side>, to: &Option<Side>, reverse: bool) -> Known {
    let Some(to) = to else { return Known::Absent };
    if let Some(text) = to.text.as_ref().and_then(|text| text.decode().ok()) {
        return Known::Text(text);
    }
    let base = match from {
        None => Some(String::new()),
        Some(side) => side.text.as_ref().and_then(|text| text.decode().ok()),
    };
    let patched = base.zip(file.patch.as_deref()).and_then(|(base, hunks)| patch::apply(&base, hunks, reverse).ok());
    patched.filter(|text| to.matches(text.as_bytes())).map_or(Known::Unknown, Known::Text)
}

/// Gives `side` the text `known` when it has none and the text is its content.
fn fill(side: &mut Option<Side>, known: &Known) {
    if let (Some(side), Known::Text(text)) = (side, known)
        && side.text.is_none()
        && !side.stored
        && side.matches(text.as_bytes())
    {
        side.text = Some(Text::new(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Landed;
    use crate::store::SideStore;

    /// A 400-line file edited one line at a time: every edit keeps a patch only.
    fn texts() -> Vec<String> {
        let text: String = (0..400).map(|n| format!("line {n}\n")).collect();
        let first = text.replace("line 100\n", "line 100 edited\n");
        let second = first.replace("line 300\n", "line 300 edited\n");
        vec![text, first, second]
    }

    fn records(texts: &[String], created: bool) -> Vec<FileChangeRecord> {
        let dir = tempfile::tempdir().unwrap();
        let store = SideStore::new(dir.path().join("s.files"));
        let mut landed = Vec::new();
        if created {
            landed.push((None, Some(texts[0].clone())));
        }
        landed.extend(texts.windows(2).map(|pair| (Some(pair[0].clone()), Some(pair[1].clone()))));
        landed
            .into_iter()
            .map(|(before, after): (Option<String>, Option<String>)| {
                let landed = Landed {
                    path: "f.rs".into(),
                    moved_to: None,
                    before: before.map(String::into_bytes),
                    after: after.map(String::into_bytes),
                };
                FileChangeRecord::new("call", "edit", &[landed], &store).unwrap()
            })
            .collect()
    }

    /// Each record's sides as texts, `?` where none is known.
    fn shown(records: &[FileChangeRecord]) -> Vec<[String; 2]> {
        let text = |side: &Option<Side>| match side {
            None => "(none)".to_string(),
            Some(side) => {
                side.text.as_ref().map_or("?".to_string(), |text| text.decode().unwrap().lines().count().to_string())
            }
        };
        records.iter().map(|record| [text(&record.files[0].before), text(&record.files[0].after)]).collect()
    }

    #[test]
    fn forward_from_a_creation_every_edit_gets_its_texts() {
        let texts = texts();
        let mut records = records(&texts, true);
        assert_eq!(shown(&records)[1], ["?", "?"], "an edit of one line keeps a patch");
        rebuild_texts(&mut records, &mut |_, _| None);
        assert_eq!(shown(&records), [["(none)", "400"], ["400", "400"], ["400", "400"]]);
        let second = records[2].files[0].after.as_ref().unwrap().text.as_ref().unwrap().decode().unwrap();
        assert_eq!(second, texts[2]);
    }

    #[test]
    fn back_from_the_file_as_it_is_now_and_not_from_another_content() {
        let texts = texts();
        let mut records = records(&texts, false);
        let now = texts[2].clone();
        rebuild_texts(&mut records, &mut |path, _| (path == "f.rs").then(|| now.clone().into_bytes()));
        assert_eq!(shown(&records), [["400", "400"], ["400", "400"]]);
        // The user changed the file since: nothing is made up.
        let mut records = self::records(&texts, false);
        rebuild_texts(&mut records, &mut |_, _| Some(b"other\n".to_vec()));
        assert_eq!(shown(&records), [["?", "?"], ["?", "?"]]);
    }

    #[test]
    fn only_a_regular_file_of_the_size_asked_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.rs");
        std::fs::write(&file, "four").unwrap();
        assert_eq!(read_sized(&file, 4).as_deref(), Some(&b"four"[..]));
        assert_eq!(read_sized(&file, 3), None, "another size");
        assert_eq!(read_sized(dir.path(), 4096), None, "a directory");
        assert_eq!(read_sized(&dir.path().join("none"), 0), None);
        // A FIFO with no writer: opening it does not wait, and it is not read.
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert_eq!(read_sized(&fifo, 0), None);
    }
}
