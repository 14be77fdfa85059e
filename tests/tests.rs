//! The integration suite, one crate (one link step), as ripgrep arranges its tests: the real
//! binary against real local providers with a CA made at test time, the document rules over
//! real providers' documents, property tests, and the shape of the code itself.

mod support;

mod chains;
mod compose;
mod differential;
mod documents;
mod faults;
mod field;
mod fuzz_seeds;
mod gate;
mod image;
mod in_cluster;
mod parity;
mod peer;
mod properties;
mod recipes;
mod registry;
mod release;
mod structure;
mod trust;
