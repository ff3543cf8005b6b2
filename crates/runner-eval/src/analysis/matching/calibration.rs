//! Calibrating the matching rule on labelled judgements: the thresholds that agree best with
//! the judges, chosen by grid search, with the agreement they reach measured by k-fold
//! cross-validation over pull requests (a pull request's records are all in one fold), and
//! written as a calibration file an experiment's `matching-calibration` names.
//!
//! The objective is the mean over the label files (judges) of Cohen's κ on found / not found
//! per golden comment. The search replays exactly what [`crate::analysis::matching::matcher::match_case_with`]
//! does for found pairs — one to one, pairs taken by descending strength (similarity, plus
//! the cosine when the rule uses embeddings), then oracle and report order — on pair lists
//! sorted once, so one pass over the grid scores every fold (a test checks it against the
//! matcher itself). Same files, same options: the same calibration file, byte for byte.

use crate::analysis::matching::judgements::{JudgementFile, Vectors};
use crate::analysis::matching::probability::ProbabilityFit;
use crate::analysis::matching::rule::{Calibrated, SimilarityMeasure, Unseen};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Similarity thresholds tried: 0.05, 0.06, …, 0.60.
const SIMILARITY_GRID: (u32, u32) = (5, 60);
/// Embedding-cosine thresholds tried beside "no embedding evidence": 0.40, 0.41, …, 0.95.
const EMBEDDING_GRID: (u32, u32) = (40, 95);
/// Folds of the cross-validation over pull requests.
pub const FOLDS: usize = 5;

pub use crate::analysis::matching::rule::FoldBy;

/// The rule a calibration chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChosenRule {
    pub measure: SimilarityMeasure,
    pub similarity: f64,
    /// `None`: the rule uses no embeddings.
    pub embedding_similarity: Option<f64>,
    /// The embedder's fingerprint, when the rule uses embeddings.
    pub embedder: Option<serde_json::Value>,
}

/// One labelled file a calibration read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub file: String,
    pub judge: String,
    pub blake3: String,
    pub records: usize,
    pub pull_requests: usize,
    pub cells: usize,
}

/// One judge's κ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeKappa {
    pub judge: String,
    pub kappa: Option<f64>,
}

/// One fold: its pull requests, and the thresholds chosen without them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fold {
    /// The project held out, when folds are projects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    pub pull_requests: usize,
    pub similarity: f64,
    pub embedding_similarity: Option<f64>,
}

/// The cross-validation's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossValidation {
    pub by: FoldBy,
    pub folds: Vec<Fold>,
    /// Out-of-fold κ per judge: each fold's decisions made by thresholds chosen on the others.
    pub per_judge: Vec<JudgeKappa>,
}

/// A calibration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub version: u32,
    pub rule: ChosenRule,
    pub calibrated: Calibrated,
    pub data: Vec<Source>,
    pub method: String,
    pub cross_validation: CrossValidation,
    /// κ per judge of the chosen rule on all the data it was chosen on (optimistic).
    pub in_sample: Vec<JudgeKappa>,
    /// How sure each decision is: a model of the probability that the judges' majority calls
    /// a golden comment found (rules without embeddings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<ProbabilityFit>,
    /// The rule's agreement on projects the calibration never saw, where measured
    /// (`runner matching calibrate --held-out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out: Option<HeldOut>,
}

/// A range of two figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub low: f64,
    pub high: f64,
}

/// The rule a held-out measurement is of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOutRule {
    pub measure: SimilarityMeasure,
    pub similarity: f64,
    pub embedding_similarity: Option<f64>,
}

/// Agreement measured on projects a calibration never saw: figures measured where the
/// judgements are not distributed, recorded with their source (`--held-out FILE`), so the
/// rule line can state them beside the in-sample ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOut {
    pub projects: Vec<String>,
    /// Golden-comment cells per judge.
    pub cells_per_judge: u32,
    /// The rule measured; it must be the calibration's.
    pub rule: HeldOutRule,
    /// The rule's κ against each judge there.
    pub per_judge: Vec<JudgeKappa>,
    /// The lowest and highest κ between two judges there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judges: Option<Range>,
    /// Disagreements with the judges' majority, and how many of them the rule found and the
    /// majority did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disagreements: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_only: Option<u32>,
    /// About how much higher per-tool recall came out under the rule than under the judges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_bias: Option<f64>,
    /// Spearman ρ of per-tool recall under the rule and under each judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_rho: Option<Range>,
    /// Where the figures come from.
    pub source: String,
}

impl HeldOut {
    /// Reads a held-out measurement, checked: κ and ρ in [-1, 1], a judge at least.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = crate::subject::files::read_text(path).map_err(|e| e.to_string())?;
        let h: HeldOut = serde_json::from_str(&text).map_err(|e| format!("not a held-out measurement: {e}"))?;
        let in_range = |x: f64| x.is_finite() && (-1.0..=1.0).contains(&x);
        let kappas: Vec<f64> = h.per_judge.iter().filter_map(|k| k.kappa).collect();
        let ranges = [h.judges, h.rank_rho].into_iter().flatten().flat_map(|r| [r.low, r.high]);
        if kappas.is_empty() || !kappas.iter().copied().chain(ranges).all(in_range) || h.projects.is_empty() {
            return Err("a held-out measurement names its projects and a κ per judge, each κ and ρ in [-1, 1]".into());
        }
        Ok(h)
    }

    /// The figures the rule line prints.
    pub fn unseen(&self) -> Unseen {
        let kappas: Vec<f64> = self.per_judge.iter().filter_map(|k| k.kappa).collect();
        Unseen {
            projects: self.projects.len() as u32,
            cells: self.cells_per_judge,
            kappa_low: kappas.iter().copied().fold(f64::INFINITY, f64::min),
            kappa_high: kappas.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            judges_low: self.judges.map(|r| r.low),
            judges_high: self.judges.map(|r| r.high),
            recall_bias: self.recall_bias,
            rho_low: self.rank_rho.map(|r| r.low),
            rho_high: self.rank_rho.map(|r| r.high),
        }
    }

    /// Whether these figures are of `rule`.
    pub fn is_of(&self, rule: &ChosenRule) -> bool {
        self.rule.measure == rule.measure
            && (self.rule.similarity - rule.similarity).abs() < 1e-9
            && match (self.rule.embedding_similarity, rule.embedding_similarity) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-9,
                (None, None) => true,
                _ => false,
            }
    }
}

/// The rule an experiment reads from a calibration file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CalibratedRule {
    pub measure: SimilarityMeasure,
    pub similarity: f64,
    pub embedding_similarity: Option<f64>,
    pub calibrated: Option<Calibrated>,
}

/// Reads the rule of a calibration file, checked: every threshold a value of the grid a
/// calibration searches, every κ in [-1, 1], and the summary printed beside each score
/// (`calibrated`: cells, judges, κ and lowest κ) exactly what the file's own sources and
/// cross-validation give. A file edited by hand (`"similarity": -1`, a κ of 42, a κ raised
/// without its judges) is refused with the place of the first value that does not hold, so
/// no report prints a calibration that did not happen.
pub fn read_rule(path: &Path) -> Result<CalibratedRule, String> {
    let text = crate::subject::files::read_text(path).map_err(|e| e.to_string())?;
    let c: Calibration = serde_json::from_str(&text).map_err(|e| format!("not a matching calibration: {e}"))?;
    if c.version != 1 {
        return Err(format!("calibration version {} (this runner reads version 1)", c.version));
    }
    check(&c).map_err(|(key, why)| format!("{}: {why}; run `runner matching calibrate` again rather than editing the file", place(&text, key)))?;
    let mut calibrated = c.calibrated;
    calibrated.unseen = c.held_out.as_ref().filter(|h| h.is_of(&c.rule)).map(HeldOut::unseen);
    calibrated.decisions = c.probability.as_ref().and_then(ProbabilityFit::model);
    Ok(CalibratedRule {
        measure: c.rule.measure,
        similarity: c.rule.similarity,
        embedding_similarity: c.rule.embedding_similarity,
        calibrated: Some(calibrated),
    })
}

/// Whether `x` is a threshold of the grid `(from, to)` in hundredths.
fn on_grid(x: f64, grid: (u32, u32)) -> bool {
    let hundredths = x * 100.0;
    x.is_finite() && (hundredths - hundredths.round()).abs() < 1e-6 && (f64::from(grid.0)..=f64::from(grid.1)).contains(&hundredths.round())
}

/// The first value of a calibration that does not hold: its key, and why.
fn check(c: &Calibration) -> Result<(), (&'static str, String)> {
    let grid = |x: f64, grid: (u32, u32), key: &'static str| {
        if on_grid(x, grid) {
            Ok(())
        } else {
            Err((key, format!("`{key}` is {x}, not a threshold a calibration chooses ({:.2}–{:.2} by 0.01)", threshold(grid.0), threshold(grid.1))))
        }
    };
    grid(c.rule.similarity, SIMILARITY_GRID, "similarity")?;
    if let Some(e) = c.rule.embedding_similarity {
        grid(e, EMBEDDING_GRID, "embedding_similarity")?;
    }
    for fold in &c.cross_validation.folds {
        grid(fold.similarity, SIMILARITY_GRID, "folds")?;
        if let Some(e) = fold.embedding_similarity {
            grid(e, EMBEDDING_GRID, "folds")?;
        }
    }
    let kappa = |k: f64, key: &'static str| {
        if k.is_finite() && (-1.0..=1.0).contains(&k) {
            Ok(())
        } else {
            Err((key, format!("`{key}` is {k}, and Cohen's κ lies in [-1, 1]")))
        }
    };
    kappa(c.calibrated.kappa, "kappa")?;
    kappa(c.calibrated.kappa_min, "kappa_min")?;
    for k in c.cross_validation.per_judge.iter().chain(&c.in_sample).filter_map(|k| k.kappa) {
        kappa(k, "per_judge")?;
    }
    if let Some(h) = &c.held_out {
        for k in h.per_judge.iter().filter_map(|k| k.kappa) {
            kappa(k, "held_out")?;
        }
        if !h.is_of(&c.rule) {
            return Err(("held_out", "the held-out figures are of another rule than the file's".to_string()));
        }
    }
    if let Some(p) = &c.probability {
        let cv = &p.cross_validation;
        let briers = [cv.brier, cv.brier_decisions, cv.brier_base_rate];
        if p.model().is_none() || !p.coefficients.iter().all(|x| x.is_finite()) || !briers.iter().all(|b| b.is_finite() && (0.0..=1.0).contains(b)) {
            return Err((
                "probability",
                "the decision model is not one this runner computes (its terms, finite coefficients, Brier scores in [0, 1])".to_string(),
            ));
        }
    }
    let cells: usize = c.data.iter().map(|d| d.cells).sum();
    if c.data.is_empty() || c.calibrated.cells as usize != cells || c.calibrated.judges as usize != c.data.len() {
        return Err((
            "cells",
            format!(
                "the summary says {} cells of {} judges, and the file's sources hold {cells} cells of {}",
                c.calibrated.cells,
                c.calibrated.judges,
                c.data.len()
            ),
        ));
    }
    let kappas: Vec<f64> = c.cross_validation.per_judge.iter().filter_map(|k| k.kappa).collect();
    let mean = round3(kappas.iter().sum::<f64>() / kappas.len().max(1) as f64);
    let min = round3(kappas.iter().copied().fold(f64::INFINITY, f64::min).min(1.0));
    if (c.calibrated.kappa - mean).abs() > 1e-9 || (c.calibrated.kappa_min - min).abs() > 1e-9 {
        return Err((
            "kappa",
            format!(
                "the summary's κ {} (lowest {}) is not what its cross-validation per judge gives, {mean} (lowest {min})",
                c.calibrated.kappa, c.calibrated.kappa_min
            ),
        ));
    }
    Ok(())
}

/// `line L, column C` of the first `"key"` in a JSON text (`the file` when it is not there).
fn place(text: &str, key: &str) -> String {
    let Some(at) = text.find(&format!("\"{key}\"")) else { return "the file".to_string() };
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(at, |nl| at - nl - 1) + 1;
    format!("line {line}, column {column}")
}

/// Counts of one judge's cells: both found, only the matcher, only the judge, neither.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Confusion([u32; 4]);

impl Confusion {
    fn add(&mut self, o: &Confusion) {
        for i in 0..4 {
            self.0[i] += o.0[i];
        }
    }

    fn minus(&self, o: &Confusion) -> Confusion {
        Confusion([self.0[0] - o.0[0], self.0[1] - o.0[1], self.0[2] - o.0[2], self.0[3] - o.0[3]])
    }

    /// Cohen's κ of two binary raters from their 2×2 table.
    fn kappa(&self) -> Option<f64> {
        let [a, b, c, d] = self.0.map(f64::from);
        let n = a + b + c + d;
        if n == 0.0 {
            return None;
        }
        let p_o = (a + d) / n;
        let p_e = ((a + b) / n) * ((a + c) / n) + ((c + d) / n) * ((b + d) / n);
        ((1.0 - p_e).abs() > 1e-12).then(|| (p_o - p_e) / (1.0 - p_e))
    }
}

/// A record prepared for the search: its labels and its pairs in the matcher's order.
struct Prepared {
    fold: usize,
    labels: Vec<bool>,
    candidates: usize,
    /// (similarity, cosine, golden index, candidate index), strongest first, for a rule
    /// without embeddings and for one with them.
    by_similarity: Vec<(f64, f64, usize, usize)>,
    by_strength: Vec<(f64, f64, usize, usize)>,
}

fn threshold(hundredths: u32) -> f64 {
    f64::from(hundredths) / 100.0
}

/// The folds, as each pull request's fold and each fold's name: pull requests ordered by the
/// blake3 of their URL and dealt round-robin, or one fold per project (sorted by name).
fn folds_of(files: &[JudgementFile], by: FoldBy) -> (std::collections::BTreeMap<String, usize>, Vec<Option<String>>) {
    let prs: std::collections::BTreeMap<String, String> =
        files.iter().flat_map(|f| f.records.iter().map(|r| (r.pr.clone(), r.project.clone().unwrap_or_default()))).collect();
    match by {
        FoldBy::PullRequest => {
            let mut hashed: Vec<(String, &String)> = prs.keys().map(|pr| (blake3::hash(pr.as_bytes()).to_hex().to_string(), pr)).collect();
            hashed.sort();
            (hashed.into_iter().enumerate().map(|(i, (_, pr))| (pr.clone(), i % FOLDS)).collect(), vec![None; FOLDS])
        }
        FoldBy::Project => {
            let projects: Vec<String> = prs.values().cloned().collect::<std::collections::BTreeSet<_>>().into_iter().collect();
            let folds = prs.iter().map(|(pr, project)| (pr.clone(), projects.iter().position(|p| p == project).unwrap_or(0))).collect();
            (folds, projects.into_iter().map(Some).collect())
        }
    }
}

fn prepare(file: &JudgementFile, measure: SimilarityMeasure, vectors: Option<&Vectors>, folds: &std::collections::BTreeMap<String, usize>) -> Vec<Prepared> {
    file.records
        .iter()
        .map(|r| {
            let mut pairs = Vec::new();
            for (gi, g) in r.golden.iter().enumerate() {
                for (ci, c) in r.candidates.iter().enumerate() {
                    let s = measure.similarity(c, &g.comment);
                    let e = vectors.and_then(|v| Some(crate::text::cosine(v.get(&g.comment)?, v.get(c)?))).unwrap_or(0.0);
                    pairs.push((s, e, gi, ci));
                }
            }
            let order = |key: fn(&(f64, f64, usize, usize)) -> f64| {
                let mut p = pairs.clone();
                p.sort_by(|a, b| key(b).total_cmp(&key(a)).then(a.2.cmp(&b.2)).then(a.3.cmp(&b.3)));
                p
            };
            Prepared {
                fold: folds.get(&r.pr).copied().unwrap_or(0),
                labels: r.golden.iter().map(|g| matches!(g.label, Some(Some(_)))).collect(),
                candidates: r.candidates.len(),
                by_similarity: order(|p| p.0),
                by_strength: order(|p| p.0 + p.1),
            }
        })
        .collect()
}

/// The greedy one-to-one pass for found pairs under one pair of thresholds.
fn found(record: &Prepared, similarity: f64, embedding: Option<f64>, golden: &mut Vec<bool>, used: &mut Vec<bool>) {
    golden.clear();
    golden.resize(record.labels.len(), false);
    used.clear();
    used.resize(record.candidates, false);
    let pairs = if embedding.is_some() { &record.by_strength } else { &record.by_similarity };
    for &(s, e, gi, ci) in pairs {
        let evidence = s >= similarity || embedding.is_some_and(|t| e >= t);
        if evidence && !golden[gi] && !used[ci] {
            golden[gi] = true;
            used[ci] = true;
        }
    }
}

/// Chooses the thresholds on labelled files. `vectors`: embeddings of every text, to also try
/// an embedding threshold; `embedder`: its fingerprint, recorded in the file.
pub fn calibrate(
    files: &[JudgementFile],
    measure: SimilarityMeasure,
    vectors: Option<&Vectors>,
    embedder: Option<serde_json::Value>,
    by: FoldBy,
) -> Result<Calibration, String> {
    let unlabelled: Vec<&str> = files.iter().filter(|f| !f.labelled()).map(|f| f.name.as_str()).collect();
    if files.is_empty() || !unlabelled.is_empty() {
        return Err(format!("calibration needs labelled files (every golden comment with `matched_candidate`); unlabelled: {}", unlabelled.join(", ")));
    }
    let (folds, fold_names) = folds_of(files, by);
    if fold_names.len() < 2 {
        return Err("cross-validation by project needs records of at least two projects".into());
    }
    let n_folds = fold_names.len();
    let prepared: Vec<Vec<Prepared>> = files.iter().map(|f| prepare(f, measure, vectors, &folds)).collect();
    let mut grid: Vec<(f64, Option<f64>)> = Vec::new();
    for s in SIMILARITY_GRID.0..=SIMILARITY_GRID.1 {
        grid.push((threshold(s), None));
        if vectors.is_some() {
            for e in EMBEDDING_GRID.0..=EMBEDDING_GRID.1 {
                grid.push((threshold(s), Some(threshold(e))));
            }
        }
    }
    // Per grid point, per file, per fold: the confusion counts.
    let (mut golden, mut used) = (Vec::new(), Vec::new());
    let table: Vec<Vec<Vec<Confusion>>> = grid
        .iter()
        .map(|&(s, e)| {
            prepared
                .iter()
                .map(|records| {
                    let mut per_fold = vec![Confusion::default(); n_folds];
                    for r in records {
                        found(r, s, e, &mut golden, &mut used);
                        for (&m, &j) in golden.iter().zip(&r.labels) {
                            let at = match (m, j) {
                                (true, true) => 0,
                                (true, false) => 1,
                                (false, true) => 2,
                                (false, false) => 3,
                            };
                            per_fold[r.fold].0[at] += 1;
                        }
                    }
                    per_fold
                })
                .collect()
        })
        .collect();
    let totals = |g: usize| -> Vec<Confusion> {
        table[g]
            .iter()
            .map(|folds| {
                let mut t = Confusion::default();
                folds.iter().for_each(|f| t.add(f));
                t
            })
            .collect()
    };
    let mean_kappa = |counts: &[Confusion]| counts.iter().map(|c| c.kappa().unwrap_or(0.0)).sum::<f64>() / counts.len() as f64;
    let best = |without: Option<usize>| -> usize {
        let mut best = (0usize, f64::NEG_INFINITY);
        for (g, per_file) in table.iter().enumerate() {
            let counts: Vec<Confusion> = match without {
                Some(f) => totals(g).iter().zip(per_file).map(|(t, folds)| t.minus(&folds[f])).collect(),
                None => totals(g),
            };
            let k = mean_kappa(&counts);
            if k > best.1 {
                best = (g, k);
            }
        }
        best.0
    };
    let mut out_of_fold = vec![Confusion::default(); files.len()];
    let mut fold_rules = Vec::new();
    for (f, name) in fold_names.iter().enumerate() {
        let g = best(Some(f));
        for (j, acc) in out_of_fold.iter_mut().enumerate() {
            acc.add(&table[g][j][f]);
        }
        fold_rules.push(Fold {
            project: name.clone(),
            pull_requests: folds.values().filter(|&&x| x == f).count(),
            similarity: grid[g].0,
            embedding_similarity: grid[g].1,
        });
    }
    let chosen = best(None);
    let per_judge = |counts: &[Confusion]| -> Vec<JudgeKappa> {
        files.iter().zip(counts).map(|(f, c)| JudgeKappa { judge: f.judge.clone(), kappa: c.kappa().map(round3) }).collect()
    };
    let cv = per_judge(&out_of_fold);
    let kappas: Vec<f64> = cv.iter().filter_map(|k| k.kappa).collect();
    let calibrated = Calibrated {
        unseen: None,
        decisions: None,
        cells: files.iter().map(|f| f.cells()).sum::<usize>() as u32,
        judges: files.len() as u32,
        kappa: round3(kappas.iter().sum::<f64>() / kappas.len().max(1) as f64),
        kappa_min: round3(kappas.iter().copied().fold(f64::INFINITY, f64::min).min(1.0)),
    };
    let (similarity, embedding_similarity) = grid[chosen];
    let fold_thresholds: Vec<f64> = fold_rules.iter().map(|f| f.similarity).collect();
    let probability =
        if vectors.is_none() { crate::analysis::matching::probability::fit_model(files, measure, similarity, &folds, &fold_thresholds, by) } else { None };
    Ok(Calibration {
        probability,
        held_out: None,
        version: 1,
        rule: ChosenRule { measure, similarity, embedding_similarity, embedder: embedding_similarity.and(embedder) },
        calibrated,
        data: files
            .iter()
            .map(|f| Source { file: f.name.clone(), judge: f.judge.clone(), blake3: f.digest.clone(), records: f.records.len(), pull_requests: f.pull_requests(), cells: f.cells() })
            .collect(),
        method: format!(
            "grid search of the similarity threshold ({:.2}–{:.2} by 0.01){} maximizing the mean over judges of Cohen's κ (found / not found per golden comment), matched one to one, best first; {}",
            threshold(SIMILARITY_GRID.0),
            threshold(SIMILARITY_GRID.1),
            if vectors.is_some() { format!(", with an embedding-cosine threshold ({:.2}–{:.2} by 0.01, or none)", threshold(EMBEDDING_GRID.0), threshold(EMBEDDING_GRID.1)) } else { String::new() },
            match by {
                FoldBy::PullRequest => format!("{FOLDS}-fold cross-validation over pull requests (ordered by the blake3 of their URL, dealt round-robin)"),
                FoldBy::Project => format!("cross-validation leaving one project out ({n_folds} folds)"),
            }
        ),
        cross_validation: CrossValidation { by, folds: fold_rules, per_judge: cv },
        in_sample: per_judge(&totals(chosen)),
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::matching::judgements::decide;
    use crate::analysis::spec::OracleRule;
    use serde_json::json;

    /// Twelve pull requests, one tool: a golden comment the candidate restates with more or
    /// fewer shared words, and a distractor.
    fn labelled() -> JudgementFile {
        let mut records = Vec::new();
        for i in 0..12 {
            let shared = ["negative", "slicing", "django", "queryset", "raises", "assertion", "offset", "cursor"];
            let k = 2 + i % 6;
            let candidate = format!("{} plus other unrelated words here", shared[..k].join(" "));
            let found = k >= 4;
            records.push(json!({"pr": format!("https://example.com/pull/{i}"), "tool": "t", "golden": [
                {"comment": shared.join(" "), "matched_candidate": if found { json!(candidate) } else { serde_json::Value::Null }},
                {"comment": "the lock is never released", "matched_candidate": null}],
                "unmatched_candidates": if found { json!(["typo in a docstring"]) } else { json!([candidate, "typo in a docstring"]) }}));
        }
        JudgementFile::from_value(&json!({"judge": "j", "records": records}), "j.json".into(), "d".into()).expect("reads")
    }

    #[test]
    fn the_search_replays_the_matcher_and_reproduces_byte_for_byte() {
        let files = vec![labelled()];
        let c = calibrate(&files, SimilarityMeasure::Tokens, None, None, FoldBy::PullRequest).expect("calibrates");
        assert_eq!(c.in_sample[0].kappa, Some(1.0), "a threshold separates the restatements: {c:?}");
        let rule = OracleRule { similarity: c.rule.similarity, ..OracleRule::default() };
        let decisions = decide(&files[0], &rule, None);
        let agreement = crate::analysis::matching::judgements::agreement(&files[0], &decisions);
        assert_eq!(agreement.kappa, Some(1.0), "the matcher itself agrees at the chosen threshold");
        let again = calibrate(&files, SimilarityMeasure::Tokens, None, None, FoldBy::PullRequest).expect("calibrates");
        assert_eq!(serde_json::to_string(&c).ok(), serde_json::to_string(&again).ok());
        assert_eq!(c.cross_validation.folds.iter().map(|f| f.pull_requests).sum::<usize>(), 12);
        assert_eq!(c.calibrated.cells, 24);
    }

    #[test]
    fn unlabelled_files_are_refused() {
        let f = JudgementFile::from_value(&json!({"records": [{"pr": "p", "tool": "t", "golden": [{"comment": "a"}]}]}), "u.json".into(), String::new())
            .expect("reads");
        assert!(calibrate(&[f], SimilarityMeasure::Tokens, None, None, FoldBy::PullRequest).is_err_and(|e| e.contains("u.json")));
    }

    #[test]
    fn a_calibration_edited_by_hand_is_refused_at_its_place() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/matching/calibration.json");
        let committed = std::fs::read_to_string(&root).expect("the committed calibration");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("calibration.json");
        std::fs::write(&path, &committed).expect("write");
        let rule = read_rule(&path).expect("the committed calibration holds");
        assert_eq!((rule.similarity, rule.calibrated.map(|c| c.kappa)), (0.22, Some(0.829)));
        for (from, to, says) in [
            ("\"similarity\": 0.22,", "\"similarity\": -1,", "`similarity` is -1"),
            ("\"similarity\": 0.22,", "\"similarity\": 0.225,", "not a threshold"),
            ("\"kappa\": 0.829,", "\"kappa\": 42,", "`kappa` is 42"),
            ("\"kappa\": 0.829,", "\"kappa\": 0.95,", "not what its cross-validation per judge gives"),
            ("\"cells\": 2808,", "\"cells\": 28080,", "the summary says 28080 cells"),
        ] {
            assert!(committed.contains(from), "{from}");
            std::fs::write(&path, committed.replacen(from, to, 1)).expect("write");
            let e = read_rule(&path).expect_err(to);
            assert!(e.contains(says) && e.contains("line ") && e.contains("column "), "{to}: {e}");
        }
        for other in ["calibration-embedding.json", "calibration-by-project.json", "calibration-embedding-by-project.json"] {
            read_rule(&root.with_file_name(other)).unwrap_or_else(|e| panic!("{other}: {e}"));
        }
        assert_eq!(place("{\n  \"rule\": {\n    \"similarity\": -1", "similarity"), "line 3, column 5");
    }

    #[test]
    fn the_default_rule_carries_the_committed_files_held_out_figures_and_decision_model() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/matching");
        let lexical = read_rule(&dir.join("calibration.json")).expect("reads").calibrated.expect("calibrated");
        assert_eq!(lexical, crate::analysis::matching::rule::DEFAULT_CALIBRATION);
        let embedding = read_rule(&dir.join("calibration-embedding.json")).expect("reads").calibrated.expect("calibrated");
        assert_eq!(embedding, crate::analysis::matching::rule::DEFAULT_EMBEDDING_CALIBRATION);
        assert!(embedding.unseen.is_some_and(|e| lexical.unseen.is_some_and(|l| e.kappa_high < l.kappa_low)), "worse where it was not tuned");
        let text = OracleRule::default().describe();
        assert!(
            text.contains("on 2 projects calibration never saw, κ 0.75–0.78 against each judge (708 cells each; the judges among themselves 0.89–0.92)"),
            "{text}"
        );
        assert!(text.contains("per-tool recall about 0.05 high") && text.contains("Spearman ρ 0.95–0.97"), "{text}");
    }

    #[test]
    fn held_out_figures_of_another_rule_and_a_broken_model_are_refused() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/matching/calibration.json");
        let committed = std::fs::read_to_string(&root).expect("the committed calibration");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("calibration.json");
        for (from, to, says) in [
            ("\"embedding_similarity\": null\n    },\n    \"per_judge\"", "\"embedding_similarity\": 0.65\n    },\n    \"per_judge\"", "another rule"),
            ("\"terms\": [\n      \"intercept\"", "\"terms\": [\n      \"constant\"", "decision model"),
            ("\"brier\": 0.0862", "\"brier\": 3.5", "decision model"),
        ] {
            assert!(committed.contains(from), "{from}");
            std::fs::write(&path, committed.replacen(from, to, 1)).expect("write");
            let e = read_rule(&path).expect_err(to);
            assert!(e.contains(says), "{to}: {e}");
        }
        let held = dir.path().join("held.json");
        std::fs::write(&held, r#"{"projects": ["p"], "cells_per_judge": 1, "rule": {"measure": "tokens", "similarity": 0.22, "embedding_similarity": null}, "per_judge": [{"judge": "j", "kappa": 7}], "source": ""}"#)
            .expect("write");
        assert!(HeldOut::read(&held).is_err_and(|e| e.contains("[-1, 1]")));
    }
}
