//! What ships: static binaries for the architectures oauth2-proxy ships for (amd64 native; arm64,
//! arm/v7, ppc64le and s390x cross-built with Debian's cross gcc and each run under its
//! qemu-user-static: `--version`, and `--once` against a local provider); amd64, arm64 and arm/v7
//! within 2 MiB and shipped, ppc64le and s390x over it and not (docs/release.md); the amd64
//! binary alone in a scratch-like root; the real images built from the Dockerfile's final stage
//! with buildah (amd64 run with podman), and a manifest list holding the three. These need root
//! and the tools the test command (.ci/test) installs; they fail, not skip, without them.

use crate::support::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// The architectures oauth2-proxy ships for, as the Dockerfile's TARGETARCH names them, with their
/// Rust targets, Debian's cross gcc (ring's C compiler and the linker) and the image's platform;
/// the first [`SHIPPED`] ship. arm, ppc64le and s390x are glibc linked fully static: no musl
/// standard library for them here (docs/release.md).
pub(crate) const ARCHES: [(&str, &str, &str, &str); 5] = [
    ("amd64", "x86_64-unknown-linux-musl", "", "linux/amd64"),
    ("arm64", "aarch64-unknown-linux-musl", "aarch64-linux-gnu-gcc", "linux/arm64"),
    ("arm", "armv7-unknown-linux-gnueabihf", "arm-linux-gnueabihf-gcc", "linux/arm/v7"),
    ("ppc64le", "powerpc64le-unknown-linux-gnu", "powerpc64le-linux-gnu-gcc", "linux/ppc64le"),
    ("s390x", "s390x-unknown-linux-gnu", "s390x-linux-gnu-gcc", "linux/s390x"),
];

/// How many of [`ARCHES`], from the first, ship: ppc64le and s390x are over 2 MiB.
const SHIPPED: usize = 3;

/// The release static binary for `arch`, brought up to date on first use (a no-op when the test
/// command has just built it), so no test runs a stale binary. All but amd64 are cross-built
/// with Debian's cross gcc, as C compiler for ring and as linker (as .ci/build-static does).
fn static_binary(arch: &str) -> PathBuf {
    static BUILT: [OnceLock<PathBuf>; 5] = [const { OnceLock::new() }; 5];
    let index = ARCHES.iter().position(|a| a.0 == arch).expect("a shipped architecture");
    let (_, triple, gcc, _) = ARCHES[index];
    BUILT[index]
        .get_or_init(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            // The environment cargo gives a test would change the build scripts' fingerprints
            // and rebuild ring each time; build with the shell's ordinary variables only.
            let mut build = Command::new(cargo);
            build.args(["build", "--release", "--locked", "--target", triple]).current_dir(root).env_clear();
            for (key, value) in std::env::vars_os() {
                let key_str = key.to_string_lossy();
                if matches!(key_str.as_ref(), "PATH" | "HOME")
                    || key_str.starts_with("RUSTUP_")
                    || key_str == "CARGO_HOME"
                {
                    build.env(key, value);
                }
            }
            if !gcc.is_empty() {
                build.env(format!("CC_{}", triple.replace('-', "_")), gcc);
                build.env(format!("CARGO_TARGET_{}_LINKER", triple.replace('-', "_").to_uppercase()), gcc);
            }
            let status = build.status().expect("run cargo");
            assert!(
                status.success(),
                "static build for {arch} failed (run the test command: it adds the target and installs the C toolchains)"
            );
            root.join("target").join(triple).join("release/wait-for-idp")
        })
        .clone()
}

/// True when the ELF file has no interpreter and no dynamic section: nothing to load at run time.
/// 32- and 64-bit, either byte order (arm/v7 is 32-bit, s390x big-endian).
fn is_fully_static(path: &Path) -> bool {
    let elf = std::fs::read(path).unwrap();
    assert_eq!(&elf[..4], b"\x7fELF");
    let (wide, big) = (elf[4] == 2, elf[5] == 2);
    let num = |o: usize, n: usize| {
        let bytes = &elf[o..o + n];
        let fold = |acc: u64, b: &u8| (acc << 8) | u64::from(*b);
        (if big { bytes.iter().fold(0, fold) } else { bytes.iter().rev().fold(0, fold) }) as usize
    };
    let (phoff, phentsize, phnum) =
        if wide { (num(0x20, 8), num(0x36, 2), num(0x38, 2)) } else { (num(0x1c, 4), num(0x2a, 2), num(0x2c, 2)) };
    (0..phnum).all(|i| {
        let p_type = num(phoff + i * phentsize, 4);
        p_type != 2 && p_type != 3 // PT_DYNAMIC, PT_INTERP
    })
}

pub(crate) fn readable_by_anyone(path: &Path) {
    let mode = if path.is_dir() { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
#[ignore = "needs the static binaries, buildah, podman, qemu and root; the test command runs it"]
fn static_binaries_are_static_and_within_2_mib() {
    for (i, (arch, ..)) in ARCHES.iter().enumerate() {
        let bin = static_binary(arch);
        assert!(is_fully_static(&bin), "{} is dynamically linked", bin.display());
        let size = std::fs::metadata(&bin).unwrap().len();
        eprintln!("{arch}: {size} bytes");
        if i < SHIPPED {
            assert!(size <= 2 * 1024 * 1024, "{arch}: {size} bytes, over 2.0 MiB");
        } else {
            // Built and run, not shipped: the day one fits, ship it (push-image, the release
            // workflow, the Dockerfile, docs/release.md) and move it up.
            assert!(size > 2 * 1024 * 1024, "{arch}: {size} bytes, within 2.0 MiB now: ship it");
        }
    }
}

#[test]
#[ignore = "needs the static binaries, buildah, podman, qemu and root; the test command runs it"]
fn static_binary_runs_alone_in_a_scratch_like_root() {
    let bin = static_binary("amd64");
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
    assert_exit(&r, 0);
    assert!(r.stdout.contains(&format!("issuer                  {iss}")), "{}", r.stdout);

    let files: Vec<String> =
        files_under(&root).into_iter().map(|p| p.strip_prefix(&root).unwrap().display().to_string()).collect();
    assert_eq!(files, ["ca/ca.pem", "etc/hosts", "etc/resolv.conf", "wait-for-idp"]);
}

fn require(tool: &str) {
    let found = Command::new(tool).arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    assert!(found, "{tool} is missing: run the test command (.ci/test), which installs buildah, podman and runc");
}

pub(crate) fn buildah() -> Command {
    let mut cmd = Command::new("buildah");
    cmd.args(["--storage-driver", "vfs"]);
    cmd
}

/// What the Dockerfile's `prebuilt` stage takes from the build context `context` for `arch`: the
/// binary `bin` and the licences deploy/licenses writes for it.
pub(crate) fn prebuilt_context(context: &Path, arch: &str, bin: &Path) {
    let triple = ARCHES.iter().find(|a| a.0 == arch).expect("a known architecture").1;
    let dist = context.join("dist").join(arch);
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::copy(bin, dist.join("wait-for-idp")).unwrap();
    let out = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/licenses"))
        .args(["--target", triple])
        .arg(dist.join("licenses"))
        .output()
        .unwrap();
    assert!(out.status.success(), "deploy/licenses: {}", String::from_utf8_lossy(&out.stderr));
}

/// Builds the Dockerfile's real final stage for `arch` once, from the prebuilt static binary.
pub(crate) fn image(arch: &str) -> String {
    static IMAGES: [OnceLock<String>; 5] = [const { OnceLock::new() }; 5];
    let index = ARCHES.iter().position(|a| a.0 == arch).expect("a shipped architecture");
    let platform = ARCHES[index].3;
    IMAGES[index]
        .get_or_init(|| {
            require("buildah");
            require("podman");
            let context = tempfile::tempdir().unwrap().keep();
            prebuilt_context(&context, arch, &static_binary(arch));
            let dockerfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("Dockerfile");
            let tag = format!("localhost/wait-for-idp:test-{arch}");
            let out = buildah()
                .args(["build", "--isolation", "chroot", "--platform", platform])
                .args(["--build-arg", "BIN_STAGE=prebuilt", "--build-arg", &format!("TARGETARCH={arch}"), "-f"])
                .arg(&dockerfile)
                .args(["-t", &tag])
                .arg(&context)
                .output()
                .unwrap();
            assert!(out.status.success(), "buildah build failed:\n{}", String::from_utf8_lossy(&out.stderr));
            let _ = std::fs::remove_dir_all(&context);
            tag
        })
        .clone()
}

pub(crate) fn podman() -> Command {
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
        .arg(image("amd64"))
        .args(["--ca-file", "/ca/ca.pem"])
        .args(args);
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    run_with_limit(cmd, Duration::from_secs(120))
}

#[test]
#[ignore = "needs the static binaries, buildah, podman, qemu and root; the test command runs it"]
fn image_is_scratch_with_only_the_binary_as_non_root() {
    let tag = image("amd64");
    let out = podman()
        .args(["image", "inspect", "--format", "{{.Config.User}}|{{json .Config.Entrypoint}}|{{.Size}}", &tag])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let parts: Vec<&str> = text.split('|').collect();
    assert_eq!(parts[0], "65532:65532", "{text}");
    assert_eq!(parts[1], "[\"/wait-for-idp\"]", "{text}");
    // Its files: the binary and the licences of what it links (deploy/licenses), nothing else.
    let created = podman().args(["create", &tag]).output().unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let id = String::from_utf8_lossy(&created.stdout).trim().to_string();
    let exported = podman().args(["export", &id]).output().unwrap();
    let _ = podman().args(["rm", &id]).output();
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    let mut tar = Command::new("tar")
        .args(["-t"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut tar.stdin.take().unwrap(), &exported.stdout).unwrap();
    let listed = String::from_utf8(tar.wait_with_output().unwrap().stdout).unwrap();
    // podman export adds the mount points every container gets (empty directories and files).
    let files: Vec<&str> = listed
        .lines()
        .filter(|l| {
            !l.ends_with('/')
                && !["etc/hosts", "etc/resolv.conf", "etc/hostname", ".containerenv", "run/.containerenv"].contains(l)
        })
        .collect();
    assert_eq!(files, ["licenses/LICENSE", "licenses/THIRD-PARTY-LICENSES.txt", "wait-for-idp"], "{listed}");
    let size: u64 = parts[2].parse().unwrap();
    let binary = std::fs::metadata(static_binary("amd64")).unwrap().len();
    let licences = std::fs::metadata(repo_root().join("LICENSE")).unwrap().len();
    assert!(
        size < binary + licences + 512 * 1024,
        "the image holds little beyond the binary and licences: {size} vs {binary}"
    );
    let report = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sizes.txt");
    std::fs::write(&report, format!("binary {binary}\nimage {size}\n")).unwrap();
    eprintln!("binary {binary} bytes, image {size} bytes");
}

#[test]
#[ignore = "needs the static binaries, buildah, podman, qemu and root; the test command runs it"]
fn image_passes_against_a_ready_provider() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    let r = run_image(&ca, &["--issuer", &iss, "--timeout", "20s"]);
    assert_exit(&r, 0);
    assert_logged(&r, &["ready: "]);
}

#[test]
#[ignore = "needs the static binaries, buildah, podman, qemu and root; the test command runs it"]
fn image_fails_open_then_closed_when_the_provider_is_down() {
    let ca = TestCa::new();
    let closed = Reserved::new();
    let iss = closed.issuer("");
    let r = run_image(&ca, &["--issuer", &iss, "--timeout", "2s"]);
    assert_exit(&r, 0);
    assert_logged(&r, &["failing open", "timeout of 2.00s used up"]);
    let r = run_image(&ca, &["--issuer", &iss, "--timeout", "2s", "--fail-closed"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["failing closed"]);
}

/// A foreign binary under its qemu-user-static, against the local TLS provider: `--version`,
/// ready with `--once`, never ready on a TLS failure, and within its deadline against a provider
/// that never answers.
fn binary_under_qemu(arch: &str, emulator: &str) {
    let bin = static_binary(arch);
    assert!(is_fully_static(&bin), "{} is dynamically linked", bin.display());
    let qemu = |args: &[&str]| {
        let mut cmd = Command::new(emulator);
        cmd.arg(&bin).args(args).env_clear();
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        run(cmd)
    };
    let r = qemu(&["--version"]);
    assert_exit(&r, 0);
    assert!(r.stdout.starts_with(&format!("wait-for-idp {}", crate_version())), "{arch}: {}", r.stdout);
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    let r = qemu(&["--issuer", &iss, "--ca-file", &ca.ca_arg(), "--once"]);
    assert_exit(&r, 0);
    assert!(r.stdout.contains(&format!("issuer                  {iss}")), "{arch}: {}", r.stdout);
    eprintln!("{arch} under {emulator}: --once ready in {:?}", r.elapsed);

    let r = qemu(&["--issuer", &iss, "--once"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["tls: certificate for localhost is signed by an unknown CA"]);

    let silent = Provider::start(Mode::Silent, reply(|_, _| Reply::Hang));
    let r = qemu(&["--issuer", &silent.issuer(""), "--ca-file", &ca.ca_arg(), "--timeout", "2s", "--fail-closed"]);
    assert_exit(&r, 1);
    assert_logged(&r, &["last failure: timeout: TLS handshake with localhost not complete within"]);
    assert_within(&r, Duration::from_secs(2));
}

#[test]
#[ignore = "needs the static binaries, buildah, podman, qemu and root; the test command runs it"]
fn arm64_binary_under_qemu() {
    binary_under_qemu("arm64", "qemu-aarch64-static");
}

#[test]
#[ignore = "needs the static binaries, buildah, podman, qemu and root; the test command runs it"]
fn arm_v7_binary_under_qemu() {
    binary_under_qemu("arm", "qemu-arm-static");
}

#[test]
#[ignore = "needs the static binaries, buildah, podman, qemu and root; the test command runs it"]
fn ppc64le_binary_under_qemu() {
    binary_under_qemu("ppc64le", "qemu-ppc64le-static");
}

#[test]
#[ignore = "needs the static binaries, buildah, podman, qemu and root; the test command runs it"]
fn s390x_binary_under_qemu() {
    binary_under_qemu("s390x", "qemu-s390x-static");
}

/// Every shipped image, and a manifest list holding them, as deploy/push-image's `docker buildx
/// --platform linux/amd64,linux/arm64,linux/arm/v7` would push.
#[test]
#[ignore = "needs the static binaries, buildah, podman, qemu and root; the test command runs it"]
fn images_for_every_architecture_and_a_manifest_list() {
    let list = "localhost/wait-for-idp:test-multi";
    let _ = buildah().args(["manifest", "rm", list]).output();
    let created = buildah().args(["manifest", "create", list]).output().unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    for (arch, ..) in &ARCHES[..SHIPPED] {
        let added =
            buildah().args(["manifest", "add", list, &format!("containers-storage:{}", image(arch))]).output().unwrap();
        assert!(added.status.success(), "{arch}: {}", String::from_utf8_lossy(&added.stderr));
    }
    let out = buildah().args(["manifest", "inspect", list]).output().unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let arches = platforms(&manifest);
    assert_eq!(arches, PLATFORMS);
    for (arch, ..) in &ARCHES[1..SHIPPED] {
        let out = podman().args(["image", "inspect", "--format", "{{.Architecture}}", &image(arch)]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), *arch);
    }
}

/// What [`platforms`] lists for the shipped images (arm/v7's variant is not part of it).
pub(crate) const PLATFORMS: [&str; 3] = ["linux/amd64", "linux/arm", "linux/arm64"];

/// The `os/architecture` of each entry of an image index (a manifest list), sorted.
pub(crate) fn platforms(index: &serde_json::Value) -> Vec<String> {
    let mut platforms: Vec<String> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!("{}/{}", m["platform"]["os"].as_str().unwrap(), m["platform"]["architecture"].as_str().unwrap())
        })
        .collect();
    platforms.sort();
    platforms
}

/// podman's Docker-compatible API on a socket of the test's own, for the Docker CLI and Docker
/// Compose: `podman` is the command with the caller's storage settings, `socket` where to listen.
pub(crate) struct DockerApi {
    child: std::process::Child,
    pub(crate) socket: PathBuf,
}

impl DockerApi {
    pub(crate) fn start(mut podman: Command, socket: PathBuf) -> DockerApi {
        podman.args(["system", "service", "--time=0", &format!("unix://{}", socket.display())]);
        let child = podman
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("podman system service");
        let started = std::time::Instant::now();
        // The socket appearing is the event; the bound only catches a hang, on a loaded machine.
        while !socket.exists() {
            assert!(started.elapsed() < HANG_BOUND, "podman's API socket did not appear in {HANG_BOUND:?}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        DockerApi { child, socket }
    }

    /// `DOCKER_HOST` for a client of this API.
    pub(crate) fn host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }
}

impl Drop for DockerApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
