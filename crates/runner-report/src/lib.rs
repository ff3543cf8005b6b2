//! `runner-report`: what an execution writes and what reads it back. The versioned results
//! model (results.json), its build from the walk's outcomes, RESULTS.md through handlebars, the
//! SVG charts, the list of outputs runner owns, the extra formats (the HTML page, the CI
//! summary), and the tools over recorded results (`show`, `diff`, the statistical gate, the
//! pilot's power). Above the engine; nothing here runs a reviewer or walks a plan.

use runner_cache::cache;
use runner_core::{bounded, config, finding, matrix, output_file, stats};
use runner_engine::{exec, manifest, plan};
use runner_eval::analysis;
use runner_subject::{ground_truth, subject};

pub mod ci;
pub mod diff;
pub mod formats;
pub mod gate;
pub mod html;
pub mod model;
pub mod outputs;
pub mod pilot;
pub mod plots;
pub mod pretty;
pub mod render;
pub mod show;

use crate::analysis::AnalysisResult;
use crate::exec::RunOutcome;
use crate::manifest::Manifest;
use crate::plan::Plan;
use crate::subject::TargetSpec;
use model::*;
use std::collections::BTreeMap;

/// The first screen's table, from the first `compare` analysis: its first headline metric
/// (else its first metric) in each cell, with a bootstrap interval over subjects.
fn glance(analyses: &[std::sync::Arc<AnalysisResult>]) -> Option<Glance> {
    use crate::analysis::statistics::compare::CompareData;
    let compare = analyses.iter().find(|a| a.kind == crate::analysis::spec::AnalysisKind::COMPARE)?;
    let data: CompareData = compare.data_as().ok()?;
    let metric = data.headline.first().map(|m| m.as_str().to_string()).or_else(|| data.cells.first().and_then(|c| c.metrics.keys().next().cloned()))?;
    let rows: Vec<GlanceRow> = data
        .cells
        .iter()
        .map(|cell| {
            let values: Vec<f64> = cell.metrics.get(&metric).map(|m| m.subjects.values().copied().collect()).unwrap_or_default();
            let interval = crate::stats::bootstrap_mean_interval(&values, data.resamples, data.seed, data.level, data.interval);
            GlanceRow {
                cell: cell.cell.clone(),
                value: crate::stats::mean(&values),
                low: interval.map(|i| i.low),
                high: interval.map(|i| i.high),
                subjects: values.len(),
            }
        })
        .collect();
    (!rows.is_empty()).then(|| Glance { metric, level: data.level, level_label: format!("{:.0}%", data.level * 100.0), rows })
}

/// Builds the results model from the plan and its outcomes (cached and fresh alike).
pub fn build_results(
    manifest: &Manifest,
    manifest_label: &str,
    plan: &Plan,
    outcomes: &[&RunOutcome],
    reviewer_configs: Vec<ReviewerConfig>,
    analyses: Vec<std::sync::Arc<AnalysisResult>>,
) -> Results {
    let mut cells: Vec<CellRow> = Vec::new();
    let mut runs = Vec::new();
    let mut failures = Vec::new();
    let mut output_problems = Vec::new();
    let mut totals = Totals { planned: plan.runs.len(), ..Totals::default() };
    let mut total_ms = 0u64;
    // Per cell: each provenance key with the distinct values its runs recorded.
    let mut provenance: Vec<(String, MergedProvenance)> = Vec::new();

    // Runs grouped by cell once, so building the rows stays linear in runs and cells.
    let mut runs_by_cell: std::collections::HashMap<&str, Vec<(&crate::plan::PlannedRun, &&RunOutcome)>> = std::collections::HashMap::new();
    for (run, outcome) in plan.runs.iter().zip(outcomes) {
        runs_by_cell.entry(run.cell.id.as_str()).or_default().push((run, outcome));
    }
    for cell in &plan.cells {
        let cell_runs = runs_by_cell.remove(cell.id.as_str()).unwrap_or_default();
        // The values as the cell's keys hold them, shared with the plan.
        let values = cell_runs.first().map_or_else(|| crate::cache::KeyInputs::cell_values(cell), |(run, _)| run.inputs.cell.clone());
        let mut row = CellRow {
            cell: cell.id.clone(),
            values,
            runs: 0,
            planned: 0,
            findings: 0,
            findings_per_run: None,
            seconds: 0.0,
            prompt_tokens: None,
            completion_tokens: None,
        };
        let (mut ms, mut pt, mut ct, mut has_tokens) = (0u64, 0u64, 0u64, false);
        for (run, &outcome) in cell_runs {
            row.planned += 1;
            let key = run.key.short().to_string();
            match outcome.success() {
                Some((record, findings)) => {
                    if !record.schema_problems.is_empty() {
                        output_problems.push(OutputProblemRow::new(run.label(), &record.schema_problems));
                    }
                    row.runs += 1;
                    row.findings += findings.len();
                    ms += record.cost.wall_ms;
                    if let Some(p) = record.cost.prompt_tokens {
                        pt += p;
                        has_tokens = true;
                    }
                    if let Some(c) = record.cost.completion_tokens {
                        ct += c;
                        has_tokens = true;
                    }
                    if !record.provenance.is_empty() {
                        if provenance.last().is_none_or(|(id, _)| *id != cell.id) {
                            provenance.push((cell.id.clone(), BTreeMap::new()));
                        }
                        if let Some((_, merged)) = provenance.last_mut() {
                            for (key, value) in &record.provenance {
                                let text = value.as_str().map(str::to_string).unwrap_or_else(|| value.to_string());
                                let values = merged.entry(key.clone()).or_default();
                                if !values.contains(&text) {
                                    values.push(text);
                                }
                            }
                        }
                    }
                    runs.push(RunRow {
                        cell: cell.id.clone(),
                        repeat: run.repeat,
                        subject: run.subject_id.clone(),
                        status: RunStatus::Ok,
                        findings: findings.len(),
                        hunks: record.cost.hunks,
                        seconds: Some(seconds(record.cost.wall_ms)),
                        key,
                    });
                }
                None => {
                    let (status, error, stderr) = match outcome {
                        RunOutcome::Failed(e) => (RunStatus::Failed, e.to_string(), FailureRow::stderr_lines(e.stderr_tail())),
                        RunOutcome::Skipped(reason) => (RunStatus::Skipped, reason.to_string(), Vec::new()),
                        _ => (RunStatus::Missing, "not in the cache (frozen)".to_string(), Vec::new()),
                    };
                    failures.push(FailureRow { run: run.label(), error, stderr });
                    runs.push(RunRow {
                        cell: cell.id.clone(),
                        repeat: run.repeat,
                        subject: run.subject_id.clone(),
                        status,
                        findings: 0,
                        hunks: 0,
                        seconds: None,
                        key,
                    });
                }
            }
        }
        row.findings_per_run = (row.runs > 0).then(|| row.findings as f64 / row.runs as f64);
        row.seconds = seconds(ms);
        row.prompt_tokens = has_tokens.then_some(pt);
        row.completion_tokens = has_tokens.then_some(ct);
        totals.succeeded += row.runs;
        totals.findings += row.findings;
        totals.prompt_tokens += pt;
        totals.completion_tokens += ct;
        total_ms += ms;
        cells.push(row);
    }
    totals.failed = totals.planned - totals.succeeded;
    totals.review_seconds = seconds(total_ms);

    let (kind, description) = match &manifest.target {
        TargetSpec::Git { repo, head, .. } => (TargetKind::Git, format!("`{}` reviewed as `ref..{head}`", relative(&manifest.base_dir, repo))),
        TargetSpec::History { repo, .. } => (
            TargetKind::Git,
            format!(
                "`{}`: {}, each reviewed against its first parent",
                relative(&manifest.base_dir, repo),
                plan.history.as_ref().map_or_else(String::new, |h| h.selection.clone())
            ),
        ),
        TargetSpec::Corpus { dir, .. } => (TargetKind::Corpus, format!("`{}`, each case as a two-commit repository", relative(&manifest.base_dir, dir))),
        TargetSpec::External { changes, oracle, .. } => (
            TargetKind::External,
            match oracle {
                Some(o) => format!(
                    "the external changes of `{}` (no repository), scored against `{}`",
                    relative(&manifest.base_dir, changes),
                    relative(&manifest.base_dir, o)
                ),
                None => format!("the external changes of `{}` (no repository)", relative(&manifest.base_dir, changes)),
            },
        ),
        TargetSpec::Evals { repo, dir, .. } => (
            TargetKind::Evals,
            format!(
                "`{}` with the eval cases in `{}`, each case's `base..tip` reviewed in a blind clone",
                relative(&manifest.base_dir, repo),
                relative(&manifest.base_dir, dir)
            ),
        ),
    };
    Results {
        schema_version: RESULTS_SCHEMA,
        experiment: ExperimentInfo {
            name: manifest.experiment.name.clone(),
            description: manifest.experiment.description.trim().to_string(),
            manifest: manifest_label.to_string(),
        },
        question: analyses.iter().find(|a| a.kind == crate::analysis::spec::AnalysisKind::COMPARE).map(|a| a.title.clone()),
        summary: analyses.iter().flat_map(|a| a.headline.iter().cloned()).collect(),
        glance: glance(&analyses),
        matrix: MatrixInfo {
            axes: manifest.matrix.axes.iter().map(|a| AxisInfo { name: a.name.clone(), values: a.values.iter().map(|v| v.render()).collect() }).collect(),
            repeat: manifest.matrix.repeat,
            cells: plan.cells.len(),
            subjects: plan.size().subjects_per_cell as usize,
            planned_runs: plan.runs.len(),
            excluded: manifest
                .matrix
                .exclude
                .iter()
                .map(|rule| rule.iter().map(|(axis, value)| format!("`{axis}={}`", value.render())).collect::<Vec<_>>().join(", "))
                .collect(),
        },
        reviewer: ReviewerInfo { kind: reviewer_kinds(manifest), configs: reviewer_configs },
        target: TargetInfo {
            kind,
            description,
            subjects: match &plan.history {
                Some(history) => history.planned.iter().map(|c| c.sha.clone()).collect(),
                None => plan.subjects.keys().cloned().collect(),
            },
            unsealed_holdout: plan.subjects.values().filter(|s| s.holdout).map(|s| s.id.clone()).collect(),
            revisions: plan
                .subjects
                .values()
                .filter(|_| plan.history.is_none())
                .filter_map(|s| match &s.source {
                    crate::subject::SubjectSource::Git { base_sha, head_sha, .. } | crate::subject::SubjectSource::Eval { base_sha, head_sha, .. } => {
                        Some(Revision { subject: s.id.clone(), base: base_sha.clone(), head: head_sha.clone() })
                    }
                    crate::subject::SubjectSource::Case(_) | crate::subject::SubjectSource::External(_) => None,
                })
                .collect(),
            history: plan.history.as_ref().map(history_info),
        },
        provenance: group_provenance(provenance),
        totals,
        cells,
        runs,
        failures,
        output_problems,
        analyses,
    }
}

/// A history target's selection for the results model.
fn history_info(history: &crate::subject::history::History) -> HistoryInfo {
    use crate::subject::history::{short, Commit};
    let row = |c: &Commit, note: String| CommitRow {
        sha: c.sha.clone(),
        short: c.short().to_string(),
        title: c.title.clone(),
        base: c.base.clone(),
        base_short: short(&c.base).to_string(),
        lines: c.lines,
        files: c.files,
        note,
    };
    HistoryInfo {
        selection: history.selection.clone(),
        considered: history.considered,
        subjects: history.planned.iter().map(|c| row(c, c.note(history.merges).unwrap_or_default().to_string())).collect(),
        skipped: history.skipped.iter().map(|(c, why)| row(c, why.to_string())).collect(),
        sample: history.sample.map(|s| SampleInfo { size: s.size, of: s.of, seed: s.seed }),
        max_diff_lines: history.max_diff_lines,
    }
}

/// Milliseconds as seconds.
fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// The reviewers' kinds: `builtin`, or `builtin, command` for named reviewers of several kinds.
fn reviewer_kinds(manifest: &Manifest) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for named in &manifest.reviewers.entries {
        let kind = named.spec.kind.kind_name();
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds.join(", ")
}

/// Each provenance key with the distinct values a cell's runs recorded.
type MergedProvenance = BTreeMap<String, Vec<String>>;

/// Cells whose runs recorded the same provenance share one row; a key whose runs differ
/// (a seed per repeat) lists every value.
fn group_provenance(per_cell: Vec<(String, MergedProvenance)>) -> Vec<ProvenanceRow> {
    let mut rows: Vec<(MergedProvenance, Vec<String>)> = Vec::new();
    for (cell, merged) in per_cell {
        match rows.iter_mut().find(|(m, _)| *m == merged) {
            Some((_, cells)) => cells.push(cell),
            None => rows.push((merged, vec![cell])),
        }
    }
    rows.into_iter()
        .map(|(merged, cells)| ProvenanceRow {
            cells: cells.join("; "),
            entries: merged.into_iter().map(|(key, values)| KeyValue { key, value: values.join(", ") }).collect(),
        })
        .collect()
}

/// A path shown relative to the manifest's project root, so a report does not depend on the
/// directory runner was started from.
fn relative(base: &std::path::Path, path: &std::path::Path) -> String {
    crate::config::project_relative(base, path)
}
