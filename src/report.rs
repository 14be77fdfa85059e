//! Everything the tool says: one log line per attempt, the summary, the final line, the
//! termination message and the `--once` summary. Lines are written for people reading
//! `kubectl logs` on a bad morning: what failed, why, and how long the gate will still wait.

use crate::config::{Config, Output, TerminationLog};
use crate::human::secs;
use crate::probe::{Failure, Ready};
use crate::url;
use crate::wait::{AttemptReport, Next, Tally, Verdict};
use log::Level;
use std::io::Write;
use std::time::{Duration, Instant};

/// Log target of the final line: `--quiet` keeps only this target.
pub const OUTCOME: &str = "outcome";

/// Sets up logging to stderr: `info` by default, `RUST_LOG` when set, only the final line with
/// `--quiet`. Lines carry the time since start, which is what matters for a gate.
pub fn init_logging(quiet: bool, rust_log: Option<String>) {
    let start = Instant::now();
    let mut builder = env_logger::Builder::new();
    builder.target(env_logger::Target::Stderr);
    match (quiet, rust_log) {
        (true, _) => {
            builder.filter_level(log::LevelFilter::Off).filter(Some(OUTCOME), log::LevelFilter::Info);
        }
        (false, Some(spec)) if !spec.trim().is_empty() => {
            builder.parse_filters(&spec);
        }
        _ => {
            builder.filter_level(log::LevelFilter::Info);
        }
    }
    builder.format(move |buf, record| {
        writeln!(buf, "wait-for-idp +{:.3}s {:<5} {}", start.elapsed().as_secs_f64(), record.level(), record.args())
    });
    let _ = builder.try_init();
}

/// Demotes repeats of a cheap failure to debug level so that fast polling of a refused port
/// logs about once per interval, not ten times a second.
pub struct LineThrottle {
    every: Duration,
    last: Option<(String, Instant)>,
}

impl LineThrottle {
    pub fn new(every: Duration) -> LineThrottle {
        LineThrottle { every, last: None }
    }

    fn level_for(&mut self, failure: Option<&Failure>, now: Instant) -> Level {
        let Some(f) = failure else {
            self.last = None;
            return Level::Info;
        };
        let key = format!("{}: {}", f.class, f.detail);
        if f.cheap {
            if let Some((last_key, at)) = &self.last {
                if *last_key == key && now.duration_since(*at) < self.every {
                    return Level::Debug;
                }
            }
        }
        self.last = Some((key, now));
        Level::Info
    }
}

/// Logs one attempt.
pub fn log_attempt(label: &str, report: &AttemptReport<'_>, tally: &Tally, throttle: &mut LineThrottle) {
    let level = throttle.level_for(report.outcome.as_ref().err(), Instant::now());
    let next = match report.next {
        Next::Pause { pause, retry_after: Some(asked) } => {
            format!("Retry-After {} honoured; next in {}, {} left", secs(asked), secs(pause), secs(report.left))
        }
        Next::Pause { pause, retry_after: None } => format!("next in {}, {} left", secs(pause), secs(report.left)),
        Next::Stop(Verdict::Ready) => String::new(),
        Next::Stop(Verdict::AttemptsExhausted) => "last attempt".into(),
        Next::Stop(Verdict::DeadlineReached) => "no time left for another attempt".into(),
    };
    match report.outcome {
        Ok(ready) => log::log!(
            level,
            "{label}attempt {}: passed: issuer {:?} served by {}{}",
            report.number,
            ready.document.issuer,
            url::redact(&ready.url),
            match report.next {
                Next::Pause { .. } => format!(" ({} consecutive; {next})", tally.consecutive_successes),
                Next::Stop(_) => String::new(),
            }
        ),
        Err(f) => log::log!(level, "{label}attempt {}: {}: {} ({next})", report.number, f.class, f.detail),
    }
}

/// The prefix naming an issuer when several are waited for.
pub fn label(config: &Config, issuer: &str) -> String {
    if config.targets.len() > 1 { format!("[{}] ", url::redact(issuer)) } else { String::new() }
}

/// `connect=40 http-status=3`
pub fn failure_counts(tally: &Tally) -> String {
    tally.failures.iter().map(|(class, n)| format!("{class}={n}")).collect::<Vec<_>>().join(" ")
}

/// Why an issuer is not ready, in one phrase.
pub fn not_ready_reason(verdict: Verdict, tally: &Tally, config: &Config) -> String {
    match verdict {
        Verdict::Ready => "ready".into(),
        Verdict::DeadlineReached => {
            format!("timeout of {} used up", secs(config.timeout))
        }
        Verdict::AttemptsExhausted => format!("all {} attempt(s) used", tally.attempts),
    }
}

/// The effective settings, for `--dry-run`.
pub fn settings_summary(config: &Config, proxies: &crate::proxy::ProxySettings) -> String {
    let mut out = String::from("configuration is valid\n");
    for t in &config.targets {
        out.push_str(&format!("issuer          {}\n", url::redact(&t.issuer)));
        out.push_str(&format!("  metadata      {}\n", url::redact(&t.discovery_url)));
        if let Ok(parts) = crate::url::split(&t.discovery_url) {
            let via = proxies.for_url(&parts).map_or("direct".to_string(), |p| format!("proxy {}", p.display));
            out.push_str(&format!("  connect       {via}\n"));
        }
    }
    let r = &config.rules;
    out.push_str(&format!(
        "rules           {}{}{}\n",
        r.kind.as_str(),
        if r.strict { ", strict" } else { "" },
        if r.skip_issuer_check { ", issuer check skipped" } else { "" }
    ));
    out.push_str(&format!("extra CA certs  {}\n", config.extra_roots.len()));
    out.push_str(&format!(
        "timing          timeout {}, interval {}, attempt timeout {}, max attempts {}\n",
        secs(config.timeout),
        secs(config.interval),
        secs(config.attempt_timeout),
        config.max_attempts.map_or("unlimited".to_string(), |n| n.to_string())
    ));
    out.push_str(&format!(
        "when not ready  {}\n",
        if config.fail_closed { "fail closed (exit 1)" } else { "fail open (exit 0)" }
    ));
    for w in &config.warnings {
        out.push_str(&format!("warning         {w}\n"));
    }
    out
}

/// One issuer's result, for the JSON summary.
pub struct IssuerResult<'a> {
    pub target: &'a crate::config::Target,
    /// `None`: still waiting when the process ended (deadline or signal).
    pub verdict: Option<Verdict>,
    pub tally: &'a Tally,
}

/// The `--output json` summary: one object, documented in the README.
pub fn json_summary(outcome: Outcome, elapsed: Duration, issuers: &[IssuerResult<'_>]) -> String {
    use serde_json::{Value, json};
    let issuers: Vec<Value> = issuers
        .iter()
        .map(|r| {
            let ready = r.verdict == Some(Verdict::Ready);
            let endpoints = r.tally.last_ready.as_ref().filter(|_| ready).map(|rd| {
                let d = &rd.document;
                json!({
                    "authorization_endpoint": d.authorization_endpoint,
                    "token_endpoint": d.token_endpoint,
                    "jwks_uri": d.jwks_uri,
                    "userinfo_endpoint": d.userinfo_endpoint,
                })
            });
            let failures: serde_json::Map<String, Value> =
                r.tally.failures.iter().map(|(c, n)| (c.as_str().to_string(), json!(n))).collect();
            json!({
                "issuer": url::redact(&r.target.issuer),
                "discovery_url": url::redact(&r.target.discovery_url),
                "ready": ready,
                "verdict": match r.verdict {
                    Some(Verdict::Ready) => "ready",
                    Some(Verdict::DeadlineReached) | None => "deadline-reached",
                    Some(Verdict::AttemptsExhausted) => "attempts-exhausted",
                },
                "attempts": r.tally.attempts,
                "failures": failures,
                "last_failure": r.tally.last_failure.as_ref().map(|f| json!({"class": f.class.as_str(), "message": f.detail})),
                "endpoints": endpoints,
                "jwks_keys": r.tally.last_ready.as_ref().filter(|_| ready).and_then(|rd| rd.jwks_keys),
                "warnings": r.tally.last_ready.as_ref().filter(|_| ready).map_or(Vec::new(), |rd| rd.document.warnings.clone()),
            })
        })
        .collect();
    json!({
        "outcome": outcome.as_str(),
        "exit_code": outcome.code(),
        "attempts": issuers.iter().map(|i| i["attempts"].as_u64().unwrap_or(0)).sum::<u64>(),
        "elapsed_ms": elapsed.as_millis() as u64,
        "issuers": issuers,
    })
    .to_string()
}

/// The `--once` summary for stdout.
pub fn once_summary(ready: &Ready) -> String {
    let d = &ready.document;
    let mut out = String::new();
    let mut row = |k: &str, v: Option<&str>| {
        if let Some(v) = v {
            out.push_str(&format!("{k:<24}{v}\n"));
        }
    };
    row("issuer", Some(&d.issuer));
    let url = url::redact(&ready.url);
    row("metadata", Some(&url));
    row("authorization_endpoint", d.authorization_endpoint.as_deref());
    row("token_endpoint", d.token_endpoint.as_deref());
    row("userinfo_endpoint", d.userinfo_endpoint.as_deref());
    row("jwks_uri", d.jwks_uri.as_deref());
    let algs = d.id_token_signing_alg_values_supported.join(", ");
    row("signing algorithms", (!algs.is_empty()).then_some(algs.as_str()));
    for w in &d.warnings {
        row("warning", Some(w));
    }
    out
}

/// How the run ended, and the exit code that says so (README: "Exit codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ready,
    /// Not ready, and exiting 0 anyway: the default, so the worst case is no gate at all.
    FailedOpen,
    /// Not ready, with `--fail-closed` or `--once`.
    NotReady,
    /// Ended by this signal.
    Interrupted(i32),
}

/// Exit code of a usage or configuration error.
pub const EXIT_USAGE: i32 = 2;

impl Outcome {
    pub fn code(self) -> i32 {
        match self {
            Outcome::Ready | Outcome::FailedOpen => 0,
            Outcome::NotReady => 1,
            Outcome::Interrupted(signal) => 128 + signal,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ready => "ready",
            Outcome::FailedOpen => "failed-open",
            Outcome::NotReady => "not-ready",
            Outcome::Interrupted(_) => "interrupted",
        }
    }
}

/// Everything the tool says when it ends, gathered first and then delivered in one go.
#[derive(Debug)]
pub struct Conclusion {
    pub outcome: Outcome,
    /// Log lines before the final one (warnings, per-issuer reasons).
    pub lines: Vec<(Level, String)>,
    /// The final line: the log's last, and the termination message.
    pub last: (Level, String),
    /// What goes to stdout: the `--once` summary or the JSON summary.
    pub stdout: Option<String>,
}

/// How long the end of the run may spend saying so. Each sink (termination log, stdout, stderr)
/// gets a thread; one that blocks (a stalled pipe, a FIFO, a hung mount) is left behind, and the
/// process exits with its code all the same, within the promised deadline + 0.1 s.
pub const DELIVERY_BOUND: Duration = Duration::from_millis(40);

impl Conclusion {
    /// Writes the termination message, stdout and the log lines, each on a thread of its own,
    /// and waits for them at most [`DELIVERY_BOUND`]. Write errors are ignored: they must not
    /// change the exit code, and there is nowhere left to report them.
    pub fn deliver(self, termination_log: &TerminationLog) -> i32 {
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
        let (log, line) = (termination_log.clone(), self.last.1.clone());
        spawn(Box::new(move || write_termination_log(&log, &line)));
        if let Some(text) = self.stdout {
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
pub fn conclude(config: &Config, issuers: &[IssuerResult<'_>], elapsed: Duration) -> Conclusion {
    let attempts: u32 = issuers.iter().map(|r| r.tally.attempts).sum();
    let took = secs(elapsed);
    let mut lines = Vec::new();
    if issuers.iter().all(|r| r.verdict == Some(Verdict::Ready)) {
        let mut once = String::new();
        for r in issuers {
            if let Some(ready) = &r.tally.last_ready {
                for w in &ready.document.warnings {
                    lines.push((Level::Warn, format!("{}{w}", label(config, &r.target.issuer))));
                }
                if config.once {
                    once.push_str(&once_summary(ready));
                }
            }
        }
        let names: Vec<String> = issuers.iter().map(|r| url::redact(&r.target.issuer)).collect();
        let last = (Level::Info, format!("ready: {} after {attempts} attempt(s) in {took}", names.join(", ")));
        let stdout = match config.output {
            Output::Json => Some(json_summary(Outcome::Ready, elapsed, issuers)),
            Output::Text => (!once.is_empty()).then_some(once),
        };
        return Conclusion { outcome: Outcome::Ready, lines, last, stdout };
    }

    let mut reasons = Vec::new();
    for r in issuers.iter().filter(|r| r.verdict != Some(Verdict::Ready)) {
        let label = label(config, &r.target.issuer);
        let reason = not_ready_reason(r.verdict.unwrap_or(Verdict::DeadlineReached), r.tally, config);
        lines.push((
            Level::Warn,
            match &r.tally.last_failure {
                Some(f) => format!("{label}not ready ({reason}): last failure {}: {}", f.class, f.detail),
                None => format!("{label}not ready ({reason}) before any attempt finished"),
            },
        ));
        if r.tally.attempts > 0 {
            lines.push((
                Level::Warn,
                format!("{label}{} attempt(s), failures by class: {}", r.tally.attempts, failure_counts(r.tally)),
            ));
        }
        let class = r.tally.last_failure.as_ref().map_or("none", |f| f.class.as_str());
        reasons.push(format!("{} ({reason}; last failure: {class})", url::redact(&r.target.issuer)));
    }
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
    let stdout = (config.output == Output::Json).then(|| json_summary(outcome, elapsed, issuers));
    Conclusion { outcome, lines, last, stdout }
}

/// The conclusion of a wait ended by SIGTERM or SIGINT.
pub fn interrupted(config: &Config, issuers: &[IssuerResult<'_>], signal: i32, elapsed: Duration) -> Conclusion {
    let name = if signal == signal_hook::consts::SIGINT { "SIGINT" } else { "SIGTERM" };
    let attempts: u32 = issuers.iter().map(|r| r.tally.attempts).sum();
    let outcome = Outcome::Interrupted(signal);
    let last =
        (Level::Warn, format!("interrupted by {name} after {attempts} attempt(s) in {}; not ready", secs(elapsed)));
    let stdout = (config.output == Output::Json).then(|| json_summary(outcome, elapsed, issuers));
    Conclusion { outcome, lines: Vec::new(), last, stdout }
}

/// Writes the final line where Kubernetes shows it in `kubectl describe pod`. A missing default
/// file (outside a pod) or an unwritable one is skipped without a word: it is a courtesy, not a
/// duty. Only a regular file is written: the file is opened without blocking (a FIFO without a
/// reader would otherwise hold the gate forever) and left alone if it is anything else.
pub fn write_termination_log(t: &TerminationLog, line: &str) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::FailureClass;

    #[test]
    fn repeated_refusals_are_demoted_within_the_interval() {
        let mut t = LineThrottle::new(Duration::from_secs(1));
        let refused = Failure { cheap: true, ..Failure::new(FailureClass::Connect, "refused") };
        let start = Instant::now();
        assert_eq!(t.level_for(Some(&refused), start), Level::Info);
        assert_eq!(t.level_for(Some(&refused), start + Duration::from_millis(100)), Level::Debug);
        assert_eq!(t.level_for(Some(&refused), start + Duration::from_millis(1_100)), Level::Info);
        let status = Failure::new(FailureClass::HttpStatus, "503");
        assert_eq!(t.level_for(Some(&status), start + Duration::from_millis(1_200)), Level::Info);
        assert_eq!(t.level_for(Some(&status), start + Duration::from_millis(1_300)), Level::Info);
    }
}
