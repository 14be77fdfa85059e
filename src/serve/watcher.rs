//! The checks after the start: one thread per target, each paced by `wait::watch`, feeding
//! [`Health`] and logging one line when `/readyz` changes, and nothing otherwise: a sidecar
//! that logs every 30 s for weeks buries the line that matters.

use super::health::{Change, Health};
use crate::config::Config;
use crate::probe::{Failure, Prober, Ready};
use crate::report;
use crate::wait::{self, Jitter, ThreadSleeper};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

/// Starts watching every target (`probers` in the order of `config.targets`) every
/// `--watch-interval`. A thread that cannot be started is said, and its target stays as it was.
pub(crate) fn watch_all(config: &Config, interval: Duration, probers: Vec<Prober>, health: &Arc<Health>) {
    for (i, (prober, target)) in probers.into_iter().zip(&config.targets).enumerate() {
        // A client with no limit of its own (--client oauth2-proxy) leaves each start-up attempt
        // the time left; a watch check is still bounded by the pause between checks (at least 5s).
        let budget = config.timing.attempt_timeout.min(interval.max(Duration::from_secs(5)));
        let (label, health) = (report::label(config, target), health.clone());
        let spawned = std::thread::Builder::new().name(format!("watch-{i}")).spawn(move || {
            let took = Cell::new(Duration::ZERO);
            let mut attempt = |budget| {
                let (outcome, t) = prober.timed_attempt(budget);
                took.set(t);
                outcome
            };
            let mut observe = |outcome: &Result<Ready, Failure>| {
                if let Some(change) = health.record(i, outcome, took.get()) {
                    log_change(&label, &change);
                }
                true
            };
            let jitter = &mut Jitter::from_entropy();
            wait::watch(interval, budget, &mut ThreadSleeper, jitter, &mut attempt, &mut observe);
        });
        if let Err(e) = spawned {
            log::error!(
                "{}cannot start the thread that keeps watching issuer #{}: {e}",
                report::label(config, target),
                i + 1
            );
        }
    }
}

fn log_change(label: &str, change: &Change) {
    match change {
        Change::Up => log::info!("{label}ready again; /readyz answers 200"),
        Change::Down { failures, failure } => log::warn!(
            "{label}not ready: {failures} checks failed in a row, the last {}; /readyz answers 503",
            report::failure_line(failure)
        ),
    }
}
