//! The gate against a real, certified OpenID Provider (npm `oidc-provider`, run by Node on
//! loopback over HTTPS with a throwaway CA). The test command installs it; without it these tests
//! fail rather than skip, since a missing peer would otherwise pass silently.

use crate::support::*;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Peer {
    child: Child,
    /// When the peer printed "listening".
    listening_at: Option<Instant>,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts oidc-provider for `issuer` on the reserved port (its socket is handed over as an
/// inherited file descriptor, so the port is never free for another test to take); `delay_ms`
/// before it listens (a cold start: until then connections are refused). With `wait`, returns
/// once it serves.
fn start_peer(ca: &TestCa, issuer: &str, slot: Reserved, delay_ms: u64, wait: bool) -> Peer {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peer");
    assert!(
        dir.join("node_modules/oidc-provider").exists(),
        "oidc-provider is not installed: run the test command (.ci/test), which runs `npm ci` in tests/peer"
    );
    let (cert, key) = ca.leaf_pem_files(&["localhost"]);
    let socket = slot.into_inheritable_fd();
    let child = Command::new("node")
        .arg(dir.join("provider.mjs"))
        .current_dir(&dir)
        .env("PEER_ISSUER", issuer)
        .env("PEER_FD", socket.as_raw_fd().to_string())
        .env("PEER_CERT", cert)
        .env("PEER_KEY", key)
        .env("PEER_DELAY_MS", delay_ms.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node is needed for the peer tests; the test command installs it");
    drop(socket);
    let mut peer = Peer { child, listening_at: None };
    if wait {
        let stdout = peer.child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "listening", "the peer did not start");
        peer.listening_at = Some(Instant::now());
    }
    peer
}

#[test]
fn cold_start_gate_exits_right_after_the_provider_serves() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let issuer = slot.issuer("/realms/test");
    let gate_started = Instant::now();
    let mut cmd = gate_for(&ca, &issuer);
    cmd.args(["--timeout", "60s", "--fail-closed", "--strict"]);
    let gate_child = std::thread::spawn(move || run(cmd));
    // The provider comes up about 1.5 s (+ Node's start) after the gate.
    let mut peer = start_peer(&ca, &issuer, slot, 1500, false);
    let stdout = peer.child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let listening_at = Instant::now();
    let r = gate_child.join().unwrap();
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.log().contains("connect: connection refused"), "started before the provider: {}", r.log());
    let exited_at = gate_started + r.elapsed;
    let lag = exited_at.saturating_duration_since(listening_at);
    assert!(lag < Duration::from_millis(600), "exited {lag:?} after the provider served\n{}", r.log());
}

#[test]
fn certified_provider_passes_strict_and_once_shows_its_endpoints() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let issuer = slot.issuer("");
    let _peer = start_peer(&ca, &issuer, slot, 0, true);
    let mut cmd = gate_for(&ca, &issuer);
    cmd.args(["--once", "--strict"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.stdout.contains(&format!("jwks_uri                {issuer}/jwks")), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("token_endpoint          {issuer}/token")), "{}", r.stdout);
}

#[test]
fn issuer_mismatch_against_the_certified_provider() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let issuer = slot.issuer("/realms/test");
    let _peer = start_peer(&ca, &issuer, slot, 0, true);
    // Same metadata URL (one trailing slash is removed before appending), different issuer.
    let mut cmd = gate_for(&ca, &format!("{issuer}/"));
    cmd.arg("--once");
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert!(r.log().contains("issuer-mismatch") && r.log().contains("only the trailing slash differs"), "{}", r.log());
    // And a public issuer fetched through --discovery-url: the provider names itself, not the public URL.
    let mut cmd = gate_for(&ca, "https://sso.example.com/realms/test");
    cmd.args(["--discovery-url", &format!("{issuer}/.well-known/openid-configuration"), "--once"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert!(r.log().contains(&format!("document says issuer \"{issuer}\"")), "{}", r.log());
}

/// oidc-provider serves OpenID Connect Discovery only: with `--metadata oauth` the RFC 8414
/// location answers 404, so the gate never passes (documented in the README).
#[test]
fn oauth_metadata_is_not_served_by_oidc_provider() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let issuer = slot.issuer("/realms/test");
    let _peer = start_peer(&ca, &issuer, slot, 0, true);
    let mut cmd = gate_for(&ca, &issuer);
    cmd.args(["--metadata", "oauth", "--once"]);
    let r = run(cmd);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert!(
        r.log().contains(&format!(
            "HTTP 404 Not Found from {}/.well-known/oauth-authorization-server/realms/test",
            issuer.trim_end_matches("/realms/test")
        )),
        "{}",
        r.log()
    );
}
