//! SIGTERM and SIGINT, from the first instruction of `run` to the hand-over: what the gate's
//! parent set is recorded, a signal always ends the gate at once or is left for the command, and
//! none is lost in between.
//!
//! - **Only the main thread takes them.** Every other thread is started with SIGTERM and SIGINT
//!   blocked (it inherits the main thread's mask at that moment, see [`Quiet`]), so the handler
//!   runs on the main thread alone, never concurrently with what the main thread decides.
//! - **Before the wait** (reading the configuration, loading `SSL_CERT_DIR`, setting up TLS) the
//!   handler itself writes one line to stderr and exits 128 + the signal: nothing is running that
//!   has anything to say yet, and a read that takes long cannot hold the signal back.
//! - **While waiting** it records the signal in an atomic and wakes the main loop through a pipe,
//!   which a thread turns into an event; the main loop then concludes `interrupted`.
//! - **When the wait ends**, [`hold`] blocks both on the main thread too, so no thread takes one
//!   any more: a signal that came before is the one the handler recorded, and the run is
//!   concluded as interrupted; one that comes after stays pending. What is said (the log, the
//!   JSON, the termination message) is decided then, before it is written, so it never says
//!   `ready` for a run that ends 143.
//! - **At the hand-over**, [`restore`] puts back the dispositions and the mask the parent set,
//!   as `env` would pass them on; a signal pending from after [`hold`] then meets the command's
//!   disposition at once (the default ends the process, as it would end the command; ignored,
//!   it is dropped, as the command would drop it).
//!
//! A signal the parent ignored or blocked is left so for the gate as well.

use std::ffi::c_int;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::SeqCst};

/// What the gate's parent set, before anything was changed.
struct Inherited {
    mask: libc::sigset_t,
    /// SIGTERM's and SIGINT's dispositions: ignored or not (a handler does not survive `execve`).
    ignored: [bool; 2],
}

const HANDLED: [c_int; 2] = [libc::SIGTERM, libc::SIGINT];

static INHERITED: OnceLock<Inherited> = OnceLock::new();
/// Set when the wait begins: before, the handler ends the process itself.
static WAITING: AtomicBool = AtomicBool::new(false);
/// The first signal taken while waiting, 0 if none.
static TAKEN: AtomicI32 = AtomicI32::new(0);
/// The pipe's write end that wakes the main loop, -1 if there is none.
static WAKE: AtomicI32 = AtomicI32::new(-1);

/// SIGTERM and SIGINT in a set.
fn handled_set() -> libc::sigset_t {
    // SAFETY: sigemptyset and sigaddset only write the set they are given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in HANDLED {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// Records what the parent set, installs the handler for SIGTERM and SIGINT (unless the parent
/// ignored them) and starts the thread that calls `on_signal` with each one taken while waiting.
/// If that thread cannot start, a signal ends the gate at once in the wait as well.
pub(crate) fn install(on_signal: impl Fn(i32) + Send + 'static) -> std::io::Result<()> {
    let quiet = Quiet::new();
    let mut ignored = [false; 2];
    for (i, signal) in HANDLED.into_iter().enumerate() {
        // SAFETY: a query (no new action), into a zeroed struct.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) };
        ignored[i] = old.sa_sigaction == libc::SIG_IGN;
    }
    let _ = INHERITED.set(Inherited { mask: quiet.0, ignored });
    // SAFETY: the handler only touches atomics and calls write(2) and _exit(2), both
    // async-signal-safe; it runs with both signals blocked, so never within itself.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal_handler as extern "C" fn(c_int) as libc::sighandler_t;
        action.sa_mask = handled_set();
        action.sa_flags = libc::SA_RESTART;
        for (signal, ignored) in HANDLED.into_iter().zip(ignored) {
            if !ignored {
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    }
    let mut fds = [-1; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let read_end = fds[0];
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        let mut byte = 0u8;
        // SAFETY: reads one byte into `byte`, from the pipe's read end, which stays open.
        while unsafe { libc::read(read_end, (&raw mut byte).cast(), 1) } == 1 {
            on_signal(i32::from(byte));
        }
    })?;
    WAKE.store(fds[1], SeqCst);
    Ok(())
}

/// The handler: before the wait, a line and the exit; while waiting, the signal recorded and the
/// main loop woken.
extern "C" fn on_signal_handler(signal: c_int) {
    let wake = WAKE.load(SeqCst);
    if !WAITING.load(SeqCst) || wake < 0 {
        let line: &[u8] = if signal == libc::SIGINT {
            b"wait-for-idp: interrupted by SIGINT before the wait began; not ready (exit 130)\n"
        } else {
            b"wait-for-idp: interrupted by SIGTERM before the wait began; not ready (exit 143)\n"
        };
        // SAFETY: write(2) and _exit(2) are async-signal-safe; the line is static.
        unsafe {
            libc::write(2, line.as_ptr().cast(), line.len());
            libc::_exit(128 + signal);
        }
    }
    let _ = TAKEN.compare_exchange(0, signal, SeqCst, SeqCst);
    // SAFETY: errno saved and put back around write(2), which is async-signal-safe.
    unsafe {
        let errno = *libc::__errno_location();
        let byte = signal as u8;
        libc::write(wake, (&raw const byte).cast(), 1);
        *libc::__errno_location() = errno;
    }
}

/// The wait begins: from now on a signal is recorded and ends the wait as interrupted.
pub(crate) fn waiting() {
    WAITING.store(true, SeqCst);
}

/// The wait is over: blocks SIGTERM and SIGINT on the main thread (every other thread has them
/// blocked), so a signal from now on stays pending for the command; returns the signal taken
/// before, if any.
pub(crate) fn hold() -> Option<i32> {
    std::mem::forget(Quiet::new());
    Some(TAKEN.load(SeqCst)).filter(|s| *s != 0)
}

/// With `--serve`, after the start: SIGTERM and SIGINT taken on this (the main) thread again,
/// recorded by the handler and passed to the main loop, which ends the sidecar.
pub(crate) fn release() {
    // SAFETY: unblocks the two signals on the calling thread.
    unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &handled_set(), std::ptr::null_mut()) };
}

/// Just before `execve`: the dispositions and the mask the gate's parent set, as `env` passes
/// them on; SIGPIPE back to its default, which Rust's runtime replaced with "ignored" before
/// anything could record it (as `std::process::Command` does for a child). A signal pending since
/// [`hold`] then has the command's disposition.
pub(crate) fn restore() {
    let inherited = INHERITED.get();
    let ignored = inherited.map_or([false; 2], |i| i.ignored);
    for (signal, ignored) in HANDLED.into_iter().zip(ignored).chain([(libc::SIGPIPE, false)]) {
        let disposition = if ignored { libc::SIG_IGN } else { libc::SIG_DFL };
        // SAFETY: SIG_DFL and SIG_IGN are valid dispositions for these signals.
        unsafe { libc::signal(signal, disposition) };
    }
    // SAFETY: sets the calling thread's mask to a set recorded earlier (or an empty one).
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::pthread_sigmask(libc::SIG_SETMASK, inherited.map_or(&mask, |i| &i.mask), std::ptr::null_mut());
    }
}

/// SIGTERM and SIGINT blocked on this thread while it lives, so that the threads started
/// meanwhile inherit them blocked; the mask before is put back when it is dropped.
pub(crate) struct Quiet(libc::sigset_t);

impl Quiet {
    pub(crate) fn new() -> Quiet {
        // SAFETY: blocks the two signals on this thread, keeping the mask before.
        unsafe {
            let mut before: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &handled_set(), &mut before);
            Quiet(before)
        }
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        // SAFETY: sets this thread's mask back to the one recorded.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's mask, as it is now.
    fn mask_now() -> libc::sigset_t {
        // SAFETY: a query of this thread's mask into a zeroed set.
        unsafe {
            let mut now: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut now);
            now
        }
    }

    #[test]
    fn threads_started_while_quiet_never_take_sigterm_or_sigint_and_the_mask_comes_back() {
        // On a thread of its own, so that the test harness's threads are not touched.
        std::thread::spawn(|| {
            let blocked = |set: &libc::sigset_t, signal| unsafe { libc::sigismember(set, signal) } == 1;
            let before = mask_now();
            let quiet = Quiet::new();
            assert!(HANDLED.iter().all(|s| blocked(&mask_now(), *s)));
            let inherited = std::thread::spawn(mask_now).join().unwrap();
            assert!(HANDLED.iter().all(|s| blocked(&inherited, *s)));
            drop(quiet);
            assert!(HANDLED.iter().all(|s| blocked(&mask_now(), *s) == blocked(&before, *s)));
        })
        .join()
        .unwrap();
    }
}
