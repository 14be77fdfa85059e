//! Turns the command line and the environment into validated settings, in one place.
//!
//! Precedence: a flag, then its `WAIT_FOR_IDP_*` variable, then the default. A variable that is
//! set but empty counts as unset (Helm charts often render empty values). Nothing invalid is
//! ever replaced by a default: every problem is a [`ConfigError`] naming the flag or variable
//! and what would be right, and the process exits 2.

use crate::cli::{self, Cli};
use crate::connect_to::ConnectTo;
use crate::discovery::{self, MetadataKind, Rules};
use crate::url;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Where a setting came from, so that an error can point at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Flag(&'static str),
    Env(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag(id) => write!(f, "--{}", id.replace('_', "-")),
            Source::Env(name) => write!(f, "{name}"),
        }
    }
}

/// A raw value and its origin.
#[derive(Clone, Debug)]
struct Raw {
    value: String,
    source: Source,
}

/// What is wrong with a CA file.
#[derive(Debug)]
pub enum CaFileProblem {
    Unreadable(std::io::Error),
    Empty,
    NotPem,
    NoCertificate,
    BadPem(String),
    BadCertificate { index: usize, reason: String },
}

impl fmt::Display for CaFileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaFileProblem::Unreadable(e) => write!(f, "cannot be read ({e})"),
            CaFileProblem::Empty => write!(f, "is empty; it must hold PEM 'CERTIFICATE' blocks"),
            CaFileProblem::NotPem => write!(
                f,
                "is not PEM; it must hold '-----BEGIN CERTIFICATE-----' blocks (convert DER with: openssl x509 -inform der)"
            ),
            CaFileProblem::NoCertificate => {
                write!(f, "holds PEM but no 'CERTIFICATE' block (a key or CSR?); give the CA certificate")
            }
            CaFileProblem::BadPem(e) => write!(f, "holds malformed PEM ({e})"),
            CaFileProblem::BadCertificate { index, reason } => {
                write!(f, "certificate #{index} cannot be used as a trust anchor ({reason})")
            }
        }
    }
}

/// Every way the configuration can be wrong. Each message says what would be right.
#[derive(Debug)]
pub enum ConfigError {
    MissingIssuer { empty_env: bool },
    InvalidUrl { source: Source, value: String, problem: url::Problem },
    InvalidValue { source: Source, value: String, expected: &'static str },
    Invalid { source: Source, value: String, why: String },
    CaFile { source: Source, path: String, problem: CaFileProblem },
    TokenFile { source: Source, path: String, problem: crate::token::TokenProblem },
    Conflict(String),
    UnknownVariable { name: String, suggestion: Option<&'static str> },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::MissingIssuer { empty_env } => write!(
                f,
                "no issuer given: pass --issuer https://sso.example.com/realms/NAME or set WAIT_FOR_IDP_ISSUER (or oauth2-proxy's OAUTH2_PROXY_OIDC_ISSUER_URL){}",
                if *empty_env { " (it is set but empty)" } else { "" }
            ),
            ConfigError::InvalidUrl { source, value, problem } => {
                write!(f, "{source}: '{}' {problem}", url::redact(value))
            }
            ConfigError::InvalidValue { source, value, expected } => {
                write!(f, "{source}: '{value}' is not valid; expected {expected}")
            }
            ConfigError::Invalid { source, value, why } => write!(f, "{source}: '{value}' {why}"),
            ConfigError::CaFile { source, path, problem } => write!(f, "{source}: CA file '{path}' {problem}"),
            ConfigError::TokenFile { source, path, problem } => write!(f, "{source}: token file '{path}' {problem}"),
            ConfigError::Conflict(msg) => write!(f, "{msg}"),
            ConfigError::UnknownVariable { name, suggestion } => match suggestion {
                Some(s) => write!(f, "{name} is not a variable wait-for-idp reads; did you mean {s}?"),
                None => write!(f, "{name} is not a variable wait-for-idp reads; see --help for the list"),
            },
        }
    }
}

impl std::error::Error for ConfigError {}

/// One issuer to wait for and the URL its metadata is fetched from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub issuer: String,
    pub discovery_url: String,
}

/// Where the final line goes for `kubectl describe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminationLog {
    pub path: PathBuf,
    /// Create the file when it is missing: only for a path the user named. The default path is
    /// written only where the kubelet has put it, so runs outside a pod leave no stray file.
    pub create: bool,
}

/// How the final summary is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Log lines on stderr only.
    Text,
    /// Also one JSON object on stdout.
    Json,
}

/// Validated settings.
#[derive(Clone, Debug)]
pub struct Config {
    pub targets: Vec<Target>,
    pub rules: Rules,
    /// Trusted in addition to Mozilla's roots.
    pub extra_roots: Vec<CertificateDer<'static>>,
    pub timeout: Duration,
    pub interval: Duration,
    pub attempt_timeout: Duration,
    pub max_attempts: Option<u32>,
    /// Consecutive passing attempts required.
    pub successes: u32,
    pub connect_to: Vec<ConnectTo>,
    pub token_file: Option<PathBuf>,
    pub check_jwks: bool,
    pub output: Output,
    pub fail_closed: bool,
    pub once: bool,
    pub termination_log: TerminationLog,
    pub quiet: bool,
    /// Only check the configuration.
    pub dry_run: bool,
    /// Things worth a warning once logging is up (e.g. a plain-http URL).
    pub warnings: Vec<String>,
    /// Things worth saying once logging is up (e.g. a setting read from oauth2-proxy's variables).
    pub notes: Vec<String>,
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
pub const DEFAULT_TERMINATION_LOG: &str = "/dev/termination-log";
/// Durations beyond this are surely a typo, and would overflow `Instant` arithmetic on some
/// platforms.
const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

/// Reads settings with an injected environment, so tests need not touch the process's.
struct Inputs<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl Inputs<'_> {
    /// The environment value of a flag's variable, if set and not empty; else its oauth2-proxy
    /// fallback variable, if it has one.
    fn env(&self, id: &'static str) -> Option<Raw> {
        let read = |name: &'static str| {
            (self.env)(name).filter(|v| !v.is_empty()).map(|value| Raw { value, source: Source::Env(name) })
        };
        read(cli::env_var(id)).or_else(|| cli::fallback_env_var(id).and_then(read))
    }

    fn single(&self, id: &'static str, flag: &Option<String>) -> Option<Raw> {
        match flag {
            Some(v) => Some(Raw { value: v.clone(), source: Source::Flag(id) }),
            None => self.env(id),
        }
    }

    /// A repeatable flag; its variable holds a comma-separated list. oauth2-proxy's issuer
    /// variable holds exactly one URL, taken as it is: the gate must check the value the proxy
    /// will use, spaces and commas included.
    fn list(&self, id: &'static str, flag: &[String]) -> Vec<Raw> {
        if !flag.is_empty() {
            return flag.iter().map(|v| Raw { value: v.clone(), source: Source::Flag(id) }).collect();
        }
        match self.env(id) {
            Some(raw) if raw.source == Source::Env("OAUTH2_PROXY_OIDC_ISSUER_URL") => vec![raw],
            Some(raw) => raw
                .value
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|v| Raw { value: v.to_string(), source: raw.source })
                .collect(),
            None => Vec::new(),
        }
    }

    fn switch(&self, id: &'static str, flag: bool) -> Result<bool, ConfigError> {
        if flag {
            return Ok(true);
        }
        match self.env(id) {
            None => Ok(false),
            Some(raw) => parse_bool(&raw),
        }
    }
}

fn parse_bool(raw: &Raw) -> Result<bool, ConfigError> {
    match raw.value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(ConfigError::InvalidValue {
            source: raw.source,
            value: raw.value.clone(),
            expected: "true or false (also 1/0, yes/no, on/off)",
        }),
    }
}

/// The shortest `--timeout` that still leaves the first attempt some time after
/// [`crate::wait::UNWIND`].
const MIN_TIMEOUT: Duration = Duration::from_millis(100);

fn parse_duration(raw: Option<Raw>, default: Duration) -> Result<Duration, ConfigError> {
    let Some(raw) = raw else { return Ok(default) };
    let invalid = |expected| ConfigError::InvalidValue { source: raw.source, value: raw.value.clone(), expected };
    let d = humantime::parse_duration(raw.value.trim())
        .map_err(|_| invalid("a positive duration with a unit, such as 500ms, 90s, 5m or 1h30m"))?;
    if d.is_zero() {
        return Err(invalid("a positive duration, not zero (such as 500ms, 90s or 5m)"));
    }
    if d > MAX_DURATION {
        return Err(invalid("a duration of at most 366 days"));
    }
    Ok(d)
}

fn parse_count(raw: Option<Raw>) -> Result<Option<u32>, ConfigError> {
    let Some(raw) = raw else { return Ok(None) };
    match raw.value.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(ConfigError::InvalidValue {
            source: raw.source,
            value: raw.value,
            expected: "a whole number of at least 1 (leave it unset for no limit)",
        }),
    }
}

/// Checks an issuer or discovery URL and returns a warning for plain http.
fn check_url(raw: &Raw, warnings: &mut Vec<String>) -> Result<(), ConfigError> {
    let parts = url::check_issuer(&raw.value).map_err(|problem| ConfigError::InvalidUrl {
        source: raw.source,
        value: raw.value.clone(),
        problem,
    })?;
    // ureq parses with the `http` crate; make sure it agrees, so no URL fails only at run time.
    if raw.value.parse::<ureq::http::Uri>().is_err() {
        return Err(ConfigError::InvalidUrl {
            source: raw.source,
            value: raw.value.clone(),
            problem: url::Problem::NotAbsolute,
        });
    }
    if parts.scheme == "http" {
        warnings.push(format!(
            "{}: {} uses plain http: the metadata is not protected by TLS (acceptable only inside the cluster)",
            raw.source,
            url::redact(&raw.value)
        ));
    }
    Ok(())
}

/// Reads and checks one PEM file of CA certificates.
pub fn load_ca_file(path: &str) -> Result<Vec<CertificateDer<'static>>, CaFileProblem> {
    let bytes = std::fs::read(path).map_err(CaFileProblem::Unreadable)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(CaFileProblem::Empty);
    }
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(CaFileProblem::NotPem);
    }
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CaFileProblem::BadPem(e.to_string()))?;
    if certs.is_empty() {
        return Err(CaFileProblem::NoCertificate);
    }
    for (i, cert) in certs.iter().enumerate() {
        let mut probe = rustls::RootCertStore::empty();
        probe.add(cert.clone()).map_err(|e| CaFileProblem::BadCertificate { index: i + 1, reason: e.to_string() })?;
    }
    Ok(certs)
}

impl Config {
    /// Builds the configuration from parsed flags and an environment lookup.
    pub fn from_cli(cli: &Cli, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let inputs = Inputs { env };
        let mut warnings = Vec::new();

        let mut issuers = inputs.list("issuer", &cli.issuer);
        let mut seen = std::collections::HashSet::new();
        issuers.retain(|raw| {
            let first = seen.insert(raw.value.clone());
            if !first {
                warnings.push(format!("{}: {} is given twice; it is polled once", raw.source, url::redact(&raw.value)));
            }
            first
        });
        if issuers.is_empty() {
            let empty_env = env(cli::env_var("issuer")).is_some_and(|v| v.trim().is_empty());
            return Err(ConfigError::MissingIssuer { empty_env });
        }
        for raw in &issuers {
            check_url(raw, &mut warnings)?;
        }
        let discovery = inputs.single("discovery_url", &cli.discovery_url);
        if let Some(raw) = &discovery {
            check_url(raw, &mut warnings)?;
            if issuers.len() > 1 {
                return Err(ConfigError::Conflict(format!(
                    "{} names one discovery URL but {} issuers are given; use it with a single issuer",
                    raw.source,
                    issuers.len()
                )));
            }
        }

        let kind = match inputs.single("metadata", &cli.metadata) {
            None => MetadataKind::Oidc,
            Some(raw) => MetadataKind::parse(raw.value.trim()).ok_or(ConfigError::InvalidValue {
                source: raw.source,
                value: raw.value.clone(),
                expected: "oidc or oauth",
            })?,
        };
        let targets = issuers
            .iter()
            .map(|raw| Target {
                issuer: raw.value.clone(),
                discovery_url: discovery
                    .as_ref()
                    .map_or_else(|| discovery::well_known_url(&raw.value, kind), |d| d.value.clone()),
            })
            .collect();

        let rules = Rules {
            kind,
            strict: inputs.switch("strict", cli.strict)?,
            skip_issuer_check: inputs.switch("skip_issuer_check", cli.skip_issuer_check)?,
        };

        let mut extra_roots = Vec::new();
        for raw in inputs.list("ca_file", &cli.ca_file) {
            let certs = load_ca_file(&raw.value).map_err(|problem| ConfigError::CaFile {
                source: raw.source,
                path: raw.value.clone(),
                problem,
            })?;
            extra_roots.extend(certs);
        }

        let timeout_raw = inputs.single("timeout", &cli.timeout);
        let timeout = parse_duration(timeout_raw.clone(), DEFAULT_TIMEOUT)?;
        if let Some(raw) = timeout_raw.filter(|_| timeout < MIN_TIMEOUT) {
            // Shorter would end before the first attempt could start, and fail open having
            // checked nothing: say so rather than run a gate that cannot work.
            return Err(ConfigError::InvalidValue {
                source: raw.source,
                value: raw.value,
                expected: "at least 100ms: a shorter timeout leaves no time for a single attempt",
            });
        }
        let interval = parse_duration(inputs.single("interval", &cli.interval), DEFAULT_INTERVAL)?;
        let attempt_timeout =
            parse_duration(inputs.single("attempt_timeout", &cli.attempt_timeout), DEFAULT_ATTEMPT_TIMEOUT)?;
        let max_attempts_raw = inputs.single("max_attempts", &cli.max_attempts);
        if cli.once {
            if let Some(raw) = &max_attempts_raw {
                return Err(ConfigError::Conflict(format!(
                    "--once makes exactly one attempt; drop {} (or drop --once and use --fail-closed)",
                    raw.source
                )));
            }
        }
        let max_attempts = if cli.once { Some(1) } else { parse_count(max_attempts_raw)? };
        let fail_closed = cli.once || inputs.switch("fail_closed", cli.fail_closed)?;
        let successes_raw = inputs.single("successes", &cli.successes);
        let successes = parse_count(successes_raw.clone())?.unwrap_or(1);
        if cli.once && successes > 1 {
            return Err(ConfigError::Conflict(format!(
                "--once makes exactly one attempt, so it cannot see {successes} consecutive successes; drop {}",
                successes_raw.map_or(Source::Flag("successes"), |r| r.source)
            )));
        }
        if let Some(max) = max_attempts {
            if successes > max {
                return Err(ConfigError::Conflict(format!(
                    "--successes {successes} can never be reached within --max-attempts {max}"
                )));
            }
        }

        let mut connect_to = Vec::new();
        for raw in inputs.list("connect_to", &cli.connect_to) {
            connect_to.push(ConnectTo::parse(&raw.value).map_err(|why| ConfigError::Invalid {
                source: raw.source,
                value: raw.value.clone(),
                why,
            })?);
        }

        let token_file = match inputs.single("token_file", &cli.token_file) {
            None => None,
            Some(raw) => {
                let path = PathBuf::from(&raw.value);
                crate::token::read(&path).map_err(|problem| ConfigError::TokenFile {
                    source: raw.source,
                    path: raw.value.clone(),
                    problem,
                })?;
                Some(path)
            }
        };
        let check_jwks = inputs.switch("check_jwks", cli.check_jwks)?;
        let output = match inputs.single("output", &cli.output) {
            None => Output::Text,
            Some(raw) => match raw.value.trim() {
                "text" => Output::Text,
                "json" => Output::Json,
                _ => {
                    return Err(ConfigError::InvalidValue {
                        source: raw.source,
                        value: raw.value.clone(),
                        expected: "text or json",
                    });
                }
            },
        };
        let mut notes = Vec::new();
        for raw in issuers.iter().take(1) {
            if let Source::Env(name) = raw.source {
                if name.starts_with("OAUTH2_PROXY_") {
                    notes.push(format!("issuer read from {name} (oauth2-proxy's variable)"));
                }
            }
        }

        let termination_log = match inputs.single("termination_log", &cli.termination_log) {
            Some(raw) => TerminationLog { path: PathBuf::from(raw.value), create: true },
            None => TerminationLog { path: PathBuf::from(DEFAULT_TERMINATION_LOG), create: false },
        };

        Ok(Config {
            targets,
            rules,
            extra_roots,
            timeout,
            interval,
            attempt_timeout,
            max_attempts,
            successes,
            connect_to,
            token_file,
            check_jwks,
            output,
            fail_closed,
            once: cli.once,
            termination_log,
            quiet: inputs.switch("quiet", cli.quiet)?,
            dry_run: cli.dry_run,
            warnings,
            notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn build(args: &[&str], env: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let env: HashMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let cli = cli::parse_from(std::iter::once("wait-for-idp").chain(args.iter().copied())).unwrap();
        Config::from_cli(&cli, &|k| env.get(k).cloned())
    }

    fn err(args: &[&str], env: &[(&str, &str)]) -> String {
        build(args, env).unwrap_err().to_string()
    }

    #[test]
    fn defaults_and_derived_url() {
        let c = build(&["--issuer", "https://kc.example/realms/x"], &[]).unwrap();
        assert_eq!(c.targets[0].discovery_url, "https://kc.example/realms/x/.well-known/openid-configuration");
        assert_eq!(
            (c.timeout, c.interval, c.attempt_timeout),
            (DEFAULT_TIMEOUT, DEFAULT_INTERVAL, DEFAULT_ATTEMPT_TIMEOUT)
        );
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
        assert_eq!(c.targets[0].discovery_url, "https://a.example/.well-known/oauth-authorization-server");
        assert_eq!(c.timeout, Duration::from_secs(10));
        assert_eq!(c.interval, DEFAULT_INTERVAL, "an empty variable counts as unset");
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
        assert!(e.contains("single issuer"), "{e}");
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
        let c = build(&[], &env).unwrap();
        assert_eq!(c.targets[0].issuer, "https://sso.example.com/realms/x");
        assert!(c.rules.skip_issuer_check);
        assert!(c.notes[0].contains("OAUTH2_PROXY_OIDC_ISSUER_URL"));
        let c = build(&[], &[("WAIT_FOR_IDP_ISSUER", "https://a.example"), env[0]]).unwrap();
        assert_eq!(c.targets[0].issuer, "https://a.example", "our own variable wins");
        let e = err(&[], &[("OAUTH2_PROXY_PROVIDER_CA_FILES", "/nonexistent.pem"), env[0]]);
        assert!(e.starts_with("OAUTH2_PROXY_PROVIDER_CA_FILES: CA file '/nonexistent.pem'"), "{e}");
    }

    #[test]
    fn issue_5_settings() {
        let c =
            build(&["--issuer", "https://h", "--connect-to", "h:443:127.0.0.1:8443", "--successes", "3"], &[]).unwrap();
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
        assert_eq!(c.targets[0].issuer, "https://h/realms/a,b", "one URL, not a list");
        let e = err(&[], &[("OAUTH2_PROXY_OIDC_ISSUER_URL", "https://h/realms/a ")]);
        assert!(e.starts_with("OAUTH2_PROXY_OIDC_ISSUER_URL") && e.contains("white space"), "{e}");
        let c = build(&["--issuer", "https://a", "--issuer", "https://b", "--issuer", "https://a"], &[]).unwrap();
        assert_eq!(c.targets.iter().map(|t| t.issuer.as_str()).collect::<Vec<_>>(), ["https://a", "https://b"]);
        assert!(c.warnings[0].contains("https://a is given twice; it is polled once"), "{:?}", c.warnings);
    }

    #[test]
    fn plain_http_is_allowed_with_a_warning() {
        let c = build(&["--issuer", "http://keycloak:8080/realms/x"], &[]).unwrap();
        assert!(c.warnings[0].contains("plain http"));
    }

    #[test]
    fn once_is_one_attempt_and_fails_closed() {
        let c = build(&["--issuer", "https://h", "--once"], &[]).unwrap();
        assert_eq!(c.max_attempts, Some(1));
        assert!(c.fail_closed);
    }
}
