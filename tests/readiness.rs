//! Readiness: when the gate passes, how it waits, and when it gives up. Ready at once; retried
//! until ready (a 503, a refused connection retried fast, Keycloak's 404 while a realm is
//! imported) and ended right after; at the deadline failing open by default or closed on request;
//! `--attempt-timeout`, `--max-attempts` and `--once` (with its summary). The real binary against
//! a real local HTTPS provider with a throwaway CA.

use crate::support::*;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn ready_at_once() {
    let ca = TestCa::new();
    let (p, iss) = ready_provider(&ca, "localhost", "");
    let r = run(gate_for(&ca, &iss));
    assert_exit(&r, 0);
    assert_logged(&r, &["attempt 1: passed", "ready: https://localhost:"]);
    assert_eq!(p.count(), 1);
    assert_eq!(r.log().lines().count(), 3, "the first line, one per attempt, and the outcome:\n{}", r.log());
}

/// The first attempt is made at once, whatever the interval: no random delay comes before it, so
/// a provider that is already serving costs the defaults what it costs `--once`. (With a long
/// interval the pause before a second attempt would be long: none is made.)
#[test]
fn the_first_attempt_is_made_at_once_whatever_the_interval() {
    let ca = TestCa::new();
    let (p, iss) = ready_provider(&ca, "localhost", "");
    let r = {
        let mut cmd = gate_for(&ca, &iss);
        cmd.args(["--interval", "10m", "--timeout", "1h"]);
        run_with_limit(cmd, Duration::from_secs(30))
    };
    assert_exit(&r, 0);
    assert_eq!(p.count(), 1);
    assert!(r.running() < Duration::from_secs(10), "a delay before the first attempt: {:?}\n{}", r.elapsed, r.log());
}

#[test]
fn unavailable_then_ready_exits_right_after_readiness() {
    let ca = TestCa::new();
    let started = Instant::now();
    let ready_after = Duration::from_secs(2);
    // Ready 2 s after the start, and not before it has answered 503 once: however late a loaded
    // machine makes the gate's first attempt, it meets the 503 (an event, not a race).
    let first_503: Arc<Mutex<Option<Instant>>> = Arc::default();
    let seen = first_503.clone();
    let (p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
        let doc = discovery_doc(iss);
        reply(move |_, _| {
            let mut first = seen.lock().unwrap();
            if first.is_none() || started.elapsed() < ready_after {
                first.get_or_insert_with(Instant::now);
                Reply::text(503, "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>")
            } else {
                Reply::json(200, doc.clone())
            }
        })
    });
    let r = run(gate_for(&ca, &iss));
    assert_exit(&r, 0);
    assert_logged(&r, &["http-status: HTTP 503", "503 Service Temporarily Unavailable"]);
    // The next attempt after readiness comes within one interval (1 s).
    let ready_at = (started + ready_after).max(first_503.lock().unwrap().unwrap());
    let lag = ready_at.elapsed().saturating_sub(r.starved);
    assert!(lag < Duration::from_millis(1_500), "exited {lag:?} after readiness\n{}", r.log());
    assert!(p.count() >= 2 && p.count() <= 5, "about one request a second: {}", p.count());
}

#[test]
fn refused_then_listening() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let iss = slot.issuer("");
    let (leaf, doc) = (ca.leaf(&["localhost"]), discovery_doc(&iss));
    // The provider listens once the gate has been refused: its log is the event.
    let gate = LiveGate::spawn(gate_for(&ca, &iss));
    gate.wait_logged("connect: connection refused");
    let (_p, listening_at) = (slot.listen(tls_mode(leaf), serve_at(WELL_KNOWN, doc)), Instant::now());
    let r = gate.finish();
    assert_exit(&r, 0);
    let lag = listening_at.elapsed().saturating_sub(r.starved);
    assert!(lag < Duration::from_millis(500), "refused connections are retried fast; lag {lag:?}");
    let attempt_lines = r.log().lines().filter(|l| l.contains("attempt ")).count();
    assert!(attempt_lines <= 6, "fast retries are not logged ten times a second:\n{}", r.log());
}

#[test]
fn keycloak_404_while_the_realm_is_imported_is_retried() {
    let ca = TestCa::new();
    let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/realms/demo", |iss| {
        let doc = discovery_doc(iss);
        reply(move |_, n| {
            if n < 2 { Reply::json(404, r#"{"error":"Realm does not exist"}"#) } else { Reply::json(200, doc.clone()) }
        })
    });
    let r = run_args(gate_for(&ca, &iss), &["--interval", "200ms"]);
    assert_exit(&r, 0);
    assert_logged(&r, &["HTTP 404", "realm is imported"]);
}

#[test]
fn fails_open_at_the_deadline_by_default() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let r = run_args(gate_for(&ca, &p.issuer("")), &["--timeout", "2s"]);
    assert_exit(&r, 0);
    assert_logged(&r, &["failing open", "last failure: http-status: HTTP 503", "failures by class: http-status="]);
    // The final attempt is made as late as still leaves it time to run; then the gate ends.
    assert!(r.elapsed >= Duration::from_millis(1_700), "waited until the deadline: {:?}", r.elapsed);
    assert_within(&r, Duration::from_secs(2));
}

#[test]
fn fails_closed_on_request() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let r = run_args(gate_for(&ca, &p.issuer("")), &["--timeout", "2s", "--fail-closed"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["failing closed"]);
    assert_within(&r, Duration::from_secs(2));
}

#[test]
fn attempt_timeout_is_kept_by_the_waiter() {
    let silent = Provider::start(Mode::Silent, Arc::new(|_, _| Reply::Hang));
    let mut cmd = gate();
    cmd.args(["--issuer", &silent.issuer(""), "--attempt-timeout", "1s"]);
    // -v: the same failure again is said as `again ×N` (issue 25), at info only now and then.
    cmd.args(["--timeout", "3500ms", "--fail-closed", "--interval", "100ms", "-v"]);
    let r = run(cmd);
    assert_exit(&r, 1);
    // An identical failure again is one more whole attempt.
    let full =
        r.log().lines().filter(|l| l.contains("not complete within 1.00s") || l.contains("timeout again ×")).count();
    assert!(full >= 3, "three whole 1 s attempts fit in 3.5 s: {}", r.log());
    assert_logged(&r, &["not complete within 1.00s"]);
}

#[test]
fn max_attempts_ends_before_the_deadline() {
    let ca = TestCa::new();
    let p = always_503(&ca);
    let r = run_args(gate_for(&ca, &p.issuer("")), &["--max-attempts", "2", "--interval", "100ms", "--fail-closed"]);
    assert_exit(&r, 1);
    assert_eq!(p.count(), 2);
    assert_logged(&r, &["all 2 attempt(s) used"]);
}

#[test]
fn once_prints_a_summary_or_fails_closed() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/demo");
    let r = run_args(gate_for(&ca, &iss), &["--once"]);
    assert_exit(&r, 0);
    assert!(r.stdout.contains(&format!("issuer                  {iss}\n")), "{}", r.stdout);
    assert!(r.stdout.contains("token_endpoint") && r.stdout.contains("jwks_uri"), "{}", r.stdout);
    assert!(r.stdout.contains("signing algorithms      RS256"), "{}", r.stdout);

    let down = always_503(&ca);
    let r = run_args(gate_for(&ca, &down.issuer("")), &["--once"]);
    assert_exit(&r, 1);
    assert_eq!(down.count(), 1);
    assert!(r.stdout.is_empty());
    assert!(r.running() < Duration::from_secs(2), "{:?}", r.elapsed);
}
