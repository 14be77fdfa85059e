//! The settings as the rest of the process takes them, grouped by who uses them ([`Checks`] by
//! the probe, [`Timing`] by the wait, [`Network`] by the HTTP client), and what loading them
//! says besides ([`Loaded`], [`Notice`]). The folder's other files make these; none is made
//! anywhere else.

use super::{ConnectTo, HeaderFile, Notice, Source, Trust};
use crate::go_proxy::ProxySettings;
use crate::rules::authorization_server::{self, Rules};
use crate::rules::protected_resource;
use crate::settings::{Id, ThenCommand};
use std::collections::BTreeMap;
use std::net::SocketAddr;
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

/// How the final summary is given: log lines on stderr only, or also one JSON object on stdout.
pub(crate) use crate::settings::Format as Output;

/// What an attempt checks, beyond the target itself: the probe's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Checks {
    pub(crate) rules: Rules,
    pub(crate) check_jwks: bool,
    /// Fetched instead of the document's `jwks_uri`.
    pub(crate) jwks_url: Option<String>,
    /// Re-read on every attempt: projected service-account tokens rotate.
    pub(crate) token_file: Option<PathBuf>,
    /// Extra headers, each re-read on every attempt and sent where the token goes.
    pub(crate) header_files: Vec<HeaderFile>,
    /// oauth2-proxy skips certificate checks (`OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY`), so a
    /// certificate the gate rejects is a conclusive failure: the proxy would not wait for it.
    pub(crate) proxy_skips_verify: bool,
    /// `--refuse-legacy-auth`: a resource without protected resource metadata fails rather than
    /// having its origin taken for its authorization server.
    pub(crate) refuse_legacy_auth: bool,
    /// The run waits for one `--issuer` and nothing else: `--discovery-url` and `--jwks-url`
    /// can be given.
    pub(crate) one_issuer: bool,
    /// Fail where an SSRF-guarded client refuses a private address.
    pub(crate) refuse_private_addresses: bool,
}

/// When to stop and how to pace: the wait's settings, `--once` applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timing {
    pub(crate) timeout: Duration,
    pub(crate) interval: Duration,
    pub(crate) attempt_timeout: Duration,
    /// `--max-attempts`; 1 under `--once`.
    pub(crate) max_attempts: Option<u32>,
    /// Consecutive passing attempts required (at least 1).
    pub(crate) successes: u32,
}

/// `--serve`: where the health listener listens, and how the watch after the start goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Serve {
    pub(crate) addr: SocketAddr,
    /// `--watch-interval`: the longest pause between checks once ready.
    pub(crate) interval: Duration,
    /// `--watch-failures`: consecutive failed checks that make `/readyz` 503.
    pub(crate) failures: u32,
}

/// How the gate reaches the provider: the HTTP client's settings.
#[derive(Clone, Debug)]
pub(crate) struct Network {
    pub(crate) trust: Trust,
    pub(crate) proxies: ProxySettings,
    pub(crate) connect_to: Vec<ConnectTo>,
}

/// Validated settings: what to wait for, and how.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) targets: Vec<Target>,
    pub(crate) checks: Checks,
    pub(crate) timing: Timing,
    pub(crate) network: Network,
    pub(crate) output: Output,
    /// Exit 1 when not ready in time (`--fail-closed`, `--once`).
    pub(crate) fail_closed: bool,
    pub(crate) termination_log: TerminationLog,
    /// Where each setting that something set came from (a setting absent here has its default).
    pub(crate) sources: BTreeMap<Id, Source>,
    /// `-- COMMAND [ARGS…]`: what the process becomes when the workload may start (ready, or
    /// failing open).
    pub(crate) then: Option<ThenCommand>,
    /// `--serve`: keep watching after the start and serve the verdict over HTTP.
    pub(crate) serve: Option<Serve>,
}

impl Config {
    /// Where a target's discovery starts, in the order tried: the issuer's candidate metadata
    /// URLs, or the resource's metadata locations (its own challenge comes after them).
    pub(crate) fn first_urls(&self, target: &Target) -> Vec<String> {
        match target {
            Target::Issuer { issuer, discovery_url } => {
                authorization_server::candidates(issuer, self.checks.rules.kind, discovery_url.as_deref())
                    .into_iter()
                    .map(|c| c.url)
                    .collect()
            }
            // The resource first: its challenge may name the metadata (then asked before the rest).
            Target::Resource { resource } => {
                std::iter::once(resource.clone()).chain(protected_resource::metadata_urls(resource)).collect()
            }
        }
    }
}

/// How this run goes, apart from what it waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunMode {
    /// `--once`: a summary of the document on stdout.
    pub(crate) once: bool,
    /// Only check the configuration.
    pub(crate) dry_run: bool,
    /// Log only the final line.
    pub(crate) quiet: bool,
    /// The gate's own log level (`--log-level`, raised by `-v`); the libraries' stay at warn.
    pub(crate) log_level: log::LevelFilter,
    /// `--log-format json`: one JSON object a log line.
    pub(crate) log_json: bool,
}

/// A configuration that passed every check, its run mode, and what is worth saying about it.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) config: Config,
    pub(crate) mode: RunMode,
    pub(crate) notices: Vec<Notice>,
}
