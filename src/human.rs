//! Durations written for people reading `kubectl logs`: `0.08s`, `12.3s`, `4m58s`.

use std::time::Duration;

/// A duration for people: two decimals under 10 s, one under a minute, then minutes and seconds.
pub(crate) fn secs(d: Duration) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(secs(Duration::from_millis(80)), "0.08s");
        assert_eq!(secs(Duration::from_millis(12_340)), "12.3s");
        assert_eq!(secs(Duration::from_secs(298)), "4m58s");
        assert_eq!(secs(Duration::from_secs(3_700)), "1h1m40s");
    }
}
