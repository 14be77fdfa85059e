use super::*;
use crate::cli;
use std::collections::HashMap;

fn load(args: &[&str], env: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
    let env: HashMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let cli = cli::parse_from(std::iter::once("wait-for-idp").chain(args.iter().copied())).unwrap();
    Config::from_cli(&cli, &|k| env.get(k).cloned())
}

fn build(args: &[&str], env: &[(&str, &str)]) -> Result<Config, ConfigError> {
    load(args, env).map(|l| l.config)
}

fn err(args: &[&str], env: &[(&str, &str)]) -> String {
    build(args, env).unwrap_err().to_string()
}

fn warnings(args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let notices = load(args, env).unwrap().notices;
    notices.into_iter().filter_map(|n| if let Notice::Warning(w) = n { Some(w) } else { None }).collect()
}

#[test]
fn defaults() {
    let c = build(&["--issuer", "https://kc.example/realms/x"], &[]).unwrap();
    assert_eq!(c.targets[0], Target::Issuer { issuer: "https://kc.example/realms/x".into(), discovery_url: None });
    assert_eq!(
        (c.timeout, c.interval, c.attempt_timeout),
        (defaults::TIMEOUT, defaults::INTERVAL, defaults::ATTEMPT_TIMEOUT)
    );
    assert_eq!((c.rules.kind, c.output, c.successes), (MetadataKind::Oidc, Output::Text, 1));
    assert_eq!(c.max_attempts, None);
    assert!(!c.fail_closed);
    assert!(!c.termination_log.create);
}

#[test]
fn env_vars_configure_everything_and_flags_win() {
    let env = [
        ("WAIT_FOR_IDP_ISSUER", "https://a.example"),
        ("WAIT_FOR_IDP_TIMEOUT", "90s"),
        ("WAIT_FOR_IDP_METADATA", "oauth"),
        ("WAIT_FOR_IDP_FAIL_CLOSED", "true"),
        ("WAIT_FOR_IDP_MAX_ATTEMPTS", "7"),
        ("WAIT_FOR_IDP_INTERVAL", ""),
    ];
    let c = build(&["--timeout", "10s"], &env).unwrap();
    assert_eq!(c.rules.kind, MetadataKind::OAuth);
    assert_eq!(c.timeout, Duration::from_secs(10));
    assert_eq!(c.interval, defaults::INTERVAL, "an empty variable counts as unset");
    assert!(c.fail_closed);
    assert_eq!(c.max_attempts, Some(7));
}

#[test]
fn bad_values_name_their_source_and_the_fix() {
    let e = err(&["--issuer", "https://h", "--timeout", "0s"], &[]);
    assert!(e.starts_with("--timeout: '0s'") && e.contains("not zero"), "{e}");
    let e = err(&["--issuer", "https://h", "--timeout", "50ms"], &[]);
    assert!(e.starts_with("--timeout: '50ms'") && e.contains("at least 100ms"), "{e}");
    let e = err(&["--issuer", "https://h", "--timeout", "-32"], &[]);
    assert!(e.contains("--timeout") && e.contains("such as"), "{e}");
    let e = err(&["--issuer", "https://h"], &[("WAIT_FOR_IDP_INTERVAL", "soon")]);
    assert!(e.starts_with("WAIT_FOR_IDP_INTERVAL: 'soon'"), "{e}");
    let e = err(&["--issuer", "https://h", "--max-attempts", "0"], &[]);
    assert!(e.contains("--max-attempts") && e.contains("at least 1"), "{e}");
    let e = err(&["--issuer", "https://h"], &[("WAIT_FOR_IDP_FAIL_CLOSED", "maybe")]);
    assert!(e.starts_with("WAIT_FOR_IDP_FAIL_CLOSED"), "{e}");
    let e = err(&["--issuer", "https://h?x=1"], &[]);
    assert!(e.contains("query"), "{e}");
    let e = err(&[], &[("WAIT_FOR_IDP_ISSUER", "")]);
    assert!(e.contains("set but empty"), "{e}");
    let e = err(&["--issuer", "https://user:hunter2@h/"], &[]);
    assert!(!e.contains("hunter2"), "{e}");
    let e = err(&["--issuer", "https://h", "--metadata", "saml"], &[]);
    assert!(e.contains("oidc or oauth"), "{e}");
    let e = err(&["--issuer", "https://h", "--once", "--max-attempts", "3"], &[]);
    assert!(e.contains("--once"), "{e}");
    let e = err(&["--issuer", "https://a", "--issuer", "https://b", "--discovery-url", "https://c"], &[]);
    assert!(e.contains("single --issuer"), "{e}");
    let e = err(&["--issuer", "https://h", "--ca-file", "/nonexistent/ca.pem"], &[]);
    assert!(e.contains("--ca-file: CA file '/nonexistent/ca.pem' cannot be read"), "{e}");
    let e = err(&["--issuer", "https://h", "--timeout", "1000y"], &[]);
    assert!(e.contains("366 days"), "{e}");
}

#[test]
fn oauth2_proxy_variables_are_the_fallback() {
    let env = [
        ("OAUTH2_PROXY_OIDC_ISSUER_URL", "https://sso.example.com/realms/x"),
        ("OAUTH2_PROXY_INSECURE_OIDC_SKIP_ISSUER_VERIFICATION", "true"),
    ];
    let loaded = load(&[], &env).unwrap();
    assert_eq!(loaded.config.targets[0].name(), "https://sso.example.com/realms/x");
    assert!(loaded.config.rules.skip_issuer_check);
    assert!(
        loaded
            .notices
            .contains(&Notice::Note("issuer read from OAUTH2_PROXY_OIDC_ISSUER_URL (oauth2-proxy's variable)".into()))
    );
    let c = build(&[], &[("WAIT_FOR_IDP_ISSUER", "https://a.example"), env[0]]).unwrap();
    assert_eq!(c.targets[0].name(), "https://a.example", "our own variable wins");
    let e = err(&[], &[("OAUTH2_PROXY_PROVIDER_CA_FILES", "/nonexistent.pem"), env[0]]);
    assert!(e.starts_with("OAUTH2_PROXY_PROVIDER_CA_FILES: CA file '/nonexistent.pem'"), "{e}");
}

#[test]
fn issue_5_settings() {
    let c = build(&["--issuer", "https://h", "--connect-to", "h:443:127.0.0.1:8443", "--successes", "3"], &[]).unwrap();
    assert_eq!(c.connect_to.len(), 1);
    assert_eq!(c.successes, 3);
    let e = err(&["--issuer", "https://h", "--connect-to", "h:443"], &[]);
    assert!(e.starts_with("--connect-to: 'h:443' expected HOST:PORT"), "{e}");
    let e = err(&["--issuer", "https://h", "--once", "--successes", "2"], &[]);
    assert!(e.contains("--once"), "{e}");
    let e = err(&["--issuer", "https://h", "--max-attempts", "2", "--successes", "3"], &[]);
    assert!(e.contains("never be reached"), "{e}");
    let e = err(&["--issuer", "https://h", "--token-file", "/nonexistent/token"], &[]);
    assert!(e.starts_with("--token-file: token file '/nonexistent/token' cannot be read"), "{e}");
    let e = err(&["--issuer", "https://h"], &[("WAIT_FOR_IDP_OUTPUT", "yaml")]);
    assert!(e.contains("text or json"), "{e}");
}

#[test]
fn issuers_are_read_as_the_real_client_reads_them() {
    let c = build(&[], &[("OAUTH2_PROXY_OIDC_ISSUER_URL", "https://h/realms/a,b")]).unwrap();
    assert_eq!(c.targets.len(), 1);
    assert_eq!(c.targets[0].name(), "https://h/realms/a,b", "one URL, not a list");
    let e = err(&[], &[("OAUTH2_PROXY_OIDC_ISSUER_URL", "https://h/realms/a ")]);
    assert!(e.starts_with("OAUTH2_PROXY_OIDC_ISSUER_URL") && e.contains("white space"), "{e}");
    let args = ["--issuer", "https://a", "--issuer", "https://b", "--issuer", "https://a"];
    let c = build(&args, &[]).unwrap();
    assert_eq!(c.targets.iter().map(|t| t.name()).collect::<Vec<_>>(), ["https://a", "https://b"]);
    assert_eq!(warnings(&args, &[]), ["--issuer: https://a is given twice; it is polled once"]);
}

#[test]
fn plain_http_is_allowed_with_a_warning() {
    assert!(warnings(&["--issuer", "http://keycloak:8080/realms/x"], &[])[0].contains("plain http"));
}

#[test]
fn once_is_one_attempt_and_fails_closed() {
    let loaded = load(&["--issuer", "https://h", "--once"], &[]).unwrap();
    assert_eq!(loaded.config.max_attempts, Some(1));
    assert!(loaded.config.fail_closed);
    assert!(loaded.mode.once && !loaded.mode.dry_run && !loaded.mode.quiet);
}

#[test]
fn help_shows_the_defaults_the_configuration_uses() {
    let help = cli::command().render_long_help().to_string();
    for shown in
        ["at least 100ms [default: 5m]", "[default: 1s]", "[default: 5s]", "[default: oidc]", "[default: text]"]
    {
        assert!(help.contains(shown), "{shown} not in --help");
    }
}

#[test]
fn resources_and_jwks_urls() {
    let c = build(&["--resource", "https://mcp.example/tenant/mcp"], &[]).unwrap();
    assert_eq!(c.targets, [Target::Resource { resource: "https://mcp.example/tenant/mcp".into() }]);
    let c = build(&["--issuer", "https://a", "--resource", "https://r"], &[("WAIT_FOR_IDP_METADATA", "auto")]).unwrap();
    assert_eq!(c.targets.len(), 2);
    assert_eq!(c.rules.kind, MetadataKind::Auto);
    let c = build(&["--issuer", "https://k", "--jwks-url", "https://k/openid/v1/jwks"], &[]).unwrap();
    assert!(c.check_jwks, "--jwks-url implies --check-jwks");
    assert_eq!(c.jwks_url.as_deref(), Some("https://k/openid/v1/jwks"));
    let e = err(&["--resource", "https://r", "--jwks-url", "https://k/jwks"], &[]);
    assert!(e.starts_with("--jwks-url names one issuer's document but 0 issuer(s) and 1 resource(s)"), "{e}");
    let e = err(&["--issuer", "https://a", "--resource", "https://r", "--discovery-url", "https://a/x"], &[]);
    assert!(e.contains("single --issuer and no --resource"), "{e}");
    let e = err(&["--resource", "https://r#top"], &[]);
    assert!(e.starts_with("--resource: 'https://r#top' has a fragment"), "{e}");
    let e = err(&[], &[("WAIT_FOR_IDP_RESOURCE", "")]);
    assert!(e.contains("or --resource"), "{e}");
}
