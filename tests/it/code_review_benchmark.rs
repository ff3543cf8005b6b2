//! The public code-review benchmark as runner's external target: the converter
//! (`scripts/code-review-benchmark/convert.py`, a real Python process) on a tiny fixture in
//! the benchmark's format, and the committed conversion's counts.

use super::*;
use std::collections::BTreeMap;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[test]
fn the_converter_writes_changes_oracle_and_one_jsonl_per_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    write(
        &src.join("golden_comments/sentry.json"),
        r#"[{"pr_title": "Paginate", "url": "https://github.com/getsentry/sentry/pull/93824", "comments": [
              {"comment": "Django querysets do not support negative slicing", "severity": "High"},
              {"comment": "Typo in the docstring", "severity": "Low"}]},
            {"pr_title": "Spans", "url": "https://github.com/ai-code-review-evaluation/sentry-greptile/pull/2", "original_url": "https://github.com/getsentry/sentry/pull/92393",
             "comments": [{"comment": "The lock is never released", "severity": "Critical"}]}]"#,
    );
    write(
        &src.join("golden_comments/cal_dot_com.json"),
        r#"[{"pr_title": "Backup codes", "url": "https://github.com/calcom/cal.com/pull/10600", "comments": [{"comment": "Case-sensitive check", "severity": "Medium"}]}]"#,
    );
    write(
        &src.join("candidates.gpt-5.2.json"),
        r#"{"https://github.com/getsentry/sentry/pull/93824": {
              "augment": [{"text": "Negative offsets reach queryset slicing", "path": null, "line": null, "source": "extracted"}],
              "kg": []},
            "https://github.com/calcom/cal.com/pull/10600": {
              "augment": [{"text": "Backup codes compared case-sensitively", "path": null, "line": null, "source": "extracted"},
                          {"text": "Rename the file", "path": null, "line": null, "source": "extracted"}]}}"#,
    );
    write(
        &src.join("pr_labels.json"),
        r#"{"https://github.com/getsentry/sentry/pull/93824": {"derived": {"language": "Python", "num_golden_comments": 2}, "llm_pr_labels": {"requires_context": "file"}}}"#,
    );
    write(&src.join("LICENSE"), "MIT License\n");
    let out = dir.path().join("out");
    let run =
        StdCommand::new("python3").arg(project_root().join("scripts/code-review-benchmark/convert.py")).arg(&src).arg(&out).output().expect("python3 runs");
    assert!(run.status.success(), "{}", stderr_of(&run));
    assert_eq!(stdout_of(&run), "3 subjects, 4 oracle findings (Critical 1, High 1, Medium 1, Low 1), 2 tools\n");

    let changes: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("changes.json")).expect("changes")).expect("json");
    assert_eq!(
        changes,
        serde_json::json!([
            {"id": "calcom-10600", "title": "Backup codes", "url": "https://github.com/calcom/cal.com/pull/10600"},
            {"id": "sentry-2", "title": "Spans", "url": "https://github.com/ai-code-review-evaluation/sentry-greptile/pull/2"},
            {"id": "sentry-93824", "title": "Paginate", "url": "https://github.com/getsentry/sentry/pull/93824"},
        ])
    );
    let oracle: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("oracle.json")).expect("oracle")).expect("json");
    let findings = oracle["findings"].as_array().expect("findings");
    let by_id: BTreeMap<&str, &serde_json::Value> = findings.iter().map(|f| (f["id"].as_str().expect("id"), f)).collect();
    assert_eq!(
        *by_id["sentry-2/G1"],
        serde_json::json!({"id": "sentry-2/G1", "caseId": "sentry-2", "description": "The lock is never released", "severity": "error", "blocking": true, "severityLabel": "Critical"})
    );
    assert_eq!((by_id["sentry-93824/G1"]["severity"].as_str(), by_id["sentry-93824/G1"]["blocking"].as_bool()), (Some("error"), Some(false)));
    assert_eq!(by_id["calcom-10600/G1"]["severity"], "warning");
    assert_eq!(by_id["sentry-93824/G2"]["severity"], "info");
    assert!(oracle["cases"][1]["rationale"].as_str().is_some_and(|r| r.contains("getsentry/sentry/pull/92393")), "{}", oracle["cases"][1]);

    let augment = std::fs::read_to_string(out.join("tools/augment.jsonl")).expect("augment");
    let rows: Vec<serde_json::Value> = augment.lines().map(|l| serde_json::from_str(l).expect("row")).collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0], serde_json::json!({"subject": "calcom-10600", "file": null, "line": null, "message": "Backup codes compared case-sensitively"}));
    assert_eq!(std::fs::read_to_string(out.join("tools/kg.jsonl")).expect("kg"), "", "an empty review has no rows");
    assert_eq!(std::fs::read_to_string(out.join("LICENSE")).expect("licence"), "MIT License\n");
    assert!(std::fs::read_to_string(out.join("README.md")).expect("readme").contains("| `sentry-93824` | Python | file | 2 |"));

    // Deterministic: a second conversion writes the same bytes.
    let again = dir.path().join("again");
    let run =
        StdCommand::new("python3").arg(project_root().join("scripts/code-review-benchmark/convert.py")).arg(&src).arg(&again).output().expect("python3 runs");
    assert!(run.status.success());
    for file in ["changes.json", "oracle.json", "tools/augment.jsonl", "README.md"] {
        assert_eq!(std::fs::read(out.join(file)).expect("first"), std::fs::read(again.join(file)).expect("second"), "{file}");
    }

    // A golden count that disagrees with pr_labels.json is an error, not a silent conversion.
    write(&src.join("pr_labels.json"), r#"{"https://github.com/getsentry/sentry/pull/93824": {"derived": {"num_golden_comments": 3}}}"#);
    let run = StdCommand::new("python3")
        .arg(project_root().join("scripts/code-review-benchmark/convert.py"))
        .arg(&src)
        .arg(dir.path().join("bad"))
        .output()
        .expect("python3 runs");
    assert!(!run.status.success() && stderr_of(&run).contains("pr_labels.json counts 3"), "{}", stderr_of(&run));
}

#[test]
fn the_committed_conversion_holds_the_benchmarks_counts() {
    let dir = project_root().join("corpus/code-review-benchmark");
    let changes: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(dir.join("changes.json")).expect("changes")).expect("json");
    assert_eq!(changes.len(), 50);
    let oracle: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("oracle.json")).expect("oracle")).expect("json");
    let findings = oracle["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 137);
    let mut levels: BTreeMap<String, usize> = BTreeMap::new();
    for f in findings {
        *levels.entry(f["severityLabel"].as_str().expect("label").to_string()).or_default() += 1;
        assert!(f.get("file").is_none() && f.get("line").is_none(), "change level: {f}");
    }
    assert_eq!(levels, BTreeMap::from([("Critical".into(), 9), ("High".into(), 41), ("Medium".into(), 47), ("Low".into(), 40)]));
    let mut tools: Vec<String> = std::fs::read_dir(dir.join("tools"))
        .expect("tools")
        .map(|e| e.expect("entry").file_name().to_string_lossy().trim_end_matches(".jsonl").to_string())
        .collect();
    tools.sort();
    assert_eq!(tools, ["augment", "baz", "bugbot", "claude", "coderabbit", "copilot", "gemini", "graphite", "greptile", "kg", "propel", "qodo"]);
    let ids: std::collections::BTreeSet<&str> = changes.iter().filter_map(|c| c["id"].as_str()).collect();
    let mut rows = 0;
    for tool in &tools {
        for line in std::fs::read_to_string(dir.join("tools").join(format!("{tool}.jsonl"))).expect("jsonl").lines() {
            let row: serde_json::Value = serde_json::from_str(line).expect("row");
            assert!(ids.contains(row["subject"].as_str().expect("subject")), "{tool}: {row}");
            rows += 1;
        }
    }
    assert_eq!(rows, 1978, "every candidate comment of the 12 tools");
    assert!(std::fs::read_to_string(dir.join("LICENSE")).expect("licence").starts_with("MIT License"));
}

#[test]
fn plan_estimates_from_the_bundled_results_how_many_subjects_each_comparison_needs() {
    let root = project_root();
    let out = runner(&root).args(["plan", "--json", "--cache-dir", "cache", "experiments/code-review-benchmark.toml"]).output().expect("plan");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout_of(&out)).expect("json");
    let power = doc["power"].as_array().expect("power estimates");
    assert_eq!(power.len(), 11, "each tool against Cursor Bugbot, on the headline metric: {power:?}");
    let of = |tool: &str| power.iter().find(|p| p["b"] == tool).unwrap_or_else(|| panic!("{tool}: {power:?}"));
    let graphite = of("graphite");
    assert_eq!((graphite["metric"].as_str(), graphite["pilot_subjects"].as_u64()), (Some("f1"), Some(50)));
    // Graphite's F1 is far below Bugbot's: few subjects; Augment's is within 0.01: none suffice.
    let needed = |p: &serde_json::Value| p["estimate"]["subjects"].as_u64();
    assert!(needed(graphite).is_some_and(|n| n <= 20), "{graphite}");
    assert!(needed(of("augment")).is_none(), "{}", of("augment"));
    assert!(needed(of("greptile")) > needed(of("baz")), "a smaller difference needs more subjects");
    let text = stdout_of(&runner(&root).args(["plan", "--cache-dir", "cache", "experiments/code-review-benchmark.toml"]).output().expect("plan"));
    assert!(text.contains("  pilot: f1 graphite − bugbot = -0.334 over 50 subjects: about"), "{text}");
}
