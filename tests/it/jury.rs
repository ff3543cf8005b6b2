//! Recorded judges on a jury: `[judges.NAME] kind = "replay"` reads a judge's match decisions
//! in the code-review benchmark's judgements format (hand-written fixtures here, in that
//! format), and a `jury` analysis measures them beside runner's matcher, end to end from the
//! CLI; and the manifest mistakes around them, located.

use super::*;
use serde_json::Value;

/// A judgements file (hand-written, in the benchmark's format) for the two-change corpus of
/// `judge_fake_server::judged_matching_experiment`, whose tool is `sentinel-tool`: p-1's
/// golden comment found or not, p-2's found or not, each review with its unmatched issues.
fn judgements(judge: &str, p1: bool, p2: bool, unmatched: usize) -> String {
    let label = |found: bool, text: &str| if found { format!("\"{text}\"") } else { "null".to_string() };
    let extra: Vec<String> = (0..unmatched).map(|i| format!("\"extra issue {i}\"")).collect();
    format!(
        r#"{{"judge": "{judge}", "records": [
  {{"pr": "https://example.com/fork/pull/1", "project": "p", "tool": "sentinel-tool", "skipped": false,
    "golden": [{{"comment": "eval of untrusted code runs arbitrary code", "severity": "Critical", "matched_candidate": {}}}],
    "unmatched_candidates": [{}]}},
  {{"pr": "https://example.com/fork/pull/2", "project": "p", "tool": "sentinel-tool", "skipped": false,
    "golden": [{{"comment": "the new function has no docstring", "severity": "Low", "matched_candidate": {}}}],
    "unmatched_candidates": []}}]}}"#,
        label(p1, "eval is dangerous"),
        extra.join(", "),
        label(p2, "no docstring"),
    )
}

const REPLAYED: &str = "[judges.first]\nkind = \"replay\"\npath = \"first.json\"\nfamily = \"claude\"\n\
                        [judges.second]\nkind = \"replay\"\npath = \"second.json\"\nfamily = \"claude\"\n\
                        [judges.third]\nkind = \"replay\"\npath = \"third.json\"\nfamily = \"gpt\"\n";

#[test]
fn replayed_judges_sit_on_a_jury_beside_the_matcher_and_ask_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("first.json"), judgements("judge-one", true, true, 1)).expect("first");
    std::fs::write(dir.path().join("second.json"), judgements("judge-two", true, false, 0)).expect("second");
    std::fs::write(dir.path().join("third.json"), judgements("judge-three", false, true, 3)).expect("third");
    let manifest = crate::judge_fake_server::jury_experiment(dir.path(), REPLAYED);

    let plan = runner(dir.path()).args(["plan", "--cache-dir", "cache"]).arg(&manifest).output().expect("plan");
    let text = stdout_of(&plan);
    assert!(plan.status.success(), "{}", stderr_of(&plan));
    assert!(text.lines().any(|l| l.trim_start().starts_with("match") && l.contains(" 6  ")), "two runs × three judges: {text}");

    let out = runner(dir.path()).args(["exec", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("exec");
    assert!(out.status.success(), "{}", stderr_of(&out));
    // Nothing was asked, so nothing was stored: a replayed decision is read, not cached.
    let values = dir.path().join("cache/values");
    let stored = std::fs::read_dir(&values).map(|d| d.count()).unwrap_or(0);
    assert_eq!(stored, 0, "no stage value stored under {}", values.display());

    let results: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results")).expect("json");
    let jury = &results["analyses"][0];
    let cell = &jury["data"]["cells"][0];
    let judge = |i: usize, key: &str| cell["judges"][i][key].as_f64();
    // first [yes, yes], second [yes, no], third [no, yes]: majorities yes, yes.
    assert_eq!((judge(0, "recall"), judge(1, "recall"), judge(2, "recall")), (Some(1.0), Some(0.5), Some(0.5)), "{cell}");
    assert_eq!(cell["majority_recall"], 1.0, "{cell}");
    // Precision over each judge's own reading: TP / (TP + its unmatched issues).
    assert_eq!((judge(0, "precision"), judge(1, "precision"), judge(2, "precision")), (Some(2.0 / 3.0), Some(1.0), Some(0.25)), "{cell}");
    // The matcher finds p-2's by its words, not p-1's: against the majority [yes, yes] it agrees once.
    assert_eq!(cell["matcher"]["recall"], 0.5, "{cell}");
    let panel = &jury["data"]["jury"];
    assert_eq!(panel["cells"], 2);
    assert_eq!(panel["ties"], 0);
    assert_eq!(panel["matcher_vs_majority_agreement"], 0.5, "{panel}");
    // first × third agree on p-2 only.
    let pairs = panel["pairs"].as_array().expect("pairs");
    let first_third = pairs.iter().find(|p| p["a"] == "first" && p["b"] == "third").expect("first × third");
    assert_eq!(first_third["agreement"], 0.5, "{first_third}");
    assert_eq!(jury["data"]["agreement"][2]["matcher"]["kappa"], 1.0, "the matcher decides as `third` does: {}", jury["data"]);
    let report = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(report.contains("| `first` × `third` | 2 | 0.500 |"), "{report}");
    assert!(report.contains("A replayed judge decided on its own reading of each review"), "{report}");

    // Frozen: the reviews come from the cache, the decisions from the files.
    let frozen = runner(dir.path()).args(["exec", "--frozen", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("frozen");
    assert!(frozen.status.success(), "{}", stderr_of(&frozen));
}

#[test]
fn replayed_judges_answer_only_a_jury_and_their_mistakes_are_located() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("first.json"), judgements("judge-one", true, true, 0)).expect("first");
    // A replayed judge on an `evidence = "judge"` analysis: it has no answer about pairs of texts.
    let judged = crate::judge_fake_server::judged_matching_experiment(
        dir.path(),
        "[judges.first]\nkind = \"replay\"\npath = \"first.json\"\nfamily = \"claude\"\n[judges.gone]\nkind = \"replay\"\npath = \"missing.json\"\nfamily = \"Gpt\"\n",
    );
    let out = runner(dir.path()).args(["validate"]).arg(&judged).output().expect("validate");
    let text = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("judgements file") && text.contains("missing.json` does not exist"), "{text}");
    assert!(text.contains("`family` `Gpt` must be lowercase"), "{text}");
    assert!(text.contains("judged.toml:"), "located: {text}");

    let fine =
        crate::judge_fake_server::judged_matching_experiment(dir.path(), "[judges.first]\nkind = \"replay\"\npath = \"first.json\"\nfamily = \"claude\"\n");
    let out = runner(dir.path()).args(["validate"]).arg(&fine).output().expect("validate");
    let text = stderr_of(&out);
    assert!(text.contains("judge `first` replays recorded decisions, but `evidence = \"judge\"` asks every judge about pairs of texts"), "{text}");

    let jury = crate::judge_fake_server::jury_experiment(dir.path(), "");
    let out = runner(dir.path()).args(["validate"]).arg(&jury).output().expect("validate");
    assert!(stderr_of(&out).contains("analysis `jury` measures the judges, but no judges are declared"), "{}", stderr_of(&out));
}
