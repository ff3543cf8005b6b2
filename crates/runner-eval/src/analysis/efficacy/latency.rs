//! A3, latency and throughput: wall-clock seconds per run and per hunk reviewed, from the
//! times runner measured (and the model server's own timings where it reports them).

use crate::analysis::definition::Definition;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::chart::{Chart, ChartCells, Distribution, DistributionChart, Named, MAX_CHART_MARKS};
use crate::analysis::{
    data::DataList, model::fmt_num, model::json_num, model::missing_in, model::missing_note, model::ratio, model::runs_of, model::AnalysisInput,
    model::AnalysisResult, model::Table,
};
use crate::analysis::spec::AnalysisSpec;
use serde_json::json;

struct Row {
    runs: usize,
    wall_ms: u64,
    hunks: u64,
    /// Sum and count of runs that reported a model generation time.
    eval_ms: (f64, usize),
    prompt_eval_ms: (f64, usize),
}

/// `latency` (A3): seconds per run and per hunk, charted per cell.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::LATENCY, compute).with_charts(charts);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = AnalysisResult::new(
        spec,
        "A3",
        "Review time",
        "Wall-clock review time per cell as runner measured it around each reviewer run, summed over runs, \
         divided by the hunks reviewed and by the runs; model-reported generation and prompt-processing times where the server gives them.",
    );
    let mut rows = Vec::new();
    for cell in input.cells {
        let mut row = Row { runs: 0, wall_ms: 0, hunks: 0, eval_ms: (0.0, 0), prompt_eval_ms: (0.0, 0) };
        for run in runs_of(input, cell) {
            let cost = &run.record.cost;
            row.runs += 1;
            row.wall_ms += cost.wall_ms;
            row.hunks += u64::from(cost.hunks);
            if let Some(ms) = cost.eval_ms {
                row.eval_ms.0 += ms;
                row.eval_ms.1 += 1;
            }
            if let Some(ms) = cost.prompt_eval_ms {
                row.prompt_eval_ms.0 += ms;
                row.prompt_eval_ms.1 += 1;
            }
        }
        rows.push((cell, row));
    }
    let has_model_times = rows.iter().any(|(_, r)| r.eval_ms.1 + r.prompt_eval_ms.1 > 0);
    let mut columns = vec!["Cell", "Runs", "Total s", "Hunks", "s / hunk", "Mean s / run"];
    if has_model_times {
        columns.extend(["Model eval s", "Prompt eval s"]);
    }
    let mut table = Table::new("", &columns);
    let mut data = DataList::default();
    let mut partial_model_times = false;
    for (cell, row) in &rows {
        let total_s = row.wall_ms as f64 / 1000.0;
        let per_hunk = ratio(total_s, row.hunks as f64);
        let per_run = ratio(total_s, row.runs as f64);
        let secs = |(sum, n): (f64, usize)| (n > 0).then_some(sum / 1000.0);
        let eval_s = secs(row.eval_ms);
        let prompt_s = secs(row.prompt_eval_ms);
        partial_model_times |= (row.eval_ms.1 > 0 && row.eval_ms.1 < row.runs) || (row.prompt_eval_ms.1 > 0 && row.prompt_eval_ms.1 < row.runs);
        let mut cells = vec![
            format!("`{}`", cell.id).into(),
            match missing_in(input, cell) {
                0 => row.runs.into(),
                m => format!("{} of {}", row.runs, row.runs + m).into(),
            },
            fmt_num((row.runs > 0).then_some(total_s), 3),
            row.hunks.into(),
            fmt_num(per_hunk, 3),
            fmt_num(per_run, 3),
        ];
        if has_model_times {
            cells.extend([fmt_num(eval_s, 3), fmt_num(prompt_s, 3)]);
        }
        table.push(cells);
        let mut obj = json!({
            "cell": cell.id,
            "values": cell.values.iter().map(|(k, v)| (k.clone(), v.to_json())).collect::<serde_json::Map<_, _>>(),
            "runs": row.runs,
            "total_seconds": json_num((row.runs > 0).then_some(total_s)),
            "hunks_reviewed": row.hunks,
            "seconds_per_hunk": json_num(per_hunk),
            "mean_seconds_per_run": json_num(per_run),
        });
        if let Some(map) = obj.as_object_mut() {
            if let Some(v) = eval_s {
                map.insert("model_eval_seconds".into(), json_num(Some(v)));
            }
            if let Some(v) = prompt_s {
                map.insert("model_prompt_eval_seconds".into(), json_num(Some(v)));
            }
        }
        data.push(&obj);
    }
    result.tables.push(table);
    result.data = data.finish();
    result.notes.push(
        "Times are those recorded when each run was executed (a cached run keeps its original time), at millisecond resolution; \
         runs shorter than 1 ms count as 0."
            .into(),
    );
    if partial_model_times {
        result.notes.push("Some runs of a cell reported no model timings; model eval columns sum only the runs that did.".into());
    }
    result.notes.extend(missing_note(input));
    result
}

/// A3's chart: the seconds of every run with a result, per cell (results.json `runs`).
pub(crate) fn charts(_analysis: &AnalysisResult, cells: &dyn ChartCells) -> Vec<Named> {
    const TITLE: &str = "Seconds per run, by cell";
    if cells.count() > MAX_CHART_MARKS {
        // One box per cell: too many to draw.
        return cells
            .any_run_seconds()
            .then(|| Named { name: "seconds", chart: Chart::TooLarge { title: TITLE.into(), marks: cells.count() } })
            .into_iter()
            .collect();
    }
    let per_cell = cells.run_seconds();
    if per_cell.is_empty() {
        return Vec::new();
    }
    let distributions = per_cell.into_iter().map(|(label, values)| Distribution { label, values }).collect();
    vec![Named {
        name: "seconds",
        chart: Chart::Distribution(DistributionChart {
            title: TITLE.into(),
            note: "Wall-clock time of each run with a result, as recorded when it ran. Box: quartiles; line: median; whiskers: fastest and slowest run.".into(),
            x_label: "seconds per run".into(),
            distributions,
            range: None,
            digits: 3,
        }),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::spec::AnalysisKind;
    use crate::analysis::test_support::{finding, s, spec, Fixture};

    #[test]
    fn seconds_per_hunk_and_model_times() {
        let mut fx = Fixture::new(&[("model", vec![s("a"), s("b")])], 2);
        let r = fx.add("model=a", 1, "s", vec![finding("f", 1, "m")]);
        r.cost.wall_ms = 1500;
        r.cost.hunks = 3;
        r.cost.eval_ms = Some(1000.0);
        let r = fx.add("model=a", 2, "s", vec![]);
        r.cost.wall_ms = 500;
        r.cost.hunks = 3;
        r.cost.eval_ms = Some(250.0);
        fx.missing.push(crate::matrix::RunId::new("model=b", 1, "s"));
        let out = compute(&spec(AnalysisKind::LATENCY, None), &fx.input());
        assert_eq!(out.test_id, "A3");
        assert_eq!(out.data[0]["total_seconds"], 2.0);
        assert_eq!(out.data[0]["hunks_reviewed"], 6);
        assert_eq!(out.data[0]["seconds_per_hunk"].as_f64(), Some(2.0 / 6.0));
        assert_eq!(out.data[0]["model_eval_seconds"], 1.25);
        assert_eq!(out.tables[0].rows[0], vec!["`model=a`", "2", "2.000", "6", "0.333", "1.000", "1.250", "–"]);
        assert_eq!(out.tables[0].rows[1], vec!["`model=b`", "0 of 1", "–", "0", "–", "–", "–", "–"]);
        assert!(out.data[1]["seconds_per_hunk"].is_null());
    }

    #[test]
    fn model_columns_only_when_reported() {
        let mut fx = Fixture::new(&[("model", vec![s("a")])], 1);
        fx.add("model=a", 1, "s", vec![]).cost.wall_ms = 42;
        let out = compute(&spec(AnalysisKind::LATENCY, None), &fx.input());
        assert_eq!(out.tables[0].columns.len(), 6);
        assert_eq!(out.tables[0].rows[0][2], "0.042");
        assert!(out.data.get("model_eval_seconds").is_none());
    }
}
