//! What ships: the static musl binary alone in a scratch-like root, and the real image built from
//! the Dockerfile's final stage with buildah and run with podman. These need root, buildah, podman
//! and runc, which the test command (.ci/test) installs; they fail, not skip, without them.

use crate::support::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

const TRIPLE: &str = "x86_64-unknown-linux-musl";

/// The release musl binary, brought up to date on first use (a no-op when the test command has
/// just built it), so the image never tests a stale binary.
fn static_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            // The environment cargo gives a test would change the build scripts' fingerprints
            // and rebuild ring each time; build with the shell's ordinary variables only.
            let mut build = Command::new(cargo);
            build.args(["build", "--release", "--locked", "--target", TRIPLE]).current_dir(root).env_clear();
            for (key, value) in std::env::vars_os() {
                let key_str = key.to_string_lossy();
                if matches!(key_str.as_ref(), "PATH" | "HOME")
                    || key_str.starts_with("RUSTUP_")
                    || key_str == "CARGO_HOME"
                {
                    build.env(key, value);
                }
            }
            let status = build.status().expect("run cargo");
            assert!(status.success(), "static build failed (needs `rustup target add {TRIPLE}` and musl-tools)");
            root.join("target").join(TRIPLE).join("release/wait-for-idp")
        })
        .clone()
}

/// True when the ELF file has no interpreter and no dynamic section: nothing to load at run time.
fn is_fully_static(path: &Path) -> bool {
    let elf = std::fs::read(path).unwrap();
    assert_eq!(&elf[..4], b"\x7fELF");
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    (0..phnum).all(|i| {
        let p_type = u32::from_le_bytes(elf[phoff + i * phentsize..][..4].try_into().unwrap());
        p_type != 2 && p_type != 3 // PT_DYNAMIC, PT_INTERP
    })
}

fn readable_by_anyone(path: &Path) {
    let mode = if path.is_dir() { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn static_binary_runs_alone_in_a_scratch_like_root() {
    let bin = static_binary();
    assert!(is_fully_static(&bin), "{} is dynamically linked", bin.display());

    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "idp.test", "");
    // What the kubelet gives a scratch container: the binary, etc/hosts, etc/resolv.conf, and the
    // CA bundle as a mounted ConfigMap would be.
    let root = ca.path("root");
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::create_dir_all(root.join("ca")).unwrap();
    std::fs::copy(&bin, root.join("wait-for-idp")).unwrap();
    std::fs::write(root.join("etc/hosts"), "127.0.0.1 localhost\n127.0.0.1 idp.test\n").unwrap();
    std::fs::write(root.join("etc/resolv.conf"), "nameserver 127.0.0.1\noptions ndots:5\n").unwrap();
    std::fs::copy(&ca.pem_path, root.join("ca/ca.pem")).unwrap();

    let mut cmd = Command::new("/usr/sbin/chroot");
    cmd.arg(&root).args(["/wait-for-idp", "--issuer", &iss, "--ca-file", "/ca/ca.pem", "--once"]);
    cmd.env_clear().stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.stdout.contains(&format!("issuer                  {iss}")), "{}", r.stdout);

    let files: Vec<String> =
        walk(&root).into_iter().map(|p| p.strip_prefix(&root).unwrap().display().to_string()).collect();
    assert_eq!(files, ["ca/ca.pem", "etc/hosts", "etc/resolv.conf", "wait-for-idp"]);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out.sort();
    out
}

fn require(tool: &str) {
    let found = Command::new(tool).arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    assert!(found, "{tool} is missing: run the test command (.ci/test), which installs buildah, podman and runc");
}

/// Builds the Dockerfile's real final stage once, from the prebuilt static binary.
fn image() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| {
        require("buildah");
        require("podman");
        let context = tempfile::tempdir().unwrap().keep();
        std::fs::create_dir_all(context.join("dist/amd64")).unwrap();
        std::fs::copy(static_binary(), context.join("dist/amd64/wait-for-idp")).unwrap();
        let dockerfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("Dockerfile");
        let tag = "localhost/wait-for-idp:test".to_string();
        let out = Command::new("buildah")
            .args(["--storage-driver", "vfs", "build", "--isolation", "chroot", "--build-arg", "BIN_STAGE=prebuilt"])
            .args(["--build-arg", "TARGETARCH=amd64", "-f"])
            .arg(&dockerfile)
            .args(["-t", &tag])
            .arg(&context)
            .output()
            .unwrap();
        assert!(out.status.success(), "buildah build failed:\n{}", String::from_utf8_lossy(&out.stderr));
        let _ = std::fs::remove_dir_all(&context);
        tag
    })
}

fn podman() -> Command {
    let mut cmd = Command::new("podman");
    cmd.args(["--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--runtime", "runc"]);
    cmd
}

fn run_image(ca: &TestCa, args: &[&str]) -> Run {
    let dir = ca.dir.path();
    readable_by_anyone(dir);
    readable_by_anyone(&ca.pem_path);
    let mut cmd = podman();
    cmd.args(["run", "--rm", "--network", "host", "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096"])
        .arg("-v")
        .arg(format!("{}:/ca/ca.pem:ro", ca.pem_path.display()))
        .arg(image())
        .args(["--ca-file", "/ca/ca.pem"])
        .args(args);
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    run_with_limit(cmd, Duration::from_secs(120))
}

#[test]
fn image_is_scratch_with_only_the_binary_as_non_root() {
    let tag = image();
    let out = podman()
        .args(["image", "inspect", "--format", "{{.Config.User}}|{{json .Config.Entrypoint}}|{{.Size}}", tag])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let parts: Vec<&str> = text.split('|').collect();
    assert_eq!(parts[0], "65532:65532", "{text}");
    assert_eq!(parts[1], "[\"/wait-for-idp\"]", "{text}");
    let size: u64 = parts[2].parse().unwrap();
    let binary = std::fs::metadata(static_binary()).unwrap().len();
    assert!(size < binary + 64 * 1024, "the image holds little beyond the binary: {size} vs {binary}");
    let report = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sizes.txt");
    std::fs::write(&report, format!("binary {binary}\nimage {size}\n")).unwrap();
    eprintln!("binary {binary} bytes, image {size} bytes");
}

#[test]
fn image_passes_against_a_ready_provider() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    let r = run_image(&ca, &["--issuer", &iss, "--timeout", "20s"]);
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.log().contains("ready: "), "{}", r.log());
}

#[test]
fn image_fails_open_then_closed_when_the_provider_is_down() {
    let ca = TestCa::new();
    let closed = Reserved::new();
    let iss = closed.issuer("");
    let r = run_image(&ca, &["--issuer", &iss, "--timeout", "2s"]);
    assert_eq!(r.code, Some(0), "{}", r.log());
    assert!(r.log().contains("failing open") && r.log().contains("timeout of 2.00s used up"), "{}", r.log());
    let r = run_image(&ca, &["--issuer", &iss, "--timeout", "2s", "--fail-closed"]);
    assert_eq!(r.code, Some(1), "{}", r.log());
    assert!(r.log().contains("failing closed"), "{}", r.log());
}
