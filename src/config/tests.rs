use super::*;
use crate::rules::authorization_server::MetadataKind;
use crate::settings::{self, Given, Id};
use crate::trust_store::{Anchors, CaFileProblem};
use std::collections::HashMap;
use std::time::Duration;

fn load(args: &[&str], env: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
    let env: HashMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let given = Given::parse_from(std::iter::once("wait-for-idp").chain(args.iter().copied())).unwrap();
    let names: Vec<&str> = env.keys().map(String::as_str).collect();
    super::load(&given, &|k| env.get(k).map(std::ffi::OsString::from), &names)
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

/// Issue 36 §3: what is set and silently not used, said. The gate's issuer and oauth2-proxy's
/// differing (the gate would check one the proxy does not use); `ALL_PROXY`, which Go never reads;
/// a mode's name as a variable, which both modes now say the same way (and refuse under
/// `--dry-run`, as any unknown variable).
#[test]
fn drift_is_said_not_silent() {
    let proxy = ("OAUTH2_PROXY_OIDC_ISSUER_URL", "https://sso.example.com/realms/x");
    let said = warnings(&[], &[("WAIT_FOR_IDP_ISSUER", "https://a.example"), proxy]);
    assert!(
        said.iter().any(|w| w.starts_with(
            "WAIT_FOR_IDP_ISSUER is 'https://a.example' but OAUTH2_PROXY_OIDC_ISSUER_URL \
                                            is 'https://sso.example.com/realms/x'"
        )),
        "{said:?}"
    );
    let said = warnings(&["--issuer", "https://a.example"], &[proxy]);
    assert!(said.iter().any(|w| w.starts_with("--issuer is 'https://a.example' but")), "{said:?}");
    for same in [vec![("WAIT_FOR_IDP_ISSUER", proxy.1), proxy], vec![proxy]] {
        assert!(warnings(&[], &same).is_empty(), "one value: nothing to say");
    }
    let notes = load(&["--issuer", "https://a.example"], &[("ALL_PROXY", "socks5://p:1080")]).unwrap().notices;
    assert!(notes.iter().any(|n| matches!(n, Notice::Note(t) if t.starts_with("ALL_PROXY is set and not used"))));
    for (name, flag) in [("WAIT_FOR_IDP_ONCE", "--once"), ("WAIT_FOR_IDP_DRY_RUN", "--dry-run")] {
        let said = warnings(&["--issuer", "https://a.example"], &[(name, "true")]);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].starts_with(&format!("{name} is not a variable wait-for-idp reads: {flag} is a mode")));
        let e = err(&["--issuer", "https://a.example", "--dry-run"], &[(name, "true")]);
        assert!(e.contains(&format!("{flag} is a mode")), "{e}");
    }
}

/// Issue 36 §6: a CA file the gate's user may not read names what to change in Kubernetes; a
/// comma list given to the flag says to repeat it.
#[test]
fn ca_file_mistakes_name_the_fix() {
    let denied = CaFileProblem::Unreadable(std::io::Error::from(std::io::ErrorKind::PermissionDenied)).to_string();
    assert!(denied.contains("defaultMode") && denied.contains("fsGroup"), "{denied}");
    let e = err(&["--issuer", "https://a.example", "--ca-file", "/nonexistent/a.pem,/nonexistent/b.pem"], &[]);
    assert!(e.ends_with("for several files repeat --ca-file (its variable takes them comma-separated)"), "{e}");
    let e = err(&["--issuer", "https://a.example"], &[("WAIT_FOR_IDP_CA_FILE", "/nonexistent/a.pem,/b.pem")]);
    assert!(!e.contains("repeat"), "the variable takes a list: {e}");
}

/// Every default the table writes (typed by its parser) is a value its reader takes when given:
/// `--help` says it, and saying it back changes nothing, the duration's minimum included.
#[test]
fn every_default_is_a_value_its_setting_takes() {
    for s in settings::SETTINGS {
        let Some(default) = s.default_text() else { continue };
        let flag = s.id.flag();
        let given = load(&["--issuer", "https://h", &flag, &default], &[]).unwrap_or_else(|e| panic!("{flag}: {e}"));
        let unset = load(&["--issuer", "https://h"], &[]).unwrap();
        let (given, unset) = (&given.config, &unset.config);
        let timing = |c: &Config| (c.timing.timeout, c.timing.interval, c.timing.attempt_timeout, c.timing.successes);
        assert_eq!(timing(given), timing(unset), "{flag} {default}");
        assert_eq!((given.output, given.checks.rules.kind), (unset.output, unset.checks.rules.kind), "{flag}");
        assert_eq!(given.termination_log.path, unset.termination_log.path, "{flag}");
    }
}

/// With nothing set, every setting is read from the table's default, typed by its parser: a
/// duration, a count or a choice has one by its kind, so no reader can find it missing.
#[test]
fn defaults() {
    let c = build(&["--issuer", "https://kc.example/realms/x"], &[]).unwrap();
    assert_eq!(c.targets[0], Target::Issuer { issuer: "https://kc.example/realms/x".into(), discovery_url: None });
    assert_eq!(
        (c.timing.timeout, c.timing.interval, c.timing.attempt_timeout),
        (Duration::from_secs(300), Duration::from_secs(1), Duration::from_secs(5))
    );
    assert_eq!((c.checks.rules.kind, c.output, c.timing.successes), (MetadataKind::Oidc, Output::Text, 1));
    assert_eq!(c.timing.max_attempts, None);
    assert!(!c.fail_closed);
    assert!(!c.termination_log.create);
    let c = build(&["--issuer", "https://kc.example/realms/x", "--serve", "127.0.0.1:9090"], &[]).unwrap();
    let serve = c.serve.unwrap();
    assert_eq!((serve.interval, serve.failures), (Duration::from_secs(30), 3), "the table's defaults");
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
    assert_eq!(c.checks.rules.kind, MetadataKind::OAuth);
    assert_eq!(c.timing.timeout, Duration::from_secs(10));
    assert_eq!(c.timing.interval, Duration::from_secs(1), "an empty variable counts as unset");
    assert!(c.fail_closed);
    assert_eq!(c.timing.max_attempts, Some(7));
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
    let e = err(&["--issuer", "https://h", "--timeout", "1000d"], &[]);
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
    assert!(loaded.config.checks.rules.skip_issuer_check);
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
    assert_eq!(c.network.connect_to.len(), 1);
    assert_eq!(c.timing.successes, 3);
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
    assert_eq!(loaded.config.timing.max_attempts, Some(1));
    assert!(loaded.config.fail_closed);
    assert!(loaded.mode.once && !loaded.mode.dry_run && !loaded.mode.quiet);
}

#[test]
fn help_shows_the_defaults_the_configuration_uses() {
    let help = settings::command().render_long_help().to_string();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
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
    assert_eq!(c.checks.rules.kind, MetadataKind::Auto);
    let c = build(&["--issuer", "https://k", "--jwks-url", "https://k/openid/v1/jwks"], &[]).unwrap();
    assert!(c.checks.check_jwks, "--jwks-url implies --check-jwks");
    assert_eq!(c.checks.jwks_url.as_deref(), Some("https://k/openid/v1/jwks"));
    let e = err(&["--resource", "https://r", "--jwks-url", "https://k/jwks"], &[]);
    assert!(e.starts_with("--jwks-url names one issuer's document but 0 issuer(s) and 1 resource(s)"), "{e}");
    let e = err(&["--issuer", "https://a", "--resource", "https://r", "--discovery-url", "https://a/x"], &[]);
    assert!(e.contains("single --issuer and no --resource"), "{e}");
    let e = err(&["--resource", "https://r#top"], &[]);
    assert!(e.starts_with("--resource: 'https://r#top' has a fragment"), "{e}");
    let e = err(&[], &[("WAIT_FOR_IDP_RESOURCE", "")]);
    assert!(e.contains("or --resource"), "{e}");
}

/// A directory holding `ca.pem`, a CA certificate, and that file's path.
fn pem_dir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let pem = crate::trust_store::ca_pem(dir.path());
    (dir, pem)
}

fn notes(loaded: &Loaded) -> Vec<&str> {
    loaded.notices.iter().filter_map(|n| if let Notice::Note(s) = n { Some(s.as_str()) } else { None }).collect()
}

#[test]
fn go_trust_variables_add_to_the_trusted_certificates() {
    let (dir, pem) = pem_dir();
    std::fs::write(dir.path().join("README"), "not PEM, skipped as Go skips it").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("ca.pem", dir.path().join("5ad8a5d6.0")).unwrap();
    let d = dir.path().display().to_string();
    let env = [("SSL_CERT_FILE", pem.as_str()), ("SSL_CERT_DIR", &format!(":{d}"))];
    // Read when a chain needs them; whole at once under --dry-run, which says what they hold.
    let lazy = load(&["--issuer", "https://h"], &env).unwrap().config.network.trust;
    assert!(lazy.roots.anchors.is_empty() && lazy.sources.is_empty() && !lazy.mozilla);
    let mut roots = Anchors::default();
    let (sources, warnings) = lazy.store.expect("the store, to be read when needed").read(&mut roots);
    let loaded = load(&["--issuer", "https://h", "--dry-run"], &env).unwrap();
    let trust = &loaded.config.network.trust;
    assert!(trust.store.is_none());
    let sources: Vec<_> = sources.into_iter().map(|(variable, path, n)| (Source::Env(variable), path, n)).collect();
    assert_eq!((sources, roots.anchors, warnings), (trust.sources.clone(), trust.roots.anchors.clone(), Vec::new()));
    assert!(!trust.mozilla, "both set: Go reads no system bundle or directory, so Mozilla's roots do not stand in");
    assert_eq!(trust.roots.anchors.len(), 1, "each certificate once, and the hash link is not read");
    assert_eq!(trust.sources, [(Source::Env("SSL_CERT_FILE"), pem.clone(), 1), (Source::Env("SSL_CERT_DIR"), d, 1)]);
    assert!(loaded.notices.is_empty(), "{:?}", loaded.notices);
    let c = build(&["--issuer", "https://h", "--ca-file", &pem], &[]).unwrap();
    assert!(c.network.trust.mozilla && !c.checks.proxy_skips_verify);
    assert_eq!(c.network.trust.sources, [(Source::Flag(settings::Id::CaFile), pem, 1)]);
}

#[test]
fn go_trust_variables_that_are_wrong_are_warnings_not_errors() {
    let (dir, pem) = pem_dir();
    let prose = dir.path().join("README");
    std::fs::write(&prose, "no certificate here").unwrap();
    let dirs = format!("{pem}:/nonexistent/certs");
    let w = warnings(
        &["--issuer", "https://h", "--dry-run"],
        &[("SSL_CERT_FILE", "/nonexistent/ca.pem"), ("SSL_CERT_DIR", &dirs)],
    );
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(w[0].starts_with("SSL_CERT_FILE: '/nonexistent/ca.pem' cannot be read ("), "{}", w[0]);
    assert!(w[1].starts_with(&format!("SSL_CERT_DIR: '{pem}' cannot be read as a directory (")), "{}", w[1]);
    assert!(w[2].starts_with("SSL_CERT_DIR: '/nonexistent/certs' cannot be read as a directory"), "{}", w[2]);
    assert!(w.iter().all(|w| w.ends_with("; carrying on without it, as Go does")), "{w:?}");
    let w = warnings(&["--issuer", "https://h", "--dry-run"], &[("SSL_CERT_FILE", prose.to_str().unwrap())]);
    assert_eq!(
        w,
        [format!("SSL_CERT_FILE: '{}' holds no PEM certificate; carrying on without it, as Go does", prose.display())]
    );
}

#[test]
fn oauth2_proxy_ca_files_replace_the_system_pool_unless_told_otherwise() {
    let (_dir, pem) = pem_dir();
    let (files, missing) = (("OAUTH2_PROXY_PROVIDER_CA_FILES", pem.as_str()), ("SSL_CERT_FILE", "/nonexistent.pem"));
    let only = load(&["--issuer", "https://h", "--dry-run"], &[files, missing]).unwrap();
    assert!(!only.config.network.trust.mozilla, "no Mozilla roots: the proxy would reject what they sign");
    assert_eq!(only.config.network.trust.sources, [(Source::Env(files.0), pem.clone(), 1)]);
    assert!(!only.notices.iter().any(|n| matches!(n, Notice::Warning(_))), "SSL_CERT_FILE is not read at all");
    assert!(notes(&only)[0].starts_with("trusting only the CA files in OAUTH2_PROXY_PROVIDER_CA_FILES"));
    let system = load(
        &["--issuer", "https://h", "--dry-run"],
        &[files, missing, ("OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE", "true")],
    );
    let system = system.unwrap();
    assert!(system.config.network.trust.mozilla && notes(&system).is_empty());
    assert!(matches!(&system.notices[0], Notice::Warning(w) if w.starts_with("SSL_CERT_FILE: '/nonexistent.pem'")));
    let own =
        build(&["--issuer", "https://h"], &[("WAIT_FOR_IDP_CA_FILE", &pem), ("OAUTH2_PROXY_PROVIDER_CA_FILES", "/x")]);
    assert!(own.unwrap().network.trust.mozilla, "the gate's own CA files keep their meaning");
    let e = err(&["--issuer", "https://h"], &[files, ("OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE", "maybe")]);
    assert!(e.starts_with("OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE: 'maybe' is not valid; expected true or false"), "{e}");
}

#[test]
fn a_proxy_that_skips_certificate_checks_is_named() {
    let skip = [("OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY", "true")];
    let loaded = load(&["--issuer", "https://h"], &skip).unwrap();
    assert!(loaded.config.checks.proxy_skips_verify);
    let w = warnings(&["--issuer", "https://h"], &skip);
    assert!(w[0].contains("oauth2-proxy skips certificate checks, the gate never does") && w[0].contains("--ca-file"));
    let e = err(&["--issuer", "https://h"], &[("OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY", "sure")]);
    assert!(e.starts_with("OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY: 'sure' is not valid"), "{e}");
}

#[test]
fn unrendered_templates_are_named_before_anything_else() {
    let template = "contains '{{': an unrendered Helm/Go template";
    type Case = (&'static [&'static str], &'static [(&'static str, &'static str)], &'static str);
    let cases: [Case; 5] = [
        (&["--issuer", "{{ .Values.config.issuer }}"], &[], "--issuer"),
        (&[], &[("OAUTH2_PROXY_OIDC_ISSUER_URL", " {{ .Values.config.issuer }}")], "OAUTH2_PROXY_OIDC_ISSUER_URL"),
        (&["--resource", "https://{{ .Values.host }}/mcp"], &[], "--resource"),
        (&["--issuer", "https://h", "--discovery-url", "{{x}}"], &[], "--discovery-url"),
        (&["--issuer", "https://h"], &[("WAIT_FOR_IDP_JWKS_URL", "{{ .Values.jwks }}")], "WAIT_FOR_IDP_JWKS_URL"),
    ];
    for (args, env, source) in cases {
        let e = err(args, env);
        assert!(e.starts_with(&format!("{source}: '")) && e.contains(template), "{e}");
        assert!(e.contains("write the URL itself"), "{e}");
    }
}

#[test]
fn the_command_after_double_dash_is_carried_and_an_empty_one_refused() {
    let config = build(&["--issuer", "https://h", "--", "vault", "write", "secret/x"], &[]).unwrap();
    let then = config.then.unwrap();
    assert_eq!(then.program, "vault");
    assert_eq!(then.args, ["write", "secret/x"]);
    assert!(build(&["--issuer", "https://h"], &[]).unwrap().then.is_none());
    let alone = err(&["--issuer", "https://h", "--"], &[]);
    assert!(alone.contains("'--' is given with no command after it"), "{alone}");
    assert!(alone.contains("-- COMMAND [ARGS...]"), "{alone}");
    let empty = err(&["--issuer", "https://h", "--", ""], &[]);
    assert!(empty.contains("the command after '--' is an empty word"), "{empty}");
}

#[test]
fn the_discovery_url_as_the_issuer_is_refused_with_the_issuer_to_give() {
    let e = err(&["--issuer", "https://kc.example/realms/main/.well-known/openid-configuration"], &[]);
    assert!(
        e.starts_with("--issuer: 'https://kc.example/realms/main/.well-known/openid-configuration' is the discovery")
    );
    assert!(e.contains("'https://kc.example/realms/main', as the issuer") && e.contains("--discovery-url"), "{e}");
}

#[test]
fn several_issuers_in_one_value_are_refused_by_source() {
    let e = err(&["--issuer", "https://a.example, https://b.example"], &[]);
    assert!(e.contains("repeat --issuer for each issuer"), "{e}");
    let e = err(&[], &[("OAUTH2_PROXY_OIDC_ISSUER_URL", "https://a.example,https://b.example")]);
    assert!(e.contains("oauth2-proxy reads it as one URL"), "{e}");
    // Our own variable is a list; a comma inside a path is no list.
    let c = build(&[], &[("WAIT_FOR_IDP_ISSUER", "https://a.example,https://b.example")]).unwrap();
    assert_eq!(c.targets.len(), 2);
    assert!(build(&["--issuer", "https://a.example/realms/a,b"], &[]).is_ok());
}

#[test]
fn a_missing_issuer_names_the_variable_that_was_meant() {
    let e = err(&[], &[("WAIT_FOR_IDP_ISSUER_URL", "https://a.example")]);
    assert!(e.starts_with("no issuer given: WAIT_FOR_IDP_ISSUER_URL is set; did you mean WAIT_FOR_IDP_ISSUER?"), "{e}");
    assert!(err(&[], &[]).starts_with("no issuer given: pass --issuer"));
}

#[test]
fn switches_take_true_and_false_on_the_command_line_and_beat_their_variable() {
    let env = [("WAIT_FOR_IDP_FAIL_CLOSED", "true")];
    assert!(!build(&["--issuer", "https://h", "--fail-closed=false"], &env).unwrap().fail_closed);
    assert!(build(&["--issuer", "https://h", "--fail-closed"], &[]).unwrap().fail_closed);
    assert!(build(&["--issuer", "https://h", "--fail-closed=off", "--fail-closed=yes"], &[]).unwrap().fail_closed);
    let e = err(&["--issuer", "https://h", "--fail-closed=maybe"], &[]);
    assert!(e.starts_with("--fail-closed: 'maybe' is not valid"), "{e}");
}

#[test]
fn the_log_level_is_the_word_raised_by_each_v() {
    let level = |args: &[&str], env: &[(&str, &str)]| {
        let args: Vec<&str> = ["--issuer", "https://h"].iter().chain(args).copied().collect();
        load(&args, env).unwrap().mode.log_level
    };
    assert_eq!(level(&[], &[]), log::LevelFilter::Info);
    assert_eq!(level(&["-v"], &[]), log::LevelFilter::Debug);
    assert_eq!(level(&["-vv"], &[]), log::LevelFilter::Trace);
    assert_eq!(level(&["-v"], &[("WAIT_FOR_IDP_LOG_LEVEL", "trace")]), log::LevelFilter::Trace);
    assert_eq!(level(&["--log-level", "warn"], &[("WAIT_FOR_IDP_LOG_LEVEL", "debug")]), log::LevelFilter::Warn);
    assert!(err(&["--issuer", "https://h", "--log-level", "loud"], &[]).contains("error or warn or info"));
    assert!(load(&["--issuer", "https://h", "--log-format", "json"], &[]).unwrap().mode.log_json);
}

#[test]
fn credentials_with_only_resources_are_said_to_go_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "abcdefghijklmnop").unwrap();
    let token = token.to_str().unwrap();
    let w = warnings(&["--resource", "https://mcp.example/mcp", "--token-file", token], &[]);
    assert!(w.iter().any(|w| w.starts_with("--token-file will not be sent")), "{w:?}");
    let w = warnings(&["--issuer", "https://idp.example", "--token-file", token], &[]);
    assert!(!w.iter().any(|w| w.contains("will not be sent")), "{w:?}");
}

/// A variable read whose value is not UTF-8 is an error naming it, before whatever its absence
/// would cause (here: no issuer); one not read is nobody's business.
#[test]
fn a_variable_read_that_is_not_utf8_is_named() {
    use std::os::unix::ffi::OsStringExt as _;
    let given = Given::parse_from(["wait-for-idp", "--dry-run"]).unwrap();
    let names = vec!["WAIT_FOR_IDP_ISSUER", "UNREAD"];
    let env = |k: &str| names.contains(&k).then(|| std::ffi::OsString::from_vec(b"https://\xff".to_vec()));
    let e = super::load(&given, &env, &names).unwrap_err();
    assert!(matches!(&e, ConfigError::NotUtf8 { name } if name == "WAIT_FOR_IDP_ISSUER"), "{e}");
    let given = Given::parse_from(["wait-for-idp", "--issuer", "https://h"]).unwrap();
    assert!(super::load(&given, &env, &names).is_ok(), "the flag wins, the variable is not read");
}

/// Every row of the table is read: given on its own (beside an issuer), each setting is either
/// taken, its flag then among the sources, or refused naming its flag. A row that nothing reads
/// would be accepted and ignored. The sample is an exhaustive match, so a new row needs one.
#[test]
fn every_setting_in_the_table_is_read() {
    for s in settings::SETTINGS {
        let flag = s.id.flag();
        let value = match s.id {
            Id::Issuer | Id::Resource | Id::DiscoveryUrl | Id::JwksUrl => "https://h/x",
            Id::Metadata => "auto",
            Id::Client => "toolhive",
            Id::Output | Id::LogFormat => "json",
            Id::LogLevel => "debug",
            Id::Timeout | Id::Interval | Id::AttemptTimeout | Id::WatchInterval => "2s",
            Id::MaxAttempts | Id::Successes | Id::WatchFailures => "2",
            Id::Serve => ":8080",
            Id::ConnectTo => "h:443:127.0.0.1:8443",
            Id::CaFile | Id::TokenFile | Id::TerminationLog => "/nonexistent",
            Id::HeaderFile => "X-Key=/nonexistent",
            Id::SkipIssuerCheck
            | Id::Strict
            | Id::CheckJwks
            | Id::RefuseLegacyAuth
            | Id::FailClosed
            | Id::Once
            | Id::RefusePrivateAddresses
            | Id::Quiet
            | Id::DryRun
            | Id::Verbose => "",
        };
        let mut args = vec!["--issuer", "https://h"];
        args.extend([flag.as_str(), value].into_iter().filter(|a| !a.is_empty()));
        match load(&args, &[]) {
            Ok(loaded) => assert!(loaded.config.sources.contains_key(&s.id), "{flag} is not read"),
            Err(e) => assert!(e.to_string().starts_with(&format!("{flag}: ")), "{flag} {value}: {e}"),
        }
    }
}

/// A choice setting reads the type its row lists the words of: each word the table offers is
/// taken, means the value that word names, and an unknown word is refused listing them all.
#[test]
fn a_choice_setting_takes_every_word_its_row_lists() {
    use crate::settings::{Choice, Parser};
    for s in settings::SETTINGS {
        let Parser::Choice { words, .. } = s.parser else { continue };
        let flag = s.id.flag();
        for word in words() {
            let loaded = load(&["--issuer", "https://h", &flag, word], &[]).unwrap_or_else(|e| panic!("{e}"));
            let (config, mode) = (&loaded.config, &loaded.mode);
            let read = match s.id {
                Id::Metadata => config.checks.rules.kind.word(),
                Id::Client => config.checks.rules.client.word(),
                Id::Output => config.output.word(),
                Id::LogLevel => mode.log_level.word(),
                Id::LogFormat => if mode.log_json { Output::Json } else { Output::Text }.word(),
                other => panic!("{other:?} is a choice that this test does not know"),
            };
            assert_eq!(read, word, "{flag}");
        }
        assert!(err(&["--issuer", "https://h", &flag, "nonsense"], &[]).ends_with(&words().join(" or ")));
    }
}

/// humantime reads `M` as months and `y` as years: every duration setting refuses both, naming
/// the flag or variable, and offers minutes for `M`.
#[test]
fn durations_in_months_or_years_are_refused() {
    for s in settings::SETTINGS.iter().filter(|s| matches!(s.parser, settings::Parser::Duration { .. })) {
        let flag = s.id.flag();
        let e = err(&["--issuer", "https://h", &flag, "5M"], &[]);
        assert!(e.starts_with(&format!("{flag}: '5M'")) && e.contains("did you mean 5m?"), "{e}");
        let env = s.env.unwrap();
        for value in ["1y", "1yr", "2yrs", "1year", "2 years", "1month", "2 months", "1h 1year"] {
            let e = err(&["--issuer", "https://h"], &[(env, value)]);
            assert!(e.starts_with(&format!("{env}: '{value}'")) && e.ends_with("not in months or years"), "{e}");
        }
    }
    let c = build(
        &["--issuer", "https://h", "--timeout", "1h30m", "--interval", "1w 2days", "--attempt-timeout", "5µs"],
        &[],
    );
    let c = c.unwrap();
    assert_eq!((c.timing.timeout, c.timing.interval), (Duration::from_secs(5400), Duration::from_secs(777_600)));
    assert_eq!(c.timing.attempt_timeout, Duration::from_micros(5));
    assert!(err(&["--issuer", "https://h"], &[("WAIT_FOR_IDP_TIMEOUT", "1d 2M")]).ends_with("did you mean 1d 2m?"));
    // Every other unit humantime takes, days among them, is not taken for months or years.
    let all = "1nsec 1ns 1usec 1us 1µs 1msec 1ms 1millis 1nanos 1seconds 1second 1secs 1sec 1s 1minutes 1minute \
               1min 1mins 1m 1hours 1hour 1hr 1hrs 1h 1days 1day 1d 1weeks 1week 1wk 1wks 1w";
    assert!(build(&["--issuer", "https://h", "--timeout", all], &[]).is_ok());
}

/// A `--connect-to` rule that matches none of the URLs known at start is said, with the hosts
/// and ports they name; one that matches, or one for the `--jwks-url`, is not.
#[test]
fn a_connect_to_rule_matching_nothing_known_is_said() {
    let base = ["--issuer", "https://kc.example/realms/x"];
    let said = |args: &[&str], env: &[(&str, &str)]| -> Vec<String> {
        let args: Vec<&str> = base.iter().chain(args).copied().collect();
        warnings(&args, env).into_iter().filter(|w| w.contains("matches none")).collect()
    };
    let w = said(&["--connect-to", "kc.example:8443:127.0.0.1:8443"], &[]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("--connect-to: 'kc.example:8443:127.0.0.1:8443' matches none"), "{w:?}");
    assert!(w[0].contains("(kc.example:443)"), "{w:?}");
    let w = said(&[], &[("WAIT_FOR_IDP_CONNECT_TO", "other.example::127.0.0.1:")]);
    assert!(w.len() == 1 && w[0].starts_with("WAIT_FOR_IDP_CONNECT_TO: 'other.example::127.0.0.1:"), "{w:?}");
    for rule in ["kc.example:443:127.0.0.1:8443", "KC.example::127.0.0.1:", "::127.0.0.1:8443"] {
        assert!(said(&["--connect-to", rule], &[]).is_empty(), "{rule}");
    }
    let jwks = ["--connect-to", "keys.example:443:127.0.0.1:9443", "--jwks-url", "https://keys.example/jwks"];
    assert!(said(&jwks, &[]).is_empty());
    let v6 = ["--issuer", "https://[::1]:8443/x", "--connect-to", "[::1]:8443:127.0.0.1:9443"];
    assert!(warnings(&v6, &[]).iter().all(|w| !w.contains("matches none")));
}

/// `--client`: the guarded client's time limit unless `--attempt-timeout` is given, its issuer
/// rule before any waiting, and its private-address guard unless it is allowed or loopback.
#[test]
fn the_client_brings_its_own_limit_issuer_rule_and_address_guard() {
    let attempt = |args: &[&str]| load(args, &[]).unwrap().config.timing.attempt_timeout;
    let thv = ["--issuer", "https://idp.example", "--client", "toolhive"];
    assert_eq!(attempt(&thv), Duration::from_secs(10));
    assert_eq!(
        attempt(&["--issuer", "https://h", "--client", "oauth2-proxy", "--timeout", "90s"]),
        Duration::from_secs(90)
    );
    assert_eq!(
        attempt(&["--issuer", "https://h", "--client", "go-oidc", "--attempt-timeout", "3s"]),
        Duration::from_secs(3)
    );
    assert_eq!(attempt(&["--issuer", "https://h"]), Duration::from_secs(5), "the default keeps today's");
    let refuse = |args: &[&str]| load(args, &[]).unwrap().config.checks.refuse_private_addresses;
    assert!(refuse(&thv) && !refuse(&["--issuer", "https://idp.example"]));
    assert!(!refuse(&["--issuer", "https://idp.example", "--client", "toolhive", "--refuse-private-addresses=false"]));
    assert!(!refuse(&["--issuer", "http://127.0.0.1:8080", "--client", "toolhive"]));
    let e = load(&["--issuer", "http://idp.svc:8080", "--client", "toolhive"], &[]).unwrap_err().to_string();
    assert!(
        e.starts_with("--issuer: 'http://idp.svc:8080' is not valid") && e.contains("endpoint must use HTTPS"),
        "{e}"
    );
    let e = load(&["--issuer", "https://h", "--client", "keycloak"], &[]).unwrap_err().to_string();
    assert!(e.contains("toolhive"), "{e}");
    let env = load(&["--issuer", "https://h"], &[("WAIT_FOR_IDP_CLIENT", "toolhive")]).unwrap();
    assert_eq!(env.config.checks.rules.client, crate::rules::client::Client::ToolHive);
}
