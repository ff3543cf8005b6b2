//! The module layers of `src/`: every `crate::<module>` a top-level module names must lie in
//! a lower layer (or be an allowed same-layer import), so no import runs upward and the
//! module graph stays acyclic. ARCHITECTURE.md's "Layers" section is this table in words.
//!
//! Test code is exempt: files that are `#[cfg(test)]` modules and `#[cfg(test)] mod … { }`
//! blocks may reach up (a reviewer's tests parse whole manifests; the no-leak test drives the
//! reviewer templates over the bundled corpus).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom to top; a module may import the modules of the layers before its own.
const LAYERS: &[&[&str]] = &[
    &["finding", "matrix", "config", "text", "stats", "bounded", "scratch"],
    &["subject", "rag"],
    &["ground_truth"],
    &["smells"],
    &["reviewer", "cache"],
    &["judge"],
    &["analysis"],
    &["study"],
    &["manifest"],
    &["plan"],
    &["exec"],
    &["scoring"],
    &["report"],
    &["init"],
    &["error"],
    &["experiment"],
    &["lib", "main", "cli"],
];

/// Imports allowed within one layer: (importer, imported).
const SAME_LAYER: &[(&str, &str)] = &[("rag", "subject"), ("cache", "reviewer"), ("scratch", "bounded")];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The byte offset just past the `}` closing the block whose `{` is at `open`, skipping
/// comments, strings (raw ones too) and char literals; the end of the text if unclosed.
fn block_end(text: &[u8], open: usize) -> usize {
    let (mut depth, mut i) = (0usize, open);
    while i < text.len() {
        match text[i] {
            b'/' if text.get(i + 1) == Some(&b'/') => {
                while i < text.len() && text[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if text.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < text.len() && !(text[i] == b'*' && text[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'r' if matches!(text.get(i + 1), Some(b'#') | Some(b'"')) && !text[i.saturating_sub(1)].is_ascii_alphanumeric() => {
                let mut j = i + 1;
                let mut hashes = 0;
                while text.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if text.get(j) == Some(&b'"') {
                    let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
                    j += 1;
                    while j < text.len() && !text[j..].starts_with(&close) {
                        j += 1;
                    }
                    i = j + close.len() - 1;
                }
            }
            b'"' => {
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    if text[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            // A char literal (`'{'`, `'\''`), not a lifetime.
            b'\'' if text.get(i + 2) == Some(&b'\'') => i += 2,
            b'\'' if text.get(i + 1) == Some(&b'\\') => {
                i += 2;
                while i < text.len() && text[i] != b'\'' {
                    i += 1;
                }
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    text.len()
}

/// `text` without its `#[cfg(test)] mod name { … }` blocks.
fn without_test_blocks(text: &str) -> String {
    let block = regex::Regex::new(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+\w+\s*\{").expect("regex");
    let mut out = String::new();
    let mut rest = 0;
    for m in block.find_iter(text) {
        if m.start() < rest {
            continue;
        }
        out.push_str(&text[rest..m.start()]);
        rest = block_end(text.as_bytes(), m.end() - 1);
    }
    out.push_str(&text[rest.min(text.len())..]);
    out
}

#[test]
fn no_module_imports_a_higher_layer() {
    let src = crate::project_root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let top_modules: BTreeSet<String> = files
        .iter()
        .map(|f| {
            f.strip_prefix(&src).expect("under src").components().next().expect("a component").as_os_str().to_string_lossy().trim_end_matches(".rs").to_string()
        })
        .collect();
    for m in &top_modules {
        assert!(layer_of(m).is_some(), "top-level module `{m}` has no layer in tests/it/layers.rs: add it to LAYERS");
    }

    // Files that are `#[cfg(test)] mod name;` of the file that declares them.
    let test_decl = regex::Regex::new(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+(\w+)\s*;").expect("regex");
    let mut test_files: BTreeSet<PathBuf> = BTreeSet::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        let stem = f.file_stem().expect("stem").to_string_lossy().to_string();
        let dir = if matches!(stem.as_str(), "mod" | "lib" | "main") { f.parent().expect("parent").to_path_buf() } else { f.with_extension("") };
        for c in test_decl.captures_iter(&text) {
            test_files.insert(dir.join(format!("{}.rs", &c[1])));
            test_files.insert(dir.join(&c[1]).join("mod.rs"));
        }
    }
    // A test module's own submodules (`score/tests.rs` of a test file) are test code too.
    let is_test = |f: &Path| test_files.iter().any(|t| f == t || t.file_name().is_some_and(|n| n == "mod.rs") && t.parent().is_some_and(|d| f.starts_with(d)));

    let reference = regex::Regex::new(r"\bcrate::(\w+)|\bcrate::\{([^}]*)\}").expect("regex");
    let mut offenders = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files.iter().filter(|f| !is_test(f)) {
        let rel = f.strip_prefix(&src).expect("under src");
        let module = rel.components().next().expect("a component").as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        let own = layer_of(&module).expect("checked above");
        let text = without_test_blocks(&std::fs::read_to_string(f).expect("readable"));
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for c in reference.captures_iter(line) {
                let names: Vec<String> = match (c.get(1), c.get(2)) {
                    (Some(one), _) => vec![one.as_str().to_string()],
                    (None, Some(group)) => {
                        group.as_str().split(',').filter_map(|p| p.trim().split("::").next().map(|s| s.trim().to_string())).filter(|s| !s.is_empty()).collect()
                    }
                    _ => Vec::new(),
                };
                for target in names.into_iter().filter(|t| *t != module && top_modules.contains(t)) {
                    graph.entry(module.clone()).or_default().insert(target.clone());
                    let theirs = layer_of(&target).expect("checked above");
                    if theirs > own || (theirs == own && !SAME_LAYER.contains(&(module.as_str(), target.as_str()))) {
                        offenders.push(format!(
                            "src/{}:{}: `{module}` (layer {own}) imports `{target}` (layer {theirs}): {}",
                            rel.display(),
                            n + 1,
                            line.trim()
                        ));
                    }
                }
            }
        }
    }
    let table: Vec<String> = graph.iter().map(|(m, ts)| format!("{m} -> {}", ts.iter().cloned().collect::<Vec<_>>().join(" "))).collect();
    assert!(
        offenders.is_empty(),
        "imports that run upward (see ARCHITECTURE.md, Layers):\n{}\n\nthe module graph:\n{}",
        offenders.join("\n"),
        table.join("\n")
    );
}

#[test]
fn test_blocks_are_cut_at_their_closing_brace() {
    let text = "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    fn f() { let s = \"}\"; let c = '{'; let r = r#\"{\"#; }\n}\nfn g() { crate::c::h(); }\n";
    let kept = without_test_blocks(text);
    assert!(kept.contains("crate::a") && kept.contains("crate::c"), "{kept}");
    assert!(!kept.contains("crate::b"), "{kept}");
}
