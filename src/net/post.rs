//! One POST on the GET's exchange ([`super::http`]): an MCP client's first request to its
//! server is a POST (`server/discover`, then `initialize`).

use super::fetch_error::FetchError;
use super::http::HttpClient;
use super::response::Fetched;
use crate::progress::Progress;
use std::sync::Arc;
use std::time::Duration;

impl HttpClient {
    /// POSTs `body` to `target` once within `budget`, following no redirect: the caller decides
    /// what a 3xx means, as an MCP client's fetch does for its POST.
    pub(crate) fn post(
        &self,
        target: &str,
        body: &[u8],
        budget: Duration,
        headers: &[(&str, String)],
        progress: &Arc<Progress>,
    ) -> Result<Fetched, FetchError> {
        let sent: Vec<(&str, &str)> = headers.iter().map(|(name, value)| (*name, value.as_str())).collect();
        self.exchange(target, Some(body), budget, &sent, progress)
    }
}
