//! Git repositories a sandboxed command makes. The git metadata that exists when a command starts
//! is read-only to it (`repositories.rs`), but a repository it creates has none yet: it could plant
//! a hook or a `core.fsmonitor` there, and the next `git status` the user runs in that folder would
//! run it unconfined. So the metadata under the workspace roots is noted before a command and
//! looked at again after it; in what appeared meanwhile (where the command could write), hooks are
//! renamed so git no longer finds them, and the config keeps only keys that run nothing, the file
//! as it was kept beside it. The user and the model are told what was disabled and where.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::exec::{Sandbox, SandboxMode};

/// What a disabled file is renamed to end with: git looks hooks and config up by exact name.
const DISABLED: &str = ".reins-disabled";

/// A config file longer than this is not read: it is put aside whole.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Git directories looked into below a new one for submodules' (`modules/…`) before giving up.
const MAX_MODULE_DIRS: usize = 1_000;

/// Config keys that make git run nothing, by section: `(section, has a subsection, keys)`. Every
/// other key is dropped (`core.fsmonitor`, `core.hooksPath`, `core.sshCommand`, `alias.*`,
/// `filter.*`, `diff.*.textconv`, `include.path`, `remote.*.uploadpack`, …): an allow list, since
/// the keys that run something are many and git adds more.
const HARMLESS_KEYS: &[(&str, bool, &[&str])] = &[
    (
        "core",
        false,
        &[
            "repositoryformatversion",
            "filemode",
            "bare",
            "logallrefupdates",
            "ignorecase",
            "precomposeunicode",
            "symlinks",
        ],
    ),
    ("remote", true, &["url", "pushurl", "fetch"]),
    ("branch", true, &["remote", "merge"]),
    ("user", false, &["name", "email"]),
    ("init", false, &["defaultbranch"]),
    ("extensions", false, &["objectformat", "refstorage"]),
];

/// The git metadata under a command's workspace roots as it started.
pub(crate) struct RepositorySnapshot {
    roots: Vec<PathBuf>,
    /// Where the command may write (canonical): only there can it have planted anything.
    writable: Vec<PathBuf>,
    known: HashSet<PathBuf>,
}

/// What was disabled in one git directory.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Disarmed {
    pub dir: PathBuf,
    /// Hooks renamed to `NAME.reins-disabled` (`hooks` itself when it was a link).
    pub hooks: Vec<String>,
    /// Config keys dropped (the old file is `config.reins-disabled`).
    pub config_keys: Vec<String>,
}

impl RepositorySnapshot {
    /// The metadata before a command under `sandbox` runs; `None` when the command cannot write
    /// under the roots (the sandbox is off, so nothing is held anyway, or read-only).
    pub(crate) fn take(sandbox: &Sandbox, roots: &[PathBuf]) -> Option<Self> {
        if sandbox.mode != SandboxMode::WorkspaceWrite {
            return None;
        }
        let canonical = |path: &PathBuf| path.canonicalize().ok();
        let roots: Vec<PathBuf> = roots.iter().filter_map(canonical).collect();
        let mut writable: Vec<PathBuf> = crate::sandbox::temporary_dirs().iter().filter_map(canonical).collect();
        writable.extend(roots.iter().cloned());
        writable.extend(sandbox.writable.iter().filter_map(canonical));
        let known = metadata_under(&roots);
        Some(Self { roots, writable, known })
    }

    /// Disables what git would run in metadata that appeared since the snapshot, where the
    /// command could write it and not inside metadata that was there before (the user's).
    pub(crate) fn disarm_new(&self) -> Vec<Disarmed> {
        let mut pending: Vec<PathBuf> =
            metadata_under(&self.roots).into_iter().filter(|path| !self.known.contains(path)).collect();
        pending.sort();
        let mut seen = HashSet::new();
        let mut disarmed = Vec::new();
        while let Some(dir) = pending.pop() {
            if !seen.insert(dir.clone())
                || self.known.iter().any(|known| dir.starts_with(known))
                || !self.writable.iter().any(|writable| dir.starts_with(writable))
                || !dir.is_dir()
            {
                continue;
            }
            // A `commondir` file sends git to another directory for the config and hooks.
            if let Ok(common) = std::fs::read_to_string(dir.join("commondir"))
                && let Ok(common) = dir.join(common.trim()).canonicalize()
            {
                pending.push(common);
            }
            pending.extend(module_dirs(&dir));
            let found = disarm(&dir);
            if !found.hooks.is_empty() || !found.config_keys.is_empty() {
                tracing::warn!("{found}");
                disarmed.push(found);
            }
        }
        disarmed.sort_by(|a, b| a.dir.cmp(&b.dir));
        disarmed
    }

    /// The notice for the model and the user, paths relative to the first root where they can be.
    pub(crate) fn notice(&self, disarmed: &[Disarmed]) -> Option<String> {
        if disarmed.is_empty() {
            return None;
        }
        let root = self.roots.first();
        let lines: Vec<String> = disarmed
            .iter()
            .map(|found| {
                let dir = root.and_then(|root| found.dir.strip_prefix(root).ok()).unwrap_or(&found.dir);
                Disarmed { dir: dir.to_path_buf(), ..found.clone() }.to_string()
            })
            .collect();
        Some(format!(
            "[The command made git repositories with what git would run outside the sandbox; reins disabled it:\n{}]",
            lines.join("\n")
        ))
    }
}

impl fmt::Display for Disarmed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = self.dir.display().to_string();
        let dir = reins_ai::visible_line(&dir);
        let mut parts = Vec::new();
        for hook in &self.hooks {
            parts.push(format!("hook {} (renamed {0}{DISABLED})", reins_ai::visible_line(hook)));
        }
        if !self.config_keys.is_empty() {
            let keys: Vec<String> =
                self.config_keys.iter().map(|key| reins_ai::visible_line(key).into_owned()).collect();
            parts.push(format!("config {} (the file as it was: config{DISABLED})", keys.join(", ")));
        }
        write!(f, "{dir}: {}", parts.join("; "))
    }
}

/// The canonical git metadata of every repository under `roots` (the roots' own included).
fn metadata_under(roots: &[PathBuf]) -> HashSet<PathBuf> {
    roots.iter().flat_map(|root| crate::repositories::git_metadata_around(root)).collect()
}

/// The git directories of submodules kept inside `dir` (`modules/NAME`, nested), each with a `HEAD`.
fn module_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.join("modules")];
    let mut visited = 0;
    while let Some(next) = pending.pop() {
        visited += 1;
        if visited > MAX_MODULE_DIRS {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&next) else { continue };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                continue;
            }
            let path = entry.path();
            if path.join("HEAD").exists() {
                found.extend(path.canonicalize().ok());
            }
            pending.push(path);
        }
    }
    found
}

/// Disables the hooks and the config keys that run something in the git directory `dir`.
fn disarm(dir: &Path) -> Disarmed {
    Disarmed { dir: dir.to_path_buf(), hooks: disarm_hooks(&dir.join("hooks")), config_keys: disarm_config(dir) }
}

/// Renames every hook git would run (anything but the `.sample`s `git init` writes).
fn disarm_hooks(hooks: &Path) -> Vec<String> {
    let Ok(meta) = std::fs::symlink_metadata(hooks) else { return Vec::new() };
    if !meta.is_dir() {
        // A link (to hooks elsewhere) or a file: put aside whole.
        return match std::fs::rename(hooks, aside(hooks)) {
            Ok(()) => vec!["hooks".to_string()],
            Err(err) => {
                tracing::warn!("{}: cannot disable: {err}", hooks.display());
                Vec::new()
            }
        };
    }
    let Ok(entries) = std::fs::read_dir(hooks) else { return Vec::new() };
    let mut renamed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".sample") || name.ends_with(DISABLED) {
            continue;
        }
        let path = entry.path();
        match std::fs::rename(&path, aside(&path)) {
            Ok(()) => renamed.push(name),
            Err(err) => tracing::warn!("{}: cannot disable: {err}", path.display()),
        }
    }
    renamed.sort();
    renamed
}

/// Rewrites `dir/config` with only its harmless keys when it holds others (or anything this
/// does not read plainly), keeping the file as it was beside it; the keys dropped.
fn disarm_config(dir: &Path) -> Vec<String> {
    let path = dir.join("config");
    let Ok(meta) = std::fs::symlink_metadata(&path) else { return Vec::new() };
    // Only a small regular file is read (a FIFO would block, a link leads elsewhere).
    let text = if meta.is_file() && meta.len() <= MAX_CONFIG_BYTES { read_nonblocking(&path) } else { None };
    let harmless = match &text {
        Some(text) => HarmlessConfig::of(text),
        None => HarmlessConfig { text: String::new(), dropped: vec!["(the whole file)".to_string()], unclear: true },
    };
    if harmless.dropped.is_empty() && !harmless.unclear {
        return Vec::new();
    }
    // A new file only: a process the command left behind may plant a link there meanwhile.
    let written = std::fs::rename(&path, aside(&path)).and_then(|()| {
        use std::io::Write;
        std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?.write_all(harmless.text.as_bytes())
    });
    if let Err(err) = written {
        tracing::warn!("{}: cannot disable: {err}", path.display());
        return Vec::new();
    }
    let mut dropped = harmless.dropped;
    if dropped.is_empty() {
        dropped.push("(lines reins does not read plainly)".to_string());
    }
    dropped
}

/// The text of a regular file, opened without blocking (it may have become a FIFO since).
fn read_nonblocking(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.by_ref().take(MAX_CONFIG_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

fn aside(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(DISABLED);
    PathBuf::from(name)
}

/// A git config reduced to [`HARMLESS_KEYS`], written out plainly.
#[derive(Debug, PartialEq)]
struct HarmlessConfig {
    text: String,
    /// The keys left out, as `section.subsection.key`.
    dropped: Vec<String>,
    /// Something was not read plainly (quotes, escapes, a continued line, a header this does
    /// not parse): what is kept may then differ from what git reads, so the file is rewritten.
    unclear: bool,
}

impl HarmlessConfig {
    /// Reads `text` a line at a time. Only plain lines are kept (no quotes or backslashes in a
    /// value), and they are written out anew rather than copied, so what git reads from the
    /// result is exactly what was judged here.
    fn of(text: &str) -> Self {
        let mut section: Option<(String, Option<String>)> = None;
        let mut kept: Vec<(String, Option<String>, String, String)> = Vec::new();
        let mut dropped = Vec::new();
        let mut unclear = false;
        for line in text.lines() {
            let mut line = line.trim();
            if let Some(rest) = line.strip_prefix('[') {
                let Some((header, after)) = rest.split_once(']') else {
                    unclear = true;
                    section = None;
                    continue;
                };
                section = parse_header(header);
                unclear |= section.is_none();
                // Git reads a key after the header on the same line.
                line = after.trim();
            }
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            let (name, value) = match line.split_once('=') {
                Some((name, value)) => (name.trim(), value),
                None => (line, "true"),
            };
            let value = value.split(['#', ';']).next().unwrap_or_default().trim();
            let plain_name = name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            let plain_value = !value.contains(['"', '\\']);
            unclear |= !plain_name || !plain_value;
            let key = name.to_ascii_lowercase();
            let Some((name, subsection)) = section.clone() else {
                dropped.push(format!("?.{key}"));
                continue;
            };
            let harmless = HARMLESS_KEYS.iter().any(|(allowed, sub, keys)| {
                *allowed == name && *sub == subsection.is_some() && keys.contains(&key.as_str())
            });
            if harmless && plain_name && plain_value {
                kept.push((name, subsection, key, value.to_string()));
            } else {
                let full = match &subsection {
                    Some(subsection) => format!("{name}.{subsection}.{key}"),
                    None => format!("{name}.{key}"),
                };
                if !dropped.contains(&full) {
                    dropped.push(full);
                }
            }
        }
        let mut out = String::new();
        let mut current: Option<(&str, Option<&str>)> = None;
        for (name, subsection, key, value) in &kept {
            if current != Some((name, subsection.as_deref())) {
                match subsection {
                    Some(subsection) => out.push_str(&format!("[{name} \"{subsection}\"]\n")),
                    None => out.push_str(&format!("[{name}]\n")),
                }
                current = Some((name, subsection.as_deref()));
            }
            out.push_str(&format!("\t{key} = {value}\n"));
        }
        HarmlessConfig { text: out, dropped, unclear }
    }
}

/// `section`, `section "subsection"` or the old `section.subsection`; `None` when not plain.
fn parse_header(header: &str) -> Option<(String, Option<String>)> {
    let plain = |name: &str| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let header = header.trim();
    if let Some((name, rest)) = header.split_once(char::is_whitespace) {
        let subsection = rest.trim().strip_prefix('"')?.strip_suffix('"')?;
        if !plain(name) || subsection.contains(['"', '\\', '\n']) {
            return None;
        }
        return Some((name.to_ascii_lowercase(), Some(subsection.to_string())));
    }
    match header.split_once('.') {
        Some((name, subsection)) if plain(name) && !subsection.is_empty() && !subsection.contains(['"', '\\']) => {
            Some((name.to_ascii_lowercase(), Some(subsection.to_ascii_lowercase())))
        }
        Some(_) => None,
        None => plain(header).then(|| (header.to_ascii_lowercase(), None)),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check_config(text: &str, expected: Expect) {
        let harmless = HarmlessConfig::of(text);
        expected.assert_eq(&format!(
            "{}dropped: {}\nunclear: {}",
            harmless.text,
            harmless.dropped.join(", "),
            harmless.unclear
        ));
    }

    #[test]
    fn a_fresh_config_is_kept_as_it_is() {
        let fresh =
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";
        check_config(
            fresh,
            expect![[r#"
                [core]
                	repositoryformatversion = 0
                	filemode = true
                	bare = false
                	logallrefupdates = true
                dropped: 
                unclear: false"#]],
        );
    }

    #[test]
    fn keys_that_run_something_are_dropped() {
        check_config(
            "[core]\n\tbare = false\n\tfsmonitor = touch x\n\thooksPath = /tmp/h\n[alias]\n\tst = !touch y\n\
             [remote \"origin\"]\n\turl = https://example.com/r.git\n\tuploadpack = touch z\n\
             [filter \"lfs\"]\n\tsmudge = touch w\n[include]\n\tpath = /tmp/evil\n",
            expect![[r#"
                [core]
                	bare = false
                [remote "origin"]
                	url = https://example.com/r.git
                dropped: core.fsmonitor, core.hookspath, alias.st, remote.origin.uploadpack, filter.lfs.smudge, include.path
                unclear: false"#]],
        );
    }

    #[test]
    fn what_is_not_read_plainly_is_not_kept() {
        // A key after the header, a quoted value, a continued line, a header with an escape.
        check_config(
            "[core] fsmonitor = touch x\n[core]\n\tbare = \"false\"\n\tfilemode = true \\\n\
             \tfsmonitor = y\n[remote \"a\\\"b\"]\n\turl = u\n",
            expect![[r#"
                dropped: core.fsmonitor, core.bare, core.filemode, ?.url
                unclear: true"#]],
        );
    }

    #[test]
    fn a_new_repository_is_disarmed_and_a_known_one_is_not() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().canonicalize().unwrap();
        let plant = |dir: &Path| {
            std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
            std::fs::write(dir.join(".git/hooks/pre-commit"), "touch x").unwrap();
            std::fs::write(dir.join(".git/hooks/pre-commit.sample"), "").unwrap();
            std::fs::write(dir.join(".git/config"), "[core]\n\tfsmonitor = touch y\n").unwrap();
        };
        plant(&root.join("known"));
        let sandbox = Sandbox { mode: SandboxMode::WorkspaceWrite, ..Sandbox::default() };
        let snapshot = RepositorySnapshot::take(&sandbox, std::slice::from_ref(&root)).unwrap();
        plant(&root.join("made"));
        let disarmed = snapshot.disarm_new();
        expect![[r#"
            [The command made git repositories with what git would run outside the sandbox; reins disabled it:
            made/.git: hook pre-commit (renamed pre-commit.reins-disabled); config core.fsmonitor (the file as it was: config.reins-disabled)]"#]]
        .assert_eq(&snapshot.notice(&disarmed).unwrap());
        assert_eq!(std::fs::read_to_string(root.join("made/.git/config")).unwrap(), "");
        assert!(root.join("made/.git/hooks/pre-commit.sample").exists());
        assert!(root.join("known/.git/hooks/pre-commit").exists());
        // Done once: the next command's look finds nothing more to disable.
        assert_eq!(snapshot.disarm_new(), Vec::new());
    }
}
