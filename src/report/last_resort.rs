//! The last word when the process cannot go on: memory ran out (an allocation failed: the
//! address-space bound, or no memory left to map), or an internal error stopped it. Rust then
//! aborts; before it dies, the gate's own handler of that abort (SIGABRT) writes a line prepared
//! while memory was there to the termination message and to stderr, with nothing allocated.
//!
//! A container's memory limit is another matter: the kernel kills the process there (SIGKILL)
//! without a word, and nothing can be said. What keeps the gate within the recipes' 32 Mi is
//! that it reads any document in about its own size (`rules::json_value`, docs/performance.md).

use crate::config::{RunMode, TerminationLog};
use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::{CString, c_int};
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// The system's allocator, noting the size of an allocation that failed.
pub(crate) struct Noting;

/// The size of the last allocation that failed, 0 if none has.
static FAILED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only a failure is noted.
unsafe impl GlobalAlloc for Noting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        noted(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        noted(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        noted(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
}

fn noted(ptr: *mut u8, size: usize) -> *mut u8 {
    if ptr.is_null() {
        FAILED.store(size.max(1), SeqCst);
    }
    ptr
}

#[global_allocator]
static ALLOCATOR: Noting = Noting;

/// What the handler says, made while memory was there.
struct Prepared {
    /// The line before and after the failed allocation's size, and the line for an internal error.
    memory: (Vec<u8>, Vec<u8>),
    internal: Vec<u8>,
    /// Prefix and suffix of the line on stderr (a JSON object for `--log-format json`).
    log: (Vec<u8>, Vec<u8>),
    termination: Option<(CString, bool)>,
}

static PREPARED: OnceLock<Prepared> = OnceLock::new();

/// Prepares the last word for this run and installs the handler that says it.
pub(crate) fn prepare(mode: RunMode, termination_log: &TerminationLog) {
    let memory = "not ready: the gate ran out of memory (an allocation of ";
    let memory_end = " bytes failed) and stopped (SIGABRT, exit 134); it needs about 20 MiB a target, \
                      whatever the servers send: its memory limit is too small";
    let internal = "not ready: the gate stopped on an internal error (the line above) (SIGABRT, exit 134)";
    let log = if mode.log_json {
        (&br#"{"level":"error","message":""#[..], &br#""}"#[..])
    } else {
        (&b"wait-for-idp ERROR "[..], &b""[..])
    };
    let path = CString::new(termination_log.path.as_os_str().as_bytes()).ok();
    let prepared = Prepared {
        memory: (memory.into(), memory_end.into()),
        internal: internal.into(),
        log: (log.0.into(), log.1.into()),
        termination: path.map(|p| (p, termination_log.create)),
    };
    if PREPARED.set(prepared).is_ok() {
        // SAFETY: the handler only calls async-signal-safe functions (alarm, open, fstat,
        // ftruncate, write, close) on memory prepared before.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_abort as extern "C" fn(c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESETHAND;
            libc::sigaction(libc::SIGABRT, &action, std::ptr::null_mut());
        }
    }
}

/// On SIGABRT: the termination message, then the line on stderr; the process then dies of the
/// abort (the action is reset, and abort(3) raises it again).
extern "C" fn on_abort(_: c_int) {
    let Some(p) = PREPARED.get() else { return };
    let mut digits = [0u8; 20];
    let size = FAILED.load(SeqCst);
    let parts: [&[u8]; 3] =
        if size == 0 { [&p.internal, b"", b""] } else { [&p.memory.0, decimal(size, &mut digits), &p.memory.1] };
    // SAFETY: async-signal-safe calls only, on buffers that live as long as the process. A
    // stderr that blocks cannot keep the process alive: the alarm ends it in a second.
    unsafe {
        libc::alarm(1);
        if let Some((path, create)) = &p.termination {
            let flags = libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | if *create { libc::O_CREAT } else { 0 };
            let fd = libc::open(path.as_ptr(), flags, 0o644);
            let mut stat: libc::stat = std::mem::zeroed();
            if fd >= 0 && libc::fstat(fd, &mut stat) == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFREG {
                libc::ftruncate(fd, 0);
                write_all(fd, &[parts[0], parts[1], parts[2], b"\n"]);
            }
            if fd >= 0 {
                libc::close(fd);
            }
        }
        write_all(2, &[&p.log.0, parts[0], parts[1], parts[2], &p.log.1, b"\n"]);
    }
}

/// `n` in decimal, in `buf`.
fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b"0123456789"[n % 10];
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// Writes each part to `fd`, as far as it goes.
unsafe fn write_all(fd: c_int, parts: &[&[u8]]) {
    for part in parts {
        let mut rest = *part;
        while !rest.is_empty() {
            // SAFETY: the caller's descriptor; the part is a live buffer.
            let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
            let Ok(n) = usize::try_from(n) else { return };
            if n == 0 {
                return;
            }
            rest = &rest[n..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_without_allocating() {
        let mut buf = [0; 20];
        assert_eq!(decimal(0, &mut buf), b"0");
        assert_eq!(decimal(632, &mut buf), b"632");
        assert_eq!(decimal(usize::MAX, &mut buf), usize::MAX.to_string().as_bytes());
    }
}
