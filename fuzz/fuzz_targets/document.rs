//! Document validation over arbitrary bytes: it must never panic, and a document it accepts
//! must really carry the expected issuer (never pass falsely).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wait_for_idp::discovery::{MetadataKind, Rules, validate_document};

fuzz_target!(|data: &[u8]| {
    // The first line, if any, is the configured issuer; the rest is the body.
    let (issuer, body) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (String::from_utf8_lossy(&data[..i]).into_owned(), &data[i + 1..]),
        None => ("https://issuer.example".to_string(), data),
    };
    for kind in [MetadataKind::Oidc, MetadataKind::OAuth] {
        for strict in [false, true] {
            let rules = Rules { kind, strict, skip_issuer_check: false };
            if let Ok(doc) = validate_document(body, &issuer, rules) {
                assert_eq!(doc.issuer, issuer, "accepted a document for another issuer");
                if kind == MetadataKind::Oidc {
                    assert!(doc.jwks_uri.is_some(), "accepted an OIDC document without jwks_uri");
                }
            }
        }
    }
    let _ = wait_for_idp::discovery::printable_excerpt(body, 100);
});
