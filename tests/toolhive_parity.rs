//! ToolHive's proxy runner against the gate (issue 34 §1, §3): `thv-proxyrunner` v0.47.0 (built by
//! `.ci/real-peers` from `tests/real/toolhive`), configured as ToolHive's operator configures an
//! MCPRemoteProxy with an embedded auth server whose upstream is an OIDC provider
//! (`runconfig.json`, `embedded_auth_server_config.upstreams[].oidc_config`). Its start-up makes one
//! discovery request (go-oidc's `oidc.NewProvider`, no retry) before it binds `/health`: it either
//! serves `/health` 200 or exits, whatever the provider does.
//!
//! The states are generated from dimensions, each state one dimension away from the plain one
//! (a ready provider on `localhost`, trusted through `ca_file_path`): statuses, documents, trust
//! sources, slow answers against its timeouts, redirects, gzip, issuer forms, and the issuer by a
//! name (`idp.thv.test`) that resolves to 127.0.0.1 only in this test's mount namespace (its own
//! `/etc/hosts`), so a private address with and without `allow_private_ips`. Each state: the
//! runner's own start (alive, `/health` 200) against the gate configured as a ToolHive user would
//! configure it (`--client toolhive`, `--issuer`, `--ca-file`, `--refuse-private-addresses=false`
//! where `allow_private_ips` is set), exit 0 with `--fail-closed`. They agree, or the state names
//! a deliberate difference (docs/parity.md), which must then still differ. The counts are
//! docs/parity.md's.
//!
//! The runner runs with its vendor's usage metrics off (`TOOLHIVE_USAGE_METRICS_ENABLED=false`),
//! and every runner that starts is watched with `ss`: none of its connections leaves loopback.

use crate::network_faults::gzip;
use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A name only this test's `/etc/hosts` resolves, to 127.0.0.1: a private address to ToolHive.
const NAME: &str = "idp.thv.test";

/// The gate's deadline in every state: past the runner's 10 s, short enough for 2 busy cores.
const GATE_TIMEOUT: &str = "12s";

// The deliberate differences: the runner starts, the gate refuses (docs/parity.md lists each).
const D_HTTPS_TO_HTTP: &str =
    "a plain-HTTP hop in an https chain is never ready; ToolHive follows it on a loopback issuer";

/// How the provider answers its discovery URL.
#[derive(Clone)]
enum Answer {
    /// The document, edited.
    Document(fn(&mut Value)),
    Status(u16),
    /// The document after this long.
    Late(Duration),
    /// The connection accepted, never an answer.
    Hang,
    /// Nothing listening.
    Refused,
    /// A redirect with this status to the document elsewhere on the origin, or on another.
    Redirect(u16, Hop),
    /// The document gzip-compressed when asked.
    Gzip,
}

#[derive(Clone, Copy)]
enum Hop {
    SameOrigin,
    OtherOrigin,
    PlainHttp,
}

/// Where the runner and the gate get their trust.
#[derive(Clone, Copy, PartialEq)]
enum Trust {
    /// `ca_file_path` and `--ca-file`.
    CaFile,
    /// `SSL_CERT_FILE` for both.
    SslCertFile,
    /// Nothing: the system's roots only.
    Nothing,
    /// Another CA's file, which does not sign the server.
    OtherCa,
}

#[derive(Clone)]
struct State {
    label: &'static str,
    host: &'static str,
    plain: bool,
    /// The issuer's path, and what the document says the issuer is (`{}`: the same).
    path: &'static str,
    doc_issuer: Option<&'static str>,
    answer: Answer,
    trust: Trust,
    allow_private_ips: bool,
    named: Option<&'static str>,
}

fn plain_state(label: &'static str) -> State {
    State {
        label,
        host: "localhost",
        plain: false,
        path: "/realms/seed",
        doc_issuer: None,
        answer: Answer::Document(|_| {}),
        trust: Trust::CaFile,
        allow_private_ips: false,
        named: None,
    }
}

/// Every state, one dimension away from the plain one each.
fn states() -> Vec<State> {
    let s = plain_state;
    let doc = |label, edit: fn(&mut Value)| State { answer: Answer::Document(edit), ..s(label) };
    let answer = |label, answer: Answer| State { answer, ..s(label) };
    let named = |label, plain, allow_private_ips, edit: fn(&mut Value)| State {
        host: NAME,
        plain,
        allow_private_ips,
        answer: Answer::Document(edit),
        ..s(label)
    };
    let to_http = |d: &mut Value| {
        for k in ["authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint"] {
            d[k] = Value::String(d[k].as_str().unwrap().replacen("https://", "http://", 1));
        }
    };
    vec![
        s("plain: a ready provider, CA by ca_file_path"),
        // Statuses.
        answer("503 (a gateway before the provider)", Answer::Status(503)),
        answer("404 (a realm not imported yet)", Answer::Status(404)),
        answer("500", Answer::Status(500)),
        answer("connection refused", Answer::Refused),
        // Documents.
        doc("no authorization_endpoint nor token_endpoint (the API server's shape)", |d| {
            let o = d.as_object_mut().unwrap();
            o.remove("authorization_endpoint");
            o.remove("token_endpoint");
        }),
        doc("no jwks_uri", |d| {
            d.as_object_mut().unwrap().remove("jwks_uri");
        }),
        doc("no response_types_supported", |d| {
            d.as_object_mut().unwrap().remove("response_types_supported");
        }),
        doc("no subject_types_supported (ToolHive does not need it)", |d| {
            d.as_object_mut().unwrap().remove("subject_types_supported");
        }),
        doc("endpoints on another host than the loopback issuer's", |d| {
            d["token_endpoint"] = json!("https://idp.example/token");
        }),
        doc("not JSON", |d| *d = json!("<html>")),
        // Issuer forms.
        State { doc_issuer: Some("{}/"), ..s("document's issuer with a trailing / the configured one lacks") },
        State { path: "/realms/seed/", ..s("issuer with a trailing /, the document's the same") },
        State { path: "", ..s("issuer without a path") },
        State { host: "127.0.0.1", ..s("issuer on 127.0.0.1") },
        State { host: "127.0.0.1", plain: true, ..s("http:// issuer on 127.0.0.1 (loopback)") },
        // Trust sources.
        State { trust: Trust::SslCertFile, ..s("CA by SSL_CERT_FILE") },
        State { trust: Trust::Nothing, ..s("no CA given (unknown authority)") },
        State { trust: Trust::OtherCa, ..s("a CA file that does not sign the server") },
        // Slow answers against the runner's 10 s (ResponseHeaderTimeout).
        answer("the document after 7 s", Answer::Late(Duration::from_secs(7))),
        answer("the document after 12 s", Answer::Late(Duration::from_secs(12))),
        answer("accepts, never answers", Answer::Hang),
        // Redirects and compression.
        answer("302 to the document on the same origin", Answer::Redirect(302, Hop::SameOrigin)),
        answer("301 to the document on another origin", Answer::Redirect(301, Hop::OtherOrigin)),
        State {
            named: Some(D_HTTPS_TO_HTTP),
            ..answer("302 to the document on plain http", Answer::Redirect(302, Hop::PlainHttp))
        },
        answer("gzip when asked", Answer::Gzip),
        // A name resolving to a private address (127.0.0.1), with and without allow_private_ips.
        named("named issuer, private address, no allow_private_ips", false, false, |_| {}),
        named("named issuer, private address, allow_private_ips", false, true, |_| {}),
        named("http:// issuer on a non-loopback name", true, true, |_| {}),
        named("https issuer whose endpoints are http://", false, true, to_http),
        named("named issuer without authorization_endpoint", false, true, |d| {
            d.as_object_mut().unwrap().remove("authorization_endpoint");
        }),
    ]
}

/// A provider serving `state` on a port of its own; its issuer.
fn provider(state: &State, ca: &TestCa, others: &mut Vec<Provider>) -> (Option<Provider>, String) {
    let slot = Reserved::new();
    let scheme = if state.plain { "http" } else { "https" };
    let issuer = format!("{scheme}://{}:{}{}", state.host, slot.port, state.path);
    let said = state.doc_issuer.map_or(issuer.clone(), |form| form.replace("{}", &issuer));
    let mut document: Value = serde_json::from_str(&discovery_doc(&said)).unwrap();
    let base = said.trim_end_matches('/').to_string();
    for k in ["authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint"] {
        document[k] = json!(format!("{base}/protocol/openid-connect/{k}"));
    }
    let well_known = format!("{}{WELL_KNOWN}", state.path.trim_end_matches('/'));
    let mode = |plain: bool| if plain { Mode::Plain } else { tls_mode(ca.leaf(&["localhost", "127.0.0.1", NAME])) };
    let body = move |edit: fn(&mut Value)| {
        let mut d = document.clone();
        edit(&mut d);
        d.to_string()
    };
    let handler = match state.answer.clone() {
        Answer::Refused => return (None, issuer),
        Answer::Document(edit) => serve_at(&well_known, body(edit)),
        Answer::Status(code) => reply(move |_, _| Reply::json(code, r#"{"error":"not yet"}"#)),
        Answer::Late(after) => {
            let text = body(|_| {});
            reply(move |_, _| {
                std::thread::sleep(after);
                Reply::json(200, text.clone())
            })
        }
        Answer::Hang => reply(|_, _| Reply::Hang),
        Answer::Gzip => {
            let text = body(|_| {});
            reply(move |req, _| match req.header("accept-encoding") {
                Some(e) if e.contains("gzip") => Reply::Response {
                    status: 200,
                    headers: vec![
                        ("Content-Type".into(), "application/json".into()),
                        ("Content-Encoding".into(), "gzip".into()),
                    ],
                    body: gzip(text.as_bytes()),
                },
                _ => Reply::json(200, text.clone()),
            })
        }
        Answer::Redirect(code, hop) => {
            let target = match hop {
                Hop::SameOrigin => format!("{issuer}/moved"),
                Hop::OtherOrigin | Hop::PlainHttp => {
                    let other = Provider::start(mode(matches!(hop, Hop::PlainHttp)), serve_at("/doc", body(|_| {})));
                    let scheme = if matches!(hop, Hop::PlainHttp) { "http" } else { "https" };
                    let url = format!("{scheme}://localhost:{}/doc", other.port());
                    others.push(other);
                    url
                }
            };
            let (well_known, text) = (well_known.clone(), body(|_| {}));
            reply(
                move |req, _| {
                    if req.path == well_known { Reply::redirect(code, &target) } else { Reply::json(200, text.clone()) }
                },
            )
        }
    };
    (Some(slot.listen(mode(state.plain), handler)), issuer)
}

/// The command in a mount namespace of its own whose `/etc/hosts` also maps [`NAME`].
fn in_namespace(hosts: &Path, program: &str) -> Command {
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "sh", "-c", r#"mount --bind "$0" /etc/hosts && exec "$@""#]).arg(hosts).arg(program);
    cmd.env_clear().stdin(Stdio::null());
    cmd
}

/// The runner's own start: `/health` 200, or its exit and the error it logged.
fn runner_start(state: &State, issuer: &str, trust: (&str, &Path), dir: &Path) -> (bool, String) {
    let port = free_port();
    let own = format!("http://localhost:{port}");
    let mut upstream = json!({
        "issuer_url": issuer, "client_id": "seed", "client_secret_env_var": "UPSTREAM_SECRET",
        "redirect_uri": format!("{own}/oauth/callback"), "allow_private_ips": state.allow_private_ips,
    });
    if state.trust == Trust::CaFile || state.trust == Trust::OtherCa {
        upstream["ca_file_path"] = json!(trust.0);
    }
    let config = json!({
        "schema_version": "v0.1.0", "name": "seed", "transport": "streamable-http",
        "host": "127.0.0.1", "port": port, "remote_url": "http://127.0.0.1:9/mcp",
        "embedded_auth_server_config": {
            "schema_version": "v0.1.0", "issuer": own, "allowed_audiences": [own],
            "upstreams": [{"name": "idp", "type": "oidc", "oidc_config": upstream}],
        },
    });
    std::fs::write(dir.join("runconfig.json"), config.to_string()).unwrap();
    // The Kubernetes runtime, as the operator runs it, with a kubeconfig that names no real API
    // server (a remote proxy deploys nothing); nothing else from this environment.
    std::fs::write(
        dir.join("kubeconfig"),
        "apiVersion: v1\nkind: Config\nclusters: [{name: none, cluster: {server: \"https://127.0.0.1:9\"}}]\n\
         users: [{name: none, user: {token: none}}]\ncontexts: [{name: none, context: {cluster: none, user: none}}]\n\
         current-context: none\n",
    )
    .unwrap();
    let mut cmd = in_namespace(trust.1, real_bin("thv-proxyrunner").to_str().unwrap());
    cmd.args(["run", "seed"]).current_dir(dir);
    cmd.envs([
        ("TOOLHIVE_USAGE_METRICS_ENABLED", "false"),
        ("TOOLHIVE_RUNTIME", "kubernetes"),
        ("KUBECONFIG", dir.join("kubeconfig").to_str().unwrap()),
        ("UPSTREAM_SECRET", "seed-secret"),
        ("HOME", dir.to_str().unwrap()),
    ]);
    if state.trust == Trust::SslCertFile {
        cmd.env("SSL_CERT_FILE", trust.0);
    }
    let mut runner = Daemon::spawn(cmd, dir.join("runner.log"));
    let deadline = Instant::now() + HANG_BOUND;
    loop {
        if let Some(status) = runner.child.try_wait().unwrap() {
            let log = runner.log_text();
            let error = log
                .lines()
                .rev()
                .find_map(|l| serde_json::from_str::<Value>(l).ok()?["error"].as_str().map(str::to_string));
            let error = error.unwrap_or_else(|| runner.log_tail(3));
            return (false, format!("exits {}: {}", status.code().unwrap_or(-1), short(&error)));
        }
        if http_status(port, "/health") == Some(200) {
            // The answer is the runner's own, not a stranger's on a port it then could not bind.
            assert_listener_in_group(port, runner.child.id(), "the runner's /health");
            let away = non_loopback(runner.child.id());
            assert!(away.is_empty(), "the runner has connections off loopback:\n{}", away.join("\n"));
            return (true, "starts (/health 200)".into());
        }
        assert!(Instant::now() < deadline, "the runner neither served nor exited: {}", runner.log_tail(20));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The runner's TCP connections whose peer is not a loopback address, sampled over a second.
fn non_loopback(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for _ in 0..10 {
        let out = Command::new("ss").args(["-tnpH"]).output().expect("ss (iproute2) runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        found.extend(text.lines().filter(|l| l.contains(&format!("pid={pid},"))).filter_map(|l| {
            let peer = l.split_whitespace().nth(4)?;
            let host = peer.rsplit_once(':')?.0.trim_start_matches('[').trim_end_matches(']');
            let ip: std::net::IpAddr = host.trim_start_matches("::ffff:").parse().ok()?;
            (!ip.is_loopback()).then(|| l.to_string())
        }));
        std::thread::sleep(Duration::from_millis(100));
    }
    found
}

/// The last words of an error that matter (ToolHive wraps every cause in its callers' words),
/// with the ports this run happened to get written `PORT`, so that the table is the same each run.
fn short(error: &str) -> String {
    let tail = error.rsplit(": ").take(2).collect::<Vec<_>>();
    let text = tail.into_iter().rev().collect::<Vec<_>>().join(": ").replace('|', "/");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find(':') {
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits >= 4 {
            out.push_str("PORT");
            rest = &rest[digits..];
        }
    }
    out + rest
}

/// The gate as a ToolHive user configures it.
fn gate_start(state: &State, issuer: &str, trust: (&str, &Path)) -> (bool, String) {
    let mut cmd = in_namespace(trust.1, crate::support::bin());
    cmd.args([
        "--client",
        "toolhive",
        "--issuer",
        issuer,
        "--timeout",
        GATE_TIMEOUT,
        "--fail-closed",
        "--output",
        "json",
    ]);
    match state.trust {
        Trust::CaFile | Trust::OtherCa => {
            cmd.args(["--ca-file", trust.0]);
        }
        Trust::SslCertFile => {
            cmd.env("SSL_CERT_FILE", trust.0);
        }
        Trust::Nothing => {}
    }
    if state.allow_private_ips {
        cmd.arg("--refuse-private-addresses=false");
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let r = run(cmd);
    if r.code == Some(2) {
        let first = r.log().lines().next().unwrap_or_default();
        return (false, format!("exit 2: {}", short(first)));
    }
    let v = r.json();
    let target = &v["issuers"][0];
    match r.code {
        Some(0) => (true, "ready".into()),
        code => {
            let class = target["last_failure"]["class"].as_str().unwrap_or("?");
            let conclusive = if target["last_failure"]["conclusive"] == true { ", conclusive" } else { "" };
            (
                false,
                format!(
                    "exit {}: {} ({class}{conclusive})",
                    code.unwrap_or(-1),
                    target["verdict"].as_str().unwrap_or("?")
                ),
            )
        }
    }
}

struct Row {
    state: String,
    runner: String,
    gate: String,
    mark: String,
    holds: bool,
    agree: bool,
    /// Whether the runner's request and the gate's reached the state's provider (its first
    /// server): a state decided before any request (nothing listening, a handshake refused, the
    /// client's own rule) tests the rule, not the server it drew.
    reached: (bool, bool),
}

/// Which sides' requests the provider read: the gate's by its `User-Agent`, the runner's by any
/// other.
fn reached(provider: Option<&Provider>) -> (bool, bool) {
    let Some(provider) = provider else { return (false, false) };
    let seen = provider.seen.lock().unwrap();
    let gate = |r: &Request| r.header("user-agent").is_some_and(|a| a.starts_with("wait-for-idp/"));
    (seen.iter().any(|r| !gate(r)), seen.iter().any(gate))
}

#[test]
#[ignore = "runs the real thv-proxyrunner (.ci/real-peers) in mount namespaces (root: unshare); about 1-2 minutes"]
fn toolhive_s_runner_and_the_gate_agree_on_every_state() {
    let ok = Command::new("unshare").args(["--mount", "true"]).status().is_ok_and(|s| s.success());
    assert!(ok, "this test needs `unshare --mount` (util-linux, run as root)");
    let ca = TestCa::new();
    let other = TestCa::new();
    let hosts = ca.dir.path().join("hosts");
    std::fs::write(&hosts, format!("127.0.0.1 localhost {NAME}\n::1 localhost\n")).unwrap();
    let rows = in_parallel(&states(), 3, |state| {
        let mut others = Vec::new();
        let (served, issuer) = provider(state, &ca, &mut others);
        let ca_file = if state.trust == Trust::OtherCa { other.ca_arg() } else { ca.ca_arg() };
        let dir = tempfile::tempdir().unwrap();
        let (runner, gate) = std::thread::scope(|inner| {
            let gate = inner.spawn(|| gate_start(state, &issuer, (&ca_file, &hosts)));
            (runner_start(state, &issuer, (&ca_file, &hosts), dir.path()), gate.join().unwrap())
        });
        let (agree, holds, mark) = match (runner.0 == gate.0, state.named) {
            (true, None) => (true, true, "agree".to_string()),
            (false, Some(why)) => (false, true, format!("**differs**: {why}")),
            (false, None) => (false, false, "**DISAGREE**".to_string()),
            (true, Some(why)) => (true, false, format!("**AGREES, expected to differ**: {why}")),
        };
        let reached = reached(served.as_ref());
        Row { state: state.label.into(), runner: runner.1, gate: gate.1, mark, holds, agree, reached }
    });
    report(&rows);
}

/// Prints the table, writes it to target/tmp/parity-toolhive.md, holds every row, and checks the
/// counts docs/parity.md gives.
fn report(rows: &[Row]) {
    let agree = rows.iter().filter(|r| r.agree).count();
    let summary = format!(
        "{agree} of {} states agree (thv-proxyrunner v0.47.0's start vs `wait-for-idp --client toolhive`)",
        rows.len()
    );
    let both = rows.iter().filter(|r| r.reached == (true, true)).count();
    let reach = format!(
        "{both} of {} states reached their provider from both sides; the others were decided before a request \
         (see the table's last column)",
        rows.len()
    );
    let mut md = format!(
        "{summary}\n\n{reach}\n\n| state | thv-proxyrunner | wait-for-idp --client toolhive | | provider reached by |\n\
         |---|---|---|---|---|\n"
    );
    for r in rows {
        let by = match r.reached {
            (true, true) => "both",
            (true, false) => "the runner only",
            (false, true) => "the gate only",
            (false, false) => "neither",
        };
        md.push_str(&format!("| {} | {} | {} | {} | {by} |\n", r.state, r.runner, r.gate, r.mark));
    }
    std::fs::write(Path::new(env!("CARGO_TARGET_TMPDIR")).join("parity-toolhive.md"), &md).unwrap();
    println!("{md}");
    let bad: Vec<&str> = rows.iter().filter(|r| !r.holds).map(|r| r.state.as_str()).collect();
    assert!(bad.is_empty(), "states that do not hold: {bad:#?}\n\n{md}");
    let doc = std::fs::read_to_string(repo_root().join("docs/parity.md")).unwrap();
    let cell = format!("| **{agree} of {}** |", rows.len());
    let line = doc.lines().find(|l| l.starts_with("| **ToolHive's proxy runner"));
    assert!(line.is_some_and(|l| l.ends_with(&cell)), "docs/parity.md's ToolHive row must say {cell}: {line:?}");
    assert!(doc.contains(&summary), "docs/parity.md's ToolHive table must start with: {summary}");
    assert!(doc.contains(&reach), "docs/parity.md's ToolHive table must say: {reach}");
}
