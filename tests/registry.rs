//! `deploy/push-image` for real, as a user runs it: push both architectures as one manifest list
//! to a real OCI registry (Debian's docker-registry, the distribution registry, on loopback with a
//! throwaway config; plain http, so `REGISTRY_TLS_VERIFY=false` for the registry only), then pull
//! it back into empty storage with podman and run it: `--version`, `--help`, `--dry-run`, and a
//! check against a ready provider. The same commit and SOURCE_DATE_EPOCH push the same digest
//! with buildah and with podman; the OCI labels name the commit and that time in RFC 3339. And the
//! placeholder `YOUR_REGISTRY/…` is refused by the reference grammar itself, before any network.
//! The second push comes from a storage that already holds a plain build's layers (labels
//! `revision=unknown`, `created=1970-01-01`, the build's own times), and still pushes the same
//! digest. Without `REGISTRY_TLS_VERIFY=false`, the push to the plain-HTTP registry fails loudly,
//! saying what to set, with each engine (buildah 1.28 itself exits 0 having pushed nothing).
//! These need root, buildah, podman, runc, qemu, docker-registry and both musl toolchains: the
//! test command installs them.

use crate::image::{DockerApi, readable_by_anyone};
use crate::support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// 2023-11-14T22:13:20Z: any fixed time, not the commit's, so the test sees the variable used.
const EPOCH: &str = "1700000000";
const EPOCH_RFC3339: &str = "2023-11-14T22:13:20Z";

/// A distribution registry on 127.0.0.1, storing into a temporary directory; killed on drop.
pub(crate) struct Registry {
    child: Child,
    pub(crate) port: u16,
    _dir: tempfile::TempDir,
}

impl Registry {
    pub(crate) fn start() -> Registry {
        let found = Command::new("docker-registry").arg("--version").output().map(|o| o.status.success());
        assert!(
            found.unwrap_or(false),
            "docker-registry is missing: the test command installs Debian's docker-registry"
        );
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    \
                 rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
                dir.path().join("data").display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let registry = Registry { child, port, _dir: dir };
        let started = Instant::now();
        while registry.get("/v2/", "").map(|r| r.status) != Some(200) {
            // Its answer is the event; the bound only catches a hang, on a loaded machine.
            assert!(started.elapsed() < HANG_BOUND, "the registry did not answer /v2/ in {HANG_BOUND:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        registry
    }

    /// A plain HTTP/1.0 GET on loopback: status, headers (lower-case names) and body.
    pub(crate) fn get(&self, path: &str, accept: &str) -> Option<HttpReply> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{}\r\nAccept: {accept}\r\n\r\n", self.port).ok()?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).ok()?;
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n")?;
        let mut lines = head.lines();
        let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        Some(HttpReply { status, headers, body: body.to_string() })
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) struct HttpReply {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl HttpReply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Storage of its own for one side (pusher or puller), so what is pulled can only have come from
/// the registry, and state of its own (no lock shared with the image tests running beside it);
/// vfs, runc and cgroupfs as this machine needs.
pub(crate) struct Storage {
    dir: tempfile::TempDir,
}

impl Storage {
    pub(crate) fn new() -> Storage {
        let dir = tempfile::tempdir().unwrap();
        let (graph, run) = (dir.path().join("graph"), dir.path().join("run"));
        std::fs::write(
            dir.path().join("storage.conf"),
            format!(
                "[storage]\ndriver = \"vfs\"\nrunroot = \"{}\"\ngraphroot = \"{}\"\n",
                run.display(),
                graph.display()
            ),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("containers.conf"),
            format!(
                "[containers]\ndefault_ulimits = [\"nofile=20000:20000\", \"nproc=4096:4096\"]\n\
                 [engine]\ncgroup_manager = \"cgroupfs\"\nruntime = \"runc\"\ntmp_dir = \"{}\"\n",
                dir.path().join("tmp").display()
            ),
        )
        .unwrap();
        Storage { dir }
    }

    pub(crate) fn conf(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn podman(&self) -> Command {
        let mut cmd = Command::new("podman");
        cmd.env("CONTAINERS_STORAGE_CONF", self.conf("storage.conf"))
            .env("CONTAINERS_CONF", self.conf("containers.conf"));
        cmd
    }
}

/// `deploy/push-image ARGS` as a user's shell runs it: only the ordinary variables (so cargo's
/// test environment does not change the build scripts' fingerprints and rebuild ring), plus the
/// engine's settings and SOURCE_DATE_EPOCH, and REGISTRY_TLS_VERIFY=false unless `verify_tls`.
/// Returns the exit code, stdout and stderr.
fn push_image(storage: &Storage, engine: &str, args: &[&str], verify_tls: bool) -> (i32, String, String) {
    push_image_with(storage, engine, args, verify_tls, &[])
}

/// [`push_image`] with more of the user's environment (the Docker CLI's `DOCKER_HOST`).
fn push_image_with(
    storage: &Storage,
    engine: &str,
    args: &[&str],
    verify_tls: bool,
    env: &[(&str, String)],
) -> (i32, String, String) {
    let mut cmd = Command::new(repo_root().join("deploy/push-image"));
    cmd.args(args).current_dir(std::env::temp_dir()).env_clear();
    for (key, value) in std::env::vars_os() {
        let key_str = key.to_string_lossy();
        if matches!(key_str.as_ref(), "PATH" | "HOME") || key_str.starts_with("RUSTUP_") || key_str == "CARGO_HOME" {
            cmd.env(key, value);
        }
    }
    cmd.env("SOURCE_DATE_EPOCH", EPOCH)
        .env("CONTAINER_ENGINE", engine)
        .env("BUILDAH_ISOLATION", "chroot")
        .env("CONTAINERS_STORAGE_CONF", storage.conf("storage.conf"))
        .env("CONTAINERS_CONF", storage.conf("containers.conf"));
    if !verify_tls {
        cmd.env("REGISTRY_TLS_VERIFY", "false");
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let out = cmd.output().expect("run deploy/push-image");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What `--version` says of a binary built from this tree: the version and the commit.
fn version_line() -> String {
    format!("wait-for-idp {} (commit {})", crate_version(), head_commit())
}

fn head_commit() -> String {
    let out = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(repo_root()).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Pushes with `engine` to `reference`; returns the digest, checked against the last line of
/// stdout, the --digest-file and the registry's own answer for the tag.
pub(crate) fn push(registry: &Registry, storage: &Storage, engine: &str, reference: &str) -> String {
    push_with(registry, storage, engine, reference, &[], "application/vnd.oci.image.index.v1+json")
}

/// [`push`] with more environment, expecting a list of the media type `index`.
fn push_with(
    registry: &Registry,
    storage: &Storage,
    engine: &str,
    reference: &str,
    env: &[(&str, String)],
    index: &str,
) -> String {
    let digest_file = storage.conf("digest");
    let started = Instant::now();
    let (code, stdout, stderr) =
        push_image_with(storage, engine, &["--digest-file", digest_file.to_str().unwrap(), reference], false, env);
    assert_eq!(code, 0, "deploy/push-image with {engine} failed:\n{stderr}");
    eprintln!("push-image with {engine}: {:.1} s", started.elapsed().as_secs_f64());
    let digest = std::fs::read_to_string(&digest_file).unwrap().trim().to_string();
    assert!(digest.starts_with("sha256:") && digest.len() == 71, "digest file: {digest:?}");
    assert_eq!(stdout.lines().last(), Some(format!("{reference}@{digest}").as_str()), "stdout:\n{stdout}");

    let (repo, tag) = reference.split_once('/').unwrap().1.rsplit_once(':').unwrap();
    let reply = registry.get(&format!("/v2/{repo}/manifests/{tag}"), index).expect("the registry answers");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.header("content-type"), Some(index), "the list's media type");
    assert_eq!(reply.header("docker-content-digest"), Some(digest.as_str()));
    let list: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
    let platforms = crate::image::platforms(&list);
    assert_eq!(platforms, crate::image::PLATFORMS);
    digest
}

/// `podman image inspect` of a pulled image: architecture, created, and the OCI labels.
fn inspect(puller: &Storage, image: &str) -> serde_json::Value {
    let out = puller.podman().args(["image", "inspect", image]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    all[0].clone()
}

fn assert_labels(image: &serde_json::Value, arch: &str) {
    assert_labels_of(image, arch, true)
}

/// The labels, and the image config's own time where the engine takes SOURCE_DATE_EPOCH
/// (`config_time`): podman's Docker API stamps the build's own.
fn assert_labels_of(image: &serde_json::Value, arch: &str, config_time: bool) {
    let labels = &image["Labels"];
    assert_eq!(image["Architecture"], arch);
    assert_eq!(labels["org.opencontainers.image.created"], EPOCH_RFC3339, "{labels}");
    assert_eq!(labels["org.opencontainers.image.revision"], head_commit().as_str(), "{labels}");
    assert_eq!(labels["org.opencontainers.image.version"], crate_version().as_str(), "{labels}");
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0", "{labels}");
    // The checkout's origin as an https URL without credentials, or "unknown": never an example.
    let source = labels["org.opencontainers.image.source"].as_str().unwrap_or_default();
    assert!(source == "unknown" || (source.starts_with("https://") && !source.contains('@')), "{labels}");
    // The image config's own creation time is the same instant, not the build's clock.
    let created = image["Created"].as_str().unwrap();
    assert!(!config_time || created.starts_with("2023-11-14T22:13:20"), "Created {created}");
}

/// The image as a user's node runs it: from the puller's storage, host network for the provider.
fn run_pulled(puller: &Storage, image: &str, mounts: &[String], args: &[&str]) -> Run {
    let mut cmd = puller.podman();
    cmd.args(["run", "--rm", "--network", "host"]);
    for mount in mounts {
        cmd.arg("-v").arg(mount);
    }
    cmd.arg(image).args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    run_with_limit(cmd, Duration::from_secs(120))
}

#[test]
#[ignore = "needs root, buildah, podman, runc, qemu, docker-registry and both musl toolchains; the test command runs it"]
fn registry_push_image_then_pull_and_run() {
    let registry = Registry::start();
    let reference = format!("127.0.0.1:{}/team/wait-for-idp:{}-test", registry.port, crate_version());
    let digest = push(&registry, &Storage::new(), "buildah", &reference);
    // Reproducible: the same commit and SOURCE_DATE_EPOCH, another engine, another tag, the
    // same manifest list to the byte; and from a storage holding a plain build's layers of the
    // same Dockerfile and binary, which a cached LABEL step would have taken over.
    let again = format!("127.0.0.1:{}/team/wait-for-idp:again", registry.port);
    let used = Storage::new();
    plain_build(&used);
    assert_eq!(push(&registry, &used, "podman", &again), digest, "podman pushed another image for the same inputs");

    // What is checked below is the push from the used storage: its labels are this build's.
    let reference = again;
    let puller = Storage::new();
    let pull = |arch: &str| {
        let out = puller.podman().args(["pull", "--tls-verify=false", "--arch", arch, &reference]).output().unwrap();
        assert!(out.status.success(), "podman pull --arch {arch}: {}", String::from_utf8_lossy(&out.stderr));
    };
    // arm64 first: its binary is copied out and run under qemu; then amd64, which runs here.
    pull("arm64");
    assert_labels(&inspect(&puller, &reference), "arm64");
    let container = puller.podman().args(["create", "--arch", "arm64", &reference]).output().unwrap();
    assert!(container.status.success(), "{}", String::from_utf8_lossy(&container.stderr));
    let id = String::from_utf8_lossy(&container.stdout).trim().to_string();
    let arm_bin = puller.conf("wait-for-idp-arm64");
    let copied = puller.podman().args(["cp", &format!("{id}:/wait-for-idp")]).arg(&arm_bin).output().unwrap();
    assert!(copied.status.success(), "{}", String::from_utf8_lossy(&copied.stderr));
    // The licences of what it links, as deploy/licenses writes them for that target.
    let licenses = puller.conf("licenses-arm64");
    let copied = puller.podman().args(["cp", &format!("{id}:/licenses")]).arg(&licenses).output().unwrap();
    assert!(copied.status.success(), "{}", String::from_utf8_lossy(&copied.stderr));
    let expected = puller.conf("licenses-expected");
    let written = Command::new(repo_root().join("deploy/licenses"))
        .args(["--target", "aarch64-unknown-linux-musl"])
        .arg(&expected)
        .output()
        .unwrap();
    assert!(written.status.success(), "{}", String::from_utf8_lossy(&written.stderr));
    for file in ["LICENSE", "THIRD-PARTY-LICENSES.txt"] {
        let (got, want) = (std::fs::read(licenses.join(file)), std::fs::read(expected.join(file)).unwrap());
        assert!(got.is_ok_and(|got| got == want), "the arm64 image's /licenses/{file} differs");
    }
    let _ = puller.podman().args(["rm", &id]).output();
    // The arm64 entry holds the arm64 binary, byte for byte the one .ci/build-static made.
    let built = repo_root().join("target/aarch64-unknown-linux-musl/release/wait-for-idp");
    assert!(std::fs::read(&arm_bin).unwrap() == std::fs::read(&built).unwrap(), "the arm64 image's binary differs");
    let out = Command::new("qemu-aarch64-static").arg(&arm_bin).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), version_line());

    pull("amd64");
    assert_labels(&inspect(&puller, &reference), "amd64");
    let r = run_pulled(&puller, &reference, &[], &["--version"]);
    assert_exit(&r, 0);
    assert_eq!(r.stdout.trim(), version_line());
    let r = run_pulled(&puller, &reference, &[], &["--help"]);
    assert_exit(&r, 0);
    assert!(r.stdout.contains("--issuer") && r.stdout.contains("--fail-closed"), "{}", r.stdout);
    let r = run_pulled(&puller, &reference, &[], &["--dry-run", "--issuer", "https://sso.example.com/realms/main"]);
    assert_exit(&r, 0);
    assert!(r.stdout.contains("https://sso.example.com/realms/main"), "{}", r.stdout);

    // And it does its job: ready against a real TLS provider on loopback, trusting the test CA.
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    readable_by_anyone(ca.dir.path());
    readable_by_anyone(&ca.pem_path);
    let mount = format!("{}:/ca/ca.pem:ro", ca.pem_path.display());
    let r = run_pulled(&puller, &reference, &[mount], &["--issuer", &iss, "--ca-file", "/ca/ca.pem", "--once"]);
    assert_exit(&r, 0);
    assert!(r.stdout.contains(&format!("issuer                  {iss}")), "{}", r.stdout);
}

/// The Docker path of push-image, with the Docker CLI a user has, against podman's Docker API (no
/// Docker engine here): each platform built and pushed, the list made with `docker manifest`,
/// read back; then each platform pulled into empty storage by the list's digest, its labels this
/// build's, and the amd64 image runs. Plain HTTP for `docker push` is the engine's
/// own setting (podman's registries.conf, as Docker's insecure-registries), `docker manifest`'s
/// is push-image's REGISTRY_TLS_VERIFY=false.
#[test]
#[ignore = "needs root, podman, runc, the Docker CLI, docker-registry and the musl binaries; the test command runs it"]
fn registry_push_image_with_the_docker_cli_through_podmans_docker_api() {
    let found = Command::new("docker").arg("--version").output().map(|o| o.status.success());
    assert!(found.unwrap_or(false), "the Docker CLI is missing: the test command installs it (Debian's docker.io)");
    let registry = Registry::start();
    let engine = Storage::new();
    let registries = engine.conf("registries.conf");
    std::fs::write(&registries, format!("[[registry]]\nlocation = \"127.0.0.1:{}\"\ninsecure = true\n", registry.port))
        .unwrap();
    let api = {
        let mut podman = engine.podman();
        podman.env("CONTAINERS_REGISTRIES_CONF", &registries);
        DockerApi::start(podman, engine.conf("docker.sock"))
    };
    let reference = format!("127.0.0.1:{}/team/wait-for-idp:docker", registry.port);
    let env = [("DOCKER_HOST", api.host()), ("DOCKER_CONFIG", engine.conf("docker-config").display().to_string())];
    let list = "application/vnd.docker.distribution.manifest.list.v2+json";
    let digest = push_with(&registry, &engine, "docker", &reference, &env, list);
    // What the user's engine is left holding: no list, no platform image of this run's.
    let out = engine.podman().args(["images", "--format", "{{.Repository}}:{{.Tag}}"]).output().unwrap();
    let left = String::from_utf8_lossy(&out.stdout);
    assert!(!left.contains("team/wait-for-idp"), "left in the engine's storage:\n{left}");

    let puller = Storage::new();
    let by_digest = format!("127.0.0.1:{}/team/wait-for-idp@{digest}", registry.port);
    for arch in ["arm64", "arm", "amd64"] {
        let out = puller.podman().args(["pull", "--tls-verify=false", "--arch", arch, &by_digest]).output().unwrap();
        assert!(out.status.success(), "podman pull --arch {arch}: {}", String::from_utf8_lossy(&out.stderr));
        assert_labels_of(&inspect(&puller, &by_digest), arch, false);
    }
    let r = run_pulled(&puller, &by_digest, &[], &["--version"]);
    assert_exit(&r, 0);
    assert_eq!(r.stdout.trim(), version_line());
}

/// A plain `podman build` of the image for amd64, as a user's earlier try would be (no build
/// arguments: labels `revision=unknown` and `created=1970-01-01`, the build's own times), into
/// `storage`, leaving its layers there as cache.
fn plain_build(storage: &Storage) {
    let context = storage.conf("context");
    let built = repo_root().join("target/x86_64-unknown-linux-musl/release/wait-for-idp");
    assert!(built.exists(), "the amd64 binary, built by push-image's test");
    crate::image::prebuilt_context(&context, "amd64", &built);
    let dockerfile = repo_root().join("Dockerfile");
    let out = storage
        .podman()
        .args([
            "build",
            "--layers",
            "--platform",
            "linux/amd64",
            "--build-arg",
            "BIN_STAGE=prebuilt",
            "-t",
            "localhost/plain",
        ])
        .arg("-f")
        .arg(&dockerfile)
        .arg(&context)
        .env("BUILDAH_ISOLATION", "chroot")
        .output()
        .unwrap();
    assert!(out.status.success(), "the plain build: {}", String::from_utf8_lossy(&out.stderr));
    let image = {
        let out = storage.podman().args(["image", "inspect", "localhost/plain"]).output().unwrap();
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()[0].clone()
    };
    assert_eq!(image["Labels"]["org.opencontainers.image.revision"], "unknown", "{}", image["Labels"]);
    assert_eq!(image["Labels"]["org.opencontainers.image.source"], "unknown", "{}", image["Labels"]);
}

/// Without REGISTRY_TLS_VERIFY=false a push to a plain-HTTP registry cannot happen: push-image
/// says so, names the variable and where to set it, prints no `REF@…`, writes no digest file, and
/// the registry holds nothing. buildah 1.28 itself exits 0 with an empty digest file here; podman
/// fails outright.
#[test]
#[ignore = "needs root, buildah, podman, runc, docker-registry and the musl binaries; the test command runs it"]
fn registry_push_to_plain_http_without_registry_tls_verify_fails_loudly() {
    let registry = Registry::start();
    for engine in ["buildah", "podman"] {
        let storage = Storage::new();
        let reference = format!("127.0.0.1:{}/team/wait-for-idp:{engine}", registry.port);
        let digest_file = storage.conf("digest");
        let (code, stdout, stderr) =
            push_image(&storage, engine, &["--digest-file", digest_file.to_str().unwrap(), &reference], true);
        assert_eq!(code, 1, "{engine}: exit {code}\nstdout: {stdout}\nstderr: {stderr}");
        assert!(stdout.is_empty(), "{engine}: printed as if pushed: {stdout}");
        assert!(!digest_file.exists(), "{engine}: a digest file was written");
        for phrase in ["push-image: FAILED", "REGISTRY_TLS_VERIFY=false deploy/push-image", "plain HTTP"] {
            assert!(stderr.contains(phrase), "{engine}: {phrase:?} missing from:\n{stderr}");
        }
        let reply = registry
            .get(&format!("/v2/team/wait-for-idp/manifests/{engine}"), "application/vnd.oci.image.index.v1+json");
        assert_eq!(reply.map(|r| r.status), Some(404), "{engine}: the registry holds the tag after all");
    }
}

/// Why `YOUR_REGISTRY/…` is the placeholder: the image reference grammar (containers/image's copy
/// of distribution/reference, which the kubelet parses with too, reporting InvalidImageName)
/// refuses it at once, so a manifest applied unedited fails on the spot instead of pulling
/// something or backing off for ever. A lower-case stand-in without a dot would be a Docker Hub
/// name that anyone could register.
#[test]
#[ignore = "needs podman; the test command runs it"]
fn registry_placeholder_is_refused_by_the_reference_grammar_without_a_pull() {
    let puller = Storage::new();
    let started = Instant::now();
    let out = puller.podman().args(["pull", "YOUR_REGISTRY/wait-for-idp:0.1.0"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("repository name must be lowercase"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10), "refused only after {:?}", started.elapsed());
}
