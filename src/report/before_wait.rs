//! What is said before any waiting: a configuration error, the `--dry-run` settings, and the
//! notices logged before the first attempt.

use super::exit_code::ExitCode;
use crate::config::Config;
use crate::config::ConfigError;
use crate::config::Notice;
use crate::config::Output;
use crate::config::RunMode;
use crate::config::Source;
use crate::config::Target;
use crate::go_proxy::Route;
use crate::human::secs;
use crate::settings::{Choice, Id, SETTINGS};
use crate::url;
use std::fmt::Write as _;
use std::io::Write;

/// A configuration error: exit 2, with the message and where to look. A closed or full stderr
/// must not turn exit 2 into an abort, so write errors are ignored.
pub(crate) fn usage_error(e: &ConfigError) -> ExitCode {
    // After the log's lines already queued (the start line, when --serve cannot listen).
    let now = std::time::Instant::now();
    super::log_sink::drained(now + super::delivery::DELIVERY_BOUND, now + super::delivery::SCHEDULING_BOUND);
    let _ = writeln!(
        std::io::stderr(),
        "wait-for-idp: error: {e}\nRun 'wait-for-idp --help' for the flags and their environment variables."
    );
    ExitCode::Usage
}

/// `--dry-run`: the effective settings on stdout, exit 0.
pub(crate) fn dry_run(config: &Config, mode: RunMode, notices: &[Notice]) -> ExitCode {
    let _ = std::io::stdout().write_all(settings_summary(config, mode, notices).as_bytes());
    ExitCode::Success
}

/// What is worth saying before the first attempt: the first line (the version, what is waited
/// for, and where each setting that is not a default came from), the configuration's notices
/// (unknown variables among them), and a signal handler that could not be installed.
pub(crate) fn startup(config: &Config, notices: &[Notice], signals: Option<anyhow::Error>) {
    log::info!("{}", first_line(config));
    for notice in notices {
        match notice {
            Notice::Warning(w) => log::warn!("{w}"),
            Notice::Note(n) => log::info!("{n}"),
        }
    }
    if let Some(e) = signals {
        log::warn!("{e:#}");
    }
}

/// `wait-for-idp 0.1.0 (commit …) waiting for https://… up to 5m0s, failing open; set by
/// --issuer, --timeout, OAUTH2_PROXY_PROVIDER_CA_FILES (oauth2-proxy's)`: each setting that is
/// not a default, by the flag or the variable that set it. With `--once`: `trying https://…
/// once (one attempt, of at most 5.00s), failing closed`.
fn first_line(config: &Config) -> String {
    let targets: Vec<String> = config
        .targets
        .iter()
        .map(|t| match t {
            Target::Issuer { issuer, .. } => url::redact(issuer),
            Target::Resource { resource } => format!("resource {}", url::redact(resource)),
        })
        .collect();
    let sources: Vec<String> = config
        .sources
        .iter()
        .map(|(id, source)| match source {
            Source::Env(name) if id.setting().fallback == Some(*name) => format!("{name} (oauth2-proxy's)"),
            source => source.to_string(),
        })
        .collect();
    // `--once` (or `--max-attempts 1`) makes one attempt, bounded by the attempt timeout: "up
    // to 5m0s" would promise a wait that never happens.
    let timing = &config.timing;
    let each = if targets.len() > 1 { " each" } else { "" };
    let (verb, how) = match timing.max_attempts {
        Some(1) => (
            "trying",
            format!("once (one attempt{each}, of at most {})", secs(timing.attempt_timeout.min(timing.timeout))),
        ),
        _ => ("waiting for", format!("up to {}", secs(timing.timeout))),
    };
    format!(
        "wait-for-idp {} {verb} {} {how}, {}; set by {}{}",
        crate::settings::VERSION,
        targets.join(", "),
        if config.fail_closed { "failing closed" } else { "failing open" },
        if sources.is_empty() { "nothing: all defaults".to_string() } else { sources.join(", ") },
        http_proxy_only(config)
    )
}

/// Go sends https through `HTTPS_PROXY` only: one who set `HTTP_PROXY` alone for an https target
/// may expect a proxy that neither the client nor the gate uses.
fn http_proxy_only(config: &Config) -> String {
    let https = config.targets.iter().any(|t| t.name().starts_with("https://"));
    match config.network.proxies.http_only() {
        Some(var) if https => format!(
            "; {var} is set but applies to http URLs only: https goes direct, as in Go, unless HTTPS_PROXY is set"
        ),
        _ => String::new(),
    }
}

/// The effective settings, for `--dry-run`: what each target fetches first and by which route,
/// the rules, the trust, the outcome, every setting with where it came from, and the notices.
fn settings_summary(config: &Config, mode: RunMode, notices: &[Notice]) -> String {
    let mut out = String::from("configuration is valid\n");
    for t in &config.targets {
        target_lines(&mut out, t, config);
    }
    if let Some(jwks) = &config.checks.jwks_url {
        let _ = writeln!(out, "jwks            {} (instead of jwks_uri)", url::redact(jwks));
    }
    let r = &config.checks.rules;
    let _ = writeln!(
        out,
        "rules           {}{}{}",
        r.kind.word(),
        if r.strict { ", strict" } else { "" },
        if r.skip_issuer_check { ", issuer check skipped" } else { "" }
    );
    for h in &config.checks.header_files {
        let _ =
            writeln!(out, "header          {} from {} (to the discovery URL's origin only)", h.name, h.path.display());
    }
    if config.checks.refuse_private_addresses {
        out.push_str(
            "addresses       loopback, private, link-local and CGNAT ones refused, as SSRF-guarded clients do\n",
        );
    }
    let trust = &config.network.trust;
    if trust.mozilla {
        out.push_str("trust           Mozilla's roots\n");
    }
    for (source, path, n) in &trust.sources {
        let _ = writeln!(out, "trust           {source} {path}: {n} certificate(s)");
    }
    let _ = writeln!(
        out,
        "timing          timeout {}, interval {}, attempt timeout {}, max attempts {}",
        secs(config.timing.timeout),
        secs(config.timing.interval),
        secs(config.timing.attempt_timeout),
        config.timing.max_attempts.map_or("unlimited".to_string(), |n| n.to_string())
    );
    let _ = writeln!(
        out,
        "when not ready  {}",
        if config.fail_closed { "fail closed (exit 1)" } else { "fail open (exit 0)" }
    );
    if let Some(then) = &config.then {
        let _ = writeln!(
            out,
            "then            exec {} (its {} argument(s) not shown), when ready{}",
            then.name(),
            then.args.len(),
            if config.fail_closed { "; not run when not ready" } else { " or failing open" }
        );
    }
    out.push_str("settings\n");
    for s in SETTINGS {
        let origin = match config.sources.get(&s.id) {
            Some(source) => format!("from {source}"),
            None if s.id == Id::DryRun => "from --dry-run".to_string(),
            None => "default".to_string(),
        };
        let _ = writeln!(out, "  {:<28}{} ({origin})", s.id.flag(), shown(config, mode, s.id));
    }
    for notice in notices {
        let _ = match notice {
            Notice::Warning(w) => writeln!(out, "warning         {w}"),
            Notice::Note(n) => writeln!(out, "note            {n}"),
        };
    }
    out
}

/// A target's first URLs, in the order tried, and the route to the first.
fn target_lines(out: &mut String, t: &Target, config: &Config) {
    let urls = config.first_urls(t);
    match t {
        Target::Issuer { issuer, .. } => {
            let _ = writeln!(out, "issuer          {}", url::redact(issuer));
        }
        Target::Resource { resource } => {
            let _ = writeln!(out, "resource        {}", url::redact(resource));
            out.push_str(
                "  endpoint      POST server/discover (initialize if refused); its challenge's metadata next\n",
            );
        }
    }
    for u in urls.iter().filter(|u| !matches!(t, Target::Resource { resource } if resource == *u)) {
        let _ = writeln!(out, "  metadata      {}", url::redact(u));
    }
    if let Some(parts) = urls.first().and_then(|u| url::split(u).ok()) {
        let _ = writeln!(out, "  connect       {}", route(config, &parts));
    }
    if matches!(t, Target::Resource { .. }) {
        out.push_str("  then          the first authorization server it lists, by auto discovery\n");
    }
}

/// How the gate reaches a URL: through a proxy or directly, and to which address when a
/// `--connect-to` rule redirects the connection (TLS and the Host header keep the URL's name).
/// Through a proxy, the proxy resolves the name and `--connect-to` has no say, as in Go.
fn route(config: &Config, parts: &url::Parts<'_>) -> String {
    let port = parts.port.unwrap_or(url::default_port(parts.scheme));
    let via = match config.network.proxies.route(parts.scheme, parts.bare_host(), port) {
        Ok(route @ Route::Direct(_)) => route.to_string(),
        Ok(route) => return route.to_string(),
        Err(e) => return e.to_string(),
    };
    // The host as the URL writes it (IPv6 in brackets), as the resolver matches it.
    let rule = config.network.connect_to.iter().find_map(|r| r.redirect(parts.host, port).map(|to| (r, to)));
    match rule {
        Some((rule, (host, port))) => {
            format!("{via} to {host}:{port} (--connect-to {rule}; TLS and Host keep the URL's name)")
        }
        None => via,
    }
}

/// A setting's effective value, as `--dry-run` shows it; never a secret (the token file's path,
/// not its content).
fn shown(config: &Config, mode: RunMode, id: Id) -> String {
    let on = |b: bool| if b { "true" } else { "false" }.to_string();
    let list = |items: Vec<String>, none: &str| if items.is_empty() { none.to_string() } else { items.join(", ") };
    let names = |issuers: bool| {
        let targets = config.targets.iter().filter(|t| matches!(t, Target::Issuer { .. }) == issuers);
        list(targets.map(|t| url::redact(t.name())).collect(), "none")
    };
    let checks = &config.checks;
    let timing = &config.timing;
    match id {
        Id::Issuer => names(true),
        Id::Resource => names(false),
        Id::DiscoveryUrl => match config.targets.first() {
            Some(Target::Issuer { discovery_url: Some(u), .. }) => url::redact(u),
            _ => "derived from the issuer".to_string(),
        },
        Id::Metadata => checks.rules.kind.word().to_string(),
        Id::Client => checks.rules.client.word().to_string(),
        Id::SkipIssuerCheck => on(checks.rules.skip_issuer_check),
        Id::Strict => on(checks.rules.strict),
        Id::CheckJwks => on(checks.check_jwks),
        Id::JwksUrl => checks.jwks_url.as_deref().map_or("the document's jwks_uri".to_string(), url::redact),
        Id::RefuseLegacyAuth => on(checks.refuse_legacy_auth),
        Id::Timeout => secs(timing.timeout),
        Id::Interval => secs(timing.interval),
        Id::AttemptTimeout => secs(timing.attempt_timeout),
        Id::MaxAttempts => timing.max_attempts.map_or("unlimited".to_string(), |n| n.to_string()),
        Id::Successes => timing.successes.to_string(),
        Id::FailClosed => on(config.fail_closed),
        Id::Once => on(mode.once),
        Id::Serve => config.serve.map_or("off".to_string(), |s| s.addr.to_string()),
        Id::WatchInterval => config.serve.map_or("off (no --serve)".to_string(), |s| secs(s.interval)),
        Id::WatchFailures => config.serve.map_or("off (no --serve)".to_string(), |s| s.failures.to_string()),
        Id::CaFile => {
            let ca_file = Id::CaFile.setting();
            let files = config.network.trust.sources.iter().filter(|(source, _, _)| match source {
                Source::Flag(id) => *id == Id::CaFile,
                Source::Env(name) => Some(*name) == ca_file.env || Some(*name) == ca_file.fallback,
                Source::Default => false,
            });
            list(files.map(|(_, path, _)| path.clone()).collect(), "none")
        }
        Id::ConnectTo => list(config.network.connect_to.iter().map(ToString::to_string).collect(), "none"),
        Id::TokenFile => checks.token_file.as_ref().map_or("none".to_string(), |p| p.display().to_string()),
        Id::RefusePrivateAddresses => on(checks.refuse_private_addresses),
        Id::HeaderFile => {
            list(checks.header_files.iter().map(|h| format!("{}={}", h.name, h.path.display())).collect(), "none")
        }
        Id::Output => config.output.word().to_string(),
        Id::TerminationLog => {
            let log = &config.termination_log;
            let only = if log.create { "" } else { " (written only if it exists)" };
            format!("{}{only}", log.path.display())
        }
        Id::Quiet => on(mode.quiet),
        Id::DryRun => on(mode.dry_run),
        Id::LogLevel | Id::Verbose => mode.log_level.word().to_string(),
        Id::LogFormat => if mode.log_json { Output::Json } else { Output::Text }.word().to_string(),
    }
}
