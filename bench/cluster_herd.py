#!/usr/bin/env python3
"""A herd on one node (issue 27, §2.6): as many gate pods as a real kubelet admits (the fixture's
node takes 250 pods), each holding its pod in Init, wait on one provider that comes up late.
This is the cluster-scale figure that bench.py's herd (processes started together) stands in for.

The cluster is the test suite's own (tests/real/cluster/cluster.sh, built by .ci/real-cluster):
single node, loopback only, host-network pods. The provider is bench.py's nginx, which logs every
request with its time and the asking pod; it answers 503 while the herd starts, then for
--steady seconds after every gate has asked once, then serves the document.

Measured, as bench.py's herd measures it, over the steady 503 window (every gate running):
requests per second (all gates, and per gate) and the burst factor (the busiest 100 ms over the
mean). Then, from the API (a watch on the pods): the time from "provider serves" to the last pod
Running, with the median and p95 over the pods; and from the provider's log, each gate's own lag
(its first 200 after "serves").

Usage (as root, after `bash .ci/real-peers && bash .ci/real-cluster`, with nginx and buildah):
  python3 bench/cluster_herd.py --bin target/x86_64-unknown-linux-musl/release/wait-for-idp
Prints one Markdown table on stdout, progress on stderr.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import bench
import harness

ROOT = Path(__file__).resolve().parents[1]
WORK = "/tmp/wait-for-idp-cluster"
NS = "herd"
PAUSE = "localhost/wait-for-idp/pause:1"
GATE = "localhost/wait-for-idp/gate:bench"


def real_dir():
    return Path(os.environ.get("WAIT_FOR_IDP_REAL", ROOT / ".ci" / "cache" / "real"))


class Cluster:
    """The fixture's supervisor: started here, torn down when its stdin closes."""

    def __init__(self):
        real = real_dir() / "cluster"
        self.bin = real / "bin"
        if not (self.bin / "kube-apiserver").exists():
            raise SystemExit(f"{self.bin}/kube-apiserver is missing: run `bash .ci/real-peers && bash .ci/real-cluster`")
        self.log = open(Path(tempfile.gettempdir()) / f"cluster-herd-{os.getpid()}.log", "w")
        env = {**os.environ, "WFI_CLUSTER_MAX_RESTART_PERIOD": ""}
        self.proc = subprocess.Popen(["bash", ROOT / "tests/real/cluster/cluster.sh", self.bin, real / "images", WORK],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        started = time.monotonic()
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"the cluster did not start: {line!r} (see {self.log.name} and {WORK}/logs)")
        harness.progress(f"cluster up in {time.monotonic() - started:.1f} s")

    def kubectl(self, *args, stdin=None, check=True):
        out = subprocess.run([self.bin / "kubectl", f"--kubeconfig={WORK}/pki/admin.kubeconfig", *args],
                             input=stdin, capture_output=True, text=True)
        if check and out.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(map(str, args))}: {out.stderr}")
        return out.stdout

    def import_image(self, archive):
        subprocess.run([self.bin / "ctr", "--address", f"{WORK}/run/containerd/containerd.sock", "-n", "k8s.io",
                        "images", "import", archive], check=True, capture_output=True)

    def down(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=300)


def gate_image(cluster, binary):
    """The Dockerfile's final stage over `binary`, imported into the node."""
    buildah = ["buildah", "--storage-driver", "vfs"]
    with tempfile.TemporaryDirectory() as ctx:
        (Path(ctx) / "dist" / "amd64").mkdir(parents=True)
        subprocess.run(["cp", binary, Path(ctx) / "dist" / "amd64" / "wait-for-idp"], check=True)
        subprocess.run([*buildah, "build", "-q", "--isolation", "chroot", "--build-arg", "BIN_STAGE=prebuilt",
                        "--build-arg", "TARGETARCH=amd64", "-f", ROOT / "Dockerfile", "-t", GATE, ctx],
                       check=True, capture_output=True)
        archive = Path(ctx) / "gate.tar"
        subprocess.run([*buildah, "push", GATE, f"oci-archive:{archive}:{GATE}"], check=True, capture_output=True)
        cluster.import_image(archive)


def deployment(n, server):
    """n host-network pods: the gate as init container (its discovery URL names the pod, so the
    provider's log tells the gates apart), pause as the application."""
    env = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "WAIT_FOR_IDP_ISSUER", "value": server.issuer},
        {"name": "WAIT_FOR_IDP_DISCOVERY_URL",
         "value": f"{server.issuer}/.well-known/openid-configuration?gate=$(POD_NAME)"},
        {"name": "WAIT_FOR_IDP_CA_FILE", "value": "/etc/idp-ca/ca.pem"},
        {"name": "WAIT_FOR_IDP_TIMEOUT", "value": "30m"},
        {"name": "WAIT_FOR_IDP_FAIL_CLOSED", "value": "true"},
    ]
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "herd", "namespace": NS},
        "spec": {
            "replicas": n, "selector": {"matchLabels": {"app": "herd"}},
            "template": {
                "metadata": {"labels": {"app": "herd"}},
                "spec": {
                    "hostNetwork": True, "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "volumes": [{"name": "idp-ca", "configMap": {"name": "idp-ca"}}],
                    "initContainers": [{"name": "wait-for-idp", "image": GATE, "imagePullPolicy": "Never", "env": env,
                                        "volumeMounts": [{"name": "idp-ca", "mountPath": "/etc/idp-ca"}]}],
                    "containers": [{"name": "app", "image": PAUSE, "imagePullPolicy": "Never"}],
                },
            },
        },
    }


class Watch:
    """When each pod was first seen Running, by a watch on the API (time of arrival here)."""

    def __init__(self, cluster):
        self.running, self.lock = {}, threading.Lock()
        self.proc = subprocess.Popen(
            [cluster.bin / "kubectl", f"--kubeconfig={WORK}/pki/admin.kubeconfig", "-n", NS, "get", "pods", "-w",
             "-o", "jsonpath={.metadata.name} {.status.phase}{\"\\n\"}"],
            stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.proc.stdout:
            now = time.time()
            parts = line.split()
            if len(parts) == 2 and parts[1] == "Running":
                with self.lock:
                    self.running.setdefault(parts[0], now)

    def count(self):
        with self.lock:
            return len(self.running)

    def stop(self):
        self.proc.kill()


def capacity(cluster):
    """Pods the node still admits: its allocatable pods less those already bound to it."""
    node = json.loads(cluster.kubectl("get", "nodes", "-o", "json"))["items"][0]
    pods = json.loads(cluster.kubectl("get", "pods", "-A", "-o", "json"))["items"]
    return int(node["status"]["allocatable"]["pods"]) - len(pods), node["metadata"]["name"]


def slices_of(times, start, end):
    """Requests per 100 ms over whole slices of [start, end)."""
    slices = [0] * int((end - start) * 10)
    for t in times:
        k = int((t - start) * 10)
        if 0 <= k < len(slices):
            slices[k] += 1
    return slices


def run(args, cluster, certs, rows):
    n, node = capacity(cluster)
    if args.pods:
        n = min(n, args.pods)
    harness.progress(f"herd of {n} pods on node {node}")
    work = Path(tempfile.mkdtemp())
    server = harness.Nginx(certs, work)
    cluster.kubectl("create", "namespace", NS)
    cluster.kubectl("label", "namespace", NS, "pod-security.kubernetes.io/enforce=privileged")
    cluster.kubectl("-n", NS, "create", "configmap", "idp-ca", f"--from-file=ca.pem={certs / 'ca.pem'}")
    for _ in range(100):
        if cluster.kubectl("-n", NS, "get", "serviceaccount", "default", check=False):
            break
        time.sleep(0.2)
    watch = Watch(cluster)
    created = time.time()
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(deployment(n, server)))

    # The herd starts: wait until every gate has asked once (the provider answers 503).
    seen = 0
    while True:
        asked = {client for _, status, client in server.requests()}
        if len(asked) >= n:
            break
        if len(asked) // 25 != seen // 25:
            harness.progress(f"{len(asked)} gates asking, {watch.count()} pods running, {time.time() - created:.0f} s")
        seen = len(asked)
        time.sleep(1)
    all_up = time.time()
    harness.progress(f"all {n} gates asking after {all_up - created:.1f} s; {args.steady} s of 503 more")
    time.sleep(args.steady)
    server.ready()
    ready = time.time()
    while watch.count() < n:
        time.sleep(0.5)
    last = max(watch.running.values())
    time.sleep(1)
    requests = server.requests()
    watch.stop()
    server.stop()

    steady = [t for t, status, _ in requests if status == 503 and all_up <= t < ready]
    slices = slices_of(steady, all_up, ready)
    mean = sum(slices) / len(slices)
    # The same over whole seconds: a lump of timers fired late within one second evens out here,
    # a herd in step does not.
    seconds = [sum(slices[i:i + 10]) for i in range(0, len(slices) - 9, 10)]
    over_2x = sum(1 for x in slices if x > 2 * mean)
    every = slices_of([t for t, status, _ in requests if status == 503 and t < ready], created, ready)
    first_200 = {}
    for t, status, client in requests:
        if status == 200:
            first_200.setdefault(client, t)
    lags = [t - ready for t in first_200.values()]
    to_running = [t - ready for t in watch.running.values()]
    rows.append((f"herd of {n} gate pods on one node: the 503 phase, all gates up ({args.steady} s)",
                 f"{len(steady) / (ready - all_up):.1f} requests/s, {len(steady) / n / (ready - all_up):.2f} per gate; "
                 f"burst {max(slices) / mean:.2f}× (busiest 100 ms over the mean; {over_2x} of {len(slices)} slices "
                 f"over 2×; busiest second {max(seconds) / (sum(seconds) / len(seconds)):.2f}×); from the first pod's start "
                 f"{max(every) / (sum(every) / len(every)):.2f}×; all gates asking {all_up - created:.1f} s after the "
                 "Deployment was created"))
    rows.append((f"herd of {n}: provider serves → pods Running (from the API)",
                 f"last pod Running after {last - ready:.1f} s; median {statistics.median(to_running):.1f} s, "
                 f"p95 {bench.p95(to_running):.1f} s"))
    rows.append((f"herd of {n}: provider serves → each gate's first 200 (provider's log)",
                 f"median {statistics.median(lags):.2f} s, p95 {bench.p95(lags):.2f} s, last {max(lags):.2f} s "
                 f"({len(lags)} of {n} gates)"))
    cluster.kubectl("delete", "namespace", NS, "--wait=false")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the static amd64 binary (bash .ci/build-static amd64)")
    parser.add_argument("--pods", type=int, help="at most this many pods (default: as many as the node admits)")
    parser.add_argument("--steady", type=float, default=30.0,
                        help="seconds of 503 after every gate has asked once (default 30)")
    args = parser.parse_args()
    certs = Path(tempfile.mkdtemp())
    os.chmod(certs, 0o755)
    bench.make_certs(certs)
    for f in certs.iterdir():
        os.chmod(f, 0o644)
    cluster = Cluster()
    rows = []
    try:
        harness.progress("building and importing the gate's image")
        gate_image(cluster, args.bin)
        run(args, cluster, certs, rows)
    finally:
        cluster.down()
    print("| measure | result |")
    print("|---|---|")
    for name, result in rows:
        print(f"| {name} | {result} |")


if __name__ == "__main__":
    main()
