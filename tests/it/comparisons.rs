//! Paired comparisons from the CLI: `runner diff --metric` as a statistical gate on the
//! committed model-swap results (exit 5, JUnit XML), and `exec --summary`.

use crate::{project_root, runner};
use predicates::prelude::*;
use predicates::str::contains;

const SMOL: &str = "model=smollm2-135m,rag_symbol_max_definitions=0";
const GEMMA: &str = "model=gemma3-270m,rag_symbol_max_definitions=0";

#[test]
fn diff_with_a_metric_tests_the_difference_and_gates_on_it() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    let results = root.join("results/model-swap/results.json");
    // Gemma against SmolLM2 without RAG: neither finds any oracle finding under the calibrated
    // rule, so recall differs on none of 12 subjects and no outcome could be significant; the
    // gate passes, and fails when a significant improvement is required.
    runner(&root)
        .arg("diff")
        .arg(&results)
        .args(["--cell-a", SMOL, "--cell-b", GEMMA, "--metric", "recall"])
        .assert()
        .code(0)
        .stdout(contains("A: ").and(contains("(compare analysis)")))
        .stdout(contains(
            "ok   recall, `model=gemma3-270m,rag_symbol_max_definitions=0` − `model=smollm2-135m,rag_symbol_max_definitions=0` = +0.000 [0.000, 0.000]",
        ))
        .stdout(contains("paired permutation, 12 subjects, exact over 4 096 sign flips): 12 subjects, none differing: cannot be significant at α = 0.05;"))
        // The compare analysis also weighed each decision: the verdict holds with matching uncertainty.
        .stdout(contains("; with matching uncertainty -0.021 [-0.060, -0.006]: holds."))
        .stdout(contains("Gate passed."));
    let junit = tmp.path().join("gate.xml");
    runner(&root)
        .arg("diff")
        .arg(&results)
        .args(["--cell-a", SMOL, "--cell-b", GEMMA, "--metric", "recall", "--require-better", "--junit"])
        .arg(&junit)
        .assert()
        .code(5)
        .stdout(contains("FAIL recall").and(contains("Gate failed.")));
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    assert!(xml.contains("tests=\"1\" failures=\"1\""), "{xml}");
    assert!(
        xml.contains(
            "<failure message=\"12 subjects, none differing: cannot be significant at α = 0.05: fail when B is significantly worse, or not significantly better"
        ),
        "{xml}"
    );

    // The same numbers as the comparison table the analysis committed.
    let json = runner(&root).arg("diff").arg(&results).args(["--cell-a", SMOL, "--cell-b", GEMMA, "--metric", "recall", "--json"]).output().expect("runs");
    let gate: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let committed: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&results).expect("results")).expect("json");
    let table = committed["analyses"].as_array().expect("analyses").iter().find(|a| a["kind"] == "compare").expect("compare");
    let row = table["data"]["comparisons"].as_array().expect("rows").iter().find(|c| c["metric"] == "recall" && c["a"] == SMOL).expect("row");
    assert_eq!(gate["pairs"][0]["difference"], row["difference"]);
    assert_eq!(gate["pairs"][0]["interval"], row["interval"]);
    assert_eq!(gate["pairs"][0]["test"], row["test"]);

    // A metric the results cannot answer, and one without a direction, are clear errors.
    runner(&root)
        .arg("diff")
        .arg(&results)
        .args(["--cell-a", SMOL, "--cell-b", GEMMA, "--metric", "jaccard"])
        .assert()
        .code(1)
        .stderr(contains("no per-subject values of `jaccard`"));
    runner(&root)
        .arg("diff")
        .arg(&results)
        .args(["--cell-a", SMOL, "--cell-b", GEMMA, "--metric", "findings"])
        .assert()
        .code(1)
        .stderr(contains("no better direction"));
    runner(&root).arg("diff").arg(&results).args(["--metric", "recal"]).assert().code(1).stderr(contains("`--metric` must be a compare metric: recall"));
}

#[test]
fn the_keep_rule_falls_back_to_review_eval_counts_for_the_gate() {
    // scored.toml has a review-eval analysis but no compare analysis.
    let root = project_root();
    let results = root.join("results/scored/results.json");
    let cells: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&results).expect("results")).expect("json");
    let ids: Vec<String> = cells["cells"].as_array().expect("cells").iter().map(|c| c["cell"].as_str().expect("id").to_string()).collect();
    assert!(ids.len() >= 2, "{ids:?}");
    runner(&root)
        .arg("diff")
        .arg(&results)
        .args(["--cell-a", &ids[0], "--cell-b", &ids[1], "--metric", "recall"])
        .assert()
        .stdout(contains("(review-eval analysis)"))
        .stdout(contains("paired permutation"));
}

/// The keep rule on the committed replay-tools results: every regression says how likely the
/// judges are to see it, from the default rule's decision model; with `--matching-uncertainty`
/// only the likely ones count, and the rule says so.
#[test]
fn the_keep_rule_weighs_each_regression_by_how_sure_its_decisions_are() {
    let root = project_root();
    let results = root.join("results/replay-tools");
    let keep = |extra: &[&str]| {
        runner(&root).arg("diff").arg(&results).args(["--cell-a", "reviewer=review-bot", "--cell-b", "reviewer=heuristic"]).args(extra).output().expect("runs")
    };
    let plain = keep(&[]);
    let text = String::from_utf8_lossy(&plain.stdout).into_owned();
    assert_eq!(plain.status.code(), Some(5), "{text}");
    assert!(text.contains("regression   F04 (case-05)  found 1/1 → missed 1/1  (probability the judges see it regress 0.96)"), "{text}");
    let weighed = keep(&["--matching-uncertainty", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&weighed.stdout).expect("json");
    assert!(report["rule"].as_str().is_some_and(|r| r.contains("more likely than not")), "{}", report["rule"]);
    let changes = report["pairs"][0]["changes"].as_array().expect("changes");
    let regressions: Vec<&serde_json::Value> = changes.iter().filter(|c| c["movement"] == "regression").collect();
    assert!(!regressions.is_empty() && regressions.iter().all(|c| c["p_regressed"].as_f64().is_some_and(|p| (0.0..=1.0).contains(&p))), "{changes:?}");
    // These regressions are sure ones (and noise rose): the change is still rejected.
    assert_eq!(weighed.status.code(), Some(5));
}

#[test]
fn exec_writes_a_compact_summary_for_pull_requests() {
    let root = project_root();
    let tmp = tempfile::tempdir().expect("tempdir");
    let summary = tmp.path().join("summary.md");
    runner(&root)
        .args(["exec", "--frozen", "--quiet", "--cache-dir", "cache", "--work-dir"])
        .arg(tmp.path().join("work"))
        .arg("--output")
        .arg(tmp.path().join("out"))
        .arg("--summary")
        .arg(&summary)
        .arg("experiments/model-swap.toml")
        .assert()
        .success();
    let text = std::fs::read_to_string(&summary).expect("summary written");
    assert!(text.starts_with("### model-swap\n\n192 of 192 runs succeeded"), "{text}");
    assert!(text.contains("- **recall**, `gemma3-270m` − `smollm2-135m` (rag_symbol_max_definitions=0) = +0.000 [0.000, 0.000]"), "{text}");
    assert!(text.contains("| `model=smollm2-135m,rag_symbol_max_definitions=0` | 48/48 |"), "{text}");
    assert!(text.lines().count() < 30, "compact: {text}");
}
