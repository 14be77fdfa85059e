//! The recipes (`docs/deploy.md`, "Recipes") are copied as they are, so they are tested as they
//! are: every `jq` line between the recipe markers runs against the gate's real JSON, ready and
//! not ready.

use crate::support::*;
use std::path::Path;
use std::process::Command;

/// Where the recipes live.
const RECIPES: &str = "docs/deploy.md";

fn recipes() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(RECIPES)).unwrap()
}

/// The `jq` commands of the recipes, as written (YAML list dashes removed).
fn jq_lines() -> Vec<String> {
    let doc = recipes();
    let start = doc.find("<!-- recipes").expect("docs/deploy.md marks its recipes");
    let end = doc.find("<!-- end of recipes -->").expect("docs/deploy.md marks the end of its recipes");
    let lines: Vec<String> = doc[start..end]
        .lines()
        .map(|l| l.trim().trim_start_matches("- ").to_string())
        .filter(|l| l.starts_with("jq "))
        .collect();
    assert!(lines.len() >= 2, "no jq lines among the recipes");
    lines
}

/// Runs a recipe line with `idp.json` in a directory of its own; returns the exit code and stdout.
fn run_recipe(line: &str, json: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("idp.json"), json).unwrap();
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(dir.path())
        .output()
        .expect("jq is needed: the test command installs it");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
#[ignore = "needs jq; the test command runs it"]
fn the_recipes_read_the_gates_json() {
    let ca = TestCa::new();
    let (_p, iss) = ready_provider(&ca, "localhost", "");
    let ready = run_args(gate_for(&ca, &iss), &["--timeout", "2m", "--fail-closed", "--strict", "--output", "json"]);
    assert_exit(&ready, 0);
    let closed = Reserved::new();
    let down = run_args(gate_for(&ca, &closed.issuer("")), &["--timeout", "1s", "--fail-closed", "--output", "json"]);
    assert_exit(&down, 1);
    for line in jq_lines() {
        let (code, out) = run_recipe(&line, &ready.stdout);
        assert_eq!(code, 0, "{line}: {out}");
        if line.starts_with("jq -r") {
            assert_eq!(out.trim(), format!("{iss}: ready after 1 attempt(s), last failure: none"), "{line}");
        }
        let (code, out) = run_recipe(&line, &down.stdout);
        if line.starts_with("jq -e") {
            assert_eq!(code, 1, "{line} must fail the job when the provider is not ready: {out}");
        } else {
            assert_eq!(code, 0, "{line}: {out}");
            assert!(out.contains(": deadline-reached after") && out.contains("last failure: connect"), "{line}: {out}");
        }
    }
}

/// The Keycloak `HEALTHCHECK` recipe, its `CMD` as written, against a production-mode
/// Keycloak whose `hostname` is the recipe's public URL (only the port, the CA path and the
/// binary's path are this machine's). The plain-HTTP form the recipe gives for an ingress that
/// terminates TLS passes too, and the old form (the issuer at `http://localhost:8080`) never does.
#[test]
#[ignore = "runs a production-mode Keycloak (installed by .ci/real-peers); the test command runs it"]
fn the_keycloak_healthcheck_recipe_passes_on_a_production_keycloak() {
    let readme = recipes();
    let start = readme.find("HEALTHCHECK ").expect("docs/deploy.md has a HEALTHCHECK recipe");
    let block = &readme[start..start + readme[start..].find("\n```").unwrap()];
    let json = block.split_once("CMD ").unwrap().1.replace("\\\n", " ");
    let cmd: Vec<String> = serde_json::from_str(&json).expect("the recipe's CMD is a JSON array");
    let ca = TestCa::new();
    let dir = tempfile::tempdir().unwrap();
    let hostname = Some("https://sso.example.com".to_string());
    let mut kc = Keycloak::start(&ca, KeycloakMode::Production { hostname, http: true }, dir.path());
    kc.wait_started();
    let local = |arg: &str| {
        arg.replace("localhost:8443", &format!("127.0.0.1:{}", kc.https_port))
            .replace("localhost:8080", &format!("127.0.0.1:{}", kc.http_port))
            .replace("/opt/keycloak/conf/ca.pem", &ca.ca_arg())
    };
    assert_eq!(cmd[0], "/usr/local/bin/wait-for-idp");
    let recipe: Vec<String> = cmd[1..].iter().map(|a| local(a)).collect();
    let r = run_args(gate(), &recipe.iter().map(String::as_str).collect::<Vec<_>>());
    assert_exit(&r, 0);
    assert!(r.stderr.lines().count() <= 1, "--quiet keeps it to one line:\n{}", r.stderr);

    let discovery = "http://localhost:8080/realms/main/.well-known/openid-configuration";
    assert!(
        readme.contains(&discovery.replace("/realms/main/.well-known", "")[..21]),
        "the recipe names the HTTP form"
    );
    let http_form = ["--once", "--issuer", "https://sso.example.com/realms/main", "--discovery-url", &local(discovery)];
    assert_exit(&run_args(gate(), &http_form), 0);
    let old_form = ["--once", "--quiet", "--issuer", &local("http://localhost:8080/realms/main")];
    let r = run_args(gate(), &old_form);
    assert_exit(&r, 1);
    assert_logged(&r, &["issuer-mismatch"]);
}
