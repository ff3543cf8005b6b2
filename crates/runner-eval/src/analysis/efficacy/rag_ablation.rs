//! A10, RAG ablation: findings with symbol-definition retrieval off (axis value 0) against
//! each setting with it on, for otherwise equal cells: counts, categories and overlap.

use crate::analysis::definition::{AxisUse, Definition, OptionsContext};
use crate::analysis::spec::{AnalysisKind, AnalysisOptions};
use crate::config::TableReader;
use crate::analysis::matching::matcher::describe_fuzzy_rule;
use crate::analysis::efficacy::overlap::Counts;
use crate::analysis::{
    data::DataList, model::axis_values, model::fmt_num, model::missing_note, model::AnalysisInput, model::AnalysisResult, model::RunView, model::Table,
    model::TableCell,
};
use crate::analysis::spec::AnalysisSpec;
use crate::finding::Category;
use serde_json::json;
use std::collections::BTreeMap;

/// The axis A10 compares when the manifest names none (stet's `--rag-symbol-max-definitions`).
pub(crate) const DEFAULT_AXIS: &str = "rag_symbol_max_definitions";

#[derive(Default)]
struct Side<'r, 'a> {
    runs: Vec<&'r RunView<'a>>,
    findings: usize,
    by_category: BTreeMap<Category, usize>,
}

impl<'r, 'a> Side<'r, 'a> {
    fn push(&mut self, run: &'r RunView<'a>) {
        self.runs.push(run);
        self.findings += run.findings.len();
        for f in run.findings {
            *self.by_category.entry(f.category).or_default() += 1;
        }
    }
}

/// `rag-ablation` (A10): RAG on against off, along `rag_symbol_max_definitions` unless `axis`
/// names another.
pub(crate) const ANALYSIS: Definition =
    Definition::new(AnalysisKind::RAG_ABLATION, compute).with_axis(AxisUse::DefaultsTo("rag_symbol_max_definitions")).with_options(&[], read_options);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let axis = spec.axis.as_deref().unwrap_or(DEFAULT_AXIS);
    let mut result = AnalysisResult::new(
        spec,
        "A10",
        "RAG-lite on against off",
        format!(
            "Runs with `{axis}` = 0 (retrieval off) against runs with each positive value (retrieval on), for cells equal in every other axis: \
             finding counts, counts per category, and how many findings the two sides share (fuzzy one-to-one matching of the same subject and repeat)."
        ),
    );
    result.rule = Some(describe_fuzzy_rule(&spec.matching));

    let positive: Vec<String> = axis_values(input, axis).into_iter().filter(|v| v.parse::<f64>().is_ok_and(|n| n > 0.0)).collect();
    // other axes → axis value ("0" for off) → side.
    let mut groups: BTreeMap<String, BTreeMap<String, Side<'_, '_>>> = BTreeMap::new();
    let mut group_order: Vec<String> = Vec::new();
    let mut ignored = 0usize;
    for run in &input.runs {
        let Some(value) = run.cell.get(axis) else { continue };
        let side = match value.as_f64() {
            Some(0.0) => "0".to_string(),
            Some(n) if n > 0.0 => value.render(),
            _ => {
                ignored += 1;
                continue;
            }
        };
        let group = run.cell.id_without(axis, input.axis_order);
        if !group_order.contains(&group) {
            group_order.push(group.clone());
        }
        groups.entry(group).or_default().entry(side).or_default().push(run);
    }

    let show_group = group_order.len() > 1 || group_order.iter().any(|g| g != "all");
    let mut head: Vec<String> = Vec::new();
    if show_group {
        head.push("Other axes".into());
    }
    head.push(format!("`{axis}` on"));
    let mut summary = Table::with_columns("", head.clone());
    summary.columns.extend(["Runs off / on", "Findings off", "Findings on", "Δ", "Shared (fuzzy)", "Only off", "Only on"].map(String::from));
    let mut categories = Table::with_columns("By category (off → on)", head);
    categories.columns.extend(["Category", "Off", "On", "Δ"].map(String::from));
    let mut data = DataList::default();
    let mut means_used = false;
    let mut no_baseline = Vec::new();
    for group in &group_order {
        let Some(sides) = groups.get(group) else { continue };
        let Some(off) = sides.get("0") else {
            no_baseline.push(group.clone());
            continue;
        };
        for value in &positive {
            let Some(on) = sides.get(value) else { continue };
            let equal_runs = off.runs.len() == on.runs.len();
            means_used |= !equal_runs;
            // Totals when both sides have as many runs, per-run means otherwise.
            let scale = |n: usize, runs: usize| if equal_runs { n as f64 } else { n as f64 / runs.max(1) as f64 };
            let show = |v: f64| fmt_num(Some(v), if equal_runs { 0 } else { 2 });
            let shown_delta = |a: f64, b: f64| {
                let d = b - a;
                TableCell::Delta { delta: Some(d), digits: if equal_runs { 0 } else { 2 } }
            };
            let (without, with) = (scale(off.findings, off.runs.len()), scale(on.findings, on.runs.len()));

            let mut shared = Counts::default();
            let mut paired = 0usize;
            for a in &off.runs {
                if let Some(b) = on.runs.iter().find(|b| b.subject == a.subject && b.repeat == a.repeat) {
                    let c = Counts::of(a.findings, b.findings, &spec.matching);
                    shared.overlap_fuzzy += c.overlap_fuzzy;
                    shared.unique_a += c.unique_a;
                    shared.unique_b += c.unique_b;
                    paired += 1;
                }
            }

            let mut prefix: Vec<TableCell> = Vec::new();
            if show_group {
                prefix.push(format!("`{group}`").into());
            }
            prefix.push(format!("`{value}`").into());
            let mut row = prefix.clone();
            row.extend([
                format!("{} / {}", off.runs.len(), on.runs.len()).into(),
                show(without),
                show(with),
                shown_delta(without, with),
                shared.overlap_fuzzy.into(),
                shared.unique_a.into(),
                shared.unique_b.into(),
            ]);
            summary.rows.push(row);

            let mut category_diff = serde_json::Map::new();
            for c in Category::ALL {
                let (a, b) = (off.by_category.get(&c).copied().unwrap_or(0), on.by_category.get(&c).copied().unwrap_or(0));
                if a == 0 && b == 0 {
                    continue;
                }
                let (a, b) = (scale(a, off.runs.len()), scale(b, on.runs.len()));
                let mut row = prefix.clone();
                row.extend([c.as_str().into(), show(a), show(b), shown_delta(a, b)]);
                categories.rows.push(row);
                category_diff.insert(c.as_str().to_string(), json!({"without": a, "with": b}));
            }
            data.push(&json!({
                "axis": axis,
                "group": group,
                "with_value": value,
                "runs_without": off.runs.len(),
                "runs_with": on.runs.len(),
                "counts_are_per_run_means": !equal_runs,
                "without_rag_count": without,
                "with_rag_count": with,
                "category_diff": category_diff,
                "runs_paired": paired,
                "overlap_fuzzy": shared.overlap_fuzzy,
                "only_without": shared.unique_a,
                "only_with": shared.unique_b,
            }));
        }
    }
    if summary.rows.is_empty() {
        result.notes.push(format!("No group of cells has runs both with `{axis}` = 0 and with a positive value, so there is nothing to compare."));
    } else {
        result.tables.push(summary);
        if !categories.rows.is_empty() {
            result.tables.push(categories);
        }
    }
    result.data = data.finish();
    if means_used {
        result.notes.push("Where the two sides have different numbers of successful runs, counts are per-run means (two decimals) rather than totals.".into());
    }
    if !no_baseline.is_empty() {
        result.notes.push(format!(
            "No run with `{axis}` = 0 for {}, so it is not compared.",
            no_baseline.iter().map(|g| format!("`{g}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    if ignored > 0 {
        result.notes.push(format!("{ignored} run(s) whose `{axis}` value is not a number ≥ 0 are ignored."));
    }
    result.notes.push("Shared / only counts cover runs present on both sides for the same subject and repeat.".into());
    result.notes.extend(missing_note(input));
    result
}

/// A `rag-ablation` analysis reads no options, but its axis must be one with 0 among its values.
fn read_options(t: &TableReader<'_, '_>, context: &OptionsContext<'_>) -> AnalysisOptions {
    if !context.axes.contains(context.axis.unwrap_or_default()) {
        t.problems().push(t.span(), "analysis `rag-ablation` needs a `rag_symbol_max_definitions` axis (or `axis = \"...\"`) with 0 among its values");
    }
    AnalysisOptions::None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::spec::AnalysisKind;
    use crate::analysis::test_support::{finding, spec, with_kind, Fixture};
    use crate::finding::Severity;
    use crate::matrix::AxisValue;

    #[test]
    fn counts_categories_and_overlap() {
        let mut fx = Fixture::new(&[("rag_symbol_max_definitions", vec![AxisValue::Int(0), AxisValue::Int(10)])], 1);
        let bug = |l, m| with_kind(finding("f.go", l, m), Category::Bug, Severity::Error);
        let style = |l, m| with_kind(finding("f.go", l, m), Category::Style, Severity::Nitpick);
        fx.add("rag_symbol_max_definitions=0", 1, "s", vec![bug(3, "nil dereference"), style(9, "long line")]);
        fx.add("rag_symbol_max_definitions=10", 1, "s", vec![bug(3, "nil dereference"), bug(20, "wrong type passed to Parse"), style(40, "naming")]);
        let out = compute(&spec(AnalysisKind::RAG_ABLATION, None), &fx.input());
        assert_eq!(out.test_id, "A10");
        assert_eq!(out.data["without_rag_count"], 2.0);
        assert_eq!(out.data["with_rag_count"], 3.0);
        assert_eq!(out.data["category_diff"]["bug"], json!({"without": 1.0, "with": 2.0}));
        assert_eq!(out.data["category_diff"]["style"], json!({"without": 1.0, "with": 1.0}));
        assert_eq!(out.data["overlap_fuzzy"], 1);
        assert_eq!(out.data["only_with"], 2);
        assert_eq!(out.tables[0].rows[0], vec!["`10`", "1 / 1", "2", "3", "+1", "1", "1", "2"]);
        assert_eq!(out.tables[1].rows[0], vec!["`10`", "bug", "1", "2", "+1"]);
    }

    #[test]
    fn unequal_runs_use_means_and_groups_split() {
        let mut fx = Fixture::new(&[("model", vec![AxisValue::Str("a".into())]), ("rag", vec![AxisValue::Int(0), AxisValue::Int(5)])], 2);
        fx.add("model=a,rag=0", 1, "s", vec![finding("f", 1, "x"), finding("f", 5, "y")]);
        fx.add("model=a,rag=0", 2, "s", vec![finding("f", 1, "x")]);
        fx.add("model=a,rag=5", 1, "s", vec![finding("f", 1, "x")]);
        let out = compute(&spec(AnalysisKind::RAG_ABLATION, Some("rag")), &fx.input());
        assert_eq!(out.data["counts_are_per_run_means"], true);
        assert_eq!(out.data["without_rag_count"], 1.5);
        assert_eq!(out.data["with_rag_count"], 1.0);
        assert_eq!(out.data["runs_paired"], 1);
        assert_eq!(out.tables[0].rows[0], vec!["`model=a`", "`5`", "2 / 1", "1.50", "1.00", "-0.50", "1", "1", "0"]);
        assert!(out.notes.iter().any(|n| n.contains("per-run means")));
    }
}
