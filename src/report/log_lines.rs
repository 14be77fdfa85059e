//! The log lines while waiting: logging set-up, one line per attempt, and the throttle that
//! keeps fast polling of a refused port from flooding the log.

use crate::config::Config;
use crate::config::Target;
use crate::human::secs;
use crate::probe::Failure;
use crate::probe::Ready;
use crate::token;
use crate::url;
use crate::wait::{AttemptReport, Next, RETRY_AFTER_CAP, RetryAfter, Tally, Verdict};
use log::Level;
use std::io::Write;
use std::time::{Duration, Instant};

/// Log target of the final line: `--quiet` keeps only this target.
pub(crate) const OUTCOME: &str = "outcome";

/// Sets up logging to stderr: `info` by default, `RUST_LOG` when set, only the final line with
/// `--quiet`. Lines carry the time since start, which is what matters for a gate.
pub(crate) fn init_logging(quiet: bool, rust_log: Option<String>) {
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
        let ms = start.elapsed().as_millis();
        let text = record.args().to_string();
        writeln!(buf, "wait-for-idp +{}.{:03}s {:<5} {}", ms / 1000, ms % 1000, record.level(), token::scrub(&text))
    });
    let _ = builder.try_init();
}

/// Demotes repeats of a cheap failure to debug level so that fast polling of a refused port
/// logs about once per interval, not ten times a second.
pub(crate) struct LineThrottle {
    every: Duration,
    last: Option<(String, Instant)>,
}

impl LineThrottle {
    pub(crate) fn new(every: Duration) -> LineThrottle {
        LineThrottle { every, last: None }
    }

    fn level_for(&mut self, failure: Option<&Failure>, now: Instant) -> Level {
        let Some(f) = failure else {
            self.last = None;
            return Level::Info;
        };
        let key = format!("{}: {}", f.class, f.detail);
        if f.cheap
            && let Some((last_key, at)) = &self.last
            && *last_key == key
            && now.duration_since(*at) < self.every
        {
            return Level::Debug;
        }
        self.last = Some((key, now));
        Level::Info
    }
}

/// Logs one attempt.
pub(crate) fn log_attempt(label: &str, report: &AttemptReport<'_>, tally: &Tally, throttle: &mut LineThrottle) {
    let level = throttle.level_for(report.outcome.as_ref().err(), Instant::now());
    let next = match report.next {
        Next::Pause { pause, retry_after: Some(RetryAfter { asked, honoured }) } => {
            let why = if honoured {
                "honoured".to_string()
            } else if pause >= RETRY_AFTER_CAP {
                format!("capped at {}", secs(RETRY_AFTER_CAP))
            } else {
                "not honoured: the deadline comes first, and the last attempt needs time".to_string()
            };
            format!("Retry-After {} {why}; next in {}, {} left", secs(asked), secs(pause), secs(report.left))
        }
        Next::Pause { pause, retry_after: None } => format!("next in {}, {} left", secs(pause), secs(report.left)),
        Next::Stop(Verdict::Ready) => String::new(),
        Next::Stop(Verdict::AttemptsExhausted | Verdict::Conclusive) => "last attempt".into(),
        Next::Stop(Verdict::DeadlineReached) => "no time left for another attempt".into(),
    };
    match report.outcome {
        Ok(ready) => log::log!(
            level,
            "{label}attempt {}: passed: {}{}",
            report.number,
            passed(ready),
            match report.next {
                Next::Pause { .. } => format!(" ({} consecutive; {next})", tally.consecutive_successes),
                Next::Stop(_) => String::new(),
            }
        ),
        Err(f) => log::log!(level, "{label}attempt {}: {}: {} ({next})", report.number, f.class, f.detail),
    }
}

/// What passed: the issuer and where it was served, or the resource and each of its servers.
fn passed(ready: &Ready) -> String {
    let servers: Vec<String> = ready
        .servers
        .iter()
        .map(|s| {
            let registration = s.document.registration.map(|r| format!(" (registration: {})", r.as_str()));
            format!(
                "issuer {:?} served by {}{}",
                s.document.issuer,
                url::redact(&s.url),
                registration.unwrap_or_default()
            )
        })
        .collect();
    match &ready.resource_metadata {
        Some(at) => format!("resource metadata at {}; authorization server {}", url::redact(at), servers.join(", ")),
        None if servers.is_empty() => "the resource needs no authorization".to_string(),
        None => servers.join(", "),
    }
}

/// The prefix naming a target when several are waited for.
pub(crate) fn label(config: &Config, target: &Target) -> String {
    if config.targets.len() > 1 { format!("[{}] ", url::redact(target.name())) } else { String::new() }
}

/// `connect=40 http-status=3`
pub(crate) fn failure_counts(tally: &Tally) -> String {
    tally.failures.iter().map(|(class, n)| format!("{class}={n}")).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::FailureClass;

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
