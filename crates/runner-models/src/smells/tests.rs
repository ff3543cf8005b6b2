//! Unit tests of smells: names, the changed-line filter, paths, the missing-analyzer error,
//! identity, and `analyze` against small stand-in analyzers (real child processes) on a
//! real git repository. The real analyzers run in `tests/it/smells.rs`.

use super::*;
use crate::subject::diff;

fn sh_analyzer(kind: AnalyzerKind, name: &'static str, script: &str) -> Analyzer {
    // `sh -c SCRIPT sh ARGS…`: the script sees runner's arguments as "$@".
    Analyzer { kind, name, program: "/bin/sh".into(), lead: vec!["-c".into(), script.into(), "sh".into()], version: format!("{name} 0.0.0") }
}

fn set(analyzers: Vec<Analyzer>) -> AnalyzerSet {
    AnalyzerSet { analyzers, limits: Limits::default(), pinned: false }
}

/// A repository with `files` committed at base, then `changes` at head (a `None` deletes).
fn repo_subject(dir: &Path, base: &[(&str, &str)], head: &[(&str, Option<&str>)]) -> Subject {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    let g = |args: &[&str]| {
        git::git_with_env(&repo, args, &[("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@e"), ("GIT_COMMITTER_NAME", "t"), ("GIT_COMMITTER_EMAIL", "t@e")])
            .expect("git")
    };
    g(&["init", "--quiet", "--initial-branch=main"]);
    for (path, text) in base {
        let p = repo.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    g(&["add", "--all"]);
    g(&["commit", "--quiet", "--allow-empty", "-m", "base"]);
    for (path, text) in head {
        let p = repo.join(path);
        match text {
            Some(text) => {
                std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
                std::fs::write(p, text).expect("write");
            }
            None => std::fs::remove_file(p).expect("rm"),
        }
    }
    g(&["add", "--all"]);
    g(&["commit", "--quiet", "-m", "head"]);
    let shas = git::resolve_commits(&repo, &["HEAD~1", "HEAD"]).expect("rev-parse");
    let raw = git::diff_bytes(&repo, &shas[0], &shas[1]).expect("diff");
    let parsed = diff::parse(&raw);
    Subject {
        id: "s".into(),
        repo_dir: repo,
        base_sha: shas[0].clone(),
        head_sha: shas[1].clone(),
        diff: String::from_utf8_lossy(&raw).into_owned(),
        files: parsed.files,
        stet_error: None,
        review_task: None,
        spec: None,
    }
}

#[test]
fn manifest_names_parse_and_extensions_pick_the_analyzer() {
    assert_eq!(AnalyzerKind::parse("ruff").expect("ruff"), AnalyzerKind::Ruff);
    assert_eq!(AnalyzerKind::parse("jshint").expect("jshint"), AnalyzerKind::Jshint);
    for rust in ["clippy", "rustc", "rust"] {
        assert_eq!(AnalyzerKind::parse(rust).expect("rust"), AnalyzerKind::Rust);
    }
    for kind in AnalyzerKind::ALL {
        assert_eq!(AnalyzerKind::parse(kind.as_str()).expect("round trip"), kind);
    }
    let err = AnalyzerKind::parse("eslint").expect_err("unknown");
    assert_eq!(err.to_string(), "unknown analyzer `eslint`: expected one of ruff, jshint, clippy, rustc");
    assert_eq!(AnalyzerKind::for_path("a/b.py"), Some(AnalyzerKind::Ruff));
    for js in ["x.js", "x.mjs", "dir/x.cjs"] {
        assert_eq!(AnalyzerKind::for_path(js), Some(AnalyzerKind::Jshint));
    }
    assert_eq!(AnalyzerKind::for_path("src/lib.rs"), Some(AnalyzerKind::Rust));
    for none in ["README.md", "Makefile", "x.pyc", "x.ts", ".py"] {
        assert_eq!(AnalyzerKind::for_path(none), None, "{none}");
    }
}

#[test]
fn changed_lines_are_the_added_lines_of_files_that_remain() {
    let text = "\
diff --git a/a.py b/a.py
index 1..2 100644
--- a/a.py
+++ b/a.py
@@ -1,4 +1,5 @@
 one
-two
+TWO
+extra
 three
 four
@@ -10,2 +11,2 @@ def f():
-    old
+    new
     same
diff --git a/gone.py b/gone.py
deleted file mode 100644
index 3..0
--- a/gone.py
+++ /dev/null
@@ -1,2 +0,0 @@
-x
-y
diff --git a/new.js b/new.js
new file mode 100644
index 0..4
--- /dev/null
+++ b/new.js
@@ -0,0 +1,2 @@
+var a = 1;
+var b = 2;
diff --git a/trim.rs b/trim.rs
index 5..6 100644
--- a/trim.rs
+++ b/trim.rs
@@ -3,2 +2,0 @@
-fn a() {}
-fn b() {}
";
    let files = files_of(&diff::parse(text.as_bytes()).files);
    let lines = |v: &[u32]| v.iter().copied().collect::<BTreeSet<u32>>();
    assert_eq!(
        files,
        vec![
            ChangedFile { path: "a.py".into(), lines: lines(&[2, 3, 11]) },
            ChangedFile { path: "new.js".into(), lines: lines(&[1, 2]) },
            ChangedFile { path: "trim.rs".into(), lines: lines(&[]) },
        ]
    );
}

#[test]
fn paths_that_would_leave_the_directory_are_refused() {
    for ok in ["a.py", "dir/sub/a.py", "-rf.py", "a b.py"] {
        assert!(safe_relative(ok).is_some(), "{ok}");
    }
    for bad in ["", "../a.py", "dir/../../a.py", "/etc/passwd.py", "./a.py", "dir/./a.py", "dir//a.py", "dir/", ".git/x.py", "a/.GIT/hooks.py", "a\\b.py"] {
        assert!(safe_relative(bad).is_none(), "{bad}");
    }
    let root = Path::new("/s/files");
    assert_eq!(relative_to("./dir/a.py", root, root).as_deref(), Some("dir/a.py"));
    assert_eq!(relative_to("/s/files/dir/a.py", root, Path::new("/x")).as_deref(), Some("dir/a.py"));
    assert_eq!(relative_to("/real/files/a.py", root, Path::new("/real/files")).as_deref(), Some("a.py"));
    assert_eq!(relative_to("/elsewhere/a.py", root, root), None);
}

#[test]
fn a_missing_analyzer_names_the_install_command_and_the_package() {
    let empty = tempfile::tempdir().expect("tempdir");
    let nothing = Some(OsStr::new(""));
    let err = AnalyzerSet::resolve_in(&[AnalyzerKind::Ruff], empty.path(), nothing).expect_err("no ruff");
    let text = err.to_string();
    assert!(text.starts_with("ruff is not installed (looked in `"), "{text}");
    assert!(text.contains("venv/bin/ruff"), "{text}");
    assert!(text.contains(&format!("run `scripts/analyzers/install.sh` (it installs ruff=={RUFF_VERSION} from PyPI into .tools/venv)")), "{text}");
    let err = AnalyzerSet::resolve_in(&[AnalyzerKind::Jshint], empty.path(), nothing).expect_err("no jshint").to_string();
    assert!(err.contains("jshint is not installed") && err.contains(&format!("jshint@{JSHINT_VERSION} from npm")), "{err}");
    let err = AnalyzerSet::resolve_in(&[AnalyzerKind::Rust], empty.path(), nothing).expect_err("no rustc").to_string();
    assert!(err.starts_with("rustc is not installed") && err.contains("rustup"), "{err}");
}

#[test]
fn the_pins_are_the_install_scripts() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let script = std::fs::read_to_string(root.join("scripts/analyzers/install.sh")).expect("install.sh");
    assert!(script.contains(&format!("RUFF_VERSION=\"{RUFF_VERSION}\"")), "install.sh pins another ruff");
    assert!(script.contains(&format!("JSHINT_VERSION=\"{JSHINT_VERSION}\"")), "install.sh pins another jshint");
    let lock: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("scripts/analyzers/package-lock.json")).expect("lock")).expect("json");
    assert_eq!(lock["packages"]["node_modules/jshint"]["version"], JSHINT_VERSION);
}

#[test]
fn identity_holds_each_version_and_the_settings() {
    let a = set(vec![sh_analyzer(AnalyzerKind::Ruff, "ruff", "true"), sh_analyzer(AnalyzerKind::Rust, "clippy", "true")]);
    let id = a.identity();
    assert_eq!(id["ruff"], "ruff 0.0.0");
    assert_eq!(id["clippy"], "clippy 0.0.0");
    assert_eq!(id.as_object().expect("object").len(), 3);
    let settings = id["settings"].as_str().expect("settings").to_string();
    assert_eq!(settings.len(), 16);
    let b = set(vec![sh_analyzer(AnalyzerKind::Ruff, "ruff", "true")]);
    assert_ne!(b.identity()["settings"], settings, "the settings of the analyzers in the set");
}

#[test]
fn a_pinned_set_has_the_identity_of_the_found_one_and_runs_nothing() {
    let found = set(vec![sh_analyzer(AnalyzerKind::Ruff, "ruff", "true"), sh_analyzer(AnalyzerKind::Rust, "clippy", "true")]);
    let kinds = [AnalyzerKind::Rust, AnalyzerKind::Ruff];
    let versions: BTreeMap<String, String> = [("ruff", "ruff 0.0.0"), ("clippy", "clippy 0.0.0")].into_iter().map(|(k, v)| (k.into(), v.into())).collect();
    let pinned = AnalyzerSet::pinned(&kinds, &versions).expect("every kind pinned");
    assert_eq!(pinned.identity(), found.identity(), "the same keys without looking for any tool");
    assert!(pinned.is_pinned() && !found.is_pinned());
    assert_eq!(found.check_pins(&versions).ok(), Some(()));
    // Read back from an identity a key holds; one made under other settings is not accepted.
    let read = AnalyzerSet::from_identity(&kinds, &found.identity()).expect("an identity of these analyzers");
    assert_eq!(read.identity(), found.identity());
    let mut other = found.identity();
    other["settings"] = serde_json::json!("0000000000000000");
    assert!(AnalyzerSet::from_identity(&kinds, &other).is_none());
    assert!(AnalyzerSet::from_identity(&[AnalyzerKind::Ruff], &found.identity()).is_none(), "another set of analyzers");
    // A pin that differs from what is installed, or names rustc where clippy runs.
    let mut newer = versions.clone();
    newer.insert("ruff".into(), "ruff 0.1.0".into());
    let e = found.check_pins(&newer).expect_err("another ruff");
    assert!(e.to_string().contains("\"ruff 0.1.0\"") && e.to_string().contains("\"ruff 0.0.0\""), "{e}");
    let mut rustc = versions.clone();
    rustc.remove("clippy");
    rustc.insert("rustc".into(), "rustc 0.0.0".into());
    assert!(found.check_pins(&rustc).expect_err("clippy ran").to_string().contains("`rustc`"));
    assert!(AnalyzerSet::pinned(&[AnalyzerKind::Jshint], &versions).is_err(), "jshint is not pinned");
    // Nothing runs from a pinned set.
    let dir = tempfile::tempdir().expect("tempdir");
    let subject = repo_subject(dir.path(), &[], &[("a.py", Some("import os\n"))]);
    assert!(matches!(analyze(&pinned, &subject, &dir.path().join("scratch")), Err(SmellError::NotInstalled)));
}

#[test]
fn smells_read_as_crscore_issues_and_sort_stably() {
    let s = |path: &str, line: u32, analyzer: &str, code: &str| Smell {
        analyzer: analyzer.into(),
        path: path.into(),
        line,
        code: code.into(),
        message: "m".into(),
    };
    assert_eq!(s("a.py", 7, "ruff", "F401").text(), "line 7, F401:\tm");
    let mut v = vec![s("b.py", 1, "ruff", "F1"), s("a.py", 9, "ruff", "F1"), s("a.py", 2, "ruff", "F2"), s("a.py", 2, "ruff", "E1")];
    v.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    let got: Vec<(String, u32, String)> = v.into_iter().map(|s| (s.path, s.line, s.code)).collect();
    assert_eq!(got, [("a.py".into(), 2, "E1".into()), ("a.py".into(), 2, "F2".into()), ("a.py".into(), 9, "F1".into()), ("b.py".into(), 1, "F1".into())]);
}

/// A stand-in ruff: prints one diagnostic per line 1..=4 of every file it is given, with
/// the absolute file name ruff prints, so the filter has something to drop.
const FAKE_RUFF: &str = r#"printf '['; sep=''; for f in "$@"; do case "$f" in ./*) ;; *) continue;; esac; for n in 1 2 3 4; do printf '%s{"code":"X%s","name":"x","message":"on line %s","filename":"%s/%s","location":{"row":%s}}' "$sep" "$n" "$n" "$PWD" "${f#./}" "$n"; sep=','; done; done; printf ']'; exit 1"#;

#[test]
fn analyze_keeps_smells_on_changed_lines_of_files_at_the_head() {
    let dir = tempfile::tempdir().expect("tempdir");
    let subject = repo_subject(
        dir.path(),
        &[("pkg/a.py", "a\nb\nc\nd\n"), ("gone.py", "x\n"), ("notes.md", "n\n")],
        &[("pkg/a.py", Some("a\nB\nc\nD\n")), ("gone.py", None), ("notes.md", Some("m\n")), ("new.py", Some("1\n2\n"))],
    );
    let smells = analyze(&set(vec![sh_analyzer(AnalyzerKind::Ruff, "ruff", FAKE_RUFF)]), &subject, &dir.path().join("scratch")).expect("analyzed");
    let got: Vec<(String, u32, String)> = smells.iter().map(|s| (s.path.clone(), s.line, s.code.clone())).collect();
    assert_eq!(
        got,
        [("new.py".into(), 1, "X1".into()), ("new.py".into(), 2, "X2".into()), ("pkg/a.py".into(), 2, "X2".into()), ("pkg/a.py".into(), 4, "X4".into())]
    );
    assert!(smells.iter().all(|s| s.analyzer == "ruff"));
    // The scratch directory is left empty.
    assert_eq!(std::fs::read_dir(dir.path().join("scratch")).expect("scratch").count(), 0);
}

#[test]
fn an_analyzer_that_finds_nothing_gives_no_smells_and_one_that_crashes_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let subject = repo_subject(dir.path(), &[], &[("a.py", Some("x = 1\n"))]);
    let scratch = dir.path().join("scratch");
    let quiet = set(vec![sh_analyzer(AnalyzerKind::Ruff, "ruff", "echo '[]'")]);
    assert_eq!(analyze(&quiet, &subject, &scratch).expect("nothing found"), vec![]);
    let crash = set(vec![sh_analyzer(AnalyzerKind::Ruff, "ruff", "echo 'error: ruff panicked' >&2; exit 2")]);
    let err = analyze(&crash, &subject, &scratch).expect_err("crashed").to_string();
    assert_eq!(err, "ruff failed on `a.py`: exit code 2: error: ruff panicked");
    let garbage = set(vec![sh_analyzer(AnalyzerKind::Ruff, "ruff", "echo 'not json'; exit 1")]);
    let err = analyze(&garbage, &subject, &scratch).expect_err("unreadable").to_string();
    assert!(err.starts_with("ruff's output could not be read: its JSON output does not parse"), "{err}");
    let flood =
        set(vec![sh_analyzer(AnalyzerKind::Ruff, "ruff", "head -c 5000 /dev/zero; exit 1")]).with_limits(Limits { output_bytes: 1024, ..Limits::default() });
    let err = analyze(&flood, &subject, &scratch).expect_err("flooded").to_string();
    assert!(err == "ruff failed on `a.py`: printed more than 1024 bytes on stdout", "{err}");
}

#[test]
fn the_analyzer_gets_a_cleared_environment_and_only_files_inside_its_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let subject = repo_subject(dir.path(), &[], &[("a.py", Some("x = 1\n"))]);
    // Prints its environment and arguments into stderr and fails, so the error shows them.
    let spy = set(vec![sh_analyzer(AnalyzerKind::Ruff, "ruff", r#"env | cut -d= -f1 | sort | tr '\n' ' ' >&2; echo "ARGS $*" >&2; exit 2"#)]);
    let err = analyze(&spy, &subject, &dir.path().join("scratch")).expect_err("spy fails").to_string();
    assert!(err.contains("ARGS check --isolated --no-cache --output-format json ./a.py"), "{err}");
    for leaked in ["CARGO", "RUST_TEST", "USER "] {
        assert!(!err.contains(leaked), "{leaked} reached the analyzer: {err}");
    }
    assert!(err.contains(" HOME ") && err.contains(" PATH "), "{err}");
}

#[test]
fn hostile_paths_and_non_files_are_skipped_without_running_anything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut subject = repo_subject(dir.path(), &[], &[("ok.txt", Some("x\n"))]);
    // A diff naming paths outside the repository (a crafted subject) and a symlink at head.
    let hunk = |file: &str| diff::Hunk {
        file: file.into(),
        new_start: 1,
        new_len: 1,
        old_start: 0,
        old_len: 0,
        text: "@@ -0,0 +1 @@\n+x".into(),
        raw_file: Vec::new(),
        raw_text: Vec::new(),
    };
    subject.files =
        ["../evil.py", "/etc/evil.py", "a/../../evil.rs", "missing.js"].iter().map(|p| diff::FileDiff { path: p.to_string(), hunks: vec![hunk(p)] }).collect();
    let never = set(vec![
        Analyzer { kind: AnalyzerKind::Ruff, name: "ruff", program: "/nonexistent/ruff".into(), lead: Vec::new(), version: String::new() },
        Analyzer { kind: AnalyzerKind::Jshint, name: "jshint", program: "/nonexistent/node".into(), lead: Vec::new(), version: String::new() },
        Analyzer { kind: AnalyzerKind::Rust, name: "rustc", program: "/nonexistent/rustc".into(), lead: Vec::new(), version: String::new() },
    ]);
    assert_eq!(analyze(&never, &subject, &dir.path().join("scratch")).expect("nothing to run"), vec![]);
    assert!(!dir.path().join("evil.py").exists());
}
