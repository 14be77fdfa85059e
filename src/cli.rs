//! The command line as the user types it. Values stay raw strings here; `config` turns them, and
//! the environment variables named in [`ENV_VARS`], into validated settings, so that every
//! error can name exactly the flag or variable it came from.

use clap::{CommandFactory, FromArgMatches, Parser};
use std::time::Duration;

/// Every default, written once: the configuration uses these values and the help text shows
/// them (see [`command`]).
pub(crate) mod defaults {
    use std::time::Duration;

    pub(crate) const TIMEOUT: Duration = Duration::from_secs(300);
    /// The shortest `--timeout`: less leaves no time for a single attempt.
    pub(crate) const MIN_TIMEOUT: Duration = Duration::from_millis(100);
    pub(crate) const INTERVAL: Duration = Duration::from_secs(1);
    pub(crate) const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
    pub(crate) const METADATA: &str = "oidc";
    pub(crate) const SUCCESSES: u32 = 1;
    pub(crate) const OUTPUT: &str = "text";
    pub(crate) const TERMINATION_LOG: &str = "/dev/termination-log";
}

/// What the help text shows as each valued flag's default, from [`defaults`].
fn default_shown(id: &str) -> Option<String> {
    let d = |d: Duration| humantime::format_duration(d).to_string();
    Some(match id {
        "timeout" => format!("at least {} [default: {}]", d(defaults::MIN_TIMEOUT), d(defaults::TIMEOUT)),
        "interval" => format!("[default: {}]", d(defaults::INTERVAL)),
        "attempt_timeout" => format!("[default: {}]", d(defaults::ATTEMPT_TIMEOUT)),
        "metadata" => format!("[default: {}]", defaults::METADATA),
        "successes" => format!("[default: {}]", defaults::SUCCESSES),
        "output" => format!("[default: {}]", defaults::OUTPUT),
        "termination_log" => format!("[default: {}]", defaults::TERMINATION_LOG),
        "max_attempts" => "[default: unlimited]".to_string(),
        _ => return None,
    })
}

#[derive(Parser, Debug, Default, Clone)]
#[command(
    name = "wait-for-idp",
    version,
    about = "Wait until an OpenID Connect issuer really serves its metadata, then exit.",
    long_about = "Wait until an OpenID Connect issuer really serves its metadata, then exit.\n\n\
        Polls the issuer's discovery document with full TLS verification, checks it the way the \
        real client will (exact issuer, required members) and exits 0 the moment it passes. When \
        the deadline passes first it fails open (exit 0 with a warning) unless --fail-closed.\n\n\
        Exit codes: 0 ready, or not ready and failing open; 1 not ready with --fail-closed or \
        --once; 2 usage or configuration error; 130/143 interrupted by SIGINT/SIGTERM.\n\n\
        An environment variable that is set but empty counts as unset.",
    after_help = "Exit codes: 0 ready (or failed open), 1 not ready (--fail-closed, --once), 2 bad configuration, 130/143 signal."
)]
pub(crate) struct Cli {
    /// Issuer identifier; the document's "issuer" must equal it byte for byte. Repeat for several
    /// issuers (all must be ready)
    #[arg(long, value_name = "URL")]
    pub(crate) issuer: Vec<String>,

    /// Protected resource (an MCP server) to wait for end to end (RFC 9728): its metadata names
    /// it exactly and lists authorization servers, each ready by auto discovery. Repeatable;
    /// --issuer is then optional
    #[arg(long, value_name = "URL")]
    pub(crate) resource: Vec<String>,

    /// Fetch the metadata from this URL instead of the derived one (e.g. an in-cluster service),
    /// still expecting --issuer in the document
    #[arg(long, value_name = "URL")]
    pub(crate) discovery_url: Option<String>,

    /// Metadata kind for --issuer: oidc (/.well-known/openid-configuration, appended), oauth
    /// (RFC 8414, /.well-known/oauth-authorization-server inserted after the host) or auto (the
    /// MCP order: RFC 8414, then OIDC inserted, then OIDC appended)
    #[arg(long, value_name = "oidc|oauth|auto")]
    pub(crate) metadata: Option<String>,

    /// Accept a document whose issuer differs (Entra ID 'common'); logged as a warning
    #[arg(long)]
    pub(crate) skip_issuer_check: bool,

    /// Also require every REQUIRED member of the chosen specification
    #[arg(long)]
    pub(crate) strict: bool,

    /// PEM file of CA certificates trusted in addition to Mozilla's roots, SSL_CERT_FILE and
    /// SSL_CERT_DIR (from OAUTH2_PROXY_PROVIDER_CA_FILES: instead of them, unless
    /// OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE=true, as oauth2-proxy does); repeatable (env:
    /// comma-separated)
    #[arg(long, value_name = "PATH")]
    pub(crate) ca_file: Vec<String>,

    /// Overall deadline, e.g. 90s or 5m
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub(crate) timeout: Option<String>,

    /// Longest pause between attempts; each pause is 80-100% of it, at random. Refused
    /// connections are retried after about 0.1s
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub(crate) interval: Option<String>,

    /// Bound on one attempt, DNS to last body byte; clipped to the time left
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub(crate) attempt_timeout: Option<String>,

    /// Give up after N attempts (per issuer), or at the deadline, whichever comes first
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub(crate) max_attempts: Option<String>,

    /// Exit 1 instead of 0 when the issuer is not ready in time
    #[arg(long)]
    pub(crate) fail_closed: bool,

    /// One attempt, fail closed, and print a short summary of the document to stdout
    #[arg(long)]
    pub(crate) once: bool,

    /// File that receives the one-line outcome for `kubectl describe`; skipped if it cannot be
    /// opened. The default is used only if it exists
    #[arg(long, value_name = "PATH")]
    pub(crate) termination_log: Option<String>,

    /// Connect to CONNECT_HOST:CONNECT_PORT when the URL names HOST:PORT, keeping HOST for TLS
    /// (SNI, certificate check) and the Host header, as curl's --connect-to. An empty field
    /// matches any / keeps the original. Repeatable (env: comma-separated)
    #[arg(long, value_name = "HOST:PORT:CONNECT_HOST:CONNECT_PORT")]
    pub(crate) connect_to: Vec<String>,

    /// Send "Authorization: Bearer" with this file's content (re-read every attempt) to the
    /// discovery URL's origin only, e.g. a service-account token for the API server's issuer
    #[arg(long, value_name = "PATH")]
    pub(crate) token_file: Option<String>,

    /// Also fetch jwks_uri and require a key usable for the advertised signing algorithms
    #[arg(long)]
    pub(crate) check_jwks: bool,

    /// A --resource without protected resource metadata fails, rather than having its origin taken
    /// for its authorization server as MCP clients do (the 2025-03-26 legacy path)
    #[arg(long)]
    pub(crate) refuse_legacy_auth: bool,

    /// Fetch the keys from this URL instead of the document's jwks_uri, e.g. the API server's
    /// https://kubernetes.default.svc/openid/v1/jwks; implies --check-jwks, and --token-file is
    /// sent here too
    #[arg(long, value_name = "URL")]
    pub(crate) jwks_url: Option<String>,

    /// Fail, as SSRF-guarded clients (ToolHive) do, when a name the gate fetches from resolves
    /// to a loopback, private, link-local or CGNAT address
    #[arg(long)]
    pub(crate) refuse_private_addresses: bool,

    /// Consecutive passing attempts required, for providers that flap during a rolling restart
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub(crate) successes: Option<String>,

    /// Final summary format: text (log lines only) or json (one JSON object on stdout)
    #[arg(long, value_name = "text|json")]
    pub(crate) output: Option<String>,

    /// Log only the final line
    #[arg(short, long)]
    pub(crate) quiet: bool,

    /// Check the flags, environment variables and CA files, print the effective settings and
    /// exit (0 valid, 2 not) without touching the network
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// Each flag's environment variable, by clap argument id. This table is the single source: the
/// help text and the configuration both read it.
pub(crate) const ENV_VARS: &[(&str, &str)] = &[
    ("issuer", "WAIT_FOR_IDP_ISSUER"),
    ("resource", "WAIT_FOR_IDP_RESOURCE"),
    ("discovery_url", "WAIT_FOR_IDP_DISCOVERY_URL"),
    ("metadata", "WAIT_FOR_IDP_METADATA"),
    ("skip_issuer_check", "WAIT_FOR_IDP_SKIP_ISSUER_CHECK"),
    ("strict", "WAIT_FOR_IDP_STRICT"),
    ("ca_file", "WAIT_FOR_IDP_CA_FILE"),
    ("timeout", "WAIT_FOR_IDP_TIMEOUT"),
    ("interval", "WAIT_FOR_IDP_INTERVAL"),
    ("attempt_timeout", "WAIT_FOR_IDP_ATTEMPT_TIMEOUT"),
    ("max_attempts", "WAIT_FOR_IDP_MAX_ATTEMPTS"),
    ("fail_closed", "WAIT_FOR_IDP_FAIL_CLOSED"),
    ("termination_log", "WAIT_FOR_IDP_TERMINATION_LOG"),
    ("connect_to", "WAIT_FOR_IDP_CONNECT_TO"),
    ("token_file", "WAIT_FOR_IDP_TOKEN_FILE"),
    ("check_jwks", "WAIT_FOR_IDP_CHECK_JWKS"),
    ("refuse_legacy_auth", "WAIT_FOR_IDP_REFUSE_LEGACY_AUTH"),
    ("jwks_url", "WAIT_FOR_IDP_JWKS_URL"),
    ("refuse_private_addresses", "WAIT_FOR_IDP_REFUSE_PRIVATE_ADDRESSES"),
    ("successes", "WAIT_FOR_IDP_SUCCESSES"),
    ("output", "WAIT_FOR_IDP_OUTPUT"),
    ("quiet", "WAIT_FOR_IDP_QUIET"),
];

/// oauth2-proxy's variables, read when the flag and its `WAIT_FOR_IDP_*` variable are both
/// absent, so that one `envFrom` can configure the proxy and its gate.
pub(crate) const FALLBACK_ENV_VARS: &[(&str, &str)] = &[
    ("issuer", "OAUTH2_PROXY_OIDC_ISSUER_URL"),
    ("ca_file", "OAUTH2_PROXY_PROVIDER_CA_FILES"),
    ("skip_issuer_check", "OAUTH2_PROXY_INSECURE_OIDC_SKIP_ISSUER_VERIFICATION"),
];

/// The oauth2-proxy fallback variable of a clap argument id, if it has one.
pub(crate) fn fallback_env_var(id: &str) -> Option<&'static str> {
    FALLBACK_ENV_VARS.iter().find(|(arg, _)| *arg == id).map(|(_, env)| *env)
}

/// `WAIT_FOR_IDP_*` variables that no flag reads, each with the likely intended one. A typo in a
/// Helm value would otherwise be ignored without a word.
pub(crate) fn unknown_env_vars(names: impl Iterator<Item = String>) -> Vec<(String, Option<&'static str>)> {
    names
        .filter(|n| n.starts_with("WAIT_FOR_IDP_") && !ENV_VARS.iter().any(|(_, env)| env == n))
        .map(|n| {
            let closest = ENV_VARS
                .iter()
                .map(|(_, env)| (edit_distance(&n, env), *env))
                .min()
                .filter(|(d, _)| *d <= 3)
                .map(|(_, env)| env);
            (n, closest)
        })
        .collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The environment variable of a clap argument id.
pub(crate) fn env_var(id: &str) -> &'static str {
    ENV_VARS
        .iter()
        .find(|(arg, _)| *arg == id)
        .map(|(_, env)| *env)
        .unwrap_or_else(|| panic!("no environment variable registered for --{id}"))
}

/// The clap command, with each flag's help naming its default and environment variable.
pub(crate) fn command() -> clap::Command {
    let mut cmd = Cli::command();
    for (id, env) in ENV_VARS {
        cmd = cmd.mut_arg(*id, |arg| {
            let mut help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            if let Some(default) = default_shown(id) {
                help = format!("{help}; {default}");
            }
            match fallback_env_var(id) {
                Some(fallback) => arg.help(format!("{help} [env: {env}, else {fallback}]")),
                None => arg.help(format!("{help} [env: {env}]")),
            }
        });
    }
    cmd
}

/// Parses arguments (the first is the program name).
pub(crate) fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = command().try_get_matches_from(args)?;
    Cli::from_arg_matches(&matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_valued_or_boolean_flag_has_an_env_var_except_once() {
        let cmd = command();
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if matches!(id, "help" | "version" | "once" | "dry_run") {
                continue;
            }
            let env = env_var(id);
            let help = arg.get_help().unwrap().to_string();
            assert!(help.contains(env), "--{id} help does not name {env}");
        }
    }

    #[test]
    fn unknown_variables_are_named_with_a_suggestion() {
        let names = ["WAIT_FOR_IDP_TIMOUT", "WAIT_FOR_IDP_ISSUER", "HOME", "WAIT_FOR_IDP_COLOUR"];
        let unknown = unknown_env_vars(names.iter().map(|s| s.to_string()));
        assert_eq!(
            unknown,
            vec![
                ("WAIT_FOR_IDP_TIMOUT".to_string(), Some("WAIT_FOR_IDP_TIMEOUT")),
                ("WAIT_FOR_IDP_COLOUR".to_string(), None)
            ]
        );
    }

    #[test]
    fn repeatable_flags_collect() {
        let cli = parse_from(["w", "--issuer", "https://a", "--issuer", "https://b", "--ca-file", "x"]).unwrap();
        assert_eq!(cli.issuer, ["https://a", "https://b"]);
        assert_eq!(cli.ca_file, ["x"]);
    }
}
