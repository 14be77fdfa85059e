//! Property tests, run on stable in the ordinary suite (the cargo-fuzz targets stay for long
//! manual runs): document validation over generated documents and bytes. (Reference resolution's
//! are with the code, in src/url/reference_properties.rs: the url module is not public.)

use proptest::prelude::*;
use wait_for_idp::rules::authorization_server::{MetadataKind, Rules, validate_document};

const ISSUER: &str = "https://idp.test/realms/x";

/// Member names: the ones the rules read, case and Unicode variants Go would fold onto `issuer`,
/// and unknown ones.
fn member_name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "issuer",
        "Issuer",
        "ISSUER",
        "iſſuer",
        "jwks_uri",
        "authorization_endpoint",
        "token_endpoint",
        "response_types_supported",
        "subject_types_supported",
        "id_token_signing_alg_values_supported",
        "grant_types_supported",
        "x-vendor",
    ])
}

fn member_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just(format!("{ISSUER:?}")),
        1 => Just(format!("\"{ISSUER}/\"")),
        1 => Just("\"https://other.test/realms/x\"".to_string()),
        1 => Just("\"HTTPS://IDP.TEST/realms/x\"".to_string()),
        2 => Just("[\"code\",\"id_token\"]".to_string()),
        1 => Just("[\"RS256\"]".to_string()),
        1 => Just("null".to_string()),
        1 => Just("42".to_string()),
        1 => Just("{}".to_string()),
        1 => Just("[1,[2]]".to_string()),
    ]
}

/// A JSON object written out by hand, so that duplicate members survive into the bytes.
fn document() -> impl Strategy<Value = (String, Vec<&'static str>)> {
    prop::collection::vec((member_name(), member_value()), 0..12).prop_map(|members| {
        let body = members.iter().map(|(k, v)| format!("{k:?}:{v}")).collect::<Vec<_>>().join(",");
        (format!("{{{body}}}"), members.iter().map(|(k, _)| *k).collect())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// Whatever the document, a passing one announces exactly the configured issuer (once),
    /// and an OIDC one has a jwks_uri.
    #[test]
    fn documents_never_pass_for_another_issuer_or_without_keys((body, names) in document(), strict in any::<bool>()) {
        for kind in [MetadataKind::Oidc, MetadataKind::OAuth] {
            let rules = Rules { kind, strict, skip_issuer_check: false, client: Default::default() };
            if let Ok(doc) = validate_document(body.as_bytes(), ISSUER, rules) {
                prop_assert_eq!(&doc.issuer, ISSUER, "{}", body);
                let issuers = names.iter().filter(|n| ["issuer", "Issuer", "ISSUER", "iſſuer"].contains(n)).count();
                prop_assert_eq!(issuers, 1, "passed with duplicate issuer members: {}", body);
                if kind == MetadataKind::Oidc {
                    prop_assert!(doc.jwks_uri.is_some(), "OIDC document without jwks_uri passed: {}", body);
                }
            }
        }
    }

    #[test]
    fn document_validation_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        for kind in [MetadataKind::Oidc, MetadataKind::OAuth] {
            let _ = validate_document(&bytes, ISSUER, Rules { kind, strict: true, skip_issuer_check: false, client: Default::default() });
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// Protected resource metadata and challenges: never a panic, never another resource.
    #[test]
    fn resource_metadata_and_challenges_never_pass_falsely(
        header in "(Bearer|DPoP|bearer)?[ ,=\"a-z_:/.\\\\]{0,60}",
        body in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        wait_for_idp::fuzz_checks::resource(header.as_bytes());
        wait_for_idp::fuzz_checks::resource(&body);
        let doc = format!("https://mcp.test/mcp\n{{\"resource\":\"https://mcp.test/mcp\",\"authorization_servers\":[{header:?}]}}");
        wait_for_idp::fuzz_checks::resource(doc.as_bytes());
    }
}
