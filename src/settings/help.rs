//! The words of `--help`, `-h` and `--version` around the table's rows, and the wrapping of the
//! long help to 80 columns. Wrapped here rather than by clap: its `wrap_help` feature would add a
//! terminal-size crate (and its system-call layer) to a binary with a size budget, to fit a help
//! that reads well at 80 columns anyway (which is also what a pipe or `kubectl logs` gets).

use super::setting::{Arity, Parser, Setting};
use super::table::SETTINGS;
use std::fmt::Write as _;

/// The width `--help` is written for.
pub(super) const WIDTH: usize = 80;
/// How far clap indents a flag's long help.
pub(super) const INDENT: usize = 10;

/// The version and the commit it was built from (`build.rs`: git, else the build's variable,
/// else "unknown").
pub(crate) const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("BUILD_COMMIT"), ")");

pub(super) const ABOUT: &str = "Wait until an OpenID Connect issuer really serves its metadata, then exit.";

pub(super) const LONG_ABOUT: &str = "Wait until an OpenID Connect issuer really serves its metadata, then exit.\n\n\
    Polls the issuer's discovery document with full TLS verification, checks it the way the real client \
    will (exact issuer, required members) and exits 0 the moment it passes. When the deadline passes first \
    it fails open (exit 0 with a warning) unless --fail-closed.\n\n\
    Every flag but --once, --dry-run and -v has an environment variable, named in its help; a flag \
    beats its variable, which beats oauth2-proxy's. A variable that is set but empty counts as unset. \
    A boolean flag also takes =true or =false, as kubectl's and helm's do: --fail-closed=false overrides \
    its variable.";

const AFTER_HELP: &str = "\
-- COMMAND [ARGS...]: become COMMAND when ready or failing open (no shell).
Exit codes: 0 ready or failed open, 1 not ready (--fail-closed, --once), 2 bad
settings, 126/127 COMMAND cannot run/not found, 130/143 signal. More: --help.";

pub(super) const AFTER_LONG_HELP: &str = "\
Examples:
  # Before oauth2-proxy, with its variables (envFrom): nothing to add, even
  # in-cluster: the gate fetches the URL the client fetches
  wait-for-idp

  # From a shell: one check, a summary of the document, exit 1 if not ready
  wait-for-idp --issuer https://sso.example.com/realms/main --once

  # A private CA, a deadline, and exit 1 rather than start without it
  wait-for-idp --issuer https://sso.example.com/realms/main \\
      --ca-file /etc/ssl/private-ca.pem --timeout 2m --fail-closed

  # A client fetching from the in-cluster service: that URL
  wait-for-idp --issuer https://sso.example.com/realms/main \\
      --discovery-url \\
      http://keycloak:8080/realms/main/.well-known/openid-configuration

  # An MCP server, and every authorization server it names
  wait-for-idp --resource https://mcp.example.com/mcp

  # Without an init container: become the workload once the provider is ready
  wait-for-idp --issuer https://sso.example.com/realms/main -- /app/server

  # In CI: a pod's arguments and environment checked, each setting with its
  # source, offline (exit 0 or 2)
  wait-for-idp --dry-run

Exit codes:
  0        ready, or not ready and failing open (the default)
  1        not ready, with --fail-closed or --once
  2        usage or configuration error (the message names the flag or variable)
  126/127  the COMMAND after -- cannot run / is not found
  130/143  interrupted by SIGINT/SIGTERM
  Once the gate has handed over to COMMAND, the exit code is COMMAND's own.";

/// The one line `-h` gives a setting: its brief, and a short default.
pub(super) fn brief(s: &Setting) -> String {
    let brief = if s.brief.is_empty() { s.help } else { s.brief };
    match s.default_text() {
        Some(d) if d.len() < 10 => format!("{brief} [default: {d}]"),
        _ => brief.to_string(),
    }
}

/// `-h`'s flags, a line each, by group: `--flag VALUE  brief`.
pub(super) fn summary() -> String {
    let left = |s: &Setting| {
        let short = s.short.map_or("    ".to_string(), |c| format!("-{c}, "));
        let placeholder = s.placeholder();
        let value = match (s.arity, s.parser) {
            (Arity::Switch | Arity::Count, _) => "",
            (_, _) if placeholder.len() <= 10 => &placeholder,
            (_, Parser::Choice { .. }) => "WORD",
            _ => "VALUE",
        };
        format!("  {short}--{} {value}", s.flag)
    };
    let width = SETTINGS.iter().map(|s| left(s).len()).max().unwrap_or_default() + 1;
    let mut out = String::new();
    let mut group = None;
    for s in SETTINGS {
        if group != Some(s.group) {
            let _ = writeln!(out, "{}{}:", if group.is_some() { "\n" } else { "" }, s.group.heading());
            group = Some(s.group);
        }
        let _ = writeln!(out, "{:<width$}{}", left(s), brief(s));
    }
    for (flag, what) in [
        ("\n  -h, --help", "This help; --help: all of it, with examples"),
        ("  -V, --version", "The version and the commit it was built from\n"),
    ] {
        let _ = writeln!(out, "{flag:<width$}{what}", width = width + usize::from(flag.starts_with('\n')));
    }
    out + AFTER_HELP
}

/// `text` wrapped at spaces to lines of at most `width` columns (a longer word, such as a URL,
/// stays whole, and so does a `[bracketed group]`); its own line breaks are kept.
pub(super) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / width);
    for (i, paragraph) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut column = 0;
        for word in words(paragraph, width) {
            let len = word.chars().count();
            if column > 0 && column + 1 + len > width {
                out.push('\n');
                column = 0;
            } else if column > 0 {
                out.push(' ');
                column += 1;
            }
            out.push_str(&word);
            column += len;
        }
    }
    out
}

/// A paragraph's words, a `[bracketed group]` as one unless it is wider than `width`.
fn words(paragraph: &str, width: usize) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut open = false;
    for word in paragraph.split(' ').filter(|w| !w.is_empty()) {
        match words.last_mut() {
            Some(last) if open => {
                last.push(' ');
                last.push_str(word);
            }
            _ => words.push(word.to_string()),
        }
        if word.starts_with('[') {
            open = true;
        }
        if word.ends_with(']') {
            open = false;
        }
    }
    let split = |w: String| -> Vec<String> {
        if w.chars().count() > width { w.split(' ').map(str::to_string).collect() } else { vec![w] }
    };
    words.into_iter().flat_map(split).collect()
}

/// The help text of one setting, for `--help`: its own words, then its limit and default, then
/// its variables.
pub(super) fn full(s: &Setting) -> String {
    let mut help = s.help.to_string();
    let mut shown = Vec::new();
    if let Parser::Duration { min, .. } = s.parser
        && !min.is_zero()
    {
        shown.push(format!("at least {}", humantime::format_duration(min)));
    }
    match (s.default_text(), s.unset) {
        (Some(d), _) => shown.push(format!("[default: {d}]")),
        (None, u) if matches!(s.parser, Parser::Limit) && !u.is_empty() => shown.push(format!("[default: {u}]")),
        _ => {}
    }
    if !shown.is_empty() {
        help = format!("{help}; {}", shown.join(" "));
    }
    match (s.env, s.fallback) {
        (Some(env), Some(fallback)) => format!("{help} [env: {env}, else {fallback}]"),
        (Some(env), None) => format!("{help} [env: {env}]"),
        _ => help,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_help_is_one_screen_of_80_columns_a_line_a_flag() {
        let short = super::super::command().render_help().to_string();
        assert!(short.lines().count() <= 50, "{} lines:\n{short}", short.lines().count());
        assert!(short.lines().all(|l| l.chars().count() <= WIDTH), "{short}");
        for s in SETTINGS {
            let flag = format!("--{}", s.flag);
            let rows = short.lines().filter(|l| l.split_whitespace().find(|w| w.starts_with("--")) == Some(&flag));
            assert_eq!(rows.count(), 1, "{flag} in\n{short}");
        }
    }

    #[test]
    fn wrapping_keeps_lines_within_the_width_and_long_words_whole() {
        let text = "a bb ccc dddd eeeee https://a.very.long.example/with/a/path ff\n\nnext [env: X] y";
        let wrapped = wrap(text, 12);
        assert_eq!(wrapped, "a bb ccc\ndddd eeeee\nhttps://a.very.long.example/with/a/path\nff\n\nnext\n[env: X] y");
    }

    #[test]
    fn the_examples_and_the_version_fit_80_columns() {
        assert!(AFTER_LONG_HELP.lines().all(|l| l.chars().count() <= WIDTH), "{AFTER_LONG_HELP}");
        let long = super::super::command().render_long_help().to_string();
        assert!(long.lines().all(|l| l.chars().count() <= WIDTH), "{long}");
        assert!(VERSION.contains("(commit "), "{VERSION}");
    }
}
