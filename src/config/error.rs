//! Every way the configuration can be wrong, each as a variant whose message names the flag or
//! variable and says what would be right. All of them exit 2.

use super::problems::{ConnectToProblem, HeaderNameProblem};
use super::source::{Raw, Source};
use crate::go_proxy::ProxyError;
use crate::settings::Id;
use crate::token::{HeaderValueProblem, TokenProblem};
use crate::trust_store::CaFileProblem;
use crate::url;
use std::fmt;

#[derive(Debug)]
pub(crate) enum ConfigError {
    /// No issuer and no resource; `near_misses`: set variables that look like the issuer's, each
    /// with the one meant.
    MissingIssuer {
        empty_env: bool,
        near_misses: Vec<(String, &'static str)>,
    },
    /// The discovery URL given as the issuer; `issuer` is the part before `/.well-known/`.
    DiscoveryUrlAsIssuer {
        source: Source,
        value: String,
        issuer: String,
    },
    /// Several issuers in one value that is not a list.
    IssuerList {
        source: Source,
        value: String,
    },
    InvalidUrl {
        source: Source,
        value: String,
        problem: url::Problem,
    },
    InvalidValue {
        source: Source,
        value: String,
        expected: String,
    },
    ConnectTo {
        source: Source,
        value: String,
        problem: ConnectToProblem,
    },
    CaFile {
        source: Source,
        path: String,
        problem: CaFileProblem,
    },
    TokenFile {
        source: Source,
        path: String,
        problem: TokenProblem,
    },
    HeaderName {
        source: Source,
        value: String,
        problem: HeaderNameProblem,
    },
    HeaderFile {
        source: Source,
        name: String,
        path: String,
        problem: HeaderValueProblem,
    },
    Conflict(Conflict),
    UnknownVariable {
        name: String,
        suggestion: Option<&'static str>,
    },
    /// A variable the gate reads holds bytes that are not UTF-8.
    NotUtf8 {
        name: String,
    },
    /// `--` with no command after it, or an empty word as the command (`-- ""`, a value a
    /// template rendered empty).
    NoCommand {
        empty_word: bool,
    },
    /// `--serve`'s address cannot be bound (taken, or not this host's).
    CannotListen {
        source: Source,
        addr: std::net::SocketAddr,
        error: String,
    },
}

/// Settings that are each valid but cannot go together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Conflict {
    /// `--discovery-url` and `--jwks-url` name one issuer's documents.
    NeedsOneIssuer {
        source: Source,
        issuers: usize,
        resources: usize,
    },
    OnceWithMaxAttempts {
        source: Source,
    },
    OnceWithSuccesses {
        source: Source,
        successes: u32,
    },
    SuccessesBeyondMaxAttempts {
        successes: u32,
        max: u32,
    },
    /// `--serve` keeps the process running; `--once` and `-- COMMAND` end or replace it.
    ServeWith {
        source: Source,
        other: &'static str,
    },
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Conflict::NeedsOneIssuer { source, issuers, resources } => write!(
                f,
                "{source} names one issuer's document but {issuers} issuer(s) and {resources} resource(s) are given; \
                 use it with a single --issuer and no --resource"
            ),
            Conflict::OnceWithMaxAttempts { source } => {
                write!(f, "--once makes exactly one attempt; drop {source} (or drop --once and use --fail-closed)")
            }
            Conflict::OnceWithSuccesses { source, successes } => write!(
                f,
                "--once makes exactly one attempt, so it cannot see {successes} consecutive successes; drop {source}"
            ),
            Conflict::SuccessesBeyondMaxAttempts { successes, max } => {
                write!(f, "--successes {successes} can never be reached within --max-attempts {max}")
            }
            Conflict::ServeWith { source, other } => write!(
                f,
                "{source} keeps the gate running beside the workload (a native sidecar), which {other} cannot; \
                 drop {source} or {other} (a sidecar starts the workload with a startupProbe on /readyz)"
            ),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::MissingIssuer { empty_env, near_misses } => missing_issuer(f, *empty_env, near_misses),
            ConfigError::DiscoveryUrlAsIssuer { source, value, issuer } => write!(
                f,
                "{source}: '{}' is the discovery URL, not the issuer: give the part before /.well-known/, '{}', \
                 as the issuer (the gate appends the rest, as the client does); and {} only if the metadata is \
                 really fetched from elsewhere",
                url::redact(value),
                url::redact(issuer),
                Id::DiscoveryUrl.flag()
            ),
            ConfigError::IssuerList { source, value } => {
                write!(f, "{source}: '{}' holds several URLs; ", url::redact(value))?;
                match source {
                    Source::Env(name) if Id::Issuer.setting().fallback == Some(*name) => write!(
                        f,
                        "oauth2-proxy reads it as one URL, so it can name only one issuer; several go in {}, \
                         comma-separated",
                        Id::Issuer.setting().env.unwrap_or_default()
                    ),
                    _ => write!(f, "repeat {} for each issuer: --issuer URL1 --issuer URL2", Id::Issuer.flag()),
                }
            }
            ConfigError::InvalidUrl { source, value, problem } => {
                write!(f, "{source}: '{}' {problem}", url::redact(value))
            }
            ConfigError::InvalidValue { source, value, expected } => {
                write!(f, "{source}: '{value}' is not valid; expected {expected}")
            }
            ConfigError::ConnectTo { source, value, problem } => write!(f, "{source}: '{value}' {problem}"),
            ConfigError::CaFile { source, path, problem } => {
                write!(f, "{source}: CA file '{path}' {problem}")?;
                let missing =
                    matches!(problem, CaFileProblem::Unreadable(e) if e.kind() == std::io::ErrorKind::NotFound);
                if missing && path.contains(',') && matches!(source, Source::Flag(_)) {
                    // A list given to the flag: the variable takes one, the flag one file each time.
                    write!(f, "; for several files repeat {source} (its variable takes them comma-separated)")?;
                }
                Ok(())
            }
            ConfigError::TokenFile { source, path, problem } => {
                write!(f, "{source}: token file {} {problem}", Shown(path, "the token"))
            }
            ConfigError::HeaderName { source, value, problem } => match value.split_once('=') {
                Some((name, path)) => write!(f, "{source}: '{name}={}' {problem}", Shown(path, "its value").bare()),
                None => write!(f, "{source}: {} {problem}", Shown(value, "its value")),
            },
            ConfigError::HeaderFile { source, name, path, problem } => {
                write!(f, "{source}: header file {} (for {name}) {problem}", Shown(path, "the header's value"))
            }
            ConfigError::Conflict(conflict) => write!(f, "{conflict}"),
            ConfigError::CannotListen { source, addr, error } => write!(
                f,
                "{source}: cannot listen on {addr}: {error}; choose a port no other container of the pod uses, \
                 on an address of this host (:PORT for all of them)"
            ),
            ConfigError::UnknownVariable { name, suggestion } => match suggestion {
                // A flag's name (a variable's always holds '_'): a mode's, which has no variable.
                Some(s) if !s.contains('_') => write!(
                    f,
                    "{name} is not a variable wait-for-idp reads: --{s} is a mode, a flag only, typed by a person \
                     (as --once, --dry-run and -v are); this run goes on without it"
                ),
                Some(s) => write!(f, "{name} is not a variable wait-for-idp reads; did you mean {s}?"),
                None => write!(f, "{name} is not a variable wait-for-idp reads; see --help for the list"),
            },
            ConfigError::NotUtf8 { name } => {
                write!(f, "{name} is not UTF-8 (and so not taken for unset); set it in UTF-8 or unset it")
            }
            ConfigError::NoCommand { empty_word } => write!(
                f,
                "{}: name the command to run after the wait (wait-for-idp --issuer URL -- COMMAND [ARGS...]), \
                 or drop the '--' to only wait",
                if *empty_word {
                    "the command after '--' is an empty word"
                } else {
                    "'--' is given with no command after it"
                }
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// No issuer: the near misses among the variables set, then what to pass.
fn missing_issuer(f: &mut fmt::Formatter<'_>, empty_env: bool, near_misses: &[(String, &'static str)]) -> fmt::Result {
    let issuer = Id::Issuer.setting();
    f.write_str("no issuer given: ")?;
    for (name, meant) in near_misses {
        write!(f, "{name} is set; did you mean {meant}? ")?;
    }
    write!(
        f,
        "{} --{} https://sso.example.com/realms/NAME or set {} (or oauth2-proxy's {}), or \
             {} for a protected resource{}",
        if near_misses.is_empty() { "pass" } else { "Else pass" },
        issuer.flag,
        issuer.env.unwrap_or_default(),
        issuer.fallback.unwrap_or_default(),
        Id::Resource.flag(),
        if empty_env { " (it is set but empty)" } else { "" }
    )
}

/// A value given where a path to a secret's file belongs, as an error shows it: in full if it
/// looks like a path, else only its length and first character's kind. Whoever sets the
/// token file's variable to the token itself must not find it in the pod's log.
struct Shown<'a>(&'a str, &'static str);

impl Shown<'_> {
    /// A path, as a bit of a larger quoted value (no quotes of its own).
    fn bare(&self) -> String {
        if looks_like_path(self.0) { self.0.to_string() } else { format!("<{}>", self.hint()) }
    }

    fn hint(&self) -> String {
        let first = match self.0.chars().next() {
            Some(c) if c.is_ascii_alphabetic() => "a letter",
            Some(c) if c.is_ascii_digit() => "a digit",
            Some(_) => "a symbol",
            None => "nothing",
        };
        format!(
            "not shown: {} characters, starting with {first}; a path to a file holding {} was expected",
            self.0.len(),
            self.1
        )
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if looks_like_path(self.0) { write!(f, "'{}'", self.0) } else { write!(f, "({})", self.hint()) }
    }
}

/// Whether a value looks like a path rather than a secret: a `/` or a `.` in it, no white space,
/// not a JWT (`eyJ`: a JSON header in base64url), and no run of 32 characters of a token's
/// alphabet (file names are words; tokens and keys are long runs of random characters).
fn looks_like_path(value: &str) -> bool {
    let token_char = |c: char| c.is_ascii_alphanumeric() || "-_+=".contains(c);
    let longest_run = value.split(|c| !token_char(c)).map(str::len).max().unwrap_or(0);
    (value.contains('/') || value.contains('.'))
        && !value.starts_with("eyJ")
        && longest_run < 32
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The error for a raw value, here where the errors are, so that the value's own file needs none.
impl Raw {
    /// The error for a value that is not what `expected` describes.
    pub(crate) fn invalid(&self, expected: impl Into<String>) -> ConfigError {
        ConfigError::InvalidValue { source: self.source, value: self.value.clone(), expected: expected.into() }
    }
}

/// A proxy variable Go would use and could not: the variable named, its value shown safely.
impl From<ProxyError> for ConfigError {
    fn from(e: ProxyError) -> ConfigError {
        ConfigError::InvalidValue { source: Source::Env(e.variable), value: e.shown, expected: e.expected }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_given_for_its_path_is_not_shown() {
        for path in ["/var/run/secrets/kubernetes.io/serviceaccount/token", "token.txt", "./t", "/secrets/cf/id"] {
            assert!(looks_like_path(path), "{path}");
        }
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl";
        for secret in [
            jwt,
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "hunter2",
            "Bearer abc.def",
            "s3cr3t/V4lu3+AAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert!(!looks_like_path(secret), "{secret}");
        }
        let e = ConfigError::TokenFile {
            source: Source::Env("WAIT_FOR_IDP_TOKEN_FILE"),
            path: jwt.to_string(),
            problem: TokenProblem::Empty,
        };
        let shown = e.to_string();
        assert!(!shown.contains("eyJ") && shown.contains("49 characters, starting with a letter"), "{shown}");
        assert!(shown.contains("a path to a file holding the token"), "{shown}");
        let e = ConfigError::HeaderName {
            source: Source::Flag(Id::HeaderFile),
            value: "X-Key=hunter2-but-longer".to_string(),
            problem: HeaderNameProblem::Repeated,
        };
        assert!(
            !e.to_string().contains("hunter2") && e.to_string().contains("'X-Key=<not shown: 18 characters"),
            "{e}"
        );
    }
}
