//! A real single-node Kubernetes on loopback, for the tests that need the kubelet, the API server
//! or admission themselves: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
//! containerd and the kubelet, built and pinned by `.ci/real-cluster`, started by
//! tests/real/cluster/cluster.sh (its supervisor).
//!
//! One cluster per test process, started by the first test that asks ([`cluster`]) and shared:
//! a start costs 15-30 s and a teardown 10 s, which the suite's 10-minute budget cannot pay per
//! test. Tests take turns (each [`cluster`] call holds the turn until its [`Turn`] drops), since
//! host-network pods share the machine's ports and the cold-boot timings must not share two cores
//! with another scenario. Each test works in a namespace of its own ([`Turn::namespace`]).
//!
//! The supervisor takes a machine-wide lock (`/tmp/wait-for-idp-cluster.lock`): two clusters on
//! one machine collide on ports, the containerd socket and cgroups, so a second test process waits
//! until the first one's cluster is down. It tears the cluster down when this process exits,
//! whatever way (its stdin closes): each component stopped by PID, mounts and cgroups removed.
//!
//! The network rule, which every test keeps: host-network pods only (no pod network, no
//! kube-proxy); probes name `host: 127.0.0.1` or are `exec`; nothing dials the node's address
//! (the machine's own interface, since the kubelet refuses a loopback node IP), a pod IP or a
//! Service IP. [`Turn::assert_loopback_only`] checks it with `ss`.
//!
//! A component that cannot run fails the test with its log: never a skip.

use super::real_peers::real_dir;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The API server, as every client in the tests reaches it.
pub const API_SERVER: &str = "https://127.0.0.1:6443";
/// The API server's service-account issuer (tests/real/cluster/cluster.sh): neither kubeadm's
/// `https://kubernetes.default.svc.cluster.local` nor the API server's own URL, as on EKS, GKE or
/// AKS. Only ever compared as text: nothing dials it.
pub const SA_ISSUER: &str = "https://oidc.cluster.test/id/wait-for-idp";
/// The node's name (its host name, which resolves to 127.0.0.1 everywhere).
pub const NODE: &str = "localhost";
/// The kubelet's crash-loop back-off cap in the suite (the KubeletConfiguration's
/// `crashLoopBackOff.maxContainerRestartPeriod`): scenarios that do not measure the back-off run
/// through it quickly. bench/ sets `WAIT_FOR_IDP_CLUSTER_BACKOFF`: `default` for the kubelet's own
/// (10 s doubling to 5 min), or another cap (`10s`, `1s`) as a user would set it.
pub const SUITE_MAX_RESTART_PERIOD: &str = "2s";
/// Where the cluster lives: fixed, as its ports are, and guarded by the lock.
const WORK_DIR: &str = "/tmp/wait-for-idp-cluster";
/// How long a wait on the cluster may take before the test calls it hung. Each wait is for an
/// event (a status, a log line); this bound only stops a hang from holding the suite.
pub const CLUSTER_HANG_BOUND: Duration = Duration::from_secs(10 * 60);

/// The running cluster, shared by the whole test process.
pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    supervisor_log: PathBuf,
    max_restart_period: Option<String>,
    control: Mutex<Supervisor>,
}

struct Supervisor {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
static TURN: Mutex<()> = Mutex::new(());

/// This test's turn on the cluster, which is started first if it is not running yet.
pub fn cluster() -> Turn {
    let turn = TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match CLUSTER.get_or_init(Cluster::boot) {
        Ok(cluster) => Turn { cluster, _turn: turn },
        Err(why) => panic!("{why}"),
    }
}

/// One test's exclusive use of the cluster; it dereferences to the [`Cluster`].
pub struct Turn {
    cluster: &'static Cluster,
    _turn: MutexGuard<'static, ()>,
}

impl std::ops::Deref for Turn {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        self.cluster
    }
}

impl Cluster {
    fn boot() -> Result<Cluster, String> {
        let real = real_dir().join("cluster");
        let bin = real.join("bin");
        for name in ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl"] {
            if !bin.join(name).exists() {
                return Err(format!(
                    "{} is not built: run `bash .ci/real-peers && bash .ci/real-cluster` (the test command does)",
                    bin.join(name).display()
                ));
            }
        }
        let supervisor_log = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cluster-{}.log", std::process::id()));
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real/cluster/cluster.sh");
        let max_restart_period = match std::env::var("WAIT_FOR_IDP_CLUSTER_BACKOFF") {
            Ok(period) if period == "default" => None,
            Ok(period) if !period.is_empty() => Some(period),
            _ => Some(SUITE_MAX_RESTART_PERIOD.to_string()),
        };
        let mut cmd = Command::new("bash");
        cmd.arg(script).arg(&bin).arg(real.join("images")).arg(WORK_DIR);
        cmd.env("WFI_CLUSTER_MAX_RESTART_PERIOD", max_restart_period.as_deref().unwrap_or(""));
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        cmd.stderr(std::fs::File::create(&supervisor_log).map_err(|e| e.to_string())?);
        let mut child = cmd.spawn().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let cluster = Cluster {
            bin,
            dir: PathBuf::from(WORK_DIR),
            supervisor_log,
            max_restart_period,
            control: Mutex::new(Supervisor { child, stdin, stdout }),
        };
        let started = Instant::now();
        let answer = cluster.control.lock().unwrap().read_line();
        if answer == "ready" {
            eprintln!("cluster: up in {:.1} s", started.elapsed().as_secs_f64());
            return Ok(cluster);
        }
        Err(cluster.failure(&format!("the cluster did not start: {answer}")))
    }

    /// A failure message: `what`, the supervisor's log and the tail of each component's log.
    pub fn failure(&self, what: &str) -> String {
        let mut text = format!("{what}\n--- supervisor ({})\n", self.supervisor_log.display());
        text += &tail(&std::fs::read_to_string(&self.supervisor_log).unwrap_or_default(), 30);
        for name in ["etcd", "apiserver", "containerd", "kubelet", "kcm", "scheduler"] {
            let log = self.log_path(name);
            let body = std::fs::read_to_string(&log).unwrap_or_default();
            text += &format!("\n--- {name} ({})\n{}", log.display(), tail(&body, 25));
        }
        text
    }

    /// A component's log file (etcd, apiserver, containerd, kubelet, kcm, scheduler).
    pub fn log_path(&self, component: &str) -> PathBuf {
        self.dir.join("logs").join(format!("{component}.log"))
    }

    /// The kubelet's crash-loop back-off cap, or None for the kubelet's default.
    pub fn max_restart_period(&self) -> Option<&str> {
        self.max_restart_period.as_deref()
    }

    /// The cluster administrator's kubeconfig (system:masters), for kubectl or helm.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("pki/admin.kubeconfig")
    }

    /// The cluster's CA certificate (what pods get in the `kube-root-ca.crt` ConfigMap).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("pki/ca.crt")
    }

    /// kubectl (v1.36.3, built with the cluster) as the administrator.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(self.bin.join("kubectl"));
        cmd.arg(format!("--kubeconfig={}", self.kubeconfig().display()));
        cmd
    }

    /// Runs kubectl with `args` (and `stdin`, if any); its stdout, or a panic with its stderr.
    pub fn kubectl_ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.kubectl_run(args, stdin);
        assert!(
            out.status.success(),
            "kubectl {} failed: {}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs kubectl with `args` (and `stdin`, if any), whatever its outcome.
    pub fn kubectl_run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = self.kubectl();
        cmd.args(args).stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot run kubectl: {e}"));
        if let Some(text) = stdin {
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        }
        child.wait_with_output().unwrap()
    }

    /// `kubectl apply -f -` of `yaml`.
    pub fn apply(&self, yaml: &str) {
        self.kubectl_ok(&["apply", "-f", "-"], Some(yaml));
    }

    /// `kubectl get ARGS -o json`, parsed.
    pub fn get_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.kubectl_ok(&all, None)).expect("kubectl printed JSON")
    }

    /// Helm (from the test command's cache) talking to this cluster as the administrator.
    pub fn helm(&self) -> Command {
        let helm = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/cache/bin/helm/helm");
        assert!(helm.exists(), "{} is missing: run the test command (.ci/test), which installs helm", helm.display());
        let mut cmd = Command::new(helm);
        cmd.env("KUBECONFIG", self.kubeconfig()).env("HELM_CACHE_HOME", self.dir.join("helm/cache"));
        cmd.env("HELM_CONFIG_HOME", self.dir.join("helm/config")).env("HELM_DATA_HOME", self.dir.join("helm/data"));
        cmd
    }

    /// A fresh namespace for one test, deleted (without waiting) when the value drops. It allows
    /// privileged pods: host networking is what this node runs.
    pub fn namespace(&self, prefix: &str) -> Namespace<'_> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{prefix}-{}-{n}", std::process::id());
        self.apply(&format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels:\n    \
             pod-security.kubernetes.io/enforce: privileged\n"
        ));
        self.wait_for(&format!("service account {name}/default"), || {
            self.kubectl_run(&["-n", &name, "get", "serviceaccount", "default"], None).status.success()
        });
        Namespace { cluster: self, name }
    }

    /// An image that `.ci/real-cluster` built and the fixture imported: `pause`, `busybox`
    /// (Debian's static one, /bin/sh and its applets), `oauth2-proxy`, `jwks-consumer`,
    /// `thv-proxyrunner`.
    pub fn image(&self, name: &str) -> String {
        format!("localhost/wait-for-idp/{name}:1")
    }

    /// The gate's own image: the Dockerfile's final stage over the static amd64 binary of this
    /// tree, built once per process and imported into the node.
    pub fn gate_image(&self) -> String {
        static GATE: OnceLock<String> = OnceLock::new();
        GATE.get_or_init(|| {
            let built = crate::image::image("amd64");
            let name = "localhost/wait-for-idp/gate:test";
            let archive = self.dir.join("gate.tar");
            let _ = std::fs::remove_file(&archive);
            self.import_from_buildah(&built, name, &archive);
            name.to_string()
        })
        .clone()
    }

    /// Takes an image from buildah's storage into the node's as `name`, through an OCI archive
    /// at `archive`.
    pub fn import_from_buildah(&self, image: &str, name: &str, archive: &Path) {
        let out = crate::image::buildah()
            .arg("push")
            .arg(image)
            .arg(format!("oci-archive:{}:{name}", archive.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "buildah push {image}: {}", String::from_utf8_lossy(&out.stderr));
        self.import_image(archive);
    }

    /// Imports an OCI archive into the node's image store (`ctr images import`); pods use it with
    /// `imagePullPolicy: Never`.
    pub fn import_image(&self, archive: &Path) {
        let out = self.ctr().args(["images", "import"]).arg(archive).output().unwrap();
        assert!(
            out.status.success(),
            "ctr images import {} failed: {}",
            archive.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `ctr` on the node's containerd, in the kubelet's namespace (`k8s.io`).
    pub fn ctr(&self) -> Command {
        let mut cmd = Command::new(self.bin.join("ctr"));
        cmd.arg("--address").arg(self.dir.join("run/containerd/containerd.sock")).args(["-n", "k8s.io"]);
        cmd
    }

    /// Kills the sandbox (pause) of every pod in namespace `ns` on the node, as a node's restart
    /// would: the kubelet makes new sandboxes and runs each pod's init containers again, without
    /// the API server if it is away. Returns how many it killed.
    pub fn kill_pod_sandboxes(&self, ns: &str) -> usize {
        let filter = format!("labels.\"io.kubernetes.pod.namespace\"=={ns},labels.\"io.cri-containerd.kind\"==sandbox");
        let out = self.ctr().args(["containers", "ls", "-q", &filter]).output().unwrap();
        assert!(out.status.success(), "ctr containers ls: {}", String::from_utf8_lossy(&out.stderr));
        let ids: Vec<String> = String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_string).collect();
        let mut killed = 0;
        for id in &ids {
            let out = self.ctr().args(["tasks", "kill", "-s", "SIGKILL", id]).output().unwrap();
            // A sandbox already stopped has no task to kill.
            killed += usize::from(out.status.success());
        }
        killed
    }

    /// The highest attempt number of `container` in namespace `ns` on the node (its restart
    /// count as the kubelet numbers its log files), read from the kubelet's log directory: it
    /// counts while the API server is away.
    pub fn container_attempts_on_node(&self, ns: &str, container: &str) -> Option<u64> {
        let logs = self.dir.join("data/pod-logs");
        let prefix = format!("{ns}_");
        std::fs::read_dir(logs)
            .ok()?
            .flatten()
            .filter(|pod| pod.file_name().to_string_lossy().starts_with(&prefix))
            .filter_map(|pod| std::fs::read_dir(pod.path().join(container)).ok())
            .flat_map(|files| files.flatten())
            .filter_map(|f| f.file_name().to_string_lossy().strip_suffix(".log")?.parse::<u64>().ok())
            .max()
    }

    /// Stops a component (by its PID): `apiserver`, `etcd`, `kubelet`, `kcm`, `scheduler`,
    /// `containerd`. Returns when it has exited.
    pub fn stop(&self, component: &str) {
        self.command(&format!("stop {component}"));
    }

    /// Starts a stopped component again, as it first ran; returns once it is launched (wait for
    /// whatever event the test needs, e.g. [`Cluster::wait_api_ready`]).
    pub fn start(&self, component: &str) {
        self.command(&format!("start {component}"));
    }

    fn command(&self, line: &str) {
        let mut control = self.control.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        writeln!(control.stdin, "{line}").and_then(|()| control.stdin.flush()).expect("the supervisor reads");
        let answer = control.read_line();
        drop(control);
        assert_eq!(answer, "ok", "{}", self.failure(&format!("`{line}` failed")));
    }

    /// Waits until the API server answers `/readyz`.
    pub fn wait_api_ready(&self) {
        self.wait_for("the API server's /readyz", || {
            self.kubectl_run(&["get", "--raw", "/readyz"], None).status.success()
        });
    }

    /// Polls `ready` until it holds; a hang ([`CLUSTER_HANG_BOUND`]) fails with the logs.
    pub fn wait_for(&self, what: &str, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + CLUSTER_HANG_BOUND;
        while !ready() {
            assert!(Instant::now() < deadline, "{}", self.failure(&format!("no {what} in {CLUSTER_HANG_BOUND:?}")));
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The TCP connections of the cluster's processes (the components, and everything in the
    /// containers their shims run) whose peer is not a loopback address: the network rule says
    /// there are none.
    pub fn non_loopback_connections(&self) -> Vec<String> {
        let ours = self.process_tree();
        let out = Command::new("ss").args(["-tnpH"]).output().expect("ss (iproute2) runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let peer = fields.get(4).copied().unwrap_or("");
                let pids = line.split("pid=").skip(1).filter_map(|s| s.split([',', ')']).next()?.parse::<u32>().ok());
                !is_loopback(peer) && pids.into_iter().any(|p| ours.contains(&p))
            })
            .map(str::to_string)
            .collect()
    }

    /// Asserts [`Cluster::non_loopback_connections`] is empty.
    pub fn assert_loopback_only(&self) {
        let found = self.non_loopback_connections();
        assert!(found.is_empty(), "connections with a non-loopback peer:\n{}", found.join("\n"));
    }

    /// The PIDs of the components, of this containerd's shims, and of all their descendants.
    fn process_tree(&self) -> Vec<u32> {
        let shim = self.bin.join("containerd-shim-runc-v2");
        let mut parents = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse().ok()).unwrap_or(0);
            let exe = std::fs::read_link(entry.path().join("exe")).unwrap_or_default();
            parents.push((pid, ppid, exe.starts_with(&self.bin) || exe == shim));
        }
        let mut ours: Vec<u32> = parents.iter().filter(|p| p.2).map(|p| p.0).collect();
        loop {
            let more: Vec<u32> =
                parents.iter().filter(|p| !ours.contains(&p.0) && ours.contains(&p.1)).map(|p| p.0).collect();
            if more.is_empty() {
                return ours;
            }
            ours.extend(more);
        }
    }
}

impl Supervisor {
    /// The supervisor's next line (`ready`, `ok`, or why not); its exit reads as "exited".
    fn read_line(&mut self) -> String {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(n) if n > 0 => line.trim_end().to_string(),
            _ => format!("the supervisor exited ({:?})", self.child.wait()),
        }
    }
}

/// A namespace of one test's own, deleted when dropped (the namespace controller finishes
/// in the background; pods are killed at once).
pub struct Namespace<'a> {
    cluster: &'a Cluster,
    pub name: String,
}

impl Drop for Namespace<'_> {
    fn drop(&mut self) {
        let ns = self.name.as_str();
        let _ = self.cluster.kubectl_run(&["-n", ns, "delete", "pods", "--all", "--grace-period=0", "--force"], None);
        let _ = self.cluster.kubectl_run(&["delete", "namespace", ns, "--wait=false"], None);
    }
}

fn is_loopback(peer: &str) -> bool {
    let host = peer.rsplit_once(':').map_or(peer, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']').trim_start_matches("::ffff:");
    host.starts_with("127.") || host == "::1" || host == "*"
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
