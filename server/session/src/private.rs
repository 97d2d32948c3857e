//! Sessions hold everything said to the model and every file it read: only their owner may read
//! them. Session files are made 0600 and their folders 0700, whatever the umask, and a file or
//! folder an older version left readable to others is closed when it is written again.

use std::fs::{DirBuilder, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of a session file (and of the index beside them).
pub const FILE_MODE: u32 = 0o600;
/// The mode of the folders that hold them.
pub const DIR_MODE: u32 = 0o700;

/// Creates `dir` and the folders above it that are missing as 0700, and makes `dir` itself and
/// its parent (the sessions folder) 0700 if they were not.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)?;
    for folder in [Some(dir), dir.parent()].into_iter().flatten() {
        close_to_others(folder, DIR_MODE);
    }
    Ok(())
}

/// Options that create a file as 0600.
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}

/// Makes an open session file 0600 if it was readable to others.
pub fn close_file(file: &File) {
    if let Ok(meta) = file.metadata()
        && meta.permissions().mode() & 0o077 != 0
    {
        let _ = file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE));
    }
}

/// A shared folder with the sticky bit (`/tmp`, where a sessions folder may be made by hand) is
/// everyone's and left as it is: closing it would break every other program using it.
fn close_to_others(path: &Path, mode: u32) {
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
        && meta.permissions().mode() & 0o1000 == 0
    {
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EntryKind, SessionStore};

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_shared_sticky_folder_above_the_sessions_is_left_open() {
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        create_dir(&shared.join("sessions")).unwrap();
        assert_eq!(std::fs::metadata(&shared).unwrap().permissions().mode() & 0o7777, 0o1777);
        assert_eq!(mode(&shared.join("sessions")), DIR_MODE);
    }

    #[test]
    fn session_files_and_folders_are_private_whatever_was_there() {
        let tmp = tempfile::tempdir().unwrap();
        let sessions = tmp.path().join("data/sessions");
        // A sessions folder an older version left open to others.
        std::fs::create_dir_all(&sessions).unwrap();
        std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut file = SessionStore::new(&sessions).create(Path::new("/w"), None).unwrap();
        file.append(EntryKind::SessionInfo { name: Some("a".into()) }).unwrap();
        file.flush().unwrap();
        let path = file.path().to_path_buf();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(mode(&sessions), 0o700);
        drop(file);
        // A file left readable is closed when it is opened again.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        crate::SessionFile::open(&path).unwrap();
        assert_eq!(mode(&path), 0o600);
    }
}
