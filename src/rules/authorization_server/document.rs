//! Where an issuer's metadata lives and when a fetched document counts.
//!
//! Everything here is pure: strings in, verdicts out. It is the part of the gate that must agree
//! with the real clients (go-oidc, oauth2-proxy, openidconnect-rs, the API server), so it follows
//! OpenID Connect Discovery 1.0 and RFC 8414 to the letter and compares issuers as raw strings —
//! parsing and re-serialising a URL would turn `https://h` into `https://h/` and pass a document
//! that the real client then rejects.

use super::registration::Registration;
use crate::rules::client::Client;
use crate::rules::json_value::Items;
use crate::rules::{BodyProblem, Json, KEPT, Object, kept, open_object, shown};
use crate::url;
use std::fmt;

/// Which specification the metadata document follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetadataKind {
    /// OpenID Connect Discovery 1.0: `{issuer}/.well-known/openid-configuration`.
    Oidc,
    /// RFC 8414: `/.well-known/oauth-authorization-server` inserted between host and path.
    OAuth,
    /// The MCP authorization specification's order: RFC 8414, then OIDC (inserted, appended).
    Auto,
}

/// How strictly a document is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    pub kind: MetadataKind,
    /// Require every REQUIRED member of the chosen specification.
    pub strict: bool,
    /// Accept a document whose `issuer` differs (Entra `common`); the caller warns.
    pub skip_issuer_check: bool,
    /// The client the gate guards: its own refusals apply too.
    pub client: Client,
}

const OIDC_SUFFIX: &str = "/.well-known/openid-configuration";
const OAUTH_SUFFIX: &str = "/.well-known/oauth-authorization-server";

/// The metadata URL for an issuer by one specification.
///
/// OIDC Discovery §4.1: remove one terminating `/`, append `/.well-known/openid-configuration`.
/// RFC 8414 §3.1: remove one terminating `/`, insert `/.well-known/oauth-authorization-server`
/// between the host and the path. The issuer must have passed `url::check_issuer`. For `auto`,
/// the first of `candidates`.
pub fn well_known_url(issuer: &str, kind: MetadataKind) -> String {
    match kind {
        MetadataKind::Oidc => url::append_well_known(issuer, OIDC_SUFFIX),
        MetadataKind::OAuth | MetadataKind::Auto => url::insert_well_known(issuer, OAUTH_SUFFIX),
    }
}

/// One place a metadata document may live, and the specification it is judged by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) url: String,
    /// `Oidc` or `OAuth`, never `Auto`.
    pub(crate) spec: MetadataKind,
}

/// Where to look for an issuer's metadata, in order.
///
/// `oidc` and `oauth` have one URL each. `auto` follows the MCP authorization specification
/// (revision 2026-07-28, "Authorization Server Discovery"), as MCP clients do: for an issuer with
/// a path, RFC 8414 inserted, OIDC inserted, OIDC appended; without one, RFC 8414, then OIDC. A
/// `--discovery-url` is the one URL, judged by RFC 8414 if it is an RFC 8414 location.
pub(crate) fn candidates(issuer: &str, kind: MetadataKind, discovery_url: Option<&str>) -> Vec<Candidate> {
    let at = |url: String, spec| Candidate { url, spec };
    if let Some(fixed) = discovery_url {
        let spec = match kind {
            MetadataKind::Auto if fixed.contains(OAUTH_SUFFIX) => MetadataKind::OAuth,
            MetadataKind::Auto => MetadataKind::Oidc,
            other => other,
        };
        return vec![at(fixed.to_string(), spec)];
    }
    match kind {
        MetadataKind::Oidc | MetadataKind::OAuth => vec![at(well_known_url(issuer, kind), kind)],
        MetadataKind::Auto if url::has_path(issuer) => vec![
            at(url::insert_well_known(issuer, OAUTH_SUFFIX), MetadataKind::OAuth),
            at(url::insert_well_known(issuer, OIDC_SUFFIX), MetadataKind::Oidc),
            at(url::append_well_known(issuer, OIDC_SUFFIX), MetadataKind::Oidc),
        ],
        MetadataKind::Auto => vec![
            at(url::root_well_known(issuer, OAUTH_SUFFIX), MetadataKind::OAuth),
            at(url::root_well_known(issuer, OIDC_SUFFIX), MetadataKind::Oidc),
        ],
    }
}

/// Why a fetched body is not a usable metadata document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentProblem {
    /// Not a JSON object at all.
    Body(BodyProblem),
    /// A member of the wrong type.
    Json(String),
    /// `issuer` differs from the configured one.
    IssuerMismatch { expected: String, found: String },
    /// A member the rules require is absent.
    MissingField(String),
    /// `--strict`: the announced issuer is not an https URL without query or fragment; with
    /// `auto`, a plain `token_endpoint` in a chain given as https.
    NotHttps(String),
    /// `issuer` appears `count` times: clients may read different values (Go's encoding/json, in
    /// go-oidc and oauth2-proxy, matches member names case-insensitively and takes the last).
    /// `names` as spelt, the first `NAMES_SHOWN`.
    Duplicate { names: Vec<String>, count: usize },
    /// The guarded client (`--client`) refuses it by its own rules: waiting cannot change that.
    Refused(String),
}

impl fmt::Display for DocumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DocumentProblem::Body(problem) => write!(f, "{problem}"),
            DocumentProblem::Json(msg) => write!(f, "{msg}"),
            DocumentProblem::IssuerMismatch { expected, found } => write!(
                f,
                "document says issuer {}, expected {expected:?}; {}",
                shown(found, KEPT),
                issuer_mismatch_hint(expected, found)
            ),
            DocumentProblem::MissingField(msg) | DocumentProblem::NotHttps(msg) => write!(f, "{msg}"),
            DocumentProblem::Refused(msg) => write!(f, "ToolHive refuses the document: {msg}"),
            DocumentProblem::Duplicate { names, count } => write!(
                f,
                "the document has {count} \"issuer\" members ({}{}): Go clients (go-oidc, oauth2-proxy) match member \
                 names case-insensitively and take the last, other clients may take another, so which issuer a client \
                 sees is ambiguous",
                names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "),
                if *count > names.len() { ", …" } else { "" }
            ),
        }
    }
}

/// The facts worth showing from a document that passed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    pub issuer: String,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub jwks_uri: Option<String>,
    pub userinfo_endpoint: Option<String>,
    pub id_token_signing_alg_values_supported: Vec<String>,
    /// Things a client may trip over later, but that do not make the provider unready.
    pub warnings: Vec<String>,
    /// How an MCP client can register, judged under `auto` (and so along a resource chain).
    pub registration: Option<Registration>,
}

/// Members REQUIRED by OIDC Discovery §3 (token_endpoint is handled separately: it may be absent
/// for implicit-only providers).
const OIDC_REQUIRED: &[&str] = &[
    "authorization_endpoint",
    "jwks_uri",
    "response_types_supported",
    "subject_types_supported",
    "id_token_signing_alg_values_supported",
];

/// The members [`validate_document`] reads: text in them that Go reads as U+FFFD fails.
const CHECKED: &[&str] = &[
    "issuer",
    "authorization_endpoint",
    "token_endpoint",
    "jwks_uri",
    "userinfo_endpoint",
    "id_token_signing_alg_values_supported",
    "response_types_supported",
    "subject_types_supported",
    "grant_types_supported",
];

/// How many of the names of duplicate `issuer` members a problem keeps.
const NAMES_SHOWN: usize = 16;

/// Judges a fetched body by `rules`. Never panics, whatever the bytes (the text is scanned
/// without recursion, and read where it lies: `json_text`).
pub fn validate_document(body: &[u8], expected_issuer: &str, rules: Rules) -> Result<Document, DocumentProblem> {
    let doc = open_object(body, CHECKED).map_err(DocumentProblem::Body)?;
    let (names, count) = issuer_members(&doc);
    if count > 1 {
        return Err(DocumentProblem::Duplicate { names, count });
    }

    let issuer = match doc.get("issuer") {
        Some(value) => value
            .as_str()
            .ok_or_else(|| DocumentProblem::Json(format!("\"issuer\" is {}, not a string", value.type_name())))?,
        None => return Err(DocumentProblem::MissingField("no \"issuer\" member".into())),
    };
    let mut warnings = Vec::new();
    if issuer != expected_issuer {
        if !rules.skip_issuer_check {
            let found = kept(issuer, KEPT);
            return Err(DocumentProblem::IssuerMismatch { expected: expected_issuer.to_string(), found });
        }
        warnings.push(format!(
            "issuer {} differs from {expected_issuer:?}; accepted because of --skip-issuer-check",
            shown(&issuer, KEPT)
        ));
    }

    let mut document = Document {
        issuer: kept(issuer, KEPT),
        authorization_endpoint: optional_string(&doc, "authorization_endpoint")?,
        token_endpoint: optional_string(&doc, "token_endpoint")?,
        jwks_uri: optional_string(&doc, "jwks_uri")?,
        userinfo_endpoint: optional_string(&doc, "userinfo_endpoint")?,
        id_token_signing_alg_values_supported: optional_string_array(&doc, "id_token_signing_alg_values_supported")?
            .map(kept_algs)
            .unwrap_or_default(),
        warnings,
        // Judged by MCP's rules, under `auto` only ([`registration`]).
        registration: None,
    };
    for member in ["response_types_supported", "subject_types_supported", "grant_types_supported"] {
        optional_string_array(&doc, member)?;
    }

    if let Some(why) = rules.client.refusal(expected_issuer, &doc) {
        return Err(DocumentProblem::Refused(why));
    }
    let missing = missing_required(&doc, rules.kind);
    match rules.kind {
        MetadataKind::Oidc if document.jwks_uri.is_none() => {
            return Err(DocumentProblem::MissingField("no \"jwks_uri\": a client could not verify any token".into()));
        }
        _ => {}
    }
    if rules.strict {
        if let Some(problem) = strict_issuer_problem(&document.issuer) {
            return Err(DocumentProblem::NotHttps(problem));
        }
        if !missing.is_empty() {
            return Err(DocumentProblem::MissingField(format!(
                "--strict: REQUIRED member(s) missing: {}",
                missing.join(", ")
            )));
        }
    } else if !missing.is_empty() && rules.client != Client::GoOidc {
        // go-oidc (`oidc.NewProvider`, a verifier) reads only the issuer and the keys: a login
        // endpoint it never uses is nothing to warn about (the API server serves none).
        document.warnings.push(format!(
            "usual member(s) missing: {} (a strict client may refuse this document)",
            missing.join(", ")
        ));
    }
    Ok(document)
}

/// The top-level member names that Go's encoding/json would read as `issuer`, as spelt (the
/// first [`NAMES_SHOWN`]), and how many there are.
fn issuer_members(doc: &Object<'_>) -> (Vec<String>, usize) {
    let mut names = Vec::new();
    let mut count = 0;
    for (name, _) in doc.members().filter(|(name, _)| name.fold().eq_ignore_ascii_case("issuer")) {
        count += 1;
        if names.len() < NAMES_SHOWN {
            names.push(name.decoded().into_owned());
        }
    }
    (names, count)
}

/// How many signing algorithms a document keeps whatever they are.
const ALGS_KEPT: usize = 64;

/// The signing algorithms kept of a document's list: the first [`ALGS_KEPT`], then only those
/// that need a published key and are not kept yet. A list of millions then costs what a short one
/// does, and every judgement on it is the same: the key set is judged by those that need a key,
/// and a list holding none of them keeps its first.
fn kept_algs(items: Items<'_>) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    for alg in items.filter_map(Json::as_str) {
        let needed = kept.len() < ALGS_KEPT
            || (crate::rules::jwk_set::needs_public_key(&alg) && !kept.iter().any(|k| *k == alg));
        if needed {
            kept.push(crate::rules::kept(alg, crate::rules::SHOWN));
        }
    }
    kept
}

fn strict_issuer_problem(issuer: &str) -> Option<String> {
    match url::check_issuer(issuer) {
        Ok(parts) if parts.scheme == "https" => None,
        Ok(_) => Some(format!("--strict: issuer {issuer:?} does not use https")),
        Err(p) => Some(format!("--strict: issuer {issuer:?} {p}")),
    }
}

/// REQUIRED members the document lacks, by specification.
fn missing_required(doc: &Object<'_>, kind: MetadataKind) -> Vec<&'static str> {
    let has = |k: &str| doc.get(k).is_some_and(|v| !v.is_null());
    let mut missing: Vec<&'static str> = Vec::new();
    match kind {
        MetadataKind::Oidc => {
            missing.extend(OIDC_REQUIRED.iter().copied().filter(|k| !has(k)));
            if !has("token_endpoint") && !oidc_implicit_only(doc) {
                missing.push("token_endpoint");
            }
        }
        MetadataKind::OAuth | MetadataKind::Auto => {
            if !has("response_types_supported") {
                missing.push("response_types_supported");
            }
            let grants = doc.get("grant_types_supported").and_then(Json::items);
            let is = |grant: Json<'_>, name: &str| grant.as_str().is_some_and(|g| g == name);
            // RFC 8414 §2: the default grant types are authorization_code and implicit.
            let uses_authorization =
                grants.clone().is_none_or(|mut g| g.any(|g| is(g, "authorization_code") || is(g, "implicit")));
            if !has("authorization_endpoint") && uses_authorization {
                missing.push("authorization_endpoint");
            }
            let implicit_only = grants.is_some_and(|mut g| g.all(|g| is(g, "implicit")));
            if !has("token_endpoint") && !implicit_only {
                missing.push("token_endpoint");
            }
        }
    }
    missing
}

/// OIDC Discovery §3: token_endpoint is REQUIRED "unless only the Implicit Flow is used", i.e. no
/// advertised response type contains `code`.
fn oidc_implicit_only(doc: &Object<'_>) -> bool {
    let Some(mut types) = doc.get("response_types_supported").and_then(Json::items) else { return false };
    let no_code = |t: Json<'_>| t.as_str().is_none_or(|t| !t.split(' ').any(|p| p == "code"));
    types.clone().any(Json::is_string) && types.all(no_code)
}

pub(super) fn optional_string(doc: &Object<'_>, key: &str) -> Result<Option<String>, DocumentProblem> {
    match doc.get(key) {
        None => Ok(None),
        Some(value) if value.is_null() => Ok(None),
        Some(value) => value
            .as_str()
            .map(|s| Some(kept(s, KEPT)))
            .ok_or_else(|| DocumentProblem::Json(format!("{key:?} is {}, not a string", value.type_name()))),
    }
}

/// The member `key` as an array of strings, its items decoded as they are read: `None` when it is
/// absent or null, a problem when it is anything else or holds an item that is not a string.
pub(super) fn optional_string_array<'a>(doc: &Object<'a>, key: &str) -> Result<Option<Items<'a>>, DocumentProblem> {
    match doc.get(key) {
        None => Ok(None),
        Some(value) if value.is_null() => Ok(None),
        Some(value) => match value.items() {
            Some(items) if items.clone().all(Json::is_string) => Ok(Some(items)),
            Some(_) => Err(DocumentProblem::Json(format!("{key:?} holds a non-string item"))),
            None => Err(DocumentProblem::Json(format!("{key:?} is {}, not an array of strings", value.type_name()))),
        },
    }
}

/// What to tell a user whose configured issuer differs from the one the provider announces.
pub(crate) fn issuer_mismatch_hint(expected: &str, found: &str) -> String {
    if found.contains("{tenantid}") {
        return "Entra ID 'common'/'organizations' documents carry a literal {tenantid} and can never match: \
                use the tenant-specific issuer, or --skip-issuer-check if the client skips it too"
            .into();
    }
    if expected.trim_end_matches('/') == found.trim_end_matches('/') {
        return format!(
            "only the trailing slash differs; configure exactly {found:?} (Auth0 and Authentik issuers end in '/', Keycloak's do not)"
        );
    }
    let authority = |u| url::split(u).ok().map(|p| p.authority);
    if let (Some(e), Some(f)) = (authority(expected), authority(found))
        && e != f
        && e.eq_ignore_ascii_case(f)
    {
        return format!(
            "the hosts differ in case ({e:?} here, {f:?} in the document); the issuer is compared byte for \
                 byte, so configure exactly {found:?}"
        );
    }
    if expected.eq_ignore_ascii_case(found) {
        return format!(
            "they differ only in letter case; the issuer is compared byte for byte, so configure exactly {found:?}"
        );
    }
    let host_of = |u| authority(u).map(str::to_ascii_lowercase);
    if host_of(expected) != host_of(found) || expected.split("://").next() != found.split("://").next() {
        return "the provider builds its issuer from its public URL (Keycloak: KC_HOSTNAME or the realm's \
                frontend URL) or from the request's Host; keep --issuer as the public issuer your client \
                expects, and fetch where the client fetches (--discovery-url only if it discovers elsewhere too)"
            .into();
    }
    "the paths differ: check the realm, tenant or application name in --issuer".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oidc_appends_after_one_trailing_slash() {
        let k = MetadataKind::Oidc;
        assert_eq!(well_known_url("https://ex.com", k), "https://ex.com/.well-known/openid-configuration");
        assert_eq!(well_known_url("https://ex.com/", k), "https://ex.com/.well-known/openid-configuration");
        assert_eq!(
            well_known_url("https://ex.com/issuer1", k),
            "https://ex.com/issuer1/.well-known/openid-configuration"
        );
        assert_eq!(
            well_known_url("https://a.example.com/application/o/romm/", k),
            "https://a.example.com/application/o/romm/.well-known/openid-configuration"
        );
    }

    #[test]
    fn oauth_inserts_after_the_host() {
        let k = MetadataKind::OAuth;
        assert_eq!(well_known_url("https://ex.com", k), "https://ex.com/.well-known/oauth-authorization-server");
        assert_eq!(
            well_known_url("https://ex.com/issuer1", k),
            "https://ex.com/.well-known/oauth-authorization-server/issuer1"
        );
        assert_eq!(
            well_known_url("https://kc/realms/x/", k),
            "https://kc/.well-known/oauth-authorization-server/realms/x"
        );
        assert_eq!(
            well_known_url("https://[::1]:8443/realms/x", k),
            "https://[::1]:8443/.well-known/oauth-authorization-server/realms/x"
        );
    }

    fn rules(kind: MetadataKind, strict: bool) -> Rules {
        Rules { kind, strict, skip_issuer_check: false, client: Client::Any }
    }

    #[test]
    fn issuer_must_match_byte_for_byte() {
        let body = br#"{"issuer":"https://h/","jwks_uri":"https://h/k"}"#;
        let err = validate_document(body, "https://h", rules(MetadataKind::Oidc, false)).unwrap_err();
        assert!(matches!(err, DocumentProblem::IssuerMismatch { .. }));
        assert!(err.to_string().contains("trailing slash"), "{err}");
        let skip = Rules { skip_issuer_check: true, ..rules(MetadataKind::Oidc, false) };
        let doc = validate_document(body, "https://h", skip).unwrap();
        assert!(doc.warnings[0].contains("--skip-issuer-check"));
    }

    #[test]
    fn duplicate_issuers_are_ambiguous_as_go_reads_them() {
        let r = rules(MetadataKind::Oidc, false);
        for (body, names) in [
            (r#"{"issuer":"https://h","issuer":"https://e","jwks_uri":"k"}"#, vec!["issuer", "issuer"]),
            (r#"{"ISSUER":"https://e","issuer":"https://h","jwks_uri":"k"}"#, vec!["ISSUER", "issuer"]),
            // Go folds the long s and the dotless i onto s and i.
            (r#"{"issuer":"https://h","iſſuer":"https://e","jwks_uri":"k"}"#, vec!["issuer", "iſſuer"]),
            (r#"{"ıssuer":"https://e","issuer":"https://h","jwks_uri":"k"}"#, vec!["ıssuer", "issuer"]),
        ] {
            let expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            let count = expected.len();
            let found = validate_document(body.as_bytes(), "https://h", r);
            assert_eq!(found, Err(DocumentProblem::Duplicate { names: expected, count }));
        }
        assert!(validate_document(br#"{"issuer":"https://h","issuers":1,"jwks_uri":"k"}"#, "https://h", r).is_ok());
    }

    #[test]
    fn issuers_differing_in_case_say_so() {
        let hint = issuer_mismatch_hint("https://SSO.example.com/realms/x", "https://sso.example.com/realms/x");
        assert!(hint.contains("the hosts differ in case") && hint.contains("byte for byte"), "{hint}");
        let hint = issuer_mismatch_hint("https://sso.example.com/realms/X", "https://sso.example.com/realms/x");
        assert!(hint.contains("only in letter case"), "{hint}");
    }

    #[test]
    fn hostile_bodies_are_problems_not_panics() {
        let r = rules(MetadataKind::Oidc, false);
        let deep = "[".repeat(100_000);
        for body in [
            &b"\xff\xfe"[..],
            b"",
            b"<html>503</html>",
            b"[]",
            b"\"x\"",
            br#"{"issuer":42}"#,
            br#"{"issuer":"https://h","jwks_uri":1e999}"#,
            br#"{"issuer":"https://h","jwks_uri":["a"]}"#,
            deep.as_bytes(),
        ] {
            assert!(validate_document(body, "https://h", r).is_err(), "{:?}", String::from_utf8_lossy(body));
        }
        assert!(matches!(
            validate_document(b"\xff", "https://h", r),
            Err(DocumentProblem::Body(BodyProblem::NotUtf8 { valid_up_to: 0 }))
        ));
    }

    /// However long a member, what the rules keep of it is bounded and the judgement is the whole's.
    #[test]
    fn long_members_are_judged_whole_and_kept_bounded() {
        let r = rules(MetadataKind::Oidc, false);
        let algs = "\"HS256\",".repeat(100_000);
        let many = format!(
            r#"{{"issuer":"https://h","jwks_uri":"k","id_token_signing_alg_values_supported":[{algs}"ES256"]}}"#
        );
        let kept = validate_document(many.as_bytes(), "https://h", r).unwrap().id_token_signing_alg_values_supported;
        assert_eq!((kept.len(), kept[0].as_str(), kept[ALGS_KEPT].as_str()), (ALGS_KEPT + 1, "HS256", "ES256"));
        let giant = format!("https://h/{}", "x".repeat(1 << 20));
        let body = format!(r#"{{"issuer":"{giant}","jwks_uri":"k"}}"#);
        let Err(problem @ DocumentProblem::IssuerMismatch { .. }) = validate_document(body.as_bytes(), "https://h", r)
        else {
            panic!("a giant issuer matched")
        };
        let DocumentProblem::IssuerMismatch { found, .. } = &problem else { unreachable!() };
        assert!(
            found.len() > KEPT && found.len() < KEPT + 8 && found.ends_with('…') && giant.starts_with(&found[..KEPT])
        );
        assert!(problem.to_string().len() < 2 * KEPT, "the message quotes a part");
        let skip = Rules { skip_issuer_check: true, ..r };
        let doc = validate_document(body.as_bytes(), "https://h", skip).unwrap();
        assert!(doc.issuer.len() < KEPT + 8 && doc.warnings[0].len() < 2 * KEPT);
        let dup = format!("{{{}\"jwks_uri\":\"k\"}}", "\"issuer\":\"https://h\",".repeat(1000));
        let Err(problem) = validate_document(dup.as_bytes(), "https://h", r) else { panic!("duplicates passed") };
        assert!(matches!(&problem, DocumentProblem::Duplicate { names, count: 1000 } if names.len() == NAMES_SHOWN));
        assert!(problem.to_string().starts_with("the document has 1000 \"issuer\" members (\"issuer\", "), "{problem}");
        assert!(problem.to_string().contains("\"issuer\", …): Go clients"), "{problem}");
    }
}
