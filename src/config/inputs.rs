//! Where each setting comes from, and how a raw value becomes a typed one.
//!
//! Precedence: a flag, then its `WAIT_FOR_IDP_*` variable, then oauth2-proxy's variable where
//! there is one, then the default. A variable that is set but empty counts as unset (Helm charts
//! often render empty values). The environment is injected, so tests need not touch the process's.

use super::ConfigError;
use crate::cli;
use std::fmt;
use std::time::Duration;

/// Where a setting came from, so that an error can point at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    Flag(&'static str),
    Env(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag(id) => write!(f, "--{}", id.replace('_', "-")),
            Source::Env(name) => write!(f, "{name}"),
        }
    }
}

/// A raw value and its origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Raw {
    pub(crate) value: String,
    pub(crate) source: Source,
}

impl Raw {
    /// The error for a value that is not what `expected` describes.
    pub(crate) fn invalid(&self, expected: impl Into<String>) -> ConfigError {
        ConfigError::InvalidValue { source: self.source, value: self.value.clone(), expected: expected.into() }
    }
}

/// Reads settings from the flags and an injected environment.
pub(crate) struct Inputs<'a> {
    pub(crate) env: &'a dyn Fn(&str) -> Option<String>,
}

/// oauth2-proxy's issuer variable holds exactly one URL (the proxy reads it so), never a list.
const SINGLE_URL_VARIABLE: &str = "OAUTH2_PROXY_OIDC_ISSUER_URL";

impl Inputs<'_> {
    /// The environment value of a flag's variable, if set and not empty; else its oauth2-proxy
    /// fallback variable, if it has one.
    fn env(&self, id: &'static str) -> Option<Raw> {
        self.variable(cli::env_var(id)).or_else(|| cli::fallback_env_var(id).and_then(|name| self.variable(name)))
    }

    /// A variable by its name, if set and not empty: also those no flag stands for (Go's
    /// `SSL_CERT_FILE`, oauth2-proxy's trust settings).
    pub(crate) fn variable(&self, name: &'static str) -> Option<Raw> {
        (self.env)(name).filter(|v| !v.is_empty()).map(|value| Raw { value, source: Source::Env(name) })
    }

    /// A boolean variable by its name; unset is false.
    pub(crate) fn variable_switch(&self, name: &'static str) -> Result<bool, ConfigError> {
        self.variable(name).map_or(Ok(false), |raw| parse_bool(&raw))
    }

    /// Whether the flag's own variable is set but empty (worth saying when nothing else is set).
    pub(crate) fn set_but_empty(&self, id: &'static str) -> bool {
        (self.env)(cli::env_var(id)).is_some_and(|v| v.trim().is_empty())
    }

    pub(crate) fn single(&self, id: &'static str, flag: &Option<String>) -> Option<Raw> {
        match flag {
            Some(v) => Some(Raw { value: v.clone(), source: Source::Flag(id) }),
            None => self.env(id),
        }
    }

    /// A repeatable flag; its variable holds a comma-separated list. oauth2-proxy's issuer
    /// variable holds exactly one URL, taken as it is: the gate must check the value the proxy
    /// will use, spaces and commas included.
    pub(crate) fn list(&self, id: &'static str, flag: &[String]) -> Vec<Raw> {
        if !flag.is_empty() {
            return flag.iter().map(|v| Raw { value: v.clone(), source: Source::Flag(id) }).collect();
        }
        match self.env(id) {
            Some(raw) if raw.source == Source::Env(SINGLE_URL_VARIABLE) => vec![raw],
            Some(raw) => raw
                .value
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|v| Raw { value: v.to_string(), source: raw.source })
                .collect(),
            None => Vec::new(),
        }
    }

    pub(crate) fn switch(&self, id: &'static str, flag: bool) -> Result<bool, ConfigError> {
        if flag {
            return Ok(true);
        }
        match self.env(id) {
            None => Ok(false),
            Some(raw) => parse_bool(&raw),
        }
    }
}

fn parse_bool(raw: &Raw) -> Result<bool, ConfigError> {
    match raw.value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(raw.invalid("true or false (also 1/0, yes/no, on/off)")),
    }
}

/// Durations beyond this are surely a typo, and would overflow `Instant` arithmetic on some
/// platforms.
const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

/// A positive duration with a unit, at least `min`.
pub(crate) fn parse_duration(raw: Option<Raw>, default: Duration, min: Duration) -> Result<Duration, ConfigError> {
    let Some(raw) = raw else { return Ok(default) };
    let d = humantime::parse_duration(raw.value.trim())
        .map_err(|_| raw.invalid("a positive duration with a unit, such as 500ms, 90s, 5m or 1h30m"))?;
    if d.is_zero() {
        return Err(raw.invalid("a positive duration, not zero (such as 500ms, 90s or 5m)"));
    }
    if d < min {
        // Shorter would end before the first attempt could start, and fail open having checked
        // nothing: say so rather than run a gate that cannot work.
        return Err(raw.invalid(format!(
            "at least {}: a shorter timeout leaves no time for a single attempt",
            humantime::format_duration(min)
        )));
    }
    if d > MAX_DURATION {
        return Err(raw.invalid("a duration of at most 366 days"));
    }
    Ok(d)
}

/// A whole number of at least 1.
pub(crate) fn parse_count(raw: Option<&Raw>) -> Result<Option<u32>, ConfigError> {
    let Some(raw) = raw else { return Ok(None) };
    match raw.value.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(raw.invalid("a whole number of at least 1 (leave it unset for no limit)")),
    }
}

/// One of a fixed set of words; `default` is one of them.
pub(crate) fn parse_choice<T: Copy>(raw: Option<Raw>, default: &str, choices: &[(&str, T)]) -> Result<T, ConfigError> {
    let word = raw.as_ref().map_or(default, |r| r.value.trim());
    choices.iter().find(|(w, _)| *w == word).map(|(_, v)| *v).ok_or_else(|| {
        let words: Vec<&str> = choices.iter().map(|(w, _)| *w).collect();
        match &raw {
            Some(raw) => raw.invalid(words.join(" or ")),
            None => unreachable!("the default {default:?} is not among {words:?}"),
        }
    })
}
