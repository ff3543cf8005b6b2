//! Cost: tokens, model time and requests per cell, from what each reviewer reported, set
//! against the findings and hunks they bought.

use crate::analysis::definition::Definition;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::{
    data::DataList, model::fmt_num, model::json_num, model::missing_note, model::ratio, model::runs_of, model::AnalysisInput, model::AnalysisResult,
    model::Table, model::TableCell,
};
use crate::analysis::spec::AnalysisSpec;
use serde_json::json;

#[derive(Default)]
struct Totals {
    runs: usize,
    findings: usize,
    hunks: u64,
    requests: u64,
    prompt: Option<u64>,
    completion: Option<u64>,
    eval_ms: Option<f64>,
    /// Runs that reported no token counts although others in the cell did.
    without_tokens: usize,
}

fn add<T: std::ops::Add<Output = T> + Copy>(sum: Option<T>, value: Option<T>) -> Option<T> {
    match (sum, value) {
        (Some(s), Some(v)) => Some(s + v),
        (None, v) => v,
        (s, None) => s,
    }
}

/// `cost`: tokens and durations per cell.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::COST, compute);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = AnalysisResult::new(
        spec,
        "",
        "Cost",
        "Tokens, model generation time and model requests per cell, summed over runs as each reviewer reported them, \
         and tokens per finding and per hunk reviewed. `–` means the reviewer reported nothing (offline baselines report no tokens).",
    );
    let mut table = Table::new(
        "",
        &["Cell", "Runs", "Prompt tokens", "Completion tokens", "Total tokens", "Tokens / finding", "Tokens / hunk", "Model eval s", "Requests"],
    );
    let mut data = DataList::default();
    let mut partial = Vec::new();
    for cell in input.cells {
        let mut t = Totals::default();
        for run in runs_of(input, cell) {
            let c = &run.record.cost;
            t.runs += 1;
            t.findings += run.findings.len();
            t.hunks += u64::from(c.hunks);
            t.requests += u64::from(c.requests);
            t.prompt = add(t.prompt, c.prompt_tokens);
            t.completion = add(t.completion, c.completion_tokens);
            t.eval_ms = add(t.eval_ms, c.eval_ms);
            if c.prompt_tokens.is_none() && c.completion_tokens.is_none() {
                t.without_tokens += 1;
            }
        }
        let total = match (t.prompt, t.completion) {
            (None, None) => None,
            (p, c) => Some(p.unwrap_or(0) + c.unwrap_or(0)),
        };
        if total.is_some() && t.without_tokens > 0 {
            partial.push(format!("`{}` ({} of {} runs)", cell.id, t.without_tokens, t.runs));
        }
        let per_finding = total.and_then(|n| ratio(n as f64, t.findings as f64));
        let per_hunk = total.and_then(|n| ratio(n as f64, t.hunks as f64));
        let eval_s = t.eval_ms.map(|ms| ms / 1000.0);
        let opt = |v: Option<u64>| v.map(TableCell::from).unwrap_or_else(|| "–".into());
        table.push(vec![
            format!("`{}`", cell.id).into(),
            t.runs.into(),
            opt(t.prompt),
            opt(t.completion),
            opt(total),
            fmt_num(per_finding, 1),
            fmt_num(per_hunk, 1),
            fmt_num(eval_s, 3),
            if t.requests > 0 { t.requests.into() } else { "–".into() },
        ]);
        data.push(&json!({
            "cell": cell.id,
            "runs": t.runs,
            "findings": t.findings,
            "hunks": t.hunks,
            "prompt_tokens": t.prompt,
            "completion_tokens": t.completion,
            "total_tokens": total,
            "tokens_per_finding": json_num(per_finding),
            "tokens_per_hunk": json_num(per_hunk),
            "model_eval_seconds": json_num(eval_s),
            "requests": t.requests,
        }));
    }
    result.tables.push(table);
    result.data = data.finish();
    if !partial.is_empty() {
        result.notes.push(format!("Some runs reported no tokens, so these sums undercount: {}.", partial.join(", ")));
    }
    result.notes.extend(missing_note(input));
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::spec::AnalysisKind;
    use crate::analysis::test_support::{finding, s, spec, Fixture};

    #[test]
    fn tokens_per_finding_and_hunk() {
        let mut fx = Fixture::new(&[("model", vec![s("a"), s("b")])], 2);
        let r = fx.add("model=a", 1, "s", vec![finding("f", 1, "x"), finding("f", 2, "y")]);
        r.cost.prompt_tokens = Some(900);
        r.cost.completion_tokens = Some(100);
        r.cost.hunks = 4;
        r.cost.requests = 4;
        r.cost.eval_ms = Some(1234.0);
        let r = fx.add("model=a", 2, "s", vec![finding("f", 1, "x")]);
        r.cost.prompt_tokens = Some(450);
        r.cost.completion_tokens = Some(50);
        r.cost.hunks = 4;
        r.cost.requests = 4;
        fx.add("model=b", 1, "s", vec![]);
        let out = compute(&spec(AnalysisKind::COST, None), &fx.input());
        assert_eq!(out.data[0]["total_tokens"], 1500);
        assert_eq!(out.data[0]["tokens_per_finding"], 500.0);
        assert_eq!(out.data[0]["tokens_per_hunk"], 187.5);
        assert_eq!(out.tables[0].rows[0], vec!["`model=a`", "2", "1350", "150", "1500", "500.0", "187.5", "1.234", "8"]);
        assert_eq!(out.tables[0].rows[1], vec!["`model=b`", "1", "–", "–", "–", "–", "–", "–", "–"]);
        assert!(out.data[1]["prompt_tokens"].is_null());
    }

    #[test]
    fn partial_token_reports_are_noted() {
        let mut fx = Fixture::new(&[("model", vec![s("a")])], 2);
        fx.add("model=a", 1, "s", vec![]).cost.prompt_tokens = Some(10);
        fx.add("model=a", 2, "s", vec![]);
        let out = compute(&spec(AnalysisKind::COST, None), &fx.input());
        assert_eq!(out.data["tokens_per_finding"], serde_json::Value::Null);
        assert!(out.notes[0].contains("`model=a` (1 of 2 runs)"));
    }
}
