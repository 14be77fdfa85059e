//! One POST with the GET's agent and response reading ([`super::http`]): an MCP client's first
//! request to its server is a POST (`server/discover`, then `initialize`).

use super::http::{FetchError, HttpClient, classify};
use super::response::{Fetched, read};
use crate::progress::{Progress, Stage};
use crate::url;
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
        let parts = url::split(target).map_err(|p| FetchError::Protocol(format!("bad URL: {p}")))?;
        let host = parts.bare_host().to_string();
        progress.enter(Stage::Resolving, &host);
        // As the GET: the proxy is the connector's choice, Host as the URL gives it, gzip asked for.
        let sent: Vec<(&str, &str)> = headers.iter().map(|(name, value)| (*name, value.as_str())).collect();
        let mut request = self
            .agent(progress, target, &sent)
            .post(target)
            .config()
            .timeout_global(Some(budget))
            .proxy(None)
            .build()
            .header("host", parts.authority)
            .header("accept-encoding", "gzip");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request.send(body).map_err(|e| classify(e, progress, budget))?;
        read(response, target, &host, progress, budget, true)
    }
}
