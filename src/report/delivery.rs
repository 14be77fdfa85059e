//! Saying it, bounded in time: the conclusion goes to the termination log, stdout and stderr,
//! each on a thread of its own, and no sink that blocks can hold the process past its deadline;
//! and the last word after it, when the command after `--` cannot be run.

use super::conclusion::Conclusion;
use super::exit_code::ExitCode;
use super::log_lines::OUTCOME;
use crate::config::TerminationLog;
use crate::screen_text;
use crate::token;
use log::Level;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a sink may spend taking what it is given. Each sink (termination log, stdout, stderr)
/// gets a thread; one that blocks (a stalled pipe, a FIFO, a hung mount) is left behind once it
/// has been at its write this long, and the process exits with its code all the same, within the
/// promised deadline + 0.1 s.
pub(crate) const DELIVERY_BOUND: Duration = Duration::from_millis(40);
/// How long a sink's thread may take to be scheduled at all. A thread that has not started is
/// not blocked on anything outside the process: it waits for a CPU, as on a loaded node, and
/// leaving it behind would lose the last word for no reason (seen: one run in ten at load 8).
/// This only bounds a scheduler that never comes.
pub(crate) const SCHEDULING_BOUND: Duration = Duration::from_secs(2);

impl Conclusion {
    /// Writes the termination message, stdout and the log lines, each on a thread of its own,
    /// and waits for them at most [`DELIVERY_BOUND`]. Write errors are ignored: they must not
    /// change the exit code, and there is nowhere left to report them.
    pub(crate) fn deliver(self, termination_log: &TerminationLog) -> ExitCode {
        let code = self.outcome.exit_code();
        let mut jobs: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
        // Whatever a server sent back, no token the gate has read leaves the process.
        let (log, line) = (termination_log.clone(), termination_message(&shown(&self.last.1)));
        jobs.push(Box::new(move || write_termination_log(&log, &line)));
        if let Some(text) = self.stdout.map(|t| screen_text::escape(&token::scrub(&t), true).into_owned()) {
            jobs.push(Box::new(move || {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            }));
        }
        let (lines, last) = (self.lines, self.last);
        jobs.push(Box::new(move || {
            for (level, line) in lines {
                log::log!(level, "{line}");
            }
            log::log!(target: OUTCOME, last.0, "{}", last.1);
            // Written, not only queued, before the process ends (bounded by `bounded`).
            let now = Instant::now();
            super::log_sink::drained(now + DELIVERY_BOUND, now + SCHEDULING_BOUND);
        }));
        bounded(jobs);
        code
    }
}

/// A last word after the conclusion (the command after `--` could not be run): the log's final
/// line and the termination message, which replaces the one that said the gate was handing over.
fn say_last(level: Level, line: String, termination_log: &TerminationLog) {
    let log = termination_log.clone();
    let line = shown(&line);
    let (logged, line) = (line.clone(), termination_message(&line));
    bounded(vec![
        Box::new(move || write_termination_log(&log, &line)),
        Box::new(move || {
            log::log!(target: OUTCOME, level, "{logged}");
            let now = Instant::now();
            super::log_sink::drained(now + DELIVERY_BOUND, now + SCHEDULING_BOUND);
        }),
    ]);
}

/// A line as shown: no secret, no control character (scrubbed first, so that the escapes
/// cannot split one).
fn shown(line: &str) -> String {
    screen_text::escape(&token::scrub(line), false).into_owned()
}

/// Runs each job on a thread of its own and waits for each until it is done, or until it has
/// been at work for [`DELIVERY_BOUND`] (a sink that blocks), or, not yet started, for
/// [`SCHEDULING_BOUND`]. A job past its bound whose thread, or the log's writer, is runnable is
/// waiting for a CPU, not blocked on its sink: it is waited for too, within [`SCHEDULING_BOUND`].
fn bounded(jobs: Vec<Box<dyn FnOnce() + Send>>) {
    // Each job: None, done; Some(None), not started; Some(Some((at, tid))), at work since `at` on
    // thread `tid`. A lock and a condition variable rather than a channel: a channel of its own
    // type costs the binary 4 KiB.
    type Jobs = (Mutex<Vec<Option<Option<(Instant, i32)>>>>, Condvar);
    let shared: Arc<Jobs> = Arc::default();
    for (i, job) in jobs.into_iter().enumerate() {
        // Listed before its thread starts, which then only changes its own entry.
        if let Ok(mut jobs) = shared.0.lock() {
            jobs.push(Some(None));
        }
        let mine = shared.clone();
        let set = move |state| {
            if let Some(entry) = mine.0.lock().ok().as_mut().and_then(|jobs| jobs.get_mut(i)) {
                *entry = state;
            }
            mine.1.notify_all();
        };
        let spawned = std::thread::Builder::new().spawn(move || {
            set(Some(Some((Instant::now(), super::thread_state::current()))));
            job();
            set(None);
        });
        if let (Err(_), Ok(mut jobs)) = (spawned, shared.0.lock()) {
            jobs[i] = None;
        }
    }
    let scheduling = Instant::now() + SCHEDULING_BOUND;
    let Ok(mut jobs) = shared.0.lock() else { return };
    let mut waiting_for_a_cpu = scheduling - SCHEDULING_BOUND;
    loop {
        let working = jobs.iter().flatten();
        let until = working.map(|at| at.map_or(scheduling, |(at, _)| at + DELIVERY_BOUND)).max();
        let Some(until) = until.map(|until| until.max(waiting_for_a_cpu)) else { return };
        let now = Instant::now();
        if now < until {
            let Ok((next, _)) = shared.1.wait_timeout(jobs, until - now) else { return };
            jobs = next;
            continue;
        }
        // Every job still at work is past its bound. One whose thread, or the log's writer, is
        // runnable waits for a CPU, not for its sink: looked at again soon, within the cap.
        let at_work = jobs.iter().flatten().flatten();
        let runnable =
            at_work.map(|(_, tid)| *tid).any(super::thread_state::runnable) || super::log_sink::writer_runnable();
        if !runnable || now >= scheduling {
            return;
        }
        waiting_for_a_cpu = (now + Duration::from_millis(5)).min(scheduling);
    }
}

/// The kubelet keeps at most 4096 bytes of a termination message.
const TERMINATION_LIMIT: usize = 4096;
const CUT: &str = " … [cut at 4 KiB; the log has all of it]";

/// The final line as the termination message: whole if it fits the kubelet's 4 KiB with its
/// newline, else cut on a character boundary and marked, so that what the kubelet keeps still
/// says it was cut.
fn termination_message(line: &str) -> String {
    if line.len() < TERMINATION_LIMIT {
        return line.to_string();
    }
    let mut end = TERMINATION_LIMIT - 1 - CUT.len();
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT}", &line[..end])
}

/// Writes the final line where Kubernetes shows it in `kubectl describe pod`. A missing default
/// file (outside a pod) or an unwritable one is skipped without a word: it is a courtesy, not a
/// duty. Only a regular file is written: the file is opened without blocking (a FIFO without a
/// reader would otherwise hold the gate forever) and left alone if it is anything else.
pub(crate) fn write_termination_log(t: &TerminationLog, line: &str) {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(t.create)
        .mode(0o644)
        .custom_flags(libc::O_NONBLOCK)
        .open(&t.path);
    let Ok(mut file) = file else { return };
    if file.metadata().is_ok_and(|m| m.file_type().is_file()) && file.set_len(0).is_ok() {
        let _ = writeln!(file, "{line}");
    }
}

/// The command after `--` could not be run: 127 when it was not found, 126 when it was but could
/// not be run, as `env` and `sh` exit; the log and the termination message say which, and what
/// to check. `path` is the `PATH` searched (for a name without a slash), its default if unset.
pub(crate) fn cannot_hand_over(
    name: &str,
    error: &std::io::Error,
    path: &str,
    termination_log: &TerminationLog,
) -> ExitCode {
    let (code, why) = match error.raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR) => {
            let searched = if name.contains('/') { String::new() } else { format!(" in PATH ({path})") };
            (ExitCode::CommandNotFound, format!("not found{searched}; check the name, or give its full path"))
        }
        Some(libc::EACCES) => (
            ExitCode::CommandCannotRun,
            "permission denied: it must be a file with execute permission, in directories that can be searched"
                .to_string(),
        ),
        Some(libc::ENOEXEC) => (
            ExitCode::CommandCannotRun,
            "not an executable format (a script needs a #! line; the gate runs no shell)".to_string(),
        ),
        _ => (ExitCode::CommandCannotRun, error.to_string()),
    };
    let line = format!("cannot hand over to {name}: {why} (exit {})", code.code());
    say_last(Level::Error, line, termination_log);
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_termination_message_fits_4_kib_cut_on_a_character_boundary() {
        assert_eq!(termination_message("ready"), "ready");
        for filler in ["a", "é", "😀"] {
            let long = filler.repeat(5000);
            let cut = termination_message(&long);
            assert!(cut.len() < TERMINATION_LIMIT && cut.len() > TERMINATION_LIMIT - 8 - CUT.len(), "{}", cut.len());
            assert!(cut.ends_with(CUT) && cut.starts_with(filler), "{filler}");
        }
    }

    fn said(error: std::io::Error, name: &str) -> (ExitCode, String) {
        let dir = tempfile::tempdir().unwrap();
        let log = TerminationLog { path: dir.path().join("termination-log"), create: true };
        let code = cannot_hand_over(name, &error, "/opt/bin:/usr/bin", &log);
        (code, std::fs::read_to_string(&log.path).unwrap())
    }

    #[test]
    fn a_command_not_found_is_127_and_one_that_cannot_run_126_as_env_and_sh_say() {
        let (code, line) = said(std::io::Error::from_raw_os_error(libc::ENOENT), "vault");
        assert_eq!(code, ExitCode::CommandNotFound);
        assert_eq!(
            line,
            "cannot hand over to vault: not found in PATH (/opt/bin:/usr/bin); check the name, or give its full path \
             (exit 127)\n"
        );
        let (code, line) = said(std::io::Error::from_raw_os_error(libc::ENOTDIR), "/opt/vault/bin");
        assert_eq!(code, ExitCode::CommandNotFound);
        assert!(line.starts_with("cannot hand over to /opt/vault/bin: not found; check the name"), "{line}");
        for (errno, why) in [
            (libc::EACCES, "permission denied: it must be a file with execute permission"),
            (libc::ENOEXEC, "not an executable format (a script needs a #! line; the gate runs no shell)"),
            (libc::E2BIG, "Argument list too long"),
        ] {
            let (code, line) = said(std::io::Error::from_raw_os_error(errno), "vault");
            assert_eq!(code, ExitCode::CommandCannotRun, "{line}");
            assert!(line.starts_with(&format!("cannot hand over to vault: {why}")), "{line}");
            assert!(line.trim_end().ends_with("(exit 126)"), "{line}");
        }
    }
}
