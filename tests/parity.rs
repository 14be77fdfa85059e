//! Parity with the real clients, as a table: for each provider state or misconfiguration, does the
//! real client start, and does `wait-for-idp --once` with the same environment say ready? The two
//! verdicts must agree, except where a row names the deliberate difference (docs/parity.md lists
//! each with its reason); such a row must still differ, so docs/parity.md cannot go stale.
//!
//! The clients: oauth2-proxy (built from its module), against stand-in providers for the states a
//! provider cannot be put into on demand, against real Keycloak in dev and production mode, and
//! against Ory Hydra; a JWKS consumer on lestrrat-go/jwx's `jwk.Cache`; go-oidc's
//! `oidc.NewProvider` as a library oracle for the document rules. Each table is printed and
//! written to `target/tmp/parity-*.md`.

use crate::support::*;
use std::any::Any;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// How long a client may take to start or give up before it counts as hanging. oauth2-proxy's
/// HTTP client has no overall timeout (only Go's 10 s TLS handshake timeout), so a provider that
/// accepts and stays silent holds it forever. A client that starts says so (`/ping`) and one that
/// gives up exits: those are events, and this window only decides "hangs" when neither comes. It
/// is sized for a loaded 2-core machine, where a client slow to start must not pass for a hung one.
const WINDOW: Duration = Duration::from_secs(60);

/// The gate's bound on its one attempt here. No provider in these tables answers late on purpose
/// (a silent one never answers), so the gate's default 5 s only measured the machine's load: a
/// loaded machine once made a ready Hydra "not ready" at 5 s. As long as the clients' window.
const GATE_ATTEMPT: &str = "60s";

/// One row: what both are given, and the difference we stand by, if any.
struct Case {
    name: String,
    /// The client's configuration, given to the gate too (it reads `OAUTH2_PROXY_*`).
    env: Vec<(String, String)>,
    /// What a user adds for the gate alone (`--connect-to`, `--discovery-url`, ...).
    gate_args: Vec<String>,
    differs: Option<&'static str>,
    /// Providers and reserved ports that must live while the row runs.
    keep: Vec<Box<dyn Any + Send + Sync>>,
}

fn case(name: impl Into<String>, env: &[(&str, &str)]) -> Case {
    Case {
        name: name.into(),
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        gate_args: Vec::new(),
        differs: None,
        keep: Vec::new(),
    }
}

impl Case {
    fn keep(mut self, thing: impl Any + Send + Sync) -> Case {
        self.keep.push(Box::new(thing));
        self
    }

    fn gate_args(mut self, args: &[&str]) -> Case {
        self.gate_args = args.iter().map(|s| s.to_string()).collect();
        self
    }

    fn differs(mut self, why: &'static str) -> Case {
        self.differs = Some(why);
        self
    }
}

/// One measured row.
struct Row {
    name: String,
    client: String,
    client_started: bool,
    gate: String,
    gate_ready: bool,
    differs: Option<&'static str>,
}

impl Row {
    fn agree(&self) -> bool {
        self.client_started == self.gate_ready
    }

    fn ok(&self) -> bool {
        self.agree() != self.differs.is_some()
    }
}

/// The gate's verdict with `env` and `--once`: ready, or the class and message of its last
/// failure (from `--output json`). The exit code is the verdict; when the JSON is missing (the
/// gate gives stdout a bounded time at exit, which a loaded machine can exceed) the message comes
/// from the log's last line instead, and the row says so.
fn gate_verdict(env: &[(String, String)], args: &[String]) -> (bool, String) {
    let mut cmd = gate();
    cmd.envs(env.iter().map(|(k, v)| (k, v))).args(["--once", "--output", "json"]);
    cmd.args(["--attempt-timeout", GATE_ATTEMPT]).args(args);
    let r = run_with_limit(cmd, WINDOW * 2);
    match r.code {
        Some(0) => (true, "ready".into()),
        Some(1) => match serde_json::from_str::<serde_json::Value>(r.stdout.trim()) {
            Ok(json) => {
                let failure = &json["issuers"][0]["last_failure"];
                let (class, message) =
                    (failure["class"].as_str().unwrap_or("?"), failure["message"].as_str().unwrap_or("?"));
                (false, format!("not ready ({class}): {}", short(message)))
            }
            Err(_) => {
                let last = r.stderr.lines().last().unwrap_or("");
                (false, format!("not ready (no JSON on stdout): {}", short(last)))
            }
        },
        code => panic!("the gate exited {code:?} for {env:?} {args:?}:\n{}", r.stderr),
    }
}

fn short(line: &str) -> String {
    let line = line.trim();
    let mut s: String = line.chars().take(100).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    s.replace('|', "/")
}

/// Runs every case (in parallel: each has its own providers and ports) against `client`.
fn measure(cases: Vec<Case>, client: &(dyn Fn(&Case) -> (bool, String) + Sync)) -> Vec<Row> {
    std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .map(|c| {
                s.spawn(move || {
                    let gate = s.spawn(|| gate_verdict(&c.env, &c.gate_args));
                    let (client_started, client_said) = client(c);
                    let (gate_ready, gate_said) = gate.join().unwrap();
                    Row {
                        name: c.name.clone(),
                        client: client_said,
                        client_started,
                        gate: gate_said,
                        gate_ready,
                        differs: c.differs,
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Prints the table, writes it to target/tmp/parity-NAME.md, and fails on any row that does not
/// hold.
fn report(name: &str, client: &str, rows: &[Row]) {
    let agree = rows.iter().filter(|r| r.agree()).count();
    let mut md = format!(
        "{agree} of {} scenarios agree ({client} vs `wait-for-idp --once`)\n\n| scenario | {client} | wait-for-idp --once | |\n|---|---|---|---|\n",
        rows.len()
    );
    for r in rows {
        let mark = match (r.agree(), r.differs) {
            (true, _) => "agree".to_string(),
            (false, Some(why)) => format!("**differs**: {why}"),
            (false, None) => "**DISAGREE**".to_string(),
        };
        md.push_str(&format!("| {} | {} | {} | {} |\n", r.name, r.client, r.gate, mark));
    }
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("parity-{name}.md"));
    std::fs::write(&path, &md).unwrap();
    println!("{md}");
    let bad: Vec<&str> = rows.iter().filter(|r| !r.ok()).map(|r| r.name.as_str()).collect();
    assert!(bad.is_empty(), "rows that do not hold: {bad:?}\n\n{md}");
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/parity.md")).unwrap();
    let count = format!("| **{agree} of {}** |", rows.len());
    let name = client.split(' ').next().unwrap();
    let line = readme.lines().find(|l| l.starts_with("| **") && l.contains(name) && l.contains(" of "));
    assert!(
        line.is_some_and(|l| l.ends_with(&count)),
        "docs/parity.md's table of real clients must say {count} for {client}: {line:?}"
    );
}

/// oauth2-proxy's verdict for a case.
fn oauth2_proxy_verdict(dir: &Path) -> impl Fn(&Case) -> (bool, String) + Sync + '_ {
    move |c: &Case| {
        let port = free_port();
        let mut proxy = oauth2_proxy(dir, port, &c.env);
        let started = observe_start(&mut proxy, port, WINDOW);
        let mut said = started.describe();
        if let Some(reason) = proxy.log_text().lines().find_map(|l| l.split_once("ERROR: ").map(|(_, r)| r.to_string()))
        {
            said = format!("{said}: {}", short(reason.rsplit(": ").next().unwrap_or(&reason)));
        }
        (started.started(), said)
    }
}

fn env_for(issuer: &str, ca: Option<&str>) -> Vec<(&'static str, String)> {
    let mut env = vec![("OAUTH2_PROXY_OIDC_ISSUER_URL", issuer.to_string())];
    if let Some(ca) = ca {
        env.push(("OAUTH2_PROXY_PROVIDER_CA_FILES", ca.to_string()));
    }
    env
}

fn case_env(name: &str, env: Vec<(&'static str, String)>) -> Case {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    case(name, &env)
}

/// A stand-in provider for `https://localhost:PORT` with this chain and handler.
fn stand_in(chain: Chain, handler: impl Fn(&str, &Request) -> Reply + Send + Sync + 'static) -> (Provider, String) {
    Provider::for_issuer(tls_mode(chain), "", move |issuer| {
        let issuer = issuer.to_string();
        reply(move |req, _| handler(&issuer, req))
    })
}

/// A provider that serves a valid document for `https://localhost:PORT` with this chain.
fn ready_with(chain: Chain) -> (Provider, String) {
    Provider::for_issuer(tls_mode(chain), "", |issuer| serve_at(WELL_KNOWN, discovery_doc(issuer)))
}

/// A discovery document for `issuer` whose `jwks_uri` is `jwks`.
fn doc_with_jwks(issuer: &str, jwks: Option<&str>) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(&discovery_doc(issuer)).unwrap();
    match jwks {
        Some(j) => doc["jwks_uri"] = j.into(),
        None => {
            doc.as_object_mut().unwrap().remove("jwks_uri");
        }
    }
    doc.to_string()
}

/// The states a provider cannot be put into on demand, on stand-in providers.
fn stand_in_cases(ca: &TestCa) -> Vec<Case> {
    let ca_file = ca.ca_arg();
    let good = |name: &str, chain: Chain, ca_given: Option<&str>| {
        let (p, issuer) = ready_with(chain);
        case_env(name, env_for(&issuer, ca_given)).keep(p)
    };
    let mut cases = vec![
        good("stand-in: ready, private CA given", ca.leaf(&["localhost"]), Some(&ca_file)),
        good("stand-in: private CA not given", ca.leaf(&["localhost"]), None),
        good("expired certificate", ca.leaf_valid(&["localhost"], (2020, 1, 1), (2021, 1, 1)), Some(&ca_file)),
        good("certificate for another name", ca.leaf(&["sso.other.example"]), Some(&ca_file)),
    ];
    // A self-signed CA:TRUE leaf, itself given as the CA file (what `openssl req -x509` makes).
    let (chain, pem) = self_signed_ca_cert(ca.dir.path(), &["localhost"], (2020, 1, 1), (2090, 1, 1));
    cases.push(good("self-signed CA:TRUE leaf given as the CA file", chain, Some(&pem.display().to_string())));

    let slot = Reserved::new();
    cases.push(case_env("connection refused", env_for(&slot.issuer(""), Some(&ca_file))).keep(slot));
    let hang = Provider::start(tls_mode(ca.leaf(&["localhost"])), reply(|_, _| Reply::Hang));
    cases.push(case_env("TLS accepted, then silent", env_for(&hang.issuer(""), Some(&ca_file))).keep(hang));
    let silent = Provider::start(Mode::Silent, reply(|_, _| Reply::Hang));
    cases.push(case_env("TCP accepted, no TLS handshake", env_for(&silent.issuer(""), Some(&ca_file))).keep(silent));
    let p503 = always_503(ca);
    cases.push(case_env("503 from a gateway", env_for(&p503.issuer(""), Some(&ca_file))).keep(p503));
    let (p, issuer) =
        stand_in(ca.leaf(&["localhost"]), |_, _| Reply::text(200, "<html><body>Welcome to nginx!</body></html>"));
    cases.push(case_env("HTML page answering 200", env_for(&issuer, Some(&ca_file))).keep(p));
    let (p, issuer) = stand_in(ca.leaf(&["localhost"]), |issuer, req| match req.path.as_str() {
        "/login" => Reply::text(200, "<html><form>Sign in</form></html>"),
        _ => Reply::redirect(302, &format!("{issuer}/login")),
    });
    cases.push(case_env("redirect to a login page", env_for(&issuer, Some(&ca_file))).keep(p));

    let dead = Reserved::new();
    let dead_jwks = format!("https://localhost:{}/jwks", dead.port);
    let (p, issuer) = stand_in(ca.leaf(&["localhost"]), move |issuer, req| match req.path.as_str() {
        WELL_KNOWN => Reply::json(200, doc_with_jwks(issuer, Some(&dead_jwks))),
        _ => Reply::json(404, "{}"),
    });
    cases.push(case_env("JWKS unreachable", env_for(&issuer, Some(&ca_file))).keep(p).keep(dead));
    let (p, issuer) = stand_in(ca.leaf(&["localhost"]), |issuer, req| match req.path.as_str() {
        WELL_KNOWN => Reply::json(200, doc_with_jwks(issuer, Some(&format!("{issuer}/jwks")))),
        "/jwks" => {
            Reply::json(200, r#"{"keys":[{"kty":"oct","alg":"HS256","k":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"}]}"#)
        }
        _ => Reply::json(404, "{}"),
    });
    cases.push(case_env("JWKS holds an HS256 key only", env_for(&issuer, Some(&ca_file))).keep(p));
    let (p, issuer) = stand_in(ca.leaf(&["localhost"]), |issuer, req| match req.path.as_str() {
        WELL_KNOWN => Reply::json(200, doc_with_jwks(issuer, None)),
        _ => Reply::json(404, "{}"),
    });
    cases.push(
        case_env("document without jwks_uri", env_for(&issuer, Some(&ca_file)))
            .keep(p)
            .differs("oauth2-proxy starts, then fails every login: it cannot verify an ID token without keys"),
    );
    let (p, issuer) = stand_in(ca.leaf(&["localhost"]), |issuer, req| match req.path.as_str() {
        WELL_KNOWN => Reply::json(200, discovery_doc(&format!("{issuer}/"))),
        _ => Reply::json(404, "{}"),
    });
    cases.push(
        case_env("provider publishes a trailing slash, client has none", env_for(&issuer, Some(&ca_file))).keep(p),
    );
    cases
}

/// Where trust comes from: Go's `SSL_CERT_FILE` and `SSL_CERT_DIR`, and oauth2-proxy's own CA
/// options, which replace the system's roots unless `OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE`.
fn trust_cases(ca: &TestCa) -> Vec<Case> {
    let ready = || ready_with(ca.leaf(&["localhost"]));
    let ca_dir = ca.path("certs");
    std::fs::create_dir_all(&ca_dir).unwrap();
    std::fs::copy(&ca.pem_path, ca_dir.join("test-ca.pem")).unwrap();
    let other_ca = TestCa::new();
    let other = other_ca.pem_path.display().to_string();
    let (ca_file, ca_dir) = (ca.ca_arg(), ca_dir.display().to_string());
    let row = |name: &str, env: &[(&'static str, &str)]| {
        let (p, issuer) = ready();
        let mut all = vec![("OAUTH2_PROXY_OIDC_ISSUER_URL", issuer)];
        all.extend(env.iter().map(|(k, v)| (*k, v.to_string())));
        case_env(name, all).keep(p)
    };
    vec![
        row("CA in SSL_CERT_FILE", &[("SSL_CERT_FILE", &ca_file)]),
        row("CA in SSL_CERT_DIR", &[("SSL_CERT_DIR", &ca_dir)]),
        row(
            "CA in SSL_CERT_FILE, another CA in OAUTH2_PROXY_PROVIDER_CA_FILES",
            &[("SSL_CERT_FILE", &ca_file), ("OAUTH2_PROXY_PROVIDER_CA_FILES", &other)],
        )
        .keep(other_ca),
        row(
            "the same, with OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE=true",
            &[
                ("SSL_CERT_FILE", &ca_file),
                ("OAUTH2_PROXY_PROVIDER_CA_FILES", &other),
                ("OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE", "true"),
            ],
        ),
        row(
            "OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY=true, CA not given",
            &[("OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY", "true")],
        )
        .differs("there is no off switch for certificate checks; the gate ends at once, naming --ca-file"),
    ]
}

/// Rows against real Keycloak: dev mode (the issuer follows the Host) and production mode
/// (`hostname` fixes the issuer; HTTP off).
fn keycloak_cases(ca: &TestCa, dev: &Keycloak, prod: &Keycloak) -> Vec<Case> {
    let ca_file = ca.ca_arg();
    let ca_given = Some(ca_file.as_str());
    let dev_issuer = dev.issuer("localhost", "main");
    let prod_issuer = prod.issuer("localhost", "main");
    let service = format!("127.0.0.1:{}", prod.https_port);
    vec![
        case_env("Keycloak dev: realm imported, CA given", env_for(&dev_issuer, ca_given)),
        case_env("Keycloak dev: realm not imported (404)", env_for(&dev.issuer("localhost", "notyet"), ca_given)),
        case_env("Keycloak dev: issuer configured with a trailing slash", env_for(&format!("{dev_issuer}/"), ca_given)),
        case_env("Keycloak dev: private CA not given", env_for(&dev_issuer, None)),
        case_env(
            "Keycloak dev: http:// issuer",
            env_for(&format!("http://localhost:{}/realms/main", dev.http_port), None),
        ),
        case_env("Keycloak production: public hostname", env_for(&prod_issuer, ca_given)),
        case_env(
            "Keycloak production: ingress name, gate through the Service (--discovery-url)",
            env_for(&prod_issuer, ca_given),
        )
        .gate_args(&["--discovery-url", &format!("https://{service}/realms/main/.well-known/openid-configuration")]),
        case_env(
            "Keycloak production: ingress name, gate through the Service (--connect-to)",
            env_for(&prod_issuer, ca_given),
        )
        .gate_args(&["--connect-to", &format!("localhost:{}:{service}", prod.https_port)]),
        case_env(
            "Keycloak production: client uses the Service address (hostname differs)",
            env_for(&format!("https://{service}/realms/main"), ca_given),
        ),
        case_env(
            "Keycloak production: http:// (HTTP is off)",
            env_for(&format!("http://localhost:{}/realms/main", prod.http_port), None),
        ),
    ]
}

/// Rows against Ory Hydra, a certified provider that publishes its issuer exactly as configured.
fn hydra_cases(ca: &TestCa, dir: &Path) -> Vec<Case> {
    let ca_file = ca.ca_arg();
    let mut plain = Hydra::start(ca, "https://localhost:{port}", dir);
    let mut slash = Hydra::start(ca, "https://localhost:{port}/", dir);
    plain.wait_listening();
    slash.wait_listening();
    let (plain_issuer, slash_port) = (format!("https://localhost:{}", plain.port), slash.port);
    vec![
        case_env("Hydra: ready", env_for(&plain_issuer, Some(&ca_file))),
        case_env(
            "Hydra publishes \"…/\", client configured the same",
            env_for(&format!("https://localhost:{slash_port}/"), Some(&ca_file)),
        ),
        case_env(
            "Hydra publishes \"…/\", client configured without",
            env_for(&format!("https://localhost:{slash_port}"), Some(&ca_file)),
        )
        .keep(plain)
        .keep(slash),
    ]
}

#[test]
#[ignore = "runs the real oauth2-proxy and Keycloak (installed by .ci/real-peers); the test command runs it"]
fn oauth2_proxy_and_the_gate_agree() {
    let ca = TestCa::new();
    let dir = tempfile::tempdir().unwrap();
    let mut dev = Keycloak::start(&ca, KeycloakMode::Dev, dir.path());
    let mut prod = Keycloak::start(&ca, KeycloakMode::Production { hostname: None, http: false }, dir.path());
    let client = oauth2_proxy_verdict(dir.path());
    // The stand-ins while Keycloak boots.
    let mut rows = measure(stand_in_cases(&ca), &client);
    rows.extend(measure(trust_cases(&ca), &client));
    dev.wait_started();
    prod.wait_started();
    rows.extend(measure(hydra_cases(&ca, dir.path()), &client));
    rows.extend(measure(keycloak_cases(&ca, &dev, &prod), &client));
    report("oauth2-proxy", "oauth2-proxy v7.15.6", &rows);
}

/// A response made from the issuer: status, Content-Type, body.
type Body = fn(&str) -> (u16, &'static str, String);

/// go-oidc's `oidc.NewProvider` (the discovery call of most Go clients; oauth2-proxy has its own,
/// measured by `fetch_differential.rs`) against documents that probe the document rules, served by
/// a stand-in provider.
#[test]
#[ignore = "runs go-oidc's NewProvider (built by .ci/real-peers); the test command runs it"]
fn go_oidc_and_the_gate_agree_on_documents() {
    let ca = TestCa::new();
    let ca_file = ca.ca_arg();
    let bodies: Vec<(&str, Body, Option<&'static str>)> = vec![
        ("valid document", |i| (200, "application/json", discovery_doc(i)), None),
        ("issuer differs", |_| (200, "application/json", discovery_doc("https://sso.example.com")), None),
        ("issuer missing", |i| (200, "application/json", without(i, "issuer")), None),
        ("issuer is a number", |i| (200, "application/json", with(i, "issuer", serde_json::json!(42))), None),
        (
            "member spelled \"Issuer\"",
            |i| (200, "application/json", discovery_doc(i).replace("\"issuer\"", "\"Issuer\"")),
            Some(
                "Go's encoding/json matches member names case-insensitively; the specification's member is \"issuer\"",
            ),
        ),
        (
            "jwks_uri missing",
            |i| (200, "application/json", without(i, "jwks_uri")),
            Some("go-oidc discovers without keys; oauth2-proxy then cannot verify any ID token"),
        ),
        ("JSON array", |_| (200, "application/json", "[]".into()), None),
        ("served as text/plain", |i| (200, "text/plain", discovery_doc(i)), None),
        ("byte-order mark", |i| (200, "application/json", format!("\u{feff}{}", discovery_doc(i))), None),
        ("trailing garbage", |i| (200, "application/json", format!("{}x", discovery_doc(i))), None),
        (
            "issuer given twice, last one right",
            |i| (200, "application/json", discovery_doc(i).replacen('{', "{\"issuer\":\"https://wrong.example\",", 1)),
            Some("an ambiguous issuer is never ready: Go takes the last member, other parsers may take the first"),
        ),
        ("empty object", |_| (200, "application/json", "{}".into()), None),
        ("201 Created", |i| (201, "application/json", discovery_doc(i)), None),
    ];
    let oracle = real_bin("oidc-discover");
    let mut cases: Vec<Case> = bodies
        .into_iter()
        .map(|(name, body, differs)| {
            let (p, issuer) = stand_in(ca.leaf(&["localhost"]), move |issuer, req| {
                let (status, ctype, text) = body(issuer);
                match req.path.as_str() {
                    WELL_KNOWN => Reply::with_headers(status, &[("Content-Type", ctype)], text),
                    _ => Reply::json(404, "{}"),
                }
            });
            let mut c = case_env(name, env_for(&issuer, Some(&ca_file))).keep(p);
            c.differs = differs;
            c
        })
        .collect();
    cases.extend(fetching_cases(&ca));
    let client = |c: &Case| {
        let issuer = &c.env[0].1;
        let out = Command::new(&oracle).env("ISSUER", issuer).env("CA_FILE", &c.env[1].1).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success(), if out.status.success() { "ok".into() } else { short(&said) })
    };
    report("go-oidc", "go-oidc v3.21.0 NewProvider", &measure(cases, &client));
}

/// How Go's client fetches and reads a document (net/http's transport and `http.Client`,
/// encoding/json), against the gate: compression, redirects, bounds and JSON text.
fn fetching_cases(ca: &TestCa) -> Vec<Case> {
    type Serve = Box<dyn Fn(&str, &Request) -> Reply + Send + Sync>;
    let extended = |extra: &'static str| -> Serve {
        Box::new(move |i, _| {
            let doc = discovery_doc(i);
            Reply::json(200, format!("{},{extra}}}", doc.trim_end().trim_end_matches('}')))
        })
    };
    let hops = |n: usize| -> Serve {
        Box::new(move |i, req| {
            let at: usize = req.path.strip_prefix("/hop").map_or(0, |h| h.parse().unwrap_or(0));
            if at == n { Reply::json(200, discovery_doc(i)) } else { Reply::redirect(302, &format!("/hop{}", at + 1)) }
        })
    };
    // The downgrade: the document for the https issuer, served over plain http.
    let issuer_of_plain = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let known = issuer_of_plain.clone();
    let plain = Provider::start(Mode::Plain, reply(move |_, _| Reply::json(200, discovery_doc(known.get().unwrap()))));
    let plain_url = format!("http://localhost:{}/doc", plain.port());
    let rows: Vec<(&str, Serve, Option<&'static str>)> = vec![
        (
            "gzip-encoded document",
            Box::new(|i, req| match req.header("accept-encoding") {
                Some(e) if e.contains("gzip") => Reply::Response {
                    status: 200,
                    headers: vec![("Content-Encoding".into(), "gzip".into())],
                    body: crate::network_faults::gzip(discovery_doc(i).as_bytes()),
                },
                _ => Reply::json(406, "{}"),
            }),
            None,
        ),
        (
            "deflate-encoded document, not asked for",
            Box::new(|i, _| Reply::Response {
                status: 200,
                headers: vec![("Content-Encoding".into(), "deflate".into())],
                body: miniz_oxide::deflate::compress_to_vec(discovery_doc(i).as_bytes(), 6),
            }),
            None,
        ),
        ("nine redirects", hops(9), None),
        ("ten redirects", hops(10), None),
        (
            "redirect to another origin (localhost to 127.0.0.1)",
            Box::new(|i, req| match req.path.as_str() {
                WELL_KNOWN => Reply::redirect(302, &i.replace("localhost", "127.0.0.1")),
                _ => Reply::json(200, discovery_doc(i)),
            }),
            None,
        ),
        (
            "redirect from https to plain http",
            Box::new(move |_, _| Reply::redirect(302, &plain_url)),
            Some("a downgrade is refused (Go follows it): the document would come over plain http"),
        ),
        ("lone surrogate outside the members read", extended(r#""x-name":"\ud800""#), None),
        (
            "invalid UTF-8 outside the members read",
            Box::new(|i, _| {
                let mut body = discovery_doc(i).trim_end().trim_end_matches('}').as_bytes().to_vec();
                body.extend(b",\"x-name\":\"caf\xe9\"}");
                Reply::Response { status: 200, headers: vec![], body }
            }),
            None,
        ),
        (
            "lone surrogate in the issuer",
            Box::new(|i, _| Reply::json(200, discovery_doc(i).replacen("\"issuer\":\"", "\"issuer\":\"\\udc00", 1))),
            None,
        ),
        ("number out of float range outside the members read", extended(r#""x-n":1e400"#), None),
        (
            "nesting 10,000 levels deep outside the members read",
            Box::new(|i, _| {
                let deep = format!("{}1{}", "[".repeat(9_999), "]".repeat(9_999));
                Reply::json(200, format!("{},\"x-deep\":{deep}}}", discovery_doc(i).trim_end().trim_end_matches('}')))
            }),
            None,
        ),
        (
            "nesting 10,001 levels deep",
            Box::new(|i, _| {
                let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
                Reply::json(200, format!("{},\"x-deep\":{deep}}}", discovery_doc(i).trim_end().trim_end_matches('}')))
            }),
            None,
        ),
        (
            "1.5 MiB of response headers",
            Box::new(|i, _| {
                let pad = "x".repeat(15_000);
                let headers: Vec<(&str, &str)> = vec![("X-Pad", pad.as_str()); 100];
                Reply::with_headers(200, &headers, discovery_doc(i))
            }),
            Some("the gate reads 1 MiB of response headers (Go 10 MiB): no provider sends a thousandth of that"),
        ),
        (
            "130 response header fields",
            Box::new(|i, _| Reply::with_headers(200, &[("X-Pad", "1"); 130], discovery_doc(i))),
            Some("ureq reads at most 128 header fields (Go has no count limit): real providers send about 20"),
        ),
        (
            "document of 17 MiB",
            Box::new(|i, _| {
                Reply::json(
                    200,
                    format!(
                        "{},\"x-pad\":\"{}\"}}",
                        discovery_doc(i).trim_end().trim_end_matches('}'),
                        "x".repeat(17 << 20)
                    ),
                )
            }),
            Some("the gate reads 16 MiB of body (oauth2-proxy reads without a bound): real documents are 1-10 KiB"),
        ),
    ];
    let ca_file = ca.ca_arg();
    let mut cases = Vec::new();
    for (name, serve, differs) in rows {
        let (p, issuer) = stand_in(ca.leaf(&["localhost", "127.0.0.1"]), move |i, req| serve(i, req));
        let mut c = case_env(name, env_for(&issuer, Some(&ca_file))).keep(p);
        c.differs = differs;
        cases.push(c);
    }
    let downgrade = cases.iter_mut().find(|c| c.name.contains("plain http")).unwrap();
    issuer_of_plain.set(downgrade.env[0].1.clone()).unwrap();
    downgrade.keep.push(Box::new(plain));
    cases
}

fn without(issuer: &str, member: &str) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(&discovery_doc(issuer)).unwrap();
    doc.as_object_mut().unwrap().remove(member);
    doc.to_string()
}

fn with(issuer: &str, member: &str, value: serde_json::Value) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(&discovery_doc(issuer)).unwrap();
    doc[member] = value;
    doc.to_string()
}

/// The API server's issuer as kubeadm names it; pods reach the API server by another name.
const API_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const API_TOKEN: &str = "test-only-service-account-token";

/// A stand-in API server: its discovery document and, for the right bearer token only, `jwks`.
fn api_server(chain: Chain, jwks: impl Fn() -> Reply + Send + Sync + 'static) -> Provider {
    let doc = std::fs::read_to_string(fixture("kubernetes-sa.json"))
        .unwrap()
        .replace("https://issuer.example.com", API_ISSUER);
    Provider::start(
        tls_mode(chain),
        reply(move |req, _| match (req.path.as_str(), req.header("authorization")) {
            (_, auth) if auth != Some(&format!("Bearer {API_TOKEN}")) => {
                Reply::json(401, r#"{"kind":"Status","code":401}"#)
            }
            (WELL_KNOWN, _) => Reply::json(200, doc.clone()),
            ("/openid/v1/jwks", _) => jwks(),
            _ => Reply::json(404, "{}"),
        }),
    )
}

/// The gate configured as deploy/kubernetes/token-proxy-jwks.yaml configures it, for an API
/// server on `port`; the consumer reads the same JWKS URL, token and CA.
fn token_proxy_case(name: &str, port: u16, ca_file: &str, token_file: &Path) -> Case {
    case_env(
        name,
        vec![
            ("WAIT_FOR_IDP_ISSUER", API_ISSUER.to_string()),
            ("WAIT_FOR_IDP_DISCOVERY_URL", format!("https://localhost:{port}{WELL_KNOWN}")),
            ("WAIT_FOR_IDP_JWKS_URL", format!("https://localhost:{port}/openid/v1/jwks")),
            ("WAIT_FOR_IDP_CA_FILE", ca_file.to_string()),
            ("WAIT_FOR_IDP_TOKEN_FILE", token_file.display().to_string()),
        ],
    )
}

#[test]
#[ignore = "runs a JWKS consumer on lestrrat-go/jwx (built by .ci/real-peers); the test command runs it"]
fn jwks_consumer_and_the_gate_agree() {
    let ca = TestCa::new();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{API_TOKEN}\n")).unwrap();
    let wrong_token = dir.path().join("wrong-token");
    std::fs::write(&wrong_token, "expired-token\n").unwrap();
    let ca_file = ca.ca_arg();
    let keys = std::fs::read_to_string(fixture("kubernetes-sa.jwks.json")).unwrap();
    let leaf = || ca.leaf(&["localhost"]);
    let served = |name: &str, jwks: fn(&str) -> Reply, differs: Option<&'static str>| {
        let keys = keys.clone();
        let p = api_server(leaf(), move || jwks(&keys));
        let mut c = token_proxy_case(name, p.port(), &ca_file, &token).keep(p);
        c.differs = differs;
        c
    };
    let mut cases = vec![
        served("API server ready (RS256 and ES256 keys)", |k| Reply::json(200, k), None),
        served("JWKS answers 503", |_| Reply::json(503, r#"{"kind":"Status","code":503}"#), None),
        served("JWKS answers an HTML page with 200", |_| Reply::text(200, "<html>Service Unavailable</html>"), None),
        served("JWKS without a \"keys\" member", |_| Reply::json(200, "{}"), None),
        served(
            "JWKS with an empty key list",
            |_| Reply::json(200, r#"{"keys":[]}"#),
            Some(
                "a consumer holding no key rejects every token until its next refresh (15 min in jwx); the gate waits for a key",
            ),
        ),
        served(
            "JWKS holds an HS256 key only",
            |_| {
                Reply::json(200, r#"{"keys":[{"kty":"oct","alg":"HS256","k":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"}]}"#)
            },
            Some(
                "the document's algorithms are ES256 and RS256: no service-account token could be verified with that key",
            ),
        ),
        served(
            "JWKS with a broken key beside good ones",
            |k| Reply::json(200, k.replacen("{\"use\"", "{\"kty\":\"RSA\",\"n\":\"!\",\"e\":\"AQAB\"},{\"use\"", 1)),
            None,
        ),
        served(
            "JWKS with a padded (\"=\") key beside good ones",
            |k| {
                Reply::json(200, k.replacen("{\"use\"", "{\"kty\":\"OKP\",\"crv\":\"X25519\",\"x\":\"IA0SO6bFK5u0O1ij3b0yXbAMEqJkaSZiDu6qxoEOnHY=\"},{\"use\"", 1))
            },
            Some(
                "jwx accepts padding; go-jose (go-oidc) refuses the whole set: the gate follows the stricter Go library",
            ),
        ),
    ];
    let p = api_server(leaf(), || Reply::json(200, "{}"));
    cases.push(token_proxy_case("token rejected (401)", p.port(), &ca_file, &wrong_token).keep(p));
    let other_ca = TestCa::new();
    let p = api_server(other_ca.leaf(&["localhost"]), || Reply::json(200, "{}"));
    cases.push(token_proxy_case("certificate from another CA", p.port(), &ca_file, &token).keep(p));
    let slot = Reserved::new();
    cases.push(token_proxy_case("connection refused", slot.port, &ca_file, &token).keep(slot));
    let hang = Provider::start(tls_mode(leaf()), reply(|_, _| Reply::Hang));
    cases.push(token_proxy_case("TLS accepted, then silent", hang.port(), &ca_file, &token).keep(hang));

    let consumer = real_bin("jwks-consumer");
    let client = |c: &Case| {
        let get = |k: &str| c.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap();
        let port = free_port();
        let mut cmd = Command::new(&consumer);
        cmd.env_clear()
            .env("JWKS_URL", get("WAIT_FOR_IDP_JWKS_URL"))
            .env("TOKEN_FILE", get("WAIT_FOR_IDP_TOKEN_FILE"))
            .env("CA_FILE", get("WAIT_FOR_IDP_CA_FILE"))
            .env("LISTEN", format!("127.0.0.1:{port}"));
        let mut daemon = Daemon::spawn(cmd, dir.path().join(format!("jwks-consumer-{port}.log")));
        let started = observe_start(&mut daemon, port, WINDOW);
        let mut said = started.describe();
        if let Some(reason) = daemon.log_text().lines().find_map(|l| l.strip_prefix("panic: ").map(str::to_string)) {
            said = format!("panics: {}", short(reason.rsplit(": ").next().unwrap_or(&reason)));
        }
        (started.started(), said)
    };
    report("jwks-consumer", "jwx v3.4.0 jwk.Cache consumer", &measure(cases, &client));
}
