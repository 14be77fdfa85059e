//! What a user copies and what ships beside the binary: every image the deploy kit and the
//! README's examples name is the placeholder `YOUR_REGISTRY/…` or a real peer's pinned image;
//! `deploy/push-image` refuses a missing or placeholder reference before it builds anything; the
//! LICENSE is the Apache License 2.0, word for word. Nothing here needs more than bash.

use crate::support::{crate_version, files_under, repo_root};
use std::process::Command;

/// The one placeholder for a registry. Upper case on purpose: no image reference may contain it,
/// so the kubelet reports InvalidImageName at once ("repository name must be lowercase") instead
/// of pulling; a lower-case name without a dot would be read as a Docker Hub repository that
/// anyone could register.
const PLACEHOLDER: &str = "YOUR_REGISTRY/";

/// The real systems the examples run beside the gate, as pinned there.
const PEERS: [&str; 2] = ["quay.io/oauth2-proxy/oauth2-proxy:v7.15.6", "quay.io/keycloak/keycloak:26.7.3"];

/// The image references a text names: YAML `image:` values (a Compose `${VAR:-default}` gives its
/// default), `--image=` and `--image` arguments, and Dockerfile `FROM` lines (a stage named
/// earlier is not an image). With `code_only`, only inside fenced code blocks (Markdown).
fn image_references(text: &str, code_only: bool) -> Vec<String> {
    let mut found = Vec::new();
    let mut stages: Vec<String> = Vec::new();
    let mut in_code = !code_only;
    for line in text.lines() {
        let trimmed = line.trim();
        if code_only && trimmed.starts_with("```") {
            in_code = !in_code;
            stages.clear();
            continue;
        }
        if !in_code {
            continue;
        }
        let item = trimmed.trim_start_matches("- ").trim();
        if let Some(value) = item.strip_prefix("image:") {
            let value = value.split(" #").next().unwrap().trim().trim_matches(|c| c == '"' || c == '\'');
            let value = match value.strip_prefix("${").and_then(|v| v.split_once(":-")) {
                Some((_, default)) => default.trim_end_matches('}'),
                None => value,
            };
            found.push(value.to_string());
        }
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        for (i, word) in words.iter().enumerate() {
            if let Some(value) = word.strip_prefix("--image=") {
                found.push(value.to_string());
            } else if *word == "--image" && i + 1 < words.len() {
                found.push(words[i + 1].to_string());
            }
        }
        if words.first().is_some_and(|w| w.eq_ignore_ascii_case("FROM")) {
            let mut rest = words[1..].iter().filter(|w| !w.starts_with("--"));
            if let Some(image) = rest.next()
                && !stages.iter().any(|s| s == image)
                && *image != "scratch"
            {
                found.push(image.to_string());
            }
            if let (Some(as_), Some(name)) = (rest.next(), rest.next())
                && as_.eq_ignore_ascii_case("AS")
            {
                stages.push(name.to_string());
            }
        }
    }
    found
}

/// Why a reference is neither the placeholder nor a peer's, or None when it is one of them.
fn not_a_placeholder(reference: &str, version: &str) -> Option<String> {
    if PEERS.contains(&reference) {
        return None;
    }
    let Some(rest) = reference.strip_prefix(PLACEHOLDER) else {
        return Some(format!("{reference}: not {PLACEHOLDER}<name>:<tag>, nor one of the peers {PEERS:?}"));
    };
    let Some((name, tag)) = rest.split_once(':') else {
        return Some(format!("{reference}: no tag"));
    };
    if name.is_empty() || name.chars().any(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')) {
        return Some(format!("{reference}: the name after the placeholder is not a plain lower-case name"));
    }
    if name == "wait-for-idp" && tag != format!("{version}@sha256:YOUR_DIGEST") {
        return Some(format!(
            "{reference}: the gate is not named by its tag, the crate's version {version}, and digest"
        ));
    }
    None
}

#[test]
fn the_deploy_kit_and_the_readme_name_only_the_placeholder_or_a_peer() {
    let version = crate_version();
    let mut sources: Vec<(String, Vec<String>)> = Vec::new();
    for path in files_under(&repo_root().join("deploy")) {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if matches!(ext, "yaml" | "yml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.strip_prefix(repo_root()).unwrap().display().to_string();
            sources.push((name, image_references(&text, false)));
        }
    }
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    sources.push(("README.md".into(), image_references(&readme, true)));

    let mut problems = Vec::new();
    let mut gates = 0;
    for (source, references) in &sources {
        for reference in references {
            gates += usize::from(reference.starts_with(&format!("{PLACEHOLDER}wait-for-idp:")));
            if let Some(why) = not_a_placeholder(reference, &version) {
                problems.push(format!("{source}: {why}"));
            }
        }
    }
    assert!(problems.is_empty(), "images that are neither the placeholder nor a peer's:\n{}", problems.join("\n"));
    // Every manifest, values file and the Compose file names the gate (8 of them).
    assert!(gates >= 8, "found only {gates} references to {PLACEHOLDER}wait-for-idp: is the scan reading the files?");
}

#[test]
fn the_image_scan_finds_what_it_must_refuse() {
    let yaml = "spec:\n  initContainers:\n    - name: gate\n      image: ghcr.io/example/wait-for-idp:0.1.0  # old\n\
                \x20   image: \"${X:-docker.io/me/app:1}\"\n";
    assert_eq!(image_references(yaml, false), ["ghcr.io/example/wait-for-idp:0.1.0", "docker.io/me/app:1"]);
    let md = "text FROM nothing\n```Dockerfile\nFROM --platform=linux/amd64 me/gate:1 AS gate\nFROM gate\n```\n\
              ```sh\nkubectl run x --image=me/x:2 -- --once\n```\n";
    assert_eq!(image_references(md, true), ["me/gate:1", "me/x:2"]);
    for bad in [
        "ghcr.io/example/wait-for-idp:0.1.0",
        "YOUR_REGISTRY/wait-for-idp:9.9.9@sha256:YOUR_DIGEST",
        "YOUR_REGISTRY/wait-for-idp:0.1.0",
        "YOUR_REGISTRY/App:1",
        "x",
    ] {
        assert!(not_a_placeholder(bad, "0.1.0").is_some(), "{bad} must be refused");
    }
    for good in ["YOUR_REGISTRY/wait-for-idp:0.1.0@sha256:YOUR_DIGEST", "YOUR_REGISTRY/token-proxy:1.0.0", PEERS[0]] {
        assert_eq!(not_a_placeholder(good, "0.1.0"), None, "{good}");
    }
}

fn push_image(args: &[&str]) -> (i32, String) {
    let out = Command::new("bash")
        .arg(repo_root().join("deploy/push-image"))
        .args(args)
        .env("CONTAINER_ENGINE", "none-should-be-reached")
        .output()
        .expect("bash");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn push_image_refuses_a_missing_or_placeholder_reference_before_building() {
    let (code, err) = push_image(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing the image reference"), "{err}");
    assert!(
        err.contains("usage: deploy/push-image [--from-source] [--digest-file FILE] <registry>/<name>:<tag>"),
        "{err}"
    );
    let (code, err) = push_image(&["YOUR_REGISTRY/wait-for-idp:0.1.0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("still names the placeholder YOUR_REGISTRY"), "{err}");
    let (code, err) = push_image(&["a/b:1", "c/d:2"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("one image reference only"), "{err}");
    // Past the arguments, the engine is chosen: an unknown one stops it before any build.
    let (code, err) = push_image(&["registry.example.com/me/wait-for-idp:0.1.0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("CONTAINER_ENGINE must be buildah, podman or docker"), "{err}");
}

#[test]
fn the_license_is_the_apache_license_2_0_word_for_word() {
    let text = std::fs::read(repo_root().join("LICENSE")).unwrap();
    let digest = ring::digest::digest(&ring::digest::SHA256, &text);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    // The sha256 of https://www.apache.org/licenses/LICENSE-2.0.txt (and of Debian's
    // /usr/share/common-licenses/Apache-2.0).
    assert_eq!(hex, "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30");
    let cargo = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    assert!(cargo.contains("license = \"Apache-2.0\""));
    let dockerfile = std::fs::read_to_string(repo_root().join("Dockerfile")).unwrap();
    assert!(dockerfile.contains("org.opencontainers.image.licenses=\"Apache-2.0\""));
}

/// BuildKit (docker buildx, push-image's docker path) gives a stage's `ARG TARGETARCH=x` default
/// precedence over the platform being built, so every entry of the manifest list would hold the
/// amd64 binary; buildah and podman do not, so the registry test cannot see it. Hence a rule.
#[test]
fn the_dockerfile_takes_targetarch_from_the_platform_without_a_default() {
    let dockerfile = std::fs::read_to_string(repo_root().join("Dockerfile")).unwrap();
    let declared: Vec<&str> = dockerfile.lines().map(str::trim).filter(|l| l.starts_with("ARG TARGETARCH")).collect();
    assert!(!declared.is_empty(), "the Dockerfile declares no TARGETARCH");
    assert!(declared.iter().all(|l| *l == "ARG TARGETARCH"), "{declared:?}");
}
