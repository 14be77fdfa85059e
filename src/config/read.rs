//! The one pass from the command line and the environment to a [`Loaded`] configuration.

use super::drift;
use super::environment::Environment;
use super::inputs::Inputs;
use super::source::Sourced;
use super::{
    Checks, Config, ConfigError, Conflict, ConnectTo, Loaded, Network, Notice, Output, Raw, RunMode, Serve, Source,
    Target, TerminationLog, Timing, connect_to, files, header_files, trust,
};
use crate::go_proxy::ProxySettings;
use crate::rules::authorization_server::Rules;
use crate::rules::client::Client;
use crate::settings::{self, Given, Id, Then, ThenCommand};
use crate::url;
use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Builds the configuration from the parsed command line, an environment lookup and the names of
/// the variables set (all of them: for the unknown-name check, and to look up only those set).
///
/// A variable the gate reads whose value is not UTF-8 is an error naming it, whatever else is
/// wrong: taken for unset, a garbled `--fail-closed` variable would fail open. Only the
/// variables the gate asks for are looked at (its own, oauth2-proxy's it reads, Go's proxy and
/// trust variables); the rest of the environment is none of its business.
pub(crate) fn load(
    given: &Given,
    env: &dyn Fn(&str) -> Option<OsString>,
    names: &[&str],
) -> Result<Loaded, ConfigError> {
    let environment = Environment::new(env, names);
    let loaded = load_from(given, &|name: &str| environment.get(name), names);
    match environment.not_utf8() {
        Some(name) => Err(ConfigError::NotUtf8 { name }),
        None => loaded,
    }
}

/// [`load`] with a lookup that answers a value that is not UTF-8 as unset, having noted it.
fn load_from(given: &Given, env: &dyn Fn(&str) -> Option<String>, names: &[&str]) -> Result<Loaded, ConfigError> {
    let inputs = Inputs::new(given, env);
    let dry_run = inputs.switch(Id::DryRun)?;
    let mut notices = unknown_variables(names, dry_run)?;
    let values = Values::read(&inputs, names, &mut notices)?;
    values.check_conflicts()?;
    let trust = trust::load(&values.trust, &mut notices, dry_run)?;
    if let Some(raw) = &values.token_file {
        files::check_token_file(raw)?;
    }
    for (raw, header) in &values.header_files {
        files::check_header_file(raw, header)?;
    }
    let header_file = values.header_files.first().map(|(raw, _)| raw);
    let sent_somewhere = !values.issuers.is_empty() || values.jwks_url.is_some();
    notices.extend(drift::unsent_credentials(sent_somewhere, values.token_file.as_ref(), header_file));
    let proxies = ProxySettings::from_env(env);
    notices.extend(drift::all_proxy(&inputs));
    let then = read_then(given)?;
    if let (Some((_, raw)), Some(_)) = (&values.serve, &then) {
        return Err(ConfigError::Conflict(Conflict::ServeWith { source: raw.source, other: "-- COMMAND" }));
    }
    let mut loaded = values.into_loaded(trust, proxies, notices, then);
    let config = &loaded.config;
    if let Some(source) = config.sources.get(&Id::ConnectTo) {
        let mut urls = Vec::new();
        for target in &config.targets {
            urls.extend(config.first_urls(target));
        }
        urls.extend(config.checks.jwks_url.clone());
        connect_to::unmatched(&config.network.connect_to, &urls, *source, &mut loaded.notices);
    }
    let first = config.targets.iter().map(|t| match t {
        Target::Issuer { discovery_url: Some(url), .. } => url.as_str(),
        t => t.name(),
    });
    config.network.proxies.check_used(first.chain(config.checks.jwks_url.as_deref()))?;
    Ok(loaded)
}

/// The command after `--`, if any; `--` alone, or an empty word for the program, is a usage
/// error rather than a gate that would exit 127 only after the whole wait.
fn read_then(given: &Given) -> Result<Option<ThenCommand>, ConfigError> {
    match given.then() {
        Then::Nothing => Ok(None),
        Then::Empty => Err(ConfigError::NoCommand { empty_word: false }),
        Then::Command(then) if then.program.is_empty() => Err(ConfigError::NoCommand { empty_word: true }),
        Then::Command(then) => Ok(Some(then.clone())),
    }
}

/// `WAIT_FOR_IDP_*` names no setting reads: an error under `--dry-run` (which exists to catch
/// such mistakes), a warning otherwise (a typo must not keep a workload from starting).
fn unknown_variables(names: &[&str], dry_run: bool) -> Result<Vec<Notice>, ConfigError> {
    let unknown = settings::unknown_variables(names);
    let mut notices = Vec::new();
    for (name, suggestion) in unknown {
        let problem = ConfigError::UnknownVariable { name, suggestion };
        if dry_run {
            return Err(problem);
        }
        notices.push(Notice::Warning(problem.to_string()));
    }
    Ok(notices)
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
    max_attempts: Sourced<Option<u32>>,
    successes: Sourced<u32>,
    fail_closed: bool,
    connect_to: Vec<ConnectTo>,
    token_file: Option<Raw>,
    header_files: Vec<(Raw, super::HeaderFile)>,
    check_jwks: bool,
    refuse_legacy_auth: bool,
    refuse_private_addresses: bool,
    output: Output,
    termination_log: TerminationLog,
    /// `--serve`'s address and the raw value, then `--watch-interval` and `--watch-failures`.
    serve: Option<(std::net::SocketAddr, Raw)>,
    watch: (Duration, u32),
    mode: RunMode,
    sources: BTreeMap<Id, Source>,
}

impl Values {
    /// Step 1: each value by precedence (flag, variable, fallback, default), parsed.
    fn read(inputs: &Inputs<'_>, names: &[&str], notices: &mut Vec<Notice>) -> Result<Values, ConfigError> {
        let resources = read_urls(inputs.list(Id::Resource), notices)?;
        let issuers = read_issuers(inputs, resources.is_empty(), names, notices)?;
        let discovery_url = inputs.single(Id::DiscoveryUrl);
        let jwks_url = inputs.single(Id::JwksUrl);
        for raw in discovery_url.iter().chain(&jwks_url) {
            check_url(raw, url::check_fetched, notices)?;
        }
        let client: Client = inputs.choice(Id::Client)?;
        // Given false, it is ToolHive's allow_private_ips.
        let allow_private = inputs.single(Id::RefusePrivateAddresses).is_some();
        let mut refuse_private = inputs.switch(Id::RefusePrivateAddresses)?;
        for raw in &issuers {
            let Ok(parts) = url::split(&raw.value) else { continue };
            if let Some(why) = client.issuer_problem(parts.scheme, parts.host) {
                return Err(raw.invalid(format!("an https issuer with {} toolhive: {why}", Id::Client.flag())));
            }
            refuse_private |= client.refuses_private(parts.host, allow_private);
        }
        let rules = Rules {
            kind: inputs.choice(Id::Metadata)?,
            strict: inputs.switch(Id::Strict)?,
            skip_issuer_check: inputs.switch(Id::SkipIssuerCheck)?,
            client,
        };
        if rules.skip_issuer_check {
            notices.push(Notice::Warning(format!(
                "{}: a document announcing another issuer will be accepted",
                Id::SkipIssuerCheck.flag()
            )));
        }
        let once = inputs.switch(Id::Once)?;
        let token_file = inputs.single(Id::TokenFile);
        // The default is written only if it exists (the kubelet's mount); one given is created.
        let (path, default) = inputs.path(Id::TerminationLog);
        let termination_log = TerminationLog { path: PathBuf::from(path), create: !default };
        let timeout = inputs.duration(Id::Timeout)?.0;
        let attempt = inputs.duration(Id::AttemptTimeout)?;
        Ok(Values {
            // The client's own limit, unless --attempt-timeout is given: none is the whole wait.
            attempt_timeout: match (attempt.1, client.attempt_limit()) {
                (None, Some(limit)) => limit.unwrap_or(timeout),
                _ => attempt.0,
            },
            timeout,
            interval: inputs.duration(Id::Interval)?.0,
            max_attempts: inputs.limit(Id::MaxAttempts)?,
            successes: inputs.count(Id::Successes)?,
            fail_closed: once || inputs.switch(Id::FailClosed)?,
            connect_to: read_connect_to(inputs)?,
            header_files: header_files::read(inputs.list(Id::HeaderFile), token_file.is_some())?,
            token_file,
            check_jwks: jwks_url.is_some() || inputs.switch(Id::CheckJwks)?,
            refuse_legacy_auth: inputs.switch(Id::RefuseLegacyAuth)?,
            refuse_private_addresses: refuse_private,
            output: inputs.choice(Id::Output)?,
            termination_log,
            serve: read_serve(inputs, notices)?,
            watch: (inputs.duration(Id::WatchInterval)?.0, inputs.count(Id::WatchFailures)?.0),
            mode: read_mode(inputs, once)?,
            trust: trust::read(inputs.list(Id::CaFile), inputs, notices)?,
            sources: inputs.sources(),
            issuers,
            resources,
            discovery_url,
            jwks_url,
            rules,
        })
    }

    /// Step 2: settings that are each valid but cannot go together.
    fn check_conflicts(&self) -> Result<(), ConfigError> {
        let successes = self.successes.0;
        let max_attempts = self.max_attempts.0.zip(self.max_attempts.1.as_ref());
        let one_issuer_only = self.discovery_url.iter().chain(&self.jwks_url).next();
        let conflict = match (one_issuer_only, max_attempts) {
            (Some(raw), _) if self.issuers.len() != 1 || !self.resources.is_empty() => Some(Conflict::NeedsOneIssuer {
                source: raw.source,
                issuers: self.issuers.len(),
                resources: self.resources.len(),
            }),
            _ if self.mode.once && self.serve.is_some() => {
                self.serve.as_ref().map(|(_, raw)| Conflict::ServeWith { source: raw.source, other: "--once" })
            }
            (_, Some((_, raw))) if self.mode.once => Some(Conflict::OnceWithMaxAttempts { source: raw.source }),
            _ if self.mode.once && successes > 1 => Some(Conflict::OnceWithSuccesses {
                source: self.successes.1.as_ref().map_or(Source::Flag(Id::Successes), |r| r.source),
                successes,
            }),
            (_, Some((max, _))) if successes > max => Some(Conflict::SuccessesBeyondMaxAttempts { successes, max }),
            _ => None,
        };
        conflict.map_or(Ok(()), |c| Err(ConfigError::Conflict(c)))
    }

    /// The configuration itself, once the files it names are loaded (step 3); `--once` is
    /// applied here.
    fn into_loaded(
        self,
        trust: super::Trust,
        proxies: ProxySettings,
        notices: Vec<Notice>,
        then: Option<ThenCommand>,
    ) -> Loaded {
        let discovery_url = self.discovery_url.map(|raw| raw.value);
        let issuers = self
            .issuers
            .into_iter()
            .map(|raw| Target::Issuer { issuer: raw.value, discovery_url: discovery_url.clone() });
        let resources = self.resources.into_iter().map(|raw| Target::Resource { resource: raw.value });
        let targets: Vec<Target> = issuers.chain(resources).collect();
        let once = self.mode.once;
        let config = Config {
            checks: Checks {
                rules: self.rules,
                check_jwks: self.check_jwks,
                jwks_url: self.jwks_url.map(|raw| raw.value),
                token_file: self.token_file.map(|raw| PathBuf::from(raw.value)),
                header_files: self.header_files.into_iter().map(|(_, header)| header).collect(),
                proxy_skips_verify: self.trust.skip_verify,
                refuse_legacy_auth: self.refuse_legacy_auth,
                one_issuer: matches!(targets.as_slice(), [Target::Issuer { .. }]),
                refuse_private_addresses: self.refuse_private_addresses,
            },
            timing: Timing {
                timeout: self.timeout,
                interval: self.interval,
                attempt_timeout: self.attempt_timeout,
                max_attempts: if once { Some(1) } else { self.max_attempts.0 },
                successes: self.successes.0,
            },
            network: Network { trust, proxies, connect_to: self.connect_to },
            targets,
            output: self.output,
            fail_closed: self.fail_closed,
            termination_log: self.termination_log,
            sources: self.sources,
            then,
            serve: self.serve.map(|(addr, _)| Serve { addr, interval: self.watch.0, failures: self.watch.1 }),
        };
        Loaded { config, mode: self.mode, notices }
    }
}
/// `--serve`'s address: `HOST:PORT` with an IP address, or `:PORT` for every address (as Go's
/// listeners take it), never port 0. An IPv6 address may come without brackets, its last `:PORT`
/// the port, so that the recipes' `$(POD_IP):9090` serves an IPv6 pod too. A name is refused: which address it would resolve to is not
/// what the operator should have to guess. `--watch-*` without `--serve` is said, not an error.
fn read_serve(
    inputs: &Inputs<'_>,
    notices: &mut Vec<Notice>,
) -> Result<Option<(std::net::SocketAddr, Raw)>, ConfigError> {
    let Some(raw) = inputs.single(Id::Serve) else {
        for id in [Id::WatchInterval, Id::WatchFailures] {
            if inputs.single(id).is_some() {
                notices.push(Notice::Warning(format!("{} has no effect without {}", id.flag(), Id::Serve.flag())));
            }
        }
        return Ok(None);
    };
    let value = raw.value.trim();
    let every = value.strip_prefix(':').is_some_and(|port| port.bytes().all(|b| b.is_ascii_digit()));
    let value = if every { format!("0.0.0.0{value}") } else { value.to_string() };
    let unbracketed = || {
        let (ip, port) = value.rsplit_once(':')?;
        Some(std::net::SocketAddr::from((ip.parse::<std::net::Ipv6Addr>().ok()?, port.parse::<u16>().ok()?)))
    };
    match value.parse::<std::net::SocketAddr>().or_else(|e| unbracketed().ok_or(e)) {
        // Port 0 would be one the kernel picks, where no probe could find it.
        Ok(addr) if addr.port() == 0 => Err(raw.invalid("a port other than 0, which the probes name (e.g. :9090)")),
        Ok(addr) => Ok(Some((addr, raw))),
        Err(_) => {
            Err(raw.invalid("an address to listen on: IP:PORT, [IPv6]:PORT, or :PORT for every address (e.g. :8080)"))
        }
    }
}

/// How the run goes: `--once`, `--dry-run`, `--quiet` and the log's level and format.
fn read_mode(inputs: &Inputs<'_>, once: bool) -> Result<RunMode, ConfigError> {
    use log::LevelFilter;
    let level: LevelFilter = inputs.choice(Id::LogLevel)?;
    // -v is debug, -vv trace, and neither lowers a higher level.
    let log_level = match inputs.count_given(Id::Verbose) {
        0 => level,
        1 => level.max(LevelFilter::Debug),
        _ => LevelFilter::Trace,
    };
    Ok(RunMode {
        once,
        dry_run: inputs.switch(Id::DryRun)?,
        quiet: inputs.switch(Id::Quiet)?,
        log_level,
        log_json: inputs.choice::<Output>(Id::LogFormat)? == Output::Json,
    })
}

/// The issuers, each checked, a repeated one kept once; at least one unless a resource is given.
/// When none is given, the variables that look like the issuer's are named with the one meant.
fn read_issuers(
    inputs: &Inputs<'_>,
    required: bool,
    names: &[&str],
    notices: &mut Vec<Notice>,
) -> Result<Vec<Raw>, ConfigError> {
    let issuers = inputs.list(Id::Issuer);
    for raw in &issuers {
        check_issuer(raw)?;
    }
    let issuers = read_urls(issuers, notices)?;
    if issuers.is_empty() && required {
        return Err(ConfigError::MissingIssuer {
            empty_env: inputs.set_but_empty(Id::Issuer),
            near_misses: settings::near_misses(names, &|n| inputs.variable_is_set(n), Id::Issuer.setting()),
        });
    }
    if let Some(Source::Env(name)) = issuers.first().map(|raw| raw.source)
        && Id::Issuer.setting().fallback == Some(name)
    {
        notices.push(Notice::Note(format!("issuer read from {name} (oauth2-proxy's variable)")));
    }
    notices.extend(drift::issuer(&issuers, inputs));
    Ok(issuers)
}

/// URLs of a repeatable flag, each checked, a repeated one kept once (with a warning).
fn read_urls(mut urls: Vec<Raw>, notices: &mut Vec<Notice>) -> Result<Vec<Raw>, ConfigError> {
    let mut seen = HashSet::new();
    urls.retain(|raw| {
        let first = seen.insert(raw.value.clone());
        if !first {
            let url = url::redact(&raw.value);
            notices.push(Notice::Warning(format!("{}: {url} is given twice; it is polled once", raw.source)));
        }
        first
    });
    for raw in &urls {
        check_url(raw, url::check_issuer, notices)?;
    }
    Ok(urls)
}

/// What only an issuer can get wrong: the discovery URL pasted in its place, or several issuers
/// in one value that is not split at commas (a flag, and oauth2-proxy's one-URL variable).
fn check_issuer(raw: &Raw) -> Result<(), ConfigError> {
    if let Some(at) = raw.value.find("/.well-known/") {
        let issuer = raw.value[..at].to_string();
        return Err(ConfigError::DiscoveryUrlAsIssuer { source: raw.source, value: raw.value.clone(), issuer });
    }
    let list = raw.value.split(',').skip(1).any(|part| {
        let part = part.trim_start().to_ascii_lowercase();
        part.starts_with("https://") || part.starts_with("http://")
    });
    if list {
        return Err(ConfigError::IssuerList { source: raw.source, value: raw.value.clone() });
    }
    Ok(())
}

fn read_connect_to(inputs: &Inputs<'_>) -> Result<Vec<ConnectTo>, ConfigError> {
    inputs
        .list(Id::ConnectTo)
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

/// Checks a URL the user gave by `check` (an issuer or resource has no query; a discovery or JWKS
/// URL may have one); plain http is allowed with a warning.
fn check_url(
    raw: &Raw,
    check: fn(&str) -> Result<url::Parts<'_>, url::Problem>,
    notices: &mut Vec<Notice>,
) -> Result<(), ConfigError> {
    let invalid = |problem| ConfigError::InvalidUrl { source: raw.source, value: raw.value.clone(), problem };
    // Before any other complaint: a template's white space or braces are not the problem.
    if raw.value.contains("{{") {
        return Err(invalid(url::Problem::Template));
    }
    let parts = url::check_configured(&raw.value, check).map_err(invalid)?;
    if parts.scheme == "http" {
        notices.push(Notice::Warning(format!(
            "{}: {} uses plain http: the metadata is not protected by TLS (acceptable only inside the cluster)",
            raw.source,
            url::redact(&raw.value)
        )));
    }
    Ok(())
}
