//! The layout the Design section of docs/development.md describes, checked on the source
//! itself: no import cycles among `src/`'s modules (nor among the files of one folder), and
//! adapters that depend only on the model and the I/O helpers, never on another agent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| e.into_path())
        .collect()
}

/// The code of a file without its unit-test modules, which may use anything.
fn code(path: &Path) -> String {
    let mut text = std::fs::read_to_string(path).unwrap();
    while let Some(start) = text.find("#[cfg(test)]") {
        let Some(open) = text[start..].find('{').map(|i| start + i) else {
            break;
        };
        let mut depth = 0;
        let mut end = text.len();
        for (i, c) in text[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        text.replace_range(start..end, "");
    }
    text
}

/// Every name that follows `prefix` in `text`, also inside `prefix{a, b::c}` groups.
fn names_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (i, _) in text.match_indices(prefix) {
        let rest = &text[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let name = ident(item.trim());
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == n) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_string());
        for d in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(d, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for n in edges.keys() {
        if let Some(c) = visit(n, edges, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn src_modules_import_each_other_one_way() {
    let src = root().join("src");
    let top: BTreeSet<String> = std::fs::read_dir(&src)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| {
            e.file_name()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .filter(|n| n != "lib" && n != "main")
        .collect();
    assert!(top.contains("model") && top.contains("plan"), "{top:?}");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // Sibling files of one folder, e.g. plan::shape -> plan::calls.
    let mut siblings: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap();
        let module = rel.iter().next().unwrap().to_string_lossy();
        let module = module.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = code(&file);
        for used in names_after(&text, "crate::") {
            if used != module && top.contains(&used) {
                edges.entry(module.clone()).or_default().insert(used);
            }
        }
        if rel.components().count() == 2 {
            let stem = rel.file_stem().unwrap().to_string_lossy().to_string();
            if stem != "mod" {
                let mut used_names = names_after(&text, "super::");
                used_names.extend(names_after(&text, &format!("crate::{module}::")));
                for used in used_names {
                    let sibling = src.join(&module).join(format!("{used}.rs"));
                    if used != stem && sibling.exists() {
                        siblings
                            .entry(format!("{module}::{stem}"))
                            .or_default()
                            .insert(format!("{module}::{used}"));
                    }
                }
            }
        }
    }
    assert!(edges.len() > 8, "too few modules seen: {edges:?}");
    assert_eq!(find_cycle(&edges), None, "import cycle among src/ modules");
    assert_eq!(find_cycle(&siblings), None, "import cycle within a folder");
    // The pipeline's direction: the stages before rendering never use the later ones.
    for early in ["model", "select", "plan", "adapter", "verify"] {
        for late in ["commands", "render", "cli"] {
            assert!(
                !edges.get(early).is_some_and(|d| d.contains(late)),
                "{early} uses {late}"
            );
        }
    }
}

#[test]
fn adapters_depend_only_on_the_model_and_io_helpers() {
    let adapters = root().join("adapters");
    let agents: Vec<String> = session_relay::adapters::names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    const ALLOWED: &[&str] = &[
        "adapter", "model", "jsonl", "text", "fsutil", "git", "tokens", "adapters",
    ];
    let mut checked = 0;
    for file in rust_files(&adapters) {
        let rel = file.strip_prefix(&adapters).unwrap();
        let own = rel.iter().next().unwrap().to_string_lossy().to_string();
        let text = code(&file);
        for used in names_after(&text, "crate::") {
            assert!(
                ALLOWED.contains(&used.as_str()),
                "{} uses crate::{used}",
                file.display()
            );
        }
        if own != "mod.rs" {
            for other in agents.iter().filter(|a| **a != own) {
                for pat in [
                    format!("adapters::{other}"),
                    format!("super::super::{other}"),
                ] {
                    assert!(
                        !text.contains(&pat),
                        "{} reaches into the {other} adapter",
                        file.display()
                    );
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 2 * agents.len(), "only {checked} adapter files");
}

/// Within an adapter's folder too, files import each other one way: what several of them read
/// (the agent's record types, its store's layout) lives below them all, never in one of them.
/// A nested file (`read/fast.rs`) counts as part of its parent (`read`).
#[test]
fn an_adapters_files_import_each_other_one_way() {
    let adapters = root().join("adapters");
    let mut checked = 0;
    for agent in session_relay::adapters::names() {
        let dir = adapters.join(agent);
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in rust_files(&dir) {
            let rel = file.strip_prefix(&dir).unwrap();
            let own = rel.iter().next().unwrap().to_string_lossy();
            let own = own.trim_end_matches(".rs").to_string();
            if own == "mod" {
                continue;
            }
            let text = code(&file);
            // From a nested file, `super::` is its parent, and `super::super::` the folder.
            let prefix = if rel.components().count() > 1 {
                "super::super::"
            } else {
                "super::"
            };
            let mut used = names_after(&text, prefix);
            used.extend(names_after(&text, &format!("crate::adapters::{agent}::")));
            for u in used {
                let sibling = dir.join(format!("{u}.rs")).exists() || dir.join(&u).is_dir();
                if u != own && sibling {
                    edges.entry(own.clone()).or_default().insert(u);
                }
            }
        }
        assert_eq!(
            find_cycle(&edges),
            None,
            "import cycle in adapters/{agent}/"
        );
        checked += 1;
    }
    assert_eq!(checked, session_relay::adapters::names().len());
}
