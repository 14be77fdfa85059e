//! ToolHive's proxy runner on the real kubelet (issue 34 §4): `thv-proxyrunner` v0.47.0 (built by
//! `.ci/real-peers`, in a scratch image of its own by `.ci/real-cluster`) deployed as ToolHive's
//! operator v0.47.0 deploys it, with an embedded auth server whose upstream is an OIDC provider
//! (Keycloak 26.7.3, started cold after the pods, as tests/cluster.rs's cold boot does).
//!
//! The Deployment is modelled on `deploymentForMCPRemoteProxy`
//! (cmd/thv-operator/controllers/mcpremoteproxy_deployment.go, v0.47.0): the container `toolhive`
//! with `run --foreground=true placeholder-for-remote-proxy`; the RunConfig as `runconfig.json` in
//! the ConfigMap `NAME-runconfig`, mounted at `/etc/runconfig`; the upstream's CA (the
//! `caBundleRef` ConfigMap) mounted by subPath at `/etc/toolhive/authserver/upstream-ca/0/ca.crt`
//! (`generateCABundleVolumes`, pkg/controllerutil/authserver.go) and named by the RunConfig's
//! `ca_file_path`; the client secret as `TOOLHIVE_UPSTREAM_CLIENT_SECRET_IDP`; the variables
//! `EnsureRequiredEnvVars` adds (`HOME`, `XDG_CONFIG_HOME`, `TOOLHIVE_RUNTIME`,
//! `UNSTRUCTURED_LOGS`) and `TOOLHIVE_USAGE_METRICS_ENABLED=false` as a user adds it through
//! `resourceOverrides.proxyDeployment.env`; the operator's security contexts (user 1000, read-only
//! root). Each workload's probes, all `GET /health`, as the operator writes them:
//!
//! | workload | startup | liveness | readiness |
//! |---|---|---|---|
//! | MCPServer (`deploymentForMCPServer`) | 5 s × 18 (timeout 3) | 30/10/5/3 | 5/5/3/3 |
//! | MCPRemoteProxy (`deploymentForMCPRemoteProxy`) | 0/5/3/18 | 30/10/5/3 | 15/5/3/3 |
//! | VirtualMCPServer (`vmcpLiveness*`) | none | 30/10/5/3 | 15/5/3/3 |
//!
//! What this node changes, and nothing else: host networking (the node's only kind), so each
//! runner listens on 127.0.0.1 on a port of its own and each probe names `host: 127.0.0.1`; the
//! imported images (`imagePullPolicy: Never`); the namespace's `default` service account (the
//! operator makes one per workload). A VirtualMCPServer runs `vmcp`, not the runner: its row is
//! the runner under that workload's probes (its readiness path, `/readyz`, is the runner's
//! `/health` here). The gated pods carry the gate as an init container, as an MCPRemoteProxy's or
//! a VirtualMCPServer's `spec.podTemplateSpec` adds it (docs/deploy.md, "ToolHive"), configured
//! as a ToolHive user would: `--client toolhive`, the issuer, the upstream's CA file.

use crate::cluster::{api_time, serves, start_keycloak_on, wall_now};
use crate::support::cluster::{Cluster, Namespace, cluster};
use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// Where the operator mounts the first upstream's CA bundle (`caBundleFilePath`).
pub const UPSTREAM_CA: &str = "/etc/toolhive/authserver/upstream-ca/0/ca.crt";

/// A ToolHive workload kind, for its probes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Workload {
    McpServer,
    McpRemoteProxy,
    VirtualMcpServer,
}

impl Workload {
    pub const ALL: [Workload; 3] = [Workload::McpServer, Workload::McpRemoteProxy, Workload::VirtualMcpServer];

    pub fn name(self) -> &'static str {
        match self {
            Workload::McpServer => "MCPServer",
            Workload::McpRemoteProxy => "MCPRemoteProxy",
            Workload::VirtualMcpServer => "VirtualMCPServer",
        }
    }

    /// The operator's probes for this workload (startup, liveness, readiness), each
    /// (initialDelay, period, timeout, failureThreshold), on 127.0.0.1 here.
    fn probes(self) -> Value {
        let probe = |(delay, period, timeout, failures): (u32, u32, u32, u32)| {
            json!({
                "httpGet": {"host": "127.0.0.1", "path": "/health", "port": "http"},
                "initialDelaySeconds": delay, "periodSeconds": period,
                "timeoutSeconds": timeout, "failureThreshold": failures,
            })
        };
        let liveness = probe((30, 10, 5, 3));
        match self {
            Workload::McpServer => json!({
                "startupProbe": probe((0, 5, 3, 18)), "livenessProbe": liveness, "readinessProbe": probe((5, 5, 3, 3)),
            }),
            Workload::McpRemoteProxy => json!({
                "startupProbe": probe((0, 5, 3, 18)), "livenessProbe": liveness, "readinessProbe": probe((15, 5, 3, 3)),
            }),
            Workload::VirtualMcpServer => json!({"livenessProbe": liveness, "readinessProbe": probe((15, 5, 3, 3))}),
        }
    }
}

/// The RunConfig the operator writes for an MCPRemoteProxy whose embedded auth server has one
/// OIDC upstream (`buildOIDCUpstreamRunConfig`): the runner listens on 127.0.0.1:`port`.
pub fn runconfig(name: &str, port: u16, issuer: &str) -> Value {
    let own = format!("http://localhost:{port}");
    json!({
        "schema_version": "v0.1.0", "name": name, "transport": "streamable-http",
        "host": "127.0.0.1", "port": port, "remote_url": "http://127.0.0.1:9/mcp",
        "embedded_auth_server_config": {
            "schema_version": "v0.1.0", "issuer": own, "allowed_audiences": [own],
            "upstreams": [{"name": "idp", "type": "oidc", "oidc_config": {
                "issuer_url": issuer, "client_id": "toolhive",
                "client_secret_env_var": "TOOLHIVE_UPSTREAM_CLIENT_SECRET_IDP",
                "redirect_uri": format!("{own}/oauth/callback"),
                "ca_file_path": UPSTREAM_CA,
            }}],
        },
    })
}

/// The gate as an init container, as a ToolHive user adds it (`spec.podTemplateSpec`).
pub fn gate_container(image: &str, issuer: &str) -> Value {
    json!({
        "name": "wait-for-idp", "image": image, "imagePullPolicy": "Never",
        "env": [
            {"name": "WAIT_FOR_IDP_ISSUER", "value": issuer},
            {"name": "WAIT_FOR_IDP_CLIENT", "value": "toolhive"},
            {"name": "WAIT_FOR_IDP_CA_FILE", "value": UPSTREAM_CA},
        ],
        "volumeMounts": [{"name": "authserver-upstream-ca-0", "mountPath": UPSTREAM_CA, "subPath": "ca.crt", "readOnly": true}],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": {
            "runAsNonRoot": true, "runAsUser": 65532, "readOnlyRootFilesystem": true,
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    })
}

/// The proxy runner's Deployment `name` as operator v0.47.0 generates it (see the module's
/// header), on this node; `init` are its init containers (none, as generated; or the gate).
pub fn runner_deployment(k: &Cluster, name: &str, port: u16, workload: Workload, init: Value) -> Value {
    let labels = json!({
        "app": "mcpremoteproxy", "app.kubernetes.io/name": "mcpremoteproxy",
        "app.kubernetes.io/instance": name, "toolhive": "true", "toolhive-name": name,
    });
    let mut container = json!({
        "name": "toolhive", "image": k.image("thv-proxyrunner"), "imagePullPolicy": "Never",
        "args": ["run", "--foreground=true", "placeholder-for-remote-proxy"],
        // The user's resourceOverrides env, EnsureRequiredEnvVars' defaults, then the auth
        // server's (GenerateAuthServerEnvVars), in the operator's order.
        "env": [
            {"name": "TOOLHIVE_USAGE_METRICS_ENABLED", "value": "false"},
            {"name": "XDG_CONFIG_HOME", "value": "/tmp"},
            {"name": "HOME", "value": "/tmp"},
            {"name": "TOOLHIVE_RUNTIME", "value": "kubernetes"},
            {"name": "UNSTRUCTURED_LOGS", "value": "false"},
            {"name": "TOOLHIVE_UPSTREAM_CLIENT_SECRET_IDP",
             "valueFrom": {"secretKeyRef": {"name": "upstream-idp", "key": "client-secret"}}},
        ],
        "volumeMounts": [
            {"name": "runconfig", "mountPath": "/etc/runconfig", "readOnly": true},
            {"name": "authserver-upstream-ca-0", "mountPath": UPSTREAM_CA, "subPath": "ca.crt", "readOnly": true},
        ],
        "ports": [{"containerPort": port, "name": "http", "protocol": "TCP"}],
        "securityContext": {
            "privileged": false, "runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000,
            "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
            "seccompProfile": {"type": "RuntimeDefault"}, "capabilities": {"drop": ["ALL"]},
        },
    });
    for (probe, spec) in workload.probes().as_object().unwrap() {
        container[probe] = spec.clone();
    }
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "hostNetwork": true,
                    "terminationGracePeriodSeconds": 1,
                    "initContainers": init,
                    "containers": [container],
                    "volumes": [
                        {"name": "runconfig", "configMap": {"name": format!("{name}-runconfig")}},
                        {"name": "authserver-upstream-ca-0",
                         "configMap": {"name": "upstream-ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    ],
                    "securityContext": {
                        "runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                },
            },
        },
    })
}

/// What the operator's reconcile leaves beside the Deployment, in `ns`: the upstream's CA
/// (`caBundleRef`'s ConfigMap, key `ca.crt`) and client secret.
pub fn upstream_objects(k: &Cluster, ns: &str, ca: &TestCa) {
    let ca_arg = format!("--from-file=ca.crt={}", ca.pem_path.display());
    k.kubectl_ok(&["-n", ns, "create", "configmap", "upstream-ca", &ca_arg], None);
    let secret = ["-n", ns, "create", "secret", "generic", "upstream-idp", "--from-literal=client-secret=test-only"];
    k.kubectl_ok(&secret, None);
}

/// The RunConfig ConfigMap `NAME-runconfig` in `ns`.
pub fn runconfig_map(k: &Cluster, ns: &str, name: &str, config: &Value) {
    let map = json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("{name}-runconfig")},
        "data": {"runconfig.json": config.to_string()},
    });
    k.kubectl_ok(&["-n", ns, "apply", "-f", "-"], Some(&map.to_string()));
}

/// One runner Deployment of the cold boot.
struct Runner {
    name: String,
    workload: Workload,
    gated: bool,
    port: u16,
    /// When its /health first answered 200.
    serving: Option<Instant>,
}

/// What one runner's cold boot measured.
#[derive(Debug, Clone)]
pub struct Boot {
    pub workload: Workload,
    pub gated: bool,
    /// The `toolhive` container's restarts (the pod's status).
    pub restarts: u64,
    /// The kubelet's "Back-off restarting failed container" events (with their repeats).
    pub back_offs: u64,
    /// From Keycloak serving (its realm's discovery document, 200) to the runner's /health 200.
    pub delay: f64,
    /// The same from the API: the running container's `startedAt` (whole seconds).
    pub api_delay: f64,
}

/// The "Back-off restarting failed container" events of pod `name` in `ns` (a repeated event is
/// one object with a count).
pub fn back_off_events(k: &Cluster, ns: &str, pod: &str) -> u64 {
    let events = k.get_json(&["-n", ns, "events", "--field-selector", &format!("involvedObject.name={pod}")]);
    let items = events["items"].as_array().cloned().unwrap_or_default();
    items.iter().filter(|e| e["reason"] == "BackOff").map(|e| e["count"].as_u64().unwrap_or(1)).sum()
}

/// The pods of Deployment `name` in `ns`.
fn pods_of(k: &Cluster, ns: &str, name: &str) -> Vec<Value> {
    let pods = k.get_json(&["-n", ns, "pods", "-l", &format!("toolhive-name={name}")]);
    pods["items"].as_array().cloned().unwrap_or_default()
}

/// The only pod of Deployment `name` in `ns`.
fn pod_of(k: &Cluster, ns: &str, name: &str) -> Value {
    let pods = pods_of(k, ns, name);
    assert_eq!(pods.len(), 1, "one pod of {name}: {pods:?}");
    pods[0].clone()
}

/// One cold boot: every workload's runner, with and without the gate, deployed before Keycloak
/// starts; then Keycloak starts cold on the port the issuer names. Returns each runner's boot,
/// after asserting what the gate promises (with it, one start; without it, a crash loop).
fn cold_boot_once(k: &Cluster, ns: &Namespace, gate: &str, workloads: &[Workload]) -> Vec<Boot> {
    let ca = TestCa::new();
    let dir = tempfile::tempdir().unwrap();
    let keycloak_port = free_port();
    let issuer = format!("https://127.0.0.1:{keycloak_port}/realms/main");
    upstream_objects(k, &ns.name, &ca);
    let mut runners = Vec::new();
    for &workload in workloads {
        for gated in [true, false] {
            let name = format!("{}-{}", workload.name().to_lowercase(), if gated { "gate" } else { "nogate" });
            let port = free_port();
            runconfig_map(k, &ns.name, &name, &runconfig(&name, port, &issuer));
            let init = if gated { json!([gate_container(gate, &issuer)]) } else { json!([]) };
            let deployment = runner_deployment(k, &name, port, workload, init);
            k.kubectl_ok(&["-n", &ns.name, "create", "-f", "-"], Some(&deployment.to_string()));
            runners.push(Runner { name, workload, gated, port, serving: None });
        }
    }
    // Before Keycloak starts: each ungated runner has crashed once (it ran and found no
    // provider), each gate is waiting.
    for r in &runners {
        k.wait_for(&format!("{} to have tried the provider", r.name), || {
            let pods = pods_of(k, &ns.name, &r.name);
            let status = &pods.first().unwrap_or(&Value::Null)["status"];
            if r.gated {
                !status["initContainerStatuses"][0]["state"]["running"].is_null()
            } else {
                status["containerStatuses"][0]["restartCount"].as_u64().unwrap_or(0) >= 1
            }
        });
    }
    let mut keycloak = start_keycloak_on(&ca, keycloak_port, dir.path());
    let discovery = format!("{issuer}/.well-known/openid-configuration");
    let mut keycloak_serving: Option<(f64, Instant)> = None;
    let deadline = Instant::now() + HANG_BOUND + Duration::from_secs(600);
    while runners.iter().any(|r| r.serving.is_none()) {
        if keycloak_serving.is_none() && serves(&discovery, &ca.pem_path, None) {
            keycloak_serving = Some((wall_now(), Instant::now()));
        }
        for r in runners.iter_mut().filter(|r| r.serving.is_none()) {
            if http_status(r.port, "/health") == Some(200) {
                r.serving = Some(Instant::now());
            }
        }
        if let Some(status) = keycloak.daemon.child.try_wait().unwrap() {
            panic!("Keycloak exited ({status}):\n{}", keycloak.daemon.log_tail(40));
        }
        assert!(Instant::now() < deadline, "{}", k.failure("no runner served /health"));
        std::thread::sleep(Duration::from_millis(50));
    }
    let (kc_wall, kc_at) = keycloak_serving.expect("a runner served before Keycloak did: it never asked its upstream");
    k.assert_loopback_only();
    drop(keycloak);
    let boots: Vec<Boot> = runners
        .iter()
        .map(|r| {
            let pod = pod_of(k, &ns.name, &r.name);
            let container = &pod["status"]["containerStatuses"][0];
            let started = container["state"]["running"]["startedAt"].as_str().expect("the runner runs");
            let back_offs = back_off_events(k, &ns.name, pod["metadata"]["name"].as_str().unwrap());
            if r.gated {
                let init = &pod["status"]["initContainerStatuses"][0];
                assert_eq!(init["state"]["terminated"]["exitCode"], 0, "{}'s gate: {init}", r.name);
                let message = init["state"]["terminated"]["message"].as_str().unwrap_or_default();
                assert!(message.starts_with("ready: "), "{}'s gate's last word: {message}", r.name);
            }
            Boot {
                workload: r.workload,
                gated: r.gated,
                restarts: container["restartCount"].as_u64().unwrap(),
                back_offs,
                delay: r.serving.unwrap().duration_since(kc_at).as_secs_f64(),
                api_delay: api_time(started) - kc_wall.floor(),
            }
        })
        .collect();
    boots
}

/// What the gate promises a ToolHive runner: it starts once, after its provider serves.
pub fn started_once(boot: &Boot) -> Result<(), String> {
    if boot.restarts == 0 && boot.back_offs == 0 {
        Ok(())
    } else {
        Err(format!("{} restarts, {} back-off events: {boot:?}", boot.restarts, boot.back_offs))
    }
}

/// The runner's cold boot on the real kubelet, with and without the gate, under each ToolHive
/// workload's probes. Without the gate the runner exits on its failed discovery (one GET, no
/// retry, before it binds /health) and the kubelet restarts it with its back-off (in the suite
/// capped at SUITE_MAX_RESTART_PERIOD; bench/cluster-coldboot runs the default and other caps):
/// the test asserts that crash loop. With it, the pod waits in Init and the runner starts once,
/// just after Keycloak serves. WAIT_FOR_IDP_COLDBOOT_RUNS repeats the whole (bench/ sets it).
#[test]
#[ignore = "needs root, Keycloak and thv-proxyrunner (.ci/real-peers) and the cluster (.ci/real-cluster); the test command runs it"]
fn toolhive_s_runner_cold_boot_on_a_real_kubelet_with_and_without_the_gate() {
    let runs: usize = std::env::var("WAIT_FOR_IDP_COLDBOOT_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(1);
    let k = cluster();
    let gate = k.gate_image();
    let mut measured = Vec::new();
    for run in 1..=runs {
        let ns = k.namespace("toolhive-coldboot");
        let boots = cold_boot_once(&k, &ns, &gate, &Workload::ALL);
        eprintln!("ToolHive cold boot run {run}/{runs}: {boots:#?}");
        for boot in &boots {
            match (boot.gated, started_once(boot)) {
                (true, Err(why)) => panic!("with the gate the runner must start once: {why}"),
                (false, Ok(())) => panic!("without the gate the runner crash-loops until Keycloak serves: {boot:?}"),
                _ => {}
            }
        }
        measured.extend(boots);
    }
    let report = report(&k, &measured);
    eprintln!("{report}");
    std::fs::write(Path::new(env!("CARGO_TARGET_TMPDIR")).join("cluster-coldboot-toolhive.md"), &report).unwrap();
}

/// The Markdown table of the runner's cold boots: median and worst per workload and mode.
fn report(k: &Cluster, boots: &[Boot]) -> String {
    let backoff = k
        .max_restart_period()
        .map_or("the kubelet's default back-off".to_string(), |p| format!("maxContainerRestartPeriod {p}"));
    let runs = boots.len() / (2 * Workload::ALL.len());
    let mut text = format!(
        "ToolHive's proxy runner (thv-proxyrunner v0.47.0), real kubelet ({backoff}), {runs} run(s):\n\n\
         | workload's probes | | restarts, median / max | back-off events, median / max | Keycloak serving → /health 200, median / max | the same from the API (1 s steps), median / max |\n\
         |---|---|---|---|---|---|\n"
    );
    for workload in Workload::ALL {
        for gated in [false, true] {
            let pick: Vec<&Boot> = boots.iter().filter(|b| b.workload == workload && b.gated == gated).collect();
            let stat = |f: &dyn Fn(&Boot) -> f64| {
                let mut v: Vec<f64> = pick.iter().map(|b| f(b)).collect();
                v.sort_by(f64::total_cmp);
                (v[v.len() / 2], v[v.len() - 1])
            };
            let (r, b, d, a) = (
                stat(&|b| b.restarts as f64),
                stat(&|b| b.back_offs as f64),
                stat(&|b| b.delay),
                stat(&|b| b.api_delay),
            );
            text += &format!(
                "| {} | {} | {} / {} | {} / {} | {:.2} s / {:.2} s | {:.0} s / {:.0} s |\n",
                workload.name(),
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
    }
    text
}

const PLACEHOLDER_IMAGE: &str = GATE_PLACEHOLDER;

/// deploy/policy/toolhive.yaml applied with the local gate image, removed again when dropped (it
/// is cluster-wide).
struct Policy<'a>(&'a Cluster);

impl<'a> Policy<'a> {
    fn apply(k: &'a Cluster, image: &str) -> Policy<'a> {
        let text = std::fs::read_to_string(repo_root().join("deploy/policy/toolhive.yaml")).unwrap();
        assert_eq!(text.matches(PLACEHOLDER_IMAGE).count(), 1);
        k.apply(&text.replace(PLACEHOLDER_IMAGE, image));
        Policy(k)
    }
}

impl Drop for Policy<'_> {
    fn drop(&mut self) {
        let file = repo_root().join("deploy/policy/toolhive.yaml");
        let _ = self.0.kubectl_run(&["delete", "--ignore-not-found", "-f", file.to_str().unwrap()], None);
    }
}

/// What a ToolHive user sets on an MCPServer (or MCPRemoteProxy) for the policy, merged into the
/// runner's Deployment as operator v0.47.0 merges it: `resourceOverrides.proxyDeployment`'s
/// `podTemplateMetadataOverrides` labels and annotations onto the pod template
/// (`buildPodTemplateMetadata`), and its `env` appended to the `toolhive` container's
/// (`buildEnvVarsForProxy`, before `EnsureRequiredEnvVars`' defaults, which changes nothing here).
fn with_overrides(mut deployment: Value, labels: Value, annotations: Value, env: Value) -> Value {
    let template = &mut deployment["spec"]["template"];
    for (k, v) in labels.as_object().unwrap() {
        template["metadata"]["labels"][k] = v.clone();
    }
    template["metadata"]["annotations"] = annotations;
    // After the user's first entry (TOOLHIVE_USAGE_METRICS_ENABLED), before the operator's own.
    let ours = template["spec"]["containers"][0]["env"].as_array_mut().unwrap();
    let operator_s = ours.split_off(1);
    ours.extend(env.as_array().unwrap().iter().cloned());
    ours.extend(operator_s);
    deployment
}

/// The Deployment's pod template as a Pod named `name` (what the ReplicaSet controller creates),
/// as the operator generates it (no host networking, probes on the pod's address), for a
/// server-side dry run under Pod Security `restricted`.
fn template_as_pod(deployment: &Value, name: &str) -> Value {
    let template = &deployment["spec"]["template"];
    let mut spec = template["spec"].clone();
    spec.as_object_mut().unwrap().remove("hostNetwork");
    for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
        if let Some(get) = spec["containers"][0][probe]["httpGet"].as_object_mut() {
            get.remove("host");
        }
    }
    let mut metadata = template["metadata"].clone();
    metadata["name"] = json!(name);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

/// The pod as the API server would store it in `ns` (a server-side dry run): refused, or
/// admitted with a warning, fails.
fn stored(k: &Cluster, ns: &str, pod: &Value) -> Value {
    let out = k.kubectl_run(&["-n", ns, "create", "--dry-run=server", "-o", "json", "-f", "-"], Some(&pod.to_string()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !stderr.contains("Warning:"), "pod {}: {stderr}", pod["metadata"]["name"]);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn init_names(pod: &Value) -> Vec<String> {
    let init = pod["spec"]["initContainers"].as_array().cloned().unwrap_or_default();
    init.iter().map(|c| c["name"].as_str().unwrap().to_string()).collect()
}

fn env_of(container: &Value) -> Vec<(String, Value)> {
    let env = container["env"].as_array().cloned().unwrap_or_default();
    env.iter().map(|e| (e["name"].as_str().unwrap().to_string(), e["value"].clone())).collect()
}

/// deploy/policy/toolhive.yaml on the real API server (issue 34 §5), against the runner's pod as
/// operator v0.47.0 generates it with what `resourceOverrides.proxyDeployment` lets a user set:
/// the label and annotations on the pod template, WAIT_FOR_IDP_* and proxy variables in the env.
/// The gate goes in with the issuer, `--client toolhive` and the CA the operator mounts for the
/// upstream (or the one an annotation names), admitted under Pod Security `restricted`; pods that
/// do not ask are left alone.
#[test]
#[ignore = "needs the real cluster (.ci/real-cluster), as root; the test command runs it"]
fn the_toolhive_policy_gates_the_runner_pods_that_ask_and_only_those() {
    let k = cluster();
    let image = k.gate_image();
    let _policy = Policy::apply(&k, &image);
    let ns = k.namespace("toolhive-policy");
    k.kubectl_ok(
        &["label", "namespace", &ns.name, "--overwrite", "pod-security.kubernetes.io/enforce=restricted"],
        None,
    );
    let issuer = "https://sso.example.com/realms/main";
    let asked = json!({"wait-for-idp/inject": "true"});
    let env = json!([
        {"name": "WAIT_FOR_IDP_TIMEOUT", "value": "2m"},
        {"name": "WAIT_FOR_IDP_REFUSE_PRIVATE_ADDRESSES", "value": "false"},
        {"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"},
        {"name": "NO_PROXY", "value": ".svc,.cluster.local"},
        {"name": "TOOLHIVE_DEBUG", "value": "true"},
    ]);
    let runner = |workload, annotations: Value, labels: &Value| {
        let deployment = runner_deployment(&k, "mcp", 8080, workload, json!([]));
        with_overrides(deployment, labels.clone(), annotations, env.clone())
    };
    let pod = template_as_pod(&runner(Workload::McpServer, json!({"wait-for-idp/issuer": issuer}), &asked), "gated");
    k.wait_for("the policy to take effect", || init_names(&stored(&k, &ns.name, &pod)) == ["wait-for-idp"]);

    // The operator's own CA mount, shared: the gate trusts what the runner trusts.
    let gated = stored(&k, &ns.name, &pod);
    let gate = &gated["spec"]["initContainers"][0];
    assert_eq!(gate["image"], image.as_str());
    let expected = [
        ("WAIT_FOR_IDP_ISSUER", json!(issuer)),
        ("WAIT_FOR_IDP_CLIENT", json!("toolhive")),
        ("WAIT_FOR_IDP_CA_FILE", json!(UPSTREAM_CA)),
        ("WAIT_FOR_IDP_TIMEOUT", json!("2m")),
        ("WAIT_FOR_IDP_REFUSE_PRIVATE_ADDRESSES", json!("false")),
        ("HTTPS_PROXY", json!("http://proxy.example.com:3128")),
        ("NO_PROXY", json!(".svc,.cluster.local")),
    ];
    let expected: Vec<(String, Value)> = expected.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    assert_eq!(env_of(gate), expected, "{gate}");
    let mount =
        json!([{"name": "authserver-upstream-ca-0", "mountPath": UPSTREAM_CA, "subPath": "ca.crt", "readOnly": true}]);
    // The API server's own ServiceAccount admission mounts the pod's token into every container
    // of a pod that automounts it, the gate's too (the runner's pod does): not the policy's doing,
    // and the gate never reads it.
    let own = |mounts: &Value| {
        let mounts = mounts.as_array().cloned().unwrap_or_default();
        let kept = mounts.into_iter().filter(|m| !m["name"].as_str().unwrap_or("").starts_with("kube-api-access-"));
        Value::Array(kept.collect())
    };
    assert_eq!(own(&gate["volumeMounts"]), mount, "{gate}");
    assert_eq!(gate["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(gate["terminationMessagePolicy"], "FallbackToLogsOnError");
    let volumes = own(&gated["spec"]["volumes"]);
    assert_eq!(volumes.as_array().unwrap().len(), 2, "no volume added: {}", gated["spec"]["volumes"]);

    // A CA named by annotation (a ConfigMap, or a Secret with its key): its volume is added.
    for (kind, annotations) in [
        ("configMap", json!({"wait-for-idp/issuer": issuer, "wait-for-idp/ca-configmap": "corp-ca"})),
        (
            "secret",
            json!({"wait-for-idp/issuer": issuer, "wait-for-idp/ca-secret": "corp-ca", "wait-for-idp/ca-key": "root.pem"}),
        ),
    ] {
        let pod = template_as_pod(
            &runner(Workload::McpRemoteProxy, annotations, &asked),
            &format!("ca-{}", kind.to_lowercase()),
        );
        let pod = stored(&k, &ns.name, &pod);
        let gate = &pod["spec"]["initContainers"][0];
        assert_eq!(env_of(gate)[2], ("WAIT_FOR_IDP_CA_FILE".to_string(), json!("/etc/wait-for-idp/ca/ca.crt")));
        assert_eq!(gate["volumeMounts"][0]["name"], "wait-for-idp-ca", "{gate}");
        let volumes = pod["spec"]["volumes"].as_array().unwrap();
        let added = volumes.iter().find(|v| v["name"] == "wait-for-idp-ca").expect("the CA's volume");
        let key = if kind == "secret" { "root.pem" } else { "ca.crt" };
        assert_eq!(added[kind]["items"], json!([{"key": key, "path": "ca.crt"}]), "{added}");
    }

    // Left alone: no label, no issuer annotation, the label set to "false", and a pod that is not
    // the runner (the MCP server's own, whose container is `mcp`).
    let cases = [
        ("no-label", json!({"wait-for-idp/issuer": issuer}), json!({})),
        ("no-issuer", json!({"wait-for-idp/ca-configmap": "corp-ca"}), asked.clone()),
        ("opted-out", json!({"wait-for-idp/issuer": issuer}), json!({"wait-for-idp/inject": "false"})),
    ];
    for (name, annotations, labels) in cases {
        let pod = template_as_pod(&runner(Workload::McpServer, annotations, &labels), name);
        assert!(init_names(&stored(&k, &ns.name, &pod)).is_empty(), "{name} was gated");
    }
    let mut server =
        template_as_pod(&runner(Workload::McpServer, json!({"wait-for-idp/issuer": issuer}), &asked), "mcp");
    server["spec"]["containers"][0]["name"] = json!("mcp");
    assert!(init_names(&stored(&k, &ns.name, &server)).is_empty(), "the MCP server's own pod was gated");
}

/// The way in, end to end on the real kubelet: the runner's Deployment as the operator generates
/// it for an MCPRemoteProxy, with only the label and the issuer annotation a user sets through
/// `resourceOverrides.proxyDeployment.podTemplateMetadataOverrides`; the policy adds the gate to
/// its pod, which waits in Init while the provider refuses connections; once it serves, the
/// runner starts once and serves /health.
#[test]
#[ignore = "needs root, thv-proxyrunner (.ci/real-peers) and the cluster (.ci/real-cluster); the test command runs it"]
fn an_operator_deployed_runner_gets_the_gate_from_the_policy_and_starts_once() {
    let k = cluster();
    let image = k.gate_image();
    let _policy = Policy::apply(&k, &image);
    let ns = k.namespace("toolhive-way-in");
    let ca = TestCa::new();
    upstream_objects(&k, &ns.name, &ca);
    let slot = Reserved::new();
    let issuer = slot.issuer("/realms/main");
    let port = free_port();
    runconfig_map(&k, &ns.name, "remote", &runconfig("remote", port, &issuer));
    let deployment = with_overrides(
        runner_deployment(&k, "remote", port, Workload::McpRemoteProxy, json!([])),
        json!({"wait-for-idp/inject": "true"}),
        json!({"wait-for-idp/issuer": issuer}),
        json!([]),
    );
    let probe = template_as_pod(&deployment, "probe");
    k.wait_for("the policy to take effect", || {
        let out = k.kubectl_run(
            &["-n", &ns.name, "create", "--dry-run=server", "-o", "json", "-f", "-"],
            Some(&probe.to_string()),
        );
        out.status.success()
            && serde_json::from_slice::<Value>(&out.stdout).is_ok_and(|p| init_names(&p) == ["wait-for-idp"])
    });
    k.kubectl_ok(&["-n", &ns.name, "create", "-f", "-"], Some(&deployment.to_string()));
    let gate_log = |pod: &str| {
        let out = k.kubectl_run(&["-n", &ns.name, "logs", pod, "-c", "wait-for-idp"], None);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    k.wait_for("the pod's gate to try the provider", || {
        let pods = pods_of(&k, &ns.name, "remote");
        pods.first().is_some_and(|p| gate_log(p["metadata"]["name"].as_str().unwrap()).contains("connection refused"))
    });
    let waiting = pod_of(&k, &ns.name, "remote");
    assert_eq!(init_names(&waiting), ["wait-for-idp"]);
    assert_eq!(waiting["status"]["phase"], "Pending", "{}", waiting["status"]);
    assert_ne!(http_status(port, "/health"), Some(200), "the runner started before its provider served");

    let provider = slot.listen(
        tls_mode(ca.leaf(&["localhost"])),
        serve_at(&format!("/realms/main{WELL_KNOWN}"), discovery_doc(&issuer)),
    );
    k.wait_for("the runner to serve /health", || http_status(port, "/health") == Some(200));
    let pod = pod_of(&k, &ns.name, "remote");
    let status = &pod["status"];
    assert_eq!(status["containerStatuses"][0]["restartCount"], 0, "the runner started once: {status}");
    let gate = &status["initContainerStatuses"][0];
    assert_eq!(gate["restartCount"], 0, "{status}");
    assert_eq!(gate["state"]["terminated"]["exitCode"], 0, "{status}");
    let message = gate["state"]["terminated"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with(&format!("ready: {issuer}")), "the gate's last word: {message}");
    assert!(provider.count() >= 2, "the gate and the runner each asked: {}", provider.count());
    k.assert_loopback_only();
}
