//! Ground-truth scoring through the real CLI: `runner diff` as a CI gate between two
//! executions, and seed 003's eval cases on a git repository built in a temporary directory.

use super::git;
use assert_cmd::Command;
use predicates::str::contains;
use std::path::Path;

fn runner() -> Command {
    let mut cmd = Command::cargo_bin("runner").expect("the runner binary");
    cmd.env_remove("RUNNER_CACHE_DIR").env_remove("RUNNER_WORK_DIR");
    cmd
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

const BEFORE: &str = "import os\n\ndef thumbnail(name):\n    return name\n";
const AFTER: &str = "import os\n\ndef thumbnail(name):\n    os.system(\"convert \" + name + \" thumb.png\")\n    return name\n";

/// A corpus of one finding case (a shell injection on line 4) and one clean case.
fn corpus(dir: &Path) {
    let public = serde_json::json!({
        "version": 1,
        "cases": [
            {"id": "case-01", "title": "Scenario 01", "reviewTask": "Review the change.", "spec": "Make thumbnails.",
             "source": {"path": "src/thumb.py", "before": BEFORE, "after": AFTER}},
            {"id": "case-02", "title": "Scenario 02", "reviewTask": "Review the change.", "spec": "Add numbers.",
             "source": {"path": "src/add.py", "before": "def add(a, b):\n    return a + b\n", "after": "def add(a, b):\n    \"\"\"Sum.\"\"\"\n    return a + b\n"}}
        ]
    });
    let oracle = serde_json::json!({
        "version": 1,
        "findings": [{"id": "F01", "caseId": "case-01", "description": "untrusted input reaches shell execution: a user-controlled name such as `x; rm -rf ~` runs through os.system",
                      "file": "src/thumb.py", "line": 4, "category": "security", "severity": "error", "blocking": true}],
        "cases": [
            {"id": "case-01", "expectedFindingIds": ["F01"], "rationale": "shell injection", "interpreter": "python3", "groundTruth": "assert True\n"},
            {"id": "case-02", "expectedFindingIds": [], "rationale": "docstring only", "interpreter": "python3", "groundTruth": "assert True\n"}
        ]
    });
    write(&dir.join("cases.public.json"), &serde_json::to_string_pretty(&public).expect("json"));
    write(&dir.join("oracle.json"), &serde_json::to_string_pretty(&oracle).expect("json"));
}

fn manifest(path: &Path, name: &str, baseline: &str) {
    write(
        path,
        &format!(
            "version = 1\n[experiment]\nname = \"{name}\"\n[target]\ncorpus = \"corpus\"\nunseal-holdout = true\n[matrix]\nrepeat = 1\n[reviewer]\nkind = \"builtin\"\nname = \"{baseline}\"\n[[analysis]]\nkind = \"review-eval\"\n[[analysis]]\nkind = \"fixture\"\n[report]\noutput = \"out/{name}\"\n"
        ),
    );
}

fn exec(dir: &Path, manifest: &str) {
    runner().current_dir(dir).args(["exec", manifest, "--quiet", "--cache-dir", "cache", "--work-dir", "work"]).assert().success();
}

#[test]
fn diff_between_two_executions_names_the_regressed_finding() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    corpus(&dir.join("corpus"));
    manifest(&dir.join("before.toml"), "before", "heuristic");
    manifest(&dir.join("after.toml"), "after", "dry-run");
    exec(dir, "before.toml");
    exec(dir, "after.toml");

    // heuristic → dry-run: F01 goes from found to missed and noise rises: rejected, exit 5.
    runner()
        .current_dir(dir)
        .args(["diff", "out/before/results.json", "out/after"])
        .assert()
        .code(5)
        .stdout(contains("regression   F01 (case-01)  found 1/1 → missed 1/1"))
        .stdout(contains("NOT KEPT: F01 (case-01) found → missed"))
        .stdout(contains("result: reject (exit 5)"));

    // The other way round is an improvement with less noise: kept, exit 0.
    runner()
        .current_dir(dir)
        .args(["diff", "out/after", "out/before"])
        .assert()
        .code(0)
        .stdout(contains("improvement  F01 (case-01)  missed 1/1 → found 1/1"))
        .stdout(contains("result: keep"));

    // JSON for machines names the same finding.
    let out = runner().current_dir(dir).args(["diff", "out/before", "out/after", "--json"]).output().expect("run");
    assert_eq!(out.status.code(), Some(5));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["kept"], false);
    assert_eq!(report["pairs"][0]["changes"][0]["finding"], "F01");
    assert_eq!(report["pairs"][0]["changes"][0]["movement"], "regression");

    // An unknown cell is an error (exit 1) that lists the cells there are.
    runner()
        .current_dir(dir)
        .args(["diff", "out/before", "out/after", "--cell-a", "nope"])
        .assert()
        .code(1)
        .stderr(contains("has no cell `nope`; its cells: `default`"));
}

#[test]
fn eval_cases_on_a_git_repository_are_reviewed_blind_and_scored() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    write(&repo.join("src/thumb.py"), BEFORE);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "base"]);
    let base = git(&repo, &["rev-parse", "HEAD"]);
    write(&repo.join("src/thumb.py"), AFTER);
    git(&repo, &["commit", "--quiet", "-am", "thumbnails"]);
    let tip = git(&repo, &["rev-parse", "HEAD"]);
    write(&repo.join("src/thumb.py"), &AFTER.replace("os.system(\"convert \" + name + \" thumb.png\")", "subprocess.run([\"convert\", name, \"thumb.png\"])"));
    git(&repo, &["commit", "--quiet", "-am", "fix the shell injection"]);
    let fix = git(&repo, &["rev-parse", "HEAD"]);
    write(
        &repo.join("evals/shell/case.md"),
        &format!(
            "Case: shell\nRange: {base}..{tip}     # as reviewed\nSource: outside reviewer, PR #7\nDate: 2025-01-02\nGroups: round-1\n\nFindings (one per line: id | path:line | class | the defect, in a sentence):\n\nF1 | src/thumb.py:4 | security | untrusted input reaches shell execution: a user-controlled name runs through os.system\n"
        ),
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "eval case"]);
    write(
        &tmp.path().join("evals.toml"),
        "version = 1\n[experiment]\nname = \"evals\"\n[target]\nrepo = \"repo\"\nevals = \"repo/evals\"\n[matrix]\nrepeat = 1\n[reviewer]\nkind = \"builtin\"\nname = \"heuristic\"\n[[analysis]]\nkind = \"review-eval\"\n[[analysis]]\nkind = \"context-level\"\n[report]\noutput = \"out\"\n",
    );
    runner().current_dir(tmp.path()).args(["exec", "evals.toml", "--quiet", "--cache-dir", "cache", "--work-dir", "work"]).assert().success();

    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(tmp.path().join("out/results.json")).expect("results")).expect("json");
    assert_eq!(results["target"]["kind"], "evals");
    assert_eq!(results["target"]["subjects"], serde_json::json!(["shell"]));
    let eval = results["analyses"].as_array().expect("analyses").iter().find(|a| a["kind"] == "review-eval").expect("review-eval");
    let cell = &eval["data"]["cells"][0];
    assert_eq!(cell["findings"]["shell/F1"]["verdict"], "found");
    assert_eq!(cell["scores"]["recall_strict"], 1.0);
    let context = results["analyses"].as_array().expect("analyses").iter().find(|a| a["kind"] == "context-level").expect("context-level");
    assert_eq!(context["data"]["by_context_level"]["diff"], 1);

    // The clone the reviewer saw: the tip checked out, no later history, no eval set.
    let clones: Vec<_> = std::fs::read_dir(tmp.path().join("work/evals"))
        .expect("clones")
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(clones.len(), 1);
    let clone = clones[0].path();
    assert_eq!(git(&clone, &["rev-parse", "HEAD"]), tip);
    assert_eq!(git(&clone, &["rev-list", "--count", "HEAD"]), "2");
    assert!(!clone.join("evals").exists());
    let fix_visible = std::process::Command::new("git")
        .arg("-C")
        .arg(&clone)
        .args(["cat-file", "-e", &format!("{fix}^{{commit}}")])
        .stderr(std::process::Stdio::null())
        .status()
        .expect("git");
    assert!(!fix_visible.success(), "the fix commit must not be in the reviewer's clone");

    // A `ref` axis makes no sense with eval cases and is rejected.
    write(
        &tmp.path().join("bad.toml"),
        &std::fs::read_to_string(tmp.path().join("evals.toml")).expect("read").replace("repeat = 1", "repeat = 1\nref = [\"HEAD~1\"]"),
    );
    runner().current_dir(tmp.path()).args(["validate", "bad.toml"]).assert().code(1).stderr(contains("the `ref` axis does not apply with `evals`"));
}

#[test]
fn oracle_matching_keys_are_checked() {
    let tmp = tempfile::tempdir().expect("tempdir");
    corpus(&tmp.path().join("corpus"));
    let base = "version = 1\n[experiment]\nname = \"k\"\n[target]\ncorpus = \"corpus\"\n[matrix]\nrepeat = 1\n[reviewer]\nkind = \"builtin\"\nname = \"heuristic\"\n[report]\noutput = \"out\"\n";
    let good = format!("{base}[[analysis]]\nkind = \"review-eval\"\nline-tolerance = 2\nsimilarity = 0.4\npartial-similarity = 0.2\nsimilarity-measure = \"levenshtein\"\nevidence = \"similarity\"\n[[analysis]]\nkind = \"aggregation\"\ndedup-similarity = 0.8\n");
    write(&tmp.path().join("good.toml"), &good);
    runner().current_dir(tmp.path()).args(["validate", "good.toml"]).assert().success();
    let bad = format!("{base}[[analysis]]\nkind = \"fixture\"\nevidence = \"vibes\"\nsimilarity = 0.2\npartial-similarity = 0.5\n[[analysis]]\nkind = \"latency\"\nevidence = \"category\"\n");
    write(&tmp.path().join("bad.toml"), &bad);
    runner()
        .current_dir(tmp.path())
        .args(["validate", "bad.toml"])
        .assert()
        .code(1)
        .stderr(contains("unknown evidence `vibes`"))
        .stderr(contains("`partial-similarity` (0.5) must not exceed `similarity` (0.2)"))
        .stderr(contains("unknown key `evidence` in [[analysis]] #2"));
}
