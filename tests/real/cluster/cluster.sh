#!/usr/bin/env bash
# shellcheck disable=SC2317 # functions called through wait_for and the traps
# A single-node Kubernetes on loopback, as the cluster tests' fixture (tests/support/cluster.rs):
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd and the kubelet, built
# by .ci/real-cluster. Runs in the foreground as the fixture's supervisor:
#
#   cluster.sh BIN_DIR IMAGES_DIR WORK_DIR
#
# It takes the machine-wide lock (two clusters on one machine collide on ports, the containerd
# socket and cgroups; a second one waits here for the first to be torn down), starts everything
# from empty directories, imports IMAGES_DIR/*.tar, waits until the node takes pods, and prints
# `ready`. It then reads commands on stdin, one a line, answering `ok` or `error: …`:
#   stop NAME | start NAME     (etcd apiserver containerd kubelet kcm scheduler)
# End of input (the test process exited, whatever way) or SIGTERM tears everything down: each
# component stopped by its PID, the shims this containerd started, the mounts under WORK_DIR, the
# cgroups under the kubelet's cgroup root. A component that fails to start is reported as
# `failed: NAME (LOG)` before the teardown, and the exit status is 1.
#
# Settings (environment): WFI_CLUSTER_MAX_RESTART_PERIOD caps the kubelet's crash-loop back-off
# (a duration such as 2s; empty: the kubelet's default, 10 s doubling to 5 min), WFI_CLUSTER_LOCK
# the lock file (/tmp/wait-for-idp-cluster.lock).
#
# The API server's service-account issuer is https://oidc.cluster.test/id/wait-for-idp (SA_ISSUER,
# not a URL it serves), and it also serves admissionregistration.k8s.io/v1beta1 (the
# MutatingAdmissionPolicy of Kubernetes 1.34 and 1.35, for deploy/policy's variant).
#
# Network: every component listens on 127.0.0.1, the service range is inside 127.0.0.0/8, the node
# runs host-network pods only (a loopback-only CNI configuration, never invoked for them), and the
# API server reaches the kubelet by the node's host name, which is `localhost`. The kubelet refuses
# a loopback node IP, so the node reports the machine's own address: nothing may dial it.
set -uo pipefail
BIN=$1 IMAGES=$2 W=$3
LOCK=${WFI_CLUSTER_LOCK:-/tmp/wait-for-idp-cluster.lock}
NODE=localhost
# The service-account issuer: neither kubeadm's (https://kubernetes.default.svc.cluster.local) nor
# the API server's own URL, as on EKS, GKE or AKS, so that a recipe which names either fails here.
# Only ever compared as text: nothing dials it (--service-account-jwks-uri stays the API server's).
SA_ISSUER=https://oidc.cluster.test/id/wait-for-idp
CGROUP_ROOT=wait-for-idp
export PATH=$BIN:/usr/sbin:/usr/bin:/sbin:/bin
SOCK=$W/run/containerd/containerd.sock
log() { echo "cluster: $(date +%H:%M:%S.%N | cut -c1-12) $*" >&2; }

exec 9>>"$LOCK"
if ! flock -n 9; then
  log "waiting for $LOCK (another cluster runs on this machine)"
  flock 9
fi

declare -A PID
pki=$W/pki conf=$W/conf logs=$W/logs data=$W/data

cmdline() { # cmdline NAME: the command that runs component NAME
  case $1 in
    etcd) echo etcd --name wait-for-idp --data-dir "$data/etcd" \
      --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
      --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
      --initial-cluster wait-for-idp=http://127.0.0.1:2380 --unsafe-no-fsync ;;
    apiserver) echo kube-apiserver --etcd-servers=http://127.0.0.1:2379 \
      --bind-address=127.0.0.1 --secure-port=6443 --advertise-address=127.0.0.1 \
      --endpoint-reconciler-type=none --service-cluster-ip-range=127.0.100.0/24 \
      --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
      --client-ca-file="$pki/ca.crt" --service-account-issuer=$SA_ISSUER \
      --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
      --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction,PodSecurity \
      --runtime-config=admissionregistration.k8s.io/v1beta1=true \
      --allow-privileged=true --kubelet-preferred-address-types=Hostname \
      --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
      --kubelet-client-key="$pki/apiserver-kubelet-client.key" ;;
    containerd) echo containerd --config "$conf/containerd.toml" ;;
    kubelet) echo kubelet --config="$conf/kubelet.yaml" --kubeconfig="$pki/kubelet.kubeconfig" \
      --root-dir="$data/kubelet" --hostname-override=$NODE --v=2 ;;
    kcm) echo kube-controller-manager --kubeconfig="$pki/kcm.kubeconfig" \
      --authentication-kubeconfig="$pki/kcm.kubeconfig" --authorization-kubeconfig="$pki/kcm.kubeconfig" \
      --bind-address=127.0.0.1 --secure-port=10257 \
      --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
      --use-service-account-credentials=true --leader-elect=false \
      --service-cluster-ip-range=127.0.100.0/24 --controllers=*,-nodeipam ;;
    scheduler) echo kube-scheduler --kubeconfig="$pki/scheduler.kubeconfig" \
      --authentication-kubeconfig="$pki/scheduler.kubeconfig" \
      --authorization-kubeconfig="$pki/scheduler.kubeconfig" \
      --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false ;;
    *) return 1 ;;
  esac
}

start() { # start NAME: launches it (its own session, output appended to its log)
  local - line
  set -f # the command line is split into words, never globbed (--controllers=*,-nodeipam)
  line=$(cmdline "$1") || { echo "error: unknown component $1"; return 1; }
  if [ -n "${PID[$1]:-}" ] && kill -0 "${PID[$1]}" 2>/dev/null; then return 0; fi
  echo "---- start $(date +%H:%M:%S.%N)" >>"$logs/$1.log"
  # The paths have no spaces (WORK_DIR is the fixture's own), so word splitting is safe here. The
  # lock (fd 9) stays with the supervisor: a component that outlived it must not hold it.
  # shellcheck disable=SC2086
  setsid $line >>"$logs/$1.log" 2>&1 </dev/null 9>&- &
  PID[$1]=$!
  echo "${PID[$1]}" >"$W/pids/$1"
  log "started $1 (pid ${PID[$1]})"
}

stop() { # stop NAME: SIGTERM to its PID, SIGKILL after 10 s
  local pid=${PID[$1]:-}
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  wait "$pid" 2>/dev/null
  unset "PID[$1]"
  rm -f "$W/pids/$1"
  log "stopped $1 (pid $pid)"
}

kctl() { kubectl --kubeconfig="$pki/admin.kubeconfig" "$@"; }

wait_for() { # wait_for NAME WHAT CMD...: until CMD succeeds; fails if NAME's process died
  local name=$1 what=$2; shift 2
  local until=$(( $(date +%s) + 600 ))
  until "$@" >/dev/null 2>&1; do
    if ! kill -0 "${PID[$name]}" 2>/dev/null; then echo "failed: $name exited ($logs/$name.log)"; return 1; fi
    if [ "$(date +%s)" -gt "$until" ]; then echo "failed: $name: no $what in 10 minutes ($logs/$name.log)"; return 1; fi
    sleep 0.2
  done
  log "$what"
}

node_takes_pods() { # the node is Ready and carries no taint (the not-ready taint is gone)
  local out
  out=$(kctl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}/{.spec.taints}') || return 1
  [ "$out" = "True/" ]
}

mkpki() {
  ( cd "$pki" || exit 1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -subj /CN=wait-for-idp-cluster-ca \
      -days 2 -out ca.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    leaf() { # leaf NAME CN O SAN USE
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -subj "${3:+/O=$3}/CN=$2" \
        -out "$1.csr" 2>/dev/null
      { echo "basicConstraints=CA:FALSE"; echo "keyUsage=critical,digitalSignature"
        echo "extendedKeyUsage=$5"; [ -z "$4" ] || echo "subjectAltName=$4"; } >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile "$1.ext" \
        -out "$1.crt" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    leaf apiserver kube-apiserver "" "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1" serverAuth
    leaf apiserver-kubelet-client kube-apiserver-kubelet-client system:masters "" clientAuth
    leaf admin admin system:masters "" clientAuth
    leaf kcm system:kube-controller-manager "" "" clientAuth
    leaf scheduler system:kube-scheduler "" "" clientAuth
    leaf kubelet system:node:$NODE system:nodes "" clientAuth
    leaf kubelet-serving $NODE "" "DNS:localhost,IP:127.0.0.1" serverAuth
    for n in admin kcm scheduler kubelet; do
      cat >"$n.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: wait-for-idp
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: "$pki/ca.crt"}
users:
- name: $n
  user: {client-certificate: "$pki/$n.crt", client-key: "$pki/$n.key"}
contexts:
- name: wait-for-idp
  context: {cluster: wait-for-idp, user: $n}
current-context: wait-for-idp
YAML
    done ) || return 1
  for f in ca.crt ca.key sa.key apiserver.crt kubelet-serving.crt admin.kubeconfig; do [ -s "$pki/$f" ] || return 1; done
}

mkconf() {
  cat >"$conf/containerd.toml" <<TOML
version = 3
root = "$data/containerd"
state = "$W/run/containerd/state"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins]
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = "localhost/wait-for-idp/pause:1"
  [plugins."io.containerd.cri.v1.runtime"]
    enable_selinux = false
    # This machine's root lacks CAP_SYS_RESOURCE: the sandbox's oom_score_adj -998 fails in runc.
    restrict_oom_score_adj = true
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          BinaryName = "$(command -v runc)"
          Root = "$W/run/runc"
          SystemdCgroup = false
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = ["$W/cni/bin"]
      conf_dir = "$W/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri"]
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
  [plugins."io.containerd.internal.v1.opt"]
    path = "$data/containerd-opt"
  [plugins."io.containerd.nri.v1.nri"]
    disable = true
TOML
  # Reported so the node is NetworkReady; never invoked, since every pod uses the host's network.
  echo '{"cniVersion": "1.0.0", "name": "wait-for-idp-loopback-only", "plugins": [{"type": "loopback"}]}' \
    >"$W/cni/net.d/10-loopback-only.conflist"
  local backoff=
  [ -z "${WFI_CLUSTER_MAX_RESTART_PERIOD:-}" ] \
    || backoff="crashLoopBackOff: {maxContainerRestartPeriod: $WFI_CLUSTER_MAX_RESTART_PERIOD}"
  cat >"$conf/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_ROOT
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://$SOCK
podLogsDir: $data/pod-logs
volumePluginDir: $data/kubelet-volume-plugins
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
rotateCertificates: false
serverTLSBootstrap: false
maxPods: 250
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
$backoff
YAML
}

cgroup_dirs() { for h in /sys/fs/cgroup/*/; do [ -d "$h$CGROUP_ROOT" ] && echo "$h$CGROUP_ROOT"; done; }

cleanup_host() { # what a previous run may have left: components, shims, mounts under WORK_DIR, cgroups
  local e p f
  for f in "$W"/pids/*; do # a supervisor killed before its teardown left these running
    [ -f "$f" ] || continue
    p=$(cat "$f")
    case $(readlink "/proc/$p/exe" 2>/dev/null) in "$BIN"/*) kill -9 "$p" && log "killed leftover ${f##*/} $p" ;; esac
    rm -f "$f"
  done
  for e in /proc/[0-9]*/exe; do
    [ "$(readlink "$e" 2>/dev/null)" = "$BIN/containerd-shim-runc-v2" ] || continue
    p=${e#/proc/}; p=${p%/exe}
    # Only a shim serving this fixture's containerd (its socket under WORK_DIR) is ours.
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "$W/" || continue
    kill -9 "$p" 2>/dev/null && log "killed leftover shim $p"
  done
  grep -F " $W/" /proc/self/mounts | awk '{print $2}' | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done
  for d in $(cgroup_dirs); do
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
    [ -d "$d" ] && log "could not remove cgroup $d"
  done
  return 0
}

teardown() {
  trap - EXIT TERM INT HUP
  log "tearing down"
  stop scheduler; stop kcm; stop kubelet
  if [ -n "${PID[containerd]:-}" ]; then
    local t
    for t in $(ctr --address "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr --address "$SOCK" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1
    done
    for t in $(ctr --address "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
      for _ in $(seq 25); do ctr --address "$SOCK" -n k8s.io tasks delete "$t" >/dev/null 2>&1 && break; sleep 0.2; done
    done
  fi
  stop containerd; stop apiserver; stop etcd
  cleanup_host
  log "down"
}

fail() { echo "$1"; teardown; exit 1; }

up() {
  cleanup_host
  rm -rf "$data" "$W/run" "$W/pids" "$pki" "$conf" "$W/cni"
  mkdir -p "$pki" "$conf" "$logs" "$data" "$W/pids" "$W/run/containerd" "$W/run/runc" "$W/cni/bin" "$W/cni/net.d"
  : >"$logs/cluster.log"
  for n in etcd apiserver containerd kubelet kcm scheduler; do : >"$logs/$n.log"; done
  mkpki || fail "failed: certificates (openssl)"
  mkconf
  # The kubelet's cgroup root, in every v1 hierarchy (and the unified one, if any).
  for h in /sys/fs/cgroup/*/; do mkdir -p "$h$CGROUP_ROOT" 2>/dev/null; done
  start etcd
  wait_for etcd "etcd healthy" curl -sf http://127.0.0.1:2379/health || fail "failed: etcd ($logs/etcd.log)"
  start apiserver; start containerd
  wait_for containerd "containerd serves" ctr --address "$SOCK" version || fail "failed: containerd ($logs/containerd.log)"
  local tar
  for tar in "$IMAGES"/*.tar; do
    ctr --address "$SOCK" -n k8s.io images import "$tar" >>"$logs/cluster.log" 2>&1 \
      || fail "failed: import of $tar ($logs/cluster.log)"
  done
  log "images imported"
  wait_for apiserver "API server ready" kctl get --raw /readyz || fail "failed: apiserver ($logs/apiserver.log)"
  start kcm; start scheduler; start kubelet
  wait_for kubelet "node Ready, untainted" node_takes_pods || fail "failed: kubelet ($logs/kubelet.log)"
  wait_for kcm "service account default/default" kctl -n default get serviceaccount default \
    || fail "failed: kcm ($logs/kcm.log)"
  wait_for kcm "kube-root-ca.crt" kctl -n default get configmap kube-root-ca.crt || fail "failed: kcm ($logs/kcm.log)"
  echo ready
}

trap teardown EXIT
trap 'exit 1' TERM INT HUP
up
while read -r verb name; do
  case $verb in
    stop) stop "$name"; echo ok ;;
    start)
      if start "$name"; then echo ok; fi ;;
    *) echo "error: unknown command $verb" ;;
  esac
done
exit 0
