//! The code's own shape, checked like behaviour where no tool checks it: the layering written in
//! `src/lib.rs` holds (no import points to a later layer, no cycle between modules, nor between
//! the files of one), no file carries over 450 lines of non-test code, no two modules share a
//! name, each variable's name is spelled once (in the settings table), every dev-dependency is
//! used, the README's flag table lists what `--help` offers, and the Markdown holds together: the
//! README stays within 15 KiB and every relative link resolves. Function length and unused dependencies are clippy's and rustc's (Cargo.toml
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
    // Only the "# Layers" section: the next one ("# Failures") is numbered too.
    let section = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!").map(str::trim_start))
        .skip_while(|l| *l != "# Layers")
        .skip(1)
        .take_while(|l| !l.starts_with('#'));
    for line in section {
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

/// Rust code with its comments removed and its string and character literals emptied: a URL's
/// `//` or a message's `crate::` is no path.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && matches!(next, Some('"' | '#'))
            && !chars[..i].last().is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"…", r#"…"#.
            let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            i += hashes + 2;
            while i < chars.len()
                && !(chars[i] == '"' && chars[i + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes)
            {
                i += 1;
            }
            i += hashes + 1;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\u{1F600}'), not a lifetime.
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// A text's tokens: words (identifiers, keywords, numbers), `::`, and single punctuation.
fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".to_string());
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// One name a `use` declaration brings in: the path it names and the name it goes by here.
struct Import {
    path: Vec<String>,
    local: String,
}

/// The use tree at `toks[*i..]` after `prefix`, as the paths it names (`a::{b, c::{self, d as e}}`
/// is `a::b`, `a::c`, `a::c::d` as `e`); `*i` ends after it.
fn use_tree(toks: &[String], i: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Import>) {
    while let Some(tok) = toks.get(*i) {
        *i += 1;
        match tok.as_str() {
            "{" => {
                while toks.get(*i).is_some_and(|t| t != "}") {
                    use_tree(toks, i, prefix.clone(), out);
                    if toks.get(*i).is_some_and(|t| t == ",") {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            "::" => {}
            "*" => return, // a glob names no one file: none in src/ outside tests
            "self" if !prefix.is_empty() => {
                out.push(Import { local: prefix.last().unwrap().clone(), path: prefix });
                return;
            }
            word => {
                prefix.push(word.to_string());
                if toks.get(*i).is_some_and(|t| t == "::") {
                    continue;
                }
                let mut local = word.to_string();
                if toks.get(*i).is_some_and(|t| t == "as") {
                    local = toks.get(*i + 1).cloned().unwrap_or_default();
                    *i += 2;
                }
                out.push(Import { path: prefix, local });
                return;
            }
        }
    }
}

/// A source file as the import graph sees it: what it imports, and every other path it writes
/// (`super::x::f()`), in its code outside its test module.
struct Source {
    imports: Vec<Import>,
    paths: Vec<Vec<String>>,
    /// Its words outside `use` declarations: an import counts where its name is used (a
    /// re-export, `pub(crate) use child::Item`, is no dependency of the file that only passes it on).
    words: BTreeSet<String>,
}

fn source(text: &str) -> Source {
    // The test module (`#[cfg(test)] mod tests`) is the file's own business: its `super` is the
    // file itself. A `#[cfg(test)]` function elsewhere is code like any other.
    let end = test_module_start(text);
    let toks = tokens(&code_only(&text[..end]));
    let (mut imports, mut paths, mut words) = (Vec::new(), Vec::new(), BTreeSet::new());
    let mut i = 0;
    while i < toks.len() {
        if toks[i] == "use" {
            i += 1;
            use_tree(&toks, &mut i, Vec::new(), &mut imports);
            continue;
        }
        let starts_path = i == 0 || toks[i - 1] != "::";
        if starts_path && toks.get(i + 1).is_some_and(|t| t == "::") {
            let mut path = vec![toks[i].clone()];
            while toks.get(i + 1).is_some_and(|t| t == "::") && toks.get(i + 2).is_some_and(|t| t != "{" && t != "<") {
                path.push(toks[i + 2].clone());
                i += 2;
            }
            paths.push(path);
        }
        words.insert(toks[i].clone());
        i += 1;
    }
    Source { imports, paths, words }
}

/// A file's module path: `src/net/tls/refusal.rs` → `net::tls::refusal`, `src/net/mod.rs` →
/// `net`, `src/lib.rs` → none (the crate root).
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(repo_root().join("src")).unwrap().with_extension("");
    let mut path: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if path.last().is_some_and(|l| l == "mod" || l == "lib") {
        path.pop();
    }
    path
}

/// The file-level import graph of `src/`: an edge from a file to each file whose item its code
/// uses, found where the item is defined (through re-exports: `super::Refusal` in `tls/` is
/// `tls/refusal.rs`'s). `mod child;` is no edge: a parent that only declares its children does not
/// depend on them, and a child may import from it.
fn file_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files: BTreeMap<Vec<String>, (String, Source)> = BTreeMap::new();
    for file in rust_files(&repo_root().join("src")) {
        let name = file.strip_prefix(repo_root().join("src")).unwrap().display().to_string();
        if name == "main.rs" || file.file_name().is_some_and(|n| n == "tests.rs") {
            continue; // the binary is another crate; tests.rs is a test module
        }
        files.insert(module_path(&file), (name, source(&std::fs::read_to_string(&file).unwrap())));
    }
    // The module whose file defines the item `path` names from `module`, or `None` for another
    // crate's, a local name, or a module named only as a namespace.
    fn resolve(
        files: &BTreeMap<Vec<String>, (String, Source)>,
        module: &[String],
        path: &[String],
        depth: usize,
    ) -> Option<Vec<String>> {
        let (first, rest) = path.split_first()?;
        let mut at = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => module[..module.len().checked_sub(1)?].to_vec(),
            name => {
                let child = [module, &[name.to_string()]].concat();
                if files.contains_key(&child) {
                    child
                } else {
                    let (_, source) = files.get(module)?;
                    let import = source.imports.iter().find(|i| i.local == *name)?;
                    if depth > 8 {
                        return None;
                    }
                    let whole = [&import.path[..], rest].concat();
                    return resolve(files, module, &whole, depth + 1);
                }
            }
        };
        let mut rest = rest;
        while let Some((next, after)) = rest.split_first() {
            if next == "super" {
                at.pop();
            } else {
                let child = [&at[..], std::slice::from_ref(next)].concat();
                if !files.contains_key(&child) {
                    break;
                }
                at = child;
            }
            rest = after;
        }
        let item = rest.first()?;
        let (_, source) = files.get(&at)?;
        match source.imports.iter().find(|i| i.local == *item) {
            Some(import) if depth <= 8 => resolve(files, &at, &[&import.path[..], &rest[1..]].concat(), depth + 1),
            Some(_) => None,
            None => Some(at),
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, (name, source)) in &files {
        let used = source.imports.iter().filter(|i| source.words.contains(&i.local)).map(|i| &i.path);
        for path in used.chain(&source.paths) {
            if let Some(target) = resolve(&files, module, path, 0)
                && target != *module
            {
                graph.entry(name.clone()).or_default().insert(files[&target].0.clone());
            }
        }
    }
    graph
}

/// The graph's cycles: each strongly connected component of more than one file (Tarjan's), with
/// one cycle through it to show.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<(BTreeSet<String>, Vec<String>)> {
    struct Tarjan<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, (usize, usize)>,
        stack: Vec<&'g str>,
        found: Vec<BTreeSet<String>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, node: &'g str) {
            let n = self.index.len();
            self.index.insert(node, (n, n));
            self.stack.push(node);
            for next in self.graph.get(node).into_iter().flatten() {
                match self.index.get(next.as_str()) {
                    None => {
                        self.visit(next);
                        let low = self.index[next.as_str()].1.min(self.index[node].1);
                        self.index.get_mut(node).unwrap().1 = low;
                    }
                    Some(&(i, _)) if self.stack.contains(&next.as_str()) => {
                        let low = i.min(self.index[node].1);
                        self.index.get_mut(node).unwrap().1 = low;
                    }
                    Some(_) => {}
                }
            }
            if self.index[node].0 == self.index[node].1 {
                let at = self.stack.iter().rposition(|n| *n == node).unwrap();
                let component: BTreeSet<String> = self.stack.drain(at..).map(str::to_string).collect();
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut t = Tarjan { graph, index: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for node in graph.keys() {
        if !t.index.contains_key(node.as_str()) {
            t.visit(node);
        }
    }
    // One cycle through each component: from its first file, the shortest way back (breadth first).
    t.found
        .into_iter()
        .map(|component| {
            let start = component.first().unwrap().as_str();
            let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([start]);
            let mut back = start;
            while let Some(at) = queue.pop_front() {
                let next: Vec<&str> = graph[at].iter().map(String::as_str).filter(|n| component.contains(*n)).collect();
                if next.contains(&start) {
                    back = at;
                    break;
                }
                for n in next {
                    if n != start && !came_from.contains_key(n) {
                        came_from.insert(n, at);
                        queue.push_back(n);
                    }
                }
            }
            let mut cycle = vec![start.to_string()];
            let mut at = back;
            while at != start {
                cycle.push(at.to_string());
                at = came_from[at];
            }
            cycle.push(start.to_string());
            cycle.reverse();
            (component, cycle)
        })
        .collect()
}

/// Within a module too, no two files import each other in a circle (the layers above see only
/// modules): a file that needs another's item and is needed back is one job split in two, or two
/// jobs sharing a third that wants a file of its own.
#[test]
fn no_files_import_each_other_in_a_circle() {
    // The checker itself, on a graph with one cycle and one edge out of it.
    let toy: BTreeMap<String, BTreeSet<String>> =
        [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")].iter().fold(BTreeMap::new(), |mut g, (from, to)| {
            g.entry(from.to_string()).or_default().insert(to.to_string());
            g.entry(to.to_string()).or_default();
            g
        });
    let toy_cycles = cycles(&toy);
    assert_eq!(toy_cycles.len(), 1);
    assert_eq!(toy_cycles[0].1, ["a", "b", "c", "a"]);
    let graph = file_graph();
    // The graph sees through a re-export to the file that defines the item.
    assert!(graph["net/proxy.rs"].contains("net/tls/explanation.rs"), "{:?}", graph["net/proxy.rs"]);
    assert!(graph["net/http.rs"].contains("config/connect_to.rs"), "{:?}", graph["net/http.rs"]);
    let found: Vec<String> = cycles(&graph)
        .iter()
        .map(|(files, cycle)| format!("{} (a cycle among {files:?})", cycle.join(" -> ")))
        .collect();
    assert!(found.is_empty(), "files in src/ importing each other in a circle:\n{}", found.join("\n"));
}

/// A folder's `mod.rs` is its front door: it declares the files and says what the folder offers.
/// A file that imports back from its own folder's `mod.rs` (or any folder above it) makes the door
/// a second home for the folder's types, which is how the circles above began.
#[test]
fn no_file_imports_back_from_a_front_door_above_it() {
    let back: Vec<String> = file_graph()
        .iter()
        .flat_map(|(file, targets)| targets.iter().map(move |target| (file, target)))
        .filter(|(file, target)| {
            target.ends_with("mod.rs") && file.starts_with(target.trim_end_matches("mod.rs")) && file != target
        })
        .map(|(file, target)| format!("{file} imports from {target}"))
        .collect();
    assert!(back.is_empty(), "files importing back from a mod.rs above them:\n{}", back.join("\n"));
}

/// The structure as the code has it, in `docs/structure.md`: each layer's modules with the
/// modules each imports, then each folder's files with the files of the folder each imports. Drawn
/// from `src/` by the same readers as the checks above, so it cannot drift: the test fails when
/// the file differs, and `UPDATE_STRUCTURE=1` writes it.
#[test]
fn the_structure_picture_is_the_codes() {
    let layers = layers();
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&repo_root().join("src")) {
        let module = module_of(&file);
        let text = non_test_code(&file);
        for used in crate_references(&text).into_iter().filter(|used| *used != module && layers.contains_key(used)) {
            uses.entry(module.clone()).or_default().insert(used);
        }
    }
    let mut by_layer: BTreeMap<usize, Vec<&String>> = BTreeMap::new();
    for (module, layer) in &layers {
        by_layer.entry(*layer).or_default().push(module);
    }
    let mut picture = String::from(
        "# The structure\n\nDrawn from `src/` by `tests/structure.rs`, which fails when this file differs from the \
         code (`UPDATE_STRUCTURE=1 cargo test --test integration structure::` writes it). The layers are `src/lib.rs`'s; \
         a module imports only from its own layer or an earlier one.\n\n## Modules, leaves first, and what each imports\n\n",
    );
    for (layer, modules) in &by_layer {
        for module in modules {
            let used: Vec<&str> = uses.get(*module).into_iter().flatten().map(String::as_str).collect();
            let used = if used.is_empty() { "nothing of the crate".to_string() } else { used.join(", ") };
            picture.push_str(&format!("- {layer}. `{module}`: {used}\n"));
        }
    }
    picture.push_str("\n## Files of each folder, and the files of the same folder each imports\n\n");
    picture.push_str(
        "A folder's `mod.rs` declares its files and says what the folder offers; no file imports from a `mod.rs` \
         above it, so code a `mod.rs` holds of its own is code its files do not need.\n\n",
    );
    let graph = file_graph();
    let mut folders: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for path in rust_files(&repo_root().join("src")) {
        let file = path.strip_prefix(repo_root().join("src")).unwrap().display().to_string();
        let Some((folder, name)) = file.rsplit_once('/') else { continue };
        if name == "tests.rs" {
            continue;
        }
        let said = if name == "mod.rs" {
            // The front door: what it declares (its re-exports name those files' items).
            let declared: Vec<String> = non_test_code(&path)
                .lines()
                .filter_map(|l| {
                    l.trim().trim_start_matches("pub(crate) ").trim_start_matches("pub ").strip_prefix("mod ")
                })
                .map(|l| l.trim_end_matches(';'))
                .map(|m| if path.with_file_name(m).is_dir() { format!("{m}/") } else { format!("{m}.rs") })
                .collect();
            format!("declares {}", declared.join(", "))
        } else {
            let inside: Vec<&str> = graph
                .get(&file)
                .into_iter()
                .flatten()
                .filter_map(|t| t.strip_prefix(&format!("{folder}/")).filter(|rest| !rest.contains('/')))
                .collect();
            if inside.is_empty() { "none".to_string() } else { inside.join(", ") }
        };
        folders.entry(folder.to_string()).or_default().push((name.to_string(), said));
    }
    for (folder, files) in &mut folders {
        files.sort();
        picture.push_str(&format!("- `{folder}/`\n"));
        for (name, said) in files.iter() {
            picture.push_str(&format!("  - `{name}`: {said}\n"));
        }
    }
    let circles = cycles(&graph).len();
    picture.push_str(&format!(
        "\nCircles between files: {circles}. Files importing from a `mod.rs` above them: none (checked by \
         `no_file_imports_back_from_a_front_door_above_it`).\n"
    ));
    let path = repo_root().join("docs/structure.md");
    if std::env::var_os("UPDATE_STRUCTURE").is_some() {
        std::fs::write(&path, &picture).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == picture,
        "docs/structure.md is not the code's structure: run UPDATE_STRUCTURE=1 cargo test --test integration structure::\n{picture}"
    );
}

/// A source file without its tests: everything before its `#[cfg(test)]` module (which ends each
/// file here), nothing of a file that is a test module itself.
fn non_test_code(file: &Path) -> String {
    if file.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(file).unwrap();
    text[..test_module_start(&text)].to_string()
}

/// Where a file's test module (`#[cfg(test)] mod tests { … }`) starts, or its end: a
/// `#[cfg(test)]` function elsewhere in the file is code like any other.
fn test_module_start(text: &str) -> usize {
    text.match_indices("#[cfg(test)]")
        .find(|(at, m)| {
            let after = text[at + m.len()..].trim_start();
            let after = after.strip_prefix("pub(super) ").unwrap_or(after);
            after.strip_prefix("mod tests").is_some_and(|rest| rest.trim_start().starts_with('{'))
        })
        .map_or(text.len(), |(at, _)| at)
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

/// One module-file style: a module with children is `x/mod.rs`, never `x.rs` beside `x/`, so
/// a folder's front door is found in one place (issue 37).
#[test]
fn every_module_with_children_is_a_folder_with_mod_rs() {
    let mixed: Vec<String> = files_under(&repo_root().join("src"))
        .into_iter()
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|dir| {
            dir.with_extension("rs").exists() || !dir.join("mod.rs").exists() && *dir != repo_root().join("src")
        })
        .map(|dir| dir.display().to_string())
        .collect();
    assert!(mixed.is_empty(), "folders beside an x.rs, or without mod.rs: {mixed:?}");
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
