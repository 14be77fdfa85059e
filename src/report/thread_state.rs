//! Whether a thread of this process is runnable: running, or waiting for a CPU. The delivery of
//! the last word bounds a sink that blocks (a stalled pipe, a FIFO, a hung mount), and a thread
//! blocked on one sleeps; a thread that is runnable is waiting for nothing but the scheduler, as
//! on a loaded node, and leaving it behind would lose the last word for no reason (seen: the
//! final log line missing from `kubectl logs` while the termination message had it).

/// The calling thread's id, for [`runnable`].
pub(crate) fn current() -> i32 {
    // SAFETY: gettid(2) takes no argument and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Whether the thread `tid` of this process is running or waiting for a CPU (state `R` in
/// `/proc/self/task/<tid>/stat`); false when that cannot be read (no `/proc`, the thread ended).
pub(crate) fn runnable(tid: i32) -> bool {
    use std::io::Read;
    // One read of a line of a few hundred bytes (a thread's name is at most 15), into the stack:
    // `fs::read` would cost the binary more than this whole module.
    let mut buffer = [0u8; 1024];
    let Ok(mut file) = std::fs::File::open(format!("/proc/self/task/{tid}/stat")) else { return false };
    let read = file.read(&mut buffer).unwrap_or(0);
    let stat = &buffer[..read];
    // The state follows the command's closing parenthesis and a space.
    let after = stat.iter().rposition(|&b| b == b')').map_or(&[][..], |at| &stat[at + 1..]);
    after.get(1) == Some(&b'R')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_at_work_is_runnable_and_one_asleep_is_not() {
        assert!(runnable(current()), "the calling thread is running");
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let sleeper = std::thread::spawn(move || {
            tx.send(current()).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        // Asleep on the channel once it has sent: never runnable for long.
        let asleep = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(5));
            !runnable(tid)
        });
        assert!(asleep, "a thread waiting on a channel sleeps");
        done_tx.send(()).unwrap();
        sleeper.join().unwrap();
        assert!(!runnable(tid), "a thread that has ended is not runnable");
        assert!(!runnable(-1));
    }
}
