//! How sure a matching decision is: the probability that the judges' majority calls an
//! oracle finding found, given what the matcher sees of it ([`DecisionFeatures`]: the
//! similarity of the report the one-to-one pass gave it, whether there is one at its place,
//! that similarity's margin over its next most similar report, and that report's rank among
//! its reports). A logistic model of those, fitted on labelled judgements by iteratively
//! reweighted least squares with a small ridge penalty, cross-validated over the same folds
//! as the thresholds (out-of-fold Brier score and calibration curve), and written into the
//! calibration file as its `probability`. An oracle finding with no report at its place is
//! certainly not found; the model is fitted on the others.
//!
//! The features of a case's oracle findings come from [`assign`], the matcher's one-to-one
//! pass continued past the pairs it takes (found, then partial, then the located pairs it
//! leaves), so every oracle finding the matcher matched keeps its report and one it left gets
//! the best report still free at its place. Same files, same bytes.

use crate::analysis::matching::judgements::JudgementFile;
use crate::analysis::matching::matcher::{grade, judge_pairs, report_text, MatchVotes, ScoredRun, Verdict};
use crate::analysis::matching::rule::Evidence;
use crate::analysis::matching::rule::{logistic, CurveBin, DecisionFeatures, DecisionModel, SimilarityMeasure, CURVE_BINS, DECISION_TERMS};
use crate::analysis::matching::rule::{FoldBy, OracleRule};
use crate::finding::Finding;
use crate::ground_truth::oracle::OracleFinding;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One pair of an oracle finding and a report at its place, graded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LocatedPair {
    pub verdict: Verdict,
    /// What the matcher orders pairs of one verdict by (the similarity, plus the cosine where
    /// the rule uses embeddings).
    pub strength: f64,
    pub gap: u32,
    pub oracle: usize,
    pub report: usize,
    pub similarity: f64,
}

/// The features of each of `oracle` oracle findings from its located pairs: the pairs taken
/// one to one in the matcher's order (found before partial before the rest, then the
/// stronger, the nearer, oracle and report order), then each oracle finding's report, margin
/// and rank read from its own pairs.
pub(crate) fn assign(oracle: usize, reports: usize, pairs: Vec<LocatedPair>) -> Vec<DecisionFeatures> {
    assign_reports(oracle, reports, pairs).into_iter().map(|(f, _)| f).collect()
}

/// [`assign`], with the report each oracle finding's features were read from.
fn assign_reports(oracle: usize, reports: usize, mut pairs: Vec<LocatedPair>) -> Vec<(DecisionFeatures, Option<usize>)> {
    pairs.sort_by(|a, b| {
        b.verdict.cmp(&a.verdict).then(b.strength.total_cmp(&a.strength)).then(a.gap.cmp(&b.gap)).then(a.oracle.cmp(&b.oracle)).then(a.report.cmp(&b.report))
    });
    let mut taken: Vec<Option<usize>> = vec![None; oracle];
    let mut used = vec![false; reports];
    for (i, p) in pairs.iter().enumerate() {
        if taken[p.oracle].is_none() && !used[p.report] {
            taken[p.oracle] = Some(i);
            used[p.report] = true;
        }
    }
    let mut by_oracle: Vec<Vec<f64>> = vec![Vec::new(); oracle];
    for p in &pairs {
        by_oracle[p.oracle].push(p.similarity);
    }
    taken
        .iter()
        .enumerate()
        .map(|(oi, t)| match t {
            None => (DecisionFeatures::UNLOCATED, None),
            Some(i) => {
                let pair = pairs[*i];
                let s = pair.similarity;
                let others = &by_oracle[oi];
                let higher = others.iter().filter(|&&x| x > s).count();
                // The next most similar of its other reports (one report may share the value).
                let mut rest: Vec<f64> = others.clone();
                if let Some(at) = rest.iter().position(|&x| x == s) {
                    rest.remove(at);
                }
                let next = rest.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (DecisionFeatures { similarity: s, located: true, margin: if next.is_finite() { s - next } else { s }, rank: 1 + higher as u32 }, Some(pair.report))
            }
        })
        .collect()
}

/// The features of each oracle finding of a case, for one run's reports, under `rule` (its
/// evidence the similarity: the matcher's order is then the one [`assign`] continues).
pub(crate) fn case_features(reported: &[Finding], expected: &[&OracleFinding], rule: &OracleRule) -> Vec<DecisionFeatures> {
    case_assignment(reported, expected, rule).into_iter().map(|(f, _)| f).collect()
}

/// [`case_features`], with the report each oracle finding's features were read from (none
/// without a report at its place).
pub(crate) fn case_assignment(reported: &[Finding], expected: &[&OracleFinding], rule: &OracleRule) -> Vec<(DecisionFeatures, Option<usize>)> {
    let mut pairs = Vec::new();
    for (oi, o) in expected.iter().enumerate() {
        for (ri, r) in reported.iter().enumerate() {
            let (verdict, similarity, gap) = grade(r, o, rule);
            if gap <= rule.line_tolerance {
                pairs.push(LocatedPair { verdict, strength: similarity, gap, oracle: oi, report: ri, similarity });
            }
        }
    }
    assign_reports(expected.len(), reported.len(), pairs)
}

/// How a set of runs' matching decisions are weighed: the decision model, the judges' votes
/// where they decide (`evidence = "judge"`), or both.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Weighing<'a> {
    pub model: Option<DecisionModel>,
    pub votes: Option<&'a MatchVotes>,
}

impl<'a> Weighing<'a> {
    /// How an analysis's decisions are weighed, or why they are not (`Err`, a sentence for the
    /// report; `Ok(None)` when there is nothing to weigh them by: thresholds set by hand).
    pub(crate) fn of(spec: &crate::analysis::spec::AnalysisSpec, input: &crate::analysis::model::AnalysisInput<'a>) -> Result<Option<Self>, &'static str> {
        let model = spec.oracle_rule.calibrated.and_then(|c| c.decisions);
        let votes = input.match_votes().filter(|_| spec.oracle_rule.evidence == Evidence::Judge);
        if model.is_none() && votes.is_none() {
            return Ok(None);
        }
        if input.adjudication(spec).is_some() {
            return Err("Matching uncertainty is not weighed: a person's adjudication decides what it covers.");
        }
        if votes.is_none() && spec.oracle_rule.evidence != Evidence::Similarity {
            return Err("Matching uncertainty is not weighed: the rule's evidence is not the text's similarity alone, which the decision model describes.");
        }
        Ok(Some(Self { model, votes }))
    }

    /// How sure each of one run's decisions is, oracle finding by oracle finding (the order
    /// of `expected` and of the run's verdicts): the probability that the judges' majority
    /// calls it found, or `None` where it is taken as decided. A finding the judges were asked
    /// about has their vote share over every judge and sample — its own report's pair, or,
    /// missed, the best share among the reports the one-to-one pass left over —; one the text
    /// decided, the decision model's probability where it is located. With the number that
    /// came from the judges' votes.
    pub(crate) fn run(&self, run: &ScoredRun<'_>, expected: &[&OracleFinding], rule: &OracleRule) -> (Vec<Option<f64>>, usize) {
        let reported = run.view.findings;
        let features = self.model.map(|_| case_features(reported, expected, rule)).unwrap_or_default();
        let share = |o: usize, r: usize| {
            let votes = self.votes?;
            expected.get(o).zip(reported.get(r)).and_then(|(o, r)| votes.share(&o.description, &report_text(r)))
        };
        let mut judged = 0;
        let probabilities = run
            .case
            .verdicts
            .iter()
            .enumerate()
            .map(|(oi, v)| {
                let shared = match v.reported {
                    Some(ri) => share(oi, ri),
                    None => run.case.extras.iter().filter_map(|e| share(oi, e.reported)).max_by(f64::total_cmp),
                };
                if shared.is_some() {
                    judged += 1;
                    return shared;
                }
                let model = self.model.as_ref()?;
                features.get(oi).filter(|f| f.located).map(|f| model.probability(f))
            })
            .collect();
        (probabilities, judged)
    }
}

/// The pairs of one run's reports and a case's oracle findings the judges are asked about,
/// as (oracle description, report text), each once: with `judge-pairs = "borderline"` (and
/// not `every`), each oracle finding's one-to-one pair whose probability under the rule's
/// decision model is borderline, in oracle order; otherwise [`judge_pairs`]'s.
pub fn pairs_to_judge(reported: &[Finding], expected: &[&OracleFinding], rule: &OracleRule, every: bool) -> Vec<(String, String)> {
    let model = rule.calibrated.and_then(|c| c.decisions);
    let Some(model) = model.filter(|_| rule.judge_borderline && rule.evidence == Evidence::Judge && !every) else {
        return judge_pairs(reported, expected, rule, every);
    };
    let band = crate::analysis::matching::rule::BORDERLINE..=1.0 - crate::analysis::matching::rule::BORDERLINE;
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (oi, (features, report)) in case_assignment(reported, expected, rule).into_iter().enumerate() {
        let Some(ri) = report.filter(|_| features.located && band.contains(&model.probability(&features))) else { continue };
        let (Some(o), Some(r)) = (expected.get(oi), reported.get(ri)) else { continue };
        let pair = (o.description.clone(), report_text(r));
        if !pairs.contains(&pair) {
            pairs.push(pair);
        }
    }
    pairs
}

/// The features of every golden comment of a judgements record (change level: every pair is
/// at the place), under a lexical rule with the given thresholds.
fn record_features(record: &crate::analysis::matching::judgements::Record, measure: SimilarityMeasure, similarity: f64, partial: f64) -> Vec<DecisionFeatures> {
    let mut pairs = Vec::with_capacity(record.golden.len() * record.candidates.len());
    for (oi, g) in record.golden.iter().enumerate() {
        for (ri, c) in record.candidates.iter().enumerate() {
            let s = measure.similarity(c, &g.comment);
            let verdict = if s >= similarity {
                Verdict::Found
            } else if s >= partial {
                Verdict::Partial
            } else {
                Verdict::Missed
            };
            pairs.push(LocatedPair { verdict, strength: s, gap: 0, oracle: oi, report: ri, similarity: s });
        }
    }
    assign(record.golden.len(), record.candidates.len(), pairs)
}

/// One labelled cell: its features, its pull request's fold, and the judges' majority.
#[derive(Debug, Clone, Copy)]
struct Row {
    features: DecisionFeatures,
    fold: usize,
    found: bool,
}

/// A golden comment's identity across judges: pull request, tool, comment, occurrence.
type CellKey = (String, String, String, usize);

/// The judges' majority per cell every file labelled (a tie is not found).
fn majority(files: &[JudgementFile]) -> BTreeMap<CellKey, bool> {
    let mut votes: BTreeMap<CellKey, (usize, usize)> = BTreeMap::new();
    for f in files {
        for r in &f.records {
            let mut seen: HashMap<&str, usize> = HashMap::new();
            for g in &r.golden {
                let n = seen.entry(g.comment.as_str()).or_default();
                if let Some(label) = &g.label {
                    let v = votes.entry((r.pr.clone(), r.tool.clone(), g.comment.clone(), *n)).or_default();
                    v.0 += 1;
                    v.1 += usize::from(label.is_some());
                }
                *n += 1;
            }
        }
    }
    votes.into_iter().filter(|(_, (n, _))| *n == files.len()).map(|(k, (n, yes))| (k, 2 * yes > n)).collect()
}

/// Every file's cells with the judges' majority as their label, features read from that
/// file's own candidates (each judge read the reviews its own way).
fn rows(files: &[JudgementFile], measure: SimilarityMeasure, similarity: f64, folds: &BTreeMap<String, usize>) -> Vec<Row> {
    let labels = majority(files);
    let mut out = Vec::new();
    for f in files {
        for r in &f.records {
            let features = record_features(r, measure, similarity, similarity.min(crate::analysis::spec::OracleRule::default().partial_similarity));
            let mut seen: HashMap<&str, usize> = HashMap::new();
            for (g, features) in r.golden.iter().zip(features) {
                let n = seen.entry(g.comment.as_str()).or_default();
                if let Some(&found) = labels.get(&(r.pr.clone(), r.tool.clone(), g.comment.clone(), *n)) {
                    out.push(Row { features, fold: folds.get(&r.pr).copied().unwrap_or(0), found });
                }
                *n += 1;
            }
        }
    }
    out
}

/// The ridge penalty on every coefficient but the intercept.
const RIDGE: f64 = 0.01;
/// Newton steps at most; the fit stops earlier once a step changes no coefficient by 1e-12.
const MAX_STEPS: usize = 100;

/// Solves `a x = b` by Gauss–Jordan elimination with partial pivoting; `None` when singular.
fn solve(mut a: [[f64; DECISION_TERMS]; DECISION_TERMS], mut b: [f64; DECISION_TERMS]) -> Option<[f64; DECISION_TERMS]> {
    for c in 0..DECISION_TERMS {
        let pivot = (c..DECISION_TERMS).max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs()))?;
        if a[pivot][c].abs() < 1e-300 {
            return None;
        }
        a.swap(c, pivot);
        b.swap(c, pivot);
        let (row, value) = (a[c], b[c]);
        for (other, target) in a.iter_mut().zip(b.iter_mut()).enumerate().filter(|(r, _)| *r != c).map(|(_, t)| t) {
            let f = other[c] / row[c];
            other.iter_mut().zip(row).skip(c).for_each(|(x, p)| *x -= f * p);
            *target -= f * value;
        }
    }
    let x: [f64; DECISION_TERMS] = std::array::from_fn(|i| b[i] / a[i][i]);
    Some(x)
}

/// A logistic model's coefficients fitted by penalized Newton steps (IRLS) on located rows.
pub(crate) fn fit(data: &[([f64; DECISION_TERMS], bool)]) -> [f64; DECISION_TERMS] {
    let mut w = [0.0; DECISION_TERMS];
    for _ in 0..MAX_STEPS {
        let mut g = [0.0; DECISION_TERMS];
        let mut h = [[0.0; DECISION_TERMS]; DECISION_TERMS];
        for (x, y) in data {
            let z: f64 = w.iter().zip(x).map(|(a, b)| a * b).sum();
            let p = logistic(z);
            let r = p - f64::from(u8::from(*y));
            let v = p * (1.0 - p);
            for ((gi, hi), xi) in g.iter_mut().zip(h.iter_mut()).zip(x) {
                *gi += r * xi;
                hi.iter_mut().zip(x).for_each(|(hik, xk)| *hik += v * xi * xk);
            }
        }
        // The ridge: every term but the intercept.
        for (i, (gi, hi)) in g.iter_mut().zip(h.iter_mut()).enumerate().skip(1) {
            *gi += RIDGE * w[i];
            hi[i] += RIDGE;
        }
        let Some(step) = solve(h, g) else { break };
        let mut largest: f64 = 0.0;
        for (wi, si) in w.iter_mut().zip(step) {
            *wi -= si;
            largest = largest.max(si.abs());
        }
        if largest < 1e-12 {
            break;
        }
    }
    w
}

/// One bin of the curve as the calibration file writes it, with its range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    pub from: f64,
    pub to: f64,
    pub cells: usize,
    pub predicted: Option<f64>,
    pub observed: Option<f64>,
}

/// The model's out-of-fold accuracy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbabilityCv {
    pub by: FoldBy,
    /// Brier score of the out-of-fold probabilities on the located cells.
    pub brier: f64,
    /// Brier score of the rule's own out-of-fold found / not found (1 and 0) on those cells.
    pub brier_decisions: f64,
    /// Brier score of the located cells' base rate (no model at all).
    pub brier_base_rate: f64,
    /// Predicted against observed, in tenths of predicted probability.
    pub curve: Vec<Bin>,
}

/// The decision model as a calibration file holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbabilityFit {
    /// The model's terms, in the order of `coefficients`.
    pub terms: Vec<String>,
    pub coefficients: Vec<f64>,
    /// What the model predicts.
    pub label: String,
    /// Cells with a majority of the judges (every file labelled them), over every file.
    pub cells: usize,
    /// Of those, cells with a report at the place (the model is fitted on these).
    pub located: usize,
    /// Cells without a report at the place, and how many of them the majority found
    /// (certainly not found, by the model).
    pub unlocated: usize,
    pub unlocated_found: usize,
    pub cross_validation: ProbabilityCv,
    pub method: String,
}

/// The model's terms by name.
pub const TERMS: [&str; DECISION_TERMS] = ["intercept", "similarity", "margin", "ln_rank"];

fn round(x: f64, digits: i32) -> f64 {
    let scale = libm::pow(10.0, f64::from(digits));
    (x * scale).round() / scale
}

/// The curve of predictions against outcomes, in [`CURVE_BINS`] bins of predicted probability.
pub(crate) fn curve(points: &[(f64, bool)]) -> Vec<Bin> {
    let mut sums = vec![(0usize, 0.0f64, 0usize); CURVE_BINS];
    for &(p, y) in points {
        let b = ((p * CURVE_BINS as f64) as usize).min(CURVE_BINS - 1);
        sums[b].0 += 1;
        sums[b].1 += p;
        sums[b].2 += usize::from(y);
    }
    sums.iter()
        .enumerate()
        .map(|(b, &(n, p, y))| Bin {
            from: b as f64 / CURVE_BINS as f64,
            to: (b + 1) as f64 / CURVE_BINS as f64,
            cells: n,
            predicted: (n > 0).then(|| round(p / n as f64, 3)),
            observed: (n > 0).then(|| round(y as f64 / n as f64, 3)),
        })
        .collect()
}

fn brier(points: impl Iterator<Item = (f64, bool)>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for (p, y) in points {
        let d = p - f64::from(u8::from(y));
        sum += d * d;
        n += 1;
    }
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// Fits the decision model on labelled files, cross-validated over `folds` (each pull
/// request's fold; `fold_thresholds` the similarity threshold chosen without each fold, for
/// the rule's own out-of-fold decisions). `None` when no cell has a majority.
pub(crate) fn fit_model(
    files: &[JudgementFile],
    measure: SimilarityMeasure,
    similarity: f64,
    folds: &BTreeMap<String, usize>,
    fold_thresholds: &[f64],
    by: FoldBy,
) -> Option<ProbabilityFit> {
    let rows = rows(files, measure, similarity, folds);
    if rows.is_empty() {
        return None;
    }
    let located: Vec<&Row> = rows.iter().filter(|r| r.features.located).collect();
    let data = |keep: &dyn Fn(&Row) -> bool| -> Vec<([f64; DECISION_TERMS], bool)> {
        located.iter().filter(|r| keep(r)).map(|r| (r.features.vector(), r.found)).collect()
    };
    let mut out_of_fold: Vec<(f64, bool, bool)> = Vec::with_capacity(located.len());
    for (f, threshold) in fold_thresholds.iter().enumerate() {
        let coefficients = fit(&data(&|r| r.fold != f));
        let model = model_of(coefficients);
        for r in located.iter().filter(|r| r.fold == f) {
            out_of_fold.push((model.probability(&r.features), r.features.similarity >= *threshold, r.found));
        }
    }
    let coefficients = fit(&data(&|_| true)).map(|c| round(c, 6));
    let base = located.iter().filter(|r| r.found).count() as f64 / located.len().max(1) as f64;
    let points: Vec<(f64, bool)> = out_of_fold.iter().map(|&(p, _, y)| (p, y)).collect();
    Some(ProbabilityFit {
        terms: TERMS.iter().map(|t| t.to_string()).collect(),
        coefficients: coefficients.to_vec(),
        label: "the judges' majority calls the golden comment found (a tie is not found)".into(),
        cells: rows.len(),
        located: located.len(),
        unlocated: rows.len() - located.len(),
        unlocated_found: rows.iter().filter(|r| !r.features.located && r.found).count(),
        cross_validation: ProbabilityCv {
            by,
            brier: round(brier(points.iter().copied()), 4),
            brier_decisions: round(brier(out_of_fold.iter().map(|&(_, d, y)| (f64::from(u8::from(d)), y))), 4),
            brier_base_rate: round(brier(located.iter().map(|r| (base, r.found))), 4),
            curve: curve(&points),
        },
        method: format!(
            "logistic regression of the judges' majority on the similarity of the report the one-to-one pass gives a golden comment, its margin over the comment's next most similar report and ln of its rank among the comment's reports, fitted by Newton steps with a ridge penalty of {RIDGE} on every term but the intercept, on the cells with a report (a golden comment without one is not found); each file's cells with its own candidates"
        ),
    })
}

/// A model with these coefficients and no accuracy figures (for out-of-fold predictions).
fn model_of(coefficients: [f64; DECISION_TERMS]) -> DecisionModel {
    DecisionModel { coefficients, cells: 0, brier: 0.0, brier_decisions: 0.0, curve: [CurveBin::default(); CURVE_BINS] }
}

impl ProbabilityFit {
    /// The model an experiment uses: its coefficients and accuracy; `None` when the file's
    /// terms are not the ones this runner computes.
    pub fn model(&self) -> Option<DecisionModel> {
        if self.terms.iter().map(String::as_str).ne(TERMS) || self.coefficients.len() != DECISION_TERMS {
            return None;
        }
        let mut coefficients = [0.0; DECISION_TERMS];
        coefficients.copy_from_slice(&self.coefficients);
        let mut curve = [CurveBin::default(); CURVE_BINS];
        for (slot, bin) in curve.iter_mut().zip(&self.cross_validation.curve) {
            *slot = CurveBin { cells: bin.cells as u32, predicted: bin.predicted, observed: bin.observed };
        }
        Some(DecisionModel {
            coefficients,
            cells: self.located as u32,
            brier: self.cross_validation.brier,
            brier_decisions: self.cross_validation.brier_decisions,
            curve,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_a_known_logistic_model() {
        // Seeded draws from p = logistic(-3 + 8 s - 1 ln rank), margin uninformative.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut data = Vec::new();
        for _ in 0..20_000 {
            let s = next() * 0.8;
            let rank = 1 + (next() * 3.0) as u32;
            let margin = next() * 0.2;
            let f = DecisionFeatures { similarity: s, located: true, margin, rank };
            let p = logistic(-3.0 + 8.0 * s - libm::log(f64::from(rank)));
            data.push((f.vector(), next() < p));
        }
        let w = fit(&data);
        for (got, want) in w.iter().zip([-3.0, 8.0, 0.0, -1.0]) {
            assert!((got - want).abs() < 0.35, "{w:?}");
        }
        let points: Vec<(f64, bool)> = data.iter().map(|(x, y)| (logistic(w.iter().zip(x).map(|(a, b)| a * b).sum()), *y)).collect();
        let c = curve(&points);
        assert_eq!(c.iter().map(|b| b.cells).sum::<usize>(), data.len());
        for b in c.iter().filter(|b| b.cells > 500) {
            let (p, o) = (b.predicted.unwrap_or(0.0), b.observed.unwrap_or(1.0));
            assert!((p - o).abs() < 0.05, "bin {b:?}");
        }
    }

    #[test]
    fn assignment_keeps_the_matchers_pairs_and_reads_margin_and_rank() {
        // Oracle 0's best report (0) is taken by oracle 1 at a higher similarity.
        let pair = |oracle, report, s: f64| LocatedPair {
            verdict: if s >= 0.22 { Verdict::Found } else { Verdict::Missed },
            strength: s,
            gap: 0,
            oracle,
            report,
            similarity: s,
        };
        let f = assign(3, 2, vec![pair(0, 0, 0.5), pair(0, 1, 0.1), pair(1, 0, 0.6), pair(1, 1, 0.05)]);
        assert_eq!(f[1], DecisionFeatures { similarity: 0.6, located: true, margin: 0.6 - 0.05, rank: 1 });
        assert_eq!(f[0].rank, 2, "its most similar report went to oracle 1");
        assert!((f[0].similarity - 0.1).abs() < 1e-12 && (f[0].margin - (0.1 - 0.5)).abs() < 1e-12);
        assert_eq!(f[2], DecisionFeatures::UNLOCATED);
    }
}
