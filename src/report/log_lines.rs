//! The log lines while waiting: logging set-up, one line per attempt, and the throttle that
//! keeps the same failure, over and over, from flooding the log.

use super::failure_text;
use super::log_sink::Sink;
use crate::config::RunMode;
use crate::human::secs;
use crate::probe::Failure;
use crate::probe::Ready;
use crate::screen_text;
use crate::token;
use crate::url;
use crate::wait::{AttemptReport, Next, RETRY_AFTER_CAP, RetryAfter, Tally, Verdict};
use log::{Level, LevelFilter};
use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

/// Log target of the final line: `--quiet` keeps only this target.
pub(crate) const OUTCOME: &str = "outcome";

/// Sets up logging to stderr. The gate's own lines at `--log-level` (raised by `-v`), the
/// libraries' at warn only, and the final line always; only the final line with `--quiet`;
/// `RUST_LOG`, when set, is env_logger's filter as written, for those who want the libraries'
/// internals, except that no library's trace lines pass ([`Capped`]). Text lines carry the time
/// since `start`, the process's, which is what matters for a gate (the same origin as the final
/// line's `in 1.67s` and the JSON's `elapsed_ms`); JSON lines the time of day as well, for a log
/// pipeline.
pub(crate) fn init_logging(mode: RunMode, rust_log: Option<String>, start: Instant) {
    let mut builder = env_logger::Builder::new();
    let json = mode.log_json;
    let say_dropped = move |n: u64| {
        let text = format!("{n} log lines dropped here: stderr took none for a while");
        render(json, start, Level::Warn, &text)
    };
    builder.target(env_logger::Target::Pipe(Box::new(Sink::start(Box::new(say_dropped)))));
    match (mode.quiet, rust_log) {
        (true, _) => {
            builder.filter_level(LevelFilter::Off).filter(Some(OUTCOME), LevelFilter::Info);
        }
        (false, Some(spec)) if !spec.trim().is_empty() => {
            builder.parse_filters(&spec);
        }
        _ => {
            builder
                .filter_level(LevelFilter::Warn)
                .filter(Some(module_path!().split("::").next().unwrap_or_default()), mode.log_level)
                .filter(Some(OUTCOME), mode.log_level.max(LevelFilter::Info));
        }
    }
    builder.format(move |buf, record| {
        buf.write_all(render(json, start, record.level(), &record.args().to_string()).as_bytes())
    });
    let logger = builder.build();
    let max = logger.filter();
    if log::set_boxed_logger(Box::new(Capped(logger))).is_ok() {
        log::set_max_level(max);
    }
}

/// One log line, newline included: scrubbed whole, then escaped and cut (a cut first could leave
/// a part of a secret), as text with the time since `start`, or as JSON with the time of day too.
fn render(json: bool, start: Instant, level: Level, text: &str) -> String {
    let ms = start.elapsed().as_millis();
    let text = token::scrub(text);
    let text = screen_text::escape(&text, false);
    let text = screen_text::bound(&text, screen_text::LINE_MAX);
    if !json {
        return format!("wait-for-idp +{}.{:03}s {level:<5} {text}\n", ms / 1000, ms % 1000);
    }
    // The members in the order they always had (a map's: sorted by name).
    #[derive(serde::Serialize)]
    struct Line<'a> {
        elapsed_ms: u128,
        level: String,
        message: &'a str,
        time: String,
    }
    let level = level.as_str().to_ascii_lowercase();
    let line = Line { elapsed_ms: ms, level, message: &text, time: rfc3339(SystemTime::now()) };
    serde_json::to_string(&line).unwrap_or_default() + "\n"
}

/// The logger, with every library's trace lines held back whatever `RUST_LOG` asks: at trace,
/// ureq prints a request's path and query (a `client_secret`, a signature) and a redirect's
/// `Location` (an authorization `code`) in full, and rustls the handshake, in text the gate cannot
/// tell apart from the rest to redact. At debug ureq replaces those with `******` itself: it asks
/// the logger whether trace is on, which is why the cap is in [`log::Log::enabled`].
struct Capped(env_logger::Logger);

impl Capped {
    fn passes(&self, metadata: &log::Metadata<'_>) -> bool {
        let own = metadata.target().starts_with(env!("CARGO_CRATE_NAME")) || metadata.target() == OUTCOME;
        (own || metadata.level() < Level::Trace) && log::Log::enabled(&self.0, metadata)
    }
}

impl log::Log for Capped {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        self.passes(metadata)
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.passes(record.metadata()) {
            log::Log::log(&self.0, record);
        }
    }

    fn flush(&self) {
        log::Log::flush(&self.0);
    }
}

/// `2026-12-01T06:25:02.123Z`: RFC 3339 in UTC, to the millisecond, as humantime (a dependency
/// already) writes it. A clock before 1970 gives the epoch, and one past the year 9999 its last
/// second: humantime cannot write either (it panics on the one, fails on the other).
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let last = SystemTime::UNIX_EPOCH + Duration::from_secs(253_402_300_799);
    humantime::format_rfc3339_millis(t.clamp(SystemTime::UNIX_EPOCH, last)).to_string()
}

/// How long the same failure may go unmentioned at info level, however it repeats.
pub(crate) const REPEAT_SAID_EVERY: Duration = Duration::from_secs(30);

/// Collapses repeats of the same failure: the first is said in full, and each repeat as `again
/// ×N` (N attempts in a row), at info only for the 2nd, 4th, 8th… or once
/// [`REPEAT_SAID_EVERY`] has passed since the last line about it, and at debug otherwise. A
/// refused connection (retried ten times a second) is said at most once per interval too. A
/// provider answering 503 for the default five minutes logs about 15 lines, not 300.
pub(crate) struct LineThrottle {
    every: Duration,
    last: Option<Repeat>,
}

/// The failure last said in full, how many attempts in a row have failed with it, and when a
/// line about it was last at info.
struct Repeat {
    line: String,
    times: u32,
    said: Instant,
}

impl LineThrottle {
    pub(crate) fn new(every: Duration) -> LineThrottle {
        LineThrottle { every, last: None }
    }

    /// The attempt line's level, and `Some(n)` when it repeats the last failure, for the `n`th
    /// time in a row.
    fn level_for(&mut self, failure: Option<(&Failure, &str)>, now: Instant) -> (Level, Option<u32>) {
        let Some((f, line)) = failure else {
            self.last = None;
            return (Level::Info, None);
        };
        match &mut self.last {
            Some(last) if last.line == line => {
                last.times += 1;
                let since = now.duration_since(last.said);
                let due = last.times.is_power_of_two() || since >= REPEAT_SAID_EVERY;
                if due && (!f.cheap || since >= self.every) {
                    last.said = now;
                    return (Level::Info, Some(last.times));
                }
                (Level::Debug, Some(last.times))
            }
            _ => {
                self.last = Some(Repeat { line: line.to_string(), times: 1, said: now });
                (Level::Info, None)
            }
        }
    }
}

/// Logs one attempt.
/// The failure of the attempt that ends a target's wait is the final line's to say (with its
/// text, and in the termination message): its own line is at debug level, so that a failed
/// `--once` says its failure once.
pub(crate) fn log_attempt(label: &str, report: &AttemptReport<'_>, tally: &Tally, throttle: &mut LineThrottle) {
    let failed = report.outcome.as_ref().err().map(|f| (f, failure_text::line(f)));
    let (mut level, again) = throttle.level_for(failed.as_ref().map(|(f, line)| (*f, line.as_str())), Instant::now());
    if report.outcome.is_err() && matches!(report.next, Next::Stop(_)) {
        level = Level::Debug;
    }
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
    match (report.outcome, failed, again) {
        (Ok(ready), ..) => log::log!(
            level,
            "{label}attempt {}: passed: {}{}",
            report.number,
            passed(ready),
            match report.next {
                Next::Pause { .. } => format!(" ({} consecutive; {next})", tally.consecutive_successes),
                Next::Stop(_) => String::new(),
            }
        ),
        (Err(f), _, Some(n)) => log::log!(level, "{label}attempt {}: {} again ×{n} ({next})", report.number, f.class),
        (Err(_), failed, None) => {
            let line = failed.map(|(_, line)| line).unwrap_or_default();
            log::log!(level, "{label}attempt {}: {line} ({next})", report.number);
        }
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

/// `connect=40 http-status=3`
pub(crate) fn failure_counts(tally: &Tally) -> String {
    tally.failures.iter().map(|(class, n)| format!("{class}={n}")).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::FailureClass;

    #[test]
    fn timestamps_are_rfc_3339_in_utc() {
        let at = |secs: u64, ms: u64| rfc3339(SystemTime::UNIX_EPOCH + Duration::from_millis(secs * 1000 + ms));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_798_784_702, 123), "2027-01-01T06:25:02.123Z");
        assert_eq!(at(4_107_542_399, 999), "2100-02-28T23:59:59.999Z");
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH - Duration::from_secs(1)), "1970-01-01T00:00:00.000Z");
        let far = SystemTime::UNIX_EPOCH + Duration::from_secs(300_000_000_000);
        assert_eq!(rfc3339(far), "9999-12-31T23:59:59.000Z");
        let date = httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_570_302));
        assert_eq!(
            (date.as_str(), at(1_764_570_302, 0).as_str()),
            ("Mon, 01 Dec 2025 06:25:02 GMT", "2025-12-01T06:25:02.000Z")
        );
    }

    fn said(t: &mut LineThrottle, f: &Failure, at: Instant) -> (Level, Option<u32>) {
        t.level_for(Some((f, &failure_text::line(f))), at)
    }

    #[test]
    fn repeated_refusals_are_demoted_within_the_interval() {
        let mut t = LineThrottle::new(Duration::from_secs(1));
        let refused = Failure::new(FailureClass::Connect, "refused").with(|f| f.cheap = true);
        let start = Instant::now();
        assert_eq!(said(&mut t, &refused, start), (Level::Info, None));
        assert_eq!(said(&mut t, &refused, start + Duration::from_millis(100)), (Level::Debug, Some(2)));
        assert_eq!(said(&mut t, &refused, start + Duration::from_millis(1_100)), (Level::Debug, Some(3)));
        assert_eq!(said(&mut t, &refused, start + Duration::from_millis(1_200)), (Level::Info, Some(4)));
        let status = Failure::new(FailureClass::HttpStatus, "503");
        assert_eq!(said(&mut t, &status, start + Duration::from_millis(1_200)), (Level::Info, None));
        assert_eq!(said(&mut t, &status, start + Duration::from_millis(1_300)), (Level::Info, Some(2)));
    }

    /// A provider that answers the same 503 for five minutes, an attempt a second: the first
    /// line in full, then `again ×N` at info for the 2nd, 4th, 8th… and every 30 s, about 15
    /// lines instead of 300; a different failure is said in full at once, and counts anew.
    #[test]
    fn identical_failures_are_collapsed_into_again_lines() {
        let mut t = LineThrottle::new(Duration::from_secs(1));
        let status = Failure::new(FailureClass::HttpStatus, "HTTP 503 Service Unavailable from https://idp.example/");
        let start = Instant::now();
        let said_at_info: Vec<Option<u32>> = (0..300)
            .map(|i| said(&mut t, &status, start + Duration::from_secs(i)))
            .filter(|(level, _)| *level == Level::Info)
            .map(|(_, again)| again)
            .collect();
        assert_eq!(&said_at_info[..5], [None, Some(2), Some(4), Some(8), Some(16)]);
        assert!(said_at_info.len() <= 20, "{} lines at info: {said_at_info:?}", said_at_info.len());
        let other = Failure::new(FailureClass::HttpStatus, "HTTP 502 Bad Gateway from https://idp.example/");
        assert_eq!(said(&mut t, &other, start + Duration::from_secs(301)), (Level::Info, None));
        assert_eq!(said(&mut t, &status, start + Duration::from_secs(302)), (Level::Info, None), "counted anew");
        assert_eq!(t.level_for(None, start + Duration::from_secs(303)), (Level::Info, None), "a pass resets");
        assert_eq!(said(&mut t, &status, start + Duration::from_secs(304)), (Level::Info, None));
    }
}
