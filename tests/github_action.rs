//! The GitHub Action (`action.yml`), for CI smoke tests: its steps run in a shell as GitHub's
//! runner runs a composite action (tests/deploy/run_action.py: `bash --noprofile --norc -eo
//! pipefail`, the inputs through `env:`, GITHUB_OUTPUT read back), building the gate from the
//! checkout (`.ci/build-static`, a no-op once the test command has built it) or taking the one
//! given. Ready against a real provider on loopback with a private CA given by a path relative to
//! the workspace; a provider that is not there, or a certificate the CA does not sign, fails the
//! step (CI fails closed); a bad input is the gate's own exit 2 naming its variable. And the
//! action is linted: actionlint reads its metadata through a workflow that uses it (a misspelled
//! input is caught), shellcheck reads each step's script.

use crate::support::*;
use std::path::Path;
use std::process::Command;

/// The action run with `inputs` in `workspace`: exit code, the action's outputs and step summary
/// (run_action.py's JSON), and what the steps logged. Only the ordinary variables pass, as in the
/// registry test: cargo's test environment would change the build scripts' fingerprints.
fn run_action(workspace: &Path, inputs: &[(&str, &str)]) -> (i32, serde_json::Value, String) {
    let mut cmd = Command::new("python3");
    cmd.arg(repo_root().join("tests/deploy/run_action.py")).current_dir(workspace).env_clear();
    for (key, value) in std::env::vars_os() {
        let name = key.to_string_lossy();
        if matches!(name.as_ref(), "PATH" | "HOME" | "CARGO_HOME") || name.starts_with("RUSTUP_") {
            cmd.env(&key, value);
        }
    }
    for (name, value) in inputs {
        cmd.arg("--input").arg(format!("{name}={value}"));
    }
    let out = cmd.output().expect("python3 tests/deploy/run_action.py");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    let result: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("run_action.py printed no JSON ({e}):\n{log}"));
    assert_eq!(result["exit_code"], out.status.code().unwrap_or(-1), "{result}");
    (out.status.code().unwrap_or(-1), result, log)
}

#[test]
#[ignore = "needs python3 with PyYAML and the musl toolchain (the build step); the test command runs it"]
fn github_action_builds_the_gate_and_passes_against_a_ready_provider() {
    let ca = TestCa::new();
    let (_provider, issuer) = ready_provider(&ca, "localhost", "/realms/main");
    let workspace = tempfile::tempdir().unwrap();
    std::fs::copy(&ca.pem_path, workspace.path().join("ca.pem")).unwrap();
    let (code, result, log) = run_action(workspace.path(), &[("issuer", &issuer), ("ca-file", "ca.pem")]);
    assert_eq!(code, 0, "{log}");
    // The build step ran and named the binary it built.
    assert!(log.contains("amd64 ") && log.contains(" bytes sha256 "), "{log}");
    let outputs = &result["outputs"];
    assert_eq!(outputs["ready"], "true", "{result}");
    assert_eq!(outputs["outcome"], "ready", "{result}");
    let report: serde_json::Value = serde_json::from_str(outputs["report"].as_str().unwrap()).unwrap();
    assert_eq!(report["issuers"][0]["issuer"], issuer.as_str());
    assert_eq!(result["summary"], "**wait-for-idp**: ready\n");
}

#[test]
#[ignore = "needs python3 with PyYAML; the test command installs it"]
fn github_action_fails_the_step_when_not_ready_or_misconfigured() {
    let gate = bin();
    let workspace = tempfile::tempdir().unwrap();

    // Nothing listening: not ready within the timeout, and CI fails closed by default.
    let slot = Reserved::new();
    let issuer = issuer_at("localhost", slot.port, "/realms/main");
    let (code, result, log) = run_action(workspace.path(), &[("issuer", &issuer), ("timeout", "1s"), ("binary", gate)]);
    assert_eq!(code, 1, "{log}");
    assert_eq!(result["outputs"]["ready"], "false", "{result}");
    assert_eq!(result["outputs"]["outcome"], "not-ready", "{result}");
    assert!(log.contains("failing closed (exit 1)"), "{log}");

    // A provider whose certificate the given CA does not sign: never ready.
    let ca = TestCa::new();
    let (_provider, issuer) = ready_provider(&ca, "localhost", "");
    std::fs::copy(&TestCa::new().pem_path, workspace.path().join("other-ca.pem")).unwrap();
    let inputs = [("issuer", issuer.as_str()), ("ca-file", "other-ca.pem"), ("timeout", "1s"), ("binary", gate)];
    let (code, result, log) = run_action(workspace.path(), &inputs);
    assert_eq!(code, 1, "{log}");
    assert_eq!(result["outputs"]["ready"], "false", "{result}");

    // fail-closed: false lets the job go on, and the outputs still say it was not ready.
    let inputs = [("issuer", issuer.as_str()), ("timeout", "1s"), ("fail-closed", "false"), ("binary", gate)];
    let (code, result, log) = run_action(workspace.path(), &inputs);
    assert_eq!(code, 0, "{log}");
    assert_eq!(result["outputs"]["ready"], "false", "{result}");
    assert_eq!(result["outputs"]["outcome"], "failed-open", "{result}");

    // A bad input: the gate's exit 2, naming the variable the input became, before any waiting.
    let (code, result, log) =
        run_action(workspace.path(), &[("issuer", &issuer), ("timeout", "soon"), ("binary", gate)]);
    assert_eq!(code, 2, "{log}");
    assert!(log.contains("WAIT_FOR_IDP_TIMEOUT: 'soon' is not valid"), "{log}");
    assert_eq!(result["outputs"]["outcome"], "", "{result}");
    assert!(result["summary"].as_str().unwrap().contains("no outcome (exit 2)"), "{result}");
}

/// actionlint reads the action's metadata through a workflow that uses it, as it does for a local
/// action: a clean use passes, a misspelled input and an output the action does not have are
/// caught. shellcheck reads each step's script.
#[test]
#[ignore = "needs actionlint (.ci/cache/bin), shellcheck and python3 with PyYAML; the test command installs them"]
fn github_action_passes_actionlint_and_shellcheck() {
    let actionlint = repo_root().join(".ci/cache/bin/actionlint");
    assert!(actionlint.exists(), "actionlint is not installed: run the test command (.ci/test)");
    let lint = |workflow: &str| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join(".github/workflows")).unwrap();
        std::fs::copy(repo_root().join("action.yml"), dir.path().join("action.yml")).unwrap();
        std::fs::write(dir.path().join(".github/workflows/smoke.yml"), workflow).unwrap();
        let out = Command::new(&actionlint).arg("-no-color").current_dir(dir.path()).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let workflow = |with: &str, output: &str| {
        format!(
            "name: smoke\non: [push]\npermissions: {{}}\njobs:\n  smoke:\n    runs-on: ubuntu-24.04\n    steps:\n      \
             - uses: ./\n        id: gate\n        with:\n          {with}: https://localhost:8443/realms/main\n          \
             ca-file: ci/ca.pem\n          timeout: 3m\n      - run: echo \"$READY\"\n        env:\n          \
             READY: ${{{{ steps.gate.outputs.{output} }}}}\n"
        )
    };
    let (ok, found) = lint(&workflow("issuer", "ready"));
    assert!(ok, "actionlint:\n{found}");
    let (ok, found) = lint(&workflow("isuer", "ready"));
    assert!(!ok && found.contains(r#"input "isuer" is not defined"#), "{found}");
    let (ok, found) = lint(&workflow("issuer", "readiness"));
    assert!(!ok && found.contains(r#"property "readiness" is not defined"#), "{found}");

    let out =
        Command::new("python3").arg(repo_root().join("tests/deploy/run_action.py")).arg("--lint").output().unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}
