//! Found in the field (issue 9): each test here failed before its fix. The real binary against
//! local servers that misbehave the way real ones did.

use crate::support::*;
use std::sync::Arc;

// 1. The waiting side ends an attempt at its own deadline, whatever the socket does.

#[test]
fn attempt_timeout_is_kept_by_the_waiter() {
    let silent = Provider::start(Mode::Silent, Arc::new(|_, _| Reply::Hang));
    let mut cmd = gate();
    cmd.args(["--issuer", &silent.issuer(""), "--attempt-timeout", "1s"]);
    cmd.args(["--timeout", "3500ms", "--fail-closed", "--interval", "100ms"]);
    let r = run(cmd);
    assert_exit(&r, 1);
    let full = r.log().lines().filter(|l| l.contains("not complete within 1.00s")).count();
    assert!(full >= 3, "three whole 1 s attempts fit in 3.5 s: {}", r.log());
    assert_logged(&r, &["not complete within 1.00s"]);
}
