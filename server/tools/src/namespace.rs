//! Where a command runs and how long it lives. Wherever the kernel lets reins make them, each
//! command gets user, mount and PID namespaces of its own, as bubblewrap and Codex's Linux sandbox
//! make them: a fresh `/proc` that shows only the command's own processes (no other process's
//! environment, reins's and its parent's included); in the sandbox's modes a filesystem read-only
//! but for the writable directories, with `.git` (a worktree's or submodule's git directory too),
//! `.mcp.json` and `.reins/` read-only inside them and the denied paths masked; and an init
//! (PID 1) whose end ends every process of the command.
//!
//! The init ends when reins lets go of the command's control socket: on purpose (a timeout, a
//! cancel, the tool dropped with its session) or because reins ended, however it ended, since the
//! kernel closes a dead process's sockets. Background processes (`sleep 600 &`, `nohup`,
//! `setsid`) therefore live while reins does and never after. Where namespaces are refused, the
//! command's supervisor is a subreaper: on the same sign it kills its children round after round
//! (it inherits the children of those it kills, `setsid` ones included), then its process group.
//!
//! The process tokio forks, the *supervisor*, runs [`Enclosure::enter`] between fork and exec.
//! There it may not allocate or take locks (another thread of reins may have held one at the
//! fork), so everything it needs was built before, and it makes only system calls:
//!
//! ```text
//! reins ── supervisor (waits for init) ── init, PID 1 (reports the shell's status, reaps) ── shell
//! ```
//!
//! The mounts are made in a first user namespace, then the init moves into a second one: mounts
//! that pass from a namespace into a less privileged one are locked, so the command, root in its
//! namespace as it may be, can neither make them writable again nor unmount them.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::libc;

use crate::exec::{Sandbox, SandboxMode};

/// Names, in a workspace root, that reins or git read as trusted: written only by the user.
/// `.agents` holds project skills (`.agents/skills`), which a trusted workspace loads.
pub const PROTECTED_NAMES: &[&str] = &[".agents", ".git", ".mcp.json", ".reins"];

/// `open_tree(2)`: a copy of the mount tree at a path, not yet attached anywhere.
const OPEN_TREE_CLONE: libc::c_uint = 1;
/// `mount_setattr(2)` and `open_tree(2)`: the whole tree beneath, not only its top mount.
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOUNT_ATTR_RDONLY: u64 = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Everything the supervisor needs between fork and exec, built before the fork.
pub(crate) struct Enclosure {
    /// Namespaces, or a subreaper where the kernel refuses them.
    namespaces: bool,
    /// The command's end of the control socket: the init writes the shell's wait status on it,
    /// and ends the command when reins's end closes.
    report: OwnedFd,
    /// `ID ID 1`: the user (and group) keeps its id inside.
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// The command's working directory, entered again once the mounts are in place.
    cwd: CString,
    /// The filesystem's shape; `None` when the sandbox is off.
    layout: Option<Layout>,
    /// Room for the writable trees' copies, one per writable directory.
    clones: Vec<RawFd>,
}

/// What the sandbox makes of the filesystem, as canonical paths.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Layout {
    /// Writable, everything else read-only; a directory comes before the ones inside it.
    pub writable: Vec<CString>,
    /// Read-only again inside the writable ones: `.git`, `.mcp.json`, `.reins/`.
    pub read_only: Vec<CString>,
    /// Hidden: an empty directory (true) or an empty file over each.
    pub masked: Vec<(CString, bool)>,
}

/// Whether this kernel gives commands namespaces of their own; the error says why not. Found
/// once, by making them in a throwaway process.
pub fn namespace_support() -> Result<(), String> {
    static SUPPORT: OnceLock<Result<(), String>> = OnceLock::new();
    SUPPORT.get_or_init(probe).clone()
}

impl Enclosure {
    /// The enclosure for a command under `sandbox` for `roots`, started in `cwd`; `report` is the
    /// command's end of its control socket.
    pub(crate) fn new(sandbox: &Sandbox, roots: &[PathBuf], cwd: &Path, report: OwnedFd) -> io::Result<Self> {
        let namespaces = namespace_support().is_ok();
        let layout = (namespaces && sandbox.mode != SandboxMode::Off).then(|| layout(sandbox, roots));
        let clones = vec![-1; layout.as_ref().map_or(0, |layout| layout.writable.len())];
        Ok(Self {
            namespaces,
            report,
            uid_map: format!("{0} {0} 1\n", unsafe { libc::getuid() }).into_bytes(),
            gid_map: format!("{0} {0} 1\n", unsafe { libc::getgid() }).into_bytes(),
            cwd: c_path(cwd)?,
            layout,
            clones,
        })
    }

    /// Runs in the supervisor, between fork and exec: returns only in the shell's process, which
    /// then executes the command; the supervisor and the init never return.
    pub(crate) fn enter(&mut self) -> io::Result<()> {
        let report = self.report.as_raw_fd();
        // SAFETY: system calls on what was built before the fork; nothing here allocates.
        unsafe {
            if !self.namespaces {
                check(libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))?;
                let shell = check(libc::fork())?;
                if shell > 0 {
                    close_all_except(report);
                    supervise(shell, report, false);
                }
                return Ok(());
            }
            check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID))?;
            self.map_ids()?;
            check(libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            if let Some(layout) = &self.layout {
                layout.apply(&mut self.clones)?;
            }
            let init = check(libc::fork())?;
            if init > 0 {
                // The supervisor keeps nothing open (the init holds the socket) and lasts as
                // long as the init: the tool's child outlives the command's last process.
                close_all_except(-1);
                let mut status = 0;
                while libc::waitpid(init, &mut status, 0) < 0 && errno() == libc::EINTR {}
                libc::_exit(0);
            }
            // The init: ends if the supervisor is killed, sees only its namespace's processes.
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
            check(libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ))?;
            // Into a less privileged namespace: the mounts are locked as they are.
            check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))?;
            self.map_ids()?;
            let shell = check(libc::fork())?;
            if shell > 0 {
                close_all_except(report);
                supervise(shell, report, true);
            }
            // The shell: back where it was started, now that the mounts over it are made.
            check(libc::chdir(self.cwd.as_ptr()))?;
        }
        Ok(())
    }

    /// Keeps the user's and group's ids in the namespace just made.
    unsafe fn map_ids(&self) -> io::Result<()> {
        // SAFETY: (of the callers) between fork and exec; only system calls.
        unsafe {
            // Absent before Linux 3.19, where gid_map needs no such word.
            let _ = write_file(c"/proc/self/setgroups", b"deny");
            write_file(c"/proc/self/uid_map", &self.uid_map)?;
            write_file(c"/proc/self/gid_map", &self.gid_map)
        }
    }
}

impl Layout {
    /// Makes the mounts: the writable trees copied aside, everything made read-only, the copies
    /// put back, the protected paths made read-only again, the denied ones covered.
    unsafe fn apply(&self, clones: &mut [RawFd]) -> io::Result<()> {
        // SAFETY: (of the callers) between fork and exec; only system calls.
        unsafe {
            for (path, slot) in self.writable.iter().zip(clones.iter_mut()) {
                // A writable directory that does not exist is none to keep.
                *slot = open_tree(path, OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | AT_RECURSIVE);
            }
            read_only(libc::AT_FDCWD, c"/", 0)?;
            for (path, &fd) in self.writable.iter().zip(clones.iter()) {
                if fd >= 0 {
                    attach(fd, path)?;
                }
            }
            for path in &self.read_only {
                let fd = open_tree(path, OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | AT_RECURSIVE);
                if fd < 0 {
                    continue;
                }
                read_only(fd, c"", libc::AT_EMPTY_PATH as libc::c_uint)?;
                attach(fd, path)?;
            }
            for (path, directory) in &self.masked {
                if *directory {
                    check(libc::mount(
                        c"tmpfs".as_ptr(),
                        path.as_ptr(),
                        c"tmpfs".as_ptr(),
                        libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        c"size=4k,mode=000".as_ptr().cast(),
                    ))?;
                } else {
                    let fd = check(open_tree(c"/dev/null", OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint))?;
                    attach(fd, path)?;
                }
            }
        }
        Ok(())
    }
}

/// The filesystem of a command under `sandbox` (its mode not off) for `roots`.
pub(crate) fn layout(sandbox: &Sandbox, roots: &[PathBuf]) -> Layout {
    let canonical = |path: &Path| path.canonicalize().ok();
    let mut writable: Vec<PathBuf> = crate::sandbox::temporary_dirs().iter().filter_map(|dir| canonical(dir)).collect();
    if sandbox.mode == SandboxMode::WorkspaceWrite {
        writable.extend(roots.iter().chain(&sandbox.writable).filter_map(|dir| canonical(dir)));
    }
    writable.sort();
    writable.dedup();
    let mut read_only: Vec<PathBuf> = Vec::new();
    for root in roots.iter().filter_map(|root| canonical(root)) {
        read_only.extend(protected_paths(&root));
        read_only.extend(crate::repositories::git_metadata_around(&root));
    }
    read_only.extend(sandbox.read_only.iter().filter_map(|path| canonical(path)));
    read_only.retain(|path| writable.iter().any(|dir| path.starts_with(dir)));
    read_only.sort();
    read_only.dedup();
    let masked = sandbox
        .deny_read
        .iter()
        .filter_map(|path| canonical(path))
        .map(|path| {
            let directory = path.is_dir();
            (path, directory)
        })
        .collect::<Vec<_>>();
    let c = |path: &Path| c_path(path).ok();
    Layout {
        writable: writable.iter().filter_map(|path| c(path)).collect(),
        read_only: read_only.iter().filter_map(|path| c(path)).collect(),
        masked: masked.iter().filter_map(|(path, directory)| Some((c(path)?, *directory))).collect(),
    }
}

/// What in `root` only the user may change, as canonical paths of what exists: the names of
/// [`PROTECTED_NAMES`], and where `.git` is a file (a worktree, a submodule) the git directory
/// it names and that one's common directory, where its config and hooks are.
pub fn protected_paths(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for name in PROTECTED_NAMES {
        let path = root.join(name);
        if let Ok(real) = path.canonicalize() {
            found.push(real);
        }
    }
    found.extend(crate::repositories::git_metadata(root));
    found
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::other("a path holds a NUL byte"))
}

/// Waits for the shell and every process it leaves, writes the shell's wait status on `report`
/// when it ends, and ends everything when reins's end of the socket closes: as PID 1 by leaving
/// (the kernel kills the namespace), else by killing the process group. Leaves when no child is
/// left.
unsafe fn supervise(shell: libc::pid_t, report: RawFd, init: bool) -> ! {
    // SAFETY: (of the callers) a child process between fork and exec; only system calls.
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::sigaddset(&mut mask, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &mask, std::ptr::null_mut());
        let signals = libc::signalfd(-1, &mask, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        let mut reported = false;
        loop {
            loop {
                let mut status = 0;
                let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if pid > 0 {
                    if pid == shell && !reported {
                        let bytes = status.to_ne_bytes();
                        libc::write(report, bytes.as_ptr().cast(), bytes.len());
                        reported = true;
                    }
                    continue;
                }
                if pid == 0 {
                    break;
                }
                if errno() != libc::EINTR {
                    // No child is left.
                    libc::_exit(0);
                }
            }
            let mut fds = [
                libc::pollfd { fd: signals, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: report, events: libc::POLLIN, revents: 0 },
            ];
            // Without a signalfd, the children are looked at ten times a second.
            let timeout = if signals < 0 { 100 } else { -1 };
            if libc::poll(fds.as_mut_ptr(), 2, timeout) > 0 && fds[1].revents != 0 {
                // Reins let go (or ended): so does the command, whole.
                if !init {
                    kill_children();
                    libc::kill(0, libc::SIGKILL);
                }
                libc::_exit(137);
            }
            let mut drained = [0u8; 512];
            while fds[0].revents != 0 && libc::read(signals, drained.as_mut_ptr().cast(), drained.len()) > 0 {}
        }
    }
}

/// Kills every child of this process, a subreaper, round after round until none is left: the
/// children of those it kills become its own once those are gone. Reads `/proc` without
/// allocating; gives up after about five seconds.
unsafe fn kill_children() {
    // SAFETY: (of the callers) a child process between fork and exec; only system calls.
    unsafe {
        let me = libc::getpid();
        let pause = libc::timespec { tv_sec: 0, tv_nsec: 10_000_000 };
        for _ in 0..500 {
            kill_children_of(me);
            let mut status = 0;
            loop {
                let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if pid > 0 {
                    continue;
                }
                if pid < 0 && errno() == libc::ECHILD {
                    return;
                }
                break;
            }
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
    }
}

/// Kills the processes whose parent is `parent`; how many there were.
unsafe fn kill_children_of(parent: libc::pid_t) -> usize {
    // SAFETY: reads into buffers on the stack, within their lengths.
    unsafe {
        let dir = libc::open(c"/proc".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
        if dir < 0 {
            return 0;
        }
        let mut killed = 0;
        let mut entries = [0u8; 4096];
        loop {
            let read = libc::syscall(libc::SYS_getdents64, dir, entries.as_mut_ptr(), entries.len());
            if read <= 0 {
                break;
            }
            let mut at = 0usize;
            // Each entry: inode (8 bytes), offset (8), length (2), type (1), NUL-ended name.
            while at + 19 < read as usize {
                let length = usize::from(u16::from_ne_bytes([entries[at + 16], entries[at + 17]]));
                if length == 0 {
                    break;
                }
                let name = &entries[at + 19..(at + length).min(read as usize)];
                let name = &name[..name.iter().position(|&byte| byte == 0).unwrap_or(name.len())];
                if let Some(pid) = decimal(name)
                    && parent_of(pid) == Some(parent)
                {
                    libc::kill(pid, libc::SIGKILL);
                    killed += 1;
                }
                at += length;
            }
        }
        libc::close(dir);
        killed
    }
}

/// The parent of `pid`, from `/proc/<pid>/stat` ("pid (name) state ppid …").
unsafe fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let mut path = [0u8; 32];
    let mut at = 0;
    for &byte in b"/proc/" {
        path[at] = byte;
        at += 1;
    }
    let mut digits = [0u8; 12];
    let (mut count, mut rest) = (0, pid);
    while rest > 0 && count < digits.len() {
        digits[count] = b'0' + (rest % 10) as u8;
        rest /= 10;
        count += 1;
    }
    for index in (0..count).rev() {
        path[at] = digits[index];
        at += 1;
    }
    for &byte in b"/stat\0" {
        path[at] = byte;
        at += 1;
    }
    let mut stat = [0u8; 512];
    // SAFETY: `path` is NUL-terminated; `stat` is read within its length.
    let read = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let read = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        read
    };
    let stat = &stat[..usize::try_from(read).ok()?];
    let after_name = stat.iter().rposition(|&byte| byte == b')')? + 1;
    // ") S 123 …": the state, then the parent.
    let fields = stat.get(after_name..)?;
    let mut words = fields.split(|&byte| byte == b' ').filter(|word| !word.is_empty());
    words.next()?;
    decimal(words.next()?)
}

/// A positive decimal number, or `None`.
fn decimal(text: &[u8]) -> Option<libc::pid_t> {
    if text.is_empty() || text.len() > 10 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    text.iter().try_fold(0 as libc::pid_t, |number, &digit| {
        number.checked_mul(10)?.checked_add(libc::pid_t::from(digit - b'0'))
    })
}

/// Makes the mount tree at `dirfd`/`path` read-only, with everything mounted beneath it.
unsafe fn read_only(dirfd: RawFd, path: &CStr, flags: libc::c_uint) -> io::Result<()> {
    let attr = MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
    // SAFETY: `attr` has the kernel's layout and outlives the call.
    let done = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags | AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(done as libc::c_int).map(drop)
}

/// A detached copy of the mount tree at `path`, or -1.
unsafe fn open_tree(path: &CStr, flags: libc::c_uint) -> RawFd {
    // SAFETY: a NUL-terminated path.
    unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) as RawFd }
}

/// Attaches the detached tree `fd` at `path`, and closes `fd`.
unsafe fn attach(fd: RawFd, path: &CStr) -> io::Result<()> {
    // SAFETY: `fd` is a detached mount tree; the paths are NUL-terminated.
    let done = unsafe {
        let done = libc::syscall(
            libc::SYS_move_mount,
            fd,
            c"".as_ptr(),
            libc::AT_FDCWD,
            path.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        );
        libc::close(fd);
        done
    };
    check(done as libc::c_int).map(drop)
}

/// Writes `bytes` to the file at `path` in one write.
unsafe fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: a NUL-terminated path, a buffer of its length.
    unsafe {
        let fd = check(libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC))?;
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Closes every descriptor but `keep` (none when negative).
unsafe fn close_all_except(keep: RawFd) {
    let close_range = |first: libc::c_uint, last: libc::c_uint| {
        // SAFETY: closing descriptors this process no longer needs.
        let closed = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
        if closed != 0 {
            // Before Linux 5.9: one by one, as far as descriptors usually go.
            for fd in first..=last.min(65_535) {
                // SAFETY: as above.
                unsafe { libc::close(fd as RawFd) };
            }
        }
    };
    if keep < 0 {
        close_range(0, libc::c_uint::MAX);
        return;
    }
    let keep = keep as libc::c_uint;
    if keep > 0 {
        close_range(0, keep - 1);
    }
    close_range(keep + 1, libc::c_uint::MAX);
}

fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 { Err(io::Error::last_os_error()) } else { Ok(result) }
}

fn errno() -> libc::c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Makes, in a throwaway child, what a command's supervisor and init would: the namespaces, the
/// id maps, a private mount tree, a read-only copy of it and a fresh `/proc`.
fn probe() -> Result<(), String> {
    let uid_map = format!("{0} {0} 1\n", unsafe { libc::getuid() }).into_bytes();
    let gid_map = format!("{0} {0} 1\n", unsafe { libc::getgid() }).into_bytes();
    // SAFETY: the child makes only system calls on what was built before the fork, then leaves.
    let status = unsafe {
        let child = libc::fork();
        if child < 0 {
            return Err(format!("cannot start a process: {}", io::Error::last_os_error()));
        }
        if child == 0 {
            let step = |done: bool, code: i32| {
                if !done {
                    libc::_exit(code);
                }
            };
            step(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID) == 0, 10);
            let _ = write_file(c"/proc/self/setgroups", b"deny");
            step(write_file(c"/proc/self/uid_map", &uid_map).is_ok(), 11);
            step(write_file(c"/proc/self/gid_map", &gid_map).is_ok(), 11);
            let private = libc::MS_REC | libc::MS_PRIVATE;
            step(libc::mount(c"none".as_ptr(), c"/".as_ptr(), std::ptr::null(), private, std::ptr::null()) == 0, 12);
            let copy = open_tree(c"/", OPEN_TREE_CLONE | AT_RECURSIVE);
            step(copy >= 0 && read_only(copy, c"", libc::AT_EMPTY_PATH as libc::c_uint).is_ok(), 13);
            let init = libc::fork();
            if init == 0 {
                let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                let mounted =
                    libc::mount(c"proc".as_ptr(), c"/proc".as_ptr(), c"proc".as_ptr(), flags, std::ptr::null());
                libc::_exit(if mounted == 0 { 0 } else { 14 });
            }
            let mut status = 0;
            step(init > 0 && libc::waitpid(init, &mut status, 0) == init, 15);
            libc::_exit(if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 15 });
        }
        let mut status = 0;
        while libc::waitpid(child, &mut status, 0) < 0 {
            if errno() != libc::EINTR {
                return Err(format!("cannot wait for a process: {}", io::Error::last_os_error()));
            }
        }
        status
    };
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    match code {
        0 => Ok(()),
        10 => Err("the kernel refuses unprivileged user namespaces (see kernel.unprivileged_userns_clone, \
                   user.max_user_namespaces or AppArmor's restrict_unprivileged_userns)"
            .to_string()),
        11 => Err("a user namespace's id maps cannot be written".to_string()),
        12 | 13 => Err("mounts cannot be made in a user namespace (Linux 5.12 or later is needed)".to_string()),
        14 => Err("a fresh /proc cannot be mounted in a PID namespace (a container may mask /proc)".to_string()),
        _ => Err(format!("making namespaces failed (status {status})")),
    }
}

/// Sets `command` up to run enclosed under `sandbox` for `roots` (namespaces and lifetime, then
/// Landlock and seccomp where they apply) and gives reins's end of its control socket: the
/// command's first wait status arrives on it, and closing it ends the command and everything
/// it started. `command` must have its working directory set.
pub fn enclose(
    command: &mut std::process::Command,
    sandbox: &Sandbox,
    roots: &[PathBuf],
) -> io::Result<std::os::unix::net::UnixStream> {
    use std::os::unix::process::CommandExt;
    let cwd = match command.get_current_dir() {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir()?,
    };
    let (control, report) = std::os::unix::net::UnixStream::pair()?;
    let mut enclosure = Enclosure::new(sandbox, roots, &cwd, OwnedFd::from(report))?;
    let mut confinement = crate::sandbox::Confinement::new(sandbox, roots)?;
    // SAFETY: `enter` and `apply` only make system calls on what was built before the fork; they
    // do not allocate or lock.
    unsafe {
        command.pre_exec(move || {
            enclosure.enter()?;
            match confinement.as_mut() {
                Some(confinement) => confinement.apply(),
                None => Ok(()),
            }
        });
    }
    Ok(control)
}

/// Runs `program` with `args` enclosed under `sandbox` for `roots` in `cwd`, with exactly `env`,
/// and waits for it: its status, once it ended. What it left in the background ends with it,
/// and the calling process (a process of its own for the command: `reins sandbox-exec`, which
/// an editor's terminal runs) ends with its parent.
pub fn run_enclosed(
    sandbox: &Sandbox,
    roots: &[PathBuf],
    program: &std::ffi::OsStr,
    args: &[std::ffi::OsString],
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> io::Result<std::process::ExitStatus> {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(io::Error::from)?;
    let mut command = std::process::Command::new(program);
    command.args(args).env_clear().envs(env.iter().map(|(name, value)| (name, value)));
    command.current_dir(std::env::current_dir()?);
    let repositories = crate::new_repositories::RepositorySnapshot::take(sandbox, roots);
    let mut control = enclose(&mut command, sandbox, roots)?;
    let mut child = command.spawn()?;
    let mut status = [0u8; 4];
    let status = match control.read_exact(&mut status) {
        Ok(()) => std::process::ExitStatus::from_raw(i32::from_ne_bytes(status)),
        // Ended before it could say how: killed.
        Err(_) => std::process::ExitStatus::from_raw(libc::SIGKILL),
    };
    drop(control);
    let _ = child.wait();
    // Told on stderr, which the terminal (and the model reading it) shows.
    if let Some(repositories) = &repositories
        && let Some(notice) = repositories.notice(&repositories.disarm_new())
    {
        eprintln!("{notice}");
    }
    Ok(status)
}
