//! wait-for-idp: gate a pod's start on its OpenID Connect identity provider really serving its
//! metadata. The binary is a thin shell around [`main`]; the library exposes only what the
//! integration tests and fuzz targets need: URL handling ([`url`]), the document rules
//! ([`discovery`]) and the fuzz properties.
//!
//! # Layers
//!
//! Leaves first; a module uses only modules of its own layer or of layers above it in this list,
//! never one below, and imports within a layer form no cycle. `tests/structure.rs` reads this
//! list and checks every `crate::` path in `src/` against it.
//!
//! 1. url, human, progress, token — URL handling; durations for people; a fetch's stage; the token file
//! 2. cli, config — the command line, and the validated settings (with the `--connect-to` rules)
//! 3. discovery, resource — where metadata lives and when a document counts (pure)
//! 4. tls, proxy, http — the network: one bounded, verified GET
//! 5. jwks, probe — the keys' rules; one attempt and its failure class
//! 6. wait — deadline, budget and pacing on an injected clock
//! 7. report — everything the tool says
//! 8. app — threads, signals and the exit code
//! 9. fuzz_checks — the fuzz targets' properties (tests and fuzzing only)
#![warn(unreachable_pub)]

mod app;
mod cli;
mod config;
pub mod discovery;
#[doc(hidden)]
pub mod fuzz_checks;
mod http;
mod human;
mod jwks;
mod probe;
mod progress;
mod proxy;
mod report;
mod resource;
mod tls;
mod token;
pub mod url;
mod wait;

pub use app::main;
