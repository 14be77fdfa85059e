//! Names the commit the binary is built from, for `--version` and the first log line, without
//! breaking reproducible builds: the same tree gives the same bytes wherever it is built.
//!
//! The commit comes from `WAIT_FOR_IDP_COMMIT` when the build sets it (a copy of the tree without
//! its `.git`, as `.ci/reproducible` and the Dockerfile build), else from `git rev-parse HEAD`
//! in the source directory, else it is "unknown". No time, path or host goes into the binary.

use std::process::Command;

/// The build's own variable (not a setting of the gate's: the settings table has those).
const COMMIT_VARIABLE: &str = "WAIT_FOR_IDP_COMMIT";

fn main() {
    println!("cargo:rerun-if-env-changed={COMMIT_VARIABLE}");
    let from_env = std::env::var(COMMIT_VARIABLE).ok().filter(|c| is_commit(c));
    let commit = from_env.or_else(git_head).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=BUILD_COMMIT={commit}");
}

/// HEAD's commit, and the files whose change means another commit (HEAD, and the branch it is on).
fn git_head() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok().filter(|o| o.status.success())?;
        String::from_utf8(out.stdout).ok().map(|s| s.trim().to_string())
    };
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| is_commit(c))?;
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(p) = git(&["rev-parse", "--git-path", &branch])
    {
        println!("cargo:rerun-if-changed={p}");
    }
    Some(commit)
}

fn is_commit(c: &str) -> bool {
    (7..=64).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_hexdigit())
}
