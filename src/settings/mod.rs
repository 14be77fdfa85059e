//! Every setting in one table ([`SETTINGS`]): its flag, short flag, environment variable,
//! oauth2-proxy fallback, default, help, parser and group, written once.
//!
//! The table drives everything that names a setting: the command line (the clap command is built
//! from it), the environment lookup and its precedence (`config`), `--help` with defaults and
//! variables, the unknown-variable suggestions, `--dry-run` and the start-up line, and the README
//! check in `tests/structure.rs`. A setting added here is offered everywhere at once; one missing
//! here exists nowhere. Values stay raw strings on this side; `config` parses them by the entry's
//! [`Parser`] (a choice by its type's words, [`Choice`]), so every error can name the flag or
//! variable it came from.
//!
//! Why every flag but `--once`, `--dry-run` and `-v` (modes, typed by a person) has a variable:
//! Helm values and kustomize patches set `env:` far more easily than they edit `args:`, and need
//! no shell to expand `${}`. Why oauth2-proxy's variables are a fallback: one `envFrom` can then
//! configure the proxy and its gate alike.

mod choice;
mod command_line;
mod help;
mod setting;
mod suggest;
mod table;

pub(crate) use choice::{Choice, Format};
pub use command_line::command;
pub(crate) use command_line::{Given, Then, ThenCommand};
pub(crate) use help::VERSION;
pub(crate) use setting::{Id, Parser};
pub(crate) use suggest::{near_misses, unknown_variables};
pub(crate) use table::SETTINGS;
