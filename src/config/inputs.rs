//! Where each setting comes from, and how a raw value becomes a typed one.
//!
//! Precedence: a flag, then its `WAIT_FOR_IDP_*` variable, then oauth2-proxy's variable where
//! there is one, then the default. A variable that is set but empty counts as unset (Helm charts
//! often render empty values). The environment is injected, so tests need not touch the process's.

use super::ConfigError;
use super::source::{Raw, Source, Sourced};
use crate::settings::{Choice, Given, Id, Parser};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

/// Reads settings from the command line and an injected environment, by the precedence the
/// table states: the flag, else its variable, else its oauth2-proxy fallback, else its default.
pub(crate) struct Inputs<'a> {
    pub(crate) given: &'a Given,
    pub(crate) env: &'a dyn Fn(&str) -> Option<String>,
    /// Where each setting read so far came from, for `--dry-run` and the start-up line.
    pub(crate) seen: RefCell<BTreeMap<Id, Source>>,
}

/// oauth2-proxy's issuer variable holds exactly one URL (the proxy reads it so), never a list.
fn single_url_variable() -> Option<&'static str> {
    Id::Issuer.setting().fallback
}

impl<'a> Inputs<'a> {
    pub(crate) fn new(given: &'a Given, env: &'a dyn Fn(&str) -> Option<String>) -> Inputs<'a> {
        Inputs { given, env, seen: RefCell::default() }
    }

    /// Where each setting that something set came from.
    pub(crate) fn sources(&self) -> BTreeMap<Id, Source> {
        self.seen.borrow().clone()
    }

    fn saw(&self, id: Id, source: Source) {
        self.seen.borrow_mut().insert(id, source);
    }

    /// The environment value of a setting's variable, if set and not empty; else its oauth2-proxy
    /// fallback variable, if it has one.
    fn env(&self, id: Id) -> Option<Raw> {
        let s = id.setting();
        let raw =
            s.env.and_then(|name| self.variable(name)).or_else(|| s.fallback.and_then(|name| self.variable(name)));
        if let Some(raw) = &raw {
            self.saw(id, raw.source);
        }
        raw
    }

    /// The command line's values for a setting, noted as its source when there are any.
    fn flag(&self, id: Id) -> &[String] {
        let values = self.given.get(id);
        if !values.is_empty() {
            self.saw(id, Source::Flag(id));
        }
        values
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

    /// Whether a variable is set and not empty.
    pub(crate) fn variable_is_set(&self, name: &str) -> bool {
        (self.env)(name).is_some_and(|v| !v.is_empty())
    }

    /// Whether the setting's own variable is set but empty (worth saying when nothing else is set).
    pub(crate) fn set_but_empty(&self, id: Id) -> bool {
        id.setting().env.and_then(|name| (self.env)(name)).is_some_and(|v| v.trim().is_empty())
    }

    pub(crate) fn single(&self, id: Id) -> Option<Raw> {
        match self.flag(id).last() {
            Some(v) => Some(Raw { value: v.clone(), source: Source::Flag(id) }),
            None => self.env(id),
        }
    }

    /// A repeatable setting; its variable holds a comma-separated list. oauth2-proxy's issuer
    /// variable holds exactly one URL, taken as it is: the gate must check the value the proxy
    /// will use, spaces and commas included.
    pub(crate) fn list(&self, id: Id) -> Vec<Raw> {
        let flag = self.flag(id);
        if !flag.is_empty() {
            return flag.iter().map(|v| Raw { value: v.clone(), source: Source::Flag(id) }).collect();
        }
        match self.env(id) {
            Some(raw) if Some(raw.source) == single_url_variable().map(Source::Env) => vec![raw],
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

    /// A boolean: the flag's last value (`--once` alone is `true`, `--once=false` is false, as
    /// Go's pflag reads them), else its variable, else false. Flag and variable take the same
    /// words, so `--fail-closed=maybe` is refused naming the flag.
    pub(crate) fn switch(&self, id: Id) -> Result<bool, ConfigError> {
        if let Some(value) = self.flag(id).last() {
            return parse_bool(&Raw { value: value.clone(), source: Source::Flag(id) });
        }
        match self.env(id) {
            None => Ok(false),
            Some(raw) => parse_bool(&raw),
        }
    }

    /// How often a counted flag (`-vv`) was given.
    pub(crate) fn count_given(&self, id: Id) -> usize {
        self.flag(id).len()
    }

    /// A duration setting, at least the table's minimum; the table's default if unset (its
    /// source then `None`).
    pub(crate) fn duration(&self, id: Id) -> Result<Sourced<Duration>, ConfigError> {
        let Parser::Duration { min, default } = id.setting().parser else { unreachable!("{id:?} is no duration") };
        match self.single(id) {
            Some(raw) => Ok((parse_duration(&raw, min)?, Some(raw))),
            None => Ok((default, None)),
        }
    }

    /// A count setting (`--successes`, `--watch-failures`): the table's default if unset.
    pub(crate) fn count(&self, id: Id) -> Result<Sourced<u32>, ConfigError> {
        let Parser::Count { default } = id.setting().parser else { unreachable!("{id:?} is no count") };
        match self.single(id) {
            Some(raw) => Ok((parse_count(&raw)?, Some(raw))),
            None => Ok((default, None)),
        }
    }

    /// A limit (`--max-attempts`): none if unset.
    pub(crate) fn limit(&self, id: Id) -> Result<Sourced<Option<u32>>, ConfigError> {
        let raw = self.single(id);
        Ok((raw.as_ref().map(parse_count).transpose()?, raw))
    }

    /// One of a choice's words, else the table's default; the table's row names the same type
    /// (a test reads every word of each row).
    pub(crate) fn choice<T: Choice>(&self, id: Id) -> Result<T, ConfigError> {
        let Parser::Choice { default, .. } = id.setting().parser else { unreachable!("{id:?} is no choice") };
        let raw = self.single(id).unwrap_or_else(|| Raw { value: default.to_string(), source: Source::Default });
        T::from_word(raw.value.trim()).ok_or_else(|| raw.invalid(id.setting().placeholder().replace('|', " or ")))
    }

    /// A path setting: the value given, or the table's default and that it is one.
    pub(crate) fn path(&self, id: Id) -> (String, bool) {
        let Parser::Path { default } = id.setting().parser else { unreachable!("{id:?} is no path") };
        self.single(id).map_or((default.to_string(), true), |raw| (raw.value, false))
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
fn parse_duration(raw: &Raw, min: Duration) -> Result<Duration, ConfigError> {
    let value = raw.value.trim();
    let d = humantime::parse_duration(value)
        .map_err(|_| raw.invalid("a positive duration with a unit, such as 500ms, 90s, 5m or 1h30m"))?;
    if in_months_or_years(value) {
        // `M` is the only capital letter humantime takes: in lower case it is minutes.
        let meant =
            if value.contains('M') { format!(": did you mean {}?", value.to_ascii_lowercase()) } else { String::new() };
        return Err(raw.invalid(format!(
            "a duration in seconds, minutes, hours or days, such as 90s, 5m or 2h; not in months or years{meant}"
        )));
    }
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

/// Whether a duration humantime took has a unit of months (`M`, `month`, `months`) or years
/// (`y`, `yr`, `yrs`, `year`, `years`): humantime reads `5M` as five months, so `--timeout 5M`
/// would wait five months for one who meant minutes, and no gate should wait a month or a year.
/// Go's durations, which the guarded clients take, know neither. Among humantime's units only
/// these have an `M`, an `mo` or a `y` not after an `a` (`day`).
fn in_months_or_years(value: &str) -> bool {
    let b = value.as_bytes();
    value.contains("mo") || (0..b.len()).any(|i| b[i] == b'M' || b[i] == b'y' && (i == 0 || b[i - 1] != b'a'))
}

/// A whole number of at least 1.
fn parse_count(raw: &Raw) -> Result<u32, ConfigError> {
    match raw.value.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(raw.invalid("a whole number of at least 1 (leave it unset for no limit)")),
    }
}
