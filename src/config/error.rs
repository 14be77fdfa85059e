//! Every way the configuration can be wrong, each as a variant whose message names the flag or
//! variable and says what would be right. All of them exit 2.

use super::{CaFileProblem, ConnectToProblem, HeaderNameProblem, Source};
use crate::settings::Id;
use crate::token::{HeaderValueProblem, TokenProblem};
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
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::MissingIssuer { empty_env, near_misses } => {
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
                    if *empty_env { " (it is set but empty)" } else { "" }
                )
            }
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
            ConfigError::CaFile { source, path, problem } => write!(f, "{source}: CA file '{path}' {problem}"),
            ConfigError::TokenFile { source, path, problem } => write!(f, "{source}: token file '{path}' {problem}"),
            ConfigError::HeaderName { source, value, problem } => write!(f, "{source}: '{value}' {problem}"),
            ConfigError::HeaderFile { source, name, path, problem } => {
                write!(f, "{source}: header file '{path}' (for {name}) {problem}")
            }
            ConfigError::Conflict(conflict) => write!(f, "{conflict}"),
            ConfigError::UnknownVariable { name, suggestion } => match suggestion {
                Some(s) => write!(f, "{name} is not a variable wait-for-idp reads; did you mean {s}?"),
                None => write!(f, "{name} is not a variable wait-for-idp reads; see --help for the list"),
            },
            ConfigError::NotUtf8 { name } => write!(
                f,
                "{name} is set to bytes that are not UTF-8 text, which the gate cannot read and will not take for \
                 unset; set it in UTF-8, or unset it"
            ),
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
