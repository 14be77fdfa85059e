//! How the wait ended, the facts every report is made from: each target's result and what cut
//! it short, and the outcome of the run.

use super::exit_code::ExitCode;
use crate::config::Target;
use crate::wait::{Tally, Verdict};

/// What ended the wait for the targets still waiting then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// The deadline, or every target finished.
    Deadline,
    /// This target (an index into the configuration's) finished not ready, which decided the
    /// outcome: the others were cut short.
    By(usize),
    /// This signal.
    Signal(i32),
}

/// One target's result: an `--issuer`'s or a `--resource`'s.
pub(crate) struct TargetResult<'a> {
    pub(crate) target: &'a Target,
    /// `None`: still waiting when the process ended (see `stopped`).
    pub(crate) verdict: Option<Verdict>,
    pub(crate) tally: &'a Tally,
    pub(crate) stopped: Stopped,
    /// Where an attempt still under way at the end had got to.
    pub(crate) in_flight: Option<String>,
}

/// How one target's wait ended, from its own verdict or, still waiting, from what ended the
/// run. Decided here only: the final line and the JSON's `verdict` both say this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    Ready,
    /// The timeout used up, by this target or while it was still waiting.
    DeadlineReached,
    AttemptsExhausted,
    /// A certificate oauth2-proxy would not check: retrying could not help.
    CertificateRejected,
    /// Another failure that waiting cannot fix (the guarded client's own refusal, an issuer
    /// that differs by a trailing `/` or a default port): the wait ended at once.
    Conclusive,
    /// Still waiting when this target (an index into the configuration's) decided the outcome.
    CutShort(usize),
    /// Still waiting when a signal ended the run.
    Interrupted,
}

impl Ended {
    /// The JSON's `verdict`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Ended::Ready => "ready",
            Ended::DeadlineReached => "deadline-reached",
            Ended::AttemptsExhausted => "attempts-exhausted",
            Ended::CertificateRejected => "certificate-rejected",
            Ended::Conclusive => "conclusive",
            Ended::CutShort(_) => "cut-short",
            Ended::Interrupted => "interrupted",
        }
    }
}

impl TargetResult<'_> {
    pub(crate) fn ended(&self) -> Ended {
        match (self.verdict, self.stopped) {
            (Some(Verdict::Ready), _) => Ended::Ready,
            (Some(Verdict::DeadlineReached), _) | (None, Stopped::Deadline) => Ended::DeadlineReached,
            (Some(Verdict::AttemptsExhausted), _) => Ended::AttemptsExhausted,
            (Some(Verdict::Conclusive), _)
                if self.tally.last_failure.as_ref().is_some_and(|f| f.class == crate::probe::FailureClass::Tls) =>
            {
                Ended::CertificateRejected
            }
            (Some(Verdict::Conclusive), _) => Ended::Conclusive,
            (None, Stopped::By(i)) => Ended::CutShort(i),
            (None, Stopped::Signal(_)) => Ended::Interrupted,
        }
    }
}

/// How the run ended, and the exit code that says so (README: "Exit codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ready,
    /// Not ready, and exiting 0 anyway: the default, so the worst case is no gate at all.
    FailedOpen,
    /// Not ready, with `--fail-closed` or `--once`.
    NotReady,
    /// Ended by this signal.
    Interrupted(i32),
}

impl Outcome {
    pub(crate) fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Ready | Outcome::FailedOpen => ExitCode::Success,
            Outcome::NotReady => ExitCode::NotReady,
            Outcome::Interrupted(signal) => ExitCode::Interrupted(signal),
        }
    }

    /// Whether the workload may start: ready, or failing open. Only then does the gate hand over
    /// to the command after `--`.
    pub(crate) fn starts_workload(self) -> bool {
        matches!(self, Outcome::Ready | Outcome::FailedOpen)
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Ready => "ready",
            Outcome::FailedOpen => "failed-open",
            Outcome::NotReady => "not-ready",
            Outcome::Interrupted(_) => "interrupted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_open_exits_0_and_failing_closed_1() {
        assert_eq!(Outcome::Ready.exit_code(), ExitCode::Success);
        assert_eq!(Outcome::FailedOpen.exit_code(), ExitCode::Success);
        assert_eq!(Outcome::NotReady.exit_code(), ExitCode::NotReady);
        assert_eq!(Outcome::Interrupted(15).exit_code(), ExitCode::Interrupted(15));
    }

    #[test]
    fn only_ready_and_failing_open_start_the_workload() {
        assert!(Outcome::Ready.starts_workload());
        assert!(Outcome::FailedOpen.starts_workload());
        assert!(!Outcome::NotReady.starts_workload());
        assert!(!Outcome::Interrupted(15).starts_workload());
    }
}
