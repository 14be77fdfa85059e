//! Every setting in one table ([`SETTINGS`]): its flag, short flag, environment variable,
//! oauth2-proxy fallback, default, help, parser and group, written once.
//!
//! The table drives everything that names a setting: the command line (the clap command is built
//! from it), the environment lookup and its precedence (`config`), `--help` with defaults and
//! variables, the unknown-variable suggestions, `--dry-run` and the start-up line, and the README
//! check in `tests/structure.rs`. A setting added here is offered everywhere at once; one missing
//! here exists nowhere. Values stay raw strings on this side; `config` parses them by the entry's
//! [`Parser`], so every error can name the flag or variable it came from.
//!
//! Why every flag has a variable: Helm values and kustomize patches set `env:` far more easily
//! than they edit `args:`, and need no shell to expand `${}`. Why oauth2-proxy's variables are a
//! fallback: one `envFrom` can then configure the proxy and its gate alike.

use clap::{Arg, ArgAction, ArgMatches, Command};
use std::time::Duration;

/// A setting's name in code. The discriminant is its row in [`SETTINGS`] (checked when compiled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Id {
    Issuer,
    Resource,
    DiscoveryUrl,
    Metadata,
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
    CaFile,
    ConnectTo,
    TokenFile,
    RefusePrivateAddresses,
    HeaderFile,
    Output,
    TerminationLog,
    Quiet,
    DryRun,
}

/// How many values a flag takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arity {
    /// A boolean: the flag alone, or its variable set to true or false.
    Switch,
    /// One value; the flag given twice is a usage error.
    One,
    /// Repeatable; its variable holds a comma-separated list.
    Many,
}

/// How a value is read: what `config` turns the raw string into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parser {
    Switch,
    /// An absolute http(s) URL, checked as the client would.
    Url,
    Path,
    /// A positive duration with a unit, at least `min` (zero: any positive one).
    Duration {
        min: Duration,
    },
    /// A whole number of at least 1.
    Count,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// `HOST:PORT:CONNECT_HOST:CONNECT_PORT`, as curl's `--connect-to`.
    ConnectTo,
    /// `NAME=PATH`: an HTTP header's name and the file holding its value.
    HeaderFile,
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
            Group::Output => "Output",
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
    /// The value when nothing sets it, parsed like any other; `None`: unset (no limit, no file).
    pub(crate) default: Option<&'static str>,
    /// What `--help` and `--dry-run` say when there is no default.
    pub(crate) unset: &'static str,
    pub(crate) value_name: &'static str,
    pub(crate) arity: Arity,
    pub(crate) parser: Parser,
    pub(crate) group: Group,
    pub(crate) help: &'static str,
}

/// What every variable of ours starts with.
const PREFIX: &str = "WAIT_FOR_IDP_";

/// The shortest `--timeout`: less leaves no time for a single attempt.
pub(crate) const MIN_TIMEOUT: Duration = Duration::from_millis(100);
/// Where the kubelet reads a container's termination message.
pub(crate) const TERMINATION_LOG: &str = "/dev/termination-log";

mod table;

pub(crate) use table::SETTINGS;

// Each row sits at its id's index, so `Id::setting` cannot miss: a misplaced row fails the build.
const _: () = {
    assert!(SETTINGS.len() == Id::DryRun as usize + 1);
    let mut i = 0;
    while i < SETTINGS.len() {
        assert!(SETTINGS[i].id as usize == i, "SETTINGS is not in Id order");
        i += 1;
    }
};

impl Id {
    pub(crate) fn setting(self) -> &'static Setting {
        &SETTINGS[self as usize]
    }

    /// The flag as typed, `--issuer`.
    pub(crate) fn flag(self) -> String {
        format!("--{}", self.setting().flag)
    }
}

const ABOUT: &str = "Wait until an OpenID Connect issuer really serves its metadata, then exit.";
const LONG_ABOUT: &str = "Wait until an OpenID Connect issuer really serves its metadata, then exit.\n\n\
    Polls the issuer's discovery document with full TLS verification, checks it the way the real client \
    will (exact issuer, required members) and exits 0 the moment it passes. When the deadline passes first \
    it fails open (exit 0 with a warning) unless --fail-closed.\n\n\
    Exit codes: 0 ready, or not ready and failing open; 1 not ready with --fail-closed or --once; 2 usage or \
    configuration error; 130/143 interrupted by SIGINT/SIGTERM.\n\n\
    An environment variable that is set but empty counts as unset.";
const AFTER_HELP: &str =
    "Exit codes: 0 ready (or failed open), 1 not ready (--fail-closed, --once), 2 bad configuration, 130/143 signal.";

/// The help text of one setting: its own words, then its limit and default, then its variables.
fn help(s: &Setting) -> String {
    let mut help = s.help.to_string();
    let mut shown = Vec::new();
    if let Parser::Duration { min } = s.parser
        && !min.is_zero()
    {
        shown.push(format!("at least {}", humantime::format_duration(min)));
    }
    match (s.default, s.unset) {
        (Some(d), _) => shown.push(format!("[default: {d}]")),
        (None, u) if s.parser == Parser::Count && !u.is_empty() => shown.push(format!("[default: {u}]")),
        _ => {}
    }
    if !shown.is_empty() {
        help = format!("{help}; {}", shown.join(" "));
    }
    match (s.env, s.fallback) {
        (Some(env), Some(fallback)) => format!("{help} [env: {env}, else {fallback}]"),
        (Some(env), None) => format!("{help} [env: {env}]"),
        _ => help,
    }
}

/// The clap command, built from the table.
pub(crate) fn command() -> Command {
    let mut cmd = Command::new("wait-for-idp")
        .version(env!("CARGO_PKG_VERSION"))
        .about(ABOUT)
        .long_about(LONG_ABOUT)
        .after_help(AFTER_HELP);
    for s in SETTINGS {
        let mut arg = Arg::new(s.flag).long(s.flag).help(help(s)).help_heading(s.group.heading());
        if let Some(short) = s.short {
            arg = arg.short(short);
        }
        arg = match s.arity {
            Arity::Switch => arg.action(ArgAction::SetTrue),
            Arity::One => arg.action(ArgAction::Set).value_name(s.value_name).allow_hyphen_values(true),
            Arity::Many => arg.action(ArgAction::Append).value_name(s.value_name),
        };
        cmd = cmd.arg(arg);
    }
    cmd
}

/// What the command line gave: each setting's values, in the order typed.
#[derive(Debug, Default)]
pub(crate) struct Given {
    values: Vec<Vec<String>>,
}

impl Given {
    /// Parses arguments (the first is the program name).
    pub(crate) fn parse_from<I, T>(args: I) -> Result<Given, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = command().try_get_matches_from(args)?;
        Ok(Given::from_matches(&matches))
    }

    fn from_matches(matches: &ArgMatches) -> Given {
        let values = SETTINGS
            .iter()
            .map(|s| match s.arity {
                Arity::Switch => {
                    if matches.get_flag(s.flag) {
                        vec!["true".to_string()]
                    } else {
                        Vec::new()
                    }
                }
                _ => matches.get_many::<String>(s.flag).map(|v| v.cloned().collect()).unwrap_or_default(),
            })
            .collect();
        Given { values }
    }

    /// The values given for a setting on the command line (a switch given: `["true"]`).
    pub(crate) fn get(&self, id: Id) -> &[String] {
        self.values.get(id as usize).map_or(&[], Vec::as_slice)
    }
}

/// `WAIT_FOR_IDP_*` variables that no setting reads, each with the likely intended one. A typo in
/// a Helm value would otherwise be ignored without a word.
pub(crate) fn unknown_variables(names: impl Iterator<Item = String>) -> Vec<(String, Option<&'static str>)> {
    let known: Vec<&str> = SETTINGS.iter().filter_map(|s| s.env).collect();
    names
        .filter(|n| n.starts_with(PREFIX) && !known.contains(&n.as_str()))
        .map(|n| {
            let closest = known
                .iter()
                .map(|env| (edit_distance(&n, env), *env))
                .min()
                .filter(|(d, _)| *d <= 3)
                .map(|(_, env)| env);
            (n, closest)
        })
        .collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_but_once_and_dry_run_has_a_variable_named_in_its_help() {
        let cmd = command();
        for s in SETTINGS {
            let arg = cmd.get_arguments().find(|a| a.get_id() == s.flag).unwrap();
            let help = arg.get_help().unwrap().to_string();
            match s.env {
                Some(env) => assert!(help.contains(&format!("[env: {env}")), "--{} help does not name {env}", s.flag),
                None => assert!(matches!(s.id, Id::Once | Id::DryRun), "--{} has no variable", s.flag),
            }
        }
    }

    #[test]
    fn unknown_variables_are_named_with_a_suggestion() {
        let names = ["WAIT_FOR_IDP_TIMOUT", "WAIT_FOR_IDP_ISSUER", "HOME", "WAIT_FOR_IDP_COLOUR"];
        let unknown = unknown_variables(names.iter().map(|s| s.to_string()));
        assert_eq!(
            unknown,
            vec![
                ("WAIT_FOR_IDP_TIMOUT".to_string(), Some("WAIT_FOR_IDP_TIMEOUT")),
                ("WAIT_FOR_IDP_COLOUR".to_string(), None)
            ]
        );
    }

    #[test]
    fn repeatable_flags_collect() {
        let given =
            Given::parse_from(["w", "--issuer", "https://a", "--issuer", "https://b", "--ca-file", "x"]).unwrap();
        assert_eq!(given.get(Id::Issuer), ["https://a", "https://b"]);
        assert_eq!(given.get(Id::CaFile), ["x"]);
        assert!(given.get(Id::Once).is_empty());
    }

    #[test]
    fn flags_are_named_after_their_id_and_variables_after_their_flag() {
        for s in SETTINGS {
            let words: String = format!("{:?}", s.id).chars().flat_map(|c| c.to_lowercase()).collect();
            assert_eq!(words, s.flag.replace('-', ""), "{:?}", s.id);
            if let Some(env) = s.env {
                assert_eq!(env.strip_prefix(PREFIX), Some(s.flag.replace('-', "_").to_uppercase().as_str()));
            }
        }
    }
}
