#!/usr/bin/env python3
"""The cold boot, end to end (issue 16, section 3): how long a real client takes to serve after a
real provider starts serving, with and without the gate as its init container.

Two systems, each started cold on loopback (127.0.0.1 only), with a throwaway CA made here:

  keycloak  Keycloak (`kc.sh start-dev`: dev mode, an empty H2 database in a fresh data dir each
            run, realm tests/real/keycloak/realm-main.json imported at start) and oauth2-proxy
            configured as tests/support/real_peers.rs configures it.
  jwks      a stand-in Kubernetes API server (a TLS server in this script that refuses connections
            for the first --coldboot-apiserver-late seconds, then serves its discovery document and
            its JWKS, each only for the right bearer token) and jwks-consumer (lestrrat-go/jwx's
            jwk.Cache; it panics when its first fetch fails).

The client runs under a small kubelet: its container is restarted as the kubelet restarts it
(pkg/kubelet/kuberuntime, doBackOff with flowcontrol.Backoff, 10 s initial, 300 s cap): the first
exit is restarted at once, each later exit waits the current back-off counted from the exit, which
then doubles (so restarts come 0, 10, 20, 40, … s after the exits, capped at 5 min; the reset
after 10 min of running never comes into play here). Mode A runs the client directly. Mode B
first runs the gate as the init container (the pod waits in Init and accrues no back-off; an
init container that failed would be restarted the same way), then the client. oauth2-proxy's gate
has no configuration but the proxy's own environment (the gate reads OAUTH2_PROXY_OIDC_ISSUER_URL
and OAUTH2_PROXY_PROVIDER_CA_FILES); the API server's gate is configured as
deploy/kubernetes/token-proxy-jwks.yaml configures it, with the discovery and JWKS URLs reaching
the stand-in as localhost instead of kubernetes.default.svc.

Measured per run, on the monotonic clock from the cold start (provider and pod started together):
when the provider first serves (a thread of this script polls the discovery document every 50 ms
over TLS with the CA, independently of the clients: for Keycloak the realm's document with 200 and
the right issuer, for the API server its JWKS with the token), when the client first answers /ping
with 200 (polled every 50 ms), the delay between the two, and the client's restarts (exits before
it served). Everything a run started is killed by process group at its end.

Output: a Markdown table on stdout, progress on stderr, a timeline plot (--plot), the raw
timelines as JSON (--coldboot-results; --coldboot-replot FILE redraws table and plot from one).

Usage: coldboot.py --bin target/x86_64-unknown-linux-musl/release/wait-for-idp --plot docs/coldboot.png
       [--coldboot-runs 5] [--coldboot-systems keycloak,jwks] [--coldboot-apiserver-late 20]
Runtime on this project's machine (2 cores), 5 runs per system and mode: about 10 minutes (9.9 min
measured, Keycloak serving 18-40 s after its start). A run without the gate lasts until the next
restart after Keycloak serves (restarts at 0, 10, 30, 70, 150, 310 s), so a slower Keycloak
(serving after 70 s) makes each of those runs 150 s and the whole about 20 minutes.
"""

import argparse
import hashlib
import http.client
import http.server
import json
import os
import secrets
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# The throwaway CA, free ports and the p95 the rest of the benchmark uses (this directory is on
# sys.path when the script runs).
from bench import make_certs, p95
from harness import free_port

ROOT = Path(__file__).resolve().parent.parent
KEYCLOAK_VERSION = "26.7.3"
BACKOFF_INITIAL, BACKOFF_CAP = 10.0, 300.0
POLL = 0.05

# The content of tests/fixtures/kubernetes-sa.jwks.json: a JWK Set as a kube-apiserver serves it.
APISERVER_JWKS = (
    '{"keys":[{"use":"sig","kty":"RSA","kid":"JHJehTTTZlsspKHT-GaJxK7Kd1NQgZJu3fyK6K_QDYU","alg":"RS256",'
    '"n":"249XwEo9k4tM8fMxV7zxOhcrP-WvXn917koM5Qr2ZXs4vo26e4ytdlrV0bQ9SlcLpQVSYjIxNfhTZdDt-ecIzshKuv1gKIxbbLQMOuK1eA_4'
    'HALyEkFgmS_tleLJrhc65tKPMGD-pKQ_xhmzRuCG51RoiMgbQxaCyYxGfNLpLAZK9L0Tctv9a0mJmGIYnIOQM4kC1A1I1n3EsXMWmeJUj7OTh_Aj'
    'jCnMnkgvKT2tpKxYQ59PgDgU8Ssc7RDSmSkLxnrv-OrN80j6xrw0OjEiB4Ycr0PqfzZcvy8efTtFQ_Jnc4Bp1zUtFXt7-QeevePtQ2EcyELXE0i6'
    '3T1CujRMWw","e":"AQAB"},{"use":"sig","kty":"EC","kid":"SoABiieYuNx4UdqYvZRVeuC6SihxgLrhLy9peHMHpTc",'
    '"crv":"P-256","alg":"ES256","x":"H6cuzP8XuD5wal6wf9M6xDljTOPLX2i8uIp_C_ASqiI",'
    '"y":"BlHnikLV9PyEd6gl8k4T_3Wwoh6xd79XLoQTh2PAi1Y"}]}'
)
APISERVER_ISSUER = "https://kubernetes.default.svc.cluster.local"

MODES = {"A": "without the gate", "B": "with the gate"}
SYSTEMS = {"keycloak": ("Keycloak", "oauth2-proxy"), "jwks": ("API server (stand-in)", "jwks-consumer")}


def progress(message):
    print(f"coldboot: {message}", file=sys.stderr, flush=True)


def spawn(argv, env, log: Path, cwd=None):
    """A process in a process group of its own (killed with its group), output to `log`."""
    with open(log, "ab") as out:
        return subprocess.Popen([str(a) for a in argv], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def tail(path: Path, n=30):
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


class Stopped(Exception):
    pass


class ProviderWatch(threading.Thread):
    """Polls the provider every 50 ms over TLS with the CA, on its own: when it first accepts a
    connection (listens), first answers HTTP at all, first serves (`ok(status, body)`), and each
    change of answer on the way (refused, no answer, a status)."""

    def __init__(self, t0, port, path, ctx, ok, headers=None, proc=None):
        super().__init__(daemon=True)
        self.t0, self.port, self.path, self.ctx, self.ok = t0, port, path, ctx, ok
        self.headers, self.proc = headers or {}, proc
        self.stop = threading.Event()
        self.listen = self.answer = self.served = None
        self.died = None
        self.answers = []  # (t, what) at each change

    def now(self):
        return time.monotonic() - self.t0

    def note(self, what):
        if not self.answers or self.answers[-1][1] != what:
            self.answers.append((round(self.now(), 3), what))

    def run(self):
        while not self.stop.is_set() and self.served is None:
            started = time.monotonic()
            if self.proc is not None and self.proc.poll() is not None:
                self.died = (self.now(), self.proc.returncode)
                return
            conn = http.client.HTTPSConnection("localhost", self.port, context=self.ctx, timeout=2)
            try:
                conn.request("GET", self.path, headers=self.headers)
                resp = conn.getresponse()
                body = resp.read()
                t = self.now()
                self.listen = self.listen if self.listen is not None else t
                self.answer = self.answer if self.answer is not None else t
                self.note(str(resp.status))
                if self.ok(resp.status, body):
                    self.served = t
            except ConnectionRefusedError:
                self.note("refused")
            except (OSError, http.client.HTTPException):
                self.listen = self.listen if self.listen is not None else self.now()
                self.note("no answer")
            finally:
                conn.close()
            self.stop.wait(max(0.0, POLL - (time.monotonic() - started)))


def ping(port):
    """The client's /ping status, or None if nothing answered."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=0.5)
    try:
        conn.request("GET", "/ping")
        return conn.getresponse().status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


class Pod(threading.Thread):
    """A kubelet in miniature for one pod: init containers to completion, then the container,
    each restarted on exit with CrashLoopBackOff (the first exit at once, then the back-off from
    the exit: 10 s, doubling, capped at 5 min). Records every start, exit, wait and when the
    container first answered /ping."""

    def __init__(self, t0, logdir: Path, init, main, ping_port):
        super().__init__(daemon=True)
        self.t0, self.logdir, self.init, self.main, self.ping_port = t0, logdir, init, main, ping_port
        self.stop = threading.Event()
        self.events = []
        self.procs = []
        self.served = None
        self.error = None

    def now(self):
        return round(time.monotonic() - self.t0, 3)

    def start_container(self, name, argv, env, attempt):
        proc = spawn(argv, env, self.logdir / f"{name}-{attempt}.log")
        self.procs.append(proc)
        self.events.append({"what": "start", "container": name, "t": self.now()})
        return proc

    def exited(self, name, code):
        self.events.append({"what": "exit", "container": name, "t": self.now(), "code": code})

    def back_off(self, name, delay):
        if delay > 0:
            start = self.now()
            if self.stop.wait(delay):
                raise Stopped
            self.events.append({"what": "backoff", "container": name, "t": start, "until": self.now()})

    def run(self):
        try:
            for name, argv, env in self.init:
                self.run_init(name, argv, env)
            self.run_main(*self.main)
        except Stopped:
            pass
        except Exception as e:  # reported by the run, with the logs
            self.error = repr(e)

    def run_init(self, name, argv, env):
        backoff = None
        for attempt in range(1, 1000):
            proc = self.start_container(name, argv, env, attempt)
            while proc.poll() is None:
                if self.stop.wait(POLL):
                    raise Stopped
            self.exited(name, proc.returncode)
            if proc.returncode == 0:
                return
            delay, backoff = (0.0, BACKOFF_INITIAL) if backoff is None else (backoff, min(2 * backoff, BACKOFF_CAP))
            self.back_off(name, delay)

    def run_main(self, name, argv, env):
        backoff = None
        for attempt in range(1, 1000):
            proc = self.start_container(name, argv, env, attempt)
            while True:
                if proc.poll() is not None:
                    break
                if ping(self.ping_port) == 200:
                    self.served = self.now()
                    self.events.append({"what": "served", "container": name, "t": self.served})
                    return
                if self.stop.wait(POLL):
                    raise Stopped
            self.exited(name, proc.returncode)
            delay, backoff = (0.0, BACKOFF_INITIAL) if backoff is None else (backoff, min(2 * backoff, BACKOFF_CAP))
            self.back_off(name, delay)

    def kill(self):
        self.stop.set()
        self.join(timeout=5)
        for proc in self.procs:
            kill_group(proc)


class ApiServer:
    """A stand-in Kubernetes API server on 127.0.0.1:port over TLS: refuses connections until
    `listen()`, then serves /.well-known/openid-configuration and /openid/v1/jwks, each only with
    `Authorization: Bearer <token>` (401 otherwise), as the service-account-issuer-discovery role
    allows."""

    def __init__(self, certs: Path, port: int, token: str):
        self.port, self.token = port, token
        self.doc = json.dumps({
            "issuer": APISERVER_ISSUER, "jwks_uri": f"https://127.0.0.1:{port}/openid/v1/jwks",
            "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }).encode()
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(certs / "leaf.pem", certs / "leaf.key")
        self.server = None
        self.timer = None

    def listen_after(self, seconds):
        self.timer = threading.Timer(seconds, self.listen)
        self.timer.daemon = True
        self.timer.start()

    def listen(self):
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                self.request.do_handshake()
                super().setup()

            def log_message(self, *a):
                pass

            def do_GET(self):
                bodies = {"/.well-known/openid-configuration": (api.doc, "application/json"),
                          "/openid/v1/jwks": (APISERVER_JWKS.encode(), "application/jwk-set+json")}
                if self.headers.get("Authorization") != f"Bearer {api.token}":
                    status, (body, ctype) = 401, (b'{"kind":"Status","code":401}', "application/json")
                elif self.path in bodies:
                    status, (body, ctype) = 200, bodies[self.path]
                else:
                    status, (body, ctype) = 404, (b'{"kind":"Status","code":404}', "application/json")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(http.server.ThreadingHTTPServer):
            allow_reuse_address = True
            daemon_threads = True

            def get_request(self):
                conn, addr = self.socket.accept()
                return api.ctx.wrap_socket(conn, server_side=True, do_handshake_on_connect=False), addr

            def handle_error(self, request, client_address):
                pass

        self.server = Server(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        if self.timer:
            self.timer.cancel()
        if self.server:
            self.server.shutdown()
            self.server.server_close()


class Bench:
    def __init__(self, args, work: Path):
        self.args, self.work = args, work
        self.certs = work / "certs"
        self.certs.mkdir()
        make_certs(self.certs)
        self.ca = self.certs / "ca.pem"
        self.client_ctx = ssl.create_default_context(cafile=str(self.ca))
        self.real = Path(args.coldboot_real)
        # A copy, so that a rebuild during the measurement does not change what is measured.
        self.gate = str(work / "wait-for-idp")
        shutil.copy2(args.bin, self.gate)
        self.gate_sha256 = hashlib.sha256(Path(self.gate).read_bytes()).hexdigest()
        self.kc_home = None

    def keycloak_home(self):
        """A private copy of the dev-mode Keycloak home, so that the tests (which start Keycloak
        from .ci/cache/real, deleting its data dir) and this bench never share one."""
        if self.kc_home is None:
            source = self.real / f"keycloak-dev-{KEYCLOAK_VERSION}"
            if not (source / "bin/kc.sh").exists():
                raise SystemExit(f"{source} is missing: run `bash .ci/real-peers`")
            self.kc_home = self.work / "keycloak"
            shutil.copytree(source, self.kc_home, symlinks=True, ignore=shutil.ignore_patterns("data"))
        return self.kc_home

    def run_keycloak(self, mode, k, logdir):
        home = self.keycloak_home()
        shutil.rmtree(home / "data", ignore_errors=True)
        (home / "data/import").mkdir(parents=True)
        shutil.copy(ROOT / "tests/real/keycloak/realm-main.json", home / "data/import/realm-main.json")
        https, http_port, mgmt, proxy_port = free_port(), free_port(), free_port(), free_port()
        issuer = f"https://localhost:{https}/realms/main"
        proxy_env = {
            "PATH": "/usr/bin:/bin",
            "OAUTH2_PROXY_PROVIDER": "oidc",
            "OAUTH2_PROXY_CLIENT_ID": "oauth2-proxy",
            "OAUTH2_PROXY_CLIENT_SECRET": "test-only-client-secret",
            "OAUTH2_PROXY_COOKIE_SECRET": "0123456789abcdef0123456789abcdef",
            "OAUTH2_PROXY_EMAIL_DOMAINS": "*",
            "OAUTH2_PROXY_UPSTREAMS": "static://200",
            "OAUTH2_PROXY_HTTP_ADDRESS": f"127.0.0.1:{proxy_port}",
            "OAUTH2_PROXY_OIDC_ISSUER_URL": issuer,
            "OAUTH2_PROXY_PROVIDER_CA_FILES": str(self.ca),
        }
        kc_env = dict(os.environ, KC_BOOTSTRAP_ADMIN_USERNAME="admin", KC_BOOTSTRAP_ADMIN_PASSWORD="test-only-admin",
                      JAVA_OPTS_KC_HEAP="-Xms64m -Xmx640m")
        kc_argv = [home / "bin/kc.sh", "start-dev", "--import-realm", "--http-host=127.0.0.1",
                   f"--http-port={http_port}", f"--https-port={https}", f"--http-management-port={mgmt}",
                   f"--https-certificate-file={self.certs / 'leaf.pem'}",
                   f"--https-certificate-key-file={self.certs / 'leaf.key'}"]
        init = [("wait-for-idp", [self.gate], proxy_env)] if mode == "B" else []
        main = ("oauth2-proxy", [self.real / "bin/oauth2-proxy"], proxy_env)

        def ok(status, body):
            try:
                return status == 200 and json.loads(body).get("issuer") == issuer
            except ValueError:
                return False

        t0 = time.monotonic()
        kc = spawn(kc_argv, kc_env, logdir / "keycloak.log")
        pod = Pod(t0, logdir, init, main, proxy_port)
        pod.start()
        watch = ProviderWatch(t0, https, "/realms/main/.well-known/openid-configuration", self.client_ctx, ok, proc=kc)
        watch.start()
        try:
            return self.observe(t0, watch, pod, logdir, "keycloak.log")
        finally:
            watch.stop.set()
            pod.kill()
            kill_group(kc)

    def run_jwks(self, mode, k, logdir):
        port, listen = free_port(), free_port()
        token = secrets.token_urlsafe(32)
        token_file = logdir / "token"
        token_file.write_text(token)
        base = f"https://localhost:{port}"
        client_env = {"PATH": "/usr/bin:/bin", "JWKS_URL": f"{base}/openid/v1/jwks", "TOKEN_FILE": str(token_file),
                      "CA_FILE": str(self.ca), "LISTEN": f"127.0.0.1:{listen}"}
        # As deploy/kubernetes/token-proxy-jwks.yaml configures the gate; the in-cluster
        # kubernetes.default.svc is localhost here.
        gate_env = {"PATH": "/usr/bin:/bin", "WAIT_FOR_IDP_ISSUER": APISERVER_ISSUER,
                    "WAIT_FOR_IDP_DISCOVERY_URL": f"{base}/.well-known/openid-configuration",
                    "WAIT_FOR_IDP_JWKS_URL": f"{base}/openid/v1/jwks", "WAIT_FOR_IDP_CA_FILE": str(self.ca),
                    "WAIT_FOR_IDP_TOKEN_FILE": str(token_file), "WAIT_FOR_IDP_TIMEOUT": "3m"}
        init = [("wait-for-idp", [self.gate], gate_env)] if mode == "B" else []
        main = ("jwks-consumer", [self.real / "bin/jwks-consumer"], client_env)

        def ok(status, body):
            try:
                return status == 200 and len(json.loads(body).get("keys", [])) > 0
            except ValueError:
                return False

        api = ApiServer(self.certs, port, token)
        t0 = time.monotonic()
        api.listen_after(self.args.coldboot_apiserver_late)
        pod = Pod(t0, logdir, init, main, listen)
        pod.start()
        watch = ProviderWatch(t0, port, "/openid/v1/jwks", self.client_ctx, ok,
                              headers={"Authorization": f"Bearer {token}"})
        watch.start()
        try:
            return self.observe(t0, watch, pod, logdir, None)
        finally:
            watch.stop.set()
            pod.kill()
            api.close()

    def observe(self, t0, watch, pod, logdir, provider_log):
        """Waits until the client serves and the provider has been seen serving."""
        limit = t0 + self.args.coldboot_run_limit
        while time.monotonic() < limit:
            if watch.died:
                raise SystemExit(f"the provider exited ({watch.died[1]}) at {watch.died[0]:.1f} s before it served; "
                                 f"{logdir / provider_log}:\n{tail(logdir / provider_log, 40)}")
            if pod.error:
                raise SystemExit(f"the pod's supervisor failed: {pod.error}")
            if pod.served is not None and watch.served is not None:
                break
            time.sleep(0.1)
        else:
            logs = "\n".join(f"--- {p.name}\n{tail(p, 15)}" for p in sorted(logdir.glob("*.log")))
            raise SystemExit(f"run did not finish within {self.args.coldboot_run_limit} s "
                             f"(provider served: {watch.served}, client served: {pod.served}); logs in {logdir}:\n{logs}")
        return {"provider_listen": watch.listen, "provider_answer": watch.answer, "provider_served": watch.served,
                "provider_answers": watch.answers, "client_served": pod.served, "events": pod.events,
                "logs": str(logdir)}


def summarize_run(system, mode, r):
    client = SYSTEMS[system][1]
    exits = [e for e in r["events"] if e["what"] == "exit" and e["container"] == client]
    r["restarts"] = len(exits)
    r["exit_codes"] = [e["code"] for e in exits]
    r["delay"] = round(r["client_served"] - r["provider_served"], 3)
    return r


def lived(rs, container, end):
    """How long `container` ran from each start to each event `end` (exit or served)."""
    out = []
    for r in rs:
        start = None
        for e in r["events"]:
            if e["container"] != container:
                continue
            if e["what"] == "start":
                start = e["t"]
            elif e["what"] == end:
                out.append(e["t"] - start)
    return out


def table(results, runs_note):
    out = ["| system | mode | runs | restarts median / max | provider serves at, median (s) "
           "| provider serving → client serving: median / p95 / max (s) | cold start → client serving, median (s) |",
           "|---|---|---|---|---|---|---|"]
    for system in SYSTEMS:
        for mode in MODES:
            rs = [r for r in results if r["system"] == system and r["mode"] == mode]
            if not rs:
                continue
            provider, client = SYSTEMS[system]
            restarts = [r["restarts"] for r in rs]
            delays = [r["delay"] for r in rs]
            out.append(f"| {provider} + {client} | {mode}: {MODES[mode]} | {len(rs)} "
                       f"| {statistics.median(restarts):g} / {max(restarts)} "
                       f"| {statistics.median(r['provider_served'] for r in rs):.1f} "
                       f"| {statistics.median(delays):.2f} / {p95(delays):.2f} / {max(delays):.2f} "
                       f"| {statistics.median(r['client_served'] for r in rs):.1f} |")
    notes = []
    for system in SYSTEMS:
        rs = [r for r in results if r["system"] == system]
        if not rs:
            continue
        provider, client = SYSTEMS[system]
        codes = {}
        for r in rs:
            for c in r["exit_codes"]:
                codes[c] = codes.get(c, 0) + 1
        if codes:
            notes.append(f"- {client}'s exits before serving, by exit code: "
                         + ", ".join(f"{c}: {n}×" for c, n in sorted(codes.items(), key=lambda x: str(x[0])))
                         + f"; it ran a median {statistics.median(lived(rs, client, 'exit')):.2f} s before each exit")
        notes.append(f"- {client}: from its last start to /ping 200, median {statistics.median(lived(rs, client, 'served')):.2f} s "
                     f"(max {max(lived(rs, client, 'served')):.2f})")
        listen = [r["provider_listen"] for r in rs if r["provider_listen"] is not None]
        if listen:
            gaps = [r["provider_served"] - r["provider_listen"] for r in rs if r["provider_listen"] is not None]
            paths = {}
            for r in rs:
                path = " → ".join(a for _, a in r["provider_answers"])
                paths[path] = paths.get(path, 0) + 1
            seen = [f"{p} ({n}×)" for p, n in paths.items()]
            notes.append(f"- {provider}: accepts connections at a median {statistics.median(listen):.1f} s "
                         f"(range {min(listen):.1f}–{max(listen):.1f}), serves the document "
                         f"{statistics.median(gaps):.2f} s later (median; max {max(gaps):.2f}); "
                         f"answers to the bench's poll, in order: {'; '.join(seen)}")
        gates = [e for r in rs for e in r["events"] if e["container"] == "wait-for-idp" and e["what"] == "exit"]
        if gates:
            notes.append(f"- the gate's exit codes ({provider}): "
                         + ", ".join(f"{c}: {sum(1 for e in gates if e['code'] == c)}×" for c in sorted({e['code'] for e in gates})))
    return "\n".join(out) + "\n\n" + runs_note + "\n" + "\n".join(notes)


def plot(results, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    systems = [s for s in SYSTEMS if any(r["system"] == s for r in results)]
    lanes = {s: sorted((r for r in results if r["system"] == s), key=lambda r: (r["mode"], r["run"])) for s in systems}
    heights = [max(2, len(lanes[s])) + 1.5 for s in systems]
    fig_height = 0.5 * sum(heights) + 2.2
    fig, axes = plt.subplots(len(systems), 1, figsize=(13, fig_height), dpi=110,
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    colours = {"provider": "#c8c8c8", "gate": "#8e6bbf", "client": "#3b75af", "backoff": "#f2b36f"}
    for ax, system in zip(axes[:, 0], systems):
        provider, client = SYSTEMS[system]
        rows = lanes[system]
        labels = []
        for y, r in enumerate(reversed(rows)):
            labels.append(f"{'A: no gate' if r['mode'] == 'A' else 'B: gate'}, run {r['run']}: "
                          f"{r['restarts']} restart{'s' * (r['restarts'] != 1)}")
            ax.broken_barh([(0, r["provider_served"])], (y + 0.12, 0.22), color=colours["provider"])
            if r["provider_listen"] is not None and system == "keycloak":
                ax.plot([r["provider_listen"]] * 2, [y + 0.1, y + 0.36], color="#555555", lw=1.2)
            ax.plot(r["provider_served"], y + 0.23, marker="D", color="#2a9d3a", ms=7, mec="white")
            starts = {}
            for e in r["events"]:
                kind = "gate" if e["container"] == "wait-for-idp" else "client"
                if e["what"] == "start":
                    starts[kind] = e["t"]
                elif e["what"] == "exit":
                    ax.broken_barh([(starts[kind], max(e["t"] - starts[kind], 0.15))], (y - 0.3, 0.34),
                                   color=colours[kind])
                    if kind == "client":
                        ax.plot(e["t"], y - 0.13, marker="X", color="#c0392b", ms=8, mec="white")
                elif e["what"] == "backoff":
                    ax.broken_barh([(e["t"], e["until"] - e["t"])], (y - 0.3, 0.34), facecolor=colours["backoff"],
                                   edgecolor="#b86e1e", hatch="///", lw=0.5)
                elif e["what"] == "served":
                    ax.broken_barh([(starts["client"], max(e["t"] - starts["client"], 0.15))], (y - 0.3, 0.34),
                                   color=colours["client"])
                    ax.plot(e["t"], y - 0.13, marker="*", color="#2a9d3a", ms=14, mec="black", mew=0.6)
            ax.annotate(f"+{r['delay']:.1f} s", (r["client_served"], y - 0.13), xytext=(9, -3),
                        textcoords="offset points", fontsize=8, color="#1f6f2a")
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(labels, fontsize=9)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        split = sum(1 for r in rows if r["mode"] == "B")
        if 0 < split < len(rows):
            ax.axhline(split - 0.5, color="#888888", lw=0.8, ls="--")
        xmax = max(r["client_served"] for r in rows)
        ax.set_xlim(-1, xmax * 1.06 + 3)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel("seconds since the cold start (provider and pod started together)")
        what = ("Keycloak 26 (start-dev, realm imported at start) + oauth2-proxy v7.15.6" if system == "keycloak"
                else "stand-in API server (refuses connections at first) + jwks-consumer (jwx jwk.Cache)")
        ax.set_title(f"{what}: CrashLoopBackOff without the gate vs. the gate as init container", fontsize=10.5)
    early_listen = any(r["provider_listen"] is not None and r["provider_served"] - r["provider_listen"] > 0.5
                       for r in results if r["system"] == "keycloak")
    handles = [
        Patch(color=colours["provider"], label="provider not serving yet"),
        Line2D([], [], color="#555555", lw=1.2, label="Keycloak accepts connections"
               + ("" if early_listen else " (here: as it serves)")),
        Line2D([], [], marker="D", color="#2a9d3a", ls="", ms=7, label="provider serves the document (200)"),
        Patch(color=colours["gate"], label="wait-for-idp (init container)"),
        Patch(color=colours["client"], label="client running (from each start)"),
        Line2D([], [], marker="X", color="#c0392b", ls="", ms=8, label="client exits (a restart)"),
        Patch(facecolor=colours["backoff"], edgecolor="#b86e1e", hatch="///", label="CrashLoopBackOff wait"),
        Line2D([], [], marker="*", color="#2a9d3a", mec="black", ls="", ms=13, label="client answers /ping (+delay after provider)"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8.5, frameon=False, bbox_to_anchor=(0.5, 0.005))
    fig.tight_layout(rect=(0, 0.62 / fig_height, 1, 1))
    fig.savefig(path)
    progress(f"plot written to {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=str(ROOT / "target/x86_64-unknown-linux-musl/release/wait-for-idp"))
    parser.add_argument("--plot", help="write the timeline plot (PNG) here")
    parser.add_argument("--coldboot-runs", type=int, default=5, help="runs per system and mode (A and B alternate)")
    parser.add_argument("--coldboot-systems", default=",".join(SYSTEMS), help="comma-separated: " + ", ".join(SYSTEMS))
    parser.add_argument("--coldboot-apiserver-late", type=float, default=20.0,
                        help="seconds the stand-in API server refuses connections")
    parser.add_argument("--coldboot-run-limit", type=float, default=900.0, help="give up on a run after this long")
    parser.add_argument("--coldboot-real", default=os.environ.get("REAL", str(ROOT / ".ci/cache/real")),
                        help="where .ci/real-peers installed the real systems")
    parser.add_argument("--coldboot-results", help="also write the raw timelines (JSON) here")
    parser.add_argument("--coldboot-replot", help="redraw table and plot from a --coldboot-results file; run nothing")
    args = parser.parse_args()

    if args.coldboot_replot:
        saved = json.loads(Path(args.coldboot_replot).read_text())
        print(table(saved["results"], saved["note"]))
        if args.plot:
            plot(saved["results"], Path(args.plot))
        return

    systems = args.coldboot_systems.split(",")
    for s in systems:
        if s not in SYSTEMS:
            raise SystemExit(f"--coldboot-systems: unknown system {s!r}; choose from {', '.join(SYSTEMS)}")
    for name in ("oauth2-proxy", "jwks-consumer"):
        if not (Path(args.coldboot_real) / "bin" / name).exists():
            raise SystemExit(f"{Path(args.coldboot_real) / 'bin' / name} is missing: run `bash .ci/real-peers`")
    if not os.access(args.bin, os.X_OK):
        raise SystemExit(f"{args.bin} is missing: run `bash .ci/build-static amd64`")

    began = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="coldboot-"))
    progress(f"work dir and logs: {work}")
    bench = Bench(args, work)
    results = []
    try:
        for system in systems:
            for k in range(1, args.coldboot_runs + 1):
                for mode in MODES:  # A and B alternate
                    logdir = work / f"{system}-{mode}-{k}"
                    logdir.mkdir()
                    progress(f"{system}, mode {mode} ({MODES[mode]}), run {k} of {args.coldboot_runs}")
                    started = time.monotonic()
                    r = (bench.run_keycloak if system == "keycloak" else bench.run_jwks)(mode, k, logdir)
                    r.update(system=system, mode=mode, run=k)
                    summarize_run(system, mode, r)
                    results.append(r)
                    progress(f"  provider served at {r['provider_served']:.1f} s, client at {r['client_served']:.1f} s "
                             f"(+{r['delay']:.2f} s), {r['restarts']} restarts, exit codes {r['exit_codes']}; "
                             f"run took {time.monotonic() - started:.0f} s")
    finally:
        if bench.kc_home:
            shutil.rmtree(bench.kc_home, ignore_errors=True)
    total = time.monotonic() - began
    note = (f"{args.coldboot_runs} runs per system and mode, A and B alternating; the gate: {args.bin} "
            f"(sha256 {bench.gate_sha256[:16]}…), before oauth2-proxy with the proxy's environment and nothing else, "
            f"before jwks-consumer configured as deploy/kubernetes/token-proxy-jwks.yaml does; kubelet back-off: first restart at "
            f"once, then 10 s doubling to 5 min; API server stand-in refuses connections for "
            f"{args.coldboot_apiserver_late:g} s; whole measurement {total / 60:.1f} min.")
    results_path = Path(args.coldboot_results) if args.coldboot_results else work / "results.json"
    results_path.write_text(json.dumps({"note": note, "results": results}, indent=1))
    progress(f"raw timelines in {results_path}")
    print(table(results, note))
    if args.plot:
        plot(results, Path(args.plot))


if __name__ == "__main__":
    main()
