//! Where a fetch has got to, shared between the thread doing it and the one waiting for it.
//!
//! Socket timeouts fire late on Linux (up to about a quarter of a second past 2 s, measured), so
//! the waiting side ends an attempt at its own deadline and abandons the fetch. To say *why* it
//! gave up — a resolver that never answers is not a hung TLS terminator — it reads the stage the
//! fetch last entered from here. The resolver and the connectors record the stages as they go.

use std::fmt;
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The stages of one HTTP exchange, in order, after the files an attempt reads first (a read
/// that hangs, on a FIFO or a stalled network mount, is named as such, not as a lookup).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Stage {
    /// Reading `--token-file` (the host is its path).
    ReadingTokenFile,
    /// Reading a `--header-file` (the host is its path).
    ReadingHeaderFile,
    #[default]
    Resolving,
    Connecting,
    TlsHandshake,
    AwaitingResponse,
    ReadingBody,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::ReadingTokenFile => "reading the token file",
            Stage::ReadingHeaderFile => "reading a header file",
            Stage::Resolving => "DNS resolution",
            Stage::Connecting => "TCP connect",
            Stage::TlsHandshake => "TLS handshake",
            Stage::AwaitingResponse => "waiting for the response",
            Stage::ReadingBody => "reading the body",
        })
    }
}

impl Stage {
    /// The stage's name in the JSON summary (`last_failure.stage`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Stage::ReadingTokenFile => "reading-token-file",
            Stage::ReadingHeaderFile => "reading-header-file",
            Stage::Resolving => "resolving",
            Stage::Connecting => "connecting",
            Stage::TlsHandshake => "tls-handshake",
            Stage::AwaitingResponse => "awaiting-response",
            Stage::ReadingBody => "reading-body",
        }
    }
}

/// A fetch's progress: its stage and the host that stage talks to (the proxy while connecting
/// through one), and whether a TLS server asked for a client certificate.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    at: Mutex<(Stage, String)>,
    client_cert_requested: AtomicBool,
    /// A plain-HTTP request was answered with a TLS record: the port speaks HTTPS.
    tls_reply: AtomicBool,
    /// Every name resolved, in order, with the addresses it resolved to.
    resolved: Mutex<Vec<(String, Vec<IpAddr>)>>,
}

impl Progress {
    pub(crate) fn enter(&self, stage: Stage, host: &str) {
        if let Ok(mut at) = self.at.lock() {
            at.0 = stage;
            at.1.clear();
            at.1.push_str(host);
        }
    }

    /// The stage last entered and its host.
    pub(crate) fn at(&self) -> (Stage, String) {
        self.at.lock().map(|at| at.clone()).unwrap_or_default()
    }

    pub(crate) fn note_client_cert_request(&self) {
        self.client_cert_requested.store(true, Ordering::Relaxed);
    }

    pub(crate) fn note_resolved(&self, host: &str, addresses: Vec<IpAddr>) {
        if let Ok(mut resolved) = self.resolved.lock() {
            resolved.push((host.to_string(), addresses));
        }
    }

    /// The names resolved so far, with their addresses.
    pub(crate) fn resolved(&self) -> Vec<(String, Vec<IpAddr>)> {
        self.resolved.lock().map(|r| r.clone()).unwrap_or_default()
    }

    pub(crate) fn note_tls_reply(&self) {
        self.tls_reply.store(true, Ordering::Relaxed);
    }

    /// A plain-HTTP request was answered in TLS.
    pub(crate) fn tls_reply(&self) -> bool {
        self.tls_reply.load(Ordering::Relaxed)
    }

    /// A TLS server asked for a client certificate (and got none: the gate has none to give).
    pub(crate) fn client_cert_requested(&self) -> bool {
        self.client_cert_requested.load(Ordering::Relaxed)
    }
}
