//! The command line: the clap command built from the table, and what it gave ([`Given`]), each
//! setting's values as typed and the command after `--`.

use super::help;
use super::setting::{Arity, Id, Parser};
use super::suggest;
use super::table::SETTINGS;
use clap::{Arg, ArgAction, ArgMatches, Command};
/// The positional that holds `-- COMMAND [ARGS…]`.
const THEN: &str = "COMMAND";

/// The clap command, built from the table. Public (hidden) for the example that writes the shell
/// completions and the man page from it (`examples/gen-docs.rs`).
#[doc(hidden)]
pub fn command() -> Command {
    command_for(true)
}

/// The clap command; its long help only for `--help`. Writing and wrapping every setting's to 80
/// columns was three fifths of a `--dry-run`'s instructions (a profile), on every start, for text
/// that only `--help` shows.
fn command_for(long_help: bool) -> Command {
    // `-h` is one screen, a line a flag: clap's own layout puts a long `<VALUE>` on a line of its
    // own, so the rows are hidden from it and written by `help::summary` after the usage.
    let mut cmd = Command::new("wait-for-idp")
        .version(help::VERSION)
        .about(help::ABOUT)
        .after_help(help::summary())
        .after_long_help(help::AFTER_LONG_HELP)
        .max_term_width(help::WIDTH)
        .disable_help_flag(true)
        .disable_version_flag(true)
        .arg(Arg::new("help").short('h').long("help").action(ArgAction::Help).help("Print help").hide_short_help(true))
        .arg(
            Arg::new("version")
                .short('V')
                .long("version")
                .action(ArgAction::Version)
                .help("Print the version and commit")
                .hide_short_help(true),
        )
        .arg(
            Arg::new(THEN)
                .help("Run COMMAND in the gate's place when ready or failing open")
                .hide_short_help(true)
                .num_args(1..)
                .last(true)
                .allow_hyphen_values(true)
                .value_parser(clap::value_parser!(std::ffi::OsString))
                .value_name("COMMAND"),
        );
    if long_help {
        cmd = cmd
            .long_about(help::wrap(help::LONG_ABOUT, help::WIDTH))
            .mut_arg(THEN, |a| a.long_help(help::wrap(THEN_HELP, help::WIDTH - help::INDENT)));
    }
    for s in SETTINGS {
        let mut arg =
            Arg::new(s.flag).long(s.flag).help(help::brief(s)).help_heading(s.group.heading()).hide_short_help(true);
        if long_help {
            arg = arg.long_help(help::wrap(&help::full(s), help::WIDTH - help::INDENT));
        }
        if let Some(short) = s.short {
            arg = arg.short(short);
        }
        // clap keeps a value name for the life of the command, which is the process's.
        let placeholder: &'static str = match s.parser {
            Parser::Choice { .. } => s.placeholder().leak(),
            _ => s.value_name,
        };
        arg = match s.arity {
            // As Go's pflag: `--fail-closed`, `--fail-closed=true`, `--fail-closed=false`; the
            // value is parsed with the variables' words, so a bad one names the flag.
            Arity::Switch => arg
                .action(ArgAction::Append)
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("true")
                .value_name("BOOL"),
            Arity::Count => arg.action(ArgAction::Count),
            Arity::One => arg.action(ArgAction::Set).value_name(placeholder).allow_hyphen_values(true),
            Arity::Many => arg.action(ArgAction::Append).value_name(placeholder),
        };
        cmd = cmd.arg(arg);
    }
    cmd
}

const THEN_HELP: &str = "-- COMMAND [ARGS]...: run COMMAND when ready or failing open, in place of the gate (exec: same process, same \
    environment, no shell; PATH searched). Not run when failing closed or interrupted; 127 if not found, 126 if \
    it cannot run";

/// What the command line gave: each setting's values, in the order typed, and the command to
/// hand over to.
#[derive(Debug, Default)]
pub(crate) struct Given {
    values: Vec<Vec<String>>,
    then: Then,
}

/// What came after `--`.
///
/// Not a row of the table, and with no variable: the table's settings are what Helm values and
/// kustomize patches set through `env:`, while a command is the workload itself, written where
/// the image or the manifest names what to run (`ENTRYPOINT`/`CMD`, `command:`/`args:`,
/// `ExecStart=`). Its arguments are raw bytes, as the kernel passes them, not UTF-8 strings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Then {
    /// No `--`: the gate exits with its own code.
    #[default]
    Nothing,
    /// `--` with nothing after it: a usage error (`config` says so).
    Empty,
    /// `-- COMMAND [ARGS…]`.
    Command(ThenCommand),
}

/// The command to become when the gate lets the workload start. Its `Debug` shows the program
/// and only the number of its arguments: they may hold secrets (`vault write … password=…`), and
/// nothing the gate prints may carry one.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ThenCommand {
    pub(crate) program: std::ffi::OsString,
    pub(crate) args: Vec<std::ffi::OsString>,
}

impl ThenCommand {
    /// The program as given, for people: lossy UTF-8, control characters escaped so that a name
    /// cannot forge a log line. Never the arguments.
    pub(crate) fn name(&self) -> String {
        self.program
            .to_string_lossy()
            .chars()
            .flat_map(|c| {
                let escaped: Vec<char> = if c.is_control() { c.escape_default().collect() } else { vec![c] };
                escaped
            })
            .collect()
    }
}

impl std::fmt::Debug for ThenCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ThenCommand({:?} and {} argument(s), not shown)", self.name(), self.args.len())
    }
}

impl Given {
    /// Parses arguments (the first is the program name).
    pub(crate) fn parse_from<I, T>(args: I) -> Result<Given, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        let long_help = args.iter().any(|a| a == "--help");
        let matches = command_for(long_help).try_get_matches_from(&args).map_err(|e| suggest::explain(e, &args))?;
        let mut given = Given::from_matches(&matches);
        given.then = match matches.get_many::<std::ffi::OsString>(THEN) {
            Some(mut words) => match words.next() {
                Some(program) => {
                    Then::Command(ThenCommand { program: program.clone(), args: words.cloned().collect() })
                }
                None => Then::Empty,
            },
            // clap takes a `--` with nothing after it for no command at all. A `--` typed last
            // is that, unless it was a flag's value (`--termination-log --`), which is odd
            // enough to be refused as well.
            None if args.len() > 1 && args.last().is_some_and(|a| a == "--") => Then::Empty,
            None => Then::Nothing,
        };
        Ok(given)
    }

    fn from_matches(matches: &ArgMatches) -> Given {
        let values = SETTINGS
            .iter()
            .map(|s| match s.arity {
                Arity::Count => vec!["true".to_string(); usize::from(matches.get_count(s.flag))],
                _ => matches.get_many::<String>(s.flag).map(|v| v.cloned().collect()).unwrap_or_default(),
            })
            .collect();
        Given { values, then: Then::Nothing }
    }

    /// What came after `--`.
    pub(crate) fn then(&self) -> &Then {
        &self.then
    }

    /// The values given for a setting on the command line, in order (a switch given alone:
    /// `["true"]`; a count: one `"true"` each time).
    pub(crate) fn get(&self, id: Id) -> &[String] {
        self.values.get(id as usize).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::setting::PREFIX;

    #[test]
    fn every_setting_but_once_dry_run_and_verbose_has_a_variable_named_in_its_help() {
        let cmd = command();
        for s in SETTINGS {
            let arg = cmd.get_arguments().find(|a| a.get_id() == s.flag).unwrap();
            let help = arg.get_long_help().unwrap().to_string();
            match s.env {
                Some(env) => assert!(help.contains(&format!("[env: {env}")), "--{} help does not name {env}", s.flag),
                None => assert!(matches!(s.id, Id::Once | Id::DryRun | Id::Verbose), "--{} has no variable", s.flag),
            }
        }
    }

    /// A choice's words are written once, beside their values; the prose that names them for
    /// people (`-h`'s line, `--help`'s text) must still name each.
    #[test]
    fn a_choice_settings_help_names_each_of_its_words() {
        for s in SETTINGS {
            let Parser::Choice { words, .. } = s.parser else { continue };
            for word in words() {
                assert!(s.brief.contains(word) || s.help.contains(word), "--{}'s help does not name {word}", s.flag);
            }
            assert!(s.value_name.is_empty(), "--{}: the value name is its words", s.flag);
        }
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
    fn the_words_after_double_dash_are_the_command_and_its_arguments() {
        let given =
            Given::parse_from(["w", "--issuer", "https://a", "--", "vault", "write", "--force", "-x", "--"]).unwrap();
        let Then::Command(then) = given.then() else { panic!("{:?}", given.then()) };
        assert_eq!(then.program, "vault");
        assert_eq!(then.args, ["write", "--force", "-x", "--"]);
        assert_eq!(given.get(Id::Issuer), ["https://a"]);
        // Flags after `--` are the command's, not the gate's.
        let given = Given::parse_from(["w", "--", "sh", "--timeout", "1s"]).unwrap();
        assert!(given.get(Id::Timeout).is_empty());
        assert!(matches!(given.then(), Then::Command(t) if t.program == "sh" && t.args == ["--timeout", "1s"]));
    }

    #[test]
    fn double_dash_alone_is_empty_and_no_double_dash_is_nothing() {
        assert_eq!(*Given::parse_from(["w", "--issuer", "https://a", "--"]).unwrap().then(), Then::Empty);
        assert_eq!(*Given::parse_from(["w", "--issuer", "https://a"]).unwrap().then(), Then::Nothing);
        assert_eq!(*Given::parse_from(["w"]).unwrap().then(), Then::Nothing);
        // A stray word without `--` is still clap's usage error, not a command.
        assert!(Given::parse_from(["w", "--issuer", "https://a", "vault"]).is_err());
    }

    #[test]
    fn a_command_shows_its_name_but_never_its_arguments() {
        let then = ThenCommand { program: "vault\nERROR forged".into(), args: vec!["password=hunter2".into()] };
        assert_eq!(then.name(), "vault\\nERROR forged");
        let debug = format!("{then:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("1 argument(s)"), "{debug}");
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
