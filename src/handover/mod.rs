//! Becoming the command after `--`: the gate replaces itself with it (`execve`, with the same
//! environment, and no shell), so the command is the same process —
//! in a container, PID 1, receiving its own signals — and nothing of the gate stays behind.
//!
//! What a process keeps across `execve` unless told otherwise, and what is done about each here:
//! - **other threads** (the issuers' waits, the signal thread, a sink still writing): the kernel
//!   ends them, with the sockets they hold, since every descriptor Rust opens is close-on-exec;
//! - **descriptors**: every one from 3 up is marked close-on-exec, also those the gate inherited,
//!   so only stdin, stdout and stderr reach the command — except the sockets systemd passes for
//!   socket activation (`LISTEN_PID` = this process, `LISTEN_FDS` = N keeps 3 … 2 + N), which
//!   are meant for the command: the process and its PID stay the same, so the command finds them;
//! - **signal dispositions**: SIGTERM and SIGINT go back to what the gate's parent set (the
//!   default, or ignored as `nohup` or a shell's background job leaves them), as `env` passes
//!   them on. SIGPIPE is the exception: Rust's runtime sets it to ignored before the gate can
//!   record what it was, and an ignored disposition survives `execve`, so it is set back to the
//!   default, as `std::process::Command` does for a child;
//! - **the signal mask**: the one the gate's parent set, so a signal it blocked stays blocked.
//!   A SIGTERM or SIGINT that came after the wait ended has been kept pending since
//!   ([`signals::hold`]): it meets the command's disposition then, and ends the process as it
//!   would end the command (or is dropped, if the parent ignored it).
//!
//! A name without a slash is looked for in `PATH` as musl's `execvp` looks (also when the binary
//! is built against glibc, whose `execvp` would run a file without `#!` through `/bin/sh`): each
//! directory in turn, an empty entry the working directory, the next one tried after a file that
//! is missing or not executable; when none ran, "permission denied" if one was found but not
//! executable, else "not found".

pub(crate) mod signals;

use crate::settings::ThenCommand;
use std::ffi::{CString, c_int};
use std::os::unix::ffi::OsStrExt;

/// Replaces the process with `then`; returns only if that did not happen (the command was not
/// found, or could not be run), with why. Whether to hand over was decided before: a signal that
/// comes now is the command's.
pub(crate) fn exec(then: &ThenCommand) -> std::io::Error {
    let (argv, candidates) = match arguments(then).and_then(|argv| Ok((argv, candidates(then, path())?))) {
        Ok(both) => both,
        Err(e) => return e,
    };
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    pointers.push(std::ptr::null());
    let listen_pid = std::env::var("LISTEN_PID").ok();
    let listen_fds = std::env::var("LISTEN_FDS").ok();
    close_on_exec_from(first_not_passed_on(listen_pid.as_deref(), listen_fds.as_deref(), std::process::id()));
    signals::restore();
    search(&candidates, &pointers)
}

/// The `PATH` searched: the process's, else the default of musl's `execvp`.
pub(crate) fn path() -> Vec<u8> {
    std::env::var_os("PATH").map_or_else(|| DEFAULT_PATH.as_bytes().to_vec(), |p| p.as_bytes().to_vec())
}

/// musl's `execvp` searches this when `PATH` is not set.
pub(crate) const DEFAULT_PATH: &str = "/usr/local/bin:/bin:/usr/bin";

/// Where to look for the program, in order: the name itself when it holds a slash, else each
/// `PATH` directory joined to it.
fn candidates(then: &ThenCommand, path: Vec<u8>) -> std::io::Result<Vec<CString>> {
    let name = then.program.as_bytes();
    let joined = |dir: &[u8]| match dir {
        b"" => name.to_vec(),
        dir if dir.ends_with(b"/") => [dir, name].concat(),
        dir => [dir, b"/", name].concat(),
    };
    let paths: Vec<Vec<u8>> =
        if name.contains(&b'/') { vec![name.to_vec()] } else { path.split(|b| *b == b':').map(joined).collect() };
    paths.into_iter().map(|p| CString::new(p).map_err(|_| std::io::ErrorKind::InvalidInput.into())).collect()
}

/// Tries each candidate with `execve`; returns only when none ran, with why.
fn search(candidates: &[CString], argv: &[*const libc::c_char]) -> std::io::Error {
    unsafe extern "C" {
        static environ: *const *const libc::c_char;
    }
    let mut found_but_not_executable = false;
    for candidate in candidates {
        // SAFETY: `candidate` and `argv` (NUL-terminated, pointing into live `CString`s) outlive
        // the call; `environ` is the process's own environment, which nothing changes now.
        unsafe { libc::execve(candidate.as_ptr(), argv.as_ptr(), environ) };
        let error = std::io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EACCES) => found_but_not_executable = true,
            Some(libc::ENOENT | libc::ENOTDIR) => {}
            _ => return error,
        }
    }
    std::io::Error::from_raw_os_error(if found_but_not_executable { libc::EACCES } else { libc::ENOENT })
}

/// The program and its arguments as C strings; the program is also `argv[0]`, as a shell gives it.
fn arguments(then: &ThenCommand) -> std::io::Result<Vec<CString>> {
    std::iter::once(&then.program)
        .chain(&then.args)
        .map(|word| {
            // The kernel hands arguments over as C strings, so none holds a NUL; checked anyway.
            CString::new(word.as_bytes()).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
        })
        .collect()
}

/// The first descriptor not meant for the command: 3, or past the sockets systemd passed to this
/// very process for socket activation (sd_listen_fds(3): `LISTEN_PID` and `LISTEN_FDS`).
fn first_not_passed_on(listen_pid: Option<&str>, listen_fds: Option<&str>, pid: u32) -> c_int {
    let ours = listen_pid.and_then(|p| p.trim().parse::<u32>().ok()) == Some(pid);
    let passed = listen_fds.and_then(|n| n.trim().parse::<u16>().ok()).filter(|_| ours).unwrap_or(0);
    3 + c_int::from(passed)
}

/// Marks every descriptor from `first` up close-on-exec: `close_range(2)` where the kernel has
/// it (Linux 5.11), else each descriptor `/proc/self/fd` lists, else every possible one.
fn close_on_exec_from(first: c_int) {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    let Ok(from) = libc::c_uint::try_from(first) else { return };
    // SAFETY: close_range takes plain integers and marks descriptors; it touches no memory.
    if unsafe { libc::syscall(libc::SYS_close_range, from, libc::c_uint::MAX, CLOSE_RANGE_CLOEXEC) } == 0 {
        return;
    }
    let listed: Option<Vec<c_int>> = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|dir| dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect());
    // SAFETY: sysconf only reads a limit.
    let limit = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(0, 65_536) as c_int;
    for fd in listed.unwrap_or_else(|| (first..limit).collect()).into_iter().filter(|fd| *fd >= first) {
        // SAFETY: fcntl on a descriptor number; one that is not open fails with EBADF, ignored.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_activation_descriptors_are_passed_on_only_when_meant_for_this_process() {
        assert_eq!(first_not_passed_on(None, None, 42), 3);
        assert_eq!(first_not_passed_on(Some("42"), Some("2"), 42), 5);
        // Meant for another process (a parent that did not clear them): nothing is kept.
        assert_eq!(first_not_passed_on(Some("41"), Some("2"), 42), 3);
        assert_eq!(first_not_passed_on(Some("42"), None, 42), 3);
        assert_eq!(first_not_passed_on(Some("42"), Some("many"), 42), 3);
        assert_eq!(first_not_passed_on(Some("x"), Some("2"), 42), 3);
    }

    #[test]
    fn a_name_without_a_slash_is_looked_for_in_each_path_directory() {
        let then = |program: &str| ThenCommand { program: program.into(), args: Vec::new() };
        let found = candidates(&then("vault"), b"/usr/bin:/opt/x/::/bin/".to_vec()).unwrap();
        assert_eq!(found, [c"/usr/bin/vault", c"/opt/x/vault", c"vault", c"/bin/vault"].map(CString::from));
        let found = candidates(&then("./run.sh"), b"/usr/bin".to_vec()).unwrap();
        assert_eq!(found, [c"./run.sh"].map(CString::from));
    }

    #[test]
    fn the_program_is_also_argv_0() {
        let then = ThenCommand { program: "vault".into(), args: vec!["write".into(), "".into()] };
        let argv = arguments(&then).unwrap();
        assert_eq!(argv, [c"vault", c"write", c""].map(CString::from));
    }
}
