//! A plain-HTTP connection, watched for an answer in TLS: an `http://` URL sent to a port that
//! speaks HTTPS gets a TLS record back (an alert, mostly), which no HTTP parser makes sense of.
//! The first bytes of the answer say so, and the failure can then say to use `https://`.

use crate::progress::Progress;
use std::sync::Arc;
use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, NextTimeout, Transport};

/// Last in the chain: wraps each plain connection so that its first bytes are looked at.
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
        Ok(chained.map(|inner| Watched { inner, watching, progress: self.progress.clone() }))
    }
}

/// A connection whose first answer bytes are checked for a TLS record, when it is plain HTTP.
#[derive(Debug)]
pub(crate) struct Watched<In> {
    inner: In,
    watching: bool,
    progress: Arc<Progress>,
}

impl<In: Transport> Transport for Watched<In> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.inner.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let more = self.inner.await_input(timeout)?;
        let input = self.inner.buffers().input();
        if self.watching && input.len() >= 2 {
            self.watching = false;
            if is_tls_record(input) {
                self.progress.note_tls_reply();
            }
        }
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
}
