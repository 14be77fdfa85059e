//! Settings that are set and will not be used as whoever set them expects, said at start and in
//! `--dry-run` (issue 36: used without a word, they sent the newcomer after the wrong problem).

use super::Notice;
use super::Raw;
use super::inputs::Inputs;
use crate::settings::Id;

/// The gate's issuer set (a flag or its variable) and oauth2-proxy's to another: the gate would
/// check an issuer the proxy will not use.
pub(super) fn issuer(issuers: &[Raw], inputs: &Inputs<'_>) -> Option<Notice> {
    let proxy = Id::Issuer.setting().fallback.and_then(|name| inputs.variable(name))?;
    let first = issuers.first()?;
    if first.source == proxy.source || issuers.iter().any(|raw| raw.value == proxy.value) {
        return None;
    }
    Some(Notice::Warning(format!(
        "{} is '{}' but {} is '{}': the gate checks the first, oauth2-proxy will use the second; give them one value, \
         or leave the gate's unset so that it reads oauth2-proxy's",
        first.source,
        crate::url::redact(&first.value),
        proxy.source,
        crate::url::redact(&proxy.value)
    )))
}

/// `ALL_PROXY` (or `all_proxy`) set: curl's, which Go's clients never read, and neither does the
/// gate. Its value is not shown: it may hold credentials.
pub(super) fn all_proxy(inputs: &Inputs<'_>) -> Option<Notice> {
    let name = ["ALL_PROXY", "all_proxy"].into_iter().find(|name| inputs.variable(name).is_some())?;
    Some(Notice::Note(format!(
        "{name} is set and not used, as Go's clients (oauth2-proxy's) do not read it; HTTPS_PROXY and HTTP_PROXY \
         name the proxies"
    )))
}

/// A token or header file goes only where an `--issuer`'s metadata is fetched (and to
/// `--jwks-url`): along a `--resource` chain it is never sent, so with neither (`sent_somewhere`
/// false) it is read for nothing. Said, since whoever set it expects it to be used.
pub(super) fn unsent_credentials(
    sent_somewhere: bool,
    token_file: Option<&Raw>,
    header_file: Option<&Raw>,
) -> Option<Notice> {
    if sent_somewhere {
        return None;
    }
    let sources: Vec<String> = token_file.into_iter().chain(header_file).map(|raw| raw.source.to_string()).collect();
    (!sources.is_empty()).then(|| {
        Notice::Warning(format!(
            "{} will not be sent: credentials go only to an issuer's own origin, never along a {} chain, and no {} is \
             given",
            sources.join(" and "),
            Id::Resource.flag(),
            Id::Issuer.flag()
        ))
    })
}
