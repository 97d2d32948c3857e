//! The guard that ends a stdio server's whole process group when reins dies, however it dies.
//!
//! The kernel's parent-death signal (`PR_SET_PDEATHSIG`) reaches only the direct child: when a
//! SIGKILLed reins took the server down, what the server had started (npx's node, a shell's
//! children) lived on. So the child reins starts is a guard: it forks the server, which runs
//! as it would have (same group, same streams), and waits. It ends with the server, with the
//! same status, or, when the kernel says reins is gone, kills the whole group, itself included.
//!
//! Everything here runs between `fork` and `exec` of a multithreaded program: only
//! async-signal-safe calls, no allocation.

use std::io;

/// The signal the kernel sends the guard when reins dies.
const PARENT_GONE: libc::c_int = libc::SIGUSR1;

/// The `pre_exec` step that puts a guard between reins (`reins`, its process id) and the
/// server.
///
/// # Safety
/// To be called only in the child between `fork` and `exec` (a `pre_exec` closure).
pub unsafe fn fork_guard(reins: libc::pid_t) -> io::Result<()> {
    // SAFETY: plain system calls on memory of this frame; see the module's comment.
    unsafe {
        let mut watched: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut watched);
        libc::sigaddset(&mut watched, libc::SIGCHLD);
        libc::sigaddset(&mut watched, PARENT_GONE);
        let mut previous: libc::sigset_t = std::mem::zeroed();
        // Blocked before the fork, so that neither signal is lost before the guard waits.
        if libc::pthread_sigmask(libc::SIG_BLOCK, &watched, &mut previous) != 0 {
            return Err(io::Error::last_os_error());
        }
        let server = libc::fork();
        if server < 0 {
            return Err(io::Error::last_os_error());
        }
        if server == 0 {
            // The server: its signal mask as it was; std goes on to exec it.
            libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
            return Ok(());
        }
        guard(server, reins, &watched)
    }
}

/// The guard's life: it never returns.
unsafe fn guard(server: libc::pid_t, reins: libc::pid_t, watched: &libc::sigset_t) -> ! {
    // SAFETY: as above.
    unsafe {
        // reins may have died before the kernel was asked to say so.
        if libc::prctl(libc::PR_SET_PDEATHSIG, PARENT_GONE as libc::c_ulong) != 0 || libc::getppid() != reins {
            libc::kill(0, libc::SIGKILL);
        }
        // The guard holds none of the server's streams (their ends must close with the server),
        // nor std's pipe that reports a failed exec (reins would wait on it for ever).
        if libc::syscall(libc::SYS_close_range, 0, libc::c_uint::MAX, 0) != 0 {
            for fd in 0..4096 {
                libc::close(fd);
            }
        }
        loop {
            let mut signal = 0;
            if libc::sigwait(watched, &mut signal) != 0 {
                continue;
            }
            if signal == PARENT_GONE {
                libc::kill(0, libc::SIGKILL);
            }
            let mut status = 0;
            if libc::waitpid(server, &mut status, libc::WNOHANG) == server {
                end_as(status);
            }
        }
    }
}

/// Ends the guard as the server ended: its exit code, or the signal that killed it.
unsafe fn end_as(status: libc::c_int) -> ! {
    // SAFETY: as above.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            let mut only: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut only);
            libc::sigaddset(&mut only, signal);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
        }
        let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 1 };
        libc::_exit(code)
    }
}
