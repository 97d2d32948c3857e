//! What the user trusted. A workspace is trusted when it, or a directory above it, is listed in
//! `<config_dir>/trusted-workspaces`; the decision is made on canonical paths, so neither
//! `trusted/../evil` nor a link inside a trusted folder that leads elsewhere borrows the trust.
//!
//! Trusting a workspace trusts its configuration files as they were: the first time reins
//! loads a trusted workspace (or when the user runs `reins config trust`), it records a hash of
//! each file in [`TRUSTED_FILES`], or that it is absent, in `<config_dir>/trusted-files`. A file
//! that differs from its record later — a command may have written it — is not applied until
//! the user trusts it again.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// The files of a workspace that reins reads as trusted configuration (commands and servers
/// they name run outside the sandbox), relative to its root.
pub const TRUSTED_FILES: &[&str] = &[".mcp.json", ".reins/config.toml"];

/// The record's name in the config directory: `HASH<TAB>PATH` a line, `absent` for no file.
const RECORD: &str = "trusted-files";
const ABSENT: &str = "absent";

/// How a trusted workspace's configuration file stands against what the user trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileTrust {
    /// As trusted (recorded now, if this is the first look).
    Trusted,
    /// Created, changed or deleted since.
    Changed,
}

/// Whether `root` is trusted: it, or a directory above it, is listed (one absolute path a line)
/// in `<config_dir>/trusted-workspaces`. Both sides are compared as canonical paths.
pub fn is_trusted(config_dir: &Path, root: &Path) -> bool {
    let Ok(list) = std::fs::read_to_string(config_dir.join("trusted-workspaces")) else {
        return false;
    };
    let Ok(root) = root.canonicalize() else { return false };
    list.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .any(|line| Path::new(line).canonicalize().is_ok_and(|listed| root.starts_with(listed)))
}

/// How each of `root`'s [`TRUSTED_FILES`] stands, by path. The first look at a trusted
/// workspace records them all (trust on first use: the user listed it as it is).
pub fn check_files(config_dir: &Path, root: &Path) -> Vec<(PathBuf, FileTrust)> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut record = read_record(config_dir);
    let now = current(&root);
    if !now.iter().any(|(path, _)| record.contains_key(path)) {
        record.extend(now.iter().cloned());
        if let Err(err) = write_record(config_dir, &record) {
            tracing::warn!("cannot record the trusted config files of {}: {err}", root.display());
        }
        return now.into_iter().map(|(path, _)| (path, FileTrust::Trusted)).collect();
    }
    now.into_iter()
        .map(|(path, hash)| {
            let trust = if record.get(&path) == Some(&hash) { FileTrust::Trusted } else { FileTrust::Changed };
            (path, trust)
        })
        .collect()
}

/// Trusts `root` as it is now: lists it in `trusted-workspaces` (unless it is trusted already)
/// and records its configuration files. Gives the canonical root.
pub fn trust(config_dir: &Path, root: &Path) -> io::Result<PathBuf> {
    let root = root.canonicalize()?;
    std::fs::create_dir_all(config_dir)?;
    if !is_trusted(config_dir, &root) {
        let list = config_dir.join("trusted-workspaces");
        let mut text = std::fs::read_to_string(&list).unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("{}\n", root.display()));
        std::fs::write(&list, text)?;
    }
    let mut record = read_record(config_dir);
    record.extend(current(&root));
    write_record(config_dir, &record)?;
    Ok(root)
}

/// The hash (or [`ABSENT`]) of each of `root`'s trusted files now.
fn current(root: &Path) -> Vec<(PathBuf, String)> {
    TRUSTED_FILES
        .iter()
        .map(|name| {
            let path = root.join(name);
            let hash = match std::fs::read(&path) {
                Ok(bytes) => reins_checkpoints::sha256_hex(&bytes),
                Err(_) => ABSENT.to_string(),
            };
            (path, hash)
        })
        .collect()
}

fn read_record(config_dir: &Path) -> BTreeMap<PathBuf, String> {
    let text = std::fs::read_to_string(config_dir.join(RECORD)).unwrap_or_default();
    text.lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(hash, path)| (PathBuf::from(path), hash.to_string()))
        .collect()
}

fn write_record(config_dir: &Path, record: &BTreeMap<PathBuf, String>) -> io::Result<()> {
    let text: String = record.iter().map(|(path, hash)| format!("{hash}\t{}\n", path.display())).collect();
    std::fs::create_dir_all(config_dir)?;
    let temporary = config_dir.join(format!("{RECORD}.{}", std::process::id()));
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, config_dir.join(RECORD))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_decided_on_canonical_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let (config, trusted, evil) = (tmp.path().join("config"), tmp.path().join("trusted"), tmp.path().join("evil"));
        for dir in [&config, &trusted, &evil] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(config.join("trusted-workspaces"), format!("{}\n", trusted.display())).unwrap();
        std::os::unix::fs::symlink(&evil, trusted.join("link")).unwrap();
        assert!(is_trusted(&config, &trusted));
        assert!(is_trusted(&config, &trusted.join("link/../trusted")), "as the kernel resolves it");
        assert!(!is_trusted(&config, &trusted.join("../evil")));
        assert!(!is_trusted(&config, &trusted.join("link")));
        assert!(!is_trusted(&config, &tmp.path().join("trustedness")));
    }

    #[test]
    fn a_file_changed_created_or_deleted_after_trust_is_not_trusted_until_trusted_again() {
        let tmp = tempfile::tempdir().unwrap();
        let (config, root) = (tmp.path().join("config"), tmp.path().join("w"));
        std::fs::create_dir_all(root.join(".reins")).unwrap();
        std::fs::write(root.join(".reins/config.toml"), "model = \"a\"\n").unwrap();
        let root = trust(&config, &root).unwrap();
        let states =
            |config: &Path| -> Vec<FileTrust> { check_files(config, &root).into_iter().map(|(_, t)| t).collect() };
        assert_eq!(states(&config), [FileTrust::Trusted, FileTrust::Trusted]);
        std::fs::write(root.join(".mcp.json"), "{}").unwrap();
        std::fs::write(root.join(".reins/config.toml"), "model = \"b\"\n").unwrap();
        assert_eq!(states(&config), [FileTrust::Changed, FileTrust::Changed]);
        trust(&config, &root).unwrap();
        assert_eq!(states(&config), [FileTrust::Trusted, FileTrust::Trusted]);
        std::fs::remove_file(root.join(".mcp.json")).unwrap();
        assert_eq!(states(&config), [FileTrust::Changed, FileTrust::Trusted]);
        let listed = std::fs::read_to_string(config.join("trusted-workspaces")).unwrap();
        assert_eq!(listed, format!("{}\n", root.display()), "listed once");
    }

    #[test]
    fn the_first_look_at_a_listed_workspace_records_it_as_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let (config, root) = (tmp.path().join("config"), tmp.path().join("w"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("trusted-workspaces"), format!("{}\n", root.display())).unwrap();
        std::fs::write(root.join(".mcp.json"), "{}").unwrap();
        let states = || -> Vec<FileTrust> { check_files(&config, &root).into_iter().map(|(_, t)| t).collect() };
        assert_eq!(states(), [FileTrust::Trusted, FileTrust::Trusted]);
        // Planted after: not applied.
        std::fs::create_dir_all(root.join(".reins")).unwrap();
        std::fs::write(root.join(".reins/config.toml"), "[approval]\nbash = \"auto\"\n").unwrap();
        assert_eq!(states(), [FileTrust::Trusted, FileTrust::Changed]);
    }
}
