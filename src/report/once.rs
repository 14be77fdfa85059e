//! The `--once` summary on stdout: what a single passing check found, one `key  value` row each.

use crate::probe::Ready;
use crate::probe::ServerReady;
use crate::rules::authorization_server::Registration;
use crate::screen_text;
use crate::url;

/// The longest value a row shows: a provider's list can be a megabyte.
const VALUE_MAX: usize = 2048;

/// A row: a provider's value escaped (a line break in it would forge a row, or a line of the
/// log's) and bounded.
fn push_row(out: &mut String, key: &str, value: &str) {
    out.push_str(&format!("{key:<24}{}\n", screen_text::quoted(value, VALUE_MAX)));
}

/// The `--once` summary for stdout: the resource's metadata, if any, then each server.
pub(crate) fn once_summary(ready: &Ready) -> String {
    let mut out = String::new();
    if let Some(at) = &ready.resource_metadata {
        push_row(&mut out, "resource metadata", &url::redact(at));
    }
    for w in &ready.warnings {
        push_row(&mut out, "warning", w);
    }
    for server in &ready.servers {
        out.push_str(&server_summary(server));
    }
    out
}

fn server_summary(server: &ServerReady) -> String {
    let d = &server.document;
    let mut out = String::new();
    let mut row = |k: &str, v: Option<&str>| {
        if let Some(v) = v {
            push_row(&mut out, k, v);
        }
    };
    row("issuer", Some(&d.issuer));
    let url = url::redact(&server.url);
    row("metadata", Some(&url));
    row("authorization_endpoint", d.authorization_endpoint.as_deref());
    row("token_endpoint", d.token_endpoint.as_deref());
    row("userinfo_endpoint", d.userinfo_endpoint.as_deref());
    row("jwks_uri", d.jwks_uri.as_deref());
    let algs = d.id_token_signing_alg_values_supported.join(", ");
    row("signing algorithms", (!algs.is_empty()).then_some(algs.as_str()));
    row("registration", d.registration.map(Registration::as_str));
    for w in &d.warnings {
        row("warning", Some(w));
    }
    out
}
