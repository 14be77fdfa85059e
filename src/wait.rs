//! The waiting: attempts and pauses under one monotonic deadline and an optional attempt budget.
//!
//! The clock, the sleeper and the attempt itself are injected, so the rules below are tested
//! with a virtual clock and no real sleeping:
//! - the first attempt starts at once: against a provider already serving, the gate costs one
//!   request's time;
//! - the first paced pause is drawn from the pause's equilibrium distribution ([`first_delay`]),
//!   so that a herd of gates started together is out of step from its second round on;
//! - no attempt budget and no pause reaches past the deadline, and no later attempt is started
//!   with less than [`MIN_ATTEMPT`] to run;
//! - a refused connection is retried after about [`FAST_RETRY`]: it costs the provider nothing,
//!   and most providers go straight from "refused" to serving, so polling fast there is what
//!   makes the gate exit within a fraction of a second of readiness;
//! - every other failure (a 503 from a gateway, a DNS miss, a timeout) waits 80-100% of the
//!   interval, at random, so a cold-booting cluster's gates do not poll in lock-step and a
//!   struggling provider or DNS server gets about one request a second from each;
//! - a 429 or 503 with `Retry-After` waits what it asks, up to [`RETRY_AFTER_CAP`], plus a random
//!   part of the interval so that gates told the same moment do not all return at it;
//! - a failure that retrying cannot change (`Failure::conclusive`) ends the wait at once.

use crate::config::Timing;
use crate::probe::{Failure, FailureClass, LastWord, Ready};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Pause after a refused connection (at most; 50-100% of it at random).
pub(crate) const FAST_RETRY: Duration = Duration::from_millis(100);

/// The shortest paced pause, as a fraction of the interval. With the default 1 s interval the
/// mean pause is 0.9 s: a 503-answering provider gets about 1.1 requests a second from each
/// gate, and the gate notices readiness about 0.45 s after it happens (median).
pub(crate) const PACED_LOW: f64 = 0.8;

/// Time kept free at the end of an attempt clipped by the deadline, so that it is classified,
/// logged and reported before the deadline rather than cut off by it. The attempt itself ends
/// on time (the prober abandons a fetch at its budget), so this only covers logging it.
pub(crate) const UNWIND: Duration = Duration::from_millis(30);

/// The longest `Retry-After` honoured. Hosted providers ask for up to a minute when they rate
/// limit; a gate that waited that long at every 429 would hold a pod far longer than the
/// provider's hiccup, and the deadline still bounds it all.
pub(crate) const RETRY_AFTER_CAP: Duration = Duration::from_secs(30);

/// The least time worth giving a later attempt (or the attempt timeout, if smaller). An attempt
/// squeezed into the last few milliseconds can only fail with a timeout of its own making, and
/// that would hide the provider's real last answer: a slow CI machine once logged "timeout: no
/// answer within 0.01s" as the last failure of a provider that had answered 503 all along. So
/// the last pause is shortened to leave the final attempt this much, and when even that does not
/// fit, the wait ends at once instead of idling out the remainder.
pub(crate) const MIN_ATTEMPT: Duration = Duration::from_millis(200);

pub(crate) trait Clock {
    fn now(&self) -> Instant;
}

pub(crate) trait Sleeper {
    fn sleep(&mut self, pause: Duration);
}

/// The real monotonic clock.
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// Real sleeping. Signals do not need to interrupt it: the main thread handles them and ends
/// the process.
pub(crate) struct ThreadSleeper;

impl Sleeper for ThreadSleeper {
    fn sleep(&mut self, pause: Duration) {
        std::thread::sleep(pause);
    }
}

/// A small xorshift generator for jitter: no need for cryptographic randomness, only for gates
/// started in the same second to drift apart.
pub(crate) struct Jitter(u64);

impl Jitter {
    /// The seed is scrambled first (SplitMix64's finaliser), so that seeds that differ in a few
    /// low bits — pids and clock readings of gates started together — give unrelated sequences
    /// from the first draw on.
    pub(crate) fn new(seed: u64) -> Jitter {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Jitter((z ^ (z >> 31)) | 1)
    }

    /// Seeded from the clock and the process id, which differ between pods.
    pub(crate) fn from_entropy() -> Jitter {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        Jitter::new(nanos ^ (u64::from(std::process::id()) << 32) ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// A fraction in `[lo, hi)`.
    pub(crate) fn between(&mut self, lo: f64, hi: f64) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let unit = (self.0 >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * unit
    }
}

/// When to stop and how to pace: the configured [`Timing`] from a start.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schedule {
    pub(crate) deadline: Instant,
    pub(crate) timing: Timing,
}

impl Schedule {
    pub(crate) fn starting_at(started: Instant, timing: Timing) -> Schedule {
        Schedule { deadline: started + timing.timeout, timing }
    }
}

/// How the wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Ready,
    DeadlineReached,
    AttemptsExhausted,
    /// A conclusive failure: retrying cannot change what the real client does.
    Conclusive,
}

/// What has happened so far, for log lines and the summary.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tally {
    pub(crate) attempts: u32,
    pub(crate) failures: BTreeMap<FailureClass, u32>,
    pub(crate) last_failure: Option<Failure>,
    pub(crate) last_ready: Option<Ready>,
    pub(crate) consecutive_successes: u32,
}

impl Tally {
    /// Takes in an attempt that ended after the last report this tally came from: at the
    /// deadline every attempt of a frozen provider ends at once, and the wait may be over before
    /// the report of one has reached the caller. Its failure is then the target's last word.
    pub(crate) fn settle(&mut self, word: &LastWord) {
        if word.in_flight.is_none()
            && word.attempts > self.attempts
            && let Some(failure) = &word.last_failure
        {
            self.attempts = word.attempts;
            *self.failures.entry(failure.class).or_default() += 1;
            self.last_failure = Some(failure.clone());
            self.consecutive_successes = 0;
        }
    }
}

/// What follows an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Another attempt after `pause`; `retry_after` is the provider's request, when it made one
    /// longer than the paced pause.
    Pause { pause: Duration, retry_after: Option<RetryAfter> },
    /// None: the wait is over.
    Stop(Verdict),
}

/// A provider's `Retry-After` that was longer than the paced pause, and whether the pause
/// really waited all of it: the cap ([`RETRY_AFTER_CAP`]) or the deadline may cut it short, and
/// the log must not call a pause of 2.6 s an honoured request for 20 s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RetryAfter {
    /// What the provider asked, uncapped.
    pub(crate) asked: Duration,
    pub(crate) honoured: bool,
}

/// One attempt, as the observer sees it.
pub(crate) struct AttemptReport<'a> {
    pub(crate) number: u32,
    pub(crate) outcome: &'a Result<Ready, Failure>,
    /// Time left before the deadline when the attempt ended.
    pub(crate) left: Duration,
    pub(crate) next: Next,
}

/// The first paced pause (after the first failure that is not a refused connection, or the first
/// success when several are required), as a fraction of the interval: a draw from the paced
/// pause's *equilibrium* distribution, not from the pause itself. This is the one home of the
/// pacing's derivation; the measured figures are in docs/performance.md ("Pacing", "A herd at
/// cold boot").
///
/// Why the first attempt is not delayed instead. A whole-cluster cold boot starts hundreds of
/// gates within a second. Delaying each first attempt by a random part of the interval spreads
/// the first round, but costs every gate that delay against a provider that is already serving,
/// and buys little: a refused connection is retried after 50-100 ms ([`FAST_RETRY`]), so a herd
/// that boots before its provider is packed into one narrow window by the fast retries whatever
/// its start spread was, and meets the provider's first 503s nearly in step. What keeps a herd
/// out of step is the pause after a paced failure: the narrow 80-100 % pauses keep gates that
/// failed together bunched for a long time (their spread grows by only about 0.06·√k intervals
/// after k pauses), so that pause must spread them. So the first attempt is made at once, and
/// the first paced pause is drawn as below: the herd's later load is then flat, as that of
/// independent clients. The first attempts of a herd that starts together still arrive in one
/// burst, at most one request per gate, once.
///
/// Why the equilibrium distribution and not a uniform one. A paced pause is U(a, 1) intervals
/// (a = [`PACED_LOW`]). The time from a random moment to the next attempt of a gate that had
/// been polling for ever (the forward recurrence time) has the density P(pause > x) / E\[pause\]:
/// flat on [0, a), which holds a share a / E\[pause\] = 2a / (1 + a) of it, and falling linearly
/// to 0 on [a, 1), where it is a triangle: the smaller of two uniform draws. Gates whose first
/// paced pause is drawn from it are, from then on, a stationary renewal process each, so their
/// sum is flat; a uniform 0-1 draw instead puts the round after it (80 % of an interval later)
/// on the tail of the first, a bump of load between 0.75 and 1 interval after the first failure.
/// Its mean is (1 + a + a²) / (3 (1 + a)) = 0.45 intervals, half a paced pause: the gate
/// notices a provider that turns ready during it no later than it would have otherwise.
fn first_delay(interval: Duration, jitter: &mut Jitter) -> Duration {
    let flat_share = 2.0 * PACED_LOW / (1.0 + PACED_LOW);
    let fraction = if jitter.between(0.0, 1.0) < flat_share {
        jitter.between(0.0, PACED_LOW)
    } else {
        PACED_LOW + (1.0 - PACED_LOW) * jitter.between(0.0, 1.0).min(jitter.between(0.0, 1.0))
    };
    interval.mul_f64(fraction)
}

/// The pause after an attempt, and the `Retry-After` it follows when that is longer than the
/// paced pause. The first paced pause is [`first_delay`]'s; `paced_before` records that it has
/// been taken.
fn pause_after(
    outcome: &Result<Ready, Failure>,
    interval: Duration,
    paced_before: &mut bool,
    jitter: &mut Jitter,
) -> (Duration, Option<Duration>) {
    let failure = outcome.as_ref().err();
    if failure.is_some_and(|f| f.cheap) {
        return (FAST_RETRY.min(interval).mul_f64(jitter.between(0.5, 1.0)), None);
    }
    let paced =
        if *paced_before { interval.mul_f64(jitter.between(PACED_LOW, 1.0)) } else { first_delay(interval, jitter) };
    match failure.and_then(|f| f.retry_after) {
        Some(asked) if asked.min(RETRY_AFTER_CAP) > paced => {
            (asked.min(RETRY_AFTER_CAP) + interval.mul_f64(jitter.between(0.0, 1.0)), Some(asked))
        }
        _ => {
            *paced_before = true;
            (paced, None)
        }
    }
}

/// Attempts until ready, out of attempts, or out of time.
pub(crate) fn wait_until_ready(
    schedule: &Schedule,
    clock: &dyn Clock,
    sleeper: &mut dyn Sleeper,
    jitter: &mut Jitter,
    attempt: &mut dyn FnMut(Duration) -> Result<Ready, Failure>,
    observe: &mut dyn FnMut(&AttemptReport<'_>, &Tally),
) -> (Verdict, Tally) {
    let mut tally = Tally::default();
    let needed = schedule.timing.successes.max(1);
    let floor = MIN_ATTEMPT.min(schedule.timing.attempt_timeout);
    // No paced pause yet: the first is drawn from the equilibrium distribution.
    let mut paced_before = false;
    loop {
        let left = schedule.deadline.saturating_duration_since(clock.now());
        let budget = schedule.timing.attempt_timeout.min(left.saturating_sub(UNWIND));
        if budget.is_zero() {
            return (Verdict::DeadlineReached, tally);
        }
        let outcome = attempt(budget);
        tally.attempts += 1;
        let (pause, retry_after) = pause_after(&outcome, schedule.timing.interval, &mut paced_before, jitter);
        match &outcome {
            Ok(ready) => {
                tally.consecutive_successes += 1;
                tally.last_ready = Some(ready.clone());
            }
            Err(failure) => {
                tally.consecutive_successes = 0;
                *tally.failures.entry(failure.class).or_default() += 1;
                tally.last_failure = Some(failure.clone());
            }
        }
        let left = schedule.deadline.saturating_duration_since(clock.now());
        // The latest moment, from now, at which a next attempt still gets `floor` to run.
        let room = left.saturating_sub(UNWIND + floor);
        let verdict = if tally.consecutive_successes >= needed {
            Some(Verdict::Ready)
        } else if outcome.as_ref().is_err_and(|f| f.conclusive) {
            Some(Verdict::Conclusive)
        } else if schedule.timing.max_attempts.is_some_and(|max| tally.attempts >= max) {
            Some(Verdict::AttemptsExhausted)
        } else if room.is_zero() {
            Some(Verdict::DeadlineReached)
        } else {
            None
        };
        let next = match verdict {
            Some(v) => Next::Stop(v),
            None => {
                let pause = pause.min(room);
                let retry_after = retry_after.map(|asked| RetryAfter { asked, honoured: pause >= asked });
                Next::Pause { pause, retry_after }
            }
        };
        observe(&AttemptReport { number: tally.attempts, outcome: &outcome, left, next }, &tally);
        match next {
            Next::Stop(v) => return (v, tally),
            Next::Pause { pause, .. } => sleeper.sleep(pause),
        }
    }
}

/// After the start, with `--serve`: one attempt every `interval` for as long as `observe` says
/// to go on (in the process, until a signal ends it). The pacing is the start-up wait's: the
/// first pause from the equilibrium distribution ([`first_delay`]), so that a fleet of sidecars
/// started together does not check in step, then 80-100 % of the interval at random. Neither a
/// refused connection nor a `Retry-After` shortens or stretches it: the watch costs the provider
/// one request per interval per pod whatever happens, and `--watch-failures` in a row, not one
/// fast burst of refusals during a restart, turns `/readyz` to 503. Each attempt gets the whole
/// `--attempt-timeout`: there is no deadline any more.
pub(crate) fn watch(
    interval: Duration,
    attempt_timeout: Duration,
    sleeper: &mut dyn Sleeper,
    jitter: &mut Jitter,
    attempt: &mut dyn FnMut(Duration) -> Result<Ready, Failure>,
    observe: &mut dyn FnMut(&Result<Ready, Failure>) -> bool,
) {
    let mut pause = first_delay(interval, jitter);
    loop {
        sleeper.sleep(pause);
        if !observe(&attempt(attempt_timeout)) {
            return;
        }
        pause = interval.mul_f64(jitter.between(PACED_LOW, 1.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::ServerReady;
    use crate::rules::authorization_server::Document;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A virtual clock shared by the fake sleeper and the fake attempts.
    #[derive(Clone)]
    struct FakeTime {
        start: Instant,
        elapsed: Rc<Cell<Duration>>,
    }

    impl FakeTime {
        fn new() -> FakeTime {
            FakeTime { start: Instant::now(), elapsed: Rc::new(Cell::new(Duration::ZERO)) }
        }
        fn advance(&self, d: Duration) {
            self.elapsed.set(self.elapsed.get() + d);
        }
        fn at(&self) -> Duration {
            self.elapsed.get()
        }
    }

    impl Clock for FakeTime {
        fn now(&self) -> Instant {
            self.start + self.elapsed.get()
        }
    }

    impl Sleeper for FakeTime {
        fn sleep(&mut self, pause: Duration) {
            self.advance(pause);
        }
    }

    fn ready() -> Ready {
        let document = Document { issuer: "https://h".into(), ..Document::default() };
        Ready {
            resource_metadata: None,
            servers: vec![ServerReady { document, url: "https://h".into(), jwks_keys: None }],
            warnings: Vec::new(),
            addresses: Vec::new(),
        }
    }

    fn with(mut s: Schedule, change: impl FnOnce(&mut Timing)) -> Schedule {
        change(&mut s.timing);
        s
    }

    fn schedule(time: &FakeTime, timeout_ms: u64) -> Schedule {
        let timeout = Duration::from_millis(timeout_ms);
        Schedule::starting_at(
            time.now(),
            Timing {
                timeout,
                interval: Duration::from_secs(1),
                attempt_timeout: Duration::from_secs(5),
                max_attempts: None,
                successes: 1,
            },
        )
    }

    /// Runs a wait where each attempt takes `cost` and fails with `failure` until `ready_at`.
    fn run(
        time: &FakeTime,
        schedule: Schedule,
        cost: Duration,
        failure: Failure,
        ready_at: Duration,
    ) -> (Verdict, Tally, Vec<(Duration, Duration)>) {
        let mut starts = Vec::new();
        let clock = time.clone();
        let mut sleeper = time.clone();
        let t = time.clone();
        let mut attempt = |budget: Duration| {
            starts.push((t.at(), budget));
            t.advance(cost.min(budget));
            if t.at() >= ready_at { Ok(ready()) } else { Err(failure.clone()) }
        };
        let (v, tally) =
            wait_until_ready(&schedule, &clock, &mut sleeper, &mut Jitter::new(7), &mut attempt, &mut |_, _| {});
        (v, tally, starts)
    }

    fn status_503() -> Failure {
        Failure::new(FailureClass::HttpStatus, "HTTP 503")
    }

    #[test]
    fn first_attempt_is_immediate_and_ready_ends_the_wait() {
        let time = FakeTime::new();
        let (v, tally, starts) =
            run(&time, schedule(&time, 10_000), Duration::from_millis(5), status_503(), Duration::ZERO);
        assert_eq!(v, Verdict::Ready);
        assert_eq!(tally.attempts, 1);
        assert_eq!(starts[0].0, Duration::ZERO);
    }

    #[test]
    fn never_crosses_the_deadline() {
        for cost_ms in [1, 300, 999, 4_000, 60_000] {
            let time = FakeTime::new();
            let s = schedule(&time, 7_300);
            let (v, _, starts) = run(&time, s, Duration::from_millis(cost_ms), status_503(), Duration::MAX);
            assert_eq!(v, Verdict::DeadlineReached);
            assert!(time.at() <= Duration::from_millis(7_300), "cost {cost_ms}: ended at {:?}", time.at());
            for (i, (start, budget)) in starts.into_iter().enumerate() {
                assert!(start + budget + UNWIND <= Duration::from_millis(7_300), "attempt budget crosses the deadline");
                assert!(i == 0 || budget >= MIN_ATTEMPT, "cost {cost_ms}: attempt {i} squeezed into {budget:?}");
            }
        }
    }

    /// The wait ends with a reported attempt, just before the deadline, for any timeout from
    /// a second to an hour, when every attempt hangs for all its budget (a black hole) or
    /// fails at once: the last word is the last attempt's, never lost to the deadline.
    #[test]
    fn the_last_attempt_is_reported_before_any_deadline() {
        for timeout_s in [1, 2, 5, 30, 300, 3_600] {
            for hangs in [true, false] {
                let time = FakeTime::new();
                let timeout = Duration::from_secs(timeout_s);
                let s = schedule(&time, timeout_s * 1_000);
                let t = time.clone();
                let mut attempt = |budget: Duration| {
                    t.advance(if hangs { budget } else { Duration::from_millis(3) });
                    Err(Failure::new(FailureClass::Timeout, format!("attempt ended at {:?}", t.at())))
                };
                let mut last = None;
                let mut observe = |r: &AttemptReport<'_>, _: &Tally| last = Some((r.number, r.next));
                let (clock, mut sleeper) = (time.clone(), time.clone());
                let (v, tally) =
                    wait_until_ready(&s, &clock, &mut sleeper, &mut Jitter::new(timeout_s), &mut attempt, &mut observe);
                let case = format!("--timeout {timeout_s}s, hanging {hangs}");
                assert_eq!(v, Verdict::DeadlineReached, "{case}");
                assert_eq!(last, Some((tally.attempts, Next::Stop(Verdict::DeadlineReached))), "{case}");
                let reported = tally.last_failure.expect("a last failure").message.clone();
                assert_eq!(reported, format!("attempt ended at {:?}", time.at()), "{case}");
                let ended = time.at();
                assert!(ended + UNWIND <= timeout, "{case}: ended at {ended:?}");
                assert!(ended + UNWIND + MIN_ATTEMPT >= timeout, "{case}: gave up early, at {ended:?}");
            }
        }
    }

    #[test]
    fn pacing_depends_on_what_the_failure_costs() {
        let time = FakeTime::new();
        let (_, tally, starts) =
            run(&time, schedule(&time, 10_000), Duration::from_millis(1), status_503(), Duration::MAX);
        let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1].0 - w[0].0).collect();
        // The last pause may be shortened to leave the final attempt MIN_ATTEMPT to run.
        // The first pause is drawn from the equilibrium distribution, anywhere up to an interval.
        assert!(gaps[0] <= Duration::from_millis(1001), "{gaps:?}");
        let paced = &gaps[1..gaps.len() - 1];
        assert!(
            paced.iter().all(|g| *g >= Duration::from_millis(800) && *g <= Duration::from_millis(1001)),
            "{gaps:?}"
        );
        assert!(gaps.windows(2).any(|w| w[0] != w[1]), "jittered");
        assert!((10..=14).contains(&tally.attempts), "{}", tally.attempts);

        let time = FakeTime::new();
        let refused = Failure::new(FailureClass::Connect, "refused").with(|f| f.cheap = true);
        let (v, _, starts) =
            run(&time, schedule(&time, 10_000), Duration::from_millis(1), refused, Duration::from_millis(2_000));
        assert_eq!(v, Verdict::Ready);
        let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(gaps.iter().all(|g| *g >= Duration::from_millis(50) && *g <= Duration::from_millis(101)), "{gaps:?}");
        assert!(time.at() < Duration::from_millis(2_110), "noticed within a fast retry: {:?}", time.at());
    }

    /// A gate started at `start` against a provider that refuses connections until `serving`
    /// and answers 503 from then on: when each attempt started, and whether it was refused.
    fn gate_against(seed: u64, start: Duration, serving: Duration, timeout_ms: u64) -> Vec<(Duration, bool)> {
        let time = FakeTime::new();
        time.advance(start);
        let s = schedule(&time, timeout_ms);
        let t = time.clone();
        let mut attempts = Vec::new();
        let mut attempt = |_| {
            let refused = t.at() < serving;
            attempts.push((t.at(), refused));
            t.advance(Duration::from_millis(2));
            if refused {
                Err(Failure::new(FailureClass::Connect, "refused").with(|f| f.cheap = true))
            } else {
                Err(status_503())
            }
        };
        let (clock, mut sleeper) = (time.clone(), time.clone());
        wait_until_ready(&s, &clock, &mut sleeper, &mut Jitter::new(seed), &mut attempt, &mut |_, _| {});
        attempts
    }

    /// Attempts answered 503 per quarter second from `from`, each gate's first one left out.
    fn paced_load(gates: &[Vec<(Duration, bool)>], from: Duration, quarters: usize) -> Vec<u32> {
        let mut buckets = vec![0u32; quarters];
        for attempts in gates {
            for (at, _) in attempts.iter().filter(|(_, refused)| !refused).skip(1) {
                let k = (at.saturating_sub(from).as_millis() / 250) as usize;
                if *at >= from && k < quarters {
                    buckets[k] += 1;
                }
            }
        }
        buckets
    }

    #[test]
    fn a_herd_started_together_is_flat_from_its_second_attempt_on() {
        // 400 gates started at t = 0 against a provider answering 503: every first attempt at
        // once, then every later attempt in the first five seconds (of six: the last is
        // squeezed towards the deadline), counted per quarter second.
        let gates: Vec<_> = (1..=400).map(|seed| gate_against(seed, Duration::ZERO, Duration::ZERO, 6_000)).collect();
        assert!(gates.iter().all(|g| g[0].0 == Duration::ZERO), "first attempts at once");
        // Flat: 400 gates at one attempt per 0.9 s on average make 111 per quarter second. With
        // the 80-100 % pause as the first one, every second attempt would fall in 0.75-1 s.
        let load = paced_load(&gates, Duration::ZERO, 20);
        for (i, n) in load.iter().enumerate() {
            assert!((80..=145).contains(n), "{n} attempts in quarter {i}: {load:?}");
        }
    }

    #[test]
    fn a_herd_packed_by_refusals_is_spread_by_its_first_paced_pause() {
        // 400 gates started over 1 s against a provider that refuses connections until 2 s and
        // answers 503 after: the fast retries pack the herd into 0.1 s at 2 s, whatever its
        // start spread, and the first paced pause spreads it again.
        let starts = |seed: u64| Duration::from_millis(seed * 1_000 / 400);
        let serving = Duration::from_secs(2);
        let gates: Vec<_> = (1..=400).map(|seed| gate_against(seed, starts(seed), serving, 8_000)).collect();
        for g in &gates {
            let first_503 = g.iter().find(|(_, refused)| !refused).expect("a 503").0;
            assert!(
                first_503 < serving + FAST_RETRY + Duration::from_millis(5),
                "refusals retried fast: {first_503:?}"
            );
            for w in g.windows(2).filter(|w| w[0].1) {
                assert!(w[1].0 - w[0].0 <= FAST_RETRY + Duration::from_millis(2), "{w:?}");
            }
        }
        let load = paced_load(&gates, serving, 20);
        for (i, n) in load.iter().enumerate() {
            assert!((80..=145).contains(n), "{n} attempts in quarter {i} after 2 s: {load:?}");
        }
    }

    #[test]
    fn the_first_paced_pause_is_drawn_from_the_equilibrium_distribution() {
        // 4,000 gates' first pause after a 503, in tenths of the interval. The equilibrium
        // density of a U(0.8, 1) pause is 1/0.9 on [0, 0.8), then falls linearly to 0 at 1.
        let mut tenths = [0u32; 10];
        let mut sum = 0.0;
        for seed in 1..=4_000 {
            let g = gate_against(seed, Duration::ZERO, Duration::ZERO, 10_000);
            let first = (g[1].0 - g[0].0).as_secs_f64();
            sum += first;
            tenths[((first * 10.0) as usize).min(9)] += 1;
            // Every later pause is the 80-100 % one (but the last, cut for the deadline).
            let later: Vec<f64> = g.windows(2).skip(1).map(|w| (w[1].0 - w[0].0).as_secs_f64()).collect();
            assert!(later[..later.len() - 1].iter().all(|p| (0.8..=1.003).contains(p)), "{later:?}");
        }
        let mean = sum / 4_000.0;
        assert!((0.43..0.47).contains(&mean), "mean {mean}, expected (1 + a + a²) / 3(1 + a) = 0.452");
        // 444 expected per flat tenth; 333 and 111 in the last two (0.8-0.9 and 0.9-1.0).
        for (i, n) in tenths.iter().enumerate().take(8) {
            assert!((380..=510).contains(n), "tenth {i}: {tenths:?}");
        }
        assert!((270..=400).contains(&tenths[8]) && (70..=160).contains(&tenths[9]), "{tenths:?}");
    }

    #[test]
    fn an_attempt_that_ended_after_its_last_report_is_the_last_word() {
        let mut tally = Tally::default();
        let ended = |in_flight: Option<&str>, attempts| LastWord {
            in_flight: in_flight.map(str::to_string),
            attempts,
            last_failure: Some(status_503()),
        };
        tally.settle(&ended(Some("TLS handshake"), 1));
        assert_eq!(tally.attempts, 0, "an attempt under way speaks for itself");
        tally.settle(&ended(None, 1));
        assert_eq!((tally.attempts, tally.last_failure.as_ref().map(|f| f.class)), (1, Some(FailureClass::HttpStatus)));
        assert_eq!(tally.failures[&FailureClass::HttpStatus], 1);
        tally.settle(&ended(None, 1));
        assert_eq!(tally.failures[&FailureClass::HttpStatus], 1, "an attempt already reported is not counted twice");
    }

    #[test]
    fn a_conclusive_failure_ends_the_wait_at_once() {
        let time = FakeTime::new();
        let untrusted = Failure::new(FailureClass::Tls, "unknown CA").with(|f| f.conclusive = true);
        let (v, tally, _) = run(&time, schedule(&time, 60_000), Duration::from_millis(1), untrusted, Duration::MAX);
        assert_eq!((v, tally.attempts), (Verdict::Conclusive, 1));
        assert_eq!(tally.last_failure.map(|f| f.class), Some(FailureClass::Tls));
        assert!(time.at() < Duration::from_millis(10), "no pause after it: {:?}", time.at());
    }

    #[test]
    fn attempt_budget_ends_the_wait_first_when_smaller() {
        let time = FakeTime::new();
        let s = with(schedule(&time, 60_000), |t| t.max_attempts = Some(3));
        let (v, tally, _) = run(&time, s, Duration::from_millis(1), status_503(), Duration::MAX);
        assert_eq!((v, tally.attempts), (Verdict::AttemptsExhausted, 3));
        assert_eq!(tally.failures[&FailureClass::HttpStatus], 3);
        assert!(time.at() < Duration::from_secs(3), "no pause after the last attempt");
    }

    #[test]
    fn consecutive_successes_are_required() {
        let time = FakeTime::new();
        let s = with(schedule(&time, 60_000), |t| t.successes = 3);
        let (v, tally, _) = run(&time, s, Duration::from_millis(1), status_503(), Duration::from_millis(1_500));
        assert_eq!(v, Verdict::Ready);
        assert_eq!(tally.consecutive_successes, 3);
    }

    #[test]
    fn the_last_pause_is_shortened_so_the_final_attempt_has_time_to_run() {
        // 503 in 1 ms, paced pauses of 0.8-1.0 s: the paced start of the third attempt would fall
        // within MIN_ATTEMPT + UNWIND of the 2 s deadline; it is pulled forward instead.
        let time = FakeTime::new();
        let (v, _, starts) = run(&time, schedule(&time, 2_000), Duration::from_millis(1), status_503(), Duration::MAX);
        assert_eq!(v, Verdict::DeadlineReached);
        let (last_start, last_budget) = *starts.last().unwrap();
        assert!(last_budget >= MIN_ATTEMPT, "{starts:?}");
        assert!(last_start + MIN_ATTEMPT + UNWIND >= Duration::from_millis(1_999), "as late as it can be: {starts:?}");
        assert!(time.at() >= Duration::from_millis(2_000) - MIN_ATTEMPT - UNWIND, "ended at {:?}", time.at());
    }

    #[test]
    fn a_short_attempt_timeout_lowers_the_floor() {
        let time = FakeTime::new();
        let s = with(schedule(&time, 1_000), |t| t.attempt_timeout = Duration::from_millis(50));
        let refused = Failure::new(FailureClass::Connect, "refused").with(|f| f.cheap = true);
        let (_, _, starts) = run(&time, s, Duration::from_millis(1), refused, Duration::MAX);
        let (last_start, last_budget) = *starts.last().unwrap();
        assert_eq!(last_budget, Duration::from_millis(50));
        assert!(last_start + Duration::from_millis(50) + UNWIND >= Duration::from_millis(900), "{starts:?}");
    }

    fn asking(retry_after: Duration) -> Failure {
        Failure::new(FailureClass::HttpStatus, "HTTP 429").with(|f| f.retry_after = Some(retry_after))
    }

    #[test]
    fn retry_after_sets_the_pause_capped_and_spread() {
        for (asked, least) in [(5, 5), (120, 30)] {
            let time = FakeTime::new();
            let (_, _, starts) = run(
                &time,
                schedule(&time, 100_000),
                Duration::from_millis(1),
                asking(Duration::from_secs(asked)),
                Duration::MAX,
            );
            let gap = starts[1].0 - starts[0].0;
            let least = Duration::from_secs(least);
            assert!(gap >= least && gap <= least + Duration::from_millis(1_001), "asked {asked} s: {gap:?}");
        }
        // A Retry-After shorter than the paced pause changes nothing.
        let time = FakeTime::new();
        let (_, _, starts) = run(
            &time,
            schedule(&time, 100_000),
            Duration::from_millis(1),
            asking(Duration::from_millis(10)),
            Duration::MAX,
        );
        // (The first paced pause is the equilibrium one; the second shows the 80-100 % pause.)
        assert!(starts[2].0 - starts[1].0 >= Duration::from_millis(800), "{starts:?}");
    }

    /// The pauses' `Retry-After` verdicts for a provider that always asks `asked`.
    fn retry_afters(timeout_ms: u64, asked: Duration) -> Vec<(Duration, RetryAfter)> {
        let time = FakeTime::new();
        let t = time.clone();
        let mut attempt = |_| {
            t.advance(Duration::from_millis(1));
            Err(asking(asked))
        };
        let mut seen = Vec::new();
        let mut observe = |r: &AttemptReport<'_>, _: &Tally| {
            if let Next::Pause { pause, retry_after: Some(r) } = r.next {
                seen.push((pause, r));
            }
        };
        let (clock, mut sleeper) = (time.clone(), time.clone());
        let s = schedule(&time, timeout_ms);
        wait_until_ready(&s, &clock, &mut sleeper, &mut Jitter::new(3), &mut attempt, &mut observe);
        seen
    }

    #[test]
    fn retry_after_is_called_honoured_only_when_it_was() {
        let honoured = |asked, honoured| RetryAfter { asked, honoured };
        let (five, twenty, hour) = (Duration::from_secs(5), Duration::from_secs(20), Duration::from_secs(3600));
        // Room for it: honoured, except a last pause the deadline cuts short, which says so.
        let pauses = retry_afters(60_000, five);
        assert_eq!(pauses[0].1, honoured(five, true));
        assert!(pauses.iter().all(|(pause, r)| r.honoured == (*pause >= five)), "{pauses:?}");
        // The deadline comes first: the pause is cut short, and says so.
        let pauses = retry_afters(3_000, twenty);
        assert_eq!(pauses.iter().map(|p| p.1).collect::<Vec<_>>(), vec![honoured(twenty, false)]);
        assert!(pauses[0].0 < Duration::from_secs(3));
        // More than the cap: waited 30 s, not the hour asked.
        let capped = retry_afters(100_000, hour);
        assert_eq!(capped[0].1, honoured(hour, false), "{capped:?}");
        assert!(capped[0].0 >= RETRY_AFTER_CAP, "{capped:?}");
    }

    #[test]
    fn retry_after_past_the_deadline_keeps_the_final_attempt() {
        let time = FakeTime::new();
        let (v, _, starts) = run(
            &time,
            schedule(&time, 5_000),
            Duration::from_millis(1),
            asking(Duration::from_secs(3600)),
            Duration::MAX,
        );
        assert_eq!(v, Verdict::DeadlineReached);
        assert_eq!(starts.len(), 2, "{starts:?}");
        assert!(starts[1].0 + MIN_ATTEMPT + UNWIND >= Duration::from_millis(4_999), "{starts:?}");
    }

    #[test]
    fn attempt_budget_is_clipped_to_the_time_left() {
        let time = FakeTime::new();
        let (_, _, starts) = run(&time, schedule(&time, 2_000), Duration::from_secs(60), status_503(), Duration::MAX);
        assert_eq!(starts, vec![(Duration::ZERO, Duration::from_millis(2_000) - UNWIND)]);
    }

    #[test]
    fn the_watch_checks_every_interval_whatever_fails() {
        let time = FakeTime::new();
        let (t, mut sleeper) = (time.clone(), time.clone());
        let mut starts = Vec::new();
        let mut attempt = |budget| {
            starts.push((t.at(), budget));
            Err(status_503().with(|f| (f.cheap, f.retry_after) = (true, Some(Duration::from_secs(3600)))))
        };
        let mut left = 20;
        let mut observe = |_: &Result<Ready, Failure>| {
            left -= 1;
            left > 0
        };
        let (interval, budget) = (Duration::from_secs(30), Duration::from_secs(5));
        watch(interval, budget, &mut sleeper, &mut Jitter::new(7), &mut attempt, &mut observe);
        assert_eq!(starts.len(), 20);
        assert!(starts.iter().all(|(_, b)| *b == budget), "the whole attempt timeout: {starts:?}");
        assert!(starts[0].0 <= interval, "the first within an interval: {starts:?}");
        let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1].0 - w[0].0).collect();
        // Neither the refusal's fast retry nor the hour asked: 80-100 % of the interval.
        assert!(gaps.iter().all(|g| *g >= interval.mul_f64(PACED_LOW) && *g <= interval), "{gaps:?}");
        assert!(gaps.windows(2).any(|w| w[0] != w[1]), "jittered");
    }
}
