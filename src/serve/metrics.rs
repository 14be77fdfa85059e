//! `/metrics`: the Prometheus text exposition format (version 0.0.4), written by hand. A client
//! library would cost more than the whole listener; the format is a few lines of text, and the
//! suite checks the output with `promtool check metrics`.

use super::health::{BUCKETS, Health, State};
use crate::probe::FailureClass;
use std::fmt::Write;
use std::time::{Duration, UNIX_EPOCH};

/// The media type Prometheus asks for and gets.
pub(super) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A label value, escaped as the format says: backslash, double quote and line feed.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// `# HELP` and `# TYPE` for one metric family.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
}

impl Health {
    /// Every metric, in the text format.
    pub(crate) fn metrics(&self) -> String {
        let state = self.lock();
        let mut out = String::with_capacity(4096);
        family(&mut out, "wait_for_idp_build_info", "gauge", "The gate's version and commit; always 1.");
        let (version, commit) = (env!("CARGO_PKG_VERSION"), env!("BUILD_COMMIT"));
        let _ = writeln!(out, "wait_for_idp_build_info{{version=\"{version}\",commit=\"{}\"}} 1", escape(commit));
        family(&mut out, "wait_for_idp_up", "gauge", "1 while the target passes (what /readyz says), else 0.");
        for t in &state.targets {
            let _ = writeln!(out, "wait_for_idp_up{{target=\"{}\"}} {}", escape(&t.name), u8::from(t.up));
        }
        checks(&mut out, &state);
        durations(&mut out, &state);
        family(&mut out, "wait_for_idp_last_pass_timestamp_seconds", "gauge", "When the target last passed a check.");
        for t in &state.targets {
            if let Some(at) = t.last_pass.and_then(|at| at.duration_since(UNIX_EPOCH).ok()) {
                let name = escape(&t.name);
                let _ =
                    writeln!(out, "wait_for_idp_last_pass_timestamp_seconds{{target=\"{name}\"}} {}", decimal(at, 3));
            }
        }
        family(
            &mut out,
            "wait_for_idp_first_ready_seconds",
            "gauge",
            "Seconds from the start until every target had passed.",
        );
        if let Some(took) = state.first_ready {
            let _ = writeln!(out, "wait_for_idp_first_ready_seconds {}", decimal(took, 3));
        }
        family(
            &mut out,
            "wait_for_idp_failed_open",
            "gauge",
            "1 while /readyz answers 200 only because the start failed open.",
        );
        let _ = writeln!(out, "wait_for_idp_failed_open {}", u8::from(state.failed_open));
        out
    }
}

/// `d` in seconds with `places` decimals, rounded half up: what `{:.N}` of an f64 writes for these
/// magnitudes, without the float formatter.
fn decimal(d: Duration, places: u32) -> String {
    let scale = 10u128.pow(places);
    let units = (d.as_nanos() * scale + 500_000_000) / 1_000_000_000;
    format!("{}.{:0width$}", units / scale, units % scale, width = places as usize)
}

/// `wait_for_idp_checks_total{target,result,class}`: `class="none"` for a pass.
fn checks(out: &mut String, state: &State) {
    family(out, "wait_for_idp_checks_total", "counter", "Checks made, by result and failure class.");
    for t in &state.targets {
        let name = escape(&t.name);
        for (class, n) in &t.checks {
            let (result, class) = class.map_or(("pass", "none"), |c| ("fail", FailureClass::as_str(c)));
            let _ = writeln!(
                out,
                "wait_for_idp_checks_total{{target=\"{name}\",result=\"{result}\",class=\"{class}\"}} {n}"
            );
        }
    }
}

/// `wait_for_idp_check_duration_seconds`: one check's time, DNS to the last byte of the last
/// document, passed or not.
fn durations(out: &mut String, state: &State) {
    let name = "wait_for_idp_check_duration_seconds";
    family(out, name, "histogram", "How long one check took, passed or failed.");
    for t in &state.targets {
        let target = escape(&t.name);
        for (count, (_, bound)) in t.buckets.iter().zip(BUCKETS) {
            let _ = writeln!(out, "{name}_bucket{{target=\"{target}\",le=\"{bound}\"}} {count}");
        }
        let total: u64 = t.checks.values().sum();
        let _ = writeln!(out, "{name}_bucket{{target=\"{target}\",le=\"+Inf\"}} {total}");
        let _ = writeln!(out, "{name}_sum{{target=\"{target}\"}} {}", decimal(t.total, 6));
        let _ = writeln!(out, "{name}_count{{target=\"{target}\"}} {total}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Failure;
    use std::time::{Duration, Instant};

    #[test]
    fn the_exposition_names_every_family_and_escapes_labels() {
        let h = Health::new(vec!["https://idp/\"q\"\\".into()], 1, Instant::now());
        h.record(0, &Err(Failure::new(FailureClass::Tls, "x")), Duration::from_millis(7));
        h.record(0, &crate::serve::health::tests::pass(), Duration::from_secs(9));
        let m = h.metrics();
        let t = r#"target="https://idp/\"q\"\\""#;
        for line in [
            format!("wait_for_idp_up{{{t}}} 0"),
            format!("wait_for_idp_checks_total{{{t},result=\"fail\",class=\"tls\"}} 1"),
            format!("wait_for_idp_checks_total{{{t},result=\"pass\",class=\"none\"}} 1"),
            format!("wait_for_idp_check_duration_seconds_bucket{{{t},le=\"0.01\"}} 1"),
            format!("wait_for_idp_check_duration_seconds_bucket{{{t},le=\"5\"}} 1"),
            format!("wait_for_idp_check_duration_seconds_bucket{{{t},le=\"+Inf\"}} 2"),
            format!("wait_for_idp_check_duration_seconds_count{{{t}}} 2"),
            "wait_for_idp_failed_open 0".to_string(),
        ] {
            assert!(m.lines().any(|l| l == line), "{line} missing from:\n{m}");
        }
        assert!(m.contains("wait_for_idp_last_pass_timestamp_seconds{"), "{m}");
        assert!(!m.lines().any(|l| l.starts_with("wait_for_idp_first_ready_seconds ")), "not ready yet: {m}");
    }
}
