"""Probes beside hostile connections (`bash bench/run --only probes`): how long the sidecar's
`/livez` takes to answer a probe loop (10 a second, as close as a kubelet gets) while other
clients hold its port (issue 35: eight connections that dripped a byte every 3 s once kept every
probe unanswered). The target is 100 ms for every probe.

Shapes, each `count` connections opened again as soon as the gate lets one go:
- bad-then-drip: a bad request (answered 400), then a byte every 3 s, so the drain after the
  refusal never ends on its own;
- head-drip: a request head never finished, a byte every 3 s (the classic slowloris);
- idle: connect and send nothing.
The gate waits for a provider that never answers (`--timeout 10m`), so its start-up loop runs
beside the listener throughout.
"""

import selectors
import socket
import subprocess
import sys
import threading
import time

SHAPES = [("bad-then-drip", 8), ("head-drip", 8), ("idle", 8), ("idle", 1000), ("head-drip", 1000)]
TARGET_MS = 100.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def attack(addr, shape, count, stop, opened):
    """Holds `count` connections of `shape` until `stop`, reopening each one the gate closes."""
    sel = selectors.DefaultSelector()
    last = {}

    def connect():
        s = socket.socket()
        s.settimeout(1)
        try:
            s.connect(addr)
        except OSError:
            s.close()
            return
        if shape == "bad-then-drip":
            s.sendall(b"BAD / HTTP/1.1\r\n\r\n")
        elif shape == "head-drip":
            s.sendall(b"GET /livez HTTP/1.1\r\n")
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        last[s] = time.monotonic()
        opened[0] += 1

    def drop(s):
        try:
            sel.unregister(s)
        except (KeyError, ValueError):
            pass
        last.pop(s, None)
        s.close()

    while not stop.is_set():
        while len(last) < count and not stop.is_set():
            connect()
        for key, _ in sel.select(timeout=0.05):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if data:
                continue
            if shape == "bad-then-drip" and key.fileobj in last:
                # The gate's half close after its 400: the drip goes on until a write fails.
                sel.unregister(key.fileobj)
                continue
            drop(key.fileobj)
        now = time.monotonic()
        for s, t in list(last.items()):
            if shape != "idle" and now - t >= 3:
                last[s] = now
                try:
                    s.send(b"x")
                except OSError:
                    drop(s)
    for s in list(last):
        drop(s)


def probe(addr):
    start = time.monotonic()
    with socket.create_connection(addr, timeout=30) as s:
        s.sendall(b"GET /livez HTTP/1.1\r\nHost: pod\r\n\r\n")
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    took = (time.monotonic() - start) * 1000
    if not (answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"\r\n\r\nok\n")):
        raise SystemExit(f"probe answered {answer!r}")
    return took


def one(bin_path, shape, count, seconds):
    port = free_port()
    gate = subprocess.Popen([bin_path, "--issuer", "https://127.0.0.1:1/", "--timeout", "10m",
                             "--serve", f"127.0.0.1:{port}"],
                            stderr=subprocess.PIPE, text=True)
    try:
        for line in gate.stderr:
            if "serving /readyz" in line:
                break
        else:
            raise SystemExit(f"the gate ended before serving: exit {gate.wait()}")
        threading.Thread(target=lambda: [None for _ in gate.stderr], daemon=True).start()
        addr = ("127.0.0.1", port)
        stop, opened = threading.Event(), [0]
        attacker = threading.Thread(target=attack, args=(addr, shape, count, stop, opened), daemon=True)
        attacker.start()
        time.sleep(1)  # the connections are in place
        times = []
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            times.append(probe(addr))
            time.sleep(0.1)
        stop.set()
        attacker.join()
        return sorted(times), opened[0]
    finally:
        gate.terminate()
        gate.wait()


def measure(args, certs, rows):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    for shape, count in SHAPES:
        print(f"bench: probes beside {count} {shape} connections", file=sys.stderr, flush=True)
        times, opened = one(args.bin, shape, count, args.probe_seconds)
        median, worst = times[len(times) // 2], times[-1]
        rows.append((f"probes beside {count} {shape} connections ({len(times)} probes at 10/s, "
                     f"{opened:,} hostile connections opened)",
                     f"median {median:.1f} ms, slowest {worst:.1f} ms",
                     f"every probe ≤ {TARGET_MS:.0f} ms", worst <= TARGET_MS))
