//! Authorization server (RFC 8414) and protected resource (RFC 9728) metadata, a provider that
//! serves a table of routes, and the gate for a `--resource`: what discovery chains are made of.

use super::gate::{Run, gate, run};
use super::pki::TestCa;
use super::provider::{Handler, Reply, reply};
use serde_json::json;

pub const OAUTH: &str = "/.well-known/oauth-authorization-server";
pub const PRM: &str = "/.well-known/oauth-protected-resource";

/// An RFC 8414 document for `issuer` (no jwks_uri: it is optional there).
pub fn oauth_doc(issuer: &str) -> String {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{}/authorize", issuer.trim_end_matches('/')),
        "token_endpoint": format!("{}/token", issuer.trim_end_matches('/')),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    })
    .to_string()
}

pub fn prm_doc(resource: &str, servers: &[&str]) -> String {
    json!({ "resource": resource, "authorization_servers": servers }).to_string()
}

/// Serves each path's reply; 404 elsewhere.
pub fn routes(table: Vec<(String, u16, String)>) -> Handler {
    reply(move |req, _| match table.iter().find(|(path, _, _)| *path == req.path) {
        Some((_, status, body)) => Reply::json(*status, body.clone()),
        None => Reply::json(404, r#"{"error":"not_found"}"#),
    })
}

/// The gate for `--resource`, trusting the test CA, with `--once --output json` and `extra`.
pub fn resource_gate(ca: &TestCa, resource: &str, extra: &[&str]) -> Run {
    let mut cmd = gate();
    cmd.args(["--resource", resource, "--ca-file", &ca.ca_arg(), "--once", "--output", "json"]).args(extra);
    run(cmd)
}
