//! A4, repeatability: how alike the findings of repeated runs of the same cell on the same
//! subject are (pairwise Jaccard over fuzzy one-to-one matches).

use super::matching::{describe_fuzzy_rule, fuzzy_match, match_pairs};
use super::{fmt_ratio, json_num, missing_note, one_or_many, runs_of, AnalysisInput, AnalysisResult, Table};
use crate::analysis::spec::{AnalysisSpec, MatchRule};
use crate::finding::Finding;
use serde_json::json;
use std::collections::BTreeMap;

/// |A ∩ B| / |A ∪ B| where the intersection is the fuzzy one-to-one matches; two empty sets
/// are identical (1).
pub fn jaccard(a: &[Finding], b: &[Finding], rule: &MatchRule) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let shared = match_pairs(a, b, |x, y| fuzzy_match(x, y, rule)).len();
    shared as f64 / (a.len() + b.len() - shared) as f64
}

/// Clusters the findings of several runs (each finding joins at most one cluster, each
/// cluster takes at most one finding per run) and counts the clusters present in every run
/// and in only some.
pub fn presence(runs: &[&[Finding]], rule: &MatchRule) -> (usize, usize) {
    let mut representatives: Vec<Finding> = Vec::new();
    let mut seen_in: Vec<usize> = Vec::new();
    for findings in runs {
        let pairs = match_pairs(&representatives, findings, |x, y| fuzzy_match(x, y, rule));
        let mut matched = vec![false; findings.len()];
        for (cluster, j) in pairs {
            seen_in[cluster] += 1;
            matched[j] = true;
        }
        for (j, f) in findings.iter().enumerate() {
            if !matched[j] {
                representatives.push(f.clone());
                seen_in.push(1);
            }
        }
    }
    let in_all = seen_in.iter().filter(|&&n| n == runs.len()).count();
    (in_all, seen_in.len() - in_all)
}

#[derive(Default)]
struct CellStats {
    subjects: usize,
    jaccards: Vec<f64>,
    in_all: usize,
    in_some: usize,
}

impl CellStats {
    fn mean(&self) -> Option<f64> {
        (!self.jaccards.is_empty()).then(|| self.jaccards.iter().sum::<f64>() / self.jaccards.len() as f64)
    }
    fn min(&self) -> Option<f64> {
        self.jaccards.iter().copied().reduce(f64::min)
    }
}

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = AnalysisResult::new(
        spec,
        "A4",
        "Same findings across repeats",
        "For each cell and subject, the findings of every pair of repeats are compared: Jaccard = matched / (|A| + |B| − matched), \
         with findings matched one to one by the fuzzy rule, then averaged over pairs and subjects. \
         A finding is counted once per subject: in all repeats, or in only some.",
    );
    result.rule = Some(format!("{}; two empty finding sets count as identical (Jaccard 1)", describe_fuzzy_rule(&spec.matching)));
    if input.repeat < 2 {
        result.notes.push(format!("Repeatability needs at least 2 repeats; the matrix has `repeat = {}`.", input.repeat));
    }

    let mut table = Table::new("", &["Cell", "Subjects", "Jaccard mean", "Jaccard min", "In all repeats", "In some repeats"]);
    let mut differing = Table::new("Subjects whose repeats differ", &["Cell", "Subject", "Findings per repeat", "Jaccard mean", "Jaccard min"]);
    let mut data = Vec::new();
    let mut too_few = 0usize;
    for cell in input.cells {
        let mut by_subject: BTreeMap<&str, Vec<(u32, &[Finding])>> = BTreeMap::new();
        for run in runs_of(input, cell) {
            by_subject.entry(run.subject).or_default().push((run.repeat, run.findings));
        }
        let mut stats = CellStats::default();
        for (subject, mut repeats) in by_subject {
            if repeats.len() < 2 {
                too_few += 1;
                continue;
            }
            repeats.sort_by_key(|(r, _)| *r);
            let sets: Vec<&[Finding]> = repeats.iter().map(|(_, f)| *f).collect();
            let mut local = Vec::new();
            for i in 0..sets.len() {
                for j in i + 1..sets.len() {
                    local.push(jaccard(sets[i], sets[j], &spec.matching));
                }
            }
            let (all, some) = presence(&sets, &spec.matching);
            stats.subjects += 1;
            stats.in_all += all;
            stats.in_some += some;
            let local_min = local.iter().copied().fold(1.0, f64::min);
            if local_min < 1.0 {
                differing.rows.push(vec![
                    format!("`{}`", cell.id).into(),
                    subject.into(),
                    sets.iter().map(|s| s.len().to_string()).collect::<Vec<_>>().join(", ").into(),
                    fmt_ratio(Some(local.iter().sum::<f64>() / local.len() as f64)),
                    fmt_ratio(Some(local_min)),
                ]);
            }
            stats.jaccards.extend(local);
        }
        let counted = stats.subjects > 0;
        table.rows.push(vec![
            format!("`{}`", cell.id).into(),
            stats.subjects.into(),
            fmt_ratio(stats.mean()),
            fmt_ratio(stats.min()),
            if counted { stats.in_all.into() } else { "–".into() },
            if counted { stats.in_some.into() } else { "–".into() },
        ]);
        data.push(json!({
            "cell": cell.id,
            "runs": input.repeat,
            "subjects": stats.subjects,
            "jaccard_mean": json_num(stats.mean()),
            "jaccard_min": json_num(stats.min()),
            "findings_in_all_runs": counted.then_some(stats.in_all),
            "findings_in_some_runs": counted.then_some(stats.in_some),
        }));
    }
    result.tables.push(table);
    if !differing.rows.is_empty() {
        result.tables.push(differing);
    } else if input.repeat >= 2 && data.iter().any(|d| d["subjects"].as_u64().unwrap_or(0) > 0) {
        result.notes.push("Every subject's repeats produced matching findings (Jaccard 1 everywhere).".into());
    }
    result.data = one_or_many(data);
    if too_few > 0 && input.repeat >= 2 {
        result.notes.push(format!("{too_few} (cell, subject) pair(s) had fewer than 2 successful repeats and are not counted."));
    }
    result.notes.extend(missing_note(input));
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::spec::AnalysisKind;
    use crate::analysis::test_support::{finding, s, spec, Fixture};
    use proptest::prelude::*;

    #[test]
    fn known_jaccard_of_one_third() {
        // A = {p, q}, B = {p', r}: one fuzzy match (p ~ p' one line apart), union 3.
        let rule = MatchRule::default();
        let a = [finding("f", 10, "off by one in loop bound"), finding("f", 50, "unused variable")];
        let b = [finding("f", 11, "off by one in loop bound"), finding("g", 5, "missing test")];
        assert!((jaccard(&a, &b, &rule) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(jaccard(&[], &[], &rule), 1.0);
        assert_eq!(jaccard(&a, &[], &rule), 0.0);
    }

    #[test]
    fn presence_counts_findings_in_all_and_some_runs() {
        let rule = MatchRule::default();
        let r1 = [finding("f", 1, "a problem"), finding("f", 9, "another")];
        let r2 = [finding("f", 1, "a problem")];
        let r3 = [finding("f", 2, "a problem"), finding("f", 9, "another"), finding("h", 3, "third")];
        assert_eq!(presence(&[&r1, &r2, &r3], &rule), (1, 2));
    }

    #[test]
    fn per_cell_mean_min_and_differing_subjects() {
        let mut fx = Fixture::new(&[("model", vec![s("a")])], 3);
        let p = || finding("f", 10, "off by one in loop bound");
        fx.add("model=a", 1, "s1", vec![p(), finding("f", 50, "unused variable")]);
        fx.add("model=a", 2, "s1", vec![p(), finding("g", 5, "missing test")]);
        fx.add("model=a", 3, "s1", vec![p(), finding("f", 50, "unused variable")]);
        fx.add("model=a", 1, "s2", vec![]);
        fx.add("model=a", 2, "s2", vec![]);
        fx.add("model=a", 1, "s3", vec![p()]);
        let out = compute(&spec(AnalysisKind::Repeatability, None), &fx.input());
        // s1: pairs (1,2)=1/3, (1,3)=1, (2,3)=1/3; s2: one pair of empties = 1; s3 has one repeat.
        let mean = (1.0 / 3.0 + 1.0 + 1.0 / 3.0 + 1.0) / 4.0;
        assert!((out.data["jaccard_mean"].as_f64().expect("mean") - mean).abs() < 1e-12);
        assert_eq!(out.data["jaccard_min"].as_f64().map(|v| (v * 1000.0).round()), Some(333.0));
        assert_eq!(out.data["findings_in_all_runs"], 1);
        assert_eq!(out.data["findings_in_some_runs"], 2);
        assert_eq!(out.tables[0].rows[0], vec!["`model=a`", "2", "0.667", "0.333", "1", "2"]);
        assert_eq!(out.tables[1].rows[0][2], "2, 2, 2");
        assert!(out.notes.iter().any(|n| n.starts_with("1 (cell, subject)")), "{:?}", out.notes);
    }

    #[test]
    fn one_repeat_is_noted() {
        let mut fx = Fixture::new(&[("model", vec![s("a")])], 1);
        fx.add("model=a", 1, "s1", vec![]);
        let out = compute(&spec(AnalysisKind::Repeatability, None), &fx.input());
        assert!(out.notes[0].contains("at least 2 repeats"));
        assert!(out.data["jaccard_mean"].is_null());
        assert_eq!(out.tables[0].rows[0][2], "–");
    }

    fn arb_findings() -> impl Strategy<Value = Vec<Finding>> {
        proptest::collection::vec((0usize..2, 1u32..8, 0usize..3), 0..6).prop_map(|items| {
            let messages = ["null check missing", "null check is missing here", "rename variable"];
            items.into_iter().map(|(file, line, m)| finding(["a.rs", "b.rs"][file], line, messages[m])).collect()
        })
    }

    proptest! {
        #[test]
        fn jaccard_is_bounded_and_symmetric(a in arb_findings(), b in arb_findings()) {
            let rule = MatchRule::default();
            let ab = jaccard(&a, &b, &rule);
            prop_assert!((0.0..=1.0).contains(&ab));
            prop_assert!((ab - jaccard(&b, &a, &rule)).abs() < 1e-12);
            prop_assert_eq!(jaccard(&a, &a, &rule), 1.0);
        }
    }
}
