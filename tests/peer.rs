//! The gate against real implementations, run by Node on loopback over HTTPS with a throwaway CA:
//! a certified OpenID Provider (npm `oidc-provider`) and the MCP TypeScript SDK's authorization
//! metadata routers (npm `@modelcontextprotocol/sdk`). The test command installs both; without
//! them these tests fail rather than skip, since a missing peer would otherwise pass silently.

use crate::support::*;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Instant;

struct Peer {
    child: Child,
    stdout: Option<ChildStdout>,
}

impl Peer {
    /// Blocks until the peer says it serves; returns when that was.
    fn listening(&mut self) -> Instant {
        let mut line = String::new();
        BufReader::new(self.stdout.take().expect("waited once")).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "listening", "the peer did not start");
        Instant::now()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn peer_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peer")
}

/// Starts a Node peer script on the reserved port: its socket is handed over as an inherited
/// file descriptor, so the port is never free for another test to take, and connections are
/// refused until the peer listens (a cold start). A test that needs refusals first starts the
/// peer only once the gate has been seen to be refused ([`LiveGate::wait_logged`]): an event, not
/// a guess at how long Node takes to boot.
fn start(script: &str, ca: &TestCa, slot: Reserved, env: &[(&str, &str)]) -> Peer {
    let dir = peer_dir();
    assert!(
        dir.join("node_modules/oidc-provider").exists() && dir.join("node_modules/@modelcontextprotocol/sdk").exists(),
        "the peers are not installed: run the test command (.ci/test), which runs `npm ci` in tests/peer"
    );
    let (cert, key) = ca.leaf_pem_files(&["localhost"]);
    let socket = slot.into_inheritable_fd();
    let mut child = Command::new("node")
        .arg(dir.join(script))
        .current_dir(&dir)
        .envs(env.iter().copied())
        .env("PEER_FD", socket.as_raw_fd().to_string())
        .env("PEER_CERT", cert)
        .env("PEER_KEY", key)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node is needed for the peer tests; the test command installs it");
    drop(socket);
    let stdout = child.stdout.take();
    Peer { child, stdout }
}

/// oidc-provider for `issuer`, mounted under the issuer's path as a reverse proxy would.
fn oidc_provider(ca: &TestCa, issuer: &str, slot: Reserved) -> Peer {
    start("provider.mjs", ca, slot, &[("PEER_ISSUER", issuer)])
}

/// The MCP SDK serving a resource's metadata, listing `issuer` as its authorization server.
fn mcp_server(ca: &TestCa, resource: &str, issuer: &str, mode: &str, slot: Reserved) -> Peer {
    start("mcp.mjs", ca, slot, &[("PEER_RESOURCE", resource), ("PEER_ISSUER", issuer), ("PEER_MODE", mode)])
}

/// The gate's own promise that it notices a server as soon as it serves: the pause it scheduled
/// after its last failed attempt (with `-v` it logs "next in 0.05s" for each). A refused connection costs
/// the provider nothing and is retried within 0.1 s. This is read from the gate's schedule, not
/// from the wall clock, which a loaded machine stretches.
fn assert_retried_at_once(r: &Run) {
    let last_failure = r.log().lines().rfind(|l| l.contains(" attempt ") && l.contains("(next in "));
    let line = last_failure.unwrap_or_else(|| panic!("no failed attempt logged:\n{}", r.log()));
    let pause = line.split("(next in ").nth(1).and_then(|rest| rest.split('s').next()).unwrap();
    let pause: f64 = pause.parse().unwrap_or_else(|_| panic!("pause {pause:?} in {line:?}"));
    // A repeat is said as "connect again ×N" after the first refusal said in full.
    let refused = line.contains("connection refused")
        || (line.contains("connect again ×") && r.log().contains("connection refused"));
    assert!(refused, "the last failure is the refusal: {line}\n{}", r.log());
    assert!(pause <= 0.1, "a refused connection is retried within 0.1 s, not {pause} s:\n{}", r.log());
}

#[test]
#[ignore = "needs node and the npm peers in tests/peer; the test command runs it"]
fn cold_start_gate_exits_right_after_the_provider_serves() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let issuer = slot.issuer("/realms/test");
    // A bound that only catches a hang: the provider starts once the gate has been refused.
    let mut cmd = gate_for(&ca, &issuer);
    cmd.args(["--timeout", "15m", "--fail-closed", "--strict"]);
    cmd.arg("-v");
    let gate = LiveGate::spawn(cmd);
    gate.wait_logged("connect: connection refused");
    let mut peer = oidc_provider(&ca, &issuer, slot);
    peer.listening();
    let r = gate.finish();
    assert_exit(&r, 0);
    assert_retried_at_once(&r);
}

#[test]
#[ignore = "needs node and the npm peers in tests/peer; the test command runs it"]
fn certified_provider_passes_strict_and_once_shows_its_endpoints() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let issuer = slot.issuer("");
    let mut peer = oidc_provider(&ca, &issuer, slot);
    peer.listening();
    let r = run_args(gate_for(&ca, &issuer), &["--once", "--strict"]);
    assert_exit(&r, 0);
    assert!(r.stdout.contains(&format!("jwks_uri                {issuer}/jwks")), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("token_endpoint          {issuer}/token")), "{}", r.stdout);
}

#[test]
#[ignore = "needs node and the npm peers in tests/peer; the test command runs it"]
fn issuer_mismatch_against_the_certified_provider() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let issuer = slot.issuer("/realms/test");
    let mut peer = oidc_provider(&ca, &issuer, slot);
    peer.listening();
    // Same metadata URL (one trailing slash is removed before appending), different issuer.
    let r = run_args(gate_for(&ca, &format!("{issuer}/")), &["--once"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["issuer-mismatch", "only the trailing slash differs"]);
    // And a public issuer fetched through --discovery-url: the provider names itself, not the public URL.
    let discovery = format!("{issuer}/.well-known/openid-configuration");
    let r = run_args(gate_for(&ca, "https://sso.example.com/realms/test"), &["--discovery-url", &discovery, "--once"]);
    assert_exit(&r, 1);
    assert_logged(&r, &[&format!("document says issuer \"{issuer}\"")]);
}

/// oidc-provider serves its document at both well-known suffixes *appended* to where it is
/// mounted. At the root, that is also where RFC 8414 looks, so `oauth` and `auto` pass at the
/// first URL. Mounted under an issuer's path, as a reverse proxy would, RFC 8414's inserted
/// location answers 404 (so `oauth` never passes; documented in docs/ready.md), and `auto` finds
/// the OIDC document at the third URL.
#[test]
#[ignore = "needs node and the npm peers in tests/peer; the test command runs it"]
fn oauth_and_auto_against_oidc_provider_with_and_without_a_path() {
    use wait_for_idp::rules::authorization_server::{MetadataKind, well_known_url};
    let ca = TestCa::new();
    for (path, oauth_exit, passes_at) in [("", 0, MetadataKind::OAuth), ("/realms/test", 1, MetadataKind::Oidc)] {
        let slot = Reserved::new();
        let issuer = slot.issuer(path);
        let mut peer = oidc_provider(&ca, &issuer, slot);
        peer.listening();
        let r = run_args(gate_for(&ca, &issuer), &["--metadata", "oauth", "--once"]);
        assert_exit(&r, oauth_exit);
        if oauth_exit == 1 {
            assert_logged(&r, &["HTTP 404 Not Found from", "/.well-known/oauth-authorization-server/realms/test"]);
        }
        let r = run_args(gate_for(&ca, &issuer), &["--metadata", "auto", "--once", "--output", "json", "--strict"]);
        assert_exit(&r, 0);
        assert_eq!(r.json()["issuers"][0]["metadata_url"], well_known_url(&issuer, passes_at).as_str(), "{path:?}");
    }
}

/// The MCP SDK serving a path-scoped resource and its own authorization server (RFC 8414).
#[test]
#[ignore = "needs node and the npm peers in tests/peer; the test command runs it"]
fn mcp_sdk_resource_and_authorization_server_are_discovered_end_to_end() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let (resource, issuer) = (slot.issuer("/tenant/mcp"), slot.issuer(""));
    let mut peer = mcp_server(&ca, &resource, &issuer, "metadata", slot);
    peer.listening();
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once", "--output", "json"]);
    let r = run(cmd);
    assert_exit(&r, 0);
    let entry = &r.json()["issuers"][0];
    assert_eq!(entry["metadata_url"], format!("{issuer}/.well-known/oauth-protected-resource/tenant/mcp"));
    // The SDK writes the issuer as a URL's href: with a trailing slash.
    assert_eq!(entry["authorization_servers"][0]["issuer"], format!("{issuer}/"));
    assert_eq!(entry["authorization_servers"][0]["endpoints"]["token_endpoint"], format!("{issuer}/token"));
}

/// A cold start: the gate first, then the MCP server, then its authorization server, each at a
/// moment of its own. The gate passes right after the last one serves.
#[test]
#[ignore = "needs node and the npm peers in tests/peer; the test command runs it"]
fn mcp_cold_start_resource_and_authorization_server_come_up_at_different_moments() {
    let ca = TestCa::new();
    let (rs_slot, as_slot) = (Reserved::new(), Reserved::new());
    let resource = rs_slot.issuer("/tenant/mcp");
    let issuer = as_slot.issuer("/realms/test");
    // Each server starts once the gate has been seen refused by it, so the order is the events'
    // and not Node's boot times; the timeout only catches a hang.
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--timeout", "15m", "--fail-closed"]);
    cmd.arg("-v");
    let gate = LiveGate::spawn(cmd);
    gate.wait_logged("connect: MCP endpoint: connection refused");
    let mut rs = mcp_server(&ca, &resource, &issuer, "metadata", rs_slot);
    rs.listening();
    gate.wait_logged(&format!("connect: authorization server {issuer}: connection refused"));
    let mut idp = oidc_provider(&ca, &issuer, as_slot);
    idp.listening();
    let r = gate.finish();
    assert_exit(&r, 0);
    assert_logged(&r, &["passed: resource metadata at"]);
    assert_retried_at_once(&r);
}

/// No metadata at either well-known location: the SDK's requireBearerAuth answers the resource's
/// own request with a 401 whose challenge names it.
#[test]
#[ignore = "needs node and the npm peers in tests/peer; the test command runs it"]
fn mcp_sdk_challenge_names_the_metadata() {
    let ca = TestCa::new();
    let slot = Reserved::new();
    let (resource, issuer) = (slot.issuer("/tenant/mcp"), slot.issuer(""));
    let mut peer = mcp_server(&ca, &resource, &issuer, "challenge", slot);
    peer.listening();
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once", "--output", "json"]);
    let r = run(cmd);
    // The metadata is found through the challenge; this SDK mode serves no RFC 8414 document of
    // its own, so the chain ends at the authorization server, which is the point: each link is named.
    let json = r.json();
    let failure = &json["issuers"][0]["last_failure"];
    assert_eq!(failure["link"], "metadata", "{json}");
    assert!(failure["message"].as_str().unwrap().starts_with(&format!("authorization server {issuer}/: ")), "{json}");
}

#[test]
#[ignore = "needs node and the npm peers in tests/peer; the test command runs it"]
fn mcp_sdk_resource_mismatch_and_a_server_whose_issuer_differs() {
    let ca = TestCa::new();
    // The MCP server announces its address instead of the name clients are given.
    let slot = Reserved::new();
    let (resource, issuer) = (slot.issuer("/tenant/mcp"), slot.issuer(""));
    let announced = issuer_at("127.0.0.1", slot.port, "/tenant/mcp");
    let mut peer = mcp_server(&ca, &announced, &issuer, "metadata", slot);
    peer.listening();
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once"]);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(
        &r,
        &[&format!("resource: protected resource metadata says resource {announced:?}, expected {resource:?}")],
    );

    // The resource lists oidc-provider's issuer with a trailing slash it does not have.
    let (rs_slot, as_slot) = (Reserved::new(), Reserved::new());
    let resource = rs_slot.issuer("/mcp");
    let issuer = as_slot.issuer("/realms/test");
    let mut idp = oidc_provider(&ca, &issuer, as_slot);
    let mut rs = mcp_server(&ca, &resource, &format!("{issuer}/"), "metadata", rs_slot);
    idp.listening();
    rs.listening();
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once"]);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(
        &r,
        // Off only by the trailing slash: a mismatch waiting cannot fix (docs/ready.md), said so.
        &[&format!(
            "issuer-mismatch: waiting cannot fix this: authorization server {issuer}/: document says issuer \"{issuer}\""
        )],
    );
}

/// What the MCP TypeScript SDK's client code decides about each document
/// (`tests/peer/sdk-verdicts.mjs`, no network): `None` when it accepts, else why it refuses.
fn sdk_verdicts(cases: &[serde_json::Value]) -> Vec<Option<String>> {
    let dir = peer_dir();
    assert!(dir.join("node_modules/@modelcontextprotocol/sdk").exists(), "the peers are not installed");
    let mut child = Command::new("node")
        .arg(dir.join("sdk-verdicts.mjs"))
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node is needed for the peer tests; the test command installs it");
    let input: String = cases.iter().map(|c| format!("{c}\n")).collect();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let lines: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect();
    assert_eq!(lines.len(), cases.len(), "one verdict per case: {lines:?}");
    lines.iter().map(|l| l.split_once("\trejected\t").map(|(_, why)| why.to_string())).collect()
}

/// Issue 17: the documents that fail under `--metadata auto` and `--resource`, judged by the MCP
/// TypeScript SDK 1.32.2 itself (its zod schemas in `discoverAuthorizationServerMetadata` and
/// `discoverOAuthProtectedResourceMetadata`, then `startAuthorization`) and by the gate against a
/// local provider: the gate refuses exactly what the SDK refuses, except a plain token endpoint,
/// which the SDK does not check and the MCP specification's Communication Security forbids.
#[test]
#[ignore = "needs node and the npm peers in tests/peer; the test command runs it"]
fn the_gate_refuses_what_the_mcp_sdk_refuses() {
    use serde_json::{Value, json};
    const OAUTH: &str = "/.well-known/oauth-authorization-server";
    let oauth = |iss: &str| {
        json!({
            "issuer": iss, "authorization_endpoint": format!("{iss}/authorize"), "token_endpoint": format!("{iss}/token"),
            "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
        })
    };
    let oidc = |iss: &str| serde_json::from_str::<Value>(&discovery_doc(iss)).unwrap();
    type Case = (&'static str, &'static str, fn(&mut serde_json::Map<String, Value>), bool, bool);
    // (name, spec, change, the SDK accepts, the gate passes)
    let cases: Vec<Case> = vec![
        ("complete", "oauth", |_| {}, true, true),
        ("no authorization_endpoint", "oauth", |d| drop(d.remove("authorization_endpoint")), false, false),
        ("no token_endpoint", "oauth", |d| drop(d.remove("token_endpoint")), false, false),
        ("no response_types_supported", "oauth", |d| drop(d.remove("response_types_supported")), false, false),
        (
            "no code flow",
            "oauth",
            |d| drop(d.insert("response_types_supported".into(), json!(["token"]))),
            false,
            false,
        ),
        (
            "PKCE without S256",
            "oauth",
            |d| drop(d.insert("code_challenge_methods_supported".into(), json!(["plain"]))),
            false,
            false,
        ),
        ("no PKCE list (a warning)", "oauth", |d| drop(d.remove("code_challenge_methods_supported")), true, true),
        ("OIDC without subject_types_supported", "oidc", |d| drop(d.remove("subject_types_supported")), false, false),
        (
            "plain token endpoint",
            "oauth",
            |d| drop(d.insert("token_endpoint".into(), json!("http://as.example/token"))),
            true,
            false,
        ),
    ];
    let ca = TestCa::new();
    let mut sdk_cases = Vec::new();
    let mut gate_passed = Vec::new();
    for (name, spec, change, _, _) in &cases {
        let (_p, iss) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| {
            let mut doc = if *spec == "oidc" { oidc(iss) } else { oauth(iss) };
            change(doc.as_object_mut().unwrap());
            sdk_cases.push(json!({ "name": name, "kind": "as", "spec": spec, "doc": doc }));
            serve_at(if *spec == "oidc" { WELL_KNOWN } else { OAUTH }, doc.to_string())
        });
        gate_passed.push(run_args(gate_for(&ca, &iss), &["--metadata", "auto", "--once"]).code == Some(0));
    }
    // A resource whose metadata lists a server that is not a string.
    let (_rs, resource) = Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "/mcp", |res| {
        let doc = json!({ "resource": res, "authorization_servers": ["https://as.example", 42] });
        sdk_cases.push(json!({ "name": "a server that is not a string", "kind": "prm", "doc": doc }));
        serve_at("/.well-known/oauth-protected-resource/mcp", doc.to_string())
    });
    let mut cmd = gate();
    cmd.args(["--resource", &resource, "--ca-file", &ca.ca_arg(), "--once"]);
    gate_passed.push(run(cmd).code == Some(0));
    let expected = cases.iter().map(|c| (c.0, c.3, c.4)).chain([("a server that is not a string", false, false)]);
    for ((name, sdk_accepts, gate_passes), (sdk, gate)) in
        expected.zip(sdk_verdicts(&sdk_cases).into_iter().zip(gate_passed))
    {
        assert_eq!(sdk.is_none(), sdk_accepts, "{name}: the SDK says {sdk:?}");
        assert_eq!(gate, gate_passes, "{name}: the gate");
    }
}
