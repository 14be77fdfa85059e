//! Text from elsewhere made safe to show: a provider's document, key set and error pages reach
//! the log, stdout and the termination message, and a hostile one could forge a line of its
//! own (`\n… ready: …`), drive the reader's terminal (ESC, C1), reorder what is shown (bidi
//! overrides) or make one line of a megabyte, which container runtimes split at 16 KiB.

use std::borrow::Cow;

/// The longest message a log line carries: with the line's prefix, under the 16 KiB at which
/// container runtimes split a line, and far over any line of the gate's own but a final line
/// naming dozens of long URLs.
pub(crate) const LINE_MAX: usize = 15 * 1024;

/// Whether `c` is shown escaped: C0 and C1 controls and DEL, the line and paragraph separators
/// (line breaks to some readers and to JavaScript), and the bidirectional marks, embeddings,
/// overrides and isolates.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// `text` with every character [`hidden`] written as `\n`, `\r`, `\t` or `\uXXXX`, line feeds
/// kept when `keep_lines` (a multi-line output whose values were escaped on their own). Every
/// such character is in the Basic Multilingual Plane, and JSON allows them only inside strings,
/// so a JSON text escaped this way is the same JSON.
pub(crate) fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c) && !(keep_lines && c == '\n')) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' if keep_lines => out.push('\n'),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if hidden(c) => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` cut to at most `max` bytes on a character boundary, with a marker that says how much
/// was left out.
pub(crate) fn bound(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max.saturating_sub(40);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{} … [{} more bytes left out]", &text[..end], text.len() - end))
}

/// A server's string for a line of text: escaped, and at most `max` bytes.
pub(crate) fn quoted(text: &str, max: usize) -> String {
    bound(&escape(text, false), max).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_separators_and_bidi_overrides_are_escaped() {
        let forged = "RS256\n[+0.1s] INFO  ready: x\u{1b}[2J\u{9b}31m\u{7f}\u{2028}\u{202e}gnp.exe\u{2066}";
        assert_eq!(
            escape(forged, false),
            "RS256\\n[+0.1s] INFO  ready: x\\u001b[2J\\u009b31m\\u007f\\u2028\\u202egnp.exe\\u2066"
        );
        assert_eq!(escape("a\nb\u{1b}", true), "a\nb\\u001b");
        assert!(matches!(escape("plain ünïcode ✓", false), Cow::Borrowed(_)));
        let json = serde_json::json!({ "alg": "\u{85}\u{202e}x\u{1b}" }).to_string();
        let escaped = escape(&json, true);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&escaped).unwrap()["alg"], "\u{85}\u{202e}x\u{1b}");
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary_and_says_how_much_is_left_out() {
        assert_eq!(bound("short", 100), "short");
        let long = "é".repeat(1000);
        let cut = bound(&long, 100);
        assert!(cut.len() <= 100 && cut.ends_with("more bytes left out]"), "{cut}");
        let kept = cut.split(" … ").next().unwrap().len();
        assert!(cut.contains(&format!("[{} more bytes left out]", 2000 - kept)), "{cut}");
    }
}
