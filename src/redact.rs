//! Keeps credentials out of everything the tool prints.

/// Replaces the `user:password@` part of every URL in `text` with `***@`. Applied to every URL
/// and every error text that may quote one (proxy URLs legitimately carry credentials).
pub fn redact_url(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            // The same ends as the URL parser's, so nothing it would read as userinfo escapes;
            // quotes are not ends, since a quote inside the userinfo would otherwise leak it.
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("***");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn credentials_are_hidden_everywhere() {
        assert_eq!(redact_url("http://u:p@proxy:3128"), "http://***@proxy:3128");
        assert_eq!(
            redact_url("via 'http://a:b@p/x' and https://c@d?e#f, https://plain/"),
            "via 'http://***@p/x' and https://***@d?e#f, https://plain/"
        );
        assert_eq!(redact_url("no url"), "no url");
        assert_eq!(redact_url("https://"), "https://");
        // Found by fuzzing: a quote inside the userinfo.
        assert_eq!(redact_url("http://'u:p@phttp?sq:///s"), "http://***@phttp?sq:///s");
        assert_eq!(redact_url("'https://a\"b:secret@h'"), "'https://***@h'");
    }
}
