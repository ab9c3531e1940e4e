//! The module-cycle check: inside each library crate of the workspace, the modules (one per
//! file) must form no cycle. A module depends on another when its code (outside
//! `#[cfg(test)]` blocks) names an item of the other, through `crate::`, `super::`, `self::`
//! or a child module's name; re-exports (`pub use`, `pub(crate) use`) are followed to the
//! module that defines the item, and are not dependencies themselves, nor are `mod`
//! declarations. A cycle is reported with its modules, and one reference per edge, so that it
//! can be broken by moving the shared item into a leaf module.
//!
//! This reads the sources with a small tokenizer, not a compiler: it knows `mod`, `use` trees,
//! paths, comments, strings and char literals, which is all the crates here need. Macros are
//! not expanded (a path built inside a macro is not seen).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Crates (directory names) whose library is checked.
pub(crate) const CRATES: &[&str] = &[
    "informer-core",
    "informer-store",
    "informer-fifo",
    "informer",
    "informer-workqueue",
    "informer-controller",
    "informer-kube",
    "informer-testing",
    "fake-apiserver",
];

/// Runs the check over every crate of [`CRATES`] that exists under `root`.
pub(crate) fn check(root: &Path) -> Result<(), String> {
    let mut problems = Vec::new();
    for name in CRATES {
        let lib = root.join(name).join("src").join("lib.rs");
        if !lib.exists() {
            continue;
        }
        let graph = Graph::load(&lib)?;
        for cycle in graph.cycles() {
            problems.push(format!("{name}: {}", graph.describe(&cycle)));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "module cycles (move what the modules share into a leaf module):\n{}",
            problems.join("\n")
        ))
    }
}

/// Checks that every crate of [`CRATES`] (and the benchmarks) has at most one
/// integration-test binary, `tests/it/main.rs`: a `tests/*.rs` file or a `tests/<dir>/main.rs`
/// would be another binary linking every dependency again (CI's build time).
pub(crate) fn check_test_layout(root: &Path) -> Result<(), String> {
    let mut extra = Vec::new();
    for name in CRATES.iter().chain(&["benchmarks", "xtask"]) {
        let tests = root.join(name).join("tests");
        let Ok(entries) = fs::read_dir(&tests) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let is_binary = (path.is_file() && file_name.ends_with(".rs"))
                || (path.is_dir() && file_name != "it" && path.join("main.rs").exists());
            if is_binary {
                extra.push(format!("{name}/tests/{file_name}"));
            }
        }
    }
    if extra.is_empty() {
        Ok(())
    } else {
        extra.sort();
        Err(format!(
            "integration tests outside tests/it (each is one more test binary; make it a module \
             of tests/it/main.rs): {}",
            extra.join(", ")
        ))
    }
}

/// A module path from the crate root: `[]` is the root, `["fake", "server"]` is
/// `crate::fake::server`.
type ModPath = Vec<String>;

fn display(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

/// One module (one file) as read.
#[derive(Debug, Default)]
struct Module {
    /// Child modules declared in this file (`mod x;`, not inline test modules).
    children: BTreeSet<String>,
    /// Re-exports: the name under which an item is re-exported here → the absolute path it
    /// names (`pub use store::Store;` → `Store` → `[.., "store", "Store"]`); a glob re-export
    /// (`pub use x::*`) is kept under `*` as the path of `x`.
    reexports: BTreeMap<String, Vec<ModPath>>,
    /// Absolute paths this module's code names (outside tests, re-exports and `mod`).
    references: Vec<ModPath>,
}

/// The modules of one crate and the dependencies between them.
struct Graph {
    modules: BTreeMap<ModPath, Module>,
    /// module → module → one reference that makes the edge (for the report).
    edges: BTreeMap<ModPath, BTreeMap<ModPath, ModPath>>,
}

impl Graph {
    fn load(lib: &Path) -> Result<Self, String> {
        let mut modules = BTreeMap::new();
        let mut pending = vec![(Vec::new(), lib.to_path_buf())];
        while let Some((path, file)) = pending.pop() {
            let text = fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let module = parse_module(&path, &text);
            for child in &module.children {
                let child_file = child_file(&file, child)
                    .ok_or_else(|| format!("{}: no file for `mod {child};`", file.display()))?;
                let mut child_path = path.clone();
                child_path.push(child.clone());
                pending.push((child_path, child_file));
            }
            modules.insert(path, module);
        }
        let mut graph = Self {
            modules,
            edges: BTreeMap::new(),
        };
        graph.link();
        Ok(graph)
    }

    /// Resolves every reference to the module defining what it names, and records edges.
    fn link(&mut self) {
        let mut edges: BTreeMap<ModPath, BTreeMap<ModPath, ModPath>> = BTreeMap::new();
        for (from, module) in &self.modules {
            for reference in &module.references {
                for target in self.resolve(reference, 0) {
                    if &target != from && !target.is_empty() {
                        edges
                            .entry(from.clone())
                            .or_default()
                            .entry(target)
                            .or_insert_with(|| reference.clone());
                    }
                }
            }
        }
        self.edges = edges;
    }

    /// The modules defining what `path` names: the deepest module along it, followed through
    /// that module's re-exports of the next segment.
    fn resolve(&self, path: &[String], depth: usize) -> Vec<ModPath> {
        let mut module: ModPath = Vec::new();
        let mut rest = path;
        while let Some((first, tail)) = rest.split_first() {
            let mut next = module.clone();
            next.push(first.clone());
            if self.modules.contains_key(&next) {
                module = next;
                rest = tail;
            } else {
                break;
            }
        }
        let Some(name) = rest.first() else {
            return vec![module];
        };
        if depth < 8
            && let Some(found) = self.modules.get(&module)
        {
            if let Some(targets) = found.reexports.get(name) {
                return targets
                    .iter()
                    .flat_map(|t| {
                        let mut full = t.clone();
                        full.extend(rest[1..].iter().cloned());
                        self.resolve(&full, depth + 1)
                    })
                    .collect();
            }
            if let Some(globs) = found.reexports.get("*") {
                for glob in globs {
                    let mut full = glob.clone();
                    full.extend(rest.iter().cloned());
                    let resolved = self.resolve(&full, depth + 1);
                    if resolved.iter().any(|r| r != glob) {
                        return resolved;
                    }
                }
            }
        }
        vec![module]
    }

    /// Strongly connected components with more than one module (Tarjan).
    fn cycles(&self) -> Vec<Vec<ModPath>> {
        let nodes: Vec<&ModPath> = self.modules.keys().collect();
        let index_of: BTreeMap<&ModPath, usize> =
            nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let successors: Vec<Vec<usize>> = nodes
            .iter()
            .map(|n| {
                self.edges
                    .get(*n)
                    .map(|targets| {
                        targets
                            .keys()
                            .filter_map(|t| index_of.get(t).copied())
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect();
        let mut tarjan = Tarjan::new(nodes.len());
        for v in 0..nodes.len() {
            if tarjan.index[v].is_none() {
                tarjan.visit(v, &successors);
            }
        }
        tarjan
            .components
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut members: Vec<ModPath> = c.into_iter().map(|i| nodes[i].clone()).collect();
                members.sort();
                members
            })
            .collect()
    }

    /// The modules of a cycle and, for each edge inside it, one reference making it.
    fn describe(&self, cycle: &[ModPath]) -> String {
        let members: BTreeSet<&ModPath> = cycle.iter().collect();
        let mut lines = vec![format!(
            "{{{}}}",
            cycle
                .iter()
                .map(|m| display(m))
                .collect::<Vec<_>>()
                .join(", ")
        )];
        for from in cycle {
            if let Some(targets) = self.edges.get(from) {
                for (to, reference) in targets {
                    if members.contains(to) {
                        lines.push(format!(
                            "    {} -> {} (names {})",
                            display(from),
                            display(to),
                            display(reference)
                        ));
                    }
                }
            }
        }
        lines.join("\n")
    }
}

/// Tarjan's strongly connected components, iterative enough for module graphs (recursion
/// depth is at most the number of modules).
struct Tarjan {
    next: usize,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    components: Vec<Vec<usize>>,
}

impl Tarjan {
    fn new(n: usize) -> Self {
        Self {
            next: 0,
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            components: Vec::new(),
        }
    }

    fn visit(&mut self, v: usize, successors: &[Vec<usize>]) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &successors[v] {
            match self.index[w] {
                None => {
                    self.visit(w, successors);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// Where the file of `mod child;` declared in `file` lives.
fn child_file(file: &Path, child: &str) -> Option<PathBuf> {
    let stem = file.file_stem()?.to_str()?;
    let dir = file.parent()?;
    let base = if matches!(stem, "lib" | "main" | "mod") {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    [
        base.join(format!("{child}.rs")),
        base.join(child).join("mod.rs"),
    ]
    .into_iter()
    .find(|p| p.exists())
}

/// A token of Rust source, as far as paths need.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    /// Any other punctuation character.
    Punct(char),
}

/// Splits source into tokens, dropping comments, whitespace, string and char literals,
/// lifetimes and numbers.
fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
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
        } else if c == 'r' && (next == Some('"') || (next == Some('#') && raw_string_at(&chars, i)))
        {
            i = skip_raw_string(&chars, i + 1);
        } else if c == 'b' && next == Some('"') {
            i = skip_string(&chars, i + 1);
        } else if c == 'b' && next == Some('r') && raw_string_at(&chars, i + 1) {
            i = skip_raw_string(&chars, i + 2);
        } else if c == 'b' && next == Some('\'') {
            i = skip_char(&chars, i + 1);
        } else if c == '"' {
            i = skip_string(&chars, i);
        } else if c == '\'' {
            i = skip_char(&chars, i);
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // Raw identifiers: `r#type`.
            if word == "r" && chars.get(i) == Some(&'#') {
                i += 1;
                continue;
            }
            tokens.push(Token::Ident(word));
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c == ':' && next == Some(':') {
            tokens.push(Token::PathSep);
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            tokens.push(Token::Punct(c));
            i += 1;
        }
    }
    tokens
}

/// Whether a raw string (`r"`, `r#"`, `r##"`...) starts at `chars[i]` (the `r`).
fn raw_string_at(chars: &[char], i: usize) -> bool {
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    chars.get(j) == Some(&'"')
}

/// Skips a raw string whose hashes start at `chars[i]`; returns the index after it.
fn skip_raw_string(chars: &[char], mut i: usize) -> usize {
    let mut hashes = 0;
    while chars.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    i += 1; // the opening quote
    while i < chars.len() {
        if chars[i] == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// Skips a string starting at the quote `chars[i]`.
fn skip_string(chars: &[char], mut i: usize) -> usize {
    i += 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// Skips a char literal or a lifetime starting at the quote `chars[i]`.
fn skip_char(chars: &[char], i: usize) -> usize {
    // 'x' or '\n' or '\u{..}': a closing quote follows; otherwise a lifetime (`'a`).
    if chars.get(i + 1) == Some(&'\\') {
        let mut j = i + 2;
        while j < chars.len() && chars[j] != '\'' {
            j += 1;
        }
        return j + 1;
    }
    if chars.get(i + 2) == Some(&'\'') {
        return i + 3;
    }
    // A lifetime: skip the quote and the name.
    let mut j = i + 1;
    while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
        j += 1;
    }
    j
}

/// Reads one module's declarations and references.
fn parse_module(path: &[String], text: &str) -> Module {
    let tokens = strip_test_blocks(tokenize(text));
    let mut module = Module::default();
    // First the children: `mod x;` (not `mod x { .. }`).
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == Token::Ident("mod".into())
            && let (Some(Token::Ident(name)), Some(Token::Punct(';'))) =
                (tokens.get(i + 1), tokens.get(i + 2))
        {
            module.children.insert(name.clone());
        }
        i += 1;
    }
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Ident(word) if word == "use" => {
                let reexport = is_public_before(&tokens, i);
                let end = statement_end(&tokens, i);
                let mut leaves = Vec::new();
                use_tree(&tokens[i + 1..end], &[], &mut leaves);
                for (segments, alias) in leaves {
                    let Some(absolute) = absolute(path, &module.children, &segments) else {
                        continue;
                    };
                    if reexport {
                        let name =
                            alias.unwrap_or_else(|| segments.last().cloned().unwrap_or_default());
                        let key = if name == "*" { "*".to_owned() } else { name };
                        let target = if key == "*" {
                            absolute[..absolute.len().saturating_sub(1)].to_vec()
                        } else {
                            absolute
                        };
                        module.reexports.entry(key).or_default().push(target);
                    } else {
                        let target = if segments.last().map(String::as_str) == Some("*") {
                            absolute[..absolute.len().saturating_sub(1)].to_vec()
                        } else {
                            absolute
                        };
                        module.references.push(target);
                    }
                }
                i = end;
            }
            Token::Ident(word) if word == "mod" => i += 2,
            Token::Ident(first) => {
                // A path in code: first::seg::seg...
                let preceded_by_sep = i > 0 && tokens[i - 1] == Token::PathSep;
                if !preceded_by_sep && tokens.get(i + 1) == Some(&Token::PathSep) {
                    let mut segments = vec![first.clone()];
                    let mut j = i + 1;
                    while tokens.get(j) == Some(&Token::PathSep) {
                        match tokens.get(j + 1) {
                            Some(Token::Ident(s)) => {
                                segments.push(s.clone());
                                j += 2;
                            }
                            _ => break,
                        }
                    }
                    if let Some(absolute) = absolute(path, &module.children, &segments) {
                        module.references.push(absolute);
                    }
                    i = j;
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    module
}

/// Drops `#[cfg(test)]` items: the attribute and the braced or `;`-ended item after it.
fn strip_test_blocks(tokens: Vec<Token>) -> Vec<Token> {
    let pattern = [
        Token::Punct('#'),
        Token::Punct('['),
        Token::Ident("cfg".into()),
        Token::Punct('('),
        Token::Ident("test".into()),
        Token::Punct(')'),
        Token::Punct(']'),
    ];
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i..].starts_with(&pattern) {
            let mut j = i + pattern.len();
            let mut depth = 0usize;
            while j < tokens.len() {
                match tokens[j] {
                    Token::Punct('{') => depth += 1,
                    Token::Punct('}') => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            j += 1;
                            break;
                        }
                    }
                    Token::Punct(';') if depth == 0 => {
                        j += 1;
                        break;
                    }
                    _ => {}
                }
                j += 1;
            }
            i = j;
        } else {
            out.push(tokens[i].clone());
            i += 1;
        }
    }
    out
}

/// Whether the `use` at `tokens[i]` is public (`pub use`, `pub(crate) use`, ...).
fn is_public_before(tokens: &[Token], i: usize) -> bool {
    match i.checked_sub(1).map(|k| &tokens[k]) {
        Some(Token::Ident(w)) if w == "pub" => true,
        Some(Token::Punct(')')) => {
            // pub(crate) / pub(super) / pub(in path)
            let mut k = i - 1;
            while k > 0 && tokens[k] != Token::Punct('(') {
                k -= 1;
            }
            k > 0 && tokens[k - 1] == Token::Ident("pub".into())
        }
        _ => false,
    }
}

/// The index of the `;` ending the statement starting at `i`.
fn statement_end(tokens: &[Token], i: usize) -> usize {
    let mut j = i;
    while j < tokens.len() && tokens[j] != Token::Punct(';') {
        j += 1;
    }
    j
}

/// Flattens a use tree into (segments, alias) leaves; `*` is a segment.
fn use_tree(tokens: &[Token], prefix: &[String], out: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut i = 0;
    let mut segments = prefix.to_vec();
    while i < tokens.len() {
        match &tokens[i] {
            Token::Ident(w) if w == "as" => {
                if let Some(Token::Ident(alias)) = tokens.get(i + 1) {
                    out.push((segments.clone(), Some(alias.clone())));
                    segments = prefix.to_vec();
                }
                i += 2;
                // Skip to the next comma at this level.
                if tokens.get(i) == Some(&Token::Punct(',')) {
                    i += 1;
                }
                continue;
            }
            Token::Ident(w) => {
                segments.push(w.clone());
                i += 1;
            }
            Token::PathSep => i += 1,
            Token::Punct('*') => {
                segments.push("*".into());
                i += 1;
            }
            Token::Punct('{') => {
                let close = matching_brace(tokens, i);
                use_tree(&tokens[i + 1..close], &segments, out);
                segments = prefix.to_vec();
                i = close + 1;
            }
            Token::Punct(',') => {
                if segments.len() > prefix.len() {
                    out.push((segments.clone(), None));
                }
                segments = prefix.to_vec();
                i += 1;
            }
            _ => i += 1,
        }
    }
    if segments.len() > prefix.len() {
        out.push((segments, None));
    }
}

fn matching_brace(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, t) in tokens.iter().enumerate().skip(open) {
        match t {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    tokens.len().saturating_sub(1)
}

/// The absolute path of `segments` as written in module `path` with child modules
/// `children`, or `None` when it names another crate (or a local item, a prelude name...).
fn absolute(path: &[String], children: &BTreeSet<String>, segments: &[String]) -> Option<ModPath> {
    let (first, rest) = segments.split_first()?;
    let mut base: ModPath = match first.as_str() {
        "crate" => Vec::new(),
        "self" => path.to_vec(),
        "super" => {
            let mut p = path.to_vec();
            p.pop();
            let mut rest = rest;
            while rest.first().map(String::as_str) == Some("super") {
                p.pop();
                rest = &rest[1..];
            }
            p.extend(rest.iter().cloned());
            return Some(p);
        }
        child if children.contains(child) => {
            let mut p = path.to_vec();
            p.push(child.to_owned());
            p
        }
        _ => return None,
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> Graph {
        let dir = std::env::temp_dir().join(format!(
            "xtask-modules-{}-{}",
            std::process::id(),
            files.len() * 7919 + files.iter().map(|(_, t)| t.len()).sum::<usize>()
        ));
        let _ = fs::remove_dir_all(&dir);
        for (name, text) in files {
            let path = dir.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        let g = Graph::load(&dir.join("lib.rs")).unwrap();
        let _ = fs::remove_dir_all(&dir);
        g
    }

    fn cycle_names(g: &Graph) -> Vec<Vec<String>> {
        g.cycles()
            .iter()
            .map(|c| c.iter().map(|m| display(m)).collect())
            .collect()
    }

    #[test]
    fn a_child_using_its_parents_hub_that_uses_it_back_is_a_cycle() {
        let g = graph(&[
            ("lib.rs", "mod fake;\n"),
            (
                "fake/mod.rs",
                "mod server;\nmod watch;\npub use server::Server;\npub(crate) struct Shared;\nfn f() { watch::run(); }\n",
            ),
            ("fake/server.rs", "pub struct Server;\n"),
            ("fake/watch.rs", "use super::Shared;\npub fn run() {}\n"),
        ]);
        assert_eq!(cycle_names(&g), vec![vec!["fake", "fake::watch"]]);
    }

    #[test]
    fn reexports_lead_to_the_defining_module_and_tests_do_not_count() {
        let g = graph(&[
            (
                "lib.rs",
                "mod a;\nmod b;\npub use a::Thing;\npub use b::*;\n",
            ),
            (
                "a.rs",
                "pub struct Thing;\n#[cfg(test)]\nmod tests { use crate::b::Other; }\n",
            ),
            (
                "b.rs",
                "use crate::Thing; // via the root's re-export\npub struct Other(Thing);\nconst S: &str = \"crate::a::x\";\n",
            ),
        ]);
        assert!(cycle_names(&g).is_empty(), "{:?}", g.edges);
        let b = vec!["b".to_owned()];
        assert!(g.edges[&b].contains_key(&vec!["a".to_owned()]));
    }

    #[test]
    fn two_siblings_naming_each_other_are_a_cycle() {
        let g = graph(&[
            ("lib.rs", "mod config;\nmod metrics;\n"),
            (
                "config.rs",
                "use crate::metrics::Metrics;\npub struct Config { m: Metrics }\n",
            ),
            (
                "metrics.rs",
                "pub struct Metrics;\nimpl Metrics { fn f(c: &crate::config::Config) {} }\n",
            ),
        ]);
        assert_eq!(cycle_names(&g), vec![vec!["config", "metrics"]]);
        let report = g.describe(&g.cycles()[0]);
        assert!(
            report.contains("config -> metrics (names metrics::Metrics)"),
            "{report}"
        );
    }

    #[test]
    fn the_workspace_has_no_module_cycles() {
        check(&crate::workspace_root()).unwrap();
    }

    #[test]
    fn every_crate_has_one_integration_test_binary() {
        check_test_layout(&crate::workspace_root()).unwrap();
    }

    #[test]
    fn tokenizer_skips_literals_and_lifetimes() {
        let t =
            tokenize("fn f<'a>(x: &'a str) -> char { let _ = r#\"crate::x\"#; 'c' } // crate::y");
        assert!(!t.contains(&Token::Ident("crate".into())), "{t:?}");
    }
}
