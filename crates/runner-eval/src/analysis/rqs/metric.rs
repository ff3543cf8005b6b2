//! Seed 001: RQS v2. Per cell, from the jury's verdicts, the pseudo-reference alignment and
//! the oracle where one exists: severity-weighted recall, precision (jury and oracle),
//! actionability, Conciseness / Comprehensiveness / Relevance, inter-judge κ, cost, and the
//! headline — the harmonic mean of severity-weighted recall, jury precision and actionability.
//! Every number says which method produced it.

use crate::analysis::definition::{Definition, Needs, OptionsContext};
use crate::analysis::spec::{AnalysisKind, AnalysisOptions, RqsOptions};
use crate::config::{resolve_path, TableReader};
use toml::Spanned;
use crate::analysis::chart::{BarChart, Chart, ChartCells, Named, Series};
use crate::analysis::matching::matcher::{score_runs_judged, with_jury, Verdict};
use crate::analysis::spec::AnalysisSpec;
use crate::analysis::{
    model::fmt_num, model::fmt_ratio, model::json_num, model::missing_note, model::ratio, model::AnalysisInput, model::AnalysisResult, model::RunView,
    model::Table, model::TableCell,
};
use crate::matrix::RunId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One judge's answer on one finding for one rubric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Vote {
    Yes,
    No,
    /// The judge answered, but not in the schema, after every retry.
    Unparseable,
    /// No answer: the judge's node failed or was not run.
    Absent,
    /// A judge asked several times (`samples`) whose samples split evenly between yes and no.
    Split,
}

impl Vote {
    /// A decided vote as yes (`true`) or no; `None` for no well-formed answer.
    pub fn as_bool(self) -> Option<bool> {
        match self {
            Self::Yes => Some(true),
            Self::No => Some(false),
            Self::Unparseable | Self::Absent | Self::Split => None,
        }
    }

    /// A judge's vote from its samples, in sample order: the one sample's vote, or their
    /// majority — `Split` on a tie, `Unparseable` when none answered in the schema but one
    /// answered, `Absent` when none answered.
    pub fn of_samples(samples: &[Vote]) -> Vote {
        if let [one] = samples {
            return *one;
        }
        match majority(samples) {
            Majority::Verdict(true) => Self::Yes,
            Majority::Verdict(false) => Self::No,
            Majority::Tie => Self::Split,
            Majority::Undecided if samples.contains(&Self::Unparseable) => Self::Unparseable,
            Majority::Undecided => Self::Absent,
        }
    }
}

/// One judge's samples on one question (a finding under one rubric), in sample order: what
/// its consistency is measured on.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledVotes {
    /// The judge's place in the jury.
    pub judge: usize,
    pub votes: Vec<Vote>,
}

/// A judge of the jury as the report names it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JudgeInfo {
    pub name: String,
    pub model: String,
    pub family: String,
    /// How many times it was asked each question (`samples`; 1 is not written).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub samples: u32,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// The embedder and the threshold its alignments used.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EmbedderInfo {
    /// Protocol and model, as hashed into its cache keys.
    pub identity: String,
    pub tau: f64,
    /// Where τ came from (a calibration file and what it was calibrated on, or the manifest).
    pub tau_source: String,
}

/// Tokens and seconds of one producer's calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageCost {
    pub tokens: u64,
    pub seconds: f64,
}

impl StageCost {
    pub fn add(&mut self, other: StageCost) {
        self.tokens += other.tokens;
        self.seconds += other.seconds;
    }
}

/// The jury's votes on one finding: one entry per judge, in jury order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FindingVotes {
    pub validity: Vec<Vote>,
    pub actionability: Vec<Vote>,
    /// Per rubric (validity, then actionability): the answers over every judge and every
    /// sample that said yes, and those answered in the schema. Their share weighs the finding
    /// under judging uncertainty (`statistics::compare`).
    #[serde(skip)]
    pub shares: [(u32, u32); 2],
}

impl FindingVotes {
    /// The share of yes among the answers on rubric `rubric` (0 validity, 1 actionability);
    /// `None` when no answer was well-formed.
    pub(crate) fn share(&self, rubric: usize) -> Option<f64> {
        let (yes, answered) = self.shares.get(rubric).copied()?;
        (answered > 0).then(|| f64::from(yes) / f64::from(answered))
    }
}

/// What the scoring stages produced for one run.
#[derive(Debug, Clone, Default)]
pub struct RunScoring {
    /// One per finding of the run, in the run's order.
    pub votes: Vec<FindingVotes>,
    /// Per judge, in jury order.
    pub judge_cost: Vec<StageCost>,
    /// The review's sentences, each with its embedding (absent without an embedder).
    pub sentences: Option<Vec<Vec<f32>>>,
    pub embed_cost: StageCost,
    /// Stages that failed for this run.
    pub problems: Vec<String>,
    /// Each judge's samples on each question, for the judges asked more than once.
    pub sampled: Vec<SampledVotes>,
}

/// A subject's pseudo-references and their embeddings.
#[derive(Debug, Clone, Default)]
pub struct SubjectReferences {
    pub claims: usize,
    pub smells: usize,
    /// One per pseudo-reference (claims, then smells).
    pub vectors: Option<Vec<Vec<f32>>>,
    pub claims_cost: StageCost,
    pub problems: Vec<String>,
}

/// One human-labelled finding of the anchor set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnchorItem {
    pub subject: String,
    pub file: String,
    pub line: u32,
    /// The finding's message as reviewed (matched after whitespace normalization).
    pub message: String,
    pub valid: Option<bool>,
    pub actionable: Option<bool>,
}

/// The human anchor set named by the analysis.
#[derive(Debug, Clone, Default)]
pub struct Anchor {
    /// The file, as the manifest names it.
    pub source: String,
    pub items: Vec<AnchorItem>,
}

/// Everything RQS v2 reads beyond the runs themselves.
#[derive(Debug, Clone, Default)]
pub struct RqsInput {
    pub judges: Vec<JudgeInfo>,
    pub embedder: Option<EmbedderInfo>,
    /// The seed of the blind presentation's shuffle.
    pub shuffle_seed: u64,
    pub runs: BTreeMap<RunId, RunScoring>,
    pub references: BTreeMap<String, SubjectReferences>,
    pub anchor: Option<Anchor>,
    /// The claims model (its name) and the analyzers (their versions), when declared.
    pub claims_model: Option<String>,
    pub analyzers: Option<String>,
}

/// The severity weight of an oracle finding (seed 001): blocking ×2, otherwise ×1; times 1.5
/// when its thread shows a code change (`resolved`). The factors multiply: a resolved blocking
/// finding weighs 3.
pub(crate) fn severity_weight(blocking: bool, resolved: Option<bool>) -> f64 {
    let severity = if blocking { 2.0 } else { 1.0 };
    if resolved == Some(true) {
        severity * 1.5
    } else {
        severity
    }
}

/// Agreement below this share with the human anchor means a judge may not stand alone (seed 000 H5).
pub(crate) const STAND_ALONE_AGREEMENT: f64 = 0.85;

/// The jury's majority on one finding: `Some(verdict)`, or `None` for a tie or no decided vote.
pub(crate) fn majority(votes: &[Vote]) -> Majority {
    let yes = votes.iter().filter(|v| v.as_bool() == Some(true)).count();
    let no = votes.iter().filter(|v| v.as_bool() == Some(false)).count();
    match yes.cmp(&no) {
        _ if yes + no == 0 => Majority::Undecided,
        std::cmp::Ordering::Greater => Majority::Verdict(true),
        std::cmp::Ordering::Less => Majority::Verdict(false),
        std::cmp::Ordering::Equal => Majority::Tie,
    }
}

/// The outcome of a majority vote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Majority {
    Verdict(bool),
    Tie,
    /// No judge gave a usable answer.
    Undecided,
}

/// Counts of a binary judgement over findings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
struct Tally {
    yes: usize,
    no: usize,
    ties: usize,
    undecided: usize,
}

impl Tally {
    fn add(&mut self, m: Majority) {
        match m {
            Majority::Verdict(true) => self.yes += 1,
            Majority::Verdict(false) => self.no += 1,
            Majority::Tie => self.ties += 1,
            Majority::Undecided => self.undecided += 1,
        }
    }

    /// Yes over decided findings; ties and undecided findings count in neither.
    fn rate(&self) -> Option<f64> {
        ratio(self.yes as f64, (self.yes + self.no) as f64)
    }
}

/// Inter-judge agreement on one rubric: κ over the findings every judge decided.
fn jury_kappa(items: &[&[Vote]], judges: usize) -> (Option<f64>, usize) {
    let decided: Vec<Vec<bool>> =
        items.iter().filter_map(|votes| votes.iter().map(|v| v.as_bool()).collect::<Option<Vec<bool>>>()).filter(|v| v.len() == judges).collect();
    let n = decided.len();
    if judges < 2 || n == 0 {
        return (None, n);
    }
    (binary_kappa(&decided), n)
}

/// κ of binary ratings, one row per item and one column per rater: Cohen's for two raters,
/// Fleiss' for more.
fn binary_kappa(rows: &[Vec<bool>]) -> Option<f64> {
    match rows.first().map(Vec::len) {
        Some(2) => {
            let (a, b): (Vec<bool>, Vec<bool>) = rows.iter().map(|r| (r[0], r[1])).unzip();
            crate::agreement::cohen_kappa(&a, &b).map(|k| k.kappa)
        }
        Some(n) if n > 2 => crate::agreement::fleiss_kappa(rows).map(|k| k.kappa),
        _ => None,
    }
}

/// Harmonic mean of defined, non-negative values; `None` if any is undefined.
pub(crate) fn harmonic_mean(values: &[Option<f64>]) -> Option<f64> {
    let values: Vec<f64> = values.iter().copied().collect::<Option<Vec<f64>>>()?;
    if values.is_empty() {
        return None;
    }
    if values.iter().any(|v| *v <= 0.0) {
        return Some(0.0);
    }
    Some(values.len() as f64 / values.iter().map(|v| 1.0 / v).sum::<f64>())
}

/// The per-cell numbers (results.json `data.cells`).
#[derive(Debug, Clone, Default, Serialize)]
struct CellScores {
    cell: String,
    runs: usize,
    findings: usize,
    /// Σ found weights / Σ expected weights over the cell's runs on oracle cases.
    weighted_recall: Option<f64>,
    precision_jury: Option<f64>,
    precision_oracle: Option<f64>,
    actionability: Option<f64>,
    conciseness: Option<f64>,
    comprehensiveness: Option<f64>,
    relevance: Option<f64>,
    kappa_validity: Option<f64>,
    kappa_validity_items: usize,
    kappa_actionability: Option<f64>,
    kappa_actionability_items: usize,
    validity: Tally,
    actionable: Tally,
    reviewer_tokens: u64,
    reviewer_seconds: f64,
    judge_tokens: u64,
    judge_seconds: f64,
    headline: Option<f64>,
    self_preference: Vec<String>,
}

/// The alignment of one review against its subject's pseudo-references (CRScore, strict `> τ`),
/// scored the CRScore way: an empty side scores 0 ([`crate::analysis::rqs::alignment::Alignment::crscore_scores`]).
fn align(sentences: &[Vec<f32>], references: &[Vec<f32>], tau: f64) -> (f64, f64, f64) {
    let s: Vec<&[f32]> = sentences.iter().map(Vec::as_slice).collect();
    let r: Vec<&[f32]> = references.iter().map(Vec::as_slice).collect();
    crate::analysis::rqs::alignment::align(&s, &r, tau).crscore_scores()
}

/// What one run contributes to RQS v2's sub-scores.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RunPart {
    /// Found and expected severity weights, found findings and extras against the oracle;
    /// `None` when the subject is not an oracle case.
    oracle: Option<(f64, f64, usize, usize)>,
    validity: Tally,
    actionable: Tally,
    /// Conciseness, comprehensiveness and relevance of the review against its references.
    alignment: Option<(f64, f64, f64)>,
}

/// Each run's part, looked up by run (oracle matching done once, for every run).
pub(crate) struct RunParts<'i, 'a> {
    rqs: &'i RqsInput,
    oracle: Option<&'i crate::ground_truth::oracle::Oracle>,
    scored: std::collections::HashMap<(&'a str, u32, &'a str), crate::analysis::matching::matcher::CaseMatch>,
}

impl RunPart {
    /// Found and expected severity weights against the oracle, where the subject is a case.
    pub(crate) fn recall_weights(&self) -> Option<(f64, f64)> {
        self.oracle.map(|(found, total, _, _)| (found, total))
    }
}

impl<'i, 'a> RunParts<'i, 'a> {
    pub(crate) fn new(input: &'i AnalysisInput<'a>, rqs: &'i RqsInput, rule: &crate::analysis::spec::OracleRule) -> Self {
        let scored = match input.oracle {
            Some(oracle) => score_runs_judged(&input.runs, oracle, rule, input.match_votes())
                .0
                .into_iter()
                .map(|s| ((s.view.cell.id.as_str(), s.view.repeat, s.view.subject), s.case))
                .collect(),
            None => Default::default(),
        };
        Self { rqs, oracle: input.oracle, scored }
    }

    pub(crate) fn of(&self, run: &RunView<'_>) -> RunPart {
        let mut part = RunPart::default();
        if let (Some(oracle), Some(case)) = (self.oracle, self.scored.get(&(run.cell.id.as_str(), run.repeat, run.subject))) {
            let expected = oracle.expected_for(run.subject);
            let (mut found_w, mut total_w) = (0.0, 0.0);
            for (verdict, finding) in case.verdicts.iter().zip(&expected) {
                let w = severity_weight(finding.blocking, finding.resolved);
                total_w += w;
                if verdict.verdict == Verdict::Found {
                    found_w += w;
                }
            }
            let tp = case.verdicts.iter().filter(|v| v.verdict == Verdict::Found).count();
            part.oracle = Some((found_w, total_w, tp, case.extras.len()));
        }
        let id = RunId::new(run.cell.id.clone(), run.repeat, run.subject.to_string());
        if let Some(scoring) = self.rqs.runs.get(&id) {
            for votes in &scoring.votes {
                part.validity.add(majority(&votes.validity));
                part.actionable.add(majority(&votes.actionability));
            }
            part.alignment = match (&scoring.sentences, self.rqs.references.get(run.subject).and_then(|r| r.vectors.as_ref()), &self.rqs.embedder) {
                (Some(sentences), Some(references), Some(embedder)) => Some(align(sentences, references, embedder.tau)),
                _ => None,
            };
        }
        part
    }
}

/// RQS v2's sub-scores and headline over a set of runs: a cell, or one subject's repeats.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RqsScores {
    validity: Tally,
    actionable: Tally,
    pub weighted_recall: Option<f64>,
    pub precision_jury: Option<f64>,
    pub precision_oracle: Option<f64>,
    pub actionability: Option<f64>,
    pub conciseness: Option<f64>,
    pub comprehensiveness: Option<f64>,
    pub relevance: Option<f64>,
    pub headline: Option<f64>,
}

impl RqsScores {
    /// Pools the runs' parts: weights and tallies summed, alignments averaged over reviews.
    pub(crate) fn of(parts: &[RunPart]) -> Self {
        let mut out = Self::default();
        let (mut found_w, mut total_w, mut tp, mut fp, mut oracle_runs) = (0.0, 0.0, 0, 0, 0);
        for part in parts {
            if let Some((f, t, p, x)) = part.oracle {
                found_w += f;
                total_w += t;
                tp += p;
                fp += x;
                oracle_runs += 1;
            }
            merge(&mut out.validity, part.validity);
            merge(&mut out.actionable, part.actionable);
        }
        out.weighted_recall = (oracle_runs > 0).then(|| ratio(found_w, total_w)).flatten();
        out.precision_oracle = (oracle_runs > 0).then(|| ratio(tp as f64, (tp + fp) as f64)).flatten();
        out.precision_jury = out.validity.rate();
        out.actionability = out.actionable.rate();
        out.conciseness = mean(parts.iter().map(|p| p.alignment.map(|a| a.0)));
        out.comprehensiveness = mean(parts.iter().map(|p| p.alignment.map(|a| a.1)));
        out.relevance = mean(parts.iter().map(|p| p.alignment.map(|a| a.2)));
        out.headline = harmonic_mean(&[out.weighted_recall, out.precision_jury, out.actionability]);
        out
    }
}

/// `rqs`: RQS v2 from the jury's verdicts and the alignment (`tau` or `calibration`, `anchor`,
/// `shuffle-seed`), charted per cell.
pub(crate) const ANALYSIS: Definition =
    Definition::new(AnalysisKind::RQS, compute).needing(Needs::SCORING).with_options(&["tau", "calibration", "anchor", "shuffle-seed"], read_options).with_charts(charts);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = AnalysisResult::new(
        spec,
        "RQS v2",
        "Review quality (RQS v2)",
        "Seed 001's review-quality score: a jury of judges from different model families rates each finding's validity (grounded in the diff) and actionability (says what to change and where), blind and in a seeded shuffle; reviews are aligned to pseudo-references (model claims and static-analysis smells on changed lines) by embedding similarity; recall against the oracle is severity-weighted. Headline = harmonic mean of severity-weighted recall, jury precision and actionability.",
    );
    let Some(rqs) = input.rqs() else {
        result.notes.push("No scoring stages ran: declare `[judges.NAME]`, `[embedder]` and `[pseudo-references]` in the manifest.".into());
        return result;
    };
    let judges = rqs.judges.len();

    // Oracle matching (automatic, the analysis's oracle rule), for recall and oracle precision.
    let parts = RunParts::new(input, rqs, &spec.oracle_rule);

    let mut cells_out = Vec::new();
    let mut all_validity: Vec<&[Vote]> = Vec::new();
    let mut all_actionability: Vec<&[Vote]> = Vec::new();
    let mut detail = Table::new("Per run", &["Cell", "Subject", "Repeat", "Findings", "Valid", "Actionable", "Conciseness", "Comprehensiveness", "Relevance"]);
    for cell in input.cells {
        let runs: Vec<&RunView<'_>> = crate::analysis::model::runs_of(input, cell).collect();
        if runs.is_empty() {
            continue;
        }
        let mut c = CellScores { cell: cell.id.clone(), runs: runs.len(), ..Default::default() };
        let (mut validity_items, mut actionability_items): (Vec<&[Vote]>, Vec<&[Vote]>) = (Vec::new(), Vec::new());
        let mut run_parts = Vec::with_capacity(runs.len());
        for run in &runs {
            c.findings += run.findings.len();
            c.reviewer_tokens += run.record.cost.prompt_tokens.unwrap_or(0) + run.record.cost.completion_tokens.unwrap_or(0);
            c.reviewer_seconds += run.record.cost.wall_ms as f64 / 1000.0;
            let part = parts.of(run);
            run_parts.push(part);
            let id = RunId::new(run.cell.id.clone(), run.repeat, run.subject.to_string());
            let Some(scoring) = rqs.runs.get(&id) else { continue };
            for votes in &scoring.votes {
                validity_items.push(&votes.validity);
                actionability_items.push(&votes.actionability);
            }
            for cost in &scoring.judge_cost {
                c.judge_tokens += cost.tokens;
                c.judge_seconds += cost.seconds;
            }
            detail.rows.push(vec![
                format!("`{}`", cell.id).into(),
                format!("`{}`", run.subject).into(),
                run.repeat.into(),
                run.findings.len().into(),
                fmt_ratio(part.validity.rate()),
                fmt_ratio(part.actionable.rate()),
                fmt_ratio(part.alignment.map(|a| a.0)),
                fmt_ratio(part.alignment.map(|a| a.1)),
                fmt_ratio(part.alignment.map(|a| a.2)),
            ]);
        }
        let scores = RqsScores::of(&run_parts);
        c.validity = scores.validity;
        c.actionable = scores.actionable;
        c.weighted_recall = scores.weighted_recall;
        c.precision_oracle = scores.precision_oracle;
        c.precision_jury = scores.precision_jury;
        c.actionability = scores.actionability;
        c.conciseness = scores.conciseness;
        c.comprehensiveness = scores.comprehensiveness;
        c.relevance = scores.relevance;
        (c.kappa_validity, c.kappa_validity_items) = jury_kappa(&validity_items, judges);
        (c.kappa_actionability, c.kappa_actionability_items) = jury_kappa(&actionability_items, judges);
        c.headline = scores.headline;
        let model = reviewer_model(runs[0]);
        c.self_preference = rqs.judges.iter().filter(|j| same_family(&j.family, &model)).map(|j| j.name.clone()).collect();
        all_validity.extend(validity_items);
        all_actionability.extend(actionability_items);
        cells_out.push(c);
    }

    let mut table = Table::new(
        "RQS v2 per cell",
        &[
            "Cell",
            "Runs",
            "Findings",
            "Recall (sev.-weighted)",
            "Precision (jury)",
            "Precision (oracle)",
            "Actionability",
            "Conciseness",
            "Comprehensiveness",
            "Relevance",
            "κ validity",
            "κ actionability",
            "Reviewer tokens",
            "Reviewer s",
            "Judge tokens",
            "Judge s",
            "Headline",
        ],
    );
    for c in &cells_out {
        table.rows.push(vec![
            format!("`{}`", c.cell).into(),
            c.runs.into(),
            c.findings.into(),
            fmt_ratio(c.weighted_recall),
            fmt_ratio(c.precision_jury),
            fmt_ratio(c.precision_oracle),
            fmt_ratio(c.actionability),
            fmt_ratio(c.conciseness),
            fmt_ratio(c.comprehensiveness),
            fmt_ratio(c.relevance),
            kappa_cell(c.kappa_validity, c.kappa_validity_items),
            kappa_cell(c.kappa_actionability, c.kappa_actionability_items),
            c.reviewer_tokens.into(),
            fmt_num(Some(c.reviewer_seconds), 2),
            c.judge_tokens.into(),
            fmt_num(Some(c.judge_seconds), 2),
            fmt_ratio(c.headline),
        ]);
    }

    // The jury, with each judge's agreement with the human anchor.
    let mut jury = Table::new(
        "Jury",
        &[
            "Judge",
            "Model",
            "Family",
            "Unparseable answers",
            "Anchor items (validity)",
            "Agreement (validity)",
            "κ (validity)",
            "Anchor items (actionability)",
            "Agreement (actionability)",
            "κ (actionability)",
            "Stands alone",
            "Self-preference",
        ],
    );
    let anchors = rqs.anchor.as_ref().map(|a| anchor_agreement(a, input, rqs)).unwrap_or_default();
    let mut judges_json = Vec::new();
    // Per judge: answers that were not in the schema after every retry, of all answers.
    let answered = |j: usize| -> (usize, usize) {
        let votes = rqs.runs.values().flat_map(|r| r.votes.iter()).flat_map(|v| [v.validity.get(j), v.actionability.get(j)]).flatten();
        votes.fold((0, 0), |(bad, all), v| match v {
            Vote::Unparseable => (bad + 1, all + 1),
            Vote::Absent => (bad, all),
            Vote::Yes | Vote::No | Vote::Split => (bad, all + 1),
        })
    };
    for (j, judge) in rqs.judges.iter().enumerate() {
        let (unparseable, answers) = answered(j);
        let [validity, actionability] = anchors.get(j).copied().unwrap_or_default();
        // Seed 000 H5: a judge stands alone only at 85 % agreement or more on every rubric
        // the anchor labels.
        let rates: Vec<f64> = [validity, actionability].iter().filter(|a| a.items > 0).filter_map(|a| a.agreement).collect();
        let fit = (!rates.is_empty()).then(|| rates.iter().all(|a| *a >= STAND_ALONE_AGREEMENT));
        let self_pref: Vec<&str> = cells_out.iter().filter(|c| c.self_preference.contains(&judge.name)).map(|c| c.cell.as_str()).collect();
        jury.rows.push(vec![
            format!("`{}`", judge.name).into(),
            format!("`{}`", judge.model).into(),
            judge.family.clone().into(),
            crate::analysis::model::fmt_share(unparseable, answers),
            validity.items.into(),
            fmt_ratio(validity.agreement),
            fmt_ratio(validity.kappa),
            actionability.items.into(),
            fmt_ratio(actionability.agreement),
            fmt_ratio(actionability.kappa),
            match fit {
                Some(true) => "yes".into(),
                Some(false) => "**no** (below 85 % agreement with the anchor)".into(),
                None => "unknown (no anchor items)".into(),
            },
            if self_pref.is_empty() {
                "–".into()
            } else {
                format!("**flagged** in {}", self_pref.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")).into()
            },
        ]);
        judges_json.push(serde_json::json!({
            "name": judge.name, "model": judge.model, "family": judge.family, "unparseable": unparseable, "answers": answers,
            "anchor": {
                "validity": {"items": validity.items, "agreement": json_num(validity.agreement), "kappa": json_num(validity.kappa)},
                "actionability": {"items": actionability.items, "agreement": json_num(actionability.agreement), "kappa": json_num(actionability.kappa)},
            },
            "stands_alone": fit, "self_preference_cells": self_pref,
        }));
    }
    let (kappa_v, items_v) = jury_kappa(&all_validity, judges);
    let (kappa_a, items_a) = jury_kappa(&all_actionability, judges);
    let families: std::collections::BTreeSet<&str> = rqs.judges.iter().map(|j| j.family.as_str()).collect();

    result.rule = Some(format!(
        "jury of {judges} judge{} ({} famil{}): majority vote per finding and rubric, ties and unusable answers counted in neither numerator nor denominator and reported; {}; recall: {}, blocking ×2, other ×1, times 1.5 when the oracle marks the finding `resolved` (its thread saw a code change); alignment: {}",
        if judges == 1 { "" } else { "s" },
        families.len(),
        if families.len() == 1 { "y" } else { "ies" },
        if judges == 2 { "inter-judge agreement Cohen's κ" } else { "inter-judge agreement Fleiss' κ" },
        with_jury(spec.oracle_rule.describe(), input.match_votes()),
        match &rqs.embedder {
            Some(e) => format!("cosine similarity of `{}` embeddings, strict > τ = {:.4} ({})", e.identity, e.tau, e.tau_source),
            None => "none (no embedder declared)".to_string(),
        }
    ));
    let consistency = judge_consistency(rqs);
    result.tables = vec![jury];
    if let Some((table, _)) = &consistency {
        result.tables.push(table.clone());
    }
    result.tables.extend([table, detail]);
    result.notes.push(format!(
        "Inter-judge agreement over the whole experiment: validity κ = {} over {items_v} findings, actionability κ = {} over {items_a} findings ({}).",
        show(kappa_v),
        show(kappa_a),
        if judges == 2 { "Cohen's κ" } else { "Fleiss' κ" }
    ));
    result.notes.push(format!(
        "Blind presentation: findings are shown without reviewer, model, cell or repeat, normalized, in a shuffle seeded with {}.",
        rqs.shuffle_seed
    ));
    if families.len() < judges {
        result.notes.push("Two judges of the jury share a model family: seed 001 asks for judges from different families.".into());
    }
    if judges < 2 {
        result.notes.push("A jury of one judge: no inter-judge agreement can be computed, and seed 001 advises against a single judge.".into());
    }
    if !rqs.references.is_empty() {
        let claims: usize = rqs.references.values().map(|r| r.claims).sum();
        let smells: usize = rqs.references.values().map(|r| r.smells).sum();
        let mut cost = StageCost::default();
        for r in rqs.references.values() {
            cost.add(r.claims_cost);
        }
        result.notes.push(format!(
            "Pseudo-references: {claims} claims and {smells} smells over {} subjects; claims by {} ({} tokens, {:.1} s); smells by {}.",
            rqs.references.len(),
            rqs.claims_model.as_deref().map_or_else(|| "no model".to_string(), |m| format!("`{m}`")),
            cost.tokens,
            cost.seconds,
            rqs.analyzers.as_deref().unwrap_or("no analyzer"),
        ));
    }
    for (subject, refs) in &rqs.references {
        for p in &refs.problems {
            result.notes.push(format!("`{subject}`: {p}"));
        }
    }
    for (run, scoring) in &rqs.runs {
        for p in &scoring.problems {
            result.notes.push(format!("`{run}`: {p}"));
        }
    }
    if let Some(note) = missing_note(input) {
        result.notes.push(note);
    }
    let mut data = serde_json::json!({
        "judges": judges_json,
        "embedder": rqs.embedder,
        "shuffle_seed": rqs.shuffle_seed,
        "claims_model": rqs.claims_model,
        "analyzers": rqs.analyzers,
        "kappa": {"validity": json_num(kappa_v), "validity_items": items_v, "actionability": json_num(kappa_a), "actionability_items": items_a},
        "cells": cells_out,
    });
    if let (Some((_, json)), Some(data)) = (consistency, data.as_object_mut()) {
        data.insert("judge_consistency".into(), json);
    }
    result.data = data.into();
    result
}

/// Each judge asked several times (`samples`): on how many questions (a finding under a
/// rubric) its samples all gave a verdict, how often they agreed, Fleiss' κ between its
/// samples, and how many of its votes split evenly. `None` when every judge was asked once.
fn judge_consistency(rqs: &RqsInput) -> Option<(Table, serde_json::Value)> {
    if rqs.judges.iter().all(|j| j.samples <= 1) {
        return None;
    }
    let mut table = Table::new(
        "Judge consistency across samples",
        &["Judge", "Samples", "Questions", "All samples answered", "Unanimous", "Fleiss' κ between samples", "Split votes"],
    );
    let mut json = Vec::new();
    for (j, judge) in rqs.judges.iter().enumerate().filter(|(_, j)| j.samples > 1) {
        let sampled: Vec<&SampledVotes> = rqs.runs.values().flat_map(|r| r.sampled.iter()).filter(|s| s.judge == j).collect();
        let answered: Vec<Vec<bool>> =
            sampled.iter().filter_map(|s| s.votes.iter().map(|v| v.as_bool()).collect::<Option<Vec<bool>>>()).filter(|v| v.len() > 1).collect();
        let unanimous = answered.iter().filter(|v| v.iter().all(|x| *x == v[0])).count();
        let kappa = crate::agreement::fleiss_kappa(&answered).map(|k| k.kappa);
        let split = sampled.iter().filter(|s| Vote::of_samples(&s.votes) == Vote::Split).count();
        table.push(vec![
            format!("`{}`", judge.name).into(),
            judge.samples.into(),
            sampled.len().into(),
            answered.len().into(),
            crate::analysis::model::fmt_share(unanimous, answered.len()),
            fmt_ratio(kappa),
            split.into(),
        ]);
        json.push(serde_json::json!({
            "name": judge.name, "samples": judge.samples, "questions": sampled.len(), "answered": answered.len(),
            "unanimous": unanimous, "fleiss_kappa": json_num(kappa), "split": split,
        }));
    }
    Some((table, serde_json::Value::Array(json)))
}

fn merge(into: &mut Tally, add: Tally) {
    into.yes += add.yes;
    into.no += add.no;
    into.ties += add.ties;
    into.undecided += add.undecided;
}

fn mean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let values: Vec<f64> = values.flatten().collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn show(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_string(), |v| format!("{v:.3}"))
}

fn kappa_cell(kappa: Option<f64>, items: usize) -> TableCell {
    match kappa {
        Some(k) => format!("{k:.3} (n={items})").into(),
        None => format!("– (n={items})").into(),
    }
}

/// The reviewer's model as the run recorded it (its configuration's `model`), else the
/// cell's `model` value, else the reviewer kind.
fn reviewer_model(run: &RunView<'_>) -> String {
    run.record
        .inputs
        .reviewer
        .get("model")
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .or_else(|| run.cell.get("model").map(|v| v.render()))
        .unwrap_or_else(|| run.record.inputs.reviewer_kind.clone())
}

/// A judge's family names the reviewer's model: the family, letters and digits only, is part
/// of the model name, compared the same way.
fn same_family(family: &str, model: &str) -> bool {
    let squash = |s: &str| s.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    let (family, model) = (squash(family), squash(model));
    !family.is_empty() && model.contains(&family)
}

/// One judge's agreement with the anchor on one rubric.
#[derive(Debug, Clone, Copy, Default)]
struct AnchorAgreement {
    items: usize,
    agreement: Option<f64>,
    kappa: Option<f64>,
}

/// Per judge, for validity and actionability: the anchor items it decided, its agreement with
/// the human label, and Cohen's κ against it. A labelled finding counts once per judge,
/// however many runs reported it (the first run's votes, in plan order).
fn anchor_agreement(anchor: &Anchor, input: &AnalysisInput<'_>, rqs: &RqsInput) -> Vec<[AnchorAgreement; 2]> {
    let norm = |s: &str| crate::finding::collapse_whitespace(s).trim().to_string();
    // (subject, file, line, message) → (valid, actionable)
    type Labels = (Option<bool>, Option<bool>);
    let mut labelled: BTreeMap<(String, String, u32, String), Labels> = BTreeMap::new();
    for item in &anchor.items {
        labelled.insert((item.subject.clone(), item.file.clone(), item.line, norm(&item.message)), (item.valid, item.actionable));
    }
    let mut pairs: Vec<[Vec<(bool, bool)>; 2]> = vec![[Vec::new(), Vec::new()]; rqs.judges.len()];
    let mut seen = std::collections::BTreeSet::new();
    for run in &input.runs {
        let id = RunId::new(run.cell.id.clone(), run.repeat, run.subject.to_string());
        let Some(scoring) = rqs.runs.get(&id) else { continue };
        for (finding, votes) in run.findings.iter().zip(&scoring.votes) {
            let key = (run.subject.to_string(), finding.file.clone(), finding.line, norm(&finding.message));
            let Some(&(valid, actionable)) = labelled.get(&key) else { continue };
            if !seen.insert(key) {
                continue;
            }
            for (rubric, (human, judged)) in [(valid, &votes.validity), (actionable, &votes.actionability)].into_iter().enumerate() {
                let Some(human) = human else { continue };
                for (j, vote) in judged.iter().enumerate() {
                    if let (Some(v), Some(p)) = (vote.as_bool(), pairs.get_mut(j)) {
                        p[rubric].push((v, human));
                    }
                }
            }
        }
    }
    pairs
        .iter()
        .map(|per_rubric| {
            per_rubric.clone().map(|p| {
                let agree = p.iter().filter(|(a, b)| a == b).count();
                let rows: Vec<Vec<bool>> = p.iter().map(|(a, b)| vec![*a, *b]).collect();
                AnchorAgreement { items: p.len(), agreement: ratio(agree as f64, p.len() as f64), kappa: binary_kappa(&rows) }
            })
        })
        .collect()
}

impl<'a> crate::analysis::model::AnalysisInput<'a> {
    /// What the scoring stages produced, for RQS v2.
    pub fn rqs(&self) -> Option<&'a RqsInput> {
        self.extras.get()
    }
}

/// RQS v2: the headline and the three measures it is the harmonic mean of, per cell.
pub(crate) fn charts(analysis: &AnalysisResult, labels: &dyn ChartCells) -> Vec<Named> {
    chart(analysis, labels).into_iter().collect()
}

fn chart(analysis: &AnalysisResult, labels: &dyn ChartCells) -> Option<Named> {
    let cells = analysis.data.get("cells")?.as_array()?;
    if cells.is_empty() {
        return None;
    }
    let measures = [
        ("weighted_recall", "severity-weighted recall"),
        ("precision_jury", "jury precision"),
        ("actionability", "actionability"),
        ("headline", "headline (harmonic mean)"),
    ];
    Some(Named {
        name: "scores",
        chart: Chart::Bars(BarChart {
            title: "RQS v2 per cell".into(),
            note: "The headline is the harmonic mean of the three measures above it; a value shown as – is undefined.".into(),
            x_label: "score".into(),
            groups: measures.iter().map(|(_, label)| label.to_string()).collect(),
            series: cells
                .iter()
                .map(|c| Series {
                    name: labels.label(c.get("cell").and_then(serde_json::Value::as_str).unwrap_or("?")),
                    values: measures.iter().map(|(key, _)| c.get(*key).and_then(serde_json::Value::as_f64)).collect(),
                })
                .collect(),
            range: Some((0.0, 1.0)),
            digits: 3,
        }),
    })
}

/// An `rqs` analysis's `tau` or `calibration`, `anchor` and `shuffle-seed`.
fn read_options(t: &TableReader<'_, '_>, context: &OptionsContext<'_>) -> AnalysisOptions {
    let tau = t.float("tau", -1.0, 1.0).map(Spanned::into_inner);
    let calibration = t.string("calibration").map(|c| resolve_path(context.base_dir, c.get_ref()));
    if tau.is_some() && calibration.is_some() {
        t.problems().push(t.span(), "analysis `rqs` takes `tau` or `calibration`, not both");
    }
    AnalysisOptions::Rqs(RqsOptions {
        tau,
        calibration,
        anchor: t.string("anchor").map(|a| resolve_path(context.base_dir, a.get_ref())),
        shuffle_seed: t.integer("shuffle-seed", 0, i64::MAX).map_or(0, |n| *n.get_ref() as u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_judges_samples_vote_their_majority_and_an_even_split_is_said() {
        assert_eq!(Vote::of_samples(&[Vote::No]), Vote::No);
        assert_eq!(Vote::of_samples(&[Vote::Yes, Vote::No, Vote::Yes]), Vote::Yes);
        assert_eq!(Vote::of_samples(&[Vote::Yes, Vote::No]), Vote::Split);
        assert_eq!(Vote::of_samples(&[Vote::Unparseable, Vote::No, Vote::Unparseable]), Vote::No);
        assert_eq!(Vote::of_samples(&[Vote::Unparseable, Vote::Absent]), Vote::Unparseable);
        assert_eq!(Vote::of_samples(&[Vote::Absent, Vote::Absent]), Vote::Absent);
        assert_eq!(Vote::Split.as_bool(), None);
    }

    #[test]
    fn majority_reports_ties_and_ignores_unusable_answers() {
        assert_eq!(majority(&[Vote::Yes, Vote::No, Vote::Yes]), Majority::Verdict(true));
        assert_eq!(majority(&[Vote::Yes, Vote::No]), Majority::Tie);
        assert_eq!(majority(&[Vote::No, Vote::Unparseable]), Majority::Verdict(false));
        assert_eq!(majority(&[Vote::Absent, Vote::Unparseable]), Majority::Undecided);
    }

    #[test]
    fn headline_is_the_harmonic_mean_and_needs_every_part() {
        // 3 / (1/0.5 + 1/1 + 1/0.25) = 3 / 7
        let h = harmonic_mean(&[Some(0.5), Some(1.0), Some(0.25)]).expect("defined");
        assert!((h - 3.0 / 7.0).abs() < 1e-12);
        assert_eq!(harmonic_mean(&[Some(0.5), None, Some(1.0)]), None);
        assert_eq!(harmonic_mean(&[Some(0.0), Some(1.0), Some(1.0)]), Some(0.0));
    }

    #[test]
    fn self_preference_compares_families_loosely() {
        assert!(same_family("smollm2", "SmolLM2-135M-Instruct"));
        assert!(same_family("Gemma", "gemma3-270m"));
        assert!(!same_family("qwen", "smollm2-135m"));
        assert!(!same_family("", "anything"));
    }

    #[test]
    fn per_cell_scores_kappa_alignment_and_the_anchor_are_computed_by_hand() {
        use crate::analysis::spec::AnalysisKind;
        use crate::analysis::test_support::{finding, s, spec, Fixture};
        let mut fx = Fixture::new(&[("model", vec![s("smol-1")])], 1);
        fx.add("model=smol-1", 1, "s1", vec![finding("a.rs", 1, "first"), finding("a.rs", 2, "second")]);
        fx.add("model=smol-1", 1, "s2", vec![finding("b.rs", 3, "third")]);
        let (y, n) = (Vote::Yes, Vote::No);
        let votes = |v: [Vote; 2], a: [Vote; 2]| FindingVotes { validity: v.to_vec(), actionability: a.to_vec(), ..Default::default() };
        let mut rqs = RqsInput {
            judges: vec![
                JudgeInfo { name: "j1".into(), model: "m1".into(), family: "gemma".into(), samples: 1 },
                JudgeInfo { name: "j2".into(), model: "m2".into(), family: "smol".into(), samples: 1 },
            ],
            embedder: Some(EmbedderInfo { identity: "e".into(), tau: 0.5, tau_source: "given".into() }),
            shuffle_seed: 7,
            ..Default::default()
        };
        let cost = StageCost { tokens: 10, seconds: 1.5 };
        rqs.runs.insert(
            RunId::new("model=smol-1", 1, "s1"),
            RunScoring {
                votes: vec![votes([y, y], [y, n]), votes([n, n], [n, n])],
                judge_cost: vec![cost, cost],
                sentences: Some(vec![vec![1.0, 0.0], vec![0.0, 1.0]]),
                ..Default::default()
            },
        );
        rqs.runs.insert(
            RunId::new("model=smol-1", 1, "s2"),
            RunScoring { votes: vec![votes([y, n], [y, y])], judge_cost: vec![cost, cost], sentences: Some(vec![vec![0.0, 1.0]]), ..Default::default() },
        );
        for subject in ["s1", "s2"] {
            rqs.references.insert(subject.into(), SubjectReferences { claims: 1, vectors: Some(vec![vec![1.0, 0.0]]), ..Default::default() });
        }
        let item = |subject: &str, file: &str, line: u32, message: &str, valid: bool| AnchorItem {
            subject: subject.into(),
            file: file.into(),
            line,
            message: message.into(),
            valid: Some(valid),
            actionable: None,
        };
        rqs.anchor = Some(Anchor {
            source: "anchor.csv".into(),
            items: vec![item("s1", "a.rs", 1, "first", true), item("s1", "a.rs", 2, " second ", false), item("s2", "b.rs", 3, "third", false)],
        });
        let mut input = fx.input();
        input.extras = std::mem::take(&mut input.extras).with(Some(&rqs));
        let result = compute(&spec(AnalysisKind::RQS, None), &input);
        let cell = &result.data["cells"][0];
        // Validity majorities: yes, no, tie → 1 / (1 + 1); actionability: tie, no, yes → the same.
        assert_eq!(cell["precision_jury"], 0.5);
        assert_eq!(cell["actionability"], 0.5);
        assert_eq!(cell["validity"]["ties"], 1);
        // Cohen's κ over (y,y), (n,n), (y,n): p_o = 2/3, p_e = 4/9, κ = (2/9) / (5/9) = 0.4.
        assert!((cell["kappa_validity"].as_f64().expect("kappa") - 0.4).abs() < 1e-12, "{cell}");
        assert_eq!(cell["kappa_validity_items"], 3);
        // s1: P = 1/2, R = 1, F = 2/3; s2: 0, 0, 0 — then averaged per review.
        assert!((cell["conciseness"].as_f64().expect("P") - 0.25).abs() < 1e-12);
        assert!((cell["comprehensiveness"].as_f64().expect("R") - 0.5).abs() < 1e-12);
        assert!((cell["relevance"].as_f64().expect("F") - 1.0 / 3.0).abs() < 1e-12);
        // No oracle: no recall, so no headline.
        assert!(cell["weighted_recall"].is_null() && cell["headline"].is_null());
        assert_eq!(cell["judge_tokens"], 40);
        assert_eq!(cell["self_preference"], serde_json::json!(["j2"]));
        // The anchor: j1 says y, n, y against y, n, n (2/3); j2 says y, n, n (3/3).
        let judges = &result.data["judges"];
        assert!((judges[0]["anchor"]["validity"]["agreement"].as_f64().expect("agreement") - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(judges[0]["stands_alone"], false);
        assert_eq!(judges[1]["anchor"]["validity"]["agreement"], 1.0);
        assert_eq!(judges[1]["stands_alone"], true);
        assert_eq!(judges[1]["anchor"]["actionability"]["items"], 0);
        assert_eq!(result.data["shuffle_seed"], 7);
    }

    #[test]
    fn recall_is_weighted_by_severity_and_oracle_precision_shown_beside_the_jury() {
        use crate::analysis::matching::matcher::tests::{oracle as ofinding, record, reported};
        use crate::analysis::test_support::spec;
        use crate::finding::Category;
        use crate::ground_truth::oracle::{Oracle, OracleCase};
        let mut nit = ofinding("F2", "a.py", 30, Category::Style, "the import is unused");
        nit.blocking = false;
        let oracle = Oracle {
            version: 1,
            findings: vec![ofinding("F1", "a.py", 10, Category::Bug, "off by one in the page count"), nit],
            cases: vec![OracleCase {
                id: "c1".into(),
                expected_finding_ids: vec!["F1".into(), "F2".into()],
                rationale: String::new(),
                split: None,
                interpreter: None,
                ground_truth: Default::default(),
            }],
            skipped: Vec::new(),
        };
        let cell = crate::matrix::Cell { id: "m=a".into(), values: Default::default() };
        let rec = record(&cell, None);
        // The blocking F1 is found, the nit F2 missed, and one report is an extra.
        let findings = vec![reported("a", "a.py", 10, Category::Bug, "page count is off by one"), reported("n", "a.py", 50, Category::Style, "rename this")];
        let view = RunView { cell: &cell, repeat: 1, subject: "c1", record: &rec, findings: &findings, order: 0 };
        let cells = [std::sync::Arc::new(cell.clone())];
        let rqs = RqsInput { judges: vec![JudgeInfo { name: "j".into(), model: "m".into(), family: "f".into(), samples: 1 }], ..Default::default() };
        let input = AnalysisInput {
            runs: vec![view],
            cells: &cells,
            axis_order: &[],
            missing: Vec::new(),
            repeat: 1,
            oracle: Some(&oracle),
            extras: crate::analysis::model::Extras::default().with(Some(&rqs)),
            by_cell: Default::default(),
        };
        let result = compute(&spec(crate::analysis::spec::AnalysisKind::RQS, None), &input);
        let c = &result.data["cells"][0];
        // Found weight 2 (blocking) of 2 + 1 expected; precision 1 found of 1 found + 1 extra.
        assert!((c["weighted_recall"].as_f64().expect("recall") - 2.0 / 3.0).abs() < 1e-12, "{c}");
        assert_eq!(c["precision_oracle"], 0.5);
        assert!(c["precision_jury"].is_null(), "no judge ran, so no jury precision: {c}");
        assert!(result.rule.as_deref().unwrap_or_default().contains("blocking ×2"));

        // The missed nit's thread saw a code change (×1.5), and the case is keyed by a commit's
        // full SHA while the subject names it abbreviated: found 2 of 2 + 1.5.
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let mut keyed = oracle.clone();
        keyed.findings[1].resolved = Some(true);
        keyed.cases[0].id = sha.into();
        let view = RunView { subject: &sha[..12], ..input.runs[0] };
        let input = AnalysisInput { runs: vec![view], oracle: Some(&keyed), by_cell: Default::default(), ..input };
        let result = compute(&spec(crate::analysis::spec::AnalysisKind::RQS, None), &input);
        let c = &result.data["cells"][0];
        assert!((c["weighted_recall"].as_f64().expect("recall") - 2.0 / 3.5).abs() < 1e-12, "{c}");
        assert!(result.rule.as_deref().unwrap_or_default().contains("times 1.5"));
    }

    #[test]
    fn severity_weights_blocking_twice_and_resolved_one_and_a_half_times() {
        assert_eq!(severity_weight(true, None), 2.0);
        assert_eq!(severity_weight(false, Some(false)), 1.0);
        assert_eq!(severity_weight(false, Some(true)), 1.5);
        assert_eq!(severity_weight(true, Some(true)), 3.0);
    }
}
