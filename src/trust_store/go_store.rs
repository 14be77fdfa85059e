//! Go's own trust variables, `SSL_CERT_FILE` and `SSL_CERT_DIR`, as its crypto/x509 reads them
//! on Linux (`root_unix.go`), read when a chain needs them.

use super::anchors::Anchors;
use super::pem_files::{directory_anchors, lenient_anchors};
use std::collections::HashSet;
use std::path::Path;

/// Go's one PEM bundle, in place of the system's.
pub(crate) const CERT_FILE: &str = "SSL_CERT_FILE";
/// Go's directories of PEM files, colon-separated.
pub(crate) const CERT_DIR: &str = "SSL_CERT_DIR";

/// Go's `SSL_CERT_FILE` and `SSL_CERT_DIR`, to be read when a chain needs them (`net::tls`): a
/// system store is hundreds of files, and reading them all on every start was most of a check's
/// CPU time.
#[derive(Debug)]
pub(crate) struct GoStore {
    /// `SSL_CERT_FILE`, when set.
    pub(crate) file: Option<String>,
    /// `SSL_CERT_DIR`, when set.
    pub(crate) dirs: Option<String>,
}

impl GoStore {
    /// The most CAs of one name looked up in a directory (`<hash>.0` to `<hash>.31`).
    const LINKS: usize = 32;

    /// The certificates the directories file under these OpenSSL subject hashes (`<hash>.0`,
    /// `<hash>.1`, … until one is missing, as `c_rehash`, `openssl rehash` and Debian's
    /// `update-ca-certificates` name them). Each is a file Go reads too: the entry itself, or,
    /// for a link to a name in the same directory, the file it names; but only in a directory
    /// that can be listed, since Go reads nothing of one it cannot list (a directory one may
    /// pass through but not read would otherwise give a file Go never sees).
    pub(crate) fn linked(&self, hashes: &[u32]) -> Anchors {
        let mut found = Anchors::default();
        for dir in self.dirs().filter(|dir| std::fs::read_dir(dir).is_ok()) {
            for hash in hashes {
                for n in 0..Self::LINKS {
                    let path = Path::new(dir).join(format!("{hash:08x}.{n}"));
                    let read = lenient_anchors(&path, &mut found, &mut HashSet::new());
                    if read.is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
                        break;
                    }
                }
            }
        }
        found
    }

    /// Everything, as Go reads it, into `into`: what each source held (the variable, the path, how
    /// many certificates), and what could not be read, said.
    pub(crate) fn read(&self, into: &mut Anchors) -> (Vec<(&'static str, String, usize)>, Vec<String>) {
        let (mut sources, mut warnings) = (Vec::new(), Vec::new());
        let mut skipped = |variable: &str, path: &str, why: String| {
            warnings.push(format!("{variable}: '{path}' {why}; carrying on without it, as Go does"));
        };
        if let Some(file) = &self.file {
            let mut found = HashSet::new();
            match lenient_anchors(Path::new(file), into, &mut found) {
                Ok(()) if found.is_empty() => skipped(CERT_FILE, file, "holds no PEM certificate".into()),
                Ok(()) => sources.push((CERT_FILE, file.clone(), found.len())),
                Err(e) => skipped(CERT_FILE, file, format!("cannot be read ({e})")),
            }
        }
        for dir in self.dirs() {
            match directory_anchors(Path::new(dir), into) {
                Ok((n, unread)) => {
                    for (path, e) in unread {
                        skipped(CERT_DIR, &path.display().to_string(), format!("cannot be read ({e})"));
                    }
                    sources.push((CERT_DIR, dir.to_string(), n));
                }
                Err(e) => skipped(CERT_DIR, dir, format!("cannot be read as a directory ({e})")),
            }
        }
        (sources, warnings)
    }

    /// What changes when the store does: each source's device, inode, size and modification time
    /// (`SSL_CERT_FILE` followed through its links, as a mounted ConfigMap's is; each directory's
    /// own, which a file added, removed or renamed into it changes). A file rewritten in place
    /// inside a directory is not seen; what installs CAs (`update-ca-certificates`, a ConfigMap's
    /// update, an atomic rename) is.
    pub(crate) fn stamp(&self) -> Vec<(u64, u64, u64, i64, i64)> {
        use std::os::unix::fs::MetadataExt;
        let file = self.file.as_deref().into_iter();
        let of = |path: &str| {
            std::fs::metadata(path).map_or((0, 0, 0, 0, 0), |m| (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
        };
        file.chain(self.dirs()).map(of).collect()
    }

    /// `SSL_CERT_DIR`'s directories, colon-separated, empty ones left out.
    fn dirs(&self) -> impl Iterator<Item = &str> {
        self.dirs.iter().flat_map(|dirs| dirs.split(':')).filter(|d| !d.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust_store::{ca_pem, subject_hash};

    /// A directory's links for a subject hash, as OpenSSL's tools make them: `.0`, `.1`, … up to
    /// the first missing, each followed wherever it points.
    #[test]
    fn hash_links_are_read_up_to_the_first_missing() {
        use rustls::pki_types::{CertificateDer, pem::PemObject};
        let (dir, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let pem = ca_pem(dir.path());
        let der = CertificateDer::from_pem_file(&pem).unwrap();
        let hash = subject_hash(&webpki::anchor_from_trusted_cert(&der).unwrap().subject).unwrap();
        let link = |target: &str, n: usize| {
            std::os::unix::fs::symlink(target, dir.path().join(format!("{hash:08x}.{n}"))).unwrap();
        };
        link("ca.pem", 0);
        link(&ca_pem(elsewhere.path()), 1);
        link("ca.pem", 3);
        let store = GoStore { file: None, dirs: Some(format!("/nonexistent:{}", dir.path().display())) };
        assert_eq!(store.linked(&[hash]).anchors.len(), 2);
        assert_eq!(store.linked(&[hash ^ 1, hash]).anchors.len(), 2);
        assert!(store.linked(&[hash ^ 1]).anchors.is_empty());
    }
}
