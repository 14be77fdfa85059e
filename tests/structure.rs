//! The code's own shape, checked like behaviour where no tool checks it: the layering written in
//! `src/lib.rs` holds (no import points to a later layer, no cycle), no file carries over 450
//! lines of non-test code, no two modules share a name, each variable's name is spelled once (in
//! the settings table), every dev-dependency is used, the README's flag table lists what `--help`
//! offers, and the Markdown holds together: the README stays within 15 KiB and every relative
//! link resolves. Function length and unused dependencies are clippy's and rustc's (Cargo.toml
//! `[lints]`, src/lib.rs).

use crate::support::{bin, files_under, gate, repo_root};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    files_under(dir).into_iter().filter(|p| p.extension().is_some_and(|e| e == "rs")).collect()
}

/// The top-level module a file in `src/` belongs to: `src/config/inputs.rs` → `config`.
fn module_of(path: &Path) -> String {
    let rel = path.strip_prefix(repo_root().join("src")).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_string()
}

/// The layers as `src/lib.rs` states them: lines `//! N. a, b — what`.
fn layers() -> BTreeMap<String, usize> {
    let lib = std::fs::read_to_string(repo_root().join("src/lib.rs")).unwrap();
    let mut layers = BTreeMap::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("//! ")) {
        let Some((number, rest)) = line.split_once(". ") else { continue };
        let Ok(number) = number.parse::<usize>() else { continue };
        let names = rest.split(" — ").next().unwrap();
        for name in names.split(',') {
            layers.insert(name.trim().to_string(), number);
        }
    }
    assert!(layers.len() > 5, "src/lib.rs states no layering");
    layers
}

/// The crate modules a file refers to (`crate::name`).
fn crate_references(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + 7..];
        let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            // `use crate::{a, b}`
            if let Some(group) = after.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let item = item.trim().split("::").next().unwrap_or("").trim();
                    if !item.is_empty() {
                        found.insert(item.to_string());
                    }
                }
            }
        } else {
            found.insert(name);
        }
        rest = after;
    }
    found
}

#[test]
fn imports_follow_the_stated_layers_and_form_no_cycle() {
    let layers = layers();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&repo_root().join("src")) {
        let module = module_of(&file);
        if module == "lib" || module == "main" {
            continue;
        }
        let own = *layers.get(&module).unwrap_or_else(|| panic!("module {module} is in no layer of src/lib.rs"));
        let text = std::fs::read_to_string(&file).unwrap();
        for used in crate_references(&text) {
            if used == module {
                continue;
            }
            let theirs =
                *layers.get(&used).unwrap_or_else(|| panic!("{} uses crate::{used}, in no layer", file.display()));
            assert!(
                theirs <= own,
                "{} (layer {own}) uses crate::{used} (layer {theirs}): an import points to a later layer",
                file.display()
            );
            edges.entry(module.clone()).or_default().insert(used);
        }
    }
    // No cycle, within a layer or across: a depth-first search finds no back edge.
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) {
        match state.get(node) {
            Some(2) => return,
            Some(1) => panic!("import cycle: {} -> {node}", path.join(" -> ")),
            _ => {}
        }
        state.insert(node.to_string(), 1);
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, state, path);
        }
        path.pop();
        state.insert(node.to_string(), 2);
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        visit(node, &edges, &mut state, &mut Vec::new());
    }
}

/// A source file without its tests: everything before its `#[cfg(test)]` module (which ends each
/// file here), nothing of a file that is a test module itself.
fn non_test_code(file: &Path) -> String {
    if file.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(file).unwrap();
    match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Long files are where jobs pile up: split one by job before it passes this.
#[test]
fn no_source_file_has_over_450_lines_of_non_test_code() {
    let long: Vec<String> = rust_files(&repo_root().join("src"))
        .iter()
        .map(|f| (f, non_test_code(f).lines().count()))
        .filter(|(_, n)| *n > 450)
        .map(|(f, n)| format!("{}: {n} lines", f.display()))
        .collect();
    assert!(long.is_empty(), "files over 450 lines of non-test code:\n{}", long.join("\n"));
}

/// The settings table (`src/settings/table.rs`) is the single source of every variable's name; any
/// other place takes it from there, so a rename cannot leave a stale spelling behind.
#[test]
fn each_variable_name_is_spelled_once_in_the_source() {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in rust_files(&repo_root().join("src")) {
        let code = non_test_code(&file);
        let mut rest = code.as_str();
        while let Some(i) = rest.find("WAIT_FOR_IDP_") {
            let name: String =
                rest[i..].chars().take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_').collect();
            if name.len() > "WAIT_FOR_IDP_".len() {
                seen.entry(name.clone()).or_default().push(file.display().to_string());
            }
            rest = &rest[i + name.len()..];
        }
    }
    assert!(seen.len() > 20, "the table's names were not found: {seen:?}");
    let repeated: Vec<String> =
        seen.iter().filter(|(_, files)| files.len() > 1).map(|(name, files)| format!("{name}: {files:?}")).collect();
    assert!(repeated.is_empty(), "spelled more than once:\n{}", repeated.join("\n"));
    assert!(seen.values().all(|files| files.iter().all(|f| f.ends_with("settings/table.rs"))), "{seen:?}");
}

/// Names under `[section]` in Cargo.toml, as Rust spells them.
fn dependencies(section: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    let mut names = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == section;
            continue;
        }
        if inside
            && !line.is_empty()
            && !line.starts_with('#')
            && let Some((name, _)) = line.split_once('=')
        {
            names.push(name.trim().replace('-', "_"));
        }
    }
    names
}

fn uses(text: &str, name: &str) -> bool {
    [format!("{name}::"), format!("use {name}"), format!("extern crate {name}")]
        .iter()
        .any(|p| text.contains(p.as_str()))
}

/// rustc's `unused_crate_dependencies` checks `[dependencies]` (src/lib.rs); it cannot check the
/// dev-dependencies without a `use x as _` for every library dependency in the test crate, so
/// this does. The examples count: they are built with the dev-dependencies (gen-docs writes the
/// release's completions and man page with two of them).
#[test]
fn every_dev_dependency_is_used() {
    let all = |dir: &str| -> String {
        rust_files(&repo_root().join(dir)).iter().map(|f| std::fs::read_to_string(f).unwrap()).collect()
    };
    let code = [all("src"), all("tests"), all("examples")];
    for name in dependencies("[dev-dependencies]") {
        assert!(code.iter().any(|text| uses(text, &name)), "dev-dependency {name} is declared but never used");
    }
}

#[test]
fn the_readme_flag_table_lists_every_flag_and_variable() {
    let mut cmd = gate();
    cmd.arg("--help");
    let help = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let table: String = readme.lines().filter(|l| l.starts_with("| `-")).collect::<Vec<_>>().join("\n");
    let words = |text: &str, prefix: &str| -> BTreeSet<String> {
        text.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
            .filter(|w| w.starts_with(prefix) && w.len() > prefix.len())
            .map(str::to_string)
            .collect()
    };
    assert_eq!(words(&help, "--"), words(&table, "--"), "flags in --help vs the README's flag table ({})", bin());
    assert_eq!(words(&help, "WAIT_FOR_IDP_"), words(&table, "WAIT_FOR_IDP_"), "variables in --help vs the README");
}

/// The README says which flags have no variable as `--help` does, and both name exactly the
/// flags whose `--help` entry names none (`-h` and `-V` aside).
#[test]
fn the_readme_names_the_flags_without_a_variable_as_help_does() {
    let mut cmd = gate();
    cmd.arg("--help");
    let help = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
    // An entry starts at its flags alone on a line (`  -v, --verbose...`, `      --once[=<BOOL>]`).
    let header = |line: &str| {
        let flags = line.strip_prefix("      ").or_else(|| line.strip_prefix("  ").filter(|l| l.starts_with('-')))?;
        let end = flags.find(['[', '<', '.']).unwrap_or(flags.len());
        let (names, rest) = (flags[..end].trim(), &flags[end..]);
        let value =
            rest.is_empty() || rest == "..." || rest == "[=<BOOL>]" || rest.starts_with('<') && rest.ends_with('>');
        let names_only = names.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | ',' | ' '));
        (names.starts_with('-') && value && names_only)
            .then(|| names.split(", ").next().unwrap_or_default().to_string())
    };
    let mut without = BTreeSet::new();
    let mut entry: Option<(String, bool)> = None;
    for line in help.lines().chain(["  -end"]) {
        match header(line) {
            Some(flag) => {
                if let Some((flag, false)) = entry.take() {
                    without.insert(flag);
                }
                entry = Some((flag, false));
            }
            None => {
                if let Some((_, env)) = &mut entry {
                    *env |= line.contains("[env: ");
                }
            }
        }
    }
    without.retain(|f| !matches!(f.as_str(), "-h" | "-V"));
    assert!(without.len() >= 3, "{without:?} in\n{help}");
    let claim = |text: &str| -> Option<BTreeSet<String>> {
        let text = text.replace('`', "").split_whitespace().collect::<Vec<_>>().join(" ");
        let at = text.find("Every flag but ")?;
        let named = &text[at + "Every flag but ".len()..text[at..].find(" has an environment variable")? + at];
        Some(named.split([',', ' ']).filter(|w| w.starts_with('-')).map(str::to_string).collect())
    };
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    assert_eq!(claim(&help).as_ref(), Some(&without), "--help's claim");
    assert_eq!(claim(&readme).as_ref(), Some(&without), "the README's claim");
}

/// A module's name says its job, so two modules with one name would be two jobs with one name
/// (`tests` modules and `mod.rs` files excepted).
#[test]
fn no_two_modules_share_a_name() {
    let mut seen: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for file in rust_files(&repo_root().join("src")) {
        let stem = if file.ends_with("mod.rs") { file.parent().unwrap().file_name() } else { file.file_stem() };
        let stem = stem.unwrap().to_string_lossy().into_owned();
        if stem != "tests" && stem != "src" {
            seen.entry(stem).or_default().push(file);
        }
    }
    let shared: Vec<String> =
        seen.iter().filter(|(_, files)| files.len() > 1).map(|(n, f)| format!("{n}: {f:?}")).collect();
    assert!(shared.is_empty(), "modules sharing a name:\n{}", shared.join("\n"));
}

/// The README is for users: at most 15 KiB; depth goes to docs/ (issue 19).
#[test]
fn the_readme_stays_within_15_kib() {
    let size = std::fs::metadata(repo_root().join("README.md")).unwrap().len();
    assert!(size <= 15_360, "README.md is {size} bytes, over 15,360: move depth to docs/ and link to it");
}

/// The README, CONTRIBUTING.md and every `docs/*.md`.
fn markdown_files() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo_root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    [repo_root().join("README.md"), repo_root().join("CONTRIBUTING.md")].into_iter().chain(docs).collect()
}

/// The lines of a Markdown text outside fenced code blocks.
fn prose(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |l| {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The anchors GitHub gives a text's headings: lower case, spaces to `-`, punctuation other than
/// `-` and `_` dropped; a repeated heading gets `-1`, `-2`, …
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeMap::<String, usize>::new();
    let mut out = BTreeSet::new();
    for line in prose(text) {
        let heading = line.trim_start_matches('#');
        if heading.len() == line.len() || !heading.starts_with(' ') {
            continue;
        }
        let base: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

/// A path with `.` and `..` resolved lexically, as a browser resolves a link.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The targets of a text's links and images, `[…](target)`, outside fenced code.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_markdown_resolves() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(repo_root()).unwrap().display().to_string();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if path.is_empty() { file.clone() } else { lexical(&file.parent().unwrap().join(path)) };
            if !resolved.exists() {
                broken.push(format!("{name}: {target}: no such file"));
                continue;
            }
            if !anchor.is_empty() && resolved.extension().is_some_and(|e| e == "md") {
                let there = std::fs::read_to_string(&resolved).unwrap();
                if !anchors(&there).contains(anchor) {
                    broken.push(format!("{name}: {target}: no heading with that anchor"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
