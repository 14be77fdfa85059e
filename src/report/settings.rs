//! What is said before any waiting: a configuration error, the `--dry-run` settings, and the
//! notices logged before the first attempt.

use super::exit_code::ExitCode;
use crate::config::Config;
use crate::config::ConfigError;
use crate::config::Notice;
use crate::config::Target;
use crate::discovery;
use crate::human::secs;
use crate::proxy::ProxySettings;
use crate::resource;
use crate::url;
use std::io::Write;

/// A configuration error: exit 2, with the message and where to look. A closed or full stderr
/// must not turn exit 2 into an abort, so write errors are ignored.
pub(crate) fn usage_error(e: &ConfigError) -> ExitCode {
    let _ = writeln!(
        std::io::stderr(),
        "wait-for-idp: error: {e}\nRun 'wait-for-idp --help' for the flags and their environment variables."
    );
    ExitCode::Usage
}

/// `--dry-run`: the effective settings on stdout, exit 0.
pub(crate) fn dry_run(config: &Config, proxies: &ProxySettings, notices: &[Notice]) -> ExitCode {
    let _ = std::io::stdout().write_all(settings_summary(config, proxies, notices).as_bytes());
    ExitCode::Success
}

/// What is worth saying before the first attempt: the configuration's notices, variables that
/// no flag reads, and a signal handler that could not be installed.
pub(crate) fn startup(
    notices: &[Notice],
    unknown: Vec<(String, Option<&'static str>)>,
    signals: Option<anyhow::Error>,
) {
    for (name, suggestion) in unknown {
        log::warn!("{}", ConfigError::UnknownVariable { name, suggestion });
    }
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

/// The effective settings, for `--dry-run`.
fn settings_summary(config: &Config, proxies: &ProxySettings, notices: &[Notice]) -> String {
    let mut out = String::from("configuration is valid\n");
    for t in &config.targets {
        let urls = first_urls(t, config);
        match t {
            Target::Issuer { issuer, .. } => out.push_str(&format!("issuer          {}\n", url::redact(issuer))),
            Target::Resource { resource } => {
                out.push_str(&format!("resource        {}\n", url::redact(resource)));
                out.push_str("  challenge     the resource's own 401 first; its resource_metadata, if any, next\n");
            }
        }
        for u in urls.iter().filter(|u| !matches!(t, Target::Resource { resource } if resource == *u)) {
            out.push_str(&format!("  metadata      {}\n", url::redact(u)));
        }
        if let Some(parts) = urls.first().and_then(|u| url::split(u).ok()) {
            let via = proxies.for_url(&parts).map_or("direct".to_string(), |p| format!("proxy {}", p.display));
            out.push_str(&format!("  connect       {via}\n"));
        }
        if matches!(t, Target::Resource { .. }) {
            out.push_str("  then          each authorization server it lists, by auto discovery\n");
        }
    }
    if let Some(jwks) = &config.jwks_url {
        out.push_str(&format!("jwks            {} (instead of jwks_uri)\n", url::redact(jwks)));
    }
    let r = &config.rules;
    out.push_str(&format!(
        "rules           {}{}{}\n",
        r.kind.as_str(),
        if r.strict { ", strict" } else { "" },
        if r.skip_issuer_check { ", issuer check skipped" } else { "" }
    ));
    if config.refuse_private_addresses {
        out.push_str(
            "addresses       loopback, private, link-local and CGNAT ones refused, as SSRF-guarded clients do\n",
        );
    }
    let trust = &config.trust;
    if trust.mozilla {
        out.push_str("trust           Mozilla's roots\n");
    }
    for (source, path, n) in &trust.sources {
        out.push_str(&format!("trust           {source} {path}: {n} certificate(s)\n"));
    }
    out.push_str(&format!(
        "timing          timeout {}, interval {}, attempt timeout {}, max attempts {}\n",
        secs(config.timeout),
        secs(config.interval),
        secs(config.attempt_timeout),
        config.max_attempts.map_or("unlimited".to_string(), |n| n.to_string())
    ));
    out.push_str(&format!(
        "when not ready  {}\n",
        if config.fail_closed { "fail closed (exit 1)" } else { "fail open (exit 0)" }
    ));
    for notice in notices {
        match notice {
            Notice::Warning(w) => out.push_str(&format!("warning         {w}\n")),
            Notice::Note(n) => out.push_str(&format!("note            {n}\n")),
        }
    }
    out
}

/// Where a target's discovery starts, in the order tried: the issuer's candidate metadata URLs,
/// or the resource's metadata locations (its own challenge comes after them).
pub(super) fn first_urls(target: &Target, config: &Config) -> Vec<String> {
    match target {
        Target::Issuer { issuer, discovery_url } => {
            discovery::candidates(issuer, config.rules.kind, discovery_url.as_deref())
                .into_iter()
                .map(|c| c.url)
                .collect()
        }
        // The resource first: its challenge may name the metadata (then asked before the rest).
        Target::Resource { resource } => {
            std::iter::once(resource.clone()).chain(resource::metadata_urls(resource)).collect()
        }
    }
}
