//! The table itself: one row per setting, in [`Id`] order (also their order in `--help`, within
//! each group). A row names only what differs from [`SWITCH`], a boolean flag with no default.

use super::choice::{Choice, Format};
use super::setting::{Arity, Group, Id, MIN_TIMEOUT, Parser, Setting, TERMINATION_LOG};
use crate::rules::authorization_server::MetadataKind;
use crate::rules::client::Client;
use Arity::{Many, One};
use Group::{Network, Output, Target, Timing};
use log::LevelFilter;
use std::time::Duration;

/// What a row leaves unsaid: a switch, no variable, no default.
const SWITCH: Setting = Setting {
    id: Id::DryRun,
    flag: "",
    short: None,
    env: None,
    fallback: None,
    unset: "",
    value_name: "",
    arity: Arity::Switch,
    parser: Parser::Plain,
    group: Output,
    brief: "",
    help: "",
};

/// Every setting.
pub(crate) const SETTINGS: &[Setting] = &[
    Setting {
        id: Id::Issuer,
        flag: "issuer",
        env: Some("WAIT_FOR_IDP_ISSUER"),
        fallback: Some("OAUTH2_PROXY_OIDC_ISSUER_URL"),
        value_name: "URL",
        arity: Many,
        group: Target,
        brief: "Issuer URL, as the client has it; repeatable",
        help: "Issuer identifier; the document's \"issuer\" must equal it byte for byte. Repeat for several issuers (all must be ready)",
        ..SWITCH
    },
    Setting {
        id: Id::Resource,
        flag: "resource",
        env: Some("WAIT_FOR_IDP_RESOURCE"),
        value_name: "URL",
        arity: Many,
        group: Target,
        brief: "MCP server to wait for end to end; repeatable",
        help: "Protected resource (an MCP server) to wait for end to end (RFC 9728): its metadata names it exactly and lists authorization servers, each ready by auto discovery. Repeatable; --issuer is then optional",
        ..SWITCH
    },
    Setting {
        id: Id::DiscoveryUrl,
        flag: "discovery-url",
        env: Some("WAIT_FOR_IDP_DISCOVERY_URL"),
        value_name: "URL",
        arity: One,
        group: Target,
        brief: "Fetch the metadata here instead",
        help: "Fetch the metadata from this URL instead of the derived one (e.g. an in-cluster service; a query such as Azure AD B2C's ?p= is kept), still expecting --issuer in the document",
        ..SWITCH
    },
    Setting {
        id: Id::Metadata,
        flag: "metadata",
        env: Some("WAIT_FOR_IDP_METADATA"),
        arity: One,
        parser: Parser::Choice { words: MetadataKind::words, default: "oidc" },
        group: Target,
        brief: "Metadata: oidc, oauth or auto",
        help: "Metadata kind for --issuer: oidc (/.well-known/openid-configuration, appended), oauth (RFC 8414, /.well-known/oauth-authorization-server inserted after the host) or auto (the MCP order: RFC 8414, then OIDC inserted, then OIDC appended)",
        ..SWITCH
    },
    Setting {
        id: Id::Client,
        flag: "client",
        env: Some("WAIT_FOR_IDP_CLIENT"),
        arity: One,
        parser: Parser::Choice { words: Client::words, default: "any" },
        group: Target,
        brief: "Judge as this client does",
        help: "The client the gate guards, whose own rules and time limit apply: any (the specification's), oauth2-proxy or go-oidc (no time limit of their own: an attempt may use all the time left; go-oidc, a token verifier, needs no login endpoint), toolhive (ToolHive's embedded auth server upstream: https unless loopback, its required members and endpoint schemes, private addresses refused, 10s an attempt). Its refusals are final: waiting cannot change them",
        ..SWITCH
    },
    Setting {
        id: Id::SkipIssuerCheck,
        flag: "skip-issuer-check",
        env: Some("WAIT_FOR_IDP_SKIP_ISSUER_CHECK"),
        fallback: Some("OAUTH2_PROXY_INSECURE_OIDC_SKIP_ISSUER_VERIFICATION"),
        group: Target,
        brief: "Accept another issuer (Entra ID 'common')",
        help: "Accept a document whose issuer differs (Entra ID 'common'); logged as a warning",
        ..SWITCH
    },
    Setting {
        id: Id::Strict,
        flag: "strict",
        env: Some("WAIT_FOR_IDP_STRICT"),
        group: Target,
        brief: "Require every REQUIRED member",
        help: "Also require every REQUIRED member of the chosen specification",
        ..SWITCH
    },
    Setting {
        id: Id::CheckJwks,
        flag: "check-jwks",
        env: Some("WAIT_FOR_IDP_CHECK_JWKS"),
        group: Target,
        brief: "Also require a usable key in the JWK Set",
        help: "Also fetch jwks_uri and require a key usable for the advertised signing algorithms",
        ..SWITCH
    },
    Setting {
        id: Id::JwksUrl,
        flag: "jwks-url",
        env: Some("WAIT_FOR_IDP_JWKS_URL"),
        value_name: "URL",
        arity: One,
        group: Target,
        brief: "Fetch the keys here; implies --check-jwks",
        help: "Fetch the keys from this URL instead of the document's jwks_uri, e.g. the API server's https://kubernetes.default.svc/openid/v1/jwks; implies --check-jwks, and --token-file is sent here too",
        ..SWITCH
    },
    Setting {
        id: Id::RefuseLegacyAuth,
        flag: "refuse-legacy-auth",
        env: Some("WAIT_FOR_IDP_REFUSE_LEGACY_AUTH"),
        group: Target,
        brief: "Fail a --resource without its metadata",
        help: "A --resource without protected resource metadata fails, rather than having its origin taken for its authorization server as MCP clients do (the 2025-03-26 legacy path)",
        ..SWITCH
    },
    Setting {
        id: Id::Timeout,
        flag: "timeout",
        env: Some("WAIT_FOR_IDP_TIMEOUT"),
        value_name: "DURATION",
        arity: One,
        parser: Parser::Duration { min: MIN_TIMEOUT, default: Duration::from_secs(5 * 60) },
        group: Timing,
        brief: "Overall deadline",
        help: "Overall deadline, e.g. 90s or 5m",
        ..SWITCH
    },
    Setting {
        id: Id::Interval,
        flag: "interval",
        env: Some("WAIT_FOR_IDP_INTERVAL"),
        value_name: "DURATION",
        arity: One,
        parser: Parser::Duration { min: Duration::ZERO, default: Duration::from_secs(1) },
        group: Timing,
        brief: "Longest pause between attempts",
        help: "Longest pause between attempts; each pause is 80-100% of it, at random (the first, 0-100%, to spread a herd). Refused connections are retried after about 0.1s",
        ..SWITCH
    },
    Setting {
        id: Id::AttemptTimeout,
        flag: "attempt-timeout",
        env: Some("WAIT_FOR_IDP_ATTEMPT_TIMEOUT"),
        value_name: "DURATION",
        arity: One,
        parser: Parser::Duration { min: Duration::ZERO, default: Duration::from_secs(5) },
        group: Timing,
        brief: "Bound on one attempt",
        help: "Bound on one attempt, DNS to last body byte; clipped to the time left",
        ..SWITCH
    },
    Setting {
        id: Id::MaxAttempts,
        flag: "max-attempts",
        env: Some("WAIT_FOR_IDP_MAX_ATTEMPTS"),
        unset: "unlimited",
        value_name: "N",
        arity: One,
        parser: Parser::Limit,
        group: Timing,
        brief: "Give up after N attempts per target",
        help: "Give up after N attempts (per issuer), or at the deadline, whichever comes first",
        ..SWITCH
    },
    Setting {
        id: Id::Successes,
        flag: "successes",
        env: Some("WAIT_FOR_IDP_SUCCESSES"),
        value_name: "N",
        arity: One,
        parser: Parser::Count { default: 1 },
        group: Timing,
        brief: "Consecutive passes required",
        help: "Consecutive passing attempts required, for providers that flap during a rolling restart",
        ..SWITCH
    },
    Setting {
        id: Id::FailClosed,
        flag: "fail-closed",
        env: Some("WAIT_FOR_IDP_FAIL_CLOSED"),
        group: Timing,
        brief: "Exit 1 instead of 0 when not ready in time",
        help: "Exit 1 instead of 0 when the issuer is not ready in time",
        ..SWITCH
    },
    Setting {
        id: Id::Once,
        flag: "once",
        group: Timing,
        brief: "One attempt, fail closed, summary on stdout",
        help: "One attempt, fail closed, and print a short summary of the document to stdout",
        ..SWITCH
    },
    Setting {
        id: Id::Serve,
        flag: "serve",
        env: Some("WAIT_FOR_IDP_SERVE"),
        unset: "off",
        value_name: "ADDR",
        arity: One,
        group: Timing,
        brief: "Serve /readyz, /livez, /metrics; keep watching",
        help: "Listen on ADDR (HOST:PORT, or :PORT for every address) at once for GET /readyz (200 once every target passed, while the watch holds), /livez and /metrics (Prometheus), and keep checking after the start instead of exiting: a native sidecar. Not with --once or -- COMMAND",
        ..SWITCH
    },
    Setting {
        id: Id::WatchInterval,
        flag: "watch-interval",
        env: Some("WAIT_FOR_IDP_WATCH_INTERVAL"),
        value_name: "DURATION",
        arity: One,
        parser: Parser::Duration { min: Duration::ZERO, default: Duration::from_secs(30) },
        group: Timing,
        brief: "Pause between checks (--serve)",
        help: "With --serve: the longest pause between checks once ready; each is 80-100% of it, at random (the first, 0-100%, to spread a herd)",
        ..SWITCH
    },
    Setting {
        id: Id::WatchFailures,
        flag: "watch-failures",
        env: Some("WAIT_FOR_IDP_WATCH_FAILURES"),
        value_name: "N",
        arity: One,
        parser: Parser::Count { default: 3 },
        group: Timing,
        brief: "Failures to a 503 (--serve)",
        help: "With --serve: consecutive failed checks after which /readyz answers 503 (one pass makes it 200 again)",
        ..SWITCH
    },
    Setting {
        id: Id::CaFile,
        flag: "ca-file",
        env: Some("WAIT_FOR_IDP_CA_FILE"),
        fallback: Some("OAUTH2_PROXY_PROVIDER_CA_FILES"),
        value_name: "PATH",
        arity: Many,
        group: Network,
        brief: "PEM CA certificates to trust; repeatable",
        help: "PEM file of CA certificates trusted in addition to Mozilla's roots, SSL_CERT_FILE and SSL_CERT_DIR (from OAUTH2_PROXY_PROVIDER_CA_FILES: instead of them, unless OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE=true, as oauth2-proxy does); repeatable (env: comma-separated)",
        ..SWITCH
    },
    Setting {
        id: Id::ConnectTo,
        flag: "connect-to",
        env: Some("WAIT_FOR_IDP_CONNECT_TO"),
        unset: "direct",
        value_name: "HOST:PORT:CONNECT_HOST:CONNECT_PORT",
        arity: Many,
        group: Network,
        brief: "Connect elsewhere, as curl's; repeatable",
        help: "Connect to CONNECT_HOST:CONNECT_PORT when the URL names HOST:PORT, keeping HOST for TLS (SNI, certificate check) and the Host header, as curl's --connect-to. An empty field matches any / keeps the original. Repeatable (env: comma-separated)",
        ..SWITCH
    },
    Setting {
        id: Id::TokenFile,
        flag: "token-file",
        env: Some("WAIT_FOR_IDP_TOKEN_FILE"),
        unset: "none",
        value_name: "PATH",
        arity: One,
        group: Network,
        brief: "Send its content as a bearer token",
        help: "Send \"Authorization: Bearer\" with this file's content (re-read every attempt) to the discovery URL's origin only, e.g. a service-account token for the API server's issuer",
        ..SWITCH
    },
    Setting {
        id: Id::RefusePrivateAddresses,
        flag: "refuse-private-addresses",
        env: Some("WAIT_FOR_IDP_REFUSE_PRIVATE_ADDRESSES"),
        group: Network,
        brief: "Fail on private addresses, as SSRF guards do",
        help: "Fail, as SSRF-guarded clients (ToolHive) do, when a name the gate fetches from resolves to an address of this host, a private, link-local, CGNAT or other non-public range, or an IPv6 form carrying one (docs/reference.md lists them). On by default with --client toolhive unless the issuer is loopback; =false there is ToolHive's allow_private_ips",
        ..SWITCH
    },
    Setting {
        id: Id::HeaderFile,
        flag: "header-file",
        env: Some("WAIT_FOR_IDP_HEADER_FILE"),
        unset: "none",
        value_name: "NAME=PATH",
        arity: Many,
        group: Network,
        brief: "Send header NAME with its content; repeatable",
        help: "Send the header NAME with this file's content (re-read every attempt) where --token-file goes, the discovery URL's origin only, e.g. Cloudflare Access's CF-Access-Client-Id and CF-Access-Client-Secret. Repeatable (env: comma-separated)",
        ..SWITCH
    },
    Setting {
        id: Id::Output,
        flag: "output",
        env: Some("WAIT_FOR_IDP_OUTPUT"),
        arity: One,
        parser: Parser::Choice { words: Format::words, default: "text" },
        group: Output,
        brief: "Summary: text or json (stdout)",
        help: "Final summary format: text (log lines only) or json (one JSON object on stdout)",
        ..SWITCH
    },
    Setting {
        id: Id::TerminationLog,
        flag: "termination-log",
        env: Some("WAIT_FOR_IDP_TERMINATION_LOG"),
        parser: Parser::Path { default: TERMINATION_LOG },
        value_name: "PATH",
        arity: One,
        group: Output,
        brief: "File for kubectl describe's message",
        help: "File that receives the one-line outcome for `kubectl describe`; skipped if it cannot be opened. The default is used only if it exists",
        ..SWITCH
    },
    Setting {
        id: Id::Quiet,
        flag: "quiet",
        short: Some('q'),
        env: Some("WAIT_FOR_IDP_QUIET"),
        group: Output,
        brief: "Log only the final line",
        help: "Log only the final line",
        ..SWITCH
    },
    Setting {
        id: Id::DryRun,
        flag: "dry-run",
        group: Output,
        brief: "Check and print the settings; no network",
        help: "Check the flags, environment variables and CA files, print the effective settings and exit (0 valid, 2 not) without touching the network",
        ..SWITCH
    },
    Setting {
        id: Id::LogLevel,
        flag: "log-level",
        env: Some("WAIT_FOR_IDP_LOG_LEVEL"),
        arity: One,
        parser: Parser::Choice { words: LevelFilter::words, default: "info" },
        group: Output,
        brief: "error|warn|info|debug|trace",
        help: "The gate's own log level; the libraries' internals stay at warn (RUST_LOG, when set, replaces both, as env_logger reads it, except that the libraries' lines stop at debug: their trace lines would show URLs' secrets and redirects' codes)",
        ..SWITCH
    },
    Setting {
        id: Id::Verbose,
        flag: "verbose",
        short: Some('v'),
        arity: Arity::Count,
        group: Output,
        brief: "Log more: -v debug, -vv trace",
        help: "Log more: -v is --log-level debug, -vv trace (the gate's own lines, not the libraries')",
        ..SWITCH
    },
    Setting {
        id: Id::LogFormat,
        flag: "log-format",
        env: Some("WAIT_FOR_IDP_LOG_FORMAT"),
        arity: One,
        parser: Parser::Choice { words: Format::words, default: "text" },
        group: Output,
        brief: "Log lines: text or json",
        help: "Log lines as text, or json: one object a line with time (RFC 3339), level and message, for log pipelines",
        ..SWITCH
    },
];

// Each row sits at its id's index, so `Id::setting` cannot miss: a misplaced row fails the build.
const _: () = {
    assert!(SETTINGS.len() == Id::LogFormat as usize + 1);
    let mut i = 0;
    while i < SETTINGS.len() {
        assert!(SETTINGS[i].id as usize == i, "SETTINGS is not in Id order");
        i += 1;
    }
};

impl Id {
    pub(crate) fn setting(self) -> &'static Setting {
        &SETTINGS[self as usize]
    }

    /// The flag as typed, `--issuer`.
    pub(crate) fn flag(self) -> String {
        format!("--{}", self.setting().flag)
    }
}
