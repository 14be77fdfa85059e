//! The process: signals, configuration, one waiting thread per issuer, and the outcome.
//!
//! The main thread never does network I/O. It waits for the issuers' threads, for a signal, or
//! for the deadline, whichever comes first, and then ends the process. So neither a resolver
//! stuck in `getaddrinfo` nor a server that drips bytes can keep the gate past its deadline, and
//! SIGTERM ends it at once even as PID 1 (where the kernel ignores signals without a handler).

use crate::cli;
use crate::config::{Config, ConfigError};
use crate::http::HttpClient;
use crate::probe::{Checks, Prober};
use crate::proxy::ProxySettings;
use crate::report::{self, LineThrottle};
use crate::tls::TlsSettings;
use crate::wait::{self, Jitter, Schedule, SystemClock, Tally, ThreadSleeper, Verdict};
use std::io::Write;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// How long after the deadline the main thread still waits for an issuer's thread to report.
/// Attempts end before the deadline (the prober abandons a fetch at its budget, `wait::UNWIND`
/// before the deadline), so this is only the backstop; with `report::DELIVERY_BOUND` it keeps the
/// total within the promised `--timeout` + 0.1 s whatever an attempt or a sink is doing.
const GRACE: Duration = Duration::from_millis(50);

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
        let _ = std::io::stdout().write_all(report::settings_summary(&config, &proxies).as_bytes());
        return 0;
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
    // A closed or full stderr must not turn exit 2 into an abort: write errors are ignored.
    let _ = writeln!(
        std::io::stderr(),
        "wait-for-idp: error: {e}\nRun 'wait-for-idp --help' for the flags and their environment variables."
    );
    report::EXIT_USAGE
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
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "wait-for-idp: warning: cannot handle SIGTERM/SIGINT: {e}");
        }
    }
}

fn run(config: Config, proxies: ProxySettings, started: Instant, tx: Sender<Event>, rx: mpsc::Receiver<Event>) -> i32 {
    let config = Arc::new(config);
    let client = Arc::new(HttpClient::new(TlsSettings::new(&config.extra_roots), proxies, config.connect_to.clone()));
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
            let prober = Prober::new(client, target.clone(), checks);
            let mut attempt = |budget| prober.attempt(budget);
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

    let mut states: Vec<(Option<Verdict>, Tally)> = config.targets.iter().map(|_| (None, Tally::default())).collect();
    let hard_deadline = deadline + GRACE;
    let mut signal = None;
    loop {
        let settled = states.iter().all(|(v, _)| v.is_some())
            || states.iter().any(|(v, _)| matches!(v, Some(v) if *v != Verdict::Ready));
        if settled {
            break;
        }
        match rx.recv_timeout(hard_deadline.saturating_duration_since(Instant::now())) {
            Ok(Event::Progress(i, tally)) => states[i].1 = tally,
            Ok(Event::Finished(i, verdict, tally)) => states[i] = (Some(verdict), tally),
            Ok(Event::Signal(sig)) => {
                signal = Some(sig);
                break;
            }
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let issuers: Vec<report::IssuerResult<'_>> = config
        .targets
        .iter()
        .zip(&states)
        .map(|(target, (verdict, tally))| report::IssuerResult { target, verdict: *verdict, tally })
        .collect();
    let conclusion = match signal {
        Some(sig) => report::interrupted(&config, &issuers, sig, started.elapsed()),
        None => report::conclude(&config, &issuers, started.elapsed()),
    };
    conclusion.deliver(&config.termination_log)
}
