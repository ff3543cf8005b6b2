//! `runner matching evaluate`: the matcher's decisions on judgement files and, where a file
//! carries a judge's labels, its agreement with that judge; with several labelled files, the
//! judges side by side. Figures are computed in `analysis::matching::judgements`; this is their report.

use crate::analysis::matching::judgements::{agreement, decide, jury, Agreement, Decision, JudgementFile, Jury, Vectors};
use crate::analysis::spec::OracleRule;
use serde::Serialize;
use std::fmt::Write;

/// One file's result.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub file: String,
    pub judge: String,
    pub records: usize,
    pub pull_requests: usize,
    pub cells: usize,
    pub labelled: bool,
    /// Golden comments the matcher found.
    pub found: usize,
    pub agreement: Option<Agreement>,
    pub decisions: Vec<Decision>,
}

/// The whole evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct MatchingReport {
    pub rule: String,
    pub files: Vec<FileReport>,
    pub jury: Option<Jury>,
}

/// Matches every file by `rule` and compares with the labels where there are any.
pub fn evaluate(files: &[JudgementFile], rule: &OracleRule, vectors: Option<&Vectors>) -> MatchingReport {
    let decisions: Vec<Vec<Decision>> = files.iter().map(|f| decide(f, rule, vectors)).collect();
    let labelled: Vec<usize> = (0..files.len()).filter(|&i| files[i].labelled()).collect();
    let jury = jury(&labelled.iter().map(|&i| &files[i]).collect::<Vec<_>>(), &labelled.iter().map(|&i| decisions[i].as_slice()).collect::<Vec<_>>());
    let files = files
        .iter()
        .zip(decisions)
        .map(|(f, d)| FileReport {
            file: f.name.clone(),
            judge: f.judge.clone(),
            records: f.records.len(),
            pull_requests: f.pull_requests(),
            cells: f.cells(),
            labelled: f.labelled(),
            found: d.iter().filter(|d| d.found).count(),
            agreement: f.labelled().then(|| agreement(f, &d)),
            decisions: d,
        })
        .collect();
    MatchingReport { rule: format!("change level (golden comments name no file or line): {}", rule.describe_change_level()), files, jury }
}

fn num(x: Option<f64>, digits: usize) -> String {
    x.map(|x| format!("{x:.digits$}")).unwrap_or_else(|| "–".into())
}

impl MatchingReport {
    /// The report as text: per file its figures and per-tool table, then the judges together.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "rule: {}\n", self.rule);
        for f in &self.files {
            let _ = writeln!(
                out,
                "{} (judge {}): {} records, {} pull requests, {} golden-comment cells; the matcher found {}",
                f.file, f.judge, f.records, f.pull_requests, f.cells, f.found
            );
            let Some(a) = &f.agreement else {
                let _ = writeln!(out, "  no labels: nothing to compare\n");
                continue;
            };
            let _ = writeln!(
                out,
                "  against the judge: agreement {:.1} %, Cohen's κ {}; matcher precision {}, recall {} (found by both {}, matcher only {}, judge only {}, neither {})",
                100.0 * a.agreement,
                num(a.kappa, 3),
                num(a.precision, 3),
                num(a.recall, 3),
                a.both,
                a.matcher_only,
                a.judge_only,
                a.neither
            );
            let _ = writeln!(
                out,
                "  per-tool rankings: Spearman ρ {} (recall), {} (F1), {} tools",
                num(a.tool_recall_rho, 3),
                num(a.tool_f1_rho, 3),
                a.tools.len()
            );
            let _ = writeln!(out, "\n  | tool | judge precision | judge recall | judge F1 | matcher precision | matcher recall | matcher F1 |");
            let _ = writeln!(out, "  |---|---:|---:|---:|---:|---:|---:|");
            for t in &a.tools {
                let _ = writeln!(
                    out,
                    "  | {} | {} | {} | {} | {} | {} | {} |",
                    t.tool,
                    num(t.judge.precision(), 3),
                    num(t.judge.recall(), 3),
                    num(t.judge.f1(), 3),
                    num(t.matcher.precision(), 3),
                    num(t.matcher.recall(), 3),
                    num(t.matcher.f1(), 3)
                );
            }
            out.push('\n');
        }
        if let Some(j) = &self.jury {
            let _ = writeln!(out, "judges side by side ({} cells every judge labelled):", j.cells);
            for p in &j.pairs {
                let _ = writeln!(out, "  {} × {}: agreement {:.1} %, κ {} ({} cells)", p.a, p.b, 100.0 * p.agreement, num(p.kappa, 3), p.cells);
            }
            for (judge, k) in &j.judge_vs_majority {
                let _ = writeln!(out, "  {judge} against the majority of the others: κ {}", num(*k, 3));
            }
            let _ = writeln!(
                out,
                "  the matcher (on {}'s candidates) against the majority: agreement {:.1} %, κ {}; ties (no majority, counted not found): {}",
                self.files.first().map(|f| f.judge.as_str()).unwrap_or(""),
                100.0 * j.matcher_vs_majority_agreement,
                num(j.matcher_vs_majority, 3),
                j.ties
            );
        }
        out
    }
}
