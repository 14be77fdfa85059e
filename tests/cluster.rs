//! On a real Kubernetes (tests/support/cluster.rs: one single-node cluster on loopback, shared by
//! the test process): the node runs host-network pods; the cold boot on a real kubelet, the
//! oauth2-proxy chart installed with `helm install` and deploy/helm/oauth2-proxy-values.yaml,
//! Keycloak started after it, with and without the gate; the API server's own issuer
//! (deploy/kubernetes/token-proxy-jwks.yaml) through a restart of the API server, and
//! deploy/kubernetes/serviceaccount-issuer.yaml on it; and the gate's termination message as
//! `kubectl get pod` shows it, failing closed and failing open.
//!
//! The network rule holds in each: host-network pods only, probes off or on 127.0.0.1, nothing
//! dials the node's address or a pod's, which `assert_loopback_only` checks with `ss`.

use crate::support::cluster::{API_SERVER, Cluster, NODE, SA_ISSUER, cluster};
use crate::support::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[test]
#[ignore = "needs root and the cluster built by .ci/real-cluster; the test command runs it"]
fn the_node_runs_host_network_pods_on_imported_images() {
    let k = cluster();
    let ns = k.namespace("smoke");
    let port = free_port();
    k.apply(&format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: smoke, namespace: {ns}}}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: init
    image: {busybox}
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "echo init ran"]
  containers:
  - name: main
    image: {busybox}
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "echo main started; exec httpd -f -p 127.0.0.1:{port} -h /etc"]
    readinessProbe:
      httpGet: {{host: 127.0.0.1, port: {port}, path: /passwd}}
      periodSeconds: 1
"#,
        ns = ns.name,
        busybox = k.image("busybox"),
    ));
    wait_pod_ready(&k, &ns.name, "smoke");
    let logs = k.kubectl_ok(&["-n", &ns.name, "logs", "smoke", "-c", "main"], None);
    assert!(logs.contains("main started"), "{logs}");
    let pod = k.get_json(&["-n", &ns.name, "pod", "smoke"]);
    assert_eq!(pod["spec"]["nodeName"], NODE);
    assert_eq!(http_status(port, "/passwd"), Some(200));
    k.assert_loopback_only();
}

/// The gate's last word is the pod's: `kubectl get pod` shows it as the init container's
/// termination message, for a gate that fails closed (exit 1, the pod stays in Init) and for one
/// that fails open (exit 0, the workload starts "as without the gate").
#[test]
#[ignore = "needs root and the cluster built by .ci/real-cluster; the test command runs it"]
fn the_termination_message_shows_the_gates_last_word() {
    let k = cluster();
    let gate = k.gate_image();
    let ns = k.namespace("message");
    // Nothing listens there: every attempt is refused, and the deadline ends the wait.
    let issuer = format!("https://127.0.0.1:{}/realms/main", free_port());
    for (name, fail_closed) in [("closed", true), ("open", false)] {
        k.apply(&format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {ns}}}
spec:
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: wait-for-idp
    image: {gate}
    imagePullPolicy: Never
    env:
    - {{name: WAIT_FOR_IDP_ISSUER, value: "{issuer}"}}
    - {{name: WAIT_FOR_IDP_TIMEOUT, value: 2s}}
    - {{name: WAIT_FOR_IDP_FAIL_CLOSED, value: "{fail_closed}"}}
    terminationMessagePolicy: FallbackToLogsOnError
    securityContext: {{runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false}}
  containers:
  - name: app
    image: {busybox}
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "echo app started"]
"#,
            ns = ns.name,
            busybox = k.image("busybox"),
        ));
    }
    let message_of = |pod: &str| {
        let path = "jsonpath={.status.initContainerStatuses[0].state.terminated.message}";
        k.kubectl_ok(&["-n", &ns.name, "get", "pod", pod, "-o", path], None)
    };
    let phase_of =
        |pod: &str| k.kubectl_ok(&["-n", &ns.name, "get", "pod", pod, "-o", "jsonpath={.status.phase}"], None);

    k.wait_for("the fail-closed pod to fail", || phase_of("closed") == "Failed");
    let closed = message_of("closed");
    assert!(closed.starts_with("not ready: "), "{closed}");
    assert!(closed.contains(&issuer) && closed.contains("failing closed (exit 1)"), "{closed}");

    k.wait_for("the fail-open pod's workload to run", || phase_of("open") == "Succeeded");
    let open = message_of("open");
    assert!(open.starts_with("failing open: not ready: "), "{open}");
    assert!(open.contains("starting the workload anyway, as without the gate (exit 0)"), "{open}");
    let app = k.kubectl_ok(&["-n", &ns.name, "logs", "open", "-c", "app"], None);
    assert_eq!(app.trim(), "app started");
    k.assert_loopback_only();
}

/// Waits until the pod's Ready condition is True.
pub fn wait_pod_ready(k: &Cluster, ns: &str, pod: &str) {
    let path = "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}";
    k.wait_for(&format!("pod {ns}/{pod} Ready"), || {
        let out = k.kubectl_run(&["-n", ns, "get", "pod", pod, "-o", path], None);
        String::from_utf8_lossy(&out.stdout) == "True"
    });
}

/// Seconds since the epoch of an RFC 3339 time as the API writes it (`2026-12-01T19:30:12Z`).
pub fn api_time(text: &str) -> f64 {
    let num = |range: std::ops::Range<usize>| text.get(range).and_then(|s| s.parse::<i64>().ok()).expect(text);
    let (y, m, d) = (num(0..4), num(5..7), num(8..10));
    let (hh, mm, ss) = (num(11..13), num(14..16), num(17..19));
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    (days * 86_400 + hh * 3600 + mm * 60 + ss) as f64
}

/// Now, in seconds since the epoch (the clock the API's times are on).
pub fn wall_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// Whether `url` answers 200 over TLS trusting `ca` (with a bearer `token`, if any), as a client
/// with the CA sees it: curl, with a short connect timeout.
pub fn serves(url: &str, ca: &Path, token: Option<&str>) -> bool {
    let mut cmd = Command::new("curl");
    cmd.args(["-sf", "-o", "/dev/null", "--connect-timeout", "1", "--max-time", "3", "--cacert"]).arg(ca).arg(url);
    if let Some(token) = token {
        cmd.arg("-H").arg(format!("Authorization: Bearer {token}"));
    }
    cmd.status().map(|s| s.success()).unwrap_or(false)
}

#[test]
fn api_times_read_as_epoch_seconds() {
    assert_eq!(api_time("1970-01-01T00:00:00Z"), 0.0);
    assert_eq!(api_time("2026-12-01T19:30:12Z"), 1_796_153_412.0);
    assert_eq!(api_time("2000-02-29T00:00:01Z"), 951_782_401.0);
}

/// One release of the oauth2-proxy chart (the stand-in, tests/deploy/chart) in a namespace of its
/// own, with or without the gate, listening on 127.0.0.1:`port`.
struct Release<'a> {
    ns: crate::support::cluster::Namespace<'a>,
    gated: bool,
    port: u16,
    /// When the proxy first answered /ping (wall clock, and the monotonic one).
    serving: Option<(f64, Instant)>,
}

/// deploy/helm/oauth2-proxy-values.yaml as a user fills it in for this cluster: the issuer (a
/// local provider) as its one value and the gate's image (imported, so `imagePullPolicy: Never`).
/// The provider's private CA is one more value, given at install (`--set providerCa.configMap=…`,
/// [`PRIVATE_CA`]): nothing in the file is edited for it. Each replacement is checked, so the file
/// cannot drift away from what the test installs.
fn filled_values(issuer: &str, gate: &str) -> String {
    let shipped = std::fs::read_to_string(repo_root().join("deploy/helm/oauth2-proxy-values.yaml")).unwrap();
    let mut values = shipped.clone();
    for (from, to) in [
        ("oidcIssuerUrl: https://sso.example.com/realms/main\n", format!("oidcIssuerUrl: {issuer}\n")),
        (GATE_PLACEHOLDER, gate.to_string()),
        ("    imagePullPolicy: IfNotPresent\n", "    imagePullPolicy: Never\n".to_string()),
    ] {
        assert_eq!(values.matches(from).count(), 1, "deploy/helm/oauth2-proxy-values.yaml no longer has {from:?}");
        values = values.replace(from, &to);
    }
    values
}

/// The one value that gives the proxy and the gate a private CA: the ConfigMap that holds it
/// under `ca.crt`, made by [`private_ca_configmap`].
const PRIVATE_CA: &str = "providerCa.configMap=provider-ca";

/// The ConfigMap `provider-ca` in `ns`, holding `ca`'s certificate as `ca.crt`, as the values
/// file's comment shows it made.
fn private_ca_configmap(k: &Cluster, ns: &str, ca: &TestCa) {
    let file = format!("--from-file=ca.crt={}", ca.pem_path.display());
    k.kubectl_ok(&["-n", ns, "create", "configmap", "provider-ca", &file], None);
}

/// `helm install proxy` of the stand-in chart in `ns` with the filled-in values file, this node's
/// values and the private CA's one value.
fn install_proxy(k: &Cluster, ns: &str, dir: &Path, issuer: &str, gate: &str, port: u16, gated: bool) {
    let shipped = dir.join(format!("values-{port}.yaml"));
    std::fs::write(&shipped, filled_values(issuer, gate)).unwrap();
    let node = dir.join(format!("node-{port}.yaml"));
    std::fs::write(&node, node_values(k, port, gated)).unwrap();
    let out = k
        .helm()
        .args(["install", "proxy", "-n", ns])
        .arg(repo_root().join("tests/deploy/chart"))
        .arg("-f")
        .arg(&shipped)
        .arg("-f")
        .arg(&node)
        .args(["--set", PRIVATE_CA])
        .output()
        .unwrap();
    assert!(out.status.success(), "helm install failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// The Secret the values file names (`config.existingSecret`), in `ns`.
fn proxy_secret(k: &Cluster, ns: &str) {
    k.kubectl_ok(
        &[
            "-n",
            ns,
            "create",
            "secret",
            "generic",
            "oauth2-proxy",
            "--from-literal=client-id=oauth2-proxy",
            "--from-literal=client-secret=test-only-client-secret",
            "--from-literal=cookie-secret=0123456789abcdef0123456789abcdef",
        ],
        None,
    );
}

/// The chart's own settings for this node: the imported oauth2-proxy image, host networking on
/// 127.0.0.1:`port` (declared as the pod's port, which on host networking is a host port: two
/// releases on one node cannot both declare 4180), the chart's HTTP probes off (they would dial the pod's address, which is the
/// node's), and (without the gate) no init container.
fn node_values(k: &Cluster, port: u16, gated: bool) -> String {
    let mut values = format!(
        r#"image: {{repository: localhost/wait-for-idp/oauth2-proxy, tag: "1", pullPolicy: Never}}
hostNetwork: true
containerPort: {port}
livenessProbe: {{enabled: false}}
readinessProbe: {{enabled: false}}
extraArgs:
  provider: oidc
  http-address: 127.0.0.1:{port}
  email-domain: "*"
  upstream: static://200
"#
    );
    if !gated {
        values += "extraInitContainers: []\n";
    }
    assert_eq!(k.image("oauth2-proxy"), "localhost/wait-for-idp/oauth2-proxy:1");
    values
}

impl Release<'_> {
    /// The release's pod, as the API has it.
    fn pod(&self, k: &Cluster) -> Value {
        let pods = k.get_json(&["-n", &self.ns.name, "pods", "-l", "app=proxy"]);
        let items = pods["items"].as_array().cloned().unwrap_or_default();
        assert_eq!(items.len(), 1, "one pod: {pods}");
        items[0].clone()
    }
}

/// What one cold boot measured, from the API and from the test's own probes.
#[derive(Debug)]
struct ColdBoot {
    gated: bool,
    /// The proxy container's restarts (the pod's status).
    restarts: u64,
    /// The "Back-off restarting failed container" events for the proxy (with their repeats).
    back_offs: u64,
    /// From Keycloak serving (its realm's discovery document, 200) to the proxy serving (/ping, 200).
    delay: f64,
    /// The same from the API: the running proxy container's `startedAt` (whole seconds) minus
    /// when Keycloak served.
    api_delay: f64,
}

/// The cold boot on a real kubelet (issue 27, 2.1): the oauth2-proxy chart installed with
/// `helm install` and deploy/helm/oauth2-proxy-values.yaml, once with the gate and once without
/// (`extraInitContainers: []`), both before Keycloak starts; then Keycloak 26.7.3 starts cold on
/// the host, as the other real tests run it. Restarts and start times are read from the API.
///
/// Without the gate the proxy exits on its failed discovery and the kubelet restarts it with its
/// back-off (shortened in the suite to SUITE_MAX_RESTART_PERIOD; bench/cluster-coldboot runs the
/// default and repeats); with it, the pod waits in Init and the proxy starts once, just after
/// Keycloak serves. WAIT_FOR_IDP_COLDBOOT_RUNS repeats the whole (bench/ sets it).
#[test]
#[ignore = "needs root, Keycloak and oauth2-proxy (.ci/real-peers) and the cluster (.ci/real-cluster); the test command runs it"]
fn cold_boot_on_a_real_kubelet_with_and_without_the_gate() {
    let runs: usize = std::env::var("WAIT_FOR_IDP_COLDBOOT_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(1);
    let k = cluster();
    let gate = k.gate_image();
    let mut measured = Vec::new();
    for run in 1..=runs {
        let (with, without) = cold_boot_once(&k, &gate);
        eprintln!("cold boot run {run}/{runs}: {with:?}\n{without:?}");
        measured.push((with, without));
    }
    let report = cold_boot_report(&k, &measured);
    eprintln!("{report}");
    std::fs::write(Path::new(env!("CARGO_TARGET_TMPDIR")).join("cluster-coldboot.md"), &report).unwrap();
}

/// Issue 36 ask 1: a private CA is one value. deploy/helm/oauth2-proxy-values.yaml installed with
/// its issuer and `--set providerCa.configMap=provider-ca`, nothing else about the CA, against a
/// provider whose certificate only that CA signs: the gate trusts it (ready, in its termination
/// message) and so does oauth2-proxy, which does its discovery through the same CA, starts once
/// and serves.
#[test]
#[ignore = "needs root, oauth2-proxy's image and the cluster (.ci/real-cluster); the test command runs it"]
fn a_private_ca_given_once_reaches_the_proxy_and_the_gate() {
    let k = cluster();
    let gate = k.gate_image();
    let ns = k.namespace("private-ca");
    let ca = TestCa::new();
    proxy_secret(&k, &ns.name);
    private_ca_configmap(&k, &ns.name, &ca);
    let (provider, issuer) = ready_provider(&ca, "localhost", "/realms/main");
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    install_proxy(&k, &ns.name, dir.path(), &issuer, &gate, port, true);
    k.wait_for("the proxy to serve", || http_status(port, "/ping") == Some(200));
    let release = Release { ns, gated: true, port, serving: None };
    let pod = release.pod(&k);
    let init = &pod["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["exitCode"], 0, "{init}");
    let message = init["state"]["terminated"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with(&format!("ready: {issuer} after")), "the gate trusted the CA: {message}");
    assert_eq!(pod["status"]["containerStatuses"][0]["restartCount"], 0, "the proxy trusted it: {pod}");
    let discovery = format!("/realms/main{WELL_KNOWN}");
    assert!(provider.paths().iter().filter(|p| **p == discovery).count() >= 2, "the gate's and the proxy's");
    k.assert_loopback_only();
}

fn cold_boot_once(k: &Cluster, gate: &str) -> (ColdBoot, ColdBoot) {
    let ca = TestCa::new();
    let dir = tempfile::tempdir().unwrap();
    let keycloak_port = free_port();
    let mut releases = Vec::new();
    for gated in [true, false] {
        let ns = k.namespace(if gated { "coldboot-gate" } else { "coldboot-nogate" });
        let port = free_port();
        proxy_secret(k, &ns.name);
        private_ca_configmap(k, &ns.name, &ca);
        releases.push(Release { ns, gated, port, serving: None });
    }
    // Keycloak's issuer is fixed before it starts: its port is chosen here.
    let issuer = format!("https://127.0.0.1:{keycloak_port}/realms/main");
    for r in &releases {
        install_proxy(k, &r.ns.name, dir.path(), &issuer, gate, r.port, r.gated);
    }
    // Keycloak starts after the chart, cold, on the port the issuer names.
    let mut keycloak = start_keycloak_on(&ca, keycloak_port, dir.path());
    let discovery = format!("{issuer}/.well-known/openid-configuration");
    let mut keycloak_serving: Option<(f64, Instant)> = None;
    let deadline = Instant::now() + HANG_BOUND + Duration::from_secs(600);
    while releases.iter().any(|r| r.serving.is_none()) {
        if keycloak_serving.is_none() && serves(&discovery, &ca.pem_path, None) {
            keycloak_serving = Some((wall_now(), Instant::now()));
        }
        for r in releases.iter_mut().filter(|r| r.serving.is_none()) {
            if http_status(r.port, "/ping") == Some(200) {
                r.serving = Some((wall_now(), Instant::now()));
            }
        }
        if let Some(status) = keycloak.daemon.child.try_wait().unwrap() {
            panic!("Keycloak exited ({status}):\n{}", keycloak.daemon.log_tail(40));
        }
        assert!(Instant::now() < deadline, "{}", k.failure("no proxy served"));
        std::thread::sleep(Duration::from_millis(50));
    }
    let (kc_wall, kc_at) = keycloak_serving.expect("a proxy served before Keycloak did: it never checked its issuer");
    k.assert_loopback_only();
    let mut out = releases.iter().map(|r| {
        let pod = r.pod(k);
        let container = &pod["status"]["containerStatuses"][0];
        let started = container["state"]["running"]["startedAt"].as_str().expect("the proxy runs");
        let name = pod["metadata"]["name"].as_str().unwrap();
        let events =
            k.get_json(&["-n", &r.ns.name, "events", "--field-selector", &format!("involvedObject.name={name}")]);
        // Repeated events are one object with a count (the recorder aggregates them).
        let back_offs = events["items"]
            .as_array()
            .map(|items| {
                let back_off = items.iter().filter(|e| e["reason"] == "BackOff");
                back_off.map(|e| e["count"].as_u64().unwrap_or(1)).sum::<u64>()
            })
            .unwrap_or(0);
        let (_, at) = r.serving.unwrap();
        ColdBoot {
            gated: r.gated,
            restarts: container["restartCount"].as_u64().unwrap(),
            back_offs,
            delay: at.duration_since(kc_at).as_secs_f64(),
            api_delay: api_time(started) - kc_wall.floor(),
        }
    });
    let (with, without) = (out.next().unwrap(), out.next().unwrap());
    drop(keycloak);
    // With the gate: one start, no restart, no back-off, and the gate itself never failed.
    assert!(with.gated && !without.gated);
    assert_eq!((with.restarts, with.back_offs), (0, 0), "with the gate: {with:?}");
    let init = &releases[0].pod(k)["status"]["initContainerStatuses"][0];
    assert_eq!(init["restartCount"], 0, "{init}");
    assert_eq!(init["state"]["terminated"]["exitCode"], 0, "{init}");
    let message = init["state"]["terminated"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("ready: "), "the gate's last word: {message}");
    // Without it: the proxy crashed on its discovery and was restarted with back-off.
    assert!(without.restarts >= 1, "without the gate the proxy crash-loops until Keycloak serves: {without:?}");
    (with, without)
}

/// Keycloak 26.7.3 in dev mode, cold, serving HTTPS on `port` with a leaf of `ca`.
pub fn start_keycloak_on(ca: &TestCa, port: u16, dir: &Path) -> Keycloak {
    let keycloak = Keycloak::start_on(ca, KeycloakMode::Dev, dir, port);
    assert_eq!(keycloak.https_port, port);
    keycloak
}

/// The Markdown table of the cold boots: median and worst per mode.
fn cold_boot_report(k: &Cluster, runs: &[(ColdBoot, ColdBoot)]) -> String {
    let backoff = k
        .max_restart_period()
        .map_or("the kubelet's default back-off".to_string(), |p| format!("the kubelet's back-off capped at {p}"));
    let mut text = format!(
        "Real kubelet ({backoff}), {} run(s):\n\n| | restarts, median / max | back-off events, median / max | Keycloak serving → proxy serving, median / max | the same from the API (1 s steps), median / max |\n|---|---|---|---|---|\n",
        runs.len()
    );
    for gated in [false, true] {
        let pick: Vec<&ColdBoot> = runs.iter().map(|(w, wo)| if gated { w } else { wo }).collect();
        let stat = |f: &dyn Fn(&ColdBoot) -> f64| {
            let mut v: Vec<f64> = pick.iter().map(|c| f(c)).collect();
            v.sort_by(f64::total_cmp);
            (v[v.len() / 2], v[v.len() - 1])
        };
        let r = stat(&|c| c.restarts as f64);
        let b = stat(&|c| c.back_offs as f64);
        let d = stat(&|c| c.delay);
        let a = stat(&|c| c.api_delay);
        text += &format!(
            "| {} | {} / {} | {} / {} | {:.2} s / {:.2} s | {:.0} s / {:.0} s |\n",
            if gated { "with the gate" } else { "without the gate" },
            r.0,
            r.1,
            b.0,
            b.1,
            d.0,
            d.1,
            a.0,
            a.1
        );
    }
    text
}

/// deploy/kubernetes/token-proxy-jwks.yaml as this cluster runs it, in namespace `ns`: the images
/// imported (`imagePullPolicy: Never`), host networking, the consumer's own settings (the
/// jwks-consumer stands for the token proxy: token and CA files, a /ping port), and, since this
/// cluster has no DNS and no Service routing, every URL that names `kubernetes.default.svc`
/// pointed at the API server's loopback address. Nothing else: the recipe names no issuer and no
/// namespace (checked), which is what makes it portable. Without the gate, the init container is
/// cut out and nothing else changes.
fn token_proxy_manifest(k: &Cluster, port: u16, gated: bool) -> String {
    let shipped = std::fs::read_to_string(repo_root().join("deploy/kubernetes/token-proxy-jwks.yaml")).unwrap();
    let mut m = shipped.clone();
    let code = |m: &str| m.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n");
    for literal in ["cluster.local", "namespace:", "127.0.0.1", "ClusterRoleBinding"] {
        assert!(!code(&m).contains(literal), "token-proxy-jwks.yaml names {literal:?}: not portable");
    }
    for (from, to) in [
        (
            format!("          image: {GATE_PLACEHOLDER}\n"),
            format!("          image: {}\n          imagePullPolicy: Never\n", k.gate_image()),
        ),
        (
            "          image: YOUR_REGISTRY/token-proxy:1.0.0\n".to_string(),
            format!("          image: {}\n          imagePullPolicy: Never\n", k.image("jwks-consumer")),
        ),
        (
            "      serviceAccountName: token-proxy\n".to_string(),
            "      serviceAccountName: token-proxy\n      hostNetwork: true\n".to_string(),
        ),
        (
            "            - name: JWKS_URL\n              value: https://kubernetes.default.svc/openid/v1/jwks\n"
                .to_string(),
            format!(
                "            - name: JWKS_URL\n              value: {API_SERVER}/openid/v1/jwks\n            - name: TOKEN_FILE\n              value: /var/run/secrets/token-proxy/token\n            - name: CA_FILE\n              value: /var/run/secrets/token-proxy/ca.crt\n            - name: LISTEN\n              value: 127.0.0.1:{port}\n"
            ),
        ),
    ] {
        assert_eq!(m.matches(&from).count(), 1, "deploy/kubernetes/token-proxy-jwks.yaml no longer has {from:?}");
        m = m.replace(&from, &to);
    }
    m = m.replace("https://kubernetes.default.svc/", &format!("{API_SERVER}/"));
    assert!(code(&m).lines().all(|l| !l.contains("kubernetes.default.svc")), "{m}");
    if !gated {
        let (start, end) = (m.find("      initContainers:\n").unwrap(), m.find("      containers:\n").unwrap());
        m.replace_range(start..end, "");
    }
    m
}

/// The one command `recipe`'s header gives (a file in deploy/kubernetes), run as written in
/// namespace `ns` (with this cluster's kubeconfig): the ConfigMap api-server-issuer, from the API
/// server's own answer.
fn make_issuer_configmap(k: &Cluster, ns: &str, recipe: &str) {
    let shipped = std::fs::read_to_string(repo_root().join("deploy/kubernetes").join(recipe)).unwrap();
    let line =
        shipped.lines().map(|l| l.trim_start_matches('#').trim()).find(|l| l.contains("configmap api-server-issuer"));
    let line = line.unwrap_or_else(|| panic!("{recipe}'s header gives the command that makes its ConfigMap"));
    assert!(line.starts_with("kubectl -n NAMESPACE create configmap api-server-issuer "), "{line}");
    let kubectl = k.kubectl();
    let script = format!(
        "set -euo pipefail\nkubectl() {{ {} --kubeconfig={} \"$@\"; }}\n{}\n",
        kubectl.get_program().to_string_lossy(),
        k.kubeconfig().display(),
        line.replace("NAMESPACE", ns)
    );
    let out = Command::new("bash").arg("-c").arg(&script).output().unwrap();
    assert!(out.status.success(), "{script}\n{}", String::from_utf8_lossy(&out.stderr));
}

/// The dashboard token proxy's case on the API server's own issuer (issue 27, 2.2): a JWKS
/// consumer (lestrrat-go/jwx's jwk.Cache, panicking on a failed first fetch) deployed as
/// deploy/kubernetes/token-proxy-jwks.yaml deploys it, once with the gate and once without. The
/// API server stops; the node restarts both pods (their sandboxes are killed, as a node reboot
/// would), so they start while the API server is away; then it comes back.
///
/// Asserted, from the API: with the gate the consumer starts once, when the JWKS serves (one
/// restart: the node's own); without it the consumer crash-loops. Reported: the delay from "the
/// JWKS serves" to "the consumer started", which includes the kubelet's sync.
#[test]
#[ignore = "needs root, the JWKS consumer (.ci/real-peers) and the cluster (.ci/real-cluster); the test command runs it"]
fn the_api_servers_own_issuer_through_a_restart() {
    let k = cluster();
    // This API server's issuer is neither kubeadm's nor its own URL, as on a managed cluster.
    let published: Value =
        serde_json::from_str(&k.kubectl_ok(&["get", "--raw", "/.well-known/openid-configuration"], None))
            .expect("the API server's discovery document");
    assert_eq!(published["issuer"], SA_ISSUER, "{published}");
    let mut deployed = Vec::new();
    for gated in [true, false] {
        let ns = k.namespace(if gated { "jwks-gate" } else { "jwks-nogate" });
        let port = free_port();
        make_issuer_configmap(&k, &ns.name, "token-proxy-jwks.yaml");
        k.kubectl_ok(&["-n", &ns.name, "apply", "-f", "-"], Some(&token_proxy_manifest(&k, port, gated)));
        deployed.push((ns, port, gated));
    }
    for (ns, port, _) in &deployed {
        k.wait_for(&format!("the consumer in {} serving", ns.name), || http_status(*port, "/ping") == Some(200));
    }
    let consumer = |ns: &str| -> Value {
        let pods = k.get_json(&["-n", ns, "pods", "-l", "app.kubernetes.io/name=token-proxy"]);
        let items = pods["items"].as_array().cloned().unwrap_or_default();
        assert_eq!(items.len(), 1, "one pod: {pods}");
        items[0].clone()
    };
    let restarts =
        |pod: &Value| pod["status"]["containerStatuses"][0]["restartCount"].as_u64().expect("a container status");
    let before: Vec<u64> = deployed.iter().map(|(ns, _, _)| restarts(&consumer(&ns.name))).collect();
    let token = k.kubectl_ok(&["-n", &deployed[0].0.name, "create", "token", "token-proxy"], None).trim().to_string();

    k.stop("apiserver");
    for (ns, _, _) in &deployed {
        assert_eq!(k.kill_pod_sandboxes(&ns.name), 1, "one pod sandbox in {}", ns.name);
    }
    // While the API server is away: the consumer without the gate starts, fails its first fetch
    // and is restarted (the node's log directory shows the attempts), and the gate waits.
    let (nogate, gate) = (&deployed[1].0.name, &deployed[0].0.name);
    k.wait_for("the consumer without the gate to crash while the API server is down", || {
        k.container_attempts_on_node(nogate, "token-proxy").is_some_and(|n| n >= before[1] + 2)
    });
    k.wait_for("the gate to wait while the API server is down", || {
        k.container_attempts_on_node(gate, "wait-for-idp").is_some_and(|n| n >= 1)
    });
    assert_ne!(http_status(deployed[0].1, "/ping"), Some(200), "the gated consumer started without its JWKS");

    k.start("apiserver");
    let jwks = format!("{API_SERVER}/openid/v1/jwks");
    let mut jwks_serving = None;
    let mut started = [None, None];
    k.wait_for("both consumers serving after the API server's return", || {
        if jwks_serving.is_none() && serves(&jwks, &k.ca_file(), Some(&token)) {
            jwks_serving = Some(Instant::now());
        }
        for (i, (_, port, _)) in deployed.iter().enumerate() {
            if started[i].is_none() && http_status(*port, "/ping") == Some(200) {
                started[i] = Some(Instant::now());
            }
        }
        started.iter().all(Option::is_some)
    });
    let jwks_serving = jwks_serving.expect("the consumers served before the JWKS did");
    k.wait_api_ready();
    // The kubelet reports what happened while the API server was away once it is back: wait until
    // the API's restart counts are the node's (its log files' attempt numbers).
    for (ns, _, _) in &deployed {
        k.wait_for(&format!("{}'s status to catch up with the node", ns.name), || {
            let pod = consumer(&ns.name);
            let status = &pod["status"]["containerStatuses"][0];
            status["ready"] == true
                && status["restartCount"].as_u64() == k.container_attempts_on_node(&ns.name, "token-proxy")
        });
    }
    let after: Vec<u64> = deployed.iter().map(|(ns, _, _)| restarts(&consumer(&ns.name))).collect();
    let delay = started[0].unwrap().duration_since(jwks_serving).as_secs_f64();
    let back_offs: Vec<u64> = deployed
        .iter()
        .map(|(ns, _, _)| {
            let pod = consumer(&ns.name);
            crate::cluster_toolhive::back_off_events(&k, &ns.name, pod["metadata"]["name"].as_str().unwrap())
        })
        .collect();
    let without_delay = started[1].unwrap().saturating_duration_since(jwks_serving).as_secs_f64();
    eprintln!(
        "API server's issuer: with the gate {} restart(s), the consumer serving {delay:.2} s after the JWKS; without it {} restart(s), serving {without_delay:.2} s after",
        after[0] - before[0],
        after[1] - before[1],
    );
    let backoff = k
        .max_restart_period()
        .map_or("the kubelet's default back-off".to_string(), |p| format!("maxContainerRestartPeriod {p}"));
    let report = format!(
        "The API server's JWKS consumer through the API server's restart, real kubelet ({backoff}), 1 run:\n\n\
         | | restarts (the node's own included) | back-off events | JWKS serving → consumer serving |\n|---|---|---|---|\n\
         | without the gate | {} | {} | {without_delay:.2} s |\n| with the gate | {} | {} | {delay:.2} s |\n",
        after[1] - before[1],
        back_offs[1],
        after[0] - before[0],
        back_offs[0],
    );
    std::fs::write(Path::new(env!("CARGO_TARGET_TMPDIR")).join("cluster-coldboot-jwks.md"), &report).unwrap();
    // With the gate: the node's own restart of the pod, and no other.
    assert_eq!(after[0] - before[0], 1, "with the gate the consumer must start once: {}", consumer(gate));
    let gated = consumer(gate);
    // Ready, not failing open (which also exits 0 and starts the consumer).
    let gate_ended = &gated["status"]["initContainerStatuses"][0]["state"]["terminated"];
    assert_eq!(gate_ended["exitCode"], 0, "{gated}");
    let message = gate_ended["message"].as_str().unwrap_or_default();
    assert!(message.starts_with(&format!("ready: {SA_ISSUER} after")), "the API server's own issuer: {gated}");
    // Judged as the token verifier it guards (--client go-oidc): no warning about the login
    // endpoint no API server serves (issue 36 ask 4).
    let log = k.kubectl_ok(&["-n", gate, "logs", "deploy/token-proxy", "-c", "wait-for-idp"], None);
    assert!(log.contains("ready") && !log.contains("usual member"), "{log}");
    // Without it: the node's restart and at least one crash on the missing JWKS.
    assert!(after[1] - before[1] >= 2, "without the gate the consumer crash-loops: {}", consumer(nogate));
    k.assert_loopback_only();
}

/// deploy/kubernetes/serviceaccount-issuer.yaml on the suite's API server, whose issuer is neither
/// kubeadm's nor its own URL, in a test namespace (issue 36 ask 4): its header's command makes the
/// ConfigMap, nothing names a namespace or an issuer, and the gate, judging as a token verifier
/// (`--client go-oidc`), is ready on the API server's issuer with no warning about the
/// authorization_endpoint no API server serves. The workload (a placeholder) is a shell that sleeps.
#[test]
#[ignore = "needs root and the cluster built by .ci/real-cluster; the test command runs it"]
fn the_service_account_issuer_recipe_is_ready_on_the_api_servers_issuer() {
    let k = cluster();
    let shipped = std::fs::read_to_string(repo_root().join("deploy/kubernetes/serviceaccount-issuer.yaml")).unwrap();
    let code = shipped.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n");
    for literal in ["cluster.local", "namespace:", "127.0.0.1", "ClusterRoleBinding"] {
        assert!(!code.contains(literal), "serviceaccount-issuer.yaml names {literal:?}: not portable");
    }
    let mut m = shipped.clone();
    for (from, to) in [
        (
            format!("          image: {GATE_PLACEHOLDER}\n"),
            format!("          image: {}\n          imagePullPolicy: Never\n", k.gate_image()),
        ),
        (
            "          image: YOUR_REGISTRY/token-reviewer:1.0.0\n".to_string(),
            format!(
                "          image: {}\n          imagePullPolicy: Never\n          command: [/bin/sh, -c, exec sleep 3600]\n",
                k.image("busybox")
            ),
        ),
        (
            "      serviceAccountName: token-reviewer\n".to_string(),
            "      serviceAccountName: token-reviewer\n      hostNetwork: true\n      terminationGracePeriodSeconds: 1\n"
                .to_string(),
        ),
        (
            "https://kubernetes.default.svc/.well-known/openid-configuration".to_string(),
            format!("{API_SERVER}/.well-known/openid-configuration"),
        ),
    ] {
        assert_eq!(m.matches(&from).count(), 1, "serviceaccount-issuer.yaml no longer has {from:?}");
        m = m.replace(&from, &to);
    }
    let ns = k.namespace("sa-issuer");
    make_issuer_configmap(&k, &ns.name, "serviceaccount-issuer.yaml");
    k.kubectl_ok(&["-n", &ns.name, "apply", "-f", "-"], Some(&m));
    let pod = || {
        let pods = k.get_json(&["-n", &ns.name, "pods", "-l", "app.kubernetes.io/name=token-reviewer"]);
        pods["items"].as_array().and_then(|items| items.first().cloned()).unwrap_or_default()
    };
    k.wait_for("the token reviewer to run", || pod()["status"]["phase"] == "Running");
    let running = pod();
    let ended = &running["status"]["initContainerStatuses"][0]["state"]["terminated"];
    assert_eq!(ended["exitCode"], 0, "{running}");
    let message = ended["message"].as_str().unwrap_or_default();
    assert!(message.starts_with(&format!("ready: {SA_ISSUER} after")), "the API server's own issuer: {running}");
    let name = running["metadata"]["name"].as_str().unwrap();
    let log = k.kubectl_ok(&["-n", &ns.name, "logs", name, "-c", "wait-for-idp"], None);
    assert!(log.contains("ready") && !log.contains("usual member"), "{log}");
    k.assert_loopback_only();
}
