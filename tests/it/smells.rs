//! Smells from the real analyzers (`scripts/analyzers/install.sh` installs them into
//! `.tools/`; without them this fails with the install message): a real git repository
//! whose change touches a Python, a JavaScript and a Rust file, each with analyzer findings
//! on lines the change adds and on lines it leaves alone, and analyzer configuration in
//! the repository and above the scratch directory that none of them may read.

use crate::{git, project_root};
use runner::smells::{self, AnalyzerKind, AnalyzerSet, Smell};
use runner::subject::{self, SubjectSource, SubjectSpec};
use std::path::Path;

const BASE: &[(&str, &str)] = &[
    ("calc.py", "import os\n\n\ndef add(a, b):\n    return a + b\n"),
    ("web/app.js", "function f(a) {\n  return a;\n}\nmodule.exports = f\n"),
    ("src/lib.rs", "pub fn f(x: i32) -> i32 {\n    let a = 1;\n    x\n}\n"),
    ("old.py", "import sys\n"),
    // The repository's own analyzer configuration, which must not apply.
    ("ruff.toml", "[lint]\nignore = [\"F401\", \"F841\"]\n"),
    ("pyproject.toml", "[tool.ruff.lint]\nignore = [\"F401\", \"F841\"]\n"),
    (".jshintrc", "{\"asi\": true, \"unused\": false, \"undef\": false}\n"),
    (".jshintignore", "**\n"),
    ("package.json", "{\"type\": \"module\", \"jshintConfig\": {\"asi\": true}}\n"),
];

/// A scratch directory under one whose files would silence the analyzers if they were read.
fn hostile_scratch(dir: &Path) -> std::path::PathBuf {
    let above = dir.join("above");
    std::fs::create_dir_all(&above).expect("mkdir");
    for (name, text) in &BASE[4..] {
        std::fs::write(above.join(name), text).expect("write");
    }
    std::fs::write(above.join(".gitignore"), "*\n").expect("write");
    std::fs::write(above.join("clippy.toml"), "disallowed-names = [\"b\", \"v\"]\n").expect("write");
    above.join("scratch")
}

const HEAD: &[(&str, &str)] = &[
    // line 1 (`os` unused) is not changed; 2 and 6 are added
    ("calc.py", "import os\nimport json\n\n\ndef add(a, b):\n    unused = 1\n    return a + b\n"),
    // line 5 (missing semicolon) is not changed; 2 and 3 are added
    ("web/app.js", "function f(a) {\n  var b = 2\n  return a + missing;\n}\nmodule.exports = f\n"),
    // line 2 (`a` unused) is not changed; 3 and 4 are added
    ("src/lib.rs", "pub fn f(x: i32) -> i32 {\n    let a = 1;\n    let b = 2;\n    let v: Vec<i32> = [x].iter().map(|y| *y).collect();\n    v[0]\n}\n"),
    ("README.md", "not analyzed\n"),
];

fn subject_of(dir: &Path) -> subject::Subject {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    let write = |files: &[(&str, &str)]| {
        for (path, text) in files {
            let p = repo.join(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
    };
    write(BASE);
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "base"]);
    write(HEAD);
    std::fs::remove_file(repo.join("old.py")).expect("rm");
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "head"]);
    let base_sha = git(&repo, &["rev-parse", "HEAD~1"]);
    let head_sha = git(&repo, &["rev-parse", "HEAD"]);
    // The work tree no longer matters: smells come from the head commit.
    std::fs::write(repo.join("calc.py"), "x = (\n").expect("dirty work tree");
    let spec = SubjectSpec { id: "HEAD~1".into(), identity: "test".into(), source: SubjectSource::Git { repo, base_sha, head_sha }, holdout: false };
    subject::materialize(&spec, &dir.join("work")).expect("materialized")
}

fn resolve() -> AnalyzerSet {
    AnalyzerSet::resolve(&AnalyzerKind::ALL, &project_root().join(".tools")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
#[ignore = "needs the analyzers of scripts/analyzers/install.sh; .ci/run installs them and runs this with --ignored"]
fn real_analyzers_keep_only_smells_on_changed_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let subject = subject_of(dir.path());
    let set = resolve();
    let id = set.identity();
    assert_eq!(id["ruff"], format!("ruff {}", smells::RUFF_VERSION));
    assert!(id["jshint"].as_str().expect("jshint").starts_with(&format!("jshint v{} (node v", smells::JSHINT_VERSION)), "{id}");
    let rust = if id.get("clippy").is_some() { "clippy" } else { "rustc" };
    assert!(id[rust].as_str().expect("rust").starts_with(rust), "{id}");
    assert!(id["settings"].is_string(), "{id}");

    let found = smells::analyze(&set, &subject, &hostile_scratch(dir.path())).expect("analyzed");
    let changed = smells::changed_files(&subject);
    for smell in &found {
        let file = changed.iter().find(|f| f.path == smell.path).expect("a changed file");
        assert!(file.lines.contains(&smell.line), "{smell:?} is not on a changed line");
    }
    let s = |analyzer: &str, path: &str, line: u32, code: &str, message: &str| Smell {
        analyzer: analyzer.into(),
        path: path.into(),
        line,
        code: code.into(),
        message: message.into(),
    };
    let mut expected = vec![
        s("ruff", "calc.py", 2, "F401", "`json` imported but unused"),
        s("ruff", "calc.py", 6, "F841", "Local variable `unused` is assigned to but never used"),
        s(rust, "src/lib.rs", 3, "unused_variables", "unused variable: `b`"),
    ];
    if rust == "clippy" {
        expected.push(s("clippy", "src/lib.rs", 4, "clippy::map_clone", "you are using an explicit closure for copying elements"));
    }
    expected.extend([
        s("jshint", "web/app.js", 2, "W033", "Missing semicolon."),
        s("jshint", "web/app.js", 2, "W098", "'b' is defined but never used."),
        s("jshint", "web/app.js", 3, "W117", "'missing' is not defined."),
    ]);
    assert_eq!(found, expected);
    assert_eq!(found[0].text(), "line 2, F401:\t`json` imported but unused");
}

#[test]
#[ignore = "needs the analyzers of scripts/analyzers/install.sh; .ci/run installs them and runs this with --ignored"]
fn real_analyzers_in_a_set_of_one_check_only_their_own_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let subject = subject_of(dir.path());
    let set = AnalyzerSet::resolve(&[AnalyzerKind::Ruff], &project_root().join(".tools")).unwrap_or_else(|e| panic!("{e}"));
    let only_ruff = smells::analyze(&set, &subject, &dir.path().join("scratch")).expect("analyzed");
    assert!(only_ruff.iter().all(|s| s.analyzer == "ruff" && s.path == "calc.py"), "{only_ruff:?}");
    assert_eq!(set.identity().as_object().expect("object").keys().collect::<Vec<_>>(), ["ruff", "settings"]);
}

#[test]
fn a_rust_file_that_reads_without_end_is_bounded_by_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &["commit", "--quiet", "--allow-empty", "-m", "base"]);
    std::fs::write(repo.join("zero.rs"), "pub static Z: &[u8] = include_bytes!(\"/dev/zero\");\n\npub fn f() {\n    let unused = 1;\n}\n").expect("write");
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "head"]);
    let (base_sha, head_sha) = (git(&repo, &["rev-parse", "HEAD~1"]), git(&repo, &["rev-parse", "HEAD"]));
    let spec = SubjectSpec { id: "b".into(), identity: "t".into(), source: SubjectSource::Git { repo, base_sha, head_sha }, holdout: false };
    let subject = subject::materialize(&spec, &dir.path().join("work")).expect("materialized");
    let limits = smells::run::Limits { memory_bytes: 1024 * 1024 * 1024, ..Default::default() };
    let set = AnalyzerSet::resolve(&[AnalyzerKind::Rust], &project_root().join(".tools")).unwrap_or_else(|e| panic!("{e}")).with_limits(limits);
    let found = smells::analyze(&set, &subject, &dir.path().join("scratch")).expect("rustc's allocation failure is one of its errors");
    let codes: Vec<(u32, &str)> = found.iter().map(|s| (s.line, s.code.as_str())).collect();
    assert_eq!(codes, [(4, "unused_variables")]);
}
