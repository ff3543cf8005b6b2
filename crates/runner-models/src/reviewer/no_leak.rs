//! The guarantee that nothing from an oracle reaches a reviewer, tested two ways: what a
//! reviewer can see of every bundled case holds no oracle-only text, and the modules that build
//! reviewer input do not depend on this module beyond the holdout seal (case ids only).

use crate::ground_truth::oracle::{self, Oracle};
use crate::matrix::Cell;
use crate::subject::{self, corpus, SubjectSource, SubjectSpec};
use std::path::{Path, PathBuf};

fn quickstart() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("corpus/quickstart")
}

/// Everything under `dir`, `.git` included, plus every git object uncompressed.
fn repository_text(dir: &Path) -> String {
    let mut out = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("readable").flatten() {
            let path = entry.path();
            out.push_str(&path.display().to_string());
            out.push('\n');
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push_str(&String::from_utf8_lossy(&std::fs::read(&path).expect("readable")));
                out.push('\n');
            }
        }
    }
    let objects = std::process::Command::new("git").args(["cat-file", "--batch-all-objects", "--batch"]).current_dir(dir).output().expect("git cat-file");
    out.push_str(&String::from_utf8_lossy(&objects.stdout));
    let log = std::process::Command::new("git").args(["log", "--all", "-p", "--format=fuller"]).current_dir(dir).output().expect("git log");
    out.push_str(&String::from_utf8_lossy(&log.stdout));
    out
}

/// The text only the oracle holds for a case: descriptions, rationale, program lines and
/// expected ids that its public case does not itself contain.
fn oracle_only_text(oracle: &Oracle, case_id: &str, public_text: &str) -> Vec<String> {
    let case = oracle.case(case_id).expect("oracle case");
    let mut secrets = vec![case.rationale.clone(), case.ground_truth.program.clone()];
    secrets.extend(case.ground_truth.program.lines().map(str::trim).filter(|l| l.len() >= 24).map(str::to_string));
    for f in oracle.expected_for(case_id) {
        secrets.push(f.description.clone());
        secrets.push(f.id.clone());
    }
    // Every other case's findings too: nothing of the catalog belongs in any case.
    secrets.extend(oracle.findings.iter().map(|f| f.description.clone()));
    secrets.into_iter().filter(|s| !s.trim().is_empty() && !public_text.contains(s.as_str())).collect()
}

#[test]
fn nothing_from_the_oracle_reaches_a_reviewer() {
    let dir = quickstart();
    let oracle = oracle::load(&dir).expect("readable").expect("present");
    let cases = corpus::load_public_cases(&dir).expect("public cases");
    let work = tempfile::tempdir().expect("tempdir");
    let cell = Cell { id: "default".into(), values: Default::default() };
    for case in cases {
        let public_text = serde_json::to_string(&case).expect("json") + &case.source.before + &case.source.after + &case.spec + &case.review_task;
        let id = case.id.clone();
        let spec = SubjectSpec { id: id.clone(), identity: corpus::case_content_hash(&case), source: SubjectSource::Case(Box::new(case)), holdout: false };
        let subject = subject::materialize(&spec, work.path()).expect("materialize");
        let vars = crate::reviewer::template::variables(&cell, 1, Some((&subject, &subject.repo_dir.display().to_string())));
        let visible = [
            subject.diff.clone(),
            format!("{:?}", subject.files),
            subject.review_task.clone().unwrap_or_default(),
            subject.spec.clone().unwrap_or_default(),
            serde_json::to_string(&vars).expect("json"),
            subject.base_sha.clone(),
            subject.head_sha.clone(),
            repository_text(&subject.repo_dir),
        ]
        .join("\n");
        assert!(visible.contains(&subject.diff) && !subject.diff.is_empty());
        let secrets = oracle_only_text(&oracle, &id, &public_text);
        assert!(secrets.len() >= 3, "case `{id}`: the check must have something to look for");
        for secret in secrets {
            assert!(!leaks(&visible, &secret), "case `{id}`: oracle text `{}` reaches the reviewer", secret.chars().take(60).collect::<String>());
            // The check itself would see it.
            assert!(leaks(&format!("{visible}\n{secret}\n"), &secret));
        }
    }
}

/// Whether `secret` appears in `visible`; a short id such as `F03` only as a word.
fn leaks(visible: &str, secret: &str) -> bool {
    if secret.len() <= 4 {
        regex::Regex::new(&format!(r"\b{}\b", regex::escape(secret))).is_ok_and(|word| word.is_match(visible))
    } else {
        visible.contains(secret)
    }
}

/// The modules that build what a reviewer sees reach ground truth only through two narrow
/// doors: the holdout seal (case ids) and seed 003's eval-set reader (each case's id and range;
/// the blind clone drops the eval set itself).
#[test]
fn reviewer_input_modules_do_not_use_the_oracle() {
    const ALLOWED: [&str; 2] = ["ground_truth::holdout::", "ground_truth::evalcase"];
    let crates = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let mut offenders = Vec::new();
    let modules = ["runner-subject/src/subject", "runner-models/src/reviewer", "runner-engine/src/exec", "runner-engine/src/plan", "runner-cache/src/cache"];
    for module in modules {
        let dir = crates.join(module);
        assert!(dir.is_dir(), "{} is not a directory", dir.display());
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                // This file is the check itself.
                if path.file_name().is_some_and(|n| n == "no_leak.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for (n, line) in text.lines().enumerate() {
                    let code = line.trim_start();
                    if !code.starts_with("//") && code.contains("ground_truth") && !ALLOWED.iter().any(|a| code.contains(a)) {
                        offenders.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(offenders.is_empty(), "reviewer-input modules use the oracle:\n{}", offenders.join("\n"));
    // The oracle module itself is never named there.
    let corpus_target = std::fs::read_to_string(crates.join("runner-subject/src/subject/mod.rs")).expect("subject");
    assert!(!corpus_target.contains("ground_truth::oracle"));
}
