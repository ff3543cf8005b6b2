//! Importing filled sheets: rows back to runs, dispositions to claims and verdicts, and every
//! rejection located by sheet line and item.

use super::*;
use serde_json::json;

/// Two cells × one case with findings (F01, F02) and one clean case, repeat 1..2; the
/// heuristic cell's repeat 2 on case-01 has no cached result.
fn fixture(sheet_rows: &[[&str; 3]]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = dir.path().join("corpus");
    std::fs::create_dir_all(&corpus).expect("mkdir");
    std::fs::write(
        corpus.join("oracle.json"),
        json!({"version": 1, "findings": [{"id": "F01", "description": "a"}, {"id": "F02", "description": "b"}],
        "cases": [
            {"id": "case-01", "expectedFindingIds": ["F01", "F02"], "rationale": "r", "groundTruth": "g"},
            {"id": "case-06", "expectedFindingIds": [], "rationale": "r", "groundTruth": "g"}
        ]})
        .to_string(),
    )
    .expect("write");
    let run = |cell: &str, repeat: u32, case: &str, submitted: bool, findings: &[&str]| KeyRun {
        cell: cell.into(),
        repeat,
        case: case.into(),
        cache_key: format!("{cell}{repeat}{case}"),
        order: 0,
        submitted,
        complete: submitted,
        metrics: submitted.then(|| Metrics { latency_ms: Some(10.0), ..Metrics::default() }),
        findings: findings.iter().map(|f| f.to_string()).collect(),
    };
    let key = Key {
        version: KEY_VERSION,
        experiment: "x".into(),
        manifest: "x.toml".into(),
        corpus: corpus.clone(),
        seed: 1,
        cells: vec!["a".into(), "b".into()],
        repeats: 2,
        cases: vec!["case-01".into(), "case-06".into()],
        runs: vec![
            run("a", 1, "case-01", true, &["h1", "h2"]),
            run("a", 1, "case-06", true, &["h3"]),
            run("a", 2, "case-01", true, &["h1"]),
            run("a", 2, "case-06", true, &[]),
            run("b", 1, "case-01", true, &["h4", "h5"]),
            run("b", 1, "case-06", true, &[]),
            run("b", 2, "case-01", false, &[]),
            run("b", 2, "case-06", true, &[]),
        ],
        items: BTreeMap::from([
            ("A001".to_string(), KeyItem { case: "case-01".into(), occurrences: vec![(0, 0), (2, 0)] }),
            ("A002".to_string(), KeyItem { case: "case-01".into(), occurrences: vec![(0, 1)] }),
            ("A003".to_string(), KeyItem { case: "case-01".into(), occurrences: vec![(4, 0)] }),
            ("A004".to_string(), KeyItem { case: "case-01".into(), occurrences: vec![(4, 1)] }),
            ("A005".to_string(), KeyItem { case: "case-06".into(), occurrences: vec![(1, 0)] }),
        ]),
        filled_by: None,
    };
    let key_path = dir.path().join(KEY_FILE);
    std::fs::write(&key_path, serde_json::to_string(&key).expect("json")).expect("write");
    let rows: Vec<Vec<String>> = sheet_rows
        .iter()
        .map(|[item, disposition, oracle_id]| {
            let case = if *item == "A005" { "case-06" } else { "case-01" };
            [*item, case, "a.py", "3", "error", "bug", "message, with a comma", "", disposition, oracle_id, ""].iter().map(|s| s.to_string()).collect()
        })
        .collect();
    let sheet = sheet::write(&SHEET_COLUMNS, &rows).expect("writes");
    let sheet_path = dir.path().join(SHEET_FILE);
    std::fs::write(&sheet_path, sheet).expect("write");
    (dir, sheet_path, key_path)
}

const FILLED: [[&str; 3]; 5] =
    [["A001", "verified", "F01"], ["A002", "false_positive", ""], ["A003", "partial", "F01"], ["A004", "found", "F02"], ["A005", "rejected", ""]];

#[test]
fn a_filled_sheet_becomes_seed_002_captured_results() {
    let (_dir, sheet, key) = fixture(&FILLED);
    let imported = import(&sheet, &key, None).expect("imports");
    let c = &imported.captured;
    assert_eq!(c.plan.trial_ids, vec!["trial-01", "trial-02"]);
    assert_eq!(c.strategies.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["a", "b"]);
    let a = &c.strategies[0];
    assert_eq!(a.runs.len(), 4);
    assert_eq!(
        a.runs[0].findings,
        vec![Claim { id: "F01".into(), disposition: Disposition::Verified }, Claim { id: "case-01-fp-01".into(), disposition: Disposition::FalsePositive }]
    );
    assert_eq!(a.runs[1].findings, vec![Claim { id: "case-06-fp-01".into(), disposition: Disposition::FalsePositive }]);
    assert_eq!(a.runs[2].findings, vec![Claim { id: "F01".into(), disposition: Disposition::Verified }]);
    let b = &c.strategies[1];
    assert_eq!(b.runs.len(), 3, "the uncached run is omitted, so it scores as a miss");
    assert_eq!(b.runs[0].findings.len(), 2);
    assert!(b.runs[0].findings.contains(&Claim { id: "case-01-partial-F01".into(), disposition: Disposition::Unresolved }));

    let oracle = oracle::load_file(&imported.oracle).expect("oracle");
    assert!(score::check(c, &oracle).is_empty());
    let s = score::score(c, &oracle, &imported.adjudication.method, "", "");
    // a: verified F01 twice (two runs), 2 false positives → precision 0.5; recall 2 / (2 × 2).
    assert_eq!(s.strategies[0].precision, Some(0.5));
    assert_eq!(s.strategies[0].recall, Some(0.5));
    assert_eq!(s.strategies[0].clean_case_false_positive_rate, Some(0.5));
    // b: F02 verified once, F01 partial (unresolved) → precision 1, recall 0.25.
    assert_eq!(s.strategies[1].precision, Some(1.0));
    assert_eq!(s.strategies[1].recall, Some(0.25));
    assert_eq!(s.strategies[1].coverage.omitted_case_trials.len(), 1);
    assert!(s.method.starts_with("adjudicated by a person: "), "{}", s.method);

    // Seed 003: per run, oracle findings found / partial / missed, extras real / rejected.
    let runs = &imported.adjudication.runs;
    let b1 = runs.iter().find(|r| r.cell == "b" && r.repeat == 1 && r.case == "case-01").expect("b #1");
    assert_eq!(b1.oracle.get("F01"), Some(&Seed003Verdict::Partial));
    assert_eq!(b1.oracle.get("F02"), Some(&Seed003Verdict::Found));
    let a2 = runs.iter().find(|r| r.cell == "a" && r.repeat == 2 && r.case == "case-01").expect("a #2");
    assert_eq!(a2.oracle.get("F02"), Some(&Seed003Verdict::Missed));
    let a1 = runs.iter().find(|r| r.cell == "a" && r.repeat == 1 && r.case == "case-01").expect("a #1");
    assert_eq!((a1.real_extras, a1.rejected_extras), (0, 1));
    assert_eq!(a1.reported.iter().map(|f| f.finding.as_str()).collect::<Vec<_>>(), vec!["h1", "h2"]);
}

#[test]
fn written_results_carry_their_method_to_the_scorer() {
    let (dir, sheet, key) = fixture(&FILLED);
    let imported = import(&sheet, &key, None).expect("imports");
    let out = dir.path().join("out/captured-results.json");
    let files = write_imported(&imported, &out).expect("writes");
    assert_eq!(files[1], dir.path().join("out/captured-results.adjudication.json"));
    let reread = score::load_captured(&out).expect("seed 002 format");
    assert_eq!(reread, imported.captured);
    assert_eq!(score::recorded_method(&out), Some(format!("adjudicated by a person: {}", sheet.display())));
}

fn problems(rows: &[[&str; 3]]) -> Vec<String> {
    let (_dir, sheet, key) = fixture(rows);
    match import(&sheet, &key, None) {
        Err(AdjudicationError::Invalid { problems, .. }) => problems,
        other => panic!("expected problems, got {other:?}"),
    }
}

fn one(problems: &[String], needle: &str) {
    assert_eq!(problems.iter().filter(|p| p.contains(needle)).count(), 1, "{needle:?} in {problems:#?}");
}

#[test]
fn every_bad_row_is_reported_with_its_line() {
    let p = problems(&[
        ["A001", "", ""],
        ["A002", "verified", ""],
        ["A003", "verified", "F07"],
        ["A004", "false_positive", "F01"],
        ["A005", "maybe", ""],
        ["A009", "verified", "F01"],
    ]);
    one(&p, "sheet.csv:2: item `A001`: column `disposition`: empty; every row needs a label");
    one(&p, "sheet.csv:3: item `A002`: `verified` needs an `oracle_id`");
    one(&p, "sheet.csv:4: item `A003`: `F07` is not a finding `case-01` expects");
    one(&p, "sheet.csv:5: item `A004`: `false_positive` cannot name oracle finding `F01`");
    one(&p, "sheet.csv:6: item `A005`: column `disposition`: `maybe` is not one of `verified`");
    one(&p, "sheet.csv:7: item `A009`: column `item`: not in the key");

    let p = problems(&[["A001", "verified", "F01"], ["A001", "verified", "F01"], ["A005", "false_positive", "case-01-fp-01"]]);
    one(&p, "listed twice");
    for missing in ["A002", "A003", "A004"] {
        one(&p, &format!("sheet.csv: item `{missing}`: column `item`: missing from the sheet"));
    }
    one(&p, "must be scoped to its case, like `case-06-fp-01`");
}

#[test]
fn unknown_columns_and_mismatched_cases_are_rejected() {
    let (_dir, sheet, key) = fixture(&FILLED);
    let text = std::fs::read_to_string(&sheet).expect("read").replacen("note", "strategy", 1).replacen("A005,case-06", "A005,case-01", 1);
    std::fs::write(&sheet, text).expect("write");
    let Err(AdjudicationError::Invalid { problems, .. }) = import(&sheet, &key, None) else { panic!("expected problems") };
    one(&problems, "unknown column `strategy`");
    one(&problems, "case `case-01` does not match the key's `case-06`");
}
