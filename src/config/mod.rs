//! Turns the command line and the environment into validated settings, in one pass and in one
//! place: every setting of the table (`settings`), the proxy variables, Go's and oauth2-proxy's
//! trust variables, and the unknown `WAIT_FOR_IDP_*` names.
//!
//! Three steps, each in a function of its own ([`read`]): read every value by precedence and
//! parse it ([`inputs`]), check the settings that cannot go together, then load the files they
//! name ([`files`], [`trust`]); the command after `--`, if any, is taken as it is. Derived
//! settings are decided here and nowhere else: `--once` is one attempt, failing closed;
//! `--jwks-url` implies `--check-jwks`.
//! Nothing invalid is ever replaced by a default: every problem is a [`ConfigError`] naming the
//! flag or variable and what would be right, and the process exits 2. What is worth saying but
//! not wrong comes back as [`Notice`]s, to be logged once logging is up.
//!
//! The settings are grouped by who uses them ([`Checks`] by the probe, [`Timing`] by the wait,
//! [`Network`] by the HTTP client), so that the process passes each group on as it is.

mod connect_to;
mod drift;
mod environment;
mod error;
mod files;
mod header_files;
mod inputs;
mod notice;
mod problems;
mod read;
mod source;
mod trust;
mod types;

pub(crate) use connect_to::ConnectTo;
pub(crate) use environment::process_names;
pub(crate) use error::{ConfigError, Conflict};
pub(crate) use header_files::HeaderFile;
pub(crate) use notice::Notice;
pub(crate) use problems::{ConnectToProblem, HeaderNameProblem};
pub(crate) use read::load;
pub(crate) use source::{Raw, Source};
pub(crate) use trust::Trust;
pub(crate) use types::{Checks, Config, Loaded, Network, Output, RunMode, Serve, Target, TerminationLog, Timing};

#[cfg(test)]
mod tests;
