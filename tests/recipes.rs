//! The README's recipes are copied as they are, so they are tested as they are: every `jq` line
//! between the recipe markers runs against the gate's real JSON, ready and not ready.

use crate::support::*;
use std::path::Path;
use std::process::Command;

/// The `jq` commands of the README's recipes, as written (YAML list dashes removed).
fn jq_lines() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme.find("<!-- recipes").expect("the README marks its recipes");
    let end = readme.find("<!-- end of recipes -->").expect("the README marks the end of its recipes");
    let lines: Vec<String> = readme[start..end]
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
fn the_readme_recipes_read_the_gates_json() {
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
