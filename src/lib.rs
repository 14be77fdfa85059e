//! wait-for-idp: gate a pod's start on its OpenID Connect identity provider really serving its
//! metadata. The binary is a thin shell around [`main`]; the library exposes only what the
//! integration tests and fuzz targets need: URL handling ([`url`]), the document rules
//! ([`rules`]) and the fuzz properties.
//!
//! # Layers
//!
//! Leaves first; a module uses only modules of its own layer or of layers above it in this list,
//! never one below, and imports within a layer form no cycle. `tests/structure.rs` reads this
//! list and checks every `crate::` path in `src/` against it.
//!
//! 1. url, human, progress, token — URL handling; durations for people; a fetch's stage; the token file
//! 2. rules — the document rules by specification: authorization server, protected resource, JWK Set (pure)
//! 3. settings, config — every setting in one table; the validated configuration, read in one pass
//! 4. net — the network: TLS, proxies, one bounded, verified GET
//! 5. probe — one attempt and its failure class
//! 6. wait — deadline, budget and pacing on an injected clock
//! 7. report — everything the tool says
//! 8. app — threads, signals and the exit code
//! 9. fuzz_checks — the fuzz targets' properties (tests and fuzzing only)
#![warn(unreachable_pub)]

mod app;
mod config;
#[doc(hidden)]
pub mod fuzz_checks;
mod human;
mod net;
mod probe;
mod progress;
mod report;
pub mod rules;
mod settings;
mod token;
pub mod url;
mod wait;

pub use app::main;
