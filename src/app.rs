//! The process: signals, configuration, one waiting thread per issuer, and the outcome.
//!
//! The main thread never does network I/O. It waits for the issuers' threads, for a signal, or
//! for the deadline, whichever comes first, and then ends the process. So neither a resolver
//! stuck in `getaddrinfo` nor a server that drips bytes can keep the gate past its deadline, and
//! SIGTERM ends it at once even as PID 1 (where the kernel ignores signals without a handler).

use crate::cli;
use crate::config::{Config, ConfigError, Output};
use crate::http::HttpClient;
use crate::probe::{Checks, probe};
use crate::proxy::ProxySettings;
use crate::report::{self, LineThrottle, OUTCOME};
use crate::url;
use crate::wait::{self, Jitter, Schedule, SystemClock, Tally, ThreadSleeper, Verdict};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

pub const EXIT_READY: i32 = 0;
pub const EXIT_NOT_READY: i32 = 1;
pub const EXIT_USAGE: i32 = 2;

/// How long after the deadline the main thread still waits for an issuer's thread to report.
/// Attempts clipped by the deadline end early (`wait::UNWIND`), so this is only the backstop
/// that keeps the total within the promised `--timeout` + 0.1 s whatever an attempt is doing.
const GRACE: Duration = Duration::from_millis(25);

enum Event {
    Progress(usize, Tally),
    Finished(usize, Verdict, Tally),
    Signal(i32),
}

/// Runs the tool with the process's arguments and environment; returns the exit code.
pub fn main() -> i32 {
    let started = Instant::now();
    let (tx, rx) = mpsc::channel();
    install_signal_handlers(tx.clone());

    let cli = match cli::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let env = |name: &str| std::env::var(name).ok();
    let (config, proxies) = match Config::from_cli(&cli, &env).and_then(|c| Ok((c, ProxySettings::from_env(&env)?))) {
        Ok(v) => v,
        Err(e) => return usage_error(&e),
    };
    let unknown = cli::unknown_env_vars(std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()));
    if config.dry_run {
        if let Some((name, suggestion)) = unknown.into_iter().next() {
            return usage_error(&ConfigError::UnknownVariable { name, suggestion });
        }
        print!("{}", report::settings_summary(&config, &proxies));
        return EXIT_READY;
    }
    report::init_logging(config.quiet, std::env::var("RUST_LOG").ok());
    for (name, suggestion) in unknown {
        log::warn!("{}", ConfigError::UnknownVariable { name, suggestion });
    }
    for w in &config.warnings {
        log::warn!("{w}");
    }
    for n in &config.notes {
        log::info!("{n}");
    }
    if config.rules.skip_issuer_check {
        log::warn!("--skip-issuer-check: a document announcing another issuer will be accepted");
    }
    run(config, proxies, started, tx, rx)
}

fn usage_error(e: &ConfigError) -> i32 {
    eprintln!("wait-for-idp: error: {e}");
    eprintln!("Run 'wait-for-idp --help' for the flags and their environment variables.");
    EXIT_USAGE
}

/// SIGTERM and SIGINT reach the main loop as events.
fn install_signal_handlers(tx: Sender<Event>) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    match signal_hook::iterator::Signals::new([SIGTERM, SIGINT]) {
        Ok(mut signals) => {
            std::thread::spawn(move || {
                for sig in signals.forever() {
                    let _ = tx.send(Event::Signal(sig));
                }
            });
        }
        Err(e) => eprintln!("wait-for-idp: warning: cannot handle SIGTERM/SIGINT: {e}"),
    }
}

struct IssuerState {
    tally: Tally,
    verdict: Option<Verdict>,
}

fn run(config: Config, proxies: ProxySettings, started: Instant, tx: Sender<Event>, rx: mpsc::Receiver<Event>) -> i32 {
    let config = Arc::new(config);
    let client = Arc::new(HttpClient::new(&config.extra_roots, proxies, config.connect_to.clone()));
    let checks =
        Arc::new(Checks { rules: config.rules, check_jwks: config.check_jwks, token_file: config.token_file.clone() });
    let deadline = started + config.timeout;
    for (index, target) in config.targets.iter().cloned().enumerate() {
        let (config, client, checks, tx) = (config.clone(), client.clone(), checks.clone(), tx.clone());
        let schedule = Schedule {
            deadline,
            interval: config.interval,
            attempt_timeout: config.attempt_timeout,
            max_attempts: config.max_attempts,
            successes: config.successes,
        };
        std::thread::spawn(move || {
            let label = report::label(&config, &target.issuer);
            let mut throttle = LineThrottle::new(config.interval);
            let mut jitter = Jitter::from_entropy();
            let mut attempt = |budget| probe(&client, &target, &checks, budget);
            let mut observe = |r: &wait::AttemptReport<'_>, t: &Tally| {
                report::log_attempt(&label, r, t, &mut throttle);
                let _ = tx.send(Event::Progress(index, t.clone()));
            };
            let (verdict, tally) = wait::wait_until_ready(
                &schedule,
                &SystemClock,
                &mut ThreadSleeper,
                &mut jitter,
                &mut attempt,
                &mut observe,
            );
            let _ = tx.send(Event::Finished(index, verdict, tally));
        });
    }
    drop(tx);

    let mut states: Vec<IssuerState> =
        config.targets.iter().map(|_| IssuerState { tally: Tally::default(), verdict: None }).collect();
    let hard_deadline = deadline + GRACE;
    loop {
        let settled = states.iter().all(|s| s.verdict.is_some())
            || states.iter().any(|s| matches!(s.verdict, Some(v) if v != Verdict::Ready));
        if settled {
            break;
        }
        match rx.recv_timeout(hard_deadline.saturating_duration_since(Instant::now())) {
            Ok(Event::Progress(i, tally)) => states[i].tally = tally,
            Ok(Event::Finished(i, verdict, tally)) => {
                states[i].tally = tally;
                states[i].verdict = Some(verdict);
            }
            Ok(Event::Signal(sig)) => return interrupted(&config, &states, sig, started),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    finish(&config, &states, started)
}

fn total_attempts(states: &[IssuerState]) -> u32 {
    states.iter().map(|s| s.tally.attempts).sum()
}

fn finish(config: &Config, states: &[IssuerState], started: Instant) -> i32 {
    let elapsed = report::secs(started.elapsed());
    let attempts = total_attempts(states);
    let all_ready = states.iter().all(|s| s.verdict == Some(Verdict::Ready));
    if all_ready {
        for (target, state) in config.targets.iter().zip(states) {
            if let Some(ready) = &state.tally.last_ready {
                for w in &ready.document.warnings {
                    log::warn!("{}{w}", report::label(config, &target.issuer));
                }
                if config.once && config.output == Output::Text {
                    print!("{}", report::once_summary(ready));
                }
            }
        }
        let issuers: Vec<String> = config.targets.iter().map(|t| url::redact(&t.issuer)).collect();
        let line = format!("ready: {} after {attempts} attempt(s) in {elapsed}", issuers.join(", "));
        log::info!(target: OUTCOME, "{line}");
        return conclude(config, states, started, &line, "ready", EXIT_READY);
    }

    let mut reasons = Vec::new();
    for (target, state) in config.targets.iter().zip(states) {
        let verdict = state.verdict.unwrap_or(Verdict::DeadlineReached);
        if verdict == Verdict::Ready {
            continue;
        }
        let label = report::label(config, &target.issuer);
        let reason = report::not_ready_reason(verdict, &state.tally, config);
        match &state.tally.last_failure {
            Some(f) => log::warn!("{label}not ready ({reason}): last failure {}: {}", f.class, f.detail),
            None => log::warn!("{label}not ready ({reason}) before any attempt finished"),
        }
        if state.tally.attempts > 0 {
            log::warn!(
                "{label}{} attempt(s), failures by class: {}",
                state.tally.attempts,
                report::failure_counts(&state.tally)
            );
        }
        let class = state.tally.last_failure.as_ref().map_or("none", |f| f.class.as_str());
        reasons.push(format!("{} ({reason}; last failure: {class})", url::redact(&target.issuer)));
    }
    let summary = format!("{} after {attempts} attempt(s) in {elapsed}", reasons.join(", "));
    if config.fail_closed {
        let line = format!("not ready: {summary}; failing closed (exit 1)");
        log::error!(target: OUTCOME, "{line}");
        conclude(config, states, started, &line, "not-ready", EXIT_NOT_READY)
    } else {
        let line =
            format!("failing open: not ready: {summary}; starting the workload anyway, as without the gate (exit 0)");
        log::warn!(target: OUTCOME, "{line}");
        conclude(config, states, started, &line, "failed-open", EXIT_READY)
    }
}

fn interrupted(config: &Config, states: &[IssuerState], sig: i32, started: Instant) -> i32 {
    let name = if sig == signal_hook::consts::SIGINT { "SIGINT" } else { "SIGTERM" };
    let line = format!(
        "interrupted by {name} after {} attempt(s) in {}; not ready",
        total_attempts(states),
        report::secs(started.elapsed())
    );
    log::warn!(target: OUTCOME, "{line}");
    conclude(config, states, started, &line, "interrupted", 128 + sig)
}

/// The termination message, and the JSON summary when asked for; returns the exit code.
fn conclude(config: &Config, states: &[IssuerState], started: Instant, line: &str, outcome: &str, code: i32) -> i32 {
    report::write_termination_log(config, line);
    if config.output == Output::Json {
        let issuers: Vec<report::IssuerResult<'_>> = config
            .targets
            .iter()
            .zip(states)
            .map(|(target, s)| report::IssuerResult { target, verdict: s.verdict, tally: &s.tally })
            .collect();
        println!("{}", report::json_summary(outcome, code, started.elapsed(), &issuers));
    }
    code
}
