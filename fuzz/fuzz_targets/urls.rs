//! URL handling over arbitrary strings: splitting, issuer checks, well-known derivation,
//! redirect resolution and credential redaction must never panic, and what they derive must
//! stay on the issuer's origin.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wait_for_idp::discovery::{MetadataKind, check_issuer_url, split_url, well_known_url};
use wait_for_idp::http::resolve_location;
use wait_for_idp::redact::redact_url;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (first, second) = text.split_once('\n').unwrap_or((text, "/"));
    let _ = split_url(first);
    if let Ok(parts) = check_issuer_url(first) {
        let origin = parts.origin();
        for kind in [MetadataKind::Oidc, MetadataKind::OAuth] {
            let url = well_known_url(first, kind);
            let derived = split_url(&url).expect("a derived URL parses");
            assert_eq!(derived.origin(), origin, "derivation left the issuer's origin: {url}");
        }
        if let Ok(next) = resolve_location(first, second) {
            let _ = split_url(&next);
        }
    }
    let redacted = redact_url(text);
    assert_eq!(redact_url(&redacted), redacted, "redaction is stable");
    if let Ok(parts) = split_url(first) {
        if parts.has_userinfo {
            let r = redact_url(first);
            let (_, after_scheme) = r.split_once("://").unwrap();
            assert!(after_scheme.starts_with("***@"), "credentials left in {r}");
        }
    }
});
