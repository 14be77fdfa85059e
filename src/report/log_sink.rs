//! Where the log lines go: stderr, written by a thread of its own from a bounded queue, so that
//! no line ever waits for stderr.
//!
//! A stderr that takes nothing (a pipe nobody reads, a log collector that stalls, a terminal on
//! hold) stopped whoever wrote to it: the start line held the main thread before the deadline
//! was armed (still running 5 s into a `--timeout 1s`), and an attempt's line held its prober
//! (issue 35 §3). Now a line is only queued. The queue holds at most [`QUEUE_BYTES`]; past that
//! the oldest lines make room, since the newest say where the wait is, and the writer says how
//! many it lost, where it lost them, once stderr takes lines again. The final line is waited for
//! ([`drained`]), within the delivery's bound.

use super::thread_state;
use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The most the queue holds: a few hundred lines, a handful of MiB never.
const QUEUE_BYTES: usize = 64 * 1024;

struct Queue {
    lines: VecDeque<Vec<u8>>,
    bytes: usize,
    /// Lines let go since the writer last said so.
    dropped: u64,
    queued: u64,
    /// Lines written, or let go, so far: [`drained`] waits for it to reach `queued`.
    done: u64,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue { lines: VecDeque::new(), bytes: 0, dropped: 0, queued: 0, done: 0 });
/// Signalled when a line is queued (for the writer) and when one is done (for [`drained`]).
static CHANGED: Condvar = Condvar::new();
/// The writer thread's id, once it runs (0 before).
static WRITER: AtomicI32 = AtomicI32::new(0);
/// How the writer says that lines were let go: a line in the log's own format.
static SAY_DROPPED: OnceLock<Box<dyn Fn(u64) -> String + Send + Sync>> = OnceLock::new();

/// The log's writer, as env_logger takes it: each record arrives whole, in one `write_all`.
pub(crate) enum Sink {
    /// Queued for the writer thread.
    Queued,
    /// No writer thread could be started: straight to stderr, as before.
    Direct,
}

impl Sink {
    /// Starts the writer thread; `say_dropped` makes the line that says how many lines were let go.
    pub(crate) fn start(say_dropped: Box<dyn Fn(u64) -> String + Send + Sync>) -> Sink {
        let _ = SAY_DROPPED.set(say_dropped);
        match std::thread::Builder::new().name("log".into()).spawn(write_out) {
            Ok(_) => Sink::Queued,
            Err(_) => Sink::Direct,
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Sink::Direct = self {
            return std::io::stderr().write(buf);
        }
        let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
        while q.bytes + buf.len() > QUEUE_BYTES {
            let Some(old) = q.lines.pop_front() else { break };
            q.bytes -= old.len();
            q.dropped += 1;
            q.done += 1;
        }
        q.bytes += buf.len();
        q.lines.push_back(buf.to_vec());
        q.queued += 1;
        CHANGED.notify_all();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The writer thread: each line in turn, blocking on stderr as long as stderr makes it, which
/// holds up nobody else.
fn write_out() {
    WRITER.store(thread_state::current(), Ordering::Relaxed);
    let mut err = std::io::stderr();
    loop {
        let (line, dropped) = {
            let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
            while q.lines.is_empty() {
                q = CHANGED.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            let line = q.lines.pop_front().unwrap_or_default();
            q.bytes -= line.len();
            (line, std::mem::take(&mut q.dropped))
        };
        if let (1.., Some(say)) = (dropped, SAY_DROPPED.get()) {
            let _ = err.write_all(say(dropped).as_bytes());
        }
        let _ = err.write_all(&line);
        QUEUE.lock().unwrap_or_else(|e| e.into_inner()).done += 1;
        CHANGED.notify_all();
    }
}

/// Whether the writer thread is running or waiting for a CPU, rather than asleep (with nothing
/// to write, or blocked on a stderr that takes nothing).
pub(crate) fn writer_runnable() -> bool {
    let tid = WRITER.load(Ordering::Relaxed);
    tid != 0 && thread_state::runnable(tid)
}

/// Waits until every line queued so far is written (or let go): until `until`, and past it, up to
/// `cap`, while the writer is runnable (it waits for a CPU, not for stderr); whether it got there.
pub(crate) fn drained(until: Instant, cap: Instant) -> bool {
    let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
    let target = q.queued;
    while q.done < target {
        let now = Instant::now();
        let left = if now < until {
            until - now
        } else if now < cap && writer_runnable() {
            // Looked at again soon: the writer may yet block on stderr.
            (cap - now).min(Duration::from_millis(5))
        } else {
            return false;
        };
        q = CHANGED.wait_timeout(q, left).unwrap_or_else(|e| e.into_inner()).0;
    }
    true
}
