//! Ground-truth scoring through the real CLI: `runner diff` as a CI gate between two
//! executions, and seed 003's eval cases on a git repository built in a temporary directory.

use super::git;
use assert_cmd::Command;
use predicates::prelude::PredicateBooleanExt;
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
    // The current review guide: lines written because of this case or its round are tagged.
    write(
        &repo.join("REVIEW.md"),
        "# Review\n- security: a name from a request never reaches a shell (case:shell)\n- round one: check every os.system call <!-- case:round-1 -->\n- naming: short names are fine\n- ordering: lock before reading (case:shell-2)\n",
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
    // The case's class is kept: recall by class in results.json and RESULTS.md.
    assert_eq!(eval["data"]["recall_by_class"][0]["class"], "security");
    assert_eq!(eval["data"]["recall_by_class"][0]["recall_strict"], 1.0);
    let md = std::fs::read_to_string(tmp.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("Recall by class"), "{md}");
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
    // The guide is there, less the lines tagged with the case or its group.
    let guide = std::fs::read_to_string(clone.join("REVIEW.md")).expect("the review guide in the clone");
    assert_eq!(guide, "# Review\n- naming: short names are fine\n- ordering: lock before reading (case:shell-2)\n");
    assert!(!guide.contains("case:shell)") && !guide.contains("case:round-1"));
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

    // A finding at a place the reviewed tip lacks, or one written without its separators, is
    // a located error in `validate`: that bug could never be found, or would leave the oracle.
    let case = repo.join("evals/shell/case.md");
    let good = std::fs::read_to_string(&case).expect("case.md");
    for (from, to, says) in [
        ("src/thumb.py:4", "src/gone.py:4", "`src/gone.py` does not exist at the case's tip"),
        ("src/thumb.py:4", "src/thumb.py:400", "and the finding is at line 400"),
        ("F1 | src/thumb.py:4 | security |", "F1 src/thumb.py:4 security", "reads like a finding but is not `id | path:line | class"),
    ] {
        write(&case, &good.replace(from, to));
        runner().current_dir(tmp.path()).args(["validate", "evals.toml"]).assert().code(1).stderr(contains("evals/shell/case.md:9`").and(contains(says)));
    }
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
        .stderr(contains("`evidence` does not apply to this [[analysis]] #2"));
    // The judges asked about the borderline decisions only: where they have the word, and
    // where a decision model says which decisions are borderline.
    let borderline = format!(
        "{base}[[analysis]]\nkind = \"fixture\"\njudge-pairs = \"borderline\"\n[[analysis]]\nkind = \"fixture\"\nevidence = \"judge\"\njudge-pairs = \"borderline\"\nsimilarity = 0.3\n[[analysis]]\nkind = \"fixture\"\njudge-pairs = \"some\"\n"
    );
    write(&tmp.path().join("borderline.toml"), &borderline);
    runner()
        .current_dir(tmp.path())
        .args(["validate", "borderline.toml"])
        .assert()
        .code(1)
        .stderr(contains("`judge-pairs = \"borderline\"` applies where the judges have the word"))
        .stderr(contains("`judge-pairs = \"borderline\"` needs a matching calibration with a decision model"))
        .stderr(contains("unknown judge-pairs `some`"));
}

#[test]
fn oracle_propose_turns_real_extras_into_a_versioned_patch() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let sha = "a".repeat(40);
    write(
        &dir.join("evals/shell/case.md"),
        &format!("Case: shell\nRange: {sha}..{sha}\nSource: PR #7\n\nFindings:\n\nF1 | src/thumb.py:4 | security | a name runs through os.system\n"),
    );
    write(
        &dir.join("adj/sheet.csv"),
        "item,case,file,line,severity,category,message,suggestion,disposition,oracle_id,note\ni1,shell,src/thumb.py,2,error,bug,the output file is overwritten when two thumbnails share a name,,real,,\ni2,shell,src/thumb.py,1,info,style,rename os,,rejected,,\n",
    );
    let claim = |id: &str| serde_json::json!({"id": id, "disposition": "unresolved"});
    let record = serde_json::json!({
        "version": 1, "method": "adjudicated by a person: adj/sheet.csv", "sheet": "adj/sheet.csv", "key": "adj/key.json", "experiment": "evals",
        "runs": [{"cell": "default", "repeat": 1, "case": "shell",
                  "reported": [{"item": "i1", "finding": "r1", "disposition": "real", "claim": claim("shell-r1")},
                               {"item": "i2", "finding": "r2", "disposition": "rejected", "claim": claim("shell-r2")}],
                  "oracle": {"shell/F1": "missed"}, "real_extras": 1, "rejected_extras": 1}]
    });
    write(&dir.join("captured.adjudication.json"), &serde_json::to_string_pretty(&record).expect("json"));
    runner()
        .current_dir(dir)
        .args(["oracle", "propose", "captured.adjudication.json", "--oracle", "evals", "--out", "oracle.patch.json"])
        .assert()
        .success()
        .stderr(contains("shell/F2 (shell) src/thumb.py:2"));
    let patch: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("oracle.patch.json")).expect("patch")).expect("json");
    assert_eq!(patch["oracle_kind"], "eval-set");
    let additions = patch["additions"].as_array().expect("additions");
    assert_eq!(additions.len(), 1, "only the real extra: {additions:?}");
    assert_eq!(additions[0]["finding"]["id"], "shell/F2");
    assert_eq!(additions[0]["finding"]["line"], 2);
    assert_eq!(additions[0]["case_md_line"], "F2 | src/thumb.py:2 | bug | the output file is overwritten when two thumbnails share a name");
    let (from, to) = (patch["applies_to"].as_str().expect("from"), patch["makes"].as_str().expect("to"));
    assert!(from.starts_with("blake3:") && to.starts_with("blake3:") && from != to, "{from} → {to}");
}
