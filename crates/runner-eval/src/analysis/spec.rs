//! What an analysis is asked to do: its kind and options ([`AnalysisSpec`]), the rules that
//! match findings ([`MatchRule`] between runs, [`OracleRule`] against an oracle), and the
//! reader of a manifest's `[[analysis]]` tables.

pub use super::rule::{
    group_thousands, Calibrated, MatchRule, OracleRule, DEFAULT_CALIBRATION, DEFAULT_EMBEDDING_CALIBRATION, DEFAULT_EMBEDDING_RULE_SIMILARITY,
    DEFAULT_EMBEDDING_SIMILARITY, DEFAULT_JUDGE_FLOOR, DEFAULT_SIMILARITY, JURY_PLACEHOLDER,
};
use super::rule::{Evidence, SimilarityMeasure};
use crate::config::{did_you_mean, resolve_path, TableReader};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::Path;
use toml::Spanned;

/// One analysis the report shows.
#[derive(Debug, Clone, Serialize)]
pub struct AnalysisSpec {
    pub kind: AnalysisKind,
    /// Optional title shown in the report.
    pub title: Option<String>,
    /// The axis compared (overlap, RAG ablation) or grouped by (latency, distribution, …).
    pub axis: Option<String>,
    pub matching: MatchRule,
    /// How reported findings are matched to an oracle (fixture, aggregation, review-eval).
    pub oracle_rule: OracleRule,
    /// A person's adjudication record (`captured.adjudication.json`, from `runner adjudicate
    /// import`), resolved against the manifest's directory: applied over automatic matching
    /// for the runs it covers (fixture, review-eval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adjudication: Option<std::path::PathBuf>,
    /// RQS v2's own options (`kind = "rqs"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rqs: Option<RqsOptions>,
    /// A paired comparison's options (`kind = "compare"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare: Option<CompareOptions>,
    /// `fixture`: a ranking of the cells by this rate (`rank-by`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank_by: Option<RankBy>,
    /// A human study's filled sheets (`kind = "study"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub study: Option<StudyOptions>,
    /// The resolution rate's window, tolerance and head (`kind = "resolution"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<ResolutionOptions>,
}

/// A `resolution` analysis: how many later commits (`window`), lines either side
/// (`tolerance`), and the commit whose first-parent line is followed (`head`; default the
/// target's range end, else `HEAD`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolutionOptions {
    pub window: usize,
    pub tolerance: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
}

impl Default for ResolutionOptions {
    fn default() -> Self {
        Self { window: DEFAULT_WINDOW, tolerance: DEFAULT_TOLERANCE, head: None }
    }
}

/// The human studies a `study` analysis renders: seed 000's H1, H4, H5, H6, H7, H8 and H9.
pub const STUDIES: [&str; 7] = ["h1", "h4", "h5", "h6", "h7", "h8", "h9"];

/// A `study` analysis: which study, its filled sheets and their key (paths resolved against
/// the manifest's directory). H5 reads H1 sheets and the experiment's jury; H6 reads H1 sheets;
/// H9 reads two files, the session log and the preference survey, and has no key (`key` is
/// then empty).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StudyOptions {
    pub study: String,
    pub sheets: Vec<std::path::PathBuf>,
    pub key: std::path::PathBuf,
}

/// A metric with a value per subject that a paired comparison can test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompareMetric {
    /// H2 recall: TP / (TP + FN) against the oracle.
    Recall,
    /// Seed 003: (found + partial) / oracle findings.
    RecallWithPartials,
    /// H2 precision: TP / (TP + FP).
    Precision,
    F1,
    /// Seed 003: rejected extras / everything reported.
    Noise,
    /// Findings reported per run.
    Findings,
    /// A4: mean pairwise Jaccard between a subject's repeats.
    Jaccard,
    /// RQS v2's headline: the harmonic mean of severity-weighted recall, jury precision and
    /// actionability.
    RqsHeadline,
    /// RQS v2: found severity weights / expected weights.
    WeightedRecall,
    /// RQS v2: findings the jury's majority calls valid / decided findings.
    JuryPrecision,
    /// RQS v2: findings the jury's majority calls actionable / decided findings.
    Actionability,
    /// RQS v2 (CRScore): the share of review sentences aligned to a pseudo-reference.
    Conciseness,
    /// RQS v2 (CRScore): the share of pseudo-references a review sentence aligns to.
    Comprehensiveness,
    /// RQS v2 (CRScore): the harmonic mean of conciseness and comprehensiveness.
    Relevance,
    /// Seed 001 from git: findings a later commit changed the lines of / counted findings
    /// (a history target; the first `resolution` analysis's window, tolerance and head).
    Resolution,
}

impl CompareMetric {
    pub const ALL: [CompareMetric; 15] = [
        Self::Recall,
        Self::RecallWithPartials,
        Self::Precision,
        Self::F1,
        Self::Noise,
        Self::Findings,
        Self::Jaccard,
        Self::RqsHeadline,
        Self::WeightedRecall,
        Self::JuryPrecision,
        Self::Actionability,
        Self::Conciseness,
        Self::Comprehensiveness,
        Self::Relevance,
        Self::Resolution,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Recall => "recall",
            Self::RecallWithPartials => "recall-with-partials",
            Self::Precision => "precision",
            Self::F1 => "f1",
            Self::Noise => "noise",
            Self::Findings => "findings",
            Self::Jaccard => "jaccard",
            Self::RqsHeadline => "rqs-headline",
            Self::WeightedRecall => "weighted-recall",
            Self::JuryPrecision => "jury-precision",
            Self::Actionability => "actionability",
            Self::Conciseness => "conciseness",
            Self::Comprehensiveness => "comprehensiveness",
            Self::Relevance => "relevance",
            Self::Resolution => "resolution",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == text)
    }

    /// Whether the metric follows findings through a history target's later commits.
    pub fn needs_history(self) -> bool {
        self == Self::Resolution
    }

    /// Whether a larger value is better (`None`: neither, e.g. how many findings).
    pub fn higher_is_better(self) -> Option<bool> {
        match self {
            Self::Noise => Some(false),
            Self::Findings => None,
            _ => Some(true),
        }
    }

    /// Whether the metric is computed against the oracle.
    pub fn needs_oracle(self) -> bool {
        matches!(self, Self::Recall | Self::RecallWithPartials | Self::Precision | Self::F1 | Self::Noise | Self::WeightedRecall)
    }

    /// Whether the metric comes from RQS v2's scoring stages (judges, embeddings).
    pub fn needs_scoring(self) -> bool {
        matches!(
            self,
            Self::RqsHeadline
                | Self::WeightedRecall
                | Self::JuryPrecision
                | Self::Actionability
                | Self::Conciseness
                | Self::Comprehensiveness
                | Self::Relevance
        )
    }
}

/// The options of a `compare` analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareOptions {
    /// Metrics compared, in table order (`metrics`).
    pub metrics: Vec<CompareMetric>,
    /// Metrics whose verdict lines open RESULTS.md (`headline`; default: recall, or the first metric).
    pub headline: Vec<CompareMetric>,
    /// The axis value every other value is compared with (`baseline`; default the first).
    pub baseline: Option<String>,
    /// Bootstrap and Monte Carlo permutation resamples (`resamples`).
    pub resamples: usize,
    /// The seed of both (`seed`).
    pub seed: u64,
    /// The significance level (`alpha`); the interval's level is 1 − alpha ([`Self::level`]).
    pub alpha: f64,
    /// Differences smaller than this are not called (`min-effect`).
    pub min_effect: f64,
    /// `percentile` or `bca` (`interval`).
    pub interval: crate::stats::IntervalMethod,
    /// The rule A4 Jaccard matches findings between repeats with.
    #[serde(skip)]
    pub matching: MatchRule,
}

impl CompareOptions {
    /// The confidence level of the intervals: 1 − alpha.
    pub fn level(&self) -> f64 {
        1.0 - self.alpha
    }
}

impl Default for CompareOptions {
    fn default() -> Self {
        Self {
            metrics: vec![CompareMetric::Recall, CompareMetric::Precision, CompareMetric::F1, CompareMetric::Noise, CompareMetric::Findings],
            headline: vec![CompareMetric::Recall],
            baseline: None,
            resamples: 10_000,
            seed: 0,
            alpha: 0.05,
            min_effect: 0.0,
            interval: crate::stats::IntervalMethod::Bca,
            matching: MatchRule::default(),
        }
    }
}

impl AnalysisSpec {
    /// Whether the analysis follows findings through a history target's later commits: the
    /// resolution rate, and a comparison of it.
    pub fn reads_history(&self) -> bool {
        self.kind == AnalysisKind::Resolution || self.compare.as_ref().is_some_and(|c| c.metrics.iter().any(|m| m.needs_history()))
    }

    /// Whether the analysis reads the scoring stages' values: RQS v2 itself, and a comparison
    /// of RQS v2 metrics.
    pub fn reads_scoring(&self) -> bool {
        self.asks_judges_to_match()
            || self.kind == AnalysisKind::Rqs
            || self.study.as_ref().is_some_and(|s| s.study == "h5")
            || self.compare.as_ref().is_some_and(|c| c.metrics.iter().any(|m| m.needs_scoring()))
    }
}

impl AnalysisSpec {
    /// Whether the analysis matches against the oracle with the judges' word as evidence.
    pub fn asks_judges_to_match(&self) -> bool {
        self.kind == AnalysisKind::Jury || (self.kind.uses_oracle() && self.oracle_rule.evidence == Evidence::Judge)
    }
}

/// The rate a `fixture` analysis ranks its cells by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RankBy {
    F1,
    Precision,
    Recall,
}

impl RankBy {
    pub const ALL: [RankBy; 3] = [Self::F1, Self::Precision, Self::Recall];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::F1 => "f1",
            Self::Precision => "precision",
            Self::Recall => "recall",
        }
    }
}

/// The options of an `rqs` analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RqsOptions {
    /// The alignment threshold, given directly (`tau`).
    pub tau: Option<f64>,
    /// A calibration file with τ for the experiment's embedder (`calibration`).
    pub calibration: Option<std::path::PathBuf>,
    /// The human anchor set, a CSV (`anchor`).
    pub anchor: Option<std::path::PathBuf>,
    /// The seed of the blind presentation's shuffle (`shuffle-seed`, default 0).
    pub shuffle_seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnalysisKind {
    /// A1: overlap between the values of one axis.
    Overlap,
    /// A3: latency per run and per hunk.
    Latency,
    /// A4: Jaccard across repeats.
    Repeatability,
    /// A5: category and severity counts.
    Distribution,
    /// A6: finding-ID stability across repeats.
    IdStability,
    /// A7: schema validation of every reviewer's output.
    Schema,
    /// A10: RAG on versus off.
    RagAblation,
    /// Tokens and durations per cell.
    Cost,
    /// Each review strategy's (pipeline's) total budget, allocation and spend.
    Budget,
    /// H2: TP, FP, FN, precision, recall and F1 against the oracle.
    Fixture,
    /// A8: the union of a cell's repeats against the average single run.
    Aggregation,
    /// A9: diff / file / repo context level of each finding.
    ContextLevel,
    /// Seed 003: found / partial / missed, recall, noise and cost per run and per case.
    ReviewEval,
    /// Seed 001: RQS v2 — jury validity and actionability, pseudo-reference alignment,
    /// severity-weighted recall, cost and the headline.
    Rqs,
    /// Paired statistics between the values of an axis: bootstrap intervals, permutation and
    /// McNemar tests, Holm-corrected, with a verdict.
    Compare,
    /// Seed 000's human studies (H1, H5, H7, H8) from filled sheets.
    Study,
    /// The judges measured: each judge's found / not found per oracle finding of every run
    /// (model judges asked every pair, replayed judges' recorded decisions), their recall and
    /// precision per cell, their pairwise κ and majority, runner's matcher against each and
    /// against the majority, and the cells' ranking under each.
    Jury,
    /// Seed 001's resolution rate from git: findings whose lines a later commit changed.
    Resolution,
}

impl AnalysisKind {
    pub const ALL: [AnalysisKind; 18] = [
        Self::Overlap,
        Self::Latency,
        Self::Repeatability,
        Self::Distribution,
        Self::IdStability,
        Self::Schema,
        Self::RagAblation,
        Self::Cost,
        Self::Budget,
        Self::Fixture,
        Self::Aggregation,
        Self::ContextLevel,
        Self::ReviewEval,
        Self::Rqs,
        Self::Compare,
        Self::Study,
        Self::Jury,
        Self::Resolution,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Overlap => "overlap",
            Self::Latency => "latency",
            Self::Repeatability => "repeatability",
            Self::Distribution => "distribution",
            Self::IdStability => "id-stability",
            Self::Schema => "schema",
            Self::RagAblation => "rag-ablation",
            Self::Cost => "cost",
            Self::Budget => "budget",
            Self::Fixture => "fixture",
            Self::Aggregation => "aggregation",
            Self::ContextLevel => "context-level",
            Self::ReviewEval => "review-eval",
            Self::Rqs => "rqs",
            Self::Compare => "compare",
            Self::Study => "study",
            Self::Jury => "jury",
            Self::Resolution => "resolution",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// Kinds that match findings to an oracle and read the oracle-matching keys.
    pub fn uses_oracle(self) -> bool {
        matches!(self, Self::Fixture | Self::Aggregation | Self::ReviewEval | Self::Rqs | Self::Compare | Self::Jury)
    }
}

/// Later commits looked at, unless the analysis or the command says otherwise.
pub const DEFAULT_WINDOW: usize = 10;
/// Lines either side of the flagged ones that count, unless said otherwise.
pub const DEFAULT_TOLERANCE: u32 = 1;

/// Reads one `[[analysis]]` table: its kind and the options that kind takes.
pub fn read_analysis(t: &TableReader<'_, '_>, axes: &BTreeSet<String>, base_dir: &Path) -> Option<AnalysisSpec> {
    let problems = t.problems();
    let kind_text = t.required_string("kind")?;
    let Some(kind) = AnalysisKind::parse(kind_text.get_ref()) else {
        let kinds: Vec<&str> = AnalysisKind::ALL.iter().map(|k| k.as_str()).collect();
        let help = match did_you_mean(kind_text.get_ref(), kinds.iter().copied()) {
            Some(best) => format!("did you mean `{best}`? (kinds: {})", kinds.join(", ")),
            None => format!("kinds: {}", kinds.join(", ")),
        };
        // The analysis's other keys are still read, so they are not reported as unknown.
        for key in [
            "title",
            "axis",
            "line-tolerance",
            "similarity",
            "similarity-measure",
            "dedup-similarity",
            "partial-similarity",
            "evidence",
            "judge-floor",
            "matching-calibration",
            "adjudication",
            "tau",
            "calibration",
            "anchor",
            "shuffle-seed",
            "metrics",
            "headline",
            "baseline",
            "resamples",
            "seed",
            "alpha",
            "min-effect",
            "interval",
            "rank-by",
            "study",
            "sheets",
            "key",
            "window",
            "tolerance",
            "head",
        ] {
            t.allow(key);
        }
        problems.push_with_help(kind_text.span(), format!("unknown analysis kind `{}`", kind_text.get_ref()), help);
        return None;
    };
    let title = t.string("title").map(Spanned::into_inner);
    let axis = t.string("axis");
    if let Some(a) = &axis {
        if !axes.contains(a.get_ref()) {
            let message = format!("analysis axis `{}` is not a matrix axis", a.get_ref());
            match did_you_mean(a.get_ref(), axes.iter().map(String::as_str)) {
                Some(best) => problems.push_with_help(a.span(), message, format!("did you mean `{best}`?")),
                None => problems.push_with_help(a.span(), message, format!("axes: {}", axes.iter().map(String::as_str).collect::<Vec<_>>().join(", "))),
            }
        }
    }
    let needs_axis = matches!(kind, AnalysisKind::Overlap);
    if needs_axis && axis.is_none() && !t.has("axis") {
        problems.push(t.span(), format!("analysis `{}` needs `axis`, the matrix axis whose values it compares", kind.as_str()));
    }
    let axis = axis.map(Spanned::into_inner).or_else(|| (kind == AnalysisKind::RagAblation).then(|| "rag_symbol_max_definitions".to_string()));
    if kind == AnalysisKind::RagAblation && !axes.contains(axis.as_deref().unwrap_or_default()) {
        problems.push(t.span(), "analysis `rag-ablation` needs a `rag_symbol_max_definitions` axis (or `axis = \"...\"`) with 0 among its values");
    }
    let mut matching = MatchRule::default();
    if let Some(n) = t.integer("line-tolerance", 0, 1000) {
        matching.line_tolerance = *n.get_ref() as u32;
    }
    if let Some(s) = t.float("similarity", 0.0, 1.0) {
        matching.similarity = *s.get_ref();
    }
    let mut oracle_rule = OracleRule::default();
    if kind.uses_oracle() {
        read_oracle_rule(t, &mut matching, &mut oracle_rule, base_dir);
    } else if let Some(m) = t.string("similarity-measure") {
        match SimilarityMeasure::parse(m.get_ref()) {
            Some(measure) => matching.measure = measure,
            None => problems.push_with_help(
                m.span(),
                format!("unknown similarity measure `{}`", m.get_ref()),
                "measures: levenshtein (default between runs), tokens",
            ),
        }
    }
    let adjudication = t.string("adjudication").and_then(|a| {
        if matches!(kind, AnalysisKind::Fixture | AnalysisKind::ReviewEval) {
            Some(resolve_path(base_dir, a.get_ref()))
        } else {
            problems.push(
                a.span(),
                format!(
                    "analysis `{}` does not take `adjudication`: only `fixture` and `review-eval` score runs one by one, as an adjudication decides them",
                    kind.as_str()
                ),
            );
            None
        }
    });
    let rqs = (kind == AnalysisKind::Rqs).then(|| {
        let tau = t.float("tau", -1.0, 1.0).map(Spanned::into_inner);
        let calibration = t.string("calibration").map(|c| resolve_path(base_dir, c.get_ref()));
        if tau.is_some() && calibration.is_some() {
            problems.push(t.span(), "analysis `rqs` takes `tau` or `calibration`, not both");
        }
        RqsOptions {
            tau,
            calibration,
            anchor: t.string("anchor").map(|a| resolve_path(base_dir, a.get_ref())),
            shuffle_seed: t.integer("shuffle-seed", 0, i64::MAX).map_or(0, |n| *n.get_ref() as u64),
        }
    });
    let compare = (kind == AnalysisKind::Compare).then(|| read_compare(t, axis.as_deref(), &matching));
    let rank_by = t.string("rank-by").and_then(|r| {
        if kind != AnalysisKind::Fixture {
            problems.push(r.span(), format!("analysis `{}` does not take `rank-by`: only `fixture` ranks its cells", kind.as_str()));
            return None;
        }
        let found = RankBy::ALL.into_iter().find(|k| k.as_str() == r.get_ref());
        if found.is_none() {
            problems.push_with_help(r.span(), format!("unknown `rank-by` rate `{}`", r.get_ref()), "rates: f1, precision, recall");
        }
        found
    });
    let study = (kind == AnalysisKind::Study).then(|| read_study(t, base_dir)).flatten();
    let resolution = (kind == AnalysisKind::Resolution).then(|| read_resolution(t));
    Some(AnalysisSpec { kind, title, axis, matching, oracle_rule, adjudication, rqs, compare, rank_by, study, resolution })
}

/// A `resolution` analysis's `window`, `tolerance` and `head`.
fn read_resolution(t: &TableReader<'_, '_>) -> ResolutionOptions {
    let mut options = ResolutionOptions::default();
    if let Some(n) = t.integer("window", 1, 100_000) {
        options.window = *n.get_ref() as usize;
    }
    if let Some(n) = t.integer("tolerance", 0, 1000) {
        options.tolerance = *n.get_ref() as u32;
    }
    if let Some(h) = t.string("head") {
        if h.get_ref().trim().is_empty() || h.get_ref().starts_with('-') {
            t.problems().push(h.span(), format!("`head` must name a commit (a SHA or a ref), found `{}`", h.get_ref()));
        } else {
            options.head = Some(h.into_inner());
        }
    }
    options
}

/// A `study` analysis's `study`, `sheets` and `key`.
fn read_study(t: &TableReader<'_, '_>, base_dir: &Path) -> Option<StudyOptions> {
    let problems = t.problems();
    // Every key is read before any is found missing, so none is reported as unknown.
    let study = t.required_string("study");
    let preference = study.as_ref().is_some_and(|s| s.get_ref() == "h9");
    // H9's two files are a session log and a survey: there is no blind sheet, so no key.
    let (key, sheets) = (if preference { t.string("key") } else { t.required_string("key") }, t.strings("sheets"));
    if let (true, Some(list)) = (preference, &sheets) {
        if list.len() != 2 {
            problems.push_with_help(
                t.span(),
                "study `h9` reads two files",
                "`sheets = [\"…/sessions.csv\", \"…/survey.csv\"]`: the session log, then the preference survey",
            );
        }
    }
    if let Some(study) = &study {
        if !STUDIES.contains(&study.get_ref().as_str()) {
            let help = match did_you_mean(study.get_ref(), STUDIES.iter().copied()) {
                Some(best) => format!("did you mean `{best}`? (studies: {})", STUDIES.join(", ")),
                None => format!("studies: {}", STUDIES.join(", ")),
            };
            problems.push_with_help(study.span(), format!("unknown study `{}`", study.get_ref()), help);
        }
    }
    match &sheets {
        None => problems.push_with_help(
            t.span(),
            "analysis `study` needs `sheets`, the filled sheets",
            "`sheets = [\"…/sheet.csv\"]` (one per rater for h1 and h5)",
        ),
        Some(list) if list.is_empty() => problems.push(t.span(), "analysis `study` lists no `sheets`"),
        Some(_) => {}
    }
    // Files that are not there are said now, not only in the report.
    for file in sheets.iter().flatten().chain(key.iter()) {
        let path = resolve_path(base_dir, file.get_ref());
        if !path.is_file() {
            problems.push(file.span(), format!("study file `{}` does not exist", path.display()));
        }
    }
    Some(StudyOptions {
        study: study?.into_inner(),
        sheets: sheets?.iter().map(|s| resolve_path(base_dir, s.get_ref())).collect(),
        key: match key {
            Some(key) => resolve_path(base_dir, key.get_ref()),
            None if preference => std::path::PathBuf::new(),
            None => return None,
        },
    })
}

/// The options of a `compare` analysis; a `baseline` must be a value of its axis.
fn read_compare(t: &TableReader<'_, '_>, axis: Option<&str>, matching: &MatchRule) -> CompareOptions {
    let problems = t.problems();
    let mut options = CompareOptions { matching: *matching, ..CompareOptions::default() };
    // A list of unknown metrics is that mistake, not also an empty list.
    let unknown = std::cell::Cell::new(false);
    let read_metrics = |key: &str| -> Option<Vec<CompareMetric>> {
        let list = t.strings(key)?;
        let mut out = Vec::new();
        for m in list {
            match CompareMetric::parse(m.get_ref()) {
                Some(metric) if !out.contains(&metric) => out.push(metric),
                Some(_) => problems.push(m.span(), format!("metric `{}` is listed twice", m.get_ref())),
                None => {
                    let all: Vec<&str> = CompareMetric::ALL.iter().map(|m| m.as_str()).collect();
                    let help = match did_you_mean(m.get_ref(), all.iter().copied()) {
                        Some(best) => format!("did you mean `{best}`? (metrics: {})", all.join(", ")),
                        None => format!("metrics: {}", all.join(", ")),
                    };
                    problems.push_with_help(m.span(), format!("unknown metric `{}`", m.get_ref()), help);
                    unknown.set(true);
                }
            }
        }
        Some(out)
    };
    if let Some(metrics) = read_metrics("metrics") {
        if metrics.is_empty() && !unknown.get() {
            problems.push(t.span(), "analysis `compare` lists no `metrics`");
        }
        options.metrics = metrics;
    }
    options.headline = match read_metrics("headline") {
        Some(h) => {
            if let Some(stray) = h.iter().find(|m| !options.metrics.contains(m)) {
                problems.push(t.key_span("headline").unwrap_or_else(|| t.span()), format!("headline metric `{}` is not among `metrics`", stray.as_str()));
            }
            h
        }
        None if options.metrics.contains(&CompareMetric::Recall) => vec![CompareMetric::Recall],
        None => options.metrics.first().copied().into_iter().collect(),
    };
    if let Some(b) = t.string("baseline") {
        if axis.is_none() {
            problems.push(b.span(), "`baseline` names a value of `axis`; add the `axis` compared");
        }
        options.baseline = Some(b.into_inner());
    }
    if let Some(n) = t.integer("resamples", 100, 10_000_000) {
        options.resamples = *n.get_ref() as usize;
    }
    if let Some(n) = t.integer("seed", 0, i64::MAX) {
        options.seed = *n.get_ref() as u64;
    }
    if let Some(a) = t.float("alpha", 0.0001, 0.5) {
        options.alpha = *a.get_ref();
    }
    if let Some(m) = t.float("min-effect", 0.0, 1e9) {
        options.min_effect = *m.get_ref();
    }
    if let Some(i) = t.string("interval") {
        match i.get_ref().as_str() {
            "percentile" => options.interval = crate::stats::IntervalMethod::Percentile,
            "bca" => options.interval = crate::stats::IntervalMethod::Bca,
            other => problems.push_with_help(i.span(), format!("unknown interval method `{other}`"), "methods: bca (default), percentile"),
        }
    }
    options
}

/// The oracle-matching keys of `fixture`, `aggregation` and `review-eval`: `line-tolerance`
/// and `similarity` configure matching to the oracle (the similarity with its own default),
/// `partial-similarity`, `similarity-measure` and `evidence` refine it, and `aggregation`
/// deduplicates repeats with `dedup-similarity` (normalized Levenshtein, default 0.6).
fn read_oracle_rule(t: &TableReader<'_, '_>, matching: &mut MatchRule, rule: &mut OracleRule, base_dir: &Path) {
    let problems = t.problems();
    rule.line_tolerance = matching.line_tolerance;
    if let Some(c) = t.string("matching-calibration") {
        let path = resolve_path(base_dir, c.get_ref());
        match crate::analysis::match_calibration::read_rule(&path) {
            Ok(calibrated) if calibrated.embedding_similarity.is_some() => problems.push_with_help(
                c.span(),
                format!("the calibration `{}` needs embeddings, which oracle matching in an experiment does not compute", c.get_ref()),
                "calibrate without an embedder (`runner matching calibrate --lexical`) for an experiment's rule",
            ),
            Ok(calibrated) => {
                rule.similarity = calibrated.similarity;
                rule.measure = calibrated.measure;
                rule.calibrated = calibrated.calibrated;
                if rule.partial_similarity > rule.similarity {
                    rule.partial_similarity = rule.similarity / 2.0;
                }
            }
            Err(e) => problems.push(c.span(), format!("cannot use the matching calibration `{}`: {e}", c.get_ref())),
        }
    }
    if t.has("similarity") {
        rule.similarity = matching.similarity;
        rule.partial_similarity = matching.similarity / 2.0;
        rule.calibrated = None;
    }
    matching.similarity = MatchRule::default().similarity;
    if let Some(s) = t.float("dedup-similarity", 0.0, 1.0) {
        matching.similarity = *s.get_ref();
    }
    if let Some(s) = t.float("partial-similarity", 0.0, 1.0) {
        rule.partial_similarity = *s.get_ref();
        if rule.partial_similarity > rule.similarity {
            problems.push(s.span(), format!("`partial-similarity` ({}) must not exceed `similarity` ({})", rule.partial_similarity, rule.similarity));
        }
    }
    if let Some(m) = t.string("similarity-measure") {
        match SimilarityMeasure::parse(m.get_ref()) {
            Some(measure) if measure != rule.measure => {
                rule.measure = measure;
                rule.calibrated = None;
            }
            Some(_) => {}
            None => problems.push_with_help(m.span(), format!("unknown similarity measure `{}`", m.get_ref()), "measures: tokens, levenshtein"),
        }
    }
    if let Some(f) = t.float("judge-floor", 0.0, 1.0) {
        rule.judge_floor = Some(*f.get_ref());
    }
    if let Some(e) = t.string("evidence") {
        match Evidence::parse(e.get_ref()) {
            Some(evidence) => {
                if evidence != Evidence::Similarity {
                    rule.calibrated = None;
                }
                rule.evidence = evidence
            }
            None => {
                let all: Vec<&str> = Evidence::ALL.iter().map(|e| e.as_str()).collect();
                problems.push_with_help(e.span(), format!("unknown evidence `{}`", e.get_ref()), format!("evidence: {}", all.join(", ")))
            }
        }
    }
}
