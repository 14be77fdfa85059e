//! When a JWK Set counts: the keys a client needs to verify an ID token must be there.
//!
//! A provider can serve its discovery document before it has signing keys: Dex answers its keys
//! endpoint with a 500 until keys are rotated in, Authentik serves `{}` for an application without
//! a signing key. A client that starts then fails on its first login, so `--check-jwks` holds the
//! gate until a usable key is published (RFC 7517: a `keys` array, each key with `kty`; keys a
//! client does not understand are ignored, as the RFC asks).

use serde_json::Value;
use std::fmt;

/// Why a JWK Set is not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JwksProblem {
    NotUtf8,
    Json(String),
    NoKeysMember,
    NoKeys,
    NoUsableKey { algs: Vec<String>, found: Vec<String> },
}

impl fmt::Display for JwksProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JwksProblem::NotUtf8 => write!(f, "JWK Set is not UTF-8"),
            JwksProblem::Json(e) => write!(f, "JWK Set is not a JSON object: {e}"),
            JwksProblem::NoKeysMember => write!(
                f,
                "JWK Set has no \"keys\" array (Authentik serves {{}} while the application has no signing key)"
            ),
            JwksProblem::NoKeys => write!(f, "JWK Set holds no key with a \"kty\" (no signing key published yet)"),
            JwksProblem::NoUsableKey { algs, found } => write!(
                f,
                "no signing key for the advertised algorithm(s) {}; the set holds {}",
                algs.join(", "),
                if found.is_empty() { "nothing usable".to_string() } else { found.join(", ") }
            ),
        }
    }
}

/// The key type and curve an algorithm needs (RFC 7518 §3.1, RFC 8037), or `None` for
/// algorithms that need no published key (`HS*` use the client secret, `none` nothing).
fn key_for_alg(alg: &str) -> Option<(&'static str, Option<&'static str>)> {
    Some(match alg {
        "RS256" | "RS384" | "RS512" | "PS256" | "PS384" | "PS512" => ("RSA", None),
        "ES256" => ("EC", Some("P-256")),
        "ES384" => ("EC", Some("P-384")),
        "ES512" => ("EC", Some("P-521")),
        "ES256K" => ("EC", Some("secp256k1")),
        "EdDSA" | "Ed25519" => ("OKP", None),
        "Ed448" => ("OKP", Some("Ed448")),
        _ => return None,
    })
}

/// Whether ID tokens signed with `alg` are verified with a published key (`HS*` use the client
/// secret, `none` nothing, so a provider offering only those publishes no key).
pub(crate) fn needs_public_key(alg: &str) -> bool {
    key_for_alg(alg).is_some()
}

fn usable_for(key: &serde_json::Map<String, Value>, alg: &str) -> bool {
    let Some((kty, crv)) = key_for_alg(alg) else { return false };
    let s = |k: &str| key.get(k).and_then(Value::as_str);
    s("kty") == Some(kty)
        && s("use").is_none_or(|u| u == "sig")
        && s("alg").is_none_or(|a| a == alg)
        && crv.is_none_or(|c| s("crv").is_none_or(|k| k == c))
}

/// Checks a JWK Set body against the document's `id_token_signing_alg_values_supported`.
/// Returns the number of keys that have a `kty`.
pub(crate) fn validate_jwks(body: &[u8], signing_algs: &[String]) -> Result<usize, JwksProblem> {
    let text = std::str::from_utf8(body).map_err(|_| JwksProblem::NotUtf8)?;
    let value: Value = serde_json::from_str(text).map_err(|e| JwksProblem::Json(e.to_string()))?;
    let Value::Object(set) = value else {
        return Err(JwksProblem::Json("a JSON value that is not an object".into()));
    };
    let Some(Value::Array(keys)) = set.get("keys") else {
        return Err(JwksProblem::NoKeysMember);
    };
    let keys: Vec<&serde_json::Map<String, Value>> =
        keys.iter().filter_map(Value::as_object).filter(|k| k.get("kty").and_then(Value::as_str).is_some()).collect();
    if keys.is_empty() {
        return Err(JwksProblem::NoKeys);
    }
    let needs_key: Vec<&String> = signing_algs.iter().filter(|a| key_for_alg(a).is_some()).collect();
    if !needs_key.is_empty() && !needs_key.iter().any(|alg| keys.iter().any(|k| usable_for(k, alg))) {
        let found = keys
            .iter()
            .map(|k| {
                let s = |n: &str| k.get(n).and_then(Value::as_str);
                let mut d = s("kty").unwrap_or("?").to_string();
                if let Some(a) = s("alg") {
                    d.push_str(&format!("/{a}"));
                }
                if let Some(u) = s("use") {
                    d.push_str(&format!(" ({u})"));
                }
                d
            })
            .collect();
        return Err(JwksProblem::NoUsableKey { algs: needs_key.into_iter().cloned().collect(), found });
    }
    Ok(keys.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn algs(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn real_key_sets_pass() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        for (file, alg) in [
            ("google.jwks.json", "RS256"),
            ("keycloak-mafiasi.jwks.json", "RS256"),
            ("kubernetes-sa.jwks.json", "RS256"),
            ("cognito.jwks.json", "RS256"),
            ("paypal.jwks.json", "RS256"),
        ] {
            let body = std::fs::read(dir.join(file)).unwrap();
            let n = validate_jwks(&body, &algs(&[alg])).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(n >= 1, "{file}");
        }
    }

    #[test]
    fn empty_or_unusable_sets_fail() {
        assert_eq!(validate_jwks(b"{}", &[]), Err(JwksProblem::NoKeysMember));
        assert_eq!(validate_jwks(br#"{"keys":[]}"#, &[]), Err(JwksProblem::NoKeys));
        assert_eq!(validate_jwks(br#"{"keys":[{"kid":"x"}]}"#, &[]), Err(JwksProblem::NoKeys));
        assert!(matches!(validate_jwks(b"<html>500</html>", &[]), Err(JwksProblem::Json(_))));
        let enc_only = br#"{"keys":[{"kty":"RSA","use":"enc","n":"x","e":"AQAB"}]}"#;
        let e = validate_jwks(enc_only, &algs(&["RS256"])).unwrap_err();
        assert!(e.to_string().contains("RSA (enc)"), "{e}");
        let ec = br#"{"keys":[{"kty":"EC","crv":"P-384","x":"a","y":"b"}]}"#;
        assert!(validate_jwks(ec, &algs(&["ES256"])).is_err());
        assert_eq!(validate_jwks(ec, &algs(&["ES256", "ES384"])), Ok(1));
    }

    #[test]
    fn symmetric_only_providers_need_no_published_key() {
        let oct_less = br#"{"keys":[{"kty":"RSA","use":"enc"}]}"#;
        assert_eq!(validate_jwks(oct_less, &algs(&["HS256"])), Ok(1));
        assert_eq!(validate_jwks(br#"{"keys":[{"kty":"RSA"}]}"#, &[]), Ok(1));
    }
}
