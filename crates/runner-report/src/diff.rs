//! `runner diff A B`: two executions' review-eval verdicts (results.json), or two cells of
//! one, compared oracle finding by oracle finding, and seed 003's keep rule applied — keep a
//! change only if no finding went from `found` to `missed` or `partial` and noise did not rise.
//!
//! A cell's verdict on a finding is the most frequent over its repeats (ties to the worse);
//! noise is the cell's rejected extras over everything it reported. Cells are paired as named
//! (`--cell-a`/`--cell-b`, one name serving both sides when only one is given), else the only
//! cell of each side, else the cells with the same id on both sides.

use crate::analysis::corpus::review_eval::{CellEval, ReviewEvalData};
use crate::analysis::matching::matcher::Verdict;
use crate::analysis::spec::AnalysisKind;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error(transparent)]
    Results(#[from] super::model::ResultsError),
    #[error("failed to parse `{path}`: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("`{0}` has no review-eval analysis; add `[[analysis]] kind = \"review-eval\"` to the experiment and run it again")]
    NoReviewEval(PathBuf),
    #[error("`{path}` has no cell `{cell}`; its cells: {known}")]
    UnknownCell { path: PathBuf, cell: String, known: String },
    #[error("cannot tell which cells to compare ({reason}); name them with `--cell-a` and `--cell-b`")]
    Ambiguous { reason: String },
    #[error("`{path}` has no per-subject values of `{metric}`: add `[[analysis]] kind = \"compare\"` with `metrics = [\"{metric}\"]` (or a review-eval analysis, for oracle metrics) to the experiment and run it again")]
    NoMetric { path: PathBuf, metric: String },
    #[error("metric `{0}` has no better direction to gate on; gate on recall, recall-with-partials, precision, f1, noise or jaccard")]
    NoDirection(String),
    #[error("these results record no judge samples: `--judge-samples-pass` needs a compare analysis whose matching the judges decide (`evidence = \"judge\"`) with a judge asked several times (`samples = N`)")]
    NoJudgeSamples,
    #[error("`--judge-samples-pass {needed}`: the results record {of} judge sample{}; ask for 1 to {of}", if *of == 1 { "" } else { "s" })]
    JudgeSamplesPass { needed: usize, of: usize },
}

/// One side of a comparison.
#[derive(Debug, Clone)]
pub struct Side {
    pub path: PathBuf,
    pub data: ReviewEvalData,
}

/// Reads the first review-eval analysis of a results.json, through the typed results model
/// (its schema version checked).
pub fn load_side(path: &Path) -> Result<Side, DiffError> {
    let results = super::model::Results::read(path)?;
    let analysis = results
        .analyses
        .iter()
        .find(|a| a.kind == AnalysisKind::REVIEW_EVAL && !a.data.is_null())
        .ok_or_else(|| DiffError::NoReviewEval(path.to_path_buf()))?;
    let data: ReviewEvalData = analysis.data_as().map_err(|e| DiffError::Parse { path: path.to_path_buf(), message: format!("review-eval data: {e}") })?;
    Ok(Side { path: path.to_path_buf(), data })
}

/// How a finding's verdict moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Movement {
    /// `found` → `missed` or `partial`: breaks the keep rule.
    Regression,
    /// `partial` → `missed`: worse, but outside the keep rule.
    Worse,
    /// `missed` → `found`.
    Improvement,
    /// `missed` → `partial` or `partial` → `found`.
    Better,
}

impl Movement {
    fn of(before: Verdict, after: Verdict) -> Option<Self> {
        match (before, after) {
            (a, b) if a == b => None,
            (Verdict::Found, _) => Some(Self::Regression),
            (Verdict::Partial, Verdict::Missed) => Some(Self::Worse),
            (Verdict::Missed, Verdict::Found) => Some(Self::Improvement),
            _ => Some(Self::Better),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Regression => "regression",
            Self::Worse => "worse",
            Self::Improvement => "improvement",
            Self::Better => "better",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct VerdictChange {
    pub case: String,
    pub finding: String,
    pub before: Verdict,
    pub after: Verdict,
    /// `found 2/3` on each side.
    pub before_detail: String,
    pub after_detail: String,
    pub movement: Movement,
    /// For a regression where both sides weigh their decisions: the probability that the
    /// judges' majority sees it regress, p(found before) × (1 − p(found after)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_regressed: Option<f64>,
}

impl VerdictChange {
    /// Whether the keep rule counts this change against the change: a regression, and with
    /// matching uncertainty one more likely than not (one without a probability counts).
    fn counts(&self, matching: bool) -> bool {
        self.movement == Movement::Regression && !(matching && self.p_regressed.is_some_and(|p| p <= 0.5))
    }
}

/// Noise as counts, so comparisons are exact.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Noise {
    pub rejected: usize,
    pub reported: usize,
    pub noise: Option<f64>,
}

impl Noise {
    fn of(cell: &CellEval) -> Self {
        Noise { rejected: cell.scores.counts.extras_rejected, reported: cell.scores.counts.reported, noise: cell.scores.noise }
    }

    /// Whether `after` is noisier; nothing reported counts as no noise.
    fn rose(before: Noise, after: Noise) -> bool {
        match (before.reported, after.reported) {
            (_, 0) => false,
            (0, _) => after.rejected > 0,
            (rb, ra) => after.rejected * rb > before.rejected * ra,
        }
    }
}

/// One pair of cells compared.
#[derive(Debug, Clone, Serialize)]
pub struct CellDiff {
    pub cell_a: String,
    pub cell_b: String,
    /// Oracle findings present on both sides.
    pub compared: usize,
    pub changes: Vec<VerdictChange>,
    /// Findings scored on one side only (`case/finding`), not compared.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    pub noise_a: Noise,
    pub noise_b: Noise,
    pub recall_a: Option<f64>,
    pub recall_b: Option<f64>,
    pub recall_with_partials_a: Option<f64>,
    pub recall_with_partials_b: Option<f64>,
    pub noise_rose: bool,
    pub kept: bool,
    /// Whether the keep rule weighed matching uncertainty (`--matching-uncertainty`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub matching: bool,
}

impl CellDiff {
    pub fn regressions(&self) -> impl Iterator<Item = &VerdictChange> {
        self.changes.iter().filter(|c| c.movement == Movement::Regression)
    }

    /// The regressions the keep rule counts (with matching uncertainty, the likely ones).
    pub fn counted_regressions(&self) -> impl Iterator<Item = &VerdictChange> {
        self.changes.iter().filter(|c| c.counts(self.matching))
    }
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    pub a: String,
    pub b: String,
    pub method_a: String,
    pub method_b: String,
    pub rule: String,
    pub pairs: Vec<CellDiff>,
    pub kept: bool,
}

pub const KEEP_RULE: &str = "keep only if no oracle finding went from found to missed or partial, and noise did not rise";

/// The keep rule's words with matching uncertainty.
pub const KEEP_RULE_MATCHING: &str = "keep only if no oracle finding more likely than not went from found to missed or partial (the probability that the judges' majority sees it regress, p(found before) × (1 − p(found after)), each side's p weighed as its compare analysis weighs it, over 0.5; a regression without probabilities counts), and noise did not rise";

/// The cell named `id` of one side's cells.
fn find_cell<'a, T>(path: &Path, cells: &'a [T], id: &str, id_of: &impl Fn(&T) -> &str) -> Result<&'a T, DiffError> {
    cells.iter().find(|c| id_of(c) == id).ok_or_else(|| DiffError::UnknownCell {
        path: path.to_path_buf(),
        cell: id.to_string(),
        known: cells.iter().map(|c| format!("`{}`", id_of(c))).collect::<Vec<_>>().join(", "),
    })
}

/// The pairs of cells two sides compare: as named (`--cell-a`/`--cell-b`, one name serving
/// both sides when only one is given), else the only cell of each side, else the cells with
/// the same id on both sides. Shared by the keep rule and the statistical gate.
pub fn pick_pairs<'a, T>(
    (path_a, a): (&Path, &'a [T]),
    (path_b, b): (&Path, &'a [T]),
    id_of: impl Fn(&T) -> &str,
    cell_a: Option<&str>,
    cell_b: Option<&str>,
) -> Result<Vec<(&'a T, &'a T)>, DiffError> {
    Ok(match (cell_a.or(cell_b), cell_b.or(cell_a)) {
        (Some(x), Some(y)) => vec![(find_cell(path_a, a, x, &id_of)?, find_cell(path_b, b, y, &id_of)?)],
        _ => match (a, b) {
            ([x], [y]) if path_a != path_b => vec![(x, y)],
            _ if path_a == path_b => return Err(DiffError::Ambiguous { reason: "both sides are the same results file".into() }),
            _ => {
                let pairs: Vec<_> = a.iter().filter_map(|x| b.iter().find(|y| id_of(y) == id_of(x)).map(|y| (x, y))).collect();
                if pairs.is_empty() {
                    return Err(DiffError::Ambiguous { reason: "the two executions share no cell id".into() });
                }
                pairs
            }
        },
    })
}

/// Compares two cells.
pub fn compare_cells(a: &CellEval, b: &CellEval, matching: bool) -> CellDiff {
    let keys_a: BTreeSet<&String> = a.findings.keys().collect();
    let keys_b: BTreeSet<&String> = b.findings.keys().collect();
    let mut changes = Vec::new();
    for key in keys_a.intersection(&keys_b) {
        let (fa, fb) = (&a.findings[*key], &b.findings[*key]);
        if let Some(movement) = Movement::of(fa.verdict, fb.verdict) {
            changes.push(VerdictChange {
                case: fa.case.clone(),
                finding: fa.finding.clone(),
                before: fa.verdict,
                after: fb.verdict,
                before_detail: fa.describe(),
                after_detail: fb.describe(),
                movement,
                p_regressed: match (movement, fa.p_found, fb.p_found) {
                    (Movement::Regression, Some(before), Some(after)) => Some(before * (1.0 - after)),
                    _ => None,
                },
            });
        }
    }
    changes.sort_by(|x, y| x.movement.cmp(&y.movement).then(x.case.cmp(&y.case)).then(x.finding.cmp(&y.finding)));
    let (noise_a, noise_b) = (Noise::of(a), Noise::of(b));
    let noise_rose = Noise::rose(noise_a, noise_b);
    let kept = !noise_rose && !changes.iter().any(|c| c.counts(matching));
    CellDiff {
        cell_a: a.cell.clone(),
        cell_b: b.cell.clone(),
        compared: keys_a.intersection(&keys_b).count(),
        changes,
        only_a: keys_a.difference(&keys_b).map(|k| k.to_string()).collect(),
        only_b: keys_b.difference(&keys_a).map(|k| k.to_string()).collect(),
        noise_a,
        noise_b,
        recall_a: a.scores.recall_strict,
        recall_b: b.scores.recall_strict,
        recall_with_partials_a: a.scores.recall_with_partials,
        recall_with_partials_b: b.scores.recall_with_partials,
        noise_rose,
        kept,
        matching,
    }
}

/// Compares two sides (the same file twice for two cells of one execution).
/// With `matching`, a regression counts only when it is more likely than not under matching
/// uncertainty ([`KEEP_RULE_MATCHING`]).
pub fn compare(a: &Side, b: &Side, cell_a: Option<&str>, cell_b: Option<&str>, matching: bool) -> Result<DiffReport, DiffError> {
    let pairs = pick_pairs((&a.path, &a.data.cells), (&b.path, &b.data.cells), |c: &CellEval| c.cell.as_str(), cell_a, cell_b)?;
    let pairs: Vec<CellDiff> = pairs.into_iter().map(|(x, y)| compare_cells(x, y, matching)).collect();
    Ok(DiffReport {
        a: a.path.display().to_string(),
        b: b.path.display().to_string(),
        method_a: a.data.method.describe(),
        method_b: b.data.method.describe(),
        rule: if matching { KEEP_RULE_MATCHING } else { KEEP_RULE }.to_string(),
        kept: pairs.iter().all(|p| p.kept),
        pairs,
    })
}

fn ratio(v: Option<f64>) -> String {
    crate::analysis::format_number(v, Some(3))
}

/// The report as text for a terminal or a CI log.
pub fn render_text(report: &DiffReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {}", report.a);
    let _ = writeln!(out, "B: {}", report.b);
    if report.method_a == report.method_b {
        let _ = writeln!(out, "verdicts by {}", report.method_a);
    } else {
        let _ = writeln!(out, "warning: the two sides were scored differently\n  A: {}\n  B: {}", report.method_a, report.method_b);
    }
    for p in &report.pairs {
        let _ = writeln!(out);
        let title = if p.cell_a == p.cell_b { format!("cell `{}`", p.cell_a) } else { format!("cell `{}` → `{}`", p.cell_a, p.cell_b) };
        let _ = writeln!(out, "{title}: {} of {} oracle findings changed verdict", p.changes.len(), p.compared);
        for c in &p.changes {
            let sure = c.p_regressed.map(|p| format!("  (probability the judges see it regress {p:.2})")).unwrap_or_default();
            let _ = writeln!(out, "  {:<12} {} ({})  {} → {}{sure}", c.movement.as_str(), c.finding, c.case, c.before_detail, c.after_detail);
        }
        for (label, keys) in [("only in A", &p.only_a), ("only in B", &p.only_b)] {
            if !keys.is_empty() {
                let _ = writeln!(out, "  {label}, not compared: {}", keys.join(", "));
            }
        }
        let _ = writeln!(
            out,
            "  noise: {} ({}/{} rejected) → {} ({}/{} rejected){}",
            ratio(p.noise_a.noise),
            p.noise_a.rejected,
            p.noise_a.reported,
            ratio(p.noise_b.noise),
            p.noise_b.rejected,
            p.noise_b.reported,
            if p.noise_rose { "  ROSE" } else { "" }
        );
        let _ = writeln!(
            out,
            "  recall (strict): {} → {}; with partials: {} → {}",
            ratio(p.recall_a),
            ratio(p.recall_b),
            ratio(p.recall_with_partials_a),
            ratio(p.recall_with_partials_b)
        );
        let unsure = p.regressions().count() - p.counted_regressions().count();
        if unsure > 0 {
            let _ =
                writeln!(out, "  {unsure} regression{} not counted: no more likely than not under matching uncertainty", if unsure == 1 { "" } else { "s" });
        }
        let mut why: Vec<String> = p.counted_regressions().map(|c| format!("{} ({}) {} → {}", c.finding, c.case, c.before, c.after)).collect();
        if p.noise_rose {
            why.push("noise rose".into());
        }
        let _ = writeln!(out, "  {}", if p.kept { "kept".to_string() } else { format!("NOT KEPT: {}", why.join("; ")) });
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "keep rule: {}", report.rule);
    let _ = writeln!(out, "result: {}", if report.kept { "keep" } else { "reject (exit 5)" });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::corpus::review_eval::{FindingEval, Scores};
    use crate::analysis::matching::matcher::MatchCounts;
    use std::collections::BTreeMap;

    fn cell(id: &str, verdicts: &[(&str, Verdict)], rejected: usize, reported: usize) -> CellEval {
        let findings = verdicts
            .iter()
            .map(|(f, v)| {
                let (found, partial, missed) = match v {
                    Verdict::Found => (1, 0, 0),
                    Verdict::Partial => (0, 1, 0),
                    Verdict::Missed => (0, 0, 1),
                };
                (format!("c/{f}"), FindingEval { case: "c".into(), finding: f.to_string(), verdict: *v, found, partial, missed, p_found: None })
            })
            .collect();
        let counts = MatchCounts { extras_rejected: rejected, reported, ..MatchCounts::default() };
        let scores = Scores { counts, noise: (reported > 0).then(|| rejected as f64 / reported as f64), ..Scores::default() };
        CellEval { cell: id.into(), values: BTreeMap::new(), scores, runs: Vec::new(), findings }
    }

    #[test]
    fn a_regression_or_more_noise_rejects() {
        let a = cell("x", &[("F1", Verdict::Found), ("F2", Verdict::Missed), ("F3", Verdict::Partial)], 1, 4);
        let b = cell("x", &[("F1", Verdict::Partial), ("F2", Verdict::Found), ("F3", Verdict::Missed)], 1, 4);
        let d = compare_cells(&a, &b, false);
        let moves: Vec<(&str, Movement)> = d.changes.iter().map(|c| (c.finding.as_str(), c.movement)).collect();
        assert_eq!(moves, vec![("F1", Movement::Regression), ("F3", Movement::Worse), ("F2", Movement::Improvement)]);
        assert!(!d.kept && !d.noise_rose);

        let better = cell("x", &[("F1", Verdict::Found), ("F2", Verdict::Found), ("F3", Verdict::Partial)], 1, 4);
        assert!(compare_cells(&a, &better, false).kept);
        // 2/5 > 1/4: noise rose although nothing regressed.
        let noisier = cell("x", &[("F1", Verdict::Found), ("F2", Verdict::Found), ("F3", Verdict::Partial)], 2, 5);
        let d = compare_cells(&a, &noisier, false);
        assert!(d.noise_rose && !d.kept);
        // 2/8 = 1/4: equal noise did not rise.
        let same = cell("x", &[("F1", Verdict::Found), ("F2", Verdict::Missed), ("F3", Verdict::Partial)], 2, 8);
        assert!(compare_cells(&a, &same, false).kept);
    }

    /// With matching uncertainty a regression counts only when it is more likely than not: a
    /// sure find lost for sure (0.95 × 0.9) rejects; one that rests on unsure decisions on both
    /// sides (0.6 × 0.5) is listed with its probability and not counted.
    #[test]
    fn with_matching_uncertainty_only_a_likely_regression_rejects() {
        let with_p = |mut c: CellEval, p: &[f64]| {
            for (f, p) in c.findings.values_mut().zip(p) {
                f.p_found = Some(*p);
            }
            c
        };
        let a = with_p(cell("x", &[("F1", Verdict::Found), ("F2", Verdict::Found)], 0, 2), &[0.95, 0.6]);
        let unsure = with_p(cell("x", &[("F1", Verdict::Found), ("F2", Verdict::Missed)], 0, 2), &[0.95, 0.5]);
        let plain = compare_cells(&a, &unsure, false);
        assert!(!plain.kept, "without matching uncertainty every regression counts");
        let weighed = compare_cells(&a, &unsure, true);
        assert!(weighed.kept && weighed.changes[0].p_regressed.is_some_and(|p| (p - 0.3).abs() < 1e-12), "{weighed:?}");
        let sure = with_p(cell("x", &[("F1", Verdict::Missed), ("F2", Verdict::Found)], 0, 2), &[0.1, 0.6]);
        let d = compare_cells(&a, &sure, true);
        assert!(!d.kept && d.counted_regressions().count() == 1, "{d:?}");
        let side = |cells: Vec<CellEval>| Side {
            path: PathBuf::from("r.json"),
            data: ReviewEvalData {
                method: crate::analysis::matching::matcher::Method::Automatic { rule: "r".into() },
                cells,
                severities: BTreeMap::new(),
                recall_by_class: Vec::new(),
                recall_by_cutoff: Vec::new(),
            },
        };
        let report = compare(&side(vec![a.clone()]), &side(vec![unsure.clone()]), Some("x"), Some("x"), true).expect("compares");
        let text = render_text(&report);
        assert!(text.contains("(probability the judges see it regress 0.30)") && text.contains("1 regression not counted"), "{text}");
        assert!(report.kept && report.rule.contains("more likely than not"), "{text}");
    }

    #[test]
    fn sides_are_read_through_the_typed_results_model() {
        let scored = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("results/scored/results.json");
        let side = load_side(&scored).expect("the committed scored results have a review-eval analysis");
        assert!(!side.data.cells.is_empty());
        let cell = side.data.cells[0].cell.clone();
        let report = compare(&side, &side, Some(&cell), Some(&cell), false).expect("compares a cell with itself");
        assert!(report.kept && report.pairs[0].changes.is_empty());

        let dir = tempfile::tempdir().expect("tempdir");
        let old = dir.path().join("results.json");
        std::fs::write(&old, r#"{"schema_version": 1, "analyses": []}"#).expect("write");
        let err = load_side(&old).expect_err("schema 1 is refused");
        assert!(matches!(err, DiffError::Results(crate::model::ResultsError::Schema { found: 1, .. })), "{err}");
        assert!(err.to_string().contains("older runner"), "{err}");
    }

    #[test]
    fn noise_from_nothing_reported() {
        let quiet = Noise { rejected: 0, reported: 0, noise: None };
        let loud = Noise { rejected: 1, reported: 3, noise: Some(1.0 / 3.0) };
        assert!(Noise::rose(quiet, loud));
        assert!(!Noise::rose(loud, quiet));
    }
}
