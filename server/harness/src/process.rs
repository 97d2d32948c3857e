//! Keeps the keys reins holds away from the other processes of the same user, its tools first:
//! the process is made non-dumpable (no ptrace, `/proc/<pid>/mem` and `environ` closed to them),
//! and the secret values in the environment block the process started with, which
//! `/proc/<pid>/environ` shows even to a root command that may not ptrace, are blanked.

use std::ffi::{CStr, OsString};

use nix::libc::c_char;

unsafe extern "C" {
    static mut environ: *const *mut c_char;
}

/// Call first thing in `main`, before any other thread exists: it rewrites the environment.
pub fn protect_process() {
    if let Err(err) = nix::sys::prctl::set_dumpable(false) {
        tracing::debug!("cannot make the process non-dumpable: {err}");
    }
    // SAFETY: the caller promises no other thread exists yet, so nothing reads or changes the
    // environment meanwhile.
    unsafe { blank_initial_secrets() }
}

/// Raises this process's soft limit of open files to its hard limit, as other long-running
/// servers do: a desktop's default soft limit (often 1,024) is low for a server that holds
/// sessions, MCP servers, connections and commands' pipes all day. Answers the limit now in
/// force, or `None` when it cannot be read.
pub fn raise_open_files_limit() -> Option<u64> {
    use nix::libc::{RLIMIT_NOFILE, getrlimit, rlimit, setrlimit};
    let mut limit = rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid, writable `rlimit` for the call to fill.
    if unsafe { getrlimit(RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur >= limit.rlim_max {
        return Some(limit.rlim_cur);
    }
    let raised = rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
    // SAFETY: `raised` is a valid `rlimit` that the call only reads.
    if unsafe { setrlimit(RLIMIT_NOFILE, &raised) } != 0 {
        return Some(limit.rlim_cur);
    }
    Some(raised.rlim_cur)
}

/// Overwrites, in place, the values of secret-looking variables in the environment block, then
/// sets each variable again: the C library keeps the new copy on the heap, which `getenv` (and
/// `std::env::var`) return from then on, while the block `/proc` shows keeps only asterisks.
unsafe fn blank_initial_secrets() {
    use std::os::unix::ffi::OsStrExt;
    let secrets: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, value)| reins_tools::looks_secret(&name.to_string_lossy()) && !value.is_empty())
        .collect();
    if secrets.is_empty() {
        return;
    }
    // SAFETY: `environ` is a null-terminated array of NUL-terminated strings that this process
    // owns and may write (they live in its initial stack); no thread runs but this one.
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            let text = *entry;
            let bytes = CStr::from_ptr(text).to_bytes();
            if let Some(equals) = bytes.iter().position(|&byte| byte == b'=')
                && secrets.iter().any(|(name, _)| name.as_bytes() == &bytes[..equals])
            {
                for offset in equals + 1..bytes.len() {
                    *text.add(offset) = b'*' as c_char;
                }
            }
            entry = entry.add(1);
        }
        for (name, value) in secrets {
            std::env::set_var(name, value);
        }
    }
}
