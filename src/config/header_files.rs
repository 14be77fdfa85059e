//! `--header-file NAME=PATH`: an extra request header whose value is a file's content, for
//! providers behind a zero-trust edge (Cloudflare Access service tokens, Epic on FHIR). The value
//! is a secret, handled as the token file is: checked now, re-read before every attempt
//! (`token::read_header_value`), sent only where the token goes, never printed.

use super::{ConfigError, HeaderNameProblem, Raw};
use std::path::PathBuf;

/// One extra header: its name as given, and the file its value is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeaderFile {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
}

/// Fields the gate sets itself, or that would break the exchange, with why (checked case-blind).
const RESERVED: &[(&str, &str)] = &[
    ("host", "the gate sets Host from the URL, and TLS checks that name; use --connect-to to reach another address"),
    ("content-length", "it frames a body, and a GET sends none"),
    ("transfer-encoding", "it frames a body, and a GET sends none"),
    ("te", "it is hop-by-hop, and the gate reads no trailers"),
    ("trailer", "it announces a body's trailer, and a GET sends none"),
    ("expect", "it asks to send a body, and a GET sends none"),
    ("connection", "it is hop-by-hop, and the gate manages its connections"),
    ("keep-alive", "it is hop-by-hop, and the gate manages its connections"),
    ("proxy-connection", "it is hop-by-hop, and the gate manages its connections"),
    ("upgrade", "it is hop-by-hop, and the gate speaks HTTP/1.1 only"),
    (
        "proxy-authorization",
        "it is the proxy's, not the provider's; put the credentials in the proxy URL (HTTPS_PROXY)",
    ),
    ("accept-encoding", "the gate asks for gzip and decodes it itself, as Go's transport does"),
    ("mcp-protocol-version", "the gate sends it as MCP clients do, under --metadata auto and --resource"),
];

/// RFC 9110 §5.6.2: `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

impl HeaderFile {
    /// Reads one `NAME=PATH`; `earlier` are the headers read before it, and `token_file` says
    /// whether `--token-file` is set.
    fn parse(value: &str, earlier: &[HeaderFile], token_file: bool) -> Result<HeaderFile, HeaderNameProblem> {
        let (name, path) = value.split_once('=').ok_or(HeaderNameProblem::NoPath)?;
        let name = name.trim();
        if name.is_empty() {
            return Err(HeaderNameProblem::NotAName(None));
        }
        if let Some(c) = name.chars().find(|c| !is_tchar(*c)) {
            return Err(HeaderNameProblem::NotAName(Some(c)));
        }
        let lower = name.to_ascii_lowercase();
        if let Some((_, why)) = RESERVED.iter().find(|(reserved, _)| *reserved == lower) {
            return Err(HeaderNameProblem::Reserved(why));
        }
        if token_file && lower == "authorization" {
            return Err(HeaderNameProblem::TwoAuthorizations);
        }
        if earlier.iter().any(|h| h.name.eq_ignore_ascii_case(name)) {
            return Err(HeaderNameProblem::Repeated);
        }
        if path.trim().is_empty() {
            return Err(HeaderNameProblem::NoPath);
        }
        Ok(HeaderFile { name: name.to_string(), path: PathBuf::from(path) })
    }
}

/// Every `--header-file`, each with the raw value it came from, its name checked; the files are
/// read later, with the other files ([`super::files::check_header_file`]).
pub(super) fn read(raws: Vec<Raw>, token_file: bool) -> Result<Vec<(Raw, HeaderFile)>, ConfigError> {
    let mut headers: Vec<(Raw, HeaderFile)> = Vec::new();
    for raw in raws {
        let earlier: Vec<HeaderFile> = headers.iter().map(|(_, h)| h.clone()).collect();
        match HeaderFile::parse(&raw.value, &earlier, token_file) {
            Ok(header) => headers.push((raw, header)),
            Err(problem) => {
                return Err(ConfigError::HeaderName { source: raw.source, value: raw.value, problem });
            }
        }
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: &str) -> Result<HeaderFile, HeaderNameProblem> {
        HeaderFile::parse(value, &[], false)
    }

    #[test]
    fn a_header_file_is_a_name_and_a_path() {
        let h = parse("CF-Access-Client-Id=/secrets/cf/id").unwrap();
        assert_eq!((h.name.as_str(), h.path.to_str()), ("CF-Access-Client-Id", Some("/secrets/cf/id")));
        assert_eq!(parse("X-A=/p=q").unwrap().path.to_str(), Some("/p=q"), "the first '=' splits");
        assert_eq!(parse("Authorization=/secrets/basic").unwrap().name, "Authorization", "without --token-file");
        assert_eq!(parse("/secrets/cf/id"), Err(HeaderNameProblem::NoPath));
        assert_eq!(parse("X-A="), Err(HeaderNameProblem::NoPath));
        assert_eq!(parse("=/p"), Err(HeaderNameProblem::NotAName(None)));
        assert_eq!(parse("X A=/p"), Err(HeaderNameProblem::NotAName(Some(' '))));
        assert_eq!(parse("X:A=/p"), Err(HeaderNameProblem::NotAName(Some(':'))));
        assert_eq!(parse("Ünï=/p"), Err(HeaderNameProblem::NotAName(Some('Ü'))));
    }

    #[test]
    fn headers_the_gate_sets_or_that_break_it_are_refused() {
        for name in ["Host", "content-length", "Transfer-Encoding", "Connection", "TE", "Upgrade", "Accept-Encoding"] {
            assert!(matches!(parse(&format!("{name}=/p")), Err(HeaderNameProblem::Reserved(_))), "{name}");
        }
        assert!(matches!(parse("Proxy-Authorization=/p"), Err(HeaderNameProblem::Reserved(_))));
        assert!(matches!(parse("MCP-Protocol-Version=/p"), Err(HeaderNameProblem::Reserved(_))));
        let token = HeaderFile::parse("authorization=/p", &[], true);
        assert_eq!(token, Err(HeaderNameProblem::TwoAuthorizations));
        let earlier = [parse("X-Tenant=/a").unwrap()];
        assert_eq!(HeaderFile::parse("x-tenant=/b", &earlier, false), Err(HeaderNameProblem::Repeated));
        for allowed in ["User-Agent", "Accept", "Cookie", "X-Api-Key", "CF-Access-Client-Secret", "Epic-Client-ID"] {
            assert!(parse(&format!("{allowed}=/p")).is_ok(), "{allowed}");
        }
    }
}
