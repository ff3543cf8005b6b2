//! Comparisons under matching uncertainty: each oracle finding's found / not found is a
//! probability (the calibration's decision model, `matching::probability`; where the judges
//! decide, their vote share over every judge and sample), not a certainty.
//!
//! The estimator: every decision is replaced by its probability, so a subject's value is the
//! value the judges' majority is expected to give it (the metrics compared here are linear in
//! each decision once the subject's reports and oracle findings are fixed: moving a find adds
//! to the numerator and leaves the denominator), and those expected values are compared
//! exactly as the matcher's are (the paired bootstrap interval over subjects, the sign-flip
//! test, Holm over the table). Where the probabilities are calibrated, the expected values
//! are unbiased for the judges' values, and the spread between subjects already holds the
//! decisions' noise, so the interval covers the judges' difference at its level; the
//! matcher's own decisions can err more on one side than the other (a reviewer that writes
//! more comments is over-matched more), which biases the subject-only interval. A simulation
//! (the tests) measures both; docs/matching.md gives the reasoning.
//!
//! Beside it, how fragile the shown verdict is: the borderline decisions (probability between
//! [`BORDERLINE`] and 1 − it) of the compared cells' paired subjects, settled one by one
//! against the verdict (to 0 or 1, whichever moves the difference the wrong way for it, the
//! one that moves it most first), and the fewest of them after which the verdict under
//! matching uncertainty is no longer the shown one.

use super::{Conclusion, MetricValues};
use crate::analysis::matching::matcher::{MatchCounts, ScoredRun, Verdict};
use crate::analysis::matching::probability::Weighing;
use crate::analysis::matching::rule::OracleRule;
use crate::analysis::spec::CompareMetric;
use crate::ground_truth::oracle::Oracle;
use crate::stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub(crate) use crate::analysis::matching::rule::BORDERLINE;

/// One run's decisions with a report at their place: the matcher's verdict and the
/// probability that the judges' majority calls the oracle finding found.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunDecisions {
    pub counts: MatchCounts,
    pub decisions: Vec<(Verdict, f64)>,
    /// Of them, those weighed by the judges' vote share rather than the decision model.
    pub judged: usize,
}

/// Each run's decisions, by (cell, repeat, subject): those [`Weighing::run`] weighs, with the
/// matcher's verdict.
pub(crate) fn run_decisions(scored: &[ScoredRun<'_>], oracle: &Oracle, rule: &OracleRule, weighing: &Weighing<'_>) -> BTreeMap<(String, u32, String), RunDecisions> {
    let mut out = BTreeMap::new();
    for run in scored {
        let expected = oracle.expected_for(run.view.subject);
        let (probabilities, judged) = weighing.run(run, &expected, rule);
        let decisions = run.case.verdicts.iter().zip(probabilities).filter_map(|(v, p)| p.map(|p| (v.verdict, p))).collect();
        out.insert((run.view.cell.id.clone(), run.view.repeat, run.view.subject.to_string()), RunDecisions { counts: run.case.counts(), decisions, judged });
    }
    out
}

/// Match counts with each decision weighted by its probability.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Expected {
    oracle: f64,
    found: f64,
    partial: f64,
    reported: f64,
    extras_real: f64,
    extras_rejected: f64,
}

impl Expected {
    fn add_counts(&mut self, c: &MatchCounts) {
        self.oracle += c.oracle as f64;
        self.found += c.found as f64;
        self.partial += c.partial as f64;
        self.reported += c.reported as f64;
        self.extras_real += c.extras_real as f64;
        self.extras_rejected += c.extras_rejected as f64;
    }

    /// Moves `amount` of one decision of verdict `v` to found: from the partial it stays
    /// (a found or partial report keeps its report), or from the extras (a missed oracle
    /// finding takes the report the one-to-one pass left it).
    fn shift(&mut self, v: Verdict, amount: f64) {
        self.found += amount;
        match v {
            Verdict::Found | Verdict::Partial => self.partial -= amount,
            Verdict::Missed => self.extras_rejected -= amount,
        }
    }

    /// Replaces the matcher's call on one decision of verdict `v` by found with probability `p`.
    fn settle(&mut self, v: Verdict, p: f64) {
        self.shift(v, if v == Verdict::Found { p - 1.0 } else { p });
    }

    /// The metric as [`super::metric_from_counts`] computes it from counts.
    pub(crate) fn metric(&self, metric: CompareMetric) -> Option<f64> {
        let ratio = |n: f64, d: f64| (d > 0.0).then(|| n / d);
        let tp = self.found + self.extras_real;
        let fn_ = self.oracle - self.found;
        let fp = (self.reported - tp).max(0.0);
        match metric {
            CompareMetric::Recall => ratio(tp, tp + fn_),
            CompareMetric::RecallWithPartials => ratio(self.found + self.partial, self.oracle),
            CompareMetric::Precision => ratio(tp, tp + fp),
            CompareMetric::F1 => ratio(2.0 * tp, 2.0 * tp + fp + fn_),
            CompareMetric::Noise => ratio(self.extras_rejected, self.reported),
            _ => None,
        }
    }
}

/// The metrics this applies to: those computed from oracle match counts.
pub(crate) fn applies(metric: CompareMetric) -> bool {
    matches!(metric, CompareMetric::Recall | CompareMetric::RecallWithPartials | CompareMetric::Precision | CompareMetric::F1 | CompareMetric::Noise)
}

/// One borderline decision of a subject: how much settling it found (1) or not (0) moves the
/// subject's value, pooled over the subject's runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lever {
    /// Change of the subject's value when the decision is settled found, and not found.
    pub to_found: f64,
    pub to_missed: f64,
}

/// A cell's subjects under matching uncertainty: each subject's expected value, and its
/// borderline decisions' levers.
#[derive(Debug, Clone, Default)]
pub(crate) struct CellUncertain {
    pub values: MetricValues,
    pub levers: BTreeMap<String, Vec<Lever>>,
    /// Each subject's decisions with a report at the place.
    pub decided: BTreeMap<String, usize>,
}

/// A cell's expected values of `metric`, subject by subject (repeats pooled), from its runs'
/// decisions: `runs` by subject, each run's key.
pub(crate) fn cell_uncertain(
    metric: CompareMetric,
    runs: &BTreeMap<&str, Vec<(String, u32, String)>>,
    decisions: &BTreeMap<(String, u32, String), RunDecisions>,
) -> CellUncertain {
    let mut out = CellUncertain::default();
    for (subject, keys) in runs {
        let mut expected = Expected::default();
        let mut all: Vec<(Verdict, f64)> = Vec::new();
        let mut any = false;
        for key in keys {
            if let Some(d) = decisions.get(key) {
                expected.add_counts(&d.counts);
                all.extend(d.decisions.iter().copied());
                any = true;
            }
        }
        if !any {
            continue;
        }
        for &(v, p) in &all {
            expected.settle(v, p);
        }
        let Some(value) = expected.metric(metric) else { continue };
        out.values.subjects.insert(subject.to_string(), value);
        out.decided.insert(subject.to_string(), all.len());
        let mut levers = Vec::new();
        for &(v, p) in all.iter().filter(|(_, p)| (BORDERLINE..=1.0 - BORDERLINE).contains(p)) {
            let moved = |to: f64| {
                let mut e = expected;
                e.shift(v, to - p);
                e.metric(metric).map(|x| x - value).unwrap_or(0.0)
            };
            levers.push(Lever { to_found: moved(1.0), to_missed: moved(0.0) });
        }
        out.levers.insert(subject.to_string(), levers);
    }
    out
}

/// The RQS v2 metrics the jury's rubric votes decide.
pub(crate) fn jury_applies(metric: CompareMetric) -> bool {
    matches!(metric, CompareMetric::RqsHeadline | CompareMetric::JuryPrecision | CompareMetric::Actionability)
}

/// One run's rubric votes under judging uncertainty: each finding's share of yes over every
/// judge and sample, per rubric (findings nobody answered left out), and the run's
/// severity-weighted recall parts (found, expected), which the rubrics do not decide.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunJudged {
    pub validity: Vec<f64>,
    pub actionable: Vec<f64>,
    pub recall: Option<(f64, f64)>,
}

/// A subject's pooled rubric shares: jury precision and actionability as expected rates (the
/// mean share), and the headline as their harmonic mean with severity-weighted recall.
#[derive(Debug, Clone, Copy, Default)]
struct JuryExpected {
    /// Per rubric (validity, actionability): the shares' sum and count.
    sums: [(f64, usize); 2],
    recall: Option<(f64, f64)>,
}

impl JuryExpected {
    fn metric(&self, metric: CompareMetric) -> Option<f64> {
        let rate = |(sum, n): (f64, usize)| (n > 0).then(|| sum / n as f64);
        let (precision, actionability) = (rate(self.sums[0]), rate(self.sums[1]));
        match metric {
            CompareMetric::JuryPrecision => precision,
            CompareMetric::Actionability => actionability,
            CompareMetric::RqsHeadline => {
                let recall = self.recall.and_then(|(found, total)| (total > 0.0).then(|| found / total));
                crate::analysis::rqs::metric::harmonic_mean(&[recall, precision, actionability])
            }
            _ => None,
        }
    }

    /// The rubrics `metric` reads: validity 0, actionability 1.
    fn rubrics(metric: CompareMetric) -> &'static [usize] {
        match metric {
            CompareMetric::JuryPrecision => &[0],
            CompareMetric::Actionability => &[1],
            _ => &[0, 1],
        }
    }
}

/// A cell's subjects under judging uncertainty for an RQS v2 metric the jury decides: each
/// subject's expected value with every finding's rubric verdict weighed by its share of yes,
/// and its borderline shares' levers (the value with one settled yes, or no).
pub(crate) fn jury_cell_uncertain(
    metric: CompareMetric,
    runs: &BTreeMap<&str, Vec<(String, u32, String)>>,
    judged: &BTreeMap<(String, u32, String), RunJudged>,
) -> CellUncertain {
    let mut out = CellUncertain::default();
    for (subject, keys) in runs {
        let mut pooled = JuryExpected::default();
        let mut shares: Vec<(usize, f64)> = Vec::new();
        let mut any = false;
        for key in keys {
            let Some(run) = judged.get(key) else { continue };
            any = true;
            for (rubric, list) in [(0, &run.validity), (1, &run.actionable)] {
                pooled.sums[rubric].0 += list.iter().sum::<f64>();
                pooled.sums[rubric].1 += list.len();
                if JuryExpected::rubrics(metric).contains(&rubric) {
                    shares.extend(list.iter().map(|p| (rubric, *p)));
                }
            }
            if let Some((found, total)) = run.recall {
                let (f, t) = pooled.recall.get_or_insert((0.0, 0.0));
                *f += found;
                *t += total;
            }
        }
        let Some(value) = any.then(|| pooled.metric(metric)).flatten() else { continue };
        out.values.subjects.insert(subject.to_string(), value);
        out.decided.insert(subject.to_string(), shares.len());
        let mut levers = Vec::new();
        for (rubric, p) in shares.into_iter().filter(|(_, p)| (BORDERLINE..=1.0 - BORDERLINE).contains(p)) {
            let moved = |to: f64| {
                let mut e = pooled;
                e.sums[rubric].0 += to - p;
                e.metric(metric).map(|x| x - value).unwrap_or(0.0)
            };
            levers.push(Lever { to_found: moved(1.0), to_missed: moved(0.0) });
        }
        out.levers.insert(subject.to_string(), levers);
    }
    out
}

/// What the comparison says under matching uncertainty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnderMatching {
    /// Mean per-subject difference B − A of the expected values.
    pub difference: Option<f64>,
    pub interval: Option<stats::Interval>,
    pub p: Option<f64>,
    /// Holm-corrected over the table's comparisons under matching uncertainty.
    pub p_holm: Option<f64>,
    pub conclusion: Conclusion,
    /// Whether it calls what the shown verdict calls (the same direction, or no call).
    pub holds: bool,
    /// Decisions with a report at the place, in the paired subjects of both cells (`None`
    /// where only the cells' values are known, as in `runner diff --metric`).
    pub decisions: Option<usize>,
    /// Of those, the borderline ones.
    pub borderline: Option<usize>,
    /// The fewest borderline decisions, settled against the shown verdict (those that move
    /// the difference most first), after which the verdict under matching uncertainty is no
    /// longer the shown one; `None` when settling all of them does not change it.
    pub overturned_by: Option<usize>,
}

impl UnderMatching {
    /// The comparison of the cells' weighed values (`weighed`, concluded over its table)
    /// beside the shown one: whether it holds; the decisions behind it unknown.
    pub fn of(weighed: &super::Comparison, shown: &super::Comparison) -> Self {
        Self {
            difference: weighed.difference,
            interval: weighed.interval,
            p: weighed.test.map(|t| t.p_value),
            p_holm: weighed.p_holm,
            conclusion: weighed.conclusion,
            holds: same_call(weighed.conclusion, shown.conclusion, weighed.difference.unwrap_or(0.0), shown.difference.unwrap_or(0.0)),
            decisions: None,
            borderline: None,
            overturned_by: None,
        }
    }
}

/// A verdict's call: a direction, or none.
fn call(c: Conclusion) -> i8 {
    match c {
        Conclusion::Better | Conclusion::Higher => 1,
        Conclusion::Worse | Conclusion::Lower => -1,
        _ => 0,
    }
}

/// Whether two conclusions call the same: a direction (better/higher and worse/lower read by
/// the difference's sign) or no call.
pub(crate) fn same_call(a: Conclusion, b: Conclusion, difference_a: f64, difference_b: f64) -> bool {
    let direction = |c: Conclusion, d: f64| if call(c) == 0 { 0.0 } else { d.signum() };
    direction(a, difference_a) == direction(b, difference_b)
}

/// One comparison's paired subjects and borderline levers, for [`overturned_by`].
pub(crate) struct Paired<'a> {
    pub a: &'a CellUncertain,
    pub b: &'a CellUncertain,
}

/// The fewest borderline decisions whose settling against `shown` makes the comparison under
/// matching uncertainty call otherwise; `verdict` draws that comparison's conclusion and
/// difference from the two cells' values.
pub(crate) fn overturned_by(
    paired: &Paired<'_>,
    shown: (Conclusion, f64),
    verdict: &dyn Fn(&MetricValues, &MetricValues) -> (Conclusion, f64),
) -> Option<usize> {
    let subjects: Vec<&String> = paired.a.values.subjects.keys().filter(|s| paired.b.values.subjects.contains_key(*s)).collect();
    if subjects.is_empty() {
        return None;
    }
    // Each borderline decision's move in `direction` (+1 raises B − A, −1 lowers it), if it
    // has one: (how far it moves B − A, which side, which subject, the change of its value).
    let moves = |direction: f64| -> Vec<(f64, bool, usize, f64)> {
        let mut out = Vec::new();
        for (si, subject) in subjects.iter().enumerate() {
            for (side, cell) in [(false, paired.a), (true, paired.b)] {
                let sign = if side { direction } else { -direction };
                for lever in cell.levers.get(*subject).into_iter().flatten() {
                    let change = if lever.to_found * sign >= lever.to_missed * sign { lever.to_found } else { lever.to_missed };
                    if change * sign > 0.0 {
                        out.push((change * sign, side, si, change));
                    }
                }
            }
        }
        out.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.2.cmp(&y.2)).then(x.1.cmp(&y.1)));
        out
    };
    let after = |chosen: &[(f64, bool, usize, f64)]| -> (Conclusion, f64) {
        let (mut a, mut b) = (paired.a.values.clone(), paired.b.values.clone());
        for &(_, side, si, change) in chosen {
            let values = if side { &mut b } else { &mut a };
            if let Some(v) = values.subjects.get_mut(subjects[si].as_str()) {
                *v += change;
            }
        }
        verdict(&a, &b)
    };
    let differs = |(c, d): (Conclusion, f64)| !same_call(c, shown.0, d, shown.1);
    let directions: Vec<f64> = match call(shown.0) {
        0 => vec![1.0, -1.0],
        _ => vec![-shown.1.signum()],
    };
    let mut best: Option<usize> = None;
    for direction in directions {
        let moves = moves(direction);
        if moves.is_empty() || !differs(after(&moves)) {
            continue;
        }
        // The fewest: the shortest prefix that overturns it, by bisection.
        let (mut low, mut high) = (0usize, moves.len());
        while high - low > 1 {
            let mid = (low + high) / 2;
            if differs(after(&moves[..mid])) {
                high = mid;
            } else {
                low = mid;
            }
        }
        best = Some(best.map_or(high, |b: usize| b.min(high)));
    }
    best
}
