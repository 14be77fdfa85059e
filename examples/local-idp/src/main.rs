//! A local OpenID provider that comes up late, for a first run that needs no identity provider
//! (the README's "Try it without a provider"):
//!
//! ```sh
//! cargo run --manifest-path examples/local-idp/Cargo.toml -- --ready-after 5s
//! cargo run --release -q -- --issuer https://localhost:8443 --ca-file target/local-idp/ca.pem
//! ```
//!
//! It makes a throwaway CA, writes it to `target/local-idp/ca.pem`, prints the gate command to try,
//! and returns; a background copy of itself refuses connections until `--ready-after` has passed,
//! then serves a discovery document and the JWK Set it names over TLS on loopback for
//! `--serve-for` (ten minutes: time to try a few flags against it), and exits.
//!
//! A package of its own rather than an example of the gate's: cargo builds all of a package's
//! dev-dependencies for any of its examples, and the gate's library again with their features.
//! Its tests are the gate's (`tests/first_run.rs`), which build it as the README does.

use rcgen::{BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: local-idp [--ready-after 5s] [--serve-for 10m] [--port 8443] [--dir target/local-idp]";

const HELP: &str = "A throwaway OpenID provider on loopback that comes up late, to try wait-for-idp against.

It writes a throwaway CA to DIR/ca.pem, starts its server in the background, prints the gate
command to try and returns. The server refuses connections for --ready-after, then serves
https://localhost:PORT/.well-known/openid-configuration and the keys it names (/jwks) for
--serve-for, and exits (stop it sooner with the kill command it prints).
";

struct Options {
    ready_after: Duration,
    serve_for: Duration,
    port: u16,
    dir: PathBuf,
}

/// The options, or the text to print and the exit code: the help (0) or what is wrong (2).
fn options(args: impl IntoIterator<Item = String>) -> Result<Options, (String, i32)> {
    let mut o = Options {
        ready_after: Duration::from_secs(5),
        serve_for: Duration::from_secs(600),
        port: 8443,
        dir: PathBuf::from("target/local-idp"),
    };
    let usage = |e: String| (format!("local-idp: {e}\n{USAGE}"), 2);
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Err((format!("{HELP}\n{USAGE}"), 0));
        }
        if !["--ready-after", "--serve-for", "--port", "--dir"].contains(&flag.as_str()) {
            return Err(usage(format!("unknown flag {flag}")));
        }
        let value = args.next().ok_or_else(|| usage(format!("{flag} needs a value")))?;
        let duration = || humantime::parse_duration(&value).map_err(|e| usage(format!("{flag}: {e}")));
        match flag.as_str() {
            "--ready-after" => o.ready_after = duration()?,
            "--serve-for" => o.serve_for = duration()?,
            "--port" => o.port = value.parse().map_err(|e| usage(format!("--port: {e}")))?,
            _ => o.dir = PathBuf::from(value),
        }
    }
    Ok(o)
}

fn main() {
    let o = options(std::env::args().skip(1)).unwrap_or_else(|(text, code)| {
        if code == 0 {
            println!("{text}");
        } else {
            eprintln!("{text}");
        }
        std::process::exit(code)
    });
    if std::env::var_os("LOCAL_IDP_SERVE").is_some() {
        return serve(&o);
    }
    // Refuse to start over a provider that is already there: the port must be free.
    if let Err(e) = TcpListener::bind(("127.0.0.1", o.port)) {
        eprintln!("local-idp: port {} is not free ({e}); pick another with --port", o.port);
        std::process::exit(1);
    }
    let issuer = format!("https://localhost:{}", o.port);
    make_pki(&o.dir);
    let ca = o.dir.join("ca.pem");
    // The server runs in the background, so that this command returns and the next one is the gate.
    // Detached from this terminal or pipe (a script capturing this command's output must not wait
    // for the server to finish); what it says goes to a log beside the CA.
    let log = std::fs::File::create(o.dir.join("server.log")).unwrap();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(std::env::args().skip(1))
        .env("LOCAL_IDP_SERVE", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn();
    // Never waited for: it is meant to outlive this command, and init reaps it when it ends.
    #[allow(clippy::zombie_processes)]
    let server = child.unwrap_or_else(|e| {
        eprintln!("local-idp: cannot start the server: {e}");
        std::process::exit(1)
    });
    println!(
        "local-idp: {issuer} refuses connections for {} more, then serves for {} (stop it sooner: kill {}). \
         Try:\n\n  cargo run --release -q -- --issuer {issuer} --ca-file {}\n",
        humantime::format_duration(o.ready_after),
        humantime::format_duration(o.serve_for),
        server.id(),
        ca.display()
    );
}

/// A CA and a leaf for localhost, written to `dir`. Each has a name of its own: with rcgen's
/// default name on both, the leaf's issuer equals its subject, and curl and OpenSSL take it for
/// a self-signed certificate and reject it (rustls, which matches by key, did not mind).
fn make_pki(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name = DistinguishedName::new();
    ca.distinguished_name.push(DnType::CommonName, "local-idp throwaway CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    leaf.distinguished_name = DistinguishedName::new();
    leaf.distinguished_name.push(DnType::CommonName, "localhost");
    let leaf = leaf.signed_by(&leaf_key, &issuer).unwrap();
    std::fs::write(dir.join("ca.pem"), ca_cert.pem()).unwrap();
    std::fs::write(dir.join("leaf.pem"), format!("{}{}", leaf.pem(), ca_cert.pem())).unwrap();
    std::fs::write(dir.join("leaf.key"), leaf_key.serialize_pem()).unwrap();
}

/// The discovery document and the JWK Set it names. The key is a fresh P-256 one, published
/// for `ES256`, the one algorithm the document offers: nothing is ever signed here, and ring
/// makes no RSA keys, so the document does not claim `RS256` (which OpenID Connect Discovery asks
/// every provider to offer) for a key it could not show. go-jose and jwx decode the key, so the
/// gate's `--check-jwks` passes, and `--strict` finds every REQUIRED member.
fn documents(issuer: &str) -> (String, String) {
    use base64::Engine;
    let key = KeyPair::generate().unwrap();
    // An uncompressed P-256 point: 0x04, then x and y, 32 bytes each.
    let point = key.public_key_raw();
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let jwks = format!(
        r#"{{"keys":[{{"kty":"EC","crv":"P-256","x":"{}","y":"{}","use":"sig","alg":"ES256","kid":"local-idp"}}]}}"#,
        b64(&point[1..33]),
        b64(&point[33..65])
    );
    let doc = format!(
        r#"{{"issuer":"{issuer}","authorization_endpoint":"{issuer}/authorize","token_endpoint":"{issuer}/token","jwks_uri":"{issuer}/jwks","response_types_supported":["code"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256"]}}"#
    );
    (doc, jwks)
}

/// Waits, then serves the discovery document and the keys until `serve_for` has passed.
fn serve(o: &Options) {
    use rustls::pki_types::pem::PemObject;
    std::thread::sleep(o.ready_after);
    let issuer = format!("https://localhost:{}", o.port);
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(o.dir.join("leaf.pem")).unwrap().map(Result::unwrap).collect();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from_pem_file(o.dir.join("leaf.key")).unwrap());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind(("127.0.0.1", o.port)).expect("the port was free a moment ago");
    listener.set_nonblocking(true).unwrap();
    let documents = Arc::new(documents(&issuer));
    let until = Instant::now() + o.serve_for;
    while Instant::now() < until {
        match listener.accept() {
            Ok((tcp, _)) => {
                let (config, documents) = (config.clone(), documents.clone());
                std::thread::spawn(move || answer(tcp, config, &documents));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// One request: the document at its well-known URL, the keys at `/jwks`, 404 elsewhere.
fn answer(tcp: std::net::TcpStream, config: Arc<rustls::ServerConfig>, (doc, jwks): &(String, String)) {
    let _ = tcp.set_nonblocking(false);
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
    let mut stream = rustls::StreamOwned::new(rustls::ServerConnection::new(config).unwrap(), tcp);
    let mut line = String::new();
    let mut reader = BufReader::new(&mut stream);
    if reader.read_line(&mut line).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(n) if n > 2 => continue,
            _ => break,
        }
    }
    let (status, body) = match line.split_whitespace().nth(1) {
        Some("/.well-known/openid-configuration") => ("200 OK", doc.as_str()),
        Some("/jwks") => ("200 OK", jwks.as_str()),
        _ => ("404 Not Found", "{}"),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}
