"""What the measures share (bench.py's, and startup.py's and cluster_herd.py's that bench.py runs
or that import it): their progress on stderr, and Debian's nginx as the provider on loopback, on
a free port.
"""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path


def progress(message):
    """Progress on stderr as the run goes, so a long run is never silent."""
    print(f"bench: {message}", file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Nginx:
    """Debian's nginx serving TLS on loopback: 503 until a flag file exists, then the document.
    Every request is logged with its time ($msec), which is what the herd figures come from."""

    def __init__(self, certs, workdir):
        self.dir = Path(workdir)
        self.port = free_port()
        self.issuer = f"https://localhost:{self.port}"
        os.chmod(self.dir, 0o755)
        doc = json.dumps({
            "issuer": self.issuer, "authorization_endpoint": f"{self.issuer}/auth",
            "token_endpoint": f"{self.issuer}/token", "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"], "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        })
        (self.dir / "nginx.conf").write_text(f"""
worker_processes 2;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log;
events {{ worker_connections 8192; }}
http {{
  log_format stamp '$msec $status $arg_gate';
  access_log {self.dir}/access.log stamp;
  server {{
    listen 127.0.0.1:{self.port} ssl;
    ssl_certificate {certs}/leaf.pem;
    ssl_certificate_key {certs}/leaf.key;
    location = /.well-known/openid-configuration {{
      default_type application/json;
      if (-f {self.dir}/ready) {{ return 200 '{doc}'; }}
      return 503 'starting';
    }}
  }}
}}
""")
        subprocess.run(["nginx", "-c", str(self.dir / "nginx.conf")], check=True)
        wait_for_port(self.port)

    def ready(self):
        (self.dir / "ready").write_text("")

    def requests(self):
        """(unix time, status, client) of every request so far; the client is the URL's `gate`
        parameter, which each client of a herd sends with its own number."""
        out = []
        for line in (self.dir / "access.log").read_text().splitlines():
            stamp, status, client = line.split()
            out.append((float(stamp), int(status), client))
        return out

    def stop(self):
        subprocess.run(["nginx", "-c", str(self.dir / "nginx.conf"), "-s", "stop"], check=False)


def wait_for_port(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")
