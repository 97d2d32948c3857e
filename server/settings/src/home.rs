//! The user's home folder when `HOME` is not set: clients such as avante.nvim start agents with
//! only `PATH` and what they are told to pass, and sessions must still land where the user's own
//! `reins sessions list` finds them, not in a folder every user shares.

use std::path::PathBuf;

/// The user's home folder: `HOME`, else the password database's.
pub fn user_home(var: impl Fn(&str) -> Option<String>) -> PathBuf {
    var("HOME").filter(|home| !home.trim().is_empty()).map_or_else(from_password_database, PathBuf::from)
}

/// The home folder the password database gives the user reins runs as; `/tmp` only when it has
/// no entry (a uid without an account, as in some containers).
pub fn from_password_database() -> PathBuf {
    match nix::unistd::User::from_uid(nix::unistd::getuid()) {
        Ok(Some(user)) if !user.dir.as_os_str().is_empty() => user.dir,
        Ok(_) => PathBuf::from("/tmp"),
        Err(err) => {
            tracing::warn!("cannot read the password database for the home folder: {err}");
            PathBuf::from("/tmp")
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn without_home_the_password_database_says_where_home_is() {
        // The account's line as getent prints it: name:password:uid:gid:gecos:home:shell.
        let uid = nix::unistd::getuid().to_string();
        let line = std::process::Command::new("getent").args(["passwd", &uid]).output().unwrap().stdout;
        let line = String::from_utf8(line).unwrap();
        let home = line.trim_end().split(':').nth(5).unwrap().to_string();
        let settings = crate::Settings::from_env(|_| None);
        assert_eq!(settings.data_dir, std::path::Path::new(&home).join(".local/share/reins"));
        assert_ne!(home, "/tmp");
    }
}
