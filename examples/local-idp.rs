//! A local OpenID provider that comes up late, for a first run that needs no identity provider:
//!
//! ```sh
//! cargo run --release --example local-idp -- --ready-after 5s
//! target/release/wait-for-idp --issuer https://localhost:8443 --ca-file target/local-idp/ca.pem
//! ```
//!
//! It makes a throwaway CA, writes it to `target/local-idp/ca.pem`, prints the gate command to try,
//! and returns; a background copy of itself refuses connections until `--ready-after` has passed,
//! then serves a discovery document over TLS on loopback for `--serve-for` (a minute), and exits.

use rcgen::{BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: local-idp [--ready-after 5s] [--serve-for 60s] [--port 8443] [--dir target/local-idp]";

struct Options {
    ready_after: Duration,
    serve_for: Duration,
    port: u16,
    dir: PathBuf,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        ready_after: Duration::from_secs(5),
        serve_for: Duration::from_secs(60),
        port: 8443,
        dir: PathBuf::from("target/local-idp"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let duration = || humantime::parse_duration(&value).map_err(|e| format!("{flag}: {e}\n{USAGE}"));
        match flag.as_str() {
            "--ready-after" => o.ready_after = duration()?,
            "--serve-for" => o.serve_for = duration()?,
            "--port" => o.port = value.parse().map_err(|e| format!("--port: {e}\n{USAGE}"))?,
            "--dir" => o.dir = PathBuf::from(value),
            _ => return Err(format!("unknown flag {flag}\n{USAGE}")),
        }
    }
    Ok(o)
}

fn main() {
    let o = options().unwrap_or_else(|e| {
        eprintln!("local-idp: {e}");
        std::process::exit(2)
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
    let child = Command::new(std::env::current_exe().unwrap())
        .args(std::env::args().skip(1))
        .env("LOCAL_IDP_SERVE", "1")
        // Detached from this terminal or pipe: a script capturing this command's output must not
        // wait for the server to finish.
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    if let Err(e) = child {
        eprintln!("local-idp: cannot start the server: {e}");
        std::process::exit(1);
    }
    println!(
        "local-idp: {issuer} refuses connections for {} more, then serves for {}. Try:\n\n  \
         target/release/wait-for-idp --issuer {issuer} --ca-file {}\n",
        humantime::format_duration(o.ready_after),
        humantime::format_duration(o.serve_for),
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

/// Waits, then serves the discovery document until `serve_for` has passed.
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
    let doc = serde_json::json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    })
    .to_string();
    let until = Instant::now() + o.serve_for;
    while Instant::now() < until {
        match listener.accept() {
            Ok((tcp, _)) => {
                let (config, doc) = (config.clone(), doc.clone());
                std::thread::spawn(move || answer(tcp, config, &doc));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// One request: the document at its well-known URL, 404 elsewhere.
fn answer(tcp: std::net::TcpStream, config: Arc<rustls::ServerConfig>, doc: &str) {
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
    let found = line.split_whitespace().nth(1) == Some("/.well-known/openid-configuration");
    let (status, body) = if found { ("200 OK", doc) } else { ("404 Not Found", "{}") };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

#[cfg(test)]
mod tests {
    /// What curl and every OpenSSL client check: the leaf verifies against the CA alone.
    #[test]
    fn openssl_verifies_the_leaf_against_the_ca() {
        let dir = std::env::temp_dir().join(format!("local-idp-pki-{}", std::process::id()));
        super::make_pki(&dir);
        let out = std::process::Command::new("openssl")
            .arg("verify")
            .arg("-CAfile")
            .arg(dir.join("ca.pem"))
            .arg(dir.join("leaf.pem"))
            .output()
            .expect("this test needs the openssl command");
        let _ = std::fs::remove_dir_all(&dir);
        let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && said.contains(": OK"), "{said}");
    }
}
