//! The health state the listener serves and the attempts feed: each target's verdict, failure
//! class, counters and times, and what `/readyz` says of them.

use crate::probe::{Failure, FailureClass, Ready};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

/// The check-duration histogram's upper bounds, in milliseconds and as the `le` label says them
/// in seconds: from a local provider's few milliseconds to the default 5 s attempt timeout.
/// Integers, not floats: the exposition is written without the float formatter (14 KiB of the
/// binary).
pub(super) const BUCKETS: [(u64, &str); 10] = [
    (5, "0.005"),
    (10, "0.01"),
    (25, "0.025"),
    (50, "0.05"),
    (100, "0.1"),
    (250, "0.25"),
    (500, "0.5"),
    (1000, "1"),
    (2500, "2.5"),
    (5000, "5"),
];

/// One target's health, as served.
#[derive(Debug)]
pub(super) struct TargetHealth {
    /// The target, redacted as every log line has it.
    pub(super) name: String,
    /// Passed (`--successes` in a row at the start), and not failed `--watch-failures` in a row
    /// since.
    pub(super) up: bool,
    /// The start-up wait is over for it: from now on, passes and failures move `up`.
    pub(super) watching: bool,
    pub(super) consecutive_failures: u32,
    pub(super) last_class: Option<FailureClass>,
    /// The last failure was one waiting cannot fix: `/readyz` says so.
    pub(super) last_conclusive: bool,
    /// Checks by failure class (`None`: passed).
    pub(super) checks: std::collections::BTreeMap<Option<FailureClass>, u64>,
    /// Cumulative counts per bucket of [`BUCKETS`], then the sum of the durations.
    pub(super) buckets: [u64; BUCKETS.len()],
    pub(super) total: Duration,
    pub(super) last_pass: Option<SystemTime>,
}

/// A change worth one log line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Change {
    Up,
    Down { failures: u32, failure: Failure },
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) targets: Vec<TargetHealth>,
    /// From the start to every target's first pass.
    pub(super) first_ready: Option<Duration>,
    /// The start-up wait failed open and not every target has passed since.
    pub(super) failed_open: bool,
}

/// Everything the listener serves, shared by the waiting threads and the listener's.
#[derive(Debug)]
pub(crate) struct Health {
    state: Mutex<State>,
    started: Instant,
    /// `--watch-failures`.
    failures: u32,
}

impl Health {
    /// The health of `targets` (redacted names), none passed yet.
    pub(crate) fn new(targets: Vec<String>, failures: u32, started: Instant) -> Health {
        let targets = targets
            .into_iter()
            .map(|name| TargetHealth {
                name,
                up: false,
                watching: false,
                consecutive_failures: 0,
                last_class: None,
                last_conclusive: false,
                checks: Default::default(),
                buckets: [0; BUCKETS.len()],
                total: Duration::ZERO,
                last_pass: None,
            })
            .collect();
        Health { state: Mutex::new(State { targets, first_ready: None, failed_open: false }), started, failures }
    }

    /// A poisoned lock still holds counters worth serving: no panic may take the probes down.
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One check of target `i` and how long it took; the change it makes to `/readyz`, if any.
    pub(crate) fn record(&self, i: usize, outcome: &Result<Ready, Failure>, took: Duration) -> Option<Change> {
        let mut state = self.lock();
        let t = &mut state.targets[i];
        let class = outcome.as_ref().err().map(|f| f.class);
        *t.checks.entry(class).or_default() += 1;
        t.total += took;
        for (count, (bound_ms, _)) in t.buckets.iter_mut().zip(BUCKETS) {
            *count += u64::from(took <= Duration::from_millis(bound_ms));
        }
        t.last_class = class;
        t.last_conclusive = outcome.as_ref().is_err_and(|f| f.conclusive);
        let change = match outcome {
            Ok(_) => {
                t.consecutive_failures = 0;
                t.last_pass = Some(SystemTime::now());
                (t.watching && !t.up).then_some(Change::Up)
            }
            Err(failure) => {
                t.consecutive_failures += 1;
                let down = t.watching && t.up && t.consecutive_failures >= self.failures;
                down.then(|| Change::Down { failures: t.consecutive_failures, failure: failure.clone() })
            }
        };
        match change {
            Some(Change::Up) => t.up = true,
            Some(Change::Down { .. }) => t.up = false,
            None => {}
        }
        self.all_up(&mut state);
        change
    }

    /// Target `i`'s start-up wait ended, ready or not: from now on the watch moves it.
    /// Said once: a later call (the main thread's, for a target cut off at the deadline) changes
    /// nothing.
    pub(crate) fn started(&self, i: usize, ready: bool) {
        let mut state = self.lock();
        let t = &mut state.targets[i];
        if t.watching {
            return;
        }
        t.watching = true;
        t.up = ready;
        t.consecutive_failures = 0;
        self.all_up(&mut state);
    }

    /// The start-up wait failed open: `/readyz` answers 200 until every target has passed.
    pub(crate) fn fail_open(&self) {
        let mut state = self.lock();
        state.failed_open = !state.targets.iter().all(|t| t.up);
    }

    /// Notes the first moment every target is up, and ends a failed-open state then.
    fn all_up(&self, state: &mut State) {
        if state.targets.iter().all(|t| t.up) {
            state.failed_open = false;
            state.first_ready.get_or_insert(self.started.elapsed());
        }
    }

    /// `/readyz`: the status and its one line, which names a target (redacted) and a failure
    /// class at most.
    pub(crate) fn readiness(&self) -> (u16, String) {
        let state = self.lock();
        let down = state.targets.iter().find(|t| !t.up);
        let reason = |t: &TargetHealth| {
            let class = t.last_class.map_or("no check yet", FailureClass::as_str);
            let last = if t.last_conclusive { ", waiting cannot fix it" } else { "" };
            format!("{} ({class}{last})", t.name)
        };
        match down {
            None => (200, "ready\n".into()),
            Some(t) if state.failed_open => (200, format!("failed open: not ready: {}\n", reason(t))),
            Some(t) => (503, format!("not ready: {}\n", reason(t))),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn fail() -> Result<Ready, Failure> {
        Err(Failure::new(FailureClass::HttpStatus, "HTTP 503 and a page the provider wrote"))
    }

    pub(crate) fn pass() -> Result<Ready, Failure> {
        Ok(Ready { resource_metadata: None, servers: Vec::new(), warnings: Vec::new(), addresses: Vec::new() })
    }

    #[test]
    fn readyz_follows_the_start_then_the_watch() {
        let h = Health::new(vec!["https://idp".into()], 2, Instant::now());
        let ms = Duration::from_millis(3);
        assert_eq!(h.readiness(), (503, "not ready: https://idp (no check yet)\n".into()));
        // Passes during the start-up wait count, but only its verdict makes the target ready.
        assert_eq!(h.record(0, &pass(), ms), None);
        assert_eq!(h.readiness().0, 503);
        h.started(0, true);
        assert_eq!(h.readiness(), (200, "ready\n".into()));
        assert_eq!(h.record(0, &fail(), ms), None, "one failure is not enough");
        assert_eq!(h.readiness().0, 200);
        let down = h.record(0, &fail(), ms);
        assert!(matches!(down, Some(Change::Down { failures: 2, .. })), "{down:?}");
        let (status, body) = h.readiness();
        assert_eq!((status, body.as_str()), (503, "not ready: https://idp (http-status)\n"), "no provider text");
        assert_eq!(h.record(0, &fail(), ms), None, "one line per change");
        assert_eq!(h.record(0, &pass(), ms), Some(Change::Up));
        assert_eq!(h.readiness().0, 200);
        assert_eq!(h.record(0, &pass(), ms), None);
    }

    #[test]
    fn failing_open_answers_200_until_every_target_has_passed() {
        let h = Health::new(vec!["https://a".into(), "https://b".into()], 1, Instant::now());
        h.started(0, true);
        h.started(1, false);
        assert_eq!(h.readiness().0, 503);
        h.fail_open();
        assert_eq!(h.readiness(), (200, "failed open: not ready: https://b (no check yet)\n".into()));
        assert!(h.lock().first_ready.is_none());
        assert_eq!(h.record(1, &pass(), Duration::ZERO), Some(Change::Up));
        assert!(!h.lock().failed_open && h.lock().first_ready.is_some());
        assert!(h.record(1, &fail(), Duration::ZERO).is_some());
        assert_eq!(h.readiness().0, 503, "from then on the watch decides");
    }
}
