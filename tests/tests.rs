//! The integration suite, one crate (one link step), as ripgrep arranges its tests: the real
//! binary against real local providers with a CA made at test time, the document rules over
//! real providers' documents, property tests, and the shape of the code itself. Each module is
//! named for the behaviour it specifies, its `//!` header says which, so all the tests of one
//! behaviour (Retry-After, redirects, trust, …) are in one file; `support` is the shared harness.

// Tests read top to bottom as a scenario; the 80-line limit (clippy.toml) is for the product's code.
#![allow(clippy::too_many_lines)]

mod support;

mod admission;
mod cluster;
mod cluster_toolhive;
mod completions;
mod compose;
mod conclusive;
mod configuration;
mod deploy_kit;
mod diagnostics;
mod differential;
mod discovery_chains;
mod documents;
mod exec;
mod fetch_differential;
mod first_run;
mod fuzz_seeds;
mod github_action;
mod headers;
mod image;
mod in_cluster;
mod issuers;
mod mcp_endpoint;
mod memory;
mod network_faults;
mod output;
mod parity;
mod peer;
mod properties;
mod proxy;
mod readiness;
mod recipes;
mod redirects;
mod registry;
mod release;
mod retry_after;
mod serve;
mod shown;
mod signals;
mod structure;
mod supply_chain;
mod tls_trust;
mod toolhive_parity;
