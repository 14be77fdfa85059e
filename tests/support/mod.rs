//! Test support: a throwaway CA made at test time, a real local HTTPS provider whose behaviour
//! each test scripts, and a runner for the real binary. Everything listens on loopback only.

mod gate;
mod metadata;
mod pki;
mod provider;
mod real_peers;

pub use gate::*;
pub use metadata::*;
pub use pki::*;
pub use provider::*;
pub use real_peers::*;

use std::path::{Path, PathBuf};

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
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}
