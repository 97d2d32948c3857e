//! The kernel's side of a [`Sandbox`] inside the command's namespaces (`namespace.rs`): a Landlock
//! ruleset (files, TCP) where the kernel has Landlock, and a seccomp filter (every socket but a
//! Unix one) when the network is off, both built here in reins and applied by the command's own
//! process between fork and exec, so that the command and everything it starts are held to them
//! and reins itself is not.
//!
//! Landlock only grants. "Read everywhere but `~/.ssh`" is therefore spelt out: a directory with
//! a denied path beneath it is not granted whole, each of its entries is, but the denied one. An
//! entry created later in such a directory is not reachable by commands started before.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};

use crate::exec::{Sandbox, SandboxMode};

/// The newest Landlock ABI this code knows what to ask of; older kernels get what they support.
const ABI_USED: ABI = ABI::V6;

/// Device files every command may write, as a terminal program would.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"];

/// What a command's process applies to itself before it runs the command.
pub(crate) struct Confinement {
    ruleset: Option<RulesetCreated>,
    seccomp: Option<BpfProgram>,
}

/// Whether this kernel can hold commands to a sandbox's files: with namespaces of their own (see
/// `namespace.rs`) or with Landlock; the error says why neither.
pub fn sandbox_support() -> Result<(), String> {
    match (crate::namespace_support(), landlock_support()) {
        (Err(namespaces), Err(landlock)) => Err(format!("{namespaces}; and {landlock}")),
        _ => Ok(()),
    }
}

/// What holds commands here, a protection a line, for `reins config check` and the model: each
/// layer that is in force and each that is not, with why.
pub fn protections(sandbox: &Sandbox) -> Vec<(bool, String)> {
    let off = sandbox.mode == SandboxMode::Off;
    let mut lines = Vec::new();
    match crate::namespace_support() {
        Ok(()) if off => lines.push((
            true,
            "namespaces: each command sees only its own processes in /proc and ends with reins; files are not \
             restricted (sandbox.mode = \"off\")"
                .to_string(),
        )),
        Ok(()) => lines.push((
            true,
            "namespaces: each command sees only its own processes in /proc and ends with reins; the filesystem \
             is read-only but for the writable directories, .git, .mcp.json and .reins/ stay read-only, denied \
             paths are hidden"
                .to_string(),
        )),
        Err(reason) => lines.push((
            false,
            format!("namespaces: {reason}; commands can see other processes, and a subreaper ends them with reins"),
        )),
    }
    match landlock_support() {
        Ok(()) if off => lines.push((false, "landlock: not used (sandbox.mode = \"off\")".to_string())),
        Ok(()) => lines.push((true, "landlock: file access and TCP are held by the kernel's Landlock".to_string())),
        Err(reason) => lines.push((false, format!("landlock: {reason}"))),
    }
    if off {
        lines.push((false, "seccomp: not used (sandbox.mode = \"off\")".to_string()));
    } else if sandbox.network {
        lines.push((false, "seccomp: not used (sandbox.network = true)".to_string()));
    } else {
        lines.push((true, "seccomp: commands may open only Unix sockets (no IP, netlink, vsock or raw)".to_string()));
    }
    lines
}

/// Where every command may write, whatever the mode.
pub(crate) fn temporary_dirs() -> Vec<PathBuf> {
    vec![std::env::temp_dir(), PathBuf::from("/tmp"), PathBuf::from("/var/tmp"), PathBuf::from("/dev/shm")]
}

/// Whether this kernel has Landlock; the error says why not.
fn landlock_support() -> Result<(), String> {
    // A ruleset is created (not applied) only to learn whether the kernel has Landlock.
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|ruleset| ruleset.create());
    match created {
        Ok(_) => Ok(()),
        Err(_) => Err("this kernel has no Landlock (Linux 5.13 or later, with landlock in its lsm= list)".to_string()),
    }
}

impl Confinement {
    /// Builds, in this process, what the command's process will apply: `None` when the mode is
    /// off. Landlock where the kernel has it; the socket filter whenever the network is off.
    pub(crate) fn new(sandbox: &Sandbox, roots: &[PathBuf]) -> io::Result<Option<Self>> {
        if sandbox.mode == SandboxMode::Off {
            return Ok(None);
        }
        let ruleset = match landlock_support() {
            Ok(()) => Some(ruleset(sandbox, roots).map_err(io::Error::other)?),
            Err(_) => None,
        };
        let seccomp = if sandbox.network { None } else { Some(network_filter().map_err(io::Error::other)?) };
        Ok(Some(Self { ruleset, seccomp }))
    }

    /// Applies the confinement to the calling process. Runs between fork and exec: it must not
    /// allocate or take locks, and it does not (both were built before the fork).
    pub(crate) fn apply(&mut self) -> io::Result<()> {
        drop_ptrace_capability()?;
        if let Some(ruleset) = self.ruleset.take() {
            match ruleset.restrict_self() {
                Ok(status) if status.ruleset != RulesetStatus::NotEnforced => {}
                _ => return Err(io::Error::from_raw_os_error(nix::libc::EPERM)),
            }
        }
        if let Some(program) = &self.seccomp {
            seccompiler::apply_filter(program).map_err(|_| io::Error::from_raw_os_error(nix::libc::EPERM))?;
        }
        Ok(())
    }
}

/// Drops CAP_SYS_PTRACE, which a command run by root would otherwise have: with it, reading
/// reins's memory or `/proc/<reins>/environ` ignores that reins made itself non-dumpable. Landlock
/// keeps ptrace itself in check, but not every way into another process's memory. For a user
/// who is not root, there is nothing to drop.
fn drop_ptrace_capability() -> io::Result<()> {
    const CAP_SYS_PTRACE: u32 = 19;
    const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut header = Header { version: CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [Data::default(); 2];
    // SAFETY: both structs have the kernel's layout for version 3, which takes two data words.
    unsafe {
        // Without CAP_SETPCAP (not root) this fails, and there was nothing to drop.
        nix::libc::prctl(nix::libc::PR_CAPBSET_DROP, CAP_SYS_PTRACE as nix::libc::c_ulong, 0, 0, 0);
        if nix::libc::syscall(nix::libc::SYS_capget, &mut header, data.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        let bit = !(1u32 << CAP_SYS_PTRACE);
        data[0].effective &= bit;
        data[0].permitted &= bit;
        data[0].inheritable &= bit;
        if nix::libc::syscall(nix::libc::SYS_capset, &mut header, data.as_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Everything handled, then read granted everywhere and write under the writable directories,
/// both around the denied paths.
fn ruleset(sandbox: &Sandbox, roots: &[PathBuf]) -> Result<RulesetCreated, landlock::RulesetError> {
    let read = AccessFs::from_read(ABI_USED);
    let all = AccessFs::from_all(ABI_USED);
    let deny: Vec<PathBuf> = sandbox.deny_read.iter().filter_map(|path| path.canonicalize().ok()).collect();

    let mut writable: Vec<PathBuf> = temporary_dirs();
    if sandbox.mode == SandboxMode::WorkspaceWrite {
        writable.extend(roots.iter().cloned());
        writable.extend(sandbox.writable.iter().cloned());
    }
    let mut grants: BTreeMap<PathBuf, BitFlags<AccessFs>> = BTreeMap::new();
    grant(&mut grants, Path::new("/"), read, &deny);
    for dir in writable.iter().filter_map(|dir| dir.canonicalize().ok()) {
        grant(&mut grants, &dir, all, &deny);
    }
    for device in WRITABLE_DEVICES {
        grant(&mut grants, Path::new(device), all, &deny);
    }

    let mut ruleset = Ruleset::default().handle_access(all)?;
    if !sandbox.network {
        // TCP connect and bind (Landlock ABI 4); other sockets are for the seccomp filter.
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI_USED))?;
    }
    // Commands cannot signal processes outside the sandbox, such as reins or the editor.
    let mut created = ruleset.scope(Scope::Signal)?.create()?;
    for (path, access) in grants {
        let Ok(fd) = PathFd::new(&path) else { continue };
        // A file takes only the rights that apply to files.
        let access = if path.is_dir() { access } else { access & AccessFs::from_file(ABI_USED) };
        created = created.add_rule(PathBeneath::new(fd, access))?;
    }
    Ok(created.set_compatibility(CompatLevel::BestEffort))
}

/// Grants `access` to `path` whole, or, when a denied path lies beneath it, to each of its
/// entries but the denied ones.
fn grant(
    grants: &mut BTreeMap<PathBuf, BitFlags<AccessFs>>,
    path: &Path,
    access: BitFlags<AccessFs>,
    deny: &[PathBuf],
) {
    if deny.iter().any(|denied| path.starts_with(denied)) {
        return;
    }
    if !deny.iter().any(|denied| denied.starts_with(path)) {
        *grants.entry(path.to_path_buf()).or_insert_with(BitFlags::empty) |= access;
        return;
    }
    // The directory itself can be listed (which lists the names in the denied directory too,
    // never their contents): without it, `ls ~` would fail.
    *grants.entry(path.to_path_buf()).or_insert_with(BitFlags::empty) |= access & AccessFs::ReadDir;
    let Ok(entries) = std::fs::read_dir(path) else { return };
    for entry in entries.flatten() {
        // Entries are not followed: a link is granted as the link's own target would be, by
        // the kernel, which checks the real path.
        grant(grants, &entry.path(), access, deny);
    }
}

/// Refuses, with EPERM, every socket but a Unix one (IP, raw, netlink, which changes interfaces
/// as root, vsock, which reaches the host of a virtual machine), and io_uring (whose own socket
/// operations would get past the filter). Unix sockets stay: local tools need them.
fn network_filter() -> Result<BpfProgram, seccompiler::BackendError> {
    let not_unix = || -> Result<SeccompRule, seccompiler::BackendError> {
        SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            nix::libc::AF_UNIX as u64,
        )?])
    };
    let mut rules = BTreeMap::new();
    rules.insert(nix::libc::SYS_socket, vec![not_unix()?]);
    rules.insert(nix::libc::SYS_socketpair, vec![not_unix()?]);
    rules.insert(nix::libc::SYS_io_uring_setup, Vec::new());
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| seccompiler::BackendError::InvalidTargetArch(std::env::consts::ARCH.into()))?;
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(nix::libc::EPERM as u32), arch)?;
    filter.try_into()
}
