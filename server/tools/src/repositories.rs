//! The git metadata a sandboxed command must not write: git runs what it finds there (hooks,
//! `core.fsmonitor`, aliases) with the user's rights the next time the user or an editor runs git.
//! Not only the `.git` of a workspace root: that of every repository under a root (a vendored
//! library, a submodule, a test fixture) and that of the repository a root lies in (a folder of a
//! repository in the temporary directory, which commands may write), each with the git
//! directory a `.git` file names (a worktree, a submodule) and its common directory.

use std::path::{Path, PathBuf};

/// Directories looked into below a root before the search stops: a bound on the time a command
/// waits to start in a very large tree (its deepest repositories then stay unprotected, and a
/// warning says so).
const MAX_DIRECTORIES: usize = 100_000;

/// The canonical paths of the git metadata of every repository under `root` (itself included)
/// and of the repository `root` lies in, if any.
pub(crate) fn git_metadata_around(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Some(enclosing) = root.ancestors().skip(1).find(|dir| dir.join(".git").exists()) {
        found.extend(git_metadata(enclosing));
    }
    let mut pending = vec![root.to_path_buf()];
    let mut visited = 0;
    while let Some(dir) = pending.pop() {
        visited += 1;
        if visited > MAX_DIRECTORIES {
            tracing::warn!(
                "{}: more than {MAX_DIRECTORIES} directories; git repositories deeper in are not made read-only to commands",
                root.display()
            );
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if entry.file_name() == ".git" {
                found.extend(git_metadata(&dir));
            } else if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                // Not followed through symlinks: what they lead to is not under the root.
                pending.push(entry.path());
            }
        }
    }
    found
}

/// The canonical paths of `dir/.git` and, where it is a file (a worktree, a submodule), of the
/// git directory it names and that one's common directory, where config and hooks are.
pub(crate) fn git_metadata(dir: &Path) -> Vec<PathBuf> {
    let dot_git = dir.join(".git");
    let mut found: Vec<PathBuf> = dot_git.canonicalize().ok().into_iter().collect();
    if dot_git.is_file()
        && let Ok(text) = std::fs::read_to_string(&dot_git)
        && let Some(named) = text.lines().find_map(|line| line.strip_prefix("gitdir:"))
        && let Ok(git_dir) = dir.join(named.trim()).canonicalize()
    {
        if let Ok(common) = std::fs::read_to_string(git_dir.join("commondir"))
            && let Ok(common) = git_dir.join(common.trim()).canonicalize()
        {
            found.push(common);
        }
        found.push(git_dir);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_init(dir: &Path) {
        std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
    }

    #[test]
    fn finds_the_enclosing_repository_and_every_one_below() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        let root = base.join("repo/work");
        for dir in [base.join("repo"), root.join("vendor/lib"), root.join("a/b/c")] {
            git_init(&dir);
        }
        std::fs::create_dir_all(root.join("plain")).unwrap();
        // A submodule's `.git` file names its git directory inside the outer one.
        std::fs::create_dir_all(base.join("repo/.git/modules/sub")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../../.git/modules/sub\n").unwrap();
        let mut found: Vec<String> = git_metadata_around(&root)
            .iter()
            .map(|path| path.strip_prefix(&base).unwrap().display().to_string())
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                "repo/.git",
                "repo/.git/modules/sub",
                "repo/work/a/b/c/.git",
                "repo/work/sub/.git",
                "repo/work/vendor/lib/.git"
            ]
        );
    }

    #[test]
    fn a_symlink_out_of_the_root_is_not_searched() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        git_init(&base.join("elsewhere"));
        std::fs::create_dir_all(base.join("root")).unwrap();
        std::os::unix::fs::symlink(base.join("elsewhere"), base.join("root/link")).unwrap();
        assert_eq!(git_metadata_around(&base.join("root")), Vec::<PathBuf>::new());
    }
}
