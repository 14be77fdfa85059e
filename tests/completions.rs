//! The shell completions and the man page a release ships, written by `examples/gen-docs.rs` from
//! the same command the binary parses with: the bash completion offers every flag, and the man
//! page names every flag and every variable.

#[allow(dead_code)]
#[path = "../examples/gen-docs.rs"]
mod gen_docs;

use crate::support::*;

#[test]
fn completions_offer_every_flag_and_the_man_page_names_every_variable() {
    let ca = TestCa::new();
    let dir = ca.path("release");
    let written = gen_docs::write_all(&dir).unwrap();
    assert_eq!(written.len(), 4, "{written:?}");
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
    let (bash, zsh, fish, man) = (
        read("completions/wait-for-idp.bash"),
        read("completions/_wait-for-idp"),
        read("completions/wait-for-idp.fish"),
        read("man/wait-for-idp.1"),
    );
    let help = run_args(gate(), &["--help"]).stdout;
    let words = |text: &str, prefix: &str| -> std::collections::BTreeSet<String> {
        text.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
            .filter(|w| w.starts_with(prefix) && w.len() > prefix.len() + 1)
            .map(str::to_string)
            .collect()
    };
    let flags = words(&help, "--");
    let variables = words(&help, "WAIT_FOR_IDP_");
    assert!(flags.len() > 25 && variables.len() > 20, "{flags:?} {variables:?}");
    for flag in &flags {
        assert!(bash.contains(flag.as_str()), "{flag} not in the bash completion");
        assert!(zsh.contains(flag.as_str()) && fish.contains(flag.trim_start_matches('-')), "{flag}: zsh or fish");
        // roff escapes a dash as \-.
        assert!(man.contains(&flag.replace('-', "\\-")), "{flag} not in the man page");
    }
    for variable in &variables {
        assert!(man.contains(variable.as_str()), "{variable} not in the man page");
    }
    assert!(bash.contains("oidc oauth auto") || bash.contains("--metadata"), "{bash}");
}
