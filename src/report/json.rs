//! The `--output json` summary: one object on one line. A public interface: its field names and
//! values are a contract, documented in the README ("JSON output") and checked by the integration
//! tests, so a change here is a change to what scripts reading it rely on.

use super::before_wait::first_urls;
use super::failure_text::LastFailure;
use super::outcome::{Ended, Outcome, TargetResult};
use crate::config::Config;
use crate::config::Target;
use crate::probe::ServerReady;
use crate::rules::authorization_server::{Document, Registration};
use crate::screen_text;
use crate::url;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

/// The `--output json` summary, documented field by field in the README ("JSON output").
#[derive(Serialize)]
struct Summary<'a> {
    outcome: &'static str,
    exit_code: i32,
    /// Over all issuers.
    attempts: u32,
    elapsed_ms: u64,
    /// The command after `--` that the gate hands over to (ready or failing open), else `null`.
    /// Its name only: its arguments may hold secrets. `exit_code` stays the gate's own: once
    /// handed over, the process ends with the command's status.
    handover: Option<String>,
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
    /// For a `--resource` target that passed: the authorization server clients use, the first it lists.
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
    authorization_endpoint: Option<Cow<'a, str>>,
    token_endpoint: Option<Cow<'a, str>>,
    jwks_uri: Option<Cow<'a, str>>,
    userinfo_endpoint: Option<Cow<'a, str>>,
}

impl<'a> Endpoints<'a> {
    /// The document's endpoints, each at most 2 KiB: a provider's value can be a megabyte, and
    /// the summary is one line.
    fn of(d: &'a Document) -> Endpoints<'a> {
        let bounded = |v: &'a Option<String>| v.as_deref().map(|v| screen_text::bound(v, 2048));
        Endpoints {
            authorization_endpoint: bounded(&d.authorization_endpoint),
            token_endpoint: bounded(&d.token_endpoint),
            jwks_uri: bounded(&d.jwks_uri),
            userinfo_endpoint: bounded(&d.userinfo_endpoint),
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
    fn new(r: &TargetResult<'a>, config: &Config) -> IssuerSummary<'a> {
        let ended = r.ended();
        let ready = ended == Ended::Ready;
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
            jwks_url: config.checks.jwks_url.as_deref().map(url::redact),
            ready,
            verdict: ended.as_str(),
            attempts: r.tally.attempts,
            failures: r.tally.failures.iter().map(|(class, n)| (class.as_str(), *n)).collect(),
            last_failure: r.tally.last_failure.as_ref().map(LastFailure::of),
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
pub(super) fn json_summary(
    config: &Config,
    outcome: Outcome,
    elapsed: Duration,
    issuers: &[TargetResult<'_>],
) -> String {
    let summary = Summary {
        outcome: outcome.as_str(),
        exit_code: outcome.exit_code().code(),
        attempts: issuers.iter().map(|r| r.tally.attempts).sum(),
        elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        handover: config.then.as_ref().filter(|_| outcome.starts_workload()).map(|c| c.name()),
        issuers: issuers.iter().map(|r| IssuerSummary::new(r, config)).collect(),
    };
    let mut json = serde_json::to_string(&summary).unwrap_or_default();
    json.push('\n');
    json
}
