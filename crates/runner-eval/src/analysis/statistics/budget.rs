//! Budget: each review strategy's (a `pipeline` reviewer's) total token budget, its
//! allocation to the stages, and what its runs actually spent — provider-reported tokens
//! only, per stage —, with the calls made, stopped and failed, beside runner's own wall time
//! (named as runner's, never as the provider's latency).

use crate::analysis::definition::Definition;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::{
    data::DataList, model::fmt_num, model::json_num, model::missing_note, model::runs_of, model::AnalysisInput, model::AnalysisResult, model::Table,
    model::TableCell,
};
use crate::analysis::spec::AnalysisSpec;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The stages of a pipeline run, in order, from its provenance (`name:role×n`).
fn stage_names(provenance: &BTreeMap<String, Value>) -> Vec<String> {
    provenance
        .get("pipeline")
        .and_then(Value::as_array)
        .map(|stages| stages.iter().filter_map(Value::as_str).map(|s| s.split(':').next().unwrap_or(s).to_string()).collect())
        .unwrap_or_default()
}

#[derive(Default)]
struct Cell {
    runs: usize,
    total_budget: Option<u64>,
    stages: Vec<String>,
    allocation: BTreeMap<String, u64>,
    /// Per stage: tokens over the runs that reported them, calls, stopped calls.
    spent: BTreeMap<String, u64>,
    calls: BTreeMap<String, u64>,
    stopped: u64,
    failed: u64,
    /// Runs whose provider reported no tokens for some call.
    unreported: usize,
    over_budget: usize,
    tokens: u64,
    runner_ms: u64,
}

/// `budget`: each review strategy's total budget, allocation and spend.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::BUDGET, compute);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = AnalysisResult::new(
        spec,
        "",
        "Budget",
        "Each strategy's total token budget per run and its allocation to the stages, against what its runs spent: \
         prompt and completion tokens as the provider reported them (a run whose provider reported none is counted apart, never estimated). \
         Calls stopped are calls a stage did not make because its share was spent. `Runner s / run` is runner's own wall time, not the provider's latency.",
    );
    let mut table = Table::new(
        "",
        &[
            "Strategy",
            "Total budget",
            "Allocation",
            "Runs",
            "Spent / run",
            "Spent by stage / run",
            "Calls by stage / run",
            "Stopped",
            "Failed calls",
            "Over budget",
            "No tokens",
            "Runner s / run",
        ],
    );
    let mut data = DataList::default();
    for cell in input.cells {
        let mut c = Cell::default();
        for run in runs_of(input, cell) {
            let record = run.record;
            c.runs += 1;
            c.runner_ms += record.cost.wall_ms;
            if c.stages.is_empty() {
                c.stages = stage_names(&record.provenance);
            }
            c.total_budget = c.total_budget.or_else(|| record.provenance.get("total_budget").and_then(Value::as_u64));
            if let Some(Value::Object(a)) = record.provenance.get("allocation") {
                for (stage, tokens) in a {
                    c.allocation.insert(stage.clone(), tokens.as_u64().unwrap_or(0));
                }
            }
            let mut reported = true;
            let mut run_tokens = 0;
            for stage in &c.stages {
                let calls = record.counters.get(&format!("stage.{stage}.calls")).copied().unwrap_or(0);
                *c.calls.entry(stage.clone()).or_default() += calls;
                c.stopped += record.counters.get(&format!("stage.{stage}.stopped")).copied().unwrap_or(0);
                match record.counters.get(&format!("stage.{stage}.tokens")) {
                    Some(t) => {
                        *c.spent.entry(stage.clone()).or_default() += t;
                        run_tokens += t;
                    }
                    None if calls > 0 => reported = false,
                    None => {}
                }
            }
            c.failed += record.counters.get("calls_failed").copied().unwrap_or(0);
            if reported {
                c.tokens += run_tokens;
                if c.total_budget.is_some_and(|b| run_tokens > b) {
                    c.over_budget += 1;
                }
            } else {
                c.unreported += 1;
            }
        }
        if c.stages.is_empty() {
            continue;
        }
        let counted = c.runs - c.unreported;
        let per_run = |v: u64, n: usize| if n == 0 { None } else { Some(v as f64 / n as f64) };
        let by_stage = |map: &BTreeMap<String, u64>, n: usize| -> String {
            c.stages
                .iter()
                .map(|s| format!("{s} {}", per_run(map.get(s).copied().unwrap_or(0), n).map_or("–".to_string(), |v| format!("{v:.1}"))))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let allocation = c.stages.iter().filter_map(|s| Some(format!("{s} {}", c.allocation.get(s)?))).collect::<Vec<_>>().join(", ");
        let spent = per_run(c.tokens, counted);
        let runner_s = per_run(c.runner_ms, c.runs).map(|ms| ms / 1000.0);
        table.push(vec![
            format!("`{}`", cell.id).into(),
            c.total_budget.map(TableCell::from).unwrap_or_else(|| "–".into()),
            if allocation.is_empty() { "–".into() } else { allocation.clone().into() },
            c.runs.into(),
            fmt_num(spent, 1),
            by_stage(&c.spent, counted).into(),
            by_stage(&c.calls, c.runs).into(),
            c.stopped.into(),
            c.failed.into(),
            c.over_budget.into(),
            c.unreported.into(),
            fmt_num(runner_s, 3),
        ]);
        data.push(&json!({
            "cell": cell.id,
            "total_budget": c.total_budget,
            "allocation": c.stages.iter().filter_map(|s| Some(json!({"stage": s, "tokens": c.allocation.get(s)?}))).collect::<Vec<_>>(),
            "runs": c.runs,
            "spent_per_run": json_num(spent),
            "stages": c.stages.iter().map(|s| json!({
                "stage": s,
                "spent_per_run": json_num(per_run(c.spent.get(s).copied().unwrap_or(0), counted)),
                "calls_per_run": json_num(per_run(c.calls.get(s).copied().unwrap_or(0), c.runs)),
            })).collect::<Vec<_>>(),
            "stopped_calls": c.stopped,
            "failed_calls": c.failed,
            "runs_over_budget": c.over_budget,
            "runs_without_tokens": c.unreported,
            "runner_seconds_per_run": json_num(runner_s),
        }));
    }
    if table.rows.is_empty() {
        result.notes.push("No cell ran a `pipeline` reviewer: there is no strategy budget to report.".into());
    }
    result.tables.push(table);
    if let Some(rotation) = rotation(input) {
        result.tables.push(rotation);
        result.notes.push(
            "Start order: the plan's rotation (the block's cells in matrix order, starting one further along in each block). \
             The engine releases a block's runs to its scheduler in this order, but does not hold a run back until the one before it has started: \
             under per-reviewer limits a later run of the block can start first, so this is a queueing order, not a guaranteed start order. \
             Each call's start time is in the run's raw output (`runner show`)."
                .into(),
        );
    }
    result.data = data.finish();
    result.notes.extend(missing_note(input));
    result
}

/// A subject/repeat block: (repeat, subject) and its runs as (order, cell id).
type Block<'a> = ((u32, &'a str), Vec<(u32, &'a str)>);

/// Each subject/repeat block's runs in the order they start (the plan's rotation), when any
/// block holds more than one run.
fn rotation(input: &AnalysisInput<'_>) -> Option<Table> {
    let mut blocks: Vec<Block<'_>> = Vec::new();
    for run in &input.runs {
        let block = (run.repeat, run.subject);
        match blocks.iter_mut().find(|(b, _)| *b == block) {
            Some((_, runs)) => runs.push((run.order, run.cell.id.as_str())),
            None => blocks.push((block, vec![(run.order, run.cell.id.as_str())])),
        }
    }
    if blocks.iter().all(|(_, runs)| runs.len() < 2) {
        return None;
    }
    let mut table = Table::new("Start order in each subject/repeat block", &["Subject", "Repeat", "Order"]);
    for ((repeat, subject), mut runs) in blocks {
        runs.sort();
        let order = runs.iter().map(|(_, cell)| format!("`{cell}`")).collect::<Vec<_>>().join(" → ");
        table.push(vec![format!("`{subject}`").into(), repeat.into(), order.into()]);
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::spec::AnalysisKind;
    use crate::analysis::test_support::{s, spec, Fixture};

    #[test]
    fn spend_is_reported_per_stage_against_the_allocation() {
        let mut fx = Fixture::new(&[("reviewer", vec![s("routine"), s("plain")])], 2);
        for (repeat, tokens) in [(1, 700), (2, 1300)] {
            let r = fx.add("reviewer=routine", repeat, "s", vec![]);
            r.provenance.insert("pipeline".into(), json!(["r:review×2", "s:synthesize×1"]));
            r.provenance.insert("total_budget".into(), json!(1000));
            r.provenance.insert("allocation".into(), json!({"r": 600, "s": 400}));
            r.counters.insert("stage.r.calls".into(), 2);
            r.counters.insert("stage.r.tokens".into(), tokens - 200);
            r.counters.insert("stage.s.calls".into(), 1);
            r.counters.insert("stage.s.tokens".into(), 200);
            r.cost.wall_ms = 1500;
        }
        fx.add("reviewer=plain", 1, "s", vec![]);
        let out = compute(&spec(AnalysisKind::BUDGET, None), &fx.input());
        assert_eq!(out.tables[0].rows.len(), 1, "a reviewer that is not a pipeline has no row");
        assert_eq!(
            out.tables[0].rows[0],
            vec!["`reviewer=routine`", "1000", "r 600, s 400", "2", "1000.0", "r 800.0, s 200.0", "r 2.0, s 1.0", "0", "0", "1", "0", "1.500"]
        );
        assert_eq!(out.data["runs_over_budget"], 1, "one item: the data is that item");
        assert_eq!(out.tables.len(), 2, "the routine runs and the plain one share a block: {:?}", out.tables);
    }

    #[test]
    fn each_block_lists_its_runs_in_their_start_order() {
        let mut fx = Fixture::new(&[("reviewer", vec![s("a"), s("b"), s("c")])], 1);
        for (subject, orders) in [("s1", [0, 1, 2]), ("s2", [2, 0, 1])] {
            for (cell, order) in ["reviewer=a", "reviewer=b", "reviewer=c"].into_iter().zip(orders) {
                let r = fx.add(cell, 1, subject, vec![]);
                r.provenance.insert("pipeline".into(), json!(["r:review×1"]));
                fx.started(order);
            }
        }
        let out = compute(&spec(AnalysisKind::BUDGET, None), &fx.input());
        let rotation = &out.tables[1];
        assert_eq!(rotation.title, "Start order in each subject/repeat block");
        assert_eq!(rotation.rows[0], vec!["`s1`", "1", "`reviewer=a` → `reviewer=b` → `reviewer=c`"]);
        assert_eq!(rotation.rows[1], vec!["`s2`", "1", "`reviewer=b` → `reviewer=c` → `reviewer=a`"]);
    }
}
