//! Everything the tool says: one log line per attempt, the summary, the final line, the
//! termination message and the `--once` summary. Lines are written for people reading
//! `kubectl logs` on a bad morning: what failed, why, and how long the gate will still wait.

use crate::config::{Config, Output, RunMode, TerminationLog};
use crate::human::secs;
use crate::token;
use crate::url;
use crate::wait::Verdict;
use log::Level;
use std::io::Write;
use std::time::{Duration, Instant};

mod json;
mod log_lines;
mod once;
mod outcome;
mod settings;

use json::json_summary;
pub(crate) use log_lines::{LineThrottle, init_logging, label, log_attempt};
use log_lines::{OUTCOME, failure_counts};
use once::once_summary;
use outcome::{EXIT_USAGE, Outcome};
pub(crate) use outcome::{IssuerResult, Stopped};
pub(crate) use settings::{dry_run, startup, usage_error};

/// Why an issuer is not ready, in one phrase; `elapsed` is when the run ended.
fn not_ready_reason(r: &IssuerResult<'_>, config: &Config, elapsed: Duration) -> String {
    match (r.verdict, r.stopped) {
        (Some(Verdict::Ready), _) => "ready".into(),
        (Some(Verdict::DeadlineReached), _) | (None, Stopped::Deadline) => {
            format!("timeout of {} used up", secs(config.timeout))
        }
        (Some(Verdict::AttemptsExhausted), _) => format!("all {} attempt(s) used", r.tally.attempts),
        (Some(Verdict::Conclusive), _) => "certificate rejected, a check oauth2-proxy skips".into(),
        (None, Stopped::By(i)) => format!(
            "cut short after {}: {} ended the wait",
            secs(elapsed),
            config.targets.get(i).map_or(String::new(), |t| url::redact(t.name()))
        ),
        (None, Stopped::Signal(_)) => format!("interrupted after {}", secs(elapsed)),
    }
}

/// Everything the tool says when it ends, gathered first and then delivered in one go.
#[derive(Debug)]
pub(crate) struct Conclusion {
    pub(crate) outcome: Outcome,
    /// Log lines before the final one (warnings, per-issuer reasons).
    pub(crate) lines: Vec<(Level, String)>,
    /// The final line: the log's last, and the termination message.
    pub(crate) last: (Level, String),
    /// What goes to stdout: the `--once` summary or the JSON summary.
    pub(crate) stdout: Option<String>,
}

/// How long the end of the run may spend saying so. Each sink (termination log, stdout, stderr)
/// gets a thread; one that blocks (a stalled pipe, a FIFO, a hung mount) is left behind, and the
/// process exits with its code all the same, within the promised deadline + 0.1 s.
pub(crate) const DELIVERY_BOUND: Duration = Duration::from_millis(40);

impl Conclusion {
    /// Writes the termination message, stdout and the log lines, each on a thread of its own,
    /// and waits for them at most [`DELIVERY_BOUND`]. Write errors are ignored: they must not
    /// change the exit code, and there is nowhere left to report them.
    pub(crate) fn deliver(self, termination_log: &TerminationLog) -> i32 {
        let code = self.outcome.code();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut sinks = 0;
        let mut spawn = |job: Box<dyn FnOnce() + Send>| {
            let tx = tx.clone();
            if std::thread::Builder::new()
                .spawn(move || {
                    job();
                    let _ = tx.send(());
                })
                .is_ok()
            {
                sinks += 1;
            }
        };
        // Whatever a server sent back, no token the gate has read leaves the process.
        let (log, line) = (termination_log.clone(), token::scrub(&self.last.1).into_owned());
        spawn(Box::new(move || write_termination_log(&log, &line)));
        if let Some(text) = self.stdout.map(|t| token::scrub(&t).into_owned()) {
            spawn(Box::new(move || {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            }));
        }
        let (lines, last) = (self.lines, self.last);
        spawn(Box::new(move || {
            for (level, line) in lines {
                log::log!(level, "{line}");
            }
            log::log!(target: OUTCOME, last.0, "{}", last.1);
        }));
        let until = Instant::now() + DELIVERY_BOUND;
        for _ in 0..sinks {
            if rx.recv_timeout(until.saturating_duration_since(Instant::now())).is_err() {
                break;
            }
        }
        code
    }
}

/// The conclusion of a wait that ended (all ready, one not ready, or the deadline).
pub(crate) fn conclude(config: &Config, mode: RunMode, issuers: &[IssuerResult<'_>], elapsed: Duration) -> Conclusion {
    let attempts: u32 = issuers.iter().map(|r| r.tally.attempts).sum();
    let took = secs(elapsed);
    let mut lines = Vec::new();
    if issuers.iter().all(|r| r.verdict == Some(Verdict::Ready)) {
        let mut once = String::new();
        for r in issuers {
            if let Some(ready) = &r.tally.last_ready {
                for w in ready.warnings.iter().chain(ready.servers.iter().flat_map(|s| &s.document.warnings)) {
                    lines.push((Level::Warn, format!("{}{w}", label(config, r.target))));
                }
                if mode.once {
                    once.push_str(&once_summary(ready));
                }
            }
        }
        let names: Vec<String> = issuers.iter().map(|r| url::redact(r.target.name())).collect();
        let last = (Level::Info, format!("ready: {} after {attempts} attempt(s) in {took}", names.join(", ")));
        let stdout = match config.output {
            Output::Json => Some(json_summary(config, Outcome::Ready, elapsed, issuers)),
            Output::Text => (!once.is_empty()).then_some(once),
        };
        return Conclusion { outcome: Outcome::Ready, lines, last, stdout };
    }

    let reasons = not_ready_lines(config, issuers, elapsed, &mut lines);
    let summary = format!("{} after {attempts} attempt(s) in {took}", reasons.join(", "));
    let (outcome, last) = if config.fail_closed {
        (Outcome::NotReady, (Level::Error, format!("not ready: {summary}; failing closed (exit 1)")))
    } else {
        (
            Outcome::FailedOpen,
            (
                Level::Warn,
                format!(
                    "failing open: not ready: {summary}; starting the workload anyway, as without the gate (exit 0)"
                ),
            ),
        )
    };
    let stdout = (config.output == Output::Json).then(|| json_summary(config, outcome, elapsed, issuers));
    Conclusion { outcome, lines, last, stdout }
}

/// For each target not ready: why, its last failure, its attempt under way if any, and its
/// failures by class, as log lines; returns the one-phrase reasons for the final line.
fn not_ready_lines(
    config: &Config,
    issuers: &[IssuerResult<'_>],
    elapsed: Duration,
    lines: &mut Vec<(Level, String)>,
) -> Vec<String> {
    let mut reasons = Vec::new();
    for r in issuers.iter().filter(|r| r.verdict != Some(Verdict::Ready)) {
        let label = label(config, r.target);
        let reason = not_ready_reason(r, config, elapsed);
        let mut line = match &r.tally.last_failure {
            Some(f) => format!("{label}not ready ({reason}): last failure {}: {}", f.class, f.detail),
            None if r.tally.attempts == 0 => format!("{label}not ready ({reason}) before any attempt finished"),
            None => format!("{label}not ready ({reason}) with no failed attempt"),
        };
        if let Some(at) = &r.in_flight {
            line.push_str(&format!("; attempt {} was under way: {at}", r.tally.attempts + 1));
        }
        lines.push((Level::Warn, line));
        if r.tally.attempts > 0 {
            lines.push((
                Level::Warn,
                format!("{label}{} attempt(s), failures by class: {}", r.tally.attempts, failure_counts(r.tally)),
            ));
        }
        let class = r.tally.last_failure.as_ref().map_or("none", |f| f.class.as_str());
        reasons.push(format!("{} ({reason}; last failure: {class})", url::redact(r.target.name())));
    }
    reasons
}

/// The conclusion of a wait ended by SIGTERM or SIGINT.
pub(crate) fn interrupted(config: &Config, issuers: &[IssuerResult<'_>], signal: i32, elapsed: Duration) -> Conclusion {
    let name = if signal == signal_hook::consts::SIGINT { "SIGINT" } else { "SIGTERM" };
    let attempts: u32 = issuers.iter().map(|r| r.tally.attempts).sum();
    let outcome = Outcome::Interrupted(signal);
    let last =
        (Level::Warn, format!("interrupted by {name} after {attempts} attempt(s) in {}; not ready", secs(elapsed)));
    let stdout = (config.output == Output::Json).then(|| json_summary(config, outcome, elapsed, issuers));
    let mut lines = Vec::new();
    not_ready_lines(config, issuers, elapsed, &mut lines);
    Conclusion { outcome, lines, last, stdout }
}

/// The conclusion when the gate could not even start waiting (no thread, no TLS set-up): not
/// ready, failing open or closed as configured, with the reason.
pub(crate) fn cannot_wait(config: &Config, error: &anyhow::Error, elapsed: Duration) -> Conclusion {
    let reason = format!("cannot wait: {error:#}");
    let (outcome, last) = if config.fail_closed {
        (Outcome::NotReady, (Level::Error, format!("not ready: {reason}; failing closed (exit 1)")))
    } else {
        (Outcome::FailedOpen, (Level::Warn, format!("failing open: {reason}; starting the workload anyway (exit 0)")))
    };
    let stdout = (config.output == Output::Json).then(|| json_summary(config, outcome, elapsed, &[]));
    Conclusion { outcome, lines: Vec::new(), last, stdout }
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
