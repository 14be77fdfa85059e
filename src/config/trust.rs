//! What the gate trusts, decided as the real client decides it. oauth2-proxy (v7.15.6,
//! `GetCertPool`) trusts Go's system pool plus nothing else, or its
//! `OAUTH2_PROXY_PROVIDER_CA_FILES` instead of that pool, or both with
//! `OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE=true`. A certificate the proxy rejects must not pass the
//! gate; one it accepts should.
//!
//! Go builds its system pool on Linux (crypto/x509 `root_unix.go`) from one bundle file (the first
//! of its list that exists, e.g. Debian's `/etc/ssl/certs/ca-certificates.crt`) and every file of
//! its directories (`/etc/ssl/certs`, `/etc/pki/tls/certs`). `SSL_CERT_FILE` replaces the bundle
//! files, `SSL_CERT_DIR` (colon-separated) the directories. Mozilla's roots stand for the system's
//! part that is not replaced, which the gate's image does not carry: with neither variable set,
//! for both; with one set, for the other part (in a Debian container, Go would read the system
//! bundle or directory beside it); with both set, for nothing: the gate then trusts those two
//! (and its CA files) alone, as the proxy does.

use super::{ConfigError, Notice, Raw, Source, files, inputs::Inputs};
use crate::settings::Id;
use crate::trust_store::{Anchors, CERT_DIR, CERT_FILE, GoStore};
use std::sync::Arc;

const USE_SYSTEM_TRUST_STORE: &str = "OAUTH2_PROXY_USE_SYSTEM_TRUST_STORE";
const SKIP_VERIFY: &str = "OAUTH2_PROXY_SSL_INSECURE_SKIP_VERIFY";

/// The certificates the gate trusts, and where they came from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Trust {
    /// Mozilla's roots.
    pub(crate) mozilla: bool,
    /// Every other trusted certificate, each once: the CA files', then (if read now)
    /// `SSL_CERT_FILE`'s and `SSL_CERT_DIR`'s.
    pub(crate) roots: Anchors,
    /// Where `roots` came from, in order: the flag or variable, the path, how many certificates.
    pub(crate) sources: Vec<(Source, String, usize)>,
    /// Go's `SSL_CERT_FILE` and `SSL_CERT_DIR`, when set and not read yet.
    pub(crate) store: Option<Arc<GoStore>>,
}

/// The trust settings as read, before any file is.
pub(super) struct TrustInputs {
    ca_files: Vec<Raw>,
    /// Go's system pool (Mozilla's roots here) with its two variables, unless the CA files
    /// replace it.
    system: Option<(Option<Raw>, Option<Raw>)>,
    /// oauth2-proxy checks no certificate: the gate still does, and ends at the first it rejects.
    pub(super) skip_verify: bool,
}

/// Reads the CA files and the variables that decide what else is trusted.
pub(super) fn read(
    ca_files: Vec<Raw>,
    inputs: &Inputs<'_>,
    notices: &mut Vec<Notice>,
) -> Result<TrustInputs, ConfigError> {
    let use_system = inputs.variable_switch(USE_SYSTEM_TRUST_STORE)?;
    let skip_verify = inputs.variable_switch(SKIP_VERIFY)?;
    let proxy_files = Id::CaFile.setting().fallback.map(Source::Env);
    let only_files = !use_system && ca_files.first().is_some_and(|raw| Some(raw.source) == proxy_files);
    if only_files {
        notices.push(Notice::Note(format!(
            "trusting only the CA files in OAUTH2_PROXY_PROVIDER_CA_FILES, as oauth2-proxy does unless \
             {USE_SYSTEM_TRUST_STORE} is true"
        )));
    }
    if skip_verify {
        notices.push(Notice::Warning(format!(
            "{SKIP_VERIFY} is true: oauth2-proxy skips certificate checks, the gate never does; give it the \
             provider's CA with {} (or {}). A certificate it rejects ends the wait at once",
            Id::CaFile.flag(),
            Id::CaFile.setting().env.unwrap_or_default()
        )));
    }
    let system = (!only_files).then(|| (inputs.variable(CERT_FILE), inputs.variable(CERT_DIR)));
    Ok(TrustInputs { ca_files, system, skip_verify })
}

/// Loads what is trusted: a CA file that is wrong is an error; Go's variables are not (Go
/// carries on with its other sources), but what is wrong with them is said. Mozilla's roots stand
/// for the system's files and directories, unless `SSL_CERT_FILE` and `SSL_CERT_DIR` replace both
/// (with one set, they stand for the part it does not replace: Go reads the system's default
/// bundle, or its default directories, beside it). What the two name is read now only if
/// `read_store` (`--dry-run`, which says what they hold); otherwise when a chain needs it.
pub(super) fn load(inputs: &TrustInputs, notices: &mut Vec<Notice>, read_store: bool) -> Result<Trust, ConfigError> {
    let mut trust = Trust::default();
    for raw in &inputs.ca_files {
        let n = files::load_ca_file(raw, &mut trust.roots)?;
        trust.sources.push((raw.source, raw.value.clone(), n));
    }
    let Some((file, dirs)) = &inputs.system else { return Ok(trust) };
    trust.mozilla = file.is_none() || dirs.is_none();
    let value = |raw: &Option<Raw>| raw.as_ref().map(|raw| raw.value.clone());
    let store = GoStore { file: value(file), dirs: value(dirs) };
    if read_store {
        let (sources, warnings) = store.read(&mut trust.roots);
        trust.sources.extend(sources.into_iter().map(|(variable, path, n)| (Source::Env(variable), path, n)));
        notices.extend(warnings.into_iter().map(Notice::Warning));
    } else if file.is_some() || dirs.is_some() {
        trust.store = Some(Arc::new(store));
    }
    Ok(trust)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust_store::ca_pem;

    fn system(file: Option<&str>, dirs: Option<&str>) -> Trust {
        let raw = |name, value: &str| Raw { value: value.to_string(), source: Source::Env(name) };
        let system = Some((file.map(|f| raw(CERT_FILE, f)), dirs.map(|d| raw(CERT_DIR, d))));
        load(&TrustInputs { ca_files: Vec::new(), system, skip_verify: false }, &mut Vec::new(), true).unwrap()
    }

    /// Go's pool on Linux: `SSL_CERT_FILE` replaces the system's bundle files, `SSL_CERT_DIR` its
    /// directories; Mozilla's roots stand for whichever part is left, and for nothing once both
    /// are replaced.
    #[test]
    fn mozillas_roots_stand_for_the_system_part_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let pem = ca_pem(dir.path());
        let d = dir.path().display().to_string();
        assert!(system(None, None).mozilla);
        assert!(system(Some(&pem), None).mozilla);
        assert!(system(None, Some(&d)).mozilla);
        let both = system(Some(&pem), Some(&d));
        assert!(!both.mozilla);
        assert_eq!(both.roots.anchors.len(), 1, "the same certificate in the file and the directory counts once");
        assert_eq!(both.sources.iter().map(|s| s.2).collect::<Vec<_>>(), [1, 1]);
        // Still replaced when nothing in them can be read: Go then trusts nothing.
        let none = system(Some("/nonexistent.pem"), Some("/nonexistent"));
        assert!(!none.mozilla && none.roots.anchors.is_empty());
    }

    /// Go's AppendCertsFromPEM and its directory walk: a hash link to a file in the same
    /// directory is not read, unreadable entries and non-PEM files are skipped, and each
    /// certificate is kept once whatever the number of files holding it.
    #[test]
    fn directories_are_read_as_go_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let pem = ca_pem(dir.path());
        let bundle = dir.path().join("bundle.crt");
        let text = std::fs::read_to_string(&pem).unwrap();
        std::fs::write(&bundle, format!("prose\n{text}{text}")).unwrap();
        std::os::unix::fs::symlink("ca.pem", dir.path().join("5ad8a5d6.0")).unwrap();
        std::os::unix::fs::symlink(&pem, dir.path().join("absolute.pem")).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("key.pem"), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
            .unwrap();
        let trust = system(None, Some(&dir.path().display().to_string()));
        assert_eq!(trust.roots.anchors.len(), 1);
        assert_eq!(trust.roots.digests.len(), 1);
        assert_eq!(trust.sources[0].2, 1);
    }
}
