//! The token a TCP client of `reins lsp --listen` must show: whoever can reach the port would
//! otherwise drive the agent, and approve its edits and commands as the "editor".
//!
//! It comes from `REINS_LISTEN_TOKEN`, or is made at start (32 random bytes) and written to a file
//! only the user can read, in reins's data folder, for the editor to read.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The variable that sets the token (else one is made).
pub const TOKEN_VARIABLE: &str = "REINS_LISTEN_TOKEN";
/// A token shorter than this is refused: with attempts limited it would still fall in days.
const MIN_CHARS: usize = 16;

/// The secret a client sends as `initializationOptions.token`.
pub struct Token {
    secret: String,
    /// The file it was written to, when reins made it (removed when reins ends).
    pub file: Option<PathBuf>,
}

impl std::fmt::Debug for Token {
    /// Never the secret: a debug print must not leak it into a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token").field("file", &self.file).finish_non_exhaustive()
    }
}

impl Token {
    /// `given` (the variable's value) when set, else a new token written to `file` with mode
    /// 0600 (its folder made if missing).
    pub fn new(given: Option<String>, file: &Path) -> Result<Self, String> {
        if let Some(secret) = given {
            let chars = secret.trim().chars().count();
            if chars < MIN_CHARS {
                return Err(format!(
                    "{TOKEN_VARIABLE} has {chars} characters; use at least {MIN_CHARS} (e.g. `openssl rand -hex 32`), or unset it and reins makes one"
                ));
            }
            return Ok(Self { secret: secret.trim().to_string(), file: None });
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|err| format!("cannot make a token: {err}"))?;
        let secret: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        write_private(file, &secret).map_err(|err| format!("cannot write the token to {}: {err}", file.display()))?;
        Ok(Self { secret, file: Some(file.to_path_buf()) })
    }

    /// Whether `offered` is the token, in time that does not depend on where they differ.
    pub fn matches(&self, offered: &str) -> bool {
        let (ours, theirs) = (self.secret.as_bytes(), offered.as_bytes());
        let differences = ours.iter().zip(theirs).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        differences == 0 && ours.len() == theirs.len()
    }
}

/// Writes `text` to a new file at `path` that only the user can read. An old file is removed
/// first: it may be a link somewhere else, or readable by others.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(folder) = path.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(folder)?;
    }
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(err),
        _ => {}
    }
    let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_made_token_is_written_for_the_user_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data/listen-9257.token");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let token = Token::new(None, &file).unwrap();
        let written = std::fs::read_to_string(&file).unwrap();
        assert_eq!(written.trim().len(), 64);
        assert!(token.matches(written.trim()));
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(token.file.as_deref(), Some(file.as_path()));
        assert!(!format!("{token:?}").contains(written.trim()), "the debug print shows the secret");
        let other = Token::new(None, &file).unwrap();
        assert!(!other.matches(written.trim()), "two starts made the same token");
    }

    #[test]
    fn a_given_token_is_used_as_it_is_and_must_be_long_enough() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("listen.token");
        let token = Token::new(Some("correct horse battery staple".into()), &file).unwrap();
        assert!(token.matches("correct horse battery staple"));
        assert!(!token.matches("correct horse battery stapl"));
        assert!(!token.matches("correct horse battery staplee"));
        assert!(!token.matches(""));
        assert!(!file.exists(), "a given token is not written");
        let short = Token::new(Some("hunter2".into()), &file).unwrap_err();
        assert!(short.contains("has 7 characters; use at least 16"), "{short}");
    }
}
