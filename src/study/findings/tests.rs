//! H7 and H8 imports: hand-computed distributions, Wilson intervals and the confusion matrix
//! on small filled sheets; a sheet with the key's mistakes is refused.

use super::*;

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
