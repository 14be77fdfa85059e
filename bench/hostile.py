"""Hostile documents (`bash bench/run --only hostile`): the peak RSS of one `--once` check of the
static binary against a local TLS provider whose document, or key set, is a worst shape for a
JSON reader, each just under the 16 MiB body bound once decoded (issue 35). The shipped
manifests give the gate a 32 Mi memory limit; the target is 40 MiB for any of them, so that the
limit holds with room whatever a server in the chain sends.

Every shape but the giant issuer is a document the gate accepts (exit 0), its hostile part in a
member no rule reads or in one the rules read whole (`keys`, `scopes_supported`, the signing
algorithms); the giant issuer and the junk key set are refused (exit 1). Each run ends with its
JSON summary and its termination message: a run killed or aborted fails the bench.
"""

import gzip
import http.server
import json
import random
import ssl
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

MIB = 1 << 20
# The decoded size of every shape: the body bound less 4 KiB, as the big-document measure.
SIZE = 16 * MIB - 4096
TARGET_KIB = 40 * 1024


def repeat(unit, size, sep=b","):
    """`unit` repeated, separated by `sep`, to about `size` bytes."""
    n = max(1, size // (len(unit) + len(sep)))
    return sep.join([unit] * n)


def document(at, extra=b"", **members):
    """A discovery document that passes for the issuer `at`, with `members` replaced and raw
    `extra` members added."""
    issuer = at
    doc = {
        "issuer": issuer, "authorization_endpoint": f"{issuer}/auth", "token_endpoint": f"{issuer}/token",
        "jwks_uri": f"{issuer}/jwks", "response_types_supported": ["code"], "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"], "code_challenge_methods_supported": ["S256"],
    }
    doc.update(members)
    head = json.dumps(doc).encode()[:-1]
    return head + (b"," + extra if extra else b"") + b"}"


def padded(at, name, value_of, **members):
    """A document whose member `name` holds `value_of(room)`, the whole about SIZE bytes."""
    room = SIZE - len(document(at, **members)) - len(name) - 8
    return document(at, b'"' + name.encode() + b'":' + value_of(room), **members)


def shapes(issuer):
    """(name, document body, key set body or None, gzip?, extra arguments, expected exit)."""
    rng = random.Random(35)
    # Bytes a JSON string may hold as they are: no control character, quote or backslash.
    noise = bytes(b for b in rng.randbytes(SIZE + SIZE // 8) if b >= 0x20 and b not in b'"\\')[:SIZE - 4096]
    deep = b"[" * 9_998 + b"]" * 9_998  # with the array and the object around it: Go's 10,000
    key = b'{"kty":"oct","k":"AA"}'
    return [
        ("objects {\"a\":0} in an unread member, gzip", padded(issuer, "x", lambda n: b"[" + repeat(b'{"a":0}', n) + b"]"), None, True, [], 0),
        ("numbers [0,0,…] in an unread member, gzip", padded(issuer, "x", lambda n: b"[" + repeat(b"0", n) + b"]"), None, True, [], 0),
        ("huge exponents 1e400, gzip", padded(issuer, "x", lambda n: b"[" + repeat(b"1e400", n) + b"]"), None, True, [], 0),
        ("invalid UTF-8 (0xFF) in a string, gzip", padded(issuer, "x", lambda n: b'"' + b"\xff" * n + b'"'), None, True, [], 0),
        ("nesting 10,000 deep, repeated, gzip", padded(issuer, "x", lambda n: b"[" + repeat(deep, n) + b"]"), None, True, [], 0),
        ("top-level members \"a\":0 by the million, gzip", document(issuer, repeat(b'"a":0', SIZE - 4096)), None, True, [], 0),
        ("random bytes in a string, gzip (incompressible)", document(issuer, b'"x":"' + noise + b'"'), None, True, [], 0),
        ("numbers [0,0,…], not compressed", padded(issuer, "x", lambda n: b"[" + repeat(b"0", n) + b"]"), None, False, [], 0),
        ("scopes_supported of 16 MiB, --metadata auto, gzip",
         padded(issuer, "scopes_supported", lambda n: b"[" + repeat(b'"openid"', n) + b"]"), None, True,
         ["--metadata", "auto"], 0),
        ("signing algorithms of 16 MiB, --check-jwks, gzip",
         padded(issuer, "id_token_signing_alg_values_supported", lambda n: b'["RS256",' + repeat(b'"HS256"', n) + b"]"),
         json.dumps({"keys": [{"kty": "RSA", "n": "249XwEo9k4tM8fMxV7zxOhcr", "e": "AQAB"}]}).encode(), True,
         ["--check-jwks"], 0),
        ("keys: 16 MiB of keys none usable, --check-jwks, gzip", document(issuer),
         b'{"keys":[' + repeat(key, SIZE - 64) + b"]}", True, ["--check-jwks"], 1),
        ("authorization_endpoint a 16 MiB string, gzip",
         document(issuer, authorization_endpoint=issuer + "/" + "a" * (SIZE - 4096)), None, True, [], 0),
        ("jwks_uri a 16 MiB string, --check-jwks, gzip",
         document(issuer, jwks_uri=issuer + "/" + "k" * (SIZE - 4096)), None, True, ["--check-jwks"], 1),
        ("issuer a 16 MiB string, gzip", document(issuer, issuer="https://" + "h" * (SIZE - 4096)), None, True, [], 1),
    ]


class Provider:
    """A TLS provider on 127.0.0.1 serving `files` (path -> (body, gzip?)), every other path 404."""

    def __init__(self, certs: Path):
        self.files = {}
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certs / "leaf.pem", certs / "leaf.key")
        provider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                body, zipped = provider.files.get(self.path.split("?")[0], (b"{}", False))
                status = 200 if self.path.split("?")[0] in provider.files else 404
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if zipped:
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self):
                conn, addr = self.socket.accept()
                return ctx.wrap_socket(conn, server_side=True), addr

            def handle_error(self, request, client_address):
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def one_run(binary, ca, issuer, extra):
    """One --once check under GNU time: (peak RSS KiB, exit code, the JSON summary, the
    termination message)."""
    with tempfile.TemporaryDirectory() as d:
        term, rss_file = Path(d) / "termination", Path(d) / "rss"
        argv = [binary, "--once", "--issuer", issuer, "--ca-file", str(ca), "--output", "json",
                "--termination-log", str(term), *extra]
        term.touch()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(rss_file), *argv],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=120)
        rss = int(rss_file.read_text().strip().splitlines()[-1])
        summary = json.loads(done.stdout.decode().strip().splitlines()[-1]) if done.stdout.strip() else None
        return rss, done.returncode, summary, term.read_text()


def measure(args, certs, rows):
    provider = Provider(certs)
    issuer = f"https://127.0.0.1:{provider.port}"
    worst = 0
    try:
        for name, doc, keys, zipped, extra, expected in shapes(issuer):
            pack = (lambda b: gzip.compress(b, 6)) if zipped else (lambda b: b)
            wire = pack(doc)
            provider.files = {"/.well-known/openid-configuration": (wire, zipped),
                              "/.well-known/oauth-authorization-server": (wire, zipped)}
            if keys is not None:
                provider.files["/jwks"] = (pack(keys), zipped)
            size = len(doc) + (len(keys) if keys is not None else 0)
            peaks = []
            for k in range(args.runs):
                print(f"bench: hostile documents: {name}: run {k + 1} of {args.runs}", flush=True, file=sys.stderr)
                rss, code, summary, term = one_run(args.bin, certs / "ca.pem", issuer, extra)
                if code != expected or summary is None or not term:
                    raise SystemExit(f"hostile document {name!r}: exit {code} (expected {expected}), "
                                     f"summary {summary!r:.200}, termination message {term!r:.200}")
                peaks.append(rss)
            peak = sorted(peaks)[len(peaks) // 2]
            worst = max(worst, max(peaks))
            wire_total = len(wire) + (len(pack(keys)) if keys is not None else 0)
            rows.append((f"hostile document: {name} ({size / MIB:.1f} MiB decoded, {wire_total:,} B on the wire; "
                         f"exit {expected}) (median of {args.runs})",
                         f"peak RSS {peak / 1024:.1f} MiB (max {max(peaks) / 1024:.1f})",
                         "peak RSS ≤ 40 MiB", max(peaks) <= TARGET_KIB))
    finally:
        provider.close()
