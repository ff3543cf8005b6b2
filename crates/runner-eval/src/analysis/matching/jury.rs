//! The judges measured (`kind = "jury"`): for every oracle finding of every run, each judge's
//! found / not found — a model judge asked about every pair at the place ("the same issue?"),
//! a replayed judge's recorded decision — beside runner's matcher; per cell each judge's
//! recall and precision, the majority's recall, the matcher's; the judges' pairwise κ, each
//! against the majority of the others, the matcher against each judge and the majority; and
//! the cells ranked under each.
//!
//! The figures are the ones `runner matching evaluate` prints for judgement files
//! ([`crate::analysis::matching::judgements`]): the runs are turned into one record per run (its cell as the
//! "tool", its subject as the pull request) and each judge's decisions into that judge's
//! labels, so both commands compute every number the same way. A replayed judge decided on
//! its own reading of each review (its own candidate list), so its precision counts its own
//! candidates; the matcher's counts the run's findings.

use crate::analysis::definition::{Definition, Needs};
use crate::analysis::spec::AnalysisKind;
use crate::analysis::matching::judgements::{agreement, jury, Agreement, Decision, Golden, JudgementFile, Record};
use crate::analysis::matching::matcher::{describe_rule_for, match_case_judged, report_text, Prf, Verdict};
use crate::analysis::spec::AnalysisSpec;
use crate::analysis::{model::fmt_num, model::fmt_ratio, model::AnalysisInput, model::AnalysisResult, model::Table, model::TableCell};
use crate::matrix::RunId;
use serde_json::json;
use std::collections::BTreeMap;

pub(crate) const TEST_ID: &str = "jury";

/// One judge's labels and the matcher's decisions on the same records.
struct Rater {
    file: JudgementFile,
    decisions: Vec<Decision>,
}

/// `jury`: the judges measured on every oracle finding of every run.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::JURY, compute).needing(Needs::JUDGES);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = AnalysisResult::new(
        spec,
        TEST_ID,
        "The judges and runner's matcher",
        "For every oracle finding of every run: found or not by each judge (a model judge asked \"the same issue?\" about every report at its place; \
         a replayed judge's recorded decision), by the judges' majority (a tie is not a find) and by runner's matcher. Per cell each one's recall and \
         precision; Cohen's κ between every two of them over the oracle findings both decided; the cells ranked under each.",
    );
    let Some(oracle) = input.oracle else {
        result.notes.push("The target has no oracle: there is nothing to find.".into());
        return result;
    };
    let Some(votes) = input.match_votes() else {
        result.notes.push("No judge answered: the judges' match nodes did not run.".into());
        return result;
    };
    result.rule = Some(format!("runner's matcher: {}", describe_rule_for(&spec.oracle_rule, oracle)));
    let mut raters: Vec<Rater> = votes
        .judges
        .iter()
        .map(|j| Rater { file: JudgementFile { name: j.clone(), judge: j.clone(), records: Vec::new(), digest: String::new() }, decisions: Vec::new() })
        .collect();
    let mut unlabelled = vec![0usize; raters.len()];
    for run in &input.runs {
        if oracle.case(run.subject).is_none() {
            continue;
        }
        let expected = oracle.expected_for(run.subject);
        let label = RunId::new(run.cell.id.clone(), run.repeat, run.subject.to_string()).to_string();
        // A record per run: repeats of one subject are apart.
        let pr = if input.repeat > 1 { format!("{}#{}", run.subject, run.repeat) } else { run.subject.to_string() };
        let candidates: Vec<String> = run.findings.iter().map(report_text).collect();
        let matched = match_case_judged(run.findings, &expected, &spec.oracle_rule, None);
        let decisions: Vec<Decision> = expected
            .iter()
            .zip(&matched.verdicts)
            .map(|(o, v)| {
                let candidate = (v.verdict == Verdict::Found).then_some(v.reported).flatten().and_then(|i| candidates.get(i).cloned());
                Decision { pr: pr.clone(), tool: run.cell.id.clone(), golden: o.description.clone(), found: candidate.is_some(), candidate }
            })
            .collect();
        for (j, rater) in raters.iter_mut().enumerate() {
            let replayed = votes.replayed.get(j).copied().unwrap_or(false);
            let golden: Vec<Golden> = expected
                .iter()
                .map(|o| {
                    let label = if replayed {
                        votes
                            .findings
                            .get(&(label.clone(), o.description.clone()))
                            .and_then(|v| v.get(j).copied().flatten())
                            .map(|found| found.then(|| o.description.clone()))
                    } else {
                        pair_label(votes, j, &o.description, &candidates)
                    };
                    Golden { comment: o.description.clone(), severity: o.severity_label.clone(), label }
                })
                .collect();
            // A run this judge left undecided in part is left out of its figures (and of the
            // cells every judge decided).
            if golden.iter().any(|g| g.label.is_none()) {
                unlabelled[j] += 1;
                continue;
            }
            let unmatched = if replayed { votes.false_positives.get(&label).and_then(|v| v.get(j).copied().flatten()) } else { None };
            rater.file.records.push(Record {
                pr: pr.clone(),
                project: None,
                tool: run.cell.id.clone(),
                skipped: false,
                golden,
                candidates: candidates.clone(),
                unmatched,
            });
            rater.decisions.extend(decisions.iter().cloned());
        }
    }
    let agreements: Vec<Agreement> = raters.iter().map(|r| agreement(&r.file, &r.decisions)).collect();
    let panel = jury(&raters.iter().map(|r| &r.file).collect::<Vec<_>>(), &raters.iter().map(|r| r.decisions.as_slice()).collect::<Vec<_>>());
    let majority = majority_recall(&raters);
    let names: Vec<&str> = votes.judges.iter().map(String::as_str).collect();

    // Per cell: recall and precision under each judge, the majority and the matcher.
    let cells: Vec<String> = input.cells.iter().map(|c| c.id.clone()).filter(|c| agreements.iter().any(|a| a.tools.iter().any(|t| &t.tool == c))).collect();
    let scores = |a: &Agreement, cell: &str| a.tools.iter().find(|t| t.tool == cell).map(|t| (t.judge, t.matcher));
    let matcher_of = |cell: &str| agreements.iter().find_map(|a| scores(a, cell)).map(|(_, m)| m);
    let mut columns: Vec<String> = vec!["Cell".into()];
    columns.extend(names.iter().map(|n| format!("`{n}`")));
    columns.extend(["Majority".to_string(), "Matcher".to_string()]);
    let mut recall = Table::with_columns("Recall per cell", columns.clone());
    let mut precision_columns = columns.clone();
    precision_columns.retain(|c| c != "Majority");
    let mut precision = Table::with_columns("Precision per cell", precision_columns);
    let mut cells_json = Vec::new();
    for cell in &cells {
        let judged: Vec<Option<Prf>> = agreements.iter().map(|a| scores(a, cell).map(|(j, _)| j)).collect();
        let matcher = matcher_of(cell);
        let mut row: Vec<TableCell> = vec![format!("`{cell}`").into()];
        row.extend(judged.iter().map(|p| fmt_ratio(p.and_then(|p| p.recall()))));
        row.push(fmt_ratio(majority.get(cell.as_str()).and_then(|&(found, of)| (of > 0).then(|| found as f64 / of as f64))));
        row.push(fmt_ratio(matcher.and_then(|p| p.recall())));
        recall.push(row);
        let mut row: Vec<TableCell> = vec![format!("`{cell}`").into()];
        row.extend(judged.iter().map(|p| fmt_ratio(p.and_then(|p| p.precision()))));
        row.push(fmt_ratio(matcher.and_then(|p| p.precision())));
        precision.push(row);
        cells_json.push(json!({
            "cell": cell,
            "judges": names.iter().zip(&judged).map(|(n, p)| json!({"judge": n, "recall": p.and_then(|p| p.recall()), "precision": p.and_then(|p| p.precision()), "f1": p.and_then(|p| p.f1())})).collect::<Vec<_>>(),
            "majority_recall": majority.get(cell.as_str()).and_then(|&(found, of)| (of > 0).then(|| found as f64 / of as f64)),
            "matcher": {"recall": matcher.and_then(|p| p.recall()), "precision": matcher.and_then(|p| p.precision()), "f1": matcher.and_then(|p| p.f1())},
        }));
    }

    // Agreement on found / not found.
    let mut agree = Table::new(
        "Agreement on found / not found",
        &["Between", "Oracle findings", "Agreement", "Cohen's κ", "Matcher precision", "Matcher recall", "ρ of cells' recall", "ρ of cells' F1"],
    );
    let dash = || TableCell::from("–");
    if let Some(p) = &panel {
        for pair in &p.pairs {
            agree.push(vec![
                format!("`{}` × `{}`", pair.a, pair.b).into(),
                pair.cells.into(),
                fmt_num(Some(pair.agreement), 3),
                fmt_ratio(pair.kappa),
                dash(),
                dash(),
                dash(),
                dash(),
            ]);
        }
        for (judge, k) in &p.judge_vs_majority {
            agree.push(vec![format!("`{judge}` × the majority of the others").into(), p.cells.into(), dash(), fmt_ratio(*k), dash(), dash(), dash(), dash()]);
        }
    }
    for (name, a) in names.iter().zip(&agreements) {
        agree.push(vec![
            format!("matcher × `{name}`").into(),
            a.cells.into(),
            fmt_num((a.cells > 0).then_some(a.agreement), 3),
            fmt_ratio(a.kappa),
            fmt_ratio(a.precision),
            fmt_ratio(a.recall),
            fmt_ratio(a.tool_recall_rho),
            fmt_ratio(a.tool_f1_rho),
        ]);
    }
    if let Some(p) = &panel {
        agree.push(vec![
            "matcher × the majority".into(),
            p.cells.into(),
            fmt_num(Some(p.matcher_vs_majority_agreement), 3),
            fmt_ratio(p.matcher_vs_majority),
            dash(),
            dash(),
            dash(),
            dash(),
        ]);
    }

    // The cells ranked by F1 under each judge and the matcher, and by recall under the majority.
    let mut rank_columns: Vec<String> = vec!["Cell".into()];
    rank_columns.extend(names.iter().map(|n| format!("`{n}` (F1)")));
    rank_columns.extend(["Majority (recall)".to_string(), "Matcher (F1)".to_string()]);
    let mut ranks = Table::with_columns("Rank of each cell", rank_columns);
    let rank_by = |value: &dyn Fn(&str) -> Option<f64>| -> BTreeMap<String, usize> {
        let mut order: Vec<(&String, f64)> = cells.iter().map(|c| (c, value(c).unwrap_or(-1.0))).collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        order.into_iter().enumerate().map(|(i, (c, _))| (c.clone(), i + 1)).collect()
    };
    let judge_ranks: Vec<BTreeMap<String, usize>> = agreements.iter().map(|a| rank_by(&|c| scores(a, c).and_then(|(j, _)| j.f1()))).collect();
    let majority_rank = rank_by(&|c| majority.get(c).and_then(|&(found, of)| (of > 0).then(|| found as f64 / of as f64)));
    let matcher_rank = rank_by(&|c| matcher_of(c).and_then(|p| p.f1()));
    for cell in &cells {
        let mut row: Vec<TableCell> = vec![format!("`{cell}`").into()];
        row.extend(judge_ranks.iter().map(|r| TableCell::from(r.get(cell).copied().unwrap_or(0))));
        row.push(majority_rank.get(cell).copied().unwrap_or(0).into());
        row.push(matcher_rank.get(cell).copied().unwrap_or(0).into());
        ranks.push(row);
    }

    result.tables = vec![recall, precision, agree, ranks];
    for (name, n) in names.iter().zip(&unlabelled) {
        if *n > 0 {
            result.notes.push(format!(
                "`{name}` left {n} run(s) undecided (no recorded decision, or no well-formed answer): they are out of its figures and of the majority's."
            ));
        }
    }
    if votes.replayed.iter().any(|r| *r) {
        result.notes.push(
            "A replayed judge decided on its own reading of each review (its own list of the review's issues): its precision counts those, the matcher's counts the run's findings."
                .into(),
        );
    }
    if let Some(p) = &panel {
        result.notes.push(format!(
            "The majority is over the {} oracle findings every judge decided; {} were ties (as many yes as no), counted as not found.",
            p.cells, p.ties
        ));
    }
    result.notes.extend(votes.problems.iter().cloned());
    result.data = json!({
        "judges": names,
        "cells": cells_json,
        "agreement": names.iter().zip(&agreements).map(|(n, a)| json!({"judge": n, "matcher": a})).collect::<Vec<_>>(),
        "jury": panel,
    })
    .into();
    result
}

/// A model judge's label for an oracle finding of a run: found (with the first report it
/// called the same issue), not found (every report answered no, or there was none), or
/// undecided (a report it gave no well-formed answer about, and no yes).
fn pair_label(votes: &crate::analysis::matching::matcher::MatchVotes, judge: usize, description: &str, candidates: &[String]) -> Option<Option<String>> {
    let mut undecided = false;
    for c in candidates {
        match votes.pairs.get(&(description.to_string(), c.clone())).and_then(|v| v.get(judge).copied().flatten()) {
            Some(true) => return Some(Some(c.clone())),
            Some(false) => {}
            None => undecided = true,
        }
    }
    (!undecided).then_some(None)
}

/// Per cell: oracle findings the majority of the judges found, of those every judge decided.
fn majority_recall(raters: &[Rater]) -> BTreeMap<String, (usize, usize)> {
    let mut labels: BTreeMap<(String, String, String, u32), Vec<bool>> = BTreeMap::new();
    for r in raters {
        for rec in &r.file.records {
            for (n, g) in rec.golden.iter().enumerate() {
                labels.entry((rec.tool.clone(), rec.pr.clone(), g.comment.clone(), n as u32)).or_default().push(matches!(g.label, Some(Some(_))));
            }
        }
    }
    let mut out: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for ((cell, ..), found) in labels {
        if found.len() != raters.len() {
            continue;
        }
        let yes = found.iter().filter(|f| **f).count();
        let entry = out.entry(cell).or_default();
        entry.0 += usize::from(2 * yes > found.len());
        entry.1 += 1;
    }
    out
}
