//! A7, schema conformance: every run's findings checked against `$defs/finding` of
//! `schemas/reviewer-output.schema.json` (stet's findings schema, as the parser checks it), plus
//! the problems the parser recorded in the raw output, plus the dry-run rule (findings must
//! not be empty when the diff has hunks).

use crate::analysis::definition::Definition;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::{
    data::DataList, model::missing_in, model::missing_note, model::runs_of, model::truncate, model::AnalysisInput, model::AnalysisResult, model::RunView,
    model::Table,
};
use crate::analysis::spec::AnalysisSpec;
use crate::reviewer::parse::schema_problems;
use serde_json::{json, Value};

/// Problems listed in the report; results.json keeps up to `KEPT` per cell.
const SHOWN: usize = 20;
const KEPT: usize = 100;

/// Whether a run comes from stet's dry-run (or runner's `dry-run` builtin): the reviewer's
/// fingerprint mentions `dry-run`, or one of the cell's values is `dry-run`.
pub(crate) fn is_dry_run(run: &RunView<'_>) -> bool {
    fn mentions(value: &Value) -> bool {
        match value {
            Value::String(s) => s.contains("dry-run") || s.contains("dry_run"),
            Value::Array(items) => items.iter().any(mentions),
            Value::Object(map) => map.iter().any(|(k, v)| k.contains("dry-run") || k.contains("dry_run") || mentions(v)),
            _ => false,
        }
    }
    mentions(&run.record.inputs.reviewer) || run.cell.values.values().any(|v| v.render() == "dry-run")
}

/// Every schema problem of one run: the stored findings re-checked, the parse-time problems,
/// and (for dry-run) empty output for a diff with hunks.
pub(crate) fn run_problems(run: &RunView<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for (i, f) in run.findings.iter().enumerate() {
        let value = serde_json::to_value(f).unwrap_or(Value::Null);
        for p in schema_problems(&value) {
            out.push(format!("finding {i}: {p}"));
        }
        if f.file.trim().is_empty() {
            out.push(format!("finding {i}: `file` is empty"));
        }
        if let Some(r) = f.range {
            if !r.is_valid() {
                out.push(format!("finding {i}: range {}–{} is not a valid line range", r.start, r.end));
            }
        }
    }
    out.extend(run.record.schema_problems.iter().map(|p| format!("output: {p}")));
    if run.findings.is_empty() && run.record.cost.hunks > 0 && is_dry_run(run) {
        out.push(format!("no findings although the diff has {} hunk(s); dry-run emits one per hunk", run.record.cost.hunks));
    }
    out
}

/// `schema` (A7): every reviewer's output against stet's schema.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::SCHEMA, compute);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = AnalysisResult::new(
        spec,
        "A7",
        "Output schema conformance",
        "Each stored finding is re-checked against stet's schema, `schemas/reviewer-output.schema.json` (required file, severity, category, confidence, message; \
         severity and category in stet's sets; confidence in [0, 1]; a 64-hex id), together with the problems found in the raw output when it was parsed. \
         For dry-run reviewers, an empty result for a diff with hunks also fails.",
    );
    let mut table = Table::new("", &["Cell", "Runs", "Findings", "Problems", "Verdict"]);
    let mut listed: Vec<(String, String)> = Vec::new();
    let mut total_problems = 0usize;
    let mut empty_non_dry = 0usize;
    let mut data = DataList::default();
    for cell in input.cells {
        let (mut runs, mut findings, mut problems) = (0usize, 0usize, Vec::new());
        for run in runs_of(input, cell) {
            runs += 1;
            findings += run.findings.len();
            if run.findings.is_empty() && run.record.cost.hunks > 0 && !is_dry_run(run) {
                empty_non_dry += 1;
            }
            for p in run_problems(run) {
                problems.push((run.record.label.clone(), p));
            }
        }
        let missing = missing_in(input, cell);
        let verdict = if !problems.is_empty() {
            "**fail**"
        } else if runs == 0 {
            "–"
        } else if missing > 0 {
            "incomplete"
        } else {
            "pass"
        };
        table.push(vec![
            format!("`{}`", cell.id).into(),
            if missing > 0 { format!("{runs} of {}", runs + missing).into() } else { runs.into() },
            findings.into(),
            problems.len().into(),
            verdict.into(),
        ]);
        data.push(&json!({
            "cell": cell.id,
            "pass": (runs > 0).then_some(problems.is_empty() && missing == 0),
            "runs": runs,
            "runs_without_result": missing,
            "findings": findings,
            "problems_total": problems.len(),
            "problems": problems.iter().take(KEPT).map(|(run, p)| json!({"run": run, "problem": p})).collect::<Vec<_>>(),
        }));
        total_problems += problems.len();
        listed.extend(problems);
    }
    result.tables.push(table);
    if !listed.is_empty() {
        let title = if listed.len() > SHOWN { format!("First {SHOWN} of {} problems", listed.len()) } else { "Problems".to_string() };
        let mut problems = Table::new(title, &["Run", "Problem"]);
        for (run, p) in listed.iter().take(SHOWN) {
            problems.push(vec![format!("`{run}`").into(), truncate(p, 120).into()]);
        }
        result.tables.push(problems);
        result.notes.push(format!("**Fail**: {total_problems} schema problem(s)."));
    } else if !input.runs.is_empty() {
        result.notes.push(format!(
            "**Pass**: all {} findings of {} runs conform.",
            input.runs.iter().map(|r| r.findings.len()).sum::<usize>(),
            input.runs.len()
        ));
    }
    if empty_non_dry > 0 {
        result.notes.push(format!(
            "{empty_non_dry} run(s) of a reviewer other than dry-run returned no findings for a diff with hunks; \
             that fails only for dry-run (which emits one finding per hunk), so it is not counted here."
        ));
    }
    if !input.missing.is_empty() {
        result.notes.push(
            "Runs without a result (including output that was not valid JSON) could not be validated; their cells read `incomplete` unless they already fail."
                .into(),
        );
    }
    result.data = data.finish();
    result.notes.extend(missing_note(input));
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::spec::AnalysisKind;
    use crate::analysis::test_support::{finding, s, spec, Fixture};
    use crate::finding::LineRange;

    #[test]
    fn stored_and_parse_time_problems_fail_a_cell() {
        let mut fx = Fixture::new(&[("model", vec![s("a"), s("b")])], 1);
        let mut bad = finding("x.py", 2, "m");
        bad.confidence = 1.5;
        bad.id = "not-hex".into();
        bad.range = Some(LineRange { start: 5, end: 3 });
        fx.add("model=a", 1, "s", vec![bad, finding("x.py", 4, "fine")])
            .schema_problems
            .push("findings[0]: severity \"fatal\" is not one of error, warning, info, nitpick".into());
        fx.add("model=b", 1, "s", vec![finding("y.py", 1, "fine")]);
        let out = compute(&spec(AnalysisKind::SCHEMA, None), &fx.input());
        assert_eq!(out.test_id, "A7");
        assert_eq!(out.data[0]["problems_total"], 4, "{}", out.data[0]);
        assert_eq!(out.data[0]["pass"], false);
        assert_eq!(out.data[1]["pass"], true);
        assert_eq!(out.tables[0].rows[0], vec!["`model=a`", "1", "2", "4", "**fail**"]);
        assert_eq!(out.tables[0].rows[1][4], "pass");
        assert!(out.tables[1].rows.iter().any(|r| r[1].render().starts_with("output: findings[0]: severity")));
        assert!(out.tables[1].rows.iter().any(|r| r[1].render().contains("confidence 1.5")));
    }

    #[test]
    fn empty_output_fails_only_for_dry_run() {
        let mut fx = Fixture::new(&[("baseline", vec![s("dry-run"), s("heuristic")])], 1);
        fx.add("baseline=dry-run", 1, "s", vec![]).cost.hunks = 2;
        fx.add("baseline=heuristic", 1, "s", vec![]).cost.hunks = 2;
        fx.missing.push(crate::matrix::RunId::new("baseline=heuristic", 1, "t"));
        let out = compute(&spec(AnalysisKind::SCHEMA, None), &fx.input());
        assert_eq!(out.tables[0].rows[0][4], "**fail**");
        assert_eq!(out.tables[0].rows[1], vec!["`baseline=heuristic`", "1 of 2", "0", "0", "incomplete"]);
        assert!(out.notes.iter().any(|n| n.starts_with("1 run(s) of a reviewer other than dry-run")), "{:?}", out.notes);
    }

    #[test]
    fn fingerprint_marks_dry_run() {
        let mut fx = Fixture::new(&[("model", vec![s("a")])], 1);
        fx.fingerprint = serde_json::json!({"args": ["start", "HEAD~1", "--dry-run", "--json"]});
        fx.add("model=a", 1, "s", vec![]).cost.hunks = 1;
        let out = compute(&spec(AnalysisKind::SCHEMA, None), &fx.input());
        assert_eq!(out.data["pass"], false);
        assert!(out.data["problems"][0]["problem"].as_str().is_some_and(|p| p.contains("dry-run emits one per hunk")));
    }
}
