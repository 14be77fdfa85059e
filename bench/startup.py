"""The start-up budget (`bash bench/run --only startup`): what a gate costs before and around its one
request, in the environments pods really have.

A pod gets seven service-link variables for every Service in its namespace (`enableServiceLinks`
is on by default), so 700 variables is a namespace with 100 Services and 5,000 one with about 700.
Each environment is measured with Go's trust variables unset, set to Debian's store (what a Go
client in the same pod reads) with the provider's CA given by `--ca-file`, and set to a copy of
that store into which the provider's CA was installed as `update-ca-certificates` installs one
(appended to the bundle, a hash link in the directory), with no `--ca-file`. In each: `/bin/true`
(exec alone copies the environment, so it is the floor), `--dry-run` (every setting read and
checked, the trust files loaded, nothing sent), one `--once` check against a ready provider
(Debian's nginx on loopback), and curl's one request (`--cacert` with the provider's CA).

Runs are paired: each round runs every command in every environment once, in turn, so a
machine that is busy for a moment slows all of them alike; each figure is the median over the
rounds of a per-round figure (a difference or ratio within the round, where it is one). Peak RSS
comes from GNU time, in a few runs of their own.
"""

import ctypes
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from harness import Nginx, progress

# Targets (issue 30): --dry-run's own cost (its time less /bin/true's) within 2 ms; that cost
# growing by at most 2 ms at 700 variables and 5 ms at 5,000; one check at most half of curl's
# time; peak RSS at most 3 MiB.
OWN_MS, GROWTH_MS, CURL_RATIO, RSS_KIB = 2.0, {700: 2.0, 5000: 5.0}, 0.5, 3072
SIZES = (0, 700, 5000)
TRUST = {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "SSL_CERT_DIR": "/etc/ssl/certs"}


def service_links(n):
    """n variables named as the kubelet names a Service's (FOO_SERVICE_HOST, FOO_PORT_443_TCP_ADDR…)."""
    env, i = {}, 0
    while len(env) < n:
        s = f"SVC{i:04d}_BACKEND"
        for name, value in ((f"{s}_SERVICE_HOST", "10.96.0.10"), (f"{s}_SERVICE_PORT", "443"),
                            (f"{s}_PORT", "tcp://10.96.0.10:443"), (f"{s}_PORT_443_TCP", "tcp://10.96.0.10:443"),
                            (f"{s}_PORT_443_TCP_PROTO", "tcp"), (f"{s}_PORT_443_TCP_PORT", "443"),
                            (f"{s}_PORT_443_TCP_ADDR", "10.96.0.10")):
            if len(env) < n:
                env[name] = value
        i += 1
    return env


# How Go's trust variables are set: not at all, to Debian's store (the provider's CA given by
# --ca-file), or to a copy of it holding the provider's CA (installed_store's).
TRUST_MODES = {"unset": "trust variables unset", "set": "trust variables set",
               "store": "trust variables set, CA in the store"}


def environments(store):
    """(label, variables, trust mode, environment) for every environment measured; `store` is
    the trust variables of the copy of Debian's store that holds the provider's CA."""
    out = []
    for n in SIZES:
        for mode, words in TRUST_MODES.items():
            env = service_links(n)
            env.update({"unset": {}, "set": TRUST, "store": store}[mode])
            out.append((f"{n:,} variables, {words}", n, mode, env))
    return out


def installed_store(ca, work):
    """A copy of Debian's store into which `ca` is installed as update-ca-certificates installs a
    local CA: appended to the bundle, and linked in the directory under its OpenSSL subject hash.
    Its trust variables."""
    certs = work / "certs"
    shutil.copytree(TRUST["SSL_CERT_DIR"], certs, symlinks=True)
    shutil.copy(ca, certs / "bench-ca.pem")
    digest = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", ca], capture_output=True, text=True,
                            check=True).stdout.strip()
    n = 0
    while os.path.lexists(certs / f"{digest}.{n}"):
        n += 1
    os.symlink("bench-ca.pem", certs / f"{digest}.{n}")
    bundle = certs / "ca-certificates.crt"
    bundle.unlink()
    bundle.write_text(Path(TRUST["SSL_CERT_FILE"]).read_text() + Path(ca).read_text())
    return {"SSL_CERT_FILE": str(bundle), "SSL_CERT_DIR": str(certs)}


class Spawner:
    """Spawns a command with the C library's posix_spawn, its argument and environment arrays
    built beforehand: Python's own os.posix_spawn encodes the environment on every call, which
    at 5,000 variables took longer than the gate's own start-up and would count in every figure."""

    def __init__(self):
        self.libc = ctypes.CDLL(None, use_errno=True)
        # posix_spawn_file_actions_t is opaque: room enough for glibc's (80 bytes) and more.
        self.actions = ctypes.create_string_buffer(512)
        self.libc.posix_spawn_file_actions_init(self.actions)
        for fd in (1, 2):
            self.libc.posix_spawn_file_actions_addopen(self.actions, fd, b"/dev/null", os.O_WRONLY, 0)

    @staticmethod
    def array(words):
        out = (ctypes.c_char_p * (len(words) + 1))(*[w.encode() for w in words], None)
        return out

    def prepare(self, argv, env):
        """What `timed` takes: the command and environment as the C library wants them."""
        return argv[0].encode(), self.array(argv), self.array([f"{k}={v}" for k, v in env.items()])

    def timed(self, prepared):
        """One run: (wall seconds, CPU seconds, exit code)."""
        path, argv, envp = prepared
        pid = ctypes.c_int()
        start = time.perf_counter()
        err = self.libc.posix_spawn(ctypes.byref(pid), path, self.actions, None, argv, envp)
        if err:
            raise OSError(err, os.strerror(err), path)
        _, status, usage = os.wait4(pid.value, 0)
        wall = time.perf_counter() - start
        return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def peak_rss(argv, env):
    """Peak RSS in KiB by GNU time, which forks from a small process (a child forked from Python
    would count Python's memory)."""
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name, *argv], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        return int(out.read().strip().splitlines()[-1])


def measure(args, certs, rows):
    for path in TRUST.values():
        if not os.path.exists(path):
            raise SystemExit(f"startup: {path} is missing (Debian's ca-certificates)")
    work = Path(tempfile.mkdtemp())
    server = Nginx(certs, work)
    server.ready()
    ca = str(certs / "ca.pem")
    url = f"{server.issuer}/.well-known/openid-configuration"
    true = "/bin/true"
    curl = subprocess.run(["sh", "-c", "command -v curl"], capture_output=True, text=True).stdout.strip()
    # The gate's commands with --ca-file, and without it where the CA is in the store.
    def commands_for(mode):
        given = [] if mode == "store" else ["--ca-file", ca]
        return {
            "true": [true],
            "dry-run": [args.bin, "--dry-run", "--issuer", server.issuer, *given],
            "once": [args.bin, "--once", "--issuer", server.issuer, *given],
            "curl": [curl, "-fsS", "-o", "/dev/null", "--cacert", ca, url],
        }

    commands = commands_for("set")
    envs = environments(installed_store(ca, work))
    spawner = Spawner()
    prepared = {(label, name): spawner.prepare(argv, env) for label, _, mode, env in envs
                for name, argv in commands_for(mode).items()}
    for label, *_ in envs:
        for name in commands:
            _, _, code = spawner.timed(prepared[label, name])
            if code != 0:
                raise SystemExit(f"startup: {name} failed in {label}: exit {code}")
    runs = args.startup_runs
    load_before = os.getloadavg()
    # wall[label][command] and cpu[label][command]: one figure per round.
    wall = {label: {c: [] for c in commands} for label, *_ in envs}
    cpu = {label: {c: [] for c in commands} for label, *_ in envs}
    for r in range(runs):
        progress(f"startup: round {r + 1} of {runs} (every command in every environment)")
        for label, *_ in envs:
            for name in commands:
                w, c, code = spawner.timed(prepared[label, name])
                if code != 0:
                    raise SystemExit(f"startup: {name} failed in {label}: exit {code}")
                wall[label][name].append(w)
                cpu[label][name].append(c)
    load_after = os.getloadavg()
    rss = {}
    for label, _, mode, env in envs:
        progress(f"startup: peak RSS, {label}")
        for name in ("dry-run", "once", "curl"):
            rss[label, name] = statistics.median(peak_rss(commands_for(mode)[name], env) for _ in range(5))
    server.stop()

    ms = lambda seconds: seconds * 1000
    # Each figure twice: wall time, and CPU time (user and system, from wait4), which a loaded
    # machine inflates far less than wall time.
    own = {label: {k: [ms(d - t) for d, t in zip(fig[label]["dry-run"], fig[label]["true"])] for k, fig in
                   (("wall", wall), ("cpu", cpu))} for label, *_ in envs}
    for label, n, trust, _ in envs:
        base = next(b for b, m, t, _ in envs if m == 0 and t == trust)
        med = {k: {c: ms(statistics.median(fig[label][c])) for c in commands} for k, fig in (("wall", wall), ("cpu", cpu))}
        own_ms = {k: statistics.median(own[label][k]) for k in ("wall", "cpu")}
        growth = {k: statistics.median(o - b for o, b in zip(own[label][k], own[base][k])) for k in ("wall", "cpu")}
        ratio = {k: statistics.median(o / c for o, c in zip(fig[label]["once"], fig[label]["curl"]))
                 for k, fig in (("wall", wall), ("cpu", cpu))}
        pair = lambda d, fmt="{:.1f}": f"{fmt.format(d['wall'])} / {fmt.format(d['cpu'])}"
        result = (f"/bin/true {pair({k: med[k]['true'] for k in med})} ms; --dry-run "
                  f"{pair({k: med[k]['dry-run'] for k in med})} ms, own {pair(own_ms)} ms"
                  + (f" ({pair(growth, '{:+.1f}')} ms on 0 variables)" if n else "")
                  + f"; --once {pair({k: med[k]['once'] for k in med})} ms = {pair(ratio, '{:.2f}')}× curl's "
                  f"{pair({k: med[k]['curl'] for k in med})} ms; peak RSS --dry-run {rss[label, 'dry-run'] / 1024:.1f}"
                  f" MiB, --once {rss[label, 'once'] / 1024:.1f} MiB, curl {rss[label, 'curl'] / 1024:.1f} MiB")
        target = f"own growth ≤ {GROWTH_MS[n]:.0f} ms" if n else f"own ≤ {OWN_MS:.0f} ms"
        target += f"; --once ≤ {CURL_RATIO}× curl; RSS ≤ 3 MiB (wall time)"
        ok = ((growth["wall"] <= GROWTH_MS[n] if n else own_ms["wall"] <= OWN_MS) and ratio["wall"] <= CURL_RATIO
              and max(rss[label, "dry-run"], rss[label, "once"]) <= RSS_KIB)
        rows.append((f"start-up, {label}: wall / CPU time (median of {runs} rounds)", result, target, ok))
    rows.append(("start-up: load average (1 min) while measured, 2 cores",
                 f"{load_before[0]:.1f} before, {load_after[0]:.1f} after", "", None))
