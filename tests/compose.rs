//! `deploy/compose/compose.yaml` run for real, with the locally built image and a provider on the
//! host network: the application starts only after the gate has exited 0, and with
//! `--fail-closed` against a dead provider it never starts.
//!
//! Two implementations drive podman here. podman-compose (PyPI) checks and runs the file, but its
//! newest release, 1.6.0, does not honour `condition: service_completed_successfully`: it waits
//! only for the gate to be "stopped", which a container that has not started yet already is, and
//! never looks at the exit code (containers/podman-compose#1330; fixed by #1481 on its main
//! branch, not released). So the ordering is proven with Docker Compose (`docker-compose` 1.29.2
//! from PyPI, whose `service_completed_successfully` checks the exit code) talking to podman's
//! Docker-compatible API. The test command installs both.

use crate::image::{DockerApi, buildah, image, podman, readable_by_anyone};
use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn compose_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/compose/compose.yaml")
}

/// podman's own settings for this machine (vfs storage, runc, cgroupfs), for the tools that call
/// podman themselves, and the directory the application writes its marker to.
struct Setup {
    dir: tempfile::TempDir,
    out: PathBuf,
}

impl Setup {
    fn new(ca: &TestCa) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("containers.conf"),
            "[containers]\ndefault_ulimits = [\"nofile=20000:20000\", \"nproc=4096:4096\"]\n\
             [engine]\ncgroup_manager = \"cgroupfs\"\nruntime = \"runc\"\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("storage.conf"),
            "[storage]\ndriver = \"vfs\"\nrunroot = \"/run/containers/storage\"\n\
             graphroot = \"/var/lib/containers/storage\"\n",
        )
        .unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        readable_by_anyone(ca.dir.path());
        readable_by_anyone(&ca.pem_path);
        // The test's own wiring: both services on the host network (the provider listens on
        // loopback), the CA mounted into the gate, a directory for the application's marker.
        std::fs::write(
            dir.path().join("override.yaml"),
            format!(
                "services:\n  wait-for-idp:\n    network_mode: host\n    environment:\n      \
                 WAIT_FOR_IDP_CA_FILE: /ca/ca.pem\n    volumes:\n      - {}:/ca/ca.pem:ro\n  app:\n    \
                 network_mode: host\n    volumes:\n      - {}:/out\n",
                ca.pem_path.display(),
                out.display()
            ),
        )
        .unwrap();
        Setup { dir, out }
    }

    fn env(&self, cmd: &mut Command, issuer: &str, extra: &[(&str, &str)]) {
        cmd.env("CONTAINERS_CONF", self.dir.path().join("containers.conf"))
            .env("CONTAINERS_STORAGE_CONF", self.dir.path().join("storage.conf"))
            .env("OIDC_ISSUER", issuer)
            .env("WAIT_FOR_IDP_IMAGE", image("amd64"))
            .env("APP_IMAGE", app_image())
            .envs(extra.iter().copied());
    }

    fn files(&self) -> [String; 4] {
        let override_file = self.dir.path().join("override.yaml");
        ["-f".into(), compose_file().display().to_string(), "-f".into(), override_file.display().to_string()]
    }

    fn app_started(&self) -> bool {
        self.out.join("app-started").exists()
    }
}

/// The "application": a scratch image holding Debian's static busybox, which writes a marker.
fn app_image() -> String {
    static IMAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    IMAGE
        .get_or_init(|| {
            let context = tempfile::tempdir().unwrap();
            copy_static_busybox(context.path());
            std::fs::write(
                context.path().join("Containerfile"),
                "FROM scratch\nCOPY busybox /bin/busybox\n\
                 ENTRYPOINT [\"/bin/busybox\", \"sh\", \"-c\", \"echo started > /out/app-started\"]\n",
            )
            .unwrap();
            let tag = "localhost/wait-for-idp-compose-app:test".to_string();
            let out = buildah()
                .args(["build", "--isolation", "chroot", "-f"])
                .arg(context.path().join("Containerfile"))
                .args(["-t", &tag])
                .arg(context.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            tag
        })
        .clone()
}

fn docker_compose() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/cache/compose-venv/bin/docker-compose");
    assert!(path.exists(), "docker-compose is not installed: run the test command (.ci/test), which installs it");
    path
}

/// Runs Docker Compose `args` for `project`; returns the exit code and its output.
fn compose(
    setup: &Setup,
    api: &DockerApi,
    project: &str,
    issuer: &str,
    env: &[(&str, &str)],
    args: &[&str],
) -> (i32, String) {
    let mut cmd = Command::new(docker_compose());
    cmd.args(["-p", project]).args(setup.files()).args(args);
    setup.env(&mut cmd, issuer, env);
    cmd.env("DOCKER_HOST", api.host());
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
    )
}

/// When a container started and finished (nanoseconds), and its exit code; `None` if it was
/// never created.
fn state(setup: &Setup, container: &str) -> Option<(i64, i64, i32)> {
    let mut cmd = podman();
    let format = "{{.State.StartedAt.UnixNano}} {{.State.FinishedAt.UnixNano}} {{.State.ExitCode}}";
    cmd.args(["inspect", "--format", format, container]);
    setup.env(&mut cmd, "", &[]);
    let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
    let v: Vec<i64> = out.split_whitespace().map(|x| x.parse().unwrap()).collect();
    (v.len() == 3).then(|| (v[0], v[1], v[2] as i32))
}

#[test]
#[ignore = "needs podman, Docker Compose and podman-compose, as root; the test command runs it"]
fn compose_starts_the_application_only_after_the_gate_exits_0() {
    let ca = TestCa::new();
    let setup = Setup::new(&ca);
    let api = {
        let mut cmd = Command::new("podman");
        setup.env(&mut cmd, "", &[]);
        DockerApi::start(cmd, setup.dir.path().join("podman.sock"))
    };
    let project = format!("wfi{}", std::process::id());
    let down = |issuer: &str| compose(&setup, &api, &project, issuer, &[], &["down"]);

    // Ready provider: the gate exits 0, then the application starts.
    let (_p, issuer) = ready_provider(&ca, "localhost", "");
    let (code, log) = compose(&setup, &api, &project, &issuer, &[], &["up"]);
    assert_eq!(code, 0, "{log}");
    assert!(setup.app_started(), "the application ran: {log}");
    let (_, gate_finished, gate_exit) = state(&setup, &format!("{project}_wait-for-idp_1")).unwrap();
    let (app_started, _, _) = state(&setup, &format!("{project}_app_1")).unwrap();
    assert_eq!(gate_exit, 0);
    assert!(
        app_started > gate_finished,
        "the application started {} ms before the gate exited",
        (gate_finished - app_started) / 1_000_000
    );
    down(&issuer);

    // Dead provider, --fail-closed: the gate exits 1 and the application never starts.
    std::fs::remove_file(setup.out.join("app-started")).unwrap();
    let closed = Reserved::new();
    let dead = closed.issuer("");
    let closed_env = [("WAIT_FOR_IDP_TIMEOUT", "2s"), ("WAIT_FOR_IDP_FAIL_CLOSED", "true")];
    let (code, log) = compose(&setup, &api, &project, &dead, &closed_env, &["up"]);
    assert_ne!(code, 0, "{log}");
    assert!(log.contains("exited with code 1"), "{log}");
    assert!(!setup.app_started(), "the application started although the gate failed closed: {log}");
    let app = state(&setup, &format!("{project}_app_1"));
    assert!(app.is_none_or(|(started, _, _)| started <= 0), "the application container was started: {log}");
    down(&dead);

    // Dead provider, the default: the gate fails open at its deadline, and the application starts,
    // as it would have without the gate.
    let (code, log) = compose(&setup, &api, &project, &dead, &[("WAIT_FOR_IDP_TIMEOUT", "2s")], &["up"]);
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("failing open") && setup.app_started(), "{log}");
    down(&dead);
}

/// podman-compose reads and runs the same file (its ordering is not asserted: see the module's
/// documentation), and the way round its bug in docs/deploy.md works: the gate first, then the
/// application alone.
#[test]
#[ignore = "needs podman, Docker Compose and podman-compose, as root; the test command runs it"]
fn podman_compose_runs_the_file() {
    let ca = TestCa::new();
    let setup = Setup::new(&ca);
    let (_p, issuer) = ready_provider(&ca, "localhost", "");
    let closed = Reserved::new();
    let project = format!("pc{}", std::process::id());
    let podman_compose_for = |issuer: &str, env: &[(&str, &str)], args: &[&str]| {
        let mut cmd = Command::new("podman-compose");
        cmd.args(["-p", &project]).args(setup.files()).args(args);
        setup.env(&mut cmd, issuer, env);
        let out = cmd.output().expect("podman-compose is missing: run the test command (.ci/test), which installs it");
        (
            out.status.code().unwrap_or(-1),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };
    let podman_compose = |args: &[&str]| podman_compose_for(&issuer, &[], args);
    let (code, config) = podman_compose(&["config"]);
    assert_eq!(code, 0, "{config}");
    assert!(config.contains("service_completed_successfully"), "{config}");
    // Detached: an attached `up` races podman-compose's own `podman attach` against a gate that
    // has already finished (a ready provider answers the first attempt at once), and then fails
    // with "can only attach to created or running containers" whatever the gate did.
    let (code, log) = podman_compose(&["up", "-d"]);
    assert_eq!(code, 0, "{log}");
    let gate = format!("{project}_wait-for-idp_1");
    let started = Instant::now();
    let gate_exit = loop {
        match state(&setup, &gate) {
            Some((_, finished, exit)) if finished > 0 && setup.app_started() => break exit,
            _ if started.elapsed() > HANG_BOUND => panic!("the gate or the application never ran: {log}"),
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    };
    let mut logs = podman();
    logs.args(["logs", &gate]);
    setup.env(&mut logs, "", &[]);
    let out = logs.output().unwrap();
    let gate_log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(gate_log.contains("ready: https://localhost:"), "{gate_log}");
    assert_eq!(gate_exit, 0, "{gate_log}");
    podman_compose(&["down"]);

    // The gate alone gives its exit code to the shell; the application then starts without it.
    std::fs::remove_file(setup.out.join("app-started")).unwrap();
    let fail_closed = [("WAIT_FOR_IDP_TIMEOUT", "1s"), ("WAIT_FOR_IDP_FAIL_CLOSED", "true")];
    let (code, log) = podman_compose_for(&closed.issuer(""), &fail_closed, &["run", "--rm", "wait-for-idp"]);
    assert_eq!(code, 1, "{log}");
    let (code, log) = podman_compose(&["run", "--rm", "wait-for-idp"]);
    assert_eq!(code, 0, "{log}");
    let (code, log) = podman_compose(&["up", "--no-deps", "app"]);
    assert_eq!(code, 0, "{log}");
    assert!(setup.app_started(), "{log}");
    podman_compose(&["down"]);
}
