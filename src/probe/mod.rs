//! One attempt: walk the chain of documents a real client walks — an issuer's metadata (and with
//! `--check-jwks` its keys), or a protected resource's metadata and every authorization server it
//! names — judge each, and say in one typed failure class what stood in the way. The classes are
//! what an operator greps for, so their names are part of the interface.
//!
//! The attempt runs on a thread of its own and the caller waits for it at most its budget. Linux
//! fires socket timeouts late (up to about 250 ms past a 2-16 s timeout), which at the deadline
//! meant the last attempt of a frozen provider was never reported at all. So the waiting side
//! decides when an attempt has timed out, abandons the fetch (it ends by itself soon after, on
//! its own socket timeout), and names the link and the stage it hung in.

mod attempt;
mod classify;
mod failure;
mod issuer;
mod mcp_endpoint;
mod prober;
mod ready;
mod resource_chain;

#[cfg(test)]
pub(crate) use failure::{Cause, Link};
pub(crate) use failure::{Failure, FailureClass};
pub(crate) use prober::{LastWord, Prober};
pub(crate) use ready::{Ready, ServerReady};
