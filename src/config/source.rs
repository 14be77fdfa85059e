//! Where each setting came from ([`Source`]), and a value with its origin ([`Raw`]), so that
//! every error can point at the flag or variable that set it.

use crate::settings::Id;
use std::fmt;

/// Where a setting came from, so that an error can point at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    Flag(Id),
    Env(&'static str),
    /// Nothing set it: the table's default.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag(id) => write!(f, "{}", id.flag()),
            Source::Env(name) => write!(f, "{name}"),
            Source::Default => write!(f, "default"),
        }
    }
}

/// A raw value and its origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Raw {
    pub(crate) value: String,
    pub(crate) source: Source,
}

/// A parsed value and the raw one it came from (`None`: nothing set it).
pub(crate) type Sourced<T> = (T, Option<Raw>);
