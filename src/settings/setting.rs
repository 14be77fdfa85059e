//! What a setting is: its name in code ([`Id`]), how many values it takes, how its value is
//! parsed, its group in `--help`, and the row that says all of it once ([`Setting`]).

use std::time::Duration;

/// A setting's name in code. The discriminant is its row in [`super::SETTINGS`] (checked when compiled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Id {
    Issuer,
    Resource,
    DiscoveryUrl,
    Metadata,
    Client,
    SkipIssuerCheck,
    Strict,
    CheckJwks,
    JwksUrl,
    RefuseLegacyAuth,
    Timeout,
    Interval,
    AttemptTimeout,
    MaxAttempts,
    Successes,
    FailClosed,
    Once,
    Serve,
    WatchInterval,
    WatchFailures,
    CaFile,
    ConnectTo,
    TokenFile,
    RefusePrivateAddresses,
    HeaderFile,
    Output,
    TerminationLog,
    Quiet,
    DryRun,
    LogLevel,
    Verbose,
    LogFormat,
}

/// How many values a flag takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arity {
    /// A boolean: the flag alone (true), `--flag=true` or `--flag=false` as Go's pflag takes
    /// them, or its variable set to true or false.
    Switch,
    /// A flag that counts how often it is given (`-vv`).
    Count,
    /// One value; the flag given twice is a usage error.
    One,
    /// Repeatable; its variable holds a comma-separated list.
    Many,
}

/// How a value is read, where the table decides it, and its default, typed as the value is: the
/// one place a default is written, and one a reader cannot miss (a duration, a count or a choice
/// has one by its kind, not by an `Option` the reader must trust). The rest are read as they are
/// and checked by `config` by the setting's own rules (a URL, a path, a `--connect-to` rule, an
/// address), and are unset by default.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Parser {
    Plain,
    /// A file's path, this one when unset.
    Path {
        default: &'static str,
    },
    /// A positive duration with a unit, at least `min` (zero: any positive one).
    Duration {
        min: Duration,
        default: Duration,
    },
    /// A whole number of at least 1, this one when unset.
    Count {
        default: u32,
    },
    /// A whole number of at least 1; unset, no limit.
    Limit,
    /// One of a [`super::Choice`]'s words (its type's [`super::Choice::words`]), this one when unset.
    Choice {
        words: fn() -> Vec<&'static str>,
        default: &'static str,
    },
}

/// Where a flag is listed in `--help`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Group {
    Target,
    Timing,
    Network,
    Output,
}

impl Group {
    pub(crate) fn heading(self) -> &'static str {
        match self {
            Group::Target => "What to wait for",
            Group::Timing => "Timing and outcome",
            Group::Network => "TLS and network",
            Group::Output => "Output and logging",
        }
    }
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Setting {
    pub(crate) id: Id,
    /// The long flag, without `--`.
    pub(crate) flag: &'static str,
    pub(crate) short: Option<char>,
    /// `WAIT_FOR_IDP_*`; none for the flags that only make sense typed (`--once`, `--dry-run`).
    pub(crate) env: Option<&'static str>,
    /// oauth2-proxy's variable, read when neither the flag nor `env` is set.
    pub(crate) fallback: Option<&'static str>,
    /// What `--help` and `--dry-run` say when there is no default.
    pub(crate) unset: &'static str,
    pub(crate) value_name: &'static str,
    pub(crate) arity: Arity,
    pub(crate) parser: Parser,
    pub(crate) group: Group,
    /// One line for `-h`; empty: `help` is short enough.
    pub(crate) brief: &'static str,
    /// What `--help` says; its limit, default and variables are added to it.
    pub(crate) help: &'static str,
}

/// What every variable of ours starts with.
pub(super) const PREFIX: &str = "WAIT_FOR_IDP_";

/// The shortest `--timeout`: less leaves no time for a single attempt.
pub(crate) const MIN_TIMEOUT: Duration = Duration::from_millis(100);
/// Where the kubelet reads a container's termination message.
pub(crate) const TERMINATION_LOG: &str = "/dev/termination-log";

impl Setting {
    /// What `--help` calls the value: a choice's words (`oidc|oauth|auto`), else the table's name.
    pub(crate) fn placeholder(&self) -> String {
        match self.parser {
            Parser::Choice { words, .. } => words().join("|"),
            _ => self.value_name.to_string(),
        }
    }

    /// The default as `--help` says it, from the parser's typed value; `None`: unset (no limit,
    /// no file).
    pub(crate) fn default_text(&self) -> Option<String> {
        match self.parser {
            Parser::Plain | Parser::Limit => None,
            Parser::Path { default } | Parser::Choice { default, .. } => Some(default.to_string()),
            Parser::Duration { default, .. } => Some(humantime::format_duration(default).to_string()),
            Parser::Count { default } => Some(default.to_string()),
        }
    }
}
