//! Turns the command line and the environment into validated settings, in one place.
//!
//! Three steps, each in a function of its own: read every value by precedence and parse it
//! ([`inputs`]), check the settings that cannot go together ([`Values::check_conflicts`]), then
//! load the files they name ([`files`]). Nothing invalid is ever replaced by a default: every
//! problem is a [`ConfigError`] naming the flag or variable and what would be right, and the
//! process exits 2. What is worth saying but not wrong comes back as [`Notice`]s, to be logged
//! once logging is up.

mod connect_to;
mod error;
mod files;
mod inputs;
mod proxy;
mod trust;

pub(crate) use connect_to::{ConnectTo, ConnectToProblem};
pub(crate) use error::{ConfigError, Conflict};
pub(crate) use files::CaFileProblem;
pub(crate) use inputs::{Raw, Source};
pub(crate) use proxy::{ProxyChoice, ProxySettings};
pub(crate) use trust::Trust;

use crate::cli::{Cli, defaults};
use crate::rules::authorization_server::{MetadataKind, Rules};
use crate::url;
use inputs::{Inputs, parse_choice, parse_count, parse_duration};
use std::path::PathBuf;
use std::time::Duration;

/// One thing to wait for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// An authorization server: its metadata, fetched from `discovery_url` if given, must
    /// announce `issuer` exactly.
    Issuer { issuer: String, discovery_url: Option<String> },
    /// A protected resource (RFC 9728), and every authorization server its metadata lists.
    Resource { resource: String },
}

impl Target {
    /// The issuer or resource URL, as configured.
    pub(crate) fn name(&self) -> &str {
        match self {
            Target::Issuer { issuer, .. } => issuer,
            Target::Resource { resource } => resource,
        }
    }
}

/// Where the final line goes for `kubectl describe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TerminationLog {
    pub(crate) path: PathBuf,
    /// Create the file when it is missing: only for a path the user named. The default path is
    /// written only where the kubelet has put it, so runs outside a pod leave no stray file.
    pub(crate) create: bool,
}

/// How the final summary is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// Log lines on stderr only.
    Text,
    /// Also one JSON object on stdout.
    Json,
}

/// Validated settings: what to wait for, and how.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) targets: Vec<Target>,
    pub(crate) rules: Rules,
    pub(crate) trust: Trust,
    /// oauth2-proxy skips certificate checks: a certificate the gate rejects ends the wait.
    pub(crate) proxy_skips_verify: bool,
    pub(crate) timeout: Duration,
    pub(crate) interval: Duration,
    pub(crate) attempt_timeout: Duration,
    pub(crate) max_attempts: Option<u32>,
    /// Consecutive passing attempts required.
    pub(crate) successes: u32,
    pub(crate) connect_to: Vec<ConnectTo>,
    pub(crate) token_file: Option<PathBuf>,
    pub(crate) check_jwks: bool,
    /// `--refuse-legacy-auth`: no legacy fallback for a resource without metadata.
    pub(crate) refuse_legacy_auth: bool,
    /// Where the keys are fetched instead of the document's `jwks_uri`.
    pub(crate) jwks_url: Option<String>,
    /// Fail where an SSRF-guarded client refuses a private address.
    pub(crate) refuse_private_addresses: bool,
    pub(crate) output: Output,
    pub(crate) fail_closed: bool,
    pub(crate) termination_log: TerminationLog,
}

/// How this run goes, apart from what it waits for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunMode {
    /// One attempt, fail closed, a summary on stdout.
    pub(crate) once: bool,
    /// Only check the configuration.
    pub(crate) dry_run: bool,
    /// Log only the final line.
    pub(crate) quiet: bool,
}

/// Something worth saying once logging is up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Notice {
    Warning(String),
    Note(String),
}

/// A configuration that passed every check, its run mode, and what is worth saying about it.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) config: Config,
    pub(crate) mode: RunMode,
    pub(crate) notices: Vec<Notice>,
}

impl Config {
    /// Builds the configuration from parsed flags and an environment lookup.
    pub(crate) fn from_cli(cli: &Cli, env: &dyn Fn(&str) -> Option<String>) -> Result<Loaded, ConfigError> {
        let inputs = Inputs { env };
        let mut notices = Vec::new();
        let values = Values::read(cli, &inputs, &mut notices)?;
        values.check_conflicts()?;
        let trust = trust::load(&values.trust, &mut notices)?;
        if let Some(raw) = &values.token_file {
            files::check_token_file(raw)?;
        }
        Ok(values.into_loaded(trust, notices))
    }
}

/// Every setting read and parsed, with the raw values that conflicts are reported against.
struct Values {
    issuers: Vec<Raw>,
    resources: Vec<Raw>,
    discovery_url: Option<Raw>,
    jwks_url: Option<Raw>,
    rules: Rules,
    trust: trust::TrustInputs,
    timeout: Duration,
    interval: Duration,
    attempt_timeout: Duration,
    max_attempts: Option<(u32, Raw)>,
    successes: (u32, Option<Raw>),
    fail_closed: bool,
    connect_to: Vec<ConnectTo>,
    token_file: Option<Raw>,
    check_jwks: bool,
    refuse_legacy_auth: bool,
    refuse_private_addresses: bool,
    output: Output,
    termination_log: TerminationLog,
    mode: RunMode,
}

impl Values {
    /// Step 1: each value by precedence (flag, variable, default), parsed.
    fn read(cli: &Cli, inputs: &Inputs<'_>, notices: &mut Vec<Notice>) -> Result<Values, ConfigError> {
        let resources = read_urls(inputs.list("resource", &cli.resource), notices)?;
        let issuers = read_issuers(cli, inputs, resources.is_empty(), notices)?;
        let discovery_url = inputs.single("discovery_url", &cli.discovery_url);
        let jwks_url = inputs.single("jwks_url", &cli.jwks_url);
        for raw in discovery_url.iter().chain(&jwks_url) {
            check_url(raw, notices)?;
        }
        let rules = Rules {
            kind: parse_choice(inputs.single("metadata", &cli.metadata), defaults::METADATA, MetadataKind::CHOICES)?,
            strict: inputs.switch("strict", cli.strict)?,
            skip_issuer_check: inputs.switch("skip_issuer_check", cli.skip_issuer_check)?,
        };
        if rules.skip_issuer_check {
            notices.push(Notice::Warning(
                "--skip-issuer-check: a document announcing another issuer will be accepted".into(),
            ));
        }
        let max_attempts = inputs.single("max_attempts", &cli.max_attempts);
        let successes = inputs.single("successes", &cli.successes);
        let output_choices = [("text", Output::Text), ("json", Output::Json)];
        Ok(Values {
            timeout: parse_duration(inputs.single("timeout", &cli.timeout), defaults::TIMEOUT, defaults::MIN_TIMEOUT)?,
            interval: parse_duration(inputs.single("interval", &cli.interval), defaults::INTERVAL, Duration::ZERO)?,
            attempt_timeout: parse_duration(
                inputs.single("attempt_timeout", &cli.attempt_timeout),
                defaults::ATTEMPT_TIMEOUT,
                Duration::ZERO,
            )?,
            max_attempts: parse_count(max_attempts.as_ref())?.zip(max_attempts),
            successes: (parse_count(successes.as_ref())?.unwrap_or(defaults::SUCCESSES), successes),
            fail_closed: cli.once || inputs.switch("fail_closed", cli.fail_closed)?,
            connect_to: read_connect_to(cli, inputs)?,
            token_file: inputs.single("token_file", &cli.token_file),
            check_jwks: jwks_url.is_some() || inputs.switch("check_jwks", cli.check_jwks)?,
            refuse_legacy_auth: inputs.switch("refuse_legacy_auth", cli.refuse_legacy_auth)?,
            refuse_private_addresses: inputs.switch("refuse_private_addresses", cli.refuse_private_addresses)?,
            output: parse_choice(inputs.single("output", &cli.output), defaults::OUTPUT, &output_choices)?,
            termination_log: match inputs.single("termination_log", &cli.termination_log) {
                Some(raw) => TerminationLog { path: PathBuf::from(raw.value), create: true },
                None => TerminationLog { path: PathBuf::from(defaults::TERMINATION_LOG), create: false },
            },
            mode: RunMode { once: cli.once, dry_run: cli.dry_run, quiet: inputs.switch("quiet", cli.quiet)? },
            trust: trust::read(inputs.list("ca_file", &cli.ca_file), inputs, notices)?,
            issuers,
            resources,
            discovery_url,
            jwks_url,
            rules,
        })
    }

    /// Step 2: settings that are each valid but cannot go together.
    fn check_conflicts(&self) -> Result<(), ConfigError> {
        let (successes, successes_raw) = &self.successes;
        let one_issuer_only = self.discovery_url.iter().chain(&self.jwks_url).next();
        let conflict = match (one_issuer_only, &self.max_attempts) {
            (Some(raw), _) if self.issuers.len() != 1 || !self.resources.is_empty() => Some(Conflict::NeedsOneIssuer {
                source: raw.source,
                issuers: self.issuers.len(),
                resources: self.resources.len(),
            }),
            (_, Some((_, raw))) if self.mode.once => Some(Conflict::OnceWithMaxAttempts { source: raw.source }),
            _ if self.mode.once && *successes > 1 => Some(Conflict::OnceWithSuccesses {
                source: successes_raw.as_ref().map_or(Source::Flag("successes"), |r| r.source),
                successes: *successes,
            }),
            (_, Some((max, _))) if successes > max => {
                Some(Conflict::SuccessesBeyondMaxAttempts { successes: *successes, max: *max })
            }
            _ => None,
        };
        conflict.map_or(Ok(()), |c| Err(ConfigError::Conflict(c)))
    }

    /// The configuration itself, once the files it names are loaded (step 3).
    fn into_loaded(self, trust: Trust, notices: Vec<Notice>) -> Loaded {
        let discovery_url = self.discovery_url.map(|raw| raw.value);
        let issuers = self
            .issuers
            .into_iter()
            .map(|raw| Target::Issuer { issuer: raw.value, discovery_url: discovery_url.clone() });
        let resources = self.resources.into_iter().map(|raw| Target::Resource { resource: raw.value });
        let targets = issuers.chain(resources).collect();
        let config = Config {
            targets,
            rules: self.rules,
            trust,
            proxy_skips_verify: self.trust.skip_verify,
            timeout: self.timeout,
            interval: self.interval,
            attempt_timeout: self.attempt_timeout,
            max_attempts: if self.mode.once { Some(1) } else { self.max_attempts.map(|(n, _)| n) },
            successes: self.successes.0,
            connect_to: self.connect_to,
            token_file: self.token_file.map(|raw| PathBuf::from(raw.value)),
            check_jwks: self.check_jwks,
            refuse_legacy_auth: self.refuse_legacy_auth,
            jwks_url: self.jwks_url.map(|raw| raw.value),
            refuse_private_addresses: self.refuse_private_addresses,
            output: self.output,
            fail_closed: self.fail_closed,
            termination_log: self.termination_log,
        };
        Loaded { config, mode: self.mode, notices }
    }
}

/// The issuers, each checked, a repeated one kept once; at least one unless a resource is given.
fn read_issuers(
    cli: &Cli,
    inputs: &Inputs<'_>,
    required: bool,
    notices: &mut Vec<Notice>,
) -> Result<Vec<Raw>, ConfigError> {
    let issuers = read_urls(inputs.list("issuer", &cli.issuer), notices)?;
    if issuers.is_empty() && required {
        return Err(ConfigError::MissingIssuer { empty_env: inputs.set_but_empty("issuer") });
    }
    if let Some(Source::Env(name)) = issuers.first().map(|raw| raw.source) {
        if name.starts_with("OAUTH2_PROXY_") {
            notices.push(Notice::Note(format!("issuer read from {name} (oauth2-proxy's variable)")));
        }
    }
    Ok(issuers)
}

/// URLs of a repeatable flag, each checked, a repeated one kept once (with a warning).
fn read_urls(mut urls: Vec<Raw>, notices: &mut Vec<Notice>) -> Result<Vec<Raw>, ConfigError> {
    let mut seen = std::collections::HashSet::new();
    urls.retain(|raw| {
        let first = seen.insert(raw.value.clone());
        if !first {
            let url = url::redact(&raw.value);
            notices.push(Notice::Warning(format!("{}: {url} is given twice; it is polled once", raw.source)));
        }
        first
    });
    for raw in &urls {
        check_url(raw, notices)?;
    }
    Ok(urls)
}

fn read_connect_to(cli: &Cli, inputs: &Inputs<'_>) -> Result<Vec<ConnectTo>, ConfigError> {
    inputs
        .list("connect_to", &cli.connect_to)
        .into_iter()
        .map(|raw| {
            ConnectTo::parse(&raw.value).map_err(|problem| ConfigError::ConnectTo {
                source: raw.source,
                value: raw.value.clone(),
                problem,
            })
        })
        .collect()
}

/// Checks an issuer or discovery URL; plain http is allowed with a warning.
fn check_url(raw: &Raw, notices: &mut Vec<Notice>) -> Result<(), ConfigError> {
    let invalid = |problem| ConfigError::InvalidUrl { source: raw.source, value: raw.value.clone(), problem };
    // Before any other complaint: a template's white space or braces are not the problem.
    if raw.value.contains("{{") {
        return Err(invalid(url::Problem::Template));
    }
    let parts = url::check_configured(&raw.value).map_err(invalid)?;
    if parts.scheme == "http" {
        notices.push(Notice::Warning(format!(
            "{}: {} uses plain http: the metadata is not protected by TLS (acceptable only inside the cluster)",
            raw.source,
            url::redact(&raw.value)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
