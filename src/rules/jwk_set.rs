//! When a JWK Set counts: the keys a client needs to verify an ID token must be there.
//!
//! A provider can serve its discovery document before it has signing keys: Dex answers its keys
//! endpoint with a 500 until keys are rotated in, Authentik serves `{}` for an application without
//! a signing key. A client that starts then fails on its first login, so `--check-jwks` holds the
//! gate until a usable key is published (RFC 7517: a `keys` array, each key with `kty`).
//!
//! RFC 7517 §5 asks clients to ignore keys they do not understand, but the clients this gate
//! stands in for do not: go-jose (under go-oidc) and lestrrat-go/jwx refuse the whole set when one
//! key cannot be decoded (an unknown or missing `kty`, a missing or non-base64url member), which
//! the parity tests measure. So does the gate: a set they refuse is never ready. Padding (`=`) is
//! refused too: jwx tolerates it, go-jose does not (PayPal's set has a padded key), and the gate
//! follows the stricter of the two.

use super::{BodyProblem, Json, cut, open_object};
use crate::screen_text;
use crate::url;
use std::fmt;

/// Why a JWK Set is not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JwksProblem {
    Body(BodyProblem),
    NoKeysMember,
    NoKeys,
    /// Key number `index` (from 1) cannot be decoded, for this reason.
    Undecodable {
        index: usize,
        why: String,
    },
    NoUsableKey {
        algs: Vec<String>,
        found: Vec<String>,
    },
    /// The document's `jwks_uri` is plain http in a chain given as https: why.
    PlainLocation(String),
}

/// The longest list of algorithms or keys a message quotes: a set can hold thousands of keys.
const LIST_MAX: usize = 1024;

impl fmt::Display for JwksProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JwksProblem::Body(problem) => write!(f, "JWK Set: {problem}"),
            JwksProblem::NoKeysMember => write!(
                f,
                "JWK Set has no \"keys\" array (Authentik serves {{}} while the application has no signing key)"
            ),
            JwksProblem::NoKeys => write!(f, "JWK Set holds no key (no signing key published yet)"),
            JwksProblem::Undecodable { index, why } => write!(
                f,
                "key #{index} of the JWK Set cannot be decoded ({why}); go-jose (go-oidc) then refuses the whole set, and so does jwx unless only padding is wrong"
            ),
            JwksProblem::PlainLocation(why) => write!(f, "{why}"),
            JwksProblem::NoUsableKey { algs, found } => write!(
                f,
                "no signing key for the advertised algorithm(s) {}; the set holds {}",
                screen_text::quoted(&algs.join(", "), LIST_MAX),
                if found.is_empty() {
                    "nothing usable".to_string()
                } else {
                    screen_text::quoted(&found.join(", "), LIST_MAX)
                }
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

/// Why jwx and go-jose cannot decode `key`, if they cannot: the members its `kty` needs must be
/// there, and be base64url without padding (`crv` is a name).
fn undecodable(key: Json<'_>) -> Option<String> {
    let s = |k: &str| key.get(k).and_then(Json::as_str);
    let members: &[&str] = match s("kty").as_deref() {
        Some("RSA") => &["n", "e"],
        Some("EC") => &["crv", "x", "y"],
        Some("OKP") => &["crv", "x"],
        Some("oct") => &["k"],
        Some(other) => return Some(format!("unknown \"kty\" {}", super::shown(other, super::SHOWN))),
        None => return Some("no \"kty\"".into()),
    };
    let base64url = |v: &str| {
        !v.is_empty() && v.len() % 4 != 1 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    members.iter().find_map(|&m| match s(m) {
        None => Some(format!("no {m:?}")),
        Some(v) if m != "crv" && !base64url(&v) => Some(format!("{m:?} is not base64url")),
        Some(_) => None,
    })
}

fn usable_for(key: Json<'_>, alg: &str) -> bool {
    let Some((kty, crv)) = key_for_alg(alg) else { return false };
    let s = |k: &str| key.get(k).and_then(Json::as_str);
    s("kty").is_some_and(|k| k == kty)
        && s("use").is_none_or(|u| u == "sig")
        && s("alg").is_none_or(|a| a == alg)
        && crv.is_none_or(|c| s("crv").is_none_or(|k| k == c))
}

/// How a key is named in a message: `kty/alg (use)`.
fn described(key: Json<'_>) -> String {
    let s = |n: &str| key.get(n).and_then(Json::as_str);
    let mut d = s("kty").map_or_else(|| "?".into(), |kty| cut(&kty, LIST_MAX).to_string());
    if let Some(a) = s("alg") {
        d.push_str(&format!("/{}", cut(&a, LIST_MAX)));
    }
    if let Some(u) = s("use") {
        d.push_str(&format!(" ({})", cut(&u, LIST_MAX)));
    }
    d
}

/// Whether the keys may be fetched from a document's `jwks_uri`: plain http fails in a chain
/// given as https and is a warning otherwise ([`url::Transport`]). An attacker on the path of a
/// plain fetch could serve its own keys, and a client would then accept its tokens.
pub(crate) fn location(jwks_uri: &str, transport: url::Transport) -> Result<Option<String>, JwksProblem> {
    transport.judge("jwks_uri", jwks_uri).map_err(JwksProblem::PlainLocation)
}

/// Checks a JWK Set body against the document's `id_token_signing_alg_values_supported`.
/// Returns the number of keys.
pub(crate) fn validate_jwks(body: &[u8], signing_algs: &[String]) -> Result<usize, JwksProblem> {
    let set = open_object(body, &["keys"]).map_err(JwksProblem::Body)?;
    let Some(keys) = set.get("keys").and_then(Json::items) else {
        return Err(JwksProblem::NoKeysMember);
    };
    if let Some((i, why)) = keys.clone().enumerate().find_map(|(i, k)| undecodable(k).map(|why| (i, why))) {
        return Err(JwksProblem::Undecodable { index: i + 1, why });
    }
    // Every key is an object now (anything else has no "kty").
    let count = keys.clone().count();
    if count == 0 {
        return Err(JwksProblem::NoKeys);
    }
    let needs_key: Vec<&String> = signing_algs.iter().filter(|a| key_for_alg(a).is_some()).collect();
    if !needs_key.is_empty() && !needs_key.iter().any(|alg| keys.clone().any(|k| usable_for(k, alg))) {
        // The keys a message can show: a set can hold a million.
        let mut found: Vec<String> = Vec::new();
        let mut length = 0;
        for key in keys {
            if length > LIST_MAX {
                found.push("…".into());
                break;
            }
            let d = described(key);
            length += d.len() + 2;
            found.push(d);
        }
        return Err(JwksProblem::NoUsableKey { algs: needs_key.into_iter().cloned().collect(), found });
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn algs(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_plain_jwks_uri_fails_a_chain_given_as_https() {
        assert_eq!(location("https://h/keys", url::Transport::TlsOnly), Ok(None));
        let e = location("http://h/keys", url::Transport::TlsOnly).unwrap_err();
        assert!(
            e.to_string().starts_with("jwks_uri http://h/keys uses plain http inside a chain given as https"),
            "{e}"
        );
        let w = location("http://h/keys", url::Transport::PlainAllowed).unwrap();
        assert!(w.is_some_and(|w| w.contains("accepted because the URL you gave is http")));
    }

    #[test]
    fn real_key_sets_pass() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        for (file, alg) in [
            ("google.jwks.json", "RS256"),
            ("keycloak-mafiasi.jwks.json", "RS256"),
            ("kubernetes-sa.jwks.json", "RS256"),
            ("cognito.jwks.json", "RS256"),
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
        let e = validate_jwks(br#"{"keys":[{"kid":"x"}]}"#, &[]);
        assert_eq!(e, Err(JwksProblem::Undecodable { index: 1, why: "no \"kty\"".into() }));
        assert!(matches!(validate_jwks(b"<html>500</html>", &[]), Err(JwksProblem::Body(BodyProblem::NotJson(_)))));
        let enc_only = br#"{"keys":[{"kty":"RSA","use":"enc","n":"xy","e":"AQAB"}]}"#;
        let e = validate_jwks(enc_only, &algs(&["RS256"])).unwrap_err();
        assert!(e.to_string().contains("RSA (enc)"), "{e}");
        let ec = br#"{"keys":[{"kty":"EC","crv":"P-384","x":"ab","y":"cd"}]}"#;
        assert!(validate_jwks(ec, &algs(&["ES256"])).is_err());
        assert_eq!(validate_jwks(ec, &algs(&["ES256", "ES384"])), Ok(1));
    }

    #[test]
    fn symmetric_only_providers_need_no_published_key() {
        let oct_less = br#"{"keys":[{"kty":"RSA","use":"enc","n":"xy","e":"AQAB"}]}"#;
        assert_eq!(validate_jwks(oct_less, &algs(&["HS256"])), Ok(1));
        assert_eq!(validate_jwks(br#"{"keys":[{"kty":"RSA","n":"xy","e":"AQAB"}]}"#, &[]), Ok(1));
    }

    /// What jwx v3.4.0's jwk.Parse refuses (measured), the gate refuses too, naming the key.
    #[test]
    fn one_undecodable_key_spoils_the_set_as_jwx_and_go_jose_read_it() {
        let good = r#"{"kty":"RSA","n":"249XwEo9k4tM8fMxV7zxOhcr","e":"AQAB"}"#;
        for (bad, why) in [
            (r#"{"kty":"RSA","n":"!","e":"AQAB"}"#, r#""n" is not base64url"#),
            (r#"{"kty":"RSA","n":"AQAB=","e":"AQAB"}"#, r#""n" is not base64url"#),
            (r#"{"kty":"RSA","e":"AQAB"}"#, r#"no "n""#),
            (r#"{"kty":"EC","crv":"P-256","x":"a","y":"b"}"#, r#""x" is not base64url"#),
            (r#"{"kty":"foo"}"#, r#"unknown "kty" "foo""#),
            (r#"{"kid":"x"}"#, r#"no "kty""#),
            ("7", r#"no "kty""#),
        ] {
            let set = format!(r#"{{"keys":[{good},{bad}]}}"#);
            let e = validate_jwks(set.as_bytes(), &algs(&["RS256"]));
            assert_eq!(e, Err(JwksProblem::Undecodable { index: 2, why: why.into() }), "{bad}");
        }
        // PayPal's real set: its eighth key (X25519) is padded, which go-jose refuses (measured).
        let paypal =
            std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/paypal.jwks.json"));
        let e = validate_jwks(&paypal.unwrap(), &algs(&["RS256"])).unwrap_err();
        assert_eq!(e, JwksProblem::Undecodable { index: 8, why: r#""x" is not base64url"#.into() });
        let okp = r#"{"kty":"OKP","crv":"X25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
        assert_eq!(validate_jwks(format!(r#"{{"keys":[{okp},{good}]}}"#).as_bytes(), &algs(&["RS256"])), Ok(2));
    }

    /// A set of a hundred thousand keys none usable: the message names the first ones only.
    #[test]
    fn a_huge_set_is_judged_whole_and_named_in_part() {
        let set = format!(
            r#"{{"keys":[{}{{"kty":"EC","crv":"P-256","x":"ab","y":"cd"}}]}}"#,
            r#"{"kty":"oct","k":"AA"},"#.repeat(100_000)
        );
        let Err(JwksProblem::NoUsableKey { found, .. }) = validate_jwks(set.as_bytes(), &algs(&["RS256"])) else {
            panic!("a set without an RSA key passed")
        };
        assert!(found.len() < 400 && found.last().is_some_and(|f| f == "…"), "{}", found.len());
        assert_eq!(validate_jwks(set.as_bytes(), &algs(&["ES256"])), Ok(100_001), "the last key counts");
    }
}
