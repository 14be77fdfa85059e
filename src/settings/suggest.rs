//! Near misses, named with what was meant: a misspelt `WAIT_FOR_IDP_*` variable, a variable that
//! looks like an issuer's when no issuer is set, and an unknown flag (clap's usage error, given a
//! tip from the table: clap's own `suggestions` feature would add a string-similarity crate to the
//! binary for what [`edit_distance`] does here).

use super::{PREFIX, SETTINGS, Setting};
use clap::builder::StyledStr;
use clap::error::{ContextKind, ContextValue, ErrorKind};

/// oauth2-proxy's variables: its flag is the rest, in lower case with dashes.
const PROXY_PREFIX: &str = "OAUTH2_PROXY_";

/// Names that ask for TLS checks to be skipped, which the gate never does.
const INSECURE: &[&str] = &["insecure", "skip-tls", "skip-verify", "no-verify", "tls-verify", "no-check-certificate"];

/// `WAIT_FOR_IDP_*` variables that no setting reads, and near misses of ours with a mangled
/// prefix, each with the likely intended one. A typo in a Helm value would otherwise be ignored
/// without a word.
pub(crate) fn unknown_variables(names: impl Iterator<Item = String>) -> Vec<(String, Option<&'static str>)> {
    let known: Vec<&'static str> = SETTINGS.iter().filter_map(|s| s.env).collect();
    names
        .filter(|n| !known.contains(&n.as_str()))
        .filter_map(|n| {
            let closest = closest(&n, &known);
            let ours = n.starts_with(PREFIX);
            // Outside our prefix only a close one (a mangled prefix), not some app's `TIMEOUT`.
            let mangled = closest.is_some_and(|c| edit_distance(&n, c) <= 2);
            (ours || mangled).then_some((n, closest))
        })
        .collect()
}

/// The known name `name` was probably meant to be: within three edits, or the one it extends or
/// cuts short (the issuer's variable with `_URL` appended, the CA file's without `_FILE`).
fn closest(name: &str, known: &[&'static str]) -> Option<&'static str> {
    known
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, k)| *d <= 3 || (name.len() > PREFIX.len() && (name.starts_with(k) || k.starts_with(name))))
        .min()
        .map(|(_, k)| k)
}

/// Set variables that look like one of `setting`'s own or its oauth2-proxy fallback but are not,
/// each with the one meant: said when nothing set the setting ("…_ISSUER_URL is set; did you mean
/// …_ISSUER?"). Broader than [`unknown_variables`]: any variable of ours
/// or of oauth2-proxy's that names the setting's last word (`ISSUER`) counts.
pub(crate) fn near_misses(names: &[String], setting: &Setting) -> Vec<(String, &'static str)> {
    let own: Vec<&'static str> = setting.env.iter().chain(&setting.fallback).copied().collect();
    let read = |n: &str| SETTINGS.iter().any(|s| s.env == Some(n) || s.fallback == Some(n));
    let word = setting.flag.rsplit('-').next().unwrap_or_default().to_ascii_uppercase();
    names
        .iter()
        .filter(|n| !read(n))
        .filter_map(|n| {
            let family = own.iter().find(|k| {
                let prefix = if k.starts_with(PROXY_PREFIX) { PROXY_PREFIX } else { PREFIX };
                n.starts_with(prefix) && n.contains(&word)
            });
            family.copied().or_else(|| closest(n, &own)).map(|k| (n.clone(), k))
        })
        .collect()
}

/// Adds to clap's usage error what the table knows: for an unknown flag, the one meant (also
/// when oauth2-proxy's name or a variable's was typed), that no flag skips TLS checks, and that a
/// boolean flag takes its value after `=`.
pub(crate) fn explain(mut e: clap::Error, args: &[std::ffi::OsString]) -> clap::Error {
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else { return e };
    let typed = arg.split('=').next().unwrap_or_default().to_string();
    let tip = |text: String| ContextValue::StyledStrs(vec![StyledStr::from(text)]);
    if let Some(flag) = closest_flag(&typed) {
        e.insert(ContextKind::SuggestedArg, ContextValue::String(format!("--{flag}")));
    } else if typed == "-k" || INSECURE.iter().any(|w| typed.starts_with('-') && typed.contains(w)) {
        let ca = super::Id::CaFile.setting();
        e.insert(
            ContextKind::Suggested,
            tip(format!(
                "there is no {typed}: the gate always verifies TLS, as the client it gates will. Trust the \
                 provider's CA instead: --{} PATH (PEM) or {}",
                ca.flag,
                ca.env.unwrap_or_default()
            )),
        );
    } else if matches!(typed.to_ascii_lowercase().as_str(), "true" | "false") {
        let at = args.iter().position(|a| a.to_str() == Some(&typed));
        let flag = at.and_then(|i| args.get(i.checked_sub(1)?)).and_then(|a| a.to_str()).unwrap_or("--FLAG");
        e.insert(ContextKind::Suggested, tip(format!("a boolean flag takes its value after '=': {flag}={typed}")));
    }
    e
}

/// The flag an unknown one was meant to be: one of ours within two edits or that it begins
/// (at least three letters), one named as oauth2-proxy names it (`--oidc-issuer-url`), or one
/// typed as its variable (`--` and the timeout's variable).
fn closest_flag(typed: &str) -> Option<&'static str> {
    let word = typed.strip_prefix("--")?.to_ascii_lowercase().replace('_', "-");
    let word = word.strip_prefix("wait-for-idp-").unwrap_or(&word);
    let proxy = |s: &Setting| s.fallback.and_then(|f| f.strip_prefix(PROXY_PREFIX)).map(|f| f.to_ascii_lowercase());
    if let Some(s) = SETTINGS.iter().find(|s| proxy(s).is_some_and(|p| edit_distance(word, &p.replace('_', "-")) <= 1))
    {
        return Some(s.flag);
    }
    SETTINGS
        .iter()
        .map(|s| s.flag)
        .chain(["help", "version"])
        .map(|f| (edit_distance(word, f), f))
        .filter(|(d, f)| *d <= 2 || (word.len() >= 3 && f.starts_with(word)))
        .min()
        .map(|(_, f)| f)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{Given, Id};

    #[test]
    fn unknown_variables_are_named_with_a_suggestion() {
        let names = [
            "WAIT_FOR_IDP_TIMOUT",
            "WAIT_FOR_IDP_ISSUER",
            "HOME",
            "WAIT_FOR_IDP_COLOUR",
            "WAIT_FOR_IDP_ISSUER_URL",
            "WAIT_FOR_IPD_TIMEOUT",
            "TIMEOUT",
        ];
        let unknown = unknown_variables(names.iter().map(|s| s.to_string()));
        let ours = |n: &str, s: Option<&'static str>| (n.to_string(), s);
        assert_eq!(
            unknown,
            vec![
                ours("WAIT_FOR_IDP_TIMOUT", Id::Timeout.setting().env),
                ours("WAIT_FOR_IDP_COLOUR", None),
                ours("WAIT_FOR_IDP_ISSUER_URL", Id::Issuer.setting().env),
                ours("WAIT_FOR_IPD_TIMEOUT", Id::Timeout.setting().env),
            ]
        );
    }

    #[test]
    fn variables_that_look_like_the_issuers_are_near_misses() {
        let names: Vec<String> = [
            "WAIT_FOR_IDP_ISSUER_URL",
            "OAUTH2_PROXY_OIDC_ISSUER",
            "OAUTH2_PROXY_ISSUER",
            "HOME",
            "OAUTH2_PROXY_INSECURE_OIDC_SKIP_ISSUER_VERIFICATION",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let issuer = Id::Issuer.setting();
        let (ours, proxy) = (issuer.env.unwrap(), issuer.fallback.unwrap());
        assert_eq!(
            near_misses(&names, issuer),
            vec![(names[0].clone(), ours), (names[1].clone(), proxy), (names[2].clone(), proxy),]
        );
    }

    fn tips(args: &[&str]) -> String {
        let e = Given::parse_from(std::iter::once("wait-for-idp").chain(args.iter().copied())).unwrap_err();
        e.render().to_string()
    }

    #[test]
    fn an_unknown_flag_gets_the_one_meant() {
        for (typed, meant) in [
            ("--isuer", "'--issuer'"),
            ("--timout=3s", "'--timeout'"),
            ("--fail-close", "'--fail-closed'"),
            ("--oidc-issuer-url", "'--issuer'"),
            ("--provider-ca-file", "'--ca-file'"),
            ("--WAIT_FOR_IDP_TIMEOUT", "'--timeout'"),
        ] {
            let text = tips(&[typed, "x"]);
            assert!(text.contains(&format!("a similar argument exists: {meant}")), "{typed}: {text}");
        }
        assert!(!tips(&["--colour"]).contains("similar"), "{}", tips(&["--colour"]));
    }

    #[test]
    fn no_flag_skips_tls_checks_and_the_ca_file_is_the_way() {
        for typed in ["-k", "--insecure", "--insecure-skip-tls-verify", "--ssl-insecure-skip-verify=true"] {
            let text = tips(&["--issuer", "https://h", typed]);
            assert!(
                text.contains("the gate always verifies TLS") && text.contains("--ca-file PATH"),
                "{typed}: {text}"
            );
        }
    }

    #[test]
    fn a_boolean_value_after_a_space_is_told_to_use_equals() {
        let text = tips(&["--fail-closed", "false"]);
        assert!(text.contains("takes its value after '=': --fail-closed=false"), "{text}");
    }
}
