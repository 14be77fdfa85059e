//! wait-for-idp: gate a pod's start on its OpenID Connect identity provider really serving its
//! metadata. The binary is a thin shell around [`app::main`]; the modules are public so that the
//! fuzz targets and integration tests can reach the pure parts.
//!
//! Flow: `cli` (flags) → `config` (validated settings) → `app` (threads, signals, outcome) →
//! `wait` (deadline, budget, pacing) → `probe` (one attempt, typed failure) → `http` / `tls` /
//! `proxy` (one bounded GET) → `discovery` (URL derivation, document rules) → `report` (lines).

pub mod app;
pub mod cli;
pub mod config;
pub mod connect_to;
pub mod discovery;
#[doc(hidden)]
pub mod fuzz_checks;
pub mod http;
pub mod human;
pub mod jwks;
pub mod probe;
pub mod progress;
pub mod proxy;
pub mod report;
pub mod tls;
pub mod token;
pub mod url;
pub mod wait;
