//! The deploy kit and the words around it: one answer for an in-cluster provider, the same in
//! `--help`, the README, the kit and docs/deploy.md (the gate fetches the URL the client fetches:
//! before oauth2-proxy `--issuer` alone; `--discovery-url` only for a client that fetches from the
//! Service; `--connect-to` for the provider itself).

use crate::support::*;

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
    let anchor = "docs/deploy.md#an-in-cluster-provider-fetch-the-url-the-client-fetches";
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
    let section = &deploy[deploy.find("## An in-cluster provider: fetch the URL the client fetches").unwrap()..];
    let section = folded(&section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)]);
    for case in ["Before oauth2-proxy", "A client that fetches from the Service", "the provider itself"] {
        assert!(section.contains(case), "docs/deploy.md's in-cluster section lacks the case {case:?}");
    }
    let reference = folded(&read("docs/reference.md"));
    assert!(reference.contains(RULE), "docs/reference.md's --discovery-url does not say {RULE:?}");
    assert!(!reference.contains("better matched by `--connect-to`"), "docs/reference.md gives another answer");
}
