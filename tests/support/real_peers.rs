//! The real systems, run on loopback: Keycloak (dev and production mode), oauth2-proxy, Ory Hydra
//! and two clients of our own on real libraries (tests/real/clients). `.ci/real-peers` installs
//! them, pinned, into `.ci/cache/real` (or `$WAIT_FOR_IDP_REAL`); a missing one is a failure that
//! says how to install it, never a skip.
//!
//! A client's verdict is what the kubelet would see: the process exits (CrashLoopBackOff), or it
//! answers `/ping` (it started), or neither within the observation window (it hangs).

use super::pki::TestCa;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const KEYCLOAK_VERSION: &str = "26.7.3";

/// How long a real system may take to say it is ready before the test calls it hung. Readiness
/// itself is the system's own report (Keycloak's "Bootstrap completed", Hydra's listening port),
/// never a boot budget: this bound only stops a hang from holding the suite, and it is sized for
/// a loaded 2-core machine (load 10-15, where Keycloak's Quarkus augmentation alone took 157 s
/// and a cold start over 300 s), not for a fast one. 15 minutes.
pub const HANG_BOUND: Duration = Duration::from_secs(15 * 60);

/// Where `.ci/real-peers` put the real systems.
pub fn real_dir() -> PathBuf {
    std::env::var_os("WAIT_FOR_IDP_REAL")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/cache/real"))
}

/// A real program installed by `.ci/real-peers`; panics, saying how to install it, if it is not.
pub fn real_bin(name: &str) -> PathBuf {
    let path = real_dir().join("bin").join(name);
    assert!(path.exists(), "{} is not installed: run `bash .ci/real-peers` (the test command does)", path.display());
    path
}

/// A loopback port free right now, for programs that bind their own ports later: below the
/// kernel's ephemeral range, so that no outgoing connection of a busy suite (any process's) can
/// be given it as its own port in the meantime, which then fails the program's bind or, worse,
/// leaves a stranger answering on it. (Port 0's answer is an ephemeral port: seen to collide
/// under two suites at once.) Each test process walks its own sequence from an offset its pid
/// picks, so two suites at once rarely try the same port, and the bind check settles it.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let ephemeral_low: u32 = range.split_whitespace().next().and_then(|p| p.parse().ok()).unwrap_or(32768);
    let (low, span) = (10_000, ephemeral_low.saturating_sub(10_000).max(1000));
    let start = std::process::id().wrapping_mul(7919) % span;
    for _ in 0..span {
        let port = low + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span;
        if let Ok(port) = u16::try_from(port)
            && TcpListener::bind(("127.0.0.1", port)).is_ok()
        {
            return port;
        }
    }
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Panics unless the socket listening on loopback `port` is held by a process of `group` (a
/// [`Daemon`]'s process group, which is its pid): a 200 from a stranger on a port the program then
/// could not bind would otherwise read as the program's own start.
pub fn assert_listener_in_group(port: u16, group: u32, what: &str) {
    let out = Command::new("ss").args(["-tlnpH", &format!("sport = :{port}")]).output().expect("ss (iproute2) runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let pgrp = |pid: &str| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse::<u32>().ok())
    };
    let ours = text.split("pid=").skip(1).filter_map(|rest| rest.split(',').next()).any(|pid| pgrp(pid) == Some(group));
    assert!(ours, "{what}: port {port} answered, but its listener is not in process group {group}:\n{text}");
}

/// A child process in a process group of its own, killed with its group when dropped; its output
/// goes to a log file that failures show.
pub struct Daemon {
    pub child: Child,
    pub log: PathBuf,
}

impl Daemon {
    pub fn spawn(mut cmd: Command, log: PathBuf) -> Daemon {
        let out = std::fs::File::create(&log).unwrap();
        cmd.stdin(Stdio::null()).stdout(out.try_clone().unwrap()).stderr(out).process_group(0);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        Daemon { child, log }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `n` lines of the log, for a failure message.
    pub fn log_tail(&self, n: usize) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the group this child leads; harmless if it has already exited.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// A plain-HTTP GET on loopback; the status, or None if nothing answered.
pub fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// What a client did at start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Started {
    /// It answered `/ping`: it started.
    Serving,
    /// It exited with this code (`None`: killed by a signal) before serving.
    Exited(Option<i32>),
    /// It neither served nor exited within the window.
    Hung,
}

impl Started {
    pub fn started(&self) -> bool {
        *self == Started::Serving
    }

    pub fn describe(&self) -> String {
        match self {
            Started::Serving => "starts (/ping 200)".into(),
            Started::Exited(Some(code)) => format!("exits {code}"),
            Started::Exited(None) => "killed".into(),
            Started::Hung => "hangs (no /ping, no exit)".into(),
        }
    }
}

/// Watches a client until it serves `/ping` on `port`, exits, or `window` passes.
pub fn observe_start(daemon: &mut Daemon, port: u16, window: Duration) -> Started {
    let deadline = Instant::now() + window;
    loop {
        if let Some(status) = daemon.child.try_wait().unwrap() {
            return Started::Exited(status.code());
        }
        if http_status(port, "/ping") == Some(200) {
            assert_listener_in_group(port, daemon.child.id(), "/ping");
            return Started::Serving;
        }
        if Instant::now() > deadline {
            return Started::Hung;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// oauth2-proxy configured as the Helm chart configures it (OIDC provider, client from the
/// imported realm, cookie secret, the provider's CA), plus `env`, listening on `port`.
pub fn oauth2_proxy(dir: &Path, port: u16, env: &[(String, String)]) -> Daemon {
    let mut cmd = Command::new(real_bin("oauth2-proxy"));
    cmd.env_clear().env("PATH", "/usr/bin:/bin");
    cmd.envs([
        ("OAUTH2_PROXY_PROVIDER", "oidc"),
        ("OAUTH2_PROXY_CLIENT_ID", "oauth2-proxy"),
        ("OAUTH2_PROXY_CLIENT_SECRET", "test-only-client-secret"),
        ("OAUTH2_PROXY_COOKIE_SECRET", "0123456789abcdef0123456789abcdef"),
        ("OAUTH2_PROXY_EMAIL_DOMAINS", "*"),
        ("OAUTH2_PROXY_UPSTREAMS", "static://200"),
    ]);
    cmd.env("OAUTH2_PROXY_HTTP_ADDRESS", format!("127.0.0.1:{port}"));
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    Daemon::spawn(cmd, dir.join(format!("oauth2-proxy-{port}.log")))
}

/// Keycloak's two ways to run.
#[derive(Clone, Debug)]
pub enum KeycloakMode {
    /// `start-dev`: HTTP and HTTPS, the issuer follows the request's Host.
    Dev,
    /// `start --optimized` with `hostname` (default `https://localhost:HTTPS_PORT`): the issuer
    /// is the public URL whatever Host the request names. HTTPS only, as by default, unless
    /// `http` (as behind an ingress that terminates TLS, with `proxy-headers`).
    Production { hostname: Option<String>, http: bool },
}

/// A real Keycloak on loopback, serving TLS with a leaf of the test CA for `localhost` and
/// `127.0.0.1` (and the production hostname's host), importing the realm `main` at start.
pub struct Keycloak {
    pub daemon: Daemon,
    pub https_port: u16,
    pub http_port: u16,
    pub started: Instant,
    /// The copy this instance runs from, removed when it stops.
    copy: Option<PathBuf>,
}

impl Drop for Keycloak {
    fn drop(&mut self) {
        // SAFETY: as in Daemon's drop; the daemon itself is dropped after this.
        unsafe { libc::kill(-(self.daemon.child.id() as i32), libc::SIGKILL) };
        let _ = self.daemon.child.wait();
        if let Some(copy) = &self.copy {
            let _ = std::fs::remove_dir_all(copy);
        }
    }
}

impl Keycloak {
    /// Starts Keycloak cold (an empty database) and returns at once: it serves later.
    pub fn start(ca: &TestCa, mode: KeycloakMode, dir: &Path) -> Keycloak {
        Keycloak::start_on(ca, mode, dir, free_port())
    }

    /// As [`Keycloak::start`], serving HTTPS on `https_port` (for an issuer named before it starts).
    pub fn start_on(ca: &TestCa, mode: KeycloakMode, dir: &Path, https_port: u16) -> Keycloak {
        let (home, tag) = match &mode {
            KeycloakMode::Dev => (real_dir().join(format!("keycloak-dev-{KEYCLOAK_VERSION}")), "dev"),
            KeycloakMode::Production { .. } => (real_dir().join(format!("keycloak-prod-{KEYCLOAK_VERSION}")), "prod"),
        };
        assert!(home.join("bin/kc.sh").exists(), "Keycloak is not installed: run `bash .ci/real-peers`");
        // Production instances run from a copy of their own (hard links: `start --optimized` only
        // reads the build), so that several can run at once; dev mode rebuilds in place.
        let home = match mode {
            KeycloakMode::Dev => home,
            KeycloakMode::Production { .. } => {
                let copy = real_dir().join(format!("run-{}-{}", std::process::id(), free_port()));
                let status = Command::new("cp").arg("-al").arg(&home).arg(&copy).status().unwrap();
                assert!(status.success(), "cannot copy {} to {}", home.display(), copy.display());
                copy
            }
        };
        // A cold start: no database, the realm imported from tests/real/keycloak.
        let _ = std::fs::remove_dir_all(home.join("data"));
        std::fs::create_dir_all(home.join("data/import")).unwrap();
        let realm = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real/keycloak/realm-main.json");
        std::fs::copy(realm, home.join("data/import/realm-main.json")).unwrap();
        let (http_port, management_port) = (free_port(), free_port());
        let hostname = match &mode {
            KeycloakMode::Production { hostname, .. } => {
                Some(hostname.clone().unwrap_or_else(|| format!("https://localhost:{https_port}")))
            }
            KeycloakMode::Dev => None,
        };
        let mut names = vec!["localhost", "127.0.0.1"];
        names.extend(hostname.as_deref().map(host_of));
        // Copied at once: the CA writes every leaf to the same two file names.
        let (cert, key) = ca.leaf_pem_files(&names);
        let (cert, key) =
            (copy_to(&cert, dir, &format!("keycloak-{tag}.pem")), copy_to(&key, dir, &format!("keycloak-{tag}.key")));
        let mut cmd = Command::new(home.join("bin/kc.sh"));
        match &hostname {
            None => cmd.arg("start-dev"),
            Some(hostname) => cmd.args(["start", "--optimized", &format!("--hostname={hostname}")]),
        };
        if let KeycloakMode::Production { http: true, .. } = mode {
            cmd.args(["--http-enabled=true", "--proxy-headers=xforwarded"]);
        }
        cmd.args([
            "--import-realm",
            "--http-host=127.0.0.1",
            &format!("--http-port={http_port}"),
            &format!("--https-port={https_port}"),
            &format!("--http-management-port={management_port}"),
            &format!("--https-certificate-file={}", cert.display()),
            &format!("--https-certificate-key-file={}", key.display()),
        ]);
        cmd.env("KC_BOOTSTRAP_ADMIN_USERNAME", "admin").env("KC_BOOTSTRAP_ADMIN_PASSWORD", "test-only-admin");
        cmd.env("JAVA_OPTS_KC_HEAP", "-Xms64m -Xmx640m");
        let daemon = Daemon::spawn(cmd, dir.join(format!("keycloak-{tag}.log")));
        let copy = home.file_name().is_some_and(|n| n.to_string_lossy().starts_with("run-")).then_some(home);
        Keycloak { daemon, https_port, http_port, started: Instant::now(), copy }
    }

    /// Blocks until Keycloak says its bootstrap (the realm's import included) completed: its own
    /// log is the event, however long a loaded machine makes it take ([`HANG_BOUND`] only
    /// catches a hang). In production mode it listens first, answering 503 "Bootstrap in
    /// progress" meanwhile; in dev mode it listens after.
    pub fn wait_started(&mut self) -> Duration {
        let limit = HANG_BOUND;
        let deadline = Instant::now() + limit;
        loop {
            let log = self.daemon.log_text();
            if log.contains("Bootstrap completed") && log.contains("Listening on:") {
                return self.started.elapsed();
            }
            if let Some(status) = self.daemon.child.try_wait().unwrap() {
                panic!("Keycloak exited ({status}) before it started:\n{}", self.daemon.log_tail(40));
            }
            assert!(Instant::now() < deadline, "Keycloak did not start in {limit:?}:\n{}", self.daemon.log_tail(40));
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The realm's issuer as reached directly: `https://HOST:PORT/realms/REALM`.
    pub fn issuer(&self, host: &str, realm: &str) -> String {
        format!("https://{host}:{}/realms/{realm}", self.https_port)
    }
}

fn copy_to(from: &Path, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(from, &to).unwrap();
    to
}

/// The host of `https://host:port/...`.
pub fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

/// Ory Hydra v2 (OpenID Certified) on loopback over TLS with a leaf of the test CA, its database
/// in memory, publishing `issuer` as configured (`URLS_SELF_ISSUER`).
pub struct Hydra {
    pub daemon: Daemon,
    pub port: u16,
}

impl Hydra {
    /// Starts Hydra; `issuer` gets `{port}` replaced by its public port.
    pub fn start(ca: &TestCa, issuer: &str, dir: &Path) -> Hydra {
        let (port, admin) = (free_port(), free_port());
        let (cert, key) = ca.leaf_pem_files(&["localhost"]);
        let (cert, key) =
            (copy_to(&cert, dir, &format!("hydra-{port}.pem")), copy_to(&key, dir, &format!("hydra-{port}.key")));
        let mut cmd = Command::new(real_bin("hydra"));
        cmd.args(["serve", "all"]).env_clear();
        cmd.envs([
            ("DSN", "memory"),
            ("SECRETS_SYSTEM", "test-only-system-secret-0123456789"),
            ("SERVE_PUBLIC_HOST", "127.0.0.1"),
            ("SERVE_ADMIN_HOST", "127.0.0.1"),
            ("SERVE_TLS_ENABLED", "true"),
            ("LOG_LEVEL", "warn"),
        ]);
        cmd.env("URLS_SELF_ISSUER", issuer.replace("{port}", &port.to_string()));
        cmd.env("SERVE_PUBLIC_PORT", port.to_string()).env("SERVE_ADMIN_PORT", admin.to_string());
        cmd.env("SERVE_TLS_CERT_PATH", cert).env("SERVE_TLS_KEY_PATH", key);
        Hydra { daemon: Daemon::spawn(cmd, dir.join(format!("hydra-{port}.log"))), port }
    }

    /// Blocks until Hydra accepts connections (it listens once it can serve); [`HANG_BOUND`]
    /// only catches a hang.
    pub fn wait_listening(&mut self) {
        let limit = HANG_BOUND;
        let deadline = Instant::now() + limit;
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self.daemon.child.try_wait().unwrap() {
                panic!("Hydra exited ({status}) before it listened:\n{}", self.daemon.log_tail(30));
            }
            assert!(Instant::now() < deadline, "Hydra did not listen in {limit:?}:\n{}", self.daemon.log_tail(30));
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
