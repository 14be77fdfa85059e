//! Everything the tool says: one log line per attempt, the summary, the final line, the
//! termination message and the `--once` summary. Lines are written for people reading
//! `kubectl logs` on a bad morning: what failed, why, and how long the gate will still wait.

use crate::config::{Config, Output, RunMode, Target, TerminationLog};
use crate::discovery::{Document, Registration};
use crate::human::secs;
use crate::probe::{Ready, ServerReady};
use crate::token;
use crate::url;
use crate::wait::Verdict;
use log::Level;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

mod log_lines;
mod outcome;
mod settings;

pub(crate) use log_lines::{LineThrottle, init_logging, label, log_attempt};
use log_lines::{OUTCOME, failure_counts};
use outcome::{EXIT_USAGE, Outcome};
pub(crate) use outcome::{IssuerResult, Stopped};
use settings::first_urls;
pub(crate) use settings::{dry_run, startup, usage_error};

/// Why an issuer is not ready, in one phrase; `elapsed` is when the run ended.
fn not_ready_reason(r: &IssuerResult<'_>, config: &Config, elapsed: Duration) -> String {
    match (r.verdict, r.stopped) {
        (Some(Verdict::Ready), _) => "ready".into(),
        (Some(Verdict::DeadlineReached), _) | (None, Stopped::Deadline) => {
            format!("timeout of {} used up", secs(config.timeout))
        }
        (Some(Verdict::AttemptsExhausted), _) => format!("all {} attempt(s) used", r.tally.attempts),
        (Some(Verdict::Conclusive), _) => "certificate rejected, a check oauth2-proxy skips".into(),
        (None, Stopped::By(i)) => format!(
            "cut short after {}: {} ended the wait",
            secs(elapsed),
            config.targets.get(i).map_or(String::new(), |t| url::redact(t.name()))
        ),
        (None, Stopped::Signal(_)) => format!("interrupted after {}", secs(elapsed)),
    }
}

/// The `--output json` summary, documented field by field in the README ("JSON output").
#[derive(Serialize)]
struct Summary<'a> {
    outcome: &'static str,
    exit_code: i32,
    /// Over all issuers.
    attempts: u32,
    elapsed_ms: u64,
    issuers: Vec<IssuerSummary<'a>>,
}

#[derive(Serialize)]
struct IssuerSummary<'a> {
    /// The issuer of an `--issuer` target, else `null`.
    issuer: Option<String>,
    /// The resource of a `--resource` target, else `null`.
    resource: Option<String>,
    /// The first URL tried.
    discovery_url: String,
    /// The URL that served what passed (the issuer's metadata, or the resource's), else `null`.
    metadata_url: Option<String>,
    jwks_url: Option<String>,
    ready: bool,
    verdict: &'static str,
    attempts: u32,
    failures: BTreeMap<&'static str, u32>,
    last_failure: Option<LastFailure<'a>>,
    /// A target still waiting at the end: where its attempt under way had got to, else `null`.
    in_flight: Option<String>,
    endpoints: Option<Endpoints<'a>>,
    jwks_keys: Option<usize>,
    /// How an MCP client can register (`cimd`, `dcr`, `none`), judged under `auto`, else `null`.
    registration: Option<&'static str>,
    warnings: &'a [String],
    /// For a `--resource` target that passed: each authorization server it lists.
    authorization_servers: Option<Vec<ServerSummary<'a>>>,
    /// For a target that passed: each name its passing attempt resolved, and to what.
    addresses: Option<Vec<Address<'a>>>,
}

/// One resolved address, with the range SSRF-guarded clients refuse it for, if they do.
#[derive(Serialize, PartialEq, Eq)]
struct Address<'a> {
    host: &'a str,
    address: String,
    private: Option<&'static str>,
}

/// Each (name, address) pair once, in the order resolved.
fn addresses(resolved: &[(String, Vec<std::net::IpAddr>)]) -> Vec<Address<'_>> {
    let mut out: Vec<Address<'_>> = Vec::new();
    for (host, ips) in resolved {
        for ip in ips {
            let address = Address { host, address: ip.to_string(), private: url::private_range(*ip) };
            if !out.contains(&address) {
                out.push(address);
            }
        }
    }
    out
}

#[derive(Serialize)]
struct LastFailure<'a> {
    class: &'static str,
    /// `metadata`, `jwks` or `resource-metadata`.
    link: &'static str,
    message: &'a str,
}

#[derive(Serialize)]
struct ServerSummary<'a> {
    issuer: &'a str,
    metadata_url: String,
    endpoints: Endpoints<'a>,
    jwks_keys: Option<usize>,
    registration: Option<&'static str>,
    warnings: &'a [String],
}

#[derive(Serialize)]
struct Endpoints<'a> {
    authorization_endpoint: Option<&'a str>,
    token_endpoint: Option<&'a str>,
    jwks_uri: Option<&'a str>,
    userinfo_endpoint: Option<&'a str>,
}

impl<'a> Endpoints<'a> {
    fn of(d: &'a Document) -> Endpoints<'a> {
        Endpoints {
            authorization_endpoint: d.authorization_endpoint.as_deref(),
            token_endpoint: d.token_endpoint.as_deref(),
            jwks_uri: d.jwks_uri.as_deref(),
            userinfo_endpoint: d.userinfo_endpoint.as_deref(),
        }
    }
}

impl<'a> ServerSummary<'a> {
    fn of(s: &'a ServerReady) -> ServerSummary<'a> {
        ServerSummary {
            issuer: &s.document.issuer,
            metadata_url: url::redact(&s.url),
            endpoints: Endpoints::of(&s.document),
            jwks_keys: s.jwks_keys,
            registration: s.document.registration.map(Registration::as_str),
            warnings: &s.document.warnings,
        }
    }
}

impl<'a> IssuerSummary<'a> {
    fn new(r: &IssuerResult<'a>, config: &Config) -> IssuerSummary<'a> {
        let ready = r.verdict == Some(Verdict::Ready);
        let passed = r.tally.last_ready.as_ref().filter(|_| ready);
        let (issuer, resource) = match r.target {
            Target::Issuer { issuer, .. } => (Some(url::redact(issuer)), None),
            Target::Resource { resource } => (None, Some(url::redact(resource))),
        };
        let single = passed.filter(|p| p.resource_metadata.is_none()).and_then(|p| p.servers.first());
        IssuerSummary {
            issuer,
            resource,
            discovery_url: url::redact(first_urls(r.target, config).first().map_or("", String::as_str)),
            metadata_url: passed
                .and_then(|p| p.resource_metadata.as_ref().or(p.servers.first().map(|s| &s.url)))
                .map(|u| url::redact(u)),
            jwks_url: config.jwks_url.as_deref().map(url::redact),
            ready,
            verdict: match (r.verdict, r.stopped) {
                (Some(Verdict::Ready), _) => "ready",
                (Some(Verdict::DeadlineReached), _) | (None, Stopped::Deadline) => "deadline-reached",
                (Some(Verdict::AttemptsExhausted), _) => "attempts-exhausted",
                (Some(Verdict::Conclusive), _) => "certificate-rejected",
                (None, Stopped::By(_)) => "cut-short",
                (None, Stopped::Signal(_)) => "interrupted",
            },
            attempts: r.tally.attempts,
            failures: r.tally.failures.iter().map(|(class, n)| (class.as_str(), *n)).collect(),
            last_failure: r.tally.last_failure.as_ref().map(|f| LastFailure {
                class: f.class.as_str(),
                link: f.link.as_str(),
                message: &f.detail,
            }),
            in_flight: r.in_flight.clone(),
            endpoints: single.map(|s| Endpoints::of(&s.document)),
            jwks_keys: single.and_then(|s| s.jwks_keys),
            registration: single.and_then(|s| s.document.registration).map(Registration::as_str),
            // An issuer's document warnings; a resource's own (each server has its own list).
            warnings: match passed {
                Some(p) if p.resource_metadata.is_some() || p.servers.is_empty() => &p.warnings,
                _ => single.map_or(&[], |s| &s.document.warnings),
            },
            authorization_servers: passed
                .filter(|p| p.resource_metadata.is_some())
                .map(|p| p.servers.iter().map(ServerSummary::of).collect()),
            addresses: passed.map(|p| addresses(&p.addresses)),
        }
    }
}

/// The `--output json` summary: one object, one line.
fn json_summary(config: &Config, outcome: Outcome, elapsed: Duration, issuers: &[IssuerResult<'_>]) -> String {
    let summary = Summary {
        outcome: outcome.as_str(),
        exit_code: outcome.code(),
        attempts: issuers.iter().map(|r| r.tally.attempts).sum(),
        elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        issuers: issuers.iter().map(|r| IssuerSummary::new(r, config)).collect(),
    };
    let mut json = serde_json::to_string(&summary).unwrap_or_default();
    json.push('\n');
    json
}

/// The `--once` summary for stdout: the resource's metadata, if any, then each server.
pub(crate) fn once_summary(ready: &Ready) -> String {
    let mut out = String::new();
    if let Some(at) = &ready.resource_metadata {
        out.push_str(&format!("{:<24}{}\n", "resource metadata", url::redact(at)));
    }
    for w in &ready.warnings {
        out.push_str(&format!("{:<24}{w}\n", "warning"));
    }
    for server in &ready.servers {
        out.push_str(&server_summary(server));
    }
    out
}

fn server_summary(server: &ServerReady) -> String {
    let d = &server.document;
    let mut out = String::new();
    let mut row = |k: &str, v: Option<&str>| {
        if let Some(v) = v {
            out.push_str(&format!("{k:<24}{v}\n"));
        }
    };
    row("issuer", Some(&d.issuer));
    let url = url::redact(&server.url);
    row("metadata", Some(&url));
    row("authorization_endpoint", d.authorization_endpoint.as_deref());
    row("token_endpoint", d.token_endpoint.as_deref());
    row("userinfo_endpoint", d.userinfo_endpoint.as_deref());
    row("jwks_uri", d.jwks_uri.as_deref());
    let algs = d.id_token_signing_alg_values_supported.join(", ");
    row("signing algorithms", (!algs.is_empty()).then_some(algs.as_str()));
    row("registration", d.registration.map(Registration::as_str));
    for w in &d.warnings {
        row("warning", Some(w));
    }
    out
}

/// Everything the tool says when it ends, gathered first and then delivered in one go.
#[derive(Debug)]
pub(crate) struct Conclusion {
    pub(crate) outcome: Outcome,
    /// Log lines before the final one (warnings, per-issuer reasons).
    pub(crate) lines: Vec<(Level, String)>,
    /// The final line: the log's last, and the termination message.
    pub(crate) last: (Level, String),
    /// What goes to stdout: the `--once` summary or the JSON summary.
    pub(crate) stdout: Option<String>,
}

/// How long the end of the run may spend saying so. Each sink (termination log, stdout, stderr)
/// gets a thread; one that blocks (a stalled pipe, a FIFO, a hung mount) is left behind, and the
/// process exits with its code all the same, within the promised deadline + 0.1 s.
pub(crate) const DELIVERY_BOUND: Duration = Duration::from_millis(40);

impl Conclusion {
    /// Writes the termination message, stdout and the log lines, each on a thread of its own,
    /// and waits for them at most [`DELIVERY_BOUND`]. Write errors are ignored: they must not
    /// change the exit code, and there is nowhere left to report them.
    pub(crate) fn deliver(self, termination_log: &TerminationLog) -> i32 {
        let code = self.outcome.code();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut sinks = 0;
        let mut spawn = |job: Box<dyn FnOnce() + Send>| {
            let tx = tx.clone();
            if std::thread::Builder::new()
                .spawn(move || {
                    job();
                    let _ = tx.send(());
                })
                .is_ok()
            {
                sinks += 1;
            }
        };
        // Whatever a server sent back, no token the gate has read leaves the process.
        let (log, line) = (termination_log.clone(), token::scrub(&self.last.1).into_owned());
        spawn(Box::new(move || write_termination_log(&log, &line)));
        if let Some(text) = self.stdout.map(|t| token::scrub(&t).into_owned()) {
            spawn(Box::new(move || {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            }));
        }
        let (lines, last) = (self.lines, self.last);
        spawn(Box::new(move || {
            for (level, line) in lines {
                log::log!(level, "{line}");
            }
            log::log!(target: OUTCOME, last.0, "{}", last.1);
        }));
        let until = Instant::now() + DELIVERY_BOUND;
        for _ in 0..sinks {
            if rx.recv_timeout(until.saturating_duration_since(Instant::now())).is_err() {
                break;
            }
        }
        code
    }
}

/// The conclusion of a wait that ended (all ready, one not ready, or the deadline).
pub(crate) fn conclude(config: &Config, mode: RunMode, issuers: &[IssuerResult<'_>], elapsed: Duration) -> Conclusion {
    let attempts: u32 = issuers.iter().map(|r| r.tally.attempts).sum();
    let took = secs(elapsed);
    let mut lines = Vec::new();
    if issuers.iter().all(|r| r.verdict == Some(Verdict::Ready)) {
        let mut once = String::new();
        for r in issuers {
            if let Some(ready) = &r.tally.last_ready {
                for w in ready.warnings.iter().chain(ready.servers.iter().flat_map(|s| &s.document.warnings)) {
                    lines.push((Level::Warn, format!("{}{w}", label(config, r.target))));
                }
                if mode.once {
                    once.push_str(&once_summary(ready));
                }
            }
        }
        let names: Vec<String> = issuers.iter().map(|r| url::redact(r.target.name())).collect();
        let last = (Level::Info, format!("ready: {} after {attempts} attempt(s) in {took}", names.join(", ")));
        let stdout = match config.output {
            Output::Json => Some(json_summary(config, Outcome::Ready, elapsed, issuers)),
            Output::Text => (!once.is_empty()).then_some(once),
        };
        return Conclusion { outcome: Outcome::Ready, lines, last, stdout };
    }

    let reasons = not_ready_lines(config, issuers, elapsed, &mut lines);
    let summary = format!("{} after {attempts} attempt(s) in {took}", reasons.join(", "));
    let (outcome, last) = if config.fail_closed {
        (Outcome::NotReady, (Level::Error, format!("not ready: {summary}; failing closed (exit 1)")))
    } else {
        (
            Outcome::FailedOpen,
            (
                Level::Warn,
                format!(
                    "failing open: not ready: {summary}; starting the workload anyway, as without the gate (exit 0)"
                ),
            ),
        )
    };
    let stdout = (config.output == Output::Json).then(|| json_summary(config, outcome, elapsed, issuers));
    Conclusion { outcome, lines, last, stdout }
}

/// For each target not ready: why, its last failure, its attempt under way if any, and its
/// failures by class, as log lines; returns the one-phrase reasons for the final line.
fn not_ready_lines(
    config: &Config,
    issuers: &[IssuerResult<'_>],
    elapsed: Duration,
    lines: &mut Vec<(Level, String)>,
) -> Vec<String> {
    let mut reasons = Vec::new();
    for r in issuers.iter().filter(|r| r.verdict != Some(Verdict::Ready)) {
        let label = label(config, r.target);
        let reason = not_ready_reason(r, config, elapsed);
        let mut line = match &r.tally.last_failure {
            Some(f) => format!("{label}not ready ({reason}): last failure {}: {}", f.class, f.detail),
            None if r.tally.attempts == 0 => format!("{label}not ready ({reason}) before any attempt finished"),
            None => format!("{label}not ready ({reason}) with no failed attempt"),
        };
        if let Some(at) = &r.in_flight {
            line.push_str(&format!("; attempt {} was under way: {at}", r.tally.attempts + 1));
        }
        lines.push((Level::Warn, line));
        if r.tally.attempts > 0 {
            lines.push((
                Level::Warn,
                format!("{label}{} attempt(s), failures by class: {}", r.tally.attempts, failure_counts(r.tally)),
            ));
        }
        let class = r.tally.last_failure.as_ref().map_or("none", |f| f.class.as_str());
        reasons.push(format!("{} ({reason}; last failure: {class})", url::redact(r.target.name())));
    }
    reasons
}

/// The conclusion of a wait ended by SIGTERM or SIGINT.
pub(crate) fn interrupted(config: &Config, issuers: &[IssuerResult<'_>], signal: i32, elapsed: Duration) -> Conclusion {
    let name = if signal == signal_hook::consts::SIGINT { "SIGINT" } else { "SIGTERM" };
    let attempts: u32 = issuers.iter().map(|r| r.tally.attempts).sum();
    let outcome = Outcome::Interrupted(signal);
    let last =
        (Level::Warn, format!("interrupted by {name} after {attempts} attempt(s) in {}; not ready", secs(elapsed)));
    let stdout = (config.output == Output::Json).then(|| json_summary(config, outcome, elapsed, issuers));
    let mut lines = Vec::new();
    not_ready_lines(config, issuers, elapsed, &mut lines);
    Conclusion { outcome, lines, last, stdout }
}

/// The conclusion when the gate could not even start waiting (no thread, no TLS set-up): not
/// ready, failing open or closed as configured, with the reason.
pub(crate) fn cannot_wait(config: &Config, error: &anyhow::Error, elapsed: Duration) -> Conclusion {
    let reason = format!("cannot wait: {error:#}");
    let (outcome, last) = if config.fail_closed {
        (Outcome::NotReady, (Level::Error, format!("not ready: {reason}; failing closed (exit 1)")))
    } else {
        (Outcome::FailedOpen, (Level::Warn, format!("failing open: {reason}; starting the workload anyway (exit 0)")))
    };
    let stdout = (config.output == Output::Json).then(|| json_summary(config, outcome, elapsed, &[]));
    Conclusion { outcome, lines: Vec::new(), last, stdout }
}

/// Writes the final line where Kubernetes shows it in `kubectl describe pod`. A missing default
/// file (outside a pod) or an unwritable one is skipped without a word: it is a courtesy, not a
/// duty. Only a regular file is written: the file is opened without blocking (a FIFO without a
/// reader would otherwise hold the gate forever) and left alone if it is anything else.
pub(crate) fn write_termination_log(t: &TerminationLog, line: &str) {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(t.create)
        .mode(0o644)
        .custom_flags(libc::O_NONBLOCK)
        .open(&t.path);
    let Ok(mut file) = file else { return };
    if file.metadata().is_ok_and(|m| m.file_type().is_file()) && file.set_len(0).is_ok() {
        let _ = writeln!(file, "{line}");
    }
}
