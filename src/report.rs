//! Everything the tool says: one log line per attempt, the summary, the final line, the
//! termination message and the `--once` summary. Lines are written for people reading
//! `kubectl logs` on a bad morning: what failed, why, and how long the gate will still wait.

use crate::config::Config;
use crate::probe::{Failure, Ready};
use crate::url;
use crate::wait::{AttemptReport, Tally, Verdict};
use log::Level;
use std::io::Write;
use std::time::{Duration, Instant};

/// Log target of the final line: `--quiet` keeps only this target.
pub const OUTCOME: &str = "outcome";

/// A duration for people: `0.08s`, `12.3s`, `4m58s`.
pub fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.2}s")
    } else if s < 60.0 {
        format!("{s:.1}s")
    } else {
        let total = d.as_secs();
        let (h, m, s) = (total / 3600, total % 3600 / 60, total % 60);
        if h > 0 { format!("{h}h{m}m{s}s") } else { format!("{m}m{s}s") }
    }
}

/// Sets up logging to stderr: `info` by default, `RUST_LOG` when set, only the final line with
/// `--quiet`. Lines carry the time since start, which is what matters for a gate.
pub fn init_logging(quiet: bool, rust_log: Option<String>) {
    let start = Instant::now();
    let mut builder = env_logger::Builder::new();
    builder.target(env_logger::Target::Stderr);
    match (quiet, rust_log) {
        (true, _) => {
            builder.filter_level(log::LevelFilter::Off).filter(Some(OUTCOME), log::LevelFilter::Info);
        }
        (false, Some(spec)) if !spec.trim().is_empty() => {
            builder.parse_filters(&spec);
        }
        _ => {
            builder.filter_level(log::LevelFilter::Info);
        }
    }
    builder.format(move |buf, record| {
        writeln!(buf, "wait-for-idp +{:.3}s {:<5} {}", start.elapsed().as_secs_f64(), record.level(), record.args())
    });
    let _ = builder.try_init();
}

/// Demotes repeats of a cheap failure to debug level so that fast polling of a refused port
/// logs about once per interval, not ten times a second.
pub struct LineThrottle {
    every: Duration,
    last: Option<(String, Instant)>,
}

impl LineThrottle {
    pub fn new(every: Duration) -> LineThrottle {
        LineThrottle { every, last: None }
    }

    fn level_for(&mut self, failure: Option<&Failure>, now: Instant) -> Level {
        let Some(f) = failure else {
            self.last = None;
            return Level::Info;
        };
        let key = format!("{}: {}", f.class, f.detail);
        if f.cheap {
            if let Some((last_key, at)) = &self.last {
                if *last_key == key && now.duration_since(*at) < self.every {
                    return Level::Debug;
                }
            }
        }
        self.last = Some((key, now));
        Level::Info
    }
}

/// Logs one attempt.
pub fn log_attempt(label: &str, report: &AttemptReport<'_>, tally: &Tally, throttle: &mut LineThrottle) {
    let level = throttle.level_for(report.outcome.as_ref().err(), Instant::now());
    let next = match report.next_pause {
        Some(p) => format!("next in {}, {} left", secs(p), secs(report.left)),
        None => format!("{} left", secs(report.left)),
    };
    match report.outcome {
        Ok(ready) => log::log!(
            level,
            "{label}attempt {}: passed: issuer {:?} served by {}{}",
            report.number,
            ready.document.issuer,
            url::redact(&ready.url),
            if report.next_pause.is_some() {
                format!(" ({} consecutive; {next})", tally.consecutive_successes)
            } else {
                String::new()
            }
        ),
        Err(f) => log::log!(level, "{label}attempt {}: {}: {} ({next})", report.number, f.class, f.detail),
    }
}

/// The prefix naming an issuer when several are waited for.
pub fn label(config: &Config, issuer: &str) -> String {
    if config.targets.len() > 1 { format!("[{}] ", url::redact(issuer)) } else { String::new() }
}

/// `connect=40 http-status=3`
pub fn failure_counts(tally: &Tally) -> String {
    tally.failures.iter().map(|(class, n)| format!("{class}={n}")).collect::<Vec<_>>().join(" ")
}

/// Why an issuer is not ready, in one phrase.
pub fn not_ready_reason(verdict: Verdict, tally: &Tally, config: &Config) -> String {
    match verdict {
        Verdict::Ready => "ready".into(),
        Verdict::DeadlineReached => {
            format!("timeout of {} used up", secs(config.timeout))
        }
        Verdict::AttemptsExhausted => format!("all {} attempt(s) used", tally.attempts),
    }
}

/// The effective settings, for `--dry-run`.
pub fn settings_summary(config: &Config, proxies: &crate::proxy::ProxySettings) -> String {
    let mut out = String::from("configuration is valid\n");
    for t in &config.targets {
        out.push_str(&format!("issuer          {}\n", url::redact(&t.issuer)));
        out.push_str(&format!("  metadata      {}\n", url::redact(&t.discovery_url)));
        if let Ok(parts) = crate::url::split(&t.discovery_url) {
            let via = proxies.for_url(&parts).map_or("direct".to_string(), |p| format!("proxy {}", p.display));
            out.push_str(&format!("  connect       {via}\n"));
        }
    }
    let r = &config.rules;
    out.push_str(&format!(
        "rules           {}{}{}\n",
        r.kind.as_str(),
        if r.strict { ", strict" } else { "" },
        if r.skip_issuer_check { ", issuer check skipped" } else { "" }
    ));
    out.push_str(&format!("extra CA certs  {}\n", config.extra_roots.len()));
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
    for w in &config.warnings {
        out.push_str(&format!("warning         {w}\n"));
    }
    out
}

/// One issuer's result, for the JSON summary.
pub struct IssuerResult<'a> {
    pub target: &'a crate::config::Target,
    /// `None`: still waiting when the process ended (deadline or signal).
    pub verdict: Option<Verdict>,
    pub tally: &'a Tally,
}

/// The `--output json` summary: one object, documented in the README.
pub fn json_summary(outcome: &str, exit_code: i32, elapsed: Duration, issuers: &[IssuerResult<'_>]) -> String {
    use serde_json::{Value, json};
    let issuers: Vec<Value> = issuers
        .iter()
        .map(|r| {
            let ready = r.verdict == Some(Verdict::Ready);
            let endpoints = r.tally.last_ready.as_ref().filter(|_| ready).map(|rd| {
                let d = &rd.document;
                json!({
                    "authorization_endpoint": d.authorization_endpoint,
                    "token_endpoint": d.token_endpoint,
                    "jwks_uri": d.jwks_uri,
                    "userinfo_endpoint": d.userinfo_endpoint,
                })
            });
            let failures: serde_json::Map<String, Value> =
                r.tally.failures.iter().map(|(c, n)| (c.as_str().to_string(), json!(n))).collect();
            json!({
                "issuer": url::redact(&r.target.issuer),
                "discovery_url": url::redact(&r.target.discovery_url),
                "ready": ready,
                "verdict": match r.verdict {
                    Some(Verdict::Ready) => "ready",
                    Some(Verdict::DeadlineReached) | None => "deadline-reached",
                    Some(Verdict::AttemptsExhausted) => "attempts-exhausted",
                },
                "attempts": r.tally.attempts,
                "failures": failures,
                "last_failure": r.tally.last_failure.as_ref().map(|f| json!({"class": f.class.as_str(), "message": f.detail})),
                "endpoints": endpoints,
                "jwks_keys": r.tally.last_ready.as_ref().filter(|_| ready).and_then(|rd| rd.jwks_keys),
                "warnings": r.tally.last_ready.as_ref().filter(|_| ready).map_or(Vec::new(), |rd| rd.document.warnings.clone()),
            })
        })
        .collect();
    json!({
        "outcome": outcome,
        "exit_code": exit_code,
        "attempts": issuers.iter().map(|i| i["attempts"].as_u64().unwrap_or(0)).sum::<u64>(),
        "elapsed_ms": elapsed.as_millis() as u64,
        "issuers": issuers,
    })
    .to_string()
}

/// The `--once` summary for stdout.
pub fn once_summary(ready: &Ready) -> String {
    let d = &ready.document;
    let mut out = String::new();
    let mut row = |k: &str, v: Option<&str>| {
        if let Some(v) = v {
            out.push_str(&format!("{k:<24}{v}\n"));
        }
    };
    row("issuer", Some(&d.issuer));
    let url = url::redact(&ready.url);
    row("metadata", Some(&url));
    row("authorization_endpoint", d.authorization_endpoint.as_deref());
    row("token_endpoint", d.token_endpoint.as_deref());
    row("userinfo_endpoint", d.userinfo_endpoint.as_deref());
    row("jwks_uri", d.jwks_uri.as_deref());
    let algs = d.id_token_signing_alg_values_supported.join(", ");
    row("signing algorithms", (!algs.is_empty()).then_some(algs.as_str()));
    for w in &d.warnings {
        row("warning", Some(w));
    }
    out
}

/// Writes the final line where Kubernetes shows it in `kubectl describe pod`. A missing default
/// file (outside a pod) or an unwritable one is skipped without a word: it is a courtesy, not a
/// duty.
pub fn write_termination_log(config: &Config, line: &str) {
    let Some(t) = &config.termination_log else { return };
    let file = std::fs::OpenOptions::new().write(true).truncate(true).create(t.create).open(&t.path);
    if let Ok(mut f) = file {
        let _ = writeln!(f, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::FailureClass;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(secs(Duration::from_millis(80)), "0.08s");
        assert_eq!(secs(Duration::from_millis(12_340)), "12.3s");
        assert_eq!(secs(Duration::from_secs(298)), "4m58s");
        assert_eq!(secs(Duration::from_secs(3_700)), "1h1m40s");
    }

    #[test]
    fn repeated_refusals_are_demoted_within_the_interval() {
        let mut t = LineThrottle::new(Duration::from_secs(1));
        let refused = Failure { cheap: true, ..Failure::new(FailureClass::Connect, "refused") };
        let start = Instant::now();
        assert_eq!(t.level_for(Some(&refused), start), Level::Info);
        assert_eq!(t.level_for(Some(&refused), start + Duration::from_millis(100)), Level::Debug);
        assert_eq!(t.level_for(Some(&refused), start + Duration::from_millis(1_100)), Level::Info);
        let status = Failure::new(FailureClass::HttpStatus, "503");
        assert_eq!(t.level_for(Some(&status), start + Duration::from_millis(1_200)), Level::Info);
        assert_eq!(t.level_for(Some(&status), start + Duration::from_millis(1_300)), Level::Info);
    }
}
