//! The built-in `dry-run` reviewer against stet's hunk rules (CONTRACTS.md, "How stet builds
//! hunks"), on real repositories holding every kind of diff stet treats specially, checked
//! against the contract's formulas and against the fake `stet --dry-run`; and git run so that
//! a hostile repository or corpus case cannot make it execute anything.

use super::*;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The contract's dry-run id for a hunk, computed from the formula alone.
fn dry_run_id(file: &[u8], line: u32, hunk_text: &[u8]) -> String {
    let mut keyed = file.to_vec();
    keyed.push(b':');
    keyed.extend_from_slice(hunk_text);
    let stem = format!("Dry-run placeholder (CI):{}", sha256_hex(&keyed));
    let mut id = file.to_vec();
    id.extend_from_slice(format!(":{line}:{stem}").as_bytes());
    sha256_hex(&id)
}

fn write(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, bytes).expect("write");
}

const EXCLUDED: [&str; 6] = ["vendor/lib.go", "go.sum", "web/app.min.js", "sub/package-lock.json", "coverage/x.html", "api.pb.go"];

/// Two commits whose diff holds a deleted, a renamed, a binary file, CRLF lines, names with
/// spaces and non-ASCII letters, a missing final newline, `--`/`++` lines, stet's excluded
/// paths, Latin-1 bytes, trailing spaces, a trailing blank context line, an emptied file
/// and a text file that mentions `Binary files `.
fn edge_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &["config", "user.name", "t"]);
    git(&repo, &["config", "user.email", "t@example.com"]);
    let base: Vec<(&str, &[u8])> = vec![
        ("gone.txt", b"bye\n"),
        ("old_name.py", b"def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n"),
        ("img.bin", b"\x00\x01bin"),
        ("crlf.txt", b"a\r\nb\r\n"),
        ("my file.txt", b"x\n"),
        ("a b c.txt", b"x\n"),
        ("caf\u{e9}.txt", b"1\n"),
        ("noeol.txt", b"a\nb"),
        ("dashes.txt", b"-- x\n++ y\nkeep\n"),
        ("latin1.txt", b"caf\xe9\n"),
        ("trailing.txt", b"a\nb\n"),
        ("blank_ctx.txt", b"x\n\n"),
        ("emptied.txt", b"content\n"),
        ("binword.txt", b"one\n"),
    ];
    for (path, bytes) in &base {
        write(&repo.join(path), bytes);
    }
    for path in EXCLUDED {
        write(&repo.join(path), b"1\n");
    }
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "base"]);
    git(&repo, &["rm", "--quiet", "gone.txt"]);
    git(&repo, &["mv", "old_name.py", "new_name.py"]);
    let head: Vec<(&str, &[u8])> = vec![
        ("new_name.py", b"def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 4\n"),
        ("img.bin", b"\x00\x02bin"),
        ("crlf.txt", b"a\r\nc\r\n"),
        ("my file.txt", b"y\n"),
        ("a b c.txt", b"y\n"),
        ("caf\u{e9}.txt", b"2\n"),
        ("noeol.txt", b"a\nc"),
        ("dashes.txt", b"keep\n++ z\n"),
        ("latin1.txt", b"th\xe9\n"),
        ("trailing.txt", b"a\nb  \n"),
        ("blank_ctx.txt", b"y\n\n"),
        ("emptied.txt", b""),
        ("binword.txt", b"one\nBinary files are fun\n"),
    ];
    for (path, bytes) in &head {
        write(&repo.join(path), bytes);
    }
    for path in EXCLUDED {
        write(&repo.join(path), b"2\n");
    }
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "head"]);
    repo
}

/// A HOME whose git config would change the diff (no renames, no prefixes, raw non-ASCII
/// names): stet runs git without HOME, so neither it nor runner may see it.
fn hostile_home(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    write(&home.join(".gitconfig"), b"[core]\n\tquotePath = false\n[diff]\n\trenames = false\n\tnoprefix = true\n");
    home
}

fn dry_run_manifest(dir: &Path, repo: &Path, name: &str, reviewer: &str) -> PathBuf {
    write_manifest(
        dir,
        &format!("{name}.toml"),
        &format!(
            "version = 1\n[experiment]\nname = \"{name}\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\n[reviewer]\n{reviewer}\n[report]\noutput = \"out-{name}\"\n",
            repo.display()
        ),
    )
}

fn stet_reviewer() -> String {
    format!(
        "kind = \"command\"\nprogram = \"{stet}\"\nargs = [\"start\", \"{{{{base}}}}\", \"--dry-run\", \"--json\"]\ncleanup = [[\"-{stet}\", \"finish\"]]\nignore = [\".review/\"]",
        stet = fake_stet().display()
    )
}

/// The findings objects in a cache that hold dry-run placeholders.
fn dry_run_objects(cache: &Path) -> Vec<Vec<serde_json::Value>> {
    let mut out: Vec<Vec<serde_json::Value>> = super::exec_corpus::walk(&cache.join("objects"))
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter(|t| t.trim_start().starts_with('[') && t.contains("Dry-run placeholder (CI)"))
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect();
    out.dedup();
    out
}

#[test]
fn the_builtin_dry_run_follows_stets_hunk_rules_and_equals_the_fake_stet() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = edge_repo(dir.path());
    // Reviewed through a symbolic link: stet prints the resolved root in `cursor_uri`.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let home = hostile_home(dir.path());

    let builtin = dry_run_manifest(dir.path(), &link, "builtin", "kind = \"builtin\"\nname = \"dry-run\"");
    let out = runner(dir.path()).env("HOME", &home).args(["exec", "--quiet"]).arg(&builtin).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let objects = dry_run_objects(&dir.path().join("cache"));
    assert_eq!(objects.len(), 1, "{objects:?}");
    let findings = objects[0].clone();

    let by_file: BTreeMap<String, Vec<&serde_json::Value>> = findings.iter().fold(BTreeMap::new(), |mut m, f| {
        m.entry(f["file"].as_str().expect("file").to_string()).or_default().push(f);
        m
    });
    let files: Vec<&str> = by_file.keys().map(String::as_str).collect();
    // Deleted files are reviewed; binary sections (and a text file that says `Binary files `)
    // and stet's default excludes are not; a name with spaces is its `diff --git` line's
    // second field, and a non-ASCII name stays as git quoted it (no HOME: core.quotePath is on).
    assert_eq!(
        files,
        vec![
            "\"b/caf\\303\\251.txt\"",
            "b",
            "blank_ctx.txt",
            "crlf.txt",
            "dashes.txt",
            "emptied.txt",
            "file.txt",
            "gone.txt",
            "latin1.txt",
            "new_name.py",
            "noeol.txt",
            "trailing.txt"
        ],
    );
    let expect: Vec<(&str, u32, &[u8])> = vec![
        ("gone.txt", 1, b"@@ -1 +0,0 @@\n-bye"),
        ("emptied.txt", 1, b"@@ -1 +0,0 @@\n-content"),
        // The renamed file is one hunk under its new name (diff.renames from HOME is ignored).
        ("new_name.py", 7, b"@@ -7,4 +7,4 @@ def b():\n \n \n def c():\n-    return 3\n+    return 4"),
        // bufio.ScanLines drops each line's \r.
        ("crlf.txt", 1, b"@@ -1,2 +1,2 @@\n a\n-b\n+c"),
        ("file.txt", 1, b"@@ -1 +1 @@\n-x\n+y"),
        ("noeol.txt", 1, b"@@ -1,2 +1,2 @@\n a\n-b\n+c"),
        // `--- x` (a removed `-- x`) and `+++ z` (an added `++ z`) are headers.
        ("dashes.txt", 1, b"@@ -1,3 +1,2 @@\n-++ y\n keep"),
        // Raw bytes, not replaced by U+FFFD.
        ("latin1.txt", 1, b"@@ -1 +1 @@\n-caf\xe9\n+th\xe9"),
        // The section is trimmed: the last line's trailing spaces and a trailing blank
        // context line do not count.
        ("trailing.txt", 1, b"@@ -1,2 +1,2 @@\n a\n-b\n+b"),
        ("blank_ctx.txt", 1, b"@@ -1,2 +1,2 @@\n-x\n+y"),
    ];
    let root = real.canonicalize().expect("canonical");
    for (file, line, text) in expect {
        let f = by_file[file][0];
        assert_eq!(by_file[file].len(), 1, "{file}");
        assert_eq!(f["line"].as_u64(), Some(line as u64), "{file}");
        assert_eq!(f["id"].as_str(), Some(dry_run_id(file.as_bytes(), line, text).as_str()), "{file}: {f}");
        assert_eq!(f["cursor_uri"].as_str(), Some(format!("file://{}/{file}#L{line}", root.display()).as_str()), "{file}");
    }

    // The fake stet, run by the `command` reviewer, prints the very same findings: the store
    // keeps a single findings object for the two executions.
    let via_stet = dry_run_manifest(dir.path(), &link, "stet", &stet_reviewer());
    let out = runner(dir.path()).env("HOME", &home).args(["exec", "--quiet"]).arg(&via_stet).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let objects = dry_run_objects(&dir.path().join("cache"));
    assert_eq!(objects.len(), 1, "the fake stet and the builtin differ: {objects:#?}");
}

#[test]
fn a_line_over_64_kib_fails_the_run_as_stet_fails_not_the_experiment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    write(&repo.join("a.txt"), b"a\n");
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "c0"]);
    write(&repo.join("long.txt"), format!("{}\n", "x".repeat(70_000)).as_bytes());
    git(&repo, &["add", "--all"]);
    git(&repo, &["commit", "--quiet", "-m", "c1"]);
    write(&repo.join("a.txt"), b"b\n");
    git(&repo, &["commit", "--quiet", "-am", "c2"]);
    // The builtin: HEAD~2..HEAD holds the 70 000-character line and fails as stet does;
    // HEAD~1..HEAD completes, and the report lists the failure.
    let manifest = dry_run_manifest(dir.path(), &repo, "builtin", "kind = \"builtin\"\nname = \"dry-run\"");
    let text = std::fs::read_to_string(&manifest).expect("read").replace("ref = [\"HEAD~1\"]", "ref = [\"HEAD~2\", \"HEAD~1\"]");
    std::fs::write(&manifest, text).expect("write");
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let results = std::fs::read_to_string(dir.path().join("out-builtin/RESULTS.md")).expect("RESULTS.md");
    assert!(results.contains("Could not compute hunks to review"), "{results}");
    assert!(results.contains("1 failed") || results.contains("failed"), "{results}");
    // The built-in fails the same way every time: a frozen execution reports the recorded
    // failure as the run's result (exit 3, as it ran), not "not in the cache" (exit 4).
    let frozen = runner(dir.path()).args(["exec", "--quiet", "--frozen"]).arg(&manifest).output().expect("runs");
    assert_eq!(frozen.status.code(), Some(3), "{}", stderr_of(&frozen));
    assert!(!stderr_of(&frozen).contains("not in the cache"), "{}", stderr_of(&frozen));
    assert_eq!(std::fs::read_to_string(dir.path().join("out-builtin/RESULTS.md")).expect("RESULTS.md"), results, "the same report");
    // The fake stet fails on the same change, with stet's message.
    let manifest = dry_run_manifest(dir.path(), &repo, "stet", &stet_reviewer());
    let text = std::fs::read_to_string(&manifest).expect("read").replace("ref = [\"HEAD~1\"]", "ref = [\"HEAD~2\"]");
    std::fs::write(&manifest, text).expect("write");
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("Could not compute hunks to review"), "{}", stderr_of(&out));
}

/// A script that records that it ran.
fn tripwire(dir: &Path) -> (PathBuf, PathBuf) {
    let log = dir.join("pwned");
    let script = dir.join("evil.sh");
    std::fs::write(&script, format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\n", log.display())).expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    (script, log)
}

#[test]
fn a_case_that_writes_into_git_s_directory_is_rejected_and_runs_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (script, log) = tripwire(dir.path());
    let config = format!("[core]\n\tfsmonitor = \"{}\"\n", script.display());
    for path in [".git/config", ".GIT/config", "src/../.git/hooks/post-commit", ".git./config", "sub/.git/config"] {
        let corpus = dir.path().join("corpus");
        let cases = serde_json::json!({"version": 1, "cases": [
            {"id": "case-01", "title": "Scenario 01", "reviewTask": "t", "spec": "s",
             "source": {"path": path, "before": config, "after": format!("{config}\n")}}
        ]});
        write(&corpus.join("cases.public.json"), cases.to_string().as_bytes());
        let manifest = write_manifest(
            dir.path(),
            "hostile.toml",
            "version = 1\n[experiment]\nname = \"hostile\"\n[target]\ncorpus = \"corpus\"\n[matrix]\nrepeat = 1\n[reviewer]\nkind = \"builtin\"\nname = \"dry-run\"\n[report]\noutput = \"out\"\n",
        );
        let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
        assert!(!out.status.success(), "{path}: accepted");
        let stderr = stderr_of(&out);
        assert!(stderr.contains("case-01") && (stderr.contains(".git") || stderr.contains("..")), "{path}: {stderr}");
        assert!(!log.exists(), "{path}: the case's config ran a program");
    }
}

#[test]
fn a_repository_whose_own_config_sets_fsmonitor_and_hooks_is_reviewed_without_running_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let (script, log) = tripwire(dir.path());
    git(&repo, &["config", "core.fsmonitor", &script.display().to_string()]);
    let hooks = repo.join(".git/hooks");
    for hook in ["post-checkout", "reference-transaction", "post-index-change", "pre-commit", "post-commit"] {
        std::fs::copy(&script, hooks.join(hook)).expect("hook");
    }
    let manifest = write_manifest(
        dir.path(),
        "hooks.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"hooks\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\", \"HEAD~2\"]\n[reviewer]\nkind = \"builtin\"\nname = \"dry-run\"\n[report]\noutput = \"out\"\n",
            repo.display()
        ),
    );
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    // A command reviewer in its own worktree: `git worktree add` checks files out, which runs
    // the post-checkout and reference-transaction hooks and the fsmonitor unless disabled.
    let manifest = write_manifest(
        dir.path(),
        "worktree.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"worktree\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\n[reviewer]\nkind = \"command\"\nprogram = \"printf\"\nargs = ['{{\"findings\":[]}}']\nisolation = \"worktree\"\n[report]\noutput = \"out-wt\"\n",
            repo.display()
        ),
    );
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!log.exists(), "a hook or the fsmonitor ran: {}", std::fs::read_to_string(&log).unwrap_or_default());
}

/// A JSON value with each object's keys in the order written (serde_json's `Value` sorts them).
#[derive(Debug, Clone, PartialEq)]
enum Ordered {
    Object(Vec<(String, Ordered)>),
    Array(Vec<Ordered>),
    Scalar(serde_json::Value),
}

impl Ordered {
    fn parse(text: &str) -> Ordered {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }

    fn keys(&self) -> Vec<&str> {
        match self {
            Ordered::Object(fields) => fields.iter().map(|(k, _)| k.as_str()).collect(),
            _ => Vec::new(),
        }
    }

    fn get(&self, key: &str) -> &Ordered {
        static MISSING: Ordered = Ordered::Scalar(serde_json::Value::Null);
        match self {
            Ordered::Object(fields) => fields.iter().find(|(k, _)| k == key).map_or(&MISSING, |(_, v)| v),
            _ => &MISSING,
        }
    }

    fn items(&self) -> &[Ordered] {
        match self {
            Ordered::Array(items) => items,
            _ => &[],
        }
    }

    fn str(&self) -> &str {
        match self {
            Ordered::Scalar(serde_json::Value::String(s)) => s,
            _ => "",
        }
    }

    fn u64(&self) -> u64 {
        match self {
            Ordered::Scalar(v) => v.as_u64().unwrap_or(0),
            _ => 0,
        }
    }
}

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(v.into()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(v.into()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(v.into()))
            }
            fn visit_unit<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Scalar(serde_json::Value::Null))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Ordered::Array(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut fields = Vec::new();
                while let Some((k, v)) = map.next_entry()? {
                    fields.push((k, v));
                }
                Ok(Ordered::Object(fields))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

/// The repository the real stet reviewed in `tests/fixtures/stet-real/` (its README): three
/// commits, whose `HEAD~2..HEAD` holds exactly the three hunks the real stet sent its model.
fn stet_real_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("repo-mock");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &["config", "user.name", "t"]);
    git(&repo, &["config", "user.email", "t@example.com"]);
    write(&repo.join(".git/info/exclude"), b".review/\n");
    let calc = "def add(a, b):\n    return a + b\n\ndef div(a, b):\n    return a / b\n";
    let util = "import os\n\n\ndef read_config(path):\n    with open(path) as f:\n        return f.read()\n";
    let commits: [(&str, &[(&str, String)]); 3] = [
        ("base: calc and util", &[("calc.py", calc.to_string()), ("util.py", util.to_string())]),
        ("calc: add avg", &[("calc.py", format!("{calc}\n\ndef avg(xs):\n    # TODO: handle empty list\n    return sum(xs) / len(xs)\n"))]),
        (
            "util: run and env_flag; notes module",
            &[
                (
                    "util.py",
                    "import os\nimport subprocess\n\n\ndef read_config(path):\n    with open(path) as f:\n        return f.read()\n\n\ndef run(cmd):\n    # TODO: do not use shell=True\n    return subprocess.check_output(cmd, shell=True)\n\n\ndef env_flag(name):\n    return os.environ.get(name) == \"1\"  # TODO accept \"true\"\n".to_string(),
                ),
                ("notes.py", "NOTES = []\n\n\ndef add_note(text):\n    NOTES.append(text)\n    return len(NOTES)\n".to_string()),
            ],
        ),
    ];
    for (message, files) in commits {
        for (name, text) in files {
            write(&repo.join(name), text.as_bytes());
            git(&repo, &["add", name]);
        }
        git(&repo, &["commit", "--quiet", "-m", message]);
    }
    repo
}

/// The fake stet run in `repo` with only `env` (and PATH) set, then `stet finish`.
fn fake_stet_in(repo: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let run = |args: &[&str]| {
        let mut cmd = std::process::Command::new(fake_stet());
        cmd.args(args).current_dir(repo).env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd.envs(env.iter().copied()).output().expect("the fake stet runs")
    };
    let out = run(args);
    let _ = run(&["finish"]);
    out
}

/// stet's ID scheme: sha256 of `file:max(line,1):` and the message with whitespace runs collapsed.
fn stet_id(file: &str, line: u64, message: &str) -> String {
    let stem = message.split_ascii_whitespace().collect::<Vec<_>>().join(" ");
    sha256_hex(format!("{file}:{}:{stem}", line.max(1)).as_bytes())
}

/// The fake stet's output has the real stet's shape, checked against what the real stet printed
/// on the same repository (`tests/fixtures/stet-real/`): the `--json` line and the `--stream`
/// events, each finding's keys in the real order with the same ID and `cursor_uri` schemes,
/// the `TODO` findings at the real lines; a model answering without `file` gives what the real
/// stet gave, `{"findings":[]}`; an unreachable OpenAI-compatible server the real message.
#[test]
fn the_fake_stet_prints_what_the_real_stet_printed() {
    let real_dir = project_root().join("tests/fixtures/stet-real");
    let real = |name: &str| std::fs::read_to_string(real_dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = stet_real_repo(dir.path());
    // The real runs: the openai provider at temperature 0.2, no suppression; RAG off here so
    // the fake adds no `suggestion` (the mock gave none).
    let env: &[(&str, &str)] = &[
        ("STET_PROVIDER", "openai"),
        ("STET_MODEL", "mock-todo"),
        ("STET_TEMPERATURE", "0.2"),
        ("STET_SUPPRESSION_ENABLED", "0"),
        ("STET_RAG_SYMBOL_MAX_DEFINITIONS", "0"),
        ("FAKE_STET_SKIP_SERVER_CHECK", "1"),
    ];
    let real_root = "/tmp/stet-e2e/repo-mock";
    let check = |finding: &Ordered, root: &str, real_keys: &[&str]| {
        assert_eq!(finding.keys(), real_keys, "{finding:?}");
        let (file, line, message) = (finding.get("file").str(), finding.get("line").u64(), finding.get("message").str());
        assert_eq!(finding.get("id").str(), stet_id(file, line, message), "{finding:?}");
        assert_eq!(finding.get("cursor_uri").str(), format!("file://{root}/{file}#L{line}"));
    };
    let todo_at = |findings: &[&Ordered]| -> Vec<(String, u64)> {
        findings.iter().filter(|f| f.get("message").str().contains("TODO")).map(|f| (f.get("file").str().to_string(), f.get("line").u64())).collect()
    };

    // `--json`: one line `{"findings":[…]}`.
    let real_json = Ordered::parse(&real("mock/01-start-json.stdout"));
    let out = fake_stet_in(&repo, &["start", "HEAD~2", "--json"], env);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    let fake_json = Ordered::parse(&text);
    assert_eq!(fake_json.keys(), real_json.keys());
    let real_keys = real_json.get("findings").items()[0].keys();
    let root = repo.display().to_string();
    for f in real_json.get("findings").items() {
        check(f, real_root, &real_keys);
    }
    for f in fake_json.get("findings").items() {
        check(f, &root, &real_keys);
    }
    let (real_findings, fake_findings): (Vec<&Ordered>, Vec<&Ordered>) =
        (real_json.get("findings").items().iter().collect(), fake_json.get("findings").items().iter().collect());
    let expected = vec![("calc.py".to_string(), 9), ("util.py".to_string(), 11), ("util.py".to_string(), 16)];
    assert_eq!(todo_at(&real_findings), expected);
    assert_eq!(todo_at(&fake_findings), expected);

    // `--json --stream`: the same progress events, each finding after its hunk's, then done.
    let events = |text: &str| -> Vec<Ordered> { text.lines().map(Ordered::parse).collect() };
    let real_events = events(&real("mock/03-start-stream.stdout"));
    let out = fake_stet_in(&repo, &["start", "HEAD~2", "--json", "--stream"], env);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let fake_events = events(&stdout_of(&out));
    let progress =
        |events: &[Ordered]| -> Vec<String> { events.iter().filter(|e| e.get("type").str() == "progress").map(|e| e.get("msg").str().to_string()).collect() };
    assert_eq!(progress(&fake_events), progress(&real_events));
    assert_eq!(progress(&real_events), ["3 hunks to review", "Reviewing hunk 1/3: calc.py", "Reviewing hunk 2/3: notes.py", "Reviewing hunk 3/3: util.py"]);
    for (events, root) in [(&real_events, real_root), (&fake_events, root.as_str())] {
        assert_eq!(events.last().map(|e| (e.keys(), e.get("type").str())), Some((vec!["type"], "done")));
        let mut hunk_file = "";
        for e in events.iter() {
            match e.get("type").str() {
                "progress" => {
                    assert_eq!(e.keys(), ["msg", "type"]);
                    hunk_file = e.get("msg").str().rsplit(": ").next().unwrap_or("");
                }
                "finding" => {
                    assert_eq!(e.keys(), ["data", "type"]);
                    check(e.get("data"), root, &real_keys);
                    assert_eq!(e.get("data").get("file").str(), hunk_file, "a finding follows its hunk's progress event");
                }
                _ => {}
            }
        }
    }
    let streamed = |events: &[Ordered]| -> Vec<(String, u64)> {
        let data: Vec<&Ordered> = events.iter().filter(|e| e.get("type").str() == "finding").map(|e| e.get("data")).collect();
        todo_at(&data)
    };
    assert_eq!(streamed(&fake_events), streamed(&real_events));

    // A model that answers without `file`: the real stet dropped every finding.
    let no_file: Vec<(&str, &str)> = env.iter().copied().chain([("FAKE_STET_MODEL_OMITS_FILE", "1")]).collect();
    let out = fake_stet_in(&repo, &["start", "HEAD~2", "--json"], &no_file);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), real("llama-proxy-schema-v1-nofile/01-start-json.stdout"));

    // Nothing listening at the OpenAI-compatible URL: exit 2 and the real message.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let down: Vec<(&str, &str)> =
        env.iter().copied().filter(|(k, _)| *k != "FAKE_STET_SKIP_SERVER_CHECK").chain([("STET_OPENAI_BASE_URL", url.as_str())]).collect();
    let out = fake_stet_in(&repo, &["start", "HEAD~2", "--json"], &down);
    assert_eq!(out.status.code(), Some(2));
    let real_first = real("llama-proxy/05-server-down-start-json.stderr").lines().next().unwrap_or_default().replace("http://127.0.0.1:18091/v1", &url);
    assert_eq!(stderr_of(&out).lines().next(), Some(real_first.as_str()));
    assert!(stderr_of(&out).lines().nth(1).is_some_and(|l| l.starts_with("Details: ")), "{}", stderr_of(&out));
}
