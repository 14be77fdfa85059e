//! The process: signals, configuration, one waiting thread per issuer, and the outcome.
//!
//! The main thread never does network I/O. It waits for the issuers' threads, for a signal, or
//! for the deadline, whichever comes first, and then ends the process. So neither a resolver
//! stuck in `getaddrinfo` nor a server that drips bytes can keep the gate past its deadline, and
//! SIGTERM ends it at once even as PID 1 (where the kernel ignores signals without a handler),
//! also while the configuration is still being read (`handover::signals`).
//! Everything said along the way is `report`'s. When the workload may start and a command follows
//! `--`, the process then becomes that command (`handover`). With `--serve` it stays instead:
//! the health listener starts before the first attempt, and after the start the targets are
//! watched until a signal ends the process (`serve`).

use crate::config::{self, Config, ConfigError, Loaded, Source, TerminationLog};
use crate::handover::{self, signals};
use crate::net::http::HttpClient;
use crate::probe::Prober;
use crate::report::{self, ExitCode, LineThrottle, Outcome, Stopped, TargetResult};
use crate::serve::{self, Health};
use crate::settings::{Given, Id, ThenCommand};
use crate::wait::{self, Jitter, Schedule, SystemClock, Tally, ThreadSleeper, Verdict};
use anyhow::Context;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// How long after the deadline the main thread still waits for an issuer's thread to report.
/// Attempts end before the deadline (the prober abandons a fetch at its budget, `wait::UNWIND`
/// before the deadline), so this is only the backstop; with report's `DELIVERY_BOUND` it keeps the
/// total within the promised `--timeout` + 0.1 s whatever an attempt or a sink is doing.
const GRACE: Duration = Duration::from_millis(50);

enum Event {
    Progress(usize, Tally),
    Finished(usize, Verdict, Tally),
    Signal(i32),
}

/// Runs the tool with the process's arguments and environment; returns the exit code.
pub fn main() -> i32 {
    run().code()
}

/// Everything `main` does; every way it ends is an [`ExitCode`], turned into a number only there.
fn run() -> ExitCode {
    let started = Instant::now();
    let (tx, rx) = mpsc::channel();
    let signals = install_signal_handlers(tx.clone());

    let given = match Given::parse_from(std::env::args_os()) {
        Ok(given) => given,
        Err(e) => {
            // clap writes help, version and usage errors; a closed stream must not abort.
            let _ = e.print();
            return ExitCode::of_clap(&e);
        }
    };
    let env = |name: &str| std::env::var_os(name);
    let names = config::process_names();
    let Loaded { config, mode, notices } = match config::load(&given, &env, &names) {
        Ok(loaded) => loaded,
        Err(e) => return report::usage_error(&e),
    };
    if mode.dry_run {
        return report::dry_run(&config, mode, &notices);
    }
    {
        // The log's writer thread must not take a SIGTERM meant to outlive the hand-over.
        let _quiet = signals::Quiet::new();
        report::init_logging(mode, std::env::var("RUST_LOG").ok(), started);
    }
    report::prepare_last_word(mode, &config.termination_log);
    report::startup(&config, &notices, signals.err());
    let health = match start_serving(&config, started) {
        Ok(health) => health,
        Err(e) => return report::usage_error(&e),
    };
    let config = Arc::new(config);
    let launched = launch(&config, started, tx, health.as_ref());
    let conclusion = match &launched {
        Ok(probers) => {
            signals::waiting();
            let (mut states, end) = collect(&config, started + config.timing.timeout + GRACE, &rx);
            // Decided before anything is said: a signal that came first makes the run interrupted.
            let end = signals::hold().map_or(end, Stopped::Signal);
            // A target still waiting says where its attempt had got to, or how its last ended.
            let in_flight: Vec<Option<String>> = (states.iter_mut().zip(probers))
                .map(|(state, prober)| {
                    let word = state.verdict.is_none().then(|| prober.last_word())?;
                    state.tally.settle(&word);
                    word.in_flight
                })
                .collect();
            let issuers: Vec<TargetResult<'_>> = config
                .targets
                .iter()
                .zip(&states)
                .zip(in_flight)
                .map(|((target, state), in_flight)| TargetResult {
                    target,
                    verdict: state.verdict,
                    tally: &state.tally,
                    stopped: end,
                    in_flight,
                })
                .collect();
            match end {
                Stopped::Signal(sig) => report::interrupted(&config, &issuers, sig, started.elapsed()),
                _ => report::conclude(&config, mode, &issuers, started.elapsed()),
            }
        }
        Err(e) => {
            signals::hold();
            report::cannot_wait(&config, e, started.elapsed())
        }
    };
    let (starts, outcome) = (conclusion.outcome.starts_workload(), conclusion.outcome);
    let code = conclusion.deliver(&config.termination_log);
    if let (Some(health), Ok(probers), true) = (health, launched, starts) {
        return keep_watching(&config, probers, &health, outcome == Outcome::FailedOpen, &rx);
    }
    match &config.then {
        Some(then) if starts => hand_over(then, &config.termination_log),
        _ => code,
    }
}

/// With `--serve`: the health, its listener already answering (503 until ready).
fn start_serving(config: &Config, started: Instant) -> Result<Option<Arc<Health>>, ConfigError> {
    let Some(serve) = config.serve else { return Ok(None) };
    let names = config.targets.iter().map(|t| crate::url::redact(t.name())).collect();
    let health = Arc::new(Health::new(names, serve.failures, started));
    let bound = serve::listen(serve.addr, health.clone()).map_err(|e| ConfigError::CannotListen {
        source: config.sources.get(&Id::Serve).copied().unwrap_or(Source::Flag(Id::Serve)),
        addr: serve.addr,
        error: e.to_string(),
    })?;
    log::info!("serving /readyz, /livez and /metrics on {bound}");
    Ok(Some(health))
}

/// After the start, with `--serve`: every target watched until SIGTERM or SIGINT, which ends the
/// sidecar with exit 0 (its start-up verdict was delivered; stopping it is the pod's business).
fn keep_watching(
    config: &Config,
    probers: Vec<Prober>,
    health: &Arc<Health>,
    failed_open: bool,
    rx: &Receiver<Event>,
) -> ExitCode {
    // A target whose thread has not reported by now (cut off at the deadline) starts not ready.
    for i in 0..config.targets.len() {
        health.started(i, false);
    }
    if failed_open {
        health.fail_open();
        log::warn!("failed open: /readyz answers 200 and wait_for_idp_failed_open is 1 until every target passes");
    }
    let interval = config.serve.map_or(config.timing.interval, |s| s.interval);
    // The watchers inherit SIGTERM and SIGINT blocked (held since the wait ended); the main
    // thread takes them again, a pending one at once.
    serve::watch_all(config, interval, probers, health);
    signals::release();
    loop {
        match rx.recv() {
            Ok(Event::Signal(_)) => return ExitCode::Success,
            Ok(_) => {}
            // No signal thread: the default disposition ends the process (PID 1 aside).
            Err(_) => std::thread::park(),
        }
    }
}

/// Becomes the command after `--`, once everything has been said; returns only if that failed.
fn hand_over(then: &ThenCommand, termination_log: &TerminationLog) -> ExitCode {
    let e = handover::exec(then);
    let path = String::from_utf8_lossy(&handover::path()).into_owned();
    report::cannot_hand_over(&then.name(), &e, &path, termination_log)
}

/// SIGTERM and SIGINT reach the main loop as events while it waits; before, they end the gate.
fn install_signal_handlers(tx: Sender<Event>) -> anyhow::Result<()> {
    signals::install(move |sig| {
        let _ = tx.send(Event::Signal(sig));
    })
    .context("cannot start the signal thread; a signal ends the gate at once, without a summary")
}

/// Starts one waiting thread per issuer, each reporting to `tx`; returns their probers, which
/// say where an attempt still under way at the end had got to.
fn launch(
    config: &Arc<Config>,
    started: Instant,
    tx: Sender<Event>,
    health: Option<&Arc<Health>>,
) -> anyhow::Result<Vec<Prober>> {
    let client = Arc::new(HttpClient::new(&config.network).context("cannot set up TLS verification")?);
    let checks = Arc::new(config.checks.clone());
    let schedule = Schedule::starting_at(started, config.timing);
    let mut probers = Vec::with_capacity(config.targets.len());
    // The threads start with SIGTERM and SIGINT blocked: only the main thread takes them.
    let _quiet = signals::Quiet::new();
    for (index, target) in config.targets.iter().cloned().enumerate() {
        let label = report::label(config, &target);
        let (interval, tx, health) = (config.timing.interval, tx.clone(), health.cloned());
        let prober = Prober::new(client.clone(), target, checks.clone());
        probers.push(prober.clone());
        std::thread::Builder::new()
            .name(format!("issuer-{index}"))
            .spawn(move || {
                let mut throttle = LineThrottle::new(interval);
                let took = Cell::new(Duration::ZERO);
                // Timed only for /metrics, when serving.
                let mut attempt = |budget| match &health {
                    Some(_) => {
                        let (outcome, t) = prober.timed_attempt(budget);
                        took.set(t);
                        outcome
                    }
                    None => prober.attempt(budget),
                };
                let mut observe = |r: &wait::AttemptReport<'_>, t: &Tally| {
                    // Served before it is logged: whoever reads the line finds it in /metrics.
                    if let Some(health) = &health {
                        health.record(index, r.outcome, took.get());
                    }
                    report::log_attempt(&label, r, t, &mut throttle);
                    let _ = tx.send(Event::Progress(index, t.clone()));
                };
                let (verdict, tally) = wait::wait_until_ready(
                    &schedule,
                    &SystemClock,
                    &mut ThreadSleeper,
                    &mut Jitter::from_entropy(),
                    &mut attempt,
                    &mut observe,
                );
                if let Some(health) = &health {
                    health.started(index, verdict == Verdict::Ready);
                }
                let _ = tx.send(Event::Finished(index, verdict, tally));
            })
            .with_context(|| format!("cannot start the thread that waits for issuer #{}", index + 1))?;
    }
    Ok(probers)
}

/// A target as the main thread knows it: its verdict once its thread has finished, and its
/// tally as last reported.
#[derive(Default)]
struct TargetState {
    verdict: Option<Verdict>,
    tally: Tally,
}

/// Collects the issuers' reports until the outcome is decided (all ready, or one not), a signal
/// arrives, or `hard_deadline` passes. Returns each target's state, and what ended the wait for
/// those still waiting.
fn collect(config: &Config, hard_deadline: Instant, rx: &Receiver<Event>) -> (Vec<TargetState>, Stopped) {
    let mut states: Vec<TargetState> = config.targets.iter().map(|_| TargetState::default()).collect();
    loop {
        if let Some(i) = states.iter().position(|s| matches!(s.verdict, Some(v) if v != Verdict::Ready)) {
            // One that ran out of time ended nothing: the others' time is up as well.
            let by =
                if states[i].verdict == Some(Verdict::DeadlineReached) { Stopped::Deadline } else { Stopped::By(i) };
            return (states, by);
        }
        if states.iter().all(|s| s.verdict.is_some()) {
            return (states, Stopped::Deadline);
        }
        match rx.recv_timeout(hard_deadline.saturating_duration_since(Instant::now())) {
            Ok(Event::Progress(i, tally)) => states[i].tally = tally,
            Ok(Event::Finished(i, verdict, tally)) => states[i] = TargetState { verdict: Some(verdict), tally },
            Ok(Event::Signal(sig)) => return (states, Stopped::Signal(sig)),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => return (states, Stopped::Deadline),
        }
    }
}
