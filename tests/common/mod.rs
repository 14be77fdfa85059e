//! Test support: a throwaway CA made at test time, a real local HTTPS provider whose behaviour
//! each test scripts, and a runner for the real binary. Everything listens on loopback only.
#![allow(dead_code)]

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub type Chain = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// A certificate authority that exists only for one test.
pub struct TestCa {
    pub dir: tempfile::TempDir,
    /// PEM of the CA certificate, for --ca-file.
    pub pem_path: PathBuf,
    issuer: Issuer<'static, KeyPair>,
    der: CertificateDer<'static>,
}

impl TestCa {
    pub fn new() -> TestCa {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, "wait-for-idp test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pem_path = dir.path().join("ca.pem");
        std::fs::write(&pem_path, cert.pem()).unwrap();
        let der = cert.der().clone();
        TestCa { dir, pem_path, issuer: Issuer::new(params, key), der }
    }

    pub fn ca_arg(&self) -> String {
        self.pem_path.display().to_string()
    }

    /// A leaf certificate for `names`, valid now.
    pub fn leaf(&self, names: &[&str]) -> Chain {
        self.leaf_valid(names, (2020, 1, 1), (2090, 1, 1))
    }

    /// A leaf valid between two dates (year, month, day), e.g. one that has expired.
    pub fn leaf_valid(&self, names: &[&str], not_before: (i32, u8, u8), not_after: (i32, u8, u8)) -> Chain {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (
            vec![cert.der().clone(), self.der.clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
    }

    /// A leaf that lists `name` as a DNS name only, even when it is an IP address (a common
    /// mistake: `DNS:127.0.0.1` instead of `IP:127.0.0.1`).
    pub fn leaf_dns_name_only(&self, name: &str) -> Chain {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![rcgen::SanType::DnsName(name.try_into().unwrap())];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (
            vec![cert.der().clone(), self.der.clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
    }

    /// A leaf for `names` written as PEM files (certificate chain, key), for peers that read files.
    pub fn leaf_pem_files(&self, names: &[&str]) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let params = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let (cert_path, key_path) = (self.path("leaf.pem"), self.path("leaf.key"));
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        (cert_path, key_path)
    }

    /// A file path inside the test's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A self-signed certificate for `names` marked `CA:TRUE`, as `openssl req -x509` makes it, valid
/// between two dates: the server's chain, and its PEM written to `dir` for `--ca-file`.
pub fn self_signed_ca_cert(
    dir: &Path,
    names: &[&str],
    not_before: (i32, u8, u8),
    not_after: (i32, u8, u8),
) -> (Chain, PathBuf) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
    params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
    let cert = params.self_signed(&key).unwrap();
    let pem = dir.join(format!("self-signed-ca-{}.pem", names.join("-")));
    std::fs::write(&pem, cert.pem()).unwrap();
    ((vec![cert.der().clone()], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()))), pem)
}

/// A TLS server that requires a client certificate signed by `ca` (mutual TLS), optionally
/// speaking TLS 1.2 only.
pub fn tls_mode_requiring_client_cert(chain: Chain, ca: &TestCa, tls12_only: bool) -> Mode {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der.clone()).unwrap();
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build().unwrap();
    let versions: &[&rustls::SupportedProtocolVersion] =
        if tls12_only { &[&rustls::version::TLS12] } else { rustls::DEFAULT_VERSIONS };
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain.0, chain.1)
        .unwrap();
    Mode::Tls(Arc::new(config))
}

/// A self-signed leaf, as an ingress shows before its real certificate is issued.
pub fn self_signed(names: &[&str]) -> Chain {
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let cert = params.self_signed(&key).unwrap();
    (vec![cert.der().clone()], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())))
}

/// What the provider saw.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// How the provider answers one request.
pub enum Reply {
    /// A complete response.
    Response { status: u16, headers: Vec<(String, String)>, body: Vec<u8> },
    /// These bytes, then close.
    Raw(Vec<u8>),
    /// Keep the connection open and say nothing.
    Hang,
    /// Headers, then one body byte every `every`, forever.
    Drip { every: Duration },
    /// A chunked body that never ends.
    Endless,
    /// Part of a body, then a TCP reset.
    ResetMidBody,
}

impl Reply {
    pub fn json(status: u16, body: impl Into<String>) -> Reply {
        Reply::Response {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.into().into_bytes(),
        }
    }

    pub fn text(status: u16, body: &str) -> Reply {
        Reply::Response {
            status,
            headers: vec![("Content-Type".into(), "text/html".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::Response { status, headers: vec![("Location".into(), location.into())], body: Vec::new() }
    }
}

pub type Handler = Arc<dyn Fn(&Request, usize) -> Reply + Send + Sync>;

/// A discovery document with every REQUIRED OIDC member.
pub fn discovery_doc(issuer: &str) -> String {
    let base = issuer.trim_end_matches('/');
    serde_json::json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{base}/protocol/openid-connect/auth"),
        "token_endpoint": format!("{base}/protocol/openid-connect/token"),
        "jwks_uri": format!("{base}/protocol/openid-connect/certs"),
        "userinfo_endpoint": format!("{base}/protocol/openid-connect/userinfo"),
        "response_types_supported": ["code", "id_token", "code id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "grant_types_supported": ["authorization_code", "refresh_token"]
    })
    .to_string()
}

/// Serves `body` (status 200) at `path` and 404 elsewhere, as a provider does.
pub fn serve_at(path: &str, body: String) -> Handler {
    let path = path.to_string();
    Arc::new(move |req, _| {
        if req.path == path {
            Reply::json(200, body.clone())
        } else {
            Reply::json(404, r#"{"error":"Realm does not exist"}"#)
        }
    })
}

/// 127.0.0.1:port.
pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A provider that is ready at once: on loopback, with a certificate for `name`, serving a valid
/// document for the issuer `https://{name}:PORT{path}` at its OIDC well-known URL (404 elsewhere).
/// Returns the provider and its issuer.
pub fn ready_provider(ca: &TestCa, name: &str, path: &str) -> (Provider, String) {
    let port = free_port();
    let issuer = format!("https://{name}:{port}{path}");
    let well_known = format!("{}/.well-known/openid-configuration", path.trim_end_matches('/'));
    let provider =
        Provider::start_on(loopback(port), tls_mode(ca.leaf(&[name])), serve_at(&well_known, discovery_doc(&issuer)));
    (provider, issuer)
}

/// How the listener treats a new connection before HTTP.
#[derive(Clone)]
pub enum Mode {
    Tls(Arc<rustls::ServerConfig>),
    Plain,
    /// Accept TCP, then never speak (a stuck TLS terminator).
    Silent,
    /// Write these bytes as soon as a connection arrives, whatever it sends, then close (a
    /// plain-HTTP server answering a TLS hello with 400).
    Greeting(Vec<u8>),
}

pub fn tls_mode(chain: Chain) -> Mode {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain.0, chain.1)
        .unwrap();
    Mode::Tls(Arc::new(config))
}

/// A local provider on loopback. Stops when dropped.
pub struct Provider {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicUsize>,
    pub seen: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl Provider {
    pub fn start(mode: Mode, handler: Handler) -> Provider {
        Provider::start_on("127.0.0.1:0".parse().unwrap(), mode, handler)
    }

    pub fn start_on(addr: SocketAddr, mode: Mode, handler: Handler) -> Provider {
        let listener = TcpListener::bind(addr).unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s, st) = (requests.clone(), seen.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(tcp) = conn else { continue };
                let (mode, handler, r, s, st) = (mode.clone(), handler.clone(), r.clone(), s.clone(), st.clone());
                std::thread::spawn(move || serve_connection(tcp, mode, handler, r, s, st));
            }
        });
        Provider { addr, requests, seen, stop }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

fn serve_connection(
    tcp: TcpStream,
    mode: Mode,
    handler: Handler,
    requests: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
) {
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(30)));
    let raw = tcp.try_clone().unwrap();
    let stream: Box<dyn Stream> = match mode {
        Mode::Silent => {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
            return;
        }
        Mode::Greeting(bytes) => {
            let mut tcp = tcp;
            let mut hello = [0u8; 512];
            let _ = tcp.read(&mut hello);
            let _ = tcp.write_all(&bytes);
            return;
        }
        Mode::Plain => Box::new(tcp),
        Mode::Tls(config) => {
            let conn = rustls::ServerConnection::new(config).unwrap();
            Box::new(rustls::StreamOwned::new(conn, tcp))
        }
    };
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
    }
    let req = Request { method, path, headers };
    let n = requests.fetch_add(1, Ordering::SeqCst);
    seen.lock().unwrap().push(req.clone());
    let reply = handler(&req, n);
    let mut out = reader.into_inner();
    let _ = match reply {
        Reply::Response { status, headers, body } => {
            let mut head = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("\r\n");
            out.write_all(head.as_bytes()).and_then(|_| out.write_all(&body)).and_then(|_| out.flush())
        }
        Reply::Raw(bytes) => out.write_all(&bytes).and_then(|_| out.flush()),
        Reply::Hang => {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(())
        }
        Reply::Drip { every } => {
            let _ =
                out.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n");
            let _ = out.flush();
            while !stop.load(Ordering::SeqCst) {
                if out.write_all(b" ").and_then(|_| out.flush()).is_err() {
                    break;
                }
                std::thread::sleep(every);
            }
            Ok(())
        }
        Reply::Endless => {
            let _ = out
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
            let chunk = format!("{:x}\r\n{}\r\n", 4096, " ".repeat(4096));
            while !stop.load(Ordering::SeqCst) {
                if out.write_all(chunk.as_bytes()).is_err() {
                    break;
                }
            }
            Ok(())
        }
        Reply::ResetMidBody => {
            let _ = out.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{\"issuer\":",
            );
            let _ = out.flush();
            std::thread::sleep(Duration::from_millis(50));
            set_linger_zero(&raw);
            drop(out);
            let _ = raw.shutdown(Shutdown::Both);
            Ok(())
        }
    };
}

/// SO_LINGER 0 makes close() send a RST.
fn set_linger_zero(tcp: &TcpStream) {
    use std::os::fd::AsRawFd;
    #[repr(C)]
    struct Linger {
        l_onoff: i32,
        l_linger: i32,
    }
    unsafe extern "C" {
        fn setsockopt(fd: i32, level: i32, name: i32, value: *const Linger, len: u32) -> i32;
    }
    let l = Linger { l_onoff: 1, l_linger: 0 };
    // SOL_SOCKET = 1, SO_LINGER = 13 on Linux.
    unsafe {
        setsockopt(tcp.as_raw_fd(), 1, 13, &l, std::mem::size_of::<Linger>() as u32);
    }
}

/// A port with nothing listening (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The outcome of one run of the binary.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    pub fn log(&self) -> &str {
        &self.stderr
    }
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_wait-for-idp")
}

/// The binary with a clean environment: no proxies, no WAIT_FOR_IDP_* from the developer's shell.
pub fn gate() -> Command {
    let mut cmd = Command::new(bin());
    cmd.env_clear();
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// The gate for `issuer`, trusting the test CA.
pub fn gate_for(ca: &TestCa, issuer: &str) -> Command {
    let mut cmd = gate();
    cmd.args(["--issuer", issuer, "--ca-file", &ca.ca_arg()]);
    cmd
}

/// Runs and measures, on the monotonic clock, killing the child after `limit` so a broken
/// build cannot hang the suite.
pub fn run_with_limit(mut cmd: Command, limit: Duration) -> Run {
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn wait-for-idp");
    // Either stream may have been redirected elsewhere by the test (a file, /dev/full).
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.map(|mut o| o.read_to_string(&mut s));
        s
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.map(|mut e| e.read_to_string(&mut s));
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let elapsed = started.elapsed();
    Run { code: status.code(), stdout: out_thread.join().unwrap(), stderr: err_thread.join().unwrap(), elapsed }
}

pub fn run(cmd: Command) -> Run {
    run_with_limit(cmd, Duration::from_secs(60))
}

/// Asserts the deadline promise: total run time within --timeout + 0.1 s.
pub fn assert_within(run: &Run, timeout: Duration) {
    assert!(
        run.elapsed <= timeout + Duration::from_millis(100),
        "ran {:?}, over the promised {:?} + 0.1s\n{}",
        run.elapsed,
        timeout,
        run.stderr
    );
}

/// Path of a fixture in tests/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}
