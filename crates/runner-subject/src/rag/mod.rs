//! RAG-lite: definitions of the identifiers a reviewed hunk uses, found in the repository at
//! the reviewed commit (never the working tree), for the review prompt.
//!
//! How it works, per language (Rust, Python, JavaScript/TypeScript, Go):
//! 1. the identifiers of the hunk's added and context lines, in order of first use, without
//!    keywords and common builtins;
//! 2. one `git grep -w -F` at the commit over that language's files for lines that mention
//!    any of them;
//! 3. each matching line is checked against the language's definition patterns (functions,
//!    methods, types, classes, traits, constants); definitions inside the reviewed lines are
//!    left out (the model already sees them);
//! 4. outside the reviewed files a definition must fit how the name is used: a function must
//!    be called (a local variable named like it is not it), a method called on some receiver
//!    (`x.push(`) is not guessed, and a name defined in more than two other files is
//!    ambiguous and skipped; Rust test modules and test files come last;
//! 5. one definition per identifier, in identifier order (a definition in the reviewed file
//!    first, then non-test code, then by path and line), up to the limit; each is cut from
//!    the file at the commit (`git show`), from its doc comment to the end of its block,
//!    capped in lines.
//!
//! Everything is deterministic for a given commit, so prompts (and cache keys) are stable.

pub(crate) mod lang;

pub use lang::Language;

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Version of the retrieval rules; part of a reviewer's fingerprint.
pub const RAG_VERSION: &str = "rag-lite-2";

/// Most identifiers looked up per request.
const MAX_IDENTIFIERS: usize = 200;
/// Most `git grep` lines examined per request.
const MAX_GREP_LINES: usize = 50_000;
/// Most doc-comment lines kept above a definition.
const MAX_DOC_LINES: usize = 6;
/// A name defined in more files than this (outside the reviewed ones) is too ambiguous.
const MAX_DEFINING_FILES: usize = 2;

/// Where a definition was seen: (file, line, kind).
type Candidate = (String, u32, &'static str);

/// One definition found for the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Definition {
    pub symbol: String,
    /// `function`, `method`, `type`, `class`, `trait`, `enum`, `constant`, `variable`, `macro`.
    pub kind: String,
    pub file: String,
    /// 1-based line of the definition.
    pub line: u32,
    /// 1-based last line included in `snippet`.
    pub end_line: u32,
    pub language: String,
    /// The definition's text at the commit, doc comment first, capped in lines.
    pub snippet: String,
    /// True when the snippet was cut at the line cap.
    pub truncated: bool,
}

/// What to look up.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub repo: &'a Path,
    pub commit: &'a str,
    /// The code that was reviewed, per file: (path, new-side text of added and context lines).
    pub code: Vec<(String, String)>,
    /// Reviewed new-side line spans (file, first, last), whose definitions are left out.
    pub exclude: Vec<(String, u32, u32)>,
    /// At most this many definitions; 0 disables retrieval.
    pub max_definitions: usize,
    /// At most this many lines per definition.
    pub max_lines: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum RagError {
    #[error("failed to run git in `{dir}`: {source}")]
    Spawn { dir: String, source: std::io::Error },
    #[error("`git {args}` failed in `{dir}`: {stderr}")]
    Git { dir: String, args: String, stderr: String },
}

/// Finds up to `max_definitions` definitions for the identifiers the code uses.
pub fn resolve(req: &Request<'_>) -> Result<Vec<Definition>, RagError> {
    if req.max_definitions == 0 {
        return Ok(Vec::new());
    }
    // Identifiers per language, in order of first use across the reviewed files.
    let mut by_lang: BTreeMap<Language, Vec<String>> = BTreeMap::new();
    let mut order: Vec<(Language, String)> = Vec::new();
    let mut usage: BTreeMap<(Language, String), lang::Usage> = BTreeMap::new();
    for (path, code) in &req.code {
        let Some(lang) = Language::from_path(path) else { continue };
        let ids = by_lang.entry(lang).or_default();
        for (id, u) in lang.usages(code) {
            if ids.len() >= MAX_IDENTIFIERS {
                break;
            }
            usage.entry((lang, id.clone())).or_default().merge_from(u);
            if !ids.contains(&id) {
                ids.push(id.clone());
                order.push((lang, id));
            }
        }
    }
    let reviewed_files: BTreeSet<&str> = req.code.iter().map(|(p, _)| p.as_str()).collect();
    let mut candidates: BTreeMap<(Language, String), Vec<Candidate>> = BTreeMap::new();
    for (lang, ids) in &by_lang {
        if ids.is_empty() {
            continue;
        }
        let wanted: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
        for (file, line, text) in grep(req.repo, req.commit, ids, lang.pathspecs())? {
            if Language::from_path(&file) != Some(*lang) {
                continue;
            }
            if req.exclude.iter().any(|(f, a, b)| f == &file && (*a..=*b).contains(&line)) {
                continue;
            }
            for (name, kind) in lang.definitions_on(&text) {
                if wanted.contains(name.as_str()) {
                    candidates.entry((*lang, name)).or_default().push((file.clone(), line, kind));
                }
            }
        }
    }
    let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut out = Vec::new();
    for (lang, id) in order {
        if out.len() >= req.max_definitions {
            break;
        }
        let Some(list) = candidates.get(&(lang, id.clone())) else { continue };
        let used = usage.get(&(lang, id.clone())).copied().unwrap_or_default();
        let in_reviewed = |c: &Candidate| reviewed_files.contains(c.0.as_str());
        let unique = list.iter().filter(|c| !in_reviewed(c)).map(|c| c.0.as_str()).collect::<BTreeSet<_>>().len() == 1;
        let mut fitting: Vec<(bool, Candidate)> = Vec::new();
        for c in list.iter().filter(|c| in_reviewed(c) || used.fits(c.2, lang, unique)) {
            let text = files.entry(c.0.clone()).or_insert_with(|| show(req.repo, req.commit, &c.0).ok());
            let test = is_test_path(&c.0) || text.as_deref().is_some_and(|t| lang == Language::Rust && in_rust_test_module(t, c.1));
            fitting.push((test, c.clone()));
        }
        let other_files: BTreeSet<&str> = fitting.iter().filter(|(_, c)| !in_reviewed(c)).map(|(_, c)| c.0.as_str()).collect();
        if !fitting.iter().any(|(_, c)| in_reviewed(c)) && other_files.len() > MAX_DEFINING_FILES {
            continue;
        }
        // A definition in a reviewed file first, then non-test code, then path and line.
        fitting.sort_by(|(ta, a), (tb, b)| (!in_reviewed(a), *ta, &a.0, a.1).cmp(&(!in_reviewed(b), *tb, &b.0, b.1)));
        let Some((_, (file, line, kind))) = fitting.first().cloned() else { continue };
        let Some(text) = files.get(&file).cloned().flatten() else { continue };
        if let Some(def) = cut(&text, lang, &id, kind, &file, line, req.max_lines) {
            out.push(def);
        }
    }
    Ok(out)
}

/// Cuts a definition out of a file: doc comment and decorators above it, then its block.
fn cut(text: &str, lang: Language, symbol: &str, kind: &str, file: &str, line: u32, max_lines: usize) -> Option<Definition> {
    let lines: Vec<&str> = text.lines().collect();
    let start = (line as usize).checked_sub(1)?;
    if start >= lines.len() {
        return None;
    }
    let mut doc_start = start;
    while doc_start > 0 && start - doc_start < MAX_DOC_LINES && is_doc_line(lang, lines[doc_start - 1]) {
        doc_start -= 1;
    }
    let max_lines = max_lines.max(1);
    let natural_end = lang.block_end(&lines, start, usize::MAX / 2);
    let end = lang.block_end(&lines, start, max_lines);
    let truncated = natural_end > end;
    let mut snippet = lines[doc_start..=end].join("\n");
    if truncated {
        snippet.push_str(&format!("\n… ({} more lines)", natural_end - end));
    }
    Some(Definition {
        symbol: symbol.to_string(),
        kind: kind.to_string(),
        file: file.to_string(),
        line,
        end_line: end as u32 + 1,
        language: lang.as_str().to_string(),
        snippet,
        truncated,
    })
}

/// Test code by its path: `tests/`, `test_x.py`, `x_test.go`, `x.test.ts`, `x.spec.js`, ….
fn is_test_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path.starts_with("tests/")
        || path.contains("/tests/")
        || path.starts_with("test/")
        || path.contains("/test/")
        || name.starts_with("test_")
        || name.contains("_test.")
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// Whether 1-based `line` of a Rust file lies after its `#[cfg(test)]`.
fn in_rust_test_module(text: &str, line: u32) -> bool {
    text.lines().take(line as usize).any(|l| l.trim_start().starts_with("#[cfg(test)]"))
}

fn is_doc_line(lang: Language, line: &str) -> bool {
    let t = line.trim_start();
    match lang {
        Language::Rust => t.starts_with("///") || t.starts_with("#[") || t.starts_with("//!"),
        Language::Python => t.starts_with('@') || t.starts_with('#'),
        Language::JavaScript => t.starts_with("//") || t.starts_with("/*") || t.starts_with('*') || t.starts_with('@'),
        Language::Go => t.starts_with("//"),
    }
}

fn git_command(repo: &Path) -> Command {
    crate::subject::git::command(repo)
}

/// Lines of the commit's files (selected by `pathspecs`) that mention any identifier as a
/// whole word: (path, 1-based line, text).
fn grep(repo: &Path, commit: &str, ids: &[String], pathspecs: &[&str]) -> Result<Vec<(String, u32, String)>, RagError> {
    let mut cmd = git_command(repo);
    cmd.args(["grep", "-n", "-z", "-I", "-w", "-F", "--no-color"]);
    for id in ids {
        cmd.arg("-e").arg(id);
    }
    cmd.arg(commit).arg("--").args(pathspecs);
    let out = cmd.output().map_err(|source| RagError::Spawn { dir: repo.display().to_string(), source })?;
    // Exit status 1 means no line matched.
    if !out.status.success() && out.status.code() != Some(1) {
        return Err(RagError::Git { dir: repo.display().to_string(), args: "grep".into(), stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let prefix = format!("{commit}:");
    let mut lines = Vec::new();
    // With -z each record is `commit:path\0line\0text\n`.
    for record in stdout.split('\n').take(MAX_GREP_LINES) {
        let mut parts = record.splitn(3, '\0');
        let (Some(path), Some(line), Some(text)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let path = path.strip_prefix(&prefix).unwrap_or(path);
        if let Ok(line) = line.parse::<u32>() {
            lines.push((path.to_string(), line, text.to_string()));
        }
    }
    Ok(lines)
}

/// A file's text at the commit.
fn show(repo: &Path, commit: &str, path: &str) -> Result<String, RagError> {
    let spec = format!("{commit}:{path}");
    let out = git_command(repo).args(["show", &spec]).output().map_err(|source| RagError::Spawn { dir: repo.display().to_string(), source })?;
    if !out.status.success() {
        return Err(RagError::Git {
            dir: repo.display().to_string(),
            args: format!("show {spec}"),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn run_git(dir: &Path, args: &[&str]) -> String {
        let out =
            git_command(dir).args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]).args(args).output().expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A repository with one commit holding `files`; returns (dir guard, path, head sha).
    fn repo(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, String) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_path_buf();
        run_git(&path, &["init", "-q"]);
        for (name, text) in files {
            let p = path.join(name);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        run_git(&path, &["add", "-A"]);
        run_git(&path, &["commit", "-q", "-m", "c"]);
        let head = run_git(&path, &["rev-parse", "HEAD"]);
        (dir, path, head)
    }

    fn request<'a>(repo: &'a Path, commit: &'a str, file: &str, code: &str, n: usize) -> Request<'a> {
        Request { repo, commit, code: vec![(file.to_string(), code.to_string())], exclude: Vec::new(), max_definitions: n, max_lines: 20 }
    }

    #[test]
    fn rust_definitions_from_other_files_at_the_commit() {
        let (_d, path, head) = repo(&[
            (
                "src/limits.rs",
                "/// Largest page.\npub const MAX_LIMIT: u32 = 100;\n\n/// Clamps a limit.\npub fn clamp_limit(n: u32) -> u32 {\n    n.min(MAX_LIMIT)\n}\n",
            ),
            ("src/page.rs", "pub struct Page {\n    pub size: u32,\n}\n"),
        ]);
        // Written after the commit: must not be seen.
        std::fs::write(path.join("src/limits.rs"), "pub fn clamp_limit() {}\n").expect("write");
        let defs = resolve(&request(&path, &head, "src/api.rs", "let p = Page { size: clamp_limit(raw) };", 10)).expect("resolve");
        let names: Vec<&str> = defs.iter().map(|d| d.symbol.as_str()).collect();
        assert_eq!(names, vec!["Page", "clamp_limit"]);
        assert_eq!(defs[1].file, "src/limits.rs");
        assert_eq!(defs[1].line, 5);
        assert_eq!(defs[1].kind, "function");
        assert_eq!(defs[1].snippet, "/// Clamps a limit.\npub fn clamp_limit(n: u32) -> u32 {\n    n.min(MAX_LIMIT)\n}");
        assert_eq!(defs[0].snippet, "pub struct Page {\n    pub size: u32,\n}");
    }

    #[test]
    fn python_definitions_and_the_limit() {
        let (_d, path, head) =
            repo(&[("calc.py", "import math\n\n\nclass Stats:\n    pass\n\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n\n\nTOLERANCE = 1e-9\n")]);
        let code = "    s = Stats()\n    return mean(values) < TOLERANCE";
        let all = resolve(&request(&path, &head, "report.py", code, 10)).expect("resolve");
        assert_eq!(all.iter().map(|d| d.symbol.as_str()).collect::<Vec<_>>(), vec!["Stats", "mean", "TOLERANCE"]);
        assert_eq!(all[1].snippet, "def mean(xs):\n    return sum(xs) / len(xs)");
        assert_eq!(all[2].snippet, "TOLERANCE = 1e-9");
        let two = resolve(&request(&path, &head, "report.py", code, 2)).expect("resolve");
        assert_eq!(two.len(), 2);
        assert!(resolve(&request(&path, &head, "report.py", code, 0)).expect("resolve").is_empty(), "0 disables RAG");
    }

    #[test]
    fn javascript_and_typescript_definitions_skip_the_reviewed_lines() {
        let src = "export const DEFAULT_LIMIT = 20;\n\nexport function normalizeLimit(value) {\n  if (typeof value !== 'number') {\n    return DEFAULT_LIMIT;\n  }\n  return value;\n}\n\nexport function parseLimit(raw) {\n  return normalizeLimit(Number(raw));\n}\n";
        let (_d, path, head) = repo(&[("src/limits.mjs", src), ("src/types.ts", "export interface Window {\n  offset: number;\n}\n")]);
        let mut req =
            request(&path, &head, "src/limits.mjs", "export function parseLimit(raw) {\n  return normalizeLimit(Number(raw));\n}\nconst w: Window = x;", 10);
        req.exclude = vec![("src/limits.mjs".to_string(), 10, 12)];
        let defs = resolve(&req).expect("resolve");
        let names: Vec<&str> = defs.iter().map(|d| d.symbol.as_str()).collect();
        assert_eq!(names, vec!["normalizeLimit", "Window"], "parseLimit is defined in the reviewed lines");
        assert_eq!(defs[0].line, 3);
        assert!(defs[0].snippet.ends_with("return value;\n}"), "{}", defs[0].snippet);
        assert_eq!(defs[1].file, "src/types.ts");
    }

    #[test]
    fn go_definitions_with_line_cap() {
        let body: String = (0..30).map(|i| format!("\tx{i} := {i}\n")).collect();
        let src = format!("package api\n\n// Client talks to the server.\ntype Client struct {{\n\tURL string\n}}\n\n// Do sends a request.\nfunc (c *Client) Do(path string) error {{\n{body}\treturn nil\n}}\n");
        let (_d, path, head) = repo(&[("api/client.go", &src)]);
        let defs = resolve(&request(&path, &head, "cmd/main.go", "c := &api.Client{URL: u}\nerr := c.Do(\"/x\")", 5)).expect("resolve");
        assert_eq!(defs.iter().map(|d| d.symbol.as_str()).collect::<Vec<_>>(), vec!["Client", "Do"]);
        assert!(defs[0].snippet.starts_with("// Client talks to the server.\ntype Client struct {"));
        assert!(defs[1].truncated);
        assert!(defs[1].snippet.contains("… ("), "{}", defs[1].snippet);
        assert_eq!(defs[1].end_line - defs[1].line + 1, 20);
    }

    #[test]
    fn definitions_must_fit_how_names_are_used() {
        let (_d, path, head) = repo(&[
            ("src/a.rs", "pub fn reviewer() {}\npub fn push(x: u32) {}\npub fn new() -> u32 { 1 }\npub fn run() {}\n"),
            ("src/b.rs", "pub fn new() -> u32 { 2 }\n"),
            ("src/c.rs", "pub fn new() -> u32 { 3 }\n#[cfg(test)]\nmod tests {\n    pub fn helper() {}\n}\n"),
            ("tests/it.rs", "pub fn run() {}\n"),
            ("src/z.rs", "pub fn helper() {}\n"),
        ]);
        let code = "let reviewer = 1;\nitems.push(reviewer);\nlet x = Thing::new();\nrun();\nhelper();";
        let defs = resolve(&request(&path, &head, "src/main.rs", code, 10)).expect("resolve");
        let found: Vec<(&str, &str)> = defs.iter().map(|d| (d.symbol.as_str(), d.file.as_str())).collect();
        // `reviewer` is a local, `push` a method on an unknown receiver, `new` is defined in
        // three files; `run` prefers non-test code, `helper` the non-test-module definition.
        assert_eq!(found, vec![("run", "src/a.rs"), ("helper", "src/z.rs")]);
        // In the reviewed file itself every definition counts.
        let mut same = request(&path, &head, "src/a.rs", "let f = reviewer;", 10);
        same.exclude = vec![("src/a.rs".into(), 4, 4)];
        assert_eq!(resolve(&same).expect("resolve").iter().map(|d| d.symbol.as_str()).collect::<Vec<_>>(), vec!["reviewer"]);
    }

    #[test]
    fn unknown_languages_and_no_matches_give_nothing() {
        let (_d, path, head) = repo(&[("README.md", "fn nothing() {}\n"), ("a.rs", "fn other() {}\n")]);
        assert!(resolve(&request(&path, &head, "notes.txt", "nothing", 5)).expect("resolve").is_empty());
        assert!(resolve(&request(&path, &head, "b.rs", "missing_symbol()", 5)).expect("resolve").is_empty());
    }
}
