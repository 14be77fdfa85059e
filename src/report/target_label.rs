//! The prefix that names a target in every line about it, when several are waited for: the log's
//! lines, the conclusion, and `--serve`'s watch lines all say `[issuer] ` alike.

use crate::config::{Config, Target};
use crate::url;

/// `[https://sso.example.com/realms/main] `, or nothing when there is one target.
pub(crate) fn label(config: &Config, target: &Target) -> String {
    if config.targets.len() > 1 { format!("[{}] ", url::redact(target.name())) } else { String::new() }
}
