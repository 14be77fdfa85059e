//! Admission for real (issue 27, §2.3 and §2.5), on the single-node cluster of
//! `support::cluster` (Kubernetes v1.36.3 on loopback):
//!
//! - every manifest in `deploy/` (the plain manifests with the Job, the kustomize overlays, the
//!   oauth2-proxy-shaped chart rendered with each of `deploy/helm/`'s values, the policy) and the
//!   `kubectl run` recipe of docs/deploy.md, as written, pass a server-side dry run in a namespace
//!   that enforces Pod Security `restricted`: the API server's own validation and admission, not a
//!   schema. Pod Security only warns about a workload's template, so each template is also dry-run
//!   as a Pod, which `enforce` judges;
//! - the Job (exec mode) runs to completion, and the `kubectl run` recipe to the gate's exit code,
//!   in a privileged namespace: the node runs host-network pods only, which `restricted` refuses,
//!   so the test adds `hostNetwork` (and the image, and how to reach and trust the local provider);
//! - `deploy/policy/` on the real API server: it injects the gate into opted-in pods that set
//!   `OAUTH2_PROXY_OIDC_ISSUER_URL`, and only into those, with what it copies; a Deployment
//!   without the gate gets it, and its pod waits in `Init` for a provider that comes up late.
//!
//! The network rule holds throughout: host-network pods, and the provider on 127.0.0.1.

use crate::support::cluster::{Cluster, cluster};
use crate::support::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::sync::OnceLock;

/// The issuer the Job and the `kubectl run` recipe name, kept as written: the test provider
/// presents a certificate for it, and `--connect-to` sends the connection to loopback.
const RECIPE_ISSUER: &str = "https://sso.example.com/realms/main";
const PLACEHOLDER_IMAGE: &str = GATE_PLACEHOLDER;
/// Where the tests mount the test CA (a ConfigMap) in a pod.
const CA_DIR: &str = "/etc/idp-ca";

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo_root().join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// Turns a namespace of the fixture (privileged) into one that enforces, and warns about,
/// Pod Security `restricted`.
fn restrict(cluster: &Cluster, ns: &str) {
    cluster.kubectl_ok(
        &[
            "label",
            "namespace",
            ns,
            "--overwrite",
            "pod-security.kubernetes.io/enforce=restricted",
            "pod-security.kubernetes.io/warn=restricted",
        ],
        None,
    );
}

/// `kubectl create --dry-run=server` of `text` (YAML or JSON) in `ns`: the objects as the API
/// server would store them, or its refusal. A warning (Pod Security's about a template, a
/// deprecated field) is a failure too.
fn server_dry_run(cluster: &Cluster, ns: &str, what: &str, text: &str) -> Vec<Value> {
    let out = cluster.kubectl_run(&["-n", ns, "create", "--dry-run=server", "-o", "json", "-f", "-"], Some(text));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what}: the API server refuses it:\n{stderr}");
    assert!(!stderr.contains("Warning:"), "{what}: admitted with a warning:\n{stderr}");
    // One JSON document per object, one after the other.
    serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter::<Value>()
        .map(|v| v.expect("kubectl printed JSON"))
        .flat_map(|v| match v["kind"].as_str() {
            Some("List") => v["items"].as_array().unwrap().clone(),
            _ => vec![v],
        })
        .collect()
}

/// Each pod template of `objects` (Deployments, Jobs) dry-run as a Pod of its own, which Pod
/// Security's `enforce` judges (for a workload it only warns).
fn dry_run_templates_as_pods(cluster: &Cluster, ns: &str, source: &str, objects: &[Value]) -> usize {
    let mut pods = 0;
    for object in objects {
        let template = &object["spec"]["template"];
        if template.is_null() {
            continue;
        }
        let name = format!(
            "{}-{}",
            object["kind"].as_str().unwrap().to_lowercase(),
            object["metadata"]["name"].as_str().unwrap()
        );
        let mut metadata = template["metadata"].clone();
        if let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) {
            // The Job controller's own labels, added by the API server's defaulting: not the kit's.
            labels.retain(|k, _| !k.contains("controller-uid") && k != "job-name" && !k.starts_with("batch."));
        }
        metadata["name"] = json!(name);
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]});
        server_dry_run(cluster, ns, &format!("{source}: {name}'s template as a Pod"), &pod.to_string());
        pods += 1;
    }
    pods
}

/// The `kubectl run` recipe of docs/deploy.md as the shell splits it (continuations, the quoted
/// JSON), without `kubectl` itself.
fn kubectl_run_recipe() -> Vec<String> {
    let text = read("docs/deploy.md");
    let recipes = &text[text.find("<!-- recipes").unwrap()..text.find("<!-- end of recipes -->").unwrap()];
    let start = recipes.find("```sh\nkubectl run ").expect("the kubectl run recipe") + "```sh\n".len();
    let block = &recipes[start..start + recipes[start..].find("\n```").unwrap()];
    let script = format!("printf '%s\\0' {}", block.strip_prefix("kubectl ").unwrap());
    let out = Command::new("bash").arg("-c").arg(script).output().unwrap();
    assert!(out.status.success(), "bash cannot split the recipe:\n{block}");
    String::from_utf8(out.stdout).unwrap().split_terminator('\0').map(str::to_string).collect()
}

#[test]
#[ignore = "needs the real cluster (.ci/real-cluster), as root; the test command runs it"]
fn every_manifest_in_deploy_passes_a_server_side_dry_run_under_restricted() {
    let cluster = cluster();
    let ns = cluster.namespace("restricted");
    restrict(&cluster, &ns.name);
    let mut rendered: Vec<(String, String)> = Vec::new();
    for path in files_under(&repo_root().join("deploy/kubernetes")) {
        rendered.push((
            path.strip_prefix(repo_root()).unwrap().display().to_string(),
            std::fs::read_to_string(&path).unwrap(),
        ));
    }
    for overlay in ["example", "sidecar-example"] {
        let dir = repo_root().join("deploy/kustomize").join(overlay);
        let text = cluster.kubectl_ok(&["kustomize", dir.to_str().unwrap()], None);
        // The overlays name their namespace (`apps`); here it is the restricted one.
        let text = text.replace("namespace: apps\n", &format!("namespace: {}\n", ns.name));
        rendered.push((format!("kustomize {overlay} (rendered)"), text));
    }
    for values in files_under(&repo_root().join("deploy/helm")) {
        let out = cluster
            .helm()
            .args(["template", "t"])
            .arg(repo_root().join("tests/deploy/chart"))
            .arg("-f")
            .arg(&values)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "helm template with {}: {}",
            values.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let name = values.file_name().unwrap().to_string_lossy();
        rendered
            .push((format!("the chart with deploy/helm/{name} (rendered)"), String::from_utf8(out.stdout).unwrap()));
    }

    let (mut objects, mut pods) = (0, 0);
    for (source, text) in &rendered {
        let admitted = server_dry_run(&cluster, &ns.name, source, text);
        objects += admitted.len();
        // A Pod names its service account, which must exist: the ones the manifest brings.
        for account in admitted.iter().filter(|o| o["kind"] == "ServiceAccount") {
            let name = account["metadata"]["name"].as_str().unwrap();
            cluster.kubectl_ok(&["-n", &ns.name, "create", "serviceaccount", name], None);
        }
        pods += dry_run_templates_as_pods(&cluster, &ns.name, source, &admitted);
    }
    // The policy and its bindings are cluster-scoped: the API server compiles and checks them.
    objects += server_dry_run(&cluster, &ns.name, "deploy/policy", &read("deploy/policy/wait-for-idp.yaml")).len();
    // Not here: deploy/prometheus/podmonitor.yaml and deploy/verify/cluster-image-policy.yaml,
    // whose kinds (the Prometheus Operator's PodMonitor, sigstore policy-controller's
    // ClusterImagePolicy, validated by its own code in tests/supply_chain.rs) this cluster does not
    // serve, and deploy/compose (not Kubernetes).
    let skipped: Vec<_> = files_under(&repo_root().join("deploy"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| {
            !["kubernetes", "kustomize", "helm", "policy"]
                .iter()
                .any(|d| p.starts_with(repo_root().join("deploy").join(d)))
        })
        .map(|p| p.strip_prefix(repo_root()).unwrap().display().to_string())
        .collect();
    assert_eq!(
        skipped,
        ["deploy/compose/compose.yaml", "deploy/prometheus/podmonitor.yaml", "deploy/verify/cluster-image-policy.yaml"],
        "a new kind of manifest?"
    );

    // The recipe as written, without the two flags a dry run refuses (it cannot attach), and with
    // a lower-case image name and a hex digest: kubectl refuses the placeholders before sending
    // anything, as it is meant to (tests/release.rs).
    let stand_in =
        PLACEHOLDER_IMAGE.replace("YOUR_REGISTRY", "registry.example").replace("YOUR_DIGEST", &"ab".repeat(32));
    let image = format!("--image={stand_in}");
    let recipe: Vec<String> = kubectl_run_recipe()
        .into_iter()
        .filter(|a| a != "--rm" && a != "-i")
        .map(|a| if a == format!("--image={PLACEHOLDER_IMAGE}") { image.clone() } else { a })
        .collect();
    assert!(recipe.contains(&image), "{recipe:?}");
    let mut args: Vec<&str> = vec!["-n", &ns.name];
    args.extend(recipe.iter().map(String::as_str));
    let dashes = args.iter().position(|a| *a == "--").unwrap();
    args.splice(dashes..dashes, ["--dry-run=server", "-o", "json"]);
    let out = cluster.kubectl_run(&args, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !stderr.contains("Warning:"), "the kubectl run recipe: {stderr}");
    let pod: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pod["spec"]["containers"][0]["securityContext"]["runAsNonRoot"], true, "{pod}");
    eprintln!(
        "admission: {objects} objects, {pods} templates as pods and the kubectl run pod admitted under restricted"
    );
    assert!(objects >= 14 && pods >= 9, "{objects} objects, {pods} pods: is every file read?");
}

/// A ConfigMap `idp-ca` in `ns` holding the test CA as `ca.pem`.
fn ca_configmap(cluster: &Cluster, ns: &str, ca: &TestCa) {
    let file = format!("--from-file=ca.pem={}", ca.pem_path.display());
    cluster.kubectl_ok(&["-n", ns, "create", "configmap", "idp-ca", &file], None);
}

/// A provider for [`RECIPE_ISSUER`] that comes up on `slot` when asked: until then connections
/// to its port are refused.
fn recipe_provider(ca: &TestCa, slot: Reserved) -> Provider {
    let well_known = format!("/realms/main{WELL_KNOWN}");
    slot.listen(tls_mode(ca.leaf(&["sso.example.com"])), serve_at(&well_known, discovery_doc(RECIPE_ISSUER)))
}

/// The image the Job runs: the gate at /usr/local/bin/wait-for-idp (as docs/exec.md's Dockerfile
/// recipe copies it) beside a stand-in `vault` that says what it was given and reads the files the
/// real one would; Debian's static busybox for its shell.
fn job_image(cluster: &Cluster) -> String {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE
        .get_or_init(|| {
            let gate = crate::image::image("amd64");
            let context = tempfile::tempdir().unwrap();
            copy_static_busybox(context.path());
            let vault = context.path().join("vault");
            std::fs::write(
                &vault,
                "#!/bin/busybox sh\n\
                 # A stand-in for `vault write`: what it was given, and the secrets it reads.\n\
                 echo \"vault $*\"\n\
                 test -n \"$VAULT_TOKEN\" || { echo 'no VAULT_TOKEN'; exit 3; }\n\
                 /bin/busybox cat /run/secrets/oidc/client-secret >/dev/null || exit 4\n\
                 echo configured\n",
            )
            .unwrap();
            std::fs::set_permissions(&vault, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::write(
                context.path().join("Containerfile"),
                format!(
                    "FROM {gate} AS gate\nFROM scratch\nCOPY busybox /bin/busybox\nCOPY vault /bin/vault\n\
                     COPY --from=gate /wait-for-idp /usr/local/bin/wait-for-idp\nENV PATH=/usr/local/bin:/bin\n\
                     USER 65532:65532\n"
                ),
            )
            .unwrap();
            let tag = "localhost/wait-for-idp/vault-with-wait-for-idp:test";
            let out = crate::image::buildah()
                .args(["build", "--isolation", "chroot", "-t", tag, "-f"])
                .arg(context.path().join("Containerfile"))
                .arg(context.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "buildah build: {}", String::from_utf8_lossy(&out.stderr));
            cluster.import_from_buildah(tag, tag, &context.path().join("job.tar"));
            tag.to_string()
        })
        .clone()
}

/// A pod's container log (`kubectl logs`), empty while there is none.
fn logs(cluster: &Cluster, ns: &str, target: &str, container: Option<&str>) -> String {
    let mut args = vec!["-n", ns, "logs", target];
    if let Some(c) = container {
        args.extend(["-c", c]);
    }
    String::from_utf8_lossy(&cluster.kubectl_run(&args, None).stdout).into_owned()
}

#[test]
#[ignore = "needs the real cluster (.ci/real-cluster), as root; the test command runs it"]
fn the_exec_mode_job_runs_to_completion_once_the_provider_serves() {
    let cluster = cluster();
    let ns = cluster.namespace("job");
    let ca = TestCa::new();
    let slot = Reserved::new();
    let port = slot.port;
    ca_configmap(&cluster, &ns.name, &ca);
    cluster.kubectl_ok(
        &[
            "-n",
            &ns.name,
            "create",
            "secret",
            "generic",
            "vault-oidc-config",
            "--from-literal=token=test-only-token",
            "--from-literal=client-secret=test-only-client-secret",
        ],
        None,
    );
    let job_file = repo_root().join("deploy/kubernetes/job-exec.yaml");
    let mut job: Value = serde_json::from_str(
        &cluster.kubectl_ok(&["create", "--dry-run=client", "-o", "json", "-f", job_file.to_str().unwrap()], None),
    )
    .unwrap();
    // kubectl's client-side rendering names the default namespace; the Job goes in the test's.
    job["metadata"].as_object_mut().unwrap().remove("namespace");
    // What the test adds to the Job as written: the host's network (the node's only kind), the
    // local image, and how to reach and trust the provider on loopback. Nothing else changes.
    let pod = &mut job["spec"]["template"]["spec"];
    pod["hostNetwork"] = json!(true);
    pod["volumes"].as_array_mut().unwrap().push(json!({"name": "idp-ca", "configMap": {"name": "idp-ca"}}));
    let container = &mut pod["containers"][0];
    assert_eq!(container["command"], json!(["/usr/local/bin/wait-for-idp", "--fail-closed", "--timeout", "5m", "--"]));
    container["image"] = json!(job_image(&cluster));
    container["imagePullPolicy"] = json!("Never");
    let env = container["env"].as_array_mut().unwrap();
    assert!(env.iter().any(|e| e["name"] == "WAIT_FOR_IDP_ISSUER" && e["value"] == RECIPE_ISSUER), "{env:?}");
    env.push(json!({"name": "WAIT_FOR_IDP_CONNECT_TO", "value": format!("sso.example.com:443:127.0.0.1:{port}")}));
    env.push(json!({"name": "WAIT_FOR_IDP_CA_FILE", "value": format!("{CA_DIR}/ca.pem")}));
    container["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "idp-ca", "mountPath": CA_DIR, "readOnly": true}));
    cluster.kubectl_ok(&["-n", &ns.name, "create", "-f", "-"], Some(&job.to_string()));

    // The gate runs and finds nothing listening: the Job's pod waits, no attempt fails.
    cluster.wait_for("the Job's gate trying a provider that is not there", || {
        logs(&cluster, &ns.name, "job/vault-oidc-config", None).contains("connection refused")
    });
    let provider = recipe_provider(&ca, slot);
    cluster.wait_for("the Job to finish", || {
        let status = &cluster.get_json(&["-n", &ns.name, "job", "vault-oidc-config"])["status"];
        status["succeeded"].as_i64() == Some(1) || status["failed"].as_i64().unwrap_or(0) > 0
    });
    let status = cluster.get_json(&["-n", &ns.name, "job", "vault-oidc-config"])["status"].clone();
    let log = logs(&cluster, &ns.name, "job/vault-oidc-config", None);
    assert_eq!(status["succeeded"], 1, "the Job failed: {status}\n{log}");
    assert!(status["failed"].is_null(), "a failed attempt before the provider served: {status}\n{log}");
    let ready = log.find(&format!("ready: {RECIPE_ISSUER} after")).unwrap_or_else(|| panic!("no ready line:\n{log}"));
    let ran = log.find("vault write auth/oidc/config").unwrap_or_else(|| panic!("vault did not run:\n{log}"));
    assert!(ready < ran && log.contains("configured"), "the command ran before the gate's verdict:\n{log}");
    assert!(provider.count() > 0);
    cluster.assert_loopback_only();
}

#[test]
#[ignore = "needs the real cluster (.ci/real-cluster), as root; the test command runs it"]
fn the_kubectl_run_recipe_exits_with_the_gates_code() {
    let cluster = cluster();
    let ns = cluster.namespace("recipe");
    let ca = TestCa::new();
    ca_configmap(&cluster, &ns.name, &ca);
    let image = cluster.gate_image();
    let ready = recipe_provider(&ca, Reserved::new());
    let down = Provider::start(tls_mode(ca.leaf(&["sso.example.com"])), reply(|_, _| Reply::text(503, "starting")));

    let run = |port: u16| {
        let mut args: Vec<String> = vec!["-n".into(), ns.name.clone()];
        for arg in kubectl_run_recipe() {
            // What the test changes: the local image, and the host's network with the test CA
            // in the overrides; after `--`, how to reach and trust the provider on loopback.
            if arg.starts_with("--image=") {
                args.extend([format!("--image={image}"), "--image-pull-policy=Never".into()]);
            } else if let Some(overrides) = arg.strip_prefix("--overrides=") {
                let mut pod: Value = serde_json::from_str(overrides).unwrap();
                pod["spec"]["hostNetwork"] = json!(true);
                pod["spec"]["volumes"] = json!([{"name": "idp-ca", "configMap": {"name": "idp-ca"}}]);
                pod["spec"]["containers"][0]["volumeMounts"] =
                    json!([{"name": "idp-ca", "mountPath": CA_DIR, "readOnly": true}]);
                args.push(format!("--overrides={pod}"));
            } else {
                args.push(arg);
            }
        }
        assert_eq!(args.last().unwrap(), "--once", "{args:?}");
        let rule = format!("sso.example.com:443:127.0.0.1:{port}");
        let at = args.len() - 1;
        args.splice(at..at, ["--connect-to".into(), rule, "--ca-file".into(), format!("{CA_DIR}/ca.pem")]);
        let out = cluster.kubectl_run(&args.iter().map(String::as_str).collect::<Vec<_>>(), None);
        // --rm deletes the pod; the next run makes one of the same name.
        cluster.wait_for("the recipe's pod to be gone", || {
            !cluster.kubectl_run(&["-n", &ns.name, "get", "pod", "wait-for-idp"], None).status.success()
        });
        out
    };

    // The exit code is the pod's, which kubectl reads from its status. The output is not
    // asserted: `kubectl run -i` attaches after the container has started, and a gate that is
    // done in milliseconds may have said its last line before (kubectl then shows part of it).
    let out = run(ready.port());
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "against a ready provider:\n{text}");
    assert_eq!(ready.paths(), [format!("/realms/main{WELL_KNOWN}")], "{text}");

    let out = run(down.port());
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "against a provider answering 503, --once:\n{text}");
    assert_eq!(down.count(), 1, "--once asks once: {text}");
    cluster.assert_loopback_only();
}

/// deploy/policy/ applied with the local gate image, removed again when dropped (it is
/// cluster-wide).
struct Policy<'a>(&'a Cluster);

impl<'a> Policy<'a> {
    fn apply(cluster: &'a Cluster, image: &str) -> Policy<'a> {
        Policy::apply_edited(cluster, image, &|text| text.to_string())
    }

    /// The policy as `edit` makes it of deploy/policy/wait-for-idp.yaml, with the local image.
    fn apply_edited(cluster: &'a Cluster, image: &str, edit: &dyn Fn(&str) -> String) -> Policy<'a> {
        let text = edit(&read("deploy/policy/wait-for-idp.yaml"));
        assert!(text.contains(PLACEHOLDER_IMAGE));
        cluster.apply(&text.replace(PLACEHOLDER_IMAGE, image));
        Policy(cluster)
    }
}

/// `text` with its one `from` replaced by `to`: an edit the test makes to the shipped policy, which
/// must still find what it edits.
fn edited(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "deploy/policy/wait-for-idp.yaml no longer has {from:?}");
    text.replace(from, to)
}

/// The policy for Kubernetes 1.34 and 1.35 (admissionregistration.k8s.io/v1beta1), made by the
/// sed line the policy's header gives, run as written on the shipped file.
fn beta_policy(text: &str) -> String {
    let line = text.lines().map(|l| l.trim_start_matches('#').trim()).find(|l| l.starts_with("sed '"));
    let line = line.expect("the policy's header gives the sed line for 1.34 and 1.35");
    let (sed, rest) = line.split_once(" wait-for-idp.yaml").expect("sed ... wait-for-idp.yaml | kubectl apply -f -");
    assert_eq!(rest, " | kubectl apply -f -", "{line}");
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(sed)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{sed}");
    String::from_utf8(out.stdout).unwrap()
}

impl Drop for Policy<'_> {
    fn drop(&mut self) {
        let file = repo_root().join("deploy/policy/wait-for-idp.yaml");
        let _ = self.0.kubectl_run(&["delete", "--ignore-not-found", "-f", file.to_str().unwrap()], None);
    }
}

/// A pod (JSON) whose container `app` has `env` and `mounts`, with `labels` and `init` containers.
fn app_pod(name: &str, labels: Value, env: Value, init: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "automountServiceAccountToken": false,
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [
                {"name": "idp-ca", "configMap": {"name": "idp-ca"}},
                {"name": "cache", "emptyDir": {}}
            ],
            "initContainers": init,
            "containers": [{
                "name": "app", "image": "localhost/wait-for-idp/busybox:1",
                "env": env,
                "envFrom": [{"configMapRef": {"name": "proxy-settings"}}, {"secretRef": {"name": "oauth2-proxy"}}],
                "volumeMounts": [
                    {"name": "idp-ca", "mountPath": CA_DIR},
                    {"name": "cache", "mountPath": "/var/cache/app"}
                ],
                "securityContext": {
                    "runAsUser": 65532, "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"]}
                }
            }]
        }
    })
}

/// The init containers the API server would store for `pod` in `ns` (a server-side dry run).
fn injected(cluster: &Cluster, ns: &str, pod: &Value) -> Vec<Value> {
    let what = format!("pod {}", pod["metadata"]["name"]);
    let stored = server_dry_run(cluster, ns, &what, &pod.to_string()).remove(0);
    stored["spec"]["initContainers"].as_array().cloned().unwrap_or_default()
}

fn names(containers: &[Value]) -> Vec<&str> {
    containers.iter().map(|c| c["name"].as_str().unwrap()).collect()
}

#[test]
#[ignore = "needs the real cluster (.ci/real-cluster), as root; the test command runs it"]
fn the_policy_gates_opted_in_pods_that_set_the_issuer_and_only_those() {
    let cluster = cluster();
    let image = cluster.gate_image();
    let _policy = Policy::apply(&cluster, &image);
    let opted = cluster.namespace("opted-in");
    restrict(&cluster, &opted.name);
    cluster.kubectl_ok(&["label", "namespace", &opted.name, "wait-for-idp/inject=true"], None);
    let plain = cluster.namespace("plain");
    restrict(&cluster, &plain.name);

    let issuer = "https://sso.example.com/realms/main";
    let env = json!([
        {"name": "OAUTH2_PROXY_OIDC_ISSUER_URL", "value": issuer},
        {"name": "OAUTH2_PROXY_CLIENT_SECRET", "valueFrom": {"secretKeyRef": {"name": "oauth2-proxy", "key": "client-secret"}}},
        {"name": "OAUTH2_PROXY_PROVIDER_CA_FILES", "value": format!("{CA_DIR}/ca.pem")},
        {"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"},
        {"name": "NO_PROXY", "value": ".svc,.cluster.local"},
        {"name": "WAIT_FOR_IDP_TIMEOUT", "value": "2m"},
        {"name": "WAIT_FOR_IDP_SERVE", "value": ":9090"},
        {"name": "UPSTREAM", "value": "http://127.0.0.1:8080"}
    ]);
    // The policy takes effect once the API server has loaded it: wait for that event.
    let gated = app_pod("gated", json!({}), env.clone(), json!([]));
    cluster.wait_for("the policy to take effect", || !injected(&cluster, &opted.name, &gated).is_empty());

    // An opted-in namespace: the gate, last, with what it copies and nothing else, admitted
    // by Pod Security `restricted` after the mutation.
    let migrate = json!([{
        "name": "migrate", "image": "localhost/wait-for-idp/busybox:1",
        "securityContext": {"runAsUser": 65532, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}
    }]);
    let init = injected(&cluster, &opted.name, &app_pod("gated", json!({}), env.clone(), migrate.clone()));
    assert_eq!(names(&init), ["migrate", "wait-for-idp"], "{init:?}");
    let gate = &init[1];
    assert_eq!(gate["image"], image.as_str());
    let copied: Vec<&str> = gate["env"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    // The client secret is not copied, nor the Secret of envFrom; WAIT_FOR_IDP_SERVE is dropped,
    // and set empty (unset, to the gate) over what the copied ConfigMap may hold.
    assert_eq!(
        copied,
        [
            "OAUTH2_PROXY_OIDC_ISSUER_URL",
            "OAUTH2_PROXY_PROVIDER_CA_FILES",
            "HTTPS_PROXY",
            "NO_PROXY",
            "WAIT_FOR_IDP_TIMEOUT",
            "WAIT_FOR_IDP_SERVE"
        ],
        "{gate}"
    );
    assert_eq!(gate["env"][0]["value"], issuer);
    assert_eq!(gate["env"][5], json!({"name": "WAIT_FOR_IDP_SERVE"}), "{gate}");
    assert_eq!(gate["envFrom"], json!([{"configMapRef": {"name": "proxy-settings"}}]));
    // The ConfigMap's mount (the CA), not the emptyDir's.
    assert_eq!(gate["volumeMounts"], json!([{"name": "idp-ca", "mountPath": CA_DIR, "readOnly": true}]), "{gate}");
    assert_eq!(gate["securityContext"]["runAsNonRoot"], true);
    assert_eq!(gate["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(gate["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(gate["terminationMessagePolicy"], "FallbackToLogsOnError");
    assert!(gate.get("restartPolicy").is_none(), "the init-container form, not a sidecar: {gate}");

    // Left alone: a pod that sets no issuer (the provider itself), one that opts out, one that
    // is gated already; and an opted-in pod in a namespace that is not.
    let no_issuer = json!([{"name": "KC_HOSTNAME", "value": "sso.example.com"}]);
    assert!(injected(&cluster, &opted.name, &app_pod("provider", json!({}), no_issuer, json!([]))).is_empty());
    let out = json!({"wait-for-idp/inject": "false"});
    assert!(injected(&cluster, &opted.name, &app_pod("opted-out", out, env.clone(), json!([]))).is_empty());
    let own = json!([{
        "name": "wait-for-idp", "image": image, "args": ["--issuer", issuer],
        "securityContext": {"runAsUser": 65532, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}
    }]);
    let init = injected(&cluster, &opted.name, &app_pod("own-gate", json!({}), env.clone(), own));
    assert_eq!(names(&init), ["wait-for-idp"]);
    assert!(init[0].get("env").is_none(), "the pod's own gate was changed: {init:?}");
    assert!(injected(&cluster, &plain.name, &app_pod("not-asked", json!({}), env.clone(), json!([]))).is_empty());
    let asked = json!({"wait-for-idp/inject": "true"});
    let init = injected(&cluster, &plain.name, &app_pod("asked", asked.clone(), env.clone(), json!([])));
    assert_eq!(names(&init), ["wait-for-idp"]);
    // Both bindings match a pod that opts in inside an opted-in namespace: one gate all the same.
    assert_eq!(names(&injected(&cluster, &opted.name, &app_pod("both", asked, env, json!([])))), ["wait-for-idp"]);
}

#[test]
#[ignore = "needs the real cluster (.ci/real-cluster), as root; the test command runs it"]
fn a_deployment_without_the_gate_gets_it_from_the_policy_and_waits_for_the_provider() {
    let cluster = cluster();
    let image = cluster.gate_image();
    let _policy = Policy::apply(&cluster, &image);
    // Privileged: the node runs host-network pods only. Opted in by the namespace's label.
    let ns = cluster.namespace("policy");
    cluster.kubectl_ok(&["label", "namespace", &ns.name, "wait-for-idp/inject=true"], None);
    let ca = TestCa::new();
    ca_configmap(&cluster, &ns.name, &ca);
    let slot = Reserved::new();
    let issuer = slot.issuer("/realms/main");
    let probe =
        app_pod("probe", json!({}), json!([{"name": "OAUTH2_PROXY_OIDC_ISSUER_URL", "value": issuer}]), json!([]));
    cluster.wait_for("the policy to take effect", || !injected(&cluster, &ns.name, &probe).is_empty());

    // An application as the oauth2-proxy chart renders it with deploy/helm's values, minus the
    // gate: its issuer and CA in the environment, the CA mounted.
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "app"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "gated"}},
            "template": {
                "metadata": {"labels": {"app": "gated"}},
                "spec": {
                    "hostNetwork": true,
                    "terminationGracePeriodSeconds": 1,
                    "volumes": [{"name": "idp-ca", "configMap": {"name": "idp-ca"}}],
                    "containers": [{
                        "name": "app", "image": cluster.image("busybox"), "imagePullPolicy": "Never",
                        "command": ["/bin/sh", "-c", "exec sleep 3600"],
                        "env": [
                            {"name": "OAUTH2_PROXY_OIDC_ISSUER_URL", "value": issuer},
                            {"name": "OAUTH2_PROXY_PROVIDER_CA_FILES", "value": format!("{CA_DIR}/ca.pem")}
                        ],
                        "volumeMounts": [{"name": "idp-ca", "mountPath": CA_DIR, "readOnly": true}]
                    }]
                }
            }
        }
    });
    cluster.kubectl_ok(&["-n", &ns.name, "create", "-f", "-"], Some(&deployment.to_string()));
    let pod = || cluster.get_json(&["-n", &ns.name, "pods", "-l", "app=gated"])["items"][0].clone();
    cluster.wait_for("the pod's gate to try the provider", || {
        let p = pod();
        !p.is_null()
            && logs(&cluster, &ns.name, p["metadata"]["name"].as_str().unwrap(), Some("wait-for-idp"))
                .contains("connection refused")
    });
    let waiting = pod();
    let name = waiting["metadata"]["name"].as_str().unwrap().to_string();
    assert_eq!(names(waiting["spec"]["initContainers"].as_array().unwrap()), ["wait-for-idp"], "{waiting}");
    assert_eq!(waiting["status"]["phase"], "Pending", "{}", waiting["status"]);
    assert!(!waiting["status"]["initContainerStatuses"][0]["state"]["running"].is_null(), "{}", waiting["status"]);

    let provider = slot.listen(
        tls_mode(ca.leaf(&["localhost"])),
        serve_at(&format!("/realms/main{WELL_KNOWN}"), discovery_doc(&issuer)),
    );
    cluster.wait_for("the gated pod to run", || pod()["status"]["phase"] == "Running");
    let status = pod()["status"].clone();
    let gate = &status["initContainerStatuses"][0];
    assert_eq!(gate["state"]["terminated"]["exitCode"], 0, "{status}");
    assert_eq!(gate["restartCount"], 0, "the gate waited in one run: {status}");
    let log = logs(&cluster, &ns.name, &name, Some("wait-for-idp"));
    assert!(log.contains(&format!("ready: {issuer} after")), "{log}");
    assert!(provider.count() > 0);
    cluster.assert_loopback_only();
}

/// Every variable the gate reads from a guarded client's environment (the settings table's
/// fallbacks, Go's certificate and proxy variables) is one the policy copies: a new one in the
/// table must be added there too, or the injected gate checks less than the client uses.
#[test]
fn the_policy_copies_every_client_variable_the_gate_reads() {
    let policy = read("deploy/policy/wait-for-idp.yaml");
    let table = read("src/settings/table.rs");
    let fallbacks = table.split("fallback: Some(\"").skip(1).map(|s| &s[..s.find('"').unwrap()]);
    let go = ["SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"];
    for name in fallbacks.chain(go).chain(["NO_PROXY", "no_proxy"]) {
        assert!(policy.contains(&format!("'{name}'")), "deploy/policy/wait-for-idp.yaml does not copy {name}");
    }
    assert!(policy.contains("e.name.startsWith('WAIT_FOR_IDP_')"), "the gate's own settings are copied by prefix");
}

/// The injected gate's process, found on the node from the pod's status: its environment, as the
/// kubelet gave it (`/proc/PID/environ`), one `NAME=value` a line.
fn gate_environment(cluster: &Cluster, pod: &Value) -> Vec<String> {
    let id = pod["status"]["initContainerStatuses"][0]["containerID"].as_str().expect("the gate's container");
    let id = id.strip_prefix("containerd://").unwrap();
    let out = cluster.ctr().args(["tasks", "ls"]).output().unwrap();
    let tasks = String::from_utf8_lossy(&out.stdout);
    let pid = tasks.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some(id)).then(|| words.next().unwrap().to_string())
    });
    let pid = pid.unwrap_or_else(|| panic!("no task {id} on the node:\n{tasks}"));
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    String::from_utf8_lossy(&environ).split_terminator('\0').map(str::to_string).collect()
}

/// Issue 35 §5 and issue 36 ask 2, in a real pod on a real kubelet. The guarded container takes
/// its client and cookie secrets from a Secret through envFrom, its CA path (SSL_CERT_FILE) and a
/// WAIT_FOR_IDP_SERVE from a ConfigMap through envFrom, and sets WAIT_FOR_IDP_SERVE in its env
/// too. The injected gate's process holds none of the secrets (its environment, read on the node);
/// it trusts the private CA through the ConfigMap's path and the mount copied for it; and it exits
/// ready once the provider serves, so the pod runs instead of staying in Init.
#[test]
#[ignore = "needs the real cluster (.ci/real-cluster), as root; the test command runs it"]
fn an_injected_gate_gets_no_secret_trusts_a_ca_named_in_env_from_and_exits() {
    let cluster = cluster();
    let image = cluster.gate_image();
    let _policy = Policy::apply(&cluster, &image);
    let ns = cluster.namespace("least");
    cluster.kubectl_ok(&["label", "namespace", &ns.name, "wait-for-idp/inject=true"], None);
    let ca = TestCa::new();
    ca_configmap(&cluster, &ns.name, &ca);
    let (client_secret, cookie_secret) = ("client-secret-4f1d-c0ffee", "cookie-secret-9a7b-5eed0123456789");
    let literal = |name: &str, value: &str| format!("--from-literal={name}={value}");
    let secret = ["-n", &ns.name, "create", "secret", "generic", "oauth2-proxy"];
    let keys = [
        literal("OAUTH2_PROXY_CLIENT_ID", "oauth2-proxy"),
        literal("OAUTH2_PROXY_CLIENT_SECRET", client_secret),
        literal("OAUTH2_PROXY_COOKIE_SECRET", cookie_secret),
    ];
    cluster.kubectl_ok(&[&secret[..], &keys.iter().map(String::as_str).collect::<Vec<_>>()].concat(), None);
    let settings = [literal("SSL_CERT_FILE", &format!("{CA_DIR}/ca.pem")), literal("WAIT_FOR_IDP_SERVE", ":9090")];
    let map = ["-n", &ns.name, "create", "configmap", "proxy-settings"];
    cluster.kubectl_ok(&[&map[..], &settings.iter().map(String::as_str).collect::<Vec<_>>()].concat(), None);
    let slot = Reserved::new();
    let issuer = slot.issuer("/realms/main");
    let env = json!([
        {"name": "OAUTH2_PROXY_OIDC_ISSUER_URL", "value": issuer},
        {"name": "OAUTH2_PROXY_CLIENT_SECRET", "valueFrom": {"secretKeyRef": {"name": "oauth2-proxy", "key": "OAUTH2_PROXY_CLIENT_SECRET"}}},
        {"name": "WAIT_FOR_IDP_SERVE", "value": ":9091"}
    ]);
    let probe = app_pod("probe", json!({}), env.clone(), json!([]));
    cluster.wait_for("the policy to take effect", || !injected(&cluster, &ns.name, &probe).is_empty());

    let mut pod = app_pod("guarded", json!({}), env, json!([]));
    pod["spec"]["hostNetwork"] = json!(true);
    pod["spec"]["terminationGracePeriodSeconds"] = json!(1);
    let app = &mut pod["spec"]["containers"][0];
    app["image"] = json!(cluster.image("busybox"));
    app["imagePullPolicy"] = json!("Never");
    app["command"] = json!(["/bin/sh", "-c", "exec sleep 3600"]);
    cluster.kubectl_ok(&["-n", &ns.name, "create", "-f", "-"], Some(&pod.to_string()));
    let get = || cluster.get_json(&["-n", &ns.name, "pod", "guarded"]);
    cluster.wait_for("the injected gate to try the provider", || {
        logs(&cluster, &ns.name, "guarded", Some("wait-for-idp")).contains("connection refused")
    });

    let waiting = get();
    let gate = &waiting["spec"]["initContainers"][0];
    assert_eq!(gate["name"], "wait-for-idp", "{waiting}");
    assert_eq!(gate["envFrom"], json!([{"configMapRef": {"name": "proxy-settings"}}]), "{gate}");
    let environ = gate_environment(&cluster, &waiting);
    let text = environ.join("\n");
    for secret in [client_secret, cookie_secret] {
        assert!(!text.contains(secret), "a secret reached the gate's environment:\n{text}");
    }
    assert!(!text.contains("OAUTH2_PROXY_CLIENT_"), "{text}");
    for expected in [format!("OAUTH2_PROXY_OIDC_ISSUER_URL={issuer}"), format!("SSL_CERT_FILE={CA_DIR}/ca.pem")] {
        assert!(environ.contains(&expected), "{expected} missing from the gate's environment:\n{text}");
    }
    // The ConfigMap's :9090 is there, and overridden by the empty value after it (the kubelet
    // gives the last), which the gate reads as unset.
    assert!(environ.contains(&"WAIT_FOR_IDP_SERVE=".to_string()), "{text}");
    assert_eq!(gate["volumeMounts"], json!([{"name": "idp-ca", "mountPath": CA_DIR, "readOnly": true}]), "{gate}");

    let provider = slot.listen(
        tls_mode(ca.leaf(&["localhost"])),
        serve_at(&format!("/realms/main{WELL_KNOWN}"), discovery_doc(&issuer)),
    );
    cluster.wait_for("the pod to run", || get()["status"]["phase"] == "Running");
    let status = get()["status"].clone();
    let ended = &status["initContainerStatuses"][0]["state"]["terminated"];
    assert_eq!(ended["exitCode"], 0, "{status}");
    let message = ended["message"].as_str().unwrap_or_default();
    assert!(message.starts_with(&format!("ready: {issuer} after")), "trusted through SSL_CERT_FILE: {message}");
    assert!(provider.count() > 0);
    cluster.assert_loopback_only();
}

/// What a malformed pod gets (issue 36 ask 2, `failurePolicy: Fail`): no pod the API server can
/// decode makes the policy's expressions fail, so a malformed opted-in pod gets the API server's
/// own validation error, word for word as without the policy. A broken policy (here: one that
/// reads `envFrom` without `?`, which a pod without envFrom lacks) is what fails: with `Fail` the
/// pod is refused naming the policy and the error; with `Ignore` it is admitted ungated, without a
/// word. And the v1beta1 variant (Kubernetes 1.34 and 1.35), as the header's sed line makes it, is
/// accepted by the v1beta1 API and injects the same gate.
#[test]
#[ignore = "needs the real cluster (.ci/real-cluster), as root; the test command runs it"]
fn a_malformed_pod_gets_the_api_servers_own_error_and_a_broken_policy_is_named() {
    let cluster = cluster();
    let image = cluster.gate_image();
    let ns = cluster.namespace("malformed");
    cluster.kubectl_ok(&["label", "namespace", &ns.name, "wait-for-idp/inject=true"], None);
    let issuer = json!({"name": "OAUTH2_PROXY_OIDC_ISSUER_URL", "value": RECIPE_ISSUER});
    let pod = |name: &str, container: Value| {
        let mut c = json!({"name": "app", "image": "localhost/wait-for-idp/busybox:1", "env": [issuer]});
        c.as_object_mut().unwrap().extend(container.as_object().unwrap().clone());
        // No token volume: its name is random in each dry run, and the gates are compared.
        let spec = json!({"automountServiceAccountToken": false, "containers": [c]});
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
    };
    let malformed = [
        pod("no-name", json!({"env": [{"value": "a value without a name"}, issuer]})),
        pod("no-volume", json!({"volumeMounts": [{"name": "nowhere"}]})),
        pod("no-source", json!({"envFrom": [{"prefix": "X_"}]})),
        pod(
            "bad-path",
            json!({"env": [issuer, {"name": "SSL_CERT_DIR", "value": "::,"}], "volumeMounts": [{"name": "v", "mountPath": "relative"}]}),
        ),
    ];
    let refusal = |pod: &Value| {
        let out =
            cluster.kubectl_run(&["-n", &ns.name, "create", "--dry-run=server", "-f", "-"], Some(&pod.to_string()));
        assert!(!out.status.success(), "admitted: {pod}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let without: Vec<String> = malformed.iter().map(refusal).collect();
    let ok = pod("ok", json!({}));
    let gated = || injected(&cluster, &ns.name, &ok).iter().any(|c| c["name"] == "wait-for-idp");
    {
        let _policy = Policy::apply(&cluster, &image);
        cluster.wait_for("the policy to take effect", gated);
        for (pod, before) in malformed.iter().zip(&without) {
            assert_eq!(&refusal(pod), before, "the policy changed the API server's answer");
            assert!(!before.contains("policy"), "{before}");
        }
        // The v1beta1 variant: the same object, through the other version.
        let beta = beta_policy(&read("deploy/policy/wait-for-idp.yaml"));
        let gate = injected(&cluster, &ns.name, &ok);
        cluster.apply(&beta.replace(PLACEHOLDER_IMAGE, &image));
        let served =
            cluster.get_json(&["mutatingadmissionpolicies.v1beta1.admissionregistration.k8s.io", "wait-for-idp"]);
        assert_eq!(served["apiVersion"], "admissionregistration.k8s.io/v1beta1");
        assert_eq!(injected(&cluster, &ns.name, &ok), gate);
    }
    let broken = |text: &str| edited(text, "variables.guarded.?envFrom.orValue([])", "variables.guarded.envFrom");
    let _broken = Policy::apply_edited(&cluster, &image, &broken);
    let admitted =
        || cluster.kubectl_run(&["-n", &ns.name, "create", "--dry-run=server", "-f", "-"], Some(&ok.to_string()));
    cluster.wait_for("the broken policy to refuse the pod", || !admitted().status.success());
    let refused = String::from_utf8_lossy(&admitted().stderr).into_owned();
    assert!(
        refused.contains("policy 'wait-for-idp' with binding 'wait-for-idp-namespaces' denied request"),
        "{refused}"
    );
    assert!(refused.contains("no such key: envFrom"), "{refused}");
    let ignore = |text: &str| edited(&broken(text), "failurePolicy: Fail", "failurePolicy: Ignore");
    let _ignored = Policy::apply_edited(&cluster, &image, &ignore);
    cluster.wait_for("the broken policy to let the pod through", || admitted().status.success());
    assert!(injected(&cluster, &ns.name, &ok).is_empty(), "admitted ungated, without a word");
}
