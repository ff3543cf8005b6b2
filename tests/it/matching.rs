//! `runner matching evaluate` and `runner matching calibrate` on the three benchmark judges'
//! real decisions (`corpus/code-review-benchmark/judgements/`): the figures the files imply,
//! the committed calibrations reproduced byte for byte (the embedding one from the committed
//! cache, no server), the default rule equal to its calibration, and an experiment reading a
//! calibration file.

use crate::{project_root, runner};
use serde_json::Value;

const JUDGES: [&str; 3] = ["claude-opus-4.5", "claude-sonnet-4.5", "gpt-5.2"];

fn judgement_files() -> Vec<String> {
    JUDGES.iter().map(|j| format!("corpus/code-review-benchmark/judgements/{j}.json")).collect()
}

#[test]
fn evaluate_prints_each_judges_figures_and_the_judges_side_by_side() {
    let root = project_root();
    let out =
        runner(&root).args(["matching", "evaluate", "--lexical", "--json"]).args(judgement_files()).env_remove("RUNNER_EMBED_URL").output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let files = report["files"].as_array().expect("files");
    assert_eq!(files.len(), 3);
    let mut kappas = Vec::new();
    for f in files {
        assert_eq!(f["cells"], 936);
        assert_eq!(f["records"], 360);
        assert_eq!(f["decisions"].as_array().map(Vec::len), Some(936), "one decision per golden comment");
        let a = &f["agreement"];
        // The judge's own finds, as its file records them.
        let judge_found = a["both"].as_u64().unwrap_or(0) + a["judge_only"].as_u64().unwrap_or(0);
        let expected = match f["judge"].as_str() {
            Some("gpt-5.2") => 319,
            Some("claude-opus-4.5") => 323,
            Some("claude-sonnet-4.5") => 328,
            other => panic!("unexpected judge {other:?}"),
        };
        assert_eq!(judge_found, expected, "{}", f["judge"]);
        assert_eq!(a["tools"].as_array().map(Vec::len), Some(12));
        kappas.push(a["kappa"].as_f64().expect("κ"));
    }
    // The default rule against each judge, in sample: 0.820 (opus), 0.839 (sonnet), 0.850 (gpt).
    let rounded: Vec<i64> = kappas.iter().map(|k| (k * 1000.0).round() as i64).collect();
    assert_eq!(rounded, vec![820, 839, 850]);
    let jury = &report["jury"];
    let pairs: Vec<i64> = jury["pairs"].as_array().expect("pairs").iter().map(|p| (p["kappa"].as_f64().unwrap_or(0.0) * 1000.0).round() as i64).collect();
    assert_eq!(pairs, vec![951, 962, 950], "inter-judge κ from the benchmark's files");
    assert!(report["rule"].as_str().is_some_and(|r| r.contains("≥ 0.22") && r.contains("2,808 golden-comment cells of 3 judges")));
}

#[test]
fn evaluate_keeps_the_lexical_rule_with_an_embedder_unless_a_calibration_asks_for_embeddings() {
    let root = project_root();
    // No server at this address: the default rule computes no embeddings, so none is asked.
    let out = runner(&root)
        .args(["matching", "evaluate", "--embedder-url", "http://127.0.0.1:9/v1", "--frozen", "--cache", "cache"])
        .args(judgement_files())
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (text, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(text.starts_with("rule: ") && text.contains("≥ 0.22") && !text.contains("embedding cosine"), "{text}");
    assert!(stderr.contains("agreed less with the judges on projects its calibration never saw (κ 0.725–0.737 against κ 0.753–0.779)"), "{stderr}");
    assert!(text.contains("on 2 projects calibration never saw, κ 0.75–0.78"), "{text}");
}

#[test]
fn evaluate_takes_another_rule_from_the_command_line() {
    let root = project_root();
    let out = runner(&root).args(["matching", "evaluate", "--lexical", "--threshold", "0.9"]).args(judgement_files()).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("≥ 0.90") && text.contains("thresholds set by hand, not calibrated"), "{text}");
    assert!(text.contains("judges side by side"), "{text}");
}

#[test]
fn calibrations_reproduce_the_committed_files_byte_for_byte_and_the_default_rule_is_the_calibrated_one() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    for (name, extra) in [
        ("calibration.json", vec!["--lexical", "--held-out", "results/matching/held-out.json"]),
        ("calibration-by-project.json", vec!["--lexical", "--folds", "project", "--held-out", "results/matching/held-out.json"]),
        // From the committed cache: no server is reached (the URL is never dialled).
        (
            "calibration-embedding.json",
            vec!["--embedder-url", "http://127.0.0.1:9/v1", "--frozen", "--cache", "cache", "--held-out", "results/matching/held-out-embedding.json"],
        ),
        (
            "calibration-embedding-by-project.json",
            vec![
                "--embedder-url",
                "http://127.0.0.1:9/v1",
                "--frozen",
                "--cache",
                "cache",
                "--folds",
                "project",
                "--held-out",
                "results/matching/held-out-embedding.json",
            ],
        ),
    ] {
        let out = tmp.path().join(name);
        let run = runner(&root).args(["matching", "calibrate"]).args(judgement_files()).args(&extra).arg("--out").arg(&out).output().expect("runs");
        assert!(run.status.success(), "{name}: {}", String::from_utf8_lossy(&run.stderr));
        let committed = std::fs::read(root.join("results/matching").join(name)).expect("committed");
        assert!(std::fs::read(&out).expect("written") == committed, "{name} differs from the committed one");
    }
    // The figures of one rule are refused for another.
    let wrong = runner(&root)
        .args(["matching", "calibrate"])
        .args(judgement_files())
        .args(["--lexical", "--held-out", "results/matching/held-out-embedding.json", "--out"])
        .arg(tmp.path().join("wrong.json"))
        .output()
        .expect("runs");
    assert!(!wrong.status.success() && String::from_utf8_lossy(&wrong.stderr).contains("not this rule's"), "{}", String::from_utf8_lossy(&wrong.stderr));
    assert!(!tmp.path().join("wrong.json").exists());
    let calibration: Value = serde_json::from_slice(&std::fs::read(root.join("results/matching/calibration.json")).expect("read")).expect("JSON");
    // The decision model: better calibrated out of fold than the rule's own 0/1 decisions.
    let cv = &calibration["probability"]["cross_validation"];
    let (brier, decisions) = (cv["brier"].as_f64().expect("brier"), cv["brier_decisions"].as_f64().expect("decisions"));
    assert!(brier < decisions && brier < cv["brier_base_rate"].as_f64().expect("base rate"), "{cv}");
    assert_eq!(calibration["probability"]["cells"], 2808);
    let default = runner::analysis::spec::OracleRule::default();
    assert_eq!(calibration["rule"]["similarity"].as_f64(), Some(default.similarity));
    let c = default.calibrated.expect("the default rule is calibrated");
    assert_eq!(calibration["calibrated"]["kappa"].as_f64(), Some(c.kappa));
    assert_eq!(calibration["calibrated"]["kappa_min"].as_f64(), Some(c.kappa_min));
    assert_eq!(calibration["calibrated"]["cells"].as_u64(), Some(u64::from(c.cells)));
    let embedding: Value = serde_json::from_slice(&std::fs::read(root.join("results/matching/calibration-embedding.json")).expect("read")).expect("JSON");
    let with = runner::analysis::spec::OracleRule::default_with_embeddings();
    assert_eq!(embedding["rule"]["similarity"].as_f64(), Some(with.similarity));
    assert_eq!(embedding["rule"]["embedding_similarity"].as_f64(), with.embedding_similarity);
    assert_eq!(embedding["calibrated"]["kappa"].as_f64(), with.calibrated.map(|c| c.kappa));
}

#[test]
fn an_experiment_names_a_calibration_and_refuses_one_that_needs_embeddings() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    let manifest = |calibration: &str| {
        format!(
            r#"version = 1
[experiment]
name = "m"
[target]
corpus = "{root}/corpus/quickstart"
unseal-holdout = true
[matrix]
baseline = ["heuristic"]
[reviewer]
kind = "builtin"
name = "{{{{baseline}}}}"
[[analysis]]
kind = "fixture"
matching-calibration = "{calibration}"
[report]
output = "out"
"#,
            root = root.display()
        )
    };
    let good = tmp.path().join("good.toml");
    std::fs::write(&good, manifest(&root.join("results/matching/calibration.json").display().to_string())).expect("write");
    let ok = runner(&root).args(["validate"]).arg(&good).output().expect("runs");
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, manifest(&root.join("results/matching/calibration-embedding.json").display().to_string())).expect("write");
    let refused = runner(&root).args(["validate"]).arg(&bad).output().expect("runs");
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("needs embeddings") && stderr.contains("bad.toml:14:"), "{stderr}");
}
