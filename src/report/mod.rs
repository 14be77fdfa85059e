//! Everything the tool says: one log line per attempt, the summary, the final line, the
//! termination message and the `--once` summary. Lines are written for people reading
//! `kubectl logs` on a bad morning: what failed, why, and how long the gate will still wait.
//!
//! One module per job:
//! - [`log_lines`]: logging set-up and the line for each attempt, with its throttle;
//! - [`log_sink`]: the log's way to stderr, through a queue, so that no line waits for stderr;
//! - [`before_wait`]: the usage error, `--dry-run` and the notices before the first attempt;
//! - [`outcome`]: how each target's wait and the run ended, what the reports are made from;
//! - [`failure_text`]: a failure in words, the one renderer of every line and field that shows one;
//! - [`exit_code`]: the process's exit code, one type for every way the program ends;
//! - [`json`]: the `--output json` summary, a public interface;
//! - [`once`]: the `--once` summary on stdout;
//! - [`conclusion`]: what to say when the wait ends;
//! - [`delivery`]: saying it, bounded in time, to stderr, stdout and the termination log, and the
//!   last word when the hand-over to the command after `--` does not happen;
//! - [`last_resort`]: the last word when memory runs out or an internal error stops the process.

mod before_wait;
mod conclusion;
mod delivery;
mod exit_code;
mod failure_text;
mod json;
mod last_resort;
mod log_lines;
mod log_sink;
mod once;
mod outcome;
mod target_label;
mod thread_state;

pub(crate) use before_wait::{dry_run, startup, usage_error};
pub(crate) use conclusion::{cannot_wait, conclude, interrupted};
pub(crate) use delivery::cannot_hand_over;
pub(crate) use exit_code::ExitCode;
pub(crate) use failure_text::line as failure_line;
pub(crate) use last_resort::prepare as prepare_last_word;
pub(crate) use log_lines::{LineThrottle, init_logging, log_attempt};
pub(crate) use outcome::{Outcome, Stopped, TargetResult};
pub(crate) use target_label::label;
