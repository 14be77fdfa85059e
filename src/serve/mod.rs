//! `--serve`: the gate as a native sidecar. An HTTP listener, started before the first attempt,
//! answers `/readyz`, `/livez` and `/metrics` from one shared [`Health`], which the wait's
//! attempts feed, and after the start the watch's ([`watcher`]).
//!
//! Why one process for both jobs: an init container with `restartPolicy: Always` and a
//! `startupProbe` on `/readyz` holds the workload until the provider is ready, as the plain gate
//! does, and then stays to say whether it still is. The state is the verdict and the failure class
//! of each target, counters and times: nothing a provider sent is ever served (its documents, its
//! error pages), so a hostile or broken provider cannot speak through the gate's port.
//!
//! One module per job:
//! - [`health`]: the health state and what `/readyz` says;
//! - [`metrics`]: the Prometheus text exposition;
//! - [`listener`]: the bounded HTTP/1.1 listener (std only);
//! - [`watcher`]: the checks after the start, and the log line for each change.

mod health;
mod listener;
mod metrics;
mod watcher;

pub(crate) use health::Health;
pub(crate) use listener::listen;
pub(crate) use watcher::watch_all;
