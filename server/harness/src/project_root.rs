//! The project a directory belongs to: the nearest directory at or above it holding `.git` (a
//! repository, or a worktree's `.git` file), else the directory itself. A surface that picks its
//! workspace itself (`reins run`, `reins sessions` without `--cwd`) roots it there, as Neovim's
//! plugin does (root marker `.git`), so a session started from a subfolder at the terminal is the
//! same project's in the editor. A `.git` in the home directory or at `/` (dotfiles kept in git)
//! makes no project: it would put every folder under it in one.

use std::path::{Path, PathBuf};

/// The project root of `dir` (see the module's doc); `home` is the user's home directory.
pub fn project_root(dir: &Path, home: Option<&Path>) -> PathBuf {
    let too_broad = |candidate: &Path| candidate.parent().is_none() || Some(candidate) == home;
    dir.ancestors()
        .find(|candidate| !too_broad(candidate) && candidate.join(".git").exists())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_git_root_else_the_directory_itself() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, home) = (tmp.path().join("home/me/repo"), tmp.path().join("home/me"));
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::create_dir_all(tmp.path().join("home/me/notes")).unwrap();
        std::fs::create_dir_all(home.join(".git")).unwrap();
        std::fs::write(repo.join(".git"), "gitdir: /elsewhere\n").unwrap();
        let root = |dir: &Path| project_root(dir, Some(&home));
        assert_eq!(root(&repo.join("src/deep")), repo);
        assert_eq!(root(&repo), repo);
        // The home directory's own `.git` is no project.
        assert_eq!(root(&home.join("notes")), home.join("notes"));
        assert_eq!(root(tmp.path()), tmp.path());
    }
}
