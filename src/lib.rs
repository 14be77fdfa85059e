//! wait-for-idp: gate a pod's start on its OpenID Connect identity provider really serving its
//! metadata. The binary is a thin shell around [`main`]; the library exposes only what the
//! integration tests and fuzz targets need: URL handling (`url`), the document rules
//! ([`rules`]) and the fuzz properties.
//!
//! # Layers
//!
//! Leaves first; a module uses only modules of its own layer or of layers above it in this list,
//! never one below, and imports within a layer form no cycle. `tests/structure.rs` reads this
//! list and checks every `crate::` path in `src/` against it.
//!
//! 1. url, human, progress, screen_text, base64, secret_forms, token — URL handling; durations for people; a
//!    fetch's stage; server text made safe to show; base64; the forms a server echoes a secret in; the token file
//! 2. rules, go_proxy, trust_store — the document rules by specification: authorization server, protected resource,
//!    JWK Set (pure); Go's proxy rules (`ProxyFromEnvironment`, `NO_PROXY`) and Go's trust store (CA files,
//!    `SSL_CERT_FILE`, `SSL_CERT_DIR`), which config and net both follow
//! 3. settings, config — every setting in one table; the validated configuration, read in one pass
//! 4. net — the network: TLS, proxies, one bounded, verified GET
//! 5. probe — one attempt and its failure class
//! 6. wait — deadline, budget and pacing on an injected clock
//! 7. report — everything the tool says
//! 8. serve — `--serve`: the health listener (/readyz, /livez, /metrics) and the watch after the start
//! 9. handover — becoming the command after `--`: descriptors, signal dispositions, execvp
//! 10. app — threads, signals and the exit code
//! 11. fuzz_checks — the fuzz targets' properties (tests and fuzzing only)
//!
//! # Failures, from the leaves to the exit code
//!
//! Each layer has its own error type, and each becomes the next in one place only. Every message
//! is written for the reader of `kubectl logs`: what is wrong, and what would be right.
//!
//! 1. **Problems** are pure: what is wrong with a string, a file or a body, with no notion of
//!    where it came from — `url::Problem`, `rules::BodyProblem` and the document rules'
//!    `DocumentProblem`, `ResourceProblem`, `JwksProblem`; `ConnectToProblem`, `CaFileProblem`,
//!    `TokenProblem`.
//! 2. **`config::ConfigError`** is a problem of a setting, named with the flag or variable it came
//!    from (`config::Source`). Every one ends the run with exit 2 before any waiting; so does a
//!    usage error of clap's.
//! 3. **`net::fetch_error::FetchError`** is one request that got no complete response: the
//!    resolver, a refusal, a timeout at a stage, TLS, the proxy, the body, or a redirect not
//!    followed (a `net::redirect::RefusedRedirect`, with its `RedirectKind`). ureq's errors become
//!    one in `net::fetch_error::classify` only, and a body not read whole (the response's own
//!    `net::response::Unread`) in `net::fetch_error::body_failure`.
//! 4. **`probe::Failure`** is why one attempt did not pass, as data: a `FailureClass` (the word
//!    operators grep for, part of the interface), a `Cause` with its facts (the network's stage
//!    and host, a status, a document's problem, the resource chain, the JWK Set, a local file with
//!    its path, a local resource, a private address, the proxy), the `Link` of the chain and the
//!    server it belongs to, the URL (redacted), the proxy used, the message made once, hints, and
//!    how to go on (cheap to retry, conclusive, a `Retry-After`). Failures are made in `probe`
//!    only: a fetch error in `probe::failure::link_failure`, a status or a body the client cannot
//!    decode in `probe::failure::usable_body`, a document's problem in
//!    `probe::issuer::document_failure`, the JWK Set's in `probe::issuer`, the protected
//!    resource's (its metadata, its challenge, its endpoint's answers to a POST) in
//!    `probe::resource_chain` and `probe::mcp_endpoint`. What a caller learns later
//!    (the link, the server, the URL, the proxy, a hint) is added as data, never by editing the
//!    text, and no decision is taken by reading the text.
//! 5. **`wait::Tally`** counts failures by class and keeps the last; **`wait::Verdict`** is how
//!    one target's wait ended by itself: ready, deadline, attempts exhausted, or a conclusive
//!    failure.
//! 6. **`report::TargetResult`** is a target's verdict, tally and what ended the run, and
//!    `TargetResult::ended` the one place that decides how its wait ended (`report::Ended`: the
//!    final line's reason and the JSON's `verdict`). `report::failure_text` is the one renderer
//!    of a failure: the log line, the final line, the termination message and the JSON's
//!    `last_failure` all show its text.
//! 7. **`report::Outcome`** is how the run ended (ready, failed open, not ready, interrupted), and
//!    **`report::ExitCode`** the only place a number is made: 0, 1, 2, 126 or 127 (the command
//!    after `--` could not be run, as `env` and `sh` say it) or 128 + the signal.
//!
//! Nothing on the way panics on input: hostile bytes are problems (the fuzz targets hold the rules
//! to that), and a write that fails (a closed stderr, a full disk) changes neither the outcome nor
//! the exit code.
#![warn(unreachable_pub)]
// Every dependency is used by the library (the binary is a thin shell around it); the test build
// also sees the dev-dependencies, which only the integration tests use.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod app;
mod base64;
mod config;
#[doc(hidden)]
pub mod fuzz_checks;
mod go_proxy;
mod handover;
mod human;
mod net;
mod probe;
mod progress;
mod report;
pub mod rules;
mod screen_text;
mod secret_forms;
mod serve;
mod settings;
mod token;
mod trust_store;
mod url;
mod wait;

pub use app::main;
/// The command line, built from the settings table: for `examples/gen-docs.rs`, which writes the
/// shell completions and the man page that ship with a release.
#[doc(hidden)]
pub use settings::command;
