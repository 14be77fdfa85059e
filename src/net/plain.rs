//! The connection as ureq reads it, last in the connector chain.
//!
//! - Its input collects in a buffer of its own that grows as a response head needs it (up to
//!   ureq's `max_response_header_size`, [`super::fetch_error::HEADER_LIMIT`]): each connection's
//!   fixed read buffer stays small, and a normal response costs no more memory than before.
//! - Its first bytes are looked at. An `http://` URL sent to a port that speaks HTTPS gets a TLS
//!   record back (an alert, mostly), which no HTTP parser makes sense of: the failure can then say
//!   to use `https://`. A server that speaks only HTTP/2 (h2c, or h2 whatever ALPN said) answers
//!   with an HTTP/2 frame where a status line should be: the failure says so.

use crate::progress::Progress;
use std::fmt;
use std::sync::Arc;
use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, NextTimeout, Transport};

/// Last in the chain: wraps each connection.
#[derive(Debug)]
pub(crate) struct PlainWatch {
    progress: Arc<Progress>,
}

impl PlainWatch {
    pub(crate) fn new(progress: Arc<Progress>) -> Self {
        PlainWatch { progress }
    }
}

impl<In: Transport> Connector<In> for PlainWatch {
    type Out = Watched<In>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<In>) -> Result<Option<Self::Out>, ureq::Error> {
        let watching = !details.needs_tls();
        Ok(chained.map(|inner| Watched {
            inner,
            watching,
            looked: false,
            progress: self.progress.clone(),
            input: Vec::new(),
            filled: 0,
            consumed: 0,
            consumed_some: false,
            tmp: Vec::new(),
        }))
    }
}

/// The answer began with an HTTP/2 frame: the server speaks only HTTP/2.
#[derive(Debug)]
pub(crate) struct Http2Only;

impl fmt::Display for Http2Only {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an HTTP/2 frame where an HTTP/1.1 status line should be")
    }
}

impl std::error::Error for Http2Only {}

/// Go's transport would negotiate HTTP/2 (ALPN h2); this build has no HTTP/2 (a listed
/// difference: it would cost more than the size budget), and says so: how `host` showed it.
pub(crate) fn http2_only(host: &str, how: &str) -> String {
    format!(
        "the server speaks only HTTP/2 ({host} {how}): Go clients negotiate h2 and would get an answer, but this \
         build speaks HTTP/1.1 only; enable HTTP/1.1 on the server (or its load balancer)"
    )
}

/// A connection with its own growing input buffer, whose first answer bytes are checked.
#[derive(Debug)]
pub(crate) struct Watched<In> {
    inner: In,
    /// Whether to look for a TLS record (a plain connection).
    watching: bool,
    /// Whether the first bytes were looked at for an HTTP/2 frame.
    looked: bool,
    progress: Arc<Progress>,
    /// `input[consumed..filled]` is what ureq has not used yet.
    input: Vec<u8>,
    filled: usize,
    consumed: usize,
    /// Whether ureq's last look at the input used any of it (ureq's `LazyBuffers` rule: input
    /// left over after progress is tried before waiting for more).
    consumed_some: bool,
    /// Scratch space ureq asks for when it writes a request body (never, for a GET).
    tmp: Vec<u8>,
}

impl<In: Transport> Watched<In> {
    /// Moves what was used to the front, and makes room for `more` bytes.
    fn make_room(&mut self, more: usize) {
        if self.consumed > 0 {
            self.input.copy_within(self.consumed..self.filled, 0);
            self.filled -= self.consumed;
            self.consumed = 0;
        }
        if self.input.len() < self.filled + more {
            self.input.resize(self.filled + more, 0);
        }
    }

    fn look(&mut self, ended: bool) -> Result<(), ureq::Error> {
        let input = &self.input[self.consumed..self.filled];
        if self.watching && input.len() >= 2 {
            self.watching = false;
            if is_tls_record(input) {
                self.progress.note_tls_reply();
            }
        }
        if !self.looked && (input.len() >= 9 || ended) {
            self.looked = true;
            if is_http2_frame(input) {
                return Err(ureq::Error::Io(std::io::Error::other(Http2Only)));
            }
        }
        Ok(())
    }
}

impl<In: Transport> Buffers for Watched<In> {
    fn output(&mut self) -> &mut [u8] {
        self.inner.buffers().output()
    }

    fn input(&self) -> &[u8] {
        &self.input[self.consumed..self.filled]
    }

    fn input_append_buf(&mut self) -> &mut [u8] {
        self.make_room(16 * 1024);
        &mut self.input[self.filled..]
    }

    fn input_appended(&mut self, amount: usize) {
        self.filled = (self.filled + amount).min(self.input.len());
    }

    fn input_consume(&mut self, amount: usize) {
        self.consumed_some = amount > 0;
        self.consumed = (self.consumed + amount).min(self.filled);
    }

    fn tmp_and_output(&mut self) -> (&mut [u8], &mut [u8]) {
        if self.tmp.is_empty() {
            self.tmp = vec![0; 10 * 1024];
        }
        (&mut self.tmp, self.inner.buffers().output())
    }

    fn can_use_input(&self) -> bool {
        self.consumed_some && self.consumed < self.filled
    }
}

impl<In: Transport> Transport for Watched<In> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.inner.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let more = self.inner.await_input(timeout)?;
        let inner = self.inner.buffers();
        let got = inner.input().len();
        if got > 0 {
            self.make_room(got);
            let inner = self.inner.buffers();
            self.input[self.filled..self.filled + got].copy_from_slice(inner.input());
            inner.input_consume(got);
            self.filled += got;
        }
        self.look(!more)?;
        Ok(more)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

/// Whether bytes begin a TLS record: a content type (20 change_cipher_spec, 21 alert, 22
/// handshake, 23 application data) and the protocol's major version, 3. An HTTP status line
/// begins with `H`.
fn is_tls_record(bytes: &[u8]) -> bool {
    matches!(bytes, [20..=23, 3, ..])
}

/// Whether bytes begin an HTTP/2 frame on the connection's stream 0 (RFC 9113 §4.1): a 24-bit
/// length (a SETTINGS or GOAWAY frame is short, so its first byte is 0), the type SETTINGS (4) or
/// GOAWAY (7), flags, and a zero stream identifier. An h2 server sends SETTINGS first.
fn is_http2_frame(bytes: &[u8]) -> bool {
    matches!(bytes, [0, _, _, 4 | 7, _, 0, 0, 0, 0, ..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tls_alert_is_a_tls_record_and_an_http_answer_is_not() {
        assert!(is_tls_record(&[0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46]));
        assert!(is_tls_record(&[0x16, 0x03, 0x03]));
        assert!(!is_tls_record(b"HTTP/1.1 400 Bad Request"));
        assert!(!is_tls_record(&[0x15]));
    }

    #[test]
    fn an_h2_settings_frame_is_http2_and_a_status_line_is_not() {
        assert!(is_http2_frame(&[0, 0, 18, 4, 0, 0, 0, 0, 0, 0, 3]));
        assert!(is_http2_frame(&[0, 0, 8, 7, 0, 0, 0, 0, 0]), "GOAWAY");
        assert!(!is_http2_frame(b"HTTP/1.1 200 OK"));
        assert!(!is_http2_frame(&[0, 0, 18, 4, 0, 0, 0, 0]), "too short to tell");
    }
}
