//! What an MCP client requires of an authorization server's metadata beyond its specification,
//! and how it can register there: the rules under `--metadata auto` and along a `--resource`
//! chain.

use super::document::{DocumentProblem, MetadataKind, optional_string, optional_string_array};
use super::registration::Registration;
use crate::rules::{Json, Object, open_object, shown_list};
use crate::url;

/// Said when an MCP client has no way to register.
const NO_REGISTRATION: &str = "registration: none: the metadata offers neither \
    client_id_metadata_document_supported (Client ID Metadata Documents, which the MCP specification's \
    2026-07-28 revision prefers) nor a registration_endpoint (Dynamic Client Registration, deprecated \
    there): an MCP client can sign in only with a client ID registered beforehand";

/// What an MCP client requires of an authorization server's document beyond its specification,
/// under `--metadata auto` and along a `--resource` chain; `spec` is the one the candidate URL
/// is judged by. Returns the warnings; the document has passed [`super::validate_document`].
///
/// Measured against the MCP TypeScript client 2.4.0 and SDK 1.32.2 (`client/auth`, `shared/auth`):
/// `discoverAuthorizationServerMetadata` parses an RFC 8414 document with `OAuthMetadataSchema`
/// and an OIDC one with `OpenIdProviderDiscoveryMetadataSchema`, and a zod failure throws, so
/// the client stops. Both schemas require `authorization_endpoint` and `token_endpoint` (URLs,
/// `SafeUrlSchema`) and `response_types_supported`; the OIDC one also `jwks_uri`,
/// `subject_types_supported` and `id_token_signing_alg_values_supported`. Then
/// `startAuthorization` throws when `response_types_supported` does not list `code`, and when
/// `code_challenge_methods_supported` is present without `S256` (an absent list it lets
/// through, though the MCP specification has clients refuse it: a warning here). The token
/// endpoint's scheme only the TypeScript client 2.x checks, when it asks for a token
/// (`assertSecureTokenEndpoint`: https, or a loopback host); the MCP specification's
/// Communication Security requires every
/// authorization server endpoint to be https: a plain one fails unless its host is loopback
/// (local development; a warning) or the user's own URL is http ([`url::Transport`]; a warning).
pub(crate) fn mcp_client_rules(
    body: &[u8],
    spec: MetadataKind,
    transport: url::Transport,
) -> Result<Vec<String>, DocumentProblem> {
    let checked = [
        "authorization_endpoint",
        "token_endpoint",
        "response_types_supported",
        "jwks_uri",
        "subject_types_supported",
        "id_token_signing_alg_values_supported",
        "code_challenge_methods_supported",
    ];
    let doc = open_object(body, &checked).map_err(DocumentProblem::Body)?;
    let schema =
        if spec == MetadataKind::Oidc { "OpenIdProviderDiscoveryMetadataSchema" } else { "OAuthMetadataSchema" };
    let mut required = vec!["authorization_endpoint", "token_endpoint", "response_types_supported"];
    if spec == MetadataKind::Oidc {
        required.extend(["jwks_uri", "subject_types_supported", "id_token_signing_alg_values_supported"]);
    }
    let missing: Vec<&str> = required.into_iter().filter(|k| doc.get(k).is_none_or(Json::is_null)).collect();
    if !missing.is_empty() {
        return Err(DocumentProblem::MissingField(format!(
            "MCP clients require {}: the MCP TypeScript SDK's {schema} rejects the whole document",
            missing.join(", ")
        )));
    }
    typed_members(&doc, spec, schema)?;
    for member in ["authorization_endpoint", "token_endpoint"] {
        let value = optional_string(&doc, member)?.unwrap_or_default();
        if let Err(problem) = url::split(&value) {
            let value = url::redact(&value);
            return Err(DocumentProblem::Json(format!(
                "{member:?} {value:?} {problem}: the MCP TypeScript SDK's {schema} requires a URL"
            )));
        }
    }
    let listed = |items: &mut crate::rules::json_value::Items<'_>, want: &str| {
        items.any(|item| item.as_str().is_some_and(|item| item == want))
    };
    let types = optional_string_array(&doc, "response_types_supported")?;
    if !types.clone().is_some_and(|mut t| listed(&mut t, "code")) {
        return Err(DocumentProblem::MissingField(format!(
            "response_types_supported {} does not list \"code\": MCP clients use the authorization code flow, and \
             the MCP TypeScript SDK refuses the server (\"Incompatible auth server: does not support response type \
             code\")",
            shown_list(types)
        )));
    }
    let mut warnings = Vec::new();
    match optional_string_array(&doc, "code_challenge_methods_supported")? {
        Some(methods) if !listed(&mut methods.clone(), "S256") => {
            return Err(DocumentProblem::MissingField(format!(
                "code_challenge_methods_supported {} does not list \"S256\": MCP clients require PKCE with S256, and \
                 the MCP TypeScript SDK refuses the server (\"Incompatible auth server: does not support code \
                 challenge method S256\")",
                shown_list(Some(methods))
            )));
        }
        Some(_) => {}
        None => warnings.push(
            "no code_challenge_methods_supported: MCP clients that follow the 2025-11-25 specification refuse a \
             server that does not advertise PKCE with S256 (the MCP TypeScript SDK 1.32 checks the list only when \
             it is present)"
                .into(),
        ),
    }
    let token_endpoint = optional_string(&doc, "token_endpoint")?.unwrap_or_default();
    warnings.extend(token_endpoint_rule(&token_endpoint, transport)?);
    if Registration::of(&doc) == Registration::None {
        warnings.push(NO_REGISTRATION.into());
    }
    Ok(warnings)
}

/// The optional members the MCP TypeScript SDK 2.4.0's zod schemas type (`shared/auth.ts`:
/// `OAuthMetadataSchema`, `OpenIdProviderMetadataSchema`), each followed by its type, `s` a
/// string (a URL for most), `a` an array of strings, `b` a boolean, and which schema has it,
/// `o` OAuth only, `i` OIDC only, `*` both. zod's `.optional()` takes no `null` either. One
/// string, not a table: it costs the binary its bytes only.
const TYPED: &str = "registration_endpoint s* scopes_supported a* response_modes_supported a* \
    grant_types_supported a* token_endpoint_auth_methods_supported a* \
    token_endpoint_auth_signing_alg_values_supported a* service_documentation s* \
    code_challenge_methods_supported a* client_id_metadata_document_supported b* revocation_endpoint so \
    revocation_endpoint_auth_methods_supported ao revocation_endpoint_auth_signing_alg_values_supported ao \
    introspection_endpoint so introspection_endpoint_auth_methods_supported ao \
    introspection_endpoint_auth_signing_alg_values_supported ao dpop_signing_alg_values_supported ao \
    userinfo_endpoint si jwks_uri si acr_values_supported ai subject_types_supported ai \
    id_token_signing_alg_values_supported ai id_token_encryption_alg_values_supported ai \
    id_token_encryption_enc_values_supported ai userinfo_signing_alg_values_supported ai \
    userinfo_encryption_alg_values_supported ai userinfo_encryption_enc_values_supported ai \
    request_object_signing_alg_values_supported ai request_object_encryption_alg_values_supported ai \
    request_object_encryption_enc_values_supported ai display_values_supported ai claim_types_supported ai \
    claims_supported ai claims_locales_supported ai ui_locales_supported ai claims_parameter_supported bi \
    request_parameter_supported bi request_uri_parameter_supported bi require_request_uri_registration bi \
    op_policy_uri si op_tos_uri si";

/// A member of the wrong JSON type fails the whole document, as the TypeScript schema's parse
/// throws (`client_id_metadata_document_supported: "true"` is no boolean). The Python SDK's
/// pydantic models coerce some of these (`"true"` to `True`); the gate follows the stricter
/// client, since a server either passes both or loses the TypeScript ones.
fn typed_members(doc: &Object<'_>, spec: MetadataKind, schema: &str) -> Result<(), DocumentProblem> {
    let mine = if spec == MetadataKind::Oidc { 'i' } else { 'o' };
    let words: Vec<&str> = TYPED.split_ascii_whitespace().collect();
    let typed: Vec<(&str, &str)> = words.chunks_exact(2).map(|w| (w[0], w[1])).collect();
    // One pass over the document, the last of each name kept (as for every other member).
    let mut found: Vec<Option<Json<'_>>> = vec![None; typed.len()];
    for (name, value) in doc.members() {
        let name = name.decoded();
        if let Some(i) = typed.iter().position(|(member, _)| *member == name) {
            found[i] = Some(value);
        }
    }
    for (&(member, kind), value) in typed.iter().zip(found) {
        let (want, which) = (kind.as_bytes()[0], char::from(kind.as_bytes()[1]));
        let Some(value) = value.filter(|_| which == '*' || which == mine) else { continue };
        let ok = match want {
            b's' => value.is_string(),
            b'b' => value.as_bool().is_some(),
            _ => value.items().is_some_and(|mut items| items.all(Json::is_string)),
        };
        if !ok {
            let wanted = match want {
                b's' => "a string",
                b'b' => "a boolean",
                _ => "an array of strings",
            };
            return Err(DocumentProblem::Json(format!(
                "{member:?} is {}, not {wanted}: the MCP TypeScript SDK's {schema} rejects the whole document",
                value.type_name()
            )));
        }
    }
    Ok(())
}

/// The token endpoint must be https; plain http on a loopback host is a warning, elsewhere it is
/// judged as a link of the chain ([`url::Transport`]).
fn token_endpoint_rule(endpoint: &str, transport: url::Transport) -> Result<Option<String>, DocumentProblem> {
    let Ok(parts) = url::split(endpoint) else { return Ok(None) };
    if parts.scheme == "http" && url::is_loopback(parts.host) && transport == url::Transport::TlsOnly {
        return Ok(Some(format!(
            "token_endpoint {} uses plain http on a loopback host: acceptable for local development only",
            url::redact(endpoint)
        )));
    }
    transport.judge("token_endpoint", endpoint).map_err(DocumentProblem::NotHttps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::authorization_server::registration;
    use serde_json::{Map, Value};

    /// An RFC 8414 document as the MCP TypeScript SDK's `OAuthMetadataSchema` accepts it, changed.
    fn mcp_doc(change: impl FnOnce(&mut Map<String, Value>)) -> Vec<u8> {
        let mut doc = serde_json::json!({
            "issuer": "https://as",
            "authorization_endpoint": "https://as/authorize",
            "token_endpoint": "https://as/token",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": true,
        });
        change(doc.as_object_mut().unwrap());
        doc.to_string().into_bytes()
    }

    fn mcp(body: &[u8], spec: MetadataKind) -> Result<Vec<String>, DocumentProblem> {
        mcp_client_rules(body, spec, url::Transport::TlsOnly)
    }

    #[test]
    fn mcp_clients_require_what_the_sdk_schemas_require() {
        assert_eq!(mcp(&mcp_doc(|_| {}), MetadataKind::OAuth), Ok(vec![]));
        for member in ["authorization_endpoint", "token_endpoint", "response_types_supported"] {
            let e = mcp(&mcp_doc(|d| drop(d.remove(member))), MetadataKind::OAuth).unwrap_err();
            assert!(
                matches!(&e, DocumentProblem::MissingField(m) if m.contains(member) && m.contains("OAuthMetadataSchema")),
                "{e}"
            );
            let e = mcp(&mcp_doc(|d| drop(d.insert(member.into(), Value::Null))), MetadataKind::OAuth).unwrap_err();
            assert!(matches!(e, DocumentProblem::MissingField(_)), "{member}: null is no value to zod: {e}");
        }
        // Judged as OIDC, the OIDC schema's own required members too.
        let e = mcp(&mcp_doc(|d| drop(d.insert("jwks_uri".into(), "https://as/k".into()))), MetadataKind::Oidc);
        let e = e.unwrap_err().to_string();
        assert!(e.contains("subject_types_supported, id_token_signing_alg_values_supported"), "{e}");
        assert!(e.contains("OpenIdProviderDiscoveryMetadataSchema"), "{e}");
        let e = mcp(
            &mcp_doc(|d| drop(d.insert("authorization_endpoint".into(), "/authorize".into()))),
            MetadataKind::OAuth,
        );
        assert!(matches!(e, Err(DocumentProblem::Json(m)) if m.contains("requires a URL")));
    }

    #[test]
    fn mcp_clients_need_the_code_flow_with_s256() {
        let types = |t: Value| mcp_doc(|d| drop(d.insert("response_types_supported".into(), t)));
        let e = mcp(&types(serde_json::json!(["code id_token", "token"])), MetadataKind::OAuth).unwrap_err();
        assert!(matches!(&e, DocumentProblem::MissingField(m) if m.contains("does not list \"code\"")), "{e}");
        assert_eq!(mcp(&types(serde_json::json!(["token", "code"])), MetadataKind::OAuth), Ok(vec![]));
        let methods = |m: Value| mcp_doc(|d| drop(d.insert("code_challenge_methods_supported".into(), m)));
        let e = mcp(&methods(serde_json::json!(["plain"])), MetadataKind::OAuth).unwrap_err();
        assert!(matches!(&e, DocumentProblem::MissingField(m) if m.contains("does not list \"S256\"")), "{e}");
        assert!(matches!(mcp(&methods(serde_json::json!("S256")), MetadataKind::OAuth), Err(DocumentProblem::Json(_))));
        let absent = mcp(&mcp_doc(|d| drop(d.remove("code_challenge_methods_supported"))), MetadataKind::OAuth);
        let absent = absent.unwrap();
        assert!(absent.len() == 1 && absent[0].contains("checks the list only when it is present"), "{absent:?}");
    }

    /// A member of the wrong type fails the document, as the TypeScript schema's parse does.
    #[test]
    fn wrongly_typed_members_fail_as_the_typescript_schema_fails_them() {
        let with = |member: &str, value: Value| {
            mcp_doc(|d| {
                d.insert("jwks_uri".into(), "https://as/jwks".into());
                d.insert("subject_types_supported".into(), serde_json::json!(["public"]));
                d.insert("id_token_signing_alg_values_supported".into(), serde_json::json!(["RS256"]));
                d.insert(member.into(), value);
            })
        };
        for (member, value, spec) in [
            ("client_id_metadata_document_supported", Value::from("true"), MetadataKind::OAuth),
            ("registration_endpoint", Value::Null, MetadataKind::OAuth),
            ("scopes_supported", serde_json::json!("openid profile"), MetadataKind::OAuth),
            ("grant_types_supported", serde_json::json!(["authorization_code", 7]), MetadataKind::Oidc),
            ("claims_parameter_supported", Value::from("yes"), MetadataKind::Oidc),
        ] {
            let e = mcp(&with(member, value), spec).unwrap_err();
            assert!(matches!(&e, DocumentProblem::Json(m) if m.starts_with(&format!("{member:?} is "))), "{e}");
        }
        // A member the other schema types, or one neither knows, is left alone.
        assert!(mcp(&with("claims_parameter_supported", Value::from("yes")), MetadataKind::OAuth).is_ok());
        assert!(mcp(&with("x_vendor", Value::Null), MetadataKind::OAuth).is_ok());
    }

    #[test]
    fn the_token_endpoint_is_https_unless_loopback_or_the_user_chose_http() {
        let at = |url: &str| mcp_doc(|d| drop(d.insert("token_endpoint".into(), url.into())));
        let e = mcp(&at("http://as.example/token"), MetadataKind::OAuth).unwrap_err();
        assert!(
            matches!(&e, DocumentProblem::NotHttps(m) if m.starts_with("token_endpoint http://as.example/token uses plain http")),
            "{e}"
        );
        for loopback in ["http://localhost:9000/token", "http://127.0.0.1/token", "http://[::1]:8080/token"] {
            let w = mcp(&at(loopback), MetadataKind::OAuth).unwrap();
            assert!(w.len() == 1 && w[0].contains("loopback host"), "{loopback}: {w:?}");
        }
        let w = mcp_client_rules(&at("http://keycloak:8080/token"), MetadataKind::OAuth, url::Transport::PlainAllowed);
        assert!(w.unwrap()[0].contains("accepted because the URL you gave is http"));
    }

    #[test]
    fn registration_is_cimd_then_dcr_then_none_with_a_warning() {
        let with = |cimd: Option<Value>, dcr: Option<&str>| {
            mcp_doc(|d| {
                d.remove("client_id_metadata_document_supported");
                cimd.map(|v| d.insert("client_id_metadata_document_supported".into(), v));
                dcr.map(|e| d.insert("registration_endpoint".into(), e.into()));
            })
        };
        let cases = [
            (Some(Value::Bool(true)), Some("https://as/register"), Registration::Cimd),
            (Some(Value::Bool(true)), None, Registration::Cimd),
            (Some(Value::Bool(false)), Some("https://as/register"), Registration::Dcr),
            (None, Some("https://as/register"), Registration::Dcr),
            (Some(Value::Bool(false)), None, Registration::None),
            (None, Some(""), Registration::None),
        ];
        for (cimd, dcr, expected) in cases {
            let body = with(cimd.clone(), dcr);
            assert_eq!(registration(&body), expected, "{cimd:?} {dcr:?}");
            let warned = mcp(&body, MetadataKind::OAuth).unwrap().iter().any(|w| w.starts_with("registration: none"));
            assert_eq!(warned, expected == Registration::None, "{cimd:?} {dcr:?}");
        }
    }
}
