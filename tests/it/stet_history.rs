//! `runner a2` end to end on the committed example history (CONTRACTS.md's format, written by
//! hand): the Markdown report, the JSON, `--out`, the side file, the skipped line, exit codes.

use super::*;

fn fixture(name: &str) -> PathBuf {
    project_root().join("tests/fixtures/stet-history").join(name)
}

#[test]
fn a2_reports_sessions_beside_stets_double_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = runner(dir.path()).arg("a2").arg(fixture("history.jsonl")).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = String::from_utf8(out.stdout).expect("utf-8");
    assert!(md.contains("8 records read, 1 lines skipped."), "{md}");
    assert!(md.contains("| 4 | not JSON"), "{md}");
    assert!(md.contains("| sessions | 3 | 8 | `sessions_count` |"), "{md}");
    assert!(md.contains("| findings | 12 | 32 | `total_findings` |"), "{md}");
    assert!(md.contains("| mean actionability (per session: 1 − dismissed/findings) | 0.700 | | |"), "{md}");
    // Stet's 1 − 11/32 is its `acceptance_rate`; its `actionability` is already_correct / dismissed = 2/11.
    assert!(md.contains("| pooled actionability (1 − dismissed/findings) | 0.667 | 0.656 | `acceptance_rate` |"), "{md}");
    assert!(md.contains("| already_correct/dismissed | | 0.182 | `actionability` |"), "{md}");
    assert!(md.contains("| `aaa1111@2026-11-30T10:00:00Z` | qwen2.5-coder:7b | 1, 2, 3 | 4 | 2 | 0.500 |"), "{md}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 4 skipped: not JSON"), "{stderr}");
}

#[test]
fn a2_json_and_out_with_a_side_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = runner(dir.path()).arg("a2").arg(fixture("history.jsonl")).arg("--models").arg(fixture("models.csv")).arg("--json").output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["summary"]["total_findings"], 12);
    assert_eq!(json["summary"]["total_dismissed"], 4);
    assert_eq!(json["stet_stats_quality"]["sessions_count"], 8);
    assert_eq!(json["stet_stats_quality"]["dismissals_by_reason"]["false_positive"], 3);
    assert_eq!(json["stet_stats_quality"]["acceptance_rate"], 21.0 / 32.0);
    assert_eq!(json["stet_stats_quality"]["actionability"], 2.0 / 11.0);
    assert_eq!(json["sessions"][1]["model"], "gpt-4o-mini");
    assert_eq!(json["skipped"][0]["line"], 4);
    let models: Vec<&str> = json["models"].as_array().expect("models").iter().filter_map(|m| m["model"].as_str()).collect();
    assert_eq!(models, ["gpt-4o-mini", "qwen2.5-coder:7b"]);

    let report = dir.path().join("report");
    let out = runner(dir.path()).arg("a2").arg(fixture("history.jsonl")).arg("--out").arg(&report).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    let md = std::fs::read_to_string(report.join("A2.md")).expect("A2.md");
    assert!(md.starts_with("# A2: actionability from stet's history"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report.join("a2.json")).expect("a2.json")).expect("JSON");
    assert_eq!(json["summary"]["sessions"], 3);
}

#[test]
fn a2_fails_only_when_no_line_is_readable() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("history.jsonl"), "not json\n{\"diff_ref\":\"a\"}\n").expect("write");
    let out = runner(dir.path()).args(["a2", "history.jsonl"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("0 records read, 2 lines skipped."), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no record could be read"), "{stderr}");
    let missing = runner(dir.path()).args(["a2", "absent.jsonl"]).output().expect("runs");
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("failed to read `absent.jsonl`"));
}

/// On a history the real stet wrote (two dismissals, then `finish`), runner's `stats quality`
/// is what the real `stet stats quality --format=json` printed, field for field and number for
/// number; A2 over the same file finds one session.
#[test]
fn a2_reports_what_the_real_stets_stats_quality_printed() {
    let real = project_root().join("tests/fixtures/stet-real/mock-dismiss");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = runner(dir.path()).arg("a2").arg(real.join("history.jsonl")).arg("--json").output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let printed = std::fs::read_to_string(real.join("stats-quality.json")).expect("stet's output");
    let stet: serde_json::Value = serde_json::from_str(&printed).expect("JSON");
    // Values equal as JSON values: integral rates are written `0`, as stet writes them, not `0.0`.
    assert_eq!(json["stet_stats_quality"], stet);
    // Stet's field order.
    let order = [
        "sessions_count",
        "total_findings",
        "total_dismissed",
        "dismissal_rate",
        "acceptance_rate",
        "false_positive_rate",
        "actionability",
        "clean_commit_rate",
        "finding_density",
        "dismissals_by_reason",
        "category_breakdown",
    ];
    let at: Vec<Option<usize>> = order.iter().map(|k| printed.find(&format!("\"{k}\":"))).collect();
    assert!(at.iter().all(Option::is_some) && at.windows(2).all(|w| w[0] < w[1]), "stet's order: {printed}");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let block = text.split("\n  \"stet_stats_quality\": {\n").nth(1).and_then(|rest| rest.split("\n  },").next()).expect("the stet block");
    let ours: Vec<&str> = block.lines().filter_map(|l| l.strip_prefix("    \"")).filter_map(|l| l.split('"').next()).collect();
    assert_eq!(ours, order);
    assert_eq!(json["stet_stats_quality"]["actionability"], 0.25, "1 already_correct of 4 dismissed");
    assert_eq!(json["summary"]["sessions"], 1);
    assert_eq!((json["summary"]["total_findings"].as_u64(), json["summary"]["total_dismissed"].as_u64()), (Some(3), Some(2)));
    assert_eq!(json["summary"]["pooled_actionability"], 1.0 - 2.0 / 3.0);
}
