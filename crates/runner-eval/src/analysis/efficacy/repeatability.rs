//! A4, repeatability: how alike the findings of repeated runs of the same cell on the same
//! subject are (pairwise Jaccard over fuzzy one-to-one matches).

use crate::analysis::definition::Definition;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::matching::matcher::{describe_fuzzy_rule, fuzzy_match, match_pairs};
use crate::analysis::{
    data::DataList, model::fmt_ratio, model::json_num, model::missing_note, model::runs_of, model::AnalysisInput, model::AnalysisResult, model::Table,
};
use crate::analysis::spec::{AnalysisSpec, MatchRule};
use crate::finding::Finding;
use serde_json::json;
use std::collections::BTreeMap;

/// |A ∩ B| / |A ∪ B| where the intersection is the fuzzy one-to-one matches; two empty sets
/// are identical (1).
pub(crate) fn jaccard(a: &[Finding], b: &[Finding], rule: &MatchRule) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let shared = crate::analysis::matching::matcher::fuzzy_match_count(a, b, rule);
    shared as f64 / (a.len() + b.len() - shared) as f64
}

/// Clusters the findings of several runs (each finding joins at most one cluster, each
/// cluster takes at most one finding per run) and counts the clusters present in every run
/// and in only some.
pub(crate) fn presence(runs: &[&[Finding]], rule: &MatchRule) -> (usize, usize) {
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

/// A cell's pairwise Jaccards, kept as their running sum (added in pair order, so the mean is
/// the one a list of every pair would give), count and minimum.
struct CellStats {
    subjects: usize,
    sum: f64,
    pairs: u64,
    min: Option<f64>,
    in_all: usize,
    in_some: usize,
}

impl Default for CellStats {
    fn default() -> Self {
        // `-0.0` is where `Iterator::sum` of floats starts.
        Self { subjects: 0, sum: -0.0, pairs: 0, min: None, in_all: 0, in_some: 0 }
    }
}

impl CellStats {
    fn mean(&self) -> Option<f64> {
        (self.pairs > 0).then(|| self.sum / self.pairs as f64)
    }
    fn min(&self) -> Option<f64> {
        self.min
    }
}

/// One subject's pairwise Jaccards: sum (in pair order), count and minimum.
struct PairStats {
    sum: f64,
    pairs: u64,
    min: f64,
}

/// Multiples of 2⁻²⁰ below 2⁵³ · 2⁻²⁰ add exactly, so their sum does not depend on the order.
const GRID: f64 = 1_048_576.0;

fn on_grid(x: f64) -> bool {
    let y = x * GRID;
    y.fract() == 0.0 && y.abs() < 9_007_199_254_740_992.0
}

/// The Jaccards of every pair `(i, j)`, `i < j`, of `sets`, added to `cell.sum` in that order
/// (exactly what summing the list of every pair gives), without listing them: identical finding
/// sets are grouped and each pair of groups is compared once. When every value and the running
/// sums are exact multiples of 2⁻²⁰ (the usual 0, ½, 1), the sums are computed per group pair —
/// exactly equal, in time quadratic in groups rather than repeats.
fn pairwise(sets: &[&[Finding]], rule: &MatchRule, cell: &mut CellStats) -> PairStats {
    // Group identical sets: same serialized form, confirmed equal.
    let mut groups: Vec<(&[Finding], u64)> = Vec::new();
    let mut by_text: std::collections::HashMap<String, Vec<usize>> = std::collections::HashMap::new();
    let mut group_of = Vec::with_capacity(sets.len());
    for set in sets {
        let text = serde_json::to_string(set).unwrap_or_default();
        let same = by_text.entry(text).or_default();
        let g = match same.iter().copied().find(|&g| groups[g].0 == *set) {
            Some(g) => g,
            None => {
                groups.push((set, 0));
                same.push(groups.len() - 1);
                groups.len() - 1
            }
        };
        groups[g].1 += 1;
        group_of.push(g);
    }
    let n = groups.len();
    let mut local = PairStats { sum: -0.0, pairs: 0, min: 1.0 };
    // A table of group pairs when it is small; otherwise every pair is compared as it comes.
    let table: Option<Vec<f64>> = (n.saturating_mul(n) <= 1 << 22).then(|| {
        let mut t = vec![0.0; n * n];
        for g in 0..n {
            for h in g..n {
                let used = g != h || groups[g].1 > 1;
                if used {
                    let v = jaccard(groups[g].0, groups[h].0, rule);
                    t[g * n + h] = v;
                    t[h * n + g] = v;
                }
            }
        }
        t
    });
    if let Some(t) = &table {
        let total_pairs = (sets.len() as u64) * (sets.len() as u64).saturating_sub(1) / 2;
        let exact = on_grid(cell.sum) && (cell.sum.abs() + total_pairs as f64) * GRID < 9_007_199_254_740_992.0 && t.iter().all(|&v| on_grid(v));
        if exact {
            let mut sum = 0.0;
            for g in 0..n {
                for h in g..n {
                    let count = if g == h { groups[g].1 * groups[g].1.saturating_sub(1) / 2 } else { groups[g].1 * groups[h].1 };
                    if count > 0 {
                        let v = t[g * n + h];
                        sum += count as f64 * v;
                        local.min = local.min.min(v);
                        cell.min = Some(cell.min.map_or(v, |m| m.min(v)));
                    }
                }
            }
            local.sum += sum;
            local.pairs = total_pairs;
            cell.sum += sum;
            cell.pairs += total_pairs;
            return local;
        }
    }
    for i in 0..sets.len() {
        for j in i + 1..sets.len() {
            let v = match &table {
                Some(t) => t[group_of[i] * n + group_of[j]],
                None => jaccard(sets[i], sets[j], rule),
            };
            local.sum += v;
            local.pairs += 1;
            local.min = local.min.min(v);
            cell.sum += v;
            cell.pairs += 1;
            cell.min = Some(cell.min.map_or(v, |m| m.min(v)));
        }
    }
    local
}

/// `repeatability` (A4): Jaccard across repeats.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::REPEATABILITY, compute);

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
    let mut data = DataList::default();
    let mut any_subjects = false;
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
            let local = pairwise(&sets, &spec.matching, &mut stats);
            let (all, some) = presence(&sets, &spec.matching);
            stats.subjects += 1;
            stats.in_all += all;
            stats.in_some += some;
            if local.min < 1.0 {
                differing.push(vec![
                    format!("`{}`", cell.id).into(),
                    subject.into(),
                    sets.iter().map(|s| s.len().to_string()).collect::<Vec<_>>().join(", ").into(),
                    fmt_ratio(Some(local.sum / local.pairs as f64)),
                    fmt_ratio(Some(local.min)),
                ]);
            }
        }
        let counted = stats.subjects > 0;
        table.push(vec![
            format!("`{}`", cell.id).into(),
            stats.subjects.into(),
            fmt_ratio(stats.mean()),
            fmt_ratio(stats.min()),
            if counted { stats.in_all.into() } else { "–".into() },
            if counted { stats.in_some.into() } else { "–".into() },
        ]);
        any_subjects |= stats.subjects > 0;
        data.push(&json!({
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
    } else if input.repeat >= 2 && any_subjects {
        result.notes.push("Every subject's repeats produced matching findings (Jaccard 1 everywhere).".into());
    }
    result.data = data.finish();
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
        let out = compute(&spec(AnalysisKind::REPEATABILITY, None), &fx.input());
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
        let out = compute(&spec(AnalysisKind::REPEATABILITY, None), &fx.input());
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

    /// Every pair's Jaccard listed and summed in pair order: what `pairwise` must equal.
    fn listed(sets: &[&[Finding]], rule: &MatchRule) -> Vec<f64> {
        let mut out = Vec::new();
        for i in 0..sets.len() {
            for j in i + 1..sets.len() {
                out.push(jaccard(sets[i], sets[j], rule));
            }
        }
        out
    }

    #[test]
    fn many_identical_repeats_are_summed_exactly_by_group() {
        // 3000 repeats in three distinct sets (Jaccards 0, ½, 1): 4.5 million pairs.
        let rule = MatchRule::default();
        let a = [finding("f", 1, "null check missing")];
        let b = [finding("f", 1, "null check missing"), finding("g", 9, "rename variable")];
        let c: [Finding; 0] = [];
        let sets: Vec<&[Finding]> = (0..3000).map(|i| [&a[..], &b[..], &c[..]][i % 3]).collect();
        let mut cell = CellStats::default();
        let local = pairwise(&sets, &rule, &mut cell);
        assert_eq!(local.pairs, 3000 * 2999 / 2);
        let per_group = 999_000.0 * 0.0 + 1_000_000.0 * 0.5 + 1_000_000.0 * 0.0 + 3.0 * 499_500.0;
        assert_eq!(local.sum, per_group);
        assert_eq!((local.min, cell.min, cell.pairs), (0.0, Some(0.0), local.pairs));
    }

    proptest! {
        #[test]
        fn pairwise_equals_every_pair_listed(sets in proptest::collection::vec(arb_findings(), 2..9), before in proptest::collection::vec(0.0f64..1.0, 0..3)) {
            let rule = MatchRule::default();
            let views: Vec<&[Finding]> = sets.iter().map(Vec::as_slice).collect();
            // A running cell sum that already holds earlier subjects' values (some off the grid).
            let mut cell = CellStats::default();
            let mut all: Vec<f64> = before.clone();
            for v in &before {
                cell.sum += v;
                cell.pairs += 1;
                cell.min = Some(cell.min.map_or(*v, |m| m.min(*v)));
            }
            let local = pairwise(&views, &rule, &mut cell);
            let list = listed(&views, &rule);
            prop_assert_eq!(local.sum.to_bits(), list.iter().sum::<f64>().to_bits());
            prop_assert_eq!(local.pairs as usize, list.len());
            prop_assert_eq!(local.min, list.iter().copied().fold(1.0, f64::min));
            all.extend(&list);
            prop_assert_eq!(cell.mean().map(f64::to_bits), Some((all.iter().sum::<f64>() / all.len() as f64).to_bits()));
            prop_assert_eq!(cell.min(), all.iter().copied().reduce(f64::min));
        }

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
