//! Test support: a throwaway CA made at test time, a real local HTTPS provider whose behaviour
//! each test scripts, and a runner for the real binary. Everything listens on loopback only.

pub mod cluster;
mod gate;
mod metadata;
mod pki;
mod provider;
mod proxies;
mod real_peers;

pub use gate::*;
pub use metadata::*;
pub use pki::*;
pub use provider::*;
pub use proxies::*;
pub use real_peers::*;

use std::path::{Path, PathBuf};

/// How the deploy kit names the gate's image until `deploy/pin-image` names yours: a tag and a
/// digest, both placeholders the reference grammar refuses (InvalidImageName) at once.
pub const GATE_PLACEHOLDER: &str = "YOUR_REGISTRY/wait-for-idp:0.1.0@sha256:YOUR_DIGEST";

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

/// A provider that is ready at once: on loopback, with a certificate for `name`, serving a valid
/// document for the issuer `https://{name}:PORT{path}` at its OIDC well-known URL (404 elsewhere).
/// Returns the provider and its issuer.
pub fn ready_provider(ca: &TestCa, name: &str, path: &str) -> (Provider, String) {
    let slot = Reserved::new();
    let issuer = issuer_at(name, slot.port, path);
    let well_known = format!("{}{WELL_KNOWN}", path.trim_end_matches('/'));
    (slot.listen(tls_mode(ca.leaf(&[name])), serve_at(&well_known, discovery_doc(&issuer))), issuer)
}

/// A provider that answers every request with 503.
pub fn always_503(ca: &TestCa) -> Provider {
    Provider::start(tls_mode(ca.leaf(&["localhost"])), reply(|_, _| Reply::text(503, "no healthy upstream")))
}

/// Path of a fixture in tests/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(name)
}

/// The repository's root (where Cargo.toml is).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The crate's version, as Cargo.toml states it.
pub fn crate_version() -> String {
    let cargo = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    let line = cargo.lines().find(|l| l.starts_with("version = ")).unwrap();
    line.trim_start_matches("version = ").trim_matches('"').to_string()
}

/// Every file under `dir`, recursively, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { out.extend(files_under(&path)) } else { out.push(path) }
    }
    out.sort();
    out
}

/// Copies Debian's static busybox into an image's build context as `busybox`: the "application"
/// of the image tests, which needs no other file in a `scratch` image.
pub fn copy_static_busybox(context: &Path) {
    let busybox = Path::new("/bin/busybox");
    let described = std::process::Command::new("file").arg("-L").arg(busybox).output().map(|o| o.stdout);
    assert!(
        String::from_utf8_lossy(&described.unwrap_or_default()).contains("statically linked"),
        "the application image needs Debian's busybox-static, which the test command installs"
    );
    std::fs::copy(busybox, context.join("busybox")).unwrap();
}

/// `f` over every item, `workers` at a time (a differential's states each start processes and
/// wait on them, so a few run side by side); the results in the items' order.
pub fn in_parallel<T: Sync, R: Send>(items: &[T], workers: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = std::sync::Mutex::new(0usize);
    let done = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some(item) = items.get(i) else { return };
                    let result = f(item);
                    done.lock().unwrap().push((i, result));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap();
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Standard base64 with padding, as `Basic` carries `user:password` and a server may echo a secret.
pub fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        (0..4).for_each(|i| {
            out.push(if i <= chunk.len() { ABC[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' })
        });
    }
    out
}
