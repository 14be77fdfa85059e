//! The process's exit code: one type for every way the program ends (README: "Exit codes"). The
//! number is taken from it once, when `main` returns.

/// How the process exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExitCode {
    /// 0: ready, or not ready and failing open; also `--dry-run`, `--help` and `--version`.
    Success,
    /// 1: not ready, with `--fail-closed` or `--once`.
    NotReady,
    /// 2: a usage or configuration error, found by clap or by the configuration's checks.
    Usage,
    /// 126: the command after `--` was found but could not be run (not executable, or another
    /// reason `execve` gave), as `env` and `sh` report it.
    CommandCannotRun,
    /// 127: the command after `--` was not found, as `env` and `sh` report it.
    CommandNotFound,
    /// 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), as a shell reports a process
    /// that signal ended.
    Interrupted(i32),
}

impl ExitCode {
    /// What clap's own handling would exit with: 0 for `--help` and `--version` (printed on
    /// stdout), 2 for everything it reports as an error (on stderr).
    pub(crate) fn of_clap(e: &clap::Error) -> ExitCode {
        if e.use_stderr() { ExitCode::Usage } else { ExitCode::Success }
    }

    /// The number the process exits with.
    pub(crate) fn code(self) -> i32 {
        match self {
            ExitCode::Success => 0,
            ExitCode::NotReady => 1,
            ExitCode::Usage => 2,
            ExitCode::CommandCannotRun => 126,
            ExitCode::CommandNotFound => 127,
            ExitCode::Interrupted(signal) => 128 + signal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Given;
    use libc::{SIGINT, SIGTERM};

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(ExitCode::Success.code(), 0);
        assert_eq!(ExitCode::NotReady.code(), 1);
        assert_eq!(ExitCode::Usage.code(), 2);
        assert_eq!(ExitCode::CommandCannotRun.code(), 126);
        assert_eq!(ExitCode::CommandNotFound.code(), 127);
        assert_eq!(ExitCode::Interrupted(SIGINT).code(), 130);
        assert_eq!(ExitCode::Interrupted(SIGTERM).code(), 143);
    }

    #[test]
    fn clap_help_and_version_succeed_and_its_errors_are_usage_errors() {
        let cases: [(&[&str], ExitCode); 4] = [
            (&["--help"], ExitCode::Success),
            (&["--version"], ExitCode::Success),
            (&["--no-such-flag"], ExitCode::Usage),
            (&["--timeout"], ExitCode::Usage),
        ];
        for (args, expected) in cases {
            let e = Given::parse_from(std::iter::once("wait-for-idp").chain(args.iter().copied()))
                .err()
                .unwrap_or_else(|| panic!("{args:?} parsed"));
            assert_eq!(ExitCode::of_clap(&e), expected, "{args:?}");
            assert_eq!(ExitCode::of_clap(&e).code(), e.exit_code(), "{args:?}: clap's own code");
        }
        for kind in [clap::error::ErrorKind::DisplayHelp, clap::error::ErrorKind::DisplayVersion] {
            assert_eq!(ExitCode::of_clap(&clap::Error::new(kind)), ExitCode::Success, "{kind:?}");
        }
        for kind in [
            clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand,
            clap::error::ErrorKind::MissingRequiredArgument,
            clap::error::ErrorKind::InvalidValue,
        ] {
            assert_eq!(ExitCode::of_clap(&clap::Error::new(kind)), ExitCode::Usage, "{kind:?}");
        }
    }
}
