//! H7 and H8 imports: hand-computed distributions, Wilson intervals and the confusion matrix
//! on small filled sheets; a sheet with the key's mistakes is refused.

use super::*;
use crate::subject::corpus::CaseSource;

fn key(study: Study, items: &[(&str, &str, &str)]) -> StudyKey {
    StudyKey {
        version: KEY_VERSION,
        study,
        experiment: "x".into(),
        manifest: "x.toml".into(),
        seed: 1,
        sample: 40,
        eligible: items.len(),
        cells: vec!["a".into(), "b".into()],
        items: items
            .iter()
            .map(|(id, cell, severity)| {
                (
                    id.to_string(),
                    StudyItem { cell: cell.to_string(), case: "case-01".into(), severity: severity.to_string(), occurrences: vec![(1, "h".into())] },
                )
            })
            .collect(),
        axis: None,
    }
}

fn run(study: Study, items: &[(&str, &str, &str)], sheet: &str) -> (tempfile::TempDir, Result<StudyResult, AdjudicationError>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let key_path = dir.path().join(KEY_FILE);
    std::fs::write(&key_path, serde_json::to_string(&key(study, items)).expect("json")).expect("write");
    let sheet_path = dir.path().join(SHEET_FILE);
    std::fs::write(&sheet_path, sheet).expect("write");
    let result = import(&sheet_path, &key_path);
    (dir, result)
}

fn close(a: Option<(f64, f64)>, b: (f64, f64)) {
    let a = a.expect("an interval");
    assert!((a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9, "{a:?} vs {b:?}");
}

const HEAD_H8: &str = "item,case,file,line,severity,category,message,suggestion,verdict,suggested_severity,note,rater\n";

#[test]
fn h8_misclassification_per_cell_with_wilson_and_the_confusion_matrix() {
    let items = [("S001", "a", "error"), ("S002", "a", "warning"), ("S003", "a", "info"), ("S004", "b", "nitpick"), ("S005", "b", "error")];
    let sheet = format!(
        "{HEAD_H8}S001,case-01,a.py,3,error,bug,m,,correct,,,ann\nS002,case-01,a.py,4,warning,bug,m,,too_high,info,,ann\n\
S003,case-01,a.py,5,info,style,m,,correct,,,ann\nS004,case-01,a.py,6,nitpick,bug,m,,too_low,warning,,ann\nS005,case-01,a.py,7,error,bug,m,,too_high,warning,,ann\n"
    );
    let (_dir, result) = run(Study::H8, &items, &sheet);
    let r = result.expect("imports");
    assert_eq!(r.raters, ["ann"]);
    let [a, b, all] = &r.cells[..] else { panic!("three rows: {:?}", r.cells) };
    assert_eq!((a.cell.as_str(), a.n, b.n, all.n), ("a", 3, 2, 5));
    assert_eq!(a.labels, BTreeMap::from([("correct".into(), 2), ("too_high".into(), 1), ("too_low".into(), 0)]));
    let mis = |c: &CellResult| c.shares["misclassified"].clone();
    assert_eq!((mis(a).count, mis(a).of, mis(b).count, mis(all).count), (1, 3, 2, 3));
    close(mis(a).wilson95, (0.06149194472039621, 0.7923403991979522));
    close(mis(b).wilson95, (0.34238022750665303, 1.0));
    close(mis(all).wilson95, (0.2307242812760128, 0.882379225767352));
    let confusion = r.confusion.clone().expect("a matrix");
    let cell = |rep: &str, human: &str| confusion.get(rep).and_then(|m| m.get(human)).copied().unwrap_or(0);
    assert_eq!([cell("error", "error"), cell("error", "warning"), cell("warning", "info"), cell("info", "info"), cell("nitpick", "warning")], [1, 1, 1, 1, 1]);
    assert_eq!(confusion.values().flat_map(|m| m.values()).sum::<u64>(), 5);
    let md = r.to_markdown();
    assert!(md.contains("| a | 3 | 2 | 1 | 0 | 1/3 = 33.3 % [6.1, 79.2] |"), "{md}");
    assert!(md.contains("| error | 1 | 1 | 0 | 0 |"), "{md}");
}

#[test]
fn h7_distribution_and_share_harmful() {
    let items = [("S001", "a", "error"), ("S002", "a", "warning"), ("S003", "a", "info"), ("S004", "a", "error"), ("S005", "b", "error")];
    let head = "item,case,file,line,severity,category,message,suggestion,quality,note,rater\n";
    let rows = [("S001", "correct_safe"), ("S002", "harmful"), ("S003", "partial"), ("S004", "correct_safe"), ("S005", "wrong")];
    let sev = |id: &str| items.iter().find(|i| i.0 == id).map(|i| i.2).unwrap_or("");
    let sheet: String =
        std::iter::once(head.to_string()).chain(rows.iter().map(|(id, q)| format!("{id},case-01,a.py,3,{},bug,m,fix it,{q},,ann\n", sev(id)))).collect();
    let (_dir, result) = run(Study::H7, &items, &sheet);
    let r = result.expect("imports");
    let [a, b, all] = &r.cells[..] else { panic!("three rows") };
    assert_eq!(a.labels, BTreeMap::from([("correct_safe".into(), 2), ("harmful".into(), 1), ("partial".into(), 1), ("wrong".into(), 0)]));
    assert_eq!(b.labels["wrong"], 1);
    assert_eq!((a.shares["correct_safe"].count, a.shares["harmful"].count, all.shares["harmful"].count, all.n), (2, 1, 1, 5));
    close(a.shares["correct_safe"].wilson95, (0.15003898915214947, 0.8499610108478506));
    close(a.shares["harmful"].wilson95, (0.04558726080970055, 0.6993581574175981));
    close(all.shares["harmful"].wilson95, (0.03622410863243014, 0.6244653702374747));
    assert!(r.confusion.is_none());
}

#[test]
fn a_sheet_that_does_not_match_its_key_is_refused_row_by_row() {
    let items = [("S001", "a", "error"), ("S002", "a", "warning")];
    let sheet = format!("{HEAD_H8}S001,case-01,a.py,3,warning,bug,m,,correct,,,ann\nS002,case-01,a.py,4,warning,bug,m,,too_low,,,ann\n");
    let (_dir, result) = run(Study::H8, &items, &sheet);
    let Err(AdjudicationError::Invalid { problems, .. }) = result else { panic!("refused") };
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].ends_with(
            "sheet.csv:3: item `S002`: column `suggested_severity`: empty; required when `verdict` is `too_low` (one of `error`, `warning`, `info`, `nitpick`)"
        ),
        "{problems:#?}"
    );
    assert!(problems[1].ends_with("sheet.csv:2: item `S001`: column `severity`: `warning` is not the exported `error`"), "{problems:#?}");
}

const HEAD_H1: &str = "item,case,file,line,severity,category,message,suggestion,label,note,rater\n";

/// Imports one H1 sheet per `(rater, labels)`, the labels in item order.
fn run_h1(items: &[(&str, &str, &str)], raters: &[(&str, &[&str])]) -> (tempfile::TempDir, Result<StudyResult, AdjudicationError>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let key_path = dir.path().join(KEY_FILE);
    std::fs::write(&key_path, serde_json::to_string(&key(Study::H1, items)).expect("json")).expect("write");
    let mut sheets = Vec::new();
    for (rater, labels) in raters {
        let rows: String = items.iter().zip(labels.iter()).map(|((id, _, sev), l)| format!("{id},case-01,a.py,3,{sev},bug,m,,{l},,{rater}\n")).collect();
        let path = dir.path().join(format!("{}.csv", rater.replace(' ', "-")));
        std::fs::write(&path, format!("{HEAD_H1}{rows}")).expect("write");
        sheets.push(path);
    }
    let result = import_sheets(&sheets, &key_path);
    (dir, result)
}

const SIX: [(&str, &str, &str); 6] =
    [("S001", "a", "error"), ("S002", "a", "warning"), ("S003", "a", "info"), ("S004", "a", "error"), ("S005", "b", "error"), ("S006", "b", "info")];

#[test]
fn h1_two_raters_cohen_kappa_before_aggregation_then_precision_per_cell() {
    // ann: A A F W A O; bob: A F F A A O (A actionable, F false_positive, W wrong_suggestion,
    // O out_of_scope). Same on S001, S003, S005, S006: p_o = 4/6.
    // Marginals ann A 3, F 1, W 1, O 1; bob A 3, F 2, O 1 (of 6):
    // p_e = 3/6·3/6 + 1/6·2/6 + 1/6·0 + 1/6·1/6 = (9 + 2 + 0 + 1)/36 = 1/3; κ = (2/3 − 1/3)/(2/3) = 0.5.
    // Aggregated: S001 A, S002 tie (A/F), S003 F, S004 tie (W/A), S005 A, S006 O.
    // Cell a: n 4, A 1, F 1, tied 2 → precision 1/4; b: A 1, O 1 → 1/2; all 2/6.
    let ann: &[&str] = &["actionable", "actionable", "false_positive", "wrong_suggestion", "actionable", "out_of_scope"];
    let bob: &[&str] = &["actionable", "false_positive", "false_positive", "actionable", "actionable", "out_of_scope"];
    let (_dir, result) = run_h1(&SIX, &[("ann", ann), ("bob", bob)]);
    let r = result.expect("imports");
    assert_eq!(r.raters, ["ann", "bob"]);
    let a = r.agreement.clone().expect("agreement");
    assert_eq!((a.method.as_str(), a.raters, a.items), ("Cohen's κ", 2, 6));
    assert!((a.kappa.expect("κ") - 0.5).abs() < 1e-12 && (a.observed.expect("p_o") - 4.0 / 6.0).abs() < 1e-12, "{a:?}");
    assert!((a.chance.expect("p_e") - 1.0 / 3.0).abs() < 1e-12);
    let [ca, cb, all] = &r.cells[..] else { panic!("three rows: {:?}", r.cells) };
    assert_eq!(
        ca.labels,
        BTreeMap::from([
            ("actionable".into(), 1),
            ("false_positive".into(), 1),
            ("wrong_suggestion".into(), 0),
            ("out_of_scope".into(), 0),
            ("tied".into(), 2)
        ])
    );
    let p = |c: &CellResult| c.shares["precision"].clone();
    assert_eq!((p(ca).count, p(ca).of, p(cb).count, p(cb).of, p(all).count, p(all).of), (1, 4, 1, 2, 2, 6));
    close(p(ca).wilson95, (0.04558726080970055, 0.6993581574175981));
    close(p(cb).wilson95, (0.09453120573423074, 0.9054687942657693));
    close(p(all).wilson95, (0.09677141110578041, 0.700006684861608));
    assert_eq!(r.decided["S002"], "tied");
    assert_eq!(r.decided["S004"], "tied");
    assert_eq!(r.decided["S006"], "out_of_scope");
    assert_eq!(r.per_rater.iter().map(|(n, s)| (n.as_str(), s.count, s.of)).collect::<Vec<_>>(), [("ann", 3, 6), ("bob", 3, 6)]);
    let md = r.to_markdown();
    assert!(
        md.contains("Agreement before aggregation: Cohen's κ = 0.500 over 6 findings rated by all 2 raters (observed agreement 0.667, chance 0.333)."),
        "{md}"
    );
    assert!(md.contains(H1_AGGREGATION), "{md}");
    assert!(md.contains("| a | 4 | 1 | 1 | 0 | 0 | 2 | 1/4 = 25.0 % [4.6, 69.9] |"), "{md}");
    assert!(md.contains("| ann | 3/6 = 50.0 % [18.8, 81.2] |"), "{md}");
}

#[test]
fn h1_three_raters_fleiss_kappa_and_a_three_way_tie() {
    // x, y, z on four findings of cell a:
    //   S001 A A A → P = (9 − 3)/6 = 1;  S002 A A F → (4 + 1 − 3)/6 = 1/3
    //   S003 F F F → 1;                  S004 A F O → (1 + 1 + 1 − 3)/6 = 0
    // P̄ = (1 + 1/3 + 1 + 0)/4 = 7/12. A 6, F 5, O 1 of 12 → P̄_e = (36 + 25 + 1)/144 = 62/144.
    // κ = (84/144 − 62/144)/(82/144) = 22/82. Aggregated: A, A, F, tied → precision 2/4.
    let items = &SIX[..4];
    let x: &[&str] = &["actionable", "actionable", "false_positive", "actionable"];
    let y: &[&str] = &["actionable", "actionable", "false_positive", "false_positive"];
    let z: &[&str] = &["actionable", "false_positive", "false_positive", "out_of_scope"];
    let (_dir, result) = run_h1(items, &[("x", x), ("y", y), ("z", z)]);
    let r = result.expect("imports");
    let a = r.agreement.clone().expect("agreement");
    assert_eq!((a.method.as_str(), a.raters, a.items), ("Fleiss' κ", 3, 4));
    assert!((a.kappa.expect("κ") - 22.0 / 82.0).abs() < 1e-12, "{a:?}");
    assert!((a.observed.expect("P̄") - 7.0 / 12.0).abs() < 1e-12 && (a.chance.expect("P̄_e") - 62.0 / 144.0).abs() < 1e-12);
    assert_eq!(r.decided.values().map(String::as_str).collect::<Vec<_>>(), ["actionable", "actionable", "false_positive", "tied"]);
    let all = r.cells.last().expect("all");
    assert_eq!((all.shares["precision"].count, all.shares["precision"].of), (2, 4));
    close(all.shares["precision"].wilson95, (0.15003898915214947, 0.8499610108478506));
}

#[test]
fn h1_one_sheet_needs_no_aggregation_and_several_sheets_are_checked() {
    let one: &[&str] = &["actionable", "out_of_scope", "false_positive", "actionable", "wrong_suggestion", "actionable"];
    let (_dir, result) = run_h1(&SIX, &[("ann", one)]);
    let r = result.expect("imports");
    assert!(r.agreement.is_none() && r.per_rater.is_empty());
    assert_eq!(r.cells.last().map(|c| (c.shares["precision"].count, c.n)), Some((3, 6)));
    let md = r.to_markdown();
    assert!(md.contains("| cell | n | actionable | false_positive | wrong_suggestion | out_of_scope | precision (95 % Wilson) |"), "{md}");

    // The same rater on two sheets, and a sheet naming two raters, are refused.
    let dir = tempfile::tempdir().expect("tempdir");
    let key_path = dir.path().join(KEY_FILE);
    std::fs::write(&key_path, serde_json::to_string(&key(Study::H1, &SIX[..2])).expect("json")).expect("write");
    let sheet = |name: &str, raters: [&str; 2]| {
        let path = dir.path().join(name);
        let rows: String = SIX[..2].iter().zip(raters).map(|((id, _, sev), r)| format!("{id},case-01,a.py,3,{sev},bug,m,,actionable,,{r}\n")).collect();
        std::fs::write(&path, format!("{HEAD_H1}{rows}")).expect("write");
        path
    };
    let (first, second, mixed) = (sheet("1.csv", ["ann", "ann"]), sheet("2.csv", ["ann", "ann"]), sheet("3.csv", ["bob", "cy"]));
    let Err(AdjudicationError::Invalid { problems, .. }) = import_sheets(&[first, second, mixed], &key_path) else { panic!("refused") };
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].contains("2.csv: column `rater`: `ann` also labelled `") && problems[0].ends_with("1.csv`; each rater fills one sheet"),
        "{problems:#?}"
    );
    assert!(problems[1].ends_with("3.csv: column `rater`: the sheet names 2 raters (bob, cy); give each rater a sheet of their own"), "{problems:#?}");
}

#[test]
fn several_sheets_are_for_h1_only() {
    let items = [("S001", "a", "error")];
    let dir = tempfile::tempdir().expect("tempdir");
    let key_path = dir.path().join(KEY_FILE);
    std::fs::write(&key_path, serde_json::to_string(&key(Study::H8, &items)).expect("json")).expect("write");
    let path = dir.path().join(SHEET_FILE);
    std::fs::write(&path, format!("{HEAD_H8}S001,case-01,a.py,3,error,bug,m,,correct,,,ann\n")).expect("write");
    let Err(AdjudicationError::Invalid { problems, .. }) = import_sheets(&[path.clone(), path], &key_path) else { panic!("refused") };
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].starts_with("2 sheets given: only H1 takes several"), "{problems:#?}");
}

#[test]
fn the_code_context_is_the_lines_around_the_finding() {
    let source = CaseSource { path: "a.py".into(), before: String::new(), after: (1..=12).map(|n| format!("line {n}  \n")).collect() };
    // Two lines either side, numbered, trailing space trimmed.
    assert_eq!(code_context(&source, "a.py", "3"), "1: line 1\n2: line 2\n3: line 3\n4: line 4\n5: line 5");
    assert_eq!(code_context(&source, "a.py", "1"), "1: line 1\n2: line 2\n3: line 3");
    assert_eq!(code_context(&source, "a.py", "9-10"), " 7: line 7\n 8: line 8\n 9: line 9\n10: line 10\n11: line 11\n12: line 12");
    assert_eq!(code_context(&source, "b.py", "3"), "", "another file");
    assert_eq!(code_context(&source, "a.py", "13"), "", "past the end");
    assert_eq!(code_context(&source, "a.py", "0"), "");
    assert_eq!(code_context(&source, "a.py", "x"), "");
    let long = code_context(&source, "a.py", "1-12");
    assert_eq!(long.lines().count(), 12);
}

#[test]
fn h4_validity_per_tool() {
    // a: valid, valid, invalid → 2/3; b: invalid → 0/1; all 2/4.
    let items = [("S001", "a", "error"), ("S002", "a", "warning"), ("S003", "a", "info"), ("S004", "b", "error")];
    let head = "item,case,file,line,severity,category,message,suggestion,validity,note,rater\n";
    let rows = [("S001", "valid"), ("S002", "valid"), ("S003", "invalid"), ("S004", "invalid")];
    let sev = |id: &str| items.iter().find(|i| i.0 == id).map(|i| i.2).unwrap_or("");
    let sheet: String =
        std::iter::once(head.to_string()).chain(rows.iter().map(|(id, v)| format!("{id},case-01,a.py,3,{},bug,m,,{v},,ann\n", sev(id)))).collect();
    let (_dir, result) = run(Study::H4, &items, &sheet);
    let r = result.expect("imports");
    let [a, b, all] = &r.cells[..] else { panic!("three rows") };
    assert_eq!((a.shares["valid"].count, a.n, b.shares["valid"].count, b.n, all.shares["valid"].count, all.n), (2, 3, 0, 1, 2, 4));
    close(all.shares["valid"].wilson95, (0.15003898915214947, 0.8499610108478506));
    assert!(r.to_markdown().contains("| a | 3 | 2 | 1 | 2/3 = 66.7 % ["), "{}", r.to_markdown());
}
