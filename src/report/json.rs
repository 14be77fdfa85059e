//! The `--output json` summary: one object on one line. A public interface: its field names and
//! values are a contract, documented in docs/reference.md ("JSON output") and checked by the unit
//! tests below (on constructed results) and the integration tests, so a change here is a change
//! to what scripts reading it rely on.

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

/// The `--output json` summary, documented field by field in docs/reference.md ("JSON output").
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
    /// The passing document's ID token signing algorithms, as `--once` shows them.
    signing_algorithms: Option<&'a [String]>,
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
    signing_algorithms: &'a [String],
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
            signing_algorithms: &s.document.id_token_signing_alg_values_supported,
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
            discovery_url: url::redact(config.first_urls(r.target).first().map_or("", String::as_str)),
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
            signing_algorithms: single.map(|s| &s.document.id_token_signing_alg_values_supported[..]),
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

/// The JSON contract, checked on constructed results without a process: every field's name and
/// place, and what each kind of failure fills in.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{Cause, Failure, FailureClass, Link, Ready};
    use crate::progress::Stage;
    use crate::report::outcome::Stopped;
    use crate::rules::authorization_server::Document;
    use crate::settings::Given;
    use crate::wait::{Tally, Verdict};
    use serde_json::{Value, json};

    fn config(args: &[&str]) -> Config {
        let given = Given::parse_from(["wait-for-idp", "--output", "json"].iter().chain(args).copied()).unwrap();
        crate::config::load(&given, &|_| None, &[]).unwrap().config
    }

    fn summary(config: &Config, outcome: Outcome, results: &[(Option<Verdict>, Stopped, &Tally)]) -> Value {
        let results: Vec<TargetResult<'_>> = (config.targets.iter().zip(results))
            .map(|(target, (verdict, stopped, tally))| TargetResult {
                target,
                verdict: *verdict,
                tally,
                stopped: *stopped,
                in_flight: None,
            })
            .collect();
        serde_json::from_str(&json_summary(config, outcome, Duration::from_millis(1234), &results)).unwrap()
    }

    fn failed(failure: Failure) -> Tally {
        Tally { attempts: 3, failures: [(failure.class, 3)].into(), last_failure: Some(failure), ..Tally::default() }
    }

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    #[test]
    fn every_field_is_there_and_named_as_documented() {
        let c = config(&["--issuer", "https://idp.example/realms/x"]);
        let document = Document { issuer: "https://idp.example/realms/x".into(), ..Document::default() };
        let server = ServerReady {
            document,
            url: "https://idp.example/realms/x/.well-known/openid-configuration".into(),
            jwks_keys: None,
        };
        let ready = Ready {
            resource_metadata: None,
            servers: vec![server],
            warnings: Vec::new(),
            addresses: vec![("idp.example".into(), vec!["10.0.0.7".parse().unwrap()])],
        };
        let tally = Tally { attempts: 1, last_ready: Some(ready), consecutive_successes: 1, ..Tally::default() };
        let v = summary(&c, Outcome::Ready, &[(Some(Verdict::Ready), Stopped::Deadline, &tally)]);
        let mut top = keys(&v);
        top.sort_unstable();
        assert_eq!(top, ["attempts", "elapsed_ms", "exit_code", "handover", "issuers", "outcome"]);
        assert_eq!((&v["outcome"], &v["exit_code"], &v["elapsed_ms"]), (&json!("ready"), &json!(0), &json!(1234)));
        let issuer = &v["issuers"][0];
        let mut fields = keys(issuer);
        fields.sort_unstable();
        let mut documented = vec![
            "issuer",
            "resource",
            "discovery_url",
            "metadata_url",
            "jwks_url",
            "ready",
            "verdict",
            "attempts",
            "failures",
            "last_failure",
            "in_flight",
            "endpoints",
            "signing_algorithms",
            "jwks_keys",
            "registration",
            "warnings",
            "authorization_servers",
            "addresses",
        ];
        documented.sort_unstable();
        assert_eq!(fields, documented);
        assert_eq!(
            (&issuer["ready"], &issuer["verdict"], &issuer["last_failure"]),
            (&json!(true), &json!("ready"), &Value::Null)
        );
        assert_eq!(issuer["addresses"], json!([{"host": "idp.example", "address": "10.0.0.7", "private": "private"}]));
        // Issue 36 §6: what --once's text shows as "signing algorithms" is in the JSON too.
        assert!(issuer["signing_algorithms"].is_array(), "{issuer}");
    }

    #[test]
    fn a_status_names_its_code_url_and_host() {
        let c = config(&["--issuer", "https://idp.example/realms/x", "--fail-closed"]);
        let url = "https://idp.example/realms/x/.well-known/openid-configuration";
        let message = format!("HTTP 503 Service Unavailable from {url}");
        let failure = Failure::of(FailureClass::HttpStatus, Cause::Status(503), message).with(|f| {
            f.url = Some(url.into());
            f.hints = vec!["a gateway in front of a provider that is not serving yet".into()];
        });
        let v =
            summary(&c, Outcome::NotReady, &[(Some(Verdict::DeadlineReached), Stopped::Deadline, &failed(failure))]);
        let last = &v["issuers"][0]["last_failure"];
        assert_eq!(
            *last,
            json!({
                "class": "http-status",
                "link": "metadata",
                "message": format!("HTTP 503 Service Unavailable from {url}; a gateway in front of a provider that is not serving yet"),
                "url": url,
                "http_status": 503,
                "stage": null,
                "host": "idp.example",
                "proxy": null,
                "conclusive": false,
            })
        );
        assert_eq!(
            (&v["issuers"][0]["verdict"], &v["issuers"][0]["failures"]),
            (&json!("deadline-reached"), &json!({"http-status": 3}))
        );
    }

    #[test]
    fn a_network_failure_names_its_stage_host_and_proxy() {
        let c = config(&["--issuer", "https://idp.example"]);
        let cause = Cause::Network { stage: Stage::TlsHandshake, host: "idp.example".into() };
        let failure = Failure::of(FailureClass::Jwks, cause, "certificate not trusted").with(|f| {
            f.link = Link::Jwks;
            f.within = Some(FailureClass::Tls);
            f.url = Some("https://idp.example/keys".into());
            f.proxy = Some("http://***@proxy.example:3128".into());
        });
        let v = summary(&c, Outcome::FailedOpen, &[(None, Stopped::Deadline, &failed(failure))]);
        let last = &v["issuers"][0]["last_failure"];
        assert_eq!(
            (&last["class"], &last["link"], &last["message"]),
            (&json!("jwks"), &json!("jwks"), &json!("tls: certificate not trusted"))
        );
        assert_eq!(
            (&last["stage"], &last["host"], &last["http_status"]),
            (&json!("tls-handshake"), &json!("idp.example"), &Value::Null)
        );
        assert_eq!(last["proxy"], "http://***@proxy.example:3128", "shown as the log shows it, credentials hidden");
        assert_eq!((&v["outcome"], &v["exit_code"]), (&json!("failed-open"), &json!(0)));
    }

    #[test]
    fn each_way_a_wait_ends_has_its_verdict() {
        let c = config(&["--issuer", "https://a.example", "--issuer", "https://b.example"]);
        let tally = failed(Failure::of(
            FailureClass::Connect,
            Cause::Network { stage: Stage::Connecting, host: "a.example".into() },
            "refused",
        ));
        for (verdict, stopped, word) in [
            (Some(Verdict::Ready), Stopped::Deadline, "ready"),
            (Some(Verdict::DeadlineReached), Stopped::By(1), "deadline-reached"),
            (None, Stopped::Deadline, "deadline-reached"),
            (Some(Verdict::AttemptsExhausted), Stopped::Deadline, "attempts-exhausted"),
            (Some(Verdict::Conclusive), Stopped::Deadline, "conclusive"),
            (None, Stopped::By(1), "cut-short"),
            (None, Stopped::Signal(15), "interrupted"),
        ] {
            let v = summary(&c, Outcome::NotReady, &[(verdict, stopped, &tally), (verdict, stopped, &tally)]);
            assert_eq!(v["issuers"][0]["verdict"], word, "{verdict:?} {stopped:?}");
            assert_eq!(v["attempts"], 6, "over all targets");
        }
        let tls = failed(Failure::of(FailureClass::Tls, Cause::Proxy, "rejected").with(|f| f.conclusive = true));
        let v = summary(&c, Outcome::NotReady, &[(Some(Verdict::Conclusive), Stopped::Deadline, &tls); 2]);
        assert_eq!(v["issuers"][0]["verdict"], "certificate-rejected", "a certificate oauth2-proxy would not check");
        assert_eq!(v["issuers"][0]["last_failure"]["conclusive"], true);
    }
}
