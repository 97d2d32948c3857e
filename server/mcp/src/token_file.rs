//! Where a server's OAuth tokens are kept between runs: one file per server under the reins
//! home (`auth/mcp-NAME.json`), created with mode 0600 in a 0700 folder, replaced whole (a
//! temporary file renamed over it), and bound to the URL it was issued for, so that a server
//! renamed or moved never receives another server's token.
//!
//! The file is a contract with later versions of reins, so its shape is spelled out here, apart
//! from what the OAuth client keeps in it (`credentials`, passed through as it is).

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version of the file's shape.
const VERSION: u32 = 1;

/// One server's token file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenFile {
    path: PathBuf,
    /// The server's name, for messages.
    server: String,
    /// The URL the tokens are for.
    url: String,
}

/// The file on disk.
#[derive(Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    server: String,
    url: String,
    /// What the OAuth client stores: the client id, the token response, when it came.
    credentials: Value,
}

/// Holds the file's lock (a sibling `.lock` file) while a refresh reads, exchanges and writes,
/// so that two reins processes never spend one refresh token twice.
pub struct TokenLock(#[allow(dead_code)] File);

impl TokenFile {
    /// The token file of server `name` at `url`, in `dir` (`<reins home>/auth`).
    pub fn new(dir: &Path, name: &str, url: &str) -> Self {
        Self { path: dir.join(format!("mcp-{}.json", file_name(name))), server: name.to_string(), url: url.to_string() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether tokens for this server and URL are stored.
    pub fn exists(&self) -> bool {
        matches!(self.read(), Ok(Some(_)))
    }

    /// The stored credentials; `None` when there are none for this URL (never logged in, logged
    /// out, or logged in to the server at another URL).
    pub fn read(&self) -> Result<Option<Value>, String> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(format!("cannot read {}: {err}", self.path.display())),
        };
        let on_disk: OnDisk = serde_json::from_str(&text).map_err(|err| {
            format!("{} is not a token file ({err}); run `reins mcp login {}`", self.path.display(), self.server)
        })?;
        Ok((on_disk.version == VERSION && on_disk.url == self.url).then_some(on_disk.credentials))
    }

    /// Replaces the stored credentials: written to a new file created with mode 0600, then
    /// renamed over the old one, so a reader sees the old file or the new one, never half.
    pub fn write(&self, credentials: Value) -> Result<(), String> {
        let failed = |err: std::io::Error| format!("cannot write {}: {err}", self.path.display());
        let dir = self.path.parent().ok_or_else(|| failed(ErrorKind::InvalidInput.into()))?;
        DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(failed)?;
        let on_disk = OnDisk { version: VERSION, server: self.server.clone(), url: self.url.clone(), credentials };
        let text = serde_json::to_string_pretty(&on_disk).map_err(|err| failed(err.into()))?;
        let temporary = self.path.with_extension(format!("json.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&temporary);
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .and_then(|mut file| file.write_all(text.as_bytes()).and_then(|()| file.sync_all()))
            .and_then(|()| std::fs::rename(&temporary, &self.path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written.map_err(failed)
    }

    /// Forgets the tokens; true when there were some.
    pub fn remove(&self) -> Result<bool, String> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == ErrorKind::NotFound => Ok(false),
            Err(err) => Err(format!("cannot remove {}: {err}", self.path.display())),
        }
    }

    /// Waits for the file's lock (blocking: call it off the async threads).
    pub fn lock(&self) -> Result<TokenLock, String> {
        let path = self.path.with_extension("lock");
        let failed = |err: std::io::Error| format!("cannot lock {}: {err}", path.display());
        if let Some(dir) = path.parent() {
            DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(failed)?;
        }
        let file =
            OpenOptions::new().write(true).create(true).truncate(false).mode(0o600).open(&path).map_err(failed)?;
        file.lock().map_err(failed)?;
        Ok(TokenLock(file))
    }
}

/// A server name as a file name: letters, digits, `-`, `_` and `.` kept (a leading dot escaped),
/// every other byte as `%XX`, so that no name reaches outside the folder.
fn file_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (index, byte) in name.bytes().enumerate() {
        let plain = byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' || (byte == b'.' && index > 0);
        if plain {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use serde_json::json;

    use super::*;

    #[test]
    fn names_stay_inside_the_folder() {
        assert_eq!(file_name("docs"), "docs");
        assert_eq!(file_name("my.server-2_x"), "my.server-2_x");
        assert_eq!(file_name("../etc/passwd"), "%2E.%2Fetc%2Fpasswd");
        assert_eq!(file_name("a b/é"), "a%20b%2F%C3%A9");
    }

    #[test]
    fn tokens_are_written_0600_and_bound_to_their_url() {
        let dir = tempfile::tempdir().unwrap();
        let auth = dir.path().join("auth");
        let file = TokenFile::new(&auth, "docs", "https://a.example/mcp");
        assert_eq!(file.read(), Ok(None));
        file.write(json!({"client_id": "c1"})).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(file.path()), mode(&auth)), (0o600, 0o700));
        assert_eq!(file.read(), Ok(Some(json!({"client_id": "c1"}))));
        assert!(file.exists());
        // The same name at another URL has no tokens.
        assert_eq!(TokenFile::new(&auth, "docs", "https://b.example/mcp").read(), Ok(None));
        file.write(json!({"client_id": "c2"})).unwrap();
        assert_eq!(file.read(), Ok(Some(json!({"client_id": "c2"}))));
        assert_eq!(std::fs::read_dir(&auth).unwrap().count(), 1, "no temporary file is left behind");
        let _lock = file.lock().unwrap();
        assert_eq!(file.remove(), Ok(true));
        assert_eq!((file.remove(), file.exists()), (Ok(false), false));
    }

    #[test]
    fn a_damaged_file_says_how_to_recover() {
        let dir = tempfile::tempdir().unwrap();
        let file = TokenFile::new(dir.path(), "docs", "https://a.example/mcp");
        std::fs::write(file.path(), "{not json").unwrap();
        let err = file.read().unwrap_err();
        assert!(err.contains("is not a token file") && err.ends_with("run `reins mcp login docs`"), "{err}");
    }
}
