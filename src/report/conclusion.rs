//! What the tool says when the wait ends: the outcome, the final line, the reasons for each
//! target not ready, and what goes to stdout, gathered into one [`Conclusion`] to be delivered.

use super::failure_text;
use super::json::json_summary;
use super::log_lines::failure_counts;
use super::once::once_summary;
use super::outcome::{Ended, Outcome, TargetResult};
use super::target_label::label;
use crate::config::Config;
use crate::config::Output;
use crate::config::RunMode;
use crate::human::secs;
use crate::url;
use log::Level;
use std::time::Duration;

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

/// The conclusion of a wait that ended (all ready, one not ready, or the deadline).
pub(crate) fn conclude(config: &Config, mode: RunMode, issuers: &[TargetResult<'_>], elapsed: Duration) -> Conclusion {
    let attempts: u32 = issuers.iter().map(|r| r.tally.attempts).sum();
    let took = secs(elapsed);
    let mut lines = Vec::new();
    if issuers.iter().all(|r| r.ended() == Ended::Ready) {
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
        let last = (
            Level::Info,
            format!(
                "ready: {} after {attempts} attempt(s) in {took}{}",
                names.join(", "),
                then(config, Outcome::Ready)
            ),
        );
        let stdout = match config.output {
            Output::Json => Some(json_summary(config, Outcome::Ready, elapsed, issuers)),
            Output::Text => (!once.is_empty()).then_some(once),
        };
        return Conclusion { outcome: Outcome::Ready, lines, last, stdout };
    }

    let reasons = not_ready_lines(config, issuers, elapsed, &mut lines);
    let summary = format!("{} after {attempts} attempt(s) in {took}", reasons.join(", "));
    let (outcome, last) = not_ready_line(config, &format!("not ready: {summary}"), "as without the gate");
    let stdout = (config.output == Output::Json).then(|| json_summary(config, outcome, elapsed, issuers));
    Conclusion { outcome, lines, last, stdout }
}

/// The final line of a run not ready: failing closed, or failing open and starting the workload.
fn not_ready_line(config: &Config, reason: &str, as_without: &str) -> (Outcome, (Level, String)) {
    if config.fail_closed {
        let closed = format!("{reason}; failing closed (exit 1){}", then(config, Outcome::NotReady));
        return (Outcome::NotReady, (Level::Error, closed));
    }
    let start = match &config.then {
        Some(command) => format!("handing over to {} anyway", command.name()),
        None => "starting the workload anyway".to_string(),
    };
    let as_without = if as_without.is_empty() { String::new() } else { format!(", {as_without}") };
    let code = if config.then.is_some() { "" } else { " (exit 0)" };
    (Outcome::FailedOpen, (Level::Warn, format!("failing open: {reason}; {start}{as_without}{code}")))
}

/// What the final line adds about the command after `--`: that the gate hands over to it, or
/// that it is not run. Its name only, never its arguments: those may hold secrets (`vault write
/// … password=…`), and this line also goes to the termination message and the JSON's readers.
fn then(config: &Config, outcome: Outcome) -> String {
    match &config.then {
        None => String::new(),
        Some(command) if outcome.starts_workload() => format!("; handing over to {}", command.name()),
        Some(command) => format!("; {} not run", command.name()),
    }
}

/// For each target not ready: why, with its last failure's class and detail, for the final line
/// (and so the termination message); and as log lines before it, what the final line does not
/// say: an attempt under way, a wait cut short or interrupted, and the failures by class.
fn not_ready_lines(
    config: &Config,
    issuers: &[TargetResult<'_>],
    elapsed: Duration,
    lines: &mut Vec<(Level, String)>,
) -> Vec<String> {
    let mut reasons = Vec::new();
    // Those that finished not ready first: what ended the wait leads the final line, and so
    // survives the termination message's cut.
    let mut not_ready: Vec<&TargetResult<'_>> = issuers.iter().filter(|r| r.ended() != Ended::Ready).collect();
    not_ready.sort_by_key(|r| r.verdict.is_none());
    for r in not_ready {
        let label = label(config, r.target);
        let reason = not_ready_reason(r, config, elapsed);
        let cut_short = matches!(r.ended(), Ended::CutShort(_) | Ended::Interrupted);
        if r.in_flight.is_some() || cut_short || r.tally.attempts == 0 {
            let mut line = match r.tally.attempts {
                0 => format!("{label}not ready ({reason}) before any attempt finished"),
                n => format!("{label}not ready ({reason}) after {n} attempt(s)"),
            };
            if let Some(at) = &r.in_flight {
                line.push_str(&format!("; attempt {} was under way: {at}", r.tally.attempts + 1));
            }
            lines.push((Level::Warn, line));
        }
        if r.tally.attempts > 1 {
            lines.push((
                Level::Warn,
                format!("{label}{} attempt(s), failures by class: {}", r.tally.attempts, failure_counts(r.tally)),
            ));
        }
        let last = r.tally.last_failure.as_ref().map_or("none".to_string(), failure_text::line);
        reasons.push(format!("{} ({reason}; last failure: {last})", url::redact(r.target.name())));
    }
    reasons
}

/// The conclusion of a wait ended by SIGTERM or SIGINT.
pub(crate) fn interrupted(config: &Config, issuers: &[TargetResult<'_>], signal: i32, elapsed: Duration) -> Conclusion {
    let name = if signal == libc::SIGINT { "SIGINT" } else { "SIGTERM" };
    let attempts: u32 = issuers.iter().map(|r| r.tally.attempts).sum();
    let outcome = Outcome::Interrupted(signal);
    // The signal may come just as every target has passed, before anything was said: then the
    // run is interrupted all the same (nothing said `ready`, the command does not run).
    let all_ready = !issuers.is_empty() && issuers.iter().all(|r| r.ended() == Ended::Ready);
    let not_ready = if all_ready { ", just as the wait ended ready" } else { "; not ready" };
    let last = (
        Level::Warn,
        format!(
            "interrupted by {name} after {attempts} attempt(s) in {}{not_ready}{}",
            secs(elapsed),
            then(config, outcome)
        ),
    );
    let stdout = (config.output == Output::Json).then(|| json_summary(config, outcome, elapsed, issuers));
    let mut lines = Vec::new();
    not_ready_lines(config, issuers, elapsed, &mut lines);
    Conclusion { outcome, lines, last, stdout }
}

/// The conclusion when the gate could not even start waiting (no thread, no TLS set-up): not
/// ready, failing open or closed as configured, with the reason.
pub(crate) fn cannot_wait(config: &Config, error: &anyhow::Error, elapsed: Duration) -> Conclusion {
    let reason = format!("cannot wait: {error:#}");
    let reason = if config.fail_closed { format!("not ready: {reason}") } else { reason };
    let (outcome, last) = not_ready_line(config, &reason, "");
    let stdout = (config.output == Output::Json).then(|| json_summary(config, outcome, elapsed, &[]));
    Conclusion { outcome, lines: Vec::new(), last, stdout }
}

/// Why a target is not ready, in one phrase; `elapsed` is when the run ended.
fn not_ready_reason(r: &TargetResult<'_>, config: &Config, elapsed: Duration) -> String {
    match r.ended() {
        Ended::Ready => "ready".into(),
        Ended::DeadlineReached => format!("timeout of {} used up", secs(config.timing.timeout)),
        Ended::AttemptsExhausted => format!("all {} attempt(s) used", r.tally.attempts),
        Ended::CertificateRejected => "certificate rejected, a check oauth2-proxy skips".into(),
        Ended::Conclusive => "wait ended early".into(),
        Ended::CutShort(i) => format!(
            "cut short after {}: {} ended the wait",
            secs(elapsed),
            config.targets.get(i).map_or(String::new(), |t| url::redact(t.name()))
        ),
        Ended::Interrupted => format!("interrupted after {}", secs(elapsed)),
    }
}
