//! The deploy kit and the words around it: one answer for an in-cluster provider, the same in
//! `--help`, the README, the kit and docs/deploy.md (the gate fetches the URL the client fetches:
//! before oauth2-proxy `--issuer` alone; `--discovery-url` only for a client that fetches from the
//! Service; `--connect-to` for the provider itself).

use crate::support::*;
use std::os::unix::fs::PermissionsExt;

/// The rule all of them state, in these words, so that a reader meets one answer.
const RULE: &str = "the URL the client fetches";

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Text with its line breaks (and a Markdown or YAML comment's leading `#`) folded to spaces, so
/// that a phrase wrapped across lines is still found.
fn folded(text: &str) -> String {
    text.lines().map(|l| l.trim().trim_start_matches('#').trim()).collect::<Vec<_>>().join(" ")
}

#[test]
fn in_cluster_provider_help_readme_kit_and_docs_give_one_answer() {
    let help = run_args(gate(), &["--help"]);
    assert_exit(&help, 0);
    let help = help.stdout;
    // The first example (before oauth2-proxy) says the rule; the --discovery-url example names
    // the one case it is for.
    let examples = &help[help.find("Examples:").expect("--help has examples")..];
    assert!(folded(examples).contains(RULE), "--help's examples do not say {RULE:?}:\n{examples}");
    let discovery = examples.find("--discovery-url").expect("--help shows --discovery-url");
    let comment = examples[..discovery].rsplit("  # ").next().unwrap();
    assert!(
        comment.starts_with("A client fetching from the in-cluster service"),
        "--help's --discovery-url example must say it is for a client that fetches from the Service: {comment:?}"
    );
    assert!(!examples.contains("--connect-to"), "--help shows --connect-to for a client:\n{examples}");

    let readme = folded(&read("README.md"));
    let anchor = "docs/deploy.md#an-in-cluster-provider";
    assert!(readme.contains(RULE) && readme.contains(anchor), "the README does not give the rule and link it");
    assert!(!readme.contains("with `--connect-to`"), "the README still sends a client's gate through --connect-to");

    let kit = read("deploy/kubernetes/keycloak-in-cluster.yaml");
    assert!(folded(&kit).contains(RULE), "keycloak-in-cluster.yaml does not say {RULE:?}");
    let args: Vec<&str> = kit.lines().map(|l| l.trim()).filter(|l| l.starts_with("- --")).collect();
    let issuer = args.iter().find_map(|a| a.strip_prefix("- --issuer=")).expect("the gate's --issuer");
    let proxy = args.iter().find_map(|a| a.strip_prefix("- --oidc-issuer-url=")).expect("the proxy's issuer");
    assert_eq!(issuer.split_whitespace().next(), Some(proxy), "the gate and the proxy name another issuer");
    for flag in ["--discovery-url", "--connect-to"] {
        assert!(!args.iter().any(|a| a.starts_with(&format!("- {flag}"))), "the kit's gate has {flag}");
    }

    let deploy = read("docs/deploy.md");
    let section = &deploy[deploy.find("## An in-cluster provider\n").unwrap()..];
    let section = folded(&section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)]);
    for case in ["Before oauth2-proxy", "A client that fetches from the Service", "the provider itself"] {
        assert!(section.contains(case), "docs/deploy.md's in-cluster section lacks the case {case:?}");
    }
    let reference = folded(&read("docs/reference.md"));
    assert!(reference.contains(RULE), "docs/reference.md's --discovery-url does not say {RULE:?}");
    assert!(!reference.contains("better matched by `--connect-to`"), "docs/reference.md gives another answer");
}

/// The static build's triples, as .ci/build-static names them for `shipped`.
const SHIPPED: [(&str, &str); 3] = [
    ("amd64", "x86_64-unknown-linux-musl"),
    ("arm64", "aarch64-unknown-linux-musl"),
    ("arm", "armv7-unknown-linux-gnueabihf"),
];

/// A directory of stand-ins put first on PATH: `cargo` (whose `metadata` is the real cargo's, so
/// the scripts meet cargo's own answer for the target directory, and whose `build` writes a small
/// fake binary into that directory for the triples listed in `STUB_BUILDS`, or none) and
/// `buildah`, which logs its arguments and the binaries of the build context it is given, and
/// pushes as buildah 1.28 does to a plain-HTTP registry: exit 0, no digest. With them the scripts'
/// own logic runs in a second, without compiling or pushing anything.
struct Stubs {
    dir: tempfile::TempDir,
}

impl Stubs {
    fn new() -> Stubs {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let cargo = r#"#!/bin/sh
case "$1" in
  metadata|tree) exec "$REAL_CARGO" "$@" ;;
  build)
    while [ $# -gt 0 ]; do [ "$1" = --target ] && triple=$2; shift; done
    dir=$("$REAL_CARGO" metadata --no-deps --format-version 1 | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
    case " $STUB_BUILDS " in
      *" $triple "*) mkdir -p "$dir/$triple/release" && echo "fake $triple" > "$dir/$triple/release/wait-for-idp" ;;
    esac
    exit 0 ;;
  *) echo "stub cargo: unexpected $*" >&2; exit 3 ;;
esac
"#;
        let buildah = r#"#!/bin/bash
echo "buildah $*" >> "$STUB_LOG"
if [ "$1" = build ]; then
  for context; do :; done
  for f in "$context"/dist/*/wait-for-idp; do [ -f "$f" ] && echo "context ${f#"$context"/}: $(cat "$f")" >> "$STUB_LOG"; done
fi
exit 0
"#;
        for (name, text) in [("cargo", cargo), ("buildah", buildah)] {
            let path = bin.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Stubs { dir }
    }

    /// The target directory the scripts are told of (CARGO_TARGET_DIR), outside the repository.
    fn target_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("elsewhere")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// `script ARGS` with the stand-ins first on PATH, CARGO_TARGET_DIR set, and `builds` the
    /// triples the stand-in cargo produces: exit code, stdout, stderr.
    fn run(&self, script: &str, args: &[&str], builds: &[&str]) -> (i32, String, String) {
        let path = format!("{}:{}", self.dir.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
        let out = std::process::Command::new("bash")
            .arg(repo_root().join(script))
            .args(args)
            .env("PATH", path)
            .env("REAL_CARGO", std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .env("CARGO_TARGET_DIR", self.target_dir())
            .env("STUB_BUILDS", builds.join(" "))
            .env("STUB_LOG", self.dir.path().join("log"))
            .env("CONTAINER_ENGINE", "buildah")
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .env_remove("REGISTRY_TLS_VERIFY")
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
    }
}

#[test]
fn build_static_finds_the_binaries_where_cargo_target_dir_puts_them() {
    let stubs = Stubs::new();
    let (code, stdout, stderr) = stubs.run(".ci/build-static", &["shipped"], &SHIPPED.map(|(_, t)| t));
    assert_eq!(code, 0, "{stderr}");
    for (arch, triple) in SHIPPED {
        let bin = stubs.target_dir().join(triple).join("release/wait-for-idp");
        let fake = format!("fake {triple}\n");
        let line = format!("{arch} {} {} bytes sha256 ", bin.display(), fake.len());
        assert!(
            stdout.lines().any(|l| l.starts_with(&line) && l.len() == line.len() + 64),
            "no {line:?} in:\n{stdout}"
        );
    }
}

#[test]
fn build_static_stops_at_once_when_a_binary_is_missing() {
    let stubs = Stubs::new();
    // amd64 is built, arm64 is not (cargo exits 0 all the same): no line with an empty size or
    // hash, no arm built after it, and the missing path named.
    let (code, stdout, stderr) = stubs.run(".ci/build-static", &["shipped"], &[SHIPPED[0].1]);
    assert_ne!(code, 0, "{stdout}");
    let missing = stubs.target_dir().join(SHIPPED[1].1).join("release/wait-for-idp");
    assert!(stderr.contains(&format!("{} is missing", missing.display())), "{stderr}");
    assert_eq!(stdout.lines().count(), 1, "only amd64's line: {stdout}");
    assert!(!stdout.contains("  bytes") && !stdout.contains("sha256 \n"), "{stdout}");
}

#[test]
fn push_image_takes_the_binaries_from_cargo_target_dir_and_fails_loud_on_an_empty_digest() {
    let stubs = Stubs::new();
    let reference = "127.0.0.1:5000/team/wait-for-idp:test";
    let digest_file = stubs.dir.path().join("digest");
    let args = ["--digest-file", digest_file.to_str().unwrap(), reference];
    let (code, stdout, stderr) = stubs.run("deploy/push-image", &args, &SHIPPED.map(|(_, t)| t));
    let log = stubs.log();
    // Each image's context held the binary from CARGO_TARGET_DIR, and was built without the
    // layer cache.
    for (arch, triple) in SHIPPED {
        assert!(log.contains(&format!("context dist/{arch}/wait-for-idp: fake {triple}")), "{log}\n{stderr}");
    }
    let builds: Vec<&str> = log.lines().filter(|l| l.starts_with("buildah build")).collect();
    assert_eq!(builds.len(), 3, "{log}");
    assert!(builds.iter().all(|l| l.contains(" --no-cache ")), "{log}");
    // The engine exited 0 with no digest, as buildah 1.28 does against a plain-HTTP registry:
    // a loud failure that says what to set and where, and nothing that looks like a push.
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.is_empty(), "printed as if pushed: {stdout}");
    assert!(!digest_file.exists(), "a digest file was written");
    for phrase in ["FAILED", "no digest", "REGISTRY_TLS_VERIFY=false deploy/push-image", "plain HTTP"] {
        assert!(stderr.contains(phrase), "{phrase:?} missing from:\n{stderr}");
    }
}

#[test]
fn push_image_stops_before_any_build_when_a_binary_is_missing() {
    let stubs = Stubs::new();
    let (code, stdout, stderr) =
        stubs.run("deploy/push-image", &["127.0.0.1:5000/team/wait-for-idp:test"], &[SHIPPED[0].1, SHIPPED[1].1]);
    assert_ne!(code, 0, "{stdout}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(!stubs.log().contains("buildah build"), "built after a missing binary:\n{}", stubs.log());
    let missing = stubs.target_dir().join(SHIPPED[2].1).join("release/wait-for-idp");
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
}

/// A tool the test command installs: on PATH, else where it puts it (.ci/cache/bin/NAME/NAME).
fn tool(name: &str) -> std::path::PathBuf {
    let on_path = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(name)).find(|p| p.is_file()));
    let cached = repo_root().join(".ci/cache/bin").join(name).join(name);
    on_path.or_else(|| cached.is_file().then_some(cached)).unwrap_or_else(|| {
        panic!("{name} is missing: the test command installs it into .ci/cache/bin (or put it on PATH)")
    })
}

/// `tool ARGS` (in the repository), which must succeed: its stdout.
fn output_of(tool_path: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new(tool_path).args(args).current_dir(repo_root()).output().unwrap();
    assert!(out.status.success(), "{} {args:?}: {}", tool_path.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// YAML documents as JSON values (through PyYAML, which deploy/dry-run-gates needs too).
fn yaml_documents(yaml: &str) -> Vec<serde_json::Value> {
    let mut child = std::process::Command::new("python3")
        .args(["-c", "import sys, json, yaml; json.dump([d for d in yaml.safe_load_all(sys.stdin) if d], sys.stdout)"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 with PyYAML");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), yaml.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "PyYAML could not read:\n{yaml}");
    serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap()
}

/// `helm template` of the stand-in for oauth2-proxy's chart (tests/deploy/chart) with `args`.
fn helm_template(args: &[&str]) -> Vec<serde_json::Value> {
    let chart = repo_root().join("tests/deploy/chart");
    let mut all = vec!["template", "t", chart.to_str().unwrap()];
    all.extend_from_slice(args);
    yaml_documents(&output_of(&tool("helm"), &all))
}

/// The issuer each container of the rendered Deployment gets: the proxy's
/// OAUTH2_PROXY_OIDC_ISSUER_URL and the gate's, its env and envFrom ConfigMaps resolved.
fn issuers_rendered(docs: &[serde_json::Value]) -> (String, String) {
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").expect("a Deployment");
    let spec = &deployment["spec"]["template"]["spec"];
    let issuer_in = |container: &serde_json::Value| -> Option<String> {
        let mut found = None;
        for source in container["envFrom"].as_array().into_iter().flatten() {
            let name = &source["configMapRef"]["name"];
            let map = docs.iter().find(|d| d["kind"] == "ConfigMap" && &d["metadata"]["name"] == name);
            let value = map.and_then(|m| m["data"]["OAUTH2_PROXY_OIDC_ISSUER_URL"].as_str());
            found = value.map(str::to_string).or(found);
        }
        for var in container["env"].as_array().into_iter().flatten() {
            if var["name"] == "OAUTH2_PROXY_OIDC_ISSUER_URL" {
                found = var["value"].as_str().map(str::to_string);
            }
        }
        found
    };
    let proxy = issuer_in(&spec["containers"][0]).expect("the proxy's issuer");
    let gate = spec["initContainers"].as_array().unwrap().iter().find(|c| c["name"] == "wait-for-idp").unwrap();
    (proxy, issuer_in(gate).expect("the gate's issuer"))
}

const PRODUCTION: &str = "https://sso.example.com/realms/main";
const STAGING: &str = "https://sso.staging.example.com/realms/main";

/// The Helm values survive layering: `-f base.yaml -f staging.yaml`, where staging.yaml sets the
/// one issuer value, gives the proxy and the gate staging's issuer, and so does `--set`. (With
/// the YAML anchor it replaced, the proxy got staging's and the gate production's, silently.)
#[test]
#[ignore = "needs helm and python3 with PyYAML; the test command installs them"]
fn helm_values_give_proxy_and_gate_one_issuer_through_layered_files_and_set() {
    let dir = tempfile::tempdir().unwrap();
    let staging = dir.path().join("staging.yaml");
    std::fs::write(&staging, format!("oidcIssuerUrl: {STAGING}\n")).unwrap();
    // The README's snippet too, as a values file of its own.
    let readme = read("README.md");
    let section = &readme[readme.find("## In Kubernetes: oauth2-proxy's Helm chart").unwrap()..];
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let snippet = dir.path().join("readme.yaml");
    std::fs::write(&snippet, &section[start..start + section[start..].find("```").unwrap()]).unwrap();
    let snippet = snippet.display().to_string();
    for values in ["deploy/helm/oauth2-proxy-values.yaml", "deploy/helm/oauth2-proxy-sidecar-values.yaml", &snippet] {
        let base = repo_root().join(values);
        let alone = issuers_rendered(&helm_template(&["-f", base.to_str().unwrap()]));
        assert_eq!(alone, (PRODUCTION.into(), PRODUCTION.into()), "{values} alone");
        let layered =
            issuers_rendered(&helm_template(&["-f", base.to_str().unwrap(), "-f", staging.to_str().unwrap()]));
        assert_eq!(layered, (STAGING.into(), STAGING.into()), "{values} then staging.yaml: (proxy, gate)");
        let set = format!("oidcIssuerUrl={STAGING}");
        let with_set = issuers_rendered(&helm_template(&["-f", base.to_str().unwrap(), "--set", &set]));
        assert_eq!(with_set, (STAGING.into(), STAGING.into()), "{values} --set {set}: (proxy, gate)");
    }
}

/// What the rendered Deployment gives each container for a private CA: (the proxy's
/// OAUTH2_PROXY_PROVIDER_CA_FILES, the gate's from its ConfigMap, the proxy's mount of the
/// `provider-ca` volume, the gate's, and the volume's ConfigMap source).
fn private_ca_rendered(docs: &[serde_json::Value]) -> (String, String, String, String, serde_json::Value) {
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").expect("a Deployment");
    let spec = &deployment["spec"]["template"]["spec"];
    let proxy = &spec["containers"][0];
    let gate = spec["initContainers"].as_array().unwrap().iter().find(|c| c["name"] == "wait-for-idp").unwrap();
    let env = proxy["env"].as_array().unwrap().iter().find(|e| e["name"] == "OAUTH2_PROXY_PROVIDER_CA_FILES");
    let proxy_files = env.expect("the proxy's OAUTH2_PROXY_PROVIDER_CA_FILES")["value"].as_str().unwrap().to_string();
    let map_name = &gate["envFrom"][0]["configMapRef"]["name"];
    let map = docs.iter().find(|d| d["kind"] == "ConfigMap" && &d["metadata"]["name"] == map_name).unwrap();
    let gate_files =
        map["data"]["OAUTH2_PROXY_PROVIDER_CA_FILES"].as_str().expect("in the gate's ConfigMap").to_string();
    let mount = |c: &serde_json::Value| {
        let mounts = c["volumeMounts"].as_array().cloned().unwrap_or_default();
        let m = mounts.iter().find(|m| m["name"] == "provider-ca").cloned().unwrap_or_default();
        assert!(m.is_null() || m["readOnly"] == true, "{m}");
        m["mountPath"].as_str().unwrap_or("none").to_string()
    };
    let volume = spec["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "provider-ca").expect("the volume");
    (proxy_files, gate_files, mount(proxy), mount(gate), volume["configMap"].clone())
}

/// Issue 36 ask 1: a private CA is one value (`providerCa.configMap`, the key beside it), which
/// gives the proxy and the gate the same CA file at the same path, through a layered values file
/// and `--set` alike; left empty, both variables are empty (read as unset by both programs) and
/// the volume an optional stand-in, so a chart without a private CA renders and starts as before.
#[test]
#[ignore = "needs helm and python3 with PyYAML; the test command installs them"]
fn helm_values_give_proxy_and_gate_one_private_ca() {
    let dir = tempfile::tempdir().unwrap();
    let staging = dir.path().join("staging.yaml");
    std::fs::write(&staging, "providerCa:\n  configMap: staging-ca\n  key: bundle.pem\n").unwrap();
    let at = "/etc/provider-ca/ca.crt".to_string();
    let mounted = "/etc/provider-ca".to_string();
    for values in ["deploy/helm/oauth2-proxy-values.yaml", "deploy/helm/oauth2-proxy-sidecar-values.yaml"] {
        let base = repo_root().join(values);
        let base = base.to_str().unwrap();
        let (proxy, gate, proxy_mount, gate_mount, volume) = private_ca_rendered(&helm_template(&["-f", base]));
        assert_eq!((proxy, gate), (String::new(), String::new()), "{values} alone: no CA file named");
        assert_eq!((&proxy_mount, &gate_mount), (&mounted, &mounted), "{values}: both mount the volume");
        let stand_in = serde_json::json!({"name": "oauth2-proxy-oidc", "items": [{"key": "ca.crt", "path": "ca.crt"}], "optional": true});
        assert_eq!(volume, stand_in, "{values} alone");
        let set = helm_template(&["-f", base, "--set", "providerCa.configMap=idp-ca"]);
        let (proxy, gate, _, _, volume) = private_ca_rendered(&set);
        assert_eq!((&proxy, &gate), (&at, &at), "{values} --set providerCa.configMap=idp-ca: (proxy, gate)");
        assert_eq!(volume["name"], "idp-ca");
        assert_eq!(volume["items"], serde_json::json!([{"key": "ca.crt", "path": "ca.crt"}]));
        let layered = helm_template(&["-f", base, "-f", staging.to_str().unwrap()]);
        let (proxy, gate, proxy_mount, gate_mount, volume) = private_ca_rendered(&layered);
        assert_eq!((&proxy, &gate), (&at, &at), "{values} then staging.yaml: (proxy, gate)");
        assert_eq!((&proxy_mount, &gate_mount), (&mounted, &mounted));
        assert_eq!(volume["name"], "staging-ca");
        assert_eq!(volume["items"], serde_json::json!([{"key": "bundle.pem", "path": "ca.crt"}]));
    }
}

/// The values file without `providerCa` renders OAUTH2_PROXY_PROVIDER_CA_FILES empty, for the
/// proxy and in the gate's ConfigMap. The real oauth2-proxy and the gate, given it, read it as
/// unset: both trust what they trust by default (the test CA through SSL_CERT_FILE, as a CA in the
/// image's store would be) instead of failing on a file named "". So a release without a private
/// CA starts as before the value existed.
#[test]
#[ignore = "needs helm, python3 with PyYAML and oauth2-proxy (.ci/real-peers); the test command installs them"]
fn without_a_private_ca_the_empty_variable_is_unset_to_the_proxy_and_the_gate() {
    let base = repo_root().join("deploy/helm/oauth2-proxy-values.yaml");
    let (proxy_files, gate_files, ..) = private_ca_rendered(&helm_template(&["-f", base.to_str().unwrap()]));
    assert_eq!((proxy_files.as_str(), gate_files.as_str()), ("", ""));
    let ca = TestCa::new();
    let (_provider, issuer) =
        Provider::for_issuer(tls_mode(ca.leaf(&["localhost"])), "", |iss| serve_at(WELL_KNOWN, discovery_doc(iss)));
    let env: Vec<(String, String)> = [
        ("OAUTH2_PROXY_OIDC_ISSUER_URL", issuer.clone()),
        ("OAUTH2_PROXY_PROVIDER_CA_FILES", proxy_files),
        ("SSL_CERT_FILE", ca.pem_path.display().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut proxy = oauth2_proxy(dir.path(), port, &env);
    let started = observe_start(&mut proxy, port, std::time::Duration::from_secs(60));
    assert!(started.started(), "oauth2-proxy {}:\n{}", started.describe(), proxy.log_text());
    let mut gate = gate();
    gate.envs(env.iter().map(|(k, v)| (k, v)));
    let r = run_args(gate, &["--once"]);
    assert_exit(&r, 0);
    assert!(r.stderr.contains(&format!("ready: {issuer}")), "{}", r.stderr);
}

/// A mounted CA that exists only in the pod: deploy/dry-run-gates says which `--file` to give,
/// and with it the gate is accepted.
#[test]
#[ignore = "needs python3 with PyYAML and helm; the test command installs them"]
fn dry_run_gates_names_the_file_to_give_for_a_mounted_ca() {
    let chart = repo_root().join("tests/deploy/chart");
    let args = ["template", "t", chart.to_str().unwrap(), "-f", "deploy/helm/oauth2-proxy-values.yaml"];
    let rendered = output_of(&tool("helm"), &[&args[..], &["--set", "providerCa.configMap=idp-ca"]].concat());
    let (code, out) = dry_run_gates(&[], &rendered);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("OAUTH2_PROXY_PROVIDER_CA_FILES"), "the gate's own message: {out}");
    let hint = "hint: /etc/provider-ca/ca.crt is mounted in the pod (volume 'provider-ca'), not here: give a stand-in \
                with --file /etc/provider-ca/ca.crt=LOCAL_FILE";
    assert!(out.contains(hint), "{out}");
    let ca = TestCa::new();
    let file = format!("/etc/provider-ca/ca.crt={}", ca.pem_path.display());
    let (code, out) = dry_run_gates(&["--file", &file], &rendered);
    assert_eq!(code, 0, "{out}");
}

/// A copy of `deploy/` in a temporary directory, for a script that rewrites it.
fn deploy_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = repo_root().join("deploy");
    for file in files_under(&from) {
        let to = dir.path().join(file.strip_prefix(&from).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&file, &to).unwrap();
    }
    dir
}

/// `deploy/pin-image ARGS`: exit code and stderr.
fn pin_image(args: &[&str]) -> (i32, String) {
    let out = std::process::Command::new(repo_root().join("deploy/pin-image")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The gate's image in every YAML file under `dir`: the `image:` values, Compose's default, and
/// the kustomize `images:` entries for it (name, then newName:newTag@digest as kustomize renders).
fn gate_images(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for file in files_under(dir).into_iter().filter(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml")) {
        let name = file.strip_prefix(dir).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        let mut entry: Option<[String; 3]> = None;
        for line in text.lines().map(str::trim) {
            let value = line.strip_prefix("image:").map(|v| v.trim().trim_matches('"'));
            // Compose's ${VAR:-default}: the default.
            let value = value.map(|v| v.split_once(":-").map_or(v, |(_, d)| d.trim_end_matches('}')));
            if let Some(value) = value
                && value.contains("/wait-for-idp")
            {
                found.push((name.clone(), value.to_string()));
            }
            if line == "- name: YOUR_REGISTRY/wait-for-idp" {
                entry = Some(Default::default());
            } else if let Some(fields) = entry.as_mut() {
                let Some((key, value)) = line.split_once(':') else { continue };
                let value = value.split('#').next().unwrap().trim().to_string();
                match key {
                    "newName" => fields[0] = value,
                    "newTag" => fields[1] = value,
                    "digest" => fields[2] = value,
                    _ => {
                        let [n, t, d] = entry.take().unwrap();
                        found.push((format!("{name} (images:)"), format!("{n}:{t}@{d}")));
                    }
                }
            }
        }
        if let Some([n, t, d]) = entry {
            found.push((format!("{name} (images:)"), format!("{n}:{t}@{d}")));
        }
    }
    found
}

/// Every reference to the gate's image in the deploy kit names it by digest, its tag beside it:
/// the shipped placeholder (refused by the reference grammar until pinned) or a real sha256.
#[test]
fn every_gate_image_in_the_deploy_kit_is_named_by_digest() {
    let found = gate_images(&repo_root().join("deploy"));
    assert!(found.len() >= 15, "the kit names the gate's image in fewer places than it did: {found:#?}");
    for (file, image) in &found {
        let (name_tag, digest) = image.split_once('@').unwrap_or_else(|| panic!("{file}: {image} is not by digest"));
        assert!(name_tag.rsplit_once('/').unwrap().1.starts_with("wait-for-idp:"), "{file}: {image}: no tag");
        let hex = digest.strip_prefix("sha256:").unwrap_or_else(|| panic!("{file}: {image}"));
        assert!(
            hex == "YOUR_DIGEST" || (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())),
            "{file}: {image}"
        );
    }
    assert!(read("README.md").contains(&format!("image: {GATE_PLACEHOLDER}")), "the README's values");
}

/// deploy/pin-image, as docs/release.md gives it, on a copy of the kit: the reference push-image
/// printed lands in every place the placeholder was and nowhere else, kustomize entries gain the
/// digest, the YAML still holds its documents; a second pin replaces the first; and what is not a
/// pushed reference is refused, naming what to give.
#[test]
fn pin_image_names_the_pushed_digest_in_every_file_of_the_kit() {
    let docs = read("docs/release.md");
    assert!(docs.contains("deploy/pin-image \"$(deploy/push-image "), "docs/release.md's pin");
    let kit = deploy_copy();
    let before = gate_images(kit.path());
    let first = format!("registry.example.com/platform/wait-for-idp:0.1.1@sha256:{}", "ab".repeat(32));
    let (code, err) = pin_image(&[&first, kit.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("{} reference(s) now {first}", before.len())), "{err}");
    let after = gate_images(kit.path());
    assert_eq!(after.len(), before.len(), "{after:#?}");
    assert!(after.iter().all(|(_, image)| *image == first), "{after:#?}");
    for file in files_under(kit.path()) {
        let pinned = std::fs::read_to_string(&file).unwrap();
        let shipped = std::fs::read_to_string(repo_root().join("deploy").join(file.strip_prefix(kit.path()).unwrap()));
        let shipped = shipped.unwrap();
        if file.extension().is_some_and(|e| e == "yaml") {
            assert!(!pinned.contains("YOUR_DIGEST"), "{}", file.display());
            assert_eq!(yaml_documents(&pinned).len(), yaml_documents(&shipped).len(), "{}", file.display());
        }
        // Only the image lines change, and a kustomize entry's newName, newTag and digest.
        let changed = shipped.lines().zip(pinned.lines()).filter(|(a, b)| a != b);
        for (old, new) in changed {
            let entry = ["newName:", "newTag:", "digest:"].iter().any(|k| new.trim_start().starts_with(k));
            assert!(entry || (old.contains("wait-for-idp") && new.contains("wait-for-idp:0.1.1")), "{old} -> {new}");
        }
    }
    let second = format!("registry.example.com/platform/wait-for-idp:0.1.2@sha256:{}", "cd".repeat(32));
    let (code, err) = pin_image(&[&second, kit.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(gate_images(kit.path()).iter().all(|(_, image)| *image == second), "{:#?}", gate_images(kit.path()));

    for bad in [
        "registry.example.com/platform/wait-for-idp:0.1.1",
        "YOUR_REGISTRY/wait-for-idp:0.1.0@sha256:YOUR_DIGEST",
        &format!("registry.example.com/platform/gate:0.1.1@sha256:{}", "ab".repeat(32)),
        &format!("registry.example.com/platform/wait-for-idp@sha256:{}", "ab".repeat(32)),
    ] {
        let (code, err) = pin_image(&[bad, kit.path().to_str().unwrap()]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("give the\n  line deploy/push-image printed last"), "{bad}: {err}");
    }
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("other.yaml"), "image: quay.io/oauth2-proxy/oauth2-proxy:v7.15.6\n").unwrap();
    let (code, err) = pin_image(&[&first, empty.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no reference to a wait-for-idp image"), "{err}");
}

/// The example overlays name the registry in an `images:` entry, so the component (which is
/// never edited) renders no YOUR_REGISTRY.
#[test]
#[ignore = "needs kubectl (kustomize); the test command installs it"]
fn kustomize_examples_render_no_placeholder_registry() {
    for overlay in ["deploy/kustomize/example", "deploy/kustomize/sidecar-example"] {
        let rendered = output_of(&tool("kubectl"), &["kustomize", overlay]);
        assert!(rendered.contains("wait-for-idp:0.1.0"), "{overlay}: no gate rendered:\n{rendered}");
        assert!(!rendered.contains("YOUR_REGISTRY"), "{overlay} renders YOUR_REGISTRY:\n{rendered}");
    }
}

/// `deploy/dry-run-gates ARGS` with `stdin`, the gate under test as --bin: exit code and stdout.
fn dry_run_gates(args: &[&str], stdin: &str) -> (i32, String) {
    let mut child = std::process::Command::new(repo_root().join("deploy/dry-run-gates"))
        .arg("--bin")
        .arg(bin())
        .args(args)
        .current_dir(repo_root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

/// The CI helper on everything the kit renders: plain manifests (their mounted CA and token given
/// as stand-ins with --file), both kustomize overlays and both Helm values files, every gate
/// accepted and named.
#[test]
#[ignore = "needs python3 with PyYAML, helm and kubectl; the test command installs them"]
fn dry_run_gates_accepts_every_gate_the_kit_renders() {
    let ca = TestCa::new();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "dry-run-token\n").unwrap();
    let mut manifests: Vec<String> = std::fs::read_dir(repo_root().join("deploy/kubernetes"))
        .unwrap()
        .map(|e| format!("deploy/kubernetes/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|p| p.ends_with(".yaml"))
        .collect();
    manifests.sort();
    let ca_file = format!("/var/run/secrets/wait-for-idp/ca.crt={}", ca.pem_path.display());
    let token_file = format!("/var/run/secrets/wait-for-idp/token={}", token.display());
    // The ConfigMap token-proxy-jwks.yaml has its user make, as its command would.
    let made = dir.path().join("api-server-issuer.yaml");
    std::fs::write(
        &made,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: api-server-issuer}\ndata: {issuer: \"https://oidc.example.test/id/0123\"}\n",
    )
    .unwrap();
    let mut args = vec!["--file", &ca_file, "--file", &token_file, made.to_str().unwrap()];
    args.extend(manifests.iter().map(String::as_str));
    let (code, out) = dry_run_gates(&args, "");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "ok   deploy/kubernetes/keycloak-in-cluster.yaml: Deployment/grafana-auth-proxy init container wait-for-idp"
        ),
        "{out}"
    );
    assert!(out.contains(&format!("dry-run-gates: {0} of {0} gate container(s) accepted", manifests.len())), "{out}");

    for overlay in ["deploy/kustomize/example", "deploy/kustomize/sidecar-example"] {
        let (code, out) = dry_run_gates(&[], &output_of(&tool("kubectl"), &["kustomize", overlay]));
        assert_eq!(code, 0, "{overlay}: {out}");
        assert!(out.contains("ok   stdin: Deployment/dashboard init container wait-for-idp"), "{overlay}: {out}");
    }
    let chart = repo_root().join("tests/deploy/chart");
    for values in ["deploy/helm/oauth2-proxy-values.yaml", "deploy/helm/oauth2-proxy-sidecar-values.yaml"] {
        let rendered = output_of(&tool("helm"), &["template", "t", chart.to_str().unwrap(), "-f", values]);
        let (code, out) = dry_run_gates(&[], &rendered);
        assert_eq!(code, 0, "{values}: {out}");
        assert!(out.contains("ok   stdin: Deployment/t-oauth2-proxy init container wait-for-idp"), "{values}: {out}");
    }
}

/// And on broken renderings: the failing container named, with the gate's own message, exit 1.
#[test]
#[ignore = "needs python3 with PyYAML and helm; the test command installs them"]
fn dry_run_gates_fails_naming_the_broken_container() {
    // A misspelt variable and a template the chart leaves as text, each in the Helm values.
    let dir = tempfile::tempdir().unwrap();
    let chart = repo_root().join("tests/deploy/chart");
    for (gate_env, says) in [
        ("- {name: WAIT_FOR_IDP_TIMOUT, value: 2m}", "WAIT_FOR_IDP_TIMEOUT"),
        ("- {name: WAIT_FOR_IDP_ISSUER, value: \"{{ .Values.oidcIssuerUrl }}\"}", "WAIT_FOR_IDP_ISSUER"),
    ] {
        let values = dir.path().join("broken.yaml");
        std::fs::write(
            &values,
            format!(
                "oidcIssuerUrl: {PRODUCTION}\nextraInitContainers:\n  - name: wait-for-idp\n    \
                 image: {GATE_PLACEHOLDER}\n    env:\n      {gate_env}\n"
            ),
        )
        .unwrap();
        let rendered =
            output_of(&tool("helm"), &["template", "t", chart.to_str().unwrap(), "-f", values.to_str().unwrap()]);
        let (code, out) = dry_run_gates(&[], &rendered);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("FAIL stdin: Deployment/t-oauth2-proxy init container wait-for-idp (exit 2)"), "{out}");
        assert!(out.contains(says), "the gate's message is not shown: {out}");
    }
    // Settings from a ConfigMap the input does not hold: named, not guessed.
    let kustomized = output_of(&tool("kubectl"), &["kustomize", "deploy/kustomize/example"]);
    let without_map: Vec<&str> = kustomized.split("\n---\n").filter(|d| !d.contains("kind: ConfigMap")).collect();
    let (code, out) = dry_run_gates(&[], &without_map.join("\n---\n"));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL stdin: Deployment/dashboard init container wait-for-idp"), "{out}");
    assert!(out.contains("envFrom names ConfigMap"), "{out}");
    // Nothing to check is not a pass.
    let (code, out) = dry_run_gates(&[], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no wait-for-idp container"), "{out}");
}

/// The README's commands reach the binary through cargo, not by a path under `target/`: with
/// CARGO_TARGET_DIR (or build.target-dir) set, such a path does not exist, and `.ci/first-run`,
/// which runs the first-run block as written, broke the same way.
#[test]
fn readme_commands_do_not_assume_the_target_directory() {
    let readme = read("README.md");
    for block in readme.split("```sh\n").skip(1) {
        for line in block[..block.find("```").unwrap()].lines() {
            let command = line.split(" #").next().unwrap();
            let assumed = command.contains("target/release/") || command.contains("-linux-musl/release/");
            assert!(!assumed, "a README command assumes cargo's target directory: {line}");
        }
    }
}
