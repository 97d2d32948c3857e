//! [`FsWorkspace`]: the [`Workspace`] over the disk, used by the CLI and by tests.
//!
//! Confinement is the point of this file: every path the model names is normalised, its symlinks
//! are resolved, and the result must lie inside one of the roots. Writes are atomic and refuse to
//! overwrite text that changed since the change was computed; deletes and moves check it too.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;
use reins_agent::FileChange;

use crate::workspace::{TextFile, Workspace, WorkspaceError, in_git_dir};

/// Symlink hops followed while resolving one path, as the kernel's own limit does (ELOOP).
const MAX_SYMLINK_HOPS: usize = 40;

#[derive(Debug, Clone)]
pub struct FsWorkspace {
    roots: Vec<PathBuf>,
}

impl FsWorkspace {
    /// A workspace over `roots` (canonicalised here, so they must exist). The first root is the
    /// working directory.
    pub fn new(roots: Vec<PathBuf>) -> Result<Self, WorkspaceError> {
        if roots.is_empty() {
            return Err(WorkspaceError::Io {
                path: PathBuf::new(),
                reason: "a workspace needs at least one root directory".to_string(),
            });
        }
        let roots = roots
            .into_iter()
            .map(|root| fs::canonicalize(&root).map_err(|err| io_error(&root, &err)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { roots })
    }

    /// [`Workspace::resolve`] for a path that is already a `Path`.
    pub fn resolve_path(&self, path: &Path) -> Result<PathBuf, WorkspaceError> {
        self.resolve_with(path, None)
    }

    /// [`FsWorkspace::resolve_path`], its directory's real path taken from (and added to) `dirs`
    /// when given: the paths of one batch then share the resolution of their directories.
    fn resolve_with(&self, path: &Path, dirs: Option<&mut RealDirs>) -> Result<PathBuf, WorkspaceError> {
        // Taken literally, `~/x` would create a directory named `~` in the workspace, a trap for
        // the next `rm -rf ~`; the model means the home directory, which it should spell out.
        if path.components().next() == Some(Component::Normal("~".as_ref())) {
            return Err(WorkspaceError::Tilde(path.display().to_string()));
        }
        let absolute = if path.is_absolute() { path.to_path_buf() } else { self.cwd().join(path) };
        let outside = || WorkspaceError::OutsideRoots {
            path: path.display().to_string(),
            roots: self.roots.iter().map(|root| root.display().to_string()).collect::<Vec<_>>().join(", "),
        };
        // Only the real path is checked: a root may be reached through an alias (a symlinked
        // home directory), and the real path is what the tools go on to use.
        let normalized = normalize(&absolute);
        let real = match dirs {
            Some(dirs) => real_path_in(&normalized, dirs),
            None => real_path(&normalized, 0),
        };
        let real = real.map_err(|err| io_error(path, &err))?;
        if !self.under_roots(&real) {
            return Err(outside());
        }
        Ok(real)
    }

    fn under_roots(&self, path: &Path) -> bool {
        self.roots.iter().any(|root| path.starts_with(root))
    }

    /// The text of a file whose path [`FsWorkspace::resolve_path`] just gave: a workspace that
    /// checks its buffers first has resolved the path already, and resolving it again costs a
    /// `readlink` per component.
    pub async fn read_resolved(&self, real: &Path) -> Result<TextFile, WorkspaceError> {
        let bytes = read_file(real).await?.ok_or_else(|| WorkspaceError::NotFound(real.to_path_buf()))?;
        let text = String::from_utf8(bytes).map_err(|_| WorkspaceError::Io {
            path: real.to_path_buf(),
            reason: "is a binary or non-UTF-8 file; only UTF-8 text files can be read".to_string(),
        })?;
        Ok(TextFile { text, version: None })
    }

    /// Each of `paths` resolved, in order, the directories they share resolved once.
    pub fn resolve_all(&self, paths: &[&Path]) -> Vec<Result<PathBuf, WorkspaceError>> {
        let mut dirs = RealDirs::new();
        paths.iter().map(|path| self.resolve_with(path, Some(&mut dirs))).collect()
    }
}

#[async_trait]
impl Workspace for FsWorkspace {
    fn roots(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }

    fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        self.resolve_path(Path::new(path))
    }

    fn is_inside(&self, path: &Path) -> bool {
        self.resolve_path(path).is_ok()
    }

    fn resolve_all_writable(&self, paths: &[&str]) -> Vec<Result<PathBuf, WorkspaceError>> {
        let mut dirs = RealDirs::new();
        let resolve = |path: &&str| {
            let real = self.resolve_with(Path::new(path), Some(&mut dirs))?;
            if in_git_dir(&real, &self.roots) {
                return Err(WorkspaceError::GitDir(real));
            }
            Ok(real)
        };
        paths.iter().map(resolve).collect()
    }

    async fn read_text(&self, path: &Path) -> Result<TextFile, WorkspaceError> {
        self.read_resolved(&self.resolve_path(path)?).await
    }

    async fn read_named(&self, path: &str) -> Result<(PathBuf, TextFile), WorkspaceError> {
        let real = self.resolve(path)?;
        let text = self.read_resolved(&real).await?;
        Ok((real, text))
    }

    async fn read_texts(&self, paths: &[&Path]) -> Vec<Result<TextFile, WorkspaceError>> {
        let mut texts = Vec::with_capacity(paths.len());
        for real in self.resolve_all(paths) {
            texts.push(match real {
                Ok(real) => self.read_resolved(&real).await,
                Err(err) => Err(err),
            });
        }
        texts
    }

    async fn apply(&self, change: &FileChange) -> Result<(), WorkspaceError> {
        // The gate may have rewritten the change, so its paths are checked again.
        let path = self.resolve_path(&change.path)?;
        if in_git_dir(&path, &self.roots) {
            return Err(WorkspaceError::GitDir(path));
        }
        let current = read_file(&path).await?;
        let unchanged = match (&change.before, &current) {
            (Some(before), Some(current)) => before.as_bytes() == current.as_slice(),
            (None, None) => true,
            _ => false,
        };
        if !unchanged {
            return Err(WorkspaceError::Stale { path, expected: change.version, actual: None });
        }
        let target = match &change.moved_to {
            Some(to) => {
                let to = self.resolve_path(to)?;
                if in_git_dir(&to, &self.roots) {
                    return Err(WorkspaceError::GitDir(to));
                }
                if read_file(&to).await?.is_some() {
                    return Err(WorkspaceError::Stale { path: to, expected: None, actual: None });
                }
                Some(to)
            }
            None => None,
        };
        let delete = change.delete;
        let after = change.after.clone();
        tokio::task::spawn_blocking(move || {
            if delete {
                return fs::remove_file(&path).map_err(|err| io_error(&path, &err));
            }
            match target {
                // Written at the new place first: a failure leaves the file where it was.
                Some(to) => {
                    write_atomically(&to, after.as_bytes())?;
                    fs::remove_file(&path).map_err(|err| io_error(&path, &err))
                }
                None => write_atomically(&path, after.as_bytes()),
            }
        })
        .await
        .map_err(|err| WorkspaceError::Io { path: change.path.clone(), reason: err.to_string() })?
    }
}

/// Removes `.` and resolves `..` lexically; `..` at the filesystem root stays at the root.
fn normalize(path: &Path) -> PathBuf {
    let mut normalized = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::Normal(_) => normalized.push(component),
            Component::CurDir => {}
            Component::ParentDir => {
                normalized.pop();
            }
        }
    }
    normalized
}

/// The canonical form of an absolute, normalised path whose tail may not exist yet: the longest
/// existing ancestor is canonicalised (resolving symlinks at any level) and the rest appended.
/// A dangling symlink is followed by hand, so a link to a missing file outside the roots is seen
/// for what it is rather than treated as a new file inside them.
fn real_path(path: &Path, hops: usize) -> io::Result<PathBuf> {
    if hops > MAX_SYMLINK_HOPS {
        return Err(io::Error::other("too many levels of symbolic links"));
    }
    // Most paths name what exists: one `realpath` settles them.
    match fs::canonicalize(path) {
        Ok(real) => return Ok(real),
        Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
        Err(_) => {}
    }
    let mut existing = path;
    let mut missing = Vec::new();
    loop {
        match fs::symlink_metadata(existing) {
            Ok(_) => break,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                    return Err(err);
                };
                missing.push(name);
                existing = parent;
            }
            Err(err) => return Err(err),
        }
    }
    let mut real = match fs::canonicalize(existing) {
        Ok(real) => real,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            // `existing` exists but something it points to does not: a dangling symlink.
            let target = fs::read_link(existing)?;
            let base = existing.parent().unwrap_or(Path::new("/"));
            real_path(&normalize(&base.join(target)), hops + 1)?
        }
        Err(err) => return Err(err),
    };
    for name in missing.into_iter().rev() {
        real.push(name);
    }
    Ok(real)
}

/// Real paths of the directories of one batch of paths, by their normalised path.
type RealDirs = HashMap<PathBuf, PathBuf>;

/// [`real_path`] of `path`, its directory's real path from `dirs` (resolved once per batch): a
/// path whose last component is not a symlink is its directory's real path and that name, which
/// costs one `lstat` instead of a `readlink` per component.
fn real_path_in(path: &Path, dirs: &mut RealDirs) -> io::Result<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return real_path(path, 0) };
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => return real_path(path, 0),
        Ok(_) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    let real_dir = match dirs.get(dir) {
        Some(real) => real.clone(),
        None => {
            let real = real_path(dir, 0)?;
            dirs.insert(dir.to_path_buf(), real.clone());
            real
        }
    };
    Ok(real_dir.join(name))
}

/// A regular file up to this size is read in place, on the caller's thread (see [`read_file`]).
const READ_IN_PLACE_BYTES: u64 = 1 << 20;

/// The bytes of `path` read on this thread when what is opened is a regular file of at most
/// [`READ_IN_PLACE_BYTES`]; `None` when it is not (it may have been swapped for a FIFO since it
/// was looked at: it is opened without blocking and checked through the open handle, so a read
/// in place never waits on a pipe).
fn read_small(path: &Path) -> Option<io::Result<Vec<u8>>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = match fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path) {
        Ok(file) => file,
        Err(err) => return Some(Err(err)),
    };
    match file.metadata() {
        Ok(metadata) if metadata.is_file() && metadata.len() <= READ_IN_PLACE_BYTES => {
            let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
            // Through `Take`: `File`'s own `read_to_end` asks the size and position again (two
            // more system calls) to size the buffer, which is sized already.
            Some(Read::by_ref(&mut file).take(u64::MAX).read_to_end(&mut bytes).map(|_| bytes))
        }
        Ok(_) => None,
        Err(err) => Some(Err(err)),
    }
}

/// The file's bytes, `None` when it does not exist.
///
/// A small regular file is read in place: handing the read to the blocking pool and back costs
/// two thread wake-ups, more than the read itself, and on a loaded machine each wake-up waits for
/// a core (milliseconds per tool call). Anything else — a large file, a FIFO or a device that may
/// never end — is read on the blocking pool, so the runtime keeps going and the call can be
/// cancelled.
async fn read_file(path: &Path) -> Result<Option<Vec<u8>>, WorkspaceError> {
    let metadata = match fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => {
            return Err(WorkspaceError::Io {
                path: path.to_path_buf(),
                reason: "is a directory, not a file; use ls to list it".to_string(),
            });
        }
        Ok(metadata) => metadata,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io_error(path, &err)),
    };
    let in_place = if metadata.is_file() && metadata.len() <= READ_IN_PLACE_BYTES { read_small(path) } else { None };
    let read = match in_place {
        Some(read) => read,
        None => tokio::fs::read(path).await,
    };
    match read {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(io_error(path, &err)),
    }
}

/// Writes through a temporary file in the same directory and a rename, so a reader never sees
/// half a file; an existing file keeps its permissions.
fn write_atomically(path: &Path, contents: &[u8]) -> Result<(), WorkspaceError> {
    use std::os::unix::fs::PermissionsExt;

    let parent = path.parent().ok_or_else(|| WorkspaceError::Io {
        path: path.to_path_buf(),
        reason: "has no parent directory".to_string(),
    })?;
    fs::create_dir_all(parent).map_err(|err| io_error(parent, &err))?;
    let original_permissions = fs::metadata(path).ok().map(|metadata| metadata.permissions());
    // A new file gets the mode a plain `open` would give it (0666 less the umask), not the
    // temporary file's 0600.
    let mut temp = tempfile::Builder::new()
        .prefix(".reins-write-")
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(parent)
        .map_err(|err| io_error(parent, &err))?;
    temp.write_all(contents).map_err(|err| io_error(path, &err))?;
    temp.as_file().sync_all().map_err(|err| io_error(path, &err))?;
    if let Some(permissions) = original_permissions {
        temp.as_file().set_permissions(permissions).map_err(|err| io_error(path, &err))?;
    }
    temp.persist(path).map_err(|err| io_error(path, &err.error))?;
    Ok(())
}

fn io_error(path: &Path, err: &io::Error) -> WorkspaceError {
    if err.kind() == io::ErrorKind::NotFound {
        return WorkspaceError::NotFound(path.to_path_buf());
    }
    WorkspaceError::Io { path: path.to_path_buf(), reason: err.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots_lexically() {
        let cases = [("/a/./b/../c", "/a/c"), ("/a/../../x", "/x"), ("/a/b/", "/a/b")];
        for (input, expected) in cases {
            assert_eq!(normalize(Path::new(input)), PathBuf::from(expected), "{input}");
        }
    }

    /// Makes a FIFO at `path`, and gives the path back.
    fn make_fifo(path: &Path) -> PathBuf {
        let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `name` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { nix::libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        path.to_path_buf()
    }

    #[test]
    fn a_fifo_is_read_off_the_runtime_thread() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = make_fifo(&dir.path().join("fifo"));
        let workspace = FsWorkspace::new(vec![dir.path().to_path_buf()]).unwrap();
        let (done, answer) = std::sync::mpsc::channel();
        // A single-threaded runtime on a thread of its own, so that a read that blocked it fails
        // this test instead of hanging it.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let text = runtime.block_on(async move {
                let reading = tokio::spawn(async move { workspace.read_text(Path::new("fifo")).await });
                // Written by a task of the same runtime: had the read blocked its thread, this
                // task would never run. A FIFO opens for writing once its reader has opened it.
                let mut writer = loop {
                    match tokio::net::unix::pipe::OpenOptions::new().open_sender(&fifo) {
                        Ok(writer) => break writer,
                        Err(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
                    }
                };
                tokio::io::AsyncWriteExt::write_all(&mut writer, b"text\n").await.unwrap();
                drop(writer);
                reading.await.unwrap().unwrap().text
            });
            let _ = done.send(text);
        });
        let text = answer.recv_timeout(std::time::Duration::from_secs(20)).expect("the read blocked the runtime");
        assert_eq!(text, "text\n");
    }

    #[test]
    fn a_fifo_where_a_small_file_was_is_not_read_in_place_and_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = make_fifo(&dir.path().join("was-a-file"));
        // As if the file had been swapped for a FIFO after it was looked at: with no writer, a
        // blocking open or read would never return.
        assert!(read_small(&fifo).is_none());
        std::fs::write(dir.path().join("small"), "one\n").unwrap();
        assert_eq!(read_small(&dir.path().join("small")).unwrap().unwrap(), b"one\n");
    }

    #[tokio::test]
    async fn many_files_read_together_answer_each_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "a\n").unwrap();
        std::fs::write(dir.path().join("src/b.rs"), "b\n").unwrap();
        std::fs::write(dir.path().join("src/bin"), [0xff, 0xfe]).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "no\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("src/link")).unwrap();
        let workspace = FsWorkspace::new(vec![dir.path().to_path_buf()]).unwrap();
        let paths = ["src/b.rs", "src/gone.rs", "src/a.rs", "src/link", "src/bin"].map(Path::new);
        let texts = workspace.read_texts(&paths).await;
        let shown: Vec<String> = texts
            .iter()
            .map(|text| match text {
                Ok(file) => file.text.clone(),
                Err(WorkspaceError::NotFound(_)) => "not found".to_string(),
                Err(WorkspaceError::OutsideRoots { .. }) => "outside".to_string(),
                Err(WorkspaceError::Io { reason, .. }) => reason.split(';').next().unwrap().to_string(),
                Err(other) => other.to_string(),
            })
            .collect();
        assert_eq!(shown, ["b\n", "not found", "a\n", "outside", "is a binary or non-UTF-8 file"]);
    }

    #[tokio::test]
    async fn a_small_file_and_a_missing_one_read_in_place() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        let workspace = FsWorkspace::new(vec![dir.path().to_path_buf()]).unwrap();
        assert_eq!(workspace.read_text(Path::new("a.txt")).await.unwrap().text, "one\n");
        assert!(matches!(workspace.read_text(Path::new("b.txt")).await, Err(WorkspaceError::NotFound(_))));
        assert!(matches!(workspace.read_text(Path::new(".")).await, Err(WorkspaceError::Io { .. })));
    }
}
