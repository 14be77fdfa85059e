//! Durations written for people reading `kubectl logs`: `0.08s`, `12.3s`, `4m58s`.

use std::time::Duration;

/// A duration for people: two decimals under 10 s, one under a minute, then minutes and seconds.
/// Integer arithmetic only, rounding half up: formatting floats would link Rust's float printing
/// (Grisu and Dragon4, about 20 KB) into a binary that must stay within 2 MiB.
pub(crate) fn secs(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 9_995 {
        let cs = (ms + 5) / 10;
        format!("{}.{:02}s", cs / 100, cs % 100)
    } else if ms < 59_950 {
        let ds = (ms + 50) / 100;
        format!("{}.{}s", ds / 10, ds % 10)
    } else {
        let total = (ms + 500) / 1000;
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
        assert_eq!(secs(Duration::from_millis(2_005)), "2.01s", "half up");
        assert_eq!(secs(Duration::from_millis(9_996)), "10.0s");
        assert_eq!(secs(Duration::from_millis(59_949)), "59.9s");
        assert_eq!(secs(Duration::from_millis(59_950)), "1m0s");
    }
}
