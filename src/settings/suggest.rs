//! Near misses, named with what was meant: a misspelt `WAIT_FOR_IDP_*` variable, a variable that
//! looks like an issuer's when no issuer is set, and an unknown flag (clap's usage error, given a
//! tip from the table: clap's own `suggestions` feature would add a string-similarity crate to the
//! binary for what `edit_distance` does here).

use super::setting::{Id, PREFIX, Setting};
use super::table::SETTINGS;
use clap::builder::StyledStr;
use clap::error::{ContextKind, ContextValue, ErrorKind};

/// oauth2-proxy's variables: its flag is the rest, in lower case with dashes.
const PROXY_PREFIX: &str = "OAUTH2_PROXY_";

/// Names that ask for TLS checks to be skipped, which the gate never does.
const INSECURE: &[&str] = &["insecure", "skip-tls", "skip-verify", "no-verify", "tls-verify", "no-check-certificate"];

/// The prefixes every variable a setting reads starts with: ours, and oauth2-proxy's.
const PREFIXES: [&str; 2] = [PREFIX, PROXY_PREFIX];

/// `WAIT_FOR_IDP_*` variables that no setting reads, and near misses of ours with a mangled
/// prefix, each with the likely intended one. A typo in a Helm value would otherwise be ignored
/// without a word.
///
/// Runs on every start over the whole environment, which in a pod holds seven service-link
/// variables per Service in the namespace (thousands in a large one): a name is compared with the
/// known ones only if it begins within two edits of our prefix ([`plausibly_ours`], a few steps
/// on its first characters). That loses nothing: a name within two edits of one of ours has a
/// start within two edits of the prefix all of ours share.
pub(crate) fn unknown_variables(names: &[impl AsRef<str>]) -> Vec<(String, Option<&'static str>)> {
    let known: Vec<&'static str> = SETTINGS.iter().filter_map(|s| s.env).collect();
    names
        .iter()
        .map(AsRef::as_ref)
        .filter(|n| plausibly_ours(n, &[PREFIX], 2) && !known.contains(n))
        .filter_map(|n| {
            // A mode's name as a variable: the flag is what was meant (issue 36: one warned, the
            // other was refused; now both say this).
            let as_variable = |flag: &str| n.strip_prefix(PREFIX) == Some(&flag.to_ascii_uppercase().replace('-', "_"));
            let mode = SETTINGS.iter().find(|s| s.env.is_none() && as_variable(s.flag));
            if let Some(mode) = mode {
                return Some((n.to_string(), Some(mode.flag)));
            }
            let closest = closest(n, &known);
            let ours = n.starts_with(PREFIX);
            // Outside our prefix only a close one (a mangled prefix), not some app's `TIMEOUT`.
            let mangled = closest.is_some_and(|(d, _)| d <= 2);
            (ours || mangled).then(|| (n.to_string(), closest.map(|(_, k)| k)))
        })
        .collect()
}

/// The known name `name` was probably meant to be, and how many edits away: within three edits,
/// or the one it extends or cuts short (the issuer's variable with `_URL` appended, the CA file's
/// without `_FILE`).
fn closest(name: &str, known: &[&'static str]) -> Option<(usize, &'static str)> {
    known
        .iter()
        .filter_map(|k| {
            let d = match extension(name, k) {
                Some(d) if d <= 3 || name.len() > PREFIX.len() => d,
                Some(_) => return None,
                None => distance_within(name, k, 3)?,
            };
            Some((d, *k))
        })
        .min()
}

/// Set variables that look like one of `setting`'s own or its oauth2-proxy fallback but are not,
/// each with the one meant: said when nothing set the setting ("…_ISSUER_URL is set; did you mean
/// …_ISSUER?"). Broader than [`unknown_variables`]: any variable of ours
/// or of oauth2-proxy's that names the setting's last word (`ISSUER`) counts. `is_set` says
/// whether a variable is set and not empty; it is asked only about names that could be meant
/// (each question scans the environment).
pub(crate) fn near_misses(
    names: &[impl AsRef<str>],
    is_set: &dyn Fn(&str) -> bool,
    setting: &Setting,
) -> Vec<(String, &'static str)> {
    let own: Vec<&'static str> = setting.env.iter().chain(&setting.fallback).copied().collect();
    let read = |n: &str| SETTINGS.iter().any(|s| s.env == Some(n) || s.fallback == Some(n));
    let word = setting.flag.rsplit('-').next().unwrap_or_default().to_ascii_uppercase();
    names
        .iter()
        .map(AsRef::as_ref)
        // Within three edits of a name of ours, or beginning with one, a name begins within three
        // edits of its prefix.
        .filter(|n| plausibly_ours(n, &PREFIXES, 3) && !read(n) && is_set(n))
        .filter_map(|n| {
            let family = own.iter().find(|k| {
                let prefix = if k.starts_with(PROXY_PREFIX) { PROXY_PREFIX } else { PREFIX };
                n.starts_with(prefix) && n.contains(&word)
            });
            family.copied().or_else(|| closest(n, &own).map(|(_, k)| k)).map(|k| (n.to_string(), k))
        })
        .collect()
}

/// Adds to clap's usage error what the table knows: for an unknown flag, the one meant (also
/// when oauth2-proxy's name or a variable's was typed), that no flag skips TLS checks, and that a
/// boolean flag takes its value after `=`.
pub(crate) fn explain(mut e: clap::Error, args: &[std::ffi::OsString]) -> clap::Error {
    if e.kind() == ErrorKind::InvalidUtf8
        && let Some(tip) = not_utf8(args)
    {
        e.insert(ContextKind::Suggested, ContextValue::StyledStrs(vec![StyledStr::from(tip)]));
        return e;
    }
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else { return e };
    let typed = arg.split('=').next().unwrap_or_default().to_string();
    let tip = |text: String| ContextValue::StyledStrs(vec![StyledStr::from(text)]);
    // clap's tip for a mistyped flag, "to pass '--timout' as a value, use '-- --timout'", would
    // run it as the command after `--`: only a word that is no flag may be one.
    if typed.starts_with('-') {
        e.insert(ContextKind::Suggested, ContextValue::None);
    }
    if let Some(flag) = closest_flag(&typed) {
        e.insert(ContextKind::SuggestedArg, ContextValue::String(format!("--{flag}")));
    } else if typed == "-k" || INSECURE.iter().any(|w| typed.starts_with('-') && typed.contains(w)) {
        let ca = Id::CaFile.setting();
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

/// Which argument is not UTF-8 (clap says only that one is): its position and the flag it is
/// given to. The words after `--` are the command's, raw bytes allowed, and are not looked at.
fn not_utf8(args: &[std::ffi::OsString]) -> Option<String> {
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let at = args[..end].iter().position(|a| a.to_str().is_none())?;
    let arg = args[at].to_string_lossy();
    let flag = match arg.split_once('=') {
        Some((flag, _)) if flag.starts_with("--") => Some(flag.to_string()),
        _ => args.get(at.wrapping_sub(1)).and_then(|a| a.to_str()).filter(|a| a.starts_with('-')).map(String::from),
    };
    let of = flag.map_or(String::new(), |flag| format!(" (the value of {flag})"));
    Some(format!("argument {at}{of} is not UTF-8; give it in UTF-8"))
}

/// The flag an unknown one was meant to be: one of ours within two edits or that it begins
/// (by three letters or a whole word: `--ca`), one named as oauth2-proxy names it
/// (`--oidc-issuer-url`), or one typed as its variable (`--` and the timeout's variable).
fn closest_flag(typed: &str) -> Option<&'static str> {
    let word = typed.strip_prefix("--")?.to_ascii_lowercase().replace('_', "-");
    let word = word.strip_prefix("wait-for-idp-").unwrap_or(&word);
    let proxy = |s: &Setting| s.fallback.and_then(|f| f.strip_prefix(PROXY_PREFIX)).map(|f| f.to_ascii_lowercase());
    if let Some(s) =
        SETTINGS.iter().find(|s| proxy(s).is_some_and(|p| distance_within(word, &p.replace('_', "-"), 1).is_some()))
    {
        return Some(s.flag);
    }
    let begins = |f: &str| f.strip_prefix(word).is_some_and(|rest| word.len() >= 3 || rest.starts_with('-'));
    SETTINGS
        .iter()
        .map(|s| s.flag)
        .chain(["help", "version"])
        .filter_map(|f| {
            let d = match extension(word, f) {
                Some(d) if d <= 2 || begins(f) => d,
                Some(_) => return None,
                None => distance_within(word, f, 2)?,
            };
            Some((d, f))
        })
        .min()
        .map(|(_, f)| f)
}

/// Whether `name` begins within `bound` edits of one of `prefixes`: the least edit distance
/// between a prefix and any start of `name`, which only the name's first characters (the
/// prefix's length and `bound` more) can reach. As [`distance_within`], only cells near the
/// diagonal, and it gives up once every way of lining the two up costs more than `bound`: for most
/// names after their first few characters.
fn plausibly_ours(name: &str, prefixes: &[&str], bound: usize) -> bool {
    prefixes.iter().any(|prefix| {
        // First a glance, enough for most names: a start within `bound` edits keeps one of the
        // prefix's first `bound + 1` characters (at most `bound` of them are changed or cut),
        // moved at most `bound` places (as many as were inserted before it).
        // The prefixes are ASCII: a byte counts as a character until one is not ASCII (then the
        // full comparison decides). The first characters as a set of bits, by their code modulo
        // 64: a byte that shares a bit with one of them only costs the full comparison.
        let head = prefix.bytes().take(bound + 1).fold(0u64, |set, h| set | 1 << (h & 63));
        let kept =
            prefix.len() <= bound || name.bytes().take(2 * bound + 1).any(|c| c > 127 || head >> (c & 63) & 1 == 1);
        kept && banded(name.chars(), prefix.as_bytes(), bound, true).is_some()
    })
}

/// When one of two names begins the other, their edit distance: exactly the difference in length.
fn extension(a: &str, b: &str) -> Option<usize> {
    (a.starts_with(b) || b.starts_with(a)).then(|| a.chars().count().abs_diff(b.chars().count()))
}

/// The edit distance between `a` and `b` if it is at most `bound`, else `None`.
fn distance_within(a: &str, b: &str, bound: usize) -> Option<usize> {
    let b: Vec<char> = b.chars().collect();
    if a.chars().count().abs_diff(b.len()) > bound {
        return None;
    }
    banded(a.chars(), &b, bound, false)
}

/// The edit distance between `a` and `b` (with `start_of_a`, between `b` and the nearest start
/// of `a`) if at most `bound`. Only the cells within `bound` of the diagonal are computed (any
/// other is over the bound), and it gives up as soon as a whole row is over it.
fn banded<T: Copy + Into<char>>(
    a: impl Iterator<Item = char>,
    b: &[T],
    bound: usize,
    start_of_a: bool,
) -> Option<usize> {
    let over = bound + 1;
    // row[j]: the edits from a's first i characters to b's first j, `over` for any more than
    // bound; on the stack for any name we know.
    let (mut stack, mut heap) = ([0usize; 64], Vec::new());
    let row = if b.len() < stack.len() {
        &mut stack[..=b.len()]
    } else {
        heap.resize(b.len() + 1, 0);
        &mut heap[..]
    };
    for (j, cost) in row.iter_mut().enumerate() {
        *cost = j.min(over);
    }
    let mut nearest_start = row[b.len()];
    // Past b's length and the bound, no character of a can come within it.
    for (i, ca) in a.take(b.len() + bound).enumerate().map(|(i, c)| (i + 1, c)) {
        let (lo, hi) = (i.saturating_sub(bound).max(1), (i + bound).min(b.len()));
        let mut diag = row[lo - 1];
        row[lo - 1] = if lo == 1 { i.min(over) } else { over };
        let mut best = row[lo - 1];
        for j in lo..=hi {
            let next = (diag + usize::from(ca != b[j - 1].into())).min(row[j] + 1).min(row[j - 1] + 1).min(over);
            diag = row[j];
            row[j] = next;
            best = best.min(next);
        }
        nearest_start = nearest_start.min(row[b.len()]);
        if start_of_a && nearest_start <= bound {
            return Some(nearest_start);
        }
        if best > bound {
            return None;
        }
    }
    let d = if start_of_a { nearest_start } else { row[b.len()] };
    (d <= bound).then_some(d)
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
        let unknown = unknown_variables(&names);
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
            near_misses(&names, &|_| true, issuer),
            vec![(names[0].clone(), ours), (names[1].clone(), proxy), (names[2].clone(), proxy),]
        );
    }

    /// The suggestions as they were before the scan was bounded: every name against every known
    /// one, by the full edit distance. What the bounded scan must still say, name for name.
    mod unbounded {
        use super::{PREFIX, PROXY_PREFIX, SETTINGS, Setting};

        pub(super) fn edit_distance(a: &str, b: &str) -> usize {
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

        fn closest(name: &str, known: &[&'static str]) -> Option<&'static str> {
            known
                .iter()
                .map(|k| (edit_distance(name, k), *k))
                .filter(|(d, k)| *d <= 3 || (name.len() > PREFIX.len() && (name.starts_with(k) || k.starts_with(name))))
                .min()
                .map(|(_, k)| k)
        }

        pub(super) fn unknown_variables(names: &[String]) -> Vec<(String, Option<&'static str>)> {
            let known: Vec<&'static str> = SETTINGS.iter().filter_map(|s| s.env).collect();
            names
                .iter()
                .filter(|n| !known.contains(&n.as_str()))
                .filter_map(|n| {
                    let closest = closest(n, &known);
                    let mangled = closest.is_some_and(|c| edit_distance(n, c) <= 2);
                    (n.starts_with(PREFIX) || mangled).then(|| (n.clone(), closest))
                })
                .collect()
        }

        pub(super) fn near_misses(names: &[String], setting: &Setting) -> Vec<(String, &'static str)> {
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
    }

    /// Names a setting reads, mangled: each cut, doubled, swapped or changed at every place of its
    /// start (and some twice, and a few anywhere), extended and cut short; next to service-link
    /// and other pods' names. The full comparison is slow in a debug build: a few thousand.
    fn mistakes() -> Vec<String> {
        let known: Vec<&str> = SETTINGS.iter().flat_map(|s| s.env.into_iter().chain(s.fallback)).collect();
        let edits = |name: &str, upto: usize| -> Vec<String> {
            let c: Vec<char> = name.chars().collect();
            let mut out = Vec::new();
            for i in 0..=c.len().min(upto) {
                let (head, tail) = (c[..i].iter().collect::<String>(), c[i..].iter().collect::<String>());
                for x in ['_', 'I', 'Q', 'é'] {
                    out.push(format!("{head}{x}{tail}"));
                    if let Some(rest) = tail.get(1..) {
                        out.push(format!("{head}{x}{rest}"));
                    }
                }
                if let Some(rest) = tail.get(1..) {
                    out.push(format!("{head}{rest}"));
                }
                if c.len() > i + 1 {
                    out.push(format!("{head}{}{}{}", c[i + 1], c[i], c[i + 2..].iter().collect::<String>()));
                }
            }
            out
        };
        let mut names: Vec<String> = Vec::new();
        for (i, k) in known.iter().enumerate() {
            names.extend(edits(k, usize::MAX).into_iter().skip(i % 11).step_by(11));
            names.extend(["_URL", "_FILE", "S", "_X_Y_Z"].iter().map(|t| format!("{k}{t}")));
            names.extend((1..k.len()).map(|i| k[..i].to_string()));
        }
        for k in ["WAIT_FOR_IDP_ISSUER", "WAIT_FOR_IDP_TIMEOUT", "OAUTH2_PROXY_OIDC_ISSUER_URL"] {
            let once = edits(k, 16);
            names.extend(once.iter().step_by(17).flat_map(|n| edits(n, 16).into_iter().step_by(5)));
            names.extend(once);
        }
        for service in ["KUBERNETES", "WAIT_FOR_IDP", "OAUTH2_PROXY", "IDP", "WAIT"] {
            for tail in ["_SERVICE_HOST", "_SERVICE_PORT_HTTPS", "_PORT", "_PORT_443_TCP_ADDR", "_PORT_443_TCP_PROTO"] {
                names.push(format!("{service}{tail}"));
            }
        }
        names.extend(
            ["HOME", "PATH", "TIMEOUT", "", "W", "WAIT_FOR_IDP_", "OAUTH2_PROXY_", "OAUTH2_PROXY_COOKIE_SECRET"]
                .map(String::from),
        );
        names.extend(known.iter().map(|k| k.to_string()));
        names
    }

    #[test]
    fn the_bounded_scan_says_what_the_full_comparison_said() {
        let names = mistakes();
        assert!(names.len() > 2_000, "{}", names.len());
        assert_eq!(unknown_variables(&names), unbounded::unknown_variables(&names));
        // Those with oauth2-proxy's variable too, and one without.
        for setting in SETTINGS.iter().filter(|s| s.fallback.is_some() || s.id == Id::Timeout) {
            assert_eq!(
                near_misses(&names, &|_| true, setting),
                unbounded::near_misses(&names, setting),
                "{}",
                setting.flag
            );
        }
        // And the screen is what decides: most of the names are within reach of a name of ours.
        let plausible = names.iter().filter(|n| plausibly_ours(n, &PREFIXES, 3)).count();
        assert!(plausible > names.len() / 2, "{plausible} of {}", names.len());
    }

    #[test]
    fn a_bounded_distance_is_the_distance_or_none() {
        let names = mistakes();
        let known: Vec<&str> = SETTINGS.iter().flat_map(|s| s.env.into_iter().chain(s.fallback)).collect();
        for (i, name) in names.iter().enumerate().step_by(7) {
            let k = known[i % known.len()];
            let full = unbounded::edit_distance(name, k);
            for bound in 0..5 {
                assert_eq!(distance_within(name, k, bound), Some(full).filter(|d| *d <= bound), "{name} {k} {bound}");
            }
            if let Some(d) = extension(name, k) {
                assert_eq!(d, full, "{name} {k}");
            }
        }
        for (a, b, d) in [("", "", 0), ("", "ab", 2), ("abc", "", 3), ("kitten", "sitting", 3), ("ab", "ba", 2)] {
            assert_eq!(unbounded::edit_distance(a, b), d);
            assert_eq!(distance_within(a, b, 3), Some(d).filter(|d| *d <= 3), "{a} {b}");
        }
    }

    #[test]
    fn a_name_is_plausibly_ours_when_its_start_is_near_a_prefix() {
        for (name, bound, plausible) in [
            ("WAIT_FOR_IDP_TIMEOUT", 0, true),
            ("WAIT_FOR_IPD_TIMEOUT", 2, true),
            ("WAIT_FOR_IPD_TIMEOUT", 1, false),
            ("WAITFORIDP_TIMEOUT", 2, true),
            ("OAUTH_PROXY_OIDC_ISSUER_URL", 1, true),
            ("OAUTH2PROXY", 2, true),
            ("KUBERNETES_SERVICE_HOST", 3, false),
            ("WAIT_SERVICE_HOST", 3, false),
            ("", 3, false),
            ("é", 3, false),
        ] {
            assert_eq!(plausibly_ours(name, &PREFIXES, bound), plausible, "{name} within {bound}");
        }
        assert!(PREFIXES.iter().all(|p| p.is_ascii()), "the glance reads the prefixes byte by byte");
        let read = SETTINGS.iter().flat_map(|s| s.env.into_iter().chain(s.fallback));
        assert!(
            read.clone().all(|n| PREFIXES.iter().any(|p| n.starts_with(p))),
            "every name read has a prefix the scan knows"
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
            ("--ca", "'--ca-file'"),
        ] {
            let text = tips(&[typed, "x"]);
            assert!(text.contains(&format!("a similar argument exists: {meant}")), "{typed}: {text}");
        }
        assert!(!tips(&["--colour"]).contains("similar"), "{}", tips(&["--colour"]));
    }

    /// clap's tip "to pass '--timout' as a value, use '-- --timout'" makes a typo the command to
    /// run after `--`: a mistyped flag gets the flag meant, and nothing to run.
    #[test]
    fn a_mistyped_flag_is_never_offered_as_the_command() {
        for args in [&["--issuer", "https://h", "--timout", "5s"][..], &["--colour"], &["--ca", "x"]] {
            let text = tips(args);
            assert!(!text.contains("as a value") && !text.contains("'-- "), "{args:?}: {text}");
            assert!(!text.contains("\n\n\n"), "no empty tip: {text:?}");
        }
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
