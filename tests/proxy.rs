//! Proxies: through `HTTPS_PROXY` the gate tunnels with CONNECT (the proxy's credentials never
//! logged), `HTTP_PROXY` does not apply to https and `NO_PROXY` exempts a host, as curl does; and
//! through the tunnel the certificate is still checked against the issuer's name. A proxy URL
//! that is bad input (exit 2, credentials redacted) is in `configuration.rs`.

use crate::support::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A minimal CONNECT proxy on loopback that records the targets it was asked for.
struct ConnectProxy {
    addr: SocketAddr,
    targets: Arc<Mutex<Vec<String>>>,
}

impl ConnectProxy {
    fn start() -> ConnectProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let targets = Arc::new(Mutex::new(Vec::new()));
        let seen = targets.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut client) = conn else { continue };
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if client.read(&mut byte).unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let head = String::from_utf8_lossy(&head).to_string();
                    let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
                    seen.lock().unwrap().push(head.lines().next().unwrap_or("").to_string());
                    let Ok(upstream) = TcpStream::connect(target.replace("localhost", "127.0.0.1")) else {
                        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
                        return;
                    };
                    let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                    let (mut c2, mut u2) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                    let mut upstream = upstream;
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut u2, &mut c2);
                    });
                    let _ = std::io::copy(&mut client, &mut upstream);
                });
            }
        });
        ConnectProxy { addr, targets }
    }
}

#[test]
fn https_proxy_tunnels_and_the_certificate_is_still_checked() {
    let ca = TestCa::new();
    let proxy = ConnectProxy::start();
    let (provider, iss) = ready_provider(&ca, "localhost", "");
    let proxy_url = format!("http://user:s3cret@{}", proxy.addr);

    let mut cmd = gate();
    cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--once"]).env("HTTPS_PROXY", &proxy_url);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(proxy.targets.lock().unwrap().len(), 1, "went through the proxy");
    assert!(proxy.targets.lock().unwrap()[0].starts_with(&format!("CONNECT localhost:{}", provider.port())));

    // HTTP_PROXY does not apply to https (curl's rule); NO_PROXY exempts a host.
    for env in [("HTTP_PROXY", proxy_url.clone()), ("NO_PROXY", "localhost".to_string())] {
        let mut cmd = gate();
        cmd.args(["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--once"]).env(env.0, &env.1);
        if env.0 == "NO_PROXY" {
            cmd.env("HTTPS_PROXY", &proxy_url);
        }
        let r = run(cmd);
        assert_exit(&r, 0);
        assert_eq!(proxy.targets.lock().unwrap().len(), 1, "{} bypasses the proxy", env.0);
    }

    // Through the tunnel the certificate is checked against the issuer's name.
    let (_w, wrong) =
        Provider::for_issuer(tls_mode(ca.leaf(&["other.test"])), "", |iss| serve_at(WELL_KNOWN, discovery_doc(iss)));
    let mut cmd = gate();
    cmd.args(["--issuer", &wrong, "--ca-file", &ca.ca_arg(), "--once"]).env("HTTPS_PROXY", &proxy_url);
    let r = run(cmd);
    assert_exit(&r, 1);
    assert_logged(&r, &["certificate is for other.test"]);
    assert_eq!(proxy.targets.lock().unwrap().len(), 2);
    assert!(!r.log().contains("s3cret"), "{}", r.log());
}
