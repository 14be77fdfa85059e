//! Configuration: by flags, by `WAIT_FOR_IDP_*` variables alone, or by oauth2-proxy's own
//! variables read as oauth2-proxy reads them; `--help` and `--version`; an issuer given twice is
//! polled once; and every way bad input ends in exit 2, naming the flag or variable and how to
//! write it (a bad URL, an unrendered template, credentials redacted).

use crate::support::*;

#[test]
fn configured_entirely_by_environment_variables() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/demo");
    let log = ca.path("termination-log");
    let mut cmd = gate();
    cmd.env("WAIT_FOR_IDP_ISSUER", &iss)
        .env("WAIT_FOR_IDP_CA_FILE", format!("{},{}", ca.ca_arg(), ca.ca_arg()))
        .env("WAIT_FOR_IDP_TIMEOUT", "20s")
        .env("WAIT_FOR_IDP_INTERVAL", "500ms")
        .env("WAIT_FOR_IDP_ATTEMPT_TIMEOUT", "3s")
        .env("WAIT_FOR_IDP_MAX_ATTEMPTS", "3")
        .env("WAIT_FOR_IDP_METADATA", "oidc")
        .env("WAIT_FOR_IDP_STRICT", "true")
        .env("WAIT_FOR_IDP_FAIL_CLOSED", "true")
        .env("WAIT_FOR_IDP_TERMINATION_LOG", &log)
        .env("WAIT_FOR_IDP_QUIET", "true");
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(r.log().lines().count(), 1, "--quiet keeps only the final line: {}", r.log());
    assert!(std::fs::read_to_string(&log).unwrap().starts_with("ready: "));

    let mut cmd = gate();
    cmd.env("WAIT_FOR_IDP_ISSUER", &iss)
        .env("WAIT_FOR_IDP_DISCOVERY_URL", format!("{iss}{WELL_KNOWN}"))
        .env("WAIT_FOR_IDP_CA_FILE", ca.ca_arg())
        .env("WAIT_FOR_IDP_SKIP_ISSUER_CHECK", "no")
        .env("WAIT_FOR_IDP_MAX_ATTEMPTS", "1");
    assert_exit(&run(cmd), 0);
}

#[test]
fn oauth2_proxy_issuer_variable_is_one_url_taken_as_it_is() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/a,b");
    let mut cmd = gate();
    cmd.env("OAUTH2_PROXY_OIDC_ISSUER_URL", &iss).env("OAUTH2_PROXY_PROVIDER_CA_FILES", ca.ca_arg()).arg("--once");
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "a comma is part of the URL: {}", r.log());

    let mut cmd = gate();
    cmd.env("OAUTH2_PROXY_OIDC_ISSUER_URL", format!("{iss} ")).arg("--once");
    let r = run(cmd);
    assert_exit(&r, 2);
    assert!(
        r.log().contains("OAUTH2_PROXY_OIDC_ISSUER_URL") && r.log().contains("trailing white space"),
        "{}",
        r.log()
    );
}

#[test]
fn the_same_issuer_twice_is_polled_once() {
    let ca = TestCa::new();
    let (p, iss) = ready_provider(&ca, "localhost", "");
    let mut cmd = gate_for(&ca, &iss);
    cmd.args(["--issuer", &iss]);
    let r = run(cmd);
    assert_exit(&r, 0);
    assert_eq!(p.count(), 1);
    assert_logged(&r, &["is given twice; it is polled once"]);
}

/// `--help` in 80 columns with examples; `-h` one screen, a line a flag; `--version` the commit.
#[test]
fn help_and_version() {
    let r = run_args(gate(), &["--help"]);
    assert_exit(&r, 0);
    assert!(r.stdout.contains("[env: WAIT_FOR_IDP_TIMEOUT]") && r.stdout.contains("Exit codes"), "{}", r.stdout);
    assert!(r.stdout.contains("Examples:\n  # ") && r.stdout.contains("TLS and network:"), "{}", r.stdout);
    assert!(r.stdout.lines().all(|l| l.chars().count() <= 80), "over 80 columns:\n{}", r.stdout);
    let short = run_args(gate(), &["-h"]);
    assert_exit(&short, 0);
    assert!(short.stdout.lines().count() <= 50 && short.stdout.lines().all(|l| l.chars().count() <= 80));
    assert!(
        short.stdout.contains("      --timeout DURATION  ") && !short.stdout.contains("Examples"),
        "{}",
        short.stdout
    );
    let r = run_args(gate(), &["--version"]);
    assert_exit(&r, 0);
    assert!(r.stdout.starts_with("wait-for-idp 0."), "{}", r.stdout);
    let commit = r.stdout.split("(commit ").nth(1).map(|c| c.trim_end().trim_end_matches(')')).unwrap_or_default();
    let git =
        std::process::Command::new("git").args(["rev-parse", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output();
    match git.ok().filter(|o| o.status.success()) {
        Some(head) => assert_eq!(commit, String::from_utf8_lossy(&head.stdout).trim(), "{}", r.stdout),
        None => assert!(!commit.is_empty(), "{}", r.stdout),
    }
}

/// Boolean flags as kubectl's and helm's (Go's pflag): `--flag`, `--flag=true`, `--flag=false`,
/// read with the variables' words; `--flag=false` beats its variable, a bad word is exit 2 naming
/// the flag, and a value after a space is told to go after `=`.
#[test]
fn boolean_flags_take_true_and_false_and_beat_their_variable() {
    let dry = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = gate();
        cmd.args(["--issuer", "https://h", "--dry-run"]).args(args).envs(env.iter().copied());
        run(cmd)
    };
    let setting = |r: &Run, flag: &str| -> String {
        let line = r.stdout.lines().find(|l| l.trim_start().starts_with(&format!("{flag} ")));
        line.unwrap_or_else(|| panic!("{flag} not in\n{}", r.stdout))
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let r = dry(&["--fail-closed=false"], &[("WAIT_FOR_IDP_FAIL_CLOSED", "true")]);
    assert_exit(&r, 0);
    assert_eq!(setting(&r, "--fail-closed"), "false (from --fail-closed)");
    assert!(r.stdout.contains("fail open (exit 0)"), "{}", r.stdout);
    let r = dry(&["--strict=true", "--check-jwks", "--quiet=no"], &[("WAIT_FOR_IDP_QUIET", "1")]);
    assert_eq!(setting(&r, "--strict"), "true (from --strict)");
    assert_eq!(setting(&r, "--check-jwks"), "true (from --check-jwks)");
    assert_eq!(setting(&r, "--quiet"), "false (from --quiet)");
    let r = dry(&["--fail-closed=maybe"], &[]);
    assert_exit(&r, 2);
    assert_logged(&r, &["--fail-closed: 'maybe' is not valid; expected true or false"]);
    let r = dry(&["--fail-closed", "false"], &[]);
    assert_exit(&r, 2);
    assert_logged(&r, &["takes its value after '=': --fail-closed=false"]);
}

/// Mistakes caught before the wait, each exit 2 with the fix, under `--dry-run` and at run time:
/// the discovery URL given as the issuer, several issuers in one value, a misspelt variable as
/// the only issuer, an unknown flag, and `-k`.
#[test]
fn mistakes_are_caught_before_the_wait_with_the_fix() {
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: &[Case] = &[
        (
            &["--issuer", "https://sso.example/realms/main/.well-known/openid-configuration"],
            &[],
            &[
                "is the discovery URL, not the issuer",
                "'https://sso.example/realms/main', as the issuer",
                "--discovery-url",
            ],
        ),
        (
            &[],
            &[("OAUTH2_PROXY_OIDC_ISSUER_URL", "https://sso.example/realms/main/.well-known/openid-configuration")],
            &[
                "OAUTH2_PROXY_OIDC_ISSUER_URL: 'https://sso.example/realms/main/.well-known/",
                "the part before /.well-known/",
            ],
        ),
        (&["--issuer", "https://a.example,https://b.example"], &[], &["holds several URLs; repeat --issuer for each"]),
        (
            &[],
            &[("OAUTH2_PROXY_OIDC_ISSUER_URL", "https://a.example, https://b.example")],
            &["oauth2-proxy reads it as one URL", "several go in WAIT_FOR_IDP_ISSUER, comma-separated"],
        ),
        (
            &[],
            &[("WAIT_FOR_IDP_ISSUER_URL", "https://a.example")],
            &["WAIT_FOR_IDP_ISSUER_URL", "did you mean WAIT_FOR_IDP_ISSUER?"],
        ),
        (
            &[],
            &[("OAUTH2_PROXY_OIDC_ISSUER", "https://a.example")],
            &["OAUTH2_PROXY_OIDC_ISSUER is set; did you mean OAUTH2_PROXY_OIDC_ISSUER_URL?"],
        ),
        (&["--isuer", "https://a.example"], &[], &["a similar argument exists: '--issuer'"]),
        (&["--oidc-issuer-url", "https://a.example"], &[], &["a similar argument exists: '--issuer'"]),
        (&["--issuer", "https://a.example", "-k"], &[], &["there is no -k", "--ca-file PATH"]),
        (&["--issuer", "https://a.example", "--insecure"], &[], &["there is no --insecure", "--ca-file PATH"]),
    ];
    for (args, env, expected) in cases {
        for dry_run in [false, true] {
            let mut cmd = gate();
            cmd.args(*args).envs(env.iter().copied());
            if dry_run {
                cmd.arg("--dry-run");
            }
            let r = run(cmd);
            assert_eq!(r.code, Some(2), "{args:?} {env:?} dry-run {dry_run}: {}", r.log());
            for phrase in *expected {
                assert!(r.log().contains(phrase), "{args:?} {env:?} dry-run {dry_run}: {phrase:?} not in {}", r.log());
            }
        }
    }
}

/// Every way to get exit 2, each naming the flag or variable and the fix, credentials redacted.
#[test]
fn bad_input_exits_2_naming_the_flag_or_variable_and_the_fix() {
    let ca = TestCa::new();
    let files = [
        ("empty.pem", &b""[..]),
        ("ca.der", &[0x30u8, 0x82, 0x01, 0x00][..]),
        ("key.pem", &b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n"[..]),
    ];
    for (name, bytes) in files {
        std::fs::write(ca.path(name), bytes).unwrap();
    }
    let ca_file = |name: &str| ca.path(name).display().to_string();
    let (empty, der, key) = (ca_file("empty.pem"), ca_file("ca.der"), ca_file("key.pem"));
    type Case<'a> = (Vec<&'a str>, &'a [(&'a str, &'a str)], &'a str);
    let cases: Vec<Case> = vec![
        (vec!["--issuer", "https://h", "--timeout", "0"], &[], "--timeout: '0'"),
        (vec!["--issuer", "https://h", "--timeout", "-32"], &[], "--timeout: '-32'"),
        (vec!["--issuer", "https://h", "--interval", "fast"], &[], "--interval: 'fast'"),
        (vec!["--issuer", "https://h", "--attempt-timeout", "-1s"], &[], "--attempt-timeout: '-1s'"),
        (vec!["--issuer", "https://h", "--max-attempts", "0"], &[], "--max-attempts: '0'"),
        (vec!["--issuer", "sso.example.com"], &[], "--issuer: 'sso.example.com' is not an absolute URL"),
        (vec!["--issuer", "not a url"], &[], "--issuer: 'not a url' is not an absolute URL"),
        (vec!["--issuer", "ftp://h"], &[], "has the scheme 'ftp'"),
        (vec!["--issuer", "https://h/?x=1"], &[], "query"),
        (vec!["--issuer", "https://h#frag"], &[], "has a fragment"),
        (
            vec!["--issuer", "https://h", "--jwks-url", "https://h/keys?p=x#k"],
            &[],
            "--jwks-url: 'https://h/keys?p=x#k' has a fragment",
        ),
        (
            vec!["--issuer", "https://h"],
            &[("WAIT_FOR_IDP_DISCOVERY_URL", "https://u:hunter2@h/m?p=x")],
            "WAIT_FOR_IDP_DISCOVERY_URL: 'https://***@h/m?p=x' carries credentials",
        ),
        (vec!["--issuer", ""], &[], "--issuer: '' is empty"),
        (
            vec!["--issuer", "https://h", "--ca-file", "/nonexistent.pem"],
            &[],
            "--ca-file: CA file '/nonexistent.pem' cannot be read",
        ),
        (vec!["--issuer", "https://h", "--ca-file", &empty], &[], "is empty"),
        (vec!["--issuer", "https://h", "--ca-file", &der], &[], "is not PEM"),
        (vec!["--issuer", "https://h", "--ca-file", &key], &[], "no 'CERTIFICATE' block"),
        (vec!["--issuer", "https://h", "--once", "--max-attempts", "3"], &[], "--once makes exactly one attempt"),
        (
            vec!["--issuer", "https://h"],
            &[("WAIT_FOR_IDP_TIMEOUT", "5 minutes please")],
            "WAIT_FOR_IDP_TIMEOUT: '5 minutes please'",
        ),
        (vec!["--issuer", "https://h"], &[("WAIT_FOR_IDP_MAX_ATTEMPTS", "many")], "WAIT_FOR_IDP_MAX_ATTEMPTS: 'many'"),
        (vec!["--issuer", "https://h"], &[("WAIT_FOR_IDP_METADATA", "saml")], "WAIT_FOR_IDP_METADATA: 'saml'"),
        (
            vec![],
            &[("WAIT_FOR_IDP_ISSUER", "https://u:hunter2@h")],
            "WAIT_FOR_IDP_ISSUER: 'https://***@h' carries credentials",
        ),
        (vec!["--issuer", "https://h"], &[("HTTPS_PROXY", "http://u:pw@p:99999")], "HTTPS_PROXY: 'http://***@p:99999'"),
        (vec![], &[], "no issuer given"),
        (vec!["--issuer", "https://h", "--bogus"], &[], "unexpected argument '--bogus'"),
    ];
    for (args, env, expected) in cases {
        let mut cmd = gate();
        cmd.args(&args).envs(env.iter().copied());
        let r = run(cmd);
        assert_eq!(r.code, Some(2), "{args:?} {env:?}: {}", r.log());
        assert!(r.log().contains(expected), "{args:?} {env:?}: expected {expected:?} in {}", r.log());
        assert!(!r.log().contains("hunter2") && !r.log().contains(":pw@"), "{}", r.log());
    }
}

#[test]
fn bad_urls_say_how_to_write_them() {
    let long = format!("https://h/{}", "a".repeat(70_000));
    for (issuer, expected) in [
        ("https://bücher.example/realms/x", "punycode"),
        (" https://h/realms/x", "leading or trailing white space"),
        (long.as_str(), "the HTTP stack accepts URLs of at most 65534"),
    ] {
        let mut cmd = gate();
        cmd.args(["--issuer", issuer]);
        let r = run(cmd);
        assert_exit(&r, 2);
        assert!(r.log().contains(expected), "{expected}: {}", r.log());
    }
}

#[test]
fn an_unrendered_template_is_named() {
    let template = "{{ .Values.config.issuer }}";
    let r = run_args(gate(), &["--issuer", template, "--once"]);
    assert_exit(&r, 2);
    assert_logged(&r, &["--issuer: '{{ .Values.config.issuer }}' contains '{{': an unrendered Helm/Go template"]);
    let mut cmd = gate();
    cmd.arg("--once").env("OAUTH2_PROXY_OIDC_ISSUER_URL", template);
    let r = run(cmd);
    assert_exit(&r, 2);
    assert_logged(&r, &["OAUTH2_PROXY_OIDC_ISSUER_URL: '{{", "unrendered Helm/Go template", "write the URL itself"]);
}

/// `--dry-run` shows every setting `--help` offers, with its effective value and where it came
/// from, and the address a `--connect-to` rule sends the connection to; a token file by its
/// path, never its content.
#[test]
fn dry_run_shows_every_setting_with_its_origin_and_the_connect_to_route() {
    let ca = TestCa::new();
    let token = ca.path("token");
    std::fs::write(&token, "s3cr3t-token-value-0123456789").unwrap();
    let mut cmd = gate();
    cmd.args(["--issuer", "https://kc.example/realms/x", "--connect-to", "kc.example:443:127.0.0.1:8443"]);
    cmd.args(["--dry-run"]).env("WAIT_FOR_IDP_TIMEOUT", "90s").env("WAIT_FOR_IDP_TOKEN_FILE", &token);
    let r = run(cmd);
    assert_exit(&r, 0);
    let help = run_args(gate(), &["--help"]).stdout;
    let flags: std::collections::BTreeSet<&str> = help
        .split_whitespace()
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.split(['[', '=']).next().unwrap_or_default().trim_end_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !matches!(*w, "--help" | "--version"))
        .collect();
    assert!(flags.len() > 20, "{flags:?}");
    for flag in flags {
        assert!(
            r.stdout.lines().any(|l| l.trim_start().starts_with(&format!("{flag} "))),
            "{flag} not in\n{}",
            r.stdout
        );
    }
    for line in [
        "connect       direct to 127.0.0.1:8443 (--connect-to kc.example:443:127.0.0.1:8443",
        "(from --issuer)",
        "1m30s (from WAIT_FOR_IDP_TIMEOUT)",
        "(from WAIT_FOR_IDP_TOKEN_FILE)",
        "--interval                  1.00s (default)",
    ] {
        assert!(r.stdout.contains(line), "{line:?} not in\n{}", r.stdout);
    }
    assert!(r.stdout.contains(token.to_str().unwrap()) && !r.stdout.contains("s3cr3t"), "{}", r.stdout);
}

/// A pod gets seven service-link variables for every Service in its namespace: among 5,000 of
/// them, a misspelt variable of ours is still named with the one meant, as a warning at run time
/// and an error under `--dry-run`, and a misspelt issuer variable still explains a missing issuer.
/// What the scan of such an environment costs is the start-up bench's figure (`bash bench/run
/// --only startup`), not a timed assertion here.
#[test]
fn a_near_miss_is_named_among_thousands_of_service_links() {
    let links: Vec<(String, &str)> = (0..715)
        .flat_map(|i| {
            let s = format!("SVC{i:03}_WAIT_FOR_IDP");
            [
                (format!("{s}_SERVICE_HOST"), "10.96.0.10"),
                (format!("{s}_SERVICE_PORT"), "443"),
                (format!("{s}_PORT"), "tcp://10.96.0.10:443"),
                (format!("{s}_PORT_443_TCP"), "tcp://10.96.0.10:443"),
                (format!("{s}_PORT_443_TCP_PROTO"), "tcp"),
                (format!("{s}_PORT_443_TCP_PORT"), "443"),
                (format!("{s}_PORT_443_TCP_ADDR"), "10.96.0.10"),
            ]
        })
        .take(5_000)
        .collect();
    assert_eq!(links.len(), 5_000);
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/demo");
    let gate_among_links = |mangled: &str| {
        let mut cmd = gate_for(&ca, &iss);
        cmd.envs(links.iter().map(|(k, v)| (k.as_str(), *v))).env(mangled, "20s");
        cmd
    };
    for mangled in ["WAIT_FOR_IPD_TIMEOUT", "WAIT_FOR_IDP_TIMOUT"] {
        let meant = format!("{mangled} is not a variable wait-for-idp reads; did you mean WAIT_FOR_IDP_TIMEOUT?");
        let mut cmd = gate_among_links(mangled);
        cmd.arg("--once");
        let r = run(cmd);
        assert_exit(&r, 0);
        assert_logged(&r, &[&meant]);
        assert!(!r.log().contains("SVC"), "no service link is taken for a mistake: {}", r.log());
        let mut cmd = gate_among_links(mangled);
        cmd.arg("--dry-run");
        let r = run(cmd);
        assert_exit(&r, 2);
        assert_logged(&r, &[&meant]);
    }
    for (mangled, meant) in [
        ("WAIT_FOR_IDP_ISSUER_URL", "WAIT_FOR_IDP_ISSUER"),
        ("OAUTH2_PROXY_OIDC_ISSUER", "OAUTH2_PROXY_OIDC_ISSUER_URL"),
    ] {
        let mut cmd = gate();
        cmd.envs(links.iter().map(|(k, v)| (k.as_str(), *v))).env(mangled, &iss);
        let r = run(cmd);
        assert_exit(&r, 2);
        assert_logged(&r, &[&format!("no issuer given: {mangled} is set; did you mean {meant}?")]);
        assert!(!r.log().contains("SVC"), "no service link is taken for a near miss: {}", r.log());
    }
}

/// A value that is not UTF-8, in a variable the gate reads, is exit 2 naming it: taken for unset,
/// a garbled `WAIT_FOR_IDP_FAIL_CLOSED` failed open and `--dry-run` called the configuration
/// valid. The same for an argument, named by its position and flag. A variable the gate does not
/// read, and the command's own words after `--`, may hold any bytes.
#[test]
fn a_variable_or_an_argument_that_is_not_utf8_is_refused_naming_it() {
    use std::os::unix::ffi::OsStrExt as _;
    let garbled = std::ffi::OsStr::from_bytes(b"tr\xffue");
    for name in ["WAIT_FOR_IDP_FAIL_CLOSED", "WAIT_FOR_IDP_ISSUER", "OAUTH2_PROXY_OIDC_ISSUER_URL", "HTTPS_PROXY"] {
        // Each read as the gate reads it: the issuer's variables when no flag gives one.
        let mut cmd = gate();
        cmd.env(name, garbled).arg("--dry-run");
        if !name.contains("ISSUER") {
            cmd.args(["--issuer", "https://sso.example.com"]);
        }
        let r = run(cmd);
        assert_exit(&r, 2);
        assert_logged(&r, &[&format!("{name} is not UTF-8 (and so not taken for unset)")]);
    }
    let mut cmd = gate();
    cmd.env("SOMETHING_ELSE", garbled).args(["--issuer", "https://sso.example.com", "--dry-run", "--", "echo"]);
    cmd.arg(garbled);
    let r = run(cmd);
    assert_exit(&r, 0);
    let mut cmd = gate();
    cmd.args(["--dry-run", "--issuer"]).arg(std::ffi::OsStr::from_bytes(b"https://sso\xff.example.com"));
    let r = run(cmd);
    assert_exit(&r, 2);
    assert_logged(&r, &["argument 3 (the value of --issuer) is not UTF-8"]);
}

/// A secret set where the path to its file belongs is not printed by the error that the file
/// cannot be read: its length and first character only, and what was expected.
#[test]
fn a_secret_given_for_its_path_is_not_printed() {
    let jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6InRlc3QifQ.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ";
    let mut cmd = gate();
    cmd.env("WAIT_FOR_IDP_TOKEN_FILE", jwt).args(["--issuer", "https://sso.example.com", "--dry-run"]);
    let r = run(cmd);
    assert_exit(&r, 2);
    assert_logged(&r, &["WAIT_FOR_IDP_TOKEN_FILE", "a path to a file holding the token was expected"]);
    assert!(!r.log().contains("eyJ") && !r.log().contains("c2lnbmF0dXJl"), "{}", r.log());
    let mut cmd = gate();
    cmd.args([
        "--issuer",
        "https://sso.example.com",
        "--dry-run",
        "--header-file",
        "X-Api-Key=0123456789abcdef0123456789abcdef",
    ]);
    let r = run(cmd);
    assert_exit(&r, 2);
    assert!(!r.log().contains("0123456789abcdef"), "{}", r.log());
}

/// humantime reads `M` as months and `y` as years, so `--timeout 5M` once waited five months:
/// every duration setting refuses both, by flag or variable, before any waiting, and `M` is
/// offered as minutes.
#[test]
fn durations_in_months_or_years_are_refused_naming_the_flag_or_variable() {
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: &[Case] = &[
        (&["--timeout", "5M"], &[], &["--timeout: '5M' is not valid", "did you mean 5m?"]),
        (&["--watch-interval", "1h5M"], &[], &["--watch-interval: '1h5M'", "did you mean 1h5m?"]),
        (&[], &[("WAIT_FOR_IDP_INTERVAL", "1y")], &["WAIT_FOR_IDP_INTERVAL: '1y'", "not in months or years"]),
        (&[], &[("WAIT_FOR_IDP_ATTEMPT_TIMEOUT", "2months")], &["WAIT_FOR_IDP_ATTEMPT_TIMEOUT: '2months'"]),
    ];
    for (args, env, expected) in cases {
        let mut cmd = gate();
        cmd.args(["--issuer", "https://sso.example.com", "--dry-run"]).args(*args).envs(env.iter().copied());
        let r = run(cmd);
        assert_exit(&r, 2);
        assert_logged(&r, expected);
    }
}

/// clap's tip for a mistyped flag was to pass it after `--`, which makes it the command the gate
/// runs when ready (exit 127 once the wait is over): the flag meant is offered, and only that.
#[test]
fn a_mistyped_flag_gets_the_flag_meant_and_nothing_to_run() {
    for (typed, meant) in [("--timout", "'--timeout'"), ("--ca", "'--ca-file'"), ("--colour", "")] {
        let r = run_args(gate(), &["--issuer", "https://sso.example.com", typed, "5s"]);
        assert_exit(&r, 2);
        assert!(!r.log().contains("as a value") && !r.log().contains(&format!("-- {typed}")), "{}", r.log());
        let offered = r.log().contains("a similar argument exists");
        assert_eq!(offered, !meant.is_empty(), "{}", r.log());
        assert!(r.log().contains(&format!("a similar argument exists: {meant}")) || !offered, "{}", r.log());
    }
}

/// `--once` makes one attempt, bounded by the attempt timeout: its first line says so, not that it
/// waits "up to 5m0s".
#[test]
fn once_says_it_makes_one_attempt() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/demo");
    let r = run_args(gate_for(&ca, &iss), &["--once", "--attempt-timeout", "7s"]);
    assert_exit(&r, 0);
    let first = r.log().lines().next().unwrap_or_default();
    assert!(first.contains(&format!("trying {iss} once (one attempt, of at most 7.00s), failing closed")), "{first}");
    assert!(!first.contains("up to"), "{first}");
}

/// A `--connect-to` rule that matches none of the URLs the gate knows it will fetch is said at
/// the start and by `--dry-run`, with the hosts and ports those URLs name; otherwise the user sees
/// only the failure it was meant to avoid.
#[test]
fn a_connect_to_rule_that_matches_nothing_is_said() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "/realms/demo");
    let port = iss.trim_start_matches("https://localhost:").split('/').next().unwrap().to_string();
    let warning =
        format!("--connect-to: 'localhost:1:127.0.0.1:2' matches none of the URLs known at start (localhost:{port})");
    let r = run_args(gate_for(&ca, &iss), &["--connect-to", "localhost:1:127.0.0.1:2", "--max-attempts", "1"]);
    assert_exit(&r, 0);
    assert_logged(&r, &["WARN", &warning]);
    let r = run_args(gate_for(&ca, &iss), &["--connect-to", "localhost:1:127.0.0.1:2", "--dry-run"]);
    assert_exit(&r, 0);
    assert!(r.stdout.contains(&format!("warning         {warning}")), "{}", r.stdout);
    let rule = format!("localhost:{port}:127.0.0.1:{port}");
    let r = run_args(gate_for(&ca, &iss), &["--connect-to", &rule, "--dry-run"]);
    assert!(!r.stdout.contains("matches none"), "{}", r.stdout);
}
