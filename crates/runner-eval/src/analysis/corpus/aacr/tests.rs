//! The benchmark's rule on hand-built comments: the location check, the reference-major scan,
//! the judge's effect on line hits, the printed rounding, and a whole analysis over two cells.

use super::*;
use crate::analysis::spec::{AacrOptions, AnalysisKind, AnalysisOptions};
use crate::analysis::test_support::{finding, s, spec, Fixture};
use std::path::PathBuf;

fn comment(path: &str, side: Option<&str>, from: Option<i64>, to: Option<i64>, note: &str) -> Comment {
    Comment {
        note: note.into(),
        path: path.into(),
        side: side.map(str::to_string),
        from_line: from,
        to_line: to,
        category: "Code Defect".into(),
        context: "Diff Level".into(),
        is_ai_comment: None,
        source_model: None,
    }
}

fn place(path: &str, side: Option<&str>, lines: Option<(i64, i64)>) -> Place {
    Place { path: normalize_path(path), side: side.map(str::to_string), lines, text: "x".into(), counted: true }
}

fn generated(file: &str, line: u32, end: Option<u32>, message: &str) -> Finding {
    let mut f = finding(file, line, message);
    f.range = end.filter(|e| *e > line).map(|end| crate::finding::LineRange { start: line, end });
    f
}

#[test]
fn the_location_rule_is_the_benchmarks() {
    let right = Some("right");
    let r = place("src/a.go", right, Some((10, 12)));
    assert!(same_place(&r, &place("src/a.go", right, Some((12, 20)))), "overlap");
    assert!(same_place(&r, &place("src/a.go", right, Some((13, 13)))), "one line after the end");
    assert!(same_place(&r, &place("src/a.go", right, Some((5, 9)))), "one line before the start");
    assert!(!same_place(&r, &place("src/a.go", right, Some((14, 14)))), "two lines after");
    assert!(!same_place(&r, &place("src/a.go", right, Some((1, 8)))), "two lines before");
    assert!(same_place(&r, &place("src/a.go", right, Some((1, 40)))), "a range around it overlaps");
    assert!(same_place(&r, &place("src\\a.go", right, Some((11, 11)))), "backslashes are slashes");
    assert!(same_place(&r, &place("src\\/a.go", right, Some((11, 11)))), "an escaped slash is a slash");
    assert!(!same_place(&r, &place("./src/a.go", right, Some((11, 11)))), "no other normalization");
    assert!(same_place(&r, &place("", right, Some((11, 11)))), "an empty path passes");
    assert!(!same_place(&r, &place("src/b.go", right, Some((11, 11)))), "another file");
    assert!(!same_place(&place("src/a.go", Some("left"), Some((11, 11))), &place("src/a.go", right, Some((11, 11)))), "another side");
    assert!(same_place(&place("src/a.go", None, Some((11, 11))), &place("src/a.go", right, Some((11, 11)))), "a missing side passes");
    assert!(same_place(&r, &place("src/a.go", right, None)), "no lines: the line check is skipped");
    // A generated finding with line 0 has no line; one with a range keeps it.
    assert_eq!(Place::of_finding(&generated("a.go", 0, None, "m")).lines, None);
    assert_eq!(Place::of_finding(&generated("a.go", 4, Some(9), "m")).lines, Some((4, 9)));
    assert_eq!(Place::of_comment(&comment("a.go", right, Some(9), Some(4), "n")).lines, Some((4, 9)), "a reversed range is swapped");
    assert_eq!(Place::of_comment(&comment("a.go", right, None, Some(4), "n")).lines, Some((4, 4)));
}

#[test]
fn notes_are_cut_of_details_blocks_and_an_empty_one_is_passed_over_but_counted() {
    assert_eq!(strip_details("Bug here.<details>\nthinking\n</details>\n\n\n\nFix it."), "Bug here.\n\nFix it.");
    assert_eq!(strip_details("  <details>only</details> "), "");
    let refs = vec![Place::of_comment(&comment("a.go", Some("right"), Some(3), Some(3), "<details>x</details>"))];
    assert!(refs[0].counted && !refs[0].usable());
    let gens = vec![place("a.go", Some("right"), Some((3, 3)))];
    assert_eq!(scan(&refs, &gens, &mut |_, _| true).line, [false], "a reference with nothing left to read is not matched");
}

#[test]
fn references_take_the_first_free_comment_at_their_place_in_order_and_each_comment_once() {
    let right = Some("right");
    let refs = vec![place("a.go", right, Some((10, 10))), place("a.go", right, Some((11, 11))), place("a.go", right, Some((50, 50)))];
    let gens = vec![place("a.go", right, Some((10, 11))), place("a.go", right, Some((12, 12)))];
    let s = scan(&refs, &gens, &mut |_, _| false);
    assert_eq!(s.line, [true, true, false], "the second reference takes the second comment, the first being credited");
    assert_eq!(s.line_credited, [true, true]);
    // Judged: the first reference's scan ends at its semantic match; each comment once per stage.
    let s = scan(&refs, &gens, &mut |_, gi| gi == 0);
    assert_eq!((s.semantic.clone(), s.semantic_credited.clone()), (vec![true, false, false], vec![true, false]));
    assert_eq!(s.line, [true, true, false]);
}

#[test]
fn a_judges_yes_on_a_credited_comment_can_end_a_scan_before_a_free_one() {
    let right = Some("right");
    // Reference 0 takes comment 0; reference 1's place holds comment 0 (credited) then comment 1.
    let refs = vec![place("a.go", right, Some((10, 10))), place("a.go", right, Some((11, 11)))];
    let gens = vec![place("a.go", right, Some((10, 11))), place("a.go", right, Some((12, 12)))];
    assert_eq!(count(&scan(&refs, &gens, &mut |_, _| false).line), 2, "no judge: both");
    assert_eq!(count(&scan(&refs, &gens, &mut |ri, gi| ri == 1 && gi == 0).line), 1, "a yes on (1, 0) ends reference 1's scan before comment 1");
    assert_eq!(line_hits_any_judge(&refs, &gens), (1, 2, true));
    // Past the enumeration limit, a bound: one fewer per reference with two comments at its place.
    let many: Vec<Place> = (0..EXHAUSTIVE_PAIRS as i64 + 1).map(|i| place("a.go", right, Some((100 + 3 * i, 100 + 3 * i)))).collect();
    let refs_many: Vec<Place> = many.clone();
    let (low, high, exact) = line_hits_any_judge(&refs_many, &many);
    assert_eq!((low, high, exact), (many.len(), many.len(), false), "no reference has two comments at its place");
}

#[test]
fn rates_are_printed_as_each_published_scorer_rounds_them() {
    assert_eq!(py_round(0.0625, 3), 0.062, "a tie goes to the even digit, as Python's round");
    assert_eq!(py_round(0.0005, 3), 0.001, "0.0005 lies above the tie in binary");
    // 10 hits of 80 generated and 300 references: P 0.125, R 0.0333…; F1 from the rounded
    // rates differs from F1 rounded: 2·0.125·0.033/0.158 = 0.0522 → 0.052, exact 0.0526 → 0.053.
    let (p, r, f1) = as_printed(10, 80, 300, 3);
    assert_eq!((p, r, f1), (0.125, 0.033, 0.052));
    assert_eq!(py_round(2.0 * 10.0 / 380.0, 3), 0.053);
    assert_eq!(as_printed(10, 80, 300, 4), (0.125, 0.0333, 0.0526));
    assert_eq!(as_printed(0, 0, 300, 3), (0.0, 0.0, 0.0), "nothing generated: 0, not undefined");
}

fn gold() -> Gold {
    let positive = r#"[
      {"source_commit": "1111111111111111111111111111111111111111", "target_commit": "aaaaaaa000000000000000000000000000000000",
       "githubPrUrl": "https://github.com/o/r/pull/1", "comments": [
         {"note": "the map is written while nil and the program panics", "path": "a.go", "side": "right", "from_line": 10, "to_line": 10, "category": "Code Defect", "context": "Diff Level"},
         {"note": "this loop is quadratic in the number of users", "path": "a.go", "side": "right", "from_line": 40, "to_line": 42, "category": "Performance", "context": "File Level"},
         {"note": "the deleted check guarded an injection", "path": "a.go", "side": "left", "from_line": 5, "to_line": 5, "category": "Security Vulnerability", "context": "Repo Level"}]},
      {"source_commit": "2222222222222222222222222222222222222222", "target_commit": "bbbbbbb000000000000000000000000000000000",
       "githubPrUrl": "https://github.com/o/r/pull/2", "comments": [
         {"note": "the error is dropped", "path": "b.go", "side": "right", "from_line": 3, "to_line": 3, "category": "Code Defect", "context": "Diff Level"}]}]"#;
    let negative = r#"[
      {"source_commit": "1111111111111111111111111111111111111111", "target_commit": "aaaaaaa000000000000000000000000000000000",
       "githubPrUrl": "https://github.com/o/r/pull/1", "comments": [
         {"note": "rename the variable users to accounts", "path": "a.go", "side": "right", "from_line": 70, "to_line": 70, "category": "Maintainability and Readability", "context": "Diff Level"}]}]"#;
    crate::ground_truth::aacr::parse(positive, Some(negative)).expect("gold")
}

#[test]
fn two_cells_are_scored_compared_and_a_missing_review_is_a_miss() {
    let gold = gold();
    let mut fx = Fixture::new(&[("reviewer", vec![s("base"), s("new")])], 1);
    // `base` reviews pull request 1 only: a line hit (another issue at the place), a comment at
    // the rejected comment's place, one elsewhere. Pull request 2 has no review.
    fx.add(
        "reviewer=base",
        1,
        "o__r@aaaaaaa",
        vec![
            generated("a.go", 11, None, "consider logging here"),
            generated("a.go", 70, None, "rename users to accounts for clarity"),
            generated("c.go", 1, None, "typo"),
        ],
    );
    // `new` finds the nil map write by text and place, and the dropped error.
    fx.add("reviewer=new", 1, "o__r@aaaaaaa", vec![generated("a.go", 9, Some(10), "writing to a nil map panics at runtime")]);
    fx.add("reviewer=new", 1, "o__r@bbbbbbb", vec![generated("b.go", 4, None, "the returned error is dropped silently")]);
    let mut spec = spec(AnalysisKind::AACR, None);
    spec.options = AnalysisOptions::Aacr(AacrOptions { gold: PathBuf::from("gold"), loaded: Arc::new(gold) });
    let input = fx.input();
    let result = compute(&spec, &input);
    let line = &result.tables[0];
    assert_eq!(line.columns[5], "Line hits");
    // base: 2 PRs, 1 reviewed, 3 generated, 4 references, 1 line hit.
    assert_eq!(line.rows[0][..6].iter().map(TableCell::render).collect::<Vec<_>>(), ["`base`", "2", "1", "3", "4", "1"]);
    assert_eq!(line.rows[1][..6].iter().map(TableCell::render).collect::<Vec<_>>(), ["`new`", "2", "2", "2", "4", "2"]);
    assert_eq!(line.rows[0][9], "0.2857", "F1 = 2·1/(3 + 4)");
    let semantic = &result.tables[2];
    assert_eq!((semantic.rows[0][1].render(), semantic.rows[1][1].render()), ("0".into(), "2".into()), "runner's matcher: base says another thing");
    let negative = &result.tables[3];
    assert_eq!(negative.rows[0][1..].iter().map(TableCell::render).collect::<Vec<_>>(), ["3", "1", "1", "1", "0.500", "1"]);
    let by_category = &result.tables[4];
    let security: Vec<String> = by_category.rows.iter().filter(|r| r[1] == "Security Vulnerability").map(|r| r[3].render()).collect();
    assert_eq!(security, ["0", "0"], "a left-side reference is never matched by right-side comments");
    assert_eq!(result.tables[6].title, "Paired over the pull requests: each cell against the first");
    assert!(result.headline.iter().any(|h| h.starts_with("**line F1**, `new` − `base` = +")), "{:?}", result.headline);
    assert!(result.notes.iter().any(|n| n.contains("`base`: 1 of 2 reviews missing")), "{:?}", result.notes);
    let data: serde_json::Value = result.data_as().expect("data");
    assert_eq!(data["cells"][0]["pull_requests"][1]["submitted"], false);
    assert_eq!(data["gold"]["left_side"], 1);
}

#[test]
fn the_paired_test_finds_no_difference_between_identical_cells_and_one_in_a_large_gap() {
    let same = vec![PrCounts { line: 1, semantic: 0, generated: 2, expected: 3 }; 30];
    let p = paired(Metric::LineF1, &same, &same).expect("defined");
    assert_eq!((p.difference, p.p_value, verdict(&p)), (0.0, 1.0, "no detectable difference"));
    let better = vec![PrCounts { line: 3, semantic: 0, generated: 3, expected: 3 }; 30];
    let p = paired(Metric::LineRecall, &better, &same).expect("defined");
    assert!(p.difference > 0.6 && p.p_value < 0.001 && p.low > 0.0, "{p:?}");
    assert_eq!(verdict(&p), "better");
    assert_eq!(paired(Metric::LinePrecision, &[PrCounts::default()], &[PrCounts::default()]), None, "nothing generated: undefined");
}

#[test]
fn the_targets_oracle_is_checked_against_the_gold() {
    let gold = gold();
    let fx = Fixture::new(&[("reviewer", vec![s("base")])], 1);
    let mut spec = spec(AnalysisKind::AACR, None);
    let mut oracle = crate::ground_truth::aacr::to_oracle(&gold);
    spec.options = AnalysisOptions::Aacr(AacrOptions { gold: PathBuf::from("gold"), loaded: Arc::new(gold) });
    let note = |oracle: &crate::ground_truth::oracle::Oracle| {
        let mut input = fx.input();
        input.oracle = Some(oracle);
        compute(&spec, &input).notes.into_iter().find(|n| n.starts_with("The target's oracle")).expect("a note on the oracle")
    };
    assert!(note(&oracle).contains("holds the gold's reference comments"), "{}", note(&oracle));
    oracle.findings[3].description = "edited".into();
    assert!(note(&oracle).contains("differs from the gold for 1 pull requests (first `o__r@bbbbbbb`)"), "{}", note(&oracle));
}
