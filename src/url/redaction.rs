//! Hiding the credentials a URL may carry, wherever a text quotes one: its userinfo, and the
//! values of query (or fragment) parameters whose names say they are secret.

/// Replaces the `user:password@` part of every URL in `text` with `***@`, and the value of every
/// query or fragment parameter with a credential's name ([`is_credential_name`]) with `***`.
/// Applied to every URL and every error text that may quote one: proxy URLs legitimately carry
/// credentials, and a discovery URL may carry a signature (`?sig=`) or a key (`?code=`).
pub(crate) fn redact(text: &str) -> String {
    redact_parameters(&redact_userinfo(text))
}

fn redact_userinfo(text: &str) -> String {
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

/// Where a quoted URL ends in a text: white space, a quote or an angle bracket.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>')
}

/// What starts a parameter: the query's `?`, `&` and `;` between parameters, the fragment's `#`
/// (an implicit flow's `#access_token=`), and a `?` inside a value, where a URL given as a
/// parameter (`redirect_uri=`) has its own query.
fn starts_parameter(c: char) -> bool {
    matches!(c, '?' | '&' | ';' | '#')
}

/// Every parameter of every URL in `text` (a word that holds `://`, from its first `?` or `#`
/// on) whose name is a credential's gets the value `***`.
fn redact_parameters(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let word_end = rest[i..].find(ends_url).map_or(rest.len(), |j| i + j);
        let (word, after) = rest.split_at(word_end);
        match word[i..].find(['?', '#']) {
            Some(q) => {
                out.push_str(&word[..i + q]);
                redact_query(&word[i + q..], &mut out);
            }
            None => out.push_str(word),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `query` starts with a parameter's delimiter; each `name=value` after one is copied, the value
/// replaced when the name is a credential's.
fn redact_query(query: &str, out: &mut String) {
    let mut rest = query;
    while let Some(delimiter) = rest.chars().next() {
        out.push(delimiter);
        rest = &rest[delimiter.len_utf8()..];
        let end = rest.find(starts_parameter).unwrap_or(rest.len());
        let (parameter, after) = rest.split_at(end);
        match parameter.split_once('=') {
            Some((name, value)) if !value.is_empty() && is_credential_name(name) => {
                out.push_str(name);
                out.push_str("=***");
            }
            _ => out.push_str(parameter),
        }
        rest = after;
    }
}

/// Names whose value is a credential when the whole name, or its last word, is one of them:
/// an OAuth authorization `code`, an Azure SAS or Shared Access `sig`, a password.
const CREDENTIAL_WORDS: &[&str] =
    &["sig", "code", "auth", "authorization", "pwd", "pass", "jwt", "assertion", "session"];

/// Names whose value is a credential when the name ends with one of them, however written
/// (`access_token`, `X-Amz-Security-Token`, `client_secret`, `api_key`, `apiKey`,
/// `subscription-key`, `X-Amz-Signature`, `X-Amz-Credential`, `password`).
const CREDENTIAL_ENDINGS: &[&str] =
    &["token", "secret", "password", "passwd", "signature", "credential", "credentials", "key"];

/// Whether a parameter's name says its value is a credential. Not `p` (Azure AD B2C's policy),
/// `appid` (Entra's application), `client_id` or `tenant`, which name without granting. A name
/// too many is only a value hidden from the log; a name too few would print a secret, so the
/// endings are generous.
pub(crate) fn is_credential_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase().replace(['-', '.'], "_");
    let last_word = name.rsplit('_').next().unwrap_or(&name);
    CREDENTIAL_WORDS.contains(&name.as_str())
        || CREDENTIAL_WORDS.contains(&last_word)
        || CREDENTIAL_ENDINGS.iter().any(|ending| name.ends_with(ending))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_hidden_everywhere() {
        assert_eq!(redact("http://u:p@proxy:3128"), "http://***@proxy:3128");
        assert_eq!(
            redact("via 'http://a:b@p/x' and https://c@d?e#f, https://plain/"),
            "via 'http://***@p/x' and https://***@d?e#f, https://plain/"
        );
        assert_eq!(redact("no url"), "no url");
        assert_eq!(redact("https://"), "https://");
        // Found by fuzzing: a quote inside the userinfo.
        assert_eq!(redact("http://'u:p@phttp?sq:///s"), "http://***@phttp?sq:///s");
        assert_eq!(redact("'https://a\"b:secret@h'"), "'https://***@h'");
    }

    #[test]
    fn a_query_keeps_its_policy_and_loses_its_credentials() {
        let b2c = "https://t.b2clogin.com/t.onmicrosoft.com/v2.0/.well-known/openid-configuration?p=B2C_1_signin";
        assert_eq!(redact(b2c), b2c, "a policy is no secret");
        assert_eq!(redact("https://h/m?appid=1234&p=x"), "https://h/m?appid=1234&p=x");
        assert_eq!(
            redact("fetching https://h/m?p=B2C_1_signin&sig=c2lnbmF0dXJl&sv=2024 (HTTP 503)"),
            "fetching https://h/m?p=B2C_1_signin&sig=***&sv=2024 (HTTP 503)"
        );
        assert_eq!(
            redact("'https://h/cb?code=abc#access_token=xyz&state=s'"),
            "'https://h/cb?code=***#access_token=***&state=s'"
        );
        assert_eq!(redact("https://h/x?a=1;api_key=k"), "https://h/x?a=1;api_key=***");
        assert_eq!(
            redact("https://h/x?redirect_uri=https://u:p@o/?client_secret=s"),
            "https://h/x?redirect_uri=https://***@o/?client_secret=***",
            "a URL inside a parameter, its own userinfo and query"
        );
        assert_eq!(redact("https://h/x?token="), "https://h/x?token=", "nothing to hide");
        assert_eq!(redact("a&sig=1 https://h"), "a&sig=1 https://h", "only within a URL");
    }

    #[test]
    fn credential_names_are_recognised_however_written() {
        for name in [
            "token",
            "access_token",
            "id_token",
            "X-Amz-Security-Token",
            "accessToken",
            "key",
            "api_key",
            "apiKey",
            "apikey",
            "subscription-key",
            "secret",
            "client_secret",
            "sig",
            "signature",
            "X-Amz-Signature",
            "X-Amz-Credential",
            "password",
            "passwd",
            "pwd",
            "code",
            "auth_code",
            "client_assertion",
            "jwt",
        ] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in ["p", "appid", "client_id", "tenant", "state", "sv", "se", "response_type", "scope", "debug"] {
            assert!(!is_credential_name(name), "{name}");
        }
    }

    #[test]
    fn redaction_is_stable() {
        for text in [
            "https://h/x?sig=1&token=2#code=3",
            "https://h/x?redirect_uri=https://a&sig=q@h2/?key=k",
            "https://h?&&=;#?sig==x",
            "https://u@h?sig=é&x=ü",
        ] {
            let once = redact(text);
            assert_eq!(redact(&once), once, "{text}");
        }
    }
}
